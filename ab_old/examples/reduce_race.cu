// A block-wide tree reduction that leaves out __syncthreads() once two warps are left.
//
//   consan check examples/reduce_race.cu --kernel block_sum --grid 1024 --block 256 \
//       --arg 'f32[262144]' --arg 'f32[1024]=0'
//
// reports a read-after-write race between warp 0 and warp 1 at the line marked below
// (warp 0 reads, at stride 32, the sums warp 1 wrote at stride 64 with no barrier
// between); add -D FIXED to compile the fixed kernel, which consan reports clean.
extern "C" __global__ void block_sum(const float* in, float* out) {
    __shared__ float partial[256];
    unsigned t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];  // race.raw: reads warp 1's sum
#ifdef FIXED
        __syncthreads();
#else
        if (stride > 64) __syncthreads();  // "the last two warps keep in step": they do not
#endif
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
