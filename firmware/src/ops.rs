//! The opcode table: one row per PTX instruction, driving the parser, the printer and (through
//! [`crate::opcode_table`]) the executors of every engine.
//!
//! A row gives the dotted mnemonic prefix (`mbarrier.arrive`), the operand pattern, the modifier
//! groups the instruction accepts (the `.sem`, `.scope`, `.space`, `.type`, ... sets of PTX's syntax
//! blocks), and the oldest target that has it. Mnemonics are matched longest-prefix on their dotted
//! segments; the remaining segments must each fall in one group of the row, at most one per group,
//! and every required group must be present. Order is free on input (ptxas accepts several orders,
//! e.g. `mbarrier.arrive_drop.expect_tx.shared.relaxed`), canonical (group order) on output.
//!
//! Operand patterns are comma-separated positions, each a set of letters, `?` when optional:
//! `d` destination register, `_` the sink `_`, `|` a `d|p` pair, `s` a source value (register,
//! immediate, special register, symbol), `!` a negated predicate, `a` an address `[...]`,
//! `v` a vector `{...}`, `w` a vector of destination registers (ldmatrix's and mma's results: the
//! timing model's scoreboard writes them), `t` a tensor operand `[tensorMap, {c0, ...}]`, `l` a label, `p` a
//! parenthesized list `(a, b)` (call's return and argument lists), `f` a function name or a
//! register holding a function's address (call's target).
//! Alternative patterns are separated by ` / ` (`bar.sync a{, b}` versus
//! `bar.red.popc.u32 d, a{, b}, {!}c`); the first that fits wins.

use crate::ir::Mod;

/// A set of modifiers of which at most one may appear (`req`: exactly one).
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// Whether one member must appear.
    pub req: bool,
    /// The members.
    pub of: &'static [Mod],
}

const fn opt(of: &'static [Mod]) -> Group {
    Group { req: false, of }
}
const fn req(of: &'static [Mod]) -> Group {
    Group { req: true, of }
}

/// One row of the opcode table.
#[derive(Debug)]
pub struct OpSpec {
    /// The opcode this row describes.
    pub op: Opcode,
    /// Dotted mnemonic prefix as written in PTX.
    pub name: &'static str,
    /// Operand pattern (module doc).
    pub operands: &'static str,
    /// Modifier groups, in canonical print order.
    pub groups: &'static [Group],
    /// Oldest `sm_` target that has the instruction (ptxas rejects it below).
    pub min_sm: u32,
}

use Mod::*;

