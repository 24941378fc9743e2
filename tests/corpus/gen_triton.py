"""Regenerate tests/corpus/triton/*.ptx from Triton kernels (needs triton and a GPU).

The PTX is committed so the CPU tests can parse and instrument real Triton
output without Triton or a GPU: python tests/corpus/gen_triton.py OUTDIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(x, out, stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + cols, mask=cols < ncols, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < ncols)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def main(outdir: str) -> None:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    dev = "cuda"
    x = torch.randn(4096, device=dev)
    k = add_kernel[(4,)](x, x, torch.empty_like(x), 4096, BLOCK=1024)
    (out / "triton_add.ptx").write_text(k.asm["ptx"])
    m = torch.randn(128, 1000, device=dev)
    k = softmax_kernel[(128,)](m, torch.empty_like(m), 1000, 1000, BLOCK=1024)
    (out / "triton_softmax.ptx").write_text(k.asm["ptx"])
    for stages in (2, 3, 4):
        a = torch.randn(512, 512, device=dev, dtype=torch.float16)
        c = torch.empty(512, 512, device=dev, dtype=torch.float16)
        k = matmul_kernel[(4, 4)](a, a, c, 512, 512, 512, BM=128, BN=128, BK=64,
                                  num_stages=stages, num_warps=8)
        (out / f"triton_matmul_s{stages}.ptx").write_text(k.asm["ptx"])
    print("wrote", sorted(p.name for p in out.glob("*.ptx")))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent / "triton"))
