"""Regenerate tests/corpus/triton/*.ptx from Triton kernels (needs triton and a GPU).

The PTX is committed so the CPU tests can parse and instrument real Triton
output without Triton or a GPU: PYTHONPATH=. python tests/corpus/gen_triton.py OUTDIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

# The kernels of the Triton program the GPU tests run under `consan run` (its .loc lines then
# name tests/gpu_scripts/script_triton.py).
from tests.gpu_scripts.script_triton import add as add_kernel
from tests.gpu_scripts.script_triton import matmul as matmul_kernel
from tests.gpu_scripts.script_triton import softmax as softmax_kernel


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
