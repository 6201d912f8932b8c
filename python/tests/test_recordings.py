"""Recordings in the formats other tools open: an MCAP file written by ptmp
read with the MCAP project's own Python reader and its protobuf decoder
(the schema comes from the file), and a Parquet file read with pyarrow,
polars, pandas and DuckDB. ptmp writes both through ``DumpWriter``, whose
format follows the file's extension."""

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

import ptmp

COLUMNS = ["set", "count", "detid", "created", "set_tstart", "set_tspan",
           "chanbeg", "chanend", "totaladc", "channel", "tstart", "tspan",
           "adcsum", "adcpeak", "flags", "edge", "log_time_ns"]

# The Arrow type of each column, as ptmp writes it.
ARROW_TYPES = {
    "set": pa.uint64(), "count": pa.uint32(), "detid": pa.uint32(),
    "created": pa.int64(), "set_tstart": pa.uint64(), "set_tspan": pa.uint32(),
    "chanbeg": pa.uint32(), "chanend": pa.uint32(), "totaladc": pa.uint32(),
    "channel": pa.uint32(), "tstart": pa.uint64(), "tspan": pa.uint32(),
    "adcsum": pa.uint32(), "adcpeak": pa.uint32(), "flags": pa.uint32(),
    "edge": pa.string(), "log_time_ns": pa.uint64(),
}


def make_sets():
    """Ten sets of 0 to 3 TrigPrims, each with a different count and time;
    tstart past 2**32 so that a 32-bit column would show."""
    sets = []
    for i in range(10):
        n = i % 4
        t0 = 5_000_000_000 + 1000 * i
        tps = [ptmp.TrigPrim(channel=100 + k, tstart=t0 + k, tspan=3, adcsum=20 + k,
                             adcpeak=9, flags=0) for k in range(n)]
        sets.append(ptmp.TPSet(count=i, detid=4, created=1_700_000_000_000_000 + i,
                               tstart=t0, tspan=50, chanbeg=100, chanend=100 + max(n - 1, 0),
                               totaladc=sum(20 + k for k in range(n)), tps=tps))
    return sets


def write(path, sets):
    with ptmp.DumpWriter(path) as w:
        for s in sets:
            w.write_tpset(s)


def test_mcap_is_read_by_the_mcap_reader_with_its_embedded_schema(tmp_path):
    path = tmp_path / "run.mcap"
    sets = make_sets()
    write(path, sets)
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary.statistics.message_count == len(sets)
        assert [c.topic for c in summary.channels.values()] == ["tpsets"]
        got = list(reader.iter_decoded_messages())
    assert len(got) == len(sets)
    for (schema, channel, message, decoded), s in zip(got, sets):
        assert (schema.name, schema.encoding) == ("ptmp.data.TPSet", "protobuf")
        assert (channel.topic, channel.message_encoding) == ("tpsets", "protobuf")
        assert message.publish_time == s.created * 1000
        assert message.sequence == s.count
        assert message.log_time > 0
        assert (decoded.count, decoded.detid, decoded.created) == (s.count, s.detid, s.created)
        assert (decoded.tstart, decoded.tspan, decoded.totaladc) == (s.tstart, s.tspan, s.totaladc)
        assert len(decoded.tps) == len(s.tps)
        for d, tp in zip(decoded.tps, s.tps):
            assert (d.channel, d.tstart, d.adcsum) == (tp.channel, tp.tstart, tp.adcsum)
    # And ptmp reads its own file back.
    back = ptmp.read_tpsets(path)
    assert [b.to_dict() for b in back] == [s.to_dict() for s in sets]


