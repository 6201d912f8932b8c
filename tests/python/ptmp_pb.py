"""ptmp.data message classes for Python's protobuf package, built from a
hand-written descriptor (no protoc, and independent of ptmp's own .proto
compilation), so tests can hold ptmp's bytes against another implementation.
"""

from google.protobuf import descriptor_pb2, descriptor_pool

try:  # protobuf >= 4.21
    from google.protobuf.message_factory import GetMessageClass as _get_class
except ImportError:  # older protobuf
    from google.protobuf import message_factory as _mf

    def _get_class(desc):
        return _mf.MessageFactory().GetPrototype(desc)


F = descriptor_pb2.FieldDescriptorProto
REQ, OPT, REP = F.LABEL_REQUIRED, F.LABEL_OPTIONAL, F.LABEL_REPEATED
U32, U64, I64, MSG = F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_INT64, F.TYPE_MESSAGE

# (name, number, label, type) exactly as PTMP's ptmp.proto.
TRIGPRIM_FIELDS = [
    ("channel", 1, REQ, U32),
    ("tstart", 2, REQ, U64),
    ("tspan", 3, OPT, U32),
    ("adcsum", 4, OPT, U32),
    ("adcpeak", 5, OPT, U32),
    ("flags", 6, OPT, U32),
]
TPSET_FIELDS = [
    ("count", 1, REQ, U32),
    ("detid", 2, REQ, U32),
    ("created", 3, REQ, I64),
    ("tstart", 4, REQ, U64),
    ("tspan", 5, OPT, U32),
    ("chanbeg", 6, OPT, U32),
    ("chanend", 7, OPT, U32),
    ("totaladc", 8, OPT, U32),
    ("tps", 9, REP, MSG),
]


def _build():
    fd = descriptor_pb2.FileDescriptorProto(
        name="ptmp_test.proto", package="ptmp.data", syntax="proto2"
    )
    for mname, fields in (("TrigPrim", TRIGPRIM_FIELDS), ("TPSet", TPSET_FIELDS)):
        m = fd.message_type.add(name=mname)
        for name, number, label, ftype in fields:
            f = m.field.add(name=name, number=number, label=label, type=ftype)
            if ftype == MSG:
                f.type_name = ".ptmp.data.TrigPrim"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return (
        _get_class(pool.FindMessageTypeByName("ptmp.data.TrigPrim")),
        _get_class(pool.FindMessageTypeByName("ptmp.data.TPSet")),
    )


TrigPrim, TPSet = _build()

TP_KEYS = [f[0] for f in TRIGPRIM_FIELDS]
SET_KEYS = [f[0] for f in TPSET_FIELDS if f[0] != "tps"]


def from_dict(d):
    """A TPSet from a dict holding only the fields that are set."""
    t = TPSet()
    for k in SET_KEYS:
        if k in d:
            setattr(t, k, d[k])
    for tpd in d.get("tps", []):
        tp = t.tps.add()
        for k in TP_KEYS:
            if k in tpd:
                setattr(tp, k, tpd[k])
    return t


def to_dict(t):
    """The set fields of a TPSet as a dict (unset optionals left out)."""
    d = {k: getattr(t, k) for k in SET_KEYS if t.HasField(k)}
    if len(t.tps):
        d["tps"] = [{k: getattr(tp, k) for k in TP_KEYS if tp.HasField(k)} for tp in t.tps]
    return d
