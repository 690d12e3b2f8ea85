// Issue 17, point 1: threads 0-3 copy with cp.async and wait for it; every thread then meets at
// __syncthreads(), which nvcc places at the join point of the `if` (one bar.sync for all).
#include <cuda_pipeline.h>

__global__ void cp_async_wait_then_syncthreads(const int* in, int* out)
{
    __shared__ int s[4];
    int tid = threadIdx.x;
    if (tid < 4) {
        __pipeline_memcpy_async(&s[tid], &in[tid], sizeof(int));
        __pipeline_commit();
        __pipeline_wait_prior(0);
    }
    __syncthreads();
    out[tid] = s[tid % 4] + tid;
}
