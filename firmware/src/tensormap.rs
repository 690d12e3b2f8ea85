//! Tensor maps (`CUtensorMap`): a validating encoder that mirrors the CUDA driver's
//! `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col` for sm_90, a 128-byte
//! descriptor image (`encode` / `decode`), and the pure address functions the TMA
//! (`cp.async.bulk.tensor`) semantics need: element size, global byte address of a
//! tensor coordinate, shared-memory swizzle, and bytes per box.
//!
//! # Sources
//!
//! * **\[DRV\]** CUDA Driver API §6.30 "Tensor Map Object Management",
//!   `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col` (the "parameters passed are bound to
//!   the following requirements" lists, and the `CUtensorMapDataType`, `CUtensorMapInterleave`,
//!   `CUtensorMapSwizzle`, `CUtensorMapL2promotion`, `CUtensorMapFloatOOBfill` enums quoted there;
//!   CUDA 12.8+ text, which also lists the sm_100 sub-byte types and swizzle-atomicity modes).
//! * **\[PTX\]** PTX ISA 9.0 §5.5 "Tensors": §5.5.1 dimension/size/format, §5.5.3 tiled mode
//!   (bounding box, traversal stride, out-of-bounds fill), §5.5.4 im2col mode, §5.5.6 interleave
//!   layout, §5.5.7 "Swizzling Modes" (pattern tables, Table 14, repeating-pattern boundaries),
//!   §5.5.8 tensor-map; §9.7.9.25.5.2 `cp.async.bulk.tensor`; §9.7.9.26 `tensormap.replace`
//!   (Table 33 field values and the Target ISA notes that restrict some values to sm_100+).
//! * **\[CUTE\]** CUTLASS `include/cute/swizzle.hpp` (`Swizzle<B,M,S>`) and
//!   `include/cute/atom/copy_traits_sm90_tma_swizzle.hpp` (`get_tma_swizzle_bits`:
//!   `Swizzle<1,4,3>` = 32B, `Swizzle<2,4,3>` = 64B, `Swizzle<3,4,3>` = 128B).
//! * Seed `shared/seeds/001_*.txt` ("TMA拷贝多维数据"): a 2-D `INT32` `cuTensorMapEncodeTiled` call
//!   (stride "must be a multiple of 16"; box = the shared-memory tile; element strides {1, 1};
//!   `INTERLEAVE_NONE`, `SWIZZLE_NONE`, `L2_PROMOTION_NONE`, `FLOAT_OOB_FILL_NONE` = zero fill).
//!
//! # Rules enforced (in checking order)
//!
//! Each failed check returns a [`TensorMapError`] whose `rule` is the stable name below (`[i]`
//! is the offending index), whose `message` carries the offending values, and whose `reference`
//! cites the source. "hopsync" rules have no driver counterpart: they exist because our spec
//! holds arrays (the driver takes bare pointers) or because a documented bound leaves 0 open.
//!
//! | rule | modes | source |
//! | --- | --- | --- |
//! | `unsupported: sub-byte tensorDataType (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) needs sm_100+` | both | PTX §5.5.1.1, §9.7.9.26 Target ISA notes (`.elemtype` 13..15: sm_100a/101a/120a) |
//! | `unsupported: swizzle atomicity modes (128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B) need sm_100+` | both | PTX §5.5.7 Table 14, §9.7.9.26 Target ISA notes (`.swizzle_atomicity`: sm_100a/101a/120a) |
//! | `tensorRank must be in 1..=5` | tiled | DRV Tiled: tensorRank non-zero, <= 5 |
//! | `tensorRank must be >= 3 when interleave is not NONE` | tiled | DRV Tiled: tensorRank; PTX §5.5.6 |
//! | `tensorRank must be in 3..=5 for im2col` | im2col | DRV Im2col: tensorRank 3, 4 or 5; PTX §5.5.4 |
//! | `globalDim must have tensorRank entries` (likewise `globalStrides` tensorRank - 1, `elementStrides` tensorRank, `boxDim` tensorRank, `pixelBoxLowerCorner` / `pixelBoxUpperCorner` tensorRank - 2) | both | DRV parameter list; hopsync (array lengths) |
//! | `tiled map must not set im2col fields` / `im2col map must not set boxDim` | both | hopsync |
//! | `globalAddress must be 16-byte aligned` | both | DRV globalAddress |
//! | `globalAddress must be 32-byte aligned when interleave is 32B` | both | DRV globalAddress |
//! | `globalDim[i] must be in 1..=2^32` | both | DRV globalDim |
//! | `globalStrides[i] must be a multiple of 16` | both | DRV globalStrides |
//! | `globalStrides[i] must be less than 2^40` | both | DRV globalStrides |
//! | `globalStrides[i] must be a multiple of 32 when interleave is 32B` | both | DRV globalStrides |
//! | `globalStrides[0] must be >= globalDim[0] * elementSize` | both | DRV globalStrides: `globalStrides[0] = globalDim[0] * elementSizeInBytes + padding[0]` (padding >= 0) |
//! | `globalStrides[i] must be >= globalStrides[i-1] * globalDim[i]` (not for a dimension i + 1 of extent 1, whose stride is never used: CUTLASS writes 0 there) | both | DRV globalStrides: `globalStrides[i] = globalStrides[i-1] * (globalDim[i] + padding[i])`; this implies the doc's `assert(globalStrides[i] >= globalDim[i])` |
//! | `boxDim[i] must be in 1..=256` | tiled | DRV boxDim |
//! | `boxDim[0] * elementSize must be a multiple of 16 bytes when interleave is NONE` | tiled | DRV boxDim; PTX §5.5.3.1 (box size multiple of 16 bytes) |
//! | `pixelBoxLowerCorner[i] must be in LO..=HI for tensorRank R` (and `pixelBoxUpperCorner`): R=3: -32768..=32767, R=4: -128..=127, R=5: -16..=15 | im2col | DRV pixelBoxLower/UpperCorner; PTX §5.5.4.1 corner table |
//! | `pixel bounding box must have non-zero area` | im2col | DRV pixelBoxUpperCorner ("must have non-zero area"); reading below |
//! | `channelsPerPixel must be in 1..=256` | im2col | DRV channelsPerPixel (<= 256); 0 refused: hopsync |
//! | `pixelsPerColumn must be in 1..=1024` | im2col | DRV pixelsPerColumn (<= 1024); 0 refused: hopsync |
//! | `elementStrides[i] must be in 1..=8` | both | DRV elementStrides |
//! | `swizzle must be 32B when interleave is 32B` | both | DRV swizzle ("Other interleave modes can have any swizzling pattern") |
//! | `boxDim[0] * elementSize must be <= S bytes when swizzle is SB` (S = 32, 64, 128) | tiled | DRV interleave: inner box <= swizzle size when interleave is NONE |
//! | `channelsPerPixel * elementSize must be <= S bytes when swizzle is SB` | im2col | DRV Im2col interleave: same rule on channelsPerPixel |
//! | `oobFill NAN_REQUEST_ZERO_FMA requires a floating-point tensorDataType` | both | DRV oobFill |
//! | `the box must be at most 233472 bytes (prod(ceil(boxDim[i] / elementStrides[i])) * elementSize)` | tiled | measured: driver 580 on H200 (docs/SILICON_DISAGREEMENTS.md §2) |
//! | `channelsPerPixel * elementSize must be a multiple of 16 bytes` | im2col | measured: driver 580 on H200 (docs/SILICON_DISAGREEMENTS.md §2) |
//!
//! `l2Promotion` accepts all four `CUtensorMapL2promotion` values (NONE, L2_64B, L2_128B,
//! L2_256B); an unknown spelling is refused when the manifest is parsed, and the 2-bit image
//! field cannot hold an out-of-range value. The driver's `tensorMap` 64-byte alignment applies to
//! where the 128-byte object is stored, not to its contents, so it is not a spec rule here.
//! `elementStrides[0]` is validated (1..=8) but, with interleave NONE, ignored by the copy
//! (\[DRV\] elementStrides: "the first element of this array is ignored"; \[PTX\] §5.5.3.2: the
//! stride in dimension 0 "must always be 1" for non-interleaved layouts).
//!
//! **Im2col corners.** Index `i` of `pixelBoxLowerCorner` / `pixelBoxUpperCorner` belongs to the
//! spatial dimension `globalDim[i + 1]` (innermost first: W, H, D; the driver's "{D, H, W}" names
//! the dimensions, CUTLASS passes `lower_corner_whd` in W, H, D order). The lower corner is an
//! offset from coordinate 0, the upper corner an offset from coordinate `globalDim[i+1] - 1`
//! (\[DRV\]: "from bottom/right/back corner"), so the box spans `globalDim[i+1] + upper[i] - lower[i]`
//! filter positions along that dimension; "non-zero area" is read as that being >= 1 in every
//! spatial dimension.
//!
//! **Not modelled (sm_100+ only):** the sub-byte types and their extra rules (`globalDim[0]`
//! multiple of 128 or 2, `boxDim[0]` / `channelsPerPixel` = 128, 32-byte alignment, restricted
//! swizzles), swizzle-atomicity modes, the 96B swizzle (sm_103a), `cuTensorMapEncodeIm2colWide`
//! (compute capability 10.0+) and the `.tile::gather4` / `.tile::scatter4` modes. They are
//! refused with `unsupported: ...` where the spec can name them.
//!
//! # Manifest spelling (TOML / JSON)
//!
//! [`TensorMapSpec`] fields are the driver's parameter names in snake_case: `mode`, `data_type`,
//! `rank`, `global_address`, `global_dim`, `global_strides` (bytes, rank-1 entries), `box_dim`,
//! `element_strides`, `interleave`, `swizzle`, `l2_promotion`, `oob_fill`,
//! `pixel_box_lower_corner`, `pixel_box_upper_corner`, `channels_per_pixel`, `pixels_per_column`.
//! Unknown fields are refused. Enum values are the driver's constant suffix (after
//! `CU_TENSOR_MAP_DATA_TYPE_`, `_INTERLEAVE_`, `_SWIZZLE_`, `_L2_PROMOTION_L2_`,
//! `_FLOAT_OOB_FILL_`) lower-cased, except that byte counts keep their capital `B`:
//!
//! * `mode`: `"tiled"` (default; `cuTensorMapEncodeTiled`) | `"im2col"` (`cuTensorMapEncodeIm2col`)
//! * `data_type`: `"uint8"`, `"uint16"`, `"uint32"`, `"int32"`, `"uint64"`, `"int64"`, `"float16"`,
//!   `"float32"`, `"float64"`, `"bfloat16"`, `"float32_ftz"`, `"tfloat32"`, `"tfloat32_ftz"`
//!   (and `"16u4_align8B"`, `"16u4_align16B"`, `"16u6_align16B"`, which parse but are refused)
//! * `interleave`: `"none"` (default) | `"16B"` | `"32B"`
//! * `swizzle`: `"none"` (default) | `"32B"` | `"64B"` | `"128B"` (and `"128B_atom_32B"`,
//!   `"128B_atom_32B_flip_8B"`, `"128B_atom_64B"`, which parse but are refused)
//! * `l2_promotion`: `"none"` (default) | `"64B"` | `"128B"` | `"256B"`
//! * `oob_fill`: `"none"` (default, zero fill) | `"nan_request_zero_fma"`
//!
//! The upper-case driver suffix (`"FLOAT16"`, `"128B_ATOM_32B"`, `"L2_256B"`,
//! `"NAN_REQUEST_ZERO_FMA"`, ...) is accepted as an alias on input; output uses the spelling above.
//! `box_dim` is only for tiled maps; the four im2col fields are only for im2col maps.
//!
//! # Descriptor image (hopsync layout, version 1)
//!
//! **This is our own layout, not sm_90's real `CUtensorMap` bit layout**, which NVIDIA does not
//! document (\[DRV\]/\[PTX\] §5.5.8 call it opaque); it will be replaced when the silicon issue decodes
//! the real one. The image is a `BitArray<[u8; 128], Lsb0>`: bit `n` is bit `n % 8` of byte
//! `n / 8`, and multi-bit fields are stored little-endian (so `globalAddress` is bytes 8..16 as a
//! little-endian `u64`). Enum fields hold the **driver** enum values (not the PTX
//! `tensormap.replace` numbering, which differs for `.elemtype`).
//!
//! | bits | width | field | encoding |
//! | --- | --- | --- | --- |
//! | 0..8 | 8 | image format version | 1 |
//! | 8 | 1 | mode | 0 tiled, 1 im2col |
//! | 9..12 | 3 | tensorRank - 1 | 0..=4 |
//! | 12..16 | 4 | tensorDataType | `CUtensorMapDataType` (UINT8 = 0 .. TFLOAT32_FTZ = 12) |
//! | 16..18 | 2 | interleave | `CUtensorMapInterleave` (NONE 0, 16B 1, 32B 2) |
//! | 18..21 | 3 | swizzle | `CUtensorMapSwizzle` (NONE 0, 32B 1, 64B 2, 128B 3) |
//! | 21..23 | 2 | l2Promotion | `CUtensorMapL2promotion` (NONE 0, 64B 1, 128B 2, 256B 3) |
//! | 23 | 1 | oobFill | `CUtensorMapFloatOOBfill` (NONE 0, NAN_REQUEST_ZERO_FMA 1) |
//! | 24..64 | 40 | reserved | 0 |
//! | 64..128 | 64 | globalAddress | bytes |
//! | 128 + 32·i, i < 5 | 32 | globalDim\[i\] - 1 | 0..=2^32-1 |
//! | 288 + 40·i, i < 4 | 40 | globalStrides\[i\] | bytes, < 2^40 |
//! | 448 + 8·i, i < 5 | 8 | boxDim\[i\] - 1 (tiled) | 0..=255 |
//! | 488 + 3·i, i < 5 | 3 | elementStrides\[i\] - 1 | 0..=7 |
//! | 503..512 | 9 | reserved | 0 |
//! | 512 + 16·i, i < 3 | 16 | pixelBoxLowerCorner\[i\] (im2col) | two's complement i16 |
//! | 560 + 16·i, i < 3 | 16 | pixelBoxUpperCorner\[i\] (im2col) | two's complement i16 |
//! | 608..616 | 8 | channelsPerPixel - 1 (im2col) | 0..=255 |
//! | 616..626 | 10 | pixelsPerColumn - 1 (im2col) | 0..=1023 |
//! | 626..1024 | 398 | reserved | 0 |
//!
//! Array entries at or beyond the rank (rank - 1 for strides, rank - 2 for corners), `boxDim` of
//! an im2col map and the im2col fields of a tiled map are 0. [`TensorMap::decode`] refuses an
//! unknown version, out-of-range enum values, any map that breaks a rule above, and any image
//! that is not exactly what [`TensorMap::encode`] writes for the decoded map (reserved or unused
//! bits set), so `decode(encode(m)) == m` and `encode(decode(b)?) == b`.
//!
//! # Shared-memory swizzle
//!
//! [`swizzle_offset`] maps a byte offset in the dense (unswizzled) shared-memory box to the byte
//! offset TMA writes it to. \[PTX\] §5.5.7 tables number the 16-byte chunks of each 128-byte line;
//! line `r` holds chunk `c` at position `c XOR (r mod 2)` (32B), `c XOR (r mod 4)` (64B) or
//! `c XOR (r mod 8)` (128B), the pattern repeating every 256 / 512 / 1024 bytes. In address bits:
//! bits 4.. of the offset (the chunk) are XOR'd with bits 7.. (the line), 1 / 2 / 3 bits wide,
//! which is CuTe's `Swizzle<B,4,3>` with B = 1, 2, 3:
//! `offset ^ ((offset & (((1 << B) - 1) << 7)) >> 3)`. The offset is from a shared-memory address
//! aligned to the repeat (256 / 512 / 1024 B); passing the absolute shared-memory address instead
//! gives the absolute swizzled address for any 128-byte-aligned base, which is the \[PTX\] "swizzle
//! base offset" `(dstMem / 128) % 2, 4, 8` rule.

use std::fmt;

use bitvec::prelude::*;
use serde::{Deserialize, Serialize};

/// Size of a tensor-map object in bytes (\[PTX\] §5.5.8: "a 128-byte opaque object").
pub const TENSOR_MAP_BYTES: usize = 128;
/// Largest tensor rank (\[DRV\] tensorRank: "maximum supported dimensionality of 5").
pub const TENSOR_MAP_MAX_RANK: usize = 5;
/// Version tag in bits 0..8 of the hopsync descriptor image.
pub const TENSOR_MAP_IMAGE_VERSION: u8 = 1;

