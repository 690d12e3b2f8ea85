// expect-finding: SharedMemoryRace
//! description = """A warp-synchronous shared-memory reduction, pre-Volta style (the last steps of the classic tree reduction, run by one warp without barriers; CUDA C++ Programming Guide, Independent Thread Scheduling, and the Volta tuning guide's warp-synchronous example): 64 threads store one value each, __syncthreads(), then warp 0 adds s[t + k] into s[t] for k = 32, 16, ..., 1. Bug: no __syncwarp() between the steps: since Volta the lanes of a warp are independent threads, so lane t may read s[t + k] before lane t + k wrote its sum of the previous step. Expected: SharedMemoryRace between two lanes of warp 0 at the reduction step. (The `volatile` form of the same code is made of strong accesses, which never form a data race in PTX's memory model (8.7): the detector does not name it.)"""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 256
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 4
//! type = "u32"
//! output = true
//! [[param]]
//! name = "warp_sum_param_0"
//! buffer = "in"
//! [[param]]
//! name = "warp_sum_param_1"
//! buffer = "out"

extern "C" __global__ void warp_sum(const unsigned* in, unsigned* out)
{
  __shared__ unsigned s[64];
  const unsigned t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  if (t < 32) {
    for (unsigned k = 32; k > 0; k >>= 1) {
      if (t < k) s[t] += s[t + k];  // lane t reads what lane t + k wrote in the step before // expect-line
    }
    if (t == 0) out[0] = s[0];
  }
}
