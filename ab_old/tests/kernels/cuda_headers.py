"""One small real kernel per CUDA header that most kernels include (`cuda_fp16.h`,
`cuda_bf16.h`, `cuda/barrier`, `cuda/pipeline`, `cooperative_groups.h`): the CPU suite
builds each, the GPU suite checks each against its native run. Each is launched as one
CTA of 128 threads with one 128-element array per parameter."""

from __future__ import annotations

import os
from dataclasses import dataclass

THREADS = 128


@dataclass(frozen=True)
class HeaderKernel:
    """`k`'s source, the element type of each pointer parameter, and the ones it writes."""

    source: str
    params: tuple[str, ...]  # "float16", "bfloat16" (as uint16 bits) or "float32"
    outputs: tuple[int, ...]


HEADER_KERNELS: dict[str, HeaderKernel] = {
    "cuda_fp16.h": HeaderKernel(r"""
#include <cuda_fp16.h>
extern "C" __global__ void k(__half* x) {
    __shared__ __half s[128];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = __hadd(s[127 - threadIdx.x], s[threadIdx.x]);
}
""", ("float16",), (0,)),
    "cuda_bf16.h": HeaderKernel(r"""
#include <cuda_bf16.h>
extern "C" __global__ void k(__nv_bfloat16* x) {
    __shared__ __nv_bfloat16 s[128];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = __hmul(s[127 - threadIdx.x], __float2bfloat16(2.0f));
}
""", ("bfloat16",), (0,)),
    "cuda/barrier": HeaderKernel(r"""
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
extern "C" __global__ void k(float* x) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float s[128];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    s[threadIdx.x] = x[threadIdx.x];
    bar.arrive_and_wait();
    x[threadIdx.x] = s[127 - threadIdx.x];
}
""", ("float32",), (0,)),
    "cuda/pipeline": HeaderKernel(r"""
#include <cuda/pipeline>
extern "C" __global__ void k(const float* x, float* y) {
    __shared__ float s[128];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&s[threadIdx.x], &x[threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    y[threadIdx.x] = s[threadIdx.x] * 2.0f;
    pipe.consumer_release();
}
""", ("float32", "float32"), (1,)),
    "cooperative_groups.h": HeaderKernel(r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(float* x) {
    __shared__ float s[128];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    s[block.thread_rank()] = x[block.thread_rank()];
    block.sync();
    float v = s[127 - block.thread_rank()];
    for (int d = 16; d > 0; d /= 2) v += warp.shfl_down(v, d);
    if (warp.thread_rank() == 0) x[block.thread_rank() / 32] = v;
}
""", ("float32",), (0,)),
}


def has_header(header: str) -> bool:
    """Whether one of the CUDA include directories consan finds holds `header`."""
    from consan import toolchain

    return any(os.path.isfile(os.path.join(d.path, header))
               for d in toolchain.cuda_include_dirs())