/// Citations carried in [`TensorMapError::reference`].
mod cite {
    pub const TILED: &str = "CUDA Driver API §6.30 Tensor Map Object Management: cuTensorMapEncodeTiled";
    pub const IM2COL: &str = "CUDA Driver API §6.30 Tensor Map Object Management: cuTensorMapEncodeIm2col";
    pub const SUB_BYTE: &str = "PTX ISA 9.0 §5.5.1.1 Sub-byte Types; §9.7.9.26 tensormap.replace Target ISA notes (.elemtype 13..15 on sm_100a/sm_101a/sm_120a only)";
    pub const REPLACE: &str = "PTX ISA §9.7.9.26 tensormap.replace (Table: new_val of .field3)";
    pub const ATOMICITY: &str = "PTX ISA 9.0 §5.5.7 Swizzling Modes, Table 14; §9.7.9.26 tensormap.replace Target ISA notes (.swizzle_atomicity on sm_100a/sm_101a/sm_120a only)";
    pub const IM2COL_CORNERS: &str = "CUDA Driver API §6.30: cuTensorMapEncodeIm2col pixelBoxLowerCorner/pixelBoxUpperCorner; PTX ISA 9.0 §5.5.4.1 im2col Bounding Box";
    pub const HOPSYNC: &str = "hopsync tensormap spec (no driver counterpart: the driver takes bare arrays)";
    pub const IMAGE: &str = "hopsync tensor-map descriptor image layout v1 (firmware/src/tensormap.rs module doc)";
    pub const DRIVER_580: &str = "measured: cuTensorMapEncode* of driver 580.159.04 on an H200 refuses it (docs/SILICON_DISAGREEMENTS.md §2, cosim/traces/sm90/probe/tensormap_thresholds.json)";
}

/// The largest tiled box the sm_90 driver encodes, in bytes: 228 KiB, an SM's shared memory
/// (measured, docs/SILICON_DISAGREEMENTS.md §2).
pub const MAX_BOX_BYTES: u64 = 233_472;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A violated tensor-map rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapError {
    /// Stable rule name, e.g. `"boxDim[1] must be in 1..=256"` (see the module doc table).
    pub rule: String,
    /// The offending values.
    pub message: String,
    /// Where the rule comes from (document + section / function).
    pub reference: &'static str,
}

impl TensorMapError {
    fn new(rule: impl Into<String>, reference: &'static str, message: impl Into<String>) -> Self {
        TensorMapError { rule: rule.into(), message: message.into(), reference }
    }
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.rule, self.message, self.reference)
    }
}

impl std::error::Error for TensorMapError {}

// ---------------------------------------------------------------------------------------------
// Enums (driver values and names)
// ---------------------------------------------------------------------------------------------

/// Which driver encoder a spec mirrors (\[PTX\] §5.5.2 tensor access modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TensorMapMode {
    /// `cuTensorMapEncodeTiled`: the box keeps the tensor's layout (\[PTX\] §5.5.3).
    #[default]
    #[serde(rename = "tiled", alias = "TILED")]
    Tiled,
    /// `cuTensorMapEncodeIm2col`: box elements are rearranged into columns (\[PTX\] §5.5.4).
    #[serde(rename = "im2col", alias = "IM2COL")]
    Im2col,
}

impl TensorMapMode {
    fn api(self) -> &'static str {
        match self {
            TensorMapMode::Tiled => cite::TILED,
            TensorMapMode::Im2col => cite::IM2COL,
        }
    }
}

/// `CUtensorMapDataType` (\[DRV\] tensorDataType); discriminants are the driver values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u32)]
pub enum TensorMapDataType {
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT8`, 1 byte.
    #[serde(rename = "uint8", alias = "UINT8")]
    Uint8 = 0,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT16`, 2 bytes.
    #[serde(rename = "uint16", alias = "UINT16")]
    Uint16 = 1,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT32`, 4 bytes.
    #[serde(rename = "uint32", alias = "UINT32")]
    Uint32 = 2,
    /// `CU_TENSOR_MAP_DATA_TYPE_INT32`, 4 bytes.
    #[serde(rename = "int32", alias = "INT32")]
    Int32 = 3,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT64`, 8 bytes.
    #[serde(rename = "uint64", alias = "UINT64")]
    Uint64 = 4,
    /// `CU_TENSOR_MAP_DATA_TYPE_INT64`, 8 bytes.
    #[serde(rename = "int64", alias = "INT64")]
    Int64 = 5,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16`, 2 bytes.
    #[serde(rename = "float16", alias = "FLOAT16")]
    Float16 = 6,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32`, 4 bytes.
    #[serde(rename = "float32", alias = "FLOAT32")]
    Float32 = 7,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT64`, 8 bytes.
    #[serde(rename = "float64", alias = "FLOAT64")]
    Float64 = 8,
    /// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`, 2 bytes.
    #[serde(rename = "bfloat16", alias = "BFLOAT16")]
    Bfloat16 = 9,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ`, 4 bytes.
    #[serde(rename = "float32_ftz", alias = "FLOAT32_FTZ")]
    Float32Ftz = 10,
    /// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32`, 4 bytes.
    #[serde(rename = "tfloat32", alias = "TFLOAT32")]
    Tfloat32 = 11,
    /// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ`, 4 bytes.
    #[serde(rename = "tfloat32_ftz", alias = "TFLOAT32_FTZ")]
    Tfloat32Ftz = 12,
    /// `CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B`, 4 bits (sm_100+: refused).
    #[serde(rename = "16u4_align8B", alias = "16U4_ALIGN8B")]
    U4x16Align8B = 13,
    /// `CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B`, 4 bits (sm_100+: refused).
    #[serde(rename = "16u4_align16B", alias = "16U4_ALIGN16B")]
    U4x16Align16B = 14,
    /// `CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B`, 6 bits (sm_100+: refused).
    #[serde(rename = "16u6_align16B", alias = "16U6_ALIGN16B")]
    U6x16Align16B = 15,
}

impl TensorMapDataType {
    /// Every value, in driver order (index = driver value).
    pub const ALL: [TensorMapDataType; 16] = [
        Self::Uint8,
        Self::Uint16,
        Self::Uint32,
        Self::Int32,
        Self::Uint64,
        Self::Int64,
        Self::Float16,
        Self::Float32,
        Self::Float64,
        Self::Bfloat16,
        Self::Float32Ftz,
        Self::Tfloat32,
        Self::Tfloat32Ftz,
        Self::U4x16Align8B,
        Self::U4x16Align16B,
        Self::U6x16Align16B,
    ];

    /// The driver's `CUtensorMapDataType` value.
    pub fn driver_value(self) -> u32 {
        self as u32
    }

    /// Inverse of [`Self::driver_value`].
    pub fn from_driver_value(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The driver's constant name, e.g. `CU_TENSOR_MAP_DATA_TYPE_FLOAT16`.
    pub fn driver_name(self) -> &'static str {
        match self {
            Self::Uint8 => "CU_TENSOR_MAP_DATA_TYPE_UINT8",
            Self::Uint16 => "CU_TENSOR_MAP_DATA_TYPE_UINT16",
            Self::Uint32 => "CU_TENSOR_MAP_DATA_TYPE_UINT32",
            Self::Int32 => "CU_TENSOR_MAP_DATA_TYPE_INT32",
            Self::Uint64 => "CU_TENSOR_MAP_DATA_TYPE_UINT64",
            Self::Int64 => "CU_TENSOR_MAP_DATA_TYPE_INT64",
            Self::Float16 => "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
            Self::Float32 => "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
            Self::Float64 => "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
            Self::Bfloat16 => "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
            Self::Float32Ftz => "CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ",
            Self::Tfloat32 => "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32",
            Self::Tfloat32Ftz => "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ",
            Self::U4x16Align8B => "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B",
            Self::U4x16Align16B => "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B",
            Self::U6x16Align16B => "CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B",
        }
    }

    /// Element size in bytes, per the byte counts in \[DRV\]'s `CUtensorMapDataType` listing;
    /// `None` for the sub-byte packed types (4 or 6 bits per element).
    pub fn element_size(self) -> Option<u32> {
        match self {
            Self::Uint8 => Some(1),
            Self::Uint16 | Self::Float16 | Self::Bfloat16 => Some(2),
            Self::Uint32 | Self::Int32 | Self::Float32 | Self::Float32Ftz | Self::Tfloat32 | Self::Tfloat32Ftz => {
                Some(4)
            }
            Self::Uint64 | Self::Int64 | Self::Float64 => Some(8),
            Self::U4x16Align8B | Self::U4x16Align16B | Self::U6x16Align16B => None,
        }
    }

    /// Bits per element (\[DRV\] listing: 4 bits for 16U4_*, 6 bits for 16U6_*).
    pub fn element_bits(self) -> u32 {
        match self {
            Self::U4x16Align8B | Self::U4x16Align16B => 4,
            Self::U6x16Align16B => 6,
            other => other.element_size().map_or(0, |b| 8 * b),
        }
    }

    /// The floating-point types (\[DRV\] oobFill: NAN_REQUEST_ZERO_FMA "can only be used when
    /// tensorDataType represents a floating-point data type").
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Self::Float16
                | Self::Float32
                | Self::Float64
                | Self::Bfloat16
                | Self::Float32Ftz
                | Self::Tfloat32
                | Self::Tfloat32Ftz
        )
    }

    /// The sub-byte packed types (sm_100+).
    pub fn is_sub_byte(self) -> bool {
        self.element_size().is_none()
    }
}

/// `CUtensorMapInterleave` (\[DRV\] interleave; \[PTX\] §5.5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u32)]
pub enum TensorMapInterleave {
    /// `CU_TENSOR_MAP_INTERLEAVE_NONE` (NDHWC).
    #[default]
    #[serde(rename = "none", alias = "NONE")]
    None = 0,
    /// `CU_TENSOR_MAP_INTERLEAVE_16B` (NC/8DHWC8: C8 in 16 bytes at 2 B/channel).
    #[serde(rename = "16B")]
    B16 = 1,
    /// `CU_TENSOR_MAP_INTERLEAVE_32B` (NC/16HWC16: C16 in 32 bytes).
    #[serde(rename = "32B")]
    B32 = 2,
}

impl TensorMapInterleave {
    /// Every value, in driver order.
    pub const ALL: [TensorMapInterleave; 3] = [Self::None, Self::B16, Self::B32];

    /// The driver's `CUtensorMapInterleave` value.
    pub fn driver_value(self) -> u32 {
        self as u32
    }

    /// Inverse of [`Self::driver_value`].
    pub fn from_driver_value(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The driver's constant name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Self::None => "CU_TENSOR_MAP_INTERLEAVE_NONE",
            Self::B16 => "CU_TENSOR_MAP_INTERLEAVE_16B",
            Self::B32 => "CU_TENSOR_MAP_INTERLEAVE_32B",
        }
    }
}

/// `CUtensorMapSwizzle` (\[DRV\] swizzle; \[PTX\] §5.5.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u32)]
pub enum TensorMapSwizzle {
    /// `CU_TENSOR_MAP_SWIZZLE_NONE`.
    #[default]
    #[serde(rename = "none", alias = "NONE")]
    None = 0,
    /// `CU_TENSOR_MAP_SWIZZLE_32B`: 16B chunks within a 32B span.
    #[serde(rename = "32B")]
    B32 = 1,
    /// `CU_TENSOR_MAP_SWIZZLE_64B`: 16B chunks within a 64B span.
    #[serde(rename = "64B")]
    B64 = 2,
    /// `CU_TENSOR_MAP_SWIZZLE_128B`: 16B chunks within a 128B span.
    #[serde(rename = "128B")]
    B128 = 3,
    /// `CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B` (sm_100+: refused).
    #[serde(rename = "128B_atom_32B", alias = "128B_ATOM_32B")]
    B128Atom32B = 4,
    /// `CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B` (sm_100+: refused).
    #[serde(rename = "128B_atom_32B_flip_8B", alias = "128B_ATOM_32B_FLIP_8B")]
    B128Atom32BFlip8B = 5,
    /// `CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B` (sm_100+: refused).
    #[serde(rename = "128B_atom_64B", alias = "128B_ATOM_64B")]
    B128Atom64B = 6,
}

impl TensorMapSwizzle {
    /// Every value, in driver order.
    pub const ALL: [TensorMapSwizzle; 7] =
        [Self::None, Self::B32, Self::B64, Self::B128, Self::B128Atom32B, Self::B128Atom32BFlip8B, Self::B128Atom64B];

    /// The driver's `CUtensorMapSwizzle` value.
    pub fn driver_value(self) -> u32 {
        self as u32
    }

    /// Inverse of [`Self::driver_value`].
    pub fn from_driver_value(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The driver's constant name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Self::None => "CU_TENSOR_MAP_SWIZZLE_NONE",
            Self::B32 => "CU_TENSOR_MAP_SWIZZLE_32B",
            Self::B64 => "CU_TENSOR_MAP_SWIZZLE_64B",
            Self::B128 => "CU_TENSOR_MAP_SWIZZLE_128B",
            Self::B128Atom32B => "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B",
            Self::B128Atom32BFlip8B => "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B",
            Self::B128Atom64B => "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B",
        }
    }

    /// The swizzle span ("swizzle size") in bytes, which bounds the inner box dimension:
    /// 32, 64, 128 (also for the 128B atomicity modes); `None` for NONE.
    pub fn span_bytes(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::B32 => Some(32),
            Self::B64 => Some(64),
            Self::B128 | Self::B128Atom32B | Self::B128Atom32BFlip8B | Self::B128Atom64B => Some(128),
        }
    }

    /// Bytes after which the pattern repeats (\[PTX\] §5.5.7 "Starting address of the repeating
    /// pattern": 256, 512, 1024); `None` for NONE.
    pub fn pattern_bytes(self) -> Option<u32> {
        self.span_bytes().map(|span| span * 8)
    }

    /// The 128B modes with 32B/64B swizzle atomicity (\[PTX\] §5.5.7 Table 14), sm_100+.
    pub fn is_atomicity_mode(self) -> bool {
        matches!(self, Self::B128Atom32B | Self::B128Atom32BFlip8B | Self::B128Atom64B)
    }
}

/// `CUtensorMapL2promotion` (\[DRV\] l2Promotion: L2 fetch size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u32)]
pub enum TensorMapL2Promotion {
    /// `CU_TENSOR_MAP_L2_PROMOTION_NONE`.
    #[default]
    #[serde(rename = "none", alias = "NONE")]
    None = 0,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_64B`.
    #[serde(rename = "64B", alias = "L2_64B")]
    L2B64 = 1,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`.
    #[serde(rename = "128B", alias = "L2_128B")]
    L2B128 = 2,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B`.
    #[serde(rename = "256B", alias = "L2_256B")]
    L2B256 = 3,
}

impl TensorMapL2Promotion {
    /// Every value, in driver order.
    pub const ALL: [TensorMapL2Promotion; 4] = [Self::None, Self::L2B64, Self::L2B128, Self::L2B256];

    /// The driver's `CUtensorMapL2promotion` value.
    pub fn driver_value(self) -> u32 {
        self as u32
    }

    /// Inverse of [`Self::driver_value`].
    pub fn from_driver_value(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The driver's constant name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Self::None => "CU_TENSOR_MAP_L2_PROMOTION_NONE",
            Self::L2B64 => "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
            Self::L2B128 => "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
            Self::L2B256 => "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        }
    }

    /// The L2 fetch granularity in bytes; `None` for NONE.
    pub fn bytes(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::L2B64 => Some(64),
            Self::L2B128 => Some(128),
            Self::L2B256 => Some(256),
        }
    }
}

/// `CUtensorMapFloatOOBfill` (\[DRV\] oobFill; \[PTX\] §5.5.3.3 zero fill / OOB-NaN fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u32)]
pub enum TensorMapOobFill {
    /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: out-of-bounds elements read as 0.
    #[default]
    #[serde(rename = "none", alias = "NONE")]
    None = 0,
    /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`: out-of-bounds elements read as the
    /// special `OOB-NaN`; floating-point types only.
    #[serde(rename = "nan_request_zero_fma", alias = "NAN_REQUEST_ZERO_FMA")]
    NanRequestZeroFma = 1,
}

