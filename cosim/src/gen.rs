//! Random program generator: complete, legal-by-construction PTX programs with launch manifests
//! that exercise mbarrier, named-barrier and cluster-barrier traffic, each with the expected output
//! computed here, so a program that passes on an engine proves the synchronization semantics and
//! not just the absence of findings. With [`GenOptions::ub`] the program instead carries exactly
//! one undefined behaviour or broken rule whose [`FindingKind`] every engine must stop with first.
//!
//! A program is a prologue, then a few independent *sections*, one per pattern, separated by a
//! CTA-wide `bar.sync 0` (and, after sections that touch other CTAs, a cluster barrier). Each
//! section declares its own shared variables and writes its results into its own slice of the one
//! output buffer `out` (u32 words; slice = `per_cta` words per CTA, by `%ctaid.x`). Every value a
//! program writes is a function of thread ids, round numbers and per-section constants read
//! *after* the synchronization that orders it, so the output does not depend on the interleaving.
//!
//! Patterns ([`Pattern`]):
//! - `ring`: warp-specialized producer/consumer ring over `full[k]`/`empty[k]` mbarriers with
//!   `.parity` waits (register parity), k stages, per-thread or elected-leader arrives.
//! - `tokens`: rounds of data publish + `mbarrier.arrive` (count 1, per-thread counts, or an
//!   elected leader arriving for its warp) + `test_wait`/`try_wait` loops on the state token.
//! - `tx`: `arrive.expect_tx` / `expect_tx` + `complete_tx` by other threads, several phases.
//! - `nocomplete`: serialized `mbarrier.arrive.noComplete` + `mbarrier.pending_count`.
//! - `drop`: `mbarrier.arrive_drop` by participants that then exit (only as the last section).
//! - `barpc`: `bar.arrive`/`bar.sync` producer/consumer with thread counts on two named barriers.
//! - `barred`: `bar.red.popc/.and/.or` over all threads or a group of warps with a thread count.
//! - `diverge`: non-`.aligned` `barrier.sync` / `barrier.red` reached by the two sides of a
//!   divergent branch at different instructions.
//! - `dsmem`: `barrier.cluster` rounds exchanging data through distributed shared memory
//!   (`mapa` + `st/ld.shared::cluster`, or generic addresses).
//! - `remote`: remote `mbarrier.arrive.release.cluster.shared::cluster` (ring or gather), data in
//!   the target CTA's shared memory, waits in the target.
//! - `stasync`: `st.async` ring with `mbarrier::complete_tx::bytes`, `arrive.expect_tx` receivers.
//! - `elect`: `elect.sync` leaders doing an atomic and arriving for their warp.
//! - `exitbar`: one side of every warp waits at a non-`.aligned` `barrier.sync`/`barrier.red`
//!   (all threads, no count) while the other side exits, so the exits complete the warp's
//!   arrival (PTX 9.7.13.1: the barrier waits for "all non-exited threads from its warp"); the
//!   barrier's previous generation had another thread count (only as the last section).
//!
//! Cluster programs launch one cluster (grid = cluster) and start with a cluster barrier, so no
//! CTA touches another's shared memory before the whole cluster runs; sections that touch other
//! CTAs end with one, so none exits while another may still access it.
//!
//! UB mode ([`UbClass`]): a few legal sections, then one whose single violation is reached in
//! every interleaving before anything else can go wrong (a count that exceeds every possible
//! pending count, a barrier count no warp arrival can meet, ...), so the first finding is fixed.
//! Its kind is returned and written as `// expect-finding: Kind` in the program's first line; no
//! expected output is stated. Deadlock programs spin (mbarrier polls) or block (named barriers):
//! an engine run needs a modest spin limit to name the former quickly.

use crate::finding::FindingKind;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Inject exactly one undefined behaviour (see [`UbClass`]).
    pub ub: bool,
    /// Fewest warps per CTA.
    pub min_warps: u32,
    /// Most warps per CTA (1..=32); sizes between are skewed towards the small end.
    pub max_warps: u32,
    /// Fewest CTAs.
    pub min_ctas: u32,
    /// Most CTAs (1..=16); cluster programs use one cluster of this many CTAs.
    pub max_ctas: u32,
    /// Most sections (patterns) per program.
    pub max_sections: u32,
    /// Most rounds (phases, items / 2) per pattern.
    pub max_rounds: u32,
}

impl Default for GenOptions {
    /// The full range: 1-32 warps, 1-16 CTAs.
    fn default() -> GenOptions {
        GenOptions { ub: false, min_warps: 1, max_warps: 32, min_ctas: 1, max_ctas: 16, max_sections: 4, max_rounds: 4 }
    }
}

impl GenOptions {
    /// Small programs (1-4 warps, 1-4 CTAs, at most 3 sections), a few ms each on the golden
    /// engine: what the default test run uses.
    pub fn small() -> GenOptions {
        GenOptions { ub: false, min_warps: 1, max_warps: 4, min_ctas: 1, max_ctas: 4, max_sections: 3, max_rounds: 3 }
    }
    /// Large programs only: 16-32 warps per CTA, 8-16 CTAs.
    pub fn large() -> GenOptions {
        GenOptions { min_warps: 16, min_ctas: 8, ..GenOptions::default() }
    }
    /// The same with `ub` set.
    pub fn with_ub(mut self, ub: bool) -> GenOptions {
        self.ub = ub;
        self
    }
}

/// A generated program.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The program text (manifest + PTX).
    pub text: String,
    /// In UB mode, the finding every engine must stop with first.
    pub expect_finding: Option<FindingKind>,
    /// What it does (also the manifest's description).
    pub description: String,
}

/// The patterns a legal program mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Producer/consumer ring over full/empty mbarriers.
    Ring,
    /// Arrive + token wait rounds.
    Tokens,
    /// expect_tx / complete_tx.
    Tx,
    /// noComplete + pending_count.
    NoComplete,
    /// arrive_drop by exiting threads.
    Drop,
    /// bar.arrive / bar.sync producer/consumer.
    BarPc,
    /// bar.red.
    BarRed,
    /// Non-aligned barriers under divergence.
    Diverge,
    /// barrier.cluster + distributed shared memory.
    Dsmem,
    /// Remote mbarrier arrives.
    Remote,
    /// st.async ring.
    StAsync,
    /// elect.sync leaders.
    Elect,
    /// A non-aligned barrier completed for a warp by its other lanes exiting.
    ExitBar,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: &'static [Pattern] = &[
        Pattern::Ring,
        Pattern::Tokens,
        Pattern::Tx,
        Pattern::NoComplete,
        Pattern::Drop,
        Pattern::BarPc,
        Pattern::BarRed,
        Pattern::Diverge,
        Pattern::Dsmem,
        Pattern::Remote,
        Pattern::StAsync,
        Pattern::Elect,
        Pattern::ExitBar,
    ];
    /// Short name (used in descriptions: `[name]`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Ring => "ring",
            Pattern::Tokens => "tokens",
            Pattern::Tx => "tx",
            Pattern::NoComplete => "nocomplete",
            Pattern::Drop => "drop",
            Pattern::BarPc => "barpc",
            Pattern::BarRed => "barred",
            Pattern::Diverge => "diverge",
            Pattern::Dsmem => "dsmem",
            Pattern::Remote => "remote",
            Pattern::StAsync => "stasync",
            Pattern::Elect => "elect",
            Pattern::ExitBar => "exitbar",
        }
    }
    fn needs_cluster(self) -> bool {
        matches!(self, Pattern::Dsmem | Pattern::Remote | Pattern::StAsync)
    }
    fn needs_two_warps(self) -> bool {
        matches!(self, Pattern::Ring | Pattern::BarPc)
    }
}

/// The undefined behaviours / rule breaks UB mode injects, one per program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UbClass {
    /// An arrive whose count exceeds every possible pending count.
    ArriveCountOverPending,
    /// test_wait with a token two phases behind the object's current phase (after barrier 0
    /// guarantees the phase of the thread's last arrive completed, it waits with the token of its
    /// arrive before; a two-phase-old token of the *same* parity is invisible to sm_90's
    /// parity-only check and to the golden model's side check, so it is not used).
    StaleToken,
    /// `bar.sync` (aligned) reached by the two sides of a divergent branch.
    AlignedBarrierDivergent,
    /// `barrier.cluster.arrive.aligned` under divergence.
    AlignedClusterBarrierDivergent,
    /// A named-barrier thread count that is not a multiple of 32.
    BarrierCountNotMultiple,
    /// A named-barrier thread count below one warp.
    BarrierCountBelowWarp,
    /// mbarrier.init on a valid object.
    InitOnValid,
    /// A `.noComplete` arrive that completes the phase.
    NoCompleteCompletes,
    /// try_wait on another CTA's mbarrier (generic address from mapa).
    WaitOnClusterAddress,
    /// A `.shared::cluster` arrive that asks for a state token.
    ClusterArriveToken,
    /// One arrival short on an mbarrier: every waiter spins forever.
    MissingMbarrierArrive,
    /// A named-barrier thread count one warp more than take part.
    MissingBarrierArrival,
    /// An arrive in the next phase before any wait saw the phase complete.
    ArriveBeforeWait,
    /// Arrives on an mbarrier never initialized.
    NeverInitialized,
    /// An arrive after mbarrier.inval.
    UseAfterInval,
    /// mbarrier.init with count 0 or 2^20.
    InitCountOutOfRange,
    /// An arrive with count 0.
    ArriveCountZero,
    /// expect_tx of 2^20.
    TxOutOfRange,
    /// An mbarrier address 4 bytes off.
    MisalignedMbarrier,
    /// An mbarrier op on a global address.
    MbarrierInGlobal,
    /// pending_count of a plain arrive's token.
    PendingCountOfPlainToken,
    /// A plain load of a valid mbarrier.
    MbarrierLoadedAsData,
    /// A named barrier id of 16 or more (in a register).
    BarrierIdOutOfRange,
    /// Two warps give one barrier different thread counts.
    BarrierCountMismatch,
    /// bar.red and bar.sync on the same active barrier.
    BarrierRedMixedWithSync,
    /// A warp arrives twice on a barrier before it completes.
    BarrierArriveTwice,
    /// barrier.cluster.wait without arrive.
    ClusterWaitWithoutArrive,
    /// barrier.cluster.arrive twice.
    ClusterArriveTwice,
    /// elect.sync with a full membermask in a divergent branch.
    ElectMaskDivergent,
    /// A store past the end of the output buffer.
    StoreOutOfBounds,
    /// A misaligned shared load.
    MisalignedLoad,
    /// mapa to a rank outside the cluster.
    MapaRankOutOfRange,
    /// st.async whose mbarrier is in another CTA than its destination.
    StAsyncMbarrierElsewhere,
}

impl UbClass {
    /// Every class.
    pub const ALL: &'static [UbClass] = &[
        UbClass::ArriveCountOverPending,
        UbClass::StaleToken,
        UbClass::AlignedBarrierDivergent,
        UbClass::AlignedClusterBarrierDivergent,
        UbClass::BarrierCountNotMultiple,
        UbClass::BarrierCountBelowWarp,
        UbClass::InitOnValid,
        UbClass::NoCompleteCompletes,
        UbClass::WaitOnClusterAddress,
        UbClass::ClusterArriveToken,
        UbClass::MissingMbarrierArrive,
        UbClass::MissingBarrierArrival,
        UbClass::ArriveBeforeWait,
        UbClass::NeverInitialized,
        UbClass::UseAfterInval,
        UbClass::InitCountOutOfRange,
        UbClass::ArriveCountZero,
        UbClass::TxOutOfRange,
        UbClass::MisalignedMbarrier,
        UbClass::MbarrierInGlobal,
        UbClass::PendingCountOfPlainToken,
        UbClass::MbarrierLoadedAsData,
        UbClass::BarrierIdOutOfRange,
        UbClass::BarrierCountMismatch,
        UbClass::BarrierRedMixedWithSync,
        UbClass::BarrierArriveTwice,
        UbClass::ClusterWaitWithoutArrive,
        UbClass::ClusterArriveTwice,
        UbClass::ElectMaskDivergent,
        UbClass::StoreOutOfBounds,
        UbClass::MisalignedLoad,
        UbClass::MapaRankOutOfRange,
        UbClass::StAsyncMbarrierElsewhere,
    ];

    /// The finding it must produce.
    pub fn finding(self) -> FindingKind {
        use FindingKind as F;
        match self {
            UbClass::ArriveCountOverPending => F::MbarrierPendingUnderflow,
            UbClass::StaleToken => F::MbarrierWaitPhaseInvalid,
            UbClass::AlignedBarrierDivergent => F::BarrierAlignedDivergent,
            UbClass::AlignedClusterBarrierDivergent => F::ClusterBarrierAlignedDivergent,
            UbClass::BarrierCountNotMultiple => F::BarrierCountNotMultipleOfWarp,
            UbClass::BarrierCountBelowWarp => F::BarrierCountTooSmall,
            UbClass::InitOnValid => F::MbarrierInitOnValid,
            UbClass::NoCompleteCompletes => F::MbarrierNoCompleteCompleted,
            UbClass::WaitOnClusterAddress | UbClass::ClusterArriveToken => F::MbarrierClusterAddressUnsupported,
            UbClass::MissingMbarrierArrive | UbClass::MissingBarrierArrival => F::Deadlock,
            UbClass::ArriveBeforeWait => F::MbarrierArriveBeforeWait,
            UbClass::NeverInitialized | UbClass::UseAfterInval => F::MbarrierUninitialized,
            UbClass::InitCountOutOfRange | UbClass::ArriveCountZero => F::MbarrierCountOutOfRange,
            UbClass::TxOutOfRange => F::MbarrierTxCountOutOfRange,
            UbClass::MisalignedMbarrier => F::MbarrierMisaligned,
            UbClass::MbarrierInGlobal => F::MbarrierNotShared,
            UbClass::PendingCountOfPlainToken => F::MbarrierPendingCountBadToken,
            UbClass::MbarrierLoadedAsData => F::MbarrierAccessedAsData,
            UbClass::BarrierIdOutOfRange => F::BarrierIdOutOfRange,
            UbClass::BarrierCountMismatch => F::BarrierCountMismatch,
            UbClass::BarrierRedMixedWithSync => F::BarrierRedMixed,
            UbClass::BarrierArriveTwice => F::BarrierWarpArrivedTwice,
            UbClass::ClusterWaitWithoutArrive => F::ClusterBarrierWaitWithoutArrive,
            UbClass::ClusterArriveTwice => F::ClusterBarrierArriveTwice,
            UbClass::ElectMaskDivergent => F::WarpSyncMaskMismatch,
            UbClass::StoreOutOfBounds => F::MemOutOfBounds,
            UbClass::MisalignedLoad => F::MemMisaligned,
            UbClass::MapaRankOutOfRange => F::ClusterRankOutOfRange,
            UbClass::StAsyncMbarrierElsewhere => F::AsyncMbarrierMismatch,
        }
    }

    /// Short name (in descriptions: `ub=<name>`).
    pub fn name(self) -> String {
        format!("{self:?}")
    }

    fn needs_cluster(self) -> bool {
        matches!(self, UbClass::WaitOnClusterAddress | UbClass::StAsyncMbarrierElsewhere)
    }
    fn needs_two_warps(self) -> bool {
        matches!(self, UbClass::BarrierCountMismatch | UbClass::BarrierRedMixedWithSync)
    }
}