// ---- modifier groups shared by many rows -------------------------------------------------------
const INT_TYPES: &[Mod] = &[B16, B32, B64, U16, U32, U64, S16, S32, S64];
const ALL_TYPES: &[Mod] = &[
    Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, Bf16, Bf16x2, F32,
    F64,
];
const ARITH_TYPES: &[Mod] = &[U16, U32, U64, S16, S32, S64, F32, F64, F16, Bf16];
/// add/sub/min/max: the integer, float and packed (`.f16x2`, `.bf16x2`, `.u16x2`, `.s16x2`) types.
const ADD_TYPES: &[Mod] = &[U16, U32, U64, S16, S32, S64, F32, F64, F16, F16x2, Bf16, Bf16x2, U16x2, S16x2];
const MUL_TYPES: &[Mod] = &[U16, U32, U64, S16, S32, S64, F32, F64, F16, F16x2, Bf16, Bf16x2];
const SIGN_TYPES: &[Mod] = &[S16, S32, S64, F32, F64, F16, F16x2, Bf16, Bf16x2];
const HALF_FN_TYPES: &[Mod] = &[F32, F16, F16x2, Bf16, Bf16x2];
/// cvt's types: every fundamental type plus tf32 and the fp8 pairs (PTX 9.7.9.21).
const CVT_TYPES: &[Mod] = &[
    Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, Bf16, Bf16x2, F32,
    F64, Tf32, E4m3x2, E5m2x2,
];
const SPACES_ISSPACEP: &[Mod] = &[Const, Global, Local, Shared, SharedCta, SharedCluster, Param];
const PRMT_MODES: &[Mod] = &[F4e, B4e, Rc8, Ecl, Ecr, Rc16];
const MMA_SHAPES: &[Mod] = &[M8n8k4, M8n8k16, M8n8k32, M8n8k128, M16n8k4, M16n8k8, M16n8k16, M16n8k32, M16n8k64, M16n8k128, M16n8k256];
const MMA_ACC: &[Mod] = &[F16, F32, S32, F64];
const MMA_IN: &[Mod] = &[F16, Bf16, Tf32, E4m3, E5m2, S8, U8, S4, U4, B1, F64];
const WGMMA_ACC: &[Mod] = &[F16, F32, S32];
const WGMMA_IN: &[Mod] = &[F16, Bf16, Tf32, E4m3, E5m2, S8, U8, B1];
const WGMMA_SHAPES: &[Mod] = &[
    M64n8k8, M64n16k8, M64n24k8, M64n32k8, M64n40k8, M64n48k8, M64n56k8, M64n64k8, M64n72k8, M64n80k8,
    M64n88k8, M64n96k8, M64n104k8, M64n112k8, M64n120k8, M64n128k8, M64n136k8, M64n144k8, M64n152k8,
    M64n160k8, M64n168k8, M64n176k8, M64n184k8, M64n192k8, M64n200k8, M64n208k8, M64n216k8, M64n224k8,
    M64n232k8, M64n240k8, M64n248k8, M64n256k8, M64n8k16, M64n16k16, M64n24k16, M64n32k16, M64n40k16,
    M64n48k16, M64n56k16, M64n64k16, M64n72k16, M64n80k16, M64n88k16, M64n96k16, M64n104k16,
    M64n112k16, M64n120k16, M64n128k16, M64n136k16, M64n144k16, M64n152k16, M64n160k16, M64n168k16,
    M64n176k16, M64n184k16, M64n192k16, M64n200k16, M64n208k16, M64n216k16, M64n224k16, M64n232k16,
    M64n240k16, M64n248k16, M64n256k16, M64n8k32, M64n16k32, M64n24k32, M64n32k32, M64n40k32,
    M64n48k32, M64n56k32, M64n64k32, M64n72k32, M64n80k32, M64n88k32, M64n96k32, M64n104k32,
    M64n112k32, M64n120k32, M64n128k32, M64n136k32, M64n144k32, M64n152k32, M64n160k32, M64n168k32,
    M64n176k32, M64n184k32, M64n192k32, M64n200k32, M64n208k32, M64n216k32, M64n224k32, M64n232k32,
    M64n240k32, M64n248k32, M64n256k32, M64n8k256, M64n16k256, M64n24k256, M64n32k256, M64n48k256,
    M64n64k256, M64n80k256, M64n96k256, M64n112k256, M64n128k256, M64n144k256, M64n160k256,
    M64n176k256, M64n192k256, M64n208k256, M64n224k256, M64n240k256, M64n256k256,
];
/// `wgmma.mma_async.sp` multiplicand types (PTX 9.7.15.6: no `.b1` sparse form).
const WGMMA_SP_IN: &[Mod] = &[F16, Bf16, Tf32, E4m3, E5m2, S8, U8];
/// `wgmma.mma_async.sp` shapes (PTX 9.7.15.6, ptxas 13.5): K twice the dense one, m64nNk16
/// (tf32), m64nNk32 (f16, bf16), m64nNk64 (e4m3, e5m2, s8, u8); which N a type takes is
/// `mma::wgmma_form`'s rule, shared with the dense form.
const WGMMA_SP_SHAPES: &[Mod] = &[
    M64n8k16, M64n16k16, M64n24k16, M64n32k16, M64n40k16, M64n48k16, M64n56k16, M64n64k16, M64n72k16,
    M64n80k16, M64n88k16, M64n96k16, M64n104k16, M64n112k16, M64n120k16, M64n128k16, M64n136k16,
    M64n144k16, M64n152k16, M64n160k16, M64n168k16, M64n176k16, M64n184k16, M64n192k16, M64n200k16,
    M64n208k16, M64n216k16, M64n224k16, M64n232k16, M64n240k16, M64n248k16, M64n256k16, M64n8k32,
    M64n16k32, M64n24k32, M64n32k32, M64n40k32, M64n48k32, M64n56k32, M64n64k32, M64n72k32, M64n80k32,
    M64n88k32, M64n96k32, M64n104k32, M64n112k32, M64n120k32, M64n128k32, M64n136k32, M64n144k32,
    M64n152k32, M64n160k32, M64n168k32, M64n176k32, M64n184k32, M64n192k32, M64n200k32, M64n208k32,
    M64n216k32, M64n224k32, M64n232k32, M64n240k32, M64n248k32, M64n256k32, M64n8k64, M64n16k64,
    M64n24k64, M64n32k64, M64n40k64, M64n48k64, M64n56k64, M64n64k64, M64n72k64, M64n80k64, M64n88k64,
    M64n96k64, M64n104k64, M64n112k64, M64n120k64, M64n128k64, M64n136k64, M64n144k64, M64n152k64,
    M64n160k64, M64n168k64, M64n176k64, M64n184k64, M64n192k64, M64n200k64, M64n208k64, M64n216k64,
    M64n224k64, M64n232k64, M64n240k64, M64n248k64, M64n256k64,
];
const TMAP_FIELDS: &[Mod] = &[GlobalAddress, Rank, BoxDim, GlobalDim, GlobalStride, ElementStride, Elemtype, InterleaveLayout, SwizzleMode, SwizzleAtomicity, FillMode];
const BIT_TYPES: &[Mod] = &[Pred, B16, B32, B64];
const SHIFT_TYPES: &[Mod] = &[B16, B32, B64, U16, U32, U64, S16, S32, S64];
const CMP_OPS: &[Mod] = &[
    Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan,
];
const BOOL_OPS: &[Mod] = &[And, Or, Xor];
const SPACES_LDST: &[Mod] = &[Global, Shared, SharedCta, SharedCluster, Local, Param, Const];
const SEM_LDST: &[Mod] = &[Weak, Volatile, Relaxed, Acquire, Release, Mmio];
const SCOPES: &[Mod] = &[Cta, Cluster, Gpu, Sys];
const SCOPE_CTA_CLUSTER: &[Mod] = &[Cta, Cluster];
const VECS: &[Mod] = &[V2, V4, V8];
const CACHE_OPS_LD: &[Mod] = &[Ca, Cg, Cs, Lu, Cv];
const CACHE_OPS_ST: &[Mod] = &[Wb, Cg, Cs, Wt];
const ATOM_OPS: &[Mod] = &[And, Or, Xor, Cas, Exch, Add, Inc, Dec, Min, Max];
const ATOM_SEM: &[Mod] = &[Relaxed, Acquire, Release, AcqRel];
const ATOM_SPACE: &[Mod] = &[Global, Shared, SharedCta, SharedCluster];
const ATOM_TYPES: &[Mod] = &[B16, B32, B64, B128, U32, U64, S32, S64, F16, F16x2, Bf16, Bf16x2, F32, F64];
const CACHE_HINT: &[Mod] = &[L2CacheHint];
const CACHE_EVICT: &[Mod] = &[L1NoAllocate, L1EvictNormal, L1EvictUnchanged, L1EvictFirst, L1EvictLast, L2EvictFirst, L2EvictLast, L2EvictNormal];
const SMEM_CTA: &[Mod] = &[Shared, SharedCta];
const SMEM_ANY: &[Mod] = &[Shared, SharedCta, SharedCluster];
const ROUNDING: &[Mod] = &[Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi, Rna, Rs];
const MUL_MODE: &[Mod] = &[Lo, Hi, Wide];
const B64_ONLY: &[Mod] = &[B64];
const COMPLETE_TX: &[Mod] = &[MbarrierCompleteTxBytes];
const BULK_GROUP: &[Mod] = &[BulkGroup];
const TENSOR_DIMS: &[Mod] = &[D1, D2, D3, D4, D5];
const LOAD_MODES: &[Mod] = &[Tile, Im2col, Im2colW, Im2colW128, TileGather4, TileScatter4, Im2colNoOffs];
const MULTICAST: &[Mod] = &[MulticastCluster];
const CTA_GROUP: &[Mod] = &[CtaGroup1, CtaGroup2];
const RED_OPS: &[Mod] = &[Add, Min, Max, Inc, Dec, And, Or, Xor];
const PREFETCH_SIZE: &[Mod] = &[L2Prefetch64B, L2Prefetch128B, L2Prefetch256B];

