"""TMA tensor maps without a GPU: geometry, footprints, the registry and the launch table.

Encoding a map needs the CUDA driver, so `encode` is replaced here by a stand-in that
returns 128 bytes derived from the geometry; tests/gpu/test_tma.py encodes real maps.
"""

from __future__ import annotations

import hashlib
import struct
from types import SimpleNamespace

import numpy as np
import pytest

import consan
from consan import tma
from consan.errors import ConsanError
from instrument import abi


@pytest.fixture(autouse=True)
def fake_encoder(monkeypatch):
    tma.forget_all()

    def encode(info: tma.TensorMapInfo) -> bytes:
        return hashlib.sha512(repr(info).encode()).digest() * 2  # 128 bytes

    monkeypatch.setattr(tma, "encode", encode)
    yield
    tma.forget_all()


def fake_array(shape, dtype=np.float32, ptr=0x7F0000000000, strides=None):
    dt = np.dtype(dtype)
    if strides is None:
        strides = np.empty(shape, dtype=dt).strides if np.prod(shape) < 1 << 20 else None
    return SimpleNamespace(shape=tuple(shape), dtype=dt, strides=strides,
                           data=SimpleNamespace(ptr=ptr))


def info(box, dtype="float32", es=None, interleave=0, swizzle=0):
    """TensorMapInfo from a box in NumPy order."""
    box = tuple(reversed(box))
    es = tuple(reversed(es)) if es else (1,) * len(box)
    return tma.TensorMapInfo(tma.DATA_TYPES[dtype][0], global_dim=(1024,) * len(box),
                             box_dim=box, element_strides=es, interleave=interleave,
                             swizzle=swizzle)


@pytest.mark.parametrize("box,dtype,es,interleave,want", [
    ((32, 32), "float32", None, 0, 4096),
    ((64, 64), "bfloat16", None, 0, 8192),
    ((128,), "uint8", None, 0, 128),
    ((2, 3, 4, 5, 16), "float16", None, 0, 2 * 3 * 4 * 5 * 32),
    # an element stride of 2 on an outer dimension loads every other row: ceil(9 / 2) = 5
    ((9, 16), "float32", (2, 1), 0, 5 * 64),
    # the innermost stride is ignored without interleave
    ((8, 16), "float32", (1, 4), 0, 8 * 64),
    # interleave: each innermost row takes a whole 16 / 32-byte chunk; its stride counts
    ((4, 4, 8), "float16", (1, 1, 2), 1, 4 * 4 * 16),
    ((4, 4, 8), "float16", None, 2, 4 * 4 * 32),
    # packed sm_100 types: 16 x U4 in 8 bytes, or one byte per value in 16-byte chunks
    ((4, 128), "16u4_align8b", None, 0, 4 * 64),
    ((4, 128), "16u4_align16b", None, 0, 4 * 128),
])
def test_footprint(box, dtype, es, interleave, want):
    assert info(box, dtype, es, interleave).footprint_bytes == want


def test_tensor_map_of_an_array_is_an_np_void_that_knows_its_box():
    x = fake_array((64, 128))  # rows, columns: float32
    m = consan.tensor_map(x, box_shape=(32, 64))
    assert type(m) is np.void and m.dtype.itemsize == 128
    i = consan.tensor_map_info(m)
    assert i.rank == 2 and i.global_dim == (128, 64) and i.global_strides == (512,)
    assert i.box_dim == (64, 32) and i.element_strides == (1, 1)
    assert i.global_address == 0x7F0000000000 and i.data_type_name == "float32"
    assert (i.swizzle, i.interleave, i.l2_promotion, i.oob_fill) == (0, 0, 2, 0)
    assert i.footprint_bytes == 32 * 64 * 4
    assert "box 32x64" in i.describe()
    # the same bytes, however they come back, are known: by value, not by object
    assert consan.tensor_map_info(np.void(m.tobytes())) == i
    assert consan.tensor_map_info(m.tobytes()) == i
    assert consan.tensor_map_info(np.void(bytes(128))) is None
    assert consan.tensor_map_info(np.int32(3)) is None