/// The distinct finding kinds UB mode can produce.
pub fn ub_finding_kinds() -> Vec<FindingKind> {
    // MissingBarrierArrival's count is above the CTA in its standalone and divergent forms, and
    // other barrier classes' counts can be (Gen::ub_bar_count)
    let mut v: Vec<FindingKind> = vec![FindingKind::BarrierCountAboveCta];
    for c in UbClass::ALL {
        if !v.contains(&c.finding()) {
            v.push(c.finding());
        }
    }
    v
}

/// Generates the program of `seed`. Deterministic: the same seed and options give the same text.
pub fn generate(seed: u64, opts: &GenOptions) -> Generated {
    let mut g = Gen::new(seed, opts);
    let ub = if opts.ub { Some(UbClass::ALL[g.rng.below(UbClass::ALL.len() as u64) as usize]) } else { None };
    g.choose_launch(ub);
    g.prologue();
    let nsec = g.rng.range(1, opts.max_sections.max(1));
    let legal = if ub.is_some() { g.rng.below(nsec as u64) as u32 } else { nsec };
    for k in 0..legal {
        let last = ub.is_none() && k + 1 == legal;
        let p = g.pick_pattern(last);
        g.section(p, None);
    }
    if let Some(u) = ub {
        g.reserve = 0;
        g.ub_section(u);
    }
    g.finish(seed, ub)
}

// ---- randomness --------------------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// 0..n (0 when n <= 1).
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            0
        } else {
            self.next() % n
        }
    }
    /// lo..=hi.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            lo
        } else {
            lo + self.below((hi - lo + 1) as u64) as u32
        }
    }
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// 1..=max, skewed to small values.
    fn skewed(&mut self, max: u32) -> u32 {
        let max = max.max(1);
        match self.below(4) {
            0 | 1 => self.range(1, max.min(2)),
            2 => self.range(1, max.min(4)),
            _ => self.range(1, max),
        }
    }
}

// ---- the program being built ---------------------------------------------------------------------

/// An mbarrier (or other shared) address operand: the state-space suffix and the `[...]` text.
#[derive(Clone)]
struct Addr {
    space: &'static str,
    text: String,
}

/// A section's slice of the output buffer.
#[derive(Clone)]
struct Slice {
    base: u32,
    per_cta: u32,
    rd: String,
}

/// Linear value formula `a*x + b*y + c*z + d` (wrapping u32), with its constants.
#[derive(Clone, Copy)]
struct Val {
    a: u32,
    b: u32,
    c: u32,
    e: u32,
    d: u32,
}

impl Val {
    fn new(rng: &mut Rng) -> Val {
        Val { a: rng.range(1, 999), b: rng.range(1, 999), c: rng.range(1, 999), e: rng.range(1, 99) * 1000, d: rng.range(0, 9999) }
    }
    /// `a*x + b*y + c*z + e*cta + d`.
    fn at(&self, x: u32, y: u32, z: u32, cta: u32) -> u32 {
        self.a
            .wrapping_mul(x)
            .wrapping_add(self.b.wrapping_mul(y))
            .wrapping_add(self.c.wrapping_mul(z))
            .wrapping_add(self.e.wrapping_mul(cta))
            .wrapping_add(self.d)
    }
}

struct Gen {
    rng: Rng,
    opts: GenOptions,
    nr: u32,
    nrd: u32,
    np: u32,
    nlab: u32,
    nsec: u32,
    decls: Vec<String>,
    body: Vec<String>,
    smem: u32,
    /// Warps per CTA, threads per CTA, CTAs, cluster size (1: no cluster launch).
    w: u32,
    t: u32,
    ctas: u32,
    csize: u32,
    out: Vec<u32>,
    descs: Vec<String>,
    // prologue registers
    tid: String,
    warp: String,
    lane: String,
    rank: String,
    cta: String,
    outp: String,
    /// Predicate: tid == 0.
    t0: String,
    /// The program has ended (a section made threads exit).
    ended: bool,
    /// Shared memory kept back for the UB section while the legal ones are generated.
    reserve: u32,
    /// The finding the injected UB produces when it is not its class's usual one: a count one
    /// warp above the CTA's threads is `BarrierCountAboveCta`, not a `Deadlock`.
    finding: Option<FindingKind>,
}

/// Static shared memory a program may declare (the 48 KiB static limit, with room to spare).
const SMEM_BUDGET: u32 = 44 * 1024;

impl Gen {
    fn new(seed: u64, opts: &GenOptions) -> Gen {
        Gen {
            rng: Rng(seed ^ 0x6A09_E667_F3BC_C908),
            opts: opts.clone(),
            nr: 0,
            nrd: 0,
            np: 0,
            nlab: 0,
            nsec: 0,
            decls: Vec::new(),
            body: Vec::new(),
            smem: 0,
            w: 1,
            t: 32,
            ctas: 1,
            csize: 1,
            out: Vec::new(),
            descs: Vec::new(),
            tid: String::new(),
            warp: String::new(),
            lane: String::new(),
            rank: String::new(),
            cta: String::new(),
            outp: String::new(),
            t0: String::new(),
            ended: false,
            reserve: if opts.ub { 16 * 1024 } else { 0 },
            finding: None,
        }
    }

    /// A named-barrier count an injected UB uses (one warp more than arrive, another warp's
    /// count, a count a warp arrives twice on): when it is above the CTA's threads, both
    /// engines name `BarrierCountAboveCta` at issue before the class's own finding.
    fn ub_bar_count(&mut self, count: u32) -> u32 {
        if count > self.t {
            self.finding = Some(FindingKind::BarrierCountAboveCta);
        }
        count
    }

    // -- registers, labels, declarations, emission --

    fn r(&mut self) -> String {
        self.nr += 1;
        format!("%r{}", self.nr - 1)
    }
    fn rd(&mut self) -> String {
        self.nrd += 1;
        format!("%rd{}", self.nrd - 1)
    }
    fn p(&mut self) -> String {
        self.np += 1;
        format!("%p{}", self.np - 1)
    }
    fn lab(&mut self, what: &str) -> String {
        self.nlab += 1;
        format!("S{}_{}{}", self.nsec, what, self.nlab)
    }
    fn e(&mut self, s: impl Into<String>) {
        self.body.push(format!("\t{};", s.into()));
    }
    fn place(&mut self, l: &str) {
        self.body.push(format!("{l}:"));
    }
    fn comment(&mut self, s: impl Into<String>) {
        self.body.push(format!("\t// {}", s.into()));
    }
    /// Declares a shared variable of `n` elements (None: scalar) and returns its name.
    fn shared(&mut self, what: &str, align: u32, ty: &str, n: Option<u32>) -> String {
        let name = format!("s{}_{}", self.nsec, what);
        let eb = match ty {
            "b64" | "u64" => 8,
            _ => 4,
        };
        self.smem = self.smem.div_ceil(align) * align + eb * n.unwrap_or(1);
        match n {
            Some(k) => self.decls.push(format!("\t.shared .align {align} .{ty} {name}[{k}];")),
            None => self.decls.push(format!("\t.shared .align {align} .{ty} {name};")),
        }
        name
    }
    fn smem_left(&self) -> u32 {
        SMEM_BUDGET.saturating_sub(self.smem + 64 + self.reserve)
    }
    /// Shared memory a pattern needs at least (with one round).
    fn smem_need(&self, p: Pattern) -> u32 {
        let t = self.t;
        64 + match p {
            Pattern::Drop => 8 * t,
            Pattern::Tokens | Pattern::Tx | Pattern::Dsmem | Pattern::NoComplete | Pattern::Diverge => 4 * t,
            Pattern::Remote => 128,
            Pattern::StAsync => 256,
            Pattern::Ring | Pattern::BarPc => 512,
            Pattern::Elect | Pattern::BarRed => 16,
            Pattern::ExitBar => 4 * t,
        }
    }

    /// A register holding `c`.
    fn imm(&mut self, c: u32) -> String {
        let r = self.r();
        self.e(format!("mov.u32 {r}, {c}"));
        r
    }
    /// Predicate `x == c`.
    fn eq(&mut self, x: &str, c: u32) -> String {
        let p = self.p();
        self.e(format!("setp.eq.u32 {p}, {x}, {c}"));
        p
    }
    /// A register `a*x + b` (x a register).
    fn mad(&mut self, x: &str, a: u32, b: u32) -> String {
        let r = self.r();
        self.e(format!("mad.lo.u32 {r}, {x}, {a}, {b}"));
        r
    }
    /// A register holding `c + sum k*reg` over `terms`.
    fn lin(&mut self, terms: &[(&str, u32)], c: u32) -> String {
        let r = self.r();
        self.e(format!("mov.u32 {r}, {c}"));
        for (x, k) in terms {
            self.e(format!("mad.lo.u32 {r}, {x}, {k}, {r}"));
        }
        r
    }
    /// The 32-bit shared address of `sym` plus `4*idx` (idx a register).
    fn elem_addr(&mut self, sym: &str, idx: &str, scale: u32) -> String {
        let b = self.r();
        self.e(format!("mov.u32 {b}, {sym}"));
        let r = self.r();
        self.e(format!("mad.lo.u32 {r}, {idx}, {scale}, {b}"));
        r
    }

    /// `[base+off]`, or `[base]` when `off` is 0.
    fn at(base: &str, off: u32) -> String {
        if off == 0 {
            format!("[{base}]")
        } else {
            format!("[{base}+{off}]")
        }
    }

    /// Reserves `per_cta` output words per CTA and computes this CTA's slice address.
    fn slice(&mut self, per_cta: u32) -> Slice {
        let base = self.out.len() as u32;
        self.out.resize((base + per_cta * self.ctas) as usize, 0);
        let r = self.r();
        let cta = self.cta.clone();
        self.e(format!("mad.lo.u32 {r}, {cta}, {per_cta}, {base}"));
        let rd = self.rd();
        self.e(format!("mul.wide.u32 {rd}, {r}, 4"));
        let outp = self.outp.clone();
        self.e(format!("add.s64 {rd}, {outp}, {rd}"));
        Slice { base, per_cta, rd }
    }
    /// Stores `val` to word `idx` (a register) of the slice, under an optional guard.
    fn st_out(&mut self, s: &Slice, idx: &str, val: &str, guard: Option<&str>) {
        let rd = self.rd();
        self.e(format!("mul.wide.u32 {rd}, {idx}, 4"));
        self.e(format!("add.s64 {rd}, {}, {rd}", s.rd));
        let g = guard.map(|g| format!("@{g} ")).unwrap_or_default();
        self.e(format!("{g}st.global.u32 [{rd}], {val}"));
    }
    /// Stores `val` to word `idx` (a constant) of the slice.
    fn st_out_at(&mut self, s: &Slice, idx: u32, val: &str, guard: Option<&str>) {
        let g = guard.map(|g| format!("@{g} ")).unwrap_or_default();
        if idx == 0 {
            self.e(format!("{g}st.global.u32 [{}], {val}", s.rd));
        } else {
            self.e(format!("{g}st.global.u32 [{}+{}], {val}", s.rd, 4 * idx));
        }
    }
    /// The expected value of word `idx` of CTA `cta`'s slice.
    fn expect(&mut self, s: &Slice, cta: u32, idx: u32, v: u32) {
        debug_assert!(idx < s.per_cta);
        self.out[(s.base + cta * s.per_cta + idx) as usize] = v;
    }

    // -- synchronization helpers --

    /// A CTA-wide barrier 0, in one of its spellings.
    fn bar0(&mut self) {
        let f = self.rng.pick(&["bar.sync 0", "barrier.sync 0", "bar.cta.sync 0", "barrier.sync.aligned 0", "barrier.cta.sync.aligned 0"]);
        self.e(f);
    }
    /// A cluster-wide barrier executed uniformly by every thread.
    fn cluster_sync(&mut self) {
        let aligned = if self.rng.chance(2, 3) { ".aligned" } else { "" };
        match self.rng.below(3) {
            0 => {
                self.e(format!("barrier.cluster.arrive{aligned}"));
                self.e(format!("barrier.cluster.wait{aligned}"));
            }
            1 => {
                self.e(format!("barrier.cluster.arrive.release{aligned}"));
                self.e(format!("barrier.cluster.wait.acquire{aligned}"));
            }
            _ => {
                self.e("fence.acq_rel.cluster");
                self.e(format!("barrier.cluster.arrive.relaxed{aligned}"));
                self.e(format!("barrier.cluster.wait{aligned}"));
            }
        }
    }
    /// Section end: bar.sync 0, or a cluster barrier where the section touched other CTAs.
    fn sep(&mut self, cluster: bool) {
        if cluster {
            self.cluster_sync();
        } else {
            self.bar0();
        }
    }

    /// An address for the mbarrier (or word) at `sym + off` (constant offset), in a random form:
    /// symbol+offset, 32-bit shared register, or generic 64-bit register.
    fn maddr(&mut self, sym: &str, off: u32) -> Addr {
        let plus = |off: u32| if off == 0 { String::new() } else { format!("+{off}") };
        match self.rng.below(4) {
            0 => Addr { space: self.rng.pick(&[".shared::cta", ".shared"]), text: format!("[{sym}{}]", plus(off)) },
            1 | 2 => {
                let r = self.r();
                self.e(format!("mov.u32 {r}, {sym}"));
                if off != 0 && self.rng.chance(1, 2) {
                    self.e(format!("add.u32 {r}, {r}, {off}"));
                    Addr { space: self.rng.pick(&[".shared::cta", ".shared"]), text: format!("[{r}]") }
                } else {
                    Addr { space: self.rng.pick(&[".shared::cta", ".shared"]), text: format!("[{r}{}]", plus(off)) }
                }
            }
            _ => {
                let rd = self.rd();
                self.e(format!("cvta.shared.u64 {rd}, {sym}"));
                Addr { space: "", text: format!("[{rd}{}]", plus(off)) }
            }
        }
    }
    /// An address in a register `base` (32-bit shared address), possibly made generic.
    fn reg_addr(&mut self, base: &str) -> Addr {
        if self.rng.chance(1, 4) {
            let rd = self.rd();
            self.e(format!("cvt.u64.u32 {rd}, {base}"));
            self.e(format!("cvta.shared.u64 {rd}, {rd}"));
            Addr { space: "", text: format!("[{rd}]") }
        } else {
            Addr { space: self.rng.pick(&[".shared::cta", ".shared"]), text: format!("[{base}]") }
        }
    }

