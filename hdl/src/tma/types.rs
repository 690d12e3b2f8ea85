//! The TMA engine's shared vocabulary: its constants, the command and descriptor records it
//! takes, the port records it drives, and the records that flow from one pipeline stage to the
//! next (module doc of [`crate::tma`] draws the pipeline).

use rust_hdl::prelude::*;

/// Shared-memory (shared::cta) byte-address bits: 256 KiB.
pub const TMA_SMEM_BITS: usize = 18;
/// Address bits of the reorder buffer (and of a read's tag).
pub const TMA_TAG_BITS: usize = 8;
/// Request tags = reorder-buffer entries, each a 128-byte row (the `max_outstanding` parameter is
/// at most this): with 128-byte requests 256 x 128 B = 32 KiB of reads in flight, 128 B/cycle
/// over sm90.toml's 255-cycle `[global] latency` (silicon's TMA sustains ~70-100 B/cycle per SM).
pub const TMA_TAGS: usize = 1 << TMA_TAG_BITS;
/// Bytes of one reorder-buffer row: the widest read request (`request_bytes`), one L2 line of
/// four 32-byte sectors.
pub const TMA_LINE_BYTES: usize = 128;
/// Bulk async-group slots per context (at most 3 committed incomplete groups plus the open one
/// per thread; a 4th commit waits for the oldest group).
pub const TMA_GROUPS: usize = 4;
/// Bulk async-group contexts: threads that may have bulk operations in flight or committed
/// groups not complete at once (PTX keeps bulk async-groups per thread, 9.7.9.25.6.1, with no
/// limit on their number). 32: one issuing thread in each warp of a 1024-thread CTA (CUTLASS's
/// producer / consumer warp groups issue from one elected lane each), held in flip-flops with a
/// thread compare per context.
pub const TMA_CTXS: usize = 32;
/// Bits of a context index.
pub const TMA_CTX_BITS: usize = 5;
/// Bulk async-group slots in all (`TMA_CTXS * TMA_GROUPS`).
pub const TMA_SLOTS: usize = TMA_CTXS * TMA_GROUPS;
/// Bits of a bulk-group slot id (context * 4 + the context's slot); it rides a global write's
/// 8-bit tag.
pub const TMA_SLOT_BITS: usize = TMA_CTX_BITS + 2;
/// Bits of a CTA-local thread index (`warp * 32 + lane`, up to 1024 threads).
pub const TMA_THREAD_BITS: usize = 10;
/// Address bits of the row queue.
pub const TMA_ROWQ_BITS: usize = 8;
/// Rows the request side may run ahead of the shared-memory side: as many as the ROB has tags,
/// so a box of 32-byte rows still keeps every tag busy.
pub const TMA_ROWQ: usize = 1 << TMA_ROWQ_BITS;
/// Address bits of the job queue (decoder -> BA).
pub const TMA_JOBQ_BITS: usize = 3;
/// Decoded jobs waiting for BA: with J and BA's own, `TMA_JOBQ` + 2 jobs live past the decoder,
/// enough for back-to-back small copies to overlap their global reads.
pub const TMA_JOBQ: usize = 1 << TMA_JOBQ_BITS;
// The stage blocks name these as literals (256 tags, 32 contexts x 4 group slots (a 7-bit slot id:
// context in bits 2..7), 256 row-queue entries, 10-bit thread index).
const _: () = assert!(
    TMA_TAGS == 256
        && TMA_GROUPS == 4
        && TMA_CTXS == 32
        && TMA_CTXS == 1 << TMA_CTX_BITS
        && TMA_SLOT_BITS == 7
        && TMA_SLOT_BITS <= TMA_TAG_BITS
        && TMA_ROWQ == 256
        && TMA_JOBQ == 8
        && TMA_THREAD_BITS == 10
);

/// Command kinds.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaCmdKind {
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster}`
    BulkLoad,
    /// `cp.async.bulk.global.shared::cta.bulk_group`
    BulkStore,
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.multicast::cluster}`
    TensorLoad,
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`
    TensorStore,
    /// `cp.async.bulk.commit_group`
    CommitGroup,
    /// `cp.async.bulk.prefetch.L2.global` (PTX 9.7.9.25.4.3): a bulk read whose data is dropped
    /// (no shared-memory write, no complete_tx: an L2 hint without architectural effect)
    BulkPrefetch,
    /// `cp.async.bulk.prefetch.tensor.Nd.L2.global.tile` (PTX 9.7.9.25.5.4): the sector reads
    /// of the tiled box, data dropped
    TensorPrefetch,
    /// `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes` (PTX
    /// 9.7.9.25.4.1) and, with `red_op` not `Copy`, `cp.reduce.async.bulk.shared::cluster
    /// .shared::cta.mbarrier::complete_tx::bytes` (PTX 9.7.9.25.4.2): `size` bytes read from this
    /// CTA's shared memory at `smem`, written (or reduced) at `dsmem` of the one CTA of
    /// `cta_mask`, then complete_tx there
    BulkS2S,
}