/// Calls `$m!` with the whole opcode table: `(Variant, "mnemonic", "operands", [groups], min_sm)`
/// rows. The firmware crate expands it into [`Opcode`] and [`OPCODES`]; an engine expands it into
/// its executor dispatch, so a row without an executor is a compile error there.
#[macro_export]
macro_rules! opcode_table {
    ($m:ident) => {
        $m! {
            // ---- data movement and arithmetic (PTX 9.7.1 - 9.7.9) ----
            (Mov, "mov", "dv,sv", [req(ALL_TYPES)], 20),
            (Add, "add", "d,s,s", [opt(ROUNDING), opt(&[Ftz]), opt(&[Sat, Cc]), req(ADD_TYPES)], 20),
            (Addc, "addc", "d,s,s", [opt(&[Cc]), req(&[U32, S32, U64, S64, B32, B64])], 20),
            (Sub, "sub", "d,s,s", [opt(ROUNDING), opt(&[Ftz]), opt(&[Sat, Cc]), req(ADD_TYPES)], 20),
            (Subc, "subc", "d,s,s", [opt(&[Cc]), req(&[U32, S32, U64, S64, B32, B64])], 20),
            (Mul, "mul", "d,s,s", [opt(MUL_MODE), opt(ROUNDING), opt(&[Ftz]), opt(&[Sat]), req(MUL_TYPES)], 20),
            (Mad, "mad", "d,s,s,s", [opt(MUL_MODE), opt(&[Sat, Cc]), opt(&[Ftz]), opt(ROUNDING), req(ARITH_TYPES)], 20),
            (Fma, "fma", "d,s,s,s", [req(ROUNDING), opt(&[Ftz]), opt(&[Sat]), opt(&[Oob]), opt(&[Relu]), req(&[F16, F16x2, F32, F64, Bf16, Bf16x2])], 20),
            (Div, "div", "d,s,s", [opt(&[Approx, Full]), opt(&[Ftz]), opt(ROUNDING), req(ARITH_TYPES)], 20),
            (Rem, "rem", "d,s,s", [req(INT_TYPES)], 20),
            (Abs, "abs", "d,s", [opt(&[Ftz]), req(SIGN_TYPES)], 20),
            (Neg, "neg", "d,s", [opt(&[Ftz]), req(SIGN_TYPES)], 20),
            (Min, "min", "d,s,s", [opt(&[Ftz]), opt(&[NaN]), opt(&[Xorsign]), opt(&[Abs]), opt(&[Relu]), req(ADD_TYPES)], 20),
            (Max, "max", "d,s,s", [opt(&[Ftz]), opt(&[NaN]), opt(&[Xorsign]), opt(&[Abs]), opt(&[Relu]), req(ADD_TYPES)], 20),
            (Copysign, "copysign", "d,s,s", [req(&[F32, F64])], 20),
            (Testp, "testp", "d,s", [req(&[Finite, Infinite, Number, Notanumber, Normal, Subnormal]), req(&[F32, F64])], 20),
            (Mul24, "mul24", "d,s,s", [req(&[Hi, Lo]), req(&[U32, S32])], 20),
            (Mad24, "mad24", "d,s,s,s", [req(&[Hi, Lo]), opt(&[Sat]), req(&[U32, S32])], 20),
            // ---- special functions (PTX 9.7.3.13 - 9.7.3.22, 9.7.4.9 - 9.7.4.10) ----
            (Sqrt, "sqrt", "d,s", [opt(&[Approx]), opt(ROUNDING), opt(&[Ftz]), req(&[F32, F64])], 20),
            (Rsqrt, "rsqrt", "d,s", [req(&[Approx]), opt(&[Ftz]), req(&[F32, F64])], 20),
            (Rcp, "rcp", "d,s", [opt(&[Approx]), opt(ROUNDING), opt(&[Ftz]), req(&[F32, F64])], 20),
            (Ex2, "ex2", "d,s", [req(&[Approx]), opt(&[Ftz]), req(HALF_FN_TYPES)], 20),
            (Lg2, "lg2", "d,s", [req(&[Approx]), opt(&[Ftz]), req(&[F32])], 20),
            (Sin, "sin", "d,s", [req(&[Approx]), opt(&[Ftz]), req(&[F32])], 20),
            (Cos, "cos", "d,s", [req(&[Approx]), opt(&[Ftz]), req(&[F32])], 20),
            (Tanh, "tanh", "d,s", [req(&[Approx]), req(HALF_FN_TYPES)], 75),
            (And, "and", "d,s!,s!", [req(BIT_TYPES)], 20),
            (Or, "or", "d,s!,s!", [req(BIT_TYPES)], 20),
            (Xor, "xor", "d,s!,s!", [req(BIT_TYPES)], 20),
            (Not, "not", "d,s!", [req(BIT_TYPES)], 20),
            (Cnot, "cnot", "d,s", [req(&[B16, B32, B64])], 20),
            (Shl, "shl", "d,s,s", [req(&[B16, B32, B64])], 20),
            (Shr, "shr", "d,s,s", [req(SHIFT_TYPES)], 20),
            (Popc, "popc", "d,s", [req(&[B32, B64])], 20),
            (Clz, "clz", "d,s", [req(&[B32, B64])], 20),
            (Brev, "brev", "d,s", [req(&[B32, B64])], 20),
            (Bfind, "bfind", "d,s", [opt(&[Shiftamt]), req(&[U32, U64, S32, S64])], 20),
            (Bfe, "bfe", "d,s,s,s", [req(&[U32, U64, S32, S64])], 20),
            (Bfi, "bfi", "d,s,s,s,s", [req(&[B32, B64])], 20),
            (Prmt, "prmt", "d,s,s,s", [req(&[B32]), opt(PRMT_MODES)], 20),
            (Lop3, "lop3", "d,s,s,s,s", [req(&[B32])], 50),
            (Fns, "fns", "d,s,s,s", [req(&[B32])], 30),
            (Shf, "shf", "d,s,s,s", [req(&[L, R]), req(&[Wrap, Clamp]), req(&[B32])], 32),
            (Bmsk, "bmsk", "d,s,s", [req(&[Clamp, Wrap]), req(&[B32])], 70),
            (Szext, "szext", "d,s,s", [req(&[Clamp, Wrap]), req(&[U32, S32])], 70),
            (Sad, "sad", "d,s,s,s", [req(INT_TYPES_SAD)], 20),
            (Dp4a, "dp4a", "d,s,s,s", [req(&[U32, S32]), req(&[U32, S32])], 61),
            (Dp2a, "dp2a", "d,s,s,s", [req(&[Lo, Hi]), req(&[U32, S32]), req(&[U32, S32])], 61),
            (Isspacep, "isspacep", "d,s", [req(SPACES_ISSPACEP)], 20),
            (Setp, "setp", "|,s,s,s!?", [req(CMP_OPS), opt(BOOL_OPS), opt(&[Ftz]), req(ARITH_TYPES_SETP)], 20),
            (Set, "set", "d,s,s,s!?", [req(CMP_OPS), opt(BOOL_OPS), opt(&[Ftz]), req(&[U32, S32, F32, F16, F16x2, Bf16, Bf16x2]), req(ARITH_TYPES_SETP)], 20),
            (Selp, "selp", "d,s,s,s!", [req(ALL_TYPES)], 20),
            (Cvt, "cvt", "d,s,s?", [opt(ROUNDING), opt(&[Ftz]), opt(&[Sat]), opt(&[Satfinite]), opt(&[Relu]), req(CVT_TYPES), req(CVT_TYPES)], 20),
            (Cvta, "cvta", "d,s", [opt(&[To]), req(&[Shared, SharedCta, SharedCluster, Global, Local, Param, Const]), req(&[U32, U64])], 20),
            (Ld, "ld", "dv,a", [opt(SEM_LDST), opt(SCOPES), opt(SPACES_LDST), opt(&[Nc]), opt(CACHE_OPS_LD), opt(CACHE_EVICT), opt(CACHE_HINT), opt(PREFETCH_SIZE), opt(VECS), req(ALL_TYPES)], 20),
            (St, "st", "a,sv", [opt(SEM_LDST), opt(SCOPES), opt(SPACES_LDST), opt(CACHE_OPS_ST), opt(CACHE_HINT), opt(VECS), req(ALL_TYPES)], 20),
            (Atom, "atom", "d,a,s,s?", [opt(ATOM_SEM), opt(SCOPES), opt(ATOM_SPACE), req(ATOM_OPS), opt(&[Noftz]), opt(CACHE_HINT), opt(VECS), req(ATOM_TYPES)], 20),
            (Red, "red", "a,s,s?", [opt(&[Relaxed, Release]), opt(SCOPES), opt(ATOM_SPACE), req(RED_OPS), opt(&[Noftz]), opt(CACHE_HINT), opt(VECS), req(ATOM_TYPES)], 20),
            // ---- control flow (PTX 9.7.12) ----
            (Bra, "bra", "l", [opt(&[Uni])], 20),
            (Exit, "exit", "", [], 20),
            (Ret, "ret", "", [opt(&[Uni])], 20),
            (Call, "call", "p,f,p,l? / f,p,l? / f,l?", [opt(&[Uni])], 20),
            (Trap, "trap", "", [], 20),
            (Brkpt, "brkpt", "", [], 20),
            (Nanosleep, "nanosleep", "s", [req(&[U32])], 70),
            // ---- cluster and warp (PTX 9.7.9.x, 9.7.13.8 - 9.7.13.14) ----
            (Mapa, "mapa", "d,s,s", [opt(&[SharedCluster]), req(&[U32, U64])], 90),
            (Getctarank, "getctarank", "d,s", [opt(&[SharedCluster]), req(&[U32, U64])], 90),
            (Elect, "elect", "|,s", [req(&[Sync])], 90),
            (Activemask, "activemask", "d", [req(&[B32])], 70),
            (Vote, "vote", "d,s!,s", [req(&[Sync]), req(&[All, Any, Uni, Ballot]), req(&[Pred, B32])], 70),
            (Match, "match", "|,s,s", [req(&[Any, All]), req(&[Sync]), req(&[B32, B64])], 70),
            (ShflSync, "shfl.sync", "|,s,s,s,s", [req(&[Up, Down, Bfly, Idx]), req(&[B32])], 70),
            (Redux, "redux", "d,s,s", [req(&[Sync]), req(&[Add, Min, Max, And, Or, Xor]), opt(&[Abs]), opt(&[NaN]), req(&[U32, S32, B32, F32])], 80),
            (BarWarpSync, "bar.warp.sync", "s", [], 70),
            (Griddepcontrol, "griddepcontrol", "", [req(&[LaunchDependents, Wait])], 90),
            // ---- named barriers (PTX 9.7.13.1) ----
            (Bar, "bar", "s,s? / d,s,s! / d,s,s,s!", [opt(&[Cta]), req(&[Sync, Arrive, Red]), opt(&[Popc, And, Or]), opt(&[U32, Pred])], 20),
            (Barrier, "barrier", "s,s? / d,s,s! / d,s,s,s!", [opt(&[Cta]), req(&[Sync, Arrive, Red]), opt(&[Popc, And, Or]), opt(&[Aligned]), opt(&[U32, Pred])], 70),
            // ---- cluster barrier (PTX 9.7.13.3) ----
            (BarrierClusterArrive, "barrier.cluster.arrive", "", [opt(&[Release, Relaxed]), opt(&[Aligned])], 90),
            (BarrierClusterWait, "barrier.cluster.wait", "", [opt(&[Acquire]), opt(&[Aligned])], 90),
            // ---- fences (PTX 9.7.13.4) ----
            (Membar, "membar", "", [req(&[Cta, Gl, Sys, Proxy]), opt(&[Alias, Async]), opt(&[Global, SharedCta, SharedCluster])], 20),
            // Print order: `fence.proxy.tensormap::generic.release.gpu` needs the proxy kind before
            // .sem (ptxas rejects `fence.release.proxy.tensormap::generic.gpu`); the other kinds
            // keep .sem first (`fence.release.mbarrier_init.cluster`, as the committed traces ran).
            (Fence, "fence", "a?,s?", [opt(&[Proxy]), opt(&[TensormapGeneric]), opt(&[Sc, AcqRel, Acquire, Release]), opt(&[SyncRestrictSharedCta, SyncRestrictSharedCluster]), opt(&[Alias, Async, AsyncGeneric, MbarrierInit]), opt(&[Global, SharedCta, SharedCluster]), opt(SCOPES)], 20),
            // ---- red.async / st.async (PTX 9.7.13.7, 9.7.9.12) ----
            (RedAsync, "red.async", "a,s,a?", [opt(&[Mmio]), req(&[Relaxed, Release]), req(&[Cluster, Gpu]), opt(&[SharedCluster, Global]), opt(COMPLETE_TX), req(&[Add, Min, Max, Inc, Dec, And, Or, Xor]), req(&[U32, S32, U64, S64, B32])], 90),
            (StAsync, "st.async", "a,sv,a", [opt(&[Weak, Relaxed, Release]), opt(&[Cluster]), opt(&[SharedCluster]), opt(COMPLETE_TX), opt(&[V2, V4]), req(&[B32, B64, U32, U64, S32, S64, F32, F64])], 90),
            // ---- mbarrier (PTX 9.7.13.15) ----
            (MbarrierInit, "mbarrier.init", "a,s", [opt(SMEM_CTA), req(B64_ONLY)], 80),
            (MbarrierInval, "mbarrier.inval", "a", [opt(SMEM_CTA), req(B64_ONLY)], 80),
            (MbarrierExpectTx, "mbarrier.expect_tx", "a,s", [opt(&[Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 90),
            (MbarrierCompleteTx, "mbarrier.complete_tx", "a,s", [opt(&[Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 90),
            (MbarrierArrive, "mbarrier.arrive", "d_,a,s?", [opt(&[ExpectTx, NoComplete]), opt(&[Release, Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 80),
            (MbarrierArriveDrop, "mbarrier.arrive_drop", "d_,a,s?", [opt(&[ExpectTx, NoComplete]), opt(&[Release, Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 80),
            (MbarrierTestWait, "mbarrier.test_wait", "d,a,s", [opt(&[Parity]), opt(&[Acquire, Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 80),
            (MbarrierTryWait, "mbarrier.try_wait", "d,a,s,s?", [opt(&[Parity]), opt(&[Acquire, Relaxed]), opt(SCOPE_CTA_CLUSTER), opt(SMEM_ANY), req(B64_ONLY)], 90),
            (MbarrierPendingCount, "mbarrier.pending_count", "d,s", [req(B64_ONLY)], 80),
            // ---- cp.async (PTX 9.7.9.25, 9.7.13.15.15) ----
            (CpAsync, "cp.async", "a,a,s,s?,s?", [req(&[Ca, Cg]), req(SMEM_CTA), req(&[Global]), opt(CACHE_HINT), opt(PREFETCH_SIZE)], 80),
            (CpAsyncCommitGroup, "cp.async.commit_group", "", [], 80),
            (CpAsyncWaitGroup, "cp.async.wait_group", "s", [], 80),
            (CpAsyncWaitAll, "cp.async.wait_all", "", [], 80),
            (CpAsyncMbarrierArrive, "cp.async.mbarrier.arrive", "a", [opt(&[Noinc]), opt(SMEM_CTA), req(B64_ONLY)], 80),
            // ---- TMA (PTX 9.7.9.25.4 - 9.7.9.27); semantics come with the TMA issue ----
            (CpAsyncBulk, "cp.async.bulk", "a,a,s,a,s?,s? / a,a,s,s?,s? / a,a,s,s,s,a,s?", [req(&[SharedCluster, Global, SharedCta]), req(&[Global, SharedCta]), opt(&[MbarrierCompleteTxBytes, BulkGroup]), opt(MULTICAST), opt(CACHE_HINT), opt(&[CpMask]), opt(&[IgnoreOob])], 90),
            (CpAsyncBulkTensor, "cp.async.bulk.tensor", "a,t,a,v,s?,s? / a,t,a,s?,s? / t,a,s?", [req(TENSOR_DIMS), req(&[SharedCluster, Global, SharedCta]), req(&[Global, SharedCta]), opt(LOAD_MODES), opt(&[MbarrierCompleteTxBytes, BulkGroup]), opt(MULTICAST), opt(CTA_GROUP), opt(CACHE_HINT)], 90),
            (CpReduceAsyncBulk, "cp.reduce.async.bulk", "a,a,s,a,s? / a,a,s,s?", [req(&[SharedCluster, Global]), req(&[SharedCta]), opt(COMPLETE_TX), opt(BULK_GROUP), req(RED_OPS), opt(&[Noftz]), opt(CACHE_HINT), req(ATOM_TYPES_RED)], 90),
            (CpReduceAsyncBulkTensor, "cp.reduce.async.bulk.tensor", "t,a,s?", [req(TENSOR_DIMS), req(&[Global]), req(&[SharedCta]), req(RED_OPS), opt(LOAD_MODES), opt(BULK_GROUP), opt(CACHE_HINT)], 90),
            (CpAsyncBulkPrefetch, "cp.async.bulk.prefetch", "a,s,s?", [req(&[L2]), req(&[Global]), opt(CACHE_HINT)], 90),
            (CpAsyncBulkPrefetchTensor, "cp.async.bulk.prefetch.tensor", "t,v,s? / t,s?", [req(TENSOR_DIMS), req(&[L2]), req(&[Global]), opt(LOAD_MODES), opt(CACHE_HINT)], 90),
            (CpAsyncBulkCommitGroup, "cp.async.bulk.commit_group", "", [], 90),
            (CpAsyncBulkWaitGroup, "cp.async.bulk.wait_group", "s", [opt(&[Read])], 90),
            (TensormapCpFenceproxy, "tensormap.cp_fenceproxy", "a,a,s", [req(&[Global]), req(&[SharedCta]), req(&[TensormapGeneric]), req(&[Release]), req(SCOPES), req(&[Sync]), req(&[Aligned])], 90),
            (TensormapReplace, "tensormap.replace", "a,s,s?", [req(&[Tile]), req(TMAP_FIELDS), opt(&[Global, SharedCta]), req(&[B1024]), req(&[B32, B64])], 90),
            // ---- prefetch (PTX 9.7.9), register reallocation (PTX "setmaxnreg") ----
            (Prefetch, "prefetch", "a", [opt(&[Global, Local, Const, Param]), req(&[L1, L2, L2EvictLast, L2EvictNormal, Tensormap])], 20),
            (Prefetchu, "prefetchu", "a", [req(&[L1])], 20),
            (Setmaxnreg, "setmaxnreg", "s", [req(&[Inc, Dec]), req(&[Sync]), req(&[Aligned]), req(&[U32])], 90),
            // ---- warp-level matrix instructions (PTX 9.7.14.5) ----
            (Ldmatrix, "ldmatrix", "w,a", [req(&[Sync]), req(&[Aligned]), req(&[M8n8]), req(&[X1, X2, X4]), opt(&[Trans]), opt(SMEM_CTA), req(&[B16])], 75),
            (Stmatrix, "stmatrix", "a,v", [req(&[Sync]), req(&[Aligned]), req(&[M8n8]), req(&[X1, X2, X4]), opt(&[Trans]), opt(SMEM_CTA), req(&[B16])], 90),
            (Movmatrix, "movmatrix", "d,s", [req(&[Sync]), req(&[Aligned]), req(&[M8n8]), req(&[Trans]), req(&[B16])], 75),
            (Mma, "mma", "w,v,v,v", [req(&[Sync]), req(&[Aligned]), req(MMA_SHAPES), opt(&[Row]), opt(&[Col]), opt(&[Satfinite]), req(MMA_ACC), req(MMA_IN), req(MMA_IN), req(MMA_ACC), opt(&[Xor, And]), opt(&[Popc])], 80),
            // ---- warpgroup matrix instructions (PTX 9.7.15.5, 9.7.15.6) ----
            (WgmmaFence, "wgmma.fence", "", [req(&[Sync]), req(&[Aligned])], 90),
            (WgmmaCommitGroup, "wgmma.commit_group", "", [req(&[Sync]), req(&[Aligned])], 90),
            (WgmmaWaitGroup, "wgmma.wait_group", "s", [req(&[Sync]), req(&[Aligned])], 90),
            (WgmmaMmaAsync, "wgmma.mma_async", "v,sv,s,s!,s?,s?,s?,s?", [req(&[Sync]), req(&[Aligned]), req(WGMMA_SHAPES), opt(&[Satfinite]), req(WGMMA_ACC), req(WGMMA_IN), req(WGMMA_IN), opt(&[And]), opt(&[Popc])], 90),
            // The sparse form (PTX 9.7.15.6): d, a, b-desc, sp-meta, sp-sel, scale-d, then the
            // immediates of the dense form; A is the 64 x K/2 packed half of a 2:4 (1:2 for tf32)
            // structured-sparse A.
            (WgmmaMmaAsyncSp, "wgmma.mma_async.sp", "v,sv,s,s,s,s!,s?,s?,s?,s?", [req(&[Sync]), req(&[Aligned]), req(WGMMA_SP_SHAPES), opt(&[Satfinite]), req(WGMMA_ACC), req(WGMMA_SP_IN), req(WGMMA_SP_IN)], 90),
            // ---- sm_100 only (PTX 9.7.13.17 - 9.7.13.18): parsed, rejected by target ----
            (ClusterlaunchcontrolTryCancel, "clusterlaunchcontrol.try_cancel", "a,a", [req(&[Async]), opt(&[SharedCta]), req(COMPLETE_TX), opt(&[MulticastClusterAll]), req(&[B128])], 100),
            (ClusterlaunchcontrolQueryCancel, "clusterlaunchcontrol.query_cancel", "dv,s", [req(&[IsCanceled, GetFirstCtaid, GetFirstCtaidX, GetFirstCtaidY, GetFirstCtaidZ]), opt(&[V4]), opt(&[Pred, B32]), req(&[B128])], 100),
        }
    };
}

const INT_TYPES_SAD: &[Mod] = &[U16, U32, U64, S16, S32, S64];
const ARITH_TYPES_SETP: &[Mod] = &[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64, F16, F16x2, Bf16, Bf16x2];
const ATOM_TYPES_RED: &[Mod] = &[B32, B64, U32, U64, S32, S64, F16, Bf16, F32, F64];

macro_rules! define_opcodes {
    ($( ($v:ident, $name:literal, $ops:literal, [$($g:expr),*], $sm:literal) ),* $(,)?) => {
        /// Every instruction hopsync knows. Generated from [`opcode_table!`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[repr(u16)]
        pub enum Opcode { $($v),* }

        /// The table rows, indexed by `Opcode as usize`.
        pub static OPCODES: &[OpSpec] = &[
            $( OpSpec { op: Opcode::$v, name: $name, operands: $ops, groups: &[$($g),*], min_sm: $sm } ),*
        ];

        /// Zero-sized marker type per opcode; engines implement their executor trait on these.
        pub mod op {
            $(
                #[doc = concat!("`", $name, "`")]
                #[derive(Debug, Clone, Copy)]
                pub struct $v;
                impl super::OpMarker for $v { const OP: super::Opcode = super::Opcode::$v; }
            )*
        }
    };
}

/// Links a marker type in [`op`] to its [`Opcode`].
pub trait OpMarker {
    /// The opcode.
    const OP: Opcode;
}

opcode_table!(define_opcodes);

impl Opcode {
    /// The table row of this opcode.
    pub fn spec(self) -> &'static OpSpec {
        &OPCODES[self as usize]
    }
    /// The dotted mnemonic prefix.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
    /// Number of opcodes.
    pub fn count() -> usize {
        OPCODES.len()
    }
}

/// PTX instructions hopsync does not model, by dotted prefix (a segment matches with or without
/// its `::` qualifiers): the parser answers `unsupported: <what>` for them instead of calling them
/// unknown or failing on one of their modifiers.
pub const UNMODELLED: &[(&str, &str)] = &[
    ("mma.sp", "sparse `mma.sp` (PTX 9.7.14.6)"),
    ("wmma", "`wmma` (PTX 9.7.14.4)"),
    ("tex", "texture instructions (PTX 9.7.10)"),
    ("tld4", "texture instructions (PTX 9.7.10)"),
    ("txq", "texture instructions (PTX 9.7.10)"),
    ("istypep", "texture and surface queries (PTX 9.7.10)"),
    ("suld", "surface instructions (PTX 9.7.11)"),
    ("sust", "surface instructions (PTX 9.7.11)"),
    ("sured", "surface instructions (PTX 9.7.11)"),
    ("suq", "surface instructions (PTX 9.7.11)"),
    ("ldu", "`ldu` (PTX 9.7.9 \"ldu\")"),
    ("cvt.pack", "`cvt.pack` (PTX 9.7.9 \"cvt.pack\")"),
    ("madc", "extended-precision `madc` (carry flag, PTX 9.7.1.x)"),
    ("createpolicy", "cache eviction policies, `createpolicy` (PTX 9.7.9.18)"),
    ("discard", "`discard` (PTX 9.7.9.16)"),
    ("applypriority", "`applypriority` (PTX 9.7.9.17)"),
    ("multimem", "`multimem` (PTX 9.7.9.x, multicast memory)"),
    ("alloca", "`alloca` (PTX 9.7.19)"),
    ("stacksave", "`stacksave` (PTX 9.7.19)"),
    ("stackrestore", "`stackrestore` (PTX 9.7.19)"),
    ("pmevent", "`pmevent` (PTX 9.7.18)"),
    ("tcgen05", "`tcgen05` (sm_100)"),
    ("st.bulk", "`st.bulk` (sm_100)"),
];

/// The [`UNMODELLED`] entry a dotted mnemonic starts with.
pub fn unmodelled(segments: &[&str]) -> Option<&'static str> {
    UNMODELLED.iter().find_map(|(prefix, what)| {
        let p: Vec<&str> = prefix.split('.').collect();
        let hit = p.len() <= segments.len() && p.iter().zip(segments).all(|(a, b)| a == b || b.split("::").next() == Some(a));
        hit.then_some(*what)
    })
}

/// Longest-prefix lookup of a dotted mnemonic: returns the row and how many segments it consumed.
pub fn lookup(segments: &[&str]) -> Option<(&'static OpSpec, usize)> {
    let mut best: Option<(&'static OpSpec, usize)> = None;
    for spec in OPCODES {
        let n = spec.name.split('.').count();
        if n <= segments.len()
            && spec.name.split('.').zip(segments).all(|(a, b)| a == *b)
            && best.is_none_or(|(_, m)| n > m)
        {
            best = Some((spec, n));
        }
    }
    best
}

/// One operand position of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperandSlot {
    /// The letters accepted at this position.
    pub kinds: &'static str,
    /// Whether the operand may be left out (only trailing ones are).
    pub optional: bool,
}

impl OpSpec {
    /// The alternative operand patterns of this row, each a list of positions.
    pub fn patterns(&self) -> Vec<Vec<OperandSlot>> {
        self.operands
            .split(" / ")
            .map(|alt| {
                if alt.is_empty() {
                    return Vec::new();
                }
                alt.split(',')
                    .map(|p| {
                        let optional = p.ends_with('?');
                        OperandSlot { kinds: p.trim_end_matches('?'), optional }
                    })
                    .collect()
            })
            .collect()
    }
    /// The groups made only of data types (the row's type slots), in order.
    pub fn type_slots(&self) -> Vec<usize> {
        self.groups.iter().enumerate().filter(|(_, g)| g.of.iter().all(|m| m.is_type())).map(|(i, _)| i).collect()
    }
    /// The group a modifier belongs to in this row, if any.
    pub fn group_of(&self, m: Mod, taken: &[bool]) -> Option<usize> {
        // A modifier may sit in several groups (cvt's two types, `.and` as setp's bool op or as
        // bar.red's op): take the first group that is still free.
        self.groups
            .iter()
            .enumerate()
            .position(|(i, g)| g.of.contains(&m) && !taken[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_opcode() {
        for (i, s) in OPCODES.iter().enumerate() {
            assert_eq!(s.op as usize, i, "{}", s.name);
        }
    }

    #[test]
    fn longest_prefix_wins() {
        let segs: Vec<&str> = "cp.async.bulk.tensor.2d.shared::cluster".split('.').collect();
        let (s, n) = lookup(&segs).unwrap();
        assert_eq!(s.op, Opcode::CpAsyncBulkTensor);
        assert_eq!(n, 4);
        let segs: Vec<&str> = "barrier.cluster.arrive.release".split('.').collect();
        assert_eq!(lookup(&segs).unwrap().0.op, Opcode::BarrierClusterArrive);
        let segs: Vec<&str> = "barrier.sync.aligned".split('.').collect();
        assert_eq!(lookup(&segs).unwrap().0.op, Opcode::Barrier);
    }

    #[test]
    fn mnemonics_are_unique() {
        let mut names: Vec<_> = OPCODES.iter().map(|s| s.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
