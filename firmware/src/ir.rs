//! The typed IR of a firmware program: a PTX module with one `.entry` kernel.
//!
//! Registers, symbols and labels are interned into dense ids so engines index flat arrays.
//! Source locations are kept for diagnostics but do not take part in equality, so that
//! `parse(print(parse(src))) == parse(src)` is meaningful.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::ops::Opcode;

/// A position in a source file (1-based line and column).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Loc {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}
impl PartialEq for Loc {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

macro_rules! define_mods {
    ($( ($v:ident, $t:literal) ),* $(,)?) => {
        /// Every instruction modifier (the dotted suffixes of a mnemonic), by its PTX spelling.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[repr(u16)]
        pub enum Mod { $($v),* }
        const MOD_TEXT: &[&str] = &[$($t),*];
        const MOD_ALL: &[Mod] = &[$(Mod::$v),*];
    };
}

define_mods! {
    (Pred, "pred"), (B8, "b8"), (B16, "b16"), (B32, "b32"), (B64, "b64"), (B128, "b128"),
    (U8, "u8"), (U16, "u16"), (U32, "u32"), (U64, "u64"), (S8, "s8"), (S16, "s16"), (S32, "s32"),
    (S64, "s64"), (F16, "f16"), (F16x2, "f16x2"), (Bf16, "bf16"), (Bf16x2, "bf16x2"), (F32, "f32"),
    (F64, "f64"),
    // Types beyond the fundamental ones (PTX 5.2.5 alternate floating-point formats, 5.2.4 packed
    // types): tf32 and the fp8 formats of mma/wgmma/cvt, sub-byte integers, single bits.
    (Tf32, "tf32"), (E4m3, "e4m3"), (E5m2, "e5m2"), (E4m3x2, "e4m3x2"), (E5m2x2, "e5m2x2"),
    (U4, "u4"), (S4, "s4"), (B1, "b1"), (U16x2, "u16x2"), (S16x2, "s16x2"), (B1024, "b1024"),
    (Eq, "eq"), (Ne, "ne"), (Lt, "lt"), (Le, "le"), (Gt, "gt"), (Ge, "ge"), (Lo, "lo"), (Ls, "ls"),
    (Hi, "hi"), (Hs, "hs"), (Equ, "equ"), (Neu, "neu"), (Ltu, "ltu"), (Leu, "leu"), (Gtu, "gtu"),
    (Geu, "geu"), (Num, "num"), (Nan, "nan"),
    (And, "and"), (Or, "or"), (Xor, "xor"), (Cas, "cas"), (Exch, "exch"), (Add, "add"), (Inc, "inc"),
    (Dec, "dec"), (Min, "min"), (Max, "max"), (Popc, "popc"),
    (Global, "global"), (Shared, "shared"), (SharedCta, "shared::cta"),
    (SharedCluster, "shared::cluster"), (Local, "local"), (Param, "param"), (Const, "const"),
    (Weak, "weak"), (Volatile, "volatile"), (Relaxed, "relaxed"), (Acquire, "acquire"),
    (Release, "release"), (AcqRel, "acq_rel"), (Sc, "sc"), (Mmio, "mmio"),
    (Cta, "cta"), (Cluster, "cluster"), (Gpu, "gpu"), (Sys, "sys"), (Gl, "gl"),
    (V2, "v2"), (V4, "v4"), (V8, "v8"),
    (Ca, "ca"), (Cg, "cg"), (Cs, "cs"), (Lu, "lu"), (Cv, "cv"), (Wb, "wb"), (Wt, "wt"), (Nc, "nc"),
    (L2CacheHint, "L2::cache_hint"), (L1NoAllocate, "L1::no_allocate"),
    (L1EvictNormal, "L1::evict_normal"), (L1EvictUnchanged, "L1::evict_unchanged"),
    (L1EvictFirst, "L1::evict_first"), (L1EvictLast, "L1::evict_last"),
    (L2EvictFirst, "L2::evict_first"), (L2EvictLast, "L2::evict_last"),
    (L2EvictNormal, "L2::evict_normal"),
    (L2Prefetch64B, "L2::64B"), (L2Prefetch128B, "L2::128B"), (L2Prefetch256B, "L2::256B"), (L2, "L2"),
    (Rn, "rn"), (Rz, "rz"), (Rm, "rm"), (Rp, "rp"), (Rni, "rni"), (Rzi, "rzi"), (Rmi, "rmi"),
    (Rpi, "rpi"), (Rna, "rna"), (Rs, "rs"),
    (Wide, "wide"), (Shiftamt, "shiftamt"), (Sat, "sat"), (Cc, "cc"), (Ftz, "ftz"), (Approx, "approx"), (Full, "full"),
    (Uni, "uni"), (To, "to"), (Noftz, "noftz"),
    (Sync, "sync"), (All, "all"), (Any, "any"), (Ballot, "ballot"), (Abs, "abs"), (NaN, "NaN"),
    (LaunchDependents, "launch_dependents"), (Wait, "wait"),
    (Arrive, "arrive"), (Red, "red"), (Aligned, "aligned"),
    (Proxy, "proxy"), (Alias, "alias"), (Async, "async"), (AsyncGeneric, "async::generic"),
    (TensormapGeneric, "tensormap::generic"), (MbarrierInit, "mbarrier_init"),
    (SyncRestrictSharedCta, "sync_restrict::shared::cta"),
    (SyncRestrictSharedCluster, "sync_restrict::shared::cluster"),
    (ExpectTx, "expect_tx"), (NoComplete, "noComplete"), (Parity, "parity"), (Noinc, "noinc"),
    (MbarrierCompleteTxBytes, "mbarrier::complete_tx::bytes"), (BulkGroup, "bulk_group"),
    (D1, "1d"), (D2, "2d"), (D3, "3d"), (D4, "4d"), (D5, "5d"),
    (Tile, "tile"), (Im2col, "im2col"), (Im2colW, "im2col::w"), (Im2colW128, "im2col::w::128"),
    (TileGather4, "tile::gather4"), (TileScatter4, "tile::scatter4"), (Im2colNoOffs, "im2col_no_offs"),
    (MulticastCluster, "multicast::cluster"), (MulticastClusterAll, "multicast::cluster::all"),
    (CtaGroup1, "cta_group::1"), (CtaGroup2, "cta_group::2"), (CpMask, "cp_mask"), (IgnoreOob, "ignore_oob"), (Read, "read"),
    (IsCanceled, "is_canceled"), (GetFirstCtaid, "get_first_ctaid"),
    (GetFirstCtaidX, "get_first_ctaid::x"), (GetFirstCtaidY, "get_first_ctaid::y"),
    (GetFirstCtaidZ, "get_first_ctaid::z"),
    // Float and integer modes (PTX 9.7.3 - 9.7.8).
    (Relu, "relu"), (Satfinite, "satfinite"), (Xorsign, "xorsign"), (Oob, "oob"),
    // shfl.sync modes (PTX 9.7.9.6), prmt modes (9.7.9.7), shf (9.7.8.x).
    (Up, "up"), (Down, "down"), (Bfly, "bfly"), (Idx, "idx"),
    (F4e, "f4e"), (B4e, "b4e"), (Rc8, "rc8"), (Ecl, "ecl"), (Ecr, "ecr"), (Rc16, "rc16"),
    (L, "l"), (R, "r"), (Wrap, "wrap"), (Clamp, "clamp"),
    // Matrix instructions (PTX 9.7.14 - 9.7.15): layouts, counts, shapes.
    (Row, "row"), (Col, "col"), (Trans, "trans"), (X1, "x1"), (X2, "x2"), (X4, "x4"),
    (M8n8, "m8n8"), (M16n16, "m16n16"), (M8n16, "m8n16"),
    (M8n8k4, "m8n8k4"), (M8n8k16, "m8n8k16"), (M8n8k32, "m8n8k32"), (M8n8k128, "m8n8k128"),
    (M16n8k4, "m16n8k4"), (M16n8k8, "m16n8k8"), (M16n8k16, "m16n8k16"), (M16n8k32, "m16n8k32"),
    (M16n8k64, "m16n8k64"), (M16n8k128, "m16n8k128"), (M16n8k256, "m16n8k256"),
    // setmaxnreg, prefetch, tensormap.replace (PTX "setmaxnreg", 9.7.9 "prefetch", 9.7.9.26).
    (L1, "L1"), (Tensormap, "tensormap"),
    // testp (PTX 9.7.3.x).
    (Finite, "finite"), (Infinite, "infinite"), (Number, "number"), (Notanumber, "notanumber"),
    (Normal, "normal"), (Subnormal, "subnormal"),
    (GlobalAddress, "global_address"), (Rank, "rank"), (BoxDim, "box_dim"),
    (GlobalDim, "global_dim"), (GlobalStride, "global_stride"), (ElementStride, "element_stride"),
    (Elemtype, "elemtype"), (InterleaveLayout, "interleave_layout"), (SwizzleMode, "swizzle_mode"),
    (SwizzleAtomicity, "swizzle_atomicity"), (FillMode, "fill_mode"),
    // wgmma.mma_async shapes (PTX 9.7.15.2 Matrix Shape): m64nNk8 (tf32), m64nNk16 (f16, bf16),
    // m64nNk32 (e4m3, e5m2; s8/u8 on the N multiples of 16 up to 224), m64nNk256 (b1); the
    // sparse wgmma.mma_async.sp doubles K (k16 tf32, k32 f16/bf16, k64 below).
    (M64n8k8, "m64n8k8"), (M64n16k8, "m64n16k8"), (M64n24k8, "m64n24k8"), (M64n32k8, "m64n32k8"),
    (M64n40k8, "m64n40k8"), (M64n48k8, "m64n48k8"), (M64n56k8, "m64n56k8"), (M64n64k8, "m64n64k8"),
    (M64n72k8, "m64n72k8"), (M64n80k8, "m64n80k8"), (M64n88k8, "m64n88k8"), (M64n96k8, "m64n96k8"),
    (M64n104k8, "m64n104k8"), (M64n112k8, "m64n112k8"), (M64n120k8, "m64n120k8"),
    (M64n128k8, "m64n128k8"), (M64n136k8, "m64n136k8"), (M64n144k8, "m64n144k8"),
    (M64n152k8, "m64n152k8"), (M64n160k8, "m64n160k8"), (M64n168k8, "m64n168k8"),
    (M64n176k8, "m64n176k8"), (M64n184k8, "m64n184k8"), (M64n192k8, "m64n192k8"),
    (M64n200k8, "m64n200k8"), (M64n208k8, "m64n208k8"), (M64n216k8, "m64n216k8"),
    (M64n224k8, "m64n224k8"), (M64n232k8, "m64n232k8"), (M64n240k8, "m64n240k8"),
    (M64n248k8, "m64n248k8"), (M64n256k8, "m64n256k8"), (M64n8k16, "m64n8k16"),
    (M64n16k16, "m64n16k16"), (M64n24k16, "m64n24k16"), (M64n32k16, "m64n32k16"),
    (M64n40k16, "m64n40k16"), (M64n48k16, "m64n48k16"), (M64n56k16, "m64n56k16"),
    (M64n64k16, "m64n64k16"), (M64n72k16, "m64n72k16"), (M64n80k16, "m64n80k16"),
    (M64n88k16, "m64n88k16"), (M64n96k16, "m64n96k16"), (M64n104k16, "m64n104k16"),
    (M64n112k16, "m64n112k16"), (M64n120k16, "m64n120k16"), (M64n128k16, "m64n128k16"),
    (M64n136k16, "m64n136k16"), (M64n144k16, "m64n144k16"), (M64n152k16, "m64n152k16"),
    (M64n160k16, "m64n160k16"), (M64n168k16, "m64n168k16"), (M64n176k16, "m64n176k16"),
    (M64n184k16, "m64n184k16"), (M64n192k16, "m64n192k16"), (M64n200k16, "m64n200k16"),
    (M64n208k16, "m64n208k16"), (M64n216k16, "m64n216k16"), (M64n224k16, "m64n224k16"),
    (M64n232k16, "m64n232k16"), (M64n240k16, "m64n240k16"), (M64n248k16, "m64n248k16"),
    (M64n256k16, "m64n256k16"), (M64n8k32, "m64n8k32"), (M64n16k32, "m64n16k32"),
    (M64n24k32, "m64n24k32"), (M64n32k32, "m64n32k32"), (M64n40k32, "m64n40k32"),
    (M64n48k32, "m64n48k32"), (M64n56k32, "m64n56k32"), (M64n64k32, "m64n64k32"),
    (M64n72k32, "m64n72k32"), (M64n80k32, "m64n80k32"), (M64n88k32, "m64n88k32"),
    (M64n96k32, "m64n96k32"), (M64n104k32, "m64n104k32"), (M64n112k32, "m64n112k32"),
    (M64n120k32, "m64n120k32"), (M64n128k32, "m64n128k32"), (M64n136k32, "m64n136k32"),
    (M64n144k32, "m64n144k32"), (M64n152k32, "m64n152k32"), (M64n160k32, "m64n160k32"),
    (M64n168k32, "m64n168k32"), (M64n176k32, "m64n176k32"), (M64n184k32, "m64n184k32"),
    (M64n192k32, "m64n192k32"), (M64n200k32, "m64n200k32"), (M64n208k32, "m64n208k32"),
    (M64n216k32, "m64n216k32"), (M64n224k32, "m64n224k32"), (M64n232k32, "m64n232k32"),
    (M64n240k32, "m64n240k32"), (M64n248k32, "m64n248k32"), (M64n256k32, "m64n256k32"),
    (M64n8k256, "m64n8k256"), (M64n16k256, "m64n16k256"), (M64n24k256, "m64n24k256"),
    (M64n32k256, "m64n32k256"), (M64n48k256, "m64n48k256"), (M64n64k256, "m64n64k256"),
    (M64n80k256, "m64n80k256"), (M64n96k256, "m64n96k256"), (M64n112k256, "m64n112k256"),
    (M64n128k256, "m64n128k256"), (M64n144k256, "m64n144k256"), (M64n160k256, "m64n160k256"),
    (M64n176k256, "m64n176k256"), (M64n192k256, "m64n192k256"), (M64n208k256, "m64n208k256"),
    (M64n224k256, "m64n224k256"), (M64n240k256, "m64n240k256"), (M64n256k256, "m64n256k256"),
    // wgmma.mma_async.sp's 8-bit shapes (PTX 9.7.15.6: e4m3/e5m2 and s8/u8 at twice the dense K).
    (M64n8k64, "m64n8k64"), (M64n16k64, "m64n16k64"), (M64n24k64, "m64n24k64"),
    (M64n32k64, "m64n32k64"), (M64n40k64, "m64n40k64"), (M64n48k64, "m64n48k64"),
    (M64n56k64, "m64n56k64"), (M64n64k64, "m64n64k64"), (M64n72k64, "m64n72k64"),
    (M64n80k64, "m64n80k64"), (M64n88k64, "m64n88k64"), (M64n96k64, "m64n96k64"),
    (M64n104k64, "m64n104k64"), (M64n112k64, "m64n112k64"), (M64n120k64, "m64n120k64"),
    (M64n128k64, "m64n128k64"), (M64n136k64, "m64n136k64"), (M64n144k64, "m64n144k64"),
    (M64n152k64, "m64n152k64"), (M64n160k64, "m64n160k64"), (M64n168k64, "m64n168k64"),
    (M64n176k64, "m64n176k64"), (M64n184k64, "m64n184k64"), (M64n192k64, "m64n192k64"),
    (M64n200k64, "m64n200k64"), (M64n208k64, "m64n208k64"), (M64n216k64, "m64n216k64"),
    (M64n224k64, "m64n224k64"), (M64n232k64, "m64n232k64"), (M64n240k64, "m64n240k64"),
    (M64n248k64, "m64n248k64"), (M64n256k64, "m64n256k64"),
}

impl Mod {
    /// PTX spelling, without the leading dot.
    pub fn text(self) -> &'static str {
        MOD_TEXT[self as usize]
    }
    /// Modifier from its PTX spelling.
    pub fn from_text(s: &str) -> Option<Mod> {
        MOD_TEXT.iter().position(|t| *t == s).map(|i| MOD_ALL[i])
    }
    /// Whether this modifier names a data type.
    pub fn is_type(self) -> bool {
        (self as u16) <= (Mod::B1024 as u16)
    }
    /// Size in bytes of a data-type modifier.
    pub fn type_bytes(self) -> Option<u32> {
        use Mod::*;
        Some(match self {
            Pred => 1,
            B8 | U8 | S8 | E4m3 | E5m2 => 1,
            B16 | U16 | S16 | F16 | Bf16 | E4m3x2 | E5m2x2 => 2,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 | U16x2 | S16x2 => 4,
            B64 | U64 | S64 | F64 => 8,
            B128 => 16,
            B1024 => 128,
            _ => return None,
        })
    }
    /// A matrix shape modifier's `(m, n, k)` (`m16n8k16`: (16, 8, 16); `m8n8`: (8, 8, 0)).
    pub fn shape(self) -> Option<(u32, u32, u32)> {
        let t = self.text().strip_prefix('m')?;
        let (m, rest) = t.split_once('n')?;
        let (n, k) = rest.split_once('k').unwrap_or((rest, "0"));
        Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
    }
    /// Whether a data-type modifier is signed integer.
    pub fn is_signed(self) -> bool {
        matches!(self, Mod::S4 | Mod::S8 | Mod::S16 | Mod::S32 | Mod::S64 | Mod::S16x2)
    }
    /// Whether a data-type modifier is floating point.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Mod::F16 | Mod::F16x2 | Mod::Bf16 | Mod::Bf16x2 | Mod::F32 | Mod::F64 | Mod::Tf32 | Mod::E4m3 | Mod::E5m2 | Mod::E4m3x2 | Mod::E5m2x2
        )
    }
}