/// The reduction a shared-memory write applies (`cp.reduce.async.bulk` `.redOp`, PTX
/// 9.7.9.25.4.2); the engine only carries it to the shared-memory port.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaRedOp {
    /// a plain copy
    Copy,
    /// `.add`
    Add,
    /// `.min`
    Min,
    /// `.max`
    Max,
    /// `.inc`
    Inc,
    /// `.dec`
    Dec,
    /// `.and`
    And,
    /// `.or`
    Or,
    /// `.xor`
    Xor,
}

/// The element type of a reduction (PTX 9.7.9.25.4.2: into shared::cluster `.b32 .u32 .s32
/// .b64 .u64`; into global also `.s64 .f32 .f64 .f16 .bf16`).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaRedType {
    /// `.b32`
    B32,
    /// `.u32`
    U32,
    /// `.s32`
    S32,
    /// `.b64`
    B64,
    /// `.u64`
    U64,
    /// `.s64` (global only)
    S64,
    /// `.f32` (global only)
    F32,
    /// `.f64` (global only)
    F64,
    /// `.f16` (global only, `.add.noftz`)
    F16,
    /// `.bf16` (global only, `.add.noftz`)
    Bf16,
}

/// Why a command was refused. Names are the golden model's `FindingKind` names, or the
/// "unsupported: ..." text of a form the RTL does not implement.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaFaultKind {
    /// no fault
    NoFault,
    /// the descriptor image does not decode (module doc "Decode checks"), or its mode is not
    /// the command's load mode
    TensorMapInvalid,
    /// `dims` (the `.Nd` of the instruction) differs from the map's rank
    TmaCoordOutOfRange,
    /// bulk: addresses not 16-byte aligned or size not a multiple of 16; tensor: shared address
    /// not 128-byte aligned
    TmaMisaligned,
    /// a load with an empty `cta_mask`
    ClusterRankOutOfRange,
    /// a tensor map with interleave 16B / 32B
    UnsupportedInterleave,
    /// a store from a thread with no bulk-group context while all `TMA_CTXS` (32) are in use
    UnsupportedThreads,
}

impl TmaFaultKind {
    /// The fault's name: the golden model's finding name or the "unsupported: ..." text.
    pub fn name(self) -> Option<&'static str> {
        match self {
            TmaFaultKind::NoFault => None,
            TmaFaultKind::TensorMapInvalid => Some("TensorMapInvalid"),
            TmaFaultKind::TmaCoordOutOfRange => Some("TmaCoordOutOfRange"),
            TmaFaultKind::TmaMisaligned => Some("TmaMisaligned"),
            TmaFaultKind::ClusterRankOutOfRange => Some("ClusterRankOutOfRange"),
            TmaFaultKind::UnsupportedInterleave => Some("unsupported: interleaved tensor layouts"),
            TmaFaultKind::UnsupportedThreads => Some("unsupported: more than 32 threads with open bulk async-groups"),
        }
    }
}



/// 16 bytes, byte 0 in bits 0..=7 of `w0`.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaData16 {
    /// bytes 0..=3
    pub w0: Bits<32>,
    /// bytes 4..=7
    pub w1: Bits<32>,
    /// bytes 8..=11
    pub w2: Bits<32>,
    /// bytes 12..=15
    pub w3: Bits<32>,
}

impl TmaData16 {
    /// From 16 little-endian bytes.
    pub fn from_bytes(b: &[u8]) -> Self {
        let w = |i: usize| -> Bits<32> { (u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()) as u64).into() };
        TmaData16 {
            w0: w(0),
            w1: w(1),
            w2: w(2),
            w3: w(3),
        }
    }
    /// The 16 bytes, little-endian.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut o = [0u8; 16];
        for (i, w) in [self.w0, self.w1, self.w2, self.w3].into_iter().enumerate() {
            o[4 * i..4 * i + 4].copy_from_slice(&(w.to_u64() as u32).to_le_bytes());
        }
        o
    }
    /// The 16 bytes as one little-endian number.
    pub(crate) fn to_u128(self) -> u128 {
        (self.w0.to_u64() as u128)
            | (self.w1.to_u64() as u128) << 32
            | (self.w2.to_u64() as u128) << 64
            | (self.w3.to_u64() as u128) << 96
    }
    /// From a little-endian number.
    pub(crate) fn from_u128(x: u128) -> Self {
        let w = |i: u32| -> Bits<32> { (((x >> (32 * i)) as u32) as u64).into() };
        TmaData16 {
            w0: w(0),
            w1: w(1),
            w2: w(2),
            w3: w(3),
        }
    }
}

