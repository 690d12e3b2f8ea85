//! description = """
//! The cuda::ptx mbarrier wrappers (libcu++ <cuda/ptx>): mbarrier_init, fence_mbarrier_init,
//! mbarrier_arrive_expect_tx, mbarrier_arrive, mbarrier_try_wait_parity, mbarrier_test_wait,
//! st_async-free tx completion via cp.async.bulk (cp_async_bulk), fence_proxy_async, and
//! elect via cuda::ptx::get_sreg_laneid. 2 CTAs x 64 threads: thread 0 loads 512 bytes with a
//! bulk copy completing on the barrier; all threads wait on phase 0, then a second phase with
//! plain arrivals; out = in + phase count."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 1024
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 1024
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z7wrapperPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z7wrapperPKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cstdint>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

__global__ void wrapper(const unsigned* in, unsigned* out)
{
  constexpr int N = 128;
  __shared__ alignas(128) unsigned tile[N];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, blockDim.x);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  uint64_t token;
  if (threadIdx.x == 0) {
    token = ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, sizeof(tile));
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, tile, in + blockIdx.x * N, sizeof(tile), &bar);
  } else {
    token = ptx::mbarrier_arrive(&bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  assert(ptx::mbarrier_test_wait(&bar, token));
  // phase 1: plain arrivals only
  token = ptx::mbarrier_arrive(&bar);
  while (!ptx::mbarrier_test_wait_parity(&bar, 1)) {
  }
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    assert(tile[i] == blockIdx.x * N + i);
    out[blockIdx.x * N + i] = tile[i] + 2;
  }
  (void)ptx::get_sreg_laneid();
}