/// A set of modifiers, order-free (the printer writes them in the table's group order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModSet([u64; 8]);

impl ModSet {
    /// Adds a modifier.
    pub fn insert(&mut self, m: Mod) {
        let i = m as usize;
        self.0[i / 64] |= 1 << (i % 64);
    }
    /// Whether the set holds `m`.
    #[inline]
    pub fn has(&self, m: Mod) -> bool {
        let i = m as usize;
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    /// The members in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = Mod> + '_ {
        MOD_ALL.iter().copied().filter(|m| self.has(*m))
    }
    /// The first member that is a data type (the instruction type; `cvt` has two: see `types`).
    /// The data types come first in declaration order (`Mod::is_type`), so it is the lowest
    /// member when that is a type (every golden body asks: no walk over every modifier).
    #[inline]
    pub fn ty(&self) -> Option<Mod> {
        let k = self.0.iter().position(|&w| w != 0)?;
        let m = MOD_ALL[k * 64 + self.0[k].trailing_zeros() as usize];
        m.is_type().then_some(m)
    }
}

/// Register id: index into [`Kernel::regs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RegId(pub u32);
/// Symbol id: index into [`Module::symbols`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SymId(pub u32);
/// Function id: index into [`Module::funcs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FuncId(pub u32);
/// Label id: index into [`Kernel::labels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LabelId(pub u32);

