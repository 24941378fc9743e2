"""Triton kernels as Triton users write them, for consan's tests and benchmarks.

Each `Case` is one `@triton.jit` kernel with the exact specialization (signature, constexprs,
attrs) that Triton's JIT gives it for the inputs its `run` launches, so the PTX that
`compile_case` makes on a machine without a GPU is the kernel the GPU runs. `run(seed)` draws
fresh inputs from the seed and launches through the ordinary `kernel[grid](...)` path;
`reference(seed)` computes the same outputs with torch in float64.

The module imports without triton and without torch (then `CASES` is empty): torch is imported
inside the functions that need a GPU, triton is guarded.
"""

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:
    import triton
    import triton.language as tl

    HAVE_TRITON = True
except ImportError:  # the kernels below stay plain functions, never compiled
    triton = SimpleNamespace(jit=lambda fn: fn, cdiv=lambda a, b: -(-a // b))
    tl = SimpleNamespace(constexpr="constexpr")
    HAVE_TRITON = False


# ---------------------------------------------------------------------------------- kernels


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + y, one BLOCK of elements per program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    y = tl.load(y_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, x + y, mask=inside)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    """Row-wise softmax, one row per program; the row's max and sum are block reductions
    (across warps, through shared memory)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=inside, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    num = tl.exp(shifted)
    tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=inside)


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps,
                          BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w + b for one row per program; saves mean and rstd for the
    backward pass. Walks the row in BLOCK chunks: one pass for the mean, one for the
    variance, one to normalise."""
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride

    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N

    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        centred = tl.where(cols < N, x - mean, 0.0)
        squares += centred * centred
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)

    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < N
        w = tl.load(w_ptr + cols, mask=inside)
        b = tl.load(b_ptr + cols, mask=inside)
        x = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


@triton.jit
def layer_norm_bwd_dx_kernel(dx_ptr, dy_ptr, partial_dw_ptr, partial_db_ptr, x_ptr, w_ptr,
                             mean_ptr, rstd_ptr, locks_ptr, row_stride, N,
                             GROUPS: tl.constexpr, BLOCK_N: tl.constexpr):
    """dx for one row per program, and this row's share of dW and dB added into the partial
    sums of its group of rows (row % GROUPS). A spin lock per group serialises the
    read-modify-write of the group's partial row; a counter per group says whether the
    partial row holds anything yet, so the buffers need no zeroing."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    inside = cols < N
    x = tl.load(x_ptr + row * row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)

    xhat = tl.where(inside, (x - mean) * rstd, 0.0)
    wdy = tl.where(inside, w * dy, 0.0)
    mean_xhat_wdy = tl.sum(xhat * wdy, axis=0) / N
    mean_wdy = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * mean_xhat_wdy + mean_wdy)) * rstd
    tl.store(dx_ptr + row * row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)

    group = row % GROUPS
    lock = locks_ptr + group
    filled = locks_ptr + GROUPS + group
    dw_row = partial_dw_ptr + group * N + cols
    db_row = partial_db_ptr + group * N + cols
    dw = dy * xhat
    db = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(filled) == 0:
        tl.atomic_xchg(filled, 1)
    else:
        dw += tl.load(dw_row, mask=inside)
        db += tl.load(db_row, mask=inside)
    tl.store(dw_row, dw, mask=inside)
    tl.store(db_row, db, mask=inside)
    tl.debug_barrier()  # every thread's stores are issued before the lock is let go
    tl.atomic_xchg(lock, 0)


@triton.jit
def layer_norm_bwd_dwdb_kernel(partial_dw_ptr, partial_db_ptr, dw_ptr, db_ptr, groups, N,
                               BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """dW and dB: the column sums of the per-group partial rows, BLOCK_N columns per
    program (a reduction across the warps that hold the rows)."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for first in range(0, groups, BLOCK_G):
        rows = first + tl.arange(0, BLOCK_G)
        inside = (rows[:, None] < groups) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(partial_dw_ptr + offs, mask=inside, other=0.0)
        db += tl.load(partial_db_ptr + offs, mask=inside, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr):
    """C = A @ B, fp16 in, fp32 accumulation, fp16 out, one BM x BN tile of C per program.
    Programs take tiles column-major within bands of GROUP_M tile rows, so programs that run
    together reuse the same A rows and B columns from L2."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    band_size = GROUP_M * tiles_n
    band = pid // band_size
    first_m = band * GROUP_M
    band_rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % band_size) % band_rows
    tile_n = (pid % band_size) // band_rows

    rows = (tile_m * BM + tl.arange(0, BM)) % M
    cols = (tile_n * BN + tl.arange(0, BN)) % N
    ks = tl.arange(0, BK)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc += tl.dot(a, b)
        a_tile += BK * stride_ak
        b_tile += BK * stride_bk

    c = acc.to(tl.float16)
    out_rows = tile_m * BM + tl.arange(0, BM)
    out_cols = tile_n * BN + tl.arange(0, BN)
    c_tile = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_tile, c, mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


@triton.jit
def matmul_tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr,
                                 BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B with a fixed grid (one program per SM) that strides over the output tiles.
    A, B and C are host-built TMA tensor descriptors: the tiles move by TMA (loads completing
    on mbarriers, the epilogue a TMA store)."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    k_steps = tl.cdiv(K, BK)
    band_size = GROUP_M * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        band = tile // band_size
        first_m = band * GROUP_M
        band_rows = min(tiles_m - first_m, GROUP_M)
        off_m = (first_m + (tile % band_size) % band_rows) * BM
        off_n = ((tile % band_size) // band_rows) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_steps):
            a = a_desc.load([off_m, ki * BK])
            b = b_desc.load([ki * BK, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def tma_add_into_kernel(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    """y += x, one tile per program, both through host-made TMA descriptors: the tile of x
    loaded by TMA and added into y by a TMA reduction (desc.atomic_add:
    cp.reduce.async.bulk.tensor ... .add, which reads the tile from shared memory)."""
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    x = x_desc.load([off_m, off_n])
    y_desc.atomic_add([off_m, off_n], x)


@triton.jit
def matmul_device_desc_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B, one tile per program, with its tensor descriptors made on the device
    (tl.make_tensor_descriptor): the program writes each 128-byte tensor map into shared
    memory field by field (tensormap.replace) and copies it to global scratch
    (tensormap.cp_fenceproxy) before its TMA loads and its TMA store."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([off_m, k * BK])
        b = b_desc.load([k * BK, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale, seq_len,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr):
    """Flash-attention forward for contiguous (batch, heads, seq, HEAD_DIM) fp16 tensors: one
    BLOCK_M block of queries of one (batch, head) per program, streaming K and V in BLOCK_N
    blocks with the online softmax (running row max and row sum, the accumulator rescaled
    when the max grows). Saves the row logsumexp (base 2) as the backward pass wants it.
    Causal: the loop stops at the diagonal block and masks keys after each query."""
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    row_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    scale = sm_scale * 1.4426950408889634  # log2(e): exponentials as exp2

    if CAUSAL:
        stop = (start_m + 1) * BLOCK_M
    else:
        stop = seq_len
    for start_n in range(0, stop, BLOCK_N):
        keys = start_n + offs_n
        k_t = tl.load(k_ptr + base + keys[None, :] * HEAD_DIM + offs_d[:, None])
        s = tl.dot(q, k_t) * scale
        if CAUSAL:
            s = tl.where(offs_m[:, None] >= keys[None, :], s, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.math.exp2(s - new_max[:, None])
        shrink = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * shrink + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD_DIM + offs_d[None, :])
        acc = acc * shrink[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(lse_ptr + head * seq_len + offs_m, row_max + tl.math.log2(row_sum))
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(tl.float16))


# ---------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One kernel of the corpus: what to compile it as, and how to run and check it.

    `atol`/`rtol` are the tolerances of `run(seed)` against `reference(seed)` (torch.allclose
    semantics), chosen for the kernel's dtypes and reduction lengths. `deterministic` is False
    where two runs on the same inputs may differ in their last bits (the order of atomically
    serialised fp32 sums varies), so no bitwise comparison holds between runs.
    """

    name: str
    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict
    options: dict[str, Any]
    capability: int = 90
    # the launch's integer arguments by kernel parameter position (consan.triton_hook's
    # scalar_params): what a proof before launch is made for
    scalars: dict[int, int] = field(default_factory=dict)
    # its arguments in order (pointers and descriptors as _Ptr / _Desc), and the grid of its
    # launch where a proof made on the host without a GPU wants it (`launch_values`)
    arg_values: tuple = ()
    grid: tuple[int, int, int] | None = None
    run: Callable[[int], Any] | None = None
    reference: Callable[[int], Any] | None = None
    launches: int = 1
    atol: float = 1e-2
    rtol: float = 1e-2
    deterministic: bool = True


@dataclass(frozen=True)
class _Ptr:
    """A pointer argument: a torch tensor (16-byte aligned, as torch allocates them)."""

    dtype: str  # Triton's element type name: "fp16", "fp32", "i32"


@dataclass(frozen=True)
class _Desc:
    """A host-side TMA tensor descriptor argument."""

    dtype: str
    block: tuple[int, ...]


_DIVISIBLE = [["tt.divisibility", 16]]


def _arg_spec(value: Any) -> tuple[str, Any]:
    """(type, specialization) of one non-constexpr argument, by the rules of Triton 3.6's JIT:
    an int equal to 1 becomes the constant 1; ints and pointers multiple of 16 are marked
    divisible ("D"); floats and descriptors carry no attribute (None)."""
    if isinstance(value, _Ptr):
        return f"*{value.dtype}", "D"
    if isinstance(value, _Desc):
        return f"tensordesc<{value.dtype}[{', '.join(map(str, value.block))}]>", None
    if isinstance(value, bool):
        return "u1", None
    if isinstance(value, int):
        if value == 1:
            return "constexpr", 1
        kind = "i32" if -2**31 <= value < 2**31 else "i64"
        return kind, "D" if value % 16 == 0 else ""
    if isinstance(value, float):
        return "fp32", None
    raise TypeError(f"no specialization rule for {value!r}")


def _specialize(fn: Any, args: dict[str, Any]) -> tuple[dict, dict, dict]:
    """signature, constexprs and attrs for ASTSource, as the JIT derives them from `args`
    (every parameter of `fn` by name, with the value `run` passes or a `_Ptr`/`_Desc`)."""
    names = list(fn.arg_names)
    if set(names) != set(args):
        raise ValueError(f"{fn.__name__}: args {sorted(args)} are not its parameters {names}")
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for i, (name, param) in enumerate(zip(names, fn.params, strict=True)):
        if param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", args[name]
            continue
        kind, spec = _arg_spec(args[name])
        signature[name] = kind
        if kind == "constexpr":
            constexprs[name] = spec
        elif isinstance(spec, str):
            attrs[(i,)] = list(_DIVISIBLE) if spec == "D" else []
    return signature, constexprs, attrs


_BY_NAME: dict[str, Case] = {}


def _check_launch(name: str, compiled: Any) -> None:
    """Raise when the JIT specialised a launch of case `name` otherwise than the case says:
    the CPU-compiled PTX would then not be the kernel that ran."""
    case, src = _BY_NAME[name], getattr(compiled, "src", None)
    if src is None:
        return
    consts = {case.fn.arg_names[k[0]] if isinstance(k, tuple) else k: v
              for k, v in src.constants.items()}
    got = (dict(src.signature), consts, {tuple(k): v for k, v in src.attrs.items()})
    want = (case.signature, case.constexprs, case.attrs)
    if got != want:
        raise AssertionError(f"{name}: the JIT launched {got}, the case compiles {want}")
    arch = int("".join(ch for ch in str(compiled.metadata.arch) if ch.isdigit()))  # "sm80"
    if arch != case.capability:
        raise AssertionError(f"{name}: the JIT built for sm_{arch}, the case for "
                             f"sm_{case.capability}")


def _case(name: str, fn: Any, args: dict[str, Any], options: dict[str, Any], **kw: Any) -> Case:
    from consan.triton_hook import scalar_params

    signature, constexprs, attrs = _specialize(fn, args)
    values = tuple(args[n] for n in fn.arg_names)
    scalars = scalar_params(signature, values)
    return Case(name, fn, signature, constexprs, attrs, options, scalars=scalars,
                arg_values=values, **kw)


def _generator(seed: int) -> Any:
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def _randn(g: Any, *shape: int, dtype: str = "float16", scale: float = 1.0) -> Any:
    import torch

    x = torch.randn(*shape, generator=g, device="cuda", dtype=torch.float32) * scale
    return x.to(getattr(torch, dtype))


# vector add --------------------------------------------------------------------------------

ADD_N, ADD_BLOCK = 1 << 20, 1024


def _add_inputs(seed: int) -> tuple[Any, Any]:
    g = _generator(seed)
    return _randn(g, ADD_N, dtype="float32"), _randn(g, ADD_N, dtype="float32")


def _add_run(seed: int) -> Any:
    import torch

    x, y = _add_inputs(seed)
    out = torch.empty_like(x)
    k = add_kernel[(triton.cdiv(ADD_N, ADD_BLOCK),)](x, y, out, x.numel(), BLOCK=ADD_BLOCK,
                                                     num_warps=4)
    _check_launch("vector_add", k)
    return out


def _add_reference(seed: int) -> Any:
    x, y = _add_inputs(seed)
    return x.double() + y.double()


# softmax -----------------------------------------------------------------------------------

SOFTMAX_ROWS, SOFTMAX_COLS = 4096, 784  # a row that is not a power of two: masked lanes


def _softmax_block() -> int:
    return 1 << (SOFTMAX_COLS - 1).bit_length()


def _softmax_inputs(seed: int) -> Any:
    return _randn(_generator(seed), SOFTMAX_ROWS, SOFTMAX_COLS, dtype="float32", scale=3.0)


def _softmax_run(seed: int) -> Any:
    import torch

    x = _softmax_inputs(seed)
    out = torch.empty_like(x)
    k = softmax_kernel[(SOFTMAX_ROWS,)](out, x, x.stride(0), out.stride(0), SOFTMAX_COLS,
                                        BLOCK=_softmax_block(), num_warps=8)
    _check_launch("softmax", k)
    return out


def _softmax_reference(seed: int) -> Any:
    return _softmax_inputs(seed).double().softmax(dim=1)


# layer norm --------------------------------------------------------------------------------

LN_ROWS, LN_COLS, LN_EPS = 2048, 1536, 1e-5
LN_GROUPS, LN_DWDB_BLOCK_G, LN_DWDB_BLOCK_N = 64, 32, 128


def _ln_block() -> int:
    return min(65536 // 2, 1 << (LN_COLS - 1).bit_length())


def _ln_inputs(seed: int) -> tuple[Any, Any, Any, Any]:
    """x, w, b, dy in fp16 (w around 1, b around 0, as after training starts)."""
    g = _generator(seed)
    x = _randn(g, LN_ROWS, LN_COLS, scale=2.0)
    w = (1.0 + _randn(g, LN_COLS, dtype="float32", scale=0.1)).half()
    b = _randn(g, LN_COLS, scale=0.1)
    dy = _randn(g, LN_ROWS, LN_COLS, scale=0.1)
    return x, w, b, dy


def _ln_fwd_run(seed: int) -> Any:
    import torch

    x, w, b, _ = _ln_inputs(seed)
    y = torch.empty_like(x)
    mean = torch.empty(LN_ROWS, device="cuda", dtype=torch.float32)
    rstd = torch.empty_like(mean)
    k = layer_norm_fwd_kernel[(LN_ROWS,)](x, y, w, b, mean, rstd, x.stride(0), LN_COLS, LN_EPS,
                                          BLOCK=_ln_block(), num_warps=8)
    _check_launch("layer_norm_fwd", k)
    return y, mean, rstd


def _ln_stats(x: Any) -> tuple[Any, Any]:
    xf = x.double()
    mean = xf.mean(dim=1)
    return mean, (xf.var(dim=1, unbiased=False) + LN_EPS).rsqrt()


def _ln_fwd_reference(seed: int) -> Any:
    import torch

    x, w, b, _ = _ln_inputs(seed)
    mean, rstd = _ln_stats(x)
    y = torch.nn.functional.layer_norm(x.double(), (LN_COLS,), w.double(), b.double(), LN_EPS)
    return y, mean, rstd


def _ln_bwd_run(seed: int) -> Any:
    """The two backward launches: dx with partial dW/dB per group of rows, then the
    reduction of the partial sums. mean and rstd come from torch, as the forward saved them."""
    import torch

    x, w, _, dy = _ln_inputs(seed)
    mean, rstd = (t.float() for t in _ln_stats(x))
    dx = torch.empty_like(x)
    partial_dw = torch.empty(LN_GROUPS, LN_COLS, device="cuda", dtype=torch.float32)
    partial_db = torch.empty_like(partial_dw)
    locks = torch.zeros(2 * LN_GROUPS, device="cuda", dtype=torch.int32)
    dw = torch.empty_like(w)
    db = torch.empty_like(w)
    k = layer_norm_bwd_dx_kernel[(LN_ROWS,)](
        dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, x.stride(0), LN_COLS,
        GROUPS=LN_GROUPS, BLOCK_N=1 << (LN_COLS - 1).bit_length(), num_warps=8)
    _check_launch("layer_norm_bwd", k)
    k = layer_norm_bwd_dwdb_kernel[(triton.cdiv(LN_COLS, LN_DWDB_BLOCK_N),)](
        partial_dw, partial_db, dw, db, LN_GROUPS, LN_COLS, BLOCK_G=LN_DWDB_BLOCK_G,
        BLOCK_N=LN_DWDB_BLOCK_N, num_warps=4)
    _check_launch("layer_norm_bwd_dwdb", k)
    return dx, dw, db


def _ln_bwd_reference(seed: int) -> Any:
    import torch

    x, w, b, dy = _ln_inputs(seed)
    x64 = x.double().requires_grad_()
    w64 = w.double().requires_grad_()
    b64 = b.double().requires_grad_()
    y = torch.nn.functional.layer_norm(x64, (LN_COLS,), w64, b64, LN_EPS)
    y.backward(dy.double())
    return x64.grad, w64.grad, b64.grad


# matmul ------------------------------------------------------------------------------------

GROUP_M = 8


def _matmul_inputs(seed: int, m: int, n: int, k: int) -> tuple[Any, Any]:
    g = _generator(seed)
    return _randn(g, m, k), _randn(g, k, n)


def _matmul_case(name: str, size: int, bk: int, warps: int, stages: int,
                 capability: int = 90) -> Case:
    """The textbook matmul at size^3 with BM = BN = 128 and the given BK, warps and stages.
    For another capability than 90 the launch asks the JIT for that target (`arch="sm80"`):
    on a Hopper the JIT then builds the mma.sync kernel of an A100, whose PTX differs from
    `compile_case`'s only in its `.target` line (sm_90a there, so that the GPU loads it)."""
    m = n = k = size
    bm = bn = 128
    meta = dict(BM=bm, BN=bn, BK=bk, GROUP_M=GROUP_M)
    args = dict(a_ptr=_Ptr("fp16"), b_ptr=_Ptr("fp16"), c_ptr=_Ptr("fp16"), M=m, N=n, K=k,
                stride_am=k, stride_ak=1, stride_bk=n, stride_bn=1, stride_cm=n, stride_cn=1,
                **meta)

    target = {} if capability == 90 else {"arch": f"sm{capability}"}

    def run(seed: int) -> Any:
        import torch

        a, b = _matmul_inputs(seed, m, n, k)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        kern = matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), **meta,
                                   num_warps=warps, num_stages=stages, **target)
        _check_launch(name, kern)
        return c

    def reference(seed: int) -> Any:
        a, b = _matmul_inputs(seed, m, n, k)
        return a.double() @ b.double()

    return _case(name, matmul_kernel, args, {"num_warps": warps, "num_stages": stages},
                 capability=capability, run=run, reference=reference, atol=0.25, rtol=1e-2)


