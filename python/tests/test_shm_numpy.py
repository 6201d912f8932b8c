"""NumPy arrays of any item type through a shared-memory channel: published
as their bytes, read back as a view reshaped and retyped without a copy."""

import os

import pytest

import ptmp

TAG = f"pynp{os.getpid()}"


def test_arrays_of_any_dtype_are_published_as_their_bytes():
    np = pytest.importorskip("numpy")
    name = f"{TAG}-dtypes"
    w = ptmp.ShmWriter(name, slots=8, max_message=4096)
    r = ptmp.ShmReader(name, start="oldest")
    try:
        arrays = [
            np.arange(12, dtype=np.uint16).reshape(3, 4),
            np.linspace(0, 1, 10, dtype=np.float32),
            np.arange(6, dtype=np.int64),
            np.arange(24, dtype=np.uint8).reshape(2, 4, 3),
        ]
        for a in arrays:
            w.publish(a)
        for a in arrays:
            with r.view(timeout=1.0) as v:
                assert len(v) == a.nbytes
                got = np.frombuffer(v, dtype=a.dtype).reshape(a.shape)
                assert np.array_equal(got, a) and v.valid()
                u8 = v.numpy()
                assert u8.dtype == np.uint8 and u8.shape == (a.nbytes,)
                del got, u8
        # Not contiguous: refused, naming the way out.
        with pytest.raises(ValueError, match="C-contiguous.*ascontiguousarray"):
            w.publish(np.arange(16, dtype=np.uint16).reshape(4, 4)[:, 0])
        with pytest.raises(ValueError, match="C-contiguous"):
            w.publish(np.arange(16, dtype=np.uint8)[::2])
        w.publish(np.ascontiguousarray(np.arange(16, dtype=np.uint16).reshape(4, 4)[:, 0]))
        assert np.array_equal(np.frombuffer(r.recv(timeout=1.0), dtype=np.uint16), [0, 4, 8, 12])
        # Not a buffer at all: a TypeError, as before.
        with pytest.raises(TypeError):
            w.publish("text")
    finally:
        ptmp.shm_remove(name)