/// A declared register.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegDecl {
    /// Name including the `%` if written so.
    pub name: String,
    /// Declared type (`.pred`, `.b32`, ...).
    pub ty: Mod,
    /// Range declaration this register came from: (`%r`, N) for `%r<N>`; printed back as one line.
    pub range: Option<(String, u32)>,
    /// Where it is declared.
    #[serde(default)]
    pub loc: Loc,
}

/// The state space of a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Space {
    /// `.shared` (CTA shared memory).
    Shared,
    /// `.global`.
    Global,
    /// `.param` (kernel parameter).
    Param,
    /// `.local`.
    Local,
    /// `.const`.
    Const,
}
impl Space {
    /// PTX spelling.
    pub fn text(self) -> &'static str {
        match self {
            Space::Shared => "shared",
            Space::Global => "global",
            Space::Param => "param",
            Space::Local => "local",
            Space::Const => "const",
        }
    }
}

/// A declared variable: `.shared .align 8 .b64 bar[4];`, `.param .u64 p`, `.extern .shared .b8 dyn[];`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// State space.
    pub space: Space,
    /// Element type.
    pub ty: Mod,
    /// `.align N` if given.
    pub align: Option<u32>,
    /// Array length; `Some(0)` for `[]` (extern, dynamic shared memory); `None` for a scalar.
    pub array: Option<u32>,
    /// `.extern`.
    pub is_extern: bool,
    /// `.ptr.shared.align N` etc. attributes on params, kept verbatim for printing.
    pub attrs: Vec<String>,
    /// Initializer values, if any (`= {1, 2}`, `= {0f3F800000}`, `= {foo, generic(bar)+8}`).
    pub init: Vec<Init>,
    /// Declared at module scope (outside every function).
    pub module_scope: bool,
    /// Where its name is declared.
    #[serde(default)]
    pub loc: Loc,
    /// The function that declares it (its body, its formal or return parameters); `None` at
    /// module scope.
    pub func: Option<FuncId>,
}