    /// `.sem.scope` of an arrive that publishes data (release; relaxed after a fence).
    fn arrive_sem(&mut self, cluster: bool) -> String {
        let scope = if cluster { ".cluster" } else { self.rng.pick(&[".cta", ".cta", ".cluster"]) };
        match self.rng.below(4) {
            0 if !cluster => String::new(),
            1 => {
                self.e(if cluster { "fence.acq_rel.cluster" } else { "fence.acq_rel.cta" });
                format!(".relaxed{}", if scope.is_empty() { ".cta" } else { scope })
            }
            _ => format!(".release{scope}"),
        }
    }
    /// Emits a thread's arrive (with `guard`), `dst` a token register or `_`.
    fn arrive(&mut self, guard: Option<&str>, dst: &str, a: &Addr, count: Option<&str>, cluster: bool) {
        let sem = self.arrive_sem(cluster);
        let g = guard.map(|g| format!("@{g} ")).unwrap_or_default();
        let c = count.map(|c| format!(", {c}")).unwrap_or_default();
        self.e(format!("{g}mbarrier.arrive{sem}{}.b64 {dst}, {}{c}", a.space, a.text));
    }
    /// `.sem.scope` of a wait that acquires (or relaxed followed by a fence: returned second).
    fn wait_sem(&mut self, cluster: bool) -> (String, bool) {
        let scope = if cluster { ".cluster" } else { self.rng.pick(&[".cta", ".cta", ".cluster"]) };
        match self.rng.below(5) {
            0 if !cluster => (String::new(), false),
            1 => (format!(".relaxed{}", if scope.is_empty() { ".cta" } else { scope }), true),
            _ => (format!(".acquire{scope}"), false),
        }
    }
    /// A loop polling `test_wait`/`try_wait` until the phase of `arg` (a token register, or a
    /// parity register / immediate with `parity`) completed.
    fn wait_loop(&mut self, a: &Addr, arg: &str, parity: bool, cluster: bool) {
        let l = self.lab("wait");
        let p = self.p();
        let op = if self.rng.chance(1, 2) { "try_wait" } else { "test_wait" };
        let (sem, fence) = self.wait_sem(cluster);
        let hint = if op == "try_wait" && self.rng.chance(1, 4) { format!(", {}", self.rng.pick(&[100, 1000, 20000])) } else { String::new() };
        let par = if parity { ".parity" } else { "" };
        self.place(&l);
        self.e(format!("mbarrier.{op}{par}{sem}{}.b64 {p}, {}, {arg}{hint}", a.space, a.text));
        self.e(format!("@!{p} bra {l}"));
        if fence {
            self.e(if cluster { "fence.acq_rel.cluster" } else { "fence.acq_rel.cta" });
        }
    }
    /// mbarrier.init of `a` with `count` by thread 0 (or warp 0's elected leader).
    fn init_by_one(&mut self, a: &Addr, count: u32) {
        let t0 = self.t0.clone();
        self.e(format!("@{t0} mbarrier.init{}.b64 {}, {count}", a.space, a.text));
    }
    /// How the warp arrives for its threads on an mbarrier (`remote`: another CTA's, no token).
    fn warp_arrive(&mut self, mode: ArriveMode, a: &Addr, cluster: bool, remote: bool) {
        match mode {
            ArriveMode::Thread => {
                let dst = if remote || self.rng.chance(1, 2) { "_".to_string() } else { self.rd() };
                self.arrive(None, &dst, a, None, cluster);
            }
            ArriveMode::Leader32 | ArriveMode::Leader1 => {
                self.e("bar.warp.sync 0xffffffff");
                let pe = self.leader();
                let c = if mode == ArriveMode::Leader32 { Some("32") } else { None };
                self.arrive(Some(&pe), "_", a, c, cluster);
            }
        }
    }
    /// A predicate true in one lane of the (converged) warp: elect.sync or lane 0.
    fn leader(&mut self) -> String {
        let pe = self.p();
        if self.rng.chance(3, 4) {
            if self.rng.chance(1, 2) {
                self.e(format!("elect.sync _|{pe}, 0xffffffff"));
            } else {
                let r = self.r();
                self.e(format!("elect.sync {r}|{pe}, 0xffffffff"));
            }
        } else {
            let lane = self.lane.clone();
            self.e(format!("setp.eq.u32 {pe}, {lane}, 0"));
        }
        pe
    }

    // -- launch, prologue, assembly --

    fn choose_launch(&mut self, ub: Option<UbClass>) {
        let o = self.opts.clone();
        let (max_ctas, max_warps) = (o.max_ctas.clamp(1, 16), o.max_warps.clamp(1, 32));
        let mut ctas = (o.min_ctas.clamp(1, max_ctas) - 1 + self.rng.skewed(max_ctas + 1 - o.min_ctas.clamp(1, max_ctas))).min(max_ctas);
        let mut w = (o.min_warps.clamp(1, max_warps) - 1 + self.rng.skewed(max_warps + 1 - o.min_warps.clamp(1, max_warps))).min(max_warps);
        let needs_cluster = ub.is_some_and(|u| u.needs_cluster());
        if needs_cluster && ctas < 2 {
            // A cluster of two at least, even when max_ctas says 1.
            ctas = 2;
        }
        if ub.is_some_and(|u| u.needs_two_warps()) && w < 2 {
            w = 2;
        }
        let cluster = ctas >= 2 && (needs_cluster || self.rng.chance(2, 3));
        self.ctas = ctas;
        self.csize = if cluster { ctas } else { 1 };
        self.w = w;
        self.t = 32 * w;
    }

    fn prologue(&mut self) {
        self.tid = self.r();
        self.warp = self.r();
        self.lane = self.r();
        self.rank = self.r();
        self.cta = self.r();
        self.outp = self.rd();
        let (tid, warp, lane, rank, cta, outp) = (self.tid.clone(), self.warp.clone(), self.lane.clone(), self.rank.clone(), self.cta.clone(), self.outp.clone());
        self.e(format!("mov.u32 {tid}, %tid.x"));
        self.e(format!("shr.u32 {warp}, {tid}, 5"));
        if self.rng.chance(1, 2) {
            self.e(format!("and.b32 {lane}, {tid}, 31"));
        } else {
            self.e(format!("mov.u32 {lane}, %laneid"));
        }
        if self.csize > 1 {
            self.e(format!("mov.u32 {rank}, %cluster_ctarank"));
        } else {
            self.e(format!("mov.u32 {rank}, 0"));
        }
        self.e(format!("mov.u32 {cta}, %ctaid.x"));
        self.e(format!("ld.param.u64 {outp}, [out_ptr]"));
        self.e(format!("cvta.to.global.u64 {outp}, {outp}"));
        self.t0 = self.eq(&tid, 0);
        if self.csize > 1 {
            // Distributed shared memory may only be used once every CTA of the cluster runs.
            self.cluster_sync();
        }
    }

    fn pick_pattern(&mut self, last: bool) -> Pattern {
        loop {
            let p = self.rng.pick(Pattern::ALL);
            if matches!(p, Pattern::Drop | Pattern::ExitBar) && !last {
                continue;
            }
            if p.needs_cluster() && self.csize < 2 {
                continue;
            }
            if p.needs_two_warps() && self.w < 2 {
                continue;
            }
            if self.smem_need(p) > self.smem_left() {
                // Out of shared memory: patterns that need (almost) none.
                return self.rng.pick(&[Pattern::Elect, Pattern::BarRed]);
            }
            return p;
        }
    }

    fn section(&mut self, p: Pattern, ub: Option<UbClass>) {
        self.nsec += 1;
        self.comment(format!("---- section {}: {} ----", self.nsec, p.name()));
        let cluster_end = match p {
            Pattern::Ring => self.ring(ub),
            Pattern::Tokens => self.tokens(ub),
            Pattern::Tx => self.tx(ub),
            Pattern::NoComplete => self.nocomplete(ub),
            Pattern::Drop => self.drop_(ub),
            Pattern::BarPc => self.barpc(ub),
            Pattern::BarRed => self.barred(ub),
            Pattern::Diverge => self.diverge(ub),
            Pattern::Dsmem => self.dsmem(ub),
            Pattern::Remote => self.remote(ub),
            Pattern::StAsync => self.stasync(ub),
            Pattern::Elect => self.elect(ub),
            Pattern::ExitBar => self.exitbar(ub),
        };
        if !self.ended {
            self.sep(cluster_end);
        }
    }

    fn finish(mut self, seed: u64, ub: Option<UbClass>) -> Generated {
        self.e("ret");
        let launch = if self.csize > 1 { format!("cluster of {} CTAs", self.csize) } else { format!("{} CTA(s)", self.ctas) };
        let mut description = format!(
            "hopsync gen seed {seed}{}: {launch} x {} warps; {}",
            if ub.is_some() { " --ub" } else { "" },
            self.w,
            self.descs.join("; ")
        );
        let expect = ub.map(|u| self.finding.unwrap_or(u.finding()));
        if let Some(f) = expect {
            description.push_str(&format!(" => expect finding {}", f.name()));
        }
        let words = self.out.len().max(1);
        let mut s = String::new();
        if let Some(f) = expect {
            s.push_str(&format!("// expect-finding: {}\n", f.name()));
        }
        s.push_str(&format!("//! description = \"\"\"\n{}\"\"\"\n", wrap_manifest(&description)));
        s.push_str("//! [launch]\n");
        s.push_str(&format!("//! grid = [{}, 1, 1]\n", self.ctas));
        s.push_str(&format!("//! block = [{}, 1, 1]\n", self.t));
        if self.csize > 1 {
            s.push_str(&format!("//! cluster = [{}, 1, 1]\n", self.csize));
        }
        s.push_str("//! [[buffer]]\n//! name = \"out\"\n");
        s.push_str(&format!("//! bytes = {}\n", 4 * words));
        s.push_str("//! type = \"u32\"\n//! output = true\n");
        if ub.is_none() {
            let vals: Vec<String> = self.out.iter().map(|v| v.to_string()).collect();
            let mut line = String::from("//! expect = [");
            for (i, v) in vals.iter().enumerate() {
                if line.len() > 90 {
                    s.push_str(&line);
                    s.push('\n');
                    line = String::from("//!   ");
                }
                line.push_str(v);
                if i + 1 < vals.len() {
                    line.push_str(", ");
                }
            }
            line.push(']');
            s.push_str(&line);
            s.push('\n');
        }
        s.push_str("//! [[param]]\n//! name = \"out_ptr\"\n//! buffer = \"out\"\n");
        s.push_str(".version 8.6\n.target sm_90\n.address_size 64\n\n");
        s.push_str(&format!(".visible .entry gen_{seed}(\n\t.param .u64 out_ptr\n)\n{{\n"));
        s.push_str(&format!("\t.reg .pred %p<{}>;\n", self.np.max(1)));
        s.push_str(&format!("\t.reg .b32 %r<{}>;\n", self.nr.max(1)));
        s.push_str(&format!("\t.reg .b64 %rd<{}>;\n", self.nrd.max(1)));
        for d in &self.decls {
            s.push_str(d);
            s.push('\n');
        }
        s.push('\n');
        for l in &self.body {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("}\n");
        Generated { text: s, expect_finding: expect, description }
    }
}

/// Wraps text into `//! ` manifest lines of about 100 characters.
fn wrap_manifest(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("//! ");
    for word in text.split_whitespace() {
        if line.len() + word.len() > 100 && line.len() > 4 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from("//! ");
        }
        line.push_str(word);
        line.push(' ');
    }
    out.push_str(line.trim_end());
    out
}

/// How a warp's threads count on an mbarrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArriveMode {
    /// Every thread arrives (count 1): 32 per warp.
    Thread,
    /// After bar.warp.sync, one leader arrives with count 32.
    Leader32,
    /// After bar.warp.sync, one leader arrives with count 1: 1 per warp.
    Leader1,
}

impl ArriveMode {
    fn pick(rng: &mut Rng) -> ArriveMode {
        rng.pick(&[ArriveMode::Thread, ArriveMode::Thread, ArriveMode::Leader32, ArriveMode::Leader1])
    }
    fn per_warp(self) -> u32 {
        match self {
            ArriveMode::Thread | ArriveMode::Leader32 => 32,
            ArriveMode::Leader1 => 1,
        }
    }
    fn name(self) -> &'static str {
        match self {
            ArriveMode::Thread => "per-thread",
            ArriveMode::Leader32 => "leader x32",
            ArriveMode::Leader1 => "leader x1",
        }
    }
}

// ---- the patterns ------------------------------------------------------------------------------
//
// Each returns whether it touched other CTAs (then the section ends with a cluster barrier).

impl Gen {
    /// Stage, use and use parity of item `i` in a `k`-stage ring.
    fn stage(&mut self, i: &str, k: u32) -> (String, String, String) {
        let (s, u, par) = (self.r(), self.r(), self.r());
        if k.is_power_of_two() && self.rng.chance(1, 2) {
            self.e(format!("and.b32 {s}, {i}, {}", k - 1));
            self.e(format!("shr.u32 {u}, {i}, {}", k.trailing_zeros()));
        } else {
            self.e(format!("rem.u32 {s}, {i}, {k}"));
            self.e(format!("div.u32 {u}, {i}, {k}"));
        }
        self.e(format!("and.b32 {par}, {u}, 1"));
        (s, u, par)
    }

    /// Predicate `lo <= warp < hi`.
    fn warp_in(&mut self, lo: u32, hi: u32) -> String {
        let warp = self.warp.clone();
        let p = self.p();
        if lo == 0 {
            self.e(format!("setp.lt.u32 {p}, {warp}, {hi}"));
        } else {
            let q = self.p();
            self.e(format!("setp.ge.u32 {p}, {warp}, {lo}"));
            self.e(format!("setp.lt.u32 {q}, {warp}, {hi}"));
            self.e(format!("and.pred {p}, {p}, {q}"));
        }
        p
    }

    /// Which warps take part: all, or a random contiguous group. Returns (first warp, count).
    fn participants(&mut self, all: bool) -> (u32, u32) {
        if all || self.rng.chance(1, 2) {
            (0, self.w)
        } else {
            let w0 = self.rng.below(self.w as u64) as u32;
            (w0, self.rng.range(1, self.w - w0))
        }
    }

