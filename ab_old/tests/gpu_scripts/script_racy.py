"""A RawKernel that forgot a __syncthreads(): consan reports the race at the marked line."""

import cupy as cp

SRC = r"""
extern "C" __global__ void shift_left(const int *in, int *out) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];                          // @write
    long long start = clock64();
    while (clock64() - start < (1 << 20)) { }
    out[t] = buf[(t + 32) % 256];            // @read  (no __syncthreads() before it)
}
"""

x = cp.arange(256, dtype=cp.int32)
out = cp.zeros(256, dtype=cp.int32)
cp.RawKernel(SRC, "shift_left")((1,), (256,), (x, out))
cp.cuda.Device().synchronize()
print("done")