/// One initializer value of a variable (PTX 5.4.4 Initializers), stored at the element's size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Init {
    /// An integer.
    Int(i64),
    /// A float literal's bits (`0fXXXXXXXX` / `0dXXXXXXXXXXXXXXXX`).
    Float {
        /// The raw bits.
        bits: u64,
        /// `0d` (64-bit).
        double: bool,
    },
    /// The address of a variable or a function, plus an offset; `generic(var)` is the generic
    /// address of a `.global`/`.const`/`.shared` variable.
    Addr {
        /// What it is the address of.
        of: AddrOf,
        /// `generic(...)`.
        generic: bool,
        /// Byte offset.
        offset: i64,
    },
}

/// The target of an address initializer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AddrOf {
    /// A variable.
    Sym(SymId),
    /// A function.
    Func(FuncId),
}
impl Symbol {
    /// Size in bytes (0 for an unsized extern array).
    pub fn bytes(&self) -> u64 {
        let e = self.ty.type_bytes().unwrap_or(1) as u64;
        e * self.array.map(|n| n as u64).unwrap_or(1)
    }
    /// Alignment in bytes.
    pub fn alignment(&self) -> u64 {
        self.align.map(|a| a as u64).unwrap_or(self.ty.type_bytes().unwrap_or(1) as u64)
    }
}