/// 128 bytes (one reorder-buffer row, a read response): 16-byte chunk `k` in `ck`.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaData128 {
    /// bytes 0..=15
    pub c0: TmaData16,
    /// bytes 16..=31
    pub c1: TmaData16,
    /// bytes 32..=47
    pub c2: TmaData16,
    /// bytes 48..=63
    pub c3: TmaData16,
    /// bytes 64..=79
    pub c4: TmaData16,
    /// bytes 80..=95
    pub c5: TmaData16,
    /// bytes 96..=111
    pub c6: TmaData16,
    /// bytes 112..=127
    pub c7: TmaData16,
}

impl TmaData128 {
    /// From 128 little-endian bytes.
    pub fn from_bytes(b: &[u8]) -> Self {
        let c = |k: usize| TmaData16::from_bytes(&b[16 * k..16 * k + 16]);
        TmaData128 { c0: c(0), c1: c(1), c2: c(2), c3: c(3), c4: c(4), c5: c(5), c6: c(6), c7: c(7) }
    }
    /// The 128 bytes, little-endian.
    pub fn to_bytes(self) -> [u8; 128] {
        let mut o = [0u8; 128];
        for (k, c) in [self.c0, self.c1, self.c2, self.c3, self.c4, self.c5, self.c6, self.c7].into_iter().enumerate() {
            o[16 * k..16 * k + 16].copy_from_slice(&c.to_bytes());
        }
        o
    }
}

/// The 128-byte tensor-map image, hopsync layout v1 (`firmware/src/tensormap.rs` module doc),
/// field by field, packed LSB-first: the packed 1024 bits are the image (bit `n` = bit `n % 8`
/// of byte `n / 8`). Wide fields are split into 32-bit pieces.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaDescImage {
    /// bits 0..8: image format version (1)
    pub version: Bits<8>,
    /// bit 8: mode (0 tiled, 1 im2col)
    pub im2col: bool,
    /// bits 9..12: tensorRank - 1
    pub rank_m1: Bits<3>,
    /// bits 12..16: tensorDataType (driver value)
    pub data_type: Bits<4>,
    /// bits 16..18: interleave
    pub interleave: Bits<2>,
    /// bits 18..21: swizzle
    pub swizzle: Bits<3>,
    /// bits 21..23: l2Promotion (no effect here)
    pub l2_promotion: Bits<2>,
    /// bit 23: oobFill (1: NAN_REQUEST_ZERO_FMA)
    pub oob_nan: bool,
    /// bits 24..32: reserved
    pub rsvd_24: Bits<8>,
    /// bits 32..64: reserved
    pub rsvd_32: Bits<32>,
    /// bits 64..96: globalAddress, low half
    pub gaddr_lo: Bits<32>,
    /// bits 96..128: globalAddress, high half
    pub gaddr_hi: Bits<32>,
    /// globalDim[0] - 1
    pub gdim0_m1: Bits<32>,
    /// globalDim[1] - 1
    pub gdim1_m1: Bits<32>,
    /// globalDim[2] - 1
    pub gdim2_m1: Bits<32>,
    /// globalDim[3] - 1
    pub gdim3_m1: Bits<32>,
    /// globalDim[4] - 1
    pub gdim4_m1: Bits<32>,
    /// globalStrides[0] bits 0..32
    pub gstride0_lo: Bits<32>,
    /// globalStrides[0] bits 32..40
    pub gstride0_hi: Bits<8>,
    /// globalStrides[1] bits 0..32
    pub gstride1_lo: Bits<32>,
    /// globalStrides[1] bits 32..40
    pub gstride1_hi: Bits<8>,
    /// globalStrides[2] bits 0..32
    pub gstride2_lo: Bits<32>,
    /// globalStrides[2] bits 32..40
    pub gstride2_hi: Bits<8>,
    /// globalStrides[3] bits 0..32
    pub gstride3_lo: Bits<32>,
    /// globalStrides[3] bits 32..40
    pub gstride3_hi: Bits<8>,
    /// boxDim[0] - 1
    pub box0_m1: Bits<8>,
    /// boxDim[1] - 1
    pub box1_m1: Bits<8>,
    /// boxDim[2] - 1
    pub box2_m1: Bits<8>,
    /// boxDim[3] - 1
    pub box3_m1: Bits<8>,
    /// boxDim[4] - 1
    pub box4_m1: Bits<8>,
    /// elementStrides[0] - 1
    pub estride0_m1: Bits<3>,
    /// elementStrides[1] - 1
    pub estride1_m1: Bits<3>,
    /// elementStrides[2] - 1
    pub estride2_m1: Bits<3>,
    /// elementStrides[3] - 1
    pub estride3_m1: Bits<3>,
    /// elementStrides[4] - 1
    pub estride4_m1: Bits<3>,
    /// bits 503..512: reserved
    pub rsvd_503: Bits<9>,
    /// pixelBoxLowerCorner[0] (im2col)
    pub lower0: Bits<16>,
    /// pixelBoxLowerCorner[1] (im2col)
    pub lower1: Bits<16>,
    /// pixelBoxLowerCorner[2] (im2col)
    pub lower2: Bits<16>,
    /// pixelBoxUpperCorner[0] (im2col)
    pub upper0: Bits<16>,
    /// pixelBoxUpperCorner[1] (im2col)
    pub upper1: Bits<16>,
    /// pixelBoxUpperCorner[2] (im2col)
    pub upper2: Bits<16>,
    /// channelsPerPixel - 1 (im2col)
    pub channels_m1: Bits<8>,
    /// pixelsPerColumn - 1 (im2col)
    pub pixels_m1: Bits<10>,
    /// bits 626..640: reserved
    pub rsvd_626: Bits<14>,
    /// bits 640..672: reserved
    pub rsvd_640: Bits<32>,
    /// bits 672..704: reserved
    pub rsvd_672: Bits<32>,
    /// bits 704..736: reserved
    pub rsvd_704: Bits<32>,
    /// bits 736..768: reserved
    pub rsvd_736: Bits<32>,
    /// bits 768..800: reserved
    pub rsvd_768: Bits<32>,
    /// bits 800..832: reserved
    pub rsvd_800: Bits<32>,
    /// bits 832..864: reserved
    pub rsvd_832: Bits<32>,
    /// bits 864..896: reserved
    pub rsvd_864: Bits<32>,
    /// bits 896..928: reserved
    pub rsvd_896: Bits<32>,
    /// bits 928..960: reserved
    pub rsvd_928: Bits<32>,
    /// bits 960..992: reserved
    pub rsvd_960: Bits<32>,
    /// bits 992..1024: reserved
    pub rsvd_992: Bits<32>,
}

