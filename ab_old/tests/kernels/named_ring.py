"""A warp-specialised ring over named barriers, as the CUDA Programming Guide's
producer-consumer pattern writes it (clean by design), and its mutants.

Warps 0-1 produce: for each tile they wait until the consumers freed its stage
(`bar.sync EMPTY+s, 128`), fill it from global memory, and mark it full (`bar.arrive
FULL+s, 128`). Warps 2-3 consume: they wait until the stage is full (`bar.sync FULL+s,
128`), sum it, and free it (`bar.arrive EMPTY+s, 128`). No CTA barrier orders the two
sides: only the named barriers' generations do. Used by tests/cpu/test_static_proof_named.py
(the proof) and tests/gpu/test_static_proof.py (the same kernels on the GPU).
"""

from __future__ import annotations

import numpy as np

KERNEL = "named_ring"
BLOCK = (128, 1, 1)
TILE = 256  # ints a stage holds
STAGES = 2

# named barriers from CUDA C++, as the Programming Guide's examples write them
BARRIERS = r"""
__device__ __forceinline__ void bar_sync(int id, int n) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int n) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(n) : "memory");
}
"""

SRC = BARRIERS + r"""
#define TILE 256
#define STAGES 2
#define FULL 1   // barriers FULL + s: stage s holds a tile
#define EMPTY 3  // barriers EMPTY + s: stage s may be refilled


extern "C" __global__ void __launch_bounds__(128)
named_ring(const int* in, int* out, int tiles) {
    __shared__ int buf[STAGES][TILE];
    const int t = threadIdx.x, warp = t / 32;
    const int* src = in + (size_t)blockIdx.x * tiles * TILE;
    if (warp < 2) {  // producers
        for (int k = 0; k < tiles; ++k) {
            const int s = k % STAGES;
            $WAIT_EMPTY
            for (int i = t; i < TILE; i += 64) buf[s][i] = src[k * TILE + i] * 3;  // @ring-fill
            $ARRIVE_FULL
        }
    } else {  // consumers
        const int c = t - 64;
        int acc = 0;
        for (int k = 0; k < tiles; ++k) {
            const int s = k % STAGES;
            $SYNC_FULL
            $EARLY_FREE
            for (int i = c; i < TILE; i += 64) acc += buf[s][i];  // @ring-read
            $FREE
        }
        out[blockIdx.x * 64 + c] = acc;
    }
}
"""

CLEAN = {
    "WAIT_EMPTY": "if (k >= STAGES) bar_sync(EMPTY + s, 128);",
    "ARRIVE_FULL": "bar_arrive(FULL + s, 128);",
    "SYNC_FULL": "bar_sync(FULL + s, 128);",
    "EARLY_FREE": "",
    "FREE": "if (k + STAGES < tiles) bar_arrive(EMPTY + s, 128);",
}

# racy or refused twins: what each changes
MUTANTS = {
    # the producers refill a stage the consumers may still be reading
    "no_empty_wait": {"WAIT_EMPTY": "/* BUG: no wait for the stage to be freed */"},
    # the consumers free the stage before they read it
    "early_free": {"EARLY_FREE": "if (k + STAGES < tiles) bar_arrive(EMPTY + s, 128);",
                   "FREE": "/* BUG: freed before the reads */"},
    # one FULL barrier for both stages: the producers' arrival for the next tile may
    # count in the generation the consumers have not arrived in yet (the hardware counts
    # arrivals), which then completes without them; a hang or a race, by timing (not run
    # on the GPU)
    "one_full_barrier": {"ARRIVE_FULL": "bar_arrive(FULL, 128);  /* BUG: one barrier */",
                         "SYNC_FULL": "bar_sync(FULL, 128);"},
}


def source(name: str | None = None) -> str:
    """The kernel's CUDA C++, clean (None) or with mutant `name`'s changes."""
    text = SRC
    for key, value in {**CLEAN, **(MUTANTS[name] if name else {})}.items():
        text = text.replace(f"${key}", value)
    return text


def reference(x: np.ndarray, tiles: int, ctas: int) -> np.ndarray:
    """Each consumer thread's sum over its tiles' words, as the kernel computes it."""
    tiles_of = x.reshape(ctas, tiles, TILE).astype(np.int64) * 3
    per = tiles_of.reshape(ctas, tiles, TILE // 64, 64).sum(axis=(1, 2))
    return per.astype(np.int32).reshape(-1)