    fn ring(&mut self, ub: Option<UbClass>) -> bool {
        let w = self.w;
        let np = self.rng.range(1, (w - 1).min(4));
        let nc = self.rng.range(1, (w - np).min(4));
        let mut k = self.rng.range(1, 4);
        while k > 1 && k * np * 128 > self.smem_left() {
            k -= 1;
        }
        let n = self.rng.range(1, 2 * self.opts.max_rounds.max(1) + 2);
        let fm = ArriveMode::pick(&mut self.rng);
        let em = ArriveMode::pick(&mut self.rng);
        let (fc, ec) = (np * fm.per_warp(), nc * em.per_warp());
        let v = Val::new(&mut self.rng);
        let mix = self.rng.range(1, 49) * 2 + 1;
        let missing = ub == Some(UbClass::MissingMbarrierArrive);
        self.descs.push(format!(
            "[ring] {np} producer + {nc} consumer warps, {k} stages, {n} items, full {} / empty {}{}",
            fm.name(),
            em.name(),
            if missing { ", full[0] initialized one arrival short (ub)" } else { "" }
        ));
        let full = self.shared("full", 8, "b64", Some(k));
        let empty = self.shared("empty", 8, "b64", Some(k));
        let buf = self.shared("buf", 16, "b32", Some(k * np * 32));
        for s in 0..k {
            let a = self.maddr(&full, 8 * s);
            self.init_by_one(&a, fc + (missing && s == 0) as u32);
            let a = self.maddr(&empty, 8 * s);
            self.init_by_one(&a, ec);
        }
        self.bar0();
        let sl = self.slice(nc * 32);
        let (lane, tid, cta, warp) = (self.lane.clone(), self.tid.clone(), self.cta.clone(), self.warp.clone());
        let rfull = self.r();
        self.e(format!("mov.u32 {rfull}, {full}"));
        let rempty = self.r();
        self.e(format!("mov.u32 {rempty}, {empty}"));
        let end = self.lab("end");
        let prod = self.lab("prod");
        let pp = self.warp_in(0, np);
        self.e(format!("@{pp} bra {prod}"));
        let pc = self.warp_in(np, np + nc);
        self.e(format!("@!{pc} bra {end}"));
        // Consumers.
        let i = self.imm(0);
        let acc = self.imm(0);
        let bl = self.elem_addr(&buf, &lane, 4);
        let cl = self.lab("cloop");
        self.place(&cl);
        let (s, _u, par) = self.stage(&i, k);
        let fa = self.r();
        self.e(format!("mad.lo.u32 {fa}, {s}, 8, {rfull}"));
        let fa = self.reg_addr(&fa);
        self.wait_loop(&fa, &par, true, false);
        let ba = self.r();
        self.e(format!("mad.lo.u32 {ba}, {s}, {}, {bl}", np * 128));
        for q in 0..np {
            let x = self.r();
            if q == 0 {
                self.e(format!("ld.shared.u32 {x}, [{ba}]"));
            } else {
                self.e(format!("ld.shared.u32 {x}, [{ba}+{}]", 128 * q));
            }
            self.e(format!("mad.lo.u32 {acc}, {acc}, {mix}, {x}"));
        }
        let ea = self.r();
        self.e(format!("mad.lo.u32 {ea}, {s}, 8, {rempty}"));
        let ea = self.reg_addr(&ea);
        self.warp_arrive(em, &ea, false, false);
        self.e(format!("add.u32 {i}, {i}, 1"));
        let pl = self.p();
        self.e(format!("setp.lt.u32 {pl}, {i}, {n}"));
        self.e(format!("@{pl} bra {cl}"));
        let ci = self.r();
        self.e(format!("sub.u32 {ci}, {tid}, {}", 32 * np));
        self.st_out(&sl, &ci, &acc, None);
        self.e(format!("bra {end}"));
        // Producers.
        self.place(&prod);
        let i = self.imm(0);
        let base = self.lin(&[(&warp, v.b), (&lane, v.c), (&cta, v.e)], v.d);
        let bt = self.elem_addr(&buf, &tid, 4);
        let pl = self.lab("ploop");
        self.place(&pl);
        let (s, u, _par) = self.stage(&i, k);
        let pw = self.lab("write");
        let pz = self.p();
        self.e(format!("setp.eq.u32 {pz}, {u}, 0"));
        self.e(format!("@{pz} bra {pw}"));
        let pq = self.r();
        self.e(format!("sub.u32 {pq}, {u}, 1"));
        self.e(format!("and.b32 {pq}, {pq}, 1"));
        let ea = self.r();
        self.e(format!("mad.lo.u32 {ea}, {s}, 8, {rempty}"));
        let ea = self.reg_addr(&ea);
        self.wait_loop(&ea, &pq, true, false);
        self.place(&pw);
        let x = self.r();
        self.e(format!("mad.lo.u32 {x}, {i}, {}, {base}", v.a));
        let ba = self.r();
        self.e(format!("mad.lo.u32 {ba}, {s}, {}, {bt}", np * 128));
        self.e(format!("st.shared.u32 [{ba}], {x}"));
        let fa = self.r();
        self.e(format!("mad.lo.u32 {fa}, {s}, 8, {rfull}"));
        let fa = self.reg_addr(&fa);
        self.warp_arrive(fm, &fa, false, false);
        self.e(format!("add.u32 {i}, {i}, 1"));
        let pl2 = self.p();
        self.e(format!("setp.lt.u32 {pl2}, {i}, {n}"));
        self.e(format!("@{pl2} bra {pl}"));
        self.place(&end);
        for c in 0..self.ctas {
            for cw in 0..nc {
                for l in 0..32 {
                    let mut acc = 0u32;
                    for it in 0..n {
                        for q in 0..np {
                            acc = acc.wrapping_mul(mix).wrapping_add(v.at(it, q, l, c));
                        }
                    }
                    self.expect(&sl, c, cw * 32 + l, acc);
                }
            }
        }
        false
    }

    fn tokens(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let all = ub.is_some();
        let (w0, nw) = self.participants(all);
        let npart = 32 * nw;
        let mut rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        match ub {
            Some(U::StaleToken) => rounds = rounds.max(2),
            Some(U::ArriveBeforeWait) => rounds = rounds.max(2),
            _ => {}
        }
        while rounds > 1 && rounds * npart * 4 > self.smem_left() && ub.is_none() {
            rounds -= 1;
        }
        // 0: count 1 each; 1: per-thread counts 1..=3; 2: a leader arrives 32 for its warp.
        let mode = match ub {
            Some(U::ArriveBeforeWait | U::StaleToken | U::UseAfterInval) => 0,
            Some(_) => self.rng.below(2),
            None => self.rng.below(3),
        };
        let (cx, cy) = (self.rng.range(1, 97), self.rng.range(0, 97));
        let cnt_of = |p: u32| if mode == 1 { 1 + (p.wrapping_mul(cx).wrapping_add(cy)) % 3 } else { 1 };
        let m: u32 = (0..npart).map(cnt_of).sum();
        let init = match ub {
            Some(U::MissingMbarrierArrive) => m + 1,
            Some(U::InitCountOutOfRange) => self.rng.pick(&[0, 1 << 20]),
            _ => m,
        };
        let ru = match ub {
            Some(U::StaleToken) => self.rng.range(1, rounds - 1),
            Some(U::UseAfterInval) => rounds,
            _ => self.rng.range(0, rounds - 1),
        };
        let tu = self.rng.below(npart as u64) as u32;
        self.descs.push(format!(
            "[tokens] warps {w0}..{} arrive ({}) and wait on the token, {rounds} rounds{}",
            w0 + nw,
            ["count 1", "counts 1-3", "leader count 32, others by parity"][mode as usize],
            match ub {
                None => String::new(),
                Some(U::InitCountOutOfRange) => format!("; ub: mbarrier.init count {init}"),
                Some(U::NeverInitialized) => "; ub: the mbarrier is never initialized".into(),
                Some(U::MissingMbarrierArrive) => format!("; ub: init count {init}, one more than arrives"),
                Some(U::ArriveBeforeWait) => "; ub: nobody waits in round 0 (barrier 0 instead), then round 1 arrives".into(),
                Some(U::UseAfterInval) => format!("; ub: after the rounds thread 0 invalidates it and thread {tu} arrives"),
                Some(U::InitOnValid) => format!("; ub: thread {tu} initializes it again after barrier 0"),
                Some(U::StaleToken) => format!("; ub: in round {ru}, after barrier 0, thread {tu} waits with its round {} token", ru - 1),
                Some(u) => format!("; ub {} by thread {tu} in round {ru}", u.name()),
            }
        ));
        let bar = self.shared("bar", 8, "b64", None);
        let data = self.shared("data", 4, "b32", Some(rounds * npart));
        let v = Val::new(&mut self.rng);
        let offs: Vec<u32> = (0..rounds).map(|_| self.rng.below(npart as u64) as u32).collect();
        let ba = self.maddr(&bar, 0);
        if ub != Some(U::NeverInitialized) {
            self.init_by_one(&ba, init);
        }
        self.bar0();
        let sl = self.slice(rounds * npart);
        let end = self.lab("end");
        if nw < self.w {
            let pin = self.warp_in(w0, w0 + nw);
            self.e(format!("@!{pin} bra {end}"));
        }
        let (tid, cta) = (self.tid.clone(), self.cta.clone());
        let pidx = self.r();
        self.e(format!("sub.u32 {pidx}, {tid}, {}", 32 * w0));
        let da = self.elem_addr(&data, &pidx, 4);
        let cnt = if mode == 1 {
            let c = self.r();
            self.e(format!("mad.lo.u32 {c}, {pidx}, {cx}, {cy}"));
            self.e(format!("rem.u32 {c}, {c}, 3"));
            self.e(format!("add.u32 {c}, {c}, 1"));
            Some(c)
        } else {
            None
        };
        let pu = if ub.is_some() { Some(self.eq(&pidx, tu)) } else { None };
        if ub == Some(U::InitOnValid) {
            let pu = pu.clone().unwrap();
            self.e(format!("@{pu} mbarrier.init{}.b64 {}, {m}", ba.space, ba.text));
        }
        let mut toks: Vec<String> = Vec::new();
        for r in 0..rounds {
            let x = self.lin(&[(&pidx, v.b), (&cta, v.e)], v.a.wrapping_mul(r).wrapping_add(v.d));
            let off = 4 * r * npart;
            if off == 0 {
                self.e(format!("st.shared.u32 [{da}], {x}"));
            } else {
                self.e(format!("st.shared.u32 {}, {x}", Self::at(&da, off)));
            }
            let hook = if r == ru { ub } else { None };
            let pu_ = pu.clone().unwrap_or_default();
            if hook == Some(U::MbarrierLoadedAsData) {
                let t = self.rd();
                self.e(format!("@{pu_} ld.shared.u64 {t}, [{bar}]"));
            }
            let tok = self.rd();
            let mut pe = None;
            match (mode, hook) {
                (_, Some(U::ArriveCountOverPending)) => {
                    let big = m + 1 + self.rng.below(3) as u32;
                    self.arrive(Some(&pu_), &tok, &ba, Some(&big.to_string()), false);
                    self.arrive(Some(&format!("!{pu_}")), &tok, &ba, cnt.as_deref(), false);
                }
                (_, Some(U::ArriveCountZero)) => {
                    self.arrive(Some(&pu_), &tok, &ba, Some("0"), false);
                    self.arrive(Some(&format!("!{pu_}")), &tok, &ba, cnt.as_deref(), false);
                }
                (_, Some(U::MisalignedMbarrier)) => {
                    let bad = Addr { space: ".shared::cta", text: format!("[{bar}+4]") };
                    self.arrive(Some(&pu_), &tok, &bad, cnt.as_deref(), false);
                    self.arrive(Some(&format!("!{pu_}")), &tok, &ba, cnt.as_deref(), false);
                }
                (_, Some(U::MbarrierInGlobal)) => {
                    let g = Addr { space: "", text: format!("[{}]", self.outp) };
                    self.arrive(Some(&pu_), &tok, &g, cnt.as_deref(), false);
                    self.arrive(Some(&format!("!{pu_}")), &tok, &ba, cnt.as_deref(), false);
                }
                (_, Some(U::TxOutOfRange)) => {
                    self.e(format!("@{pu_} mbarrier.arrive.expect_tx{}.b64 {tok}, {}, 1048576", ba.space, ba.text));
                    self.arrive(Some(&format!("!{pu_}")), &tok, &ba, cnt.as_deref(), false);
                }
                (2, _) => {
                    self.e("bar.warp.sync 0xffffffff");
                    let p = self.leader();
                    self.arrive(Some(&p), &tok, &ba, Some("32"), false);
                    pe = Some(p);
                }
                _ => self.arrive(None, &tok, &ba, cnt.as_deref(), false),
            }
            if ub == Some(U::ArriveBeforeWait) && r == 0 {
                // Nobody waits for phase 0; once barrier 0 completes every thread has arrived, so
                // phase 0 is complete and the first arrive of round 1 is the finding.
                self.bar0();
                toks.push(tok);
                continue;
            }
            match pe {
                Some(p) => {
                    let tw = self.lab("tokwait");
                    let join = self.lab("join");
                    self.e(format!("@{p} bra {tw}"));
                    self.wait_loop(&ba, &(r & 1).to_string(), true, false);
                    self.e(format!("bra {join}"));
                    self.place(&tw);
                    self.wait_loop(&ba, &tok, false, false);
                    self.place(&join);
                }
                None => {
                    if hook == Some(U::StaleToken) {
                        // Once barrier 0 completes, every thread has arrived: phase r is complete
                        // and the object is in phase r+1. Thread tu then waits with its token of
                        // phase r-1, two phases back (PTX 9.7.13.15.16: only the current or the
                        // immediately preceding phase may be tested).
                        self.bar0();
                        let t = self.rd();
                        self.e(format!("@{pu_} mov.b64 {t}, {}", toks[r as usize - 1]));
                        self.e(format!("@!{pu_} mov.b64 {t}, {tok}"));
                        self.wait_loop(&ba, &t, false, false);
                    } else {
                        self.wait_loop(&ba, &tok, false, false);
                    }
                }
            }
            let j = self.r();
            self.e(format!("add.u32 {j}, {pidx}, {}", offs[r as usize]));
            self.e(format!("rem.u32 {j}, {j}, {npart}"));
            let ja = self.elem_addr(&data, &j, 4);
            let y = self.r();
            if off == 0 {
                self.e(format!("ld.shared.u32 {y}, [{ja}]"));
            } else {
                self.e(format!("ld.shared.u32 {y}, {}", Self::at(&ja, off)));
            }
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {pidx}, {}", r * npart));
            self.st_out(&sl, &oi, &y, None);
            toks.push(tok);
        }
        if ub == Some(U::UseAfterInval) {
            // Every participant (all threads) is done with the object: invalidate it, then arrive.
            self.bar0();
            let t0 = self.t0.clone();
            self.e(format!("@{t0} mbarrier.inval{}.b64 {}", ba.space, ba.text));
            self.bar0();
            let pu_ = pu.clone().unwrap_or_default();
            self.arrive(Some(&pu_), "_", &ba, None, false);
        }
        self.place(&end);
        if ub.is_none() && self.rng.chance(1, 3) {
            // Done with it: invalidate (everyone has passed its last wait once barrier 0 completes).
            self.bar0();
            let t0 = self.t0.clone();
            self.e(format!("@{t0} mbarrier.inval{}.b64 {}", ba.space, ba.text));
        }
        for c in 0..self.ctas {
            for r in 0..rounds {
                for p in 0..npart {
                    let src = (p + offs[r as usize]) % npart;
                    self.expect(&sl, c, r * npart + p, v.at(r, src, 0, c));
                }
            }
        }
        false
    }

