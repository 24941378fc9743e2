"""Kernels that fault on the GPU, and a program that launches one: `python script_fault.py KIND`.

Each kernel touches shared memory and waits at a barrier before it faults, so that
`consan run` checks it (a kernel without shared memory or barriers runs natively). The
program launches the kernel through a CuPy RawKernel, then synchronises: natively that call
fails with CUDA's error; under `consan run` too, and consan names the kernel that faulted.
All kernels take (const int *in, int *out, int arg) and run as one block of 256 threads.

KIND: misaligned (a 4-byte global store at a 2-byte offset), smem_range (`ld.shared` at an
address far past the shared-memory window), brkpt (a breakpoint without a debugger: an
illegal instruction), trap (PTX `trap;`), race_then_fault (a read-after-write race across
warps, recorded, then a misaligned store).
"""

from __future__ import annotations

import sys

HEAD = r"""
__device__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""

SOURCES = {
    "misaligned": HEAD + r"""
extern "C" __global__ void misaligned(const int *in, int *out, int arg) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];
    __syncthreads();
    *(int *)((char *)out + arg) = buf[255 - t];   // arg = 2: a misaligned 4-byte store
}
""",
    "smem_range": HEAD + r"""
extern "C" __global__ void smem_range(const int *in, int *out, int arg) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];
    __syncthreads();
    unsigned v;
    unsigned addr = (unsigned)arg + 4u * t;       // arg = 1 << 24: past any shared memory
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    out[t] = buf[255 - t] + (int)v;
}
""",
    "brkpt": HEAD + r"""
extern "C" __global__ void brkpt(const int *in, int *out, int arg) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];
    __syncthreads();
    if (arg) asm volatile("brkpt;");              // no debugger attached: the kernel faults
    out[t] = buf[255 - t];
}
""",
    "trap": HEAD + r"""
extern "C" __global__ void trap(const int *in, int *out, int arg) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];
    __syncthreads();
    if (arg) asm volatile("trap;");
    out[t] = buf[255 - t];
}
""",
    "race_then_fault": HEAD + r"""
extern "C" __global__ void race_then_fault(const int *in, int *out, int arg) {
    __shared__ int buf[256];
    int t = threadIdx.x;
    buf[t] = in[t];                                // @write
    spin(1 << 20);
    int v = buf[(t + 32) % 256];                   // @read  (no __syncthreads() before it)
    __syncthreads();
    spin(1 << 20);
    *(int *)((char *)out + arg) = v;               // @fault (arg = 2: misaligned)
}
""",
}
ARG = {"misaligned": 2, "smem_range": 1 << 24, "brkpt": 1, "trap": 1, "race_then_fault": 2}
BLOCK = 256


def launch(kind: str) -> None:
    """One launch of the kernel of `kind` on fresh buffers (asynchronous, as CuPy launches)."""
    import cupy as cp
    import numpy as np

    x = cp.arange(BLOCK, dtype=cp.int32)
    out = cp.zeros(BLOCK + 1, dtype=cp.int32)
    cp.RawKernel(SOURCES[kind], kind)((1,), (BLOCK,), (x, out, np.int32(ARG[kind])))


def main(kind: str) -> None:
    import cupy as cp

    launch(kind)
    cp.cuda.Device().synchronize()  # @sync: the program's next CUDA call meets the fault
    print("not reached")


if __name__ == "__main__":
    main(sys.argv[1])
