//! description = """
//! cooperative_groups reduce and scan on warp tiles (CUDA C++ Programming Guide, "Group
//! collectives"): plus / greater / bit_xor reductions (redux.sync), a float sum (shuffles), an
//! inclusive sum scan and an exclusive or scan, and a less reduction on 8-thread tiles."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 512
//! fill = "random"
//! type = "s32"
//! range = [-100, 100]
//! seed = 3
//! [[buffer]]
//! name = "sums"
//! bytes = 16
//! type = "s32"
//! output = true
//! [[buffer]]
//! name = "maxes"
//! bytes = 32
//! type = "s32"
//! output = true
//! [[buffer]]
//! name = "halves"
//! bytes = 16
//! type = "f32"
//! output = true
//! [[buffer]]
//! name = "scans"
//! bytes = 1024
//! type = "s32"
//! output = true
//! [[buffer]]
//! name = "small"
//! bytes = 64
//! type = "s32"
//! output = true
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_1"
//! buffer = "sums"
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_2"
//! buffer = "maxes"
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_3"
//! buffer = "halves"
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_4"
//! buffer = "scans"
//! [[param]]
//! name = "_Z11reduce_scanPKiPiS1_PfS1_S1__param_5"
//! buffer = "small"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

namespace cg = cooperative_groups;

// cooperative_groups collectives on warp tiles (the CUDA Programming Guide's reduce and scan):
// integer reductions (redux.sync on sm_80+), a float reduction (shuffles), exclusive and
// inclusive scans on 32-thread tiles, and a reduction on 8-thread tiles.
__global__ void reduce_scan(const int* in, int* sums, int* maxes, float* halves, int* scans, int* small)
{
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const int v = in[block.thread_rank()];
  const int s = cg::reduce(tile, v, cg::plus<int>());
  const int m = cg::reduce(tile, v, cg::greater<int>());
  const unsigned x = cg::reduce(tile, unsigned(v), cg::bit_xor<unsigned>());
  const float h = cg::reduce(tile, 0.5f * v, cg::plus<float>());
  if (tile.thread_rank() == 0) {
    const int w = tile.meta_group_rank();
    sums[w] = s;
    maxes[2 * w] = m;
    maxes[2 * w + 1] = int(x);
    halves[w] = h;
  }
  scans[2 * block.thread_rank()] = cg::inclusive_scan(tile, v);
  scans[2 * block.thread_rank() + 1] = cg::exclusive_scan(tile, v, cg::bit_or<int>());
  cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
  const int e = cg::reduce(eight, v, cg::less<int>());
  if (eight.thread_rank() == 0) {
    small[eight.meta_group_rank()] = e;
  }
}