    fn tx(&mut self, ub: Option<UbClass>) -> bool {
        let (w0, nw) = self.participants(ub.is_some());
        let npart = 32 * nw;
        let mut rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        while rounds > 1 && rounds * npart * 4 > self.smem_left() {
            rounds -= 1;
        }
        let ru = self.rng.range(0, rounds - 1);
        self.descs.push(format!(
            "[tx] warps {w0}..{} arrive; some threads expect_tx (arrive.expect_tx or expect_tx + arrive), others complete_tx; {rounds} phases{}",
            w0 + nw,
            match ub {
                Some(u) => format!("; ub {} in round {ru}", u.name()),
                None => String::new(),
            }
        ));
        let bar = self.shared("bar", 8, "b64", None);
        let data = self.shared("data", 4, "b32", Some(rounds * npart));
        let v = Val::new(&mut self.rng);
        let offs: Vec<u32> = (0..rounds).map(|_| self.rng.below(npart as u64) as u32).collect();
        let ba = self.maddr(&bar, 0);
        self.init_by_one(&ba, npart);
        self.bar0();
        let sl = self.slice(rounds * npart);
        let end = self.lab("end");
        if nw < self.w {
            let pin = self.warp_in(w0, w0 + nw);
            self.e(format!("@!{pin} bra {end}"));
        }
        let (tid, cta) = (self.tid.clone(), self.cta.clone());
        let pidx = self.r();
        self.e(format!("sub.u32 {pidx}, {tid}, {}", 32 * w0));
        let da = self.elem_addr(&data, &pidx, 4);
        for r in 0..rounds {
            let x = self.lin(&[(&pidx, v.b), (&cta, v.e)], v.a.wrapping_mul(r).wrapping_add(v.d));
            let off = 4 * r * npart;
            self.e(format!("st.shared.u32 {}, {x}", Self::at(&da, off)));
            // Expecters and their amounts; completers split the total.
            let ne = self.rng.range(1, 3.min(npart));
            let mut ex: Vec<(u32, u32)> = Vec::new();
            while ex.len() < ne as usize {
                let t = self.rng.below(npart as u64) as u32;
                if !ex.iter().any(|(u, _)| *u == t) {
                    let amt = self.rng.range(1, 512);
                    ex.push((t, amt));
                }
            }
            let total: u32 = ex.iter().map(|(_, a)| a).sum();
            let nc = self.rng.range(1, 4).min(total);
            let mut cuts: Vec<u32> = (0..nc - 1).map(|_| self.rng.range(1, total - 1)).collect();
            cuts.sort();
            let mut parts = Vec::new();
            let mut prev = 0;
            for c in cuts.iter().chain(std::iter::once(&total)) {
                parts.push(c - prev);
                prev = *c;
            }
            let mut done_by: Vec<(u32, u32)> = Vec::new();
            for a in parts.into_iter().filter(|a| *a > 0) {
                let t = self.rng.below(npart as u64) as u32;
                done_by.push((t, a));
            }
            let scope = self.rng.pick(&[".cta", ".cta", ".cluster"]);
            for (t, a) in &done_by {
                let p = self.eq(&pidx, *t);
                let rel = self.rng.pick(&["", ".relaxed"]);
                let sc = if rel.is_empty() { "" } else { scope };
                self.e(format!("@{p} mbarrier.complete_tx{rel}{sc}{}.b64 {}, {a}", ba.space, ba.text));
            }
            let hook = r == ru && ub == Some(UbClass::TxOutOfRange);
            let form = if hook { 1 } else { self.rng.below(2) };
            let tok = self.rd();
            let pes: Vec<String> = ex.iter().map(|(t, _)| self.eq(&pidx, *t)).collect();
            if form == 1 {
                for ((_, a), p) in ex.iter().zip(&pes) {
                    let a = if hook { 1 << 20 } else { *a };
                    let rel = self.rng.pick(&["", ".relaxed"]);
                    let sc = if rel.is_empty() { "" } else { scope };
                    self.e(format!("@{p} mbarrier.expect_tx{rel}{sc}{}.b64 {}, {a}", ba.space, ba.text));
                }
                self.arrive(None, &tok, &ba, None, false);
            } else {
                let amt = self.imm(0);
                let pe = self.p();
                self.e(format!("mov.pred {pe}, 0"));
                for ((_, a), p) in ex.iter().zip(&pes) {
                    self.e(format!("selp.u32 {amt}, {a}, {amt}, {p}"));
                    self.e(format!("or.pred {pe}, {pe}, {p}"));
                }
                let sem = self.arrive_sem(false);
                self.e(format!("@{pe} mbarrier.arrive.expect_tx{sem}{}.b64 {tok}, {}, {amt}", ba.space, ba.text));
                self.arrive(Some(&format!("!{pe}")), &tok, &ba, None, false);
            }
            if self.rng.chance(1, 2) {
                self.wait_loop(&ba, &tok, false, false);
            } else {
                self.wait_loop(&ba, &(r & 1).to_string(), true, false);
            }
            let j = self.r();
            self.e(format!("add.u32 {j}, {pidx}, {}", offs[r as usize]));
            self.e(format!("rem.u32 {j}, {j}, {npart}"));
            let ja = self.elem_addr(&data, &j, 4);
            let y = self.r();
            self.e(format!("ld.shared.u32 {y}, {}", Self::at(&ja, off)));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {pidx}, {}", r * npart));
            self.st_out(&sl, &oi, &y, None);
        }
        self.place(&end);
        for c in 0..self.ctas {
            for r in 0..rounds {
                for p in 0..npart {
                    let src = (p + offs[r as usize]) % npart;
                    self.expect(&sl, c, r * npart + p, v.at(r, src, 0, c));
                }
            }
        }
        false
    }

    fn nocomplete(&mut self, ub: Option<UbClass>) -> bool {
        let t = self.t;
        let k = self.rng.range(1, 3);
        let mut chosen: Vec<u32> = Vec::new();
        while chosen.len() < k as usize {
            let c = self.rng.below(t as u64) as u32;
            if !chosen.contains(&c) {
                chosen.push(c);
            }
        }
        let mut counts: Vec<u32> = (0..k).map(|_| self.rng.range(1, 4)).collect();
        let m: u32 = counts.iter().sum::<u32>() + (t - k);
        let completes = ub == Some(UbClass::NoCompleteCompletes);
        if completes {
            let before: u32 = counts[..k as usize - 1].iter().sum();
            counts[k as usize - 1] = m - before;
        }
        self.descs.push(format!(
            "[nocomplete] threads {chosen:?} arrive .noComplete with counts {counts:?} one at a time (init {m}), then read pending_count; the rest arrive; token waits{}",
            if completes { "; the last .noComplete arrive completes the phase (ub)" } else { "" }
        ));
        let bar = self.shared("bar", 8, "b64", None);
        let data = self.shared("data", 4, "b32", Some(t));
        let v = Val::new(&mut self.rng);
        let off = self.rng.below(t as u64) as u32;
        let ba = self.maddr(&bar, 0);
        self.init_by_one(&ba, m);
        self.bar0();
        let sl = self.slice(k + t);
        let (tid, cta) = (self.tid.clone(), self.cta.clone());
        let da = self.elem_addr(&data, &tid, 4);
        let x = self.lin(&[(&tid, v.b), (&cta, v.e)], v.d);
        self.e(format!("st.shared.u32 [{da}], {x}"));
        let tok = self.rd();
        let pjs: Vec<String> = chosen.iter().map(|c| self.eq(&tid, *c)).collect();
        for j in 0..k as usize {
            let sem = self.rng.pick(&["", ".release.cta", ".release.cta"]);
            let c = if self.rng.chance(1, 2) { counts[j].to_string() } else { self.imm(counts[j]) };
            self.e(format!("@{} mbarrier.arrive.noComplete{sem}{}.b64 {tok}, {}, {c}", pjs[j], ba.space, ba.text));
            self.bar0();
        }
        let pc = self.p();
        self.e(format!("mov.pred {pc}, 0"));
        for p in &pjs {
            self.e(format!("or.pred {pc}, {pc}, {p}"));
        }
        self.arrive(Some(&format!("!{pc}")), &tok, &ba, None, false);
        self.wait_loop(&ba, &tok, false, false);
        for (j, p) in pjs.iter().enumerate() {
            let rc = self.r();
            self.e(format!("@{p} mbarrier.pending_count.b64 {rc}, {tok}"));
            self.st_out_at(&sl, j as u32, &rc, Some(p));
        }
        let jj = self.r();
        self.e(format!("add.u32 {jj}, {tid}, {off}"));
        self.e(format!("rem.u32 {jj}, {jj}, {t}"));
        let ja = self.elem_addr(&data, &jj, 4);
        let y = self.r();
        self.e(format!("ld.shared.u32 {y}, [{ja}]"));
        let oi = self.r();
        self.e(format!("add.u32 {oi}, {tid}, {k}"));
        self.st_out(&sl, &oi, &y, None);
        for c in 0..self.ctas {
            let mut pending = m;
            for j in 0..k {
                self.expect(&sl, c, j, pending);
                pending -= counts[j as usize];
            }
            for i in 0..t {
                self.expect(&sl, c, k + i, v.at(0, (i + off) % t, 0, c));
            }
        }
        false
    }

    /// arrive_drop by threads that then exit; always the last section.
    fn drop_(&mut self, _ub: Option<UbClass>) -> bool {
        let t = self.t;
        let mut rounds = self.rng.range(2, self.opts.max_rounds.max(2));
        while rounds > 2 && rounds * t * 4 > self.smem_left() {
            rounds -= 1;
        }
        let warp_drop = self.w >= 2 && self.rng.chance(1, 3);
        let mut ls = vec![if warp_drop { t - 32 } else { t }];
        for r in 0..rounds - 1 {
            let l = ls[r as usize];
            let next = if self.rng.chance(1, 4) { l } else { self.rng.range(1, l) };
            ls.push(next);
        }
        self.descs.push(format!(
            "[drop] {rounds} phases; live threads per phase {ls:?}: the threads beyond the next phase's count arrive_drop and exit{}",
            if warp_drop { "; first the last warp drops 32 with .noComplete before barrier 0 and exits" } else { "" }
        ));
        let bar = self.shared("bar", 8, "b64", None);
        let data = self.shared("data", 4, "b32", Some(rounds * t));
        let v = Val::new(&mut self.rng);
        let offs: Vec<u32> = (0..rounds).map(|r| self.rng.below(ls[r as usize] as u64) as u32).collect();
        let ba = self.maddr(&bar, 0);
        self.init_by_one(&ba, t);
        self.bar0();
        let sl = self.slice(rounds * t);
        let (tid, cta, warp, lane) = (self.tid.clone(), self.cta.clone(), self.warp.clone(), self.lane.clone());
        if warp_drop {
            let pw = self.eq(&warp, self.w - 1);
            let pl = self.eq(&lane, 0);
            let p = self.p();
            self.e(format!("and.pred {p}, {pw}, {pl}"));
            let sem = self.rng.pick(&["", ".release.cta", ".release.cta"]);
            self.e(format!("@{p} mbarrier.arrive_drop.noComplete{sem}{}.b64 _, {}, 32", ba.space, ba.text));
            self.bar0();
            self.e(format!("@{pw} exit"));
        }
        let da = self.elem_addr(&data, &tid, 4);
        for r in 0..rounds {
            let (l, next) = (ls[r as usize], if r + 1 < rounds { ls[r as usize + 1] } else { ls[r as usize] });
            let x = self.lin(&[(&tid, v.b), (&cta, v.e)], v.a.wrapping_mul(r).wrapping_add(v.d));
            self.e(format!("st.shared.u32 {}, {x}", Self::at(&da, 4 * r * t)));
            if next < l {
                let pd = self.p();
                self.e(format!("setp.ge.u32 {pd}, {tid}, {next}"));
                let sem = self.arrive_sem(false);
                self.e(format!("@{pd} mbarrier.arrive_drop{sem}{}.b64 _, {}", ba.space, ba.text));
                let ex = self.rng.pick(&["exit", "ret"]);
                self.e(format!("@{pd} {ex}"));
            }
            let tok = self.rd();
            self.arrive(None, &tok, &ba, None, false);
            self.wait_loop(&ba, &tok, false, false);
            let j = self.r();
            self.e(format!("add.u32 {j}, {tid}, {}", offs[r as usize]));
            self.e(format!("rem.u32 {j}, {j}, {l}"));
            let ja = self.elem_addr(&data, &j, 4);
            let y = self.r();
            self.e(format!("ld.shared.u32 {y}, {}", Self::at(&ja, 4 * r * t)));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {}", r * t));
            self.st_out(&sl, &oi, &y, None);
            for c in 0..self.ctas {
                for i in 0..next {
                    self.expect(&sl, c, r * t + i, v.at(r, (i + offs[r as usize]) % l, 0, c));
                }
            }
        }
        self.ended = true;
        false
    }

    fn barpc(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let w = self.w;
        let np = self.rng.range(1, (w - 1).min(4));
        let nc = self.rng.range(1, (w - np).min(4));
        let rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        let a = self.rng.range(1, 15);
        let b = loop {
            let b = self.rng.range(1, 15);
            if b != a {
                break b;
            }
        };
        let cnt = 32 * (np + nc);
        let (cnt_a, cnt_b) = match ub {
            Some(U::BarrierCountNotMultiple) => (cnt + self.rng.range(1, 31), cnt),
            Some(U::BarrierCountBelowWarp) => (self.rng.range(1, 31), cnt),
            Some(U::MissingBarrierArrival) => (cnt + 32, cnt + 32),
            _ => (cnt, cnt),
        };
        if ub == Some(U::MissingBarrierArrival) {
            self.ub_bar_count(cnt + 32);
        }
        let id_a = if ub == Some(U::BarrierIdOutOfRange) { 16 + self.rng.below(240) as u32 } else { a };
        self.descs.push(format!(
            "[barpc] {np} producer warps bar.arrive {id_a}/{cnt_a} and bar.sync {b}/{cnt_b}, {nc} consumer warps the reverse, {rounds} rounds{}",
            match ub {
                Some(u) => format!("; ub {}", u.name()),
                None => String::new(),
            }
        ));
        let buf = self.shared("buf", 4, "b32", Some(np * 32));
        let v = Val::new(&mut self.rng);
        let offs: Vec<u32> = (0..rounds).map(|_| self.rng.below((np * 32) as u64) as u32).collect();
        let sl = self.slice(nc * 32 * rounds);
        let (tid, cta) = (self.tid.clone(), self.cta.clone());
        let fsync = self.rng.pick(&["bar.sync", "bar.cta.sync", "barrier.sync", "barrier.sync.aligned", "barrier.cta.sync"]);
        let farr = self.rng.pick(&["bar.arrive", "bar.cta.arrive", "barrier.arrive", "barrier.arrive.aligned", "barrier.cta.arrive"]);
        let opnd = |g: &mut Gen, x: u32| if g.rng.chance(1, 2) { g.imm(x) } else { x.to_string() };
        let ra = if id_a > 15 { self.imm(id_a) } else { opnd(self, id_a) };
        let rb = opnd(self, b);
        let rca = opnd(self, cnt_a);
        let rcb = opnd(self, cnt_b);
        let mismatch = if ub == Some(U::BarrierCountMismatch) {
            let other = self.ub_bar_count(cnt + 32);
            Some(self.imm(other))
        } else {
            None
        };
        let end = self.lab("end");
        let prod = self.lab("prod");
        let pp = self.warp_in(0, np);
        self.e(format!("@{pp} bra {prod}"));
        let pc = self.warp_in(np, np + nc);
        self.e(format!("@!{pc} bra {end}"));
        // Consumers.
        let ci = self.r();
        self.e(format!("sub.u32 {ci}, {tid}, {}", 32 * np));
        for r in 0..rounds {
            match (&mismatch, r) {
                (Some(mc), 0) => {
                    // The first consumer warp gives barrier a another thread count.
                    let warp = self.warp.clone();
                    let pm = self.eq(&warp, np);
                    let l1 = self.lab("mm");
                    let l2 = self.lab("mmj");
                    self.e(format!("@{pm} bra {l1}"));
                    self.e(format!("{fsync} {ra}, {rca}"));
                    self.e(format!("bra {l2}"));
                    self.place(&l1);
                    self.e(format!("{fsync} {ra}, {mc}"));
                    self.place(&l2);
                }
                _ => self.e(format!("{fsync} {ra}, {rca}")),
            }
            let j = self.r();
            self.e(format!("add.u32 {j}, {ci}, {}", offs[r as usize]));
            self.e(format!("rem.u32 {j}, {j}, {}", np * 32));
            let ja = self.elem_addr(&buf, &j, 4);
            let y = self.r();
            self.e(format!("ld.shared.u32 {y}, [{ja}]"));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {ci}, {}", r * nc * 32));
            self.st_out(&sl, &oi, &y, None);
            self.e(format!("{farr} {rb}, {rcb}"));
        }
        self.e(format!("bra {end}"));
        // Producers.
        self.place(&prod);
        let ta = self.elem_addr(&buf, &tid, 4);
        for r in 0..rounds {
            if r > 0 {
                self.e(format!("{fsync} {rb}, {rcb}"));
            }
            let x = self.lin(&[(&tid, v.b), (&cta, v.e)], v.a.wrapping_mul(r).wrapping_add(v.d));
            self.e(format!("st.shared.u32 [{ta}], {x}"));
            self.e(format!("{farr} {ra}, {rca}"));
        }
        self.e(format!("{fsync} {rb}, {rcb}"));
        self.place(&end);
        for c in 0..self.ctas {
            for r in 0..rounds {
                for i in 0..nc * 32 {
                    self.expect(&sl, c, r * nc * 32 + i, v.at(r, (i + offs[r as usize]) % (np * 32), 0, c));
                }
            }
        }
        false
    }