impl TmaDescImage {
    /// The fields of a 128-byte image (any bytes: the unit validates them).
    pub fn from_bytes(img: &[u8; 128]) -> Self {
        let g = |at: usize, w: usize| -> u64 {
            let mut v = 0u64;
            for k in 0..w {
                let n = at + k;
                v |= (((img[n / 8] >> (n % 8)) & 1) as u64) << k;
            }
            v
        };
        let b = |at: usize| g(at, 1) == 1;
        TmaDescImage {
            version: g(0, 8).into(),
            im2col: b(8),
            rank_m1: g(9, 3).into(),
            data_type: g(12, 4).into(),
            interleave: g(16, 2).into(),
            swizzle: g(18, 3).into(),
            l2_promotion: g(21, 2).into(),
            oob_nan: b(23),
            rsvd_24: g(24, 8).into(),
            rsvd_32: g(32, 32).into(),
            gaddr_lo: g(64, 32).into(),
            gaddr_hi: g(96, 32).into(),
            gdim0_m1: g(128, 32).into(),
            gdim1_m1: g(160, 32).into(),
            gdim2_m1: g(192, 32).into(),
            gdim3_m1: g(224, 32).into(),
            gdim4_m1: g(256, 32).into(),
            gstride0_lo: g(288, 32).into(),
            gstride0_hi: g(320, 8).into(),
            gstride1_lo: g(328, 32).into(),
            gstride1_hi: g(360, 8).into(),
            gstride2_lo: g(368, 32).into(),
            gstride2_hi: g(400, 8).into(),
            gstride3_lo: g(408, 32).into(),
            gstride3_hi: g(440, 8).into(),
            box0_m1: g(448, 8).into(),
            box1_m1: g(456, 8).into(),
            box2_m1: g(464, 8).into(),
            box3_m1: g(472, 8).into(),
            box4_m1: g(480, 8).into(),
            estride0_m1: g(488, 3).into(),
            estride1_m1: g(491, 3).into(),
            estride2_m1: g(494, 3).into(),
            estride3_m1: g(497, 3).into(),
            estride4_m1: g(500, 3).into(),
            rsvd_503: g(503, 9).into(),
            lower0: g(512, 16).into(),
            lower1: g(528, 16).into(),
            lower2: g(544, 16).into(),
            upper0: g(560, 16).into(),
            upper1: g(576, 16).into(),
            upper2: g(592, 16).into(),
            channels_m1: g(608, 8).into(),
            pixels_m1: g(616, 10).into(),
            rsvd_626: g(626, 14).into(),
            rsvd_640: g(640, 32).into(),
            rsvd_672: g(672, 32).into(),
            rsvd_704: g(704, 32).into(),
            rsvd_736: g(736, 32).into(),
            rsvd_768: g(768, 32).into(),
            rsvd_800: g(800, 32).into(),
            rsvd_832: g(832, 32).into(),
            rsvd_864: g(864, 32).into(),
            rsvd_896: g(896, 32).into(),
            rsvd_928: g(928, 32).into(),
            rsvd_960: g(960, 32).into(),
            rsvd_992: g(992, 32).into(),
        }
    }
}

