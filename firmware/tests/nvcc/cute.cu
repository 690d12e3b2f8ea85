// CUTLASS/CuTe sm90 atoms as nvcc spells them (firmware/tests/nvcc.rs): ldmatrix/stmatrix,
// mma.sync (sm80, sm89 fp8), wgmma in every family (SS and RS, f16 accumulators, transposes,
// saturation), the warpgroup fence/commit/wait, setmaxnreg, elect.sync, griddepcontrol and the
// tensor-map descriptor edits.
// nvcc -std=c++17 -arch=sm_90a -ptx -O3 --expt-relaxed-constexpr -I$CUTLASS/include cute.cu
#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm90.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/mma_sm80.hpp>
#include <cute/arch/mma_sm89.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/arch/mma_sm90_desc.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/arch/grid_dependency_control.h>

using namespace cute;
using namespace cute::SM90::GMMA;
using GMMA::Major;

__global__ void atoms(uint32_t *o, uint64_t *dsc, float *f, double *dd, TmaDescriptor *gdesc) {
  __shared__ __align__(128) cutlass::uint128_t smem[512];
  __shared__ __align__(128) TmaDescriptor sdesc;
  uint32_t t = threadIdx.x, r[128];
  float a[128];
  for (int i = 0; i < 128; ++i) { r[i] = o[t + i]; a[i] = f[t + i]; }
  SM75_U32x4_LDSM_N::copy(smem[t], r[0], r[1], r[2], r[3]);
  SM75_U16x8_LDSM_T::copy(smem[t + 16], r[4], r[5], r[6], r[7]);
  SM75_U32x1_LDSM_N::copy(smem[t + 32], r[8]);
  SM90_U32x4_STSM_N::copy(r[0], r[1], r[2], r[3], smem[t + 64]);
  SM90_U16x8_STSM_T::copy(r[4], r[5], r[6], r[7], smem[t + 128]);
  SM80_16x8x16_F32F16F16F32_TN::fma(a[0], a[1], a[2], a[3], r[0], r[1], r[2], r[3], r[4], r[5], a[4], a[5], a[6], a[7]);
  SM80_16x8x16_F32BF16BF16F32_TN::fma(a[8], a[9], a[10], a[11], r[0], r[1], r[2], r[3], r[4], r[5], a[4], a[5], a[6], a[7]);
  SM80_16x8x8_F32TF32TF32F32_TN::fma(a[12], a[13], a[14], a[15], r[0], r[1], r[2], r[3], r[4], r[5], a[4], a[5], a[6], a[7]);
  SM80_16x8x16_F16F16F16F16_TN::fma(r[10], r[11], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  SM80_16x8x32_S32S8S8S32_TN::fma(r[12], r[13], r[14], r[15], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
  SM80_16x8x32_S32U8S8S32_TN_SATURATE::fma(r[16], r[17], r[18], r[19], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
  SM80_16x8x256_S32U1U1S32_TN_XORPOPC::fma(r[20], r[21], r[22], r[23], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
  SM80_8x8x4_F64F64F64F64_TN::fma(dd[0], dd[1], dd[2], dd[3], dd[4], dd[5]);
  SM89_16x8x32_F32E4M3E5M2F32_TN::fma(a[16], a[17], a[18], a[19], r[0], r[1], r[2], r[3], r[4], r[5], a[4], a[5], a[6], a[7]);
  SM89_16x8x32_F16E4M3E4M3F16_TN::fma(r[24], r[25], r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  uint64_t da = dsc[0], db = dsc[1];
  warpgroup_fence_operand(a[20]);
  cute::warpgroup_arrive();
  MMA_64x8x16_F32F16F16_SS<Major::K, Major::MN>::fma(da, db, a[20], a[21], a[22], a[23]);
  MMA_64x8x16_F16F16F16_RS<Major::K, Major::K, GMMA::ScaleIn::Neg>::fma(r[0], r[1], r[2], r[3], db, r[26], r[27], GMMA::ScaleOut::Zero);
  MMA_64x16x16_F32BF16BF16_SS<Major::MN, Major::K>::fma(da, db, a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31]);
  MMA_64x8x8_F32TF32TF32_SS_TN<>::fma(da, db, a[32], a[33], a[34], a[35]);
  MMA_64x8x8_F32TF32TF32_RS_TN<>::fma(r[0], r[1], r[2], r[3], db, a[36], a[37], a[38], a[39]);
  MMA_64x8x32_F32E4M3E4M3_SS_TN<>::fma(da, db, a[40], a[41], a[42], a[43]);
  MMA_64x8x32_F16E5M2E4M3_RS_TN<>::fma(r[0], r[1], r[2], r[3], db, r[28], r[29]);
  MMA_64x8x32_S32S8U8_SS_TN_SATURATE::fma(da, db, r[30], r[31], r[32], r[33]);
  MMA_64x16x32_S32U8U8_RS_TN::fma(r[0], r[1], r[2], r[3], db, r[34], r[35], r[36], r[37], r[38], r[39], r[40], r[41]);
  MMA_64x64x16_F32F16F16_SS<Major::K, Major::K>::fma(da, db,
      a[44], a[45], a[46], a[47], a[48], a[49], a[50], a[51], a[52], a[53], a[54], a[55], a[56], a[57], a[58], a[59],
      a[60], a[61], a[62], a[63], a[64], a[65], a[66], a[67], a[68], a[69], a[70], a[71], a[72], a[73], a[74], a[75]);
  // b1 (no CuTe atom): the PTX ISA 9.7.15.5.2 spelling
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\nwgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%0, %1, %2, %3}, %4, %5, p;\n}\n"
               : "+r"(r[42]), "+r"(r[43]), "+r"(r[44]), "+r"(r[45]) : "l"(da), "l"(db), "r"(1));
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<1>();
  cute::warpgroup_wait<0>();
  warpgroup_fence_operand(a[20]);
  cutlass::arch::warpgroup_reg_alloc<232>();
  cutlass::arch::warpgroup_reg_dealloc<40>();
  if (cute::elect_one_sync()) { o[t] = 1; }
  cutlass::arch::launch_dependent_grids();
  cutlass::arch::wait_on_dependent_grids();
  cute::prefetch_tma_descriptor(gdesc);
  cute::tma_descriptor_replace_addr_in_shared_mem(sdesc, o);
  cute::tma_descriptor_replace_dims_strides_in_shared_mem(sdesc, cute::array<uint32_t, 5>{4, 5, 6, 1, 1}, cute::array<uint64_t, 5>{8, 16, 32, 64, 64});
  cute::tma_descriptor_cp_fence_release(gdesc, sdesc);
  cute::tma_descriptor_fence_release();
  cute::tma_descriptor_fence_acquire(gdesc);
  for (int i = 0; i < 128; ++i) { o[t + 128 + i] = r[i]; f[t + i] = a[i]; }
}
