"""ptmper configurations of the golden runs: ptmper_configs.py window_stats|sorted|zipper|replay|filter INDIR OUTDIR"""
import json, sys
def sock(t, attach, eps, hwm=None):
    s = {"type": t, attach: eps}
    if hwm: s["hwm"] = hwm
    return {"socket": s}
ep = lambda p: "tcp://127.0.0.1:%d" % p
IN = sys.argv[2]
OUT = sys.argv[3]

def window_stats():
    return {"ttl": 8, "snooze": 500, "proxies": [
        {"name": "src1", "type": "czmqat", "data": {"ifile": IN + "/merged.dump",
            "output": sock("PUSH", "bind", [ep(37101)])}},
        {"name": "win", "type": "window", "data": {"tspan": 3000, "toffset": 1234, "tbuf": 30000, "detid": 77,
            "input": sock("PULL", "connect", [ep(37101)]), "output": sock("PUSH", "bind", [ep(37102)]),
            "metrics": {"socket": {"type": "PUSH", "bind": [ep(37103)]}, "period": 500}}},
        {"name": "wsink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37102)]),
            "ofile": OUT + "/window.dump"}},
        {"name": "msink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37103)]),
            "ofile": OUT + "/metrics.dump"}},
        {"name": "src2", "type": "czmqat", "data": {"ifile": IN + "/merged.dump", "delayus": 200,
            "output": sock("PUSH", "bind", [ep(37104)])}},
        {"name": "st", "type": "stats", "data": {"tick_per_us": 50, "link_integration_time": 300,
            "chan_integration_time": 600,
            "input": sock("PULL", "connect", [ep(37104)]), "output": sock("PUB", "bind", [ep(37105)])}},
        {"name": "stsink", "type": "czmqat", "data": {"input": sock("SUB", "connect", [ep(37105)]),
            "ofile": OUT + "/stats.dump"}},
        {"name": "glot", "type": "stats_graphite", "data": {
            "input": sock("SUB", "connect", [ep(37105)]), "output": sock("PUSH", "bind", [ep(37106)])}},
        {"name": "gsink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37106)]),
            "ofile": OUT + "/graphite.dump"}},
    ]}

def merge(kind):
    px = []
    for d in (1, 2, 3, 4):
        px.append({"name": "f%d" % d, "type": "czmqat", "data": {"ifile": IN + "/link%d.dump" % d,
            "output": sock("PUSH", "bind", [ep(37200 + d)])}})
        px.append({"name": "rep%d" % d, "type": "replay", "data": {"speed": 50,
            "input": sock("PULL", "connect", [ep(37200 + d)]),
            "output": sock("PUSH", "bind", [ep(37210 + d)])}})
    data = {"input": sock("PULL", "connect", [ep(37210 + d) for d in (1, 2, 3, 4)]),
            "output": sock("PUSH", "bind", [ep(37220)])}
    if kind == "sorted":
        data["tardy"] = 1000
    else:
        data["sync_time"] = 1000
    px.append({"name": kind, "type": kind, "data": data})
    px.append({"name": "sink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37220)]),
        "ofile": OUT + "/%s.dump" % kind}})
    return {"ttl": 8, "snooze": 500, "proxies": px}

def replay():
    return {"ttl": 4, "snooze": 500, "proxies": [
        {"name": "f1", "type": "czmqat", "data": {"ifile": IN + "/link1.dump",
            "output": sock("PUSH", "bind", [ep(37301)])}},
        {"name": "rep", "type": "replay", "data": {"speed": 50, "rewrite_count": 1,
            "rewrite_tstart": 1000,
            "input": sock("PULL", "connect", [ep(37301)]),
            "output": sock("PUSH", "bind", [ep(37302)])}},
        {"name": "sink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37302)]),
            "ofile": OUT + "/replay.dump"}},
    ]}

def filt():
    return {"ttl": 4, "snooze": 500, "proxies": [
        {"name": "src", "type": "czmqat", "data": {"ifile": IN + "/merged.dump",
            "output": sock("PUSH", "bind", [ep(37401)])}},
        {"name": "filt", "type": "filter", "data": {"engine": "dummy_filter",
            "input": sock("PULL", "connect", [ep(37401)]),
            "output": sock("PUSH", "bind", [ep(37402)])}},
        {"name": "sink", "type": "czmqat", "data": {"input": sock("PULL", "connect", [ep(37402)]),
            "ofile": OUT + "/filter.dump"}},
    ]}

cfg = {"window_stats": window_stats, "replay": replay, "filter": filt, "sorted": lambda: merge("sorted"), "zipper": lambda: merge("zipper")}[sys.argv[1]]()
print(json.dumps(cfg, indent=1))