/// A command. Fields a kind does not use are ignored.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaCmd {
    /// what to do
    pub kind: TmaCmdKind,
    /// tensor: the instruction's load mode is im2col (PTX 5.5.4; must match the map's mode)
    pub im2col: bool,
    /// tensor: the `.Nd` of the instruction (must equal the map's rank)
    pub dims: Bits<3>,
    /// shared::cta byte address: destination of a load (the same offset in every destination
    /// CTA), source of a store
    pub smem: Bits<18>,
    /// bulk: global byte address, low half
    pub gaddr_lo: Bits<32>,
    /// bulk: global byte address, high half
    pub gaddr_hi: Bits<32>,
    /// bulk: bytes (a multiple of 16)
    pub size: Bits<20>,
    /// loads: the mbarrier's word index (shared::cta byte address >> 3) in each destination CTA
    pub mbar: Bits<16>,
    /// loads: destination CTA ranks (`.multicast::cluster` ctaMask; else the one destination)
    pub cta_mask: Bits<16>,
    /// tensor: coordinate 0 (innermost), .s32
    pub c0: Bits<32>,
    /// tensor: coordinate 1
    pub c1: Bits<32>,
    /// tensor: coordinate 2
    pub c2: Bits<32>,
    /// tensor: coordinate 3
    pub c3: Bits<32>,
    /// tensor: coordinate 4
    pub c4: Bits<32>,
    /// `BulkS2S`: destination shared::cta byte address (in the CTA of `cta_mask`)
    pub dsmem: Bits<18>,
    /// `BulkS2S` and stores: the reduction (`cp.reduce.async.bulk{.tensor}`, PTX 9.7.9.25.4.2 /
    /// 9.7.9.25.5.3; `Copy` for a plain copy or store): a store's writes carry it to memory (the
    /// L2 on silicon applies it), a `BulkS2S` beat to the shared-memory side
    pub red_op: TmaRedOp,
    /// the reduction's element type
    pub red_type: TmaRedType,
    /// stores, commit_group: the issuing thread (CTA-local `warp * 32 + lane`), whose bulk
    /// async-groups the command joins or closes
    pub thread: Bits<10>,
    /// im2col: the im2col offset of spatial dimension W (`im2colOffsets[0]`, PTX 9.7.9.25.5.2;
    /// unsigned, below 2^16 / 2^8 / 2^5 for rank 3 / 4 / 5: the instruction's check)
    pub o0: Bits<16>,
    /// im2col: the offset of H (`im2colOffsets[1]`)
    pub o1: Bits<16>,
    /// im2col: the offset of D (`im2colOffsets[2]`)
    pub o2: Bits<16>,
}

/// A global-memory request: a read of some sectors of one 128-byte line, or a write of one
/// 32-byte sector.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaGmemReq {
    /// reads: the line's byte address (128-byte aligned); writes: the sector's (32-byte
    /// aligned), low half
    pub addr_lo: Bits<32>,
    /// high half
    pub addr_hi: Bits<32>,
    /// reads: the line's sectors to read (bit k: bytes 32k..32k+31; a contiguous run within
    /// one `request_bytes`-aligned block); writes: 0
    pub sect: Bits<4>,
    /// reads: the ROB entry (echoed by the response); writes: the bulk-group slot (context in
    /// bits 2..4, the context's slot in bits 0..2)
    pub tag: Bits<8>,
    /// a write (else a read)
    pub write: bool,
    /// write data, bytes 0..=15 of the sector
    pub data_lo: TmaData16,
    /// write data, bytes 16..=31
    pub data_hi: TmaData16,
    /// write byte mask, bytes 0..=15
    pub mask_lo: Bits<16>,
    /// write byte mask, bytes 16..=31
    pub mask_hi: Bits<16>,
    /// writes: the store's reduction (its command's `red_op`; `Copy`: a plain write)
    pub red_op: TmaRedOp,
    /// writes: the reduction's element type
    pub red_type: TmaRedType,
}

/// A global-memory response.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaGmemResp {
    /// the request's tag
    pub tag: Bits<8>,
    /// a write acknowledgement (else read data)
    pub write: bool,
    /// read data: the request's line, its sectors in place (bytes of sectors not requested
    /// are undefined)
    pub data: TmaData128,
}

/// A shared-memory write of up to one 128-byte line, landed in every CTA of `ctam` in the same
/// cycle (multicast writes its destinations in parallel: the CTA top writes its own shared
/// memory and sends the rest over the DSMEM network at once). The engine writes whole 16-byte
/// chunks only (a load's OOB bytes are filled, a shared::cta -> shared::cluster copy is 16-byte
/// aligned), so a chunk enable per chunk is the whole mask.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSmemWrite {
    /// destination CTA ranks in the cluster (bit r: rank r; never empty)
    pub ctam: Bits<16>,
    /// shared::cta byte address of the line, 128-byte aligned
    pub addr: Bits<18>,
    /// the line's bytes: chunk k (bytes 16k..16k+15 of the line) in `ck`
    pub data: TmaData128,
    /// chunk enables (bit k: chunk k is written)
    pub cen: Bits<8>,
    /// the reduction the write applies (`Copy`: a plain write)
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

