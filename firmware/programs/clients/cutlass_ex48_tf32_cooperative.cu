//! description = """
//! CUTLASS example 48 (Hopper warp-specialized TF32 GEMM: TMA multicast loads, wgmma
//! m64n128k8 tf32, KernelTmaWarpSpecializedCooperative as KernelScheduleAuto picks it, a
//! persistent tile scheduler, 128x128x32 tiles in 4x2 clusters, 7 stages), compiled unmodified
//! from the nvidia-cutlass 4.2 wheel: D = alpha * A * B + beta * C, M=512 N=256 K=64, alpha 1,
//! beta 2. The Params struct (tensor maps, strides, the scheduler's divisors) is what the
//! example's own host code builds for `--m=512 --n=256 --k=64 --beta=2`
//! (scripts/host_manifest/manifest_from_host.py)."""
//! kernel = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiEEENS1_10collective13CollectiveMmaINS1_34MainloopSm90TmaGmmaWarpSpecializedILi7ENS5_IJNS4_1CILi4EEENSA_ILi2EEENSA_ILi1EEEEEENS1_35KernelTmaWarpSpecializedCooperativeEEENS5_IJNSA_ILi128EEESH_NSA_ILi32EEEEEEfNS5_IJlSD_lEEEfSK_NS4_8TiledMMAINS4_8MMA_AtomIJNS4_4SM904GMMA30MMA_64x128x8_F32TF32TF32_SS_TNILNSO_7ScaleInE1ELSQ_1EEEEEENS4_6LayoutINS5_IJSC_SD_SD_EEENS5_IJSD_NSA_ILi0EEESV_EEEEENS5_IJNS4_10UnderscoreESY_SY_EEEEENS4_23SM90_TMA_LOAD_MULTICASTENS4_14ComposedLayoutINS4_7SwizzleILi3ELi4ELi3EEENS4_18smem_ptr_flag_bitsILi32EEENST_INS5_IJNSA_ILi8EEESI_EEENS5_IJSI_SD_EEEEEEEvNS4_8identityES11_S1B_vS1C_EENS_8epilogue10collective6detail29Sm90TmaWarpSpecializedAdapterINS1F_15DefaultEpilogueIfNS5_IJSD_llEEES1J_NS1E_6thread17LinearCombinationIfLi1EffLNS1K_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EfEENS1_15EpilogueDefaultEEEEEvvEEEEvNT_6ParamsE"
//! [cuda]
//! cutlass = true
//! ptx = "../../nvcc_ptx/48_hopper_warp_specialized_gemm.ptx"
//! [launch]
//! grid = [4, 2, 1]
//! block = [384, 1, 1]
//! cluster = [4, 2, 1]
//! dynamic_smem = 229760
//! [[buffer]]
//! name = "A"
//! bytes = 131072
//! fill = "random"
//! type = "f32"
//! range = [-2, 2]
//! seed = 1
//! [[buffer]]
//! name = "B"
//! bytes = 65536
//! fill = "random"
//! type = "f32"
//! range = [-2, 2]
//! seed = 2
//! [[buffer]]
//! name = "C"
//! bytes = 524288
//! fill = "random"
//! type = "f32"
//! range = [-2, 2]
//! seed = 3
//! [[buffer]]
//! name = "D"
//! bytes = 524288
//! type = "f32"
//! output = true
//! [[buffer]]
//! name = "workspace"
//! bytes = 16
//! [[tensormap]]
//! name = "tmap_A"
//! buffer = "A"
//! data_type = "tfloat32"
//! rank = 3
//! global_dim = [64, 512, 1]
//! global_strides = [256, 0]
//! box_dim = [32, 64, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[tensormap]]
//! name = "tmap_B"
//! buffer = "B"
//! data_type = "tfloat32"
//! rank = 3
//! global_dim = [64, 256, 1]
//! global_strides = [256, 0]
//! box_dim = [32, 32, 1]
//! element_strides = [1, 1, 1]
//! interleave = "none"
//! swizzle = "128B"
//! l2_promotion = "128B"
//! oob_fill = "none"
//! [[param]]
//! name = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiEEENS1_10collective13CollectiveMmaINS1_34MainloopSm90TmaGmmaWarpSpecializedILi7ENS5_IJNS4_1CILi4EEENSA_ILi2EEENSA_ILi1EEEEEENS1_35KernelTmaWarpSpecializedCooperativeEEENS5_IJNSA_ILi128EEESH_NSA_ILi32EEEEEEfNS5_IJlSD_lEEEfSK_NS4_8TiledMMAINS4_8MMA_AtomIJNS4_4SM904GMMA30MMA_64x128x8_F32TF32TF32_SS_TNILNSO_7ScaleInE1ELSQ_1EEEEEENS4_6LayoutINS5_IJSC_SD_SD_EEENS5_IJSD_NSA_ILi0EEESV_EEEEENS5_IJNS4_10UnderscoreESY_SY_EEEEENS4_23SM90_TMA_LOAD_MULTICASTENS4_14ComposedLayoutINS4_7SwizzleILi3ELi4ELi3EEENS4_18smem_ptr_flag_bitsILi32EEENST_INS5_IJNSA_ILi8EEESI_EEENS5_IJSI_SD_EEEEEEEvNS4_8identityES11_S1B_vS1C_EENS_8epilogue10collective6detail29Sm90TmaWarpSpecializedAdapterINS1F_15DefaultEpilogueIfNS5_IJSD_llEEES1J_NS1E_6thread17LinearCombinationIfLi1EffLNS1K_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EfEENS1_15EpilogueDefaultEEEEEvvEEEEvNT_6ParamsE_param_0"
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
//! value = 64
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
//! value = 1065353216
//! type = "u32"
//! [[param.field]]
//! offset = 772
//! value = 1073741824
//! type = "u32"
//! [[param.field]]
//! offset = 808
//! buffer = "C"
//! [[param.field]]
//! offset = 816
//! value = 512
//! type = "u32"
//! [[param.field]]
//! offset = 832
//! buffer = "D"
//! [[param.field]]
//! offset = 840
//! value = 512
//! type = "u32"
//! [[param.field]]
//! offset = 860
//! value = 132
//! type = "u32"
//! [[param.field]]
//! offset = 864
//! value = 16
//! type = "u32"
//! [[param.field]]
//! offset = 896
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 904
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 912
//! value = 4
//! type = "u32"
//! [[param.field]]
//! offset = 920
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 928
//! value = 8
//! type = "u32"
//! [[param.field]]
//! offset = 944
//! value = 3
//! type = "u32"
//! [[param.field]]
//! offset = 952
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 976
//! value = 8
//! type = "u32"
//! [[param.field]]
//! offset = 988
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 992
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 996
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1000
//! value = 1
//! type = "u32"
//! [[param.field]]
//! offset = 1004
//! value = 4
//! type = "u32"
//! [[param.field]]
//! offset = 1008
//! value = 2
//! type = "u32"
//! [[param.field]]
//! offset = 1016
//! buffer = "workspace"
#include "../48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu"
