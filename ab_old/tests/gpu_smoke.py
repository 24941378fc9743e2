"""First light on a GPU: one racy and one clean kernel through consan.check."""

import cupy as cp
import numpy as np

import consan

SRC = r'''
extern "C" __global__ void k(const float* in, float* out, int racy) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    if (!racy) __syncthreads();
    out[blockIdx.x * 256 + t] = s[(t + 32) % 256];
}
extern "C" __global__ void where(unsigned* out) {
    __shared__ int s[4];
    extern __shared__ int d[];
    if (threadIdx.x == 0) { out[0] = (unsigned)__cvta_generic_to_shared(s);
                            out[1] = (unsigned)__cvta_generic_to_shared(d); }
}
'''
x = cp.random.rand(256 * 8, dtype=cp.float32)
for racy in (1, 0):
    y = cp.zeros_like(x)
    rep = consan.check(SRC, "k", grid=(8,), block=(256,), args=(x, y, np.int32(racy)))
    print(f"--- racy={racy}: ok={rep.ok} kinds={sorted({v.kind for v in rep.violations})} "
          f"lines={sorted({v.line for v in rep.violations})}")
    print(rep)
    if not racy:
        ref = x.reshape(8, 256)[:, (np.arange(256) + 32) % 256].ravel()
        print("output matches:", bool(cp.allclose(y, ref)))
o = cp.zeros(2, dtype=cp.uint32)
cp.RawKernel(SRC, "where")((1,), (32,), (o,), shared_mem=64)
print("native smem offsets (static, dynamic):", o.get())
