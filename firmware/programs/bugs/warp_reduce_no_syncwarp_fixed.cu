//! description = """A warp-synchronous shared-memory reduction, pre-Volta style (the last steps of the classic tree reduction, run by one warp without barriers; CUDA C++ Programming Guide, Independent Thread Scheduling, and the Volta tuning guide's warp-synchronous example): 64 threads store one value each, __syncthreads(), then warp 0 adds s[t + k] into s[t] for k = 32, 16, ..., 1. Fixed as the guide fixes it: every lane keeps its sum in a register, and __syncwarp() orders each step's reads before its writes and its writes before the next step's reads."""
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
//! expect = [2016]
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
    unsigned v = s[t];
    for (unsigned k = 32; k > 0; k >>= 1) {
      v += s[t + k];
      __syncwarp();  // every lane read s[t + k] before any lane overwrites it
      s[t] = v;
      __syncwarp();  // every lane wrote its sum before the next step reads it
    }
    if (t == 0) out[0] = s[0];
  }
}
