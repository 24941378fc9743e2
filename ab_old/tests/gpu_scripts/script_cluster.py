"""Cluster launches: __cluster_dims__ through RawKernel, and cluster dimensions given at
launch through cuda-bindings' cuLaunchKernelEx on the handle of a CuPy function."""

import ctypes

import cupy as cp
from cuda.bindings import driver

SRC = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_cluster(const int *in, int *out) {
    __shared__ int tile[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = in[i];
    __syncthreads();
    out[i] = tile[127 - t];
}

extern "C" __global__ void any_cluster(const int *in, int *out) {
    __shared__ int tile[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    tile[t] = in[i] * 3;
    __syncthreads();
    out[i] = tile[(t + 5) % 128];
}
"""
n = 128 * 4
x = cp.arange(n, dtype=cp.int32)
out = cp.zeros_like(x)
cp.RawKernel(SRC, "fixed_cluster")((4,), (128,), (x, out))
print("compile-time cluster", int(out.sum()), out[:3].get().tolist())

kern = cp.RawKernel(SRC, "any_cluster")
out2 = cp.zeros_like(x)
config = driver.CUlaunchConfig()
config.gridDimX, config.gridDimY, config.gridDimZ = 4, 1, 1
config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
config.sharedMemBytes = 0
config.hStream = driver.CUstream(cp.cuda.get_current_stream().ptr)
attr = driver.CUlaunchAttribute()
attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = 2, 1, 1
config.attrs = [attr]
config.numAttrs = 1
params = ((x.data.ptr, out2.data.ptr), (ctypes.c_void_p, ctypes.c_void_p))
(err,) = driver.cuLaunchKernelEx(config, driver.CUfunction(kern.kernel.ptr), params, 0)
assert int(err) == 0, err
cp.cuda.get_current_stream().synchronize()
print("launch-time cluster", int(out2.sum()), out2[:3].get().tolist())
