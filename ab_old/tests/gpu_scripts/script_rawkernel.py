"""RawKernel and RawModule from source: a shared-memory block sum and a __constant__ table."""

import cupy as cp
import numpy as np

SRC = r"""
__constant__ int scale[4];

extern "C" __global__ void block_sum(const float *in, float *out, int n) {
    __shared__ float buf[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0] * scale[blockIdx.x % 4];
}
"""

n = 256 * 8
x = cp.arange(n, dtype=cp.float32) % 7
out = cp.zeros(8, dtype=cp.float32)
mod = cp.RawModule(code=SRC)
table = cp.ndarray((4,), cp.int32, mod.get_global("scale"))
table[...] = cp.asarray([1, 2, 3, 4], dtype=cp.int32)
kern = mod.get_function("block_sum")
for _ in range(3):
    kern((8,), (256,), (x, out, np.int32(n)))
print("block sums", out.get().tolist())

raw = cp.RawKernel(SRC, "block_sum")
raw((8,), (256,), (x, out, np.int32(n)))
print("raw kernel", out.get().tolist())
