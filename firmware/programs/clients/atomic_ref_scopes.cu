//! description = """
//! libcu++ atomics at block and device scope (cuda::atomic_ref, cuda::atomic in shared memory):
//! fetch_add / fetch_max / fetch_min / fetch_or / compare_exchange / exchange from 4 blocks of
//! 128 threads, and a release fence before a relaxed exchange."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "totals"
//! bytes = 16
//! fill = "values"
//! type = "s32"
//! values = [0, -1000000, 1000000, 0]
//! output = true
//! [[buffer]]
//! name = "slots"
//! bytes = 32
//! fill = "values"
//! type = "s32"
//! values = [-1, -1, -1, -1, -1, -1, -1, -1]
//! output = true
//! [[buffer]]
//! name = "flags"
//! bytes = 32
//! fill = "values"
//! type = "s32"
//! values = [-1, -1, -1, -1, -1, -1, -1, -1]
//! output = true
//! [[param]]
//! name = "_Z13atomic_scopesPiS_S__param_0"
//! buffer = "totals"
//! [[param]]
//! name = "_Z13atomic_scopesPiS_S__param_1"
//! buffer = "slots"
//! [[param]]
//! name = "_Z13atomic_scopesPiS_S__param_2"
//! buffer = "flags"
#include <cassert>
#include <cuda/atomic>

// libcu++ atomics at three scopes: cuda::atomic_ref on shared memory (block scope) and on global
// memory (device scope), cuda::atomic in shared memory, fetch_add / fetch_max / fetch_min /
// fetch_or / exchange / compare_exchange, and a release/acquire flag with atomic_thread_fence.
__global__ void atomic_scopes(int* totals, int* slots, int* flags)
{
  __shared__ int block_sum;
  __shared__ cuda::atomic<unsigned, cuda::thread_scope_block> block_bits;
  if (threadIdx.x == 0) {
    block_sum = 0;
    block_bits.store(0, cuda::std::memory_order_relaxed);
  }
  __syncthreads();
  cuda::atomic_ref<int, cuda::thread_scope_block> sum(block_sum);
  cuda::atomic_ref<int, cuda::thread_scope_device> total(totals[0]);
  cuda::atomic_ref<int, cuda::thread_scope_device> hi(totals[1]);
  cuda::atomic_ref<int, cuda::thread_scope_device> lo(totals[2]);
  const int v = int(threadIdx.x * 37 % 101) - 50 + int(blockIdx.x);
  sum.fetch_add(v, cuda::std::memory_order_relaxed);
  total.fetch_add(v);
  hi.fetch_max(v);
  lo.fetch_min(v);
  block_bits.fetch_or(1u << (threadIdx.x % 32));
  // one winner per slot in the whole grid: the first compare_exchange from -1 claims it
  cuda::atomic_ref<int, cuda::thread_scope_device> slot(slots[threadIdx.x % 8]);
  int expected = -1;
  if (slot.compare_exchange_strong(expected, int(1000 + threadIdx.x % 8))) {
    cuda::atomic_ref<int, cuda::thread_scope_device>(totals[3]).fetch_add(1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    assert(block_bits.load() == 0xffffffffu);
    flags[2 * blockIdx.x] = block_sum;
    // publish with a fence and a relaxed exchange (the old value: the -1 the buffer holds)
    cuda::atomic_thread_fence(cuda::std::memory_order_release, cuda::thread_scope_device);
    const int old = cuda::atomic_ref<int, cuda::thread_scope_device>(flags[2 * blockIdx.x + 1]).exchange(int(block_bits.load() >> 4), cuda::std::memory_order_relaxed);
    assert(old == -1);
  }
}