def test_tensor_map_options():
    x = fake_array((4, 256, 64), dtype=np.float16)
    m = consan.tensor_map(x, box_shape=(2, 64, 64), swizzle="128B", l2_promotion="256B",
                          oob_fill="nan", element_strides=(2, 1, 1))
    i = consan.tensor_map_info(m)
    assert (i.swizzle, i.l2_promotion, i.oob_fill) == (3, 3, 1)
    assert i.element_strides == (1, 1, 2) and i.box_elements == (64, 64, 1)
    assert i.footprint_bytes == 64 * 64 * 2
    f32 = consan.tensor_map(fake_array((64, 64)), box_shape=(8, 8), data_type="tfloat32")
    assert consan.tensor_map_info(f32).data_type == 11
    raw = consan.tensor_map(address=0x1000, shape=(16, 16), dtype="float32", box_shape=(16, 4))
    assert consan.tensor_map_info(raw).global_strides == (64,)


@pytest.mark.parametrize("kw,msg", [
    ({"box_shape": (32, 300)}, "box dimension 0 is 300"),
    ({"box_shape": (32, 2)}, "multiple of 16 bytes"),
    ({"box_shape": (8, 64), "swizzle": "64B"}, "swizzle 64B allows at most 64"),
    ({"box_shape": (8, 32), "swizzle": "sideways"}, "unknown swizzle"),
    ({"box_shape": (8,)}, "one entry per dimension"),
    ({"box_shape": (8, 32), "element_strides": (9, 1)}, "element stride 1 is 9"),
])
def test_tensor_map_says_what_the_driver_would_refuse(kw, msg):
    with pytest.raises(ConsanError, match=msg):
        consan.tensor_map(fake_array((64, 128)), **kw)


def test_tensor_map_refuses_a_non_contiguous_row_and_odd_strides():
    with pytest.raises(ConsanError, match="innermost dimension must be contiguous"):
        consan.tensor_map(fake_array((64, 64), strides=(256, 8)), box_shape=(8, 8))
    with pytest.raises(ConsanError, match="multiple of 16"):
        consan.tensor_map(fake_array((64, 61), strides=(244, 4)), box_shape=(8, 8))
    with pytest.raises(ConsanError, match="cannot move elements of type complex64"):
        consan.tensor_map(fake_array((8, 8), dtype=np.complex64), box_shape=(8, 8))
    with pytest.raises(ConsanError, match="6"):
        consan.tensor_map(fake_array((2,) * 6), box_shape=(2,) * 6)


def test_register_a_map_built_elsewhere():
    data = bytes(range(128))
    m = consan.register_tensor_map(np.void(data), box_shape=(16, 32), dtype=np.float16)
    assert type(m) is np.void and m.tobytes() == data
    assert consan.tensor_map_info(data).footprint_bytes == 16 * 32 * 2
    with pytest.raises(ConsanError, match="128 bytes"):
        consan.register_tensor_map(b"short", box_shape=(1,), dtype=np.float32)


def test_registry_forgets_the_least_recently_used(monkeypatch):
    monkeypatch.setattr(tma, "REGISTRY_SIZE", 3)
    maps = [bytes([k]) * 128 for k in range(4)]
    for d in maps:
        tma.register(d, info((16,)))
    assert tma.tensor_map_info(maps[0]) is None
    assert all(tma.tensor_map_info(d) for d in maps[1:])


def test_map_bytes_of_a_cuda_bindings_map():
    words = list(range(16))
    cu = SimpleNamespace(opaque=words)
    assert tma.map_bytes(cu) == struct.pack("<16Q", *words)
    assert tma.map_bytes(np.zeros(4)) is None and tma.map_bytes(b"x") is None