TMA_M, TMA_N, TMA_K = 2048, 2048, 512  # 256 tiles: more than any GPU has SMs
TMA_BM, TMA_BN, TMA_BK = 128, 128, 64
H100_SMS = 132  # (the persistent grid on an H100: 124 programs run two tiles, 8 one)


def _tma_run(seed: int) -> Any:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, b = _matmul_inputs(seed, TMA_M, TMA_N, TMA_K)
    c = torch.empty(TMA_M, TMA_N, device="cuda", dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [TMA_BM, TMA_BK])
    b_desc = TensorDescriptor.from_tensor(b, [TMA_BK, TMA_BN])
    c_desc = TensorDescriptor.from_tensor(c, [TMA_BM, TMA_BN])
    sms = torch.cuda.get_device_properties(c.device).multi_processor_count
    tiles = triton.cdiv(TMA_M, TMA_BM) * triton.cdiv(TMA_N, TMA_BN)
    k = matmul_tma_persistent_kernel[(min(sms, tiles),)](
        a_desc, b_desc, c_desc, TMA_M, TMA_N, TMA_K, BM=TMA_BM, BN=TMA_BN, BK=TMA_BK,
        GROUP_M=GROUP_M, num_warps=8, num_stages=3)
    _check_launch("matmul_tma_persistent", k)
    return c