/// Dimension selector of a special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dim {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

/// Special registers (PTX 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sreg {
    /// `%tid.d`
    Tid(Dim),
    /// `%ntid.d`
    Ntid(Dim),
    /// `%ctaid.d`
    Ctaid(Dim),
    /// `%nctaid.d`
    Nctaid(Dim),
    /// `%clusterid.d`
    Clusterid(Dim),
    /// `%nclusterid.d`
    Nclusterid(Dim),
    /// `%cluster_ctaid.d`
    ClusterCtaid(Dim),
    /// `%cluster_nctaid.d`
    ClusterNctaid(Dim),
    /// `%cluster_ctarank`
    ClusterCtarank,
    /// `%cluster_nctarank`
    ClusterNctarank,
    /// `%is_explicit_cluster`
    IsExplicitCluster,
    /// `%laneid`
    Laneid,
    /// `%warpid`
    Warpid,
    /// `%nwarpid`
    Nwarpid,
    /// `%smid`
    Smid,
    /// `%clock`
    Clock,
    /// `%clock64`
    Clock64,
    /// `%globaltimer`
    Globaltimer,
    /// `%lanemask_eq`
    LanemaskEq,
    /// `%lanemask_le`
    LanemaskLe,
    /// `%lanemask_lt`
    LanemaskLt,
    /// `%lanemask_ge`
    LanemaskGe,
    /// `%lanemask_gt`
    LanemaskGt,
    /// `%dynamic_smem_size`
    DynamicSmemSize,
    /// `%envreg<N>`, N in 0..=31: driver-defined read-only registers (PTX 10.14).
    Envreg(u8),
    /// `%total_smem_size`
    TotalSmemSize,
}

impl Sreg {
    /// Parses `%name` or `%name.x` (without a leading `%`, with the dimension split off).
    pub fn from_parts(name: &str, dim: Option<&str>) -> Option<Sreg> {
        let d = match dim {
            Some("x") => Some(Dim::X),
            Some("y") => Some(Dim::Y),
            Some("z") => Some(Dim::Z),
            Some(_) => return None,
            None => None,
        };
        let with_dim = |f: fn(Dim) -> Sreg| d.map(f);
        let plain = |s: Sreg| if d.is_none() { Some(s) } else { None };
        match name {
            "tid" => with_dim(Sreg::Tid),
            "ntid" => with_dim(Sreg::Ntid),
            "ctaid" => with_dim(Sreg::Ctaid),
            "nctaid" => with_dim(Sreg::Nctaid),
            "clusterid" => with_dim(Sreg::Clusterid),
            "nclusterid" => with_dim(Sreg::Nclusterid),
            "cluster_ctaid" => with_dim(Sreg::ClusterCtaid),
            "cluster_nctaid" => with_dim(Sreg::ClusterNctaid),
            "cluster_ctarank" => plain(Sreg::ClusterCtarank),
            "cluster_nctarank" => plain(Sreg::ClusterNctarank),
            "is_explicit_cluster" => plain(Sreg::IsExplicitCluster),
            "laneid" => plain(Sreg::Laneid),
            "warpid" => plain(Sreg::Warpid),
            "nwarpid" => plain(Sreg::Nwarpid),
            "smid" => plain(Sreg::Smid),
            "clock" => plain(Sreg::Clock),
            "clock64" => plain(Sreg::Clock64),
            "globaltimer" => plain(Sreg::Globaltimer),
            "lanemask_eq" => plain(Sreg::LanemaskEq),
            "lanemask_le" => plain(Sreg::LanemaskLe),
            "lanemask_lt" => plain(Sreg::LanemaskLt),
            "lanemask_ge" => plain(Sreg::LanemaskGe),
            "lanemask_gt" => plain(Sreg::LanemaskGt),
            "dynamic_smem_size" => plain(Sreg::DynamicSmemSize),
            _ if name.starts_with("envreg") => {
                let n = &name[6..];
                let canonical = n == "0" || !n.starts_with('0');
                match n.parse::<u8>() {
                    Ok(v) if v < 32 && canonical && d.is_none() => Some(Sreg::Envreg(v)),
                    _ => None,
                }
            }
            "total_smem_size" => plain(Sreg::TotalSmemSize),
            _ => None,
        }
    }
}