impl TmaSmemWrite {
    /// The enabled chunks: (shared::cta byte address, 16 bytes), lowest address first.
    pub fn chunks(&self) -> impl Iterator<Item = (u64, [u8; 16])> {
        let (a, cen, d) = (self.addr.to_u64(), self.cen.to_u64(), self.data.to_bytes());
        (0..8u64).filter(move |k| cen >> k & 1 == 1).map(move |k| (a + 16 * k, d[16 * k as usize..16 * k as usize + 16].try_into().expect("16 bytes")))
    }
}

/// A 16-byte shared-memory beat with its destination CTAs: what the CTA top's 16-byte-wide
/// shared-memory port ([`crate::smem_port::SmemPort`]) and DSMEM network take, one chunk of a
/// [`TmaSmemWrite`] a cycle.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSmemBeat {
    /// destination CTA ranks in the cluster (bit r: rank r)
    pub ctam: Bits<16>,
    /// shared::cta byte address, 16-byte aligned
    pub addr: Bits<18>,
    /// the bytes
    pub data: TmaData16,
    /// byte enables (all set: the engine writes whole chunks)
    pub mask: Bits<16>,
    /// the reduction the write applies (`Copy`: a plain write)
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// A refused command.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaFault {
    /// a fault this cycle
    pub valid: bool,
    /// why
    pub kind: TmaFaultKind,
    /// the refused command's `thread` (stores, commit_group; 0 for loads)
    pub thread: Bits<10>,
}

/// Row-queue entry (RG → BA).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaRowRec {
    /// some outer coordinate is out of bounds (or the job has no in-bounds byte)
    pub oob: bool,
    /// the row's 16-byte aligned global address (`A1 & ~15`), low half
    pub r_lo: Bits<32>,
    /// high half
    pub r_hi: Bits<32>,
    /// the job's last row
    pub last: bool,
}