impl TensorMapOobFill {
    /// Every value, in driver order.
    pub const ALL: [TensorMapOobFill; 2] = [Self::None, Self::NanRequestZeroFma];

    /// The driver's `CUtensorMapFloatOOBfill` value.
    pub fn driver_value(self) -> u32 {
        self as u32
    }

    /// Inverse of [`Self::driver_value`].
    pub fn from_driver_value(value: u32) -> Option<Self> {
        Self::ALL.get(value as usize).copied()
    }

    /// The driver's constant name.
    pub fn driver_name(self) -> &'static str {
        match self {
            Self::None => "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
            Self::NanRequestZeroFma => "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Spec
// ---------------------------------------------------------------------------------------------

/// The arguments of `cuTensorMapEncodeTiled` / `cuTensorMapEncodeIm2col`, unvalidated, as they
/// appear in a launch manifest (see the module doc for spellings). Array order is the driver's:
/// index 0 is the innermost (contiguous) dimension.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorMapSpec {
    /// Which encoder: tiled (`cuTensorMapEncodeTiled`, default) or im2col.
    #[serde(default)]
    pub mode: TensorMapMode,
    /// `tensorDataType`: element type.
    pub data_type: TensorMapDataType,
    /// `tensorRank`: number of dimensions (tiled 1..=5, im2col 3..=5).
    pub rank: u32,
    /// `globalAddress`: byte address of element (0, .., 0) in global memory.
    pub global_address: u64,
    /// `globalDim`: elements along each of the `rank` dimensions.
    pub global_dim: Vec<u64>,
    /// `globalStrides`: byte stride of dimensions 1..rank (`rank - 1` entries; dimension 0 is
    /// dense at the element size).
    #[serde(default)]
    pub global_strides: Vec<u64>,
    /// `boxDim` (tiled only): elements traversed along each of the `rank` dimensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub box_dim: Vec<u32>,
    /// `elementStrides`: traversal step along each of the `rank` dimensions.
    pub element_strides: Vec<u32>,
    /// `interleave`: interleaved layout.
    #[serde(default)]
    pub interleave: TensorMapInterleave,
    /// `swizzle`: shared-memory bank swizzling pattern.
    #[serde(default)]
    pub swizzle: TensorMapSwizzle,
    /// `l2Promotion`: L2 fetch size.
    #[serde(default)]
    pub l2_promotion: TensorMapL2Promotion,
    /// `oobFill`: zero or OOB-NaN fill for out-of-bounds elements.
    #[serde(default)]
    pub oob_fill: TensorMapOobFill,
    /// `pixelBoxLowerCorner` (im2col only): `rank - 2` offsets, index `i` for `globalDim[i+1]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pixel_box_lower_corner: Vec<i32>,
    /// `pixelBoxUpperCorner` (im2col only): `rank - 2` offsets from the far corner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pixel_box_upper_corner: Vec<i32>,
    /// `channelsPerPixel` (im2col only): elements accessed along C (dimension 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub channels_per_pixel: u32,
    /// `pixelsPerColumn` (im2col only): pixels accessed in N(D)(H)W space.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pixels_per_column: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl TensorMapSpec {
    /// A tiled spec with `rank = global_dim.len()`, element strides all 1 and every enum at its
    /// default (NONE). Not validated.
    pub fn tiled(
        data_type: TensorMapDataType,
        global_address: u64,
        global_dim: Vec<u64>,
        global_strides: Vec<u64>,
        box_dim: Vec<u32>,
    ) -> Self {
        let rank = global_dim.len();
        TensorMapSpec {
            mode: TensorMapMode::Tiled,
            data_type,
            rank: rank as u32,
            global_address,
            global_dim,
            global_strides,
            box_dim,
            element_strides: vec![1; rank],
            interleave: TensorMapInterleave::None,
            swizzle: TensorMapSwizzle::None,
            l2_promotion: TensorMapL2Promotion::None,
            oob_fill: TensorMapOobFill::None,
            pixel_box_lower_corner: Vec::new(),
            pixel_box_upper_corner: Vec::new(),
            channels_per_pixel: 0,
            pixels_per_column: 0,
        }
    }

    /// An im2col spec with `rank = global_dim.len()`, element strides all 1 and every enum at
    /// its default (NONE). Not validated.
    #[allow(clippy::too_many_arguments)]
    pub fn im2col(
        data_type: TensorMapDataType,
        global_address: u64,
        global_dim: Vec<u64>,
        global_strides: Vec<u64>,
        pixel_box_lower_corner: Vec<i32>,
        pixel_box_upper_corner: Vec<i32>,
        channels_per_pixel: u32,
        pixels_per_column: u32,
    ) -> Self {
        let rank = global_dim.len();
        TensorMapSpec {
            mode: TensorMapMode::Im2col,
            data_type,
            rank: rank as u32,
            global_address,
            global_dim,
            global_strides,
            box_dim: Vec::new(),
            element_strides: vec![1; rank],
            interleave: TensorMapInterleave::None,
            swizzle: TensorMapSwizzle::None,
            l2_promotion: TensorMapL2Promotion::None,
            oob_fill: TensorMapOobFill::None,
            pixel_box_lower_corner,
            pixel_box_upper_corner,
            channels_per_pixel,
            pixels_per_column,
        }
    }

    /// Checks every rule of the module doc table, in that order; the first violation wins.
    pub fn validate(&self) -> Result<(), TensorMapError> {
        let api = self.mode.api();
        let im2col = self.mode == TensorMapMode::Im2col;

        // Sub-byte types exist in the driver enum but are sm_100+ only.
        // Source: PTX ISA 9.0 §5.5.1.1 Sub-byte Types; §9.7.9.26 tensormap.replace, Target ISA
        // notes: `.elemtype` values 13..15 only on sm_100a / sm_101a / sm_120a (not sm_90a).
        let Some(esize) = self.data_type.element_size() else {
            return Err(TensorMapError::new(
                "unsupported: sub-byte tensorDataType (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) needs sm_100+",
                cite::SUB_BYTE,
                format!("tensorDataType = {} on sm_90", self.data_type.driver_name()),
            ));
        };
        let esize = u64::from(esize);

        // 128B swizzle with 32B/64B atomicity is sm_100+ only.
        // Source: PTX ISA 9.0 §5.5.7 Table 14 (swizzle-atomicity); §9.7.9.26 tensormap.replace,
        // Target ISA notes: `.swizzle_atomicity` only on sm_100a / sm_101a / sm_120a.
        if self.swizzle.is_atomicity_mode() {
            return Err(TensorMapError::new(
                "unsupported: swizzle atomicity modes (128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B) need sm_100+",
                cite::ATOMICITY,
                format!("swizzle = {} on sm_90", self.swizzle.driver_name()),
            ));
        }

        // tensorRank.
        let rank = self.rank;
        if im2col {
            // Source: cuTensorMapEncodeIm2col: "tensorRank ... must be 3, 4, or 5";
            // PTX ISA §5.5.4: im2col supports 3D, 4D and 5D.
            if !(3..=5).contains(&rank) {
                return Err(TensorMapError::new(
                    "tensorRank must be in 3..=5 for im2col",
                    api,
                    format!("tensorRank = {rank}"),
                ));
            }
        } else {
            // Source: cuTensorMapEncodeTiled: "tensorRank must be non-zero and less than or
            // equal to the maximum supported dimensionality of 5".
            if !(1..=5).contains(&rank) {
                return Err(TensorMapError::new("tensorRank must be in 1..=5", api, format!("tensorRank = {rank}")));
            }
            // Source: cuTensorMapEncodeTiled: "If interleave is not CU_TENSOR_MAP_INTERLEAVE_NONE,
            // then tensorRank must additionally be greater than or equal to 3"; PTX ISA §5.5.6.
            if self.interleave != TensorMapInterleave::None && rank < 3 {
                return Err(TensorMapError::new(
                    "tensorRank must be >= 3 when interleave is not NONE",
                    api,
                    format!("tensorRank = {rank}, interleave = {}", self.interleave.driver_name()),
                ));
            }
        }
        let r = rank as usize;

        // Array lengths and mode-specific fields. Source: the driver's parameter list (globalDim:
        // tensorRank entries; globalStrides: tensorRank - 1; boxDim, elementStrides: tensorRank;
        // corners: the DHW dimensions, i.e. tensorRank - 2) — the driver reads bare pointers, so
        // a length mismatch is hopsync's own error.
        check_len("globalDim", self.global_dim.len(), r, "tensorRank")?;
        check_len("globalStrides", self.global_strides.len(), r - 1, "tensorRank - 1")?;
        check_len("elementStrides", self.element_strides.len(), r, "tensorRank")?;
        if im2col {
            if !self.box_dim.is_empty() {
                return Err(TensorMapError::new(
                    "im2col map must not set boxDim",
                    cite::HOPSYNC,
                    format!(
                        "boxDim = {:?} (im2col sizes the box with channelsPerPixel and pixelsPerColumn)",
                        self.box_dim
                    ),
                ));
            }
            check_len("pixelBoxLowerCorner", self.pixel_box_lower_corner.len(), r - 2, "tensorRank - 2")?;
            check_len("pixelBoxUpperCorner", self.pixel_box_upper_corner.len(), r - 2, "tensorRank - 2")?;
        } else {
            if !self.pixel_box_lower_corner.is_empty()
                || !self.pixel_box_upper_corner.is_empty()
                || self.channels_per_pixel != 0
                || self.pixels_per_column != 0
            {
                return Err(TensorMapError::new(
                    "tiled map must not set im2col fields",
                    cite::HOPSYNC,
                    format!(
                        "pixelBoxLowerCorner = {:?}, pixelBoxUpperCorner = {:?}, channelsPerPixel = {}, pixelsPerColumn = {}",
                        self.pixel_box_lower_corner,
                        self.pixel_box_upper_corner,
                        self.channels_per_pixel,
                        self.pixels_per_column
                    ),
                ));
            }
            check_len("boxDim", self.box_dim.len(), r, "tensorRank")?;
        }

        // globalAddress. Source: both encoders: "globalAddress ... must be 16 byte aligned ...
        // When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, globalAddress must be 32 byte aligned."
        if !self.global_address.is_multiple_of(16) {
            return Err(TensorMapError::new(
                "globalAddress must be 16-byte aligned",
                api,
                format!("globalAddress = {:#x}", self.global_address),
            ));
        }
        if self.interleave == TensorMapInterleave::B32 && !self.global_address.is_multiple_of(32) {
            return Err(TensorMapError::new(
                "globalAddress must be 32-byte aligned when interleave is 32B",
                api,
                format!("globalAddress = {:#x}", self.global_address),
            ));
        }

        // globalDim. Source: both encoders: "globalDim array ... must be non-zero and less than
        // or equal to 2^32".
        for (i, &d) in self.global_dim.iter().enumerate() {
            if d == 0 || d > 1u64 << 32 {
                return Err(TensorMapError::new(
                    format!("globalDim[{i}] must be in 1..=2^32"),
                    api,
                    format!("globalDim[{i}] = {d}"),
                ));
            }
        }

        // globalStrides. Source: both encoders: "globalStrides array ... in bytes, must be a
        // multiple of 16 and less than 2^40 ... When interleave is CU_TENSOR_MAP_INTERLEAVE_32B,
        // the strides must be a multiple of 32."
        for (i, &s) in self.global_strides.iter().enumerate() {
            if !s.is_multiple_of(16) {
                return Err(TensorMapError::new(
                    format!("globalStrides[{i}] must be a multiple of 16"),
                    api,
                    format!("globalStrides[{i}] = {s}"),
                ));
            }
            if s >= 1u64 << 40 {
                return Err(TensorMapError::new(
                    format!("globalStrides[{i}] must be less than 2^40"),
                    api,
                    format!("globalStrides[{i}] = {s}"),
                ));
            }
            if self.interleave == TensorMapInterleave::B32 && !s.is_multiple_of(32) {
                return Err(TensorMapError::new(
                    format!("globalStrides[{i}] must be a multiple of 32 when interleave is 32B"),
                    api,
                    format!("globalStrides[{i}] = {s}"),
                ));
            }
        }

        // Stride/dimension relation. Source: both encoders, globalStrides: "Each following
        // dimension specified includes previous dimension stride:
        //   globalStrides[0] = globalDim[0] * elementSizeInBytes(tensorDataType) + padding[0];
        //   globalStrides[i] = globalStrides[i - 1] * (globalDim[i] + padding[i]);
        //   assert(globalStrides[i] >= globalDim[i]);"
        // Padding is non-negative, so each stride covers the previous dimension. The doc's
        // assert follows from these (every stride is a non-zero multiple of 16). A dimension of
        // extent 1 is never stepped through, so its stride says nothing: CUTLASS encodes the
        // batch mode of a GEMM with L = 1 with stride 0 (cute/atom/copy_traits_sm90_tma.hpp
        // asserts only "multiple of 16B" and "max 2^40"), and its sm90 GEMMs run on silicon so.
        if r > 1 {
            let dense0 = self.global_dim[0] * esize;
            if self.global_strides[0] < dense0 {
                return Err(TensorMapError::new(
                    "globalStrides[0] must be >= globalDim[0] * elementSize",
                    api,
                    format!(
                        "globalStrides[0] = {} < globalDim[0] ({}) * elementSize ({esize}) = {dense0} (negative padding[0])",
                        self.global_strides[0], self.global_dim[0]
                    ),
                ));
            }
            for i in (1..r - 1).filter(|&i| self.global_dim[i + 1] != 1) {
                let covered = u128::from(self.global_strides[i - 1]) * u128::from(self.global_dim[i]);
                if u128::from(self.global_strides[i]) < covered {
                    return Err(TensorMapError::new(
                        format!("globalStrides[{i}] must be >= globalStrides[{}] * globalDim[{i}]", i - 1),
                        api,
                        format!(
                            "globalStrides[{i}] = {} < globalStrides[{}] ({}) * globalDim[{i}] ({}) = {covered} (negative padding[{i}])",
                            self.global_strides[i],
                            i - 1,
                            self.global_strides[i - 1],
                            self.global_dim[i]
                        ),
                    ));
                }
            }
        }

        if im2col {
            self.validate_im2col_box()?;
        } else {
            // boxDim. Source: cuTensorMapEncodeTiled: "boxDim array ... must be non-zero and
            // less than or equal to 256. ... When interleave is CU_TENSOR_MAP_INTERLEAVE_NONE,
            // { boxDim[0] * elementSizeInBytes( tensorDataType ) } must be a multiple of 16
            // bytes." (PTX ISA §5.5.3.1: "Size of each bounding Box must be a multiple of 16 bytes")
            for (i, &b) in self.box_dim.iter().enumerate() {
                if b == 0 || b > 256 {
                    return Err(TensorMapError::new(
                        format!("boxDim[{i}] must be in 1..=256"),
                        api,
                        format!("boxDim[{i}] = {b}"),
                    ));
                }
            }
            let inner = u64::from(self.box_dim[0]) * esize;
            if self.interleave == TensorMapInterleave::None && !inner.is_multiple_of(16) {
                return Err(TensorMapError::new(
                    "boxDim[0] * elementSize must be a multiple of 16 bytes when interleave is NONE",
                    api,
                    format!("boxDim[0] ({}) * elementSize ({esize}) = {inner} bytes", self.box_dim[0]),
                ));
            }
        }

        // elementStrides. Source: both encoders: "elementStrides array ... must be non-zero and
        // less than or equal to 8."
        for (i, &e) in self.element_strides.iter().enumerate() {
            if e == 0 || e > 8 {
                return Err(TensorMapError::new(
                    format!("elementStrides[{i}] must be in 1..=8"),
                    api,
                    format!("elementStrides[{i}] = {e}"),
                ));
            }
        }

        // The box's bytes. Not in the driver documentation; measured: the driver refuses a tiled
        // box above 233472 bytes (228 KiB, an SM's shared memory), counted with every
        // elementStrides entry, elementStrides[0] included (150 probes, threshold exact).
        if !im2col {
            let bytes = self.box_bytes(esize);
            if bytes > MAX_BOX_BYTES {
                return Err(TensorMapError::new(
                    format!("the box must be at most {MAX_BOX_BYTES} bytes (prod(ceil(boxDim[i] / elementStrides[i])) * elementSize)"),
                    cite::DRIVER_580,
                    format!("boxDim {:?}, elementStrides {:?}, elementSize {esize}: {bytes} bytes", self.box_dim, self.element_strides),
                ));
            }
        }

        // Interleave / swizzle. Source: both encoders, swizzle: "When interleave is
        // CU_TENSOR_MAP_INTERLEAVE_32B, swizzle must be CU_TENSOR_MAP_SWIZZLE_32B. Other
        // interleave modes can have any swizzling pattern."
        if self.interleave == TensorMapInterleave::B32 && self.swizzle != TensorMapSwizzle::B32 {
            return Err(TensorMapError::new(
                "swizzle must be 32B when interleave is 32B",
                api,
                format!("interleave = {}, swizzle = {}", self.interleave.driver_name(), self.swizzle.driver_name()),
            ));
        }

        // Swizzle span. Source: cuTensorMapEncodeTiled, interleave: "When interleave is
        // CU_TENSOR_MAP_INTERLEAVE_NONE and swizzle is not CU_TENSOR_MAP_SWIZZLE_NONE, the
        // bounding box inner dimension (computed as boxDim[0] multiplied by element size ...)
        // must be less than or equal to the swizzle size" (32B: <= 32, 64B: <= 64, 128B: <= 128);
        // cuTensorMapEncodeIm2col states the same with channelsPerPixel.
        if self.interleave == TensorMapInterleave::None {
            if let Some(span) = self.swizzle.span_bytes() {
                let (what, count) =
                    if im2col { ("channelsPerPixel", self.channels_per_pixel) } else { ("boxDim[0]", self.box_dim[0]) };
                let inner = u64::from(count) * esize;
                if inner > u64::from(span) {
                    return Err(TensorMapError::new(
                        format!("{what} * elementSize must be <= {span} bytes when swizzle is {span}B"),
                        api,
                        format!("{what} ({count}) * elementSize ({esize}) = {inner} bytes > {span}"),
                    ));
                }
            }
        }

        // oobFill. Source: both encoders, oobFill: "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        // can only be used when tensorDataType represents a floating-point data type".
        if self.oob_fill == TensorMapOobFill::NanRequestZeroFma && !self.data_type.is_float() {
            return Err(TensorMapError::new(
                "oobFill NAN_REQUEST_ZERO_FMA requires a floating-point tensorDataType",
                api,
                format!("tensorDataType = {}", self.data_type.driver_name()),
            ));
        }

        Ok(())
    }

    /// The bytes of a tiled box as the driver counts them against [`MAX_BOX_BYTES`]:
    /// `prod(ceil(boxDim[i] / elementStrides[i])) * elementSize`, elementStrides[0] included.
    fn box_bytes(&self, esize: u64) -> u64 {
        self.box_dim.iter().zip(&self.element_strides).map(|(&b, &e)| u64::from(b).div_ceil(u64::from(e))).product::<u64>() * esize
    }

    /// Im2col box rules (rank, lengths and globalDim already checked).
    fn validate_im2col_box(&self) -> Result<(), TensorMapError> {
        let api = cite::IM2COL;
        let rank = self.rank;

        // Corner ranges. Source: cuTensorMapEncodeIm2col pixelBoxLowerCorner /
        // pixelBoxUpperCorner: "When tensorRank is 3, one signed offset within range
        // [-32768, 32767] ... 4, two signed offsets each within range [-128, 127] ... 5, three
        // offsets each within range [-16, 15]"; PTX ISA §5.5.4.1 table ([-2^15, 2^15-1],
        // [-2^7, 2^7-1], [-2^4, 2^4-1]).
        let (lo, hi): (i32, i32) = match rank {
            3 => (-32768, 32767),
            4 => (-128, 127),
            _ => (-16, 15),
        };
        for (name, corner) in [
            ("pixelBoxLowerCorner", &self.pixel_box_lower_corner),
            ("pixelBoxUpperCorner", &self.pixel_box_upper_corner),
        ] {
            for (i, &c) in corner.iter().enumerate() {
                if c < lo || c > hi {
                    return Err(TensorMapError::new(
                        format!("{name}[{i}] must be in {lo}..={hi} for tensorRank {rank}"),
                        cite::IM2COL_CORNERS,
                        format!("{name}[{i}] = {c}"),
                    ));
                }
            }
        }

        // Non-zero area. Source: cuTensorMapEncodeIm2col: "The bounding box specified by
        // pixelBoxLowerCorner and pixelBoxUpperCorner must have non-zero area." Reading (module
        // doc): along spatial dimension globalDim[i+1] the box spans
        // globalDim[i+1] + upper[i] - lower[i] filter positions.
        for i in 0..self.pixel_box_lower_corner.len() {
            let lower = i64::from(self.pixel_box_lower_corner[i]);
            let upper = i64::from(self.pixel_box_upper_corner[i]);
            let dim = self.global_dim[i + 1] as i64;
            let extent = dim + upper - lower;
            if extent < 1 {
                return Err(TensorMapError::new(
                    "pixel bounding box must have non-zero area",
                    cite::IM2COL_CORNERS,
                    format!(
                        "spatial dimension {i} (globalDim[{}] = {dim}): globalDim + pixelBoxUpperCorner[{i}] ({upper}) - pixelBoxLowerCorner[{i}] ({lower}) = {extent}",
                        i + 1
                    ),
                ));
            }
        }

        // Source: cuTensorMapEncodeIm2col: "channelsPerPixel ... must be less than or equal to
        // 256"; zero is refused by hopsync (a box with no channels copies nothing).
        if self.channels_per_pixel == 0 || self.channels_per_pixel > 256 {
            return Err(TensorMapError::new(
                "channelsPerPixel must be in 1..=256",
                api,
                format!("channelsPerPixel = {}", self.channels_per_pixel),
            ));
        }
        // Not in the driver documentation; measured: the driver refuses a pixel whose channels
        // are not a multiple of 16 bytes (FLOAT32 channelsPerPixel 1, 2, 3, 5, 6 refused; 4, 12
        // accepted; 48 and 112 bytes accepted: not a power of two).
        let esize = self.data_type.element_size().unwrap_or(1);
        let pixel = self.channels_per_pixel * esize;
        if pixel % 16 != 0 {
            return Err(TensorMapError::new(
                "channelsPerPixel * elementSize must be a multiple of 16 bytes",
                cite::DRIVER_580,
                format!("channelsPerPixel ({}) * elementSize ({esize}) = {pixel} bytes", self.channels_per_pixel),
            ));
        }
        // Source: cuTensorMapEncodeIm2col: "pixelsPerColumn ... must be less than or equal to
        // 1024"; zero is refused by hopsync.
        if self.pixels_per_column == 0 || self.pixels_per_column > 1024 {
            return Err(TensorMapError::new(
                "pixelsPerColumn must be in 1..=1024",
                api,
                format!("pixelsPerColumn = {}", self.pixels_per_column),
            ));
        }
        Ok(())
    }
}

fn check_len(name: &str, got: usize, want: usize, want_name: &str) -> Result<(), TensorMapError> {
    if got == want {
        Ok(())
    } else {
        Err(TensorMapError::new(
            format!("{name} must have {want_name} entries"),
            cite::HOPSYNC,
            format!("{name} has {got} entries, {want_name} = {want}"),
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Encoders mirroring the driver
// ---------------------------------------------------------------------------------------------

/// Mirrors `cuTensorMapEncodeTiled` (same parameters, minus the output pointer; `tensorRank` is
/// explicit and the arrays must have the lengths it implies).
#[allow(clippy::too_many_arguments)]
pub fn tensor_map_encode_tiled(
    tensor_data_type: TensorMapDataType,
    tensor_rank: u32,
    global_address: u64,
    global_dim: &[u64],
    global_strides: &[u64],
    box_dim: &[u32],
    element_strides: &[u32],
    interleave: TensorMapInterleave,
    swizzle: TensorMapSwizzle,
    l2_promotion: TensorMapL2Promotion,
    oob_fill: TensorMapOobFill,
) -> Result<TensorMap, TensorMapError> {
    TensorMap::new(TensorMapSpec {
        mode: TensorMapMode::Tiled,
        data_type: tensor_data_type,
        rank: tensor_rank,
        global_address,
        global_dim: global_dim.to_vec(),
        global_strides: global_strides.to_vec(),
        box_dim: box_dim.to_vec(),
        element_strides: element_strides.to_vec(),
        interleave,
        swizzle,
        l2_promotion,
        oob_fill,
        pixel_box_lower_corner: Vec::new(),
        pixel_box_upper_corner: Vec::new(),
        channels_per_pixel: 0,
        pixels_per_column: 0,
    })
}

/// Mirrors `cuTensorMapEncodeIm2col` (same parameters and order, minus the output pointer).
#[allow(clippy::too_many_arguments)]
pub fn tensor_map_encode_im2col(
    tensor_data_type: TensorMapDataType,
    tensor_rank: u32,
    global_address: u64,
    global_dim: &[u64],
    global_strides: &[u64],
    pixel_box_lower_corner: &[i32],
    pixel_box_upper_corner: &[i32],
    channels_per_pixel: u32,
    pixels_per_column: u32,
    element_strides: &[u32],
    interleave: TensorMapInterleave,
    swizzle: TensorMapSwizzle,
    l2_promotion: TensorMapL2Promotion,
    oob_fill: TensorMapOobFill,
) -> Result<TensorMap, TensorMapError> {
    TensorMap::new(TensorMapSpec {
        mode: TensorMapMode::Im2col,
        data_type: tensor_data_type,
        rank: tensor_rank,
        global_address,
        global_dim: global_dim.to_vec(),
        global_strides: global_strides.to_vec(),
        box_dim: Vec::new(),
        element_strides: element_strides.to_vec(),
        interleave,
        swizzle,
        l2_promotion,
        oob_fill,
        pixel_box_lower_corner: pixel_box_lower_corner.to_vec(),
        pixel_box_upper_corner: pixel_box_upper_corner.to_vec(),
        channels_per_pixel,
        pixels_per_column,
    })
}

// ---------------------------------------------------------------------------------------------
// Validated map, descriptor image, address functions
// ---------------------------------------------------------------------------------------------

/// A validated tensor map: a [`TensorMapSpec`] that passed every rule. Serializes as its spec;
/// deserializing validates (so a manifest field of this type refuses bad maps with the rule).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "TensorMapSpec", into = "TensorMapSpec")]
pub struct TensorMap {
    spec: TensorMapSpec,
}

impl TryFrom<TensorMapSpec> for TensorMap {
    type Error = TensorMapError;

    fn try_from(spec: TensorMapSpec) -> Result<Self, Self::Error> {
        TensorMap::new(spec)
    }
}

impl From<TensorMap> for TensorMapSpec {
    fn from(map: TensorMap) -> Self {
        map.spec
    }
}

/// A field of the descriptor image: `width` bits starting at bit `at`.
#[derive(Clone, Copy)]
struct Field {
    at: usize,
    width: usize,
}

const fn field(at: usize, width: usize) -> Field {
    Field { at, width }
}

const F_VERSION: Field = field(0, 8);
const F_MODE: Field = field(8, 1);
const F_RANK_M1: Field = field(9, 3);
const F_DATA_TYPE: Field = field(12, 4);
const F_INTERLEAVE: Field = field(16, 2);
const F_SWIZZLE: Field = field(18, 3);
const F_L2_PROMOTION: Field = field(21, 2);
const F_OOB_FILL: Field = field(23, 1);
const F_GLOBAL_ADDRESS: Field = field(64, 64);
const F_CHANNELS_M1: Field = field(608, 8);
const F_PIXELS_M1: Field = field(616, 10);

const fn f_global_dim_m1(i: usize) -> Field {
    field(128 + 32 * i, 32)
}
const fn f_global_stride(i: usize) -> Field {
    field(288 + 40 * i, 40)
}
const fn f_box_dim_m1(i: usize) -> Field {
    field(448 + 8 * i, 8)
}
const fn f_element_stride_m1(i: usize) -> Field {
    field(488 + 3 * i, 3)
}
const fn f_lower_corner(i: usize) -> Field {
    field(512 + 16 * i, 16)
}
const fn f_upper_corner(i: usize) -> Field {
    field(560 + 16 * i, 16)
}

type Image = BitArray<[u8; TENSOR_MAP_BYTES], Lsb0>;

fn put(img: &mut Image, f: Field, value: u64) {
    debug_assert!(f.width == 64 || value >> f.width == 0, "value {value:#x} wider than {} bits", f.width);
    img[f.at..f.at + f.width].store_le::<u64>(value);
}

fn get(img: &Image, f: Field) -> u64 {
    img[f.at..f.at + f.width].load_le::<u64>()
}

fn image_error(rule: &str, message: String) -> TensorMapError {
    TensorMapError::new(rule, cite::IMAGE, message)
}

impl TensorMap {
    /// Validates `spec` (every rule in the module doc) and wraps it.
    pub fn new(spec: TensorMapSpec) -> Result<Self, TensorMapError> {
        spec.validate()?;
        Ok(TensorMap { spec })
    }

    /// The validated spec.
    pub fn spec(&self) -> &TensorMapSpec {
        &self.spec
    }

    /// Unwraps the validated spec.
    pub fn into_spec(self) -> TensorMapSpec {
        self.spec
    }

    /// Tiled or im2col.
    pub fn mode(&self) -> TensorMapMode {
        self.spec.mode
    }

    /// `tensorRank`.
    pub fn rank(&self) -> usize {
        self.spec.rank as usize
    }

    /// Element size in bytes (always defined: sub-byte types never validate on sm_90).
    pub fn element_size(&self) -> u32 {
        self.spec.data_type.element_size().expect("validated TensorMap never holds a sub-byte data type")
    }

    /// One element of out-of-bounds fill for loads (\[DRV\] oobFill; \[PTX\] §5.5.3.3): zero, or
    /// NaN for float types with `NAN_REQUEST_ZERO_FMA`. The NaN is the 16-bit pattern 0x7ff7
    /// repeated over the element (f16/bf16 0x7ff7, f32 0x7ff77ff7, f64 0x7ff77ff77ff77ff7), as an
    /// H200 writes it (firmware/programs/tma/oob_nan_fill.ptx on silicon); each is a quiet NaN of
    /// its type. The golden model and the RTL TmaEngine's reference both use this.
    pub fn oob_fill_element(&self) -> Vec<u8> {
        let es = self.element_size() as usize;
        if self.spec.oob_fill == TensorMapOobFill::NanRequestZeroFma && self.spec.data_type.is_float() {
            [0xf7, 0x7f].iter().copied().cycle().take(es).collect()
        } else {
            vec![0; es]
        }
    }

    /// Mirrors `cuTensorMapReplaceAddress`: the new address "must follow previous alignment
    /// requirements" (\[DRV\] cuTensorMapReplaceAddress), i.e. the globalAddress rules.
    pub fn replace_address(&mut self, global_address: u64) -> Result<(), TensorMapError> {
        let mut spec = self.spec.clone();
        spec.global_address = global_address;
        spec.validate()?;
        self.spec = spec;
        Ok(())
    }

    /// The 128-byte descriptor image (hopsync layout v1, see the module doc).
    pub fn encode(&self) -> [u8; TENSOR_MAP_BYTES] {
        let s = &self.spec;
        let mut img: Image = BitArray::ZERO;
        put(&mut img, F_VERSION, u64::from(TENSOR_MAP_IMAGE_VERSION));
        put(&mut img, F_MODE, u64::from(s.mode == TensorMapMode::Im2col));
        put(&mut img, F_RANK_M1, u64::from(s.rank - 1));
        put(&mut img, F_DATA_TYPE, u64::from(s.data_type.driver_value()));
        put(&mut img, F_INTERLEAVE, u64::from(s.interleave.driver_value()));
        put(&mut img, F_SWIZZLE, u64::from(s.swizzle.driver_value()));
        put(&mut img, F_L2_PROMOTION, u64::from(s.l2_promotion.driver_value()));
        put(&mut img, F_OOB_FILL, u64::from(s.oob_fill.driver_value()));
        put(&mut img, F_GLOBAL_ADDRESS, s.global_address);
        for (i, &d) in s.global_dim.iter().enumerate() {
            put(&mut img, f_global_dim_m1(i), d - 1);
        }
        for (i, &st) in s.global_strides.iter().enumerate() {
            put(&mut img, f_global_stride(i), st);
        }
        for (i, &b) in s.box_dim.iter().enumerate() {
            put(&mut img, f_box_dim_m1(i), u64::from(b - 1));
        }
        for (i, &e) in s.element_strides.iter().enumerate() {
            put(&mut img, f_element_stride_m1(i), u64::from(e - 1));
        }
        for (i, &c) in s.pixel_box_lower_corner.iter().enumerate() {
            put(&mut img, f_lower_corner(i), u64::from(c as i16 as u16));
        }
        for (i, &c) in s.pixel_box_upper_corner.iter().enumerate() {
            put(&mut img, f_upper_corner(i), u64::from(c as i16 as u16));
        }
        if s.mode == TensorMapMode::Im2col {
            put(&mut img, F_CHANNELS_M1, u64::from(s.channels_per_pixel - 1));
            put(&mut img, F_PIXELS_M1, u64::from(s.pixels_per_column - 1));
        }
        img.into_inner()
    }

    /// Decodes a descriptor image written by [`Self::encode`]; the result is validated and
    /// re-encodes to exactly `image`.
    pub fn decode(image: &[u8; TENSOR_MAP_BYTES]) -> Result<Self, TensorMapError> {
        let img: Image = BitArray::new(*image);
        let version = get(&img, F_VERSION);
        if version != u64::from(TENSOR_MAP_IMAGE_VERSION) {
            return Err(image_error("descriptor: image format version must be 1", format!("version = {version}")));
        }
        let mode = if get(&img, F_MODE) == 0 { TensorMapMode::Tiled } else { TensorMapMode::Im2col };
        let rank = get(&img, F_RANK_M1) as u32 + 1;
        let dt = get(&img, F_DATA_TYPE) as u32;
        let data_type = TensorMapDataType::from_driver_value(dt).ok_or_else(|| {
            image_error("descriptor: tensorDataType must be a CUtensorMapDataType value", format!("value = {dt}"))
        })?;
        let il = get(&img, F_INTERLEAVE) as u32;
        let interleave = TensorMapInterleave::from_driver_value(il).ok_or_else(|| {
            image_error("descriptor: interleave must be a CUtensorMapInterleave value", format!("value = {il}"))
        })?;
        let sw = get(&img, F_SWIZZLE) as u32;
        let swizzle = TensorMapSwizzle::from_driver_value(sw).ok_or_else(|| {
            image_error("descriptor: swizzle must be a CUtensorMapSwizzle value", format!("value = {sw}"))
        })?;
        let l2 = get(&img, F_L2_PROMOTION) as u32;
        let l2_promotion = TensorMapL2Promotion::from_driver_value(l2).ok_or_else(|| {
            image_error("descriptor: l2Promotion must be a CUtensorMapL2promotion value", format!("value = {l2}"))
        })?;
        let oob = get(&img, F_OOB_FILL) as u32;
        let oob_fill = TensorMapOobFill::from_driver_value(oob).ok_or_else(|| {
            image_error("descriptor: oobFill must be a CUtensorMapFloatOOBfill value", format!("value = {oob}"))
        })?;

        // Rank 6..=8 fits the 3-bit field; read at most 5 entries and let validation name it.
        let r = (rank as usize).min(TENSOR_MAP_MAX_RANK);
        let im2col = mode == TensorMapMode::Im2col;
        let global_dim = (0..r).map(|i| get(&img, f_global_dim_m1(i)) + 1).collect();
        let global_strides = (0..r.saturating_sub(1)).map(|i| get(&img, f_global_stride(i))).collect();
        let element_strides = (0..r).map(|i| get(&img, f_element_stride_m1(i)) as u32 + 1).collect();
        let (box_dim, lower, upper, channels_per_pixel, pixels_per_column) = if im2col {
            let n = r.saturating_sub(2);
            (
                Vec::new(),
                (0..n).map(|i| i32::from(get(&img, f_lower_corner(i)) as u16 as i16)).collect(),
                (0..n).map(|i| i32::from(get(&img, f_upper_corner(i)) as u16 as i16)).collect(),
                get(&img, F_CHANNELS_M1) as u32 + 1,
                get(&img, F_PIXELS_M1) as u32 + 1,
            )
        } else {
            ((0..r).map(|i| get(&img, f_box_dim_m1(i)) as u32 + 1).collect(), Vec::new(), Vec::new(), 0, 0)
        };
        let map = TensorMap::new(TensorMapSpec {
            mode,
            data_type,
            rank,
            global_address: get(&img, F_GLOBAL_ADDRESS),
            global_dim,
            global_strides,
            box_dim,
            element_strides,
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
            pixel_box_lower_corner: lower,
            pixel_box_upper_corner: upper,
            channels_per_pixel,
            pixels_per_column,
        })?;
        if map.encode() != *image {
            return Err(image_error(
                "descriptor: reserved and unused bits must be zero",
                "the image differs from the canonical encoding of the map it decodes to".to_string(),
            ));
        }
        Ok(map)
    }

    /// Every element of a tiled box at `coords`, in the box's dense shared-memory order: its
    /// byte offset in the box and its global address (None: out of bounds). Dimension i steps by
    /// `elementStrides[i]` (dimension 0 by 1: silicon ignores elementStrides\[0\],
    /// firmware/programs/tma/element_stride0.ptx), `ceil(boxDim[i] / elementStrides[i])` times
    /// (\[PTX\] §5.5.3). The golden model and the TmaEngine's test reference both use it.
    pub fn tiled_box_elements(&self, coords: &[i64]) -> Vec<(u64, Option<u64>)> {
        self.tiled_box_walk(coords).into_iter().map(|e| (e.offset, e.global)).collect()
    }

    /// [`Self::tiled_box_elements`] with each element's tensor coordinates.
    pub fn tiled_box_walk(&self, coords: &[i64]) -> Vec<BoxElement> {
        let s = &self.spec;
        let r = self.rank();
        let es = self.element_size() as u64;
        let stride = |i: usize| if i == 0 { 1 } else { s.element_strides[i] as i64 };
        let n: Vec<u64> = (0..r).map(|i| (s.box_dim[i] as u64).div_ceil(stride(i) as u64)).collect();
        let total: u64 = n.iter().product();
        let mut k = vec![0u64; r];
        let mut out = Vec::with_capacity(total as usize);
        for idx in 0..total {
            let x: Vec<i64> = (0..r).map(|i| coords[i] + k[i] as i64 * stride(i)).collect();
            out.push(BoxElement { offset: idx * es, global: self.global_byte_address(&x), coords: x });
            for i in 0..r {
                k[i] += 1;
                if k[i] < n[i] {
                    break;
                }
                k[i] = 0;
            }
        }
        out
    }

    /// Every element of an im2col box (\[PTX\] §5.5.4) at `coords` (channel, spatial dims in W,
    /// H, D order, N) with the instruction's im2col `offsets` (one per spatial dimension), in the
    /// box's dense shared-memory order: its byte offset in the box and its global address (None:
    /// out of bounds). `pixelsPerColumn` pixels of `channelsPerPixel` channels from `coords[0]`;
    /// the first pixel is at the spatial coordinates, each next one steps W by
    /// `elementStrides[1]` and wraps from `globalDim[i] - 1 + pixelBoxUpperCorner[i-1]` back to
    /// `pixelBoxLowerCorner[i-1]`, carrying into H, then D (each by its elementStrides), then N
    /// (by 1, never wrapping); an element is read at the pixel plus the im2col offsets. The
    /// golden model and the TmaEngine's test reference both use it.
    pub fn im2col_box_elements(&self, coords: &[i64], offsets: &[i64]) -> Vec<(u64, Option<u64>)> {
        self.im2col_box_walk(coords, offsets).into_iter().map(|e| (e.offset, e.global)).collect()
    }

    /// [`Self::im2col_box_elements`] with each element's tensor coordinates (offsets applied).
    pub fn im2col_box_walk(&self, coords: &[i64], offsets: &[i64]) -> Vec<BoxElement> {
        let s = &self.spec;
        let r = self.rank();
        let es = self.element_size() as u64;
        let cpp = s.channels_per_pixel as u64;
        let lo: Vec<i64> = (1..r - 1).map(|i| s.pixel_box_lower_corner[i - 1] as i64).collect();
        let hi: Vec<i64> = (1..r - 1).map(|i| s.global_dim[i] as i64 - 1 + s.pixel_box_upper_corner[i - 1] as i64).collect();
        let mut pos: Vec<i64> = coords[1..r].to_vec(); // spatial dims, then N
        let mut out = Vec::with_capacity((s.pixels_per_column as u64 * cpp) as usize);
        for p in 0..s.pixels_per_column as u64 {
            for j in 0..cpp {
                let mut x = Vec::with_capacity(r);
                x.push(coords[0] + j as i64);
                for d in 0..r - 2 {
                    x.push(pos[d] + offsets[d]);
                }
                x.push(pos[r - 2]);
                out.push(BoxElement { offset: (p * cpp + j) * es, global: self.global_byte_address(&x), coords: x });
            }
            // next pixel: W, then H, then D, wrapping inside the bounding box, then N
            let mut d = 0;
            loop {
                if d == r - 2 {
                    pos[d] += 1;
                    break;
                }
                pos[d] += s.element_strides[d + 1] as i64;
                if pos[d] <= hi[d] {
                    break;
                }
                pos[d] = lo[d];
                d += 1;
            }
        }
        out
    }

    /// Every element of the box at `coords` (tiled or im2col by the map's mode; `offsets` are
    /// the im2col offsets, unused in tile mode): [`Self::tiled_box_elements`],
    /// [`Self::im2col_box_elements`].
    pub fn box_elements(&self, coords: &[i64], offsets: &[i64]) -> Vec<(u64, Option<u64>)> {
        match self.spec.mode {
            TensorMapMode::Tiled => self.tiled_box_elements(coords),
            TensorMapMode::Im2col => self.im2col_box_elements(coords, offsets),
        }
    }

    /// [`Self::box_elements`] with each element's tensor coordinates (`hopsync tma-layout`).
    pub fn box_walk(&self, coords: &[i64], offsets: &[i64]) -> Vec<BoxElement> {
        match self.spec.mode {
            TensorMapMode::Tiled => self.tiled_box_walk(coords),
            TensorMapMode::Im2col => self.im2col_box_walk(coords, offsets),
        }
    }

    /// Byte address in global memory of the element at tensor coordinates `coords`
    /// (`coords[0]` innermost): `globalAddress + coords[0] * elementSize +
    /// sum_{i>=1} coords[i] * globalStrides[i-1]` (\[DRV\] globalStrides; \[PTX\] §5.5.1 "tensor
    /// stride"). `None` when `coords` does not have `rank` entries, when any coordinate is
    /// outside `0..globalDim[i]` (the element is out of bounds, \[PTX\] §5.5.3.3), or when the
    /// address overflows 64 bits.
    pub fn global_byte_address(&self, coords: &[i64]) -> Option<u64> {
        let s = &self.spec;
        if coords.len() != self.rank() {
            return None;
        }
        let mut addr = s.global_address;
        for (i, &c) in coords.iter().enumerate() {
            let c = u64::try_from(c).ok()?;
            if c >= s.global_dim[i] {
                return None;
            }
            let stride = if i == 0 { u64::from(self.element_size()) } else { s.global_strides[i - 1] };
            addr = addr.checked_add(c.checked_mul(stride)?)?;
        }
        Some(addr)
    }

    /// Shared-memory byte offset that TMA uses for `byte_offset` of the dense box under this
    /// map's swizzle (see [`swizzle_offset`]).
    pub fn swizzle_offset(&self, byte_offset: u64) -> u64 {
        swizzle_offset(self.spec.swizzle, byte_offset).expect("validated TensorMap only holds sm_90 swizzle modes")
    }

    /// Bytes one full box occupies in shared memory (and so the `complete_tx` byte count of a
    /// load of it, out-of-bounds fill included).
    ///
    /// Tiled: `elementSize * prod_i ceil(boxDim[i] / elementStrides[i])` (\[DRV\] elementStrides:
    /// "TMA loads `ceil(boxDim[i] / elementStrides[i])` number of elements along i-th
    /// dimension"), with `elementStrides[0]` taken as 1 when interleave is NONE (\[DRV\]: "the
    /// first element of this array is ignored").
    /// Im2col: `elementSize * channelsPerPixel * pixelsPerColumn` (\[PTX\] §5.5.4.2: the traversal
    /// stride "does not impact the total number of elements").
    pub fn smem_box_bytes(&self) -> u64 {
        let s = &self.spec;
        let esize = u64::from(self.element_size());
        match s.mode {
            TensorMapMode::Tiled => {
                s.box_dim
                    .iter()
                    .zip(&s.element_strides)
                    .enumerate()
                    .map(|(i, (&b, &e))| {
                        let e = if i == 0 && s.interleave == TensorMapInterleave::None { 1 } else { e };
                        u64::from(b.div_ceil(e))
                    })
                    .product::<u64>()
                    * esize
            }
            TensorMapMode::Im2col => esize * u64::from(s.channels_per_pixel) * u64::from(s.pixels_per_column),
        }
    }
}

/// One element of a box, in the box's dense shared-memory order ([`TensorMap::box_walk`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxElement {
    /// Byte offset in the dense box (before the swizzle).
    pub offset: u64,
    /// Its tensor coordinates (`coords[0]` innermost).
    pub coords: Vec<i64>,
    /// Its global byte address (None: out of bounds, filled).
    pub global: Option<u64>,
}

/// Maps a byte offset in the dense shared-memory box (from a base aligned to the pattern's
/// repeat, or an absolute shared-memory address) to the swizzled byte offset (\[PTX\] §5.5.7
/// tables; \[CUTE\] `Swizzle<B,4,3>` with B = 1 for 32B, 2 for 64B, 3 for 128B, per
/// `get_tma_swizzle_bits`): the 16-byte chunk index (bits 4..4+B) is XOR'd with the 128-byte line
/// index (bits 7..7+B). NONE is the identity. The sm_100 atomicity modes are refused.
pub fn swizzle_offset(swizzle: TensorMapSwizzle, byte_offset: u64) -> Result<u64, TensorMapError> {
    let b = match swizzle {
        TensorMapSwizzle::None => return Ok(byte_offset),
        TensorMapSwizzle::B32 => 1,
        TensorMapSwizzle::B64 => 2,
        TensorMapSwizzle::B128 => 3,
        TensorMapSwizzle::B128Atom32B
        | TensorMapSwizzle::B128Atom32BFlip8B
        | TensorMapSwizzle::B128Atom64B => {
            return Err(TensorMapError::new(
                "unsupported: swizzle atomicity modes (128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B) need sm_100+",
                cite::ATOMICITY,
                format!("swizzle = {}", swizzle.driver_name()),
            ))
        }
    };
    // CuTe Swizzle<B, M=4, S=3>: yyy_msk = ((1 << B) - 1) << (M + S); offset ^ ((offset & yyy_msk) >> S).
    let yyy_mask = ((1u64 << b) - 1) << 7;
    Ok(byte_offset ^ ((byte_offset & yyy_mask) >> 3))
}

/// A field `tensormap.replace` writes (\[PTX\] §9.7.9.26: `.field1`, `.field2`, `.field3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceField {
    /// `.global_address` (b64).
    GlobalAddress,
    /// `.rank`: the value is rank - 1.
    Rank,
    /// `.box_dim[ord]`.
    BoxDim,
    /// `.global_dim[ord]`.
    GlobalDim,
    /// `.global_stride[ord]` (b64, bytes; ord 0 is the stride of dimension 1).
    GlobalStride,
    /// `.element_stride[ord]`.
    ElementStride,
    /// `.elemtype` (the \[PTX\] numbering of Table "tensormap.replace new_val").
    Elemtype,
    /// `.interleave_layout`.
    InterleaveLayout,
    /// `.swizzle_mode`.
    SwizzleMode,
    /// `.swizzle_atomicity` (sm_100+).
    SwizzleAtomicity,
    /// `.fill_mode`.
    FillMode,
}

/// `tensormap.replace` on a descriptor image: writes `new_val` into `field` (entry `ord` of the
/// per-dimension fields) of the hopsync layout. The image is not validated here (a kernel replaces
/// several fields in turn); the TMA instruction that uses it decodes and validates it.
/// `.elemtype` values follow \[PTX\]'s numbering (0 u8 .. 7 f32, 8 f32.ftz, 9 f64, 10 bf16, 11
/// tf32, 12 tf32.ftz), stored as the driver's.
pub fn replace_field(image: &mut [u8; TENSOR_MAP_BYTES], field: ReplaceField, ord: usize, new_val: u64) -> Result<(), TensorMapError> {
    let bad = |what: &str| Err(TensorMapError::new("tensormap.replace: new_val out of range", cite::REPLACE, format!("{what} = {new_val} (ord {ord})")));
    let per_dim = matches!(field, ReplaceField::BoxDim | ReplaceField::GlobalDim | ReplaceField::ElementStride);
    if (per_dim && ord >= TENSOR_MAP_MAX_RANK) || (field == ReplaceField::GlobalStride && ord >= TENSOR_MAP_MAX_RANK - 1) {
        return Err(TensorMapError::new("tensormap.replace: ord beyond the largest rank", cite::REPLACE, format!("ord = {ord}")));
    }
    let (f, v) = match field {
        ReplaceField::GlobalAddress => (F_GLOBAL_ADDRESS, new_val),
        ReplaceField::Rank if new_val < TENSOR_MAP_MAX_RANK as u64 => (F_RANK_M1, new_val),
        ReplaceField::BoxDim if (1..=256).contains(&new_val) => (f_box_dim_m1(ord), new_val - 1),
        ReplaceField::GlobalDim if (1..=1 << 32).contains(&new_val) => (f_global_dim_m1(ord), new_val - 1),
        ReplaceField::GlobalStride if new_val < 1 << 40 => (f_global_stride(ord), new_val),
        ReplaceField::ElementStride if (1..=8).contains(&new_val) => (f_element_stride_m1(ord), new_val - 1),
        ReplaceField::Elemtype => {
            let driver = match new_val {
                0..=7 => new_val,
                8 => 10,
                9 => 8,
                10 => 9,
                11 | 12 => new_val,
                _ => return bad("elemtype (sub-byte types are sm_100+)"),
            };
            (F_DATA_TYPE, driver)
        }
        ReplaceField::InterleaveLayout if new_val <= 2 => (F_INTERLEAVE, new_val),
        ReplaceField::SwizzleMode if new_val <= 3 => (F_SWIZZLE, new_val),
        ReplaceField::FillMode if new_val <= 1 => (F_OOB_FILL, new_val),
        ReplaceField::SwizzleAtomicity => {
            return Err(TensorMapError::new("unsupported: swizzle atomicity modes (128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B) need sm_100+", cite::ATOMICITY, "tensormap.replace.swizzle_atomicity"))
        }
        _ => return bad(&format!("{field:?}")),
    };
    let mut img: Image = BitArray::new(*image);
    put(&mut img, f, v);
    *image = img.into_inner();
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use TensorMapDataType as Dt;

    #[test]
    fn tensormap_replace_rewrites_one_field() {
        let m = assert_ok(&seed_tiled());
        let mut img = m.encode();
        replace_field(&mut img, ReplaceField::GlobalAddress, 0, 0x2_0000).unwrap();
        replace_field(&mut img, ReplaceField::GlobalDim, 1, 16).unwrap();
        replace_field(&mut img, ReplaceField::BoxDim, 0, 32).unwrap();
        replace_field(&mut img, ReplaceField::GlobalStride, 0, 512).unwrap();
        // PTX numbers .bf16 10 (the driver 9) and .f32.ftz 8 (the driver 10).
        replace_field(&mut img, ReplaceField::Elemtype, 0, 10).unwrap();
        let d = TensorMap::decode(&img).unwrap();
        let s = d.spec();
        assert_eq!((s.global_address, s.global_dim.clone(), s.box_dim.clone(), s.global_strides.clone()), (0x2_0000, vec![64, 16], vec![32, 8], vec![512]));
        assert_eq!(s.data_type, Dt::Bfloat16);
        replace_field(&mut img, ReplaceField::Elemtype, 0, 8).unwrap();
        assert_eq!(TensorMap::decode(&img).unwrap().spec().data_type, Dt::Float32Ftz);
        // Out-of-range values and ords are errors; swizzle atomicity is sm_100+.
        assert!(replace_field(&mut img, ReplaceField::BoxDim, 0, 0).is_err());
        assert!(replace_field(&mut img, ReplaceField::GlobalStride, 4, 16).is_err());
        assert!(replace_field(&mut img, ReplaceField::SwizzleAtomicity, 0, 1).unwrap_err().rule.starts_with("unsupported:"));
    }

    // ---- helpers ------------------------------------------------------------------------

    /// The seed's 2-D INT32 example (shared/seeds/001, "TMA拷贝多维数据"): GMEM 64 x 32
    /// elements, SMEM box 16 x 8, element strides {1, 1}, everything else NONE.
    fn seed_tiled() -> TensorMapSpec {
        TensorMapSpec::tiled(Dt::Int32, 0x1_0000, vec![64, 32], vec![64 * 4], vec![16, 8])
    }

    /// A 5-D float16 tiled map (rank 5 so interleave modes are allowed).
    fn tiled5() -> TensorMapSpec {
        // dims: 64 x 10 x 10 x 4 x 2, dense strides.
        TensorMapSpec::tiled(
            Dt::Float16,
            0x2000,
            vec![64, 10, 10, 4, 2],
            vec![128, 1280, 12800, 51200],
            vec![64, 4, 4, 2, 1],
        )
    }

    /// A 4-D (NHWC) float16 im2col map: N=2, H=10, W=10, C=64.
    fn im2col4() -> TensorMapSpec {
        TensorMapSpec::im2col(
            Dt::Float16,
            0x4000,
            vec![64, 10, 10, 2],
            vec![128, 1280, 12800],
            vec![-1, -1],
            vec![-1, -1],
            64,
            128,
        )
    }

    fn rule_of(spec: &TensorMapSpec) -> String {
        match TensorMap::new(spec.clone()) {
            Ok(_) => panic!("expected a violation, map was accepted: {spec:?}"),
            Err(e) => {
                assert!(!e.message.is_empty() && !e.reference.is_empty(), "{e:?}");
                e.rule
            }
        }
    }

    fn assert_rule(spec: &TensorMapSpec, rule: &str) {
        assert_eq!(rule_of(spec), rule, "spec: {spec:?}");
    }

    fn assert_ok(spec: &TensorMapSpec) -> TensorMap {
        TensorMap::new(spec.clone()).unwrap_or_else(|e| panic!("rejected: {e}\nspec: {spec:?}"))
    }

    /// Fixed-seed xorshift64 (Marsaglia 13/7/17).
    struct XorShift64(u64);

    impl XorShift64 {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn range_i32(&mut self, lo: i32, hi: i32) -> i32 {
            lo + self.below((hi - lo + 1) as u64) as i32
        }
        fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
            xs[self.below(xs.len() as u64) as usize]
        }
    }

    const SM90_TYPES: [Dt; 13] = [
        Dt::Uint8,
        Dt::Uint16,
        Dt::Uint32,
        Dt::Int32,
        Dt::Uint64,
        Dt::Int64,
        Dt::Float16,
        Dt::Float32,
        Dt::Float64,
        Dt::Bfloat16,
        Dt::Float32Ftz,
        Dt::Tfloat32,
        Dt::Tfloat32Ftz,
    ];

    fn round_up(v: u64, a: u64) -> u64 {
        v.div_ceil(a) * a
    }

    /// A random map that satisfies every rule (retries internally).
    fn random_valid_spec(rng: &mut XorShift64) -> TensorMapSpec {
        'retry: loop {
            let mode = if rng.below(3) == 0 { TensorMapMode::Im2col } else { TensorMapMode::Tiled };
            let data_type = rng.pick(&SM90_TYPES);
            let esize = u64::from(data_type.element_size().unwrap());
            let rank = (if mode == TensorMapMode::Im2col { 3 + rng.below(3) } else { 1 + rng.below(5) }) as usize;
            let interleave = if rank >= 3 {
                rng.pick(&[
                    TensorMapInterleave::None,
                    TensorMapInterleave::None,
                    TensorMapInterleave::B16,
                    TensorMapInterleave::B32,
                ])
            } else {
                TensorMapInterleave::None
            };
            let swizzle = if interleave == TensorMapInterleave::B32 {
                TensorMapSwizzle::B32
            } else {
                rng.pick(&[
                    TensorMapSwizzle::None,
                    TensorMapSwizzle::B32,
                    TensorMapSwizzle::B64,
                    TensorMapSwizzle::B128,
                ])
            };
            let align = if interleave == TensorMapInterleave::B32 { 32 } else { 16 };
            let global_address = (rng.next() >> 8) / align * align;
            let global_dim: Vec<u64> = (0..rank)
                .map(|_| {
                    if rank == 1 && rng.below(4) == 0 {
                        1 + rng.below(1 << 32)
                    } else {
                        let max = rng.pick(&[1, 4, 64, 300]);
                        1 + rng.below(max)
                    }
                })
                .collect();
            let mut global_strides = Vec::new();
            let mut prev = global_dim[0] * esize;
            for &d in global_dim.iter().skip(1) {
                let s = round_up(prev + rng.below(3) * align, align);
                if s >= 1 << 40 {
                    continue 'retry;
                }
                global_strides.push(s);
                prev = s * d;
            }
            let element_strides: Vec<u32> = (0..rank).map(|_| 1 + rng.below(8) as u32).collect();
            let span = swizzle.span_bytes().map(u64::from);
            let mut spec = TensorMapSpec {
                mode,
                data_type,
                rank: rank as u32,
                global_address,
                global_dim: global_dim.clone(),
                global_strides,
                box_dim: Vec::new(),
                element_strides,
                interleave,
                swizzle,
                l2_promotion: rng.pick(&TensorMapL2Promotion::ALL),
                oob_fill: if data_type.is_float() { rng.pick(&TensorMapOobFill::ALL) } else { TensorMapOobFill::None },
                pixel_box_lower_corner: Vec::new(),
                pixel_box_upper_corner: Vec::new(),
                channels_per_pixel: 0,
                pixels_per_column: 0,
            };
            match mode {
                TensorMapMode::Tiled => {
                    let box0 = if interleave == TensorMapInterleave::None {
                        let unit = 16 / esize;
                        let max_bytes = span.map_or(256 * esize, |sp| sp.min(256 * esize));
                        unit * (1 + rng.below(max_bytes / 16))
                    } else {
                        1 + rng.below(256)
                    };
                    spec.box_dim =
                        std::iter::once(box0 as u32).chain((1..rank).map(|_| 1 + rng.below(256) as u32)).collect();
                    if spec.box_bytes(esize) > MAX_BOX_BYTES {
                        continue 'retry;
                    }
                }
                TensorMapMode::Im2col => {
                    let (lo, hi) = match rank {
                        3 => (-32768, 32767),
                        4 => (-128, 127),
                        _ => (-16, 15),
                    };
                    for i in 0..rank - 2 {
                        let lower = rng.range_i32(lo, hi);
                        let upper = rng.range_i32(lo, hi);
                        if global_dim[i + 1] as i64 + i64::from(upper) - i64::from(lower) < 1 {
                            continue 'retry;
                        }
                        spec.pixel_box_lower_corner.push(lower);
                        spec.pixel_box_upper_corner.push(upper);
                    }
                    let max_c = match (interleave, span) {
                        (TensorMapInterleave::None, Some(sp)) => (sp / esize).min(256),
                        _ => 256,
                    };
                    // whole 16-byte pixels (the driver's rule)
                    let unit_c = 16 / esize;
                    spec.channels_per_pixel = (unit_c * (1 + rng.below(max_c / unit_c))) as u32;
                    spec.pixels_per_column = 1 + rng.below(1024) as u32;
                }
            }
            return spec;
        }
    }

    // ---- valid maps ---------------------------------------------------------------------

    #[test]
    fn tensormap_valid_seed_example_accepted() {
        let map = assert_ok(&seed_tiled());
        assert_eq!(map.element_size(), 4);
        assert_eq!(map.smem_box_bytes(), 16 * 8 * 4);
        // Same map through the driver-shaped entry point.
        let via_driver = tensor_map_encode_tiled(
            Dt::Int32,
            2,
            0x1_0000,
            &[64, 32],
            &[256],
            &[16, 8],
            &[1, 1],
            TensorMapInterleave::None,
            TensorMapSwizzle::None,
            TensorMapL2Promotion::None,
            TensorMapOobFill::None,
        )
        .unwrap();
        assert_eq!(via_driver, map);
    }

    #[test]
    fn tensormap_valid_maps_of_every_kind_accepted() {
        assert_ok(&tiled5());
        assert_ok(&im2col4());
        let via_driver = tensor_map_encode_im2col(
            Dt::Float16,
            4,
            0x4000,
            &[64, 10, 10, 2],
            &[128, 1280, 12800],
            &[-1, -1],
            &[-1, -1],
            64,
            128,
            &[1, 1, 1, 1],
            TensorMapInterleave::None,
            TensorMapSwizzle::None,
            TensorMapL2Promotion::None,
            TensorMapOobFill::None,
        )
        .unwrap();
        assert_eq!(via_driver.spec(), &im2col4());
        // Rank 1: no strides, globalDim up to 2^32.
        assert_ok(&TensorMapSpec::tiled(Dt::Uint8, 0, vec![1 << 32], vec![], vec![256]));
        // Interleave 16B / 32B with rank 3.
        let mut s = TensorMapSpec::tiled(Dt::Float16, 0x40, vec![8, 7, 3], vec![16, 112], vec![8, 7, 3]);
        s.interleave = TensorMapInterleave::B16;
        s.swizzle = TensorMapSwizzle::B64;
        assert_ok(&s);
        s.interleave = TensorMapInterleave::B32;
        s.swizzle = TensorMapSwizzle::B32;
        s.global_strides = vec![32, 224];
        assert_ok(&s);
        // Every L2 promotion value and both OOB fills on a float type.
        for l2 in TensorMapL2Promotion::ALL {
            for oob in TensorMapOobFill::ALL {
                let mut s = tiled5();
                s.l2_promotion = l2;
                s.oob_fill = oob;
                assert_ok(&s);
            }
        }
        // Every sm_90 data type with a 16-byte inner box.
        for dt in SM90_TYPES {
            let e = u64::from(dt.element_size().unwrap());
            let b0 = (16 / e) as u32;
            assert_ok(&TensorMapSpec::tiled(dt, 0x100, vec![u64::from(b0), 4], vec![16], vec![b0, 4]));
        }
    }

    // ---- one test per rule ----------------------------------------------------------------

    #[test]
    fn tensormap_rule_sub_byte_types_unsupported() {
        for dt in [Dt::U4x16Align8B, Dt::U4x16Align16B, Dt::U6x16Align16B] {
            let mut s = seed_tiled();
            s.data_type = dt;
            assert_rule(
                &s,
                "unsupported: sub-byte tensorDataType (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) needs sm_100+",
            );
        }
    }

    #[test]
    fn tensormap_rule_swizzle_atomicity_unsupported() {
        for sw in [TensorMapSwizzle::B128Atom32B, TensorMapSwizzle::B128Atom32BFlip8B, TensorMapSwizzle::B128Atom64B] {
            let mut s = seed_tiled();
            s.swizzle = sw;
            assert_rule(
                &s,
                "unsupported: swizzle atomicity modes (128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B) need sm_100+",
            );
            assert!(swizzle_offset(sw, 0).unwrap_err().rule.starts_with("unsupported: "));
        }
    }

    #[test]
    fn tensormap_rule_tiled_rank_range() {
        let mut s = seed_tiled();
        s.rank = 0;
        assert_rule(&s, "tensorRank must be in 1..=5");
        let mut s = seed_tiled();
        s.rank = 6;
        assert_rule(&s, "tensorRank must be in 1..=5");
    }

    #[test]
    fn tensormap_rule_interleave_needs_rank_3() {
        let mut s = seed_tiled();
        s.interleave = TensorMapInterleave::B16;
        assert_rule(&s, "tensorRank must be >= 3 when interleave is not NONE");
    }

    #[test]
    fn tensormap_rule_im2col_rank_range() {
        let mut s = im2col4();
        s.rank = 2;
        assert_rule(&s, "tensorRank must be in 3..=5 for im2col");
        s.rank = 6;
        assert_rule(&s, "tensorRank must be in 3..=5 for im2col");
    }

    #[test]
    fn tensormap_rule_array_lengths() {
        let mut s = seed_tiled();
        s.global_dim.push(1);
        assert_rule(&s, "globalDim must have tensorRank entries");
        let mut s = seed_tiled();
        s.global_strides.clear();
        assert_rule(&s, "globalStrides must have tensorRank - 1 entries");
        let mut s = seed_tiled();
        s.element_strides = vec![1];
        assert_rule(&s, "elementStrides must have tensorRank entries");
        let mut s = seed_tiled();
        s.box_dim = vec![16, 8, 1];
        assert_rule(&s, "boxDim must have tensorRank entries");
        let mut s = im2col4();
        s.pixel_box_lower_corner = vec![0];
        assert_rule(&s, "pixelBoxLowerCorner must have tensorRank - 2 entries");
        let mut s = im2col4();
        s.pixel_box_upper_corner = vec![0, 0, 0];
        assert_rule(&s, "pixelBoxUpperCorner must have tensorRank - 2 entries");
    }

    #[test]
    fn tensormap_rule_mode_exclusive_fields() {
        let mut s = seed_tiled();
        s.channels_per_pixel = 4;
        assert_rule(&s, "tiled map must not set im2col fields");
        let mut s = seed_tiled();
        s.pixel_box_lower_corner = vec![0];
        assert_rule(&s, "tiled map must not set im2col fields");
        let mut s = im2col4();
        s.box_dim = vec![64, 1, 1, 1];
        assert_rule(&s, "im2col map must not set boxDim");
    }

    #[test]
    fn tensormap_rule_global_address_alignment() {
        let mut s = seed_tiled();
        s.global_address = 0x1_0008;
        assert_rule(&s, "globalAddress must be 16-byte aligned");
        let mut s = tiled5();
        s.interleave = TensorMapInterleave::B32;
        s.swizzle = TensorMapSwizzle::B32;
        s.global_address = 0x2010;
        assert_rule(&s, "globalAddress must be 32-byte aligned when interleave is 32B");
        s.global_address = 0x2020;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_global_dim_range() {
        let mut s = seed_tiled();
        s.global_dim[1] = 0;
        assert_rule(&s, "globalDim[1] must be in 1..=2^32");
        let mut s = TensorMapSpec::tiled(Dt::Uint8, 0, vec![(1 << 32) + 1], vec![], vec![16]);
        assert_rule(&s, "globalDim[0] must be in 1..=2^32");
        s.global_dim[0] = 1 << 32;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_global_strides_multiple_of_16() {
        let mut s = seed_tiled();
        s.global_strides[0] = 264;
        assert_rule(&s, "globalStrides[0] must be a multiple of 16");
    }

    #[test]
    fn tensormap_rule_global_strides_below_2_pow_40() {
        let mut s = TensorMapSpec::tiled(Dt::Uint8, 0, vec![16, 2], vec![1 << 40], vec![16, 2]);
        assert_rule(&s, "globalStrides[0] must be less than 2^40");
        s.global_strides[0] = (1 << 40) - 16;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_global_strides_multiple_of_32_with_interleave_32b() {
        let mut s = TensorMapSpec::tiled(Dt::Float16, 0x40, vec![8, 7, 3], vec![48, 336], vec![8, 7, 3]);
        s.interleave = TensorMapInterleave::B32;
        s.swizzle = TensorMapSwizzle::B32;
        assert_rule(&s, "globalStrides[0] must be a multiple of 32 when interleave is 32B");
    }

    #[test]
    fn tensormap_rule_stride_covers_dim0() {
        let mut s = seed_tiled();
        s.global_strides[0] = 240; // 64 int32 = 256 bytes
        assert_rule(&s, "globalStrides[0] must be >= globalDim[0] * elementSize");
        s.global_strides[0] = 256 + 16; // padding[0] = 16 is fine
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_stride_covers_previous_dim() {
        let mut s = tiled5();
        s.global_strides[1] = 1264; // < 128 * 10
        assert_rule(&s, "globalStrides[1] must be >= globalStrides[0] * globalDim[1]");
        let mut s = tiled5();
        s.global_strides[3] = 51184;
        assert_rule(&s, "globalStrides[3] must be >= globalStrides[2] * globalDim[3]");
    }

    /// A dimension of extent 1 may have any stride (a multiple of 16, 0 included): CUTLASS's sm90
    /// GEMMs encode the batch mode L = 1 with stride 0 (example 48's A: dims 64 x 512 x 1,
    /// strides 256, 0).
    #[test]
    fn tensormap_stride_of_an_extent_one_dimension_is_free() {
        let mut s = tiled5();
        s.global_dim[2] = 1;
        s.global_strides[1] = 0;
        assert_ok(&s);
        s.global_dim[2] = 2;
        assert_rule(&s, "globalStrides[1] must be >= globalStrides[0] * globalDim[1]");
    }

    #[test]
    fn tensormap_rule_box_dim_range() {
        let mut s = seed_tiled();
        s.box_dim[1] = 0;
        assert_rule(&s, "boxDim[1] must be in 1..=256");
        s.box_dim[1] = 257;
        assert_rule(&s, "boxDim[1] must be in 1..=256");
        s.box_dim[1] = 256;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_inner_box_multiple_of_16_bytes() {
        let mut s = seed_tiled();
        s.box_dim[0] = 6; // 24 bytes
        assert_rule(&s, "boxDim[0] * elementSize must be a multiple of 16 bytes when interleave is NONE");
        // With an interleave mode the rule does not apply.
        let mut s = tiled5();
        s.interleave = TensorMapInterleave::B16;
        s.box_dim[0] = 3;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_element_strides_range() {
        let mut s = tiled5();
        s.element_strides[2] = 0;
        assert_rule(&s, "elementStrides[2] must be in 1..=8");
        s.element_strides[2] = 9;
        assert_rule(&s, "elementStrides[2] must be in 1..=8");
        s.element_strides[2] = 8;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_interleave_32b_needs_swizzle_32b() {
        let mut s = TensorMapSpec::tiled(Dt::Float16, 0x40, vec![8, 7, 3], vec![32, 224], vec![8, 7, 3]);
        s.interleave = TensorMapInterleave::B32;
        for sw in [TensorMapSwizzle::None, TensorMapSwizzle::B64, TensorMapSwizzle::B128] {
            s.swizzle = sw;
            assert_rule(&s, "swizzle must be 32B when interleave is 32B");
        }
        // 16B interleave takes any sm_90 swizzle.
        s.interleave = TensorMapInterleave::B16;
        for sw in [TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128] {
            s.swizzle = sw;
            assert_ok(&s);
        }
    }

    #[test]
    fn tensormap_rule_box_bytes_at_most_shared_memory() {
        // the driver's measured limit: 233472 bytes pass, one 64-byte row more fails; counted
        // with elementStrides, elementStrides[0] included
        let mut s = TensorMapSpec::tiled(TensorMapDataType::Uint8, 0x4000, vec![256, 256, 256], vec![256, 65536], vec![16, 57, 256]);
        assert_ok(&s);
        s.box_dim = vec![16, 82, 178];
        assert_rule(&s, "the box must be at most 233472 bytes (prod(ceil(boxDim[i] / elementStrides[i])) * elementSize)");
        let mut s = TensorMapSpec::tiled(TensorMapDataType::Float32, 0x4000, vec![256, 256], vec![1024], vec![256, 256]);
        assert_rule(&s, "the box must be at most 233472 bytes (prod(ceil(boxDim[i] / elementStrides[i])) * elementSize)");
        s.element_strides = vec![2, 1];
        assert_ok(&s);
        s.element_strides = vec![1, 2];
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_im2col_pixel_multiple_of_16_bytes() {
        let mut s = im2col4(); // float16
        for (c, ok) in [(8, true), (24, true), (56, true), (4, false), (12, false), (1, false)] {
            s.channels_per_pixel = c;
            if ok {
                assert_ok(&s);
            } else {
                assert_rule(&s, "channelsPerPixel * elementSize must be a multiple of 16 bytes");
            }
        }
    }

    #[test]
    fn tensormap_rule_inner_box_within_swizzle_span() {
        for (sw, span) in [(TensorMapSwizzle::B32, 32u32), (TensorMapSwizzle::B64, 64), (TensorMapSwizzle::B128, 128)] {
            let mut s = seed_tiled(); // int32
            s.swizzle = sw;
            s.box_dim[0] = span / 4;
            assert_ok(&s);
            s.box_dim[0] = span / 4 + 4;
            assert_rule(&s, &format!("boxDim[0] * elementSize must be <= {span} bytes when swizzle is {span}B"));
            let mut s = im2col4(); // float16
            s.swizzle = sw;
            s.channels_per_pixel = span / 2;
            assert_ok(&s);
            // one 16-byte pixel more (whole 16-byte pixels are a rule of their own)
            s.channels_per_pixel = span / 2 + 8;
            assert_rule(&s, &format!("channelsPerPixel * elementSize must be <= {span} bytes when swizzle is {span}B"));
        }
        // Not applied with an interleave mode: 16B interleave, 32B swizzle, 64 float16 = 128 B.
        let mut s = tiled5();
        s.interleave = TensorMapInterleave::B16;
        s.swizzle = TensorMapSwizzle::B32;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_oob_nan_needs_float() {
        let mut s = seed_tiled();
        s.oob_fill = TensorMapOobFill::NanRequestZeroFma;
        assert_rule(&s, "oobFill NAN_REQUEST_ZERO_FMA requires a floating-point tensorDataType");
        for dt in SM90_TYPES {
            let mut s = TensorMapSpec::tiled(dt, 0, vec![64, 2], vec![512], vec![16, 2]);
            s.oob_fill = TensorMapOobFill::NanRequestZeroFma;
            assert_eq!(TensorMap::new(s).is_ok(), dt.is_float(), "{dt:?}");
        }
    }

    #[test]
    fn tensormap_rule_im2col_corner_ranges() {
        // Rank 3: [-32768, 32767].
        let mut s3 = TensorMapSpec::im2col(
            Dt::Float32,
            0,
            vec![4, 70000, 2],
            vec![16, 1_120_000],
            vec![-32768],
            vec![32767],
            4,
            32,
        );
        assert_ok(&s3);
        s3.pixel_box_lower_corner[0] = -32769;
        assert_rule(&s3, "pixelBoxLowerCorner[0] must be in -32768..=32767 for tensorRank 3");
        // Rank 4: [-128, 127].
        let mut s4 = im2col4();
        s4.pixel_box_lower_corner[1] = 127;
        s4.pixel_box_upper_corner[1] = 127;
        assert_ok(&s4);
        s4.pixel_box_upper_corner[1] = 128;
        assert_rule(&s4, "pixelBoxUpperCorner[1] must be in -128..=127 for tensorRank 4");
        // Rank 5: [-16, 15].
        let mut s5 = TensorMapSpec::im2col(
            Dt::Bfloat16,
            0,
            vec![16, 8, 8, 8, 2],
            vec![32, 256, 2048, 16384],
            vec![-16, 0, 15],
            vec![15, 0, 15],
            16,
            64,
        );
        assert_ok(&s5);
        s5.pixel_box_lower_corner[0] = -17;
        assert_rule(&s5, "pixelBoxLowerCorner[0] must be in -16..=15 for tensorRank 5");
        s5.pixel_box_lower_corner[0] = 0;
        s5.pixel_box_upper_corner[2] = 16;
        assert_rule(&s5, "pixelBoxUpperCorner[2] must be in -16..=15 for tensorRank 5");
    }

    #[test]
    fn tensormap_rule_im2col_non_zero_area() {
        // W = 10: lower 0, upper -9 leaves one position; upper -10 leaves none.
        let mut s = im2col4();
        s.pixel_box_lower_corner = vec![0, 0];
        s.pixel_box_upper_corner = vec![-9, 0];
        assert_ok(&s);
        s.pixel_box_upper_corner = vec![-10, 0];
        assert_rule(&s, "pixel bounding box must have non-zero area");
        s.pixel_box_upper_corner = vec![0, 0];
        s.pixel_box_lower_corner = vec![0, 10];
        assert_rule(&s, "pixel bounding box must have non-zero area");
    }

    #[test]
    fn tensormap_rule_channels_per_pixel_range() {
        let mut s = im2col4();
        s.channels_per_pixel = 257;
        assert_rule(&s, "channelsPerPixel must be in 1..=256");
        s.channels_per_pixel = 0;
        assert_rule(&s, "channelsPerPixel must be in 1..=256");
        s.channels_per_pixel = 256;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_rule_pixels_per_column_range() {
        let mut s = im2col4();
        s.pixels_per_column = 1025;
        assert_rule(&s, "pixelsPerColumn must be in 1..=1024");
        s.pixels_per_column = 0;
        assert_rule(&s, "pixelsPerColumn must be in 1..=1024");
        s.pixels_per_column = 1024;
        assert_ok(&s);
    }

    #[test]
    fn tensormap_error_carries_value_and_source() {
        let mut s = seed_tiled();
        s.box_dim[1] = 300;
        let e = TensorMap::new(s).unwrap_err();
        assert_eq!(e.rule, "boxDim[1] must be in 1..=256");
        assert_eq!(e.message, "boxDim[1] = 300");
        assert!(e.reference.contains("cuTensorMapEncodeTiled"));
        assert!(e.to_string().starts_with("boxDim[1] must be in 1..=256: boxDim[1] = 300 ["));
        let mut s = im2col4();
        s.global_address = 8;
        assert!(TensorMap::new(s).unwrap_err().reference.contains("cuTensorMapEncodeIm2col"));
    }

    #[test]
    fn tensormap_replace_address_keeps_alignment_rules() {
        let mut m = assert_ok(&seed_tiled());
        m.replace_address(0x2_0000).unwrap();
        assert_eq!(m.spec().global_address, 0x2_0000);
        let err = m.replace_address(0x2_0004).unwrap_err();
        assert_eq!(err.rule, "globalAddress must be 16-byte aligned");
        assert_eq!(m.spec().global_address, 0x2_0000);
    }

    // ---- descriptor image -------------------------------------------------------------------

    #[test]
    fn tensormap_image_layout_fields_land_where_documented() {
        let mut s = tiled5();
        s.swizzle = TensorMapSwizzle::B128;
        s.l2_promotion = TensorMapL2Promotion::L2B256;
        s.oob_fill = TensorMapOobFill::NanRequestZeroFma;
        s.element_strides = vec![1, 2, 3, 4, 8];
        let img = assert_ok(&s).encode();
        assert_eq!(img[0], TENSOR_MAP_IMAGE_VERSION);
        let b1 = u16::from_le_bytes([img[1], img[2]]);
        assert_eq!(b1 & 1, 0, "mode tiled");
        assert_eq!((b1 >> 1) & 7, 4, "rank - 1");
        assert_eq!((b1 >> 4) & 0xf, 6, "FLOAT16 = 6");
        assert_eq!((b1 >> 8) & 3, 0, "interleave NONE");
        assert_eq!((b1 >> 10) & 7, 3, "SWIZZLE_128B = 3");
        assert_eq!((b1 >> 13) & 3, 3, "L2_256B = 3");
        assert_eq!((b1 >> 15) & 1, 1, "NAN_REQUEST_ZERO_FMA = 1");
        assert_eq!(u64::from_le_bytes(img[8..16].try_into().unwrap()), 0x2000);
        assert_eq!(u32::from_le_bytes(img[16..20].try_into().unwrap()), 63, "globalDim[0] - 1");
        assert_eq!(u32::from_le_bytes(img[20..24].try_into().unwrap()), 9, "globalDim[1] - 1");
        // globalStrides[0] at bit 288 = byte 36, 40 bits.
        let mut st = [0u8; 8];
        st[..5].copy_from_slice(&img[36..41]);
        assert_eq!(u64::from_le_bytes(st), 128);
        // boxDim[0] - 1 at bit 448 = byte 56.
        assert_eq!(img[56], 63);
        assert_eq!(img[57], 3);
        // elementStrides - 1 at bits 488.. (byte 61): 0, 1, 2, 3, 7 in 3-bit fields.
        let es = u16::from_le_bytes([img[61], img[62]]);
        assert_eq!([es & 7, (es >> 3) & 7, (es >> 6) & 7, (es >> 9) & 7, (es >> 12) & 7], [0, 1, 2, 3, 7]);
        assert!(img[64..].iter().all(|&b| b == 0), "im2col fields and reserved bits are zero");

        let im = assert_ok(&im2col4()).encode();
        assert_eq!(im[1] & 1, 1, "mode im2col");
        assert_eq!(i16::from_le_bytes([im[64], im[65]]), -1, "pixelBoxLowerCorner[0] at bit 512");
        assert_eq!(i16::from_le_bytes([im[70], im[71]]), -1, "pixelBoxUpperCorner[0] at bit 560");
        assert_eq!(im[76], 63, "channelsPerPixel - 1 at bit 608");
        assert_eq!(u16::from_le_bytes([im[77], im[78]]) & 0x3ff, 127, "pixelsPerColumn - 1 at bit 616");
        assert!(im[56..61].iter().all(|&b| b == 0), "no boxDim in an im2col image");
    }

    #[test]
    fn tensormap_encode_decode_round_trip_random_maps() {
        let mut rng = XorShift64(0x9E37_79B9_7F4A_7C15);
        let mut kinds = [0usize; 2];
        for _ in 0..3000 {
            let spec = random_valid_spec(&mut rng);
            let map = assert_ok(&spec);
            kinds[(map.mode() == TensorMapMode::Im2col) as usize] += 1;
            let img = map.encode();
            let back = TensorMap::decode(&img).unwrap_or_else(|e| panic!("{e}\n{spec:?}"));
            assert_eq!(back, map);
            assert_eq!(back.encode(), img);
        }
        assert!(kinds[0] > 1000 && kinds[1] > 500, "{kinds:?}");
    }

    #[test]
    fn tensormap_decode_rejects_corrupt_images() {
        let img = assert_ok(&seed_tiled()).encode();
        let mut bad = img;
        bad[0] = 2;
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "descriptor: image format version must be 1");
        let mut bad = img;
        bad[2] |= 0b11; // interleave = 3
        assert_eq!(
            TensorMap::decode(&bad).unwrap_err().rule,
            "descriptor: interleave must be a CUtensorMapInterleave value"
        );
        let mut bad = img;
        bad[2] |= 0b111 << 2; // swizzle = 7
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "descriptor: swizzle must be a CUtensorMapSwizzle value");
        let mut bad = img;
        bad[100] = 1; // reserved
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "descriptor: reserved and unused bits must be zero");
        let mut bad = img;
        bad[24] = 1; // globalDim[2] of a rank-2 map
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "descriptor: reserved and unused bits must be zero");
        let mut bad = img;
        bad[1] |= 0b1010; // rank field 5 -> rank 6
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "tensorRank must be in 1..=5");
        let mut bad = img;
        bad[1] = (bad[1] & 0x0f) | (13 << 4); // 16U4_ALIGN8B
        assert!(TensorMap::decode(&bad).unwrap_err().rule.starts_with("unsupported: sub-byte"));
        let mut bad = img;
        bad[8] |= 0x08; // globalAddress + 8
        assert_eq!(TensorMap::decode(&bad).unwrap_err().rule, "globalAddress must be 16-byte aligned");
    }

    #[test]
    fn tensormap_decode_of_flipped_bits_never_panics_and_is_canonical() {
        let mut rng = XorShift64(0xD1B5_4A32_D192_ED03);
        let mut accepted = 0;
        for _ in 0..3000 {
            let mut img = assert_ok(&random_valid_spec(&mut rng)).encode();
            for _ in 0..1 + rng.below(3) {
                let bit = rng.below(1024) as usize;
                img[bit / 8] ^= 1 << (bit % 8);
            }
            if let Ok(m) = TensorMap::decode(&img) {
                accepted += 1;
                assert_eq!(m.encode(), img);
            }
        }
        assert!(accepted > 0);
    }

    // ---- manifests ----------------------------------------------------------------------------

    #[derive(Debug, Deserialize)]
    struct Manifest {
        tensor_map: TensorMap,
    }

    #[test]
    fn tensormap_toml_manifest_spelling() {
        let m: Manifest = toml::from_str(
            r#"
            [tensor_map]
            data_type = "float16"
            rank = 2
            global_address = 0x10000
            global_dim = [1024, 512]
            global_strides = [2048]
            box_dim = [64, 128]
            element_strides = [1, 1]
            swizzle = "128B"
            l2_promotion = "128B"
            "#,
        )
        .unwrap();
        let s = m.tensor_map.spec();
        assert_eq!(s.mode, TensorMapMode::Tiled);
        assert_eq!(s.data_type, Dt::Float16);
        assert_eq!(s.swizzle, TensorMapSwizzle::B128);
        assert_eq!(s.l2_promotion, TensorMapL2Promotion::L2B128);
        assert_eq!(s.interleave, TensorMapInterleave::None);
        assert_eq!(s.oob_fill, TensorMapOobFill::None);
        assert_eq!(m.tensor_map.smem_box_bytes(), 64 * 128 * 2);

        let im: Manifest = toml::from_str(
            r#"
            [tensor_map]
            mode = "im2col"
            data_type = "BFLOAT16"
            rank = 4
            global_address = 0x4000
            global_dim = [64, 10, 10, 2]
            global_strides = [128, 1280, 12800]
            element_strides = [1, 1, 1, 1]
            interleave = "none"
            swizzle = "64B"
            oob_fill = "nan_request_zero_fma"
            pixel_box_lower_corner = [-1, -1]
            pixel_box_upper_corner = [-1, -1]
            channels_per_pixel = 32
            pixels_per_column = 128
            "#,
        )
        .unwrap();
        assert_eq!(im.tensor_map.mode(), TensorMapMode::Im2col);
        assert_eq!(im.tensor_map.spec().data_type, Dt::Bfloat16);
        assert_eq!(im.tensor_map.smem_box_bytes(), 32 * 128 * 2);
    }

    #[test]
    fn tensormap_toml_rejects_bad_values_with_rule() {
        let bad_rule = toml::from_str::<Manifest>(
            r#"
            [tensor_map]
            data_type = "float32"
            rank = 2
            global_address = 0
            global_dim = [64, 64]
            global_strides = [256]
            box_dim = [64, 8]
            element_strides = [1, 1]
            swizzle = "128B"
            "#,
        )
        .unwrap_err()
        .to_string();
        assert!(bad_rule.contains("boxDim[0] * elementSize must be <= 128 bytes when swizzle is 128B"), "{bad_rule}");
        for (field, value) in [("swizzle", "\"16B\""), ("l2_promotion", "\"32B\""), ("data_type", "\"float8\"")] {
            let text = format!(
                "[tensor_map]\ndata_type = \"float32\"\nrank = 1\nglobal_address = 0\nglobal_dim = [4]\nbox_dim = [4]\nelement_strides = [1]\n{field} = {value}\n"
            );
            let text = if field == "data_type" { text.replacen("data_type = \"float32\"\n", "", 1) } else { text };
            assert!(toml::from_str::<Manifest>(&text).is_err(), "{text}");
        }
        let typo = "[tensor_map]\ndata_type = \"float32\"\nrank = 1\nglobal_address = 0\nglobal_dim = [4]\nbox_dim = [4]\nelement_strides = [1]\nswizle = \"32B\"\n";
        assert!(toml::from_str::<Manifest>(typo).is_err());
    }

    #[test]
    fn tensormap_serde_round_trip_toml_and_json() {
        let mut rng = XorShift64(0x2545_F491_4F6C_DD1D);
        for _ in 0..300 {
            let map = assert_ok(&random_valid_spec(&mut rng));
            let text = toml::to_string(&map).unwrap();
            let back: TensorMap = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, map);
            let json = serde_json::to_string(&map).unwrap();
            assert_eq!(serde_json::from_str::<TensorMap>(&json).unwrap(), map);
        }
        let json = serde_json::to_value(assert_ok(&tiled5())).unwrap();
        assert_eq!(json["data_type"], "float16");
        assert_eq!(json["swizzle"], "none");
        assert!(json.get("channels_per_pixel").is_none());
    }

    #[test]
    fn tensormap_enum_driver_values() {
        for (i, dt) in TensorMapDataType::ALL.iter().enumerate() {
            assert_eq!(dt.driver_value() as usize, i);
            assert_eq!(TensorMapDataType::from_driver_value(i as u32), Some(*dt));
        }
        assert_eq!(TensorMapDataType::from_driver_value(16), None);
        assert_eq!(Dt::Tfloat32Ftz.driver_value(), 12);
        assert_eq!(TensorMapSwizzle::B128.driver_value(), 3);
        assert_eq!(TensorMapSwizzle::from_driver_value(7), None);
        assert_eq!(TensorMapInterleave::from_driver_value(3), None);
        assert_eq!(TensorMapL2Promotion::L2B256.bytes(), Some(256));
        assert_eq!(Dt::U6x16Align16B.element_bits(), 6);
        assert_eq!(Dt::Float64.element_bits(), 64);
        let sizes: Vec<u32> = SM90_TYPES.iter().map(|d| d.element_size().unwrap()).collect();
        assert_eq!(sizes, [1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4]);
    }

    // ---- address functions --------------------------------------------------------------------

    #[test]
    fn tensormap_global_byte_address() {
        let m = assert_ok(&seed_tiled());
        assert_eq!(m.global_byte_address(&[0, 0]), Some(0x1_0000));
        assert_eq!(m.global_byte_address(&[3, 2]), Some(0x1_0000 + 3 * 4 + 2 * 256));
        assert_eq!(m.global_byte_address(&[63, 31]), Some(0x1_0000 + 63 * 4 + 31 * 256));
        assert_eq!(m.global_byte_address(&[64, 0]), None);
        assert_eq!(m.global_byte_address(&[0, 32]), None);
        assert_eq!(m.global_byte_address(&[-1, 0]), None);
        assert_eq!(m.global_byte_address(&[0]), None);
        assert_eq!(m.global_byte_address(&[0, 0, 0]), None);
        // Padded 3-D uint16: row of 32 elements = 64 B, strides 144 (80 B padding) and 752 (= 144 * 5 + 32).
        let m = assert_ok(&TensorMapSpec::tiled(Dt::Uint16, 0x800, vec![32, 5, 3], vec![144, 752], vec![8, 5, 3]));
        assert_eq!(m.global_byte_address(&[7, 4, 2]), Some(0x800 + 7 * 2 + 4 * 144 + 2 * 752));
        // Im2col maps address the same tensor space.
        let m = assert_ok(&im2col4());
        assert_eq!(m.global_byte_address(&[1, 2, 3, 1]), Some(0x4000 + 2 + 2 * 128 + 3 * 1280 + 12800));
        // Rank 1 at the 2^32 limit.
        let m = assert_ok(&TensorMapSpec::tiled(Dt::Uint64, 0, vec![1 << 32], vec![], vec![2]));
        assert_eq!(m.global_byte_address(&[(1 << 32) - 1]), Some(((1u64 << 32) - 1) * 8));
    }

    #[test]
    fn tensormap_smem_box_bytes() {
        let mut s = seed_tiled();
        assert_eq!(assert_ok(&s).smem_box_bytes(), 512);
        s.element_strides = vec![4, 3]; // [0] ignored (interleave NONE); ceil(8 / 3) = 3
        assert_eq!(assert_ok(&s).smem_box_bytes(), 16 * 3 * 4);
        let mut s = tiled5();
        s.interleave = TensorMapInterleave::B16;
        s.element_strides = vec![2, 1, 1, 1, 1]; // with interleave dimension 0's stride counts
        assert_eq!(assert_ok(&s).smem_box_bytes(), 32 * 4 * 4 * 2 * 2);
        let mut s = im2col4();
        s.element_strides = vec![1, 2, 2, 1];
        assert_eq!(assert_ok(&s).smem_box_bytes(), 64 * 128 * 2);
    }

    /// \[PTX\] §5.5.7 pattern tables: row = 128-byte line, entry = 16-byte chunk number.
    const PTX_32B: [[u64; 8]; 2] = [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]];
    const PTX_64B: [[u64; 8]; 4] =
        [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5], [3, 2, 1, 0, 7, 6, 5, 4]];
    const PTX_128B: [[u64; 8]; 8] = [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1, 0, 3, 2, 5, 4, 7, 6],
        [2, 3, 0, 1, 6, 7, 4, 5],
        [3, 2, 1, 0, 7, 6, 5, 4],
        [4, 5, 6, 7, 0, 1, 2, 3],
        [5, 4, 7, 6, 1, 0, 3, 2],
        [6, 7, 4, 5, 2, 3, 0, 1],
        [7, 6, 5, 4, 3, 2, 1, 0],
    ];

    #[test]
    fn tensormap_swizzle_matches_ptx_tables() {
        let tables: [(TensorMapSwizzle, &[[u64; 8]]); 3] =
            [(TensorMapSwizzle::B32, &PTX_32B), (TensorMapSwizzle::B64, &PTX_64B), (TensorMapSwizzle::B128, &PTX_128B)];
        for (sw, table) in tables {
            // 16 lines: the pattern repeats every table.len() lines (256 / 512 / 1024 bytes).
            for line in 0..16u64 {
                for chunk in 0..8u64 {
                    let want = line * 128 + table[(line as usize) % table.len()][chunk as usize] * 16;
                    for byte in [0, 5, 15] {
                        assert_eq!(
                            swizzle_offset(sw, line * 128 + chunk * 16 + byte).unwrap(),
                            want + byte,
                            "{sw:?} line {line} chunk {chunk}"
                        );
                    }
                }
            }
            assert_eq!(sw.pattern_bytes(), Some(128 * table.len() as u32));
        }
    }

    #[test]
    fn tensormap_swizzle_hand_computed_values() {
        use TensorMapSwizzle as S;
        // 32B (Swizzle<1,4,3>): bit 4 ^= bit 7.
        assert_eq!(swizzle_offset(S::B32, 160).unwrap(), 176); // line 1, chunk 2 -> 3
        assert_eq!(swizzle_offset(S::B32, 288).unwrap(), 288); // line 2 (even): unchanged
        assert_eq!(swizzle_offset(S::B32, 0x1_0090).unwrap(), 0x1_0080); // line odd, chunk 1 -> 0
                                                                         // 64B (Swizzle<2,4,3>): bits 4..6 ^= bits 7..9.
        assert_eq!(swizzle_offset(S::B64, 272).unwrap(), 304); // line 2, chunk 1 -> 3
        assert_eq!(swizzle_offset(S::B64, 528).unwrap(), 528); // line 4 = line 0 of next 512 B
        assert_eq!(swizzle_offset(S::B64, 3 * 128 + 6 * 16 + 1).unwrap(), 3 * 128 + 5 * 16 + 1);
        // 128B (Swizzle<3,4,3>): bits 4..7 ^= bits 7..10.
        assert_eq!(swizzle_offset(S::B128, 128).unwrap(), 144); // line 1, chunk 0 -> 1
        assert_eq!(swizzle_offset(S::B128, 896).unwrap(), 1008); // line 7, chunk 0 -> 7
        assert_eq!(swizzle_offset(S::B128, 464 + 7).unwrap(), 487); // line 3, chunk 5 -> 6
        assert_eq!(swizzle_offset(S::B128, 1024 + 128).unwrap(), 1024 + 144); // repeats at 1 KiB
                                                                              // NONE is the identity.
        assert_eq!(swizzle_offset(S::None, 12345).unwrap(), 12345);
        // Through a map: f16 64 x 8 box with 128B swizzle, element (row 1, col 8) is at dense
        // byte 1 * 128 + 8 * 2 = 144 -> chunk 1 ^ line 1 = chunk 0 -> 128.
        let mut s = TensorMapSpec::tiled(Dt::Float16, 0, vec![64, 8], vec![128], vec![64, 8]);
        s.swizzle = S::B128;
        assert_eq!(assert_ok(&s).swizzle_offset(144), 128);
    }

    #[test]
    fn tensormap_swizzle_is_an_involution_within_each_repeat() {
        use TensorMapSwizzle as S;
        for sw in [S::B32, S::B64, S::B128] {
            let period = u64::from(sw.pattern_bytes().unwrap());
            let mut seen = vec![false; 4 * period as usize];
            for off in 0..4 * period {
                let to = swizzle_offset(sw, off).unwrap();
                assert_eq!(to / period, off / period, "stays in its repeat block");
                assert_eq!(to / 128, off / 128, "stays on its 128-byte line");
                assert_eq!(to % 16, off % 16, "16-byte chunks move whole");
                assert_eq!(swizzle_offset(sw, to).unwrap(), off);
                assert!(!std::mem::replace(&mut seen[to as usize], true));
            }
        }
    }
}