impl fmt::Display for Sreg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dim = |d: &Dim| match d {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        };
        match self {
            Sreg::Tid(d) => write!(f, "%tid.{}", dim(d)),
            Sreg::Ntid(d) => write!(f, "%ntid.{}", dim(d)),
            Sreg::Ctaid(d) => write!(f, "%ctaid.{}", dim(d)),
            Sreg::Nctaid(d) => write!(f, "%nctaid.{}", dim(d)),
            Sreg::Clusterid(d) => write!(f, "%clusterid.{}", dim(d)),
            Sreg::Nclusterid(d) => write!(f, "%nclusterid.{}", dim(d)),
            Sreg::ClusterCtaid(d) => write!(f, "%cluster_ctaid.{}", dim(d)),
            Sreg::ClusterNctaid(d) => write!(f, "%cluster_nctaid.{}", dim(d)),
            Sreg::ClusterCtarank => f.write_str("%cluster_ctarank"),
            Sreg::ClusterNctarank => f.write_str("%cluster_nctarank"),
            Sreg::IsExplicitCluster => f.write_str("%is_explicit_cluster"),
            Sreg::Laneid => f.write_str("%laneid"),
            Sreg::Warpid => f.write_str("%warpid"),
            Sreg::Nwarpid => f.write_str("%nwarpid"),
            Sreg::Smid => f.write_str("%smid"),
            Sreg::Clock => f.write_str("%clock"),
            Sreg::Clock64 => f.write_str("%clock64"),
            Sreg::Globaltimer => f.write_str("%globaltimer"),
            Sreg::LanemaskEq => f.write_str("%lanemask_eq"),
            Sreg::LanemaskLe => f.write_str("%lanemask_le"),
            Sreg::LanemaskLt => f.write_str("%lanemask_lt"),
            Sreg::LanemaskGe => f.write_str("%lanemask_ge"),
            Sreg::LanemaskGt => f.write_str("%lanemask_gt"),
            Sreg::DynamicSmemSize => f.write_str("%dynamic_smem_size"),
            Sreg::Envreg(n) => write!(f, "%envreg{n}"),
            Sreg::TotalSmemSize => f.write_str("%total_smem_size"),
        }
    }
}

/// Base of an address operand `[base+offset]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AddrBase {
    /// A register holding the address.
    Reg(RegId),
    /// A variable: its address in its state space.
    Sym(SymId),
    /// An absolute address `[0x100]`.
    Imm(u64),
}

/// An operand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    /// A register.
    Reg(RegId),
    /// `!p`: a negated predicate.
    NotReg(RegId),
    /// An integer immediate (also `0f...`/`0d...` float bit patterns, kept as bits).
    Imm(i64),
    /// A float literal written as `0fXXXXXXXX` (f32 bits) or `0dXXXXXXXXXXXXXXXX` (f64 bits).
    FloatBits {
        /// The raw bits.
        bits: u64,
        /// Whether written as `0d` (64-bit).
        double: bool,
    },
    /// A special register.
    Special(Sreg),
    /// A variable's address used as a value (`mov.u32 %r1, smem_buf;`).
    Sym(SymId),
    /// A memory operand `[base+offset]`.
    Addr {
        /// Base.
        base: AddrBase,
        /// Byte offset.
        offset: i64,
    },
    /// `{a, b, ...}`.
    Vector(Vec<Operand>),
    /// A tensor operand `[tensorMap, {c0, c1, ...}]` of the `cp.async.bulk.tensor` family (PTX
    /// 9.7.9.25.5): the tensor map's address (a `.param`/`.global` variable or a register holding
    /// its generic address, with an optional offset) and the tensor coordinates.
    Tensor {
        /// Base of the tensor map's address.
        base: AddrBase,
        /// Byte offset added to the base.
        offset: i64,
        /// The coordinates, innermost dimension first (registers or immediates).
        coords: Vec<Operand>,
    },
    /// A branch target (or a `.callprototype` label).
    Label(LabelId),
    /// A function, by name: a direct `call` target, or its address (`mov.u64 %rd, foo`).
    Func(FuncId),
    /// `(a, b, ...)`: the return and argument lists of `call` (PTX 9.7.12.5).
    List(Vec<Operand>),
    /// `_`, the sink.
    Sink,
    /// `d|p`: a destination and a predicate destination.
    Pair(RegId, RegId),
}