def test_device_table_lists_the_args_maps_first_then_the_registry():
    other = consan.tensor_map(fake_array((64, 64)), box_shape=(16, 16))
    arg = consan.tensor_map(fake_array((64, 64), ptr=0x7F0000100000), box_shape=(8, 16))
    unknown = np.void(bytes(range(1, 129)))
    t = tma.device_table((np.int32(4), unknown, arg, arg))
    assert t.dtype == abi.tmap_dtype() and len(t) == abi.TMAP_ENTRIES
    fps = [int(f) for f in t["fingerprint"] if f]
    assert fps == [abi.tensor_map_fingerprint(arg.tobytes()),
                   abi.tensor_map_fingerprint(other.tobytes())]
    assert list(t["bytes"][:2]) == [8 * 16 * 4, 16 * 16 * 4]


def test_launch_table_bytes_are_remembered_until_the_maps_change():
    arg = consan.tensor_map(fake_array((64, 64)), box_shape=(16, 16))
    first = tma.device_table_bytes((arg, np.int32(1)))
    assert first == tma.device_table((arg,)).tobytes()
    assert tma.device_table_bytes((arg, np.int32(2))) is first  # the same maps: no rebuild
    later = consan.tensor_map(fake_array((64, 64), ptr=0x7F0000200000), box_shape=(8, 8))
    again = tma.device_table_bytes((arg,))  # the registry changed: rebuilt
    assert again == tma.device_table((arg,)).tobytes() != first
    assert abi.tensor_map_fingerprint(later.tobytes()).to_bytes(8, "little") in again
    assert tma.device_table_bytes((later,)) != again  # other maps among the args


def test_launch_table_key_tells_the_same_bytes_with_and_without_a_geometry():
    """A map known only by its dtype's metadata is listed; the same bytes with no metadata
    (and not registered) are not: the remembered table must not mix them up."""
    data = bytes(range(2, 130))
    bare = np.void(data)
    known = np.zeros((), dtype=np.dtype("V128", metadata={tma.METADATA_KEY: info((16,))}))[()]
    known = np.frombuffer(data, dtype=known.dtype)[0]
    assert tma.tensor_map_info(known) is not None and tma.tensor_map_info(bare) is None
    with_geometry = tma.device_table_bytes((known,))
    without = tma.device_table_bytes((bare,))
    assert with_geometry == tma.device_table((known,)).tobytes()
    assert without == tma.device_table((bare,)).tobytes() != with_geometry


def test_a_map_array_changed_in_place_is_looked_at_again():
    """The same np.void maps skip the lookup; an ndarray map can change in place, so its
    bytes are looked at every launch."""
    arg = consan.tensor_map(fake_array((64, 64)), box_shape=(16, 16))
    first = tma.device_table_bytes((arg, np.int32(1)))
    assert tma.device_table_bytes((arg, np.int32(2))) is first
    holder = np.frombuffer(bytearray(arg.tobytes()), dtype=np.dtype("V128")).reshape(())
    assert tma.device_table_bytes((holder,)) == first
    other = consan.tensor_map(fake_array((64, 64), ptr=0x7F0000300000), box_shape=(8, 8))
    holder[()] = other  # the same array, another map
    assert tma.device_table_bytes((holder,)) == tma.device_table((other,)).tobytes() != first


def test_device_table_holds_at_most_its_entries():
    for k in range(abi.TMAP_ENTRIES + 5):
        tma.register(k.to_bytes(2, "little") * 64, info((16,)))
    t = tma.device_table()
    assert np.count_nonzero(t["fingerprint"]) == abi.TMAP_ENTRIES


def test_fingerprint_is_never_zero_and_tells_maps_apart():
    seen = {abi.tensor_map_fingerprint(bytes([k]) * 128) for k in range(256)}
    assert len(seen) == 256 and 0 not in seen


