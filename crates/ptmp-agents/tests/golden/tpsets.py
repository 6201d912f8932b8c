#!/usr/bin/env python3
"""PTMP TPSets as text and as dump files (for the parity goldens).

Text form, one set per line:
  count detid created tstart tspan chanbeg chanend totaladc | ch,tstart,tspan,adcsum,adcpeak,flags ...
(optional fields absent are written as '-').

  tpsets.py gen OUTDIR           make the synthetic 4-link input (text and dump)
  tpsets.py totext DUMP > TXT    decode a dump file of TPSet messages
  tpsets.py todump TXT DUMP      encode text into a dump file
  tpsets.py ids TXT > IDS        "detid count tstart" of each set
  tpsets.py jsonl DUMP > JSONL   the JSON frame of each message (stats, metrics)
  tpsets.py shape DUMP > TXT     the key paths of those JSON messages, link and
                                 channel names made generic (0x*, ch*), once each
  tpsets.py glot DUMP > TXT      the paths of Graphite lines, made generic, with
                                 "data" (timestamp under 1e9: the data second of
                                 this input) or "arrival", once each
"""
import json, re
import random, struct, sys, os

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, val):
    return varint(num << 3) + varint(val)

def ldelim(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data

TP_FIELDS = ["channel", "tstart", "tspan", "adcsum", "adcpeak", "flags"]
SET_FIELDS = ["count", "detid", "created", "tstart", "tspan", "chanbeg", "chanend", "totaladc"]

def enc_set(s):
    b = b""
    for i, k in enumerate(SET_FIELDS):
        if s.get(k) is not None:
            b += field(i + 1, s[k])
    for tp in s["tps"]:
        t = b""
        for i, k in enumerate(TP_FIELDS):
            if tp.get(k) is not None:
                t += field(i + 1, tp[k])
        b += ldelim(9, t)
    return b

def rd_varint(b, i):
    n = 0; sh = 0
    while True:
        c = b[i]; i += 1
        n |= (c & 0x7F) << sh; sh += 7
        if not c & 0x80:
            return n, i

def dec_msg(b, names):
    d = {}; tps = []; i = 0
    while i < len(b):
        key, i = rd_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = rd_varint(b, i)
            d[names[num - 1]] = v
        elif wt == 2:
            n, i = rd_varint(b, i)
            tps.append(dec_msg(b[i:i + n], TP_FIELDS)); i += n
        else:
            raise ValueError("wire type %d" % wt)
    if "created" in d and d["created"] >= 1 << 63:
        d["created"] -= 1 << 64
    d["tps"] = tps
    return d

def zmsg(frames):
    out = b""
    for f in frames:
        if len(f) < 255:
            out += bytes([len(f)]) + f
        else:
            out += b"\xff" + struct.pack(">I", len(f)) + f
    return out

def unzmsg(b):
    frames = []; i = 0
    while i < len(b):
        n = b[i]; i += 1
        if n == 255:
            n = struct.unpack(">I", b[i:i + 4])[0]; i += 4
        frames.append(b[i:i + n]); i += n
    return frames

def write_dump(path, sets):
    with open(path, "wb") as f:
        for s in sets:
            m = zmsg([struct.pack("<i", 0), enc_set(s)])
            f.write(struct.pack("<Q", len(m)) + m)

def read_dump(path):
    out = []
    with open(path, "rb") as f:
        while True:
            h = f.read(8)
            if len(h) < 8:
                return out
            n = struct.unpack("<Q", h)[0]
            fr = unzmsg(f.read(n))
            assert len(fr) == 2 and fr[0] == b"\0\0\0\0", fr[:1]
            out.append(dec_msg(fr[1], SET_FIELDS))

def read_frames(path):
    out = []
    with open(path, "rb") as f:
        while True:
            h = f.read(8)
            if len(h) < 8:
                return out
            out.append(unzmsg(f.read(struct.unpack("<Q", h)[0])))

def generic(path):
    return ".".join("0x*" if re.fullmatch(r"0x[0-9a-f]+", p) else
                    "ch*" if re.fullmatch(r"ch-?[0-9]+", p) else p
                    for p in path.split("."))

def paths(v, pre):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from paths(x, pre + [k])
    else:
        yield generic(".".join(pre))

def opt(v):
    return "-" if v is None else str(v)

def to_text(s):
    head = " ".join(opt(s.get(k)) for k in SET_FIELDS)
    tps = " ".join(",".join(opt(tp.get(k)) for k in TP_FIELDS) for tp in s["tps"])
    return (head + " | " + tps).rstrip()

def from_text(line):
    head, _, tps = line.partition("|")
    vals = head.split()
    s = {k: (None if v == "-" else int(v)) for k, v in zip(SET_FIELDS, vals)}
    s["tps"] = []
    for t in tps.split():
        s["tps"].append({k: (None if v == "-" else int(v)) for k, v in zip(TP_FIELDS, t.split(","))})
    return s

def gen_link(rng, detid, n, t0, spacing):
    sets = []
    count = 0
    t = t0
    last = t0
    for i in range(n):
        t += spacing
        r = rng.random()
        ts = t
        if r < 0.01 and i > 2:          # ~1 % out of order: behind the previous set
            ts = last - rng.randint(1, spacing)
        elif r < 0.015 and i > 2:       # 0.5 % tardy: far behind
            ts = t - 40 * spacing
        if rng.random() < 0.005:        # count gaps
            count += rng.randint(1, 3)
        ntp = 0 if rng.random() < 0.005 else rng.randint(1, 8)
        tps = []
        for _ in range(ntp):
            tp = {"channel": detid * 1000 + rng.randint(0, 479),
                  # quantized: many TrigPrims share a tstart
                  "tstart": ts + 50 * rng.randint(0, spacing // 50 - 1),
                  "tspan": rng.choice([10, 20, 40, 80]),
                  "adcsum": rng.randint(10, 5000),
                  "adcpeak": rng.randint(5, 500),
                  "flags": 0}
            if rng.random() < 0.01:      # extreme values
                tp["adcsum"] = 0xFFFFFFFF
                tp["adcpeak"] = 0xFFFFFFFF
                tp["tspan"] = 0xFFFFFFFF
                tp["channel"] = 0xFFFFFFFF
            tps.append(tp)
        if tps:
            tps[0]["tstart"] = ts
        s = {"count": count, "detid": detid, "created": 1600000000000000 + i,
             "tstart": min([tp["tstart"] for tp in tps], default=ts),
             "tspan": spacing, "tps": tps}
        if tps:
            s["chanbeg"] = min(tp["channel"] for tp in tps)
            s["chanend"] = max(tp["channel"] for tp in tps)
            s["totaladc"] = sum(tp["adcsum"] for tp in tps) & 0xFFFFFFFF
        sets.append(s)
        count += 1
        last = max(last, s["tstart"])
    return sets

def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        out = sys.argv[2]
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
        rng = random.Random(20260509)
        links = [gen_link(rng, d, n, 1_000_000_000 + 7 * d, 25_000) for d in (1, 2, 3, 4)]
        for d, sets in zip((1, 2, 3, 4), links):
            write_dump(os.path.join(out, "link%d.dump" % d), sets)
            with open(os.path.join(out, "link%d.txt" % d), "w") as f:
                f.writelines(to_text(s) + "\n" for s in sets)
        # The four links in one stream, round robin: the window's input.
        merged = [s for group in zip(*links) for s in group]
        write_dump(os.path.join(out, "merged.dump"), merged)
        with open(os.path.join(out, "merged.txt"), "w") as f:
            f.writelines(to_text(s) + "\n" for s in merged)
    elif cmd == "totext":
        for s in read_dump(sys.argv[2]):
            print(to_text(s))
    elif cmd == "todump":
        with open(sys.argv[2]) as f:
            write_dump(sys.argv[3], [from_text(l) for l in f if l.strip()])
    elif cmd == "ids":
        with open(sys.argv[2]) as f:
            for l in f:
                if l.strip():
                    s = from_text(l)
                    print(s["detid"], s["count"], s["tstart"])
    elif cmd in ("jsonl", "shape", "glot"):
        seen = set()
        for fr in read_frames(sys.argv[2]):
            text = fr[1].rstrip(b"\0").decode()
            if cmd == "jsonl":
                assert fr[0] == b"1246973774"
                print(text)
            elif cmd == "shape":
                seen.update(paths(json.loads(text), []))
            else:
                for line in text.splitlines():
                    p, _, ts = line.split(" ")
                    kind = "data" if int(ts) < 1_000_000_000 else "arrival"
                    seen.add(generic(p) + " " + kind)
        for x in sorted(seen):
            print(x)
    else:
        sys.exit(__doc__)

if __name__ == "__main__":
    main()