    /// A random predicate of the thread id: `((tid*x + y) % z < q) ^ neg`; returns the predicate
    /// register, whether it is used negated, and the Rust function.
    fn tid_pred(&mut self) -> (String, bool, impl Fn(u32) -> bool) {
        let (x, y, z) = (self.rng.range(1, 97), self.rng.range(0, 97), self.rng.range(2, 9));
        let q = self.rng.range(0, z);
        let neg = self.rng.chance(1, 3);
        let tid = self.tid.clone();
        let r = self.r();
        self.e(format!("mad.lo.u32 {r}, {tid}, {x}, {y}"));
        self.e(format!("rem.u32 {r}, {r}, {z}"));
        let p = self.p();
        self.e(format!("setp.lt.u32 {p}, {r}, {q}"));
        (p, neg, move |t: u32| (t.wrapping_mul(x).wrapping_add(y) % z < q) != neg)
    }

    fn barred(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let w = self.w;
        let tests = self.rng.range(1, 3);
        let ju = self.rng.range(0, tests - 1);
        let mut ids: Vec<u32> = (1..=15).collect();
        for i in (1..ids.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            ids.swap(i, j);
        }
        let sl = self.slice(tests * self.t);
        let (tid, warp) = (self.tid.clone(), self.warp.clone());
        let mut desc = Vec::new();
        for j in 0..tests {
            let hook = if j == ju { ub } else { None };
            let op = self.rng.pick(&["popc", "and", "or"]);
            let group = match hook {
                Some(U::BarrierRedMixedWithSync) => (0, w, hook.is_some() && self.rng.chance(1, 2)),
                Some(U::BarrierCountNotMultiple | U::BarrierCountBelowWarp) => {
                    let (w0, k) = self.participants(false);
                    (w0, k, true)
                }
                _ => {
                    let (w0, k) = self.participants(false);
                    let counted = k < w || self.rng.chance(1, 3);
                    (w0, k, counted)
                }
            };
            let (w0, k, counted) = group;
            let id = ids[j as usize];
            let count = match hook {
                Some(U::BarrierCountNotMultiple) => 32 * k + self.rng.range(1, 31),
                Some(U::BarrierCountBelowWarp) => self.rng.range(1, 31),
                _ => 32 * k,
            };
            let id_s = if hook == Some(U::BarrierIdOutOfRange) {
                let bad = 16 + self.rng.below(100) as u32;
                self.imm(bad)
            } else if self.rng.chance(1, 3) {
                self.imm(id)
            } else {
                id.to_string()
            };
            let cnt_s = if !counted {
                String::new()
            } else if self.rng.chance(1, 3) {
                format!(", {}", self.imm(count))
            } else {
                format!(", {count}")
            };
            desc.push(format!("{op} on barrier {id} by warps {w0}..{}{}", w0 + k, if counted { format!(" count {count}") } else { String::new() }));
            let (pp, neg, f) = self.tid_pred();
            let skip = self.lab("skip");
            if k < w {
                let pin = self.warp_in(w0, w0 + k);
                self.e(format!("@!{pin} bra {skip}"));
            }
            let n = if neg { "!" } else { "" };
            let d = self.r();
            let red = |g: &mut Gen, d: &str| {
                if op == "popc" {
                    let form = g.rng.pick(&["bar.red.popc.u32", "bar.cta.red.popc.u32", "barrier.red.popc.u32", "barrier.red.popc.aligned.u32", "barrier.cta.red.popc.aligned.u32"]);
                    g.e(format!("{form} {d}, {id_s}{cnt_s}, {n}{pp}"));
                } else {
                    let form = g.rng.pick(&["bar.red.OP.pred", "bar.cta.red.OP.pred", "barrier.red.OP.pred", "barrier.red.OP.aligned.pred"]).replace("OP", op);
                    let pd = g.p();
                    g.e(format!("{form} {pd}, {id_s}{cnt_s}, {n}{pp}"));
                    g.e(format!("selp.u32 {d}, 1, 0, {pd}"));
                }
            };
            if hook == Some(U::BarrierRedMixedWithSync) {
                // One warp of the group uses bar.sync on the barrier the others reduce on.
                let wm = w0 + self.rng.below(k as u64) as u32;
                let pm = self.eq(&warp, wm);
                let l1 = self.lab("mixed");
                let l2 = self.lab("mixj");
                self.e(format!("@{pm} bra {l1}"));
                red(self, &d);
                self.e(format!("bra {l2}"));
                self.place(&l1);
                self.e(format!("bar.sync {id_s}{cnt_s}"));
                self.e(format!("mov.u32 {d}, 0"));
                self.place(&l2);
            } else {
                red(self, &d);
            }
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {}", j * self.t));
            self.st_out(&sl, &oi, &d, None);
            self.place(&skip);
            let members: Vec<u32> = (32 * w0..32 * (w0 + k)).collect();
            let res = match op {
                "popc" => members.iter().filter(|t| f(**t)).count() as u32,
                "and" => members.iter().all(|t| f(*t)) as u32,
                _ => members.iter().any(|t| f(*t)) as u32,
            };
            for c in 0..self.ctas {
                for t in &members {
                    self.expect(&sl, c, j * self.t + t, res);
                }
            }
        }
        self.descs.push(format!(
            "[barred] {}{}",
            desc.join(", "),
            match ub {
                Some(u) => format!("; ub {} in test {ju}", u.name()),
                None => String::new(),
            }
        ));
        false
    }

    fn diverge(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let t = self.t;
        let red = ub.is_none() && self.rng.chance(1, 3);
        let id = self.rng.range(1, 15);
        let counted = self.rng.chance(1, 2) || ub == Some(U::MissingBarrierArrival) || matches!(ub, Some(U::BarrierCountNotMultiple | U::BarrierCountBelowWarp));
        let count = match ub {
            Some(U::MissingBarrierArrival) => self.ub_bar_count(t + 32),
            Some(U::BarrierCountNotMultiple) => t + self.rng.range(1, 31),
            Some(U::BarrierCountBelowWarp) => self.rng.range(1, 31),
            _ => t,
        };
        let split_k = self.rng.range(1, 31);
        let by_mask = ub.is_none() && self.rng.chance(1, 3);
        let mask = self.rng.range(1, 0x7fff_fffe);
        let (fa, fb) = match ub {
            Some(U::AlignedBarrierDivergent) => {
                let f = self.rng.pick(&["bar.sync", "bar.cta.sync", "barrier.sync.aligned", "barrier.cta.sync.aligned"]);
                (f, f)
            }
            _ => (self.rng.pick(&["barrier.sync", "barrier.cta.sync"]), self.rng.pick(&["barrier.sync", "barrier.cta.sync"])),
        };
        self.descs.push(format!(
            "[diverge] lanes split by {}; both sides {} barrier {id}{} at different instructions{}",
            if by_mask { format!("lane & {mask:#x}") } else { format!("lane < {split_k}") },
            if red { "barrier.red.popc (different predicates)" } else { "sync on" },
            if counted { format!(" count {count}") } else { String::new() },
            match ub {
                Some(u) => format!("; ub {}", u.name()),
                None => String::new(),
            }
        ));
        let data = self.shared("data", 4, "b32", Some(t));
        let v = Val::new(&mut self.rng);
        let off = self.rng.below(t as u64) as u32;
        let sl = self.slice(if red { 2 * t } else { t });
        let (tid, cta, lane) = (self.tid.clone(), self.cta.clone(), self.lane.clone());
        let da = self.elem_addr(&data, &tid, 4);
        let x = self.lin(&[(&tid, v.b), (&cta, v.e)], v.d);
        self.e(format!("st.shared.u32 [{da}], {x}"));
        let ps = self.p();
        if by_mask {
            let r = self.r();
            self.e(format!("shl.b32 {r}, 1, {lane}"));
            self.e(format!("and.b32 {r}, {r}, {mask}"));
            self.e(format!("setp.ne.u32 {ps}, {r}, 0"));
        } else {
            self.e(format!("setp.lt.u32 {ps}, {lane}, {split_k}"));
        }
        let side_a = |l: u32| if by_mask { mask >> l & 1 == 1 } else { l < split_k };
        let cnt_s = if counted {
            if self.rng.chance(1, 2) {
                format!(", {}", self.imm(count))
            } else {
                format!(", {count}")
            }
        } else {
            String::new()
        };
        let id_s = if self.rng.chance(1, 3) { self.imm(id) } else { id.to_string() };
        let la = self.lab("sidea");
        let lj = self.lab("join");
        let d = self.r();
        if red {
            let (qa, na, fa_) = self.tid_pred();
            let (qb, nb, fb_) = self.tid_pred();
            let (na, nb) = (if na { "!" } else { "" }, if nb { "!" } else { "" });
            self.e(format!("@{ps} bra {la}"));
            self.e(format!("barrier.red.popc.u32 {d}, {id_s}{cnt_s}, {nb}{qb}"));
            self.e(format!("bra {lj}"));
            self.place(&la);
            let d2 = self.r();
            self.e(format!("add.u32 {d2}, {tid}, 1"));
            self.e(format!("barrier.cta.red.popc.u32 {d2}, {id_s}{cnt_s}, {na}{qa}"));
            self.e(format!("mov.u32 {d}, {d2}"));
            self.place(&lj);
            let pop = (0..t).filter(|&i| if side_a(i % 32) { fa_(i) } else { fb_(i) }).count() as u32;
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {t}"));
            self.st_out(&sl, &oi, &d, None);
            for c in 0..self.ctas {
                for i in 0..t {
                    self.expect(&sl, c, t + i, pop);
                }
            }
        } else {
            self.e(format!("@{ps} bra {la}"));
            self.e(format!("{fb} {id_s}{cnt_s}"));
            self.e(format!("bra {lj}"));
            self.place(&la);
            self.e(format!("add.u32 {d}, {tid}, 1"));
            self.e(format!("{fa} {id_s}{cnt_s}"));
            self.place(&lj);
        }
        let jj = self.r();
        self.e(format!("add.u32 {jj}, {tid}, {off}"));
        self.e(format!("rem.u32 {jj}, {jj}, {t}"));
        let ja = self.elem_addr(&data, &jj, 4);
        let y = self.r();
        self.e(format!("ld.shared.u32 {y}, [{ja}]"));
        self.st_out(&sl, &tid, &y, None);
        for c in 0..self.ctas {
            for i in 0..t {
                self.expect(&sl, c, i, v.at(0, (i + off) % t, 0, c));
            }
        }
        false
    }

    /// The cluster barrier of a round (arrive, some independent work, wait), or its UB variant.
    fn cluster_round_barrier(&mut self, ub: Option<UbClass>) {
        use UbClass as U;
        let aligned = if self.rng.chance(2, 3) { ".aligned" } else { "" };
        let (arr, wait) = match self.rng.below(3) {
            0 => (format!("barrier.cluster.arrive{aligned}"), format!("barrier.cluster.wait{aligned}")),
            1 => (format!("barrier.cluster.arrive.release{aligned}"), format!("barrier.cluster.wait.acquire{aligned}")),
            _ => {
                self.e("fence.acq_rel.cluster");
                (format!("barrier.cluster.arrive.relaxed{aligned}"), format!("barrier.cluster.wait{aligned}"))
            }
        };
        match ub {
            Some(U::ClusterWaitWithoutArrive) => {}
            Some(U::AlignedClusterBarrierDivergent) => {
                let lane = self.lane.clone();
                let ps = self.p();
                let k = self.rng.range(1, 31);
                self.e(format!("setp.lt.u32 {ps}, {lane}, {k}"));
                let la = self.lab("cda");
                let lj = self.lab("cdj");
                self.e(format!("@{ps} bra {la}"));
                self.e("barrier.cluster.arrive.aligned");
                self.e(format!("bra {lj}"));
                self.place(&la);
                self.e("barrier.cluster.arrive.aligned");
                self.place(&lj);
            }
            Some(U::ClusterArriveTwice) => {
                self.e(arr.clone());
                self.e(arr);
            }
            _ => self.e(arr),
        }
        if self.rng.chance(1, 2) {
            let r = self.r();
            let tid = self.tid.clone();
            self.e(format!("mul.lo.u32 {r}, {tid}, 3"));
        }
        self.e(wait);
    }

