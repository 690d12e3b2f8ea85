//! description = """
//! cuda::ptx::cp_async_bulk_ignore_oob (PTX ISA 9.2): a 100-byte array (25 floats) is loaded
//! into shared memory with whole 16-byte bulk chunks; the last chunk runs 12 bytes past the
//! allocation and says so (ignoreBytesRight = 12), so nothing out of bounds is read. The
//! mbarrier expects all 112 bytes; out[i] = 2 * in[i] for the 25 floats, checked by asserts."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 100
//! fill = "iota"
//! type = "f32"
//! start = 1
//! [[buffer]]
//! name = "out"
//! bytes = 100
//! type = "f32"
//! output = true
//! [[param]]
//! name = "_Z4tailPKfPfj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z4tailPKfPfj_param_1"
//! buffer = "out"
//! [[param]]
//! name = "_Z4tailPKfPfj_param_2"
//! value = 25
#include <cassert>
#include <cstdint>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

__global__ void tail(const float* in, float* out, unsigned n)
{
  __shared__ alignas(128) float tile[32];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t bytes = n * sizeof(float);
  const uint32_t chunked = (bytes + 15) / 16 * 16;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, chunked);
    ptx::cp_async_bulk_ignore_oob(ptx::space_shared, ptx::space_global, tile, in, chunked, 0, chunked - bytes, &bar);
  }
  __syncthreads();
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  if (threadIdx.x < n) {
    assert(tile[threadIdx.x] == float(threadIdx.x + 1));
    out[threadIdx.x] = 2 * tile[threadIdx.x];
  }
}
