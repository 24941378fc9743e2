"""The wgmma operand footprint: descriptor fields, shapes, and the bytes an operand reads.

Expected footprints come from two independent places: hand-computed tiles
(the layouts CUTLASS-style kernels write) and the PTX ISA's own worked
examples of the canonical layouts ("Shared Memory Matrix Layout"), written
here as CuTe layouts and evaluated element by element. The device checker's C
decode (host build) must agree with the Python one on many descriptors.
"""

from __future__ import annotations

import ctypes
import itertools
import random

import pytest

from instrument import abi
from instrument.wgmma_desc import (
    Descriptor,
    MmaShape,
    NotModeled,
    Operand,
    chunks,
    describe,
    footprint,
    granules,
    parse_mma,
    split_operands,
)

A = Operand(64)  # 64 x 16 f16, K-major


def merged(ranges):
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [tuple(r) for r in out]


def test_descriptor_fields_round_trip():
    d = Descriptor(start=0x1230, lbo=128, sbo=1024, base_offset=3, swizzle=1)
    v = d.encode()
    assert v & 0x3FFF == 0x123 and (v >> 16) & 0x3FFF == 8 and (v >> 32) & 0x3FFF == 64
    assert (v >> 49) & 7 == 3 and v >> 62 == 1
    assert Descriptor.decode(v) == d
    # bits 14-15, 30-31, 46-48 and 52-61 are not fields
    assert Descriptor.decode(v | 0xC000 | 0xC000_0000 | 0x1_C000 << 32 | 0x3FF << 52) == d
    # start keeps 18 address bits: matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4
    assert Descriptor.decode(Descriptor(start=0x40400).encode()).start == 0x400


def test_no_swizzle_k_major_contiguous_core_matrices():
    # core (m/8, k/8) at ((m/8)*2 + k/8) * 128: LBO = 128 (K), SBO = 256 (M); tests/corpus/wgmma.cu
    d = Descriptor(start=0x400, lbo=128, sbo=256)
    assert footprint(d, A) == [(0x400, 0x400 + 64 * 32)]
    assert footprint(d, Operand(8)) == [(0x400, 0x500)]  # B of m64n8k16