    fn dsmem(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let (t, n) = (self.t, self.csize);
        let mut rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        while rounds > 1 && rounds * t * 4 > self.smem_left() {
            rounds -= 1;
        }
        let ru = self.rng.range(0, rounds - 1);
        let v = Val::new(&mut self.rng);
        let plan: Vec<(bool, u32, u32, bool)> = (0..rounds)
            .map(|_| (self.rng.chance(1, 2), self.rng.range(0, n - 1), self.rng.below(t as u64) as u32, self.rng.chance(1, 3)))
            .collect();
        self.descs.push(format!(
            "[dsmem] {rounds} barrier.cluster rounds over distributed shared memory: {}{}",
            plan.iter().map(|(push, d, _, g)| format!("{} rank+{d}{}", if *push { "push to" } else { "pull from" }, if *g { " (generic)" } else { "" })).collect::<Vec<_>>().join(", "),
            match ub {
                Some(u) => format!("; ub {} in round {ru}", u.name()),
                None => String::new(),
            }
        ));
        let arrs: Vec<String> = (0..rounds).map(|r| self.shared(&format!("arr{r}"), 4, "b32", Some(t))).collect();
        let sl = self.slice(rounds * t);
        let (tid, rank) = (self.tid.clone(), self.rank.clone());
        for r in 0..rounds {
            let (push, d, off, generic) = plan[r as usize];
            let hook = if r == ru { ub } else { None };
            let arr = arrs[r as usize].clone();
            let x = self.lin(&[(&rank, v.b), (&tid, v.c)], v.a.wrapping_mul(r).wrapping_add(v.d));
            let q = self.r();
            if hook == Some(U::MapaRankOutOfRange) {
                let bad = n + self.rng.below(3) as u32;
                self.e(format!("mov.u32 {q}, {bad}"));
            } else {
                self.e(format!("add.u32 {q}, {rank}, {d}"));
                self.e(format!("rem.u32 {q}, {q}, {n}"));
            }
            if push {
                self.remote_access(&arr, &tid, &q, generic, Some(&x));
                self.cluster_round_barrier(hook);
                let j = self.r();
                self.e(format!("add.u32 {j}, {tid}, {off}"));
                self.e(format!("rem.u32 {j}, {j}, {t}"));
                let ja = self.elem_addr(&arr, &j, 4);
                let y = self.r();
                self.e(format!("ld.shared.u32 {y}, [{ja}]"));
                let oi = self.r();
                self.e(format!("add.u32 {oi}, {tid}, {}", r * t));
                self.st_out(&sl, &oi, &y, None);
                for c in 0..n {
                    let src = (c + n - d) % n;
                    for i in 0..t {
                        self.expect(&sl, c, r * t + i, v.at(r, src, (i + off) % t, 0));
                    }
                }
            } else {
                let ta = self.elem_addr(&arr, &tid, 4);
                self.e(format!("st.shared.u32 [{ta}], {x}"));
                self.cluster_round_barrier(hook);
                let j = self.r();
                self.e(format!("add.u32 {j}, {tid}, {off}"));
                self.e(format!("rem.u32 {j}, {j}, {t}"));
                let y = self.remote_access(&arr, &j, &q, generic, None);
                let oi = self.r();
                self.e(format!("add.u32 {oi}, {tid}, {}", r * t));
                self.st_out(&sl, &oi, &y, None);
                for c in 0..n {
                    let src = (c + d) % n;
                    for i in 0..t {
                        self.expect(&sl, c, r * t + i, v.at(r, src, (i + off) % t, 0));
                    }
                }
            }
        }
        true
    }

    /// Stores `val` to (or, with None, loads and returns) `arr[idx]` of CTA rank `q` through
    /// `mapa` + `.shared::cluster`, or a generic address.
    fn remote_access(&mut self, arr: &str, idx: &str, q: &str, generic: bool, val: Option<&str>) -> String {
        if generic {
            let g = self.rd();
            self.e(format!("cvta.shared.u64 {g}, {arr}"));
            let o = self.rd();
            self.e(format!("mul.wide.u32 {o}, {idx}, 4"));
            self.e(format!("add.s64 {g}, {g}, {o}"));
            let rg = self.rd();
            self.e(format!("mapa.u64 {rg}, {g}, {q}"));
            match val {
                Some(x) => {
                    self.e(format!("st.u32 [{rg}], {x}"));
                    String::new()
                }
                None => {
                    let y = self.r();
                    self.e(format!("ld.u32 {y}, [{rg}]"));
                    y
                }
            }
        } else {
            let a = self.elem_addr(arr, idx, 4);
            let ra = self.r();
            self.e(format!("mapa.shared::cluster.u32 {ra}, {a}, {q}"));
            match val {
                Some(x) => {
                    self.e(format!("st.shared::cluster.u32 [{ra}], {x}"));
                    String::new()
                }
                None => {
                    let y = self.r();
                    self.e(format!("ld.shared::cluster.u32 {y}, [{ra}]"));
                    y
                }
            }
        }
    }

    /// The `.shared::cluster` (32-bit) or generic (64-bit) address of `sym` in CTA rank `q`.
    fn remote_mbar(&mut self, sym: &str, q: &str, generic: bool) -> Addr {
        if generic {
            let g = self.rd();
            self.e(format!("cvta.shared.u64 {g}, {sym}"));
            let rg = self.rd();
            self.e(format!("mapa.u64 {rg}, {g}, {q}"));
            Addr { space: "", text: format!("[{rg}]") }
        } else {
            let a = self.r();
            self.e(format!("mov.u32 {a}, {sym}"));
            let ra = self.r();
            self.e(format!("mapa.shared::cluster.u32 {ra}, {a}, {q}"));
            Addr { space: ".shared::cluster", text: format!("[{ra}]") }
        }
    }

    /// mbarrier.init by thread 0, made visible to the cluster.
    fn init_for_cluster(&mut self, a: &Addr, count: u32) {
        self.init_by_one(a, count);
        self.e("fence.mbarrier_init.release.cluster");
        self.cluster_sync();
    }

    fn remote(&mut self, ub: Option<UbClass>) -> bool {
        use UbClass as U;
        let (t, n, w) = (self.t, self.csize, self.w);
        let gather = ub.is_none() && self.rng.chance(1, 3);
        let d = self.rng.range(1, n - 1);
        let mut gather = gather;
        let mut sw = self.rng.range(1, w);
        while sw > 1 && (if gather { n } else { 1 }) * 128 * sw > self.smem_left() {
            sw -= 1;
        }
        if gather && n * 128 * sw > self.smem_left() {
            gather = false;
        }
        let ns = 32 * sw;
        let mode = ArriveMode::pick(&mut self.rng);
        let tx = mode == ArriveMode::Thread && self.rng.chance(1, 2);
        let slots = if gather { n } else { 1 };
        let mut rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        while rounds > 1 && rounds * slots * ns * 4 > self.smem_left() {
            rounds -= 1;
        }
        let count = slots * sw * mode.per_warp();
        let generic = self.rng.chance(1, 3);
        let ru = self.rng.range(0, rounds - 1);
        let tu = self.rng.below(ns as u64) as u32;
        self.descs.push(format!(
            "[remote] warps 0..{sw} of every CTA store into {} and arrive there remotely ({}, {}{}), {rounds} rounds; the target waits and reads{}",
            if gather { "CTA 0".to_string() } else { format!("CTA rank+{d}") },
            mode.name(),
            if generic { "generic mapa address" } else { ".shared::cluster" },
            if tx { ", lane 0 of warp 0 with complete_tx + arrive.expect_tx" } else { "" },
            match ub {
                Some(u) => format!("; ub {} by thread {tu} in round {ru}", u.name()),
                None => String::new(),
            }
        ));
        let bar = self.shared("rbar", 8, "b64", None);
        let recvs: Vec<String> = (0..rounds).map(|r| self.shared(&format!("recv{r}"), 4, "b32", Some(slots * ns))).collect();
        let v = Val::new(&mut self.rng);
        let offs: Vec<u32> = (0..rounds).map(|_| self.rng.below((slots * ns) as u64) as u32).collect();
        let ba = self.maddr(&bar, 0);
        self.init_for_cluster(&ba, count);
        let sl = self.slice(rounds * t);
        let (tid, rank) = (self.tid.clone(), self.rank.clone());
        let q = self.r();
        if gather {
            self.e(format!("mov.u32 {q}, 0"));
        } else {
            self.e(format!("add.u32 {q}, {rank}, {d}"));
            self.e(format!("rem.u32 {q}, {q}, {n}"));
        }
        let rb = self.remote_mbar(&bar, &q, generic);
        let psend = self.warp_in(0, sw);
        let pu = self.eq(&tid, tu);
        let ptx = self.eq(&tid, 0);
        let ptarget = if gather { Some(self.eq(&rank, 0)) } else { None };
        for r in 0..rounds {
            let hook = if r == ru { ub } else { None };
            let skip = self.lab("nosend");
            self.e(format!("@!{psend} bra {skip}"));
            let x = self.lin(&[(&rank, v.b), (&tid, v.c)], v.a.wrapping_mul(r).wrapping_add(v.d));
            let slot = if gather { self.lin(&[(&rank, ns), (&tid, 1)], 0) } else { tid.clone() };
            let g = self.rng.chance(1, 3);
            self.remote_access(&recvs[r as usize], &slot, &q, g, Some(&x));
            match hook {
                Some(U::WaitOnClusterAddress) => {
                    let generic = self.rng.chance(1, 2);
                    let g = self.remote_mbar(&bar, &q, generic);
                    let p = self.p();
                    let op = self.rng.pick(&["try_wait", "test_wait"]);
                    self.e(format!("@{pu} mbarrier.{op}.parity{}.b64 {p}, {}, {}", g.space, g.text, r & 1));
                }
                Some(U::ClusterArriveToken) => {
                    let tok = self.rd();
                    self.e(format!("@{pu} mbarrier.arrive.release.cluster{}.b64 {tok}, {}", rb.space, rb.text));
                }
                _ => {}
            }
            if tx {
                let amt = self.rng.range(1, 4096);
                let sc = self.rng.pick(&["", ".relaxed.cluster"]);
                self.e(format!("@{ptx} mbarrier.complete_tx{sc}{}.b64 {}, {amt}", rb.space, rb.text));
                self.e(format!("@{ptx} mbarrier.arrive.expect_tx.release.cluster{}.b64 _, {}, {amt}", rb.space, rb.text));
                self.arrive(Some(&format!("!{ptx}")), "_", &rb, None, true);
            } else {
                self.warp_arrive(mode, &rb, true, true);
            }
            self.place(&skip);
            let nowait = self.lab("nowait");
            if let Some(pt) = &ptarget {
                self.e(format!("@!{pt} bra {nowait}"));
            }
            self.wait_loop(&ba, &(r & 1).to_string(), true, true);
            let j = self.r();
            self.e(format!("add.u32 {j}, {tid}, {}", offs[r as usize]));
            self.e(format!("rem.u32 {j}, {j}, {}", slots * ns));
            let ja = self.elem_addr(&recvs[r as usize], &j, 4);
            let y = self.r();
            self.e(format!("ld.shared.u32 {y}, [{ja}]"));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {}", r * t));
            self.st_out(&sl, &oi, &y, None);
            self.place(&nowait);
            if r + 1 < rounds {
                self.cluster_sync();
            }
            for c in 0..n {
                if gather && c != 0 {
                    continue;
                }
                for i in 0..t {
                    let k = (i + offs[r as usize]) % (slots * ns);
                    let (src, idx) = if gather { (k / ns, k % ns) } else { ((c + n - d) % n, k) };
                    self.expect(&sl, c, r * t + i, v.at(r, src, idx, 0));
                }
            }
        }
        true
    }

    fn stasync(&mut self, ub: Option<UbClass>) -> bool {
        let (t, n) = (self.t, self.csize);
        let d = self.rng.range(1, n - 1);
        let s = self.rng.range(1, t.min(16));
        let (vec, ty, chunk) = self.rng.pick(&[("", "b32", 4u32), ("", "b64", 8), (".v2", "b32", 8), (".v4", "b32", 16), (".v2", "b64", 16), ("", "u32", 4), (".v2", "u32", 8)]);
        let cw = chunk / 4;
        let rounds = self.rng.range(1, self.opts.max_rounds.max(1));
        let ru = self.rng.range(0, rounds - 1);
        self.descs.push(format!(
            "[stasync] threads 0..{s} st.async{vec}.{ty} {chunk} bytes each into CTA rank+{d} with complete_tx; receivers arrive (thread 0 with expect_tx {}); {rounds} rounds{}",
            s * chunk,
            match ub {
                Some(u) => format!("; ub {} in round {ru}", u.name()),
                None => String::new(),
            }
        ));
        let bar = self.shared("sbar", 8, "b64", None);
        let recvs: Vec<String> = (0..rounds).map(|r| self.shared(&format!("recv{r}"), 16, "b32", Some(s * cw))).collect();
        let v = Val::new(&mut self.rng);
        let ba = self.maddr(&bar, 0);
        self.init_for_cluster(&ba, t);
        let sl = self.slice(rounds * t);
        let (tid, rank) = (self.tid.clone(), self.rank.clone());
        let q = self.r();
        self.e(format!("add.u32 {q}, {rank}, {d}"));
        self.e(format!("rem.u32 {q}, {q}, {n}"));
        let rb = self.remote_mbar(&bar, &q, false);
        let ps = self.p();
        self.e(format!("setp.lt.u32 {ps}, {tid}, {s}"));
        let t0 = self.t0.clone();
        let e0 = self.r();
        self.e(format!("mul.lo.u32 {e0}, {tid}, {cw}"));
        for k in 0..rounds {
            let sem = self.rng.pick(&[".release.cluster", ".release.cta", ""]);
            self.e(format!("@{t0} mbarrier.arrive.expect_tx{sem}{}.b64 _, {}, {}", ba.space, ba.text, s * chunk));
            self.arrive(Some(&format!("!{t0}")), "_", &ba, None, false);
            let words: Vec<String> = (0..cw)
                .map(|wd| self.lin(&[(&e0, v.c), (&rank, v.b)], v.a.wrapping_mul(k).wrapping_add(v.d).wrapping_add(v.c.wrapping_mul(wd))))
                .collect();
            let vals: Vec<String> = if ty == "b64" {
                words
                    .chunks(2)
                    .map(|p| {
                        let (lo, hi) = (self.rd(), self.rd());
                        self.e(format!("cvt.u64.u32 {lo}, {}", p[0]));
                        self.e(format!("cvt.u64.u32 {hi}, {}", p[1]));
                        self.e(format!("shl.b64 {hi}, {hi}, 32"));
                        self.e(format!("or.b64 {lo}, {lo}, {hi}"));
                        lo
                    })
                    .collect()
            } else {
                words
            };
            let src = if vals.len() == 1 { vals[0].clone() } else { format!("{{{}}}", vals.join(", ")) };
            let a = self.r();
            self.e(format!("mov.u32 {a}, {}", recvs[k as usize]));
            self.e(format!("mad.lo.u32 {a}, {tid}, {chunk}, {a}"));
            let ra = self.r();
            self.e(format!("mapa.shared::cluster.u32 {ra}, {a}, {q}"));
            let mb = if ub == Some(UbClass::StAsyncMbarrierElsewhere) && k == ru {
                let q2 = self.r();
                self.e(format!("add.u32 {q2}, {q}, 1"));
                self.e(format!("rem.u32 {q2}, {q2}, {n}"));
                self.remote_mbar(&bar, &q2, false)
            } else {
                rb.clone()
            };
            self.e(format!("@{ps} st.async.shared::cluster.mbarrier::complete_tx::bytes{vec}.{ty} [{ra}], {src}, {}", mb.text));
            self.wait_loop(&ba, &(k & 1).to_string(), true, true);
            let j = self.r();
            self.e(format!("rem.u32 {j}, {tid}, {}", s * cw));
            let ja = self.elem_addr(&recvs[k as usize], &j, 4);
            let y = self.r();
            self.e(format!("ld.shared.u32 {y}, [{ja}]"));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {}", k * t));
            self.st_out(&sl, &oi, &y, None);
            if k + 1 < rounds {
                // Every CTA saw phase k complete before anyone sends for phase k+1.
                self.cluster_sync();
            }
            for c in 0..n {
                let srcc = (c + n - d) % n;
                for i in 0..t {
                    let wi = i % (s * cw);
                    self.expect(&sl, c, k * t + i, v.at(k, srcc, wi, 0));
                }
            }
        }
        true
    }

