"""A precompiled library kernel (cuBLAS): consan cannot instrument it and must say so."""

import cupy as cp

a = cp.ones((64, 64), dtype=cp.float32)
print("matmul", float((a @ a).sum()))
