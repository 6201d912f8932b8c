"""Jsonnet top-level arguments, external variables and library paths from
Python: the keywords tla_str, tla_code, ext_str and jpath of graph_check,
run_graph and run (the CLI's --tla-str, --tla-code, -V and -J)."""

import os

import pytest

import ptmp

HERE = os.path.dirname(os.path.abspath(__file__))
BUTTERFLY = os.path.join(HERE, "..", "..", "examples", "butterfly.jsonnet")


def test_tla_code_sets_the_butterfly_layer_width():
    text = ptmp.graph_check(BUTTERFLY)
    assert "component1_1" in text and "component1_2" not in text
    text = ptmp.graph_check(BUTTERFLY, tla_code={"c1": "3"})
    for i in (1, 2, 3):
        assert f"component1_{i}" in text
    assert "component1_4" not in text and "component2_2" not in text


def test_tla_str_passes_a_string():
    text = ptmp.graph_check(BUTTERFLY, tla_str={"transport": "tcp", "name": "pyfly"})
    assert "over tcp" in text and "over shm" not in text
    assert "pyfly" in text
    # A string where the file wants a number is the file's error, named.
    with pytest.raises(ptmp.ConfigError):
        ptmp.graph_check(BUTTERFLY, tla_str={"c1": "3"})


def graph_lib(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "nodes.libsonnet").write_text(
        "{ chain(n): [{name: 'src', type: 'source', data: {count: n}},"
        "  {name: 'snk', type: 'sink', data: {count: n}}] }"
    )
    g = tmp_path / "g.jsonnet"
    g.write_text(
        "local l = import 'nodes.libsonnet';\n"
        "{ name: std.extVar('gname'), nodes: l.chain(10),\n"
        "  edges: [{from: 'src.out', to: 'snk.in', pattern: 'pushpull'}] }\n"
    )
    return lib, g


def test_ext_str_and_jpath(tmp_path):
    lib, g = graph_lib(tmp_path)
    # Without the library path the import fails, naming it.
    with pytest.raises(ptmp.ConfigError, match="nodes.libsonnet"):
        ptmp.graph_check(str(g), ext_str={"gname": "x"})
    # Without the external variable: an error naming it.
    with pytest.raises(ptmp.ConfigError, match="gname"):
        ptmp.graph_check(str(g), jpath=[str(lib)])
    text = ptmp.graph_check(str(g), ext_str={"gname": "pyext"}, jpath=[lib])
    assert "pyext" in text and "2 processes" in text


def test_run_graph_takes_the_same_arguments(tmp_path):
    lib, g = graph_lib(tmp_path)
    r = ptmp.run_graph(str(g), ttl=60, run_dir=str(tmp_path / "run"),
                       ext_str={"gname": "pyextrun"}, jpath=[str(lib)])
    assert r["ok"] and r["reason"] == "finished", r
    reports = {rep["name"]: rep for p in r["processes"] for rep in p["reports"]}
    assert reports["snk"]["counters"]["received"] == 10


def test_run_takes_top_level_arguments(tmp_path):
    src = tmp_path / "in.dump"
    with ptmp.DumpWriter(src) as w:
        for i in range(20):
            w.write_tpset(ptmp.TPSet(count=i, tstart=i))
    out = tmp_path / "out.dump"
    cfg = tmp_path / "copy.jsonnet"
    cfg.write_text(
        "function(ifile, ofile, ep='inproc://pytla') { ttl: 1, proxies: [\n"
        " {name: 'src', type: 'czmqat', data: {ifile: ifile,\n"
        "   output: {socket: {type: 'PUSH', bind: [ep]}}}},\n"
        " {name: 'sink', type: 'czmqat', data: {ofile: ofile,\n"
        "   input: {socket: {type: 'PULL', connect: [ep]}}}}] }\n"
    )
    reports = ptmp.run(str(cfg), tla_str={"ifile": str(src), "ofile": str(out)})
    assert {r["name"]: r for r in reports}["sink"]["copied"] == 20
    assert [s.count for s in ptmp.read_tpsets(out)] == list(range(20))
    # tla_code: the same, the arguments given as Jsonnet code.
    out.unlink()
    ptmp.run(str(cfg), tla_code={"ifile": repr(str(src)), "ofile": repr(str(out))})
    assert len(ptmp.read_tpsets(out)) == 20


def test_bad_arguments_are_refused_clearly(tmp_path):
    with pytest.raises(ValueError, match="Jsonnet file"):
        ptmp.graph_check({"nodes": []}, tla_code={"c1": "3"})
    with pytest.raises(ValueError, match="Jsonnet file"):
        ptmp.run({"proxies": []}, ext_str={"a": "b"})
    with pytest.raises(ValueError, match=r"tla_code\[.c1.\] = 3: give a str"):
        ptmp.graph_check(BUTTERFLY, tla_code={"c1": 3})
    with pytest.raises(ValueError, match="tla_str: empty name"):
        ptmp.graph_check(BUTTERFLY, tla_str={"": "x"})
    # Bad Jsonnet code in an argument: a ConfigError, not a crash.
    with pytest.raises(ptmp.ConfigError):
        ptmp.graph_check(BUTTERFLY, tla_code={"c1": "1 +"})