    fn elect(&mut self, ub: Option<UbClass>) -> bool {
        let (t, w) = (self.t, self.w);
        let half = ub.is_some() || self.rng.chance(1, 2);
        let xa = self.rng.range(1, 999);
        let ya = self.rng.range(1, 999);
        self.descs.push(format!(
            "[elect] each warp's elect.sync leader adds (warp+1)*{xa} atomically and arrives (count 1 per warp); all wait{}{}",
            if half { format!("; lanes 16-31 elect among themselves (0xffff0000) and add {ya}") } else { String::new() },
            match ub {
                Some(u) => format!("; ub {}: that elect names all 32 lanes", u.name()),
                None => String::new(),
            }
        ));
        let cnt = self.shared("cnt", 4, "u32", None);
        let cnt2 = self.shared("cnt2", 4, "u32", None);
        let eb = self.shared("ebar", 8, "b64", None);
        let t0 = self.t0.clone();
        let z = self.imm(0);
        self.e(format!("@{t0} st.shared.u32 [{cnt}], {z}"));
        self.e(format!("@{t0} st.shared.u32 [{cnt2}], {z}"));
        let ba = self.maddr(&eb, 0);
        self.init_by_one(&ba, w);
        self.bar0();
        let sl = self.slice(if half { 2 * t } else { t });
        let (tid, warp, lane) = (self.tid.clone(), self.warp.clone(), self.lane.clone());
        let amt = self.mad(&warp, xa, xa);
        let pl = self.leader();
        let junk = self.r();
        if self.rng.chance(1, 2) {
            self.e(format!("@{pl} atom.shared.add.u32 {junk}, [{cnt}], {amt}"));
        } else {
            self.e(format!("@{pl} red.shared.add.u32 [{cnt}], {amt}"));
        }
        self.arrive(Some(&pl), "_", &ba, None, false);
        self.wait_loop(&ba, "0", true, false);
        let c = self.r();
        self.e(format!("ld.shared.u32 {c}, [{cnt}]"));
        self.st_out(&sl, &tid, &c, None);
        let total = (1..=w).map(|k| k * xa).sum::<u32>();
        for cc in 0..self.ctas {
            for i in 0..t {
                self.expect(&sl, cc, i, total);
            }
        }
        if half {
            let lo = self.p();
            self.e(format!("setp.lt.u32 {lo}, {lane}, 16"));
            let skip = self.lab("lower");
            self.e(format!("@{lo} bra {skip}"));
            let ph = self.p();
            let mask = if ub == Some(UbClass::ElectMaskDivergent) { "0xffffffff" } else { "0xffff0000" };
            self.e(format!("elect.sync _|{ph}, {mask}"));
            self.e(format!("@{ph} red.shared.add.u32 [{cnt2}], {ya}"));
            self.place(&skip);
            self.bar0();
            let c2 = self.r();
            self.e(format!("ld.shared.u32 {c2}, [{cnt2}]"));
            let oi = self.r();
            self.e(format!("add.u32 {oi}, {tid}, {t}"));
            self.st_out(&sl, &oi, &c2, None);
            for cc in 0..self.ctas {
                for i in 0..t {
                    self.expect(&sl, cc, t + i, w * ya);
                }
            }
        }
        false
    }

    /// One side of every warp waits at a non-aligned barrier with no thread count while the other
    /// side exits; always the last section.
    fn exitbar(&mut self, _ub: Option<UbClass>) -> bool {
        let (t, w) = (self.t, self.w);
        let id = self.rng.range(1, 15);
        let op = self.rng.pick(&["sync", "popc", "and", "or"]);
        let split_k = self.rng.range(1, 31);
        let exit_late = self.rng.chance(2, 3);
        let pre = self.rng.range(1, w);
        let m = self.rng.below(w as u64) as u32;
        self.descs.push(format!(
            "[exitbar] barrier {id} first with count {} by warps 0..{pre}; then lanes >= {split_k} of every warp exit {} lanes < {split_k} reach `barrier.{}` {id} (no count)",
            32 * pre,
            if exit_late { "after" } else { "before" },
            if op == "sync" { "sync".to_string() } else { format!("red.{op}") }
        ));
        let data = self.shared("data", 4, "b32", Some(t));
        let v = Val::new(&mut self.rng);
        let sl = self.slice(t);
        let (tid, cta, lane) = (self.tid.clone(), self.cta.clone(), self.lane.clone());
        // An earlier generation of the same barrier with a thread count.
        let skip = self.lab("pre");
        if pre < w {
            let pin = self.warp_in(0, pre);
            self.e(format!("@!{pin} bra {skip}"));
        }
        self.e(format!("barrier.sync {id}, {}", 32 * pre));
        self.place(&skip);
        self.bar0();
        let da = self.elem_addr(&data, &tid, 4);
        let x = self.lin(&[(&tid, v.b), (&cta, v.e)], v.d);
        self.e(format!("st.shared.u32 [{da}], {x}"));
        let (pp, neg, f) = self.tid_pred();
        let n = if neg { "!" } else { "" };
        let ps = self.p();
        self.e(format!("setp.lt.u32 {ps}, {lane}, {split_k}"));
        let gone = self.lab("gone");
        if exit_late {
            self.e(format!("@!{ps} bra {gone}"));
        } else {
            self.e(format!("@!{ps} exit"));
        }
        let d = self.r();
        match op {
            "sync" => {
                self.e(format!("barrier.sync {id}"));
                let j = self.r();
                self.e(format!("add.u32 {j}, {tid}, {}", 32 * m));
                self.e(format!("rem.u32 {j}, {j}, {t}"));
                let ja = self.elem_addr(&data, &j, 4);
                self.e(format!("ld.shared.u32 {d}, [{ja}]"));
            }
            "popc" => self.e(format!("barrier.red.popc.u32 {d}, {id}, {n}{pp}")),
            _ => {
                let pd = self.p();
                self.e(format!("barrier.red.{op}.pred {pd}, {id}, {n}{pp}"));
                self.e(format!("selp.u32 {d}, 1, 0, {pd}"));
            }
        }
        self.st_out(&sl, &tid, &d, None);
        if exit_late {
            self.e("ret");
            self.place(&gone);
            self.e("exit");
        }
        let members: Vec<u32> = (0..t).filter(|i| i % 32 < split_k).collect();
        let res = match op {
            "popc" => members.iter().filter(|i| f(**i)).count() as u32,
            "and" => members.iter().all(|i| f(*i)) as u32,
            _ => members.iter().any(|i| f(*i)) as u32,
        };
        for c in 0..self.ctas {
            for &i in &members {
                let val = if op == "sync" { v.at(0, (i + 32 * m) % t, 0, c) } else { res };
                self.expect(&sl, c, i, val);
            }
        }
        self.ended = true;
        false
    }

    // -- UB mode --

    /// The last section of a UB program: a pattern with the UB injected, or a small dedicated one.
    fn ub_section(&mut self, u: UbClass) {
        use Pattern as P;
        use UbClass as U;
        let w2 = self.w >= 2;
        let cl = self.csize >= 2;
        let carriers: Vec<Pattern> = match u {
            U::ArriveCountOverPending
            | U::StaleToken
            | U::ArriveBeforeWait
            | U::NeverInitialized
            | U::UseAfterInval
            | U::InitCountOutOfRange
            | U::ArriveCountZero
            | U::MisalignedMbarrier
            | U::MbarrierInGlobal
            | U::MbarrierLoadedAsData
            | U::InitOnValid => vec![P::Tokens],
            U::MissingMbarrierArrive => {
                if w2 {
                    vec![P::Ring, P::Tokens]
                } else {
                    vec![P::Tokens]
                }
            }
            U::TxOutOfRange => vec![P::Tx, P::Tokens],
            U::NoCompleteCompletes => vec![P::NoComplete],
            U::AlignedBarrierDivergent => vec![P::Diverge],
            U::BarrierCountNotMultiple | U::BarrierCountBelowWarp | U::MissingBarrierArrival => {
                let mut v = vec![P::Diverge];
                if w2 {
                    v.push(P::BarPc);
                }
                if u != U::MissingBarrierArrival {
                    v.push(P::BarRed);
                }
                v
            }
            U::BarrierIdOutOfRange => {
                if w2 {
                    vec![P::BarPc, P::BarRed]
                } else {
                    vec![P::BarRed]
                }
            }
            U::BarrierCountMismatch => vec![P::BarPc],
            U::BarrierRedMixedWithSync => vec![P::BarRed],
            U::AlignedClusterBarrierDivergent | U::ClusterWaitWithoutArrive | U::ClusterArriveTwice | U::MapaRankOutOfRange => {
                if cl {
                    vec![P::Dsmem]
                } else {
                    vec![]
                }
            }
            U::WaitOnClusterAddress => vec![P::Remote],
            U::ClusterArriveToken => {
                if cl {
                    vec![P::Remote]
                } else {
                    vec![]
                }
            }
            U::ElectMaskDivergent => vec![P::Elect],
            U::StAsyncMbarrierElsewhere => vec![P::StAsync],
            U::BarrierArriveTwice | U::StoreOutOfBounds | U::MisalignedLoad | U::PendingCountOfPlainToken => vec![],
        };
        if !carriers.is_empty() && (self.rng.chance(3, 4) || !self.can_standalone(u)) {
            let p = self.rng.pick(&carriers);
            self.section(p, Some(u));
        } else {
            self.standalone(u);
        }
    }

    fn can_standalone(&self, u: UbClass) -> bool {
        use UbClass as U;
        matches!(
            u,
            U::BarrierArriveTwice
                | U::StoreOutOfBounds
                | U::MisalignedLoad
                | U::PendingCountOfPlainToken
                | U::AlignedClusterBarrierDivergent
                | U::ClusterWaitWithoutArrive
                | U::ClusterArriveTwice
                | U::MapaRankOutOfRange
                | U::ClusterArriveToken
                | U::InitOnValid
                | U::MissingBarrierArrival
        )
    }

    /// A small section holding just the UB (and what it needs to be reached legally).
    fn standalone(&mut self, u: UbClass) {
        use UbClass as U;
        self.nsec += 1;
        self.comment(format!("---- section {}: ub {} ----", self.nsec, u.name()));
        let tid = self.tid.clone();
        let tu = self.rng.below(self.t as u64) as u32;
        let pu = self.eq(&tid, tu);
        let desc = match u {
            U::BarrierArriveTwice => {
                // Warps 0..k: warp 0 arrives twice; the barrier needs k+1 warp arrivals, so it
                // cannot complete between the two.
                let k = self.rng.range(1, self.w);
                let id = self.rng.range(1, 15);
                let cnt = self.ub_bar_count(32 * (k + 1));
                let warp = self.warp.clone();
                let end = self.lab("end");
                let pin = self.warp_in(0, k);
                self.e(format!("@!{pin} bra {end}"));
                let p0 = self.eq(&warp, 0);
                let other = self.lab("other");
                self.e(format!("@!{p0} bra {other}"));
                let f = self.rng.pick(&["bar.arrive", "barrier.arrive", "barrier.cta.arrive.aligned"]);
                self.e(format!("{f} {id}, {cnt}"));
                self.e(format!("{f} {id}, {cnt}"));
                self.e(format!("bra {end}"));
                self.place(&other);
                self.e(format!("bar.sync {id}, {cnt}"));
                self.place(&end);
                format!("warp 0 bar.arrive {id}, {cnt} twice; warps 1..{k} bar.sync")
            }
            U::StoreOutOfBounds => {
                let words = self.out.len() as u32 + 1;
                let off = 4 * words.next_multiple_of(64) + 4 * self.rng.range(0, 15);
                let outp = self.outp.clone();
                self.e(format!("@{pu} st.global.u32 [{outp}+{off}], {tid}"));
                format!("thread {tu} stores at byte {off} of the output buffer, past its end")
            }
            U::MisalignedLoad => {
                let arr = self.shared("words", 16, "b32", Some(4));
                let z = self.imm(7);
                let t0 = self.t0.clone();
                self.e(format!("@{t0} st.shared.v4.u32 [{arr}], {{{z}, {z}, {z}, {z}}}"));
                self.bar0();
                let y = self.r();
                let o = self.rng.pick(&[1, 2, 3, 5, 6]);
                self.e(format!("@{pu} ld.shared.u32 {y}, [{arr}+{o}]"));
                format!("thread {tu} loads a u32 at byte offset {o}")
            }
            U::PendingCountOfPlainToken => {
                let bar = self.shared("bar", 8, "b64", None);
                let ba = self.maddr(&bar, 0);
                let count = 4000 + self.rng.below(1000) as u32;
                self.init_by_one(&ba, count);
                self.bar0();
                let tok = self.rd();
                self.arrive(Some(&pu), &tok, &ba, None, false);
                let r = self.r();
                self.e(format!("@{pu} mbarrier.pending_count.b64 {r}, {tok}"));
                format!("thread {tu} reads pending_count of a plain arrive's token (init {count})")
            }
            U::AlignedClusterBarrierDivergent | U::ClusterWaitWithoutArrive | U::ClusterArriveTwice => {
                self.cluster_round_barrier(Some(u));
                "a barrier.cluster round".into()
            }
            U::MapaRankOutOfRange => {
                let arr = self.shared("arr", 4, "b32", Some(1));
                let a = self.r();
                self.e(format!("mov.u32 {a}, {arr}"));
                let ra = self.r();
                let rank = self.csize + self.rng.below(4) as u32;
                self.e(format!("@{pu} mapa.shared::cluster.u32 {ra}, {a}, {rank}"));
                format!("thread {tu} maps to CTA rank {rank} of a cluster of {}", self.csize)
            }
            U::ClusterArriveToken => {
                let bar = self.shared("bar", 8, "b64", None);
                let ba = self.maddr(&bar, 0);
                self.init_by_one(&ba, self.t);
                self.bar0();
                let rank = self.rank.clone();
                let rb = self.remote_mbar(&bar, &rank, false);
                let tok = self.rd();
                self.e(format!("@{pu} mbarrier.arrive.release.cluster.shared::cluster.b64 {tok}, {}", rb.text));
                format!("thread {tu} arrives through a .shared::cluster address asking for a token")
            }
            U::InitOnValid => {
                let bar = self.shared("bar", 8, "b64", None);
                let ba = self.maddr(&bar, 0);
                self.init_by_one(&ba, self.t);
                self.bar0();
                self.e(format!("@{pu} mbarrier.init{}.b64 {}, 1", ba.space, ba.text));
                format!("thread {tu} initializes a valid mbarrier again")
            }
            U::MissingBarrierArrival => {
                let id = self.rng.range(1, 15);
                let count = self.ub_bar_count(self.t + 32);
                self.e(format!("bar.sync {id}, {count}"));
                format!("every thread bar.sync {id} with a count one warp more than the CTA")
            }
            _ => unreachable!("no standalone form for {u:?}"),
        };
        self.descs.push(format!("[ub] {}: {desc}", u.name()));
    }
}