def test_parquet_opens_in_pyarrow_polars_pandas_and_duckdb(tmp_path):
    path = tmp_path / "tps.parquet"
    sets = make_sets()
    write(path, sets)
    rows = sum(max(len(s.tps), 1) for s in sets)  # a set of no TrigPrims is one row

    table = pq.read_table(path)
    assert table.num_rows == rows
    assert table.column_names == COLUMNS
    assert {f.name: f.type for f in table.schema} == ARROW_TYPES
    assert table.column("tstart").null_count == sum(1 for s in sets if not s.tps)
    assert table.column("set").to_pylist()[:2] == [0, 1]
    assert set(table.column("edge").to_pylist()) == {""}
    assert table.column("log_time_ns").null_count == rows

    df = pl.read_parquet(path)
    assert df.shape == (rows, len(COLUMNS))
    assert df.columns == COLUMNS
    assert df.schema["tstart"] == pl.UInt64
    assert df.schema["count"] == pl.UInt32
    assert df.schema["created"] == pl.Int64
    assert df["tstart"].drop_nulls().min() == 5_000_001_000

    pdf = pd.read_parquet(path)
    assert len(pdf) == rows
    assert list(pdf.columns) == COLUMNS
    assert str(pdf["set_tstart"].dtype) == "uint64"
    assert str(pdf["count"].dtype) == "uint32"
    typed = pd.read_parquet(path, dtype_backend="pyarrow")
    assert str(typed["tstart"].dtype) == "uint64[pyarrow]"

    [(n, adc)] = duckdb.sql(f"SELECT count(*), sum(adcsum) FROM read_parquet('{path}')").fetchall()
    assert n == rows
    assert adc == sum(tp.adcsum for s in sets for tp in s.tps)
    described = duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    types = {r[0]: r[1] for r in described}
    assert types["tstart"] == "UBIGINT" and types["count"] == "UINTEGER"
    assert types["created"] == "BIGINT" and types["edge"] == "VARCHAR"

    # ptmp reads the table back as the sets it wrote, and as rows.
    back = ptmp.read_tpsets(path)
    assert [b.to_dict() for b in back] == [s.to_dict() for s in sets]
    cols = ptmp.read_rows(path)
    assert cols["tstart"] == table.column("tstart").to_pylist()


def test_a_parquet_table_of_other_columns_is_refused_naming_them(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"set": pa.array([0], pa.uint64()),
                             "tstart": pa.array([1], pa.int64())}), path)
    with pytest.raises(ptmp.PtmpError, match=r"column `tstart` is Int64, not UInt64"):
        ptmp.read_tpsets(path)


@pytest.mark.parametrize("name", ["run.mcap", "run.parquet", "run.dump"])
def test_read_gives_the_same_typed_table_for_every_format(tmp_path, name):
    path = tmp_path / name
    sets = make_sets()
    write(path, sets)
    t = ptmp.read(path)
    assert isinstance(t, pa.Table)
    assert t.column_names == COLUMNS
    for c in COLUMNS:
        assert t.schema.field(c).type == ARROW_TYPES[c], c
    # A row per TrigPrim, one for a set of none.
    assert t.num_rows == sum(max(len(s.tps), 1) for s in sets)
    assert t.column("tstart").to_pylist()[:2] == [None, 5_000_001_000]
    assert max(v for v in t.column("tstart").to_pylist() if v is not None) > 2**32
    assert t.column("count").to_pylist() == [s.count for s in sets for _ in range(max(len(s.tps), 1))]
    edges = set(t.column("edge").to_pylist())
    # Written with no channel: MCAP names its one channel "tpsets", the
    # others keep none.
    assert edges == ({"tpsets"} if name.endswith(".mcap") else {""})
    # What analysts do with it next.
    df = t.to_pandas()
    assert df.groupby("count").size().tolist() == [max(len(s.tps), 1) for s in sets]
    assert pl.from_arrow(t).filter(pl.col("adcsum") > 21).height == sum(
        1 for s in sets for tp in s.tps if tp.adcsum > 21)
    assert duckdb.sql("select sum(adcsum) from t").fetchall()[0][0] == sum(
        tp.adcsum for s in sets for tp in s.tps)


def test_read_names_what_it_cannot_read(tmp_path):
    with pytest.raises(ptmp.PtmpError, match="none.mcap"):
        ptmp.read(tmp_path / "none.mcap")
    with pytest.raises(ptmp.PtmpError, match="HDF5"):
        ptmp.read(tmp_path / "x.h5")
    with pytest.raises(ptmp.PtmpError, match="no such format"):
        ptmp.read(tmp_path / "x.mcap", format="csv")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), other)
    with pytest.raises(ptmp.PtmpError, match="other.parquet"):
        ptmp.read(other)
    # A dump holding a message that is not a TPSet cannot be a table.
    mixed = tmp_path / "mixed.dump"
    with ptmp.DumpWriter(mixed) as w:
        w.write([b"hello"])
    with pytest.raises(ptmp.PtmpError, match="not a PTMP TPSet"):
        ptmp.read(mixed)
