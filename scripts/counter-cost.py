#!/usr/bin/env python3
"""What the live counters (ptmp::meter) cost: the same source built with and
without them, compared two ways.

1. Instructions per message, counted by valgrind's callgrind: one side of a
   PUSH/PULL pair (`ptmp send` or `ptmp recv`) runs under callgrind, its
   peer natively, for N1 and then N2 TPSets; the difference of the two
   totals over N2 - N1 is what one more message costs that side, start-up
   and shutdown cancelled out. The side under callgrind is the slow one, so
   its peer is always ready for it and the count hardly depends on timing.
2. Timed rounds of `ptmp bench throughput` (two processes, PUSH/PULL),
   alternating the builds and which goes first, with the medians of each
   build and the median of the per-round ratios. The raw libzmq rows of the
   same runs do not use ptmp's counters at all: their on/off ratio shows how
   much the machine alone moves the figures.

Usage (from the repository's root; opt-in, not part of the tests):

    python3 scripts/counter-cost.py --build            # build both, then measure
    python3 scripts/counter-cost.py --on A --off B     # two binaries built earlier

`--build` runs `cargo build --release -p ptmp-cli` with and without
`--features ptmp/no-counters`, keeps a copy of each in the work directory
and builds the normal binary again at the end, so target/release/ptmp is
left as it was. Needs valgrind. (Binaries built before the workspace set
rustix's `use-libc-auxv` feature die of SIGSEGV under valgrind.)
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def build(work):
    out = {}
    for name, extra in (("off", ["--features", "ptmp/no-counters"]), ("on", [])):
        subprocess.run(
            ["cargo", "build", "--release", "-q", "-p", "ptmp-cli", *extra], check=True
        )
        out[name] = os.path.join(work, f"ptmp-{name}")
        shutil.copy2("target/release/ptmp", out[name])
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collected(log, out):
    """The instruction totals callgrind reports at exit: the whole process,
    and its first thread alone (the one that calls send or recv; libzmq's
    I/O threads are the others)."""
    with open(log) as f:
        m = re.search(r"Collected\s*:\s*(\d+)", f.read())
    if not m:
        raise RuntimeError(f"no callgrind total in {log}")
    with open(out + "-01") as f:
        t = re.search(r"^totals:\s*(\d+)", f.read(), re.M)
    if not t:
        raise RuntimeError(f"no totals in {out}-01")
    for name in os.listdir(os.path.dirname(out)):
        if name.startswith(os.path.basename(out)):
            os.remove(os.path.join(os.path.dirname(out), name))
    return int(m.group(1)), int(t.group(1))


def instructions(ptmp, transport, ntps, side, n, work):
    """Instructions of `side` (send or recv) moving n TPSets."""
    if transport == "tcp":
        ep = f"tcp://127.0.0.1:{free_port()}"
    else:
        ep = f"shm://counter-cost-{os.getpid()}-{side}-{ntps}-{n}"
    # The sender binds and waits 2 s before it sends, so the receiver
    # (callgrind takes a second or two to start) is attached first: over
    # shm a PUSH with no reader yet would not wait for it.
    send = [ptmp, "send", "-p", "PUSH", "-a", "bind", "-e", ep, "-n", str(n),
            "-N", str(ntps), "-B", "2000", "--linger=20000"]
    recv = [ptmp, "recv", "-p", "PULL", "-a", "connect", "-e", ep, "-n", str(n),
            "-T", "60000", "--json"]
    log = os.path.join(work, "callgrind.log")
    cgout = os.path.join(work, "callgrind.out")
    cg = ["valgrind", "--tool=callgrind", f"--log-file={log}",
          "--separate-threads=yes", f"--callgrind-out-file={cgout}"]
    quiet = dict(stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if side == "send":
        peer = subprocess.Popen(recv, **quiet)
        time.sleep(0.2)
        subprocess.run(cg + send, check=True, **quiet)
    else:
        peer = None
        measured = subprocess.Popen(cg + recv, **quiet)
        time.sleep(0.2)
        subprocess.run(send, check=True, **quiet)
    out, _ = (peer or measured).communicate(timeout=600)
    got = json.loads(out.decode().strip().splitlines()[-1])
    if got.get("received") != n:
        raise RuntimeError(f"{transport} {side}: received {got}, wanted {n}")
    if side == "recv" and measured.returncode != 0:
        raise RuntimeError(f"recv under callgrind failed: {measured.returncode}")
    if transport == "shm":
        subprocess.run([ptmp, "shm", "rm", ep[len("shm://"):]], **quiet)
    return collected(log, cgout)


def per_message(ptmp, transport, ntps, side, n1, n2, work):
    a = instructions(ptmp, transport, ntps, side, n1, work)
    b = instructions(ptmp, transport, ntps, side, n2, work)
    return tuple((y - x) / (n2 - n1) for x, y in zip(a, b))


def counted(bins, args, work):
    print(f"## Instructions per message (callgrind; N = {args.n1} and {args.n2}, "
          f"{args.repeat} times each, the builds alternating)\n")
    print("Whole process, then the thread that calls send or recv alone (libzmq's I/O "
          "thread, whose share depends on how the two processes interleave, left out): "
          "medians, and the range of the runs.\n")
    print("| transport | TrigPrims | side | on | off | on - off | on / off | on: range | off: range "
          "| calling thread: on | off | on - off | on / off |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for transport in args.transports:
        for ntps in args.ntps:
            for side in ("send", "recv"):
                got = {"on": [], "off": []}
                for _ in range(args.repeat):
                    for b in ("on", "off"):
                        got[b].append(per_message(bins[b], transport, ntps, side,
                                                  args.n1, args.n2, work))
                med = lambda b, k: statistics.median(x[k] for x in got[b])
                rng = lambda b: f"{min(x[0] for x in got[b]):.0f} to {max(x[0] for x in got[b]):.0f}"
                on, off, mon, moff = med("on", 0), med("off", 0), med("on", 1), med("off", 1)
                print(f"| {transport} | {ntps} | {side} | {on:.0f} | {off:.0f} | {on - off:+.0f} "
                      f"| {on / off:.4f} | {rng('on')} | {rng('off')} "
                      f"| {mon:.0f} | {moff:.0f} | {mon - moff:+.0f} | {mon / moff:.4f} |", flush=True)
    print()


def bench_round(ptmp, args, work):
    out = os.path.join(work, "bench")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(
        [ptmp, "bench", "--out", out, "throughput", "-n", str(args.count),
         "--patterns", "pushpull", "--transports", *args.transports,
         "--ntps", *map(str, args.ntps)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with open(os.path.join(out, "throughput.json")) as f:
        doc = json.load(f)
    rows = {}
    for t in doc["tables"]:
        for r in t["rows"]:
            key = (r["impl"], r["transport"], int(r["ntps"]["value"]))
            rows[key] = (r["msg/s"]["value"], r["sender syscalls/msg"].get("value"),
                         r["receiver syscalls/msg"].get("value"))
    return rows


def timed(bins, args, work):
    cmd = (f"ptmp bench throughput -n {args.count} --patterns pushpull --transports "
           f"{' '.join(args.transports)} --ntps {' '.join(map(str, args.ntps))}")
    print(f"## Timed rounds: {args.rounds} of each build, alternating\n\n    {cmd}\n")
    runs = {"on": [], "off": []}
    loads = [load()]
    for r in range(args.rounds):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        for b in order:
            runs[b].append(bench_round(bins[b], args, work))
        loads.append(load())
        print(f"round {r + 1}: load {loads[-1]}", file=sys.stderr, flush=True)
    print(f"Load average (1, 5, 15 min) at the start and after each round: {'; '.join(loads)}\n")
    print("| impl | transport | TrigPrims | on: median msg/s | off: median msg/s | on / off (medians) "
          "| median of the round ratios | range of the round ratios | syscalls/msg send, recv (on; off) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(runs["on"][0]):
        on = [x[key][0] for x in runs["on"]]
        off = [x[key][0] for x in runs["off"]]
        ratios = [a / b for a, b in zip(on, off)]
        sc = lambda b: ", ".join(
            "-" if v is None else f"{statistics.median(v):.4f}"
            for v in ([x[key][1] for x in runs[b] if x[key][1] is not None] or None,
                      [x[key][2] for x in runs[b] if x[key][2] is not None] or None))
        print(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(on) / 1e6:.3f} M "
              f"| {statistics.median(off) / 1e6:.3f} M "
              f"| {statistics.median(on) / statistics.median(off):.3f} "
              f"| {statistics.median(ratios):.3f} | {min(ratios):.3f} to {max(ratios):.3f} "
              f"| {sc('on')}; {sc('off')} |")
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", action="store_true", help="build both binaries first")
    p.add_argument("--on", help="a ptmp binary built as usual")
    p.add_argument("--off", help="a ptmp binary built with --features ptmp/no-counters")
    p.add_argument("--transports", nargs="+", default=["tcp", "shm"])
    p.add_argument("--ntps", nargs="+", type=int, default=[0, 10])
    p.add_argument("--n1", type=int, default=20000)
    p.add_argument("--n2", type=int, default=120000)
    p.add_argument("--repeat", type=int, default=3, help="callgrind runs of each build")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds of each build")
    p.add_argument("-n", "--count", type=int, default=1000000, help="TPSets per timed row")
    p.add_argument("--skip-callgrind", action="store_true")
    p.add_argument("--skip-timed", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="counter-cost-") as work:
        if args.build:
            bins = build(work)
        elif args.on and args.off:
            bins = {"on": args.on, "off": args.off}
        else:
            p.error("give --build, or both --on and --off")
        print(f"# Counter cost, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{os.cpu_count()} CPUs, load {load()}\n")
        if not args.skip_callgrind:
            counted(bins, args, work)
        if not args.skip_timed:
            timed(bins, args, work)


if __name__ == "__main__":
    main()
