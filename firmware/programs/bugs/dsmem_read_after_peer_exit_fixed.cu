//! description = """A 2-CTA cluster exchanging through distributed shared memory: each CTA writes 32 words, cluster.sync(), reads its peer's 32 words through map_shared_rank and stores them. Fixed: a trailing cluster.sync() keeps each CTA (and its shared memory) alive until its peer has read it."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [32, 1, 1]
//! cluster = [2, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1020, 1021, 1022, 1023, 1024, 1025, 1026, 1027, 1028, 1029, 1030, 1031, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]
//! [[param]]
//! name = "exchange_param_0"
//! buffer = "out"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange(unsigned* out)
{
  __shared__ unsigned vals[32];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  vals[threadIdx.x] = rank * 1000 + threadIdx.x;
  cluster.sync();
  const unsigned* peer = cluster.map_shared_rank(vals, (rank + 1) % 2);
  const unsigned v = peer[threadIdx.x];  // DSMEM read of the peer's shared memory
  out[rank * 32 + threadIdx.x] = v;
  cluster.sync();  // keep this CTA's shared memory alive for its peer
}
