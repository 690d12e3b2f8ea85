//! description = """
//! CUTLASS example 49 (Hopper GEMM with the collective builder), compiled unmodified from the
//! nvidia-cutlass 4.2 wheel: its ping-pong kernel (KernelTmaWarpSpecializedPingpong with the TMA
//! warp-specialized epilogue: a producer warp group and two consumer warp groups taking turns on
//! alternate tiles, ordered by named barriers), f16 in and out, f32 accumulation, 128x128x64
//! tiles in 2-CTA clusters. D = alpha * A * B + beta * C, M=512 N=256 K=128, alpha 1, beta 2, on
//! 2 CTAs (the persistent scheduler sized for 2 SMs: each consumer warp group takes 2 of the 8
//! tiles). The Params struct is what the example's own host code builds for `--m=512 --n=256
//! --k=128 --beta=2` with 2 SMs (HOPSYNC_SM_COUNT=2 scripts/host_manifest/manifest_from_host.py
//! ... --first-alloc 28: the example runs 4 other GEMMs before this one)."""
//! kernel = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiiEEENS1_10collective13CollectiveMmaINS1_34MainloopSm90TmaGmmaWarpSpecializedILi6ENS5_IJNS4_1CILi2EEENSA_ILi1EEESC_EEENS1_32KernelTmaWarpSpecializedPingpongEEENS5_IJNSA_ILi128EEESG_NSA_ILi64EEEEEENS_6half_tENS5_IJlSC_lEEESJ_SK_NS4_8TiledMMAINS4_8MMA_AtomIJNS4_4SM904GMMA26MMA_64x128x16_F32F16F16_SSILNSO_5MajorE0ELSQ_0ELNSO_7ScaleInE1ELSR_1EEEEEENS4_6LayoutINS5_IJSC_SC_SC_EEENS5_IJNSA_ILi0EEESW_SW_EEEEENS5_IJNS4_10UnderscoreESZ_SZ_EEEEENS4_13SM90_TMA_LOADENS4_14ComposedLayoutINS4_7SwizzleILi3ELi4ELi3EEENS4_18smem_ptr_flag_bitsILi16EEENSU_INS5_IJNSA_ILi8EEESH_EEENS5_IJSH_SC_EEEEEEEvNS4_8identityENS4_23SM90_TMA_LOAD_MULTICASTES1C_vS1D_EENS_8epilogue10collective18CollectiveEpilogueINS1G_22Sm90TmaWarpSpecializedILi4ELi2ELi16ELb1ELb0EEEJSI_NS5_IJSH_NSA_ILi32EEEEEESJ_NS5_IJSC_llEEESJ_S1N_NS1G_6fusion15FusionCallbacksIS1K_NS1O_17LinearCombinationISJ_fSJ_fLNS_15FloatRoundStyleE2EEESI_S1M_JEEES12_NS13_IS15_S17_NSU_INS5_IJSH_S18_EEENS5_IJSC_SH_EEEEEEENS4_17SM75_U16x8_LDSM_TENS4_14SM90_TMA_STOREES1X_NS4_17SM90_U16x8_STSM_TENS4_9Copy_AtomIJNS4_17SM90_U32x4_STSM_NESJ_EEEvEEENS1_19PersistentSchedulerEvEEEEvNT_6ParamsE"
//! [cuda]
//! cutlass = true
//! ptx = "../../nvcc_ptx/49_collective_builder.ptx"
//! [launch]
//! grid = [2, 1, 1]
//! block = [384, 1, 1]
//! cluster = [2, 1, 1]
//! dynamic_smem = 215040
//! [[buffer]]
//! name = "A"
//! bytes = 131072
//! fill = "random"
//! type = "f16"
//! range = [-2, 2]
//! seed = 29
//! [[buffer]]
//! name = "B"
//! bytes = 65536
//! fill = "random"
//! type = "f16"
//! range = [-2, 2]
//! seed = 30
//! [[buffer]]
//! name = "C"
//! bytes = 262144
//! fill = "random"
//! type = "f16"
//! range = [-2, 2]
//! seed = 31
//! [[buffer]]
//! name = "D"
//! bytes = 262144
//! type = "f16"
//! output = true
//! [[tensormap]]
//! name = "tmap_A"
//! buffer = "A"
//! data_type = "uint16"
//! rank = 3
//! global_dim = [128, 512, 1]
//! global_strides = [256, 0]
//! box_dim = [64, 128, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[tensormap]]
//! name = "tmap_B"
//! buffer = "B"
//! data_type = "uint16"
//! rank = 3
//! global_dim = [128, 256, 1]
//! global_strides = [256, 0]
//! box_dim = [64, 64, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[tensormap]]
//! name = "tmap_C"
//! buffer = "C"
//! data_type = "float16"
//! rank = 3
//! global_dim = [512, 256, 1]
//! global_strides = [1024, 0]
//! box_dim = [64, 32, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[tensormap]]
//! name = "tmap_D"
//! buffer = "D"
//! data_type = "float16"
//! rank = 3
//! global_dim = [512, 256, 1]
//! global_strides = [1024, 0]
//! box_dim = [64, 32, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[param]]
//! name = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiiEEENS1_10collective13CollectiveMmaINS1_34MainloopSm90TmaGmmaWarpSpecializedILi6ENS5_IJNS4_1CILi2EEENSA_ILi1EEESC_EEENS1_32KernelTmaWarpSpecializedPingpongEEENS5_IJNSA_ILi128EEESG_NSA_ILi64EEEEEENS_6half_tENS5_IJlSC_lEEESJ_SK_NS4_8TiledMMAINS4_8MMA_AtomIJNS4_4SM904GMMA26MMA_64x128x16_F32F16F16_SSILNSO_5MajorE0ELSQ_0ELNSO_7ScaleInE1ELSR_1EEEEEENS4_6LayoutINS5_IJSC_SC_SC_EEENS5_IJNSA_ILi0EEESW_SW_EEEEENS5_IJNS4_10UnderscoreESZ_SZ_EEEEENS4_13SM90_TMA_LOADENS4_14ComposedLayoutINS4_7SwizzleILi3ELi4ELi3EEENS4_18smem_ptr_flag_bitsILi16EEENSU_INS5_IJNSA_ILi8EEESH_EEENS5_IJSH_SC_EEEEEEEvNS4_8identityENS4_23SM90_TMA_LOAD_MULTICASTES1C_vS1D_EENS_8epilogue10collective18CollectiveEpilogueINS1G_22Sm90TmaWarpSpecializedILi4ELi2ELi16ELb1ELb0EEEJSI_NS5_IJSH_NSA_ILi32EEEEEESJ_NS5_IJSC_llEEESJ_S1N_NS1G_6fusion15FusionCallbacksIS1K_NS1O_17LinearCombinationISJ_fSJ_fLNS_15FloatRoundStyleE2EEESI_S1M_JEEES12_NS13_IS15_S17_NSU_INS5_IJSH_S18_EEENS5_IJSC_SH_EEEEEEENS4_17SM75_U16x8_LDSM_TENS4_14SM90_TMA_STOREES1X_NS4_17SM90_U16x8_STSM_TENS4_9Copy_AtomIJNS4_17SM90_U32x4_STSM_NESJ_EEEvEEENS1_19PersistentSchedulerEvEEEEvNT_6ParamsE_param_0"
//! [[param.field]]
//! offset = 4
//! value = 512
//! type = "u32"
//! [[param.field]]
//! offset = 8
//! value = 256
//! type = "u32"
//! [[param.field]]
//! offset = 12
//! value = 128
//! type = "u32"
//! [[param.field]]
//! offset = 16
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 128
//! tensormap = "tmap_A"
//! [[param.field]]
//! offset = 384
//! tensormap = "tmap_B"
//! [[param.field]]
//! offset = 640
//! value = 32768
//! type = "u32"
//! [[param.field]]
//! offset = 644
//! value = 16384
//! type = "u32"
//! [[param.field]]
//! offset = 648
//! value = 16384
//! type = "u32"
//! [[param.field]]
//! offset = 768
//! value = 1073741824
//! type = "u32"
//! [[param.field]]
//! offset = 800
//! value = 1065353216
//! type = "u32"
//! [[param.field]]
//! offset = 896
//! tensormap = "tmap_C"
//! [[param.field]]
//! offset = 1024
//! value = 48
//! type = "u32"
//! [[param.field]]
//! offset = 1152
//! tensormap = "tmap_D"
//! [[param.field]]
//! offset = 1280
//! value = 48
//! type = "u32"
//! [[param.field]]
//! offset = 1408
//! value = 4096
//! type = "u32"
//! [[param.field]]
//! offset = 1540
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1576
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1592
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1600
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1608
//! value = 8
//! type = "u32"
//! [[param.field]]
//! offset = 1624
//! value = 3
//! type = "u32"
//! [[param.field]]
//! offset = 1632
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1648
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1656
//! value = 8
//! type = "u32"
//! [[param.field]]
//! offset = 1668
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1672
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1676
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1680
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1684
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1688
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1712
//! value = 512
//! type = "u32"
//! [[param.field]]
//! offset = 1736
//! value = 512
//! type = "u32"
#include "../49_hopper_gemm_with_collective_builder/49_collective_builder.cu"