def _tma_reference(seed: int) -> Any:
    a, b = _matmul_inputs(seed, TMA_M, TMA_N, TMA_K)
    return a.double() @ b.double()


ADD_M, ADD_N, ADD_BM, ADD_BN = 1024, 512, 64, 64


def _tma_add_inputs(seed: int) -> tuple[Any, Any]:
    g = _generator(seed)
    return _randn(g, ADD_M, ADD_N, dtype="float32"), _randn(g, ADD_M, ADD_N, dtype="float32")


def _tma_add_run(seed: int) -> Any:
    from triton.tools.tensor_descriptor import TensorDescriptor

    x, y = _tma_add_inputs(seed)
    k = tma_add_into_kernel[(ADD_M // ADD_BM, ADD_N // ADD_BN)](
        TensorDescriptor.from_tensor(x, [ADD_BM, ADD_BN]),
        TensorDescriptor.from_tensor(y, [ADD_BM, ADD_BN]), BM=ADD_BM, BN=ADD_BN, num_warps=4)
    _check_launch("tma_add_into", k)
    return y


def _tma_add_reference(seed: int) -> Any:
    x, y = _tma_add_inputs(seed)
    return x.double() + y.double()


DESC_M, DESC_N, DESC_K = 512, 512, 512

# flash attention ---------------------------------------------------------------------------

ATTN_BATCH, ATTN_HEADS, ATTN_SEQ, ATTN_DIM = 2, 4, 1024, 64
ATTN_BLOCK_M, ATTN_BLOCK_N = 128, 64
ATTN_SCALE = 1.0 / math.sqrt(ATTN_DIM)


def _attn_inputs(seed: int) -> tuple[Any, Any, Any]:
    g = _generator(seed)
    shape = (ATTN_BATCH, ATTN_HEADS, ATTN_SEQ, ATTN_DIM)
    return _randn(g, *shape), _randn(g, *shape), _randn(g, *shape)


def _attn_case(name: str, causal: bool) -> Case:
    meta = dict(HEAD_DIM=ATTN_DIM, BLOCK_M=ATTN_BLOCK_M, BLOCK_N=ATTN_BLOCK_N, CAUSAL=causal)
    args = dict(q_ptr=_Ptr("fp16"), k_ptr=_Ptr("fp16"), v_ptr=_Ptr("fp16"), o_ptr=_Ptr("fp16"),
                lse_ptr=_Ptr("fp32"), sm_scale=ATTN_SCALE, seq_len=ATTN_SEQ, **meta)

    def run(seed: int) -> Any:
        import torch

        q, k, v = _attn_inputs(seed)
        o = torch.empty_like(q)
        lse = torch.empty(ATTN_BATCH, ATTN_HEADS, ATTN_SEQ, device="cuda", dtype=torch.float32)
        grid = (triton.cdiv(ATTN_SEQ, ATTN_BLOCK_M), ATTN_BATCH * ATTN_HEADS)
        kern = attn_fwd_kernel[grid](q, k, v, o, lse, ATTN_SCALE, ATTN_SEQ, **meta,
                                     num_warps=8, num_stages=3)
        _check_launch(name, kern)
        return o, lse

    def reference(seed: int) -> Any:
        import torch

        q, k, v = (t.double() for t in _attn_inputs(seed))
        s = q @ k.transpose(-1, -2) * ATTN_SCALE
        if causal:
            keep = torch.ones(ATTN_SEQ, ATTN_SEQ, device=s.device, dtype=torch.bool).tril()
            s = s.masked_fill(~keep, float("-inf"))
        return s.softmax(dim=-1) @ v, torch.logsumexp(s, dim=-1) / math.log(2.0)

    return _case(name, attn_fwd_kernel, args, {"num_warps": 8, "num_stages": 3}, run=run,
                 reference=reference, atol=1e-2, rtol=1e-2,
                 grid=(ATTN_SEQ // ATTN_BLOCK_M, ATTN_BATCH * ATTN_HEADS, 1))


# the corpus --------------------------------------------------------------------------------

REFERENCE_MATMUL = "matmul_s3_w8"  # 2048^3, BM=BN=128, BK=64, 8 warps, 3 stages


def _cases() -> list[Case]:
    ln_block_n = 1 << (LN_COLS - 1).bit_length()
    cases = [
        _case("vector_add", add_kernel,
              dict(x_ptr=_Ptr("fp32"), y_ptr=_Ptr("fp32"), out_ptr=_Ptr("fp32"), n=ADD_N,
                   BLOCK=ADD_BLOCK),
              {"num_warps": 4}, run=_add_run, reference=_add_reference, atol=1e-6, rtol=1e-6),
        _case("softmax", softmax_kernel,
              dict(out_ptr=_Ptr("fp32"), in_ptr=_Ptr("fp32"), in_row_stride=SOFTMAX_COLS,
                   out_row_stride=SOFTMAX_COLS, n_cols=SOFTMAX_COLS, BLOCK=_softmax_block()),
              {"num_warps": 8}, run=_softmax_run, reference=_softmax_reference, atol=1e-6,
              rtol=1e-4),
        _case("layer_norm_fwd", layer_norm_fwd_kernel,
              dict(x_ptr=_Ptr("fp16"), y_ptr=_Ptr("fp16"), w_ptr=_Ptr("fp16"),
                   b_ptr=_Ptr("fp16"), mean_ptr=_Ptr("fp32"), rstd_ptr=_Ptr("fp32"),
                   row_stride=LN_COLS, N=LN_COLS, eps=LN_EPS, BLOCK=_ln_block()),
              {"num_warps": 8}, run=_ln_fwd_run, reference=_ln_fwd_reference, atol=1e-2,
              rtol=1e-2),
        _case("layer_norm_bwd", layer_norm_bwd_dx_kernel,
              dict(dx_ptr=_Ptr("fp16"), dy_ptr=_Ptr("fp16"), partial_dw_ptr=_Ptr("fp32"),
                   partial_db_ptr=_Ptr("fp32"), x_ptr=_Ptr("fp16"), w_ptr=_Ptr("fp16"),
                   mean_ptr=_Ptr("fp32"), rstd_ptr=_Ptr("fp32"), locks_ptr=_Ptr("i32"),
                   row_stride=LN_COLS, N=LN_COLS, GROUPS=LN_GROUPS, BLOCK_N=ln_block_n),
              {"num_warps": 8}, run=_ln_bwd_run, reference=_ln_bwd_reference, launches=2,
              atol=5e-2, rtol=1e-2, deterministic=False),
        # Launched by layer_norm_bwd's run (its second launch); compiled here on its own.
        _case("layer_norm_bwd_dwdb", layer_norm_bwd_dwdb_kernel,
              dict(partial_dw_ptr=_Ptr("fp32"), partial_db_ptr=_Ptr("fp32"),
                   dw_ptr=_Ptr("fp16"), db_ptr=_Ptr("fp16"), groups=LN_GROUPS, N=LN_COLS,
                   BLOCK_G=LN_DWDB_BLOCK_G, BLOCK_N=LN_DWDB_BLOCK_N),
              {"num_warps": 4}),
    ]
    for warps in (4, 8):
        for stages in (2, 3, 4, 5):
            name = f"matmul_s{stages}_w{warps}"
            cases.append(_matmul_case(name, 2048 if name == REFERENCE_MATMUL else 512, 64,
                                      warps, stages))
    cases.append(_matmul_case("matmul_bk32_s2_w4", 512, 32, 4, 2))
    cases.append(_matmul_case("matmul_sm80", 2048, 64, 8, 3, capability=80))
    cases.append(_case(
        "matmul_tma_persistent", matmul_tma_persistent_kernel,
        dict(a_desc=_Desc("fp16", (TMA_BM, TMA_BK)), b_desc=_Desc("fp16", (TMA_BK, TMA_BN)),
             c_desc=_Desc("fp16", (TMA_BM, TMA_BN)), M=TMA_M, N=TMA_N, K=TMA_K, BM=TMA_BM,
             BN=TMA_BN, BK=TMA_BK, GROUP_M=GROUP_M),
        {"num_warps": 8, "num_stages": 3}, run=_tma_run, reference=_tma_reference, atol=0.25,
        rtol=1e-2, grid=(min(H100_SMS, (TMA_M // TMA_BM) * (TMA_N // TMA_BN)), 1, 1)))
    cases.append(_case(
        "tma_add_into", tma_add_into_kernel,
        dict(x_desc=_Desc("fp32", (ADD_BM, ADD_BN)), y_desc=_Desc("fp32", (ADD_BM, ADD_BN)),
             BM=ADD_BM, BN=ADD_BN),
        {"num_warps": 4}, run=_tma_add_run, reference=_tma_add_reference, atol=1e-5,
        rtol=1e-6, grid=(ADD_M // ADD_BM, ADD_N // ADD_BN, 1)))
    # Compiled, instrumented and assembled only: the maps it makes on the device are unknown
    # to consan, so each TMA load gets a guessed footprint (docs/model.md, "Tensor maps"),
    # which for two loads completing on one phase spans the next stage's buffers. It runs
    # on the GPU once the maps' geometry is learned from their tensormap.replace fields.
    cases.append(_case(
        "matmul_device_desc", matmul_device_desc_kernel,
        dict(a_ptr=_Ptr("fp16"), b_ptr=_Ptr("fp16"), c_ptr=_Ptr("fp16"), M=DESC_M, N=DESC_N,
             K=DESC_K, BM=TMA_BM, BN=TMA_BN, BK=TMA_BK),
        {"num_warps": 8, "num_stages": 3}))
    cases.append(_attn_case("attn_fwd", causal=False))
    cases.append(_attn_case("attn_fwd_causal", causal=True))
    return cases


CASES: list[Case] = _cases() if HAVE_TRITON else []
_BY_NAME.update({c.name: c for c in CASES})
assert len(_BY_NAME) == len(CASES), "case names must be unique"


# ---------------------------------------------------------------------------------- compile


def compile_case(case: Case) -> Any:
    """The case compiled by Triton for its capability (no GPU needed): a CompiledKernel."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=case.fn, signature=dict(case.signature),
                    constexprs=dict(case.constexprs), attrs=dict(case.attrs))
    return triton.compile(src, target=GPUTarget("cuda", case.capability, 32),
                          options=dict(case.options))


def case_key(case: Case) -> str:
    """What the case's PTX depends on: its kernel's source (Triton's hash of it and of the
    globals it reads), specialization, options, target and Triton's version."""
    parts = [case.name, case.fn.cache_key, case.signature, repr(sorted(case.constexprs.items())),
             repr(sorted(case.attrs.items())), repr(sorted(case.options.items())),
             case.capability, triton.__version__]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def cached_ptx(case: Case, cache_dir: Path | str) -> tuple[str, dict[str, Any]]:
    """The case's PTX and what Triton said of it (`name`, `shared` bytes, `num_warps`, its
    host descriptors' `tensordesc_meta`), compiled once and kept under `cache_dir` by `case_key`."""
    cache = Path(cache_dir)
    base = cache / f"triton-{case.name}-{case_key(case)}"
    ptx_path, meta_path = base.with_suffix(".ptx"), base.with_suffix(".json")
    if ptx_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if "tensordesc_meta" in meta:  # (else kept before it was recorded: compiled again)
            return ptx_path.read_text(), meta
    compiled = compile_case(case)
    md = compiled.metadata
    meta = {"name": md.name, "shared": md.shared, "num_warps": md.num_warps,
            "tensordesc_meta": getattr(md, "tensordesc_meta", None)}
    cache.mkdir(parents=True, exist_ok=True)
    for path, text in ((meta_path, json.dumps(meta)), (ptx_path, compiled.asm["ptx"])):
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # atomic: a concurrent reader sees all of it or nothing
    return compiled.asm["ptx"], meta


def launch_values(case: Case, ptx: str, meta: dict[str, Any]
                  ) -> tuple[dict[int, tuple[int, int]], tuple[int, ...]]:
    """What consan's Triton front end gives a proof at the case's launch, without a GPU:
    its integer arguments by parameter position (triton_hook.scalar_params, descriptors
    expanded as the compiled kernel declares them) and the bytes one copy through each
    tensor map moves (its block, as Triton's launcher encodes the map)."""
    from consan.triton_hook import scalar_params
    from instrument.static_proof import param_layout

    metas = meta.get("tensordesc_meta")
    scalars = scalar_params(case.signature, list(case.arg_values), metas,
                            param_layout(ptx, meta["name"]))
    maps = tuple(math.prod(d["block_size"]) * d["elem_size"] for d in metas or () if d)
    return scalars, maps