/// BA stage-Y record (one slot).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSlot {
    /// a slot is in Y
    pub valid: bool,
    /// store direction
    pub store: bool,
    /// the slot produces an output (load beat / store chunk)
    pub emit: bool,
    /// the job's last slot
    pub jlast: bool,
    /// in-bounds bytes of the output
    pub mask: Bits<16>,
    /// loads: swizzled shared::cta address of the beat (of the run's first chunk)
    pub addr: Bits<18>,
    /// loads: a run of `n` chunks of one reorder-buffer line into one shared-memory line;
    /// stores: a pair (two whole chunks of one sector, `rc` and `rc1`); else one realigned beat
    pub run: bool,
    /// chunks in the slot (a run: 1..=8; a store pair: 2; else 1)
    pub n: Bits<4>,
    /// stores and S2S: the read's first chunk in its shared-memory line (swizzled place)
    pub rc: Bits<3>,
    /// a store pair: its second chunk's place in that line
    pub rc1: Bits<3>,
    /// the first chunk's index in its shared-memory line before the swizzle
    pub c0: Bits<3>,
    /// the swizzle's XOR on chunk indices in that line (PTX 5.5.7; 0 unswizzled)
    pub x: Bits<3>,
    /// realignment offset (bytes)
    pub off: Bits<4>,
    /// OOB fill bytes
    pub fill: TmaData16,
    /// loads: destination CTAs
    pub ctam: Bits<16>,
    /// loads: mbarrier word
    pub word: Bits<16>,
    /// loads: the job's bytes so far, this slot included
    pub tx: Bits<32>,
    /// stores: bulk-group slot
    pub grp: Bits<TMA_SLOT_BITS>,
    /// stores: global address of the output chunk, low half
    pub ca_lo: Bits<32>,
    /// high half
    pub ca_hi: Bits<32>,
    /// stores: the chunk is the last in-bounds chunk of its row
    pub ulast: bool,
    /// stores: the chunk is the high half of its sector (bit 4 of its address)
    pub par: bool,
    /// a shared::cta -> shared::cluster copy: the beat goes to OB (read like a store, written
    /// like a load)
    pub s2s: bool,
    /// the reduction of the beat
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// Output-buffer entry (loads).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaObEntry {
    /// a write (else only the job-end marker)
    pub data_valid: bool,
    /// shared::cta address of the line, 128-byte aligned
    pub addr: Bits<18>,
    /// the line's chunks (those of `cen`, swizzled into place)
    pub data: TmaData128,
    /// chunk enables
    pub cen: Bits<8>,
    /// destination CTAs
    pub ctam: Bits<16>,
    /// the job's last entry: complete_tx follows
    pub jlast: bool,
    /// mbarrier word
    pub word: Bits<16>,
    /// the job's bytes (valid with `jlast`)
    pub tx: Bits<32>,
    /// the reduction of the beat
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// Write-buffer entry (stores).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaWbEntry {
    /// a sector write (else only the op-end marker)
    pub write: bool,
    /// sector address, low half
    pub addr_lo: Bits<32>,
    /// high half
    pub addr_hi: Bits<32>,
    /// bytes 0..=15
    pub data_lo: TmaData16,
    /// bytes 16..=31
    pub data_hi: TmaData16,
    /// byte mask 0..=15
    pub mask_lo: Bits<16>,
    /// byte mask 16..=31
    pub mask_hi: Bits<16>,
    /// bulk-group slot
    pub grp: Bits<TMA_SLOT_BITS>,
    /// the op's reduction (`TmaGmemReq::red_op`)
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// The job as the row iterator sees it (the decoder's job register J, RG's part): the box's
/// outer dimensions, the start address, the im2col windows.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaRowJob {
    /// store direction (shared -> global)
    pub store: bool,
    /// no in-bounds byte in a row: every row is OOB
    pub empty: bool,
    /// an im2col job (PTX 5.5.4): a row is a pixel of channelsPerPixel channels, rows walk the
    /// pixel bounding box (module doc "im2col")
    pub im2col: bool,
    /// tensorRank (1 for bulk)
    pub rank: Bits<3>,
    /// im2col: pixelsPerColumn - 1
    pub pix_m1: Bits<10>,
    /// start address accumulator (global address of box element 0), low half
    pub a_lo: Bits<32>,
    /// high half
    pub a_hi: Bits<32>,
    /// byte offset of chunk `ca` from the row start (16 * ca)
    pub offa: Bits<24>,
    /// first chunk (relative to the row's 16-byte aligned start) with an in-bounds byte
    pub ca: Bits<16>,
    /// last such chunk
    pub cb: Bits<16>,
    /// boxDim[1]
    pub box1: Bits<9>,
    /// boxDim[2]
    pub box2: Bits<9>,
    /// boxDim[3]
    pub box3: Bits<9>,
    /// boxDim[4]
    pub box4: Bits<9>,
    /// elementStrides[1]
    pub e1: Bits<9>,
    /// elementStrides[2]
    pub e2: Bits<9>,
    /// elementStrides[3]
    pub e3: Bits<9>,
    /// elementStrides[4]
    pub e4: Bits<9>,
    /// dimension 1: first in-bounds box index
    pub lo1: Bits<9>,
    /// dimension 2: first in-bounds box index
    pub lo2: Bits<9>,
    /// dimension 3: first in-bounds box index
    pub lo3: Bits<9>,
    /// dimension 4: first in-bounds box index
    pub lo4: Bits<9>,
    /// dimension 1: end of the in-bounds box indices
    pub hi1: Bits<9>,
    /// dimension 2: end of the in-bounds box indices
    pub hi2: Bits<9>,
    /// dimension 3: end of the in-bounds box indices
    pub hi3: Bits<9>,
    /// dimension 4: end of the in-bounds box indices
    pub hi4: Bits<9>,
    /// dimension 1 address step (elementStrides[1] * globalStrides[0]), low half
    pub st1_lo: Bits<32>,
    /// high half
    pub st1_hi: Bits<32>,
    /// dimension 2 address step, low half
    pub st2_lo: Bits<32>,
    /// high half
    pub st2_hi: Bits<32>,
    /// dimension 3 address step, low half
    pub st3_lo: Bits<32>,
    /// high half
    pub st3_hi: Bits<32>,
    /// dimension 4 address step, low half
    pub st4_lo: Bits<32>,
    /// high half
    pub st4_hi: Bits<32>,
    /// im2col, dimension 1: in-bounds pixel steps `[kcl1, kch1)` counted from the instruction's
    /// coordinate (before the first wrap)
    pub kcl1: Bits<15>,
    /// end of that window
    pub kch1: Bits<15>,
    /// dimension 2: the same
    pub kcl2: Bits<15>,
    /// end
    pub kch2: Bits<15>,
    /// dimension 3: the same
    pub kcl3: Bits<15>,
    /// end
    pub kch3: Bits<15>,
    /// dimension 4 (only N: rank 5): the same
    pub kcl4: Bits<15>,
    /// end
    pub kch4: Bits<15>,
    /// im2col, spatial dimension 1: in-bounds steps counted from the lower corner (after a wrap)
    pub kll1: Bits<15>,
    /// end of that window
    pub klh1: Bits<15>,
    /// spatial dimension 2: the same
    pub kll2: Bits<15>,
    /// end
    pub klh2: Bits<15>,
    /// spatial dimension 3: the same
    pub kll3: Bits<15>,
    /// end
    pub klh3: Bits<15>,
    /// im2col, spatial dimension 1: a step reaching this many from the coordinate leaves the
    /// bounding box (wraps)
    pub kwc1: Bits<15>,
    /// the same counted from the lower corner
    pub kwl1: Bits<15>,
    /// spatial dimension 2: from the coordinate
    pub kwc2: Bits<15>,
    /// from the lower corner
    pub kwl2: Bits<15>,
    /// spatial dimension 3: from the coordinate
    pub kwc3: Bits<15>,
    /// from the lower corner
    pub kwl3: Bits<15>,
    /// im2col: start address - A2 (the address distance of spatial dimension 1 from its lower
    /// corner: (c1 - lower[0]) * globalStrides[0]), low half
    pub mb2_lo: Bits<32>,
    /// high half
    pub mb2_hi: Bits<32>,
    /// start - A3 (spatial dimensions 1 and 2 at their lower corners), low half
    pub mb3_lo: Bits<32>,
    /// high half
    pub mb3_hi: Bits<32>,
    /// start - A4 (spatial dimensions 1..3 at their lower corners), low half
    pub mb4_lo: Bits<32>,
    /// high half
    pub mb4_hi: Bits<32>,
}

