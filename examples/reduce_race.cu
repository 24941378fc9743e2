// A block-wide tree reduction that forgot one __syncthreads().
//
//   consan check examples/reduce_race.cu --kernel block_sum --grid 1024 --block 256 \
//       --arg 'f32[262144]' --arg 'f32[1024]=0'
//
// reports a read-after-write race at the line marked below; add -D FIXED to
// compile the fixed kernel, which consan reports clean.
extern "C" __global__ void block_sum(const float* in, float* out) {
    __shared__ float partial[256];
    unsigned t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];  // reads a neighbour's sum
#ifdef FIXED
        __syncthreads();
#else
        if (stride > 32) __syncthreads();  // "the last warp is lock-step": it is not
#endif
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
