//! description = """
//! cooperative_groups::memcpy_async and cg::wait (<cooperative_groups/memcpy_async.h>): a CTA
//! copies two 512-byte slices of in to shared memory as a group (cp.async on sm_90), waits for
//! them with cg::wait, and writes their element-wise sum; an assert checks every pair."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 2048
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 1024
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z7sum_twoPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z7sum_twoPKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>

namespace cg = cooperative_groups;

__global__ void sum_two(const unsigned* in, unsigned* out)
{
  constexpr int N = 128;
  __shared__ unsigned a[N], b[N];
  cg::thread_block block = cg::this_thread_block();
  const unsigned* base = in + blockIdx.x * 2 * N;
  cg::memcpy_async(block, a, base, sizeof(a));
  cg::memcpy_async(block, b, base + N, sizeof(b));
  cg::wait(block);
  for (int i = block.thread_rank(); i < N; i += block.size()) {
    assert(b[i] == a[i] + N);
    out[blockIdx.x * N + i] = a[i] + b[i];
  }
}
