"""Every other CuPy kernel kind: templates by name expression, a .ptx path, Elementwise,
Reduction, ufuncs, cupyx.jit.rawkernel and cupy.fuse. Prints a digest of every result's
bytes, so a run under `consan run` prints exactly what the native run prints."""

import hashlib
import os
import sys
import tempfile

import cupy as cp
import numpy as np
from cupyx import jit


def digest(*arrays) -> str:
    """The bytes of every array, hashed: the same print means the same bits."""
    return hashlib.sha256(b"".join(cp.asnumpy(a).tobytes() for a in arrays)).hexdigest()[:16]


TEMPLATE = r"""
template <typename T>
__global__ void rotate(const T *in, T *out, int n) {
    __shared__ T tile[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = i < n ? in[i] : T(0);
    __syncthreads();
    if (i < n) out[i] = tile[(t + 1) % blockDim.x];
}
"""
n = 128 * 4
mod = cp.RawModule(code=TEMPLATE, options=("-std=c++17",),
                   name_expressions=("rotate<float>", "rotate<int>"))
xf = cp.arange(n, dtype=cp.float32)
of = cp.zeros_like(xf)
mod.get_function("rotate<float>")((4,), (128,), (xf, of, np.int32(n)))
xi = cp.arange(n, dtype=cp.int32)
oi = cp.zeros_like(xi)
mod.get_function("rotate<int>")((4,), (128,), (xi, oi, np.int32(n)))
print("templates", float(of.sum()), int(oi[:5].sum()), digest(of, oi))

PTX_SRC = r"""
extern "C" __global__ void reverse(const int *in, int *out) {
    __shared__ int tile[64];
    int t = threadIdx.x;
    tile[t] = in[t];
    __syncthreads();
    out[t] = tile[63 - t];
}
"""
from cuda.bindings import nvrtc  # noqa: E402

cc = cp.cuda.Device().compute_capability
err, prog = nvrtc.nvrtcCreateProgram(PTX_SRC.encode(), b"reverse.cu", 0, [], [])
opts = [f"-arch=compute_{cc}".encode(), b"-lineinfo"]
assert int(nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]) == 0
_, size = nvrtc.nvrtcGetPTXSize(prog)
buf = b" " * size
nvrtc.nvrtcGetPTX(prog, buf)
ptx_path = os.path.join(tempfile.mkdtemp(), "reverse.ptx")
with open(ptx_path, "wb") as f:
    f.write(buf.rstrip(b"\0"))
rev = cp.RawModule(path=ptx_path).get_function("reverse")
xr = cp.arange(64, dtype=cp.int32)
orr = cp.zeros_like(xr)
rev((1,), (64,), (xr, orr))
print("ptx module", orr[:4].get().tolist(), digest(orr))

axpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                            "consan_axpy")
print("elementwise", digest(axpy(np.float32(2), xf, xf)))
sumsq = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0",
                           "consan_sumsq")
print("reduction", digest(sumsq(xf)))
print("ufuncs", digest(cp.add(xf, 1), cp.max(xi)))


@cp.fuse()
def fused(a, b):
    return a * b + 1


print("fuse", digest(fused(xf, xf)))


@jit.rawkernel()
def jit_reverse(x, y):
    smem = jit.shared_memory(cp.int32, 64)
    t = jit.threadIdx.x
    smem[t] = x[t]
    jit.syncthreads()
    y[t] = smem[63 - t]


oj = cp.zeros_like(xr)
jit_reverse((1,), (64,), (xr, oj))
print("jit", oj[:4].get().tolist(), digest(oj))
sys.stdout.flush()