def test_no_swizzle_k_major_with_gaps():
    # the two K core-matrix columns 2 KiB apart, 8-row groups 128 bytes apart
    d = Descriptor(start=0x800, lbo=2048, sbo=128)
    assert footprint(d, A) == [(0x800, 0x800 + 1024), (0x800 + 2048, 0x800 + 3072)]
    # 16-byte rows, 8 per core matrix: granule-exact
    assert granules(d, Operand(8)) == set(range(0x800 // 4, 0x880 // 4)) | set(
        range(0x1000 // 4, 0x1080 // 4))


def _sw128_row(r: int, k_chunk: int) -> tuple[int, int]:
    """Bytes of row r (of an 8-row, 1024-byte atom) holding 16-byte K chunks k_chunk, +1."""
    c = (k_chunk ^ (r % 8)) & ~1  # the pair {k, k+1} ^ r is the aligned pair (k ^ r) & ~1
    return r * 128 + c * 16, r * 128 + c * 16 + 32


@pytest.mark.parametrize("kstep", range(4))
def test_128b_swizzle_k_major_tile(kstep):
    # a 64 x 64-half K-major tile, 128B swizzle, 1024-byte aligned; step kstep reads K
    # halves 16*kstep .. +16, i.e. the descriptor start advanced by 32 bytes per step
    base = 0x2000
    d = Descriptor(start=base + 32 * kstep, lbo=16, sbo=1024, swizzle=1)
    want = []
    for r in range(64):
        lo, hi = _sw128_row(r % 8, 2 * kstep)
        want.append((base + (r // 8) * 1024 + lo, base + (r // 8) * 1024 + hi))
    assert footprint(d, A) == merged(want)
    # four steps read the whole tile exactly once
    if kstep == 0:
        every = [c for s in range(4) for c in chunks(Descriptor(base + 32 * s, 16, 1024, 0, 1),
                                                       A)]
        assert sorted(a for a, _ in every) == list(range(base, base + 8192, 16))


def test_64b_swizzle_k_major_tile():
    # rows of 64 bytes, 8 rows per 512-byte atom; the pair read moves with (row / 2) & 2
    d = Descriptor(start=0x1000, sbo=512, swizzle=2)
    got = footprint(d, Operand(16))
    want = []
    for r in range(16):
        half = 32 if (r % 8) // 2 >= 2 else 0
        lo = 0x1000 + (r // 8) * 512 + (r % 8) * 64 + half
        want.append((lo, lo + 32))
    assert got == merged(want)


def test_32b_swizzle_k_major_tile_reads_whole_rows():
    d = Descriptor(start=0x1000, sbo=256, swizzle=3)
    assert footprint(d, Operand(16)) == [(0x1000, 0x1000 + 512)]
    # but chunk order is permuted on rows 4-7 of each atom
    assert chunks(d, Operand(16))[8] == (0x1000 + 4 * 32 + 16, 16)


def test_nonzero_base_offset_widens_to_the_swizzle_row():
    d = Descriptor(start=0x1000 + 3 * 128, sbo=1024, swizzle=1, base_offset=3)
    got = footprint(d, Operand(8))
    assert got == [(0x1000 + 3 * 128, 0x1000 + 8 * 128 + 3 * 128)]  # 8 whole 128-byte rows
    exact = footprint(Descriptor(0x1000 + 3 * 128, 0, 1024, 0, 1), Operand(8))
    assert set().union(*(range(lo, hi) for lo, hi in exact)) <= set(range(*got[0]))


# ------------------------------------------------ the ISA's worked examples, as CuTe layouts

def _cute(shape, stride, coord):
    """Offset of a (flattened, colexicographic) coordinate in one mode of a CuTe layout."""
    off = 0
    for s, d in zip(shape, stride, strict=True):
        coord, c = divmod(coord, s)
        off += c * d
    return off


def _swizzle(b: int, bits: int) -> int:
    return b ^ (((b >> 7) & ((1 << bits) - 1)) << 4)


def _isa_chunks(mn_shape, mn_stride, k_shape, k_stride, esize, bits, k_range):
    """16-byte chunks holding the elements of (MN, K) coordinates with K in k_range."""
    mn_total = 1
    for s in mn_shape:
        mn_total *= s
    out = set()
    for mn in range(mn_total):
        for k in k_range:
            e = _cute(mn_shape, mn_stride, mn) + _cute(k_shape, k_stride, k)
            out.add(_swizzle(e * esize, bits) & ~15)
    return out


# (name, exact layout of the ISA example, esize, swizzle bits, operand, descriptor)
ISA_EXAMPLES = [
    # K-major, no swizzle, tf32: ((8,2),(4,4)):((4,32),(1,64)), LBO 64*4, SBO 32*4
    ("k-none-tf32", ((8, 2), (4, 32)), ((4, 4), (1, 64)), 4, 0,
     Operand(16, True, 4), Descriptor(0, 256, 128)),
    # K-major, 32B swizzle, tf32: Swizzle<1,4,3> o ((8,2),(4,4)):((8,64),(1,4)), SBO 64*4
    ("k-32b-tf32", ((8, 2), (8, 64)), ((4, 4), (1, 4)), 4, 1,
     Operand(16, True, 4), Descriptor(0, 16, 256, 0, 3)),
    # MN-major, no swizzle, bf16: ((8,1,2),(8,2)):((1,8,64),(8,128)), LBO 128*2, SBO 64*2
    ("mn-none-bf16", ((8, 1, 2), (1, 8, 64)), ((8, 2), (8, 128)), 2, 0,
     Operand(16, False, 2), Descriptor(0, 256, 128)),
    # MN-major, 32B swizzle, bf16: ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO 128*2, SBO 256*2
    ("mn-32b-bf16", ((8, 2, 2), (1, 8, 128)), ((8, 2), (16, 256)), 2, 1,
     Operand(32, False, 2), Descriptor(0, 256, 512, 0, 3)),
    # MN-major, 64B swizzle, bf16: ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO 256*2, SBO 512*2
    ("mn-64b-bf16", ((8, 4, 2), (1, 8, 256)), ((8, 2), (32, 512)), 2, 2,
     Operand(64, False, 2), Descriptor(0, 512, 1024, 0, 2)),
]


@pytest.mark.parametrize("ex", ISA_EXAMPLES, ids=[e[0] for e in ISA_EXAMPLES])
def test_isa_canonical_layout_examples(ex):
    _name, (mn_shape, mn_stride), (k_shape, k_stride), esize, bits, op, d = ex
    k_elems = 32 // esize  # one instruction's K
    want = _isa_chunks(mn_shape, mn_stride, k_shape, k_stride, esize, bits, range(k_elems))
    got = [a for a, n in chunks(d, op)]
    assert all(n == 16 for _, n in chunks(d, op))
    assert len(got) == len(set(got)) == op.chunks  # no chunk read twice
    assert set(got) == want


def test_isa_k_major_second_k_step():
    # the no-swizzle tf32 example holds two K steps; the second starts 2 * LBO further
    want = _isa_chunks((8, 2), (4, 32), (4, 4), (1, 64), 4, 0, range(8, 16))
    got = {a for a, _ in chunks(Descriptor(512, 256, 128), Operand(16, True, 4))}
    assert got == want


# ------------------------------------------------ instruction shapes

@pytest.mark.parametrize("text,shape", [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
     "p, 1, 1, 0, 0;", MmaShape(64, 8, 16, "f16", "f16", True, False, False)),
    ("wgmma.mma_async.sync.aligned.m64n256k16.f16.bf16.bf16 {%r1}, %rd1, %rd2, p, 1, -1, 1, 1;",
     MmaShape(64, 256, 16, "bf16", "bf16", True, True, True)),
    ("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f1}, {%r1, %r2, %r3, %r4}, %rd2, "
     "0, 1, 1, 1;", MmaShape(64, 16, 16, "f16", "f16", False, False, True)),
    ("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%f1}, %rd1, %rd2, 1, 1, 1;",
     MmaShape(64, 64, 8, "tf32", "tf32", True)),
    ("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {%f1}, %rd1, %rd2, p, 1, 1;",
     MmaShape(64, 128, 32, "e4m3", "e5m2", True)),
    ("wgmma.mma_async.sync.aligned.m64n24k32.s32.s8.u8 {%r1}, {%r2, %r3, %r4, %r5}, %rd2, 1;",
     MmaShape(64, 24, 32, "s8", "u8", False)),
    ("wgmma.mma_async.sync.aligned.m64n32k32.satfinite.s32.u8.u8 {%r1}, %rd1, %rd2, p;",
     MmaShape(64, 32, 32, "u8", "u8", True)),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%r1}, %rd1, %rd2, p;",
     MmaShape(64, 8, 256, "b1", "b1", True)),
])
def test_parse_mma(text, shape):
    assert parse_mma(*split_operands(text)) == shape


@pytest.mark.parametrize("text", [
    "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1}, %rd1, %rd2, %r1, 0, p, 1, 1, "
    "0, 0;",
    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, %r1, 0;",
    "wgmma.mma_async.sync.aligned.m64n8k8.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 0;",
    "wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 0;",
])
def test_parse_mma_rejects(text):
    with pytest.raises(NotModeled):
        parse_mma(*split_operands(text))


def test_info_word():
    s = MmaShape(64, 64, 16, "f16", "f16", True, True, False)
    assert s.info == 64 | abi.WG_INFO_A_SMEM | abi.WG_INFO_TRANS_A | 1 << abi.WG_INFO_ELOG_SHIFT
    assert MmaShape.from_info(s.info).operand("A") == Operand(64, False, 2)
    assert MmaShape.from_info(s.info).operand("B") == Operand(64, True, 2)


def test_describe_an_operand():
    text = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 0;"
    d = Descriptor(0x400, 16, 1024, 0, 1).encode()
    out = describe(text, 1, d)
    assert out.startswith("operand B (16x64 .f16, K-major; start smem[0x400], LBO 16, SBO 1024, "
                          "128-byte swizzle) reads smem[0x400..")
    assert describe("bar.sync 0;", 0, d) is None


# ------------------------------------------------ the checker's C decode agrees

@pytest.mark.needs_host_compiler
def test_c_decode_agrees_with_python():
    from tests.checker_host import library

    lib = library()
    fn = lib.cs_host_wg_chunk
    fn.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                   ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)]
    fn.restype = ctypes.c_uint32
    rng = random.Random(4)
    width = ctypes.c_uint32()
    cases = 0
    for swz, base, k_major, (elog, rows) in itertools.product(
            range(4), (0, 0, 5), (True, False),
            [(1, 64), (1, 8), (1, 256), (1, 40), (2, 16), (0, 64)]):
        if not k_major and elog != 1 and elog != 2:
            continue
        for _ in range(6):
            d = Descriptor(rng.randrange(0, 1 << 18, 16), rng.randrange(0, 1 << 14, 16),
                           rng.randrange(0, 1 << 14, 16), base, swz)
            op = Operand(rows, k_major, 1 << elog)
            for i, (addr, n) in enumerate(chunks(d, op)):
                got = fn(d.encode(), rows, int(k_major), elog, i, ctypes.byref(width))
                assert (got, width.value) == (addr, n), (d, op, i)
                cases += 1
    assert cases > 10000
