"""A torch.compile program: Inductor generates the Triton kernels (a fused row softmax
with cross-warp reductions, and a layer norm) and launches them through its own launcher
code. It prints a digest of every output's bytes, so a run under `consan run` must print
exactly what the native run prints, and each Inductor kernel must be listed as checked.
"""

from __future__ import annotations

import hashlib

import torch


def f(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.softmax(x * 2.0, dim=-1), torch.nn.functional.layer_norm(x, (x.shape[-1],), w)


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(512, 2048, device="cuda")
    w = torch.randn(2048, device="cuda")
    outs = torch.compile(f)(x, w)
    torch.cuda.synchronize()
    for o in outs:
        print(hashlib.sha256(o.cpu().numpy().tobytes()).hexdigest()[:16])


if __name__ == "__main__":
    main()
