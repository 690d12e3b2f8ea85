//! description = """
//! cuda::ptx only: a 4-CTA cluster where rank 0's thread 0 multicasts 256-byte chunks of a
//! global array into every CTA's shared buffer (cp.async.bulk ... multicast::cluster, one
//! complete_tx per destination CTA's mbarrier), 4 rounds over 2 buffers, each CTA polling its
//! own full barrier with an mbarrier_try_wait_parity loop on the round's parity, and a
//! cluster-scope empty barrier in rank 0 that all 4 CTAs arrive on remotely (mapa) before a
//! buffer is refilled."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [64, 1, 1]
//! cluster = [4, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 1024
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 64
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z9multicastPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z9multicastPKjPj_param_1"
//! buffer = "out"
#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cstdint>

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

constexpr int chunk_words = 64, rounds = 4, bufs = 2, ctas = 4;

__global__ void __cluster_dims__(4, 1, 1) multicast(const uint32_t* in, uint32_t* out)
{
  __shared__ alignas(128) uint32_t buf[bufs][chunk_words];
  __shared__ alignas(8) uint64_t full[bufs];
  __shared__ alignas(8) uint64_t empty[bufs];
  auto cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) {
    for (int b = 0; b < bufs; ++b) {
      ptx::mbarrier_init(&full[b], 1);
      ptx::mbarrier_init(&empty[b], ctas);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  uint32_t acc = 0;
  for (int r = 0; r < rounds; ++r) {
    const int b = r % bufs;
    const uint32_t parity = (r / bufs) & 1;
    if (threadIdx.x == 0) {
      // Every CTA expects the chunk on its own full barrier.
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[b], chunk_words * 4);
    }
    if (rank == 0 && threadIdx.x == 0) {
      if (r >= bufs) {
        // All 4 CTAs have released buffer b from round r - 2.
        while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, &empty[b], parity ^ 1)) {}
      }
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &buf[b][0], in + r * chunk_words, chunk_words * 4,
                         &full[b], uint16_t((1u << ctas) - 1));
    }
    while (!ptx::mbarrier_try_wait_parity(&full[b], parity)) {}
    acc += buf[b][threadIdx.x] * (r + 1);
    __syncthreads();
    if (threadIdx.x == 0) {
      // Release buffer b to rank 0's producer.
      uint64_t* remote = cluster.map_shared_rank(&empty[b], 0);
      ptx::mbarrier_arrive(ptx::sem_release, ptx::scope_cluster, ptx::space_cluster, remote);
    }
  }
  // The sum over the warp-pair's 64 lanes is reduced into one word per (CTA, warp, half).
  for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffff, acc, o);
  if (threadIdx.x % 32 == 0) out[rank * 4 + threadIdx.x / 32] = acc;
  if (threadIdx.x % 32 == 0) out[rank * 4 + 2 + threadIdx.x / 32] = rank;
  // No CTA may exit while a peer can still arrive on its barriers.
  cluster.sync();
}