/// An instruction guard `@p` / `@!p`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Guard {
    /// Predicate register.
    pub reg: RegId,
    /// `@!p`.
    pub negated: bool,
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instr {
    /// The opcode (row of the opcode table).
    pub op: Opcode,
    /// Its modifiers.
    pub mods: ModSet,
    /// The second data type of `cvt` (destination type first in `mods`, this is the source).
    pub ty2: Option<Mod>,
    /// The third and fourth data types of rows with more type slots (`mma`'s
    /// `.dtype.atype.btype.ctype`, `wgmma`'s `.dtype.atype.btype`), in the row's group order.
    pub ty3: Option<Mod>,
    /// The fourth data type (`mma`'s `.ctype`).
    pub ty4: Option<Mod>,
    /// Guard predicate.
    pub guard: Option<Guard>,
    /// Operands in source order.
    pub operands: Vec<Operand>,
    /// Where it was written.
    pub loc: Loc,
    /// The CUDA source position the `.loc` directive before it names.
    pub src: SrcRef,
}

/// An index into [`Module::src_locs`], or none; like [`Loc`], not part of equality.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct SrcRef(pub Option<u32>);
impl PartialEq for SrcRef {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A source position from a `.loc file line col {, inlined_at file line col}` debugging
/// directive (PTX 11.6.2): `file` is a `.file` number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SrcLoc {
    /// `.file` number.
    pub file: u32,
    /// Line.
    pub line: u32,
    /// Column.
    pub col: u32,
    /// Where the function holding this position was inlined: another `src_locs` index.
    pub inlined_at: Option<u32>,
}

impl Instr {
    /// The instruction's data type (the first type modifier).
    #[inline]
    pub fn ty(&self) -> Option<Mod> {
        self.mods.ty()
    }
    /// Whether a modifier is present.
    #[inline]
    pub fn has(&self, m: Mod) -> bool {
        self.mods.has(m)
    }
}

/// The module's code: every function body (entries and `.func`s) linked into one instruction
/// list, with one register file and one label table, and the header of the entry that is
/// launched ([`Module::entry`]; [`Module::select_entry`] changes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The launched entry's name.
    pub name: String,
    /// `.visible`.
    pub visible: bool,
    /// The launched entry's parameters: symbols of space `.param`, in order.
    pub params: Vec<SymId>,
    /// The launched entry's performance directives (`.maxntid 128, 1, 1`,
    /// `.reqnctapercluster 2`), verbatim.
    pub directives: Vec<String>,
    /// Registers.
    pub regs: Vec<RegDecl>,
    /// Label names; `label_pc[i]` is the instruction index the label points at.
    pub labels: Vec<String>,
    /// Instruction index of each label.
    pub label_pc: Vec<u32>,
    /// Instructions.
    pub body: Vec<Instr>,
    /// `.callprototype` labels and their text after the directive name (`_ (.param .b32 _)`).
    pub protos: Vec<(LabelId, String)>,
    /// Statement-level `.pragma "...";` directives inside function bodies: the instruction index
    /// each stands before, and its string (`"nounroll"` applies to the loop whose header block
    /// holds it; PTX ISA, Pragma Strings). An entry-level pragma is one of the function's
    /// directives; a module-scope one an [`Item::Pragma`].
    #[serde(default)]
    pub pragmas: Vec<(u32, String)>,
    /// The strings of module-scope pragmas ([`Item::Pragma`]).
    #[serde(default)]
    pub module_pragmas: Vec<String>,
}

/// A formal parameter of a function: a `.param` variable, or (`.func` only) a `.reg`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Formal {
    /// `.param` space.
    Param(SymId),
    /// `.reg` (PTX 5.1.6.4: device functions may take registers).
    Reg(RegId),
}

/// A function of the module: an `.entry` kernel or a `.func`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Func {
    /// Name.
    pub name: String,
    /// `.entry` (a kernel) rather than `.func`.
    pub entry: bool,
    /// Linkage directives written before it (`.visible`, `.weak`, `.extern`), in order.
    pub linkage: Vec<String>,
    /// Return parameters (`.func` only).
    pub rets: Vec<Formal>,
    /// Parameters.
    pub params: Vec<Formal>,
    /// Performance directives after the parameter list, verbatim.
    pub directives: Vec<String>,
    /// Its instructions `[start, end)` in [`Kernel::body`]; `None` when only declared.
    pub body: Option<(u32, u32)>,
    /// Registers it declares `[first, end)` in [`Kernel::regs`] (formal `.reg`s included).
    pub regs: (u32, u32),
    /// Its labels `[first, end)` in [`Kernel::labels`].
    pub labels: (u32, u32),
}

impl Func {
    /// Whether the function is `.extern` (defined in another module).
    pub fn is_extern(&self) -> bool {
        self.linkage.iter().any(|l| l == ".extern")
    }
}

/// A module-scope item, in source order (the printer's order).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Item {
    /// A variable declaration.
    Var(SymId),
    /// A function declaration without a body (a prototype, or `.extern`).
    Decl(FuncId),
    /// A function definition.
    Def(FuncId),
    /// A module-scope `.pragma "...";` (PTX ISA, Pragma Strings), by index into
    /// [`Kernel::module_pragmas`]: it applies to every function of the module (`"nounroll"`: no
    /// loop is unrolled).
    Pragma(u32),
}