def test_observing_the_driver_registers_what_it_encodes():
    calls = []

    def encode(*args, **kwargs):
        calls.append(args)
        ok = len(args) < 2 or args[1] != 3
        return (1 - ok, SimpleNamespace(opaque=[len(calls)] * 16))

    wrapped = tma.observing(encode)
    assert tma.observing(wrapped) is wrapped
    from cuda.bindings import driver as d

    u32, u64 = d.cuuint32_t, d.cuuint64_t
    err, m = wrapped(d.CUtensorMapDataType(7), 2, d.CUdeviceptr(0x2000), [u64(64), u64(32)],
                     [u64(256)], [u32(16), u32(8)], [u32(1), u32(1)],
                     d.CUtensorMapInterleave(0), d.CUtensorMapSwizzle(1),
                     d.CUtensorMapL2promotion(2), d.CUtensorMapFloatOOBfill(0))
    assert err == 0
    i = tma.tensor_map_info(m)
    assert i.global_address == 0x2000 and i.box_dim == (16, 8) and i.swizzle == 1
    assert i.footprint_bytes == 16 * 8 * 4
    err, bad = wrapped(7, 3, 0, [1], [], [1], [1], 0, 0, 0, 0)  # the driver refused it
    assert err == 1 and tma.tensor_map_info(bad) is None
    wrapped(None, None)  # arguments it cannot read: the caller still gets the driver's answer
    assert len(calls) == 3


def test_the_hook_observes_cu_tensor_map_encode_tiled():
    pytest.importorskip("cupy")
    from cuda.bindings import driver

    from consan import frontends

    was = frontends.installed()
    original = driver.cuTensorMapEncodeTiled
    frontends.install()
    try:
        assert getattr(driver.cuTensorMapEncodeTiled, "_consan_observing", False)
        assert driver.cuTensorMapEncodeTiled.__wrapped__ is original
    finally:
        if not was:
            frontends.uninstall()
    if not was:
        assert driver.cuTensorMapEncodeTiled is original


@pytest.mark.no_gpu  # where a driver is present, tests/gpu/test_tma.py encodes real maps
def test_encoding_without_a_driver_says_so(monkeypatch):
    monkeypatch.undo()  # the real encoder
    with pytest.raises(ConsanError, match="driver"):
        tma.encode(info((32, 32)))


@pytest.mark.no_gpu
def test_encode_gives_cuda_bindings_arguments_of_the_types_it_takes(monkeypatch):
    """Without a driver the call gets as far as loading libcuda: every argument passed the
    bindings' type checks (plain ints in the dimension lists would not)."""
    from cuda.bindings import driver

    monkeypatch.undo()  # the real encoder
    monkeypatch.setattr(driver, "cuInit", lambda flags: (driver.CUresult.CUDA_SUCCESS,))
    i = tma.TensorMapInfo(7, global_dim=(96, 64), box_dim=(32, 32), element_strides=(1, 1),
                          global_strides=(384,), global_address=0x7F0000000000)
    with pytest.raises(RuntimeError, match="libcuda|driver library"):  # wording by version
        tma.encode(i)


@pytest.mark.needs_host_compiler
@pytest.mark.parametrize("at, bytes_, query, want", [
    (0x7FFF_0000_0040, 16384, 0x7FFF_0000_0040, 16384),  # a kept map's bytes
    (0x7FFF_0000_0040, 16384, 0x7FFF_0000_0048, 0),  # inside its 64-byte unit, not it
    (0x7FFF_0000_0040, 16384, 0x7FFF_0000_0080, 0),  # the next unit
    (0x7FFF_0000_0040, 16384, 0x7FFF_0000_0040 | 1 << 49, 0),  # a higher address bit
    (0x7FFF_0000_0040, (1 << 20) - 1, 0x7FFF_0000_0040, (1 << 20) - 1),  # the widest kept
    (0x7FFF_0000_0040, 1 << 20, 0x7FFF_0000_0040, 0),  # wider boxes are not kept
    (1 << 50, 64, 1 << 50, 0),  # nor maps above 2^50: their unit would not fit the word
])
def test_the_checker_caches_a_map_with_its_bytes_in_one_word(at, bytes_, query, want):
    """A kernel-parameter map's bytes are cached beside its address in one 64-bit word; a
    lookup finds them for that map alone (an address the word cannot hold is not kept)."""
    import ctypes

    from tests.checker_host import library

    fn = library().cs_host_tmap_cached
    fn.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64]
    fn.restype = ctypes.c_uint32
    assert fn(at, bytes_, query) == want