/// The job as the slot iterator (BA) sees it (J's BA part, copied by BA): the row's slots,
/// byte masks and realignment, the shared-memory destination and what the beats carry.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSlotJob {
    /// store direction (shared -> global)
    pub store: bool,
    /// a shared::cta -> shared::cluster copy (`store` is set too: the read side is a store's)
    pub s2s: bool,
    /// a prefetch: reads whose data is dropped (no beat, no complete_tx)
    pub pf: bool,
    /// no in-bounds byte in a row: every row is OOB
    pub empty: bool,
    /// zero bytes per row (bulk size 0)
    pub zero: bool,
    /// loads with a misaligned row: output unit = slot - 1
    pub d: bool,
    /// swizzle (0 none, 1 32B, 2 64B, 3 128B)
    pub swz: Bits<2>,
    /// shared::cta base address of the box
    pub base: Bits<18>,
    /// destination CTAs (loads)
    pub ctam: Bits<16>,
    /// mbarrier word (loads)
    pub word: Bits<16>,
    /// bulk-group slot (stores)
    pub grp: Bits<TMA_SLOT_BITS>,
    /// OOB fill bytes
    pub fill: TmaData16,
    /// bytes per row
    pub rowbytes: Bits<24>,
    /// 16-byte beats per row
    pub nb: Bits<16>,
    /// last slot index of a row
    pub ns_m1: Bits<16>,
    /// first chunk (relative to the row's 16-byte aligned start) with an in-bounds byte
    pub ca: Bits<16>,
    /// last such chunk
    pub cb: Bits<16>,
    /// first output unit with an in-bounds byte
    pub jl: Bits<16>,
    /// last such unit
    pub jh: Bits<16>,
    /// byte mask of unit `jl`
    pub lomask: Bits<16>,
    /// byte mask of unit `jh`
    pub himask: Bits<16>,
    /// realignment offset
    pub off: Bits<4>,
    /// S2S: destination address - source address (shared::cta, modulo 2^18)
    pub doff: Bits<18>,
    /// S2S: the reduction
    pub red_op: TmaRedOp,
    /// S2S: its element type
    pub red_type: TmaRedType,
}

/// The decoder's own part of J: what its last step (Fin) derives the row constants from.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaDecJob {
    /// log2(element size)
    pub es: Bits<2>,
    /// row start in global memory modulo 16
    pub rot: Bits<4>,
    /// in-bounds bytes of a row: from
    pub lo_b: Bits<24>,
    /// in-bounds bytes of a row: to (exclusive)
    pub hi_b: Bits<24>,
    /// bytes per row
    pub rowbytes: Bits<24>,
}

/// A row being issued as sector reads.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaIss {
    /// a row is present
    pub valid: bool,
    /// the next wanted chunk's global address (16-byte aligned), low half
    pub a_lo: Bits<32>,
    /// high half
    pub a_hi: Bits<32>,
    /// next wanted chunk (relative to the row's 16-byte aligned start)
    pub p: Bits<16>,
    /// the row's last wanted chunk
    pub cb: Bits<16>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::Trace;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};

    #[test]
    fn descriptor_struct_is_the_image_layout() {
        // the packed TmaDescImage is the 128-byte image, bit for bit (LSB-first)
        let m = map(TensorMapSpec::tiled(
            Dt::Float16,
            GBASE + 0x1230,
            vec![100, 7, 3],
            vec![208, 208 * 7 + 32],
            vec![64, 5, 2],
        ));
        let img = m.0.encode();
        let hex: String = img.iter().rev().map(|b| format!("{b:02x}")).collect();
        assert_eq!(Trace::hex(m.1), hex.trim_start_matches('0'));
        assert_eq!(TmaDescImage::BITS, 1024);
        assert_eq!(m.1.gaddr_lo.to_u64(), 0x1230);
        assert_eq!(m.1.gaddr_hi.to_u64(), 1);
        assert_eq!(
            (
                m.1.box0_m1.to_u64(),
                m.1.box1_m1.to_u64(),
                m.1.gstride1_lo.to_u64()
            ),
            (63, 4, 208 * 7 + 32)
        );
    }
}