/// A PTX module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// `.version major.minor`.
    pub version: (u32, u32),
    /// `.target` list (e.g. `["sm_90a"]`).
    pub target: Vec<String>,
    /// `.address_size` (64).
    pub address_size: u32,
    /// Every variable: module-scope globals/shared and function-scope params/shared/locals.
    pub symbols: Vec<Symbol>,
    /// The code of every function, with the launched entry's header.
    pub kernel: Kernel,
    /// Every function, declared or defined.
    pub funcs: Vec<Func>,
    /// The launched entry (an index into `funcs`).
    pub entry: FuncId,
    /// Module-scope items in source order.
    pub items: Vec<Item>,
    /// `.file` directives: number and path.
    pub files: Vec<(u32, String)>,
    /// Source positions named by `.loc` directives ([`SrcRef`] indexes them).
    pub src_locs: Vec<SrcLoc>,
}

impl Module {
    /// The `sm_` number of the target (90 for `sm_90` and `sm_90a`).
    pub fn sm(&self) -> u32 {
        self.target
            .iter()
            .filter_map(|t| t.strip_prefix("sm_"))
            .filter_map(|t| t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok())
            .next()
            .unwrap_or(0)
    }
    /// Looks up a symbol by name (module scope first, then the launched entry's scope).
    pub fn symbol(&self, name: &str) -> Option<SymId> {
        let find = |f: &dyn Fn(&Symbol) -> bool| self.symbols.iter().position(|s| s.name == name && f(s)).map(|i| SymId(i as u32));
        find(&|s| s.module_scope).or_else(|| find(&|s| s.func == Some(self.entry))).or_else(|| find(&|_| true))
    }
    /// The function whose body holds instruction `pc`.
    pub fn func_at(&self, pc: u32) -> Option<FuncId> {
        self.funcs.iter().position(|f| f.body.is_some_and(|(a, b)| (a..b).contains(&pc))).map(|i| FuncId(i as u32))
    }
    /// The `.entry` functions.
    pub fn entries(&self) -> impl Iterator<Item = (FuncId, &Func)> + '_ {
        self.funcs.iter().enumerate().filter(|(_, f)| f.entry).map(|(i, f)| (FuncId(i as u32), f))
    }
    /// The first instruction of the launched entry.
    pub fn entry_pc(&self) -> u32 {
        self.funcs.get(self.entry.0 as usize).and_then(|f| f.body).map(|b| b.0).unwrap_or(0)
    }
    /// Makes `f` (an `.entry`) the launched kernel: [`Kernel`]'s header follows it.
    pub fn select_entry(&mut self, f: FuncId) {
        let func = &self.funcs[f.0 as usize];
        self.entry = f;
        self.kernel.name = func.name.clone();
        self.kernel.visible = func.linkage.iter().any(|l| l == ".visible");
        self.kernel.params = func.params.iter().filter_map(|p| match p {
            Formal::Param(s) => Some(*s),
            Formal::Reg(_) => None,
        }).collect();
        self.kernel.directives = func.directives.clone();
    }
    /// The numbers a performance directive of the launched entry gives (`.reqnctapercluster 2, 1, 1`
    /// gives `[2, 1, 1]`), if it has that directive.
    pub fn directive(&self, name: &str) -> Option<Vec<u64>> {
        self.kernel.directives.iter().find_map(|d| {
            let rest = d.strip_prefix(name)?;
            if !(rest.is_empty() || rest.starts_with(' ')) {
                return None;
            }
            Some(rest.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        })
    }
    /// A CUDA source position as `(file path, line, col)`: the first position of the inlining
    /// chain in `main_file` (the compiled `.cu`), else the innermost one.
    pub fn source_position(&self, r: SrcRef, main_file: Option<&str>) -> Option<(String, u32, u32)> {
        let mut k = r.0?;
        let file = |n: u32| self.files.iter().find(|(i, _)| *i == n).map(|(_, p)| p.clone()).unwrap_or_else(|| format!("file{n}"));
        let first = self.src_locs.get(k as usize)?;
        let innermost = (file(first.file), first.line, first.col);
        if let Some(main) = main_file {
            for _ in 0..64 {
                let l = self.src_locs.get(k as usize)?;
                if file(l.file) == main {
                    return Some((file(l.file), l.line, l.col));
                }
                match l.inlined_at {
                    Some(n) => k = n,
                    None => break,
                }
            }
        }
        Some(innermost)
    }
}

#[cfg(test)]
mod modset_tests {
    use super::{ModSet, MOD_ALL};

    #[test]
    fn ty_is_the_first_type_member_in_declaration_order() {
        // every modifier alone, every pair (the instruction type is the first type among them)
        for (a, &ma) in MOD_ALL.iter().enumerate() {
            for &mb in &MOD_ALL[a..] {
                let mut s = ModSet::default();
                s.insert(ma);
                s.insert(mb);
                assert_eq!(s.ty(), s.iter().find(|m| m.is_type()), "{ma:?} {mb:?}");
            }
        }
        assert_eq!(ModSet::default().ty(), None);
    }
}
