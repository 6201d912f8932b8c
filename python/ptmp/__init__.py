"""ptmp: PTMP-compatible trigger message passing, from Python.

The classes are the Rust library's, so Python speaks PTMP's two-frame wire
format and JSON socket configs and reaches every transport (inproc, ipc,
tcp, shm) at native speed::

    import ptmp
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": ["tcp://127.0.0.1:5678"]}})
    rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": ["tcp://127.0.0.1:5678"]}})
    tx.send(ptmp.TPSet(count=1, detid=3, tps=[ptmp.TrigPrim(channel=7, tstart=100)]))
    s = rx.recv(timeout=1.0)   # None on timeout

Blocking calls release the GIL and honour Ctrl-C. Shared memory:
``ShmWriter.publish`` and ``ShmReader.view`` (a zero-copy buffer of the ring
slot; ``memoryview(v)`` or ``v.numpy()``). Files of messages (the
format follows the extension; a czmqat dump unless it says otherwise):
``read`` (a pyarrow Table, a row per TrigPrim), ``read_dump``,
``read_tpsets``, ``read_rows`` (columns as lists), ``DumpWriter``. Agents: ``run(config)``. Graphs:
``graph_check(config)`` and ``run_graph(config)`` (each process a
``python -m ptmp._part`` child); Jsonnet files take ``tla_str``,
``tla_code``, ``ext_str`` and ``jpath``. Shared-memory channels:
``shm_list()`` and ``shm_remove(name)``. Presence on the network:
``Peers``; ``use_discovery(group=...)`` lets socket configs name their
peers (``name://NODE/PORT``, docs/discovery.md). Requests and answers:
``Client(address).request(data)`` asks a ``Server``, whose ``recv()``
hands over a ``Request`` to ``answer`` or ``refuse`` from any thread; a
request that gets no answer raises a ``RequestError`` that says why
(``RequestTimeout``, ``RequestRefused``, ``ServerGone``). Guide:
docs/python.md.
"""

import atexit as _atexit
import os as _os

from ._ptmp import (  # noqa: F401
    VERSION_FRAME,
    Client,
    ConfigError,
    DumpWriter,
    Peers,
    PtmpError,
    Receiver,
    Request,
    RequestError,
    RequestRefused,
    RequestTimeout,
    Sender,
    Server,
    ServerGone,
    ShmError,
    ShmReader,
    ShmView,
    ShmWriter,
    TPSet,
    TrigPrim,
    WireError,
    announced_names,
    graph_check,
    now_us,
    _read_arrow_ipc,
    _table_format,
    read_dump,
    read_rows,
    read_tpsets,
    run,
    run_graph,
    shm_list,
    shm_remove,
    use_discovery,
    withdraw_names,
)

__all__ = [
    "VERSION_FRAME",
    "Client",
    "ConfigError",
    "DumpWriter",
    "Peers",
    "PtmpError",
    "Receiver",
    "Request",
    "RequestError",
    "RequestRefused",
    "RequestTimeout",
    "Sender",
    "Server",
    "ServerGone",
    "ShmError",
    "ShmReader",
    "ShmView",
    "ShmWriter",
    "TPSet",
    "TrigPrim",
    "WireError",
    "announced_names",
    "graph_check",
    "now_us",
    "read",
    "read_dump",
    "read_rows",
    "read_tpsets",
    "run",
    "run_graph",
    "shm_list",
    "shm_remove",
    "use_discovery",
    "withdraw_names",
]


def read(path: "str | _os.PathLike", format: "str | None" = None) -> "pyarrow.Table":
    """Read a file of TPSets (MCAP, Parquet or a czmqat dump, by its
    extension or ``format``) as a ``pyarrow.Table``: a row per TrigPrim with
    its set's columns, its ``edge`` (channel) and ``log_time_ns`` (receive
    time), typed as the Parquet files ptmp writes. No Python object is made
    per TrigPrim: ``.to_pandas()``, ``polars.from_arrow(t)`` and
    ``duckdb.sql("select ... from t")`` take it as it is. A Parquet file is
    read by pyarrow itself after ptmp checked its columns; the other
    formats are decoded in Rust, without the GIL, into one Arrow stream.
    Needs pyarrow."""
    import pyarrow as pa

    fmt = _table_format(path, format)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    data = _read_arrow_ipc(path, format)
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


# Names announced by this process's sockets leave with it at once, rather
# than at the peers' next liveness check.
_atexit.register(withdraw_names)
