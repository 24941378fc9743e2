"""A plain Triton program (torch tensors, @triton.jit kernels): vector add, a fused row
softmax and the textbook fp16 matmul (cp.async + wgmma on an H100, 96 KiB of shared
memory). It prints a digest of every output's bytes, so a run under `consan run` must
print exactly what the native run prints: an instrumented kernel computes the same bits.
"""

from __future__ import annotations

import hashlib

import torch
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax(x, out, stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + cols, mask=cols < ncols, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < ncols)


@triton.jit
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(1 << 16, device="cuda")
    out = torch.empty_like(x)
    add[(triton.cdiv(x.numel(), 1024),)](x, x, out, x.numel(), BLOCK=1024)
    print("add", digest(out))

    m = torch.randn(4096, 1000, device="cuda")
    sm = torch.empty_like(m)
    softmax[(m.shape[0],)](m, sm, m.stride(0), m.shape[1], BLOCK=1024)
    print("softmax", digest(sm), f"{(sm - torch.softmax(m, 1)).abs().max().item():.3g}")

    n = 2048
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    matmul[(n // 128, n // 128)](a, b, c, n, n, n, BM=128, BN=128, BK=64, num_warps=8,
                                 num_stages=3)
    err = (c.float() - (a.float() @ b.float())).abs().max().item()
    print("matmul", digest(c), f"{err:.3g}")


if __name__ == "__main__":
    main()
