//! Lockstep: a unit's rust-hdl simulation and the Verilator model of its generated Verilog, run
//! side by side on the same random stimulus; every output port is compared every cycle, twice:
//! after the inputs settle with the clock low (combinational outputs such as readies) and after
//! the rising edge (registered outputs).
//!
//! The stimulus is random but shaped per unit so the interesting paths fire (few mbarrier words,
//! small counts, so phases complete, waiters wake and time out, findings trigger; few named
//! barriers and warps; launches and exits now and then). It does not follow the ready/valid
//! protocol (a request may change while not accepted): both simulations must agree on any
//! input sequence.
//!
//! `HOPSYNC_VERILATOR_VCD=DIR` writes Verilator's VCD of each run to `DIR/<unit>.vcd` (the first
//! `HOPSYNC_VERILATOR_VCD_CYCLES` cycles, default 10000).

use crate::Model;
use hopsync_hdl::cluster_barrier_unit::{
    ClusterBarrierOp, ClusterBarrierReq, ClusterBarrierUnit, ClusterLaunch, ClusterWarpExit,
};
use hopsync_hdl::cta_top::CtaTop;
use hopsync_hdl::mbarrier_unit::{
    MbarrierFinding, MbarrierOp, MbarrierReq, MbarrierUnit, MbarrierWord,
};
use hopsync_hdl::named_barrier_unit::{
    NamedBarrierLaunch, NamedBarrierOp, NamedBarrierReq, NamedBarrierUnit, WarpExit,
};
use hopsync_hdl::smem_port::{SmemPort, SmemReq, SmemWrite};
use hopsync_hdl::tma_engine::{
    TmaCmd, TmaCmdKind, TmaData128, TmaData16, TmaDescImage, TmaEngine, TmaGmemResp, TmaRedOp, TmaRedType, TmaSmemBeat, TmaSmemWrite,
};
use hopsync_hdl::cta_top::{CTA_TMA_BYTES_PER_CYCLE, CTA_TMA_MAX_OUTSTANDING, CTA_TMA_REQUEST_BYTES};
use hopsync_hdl::verilog::{TEST_A, TEST_S, TEST_SUSPEND_CYCLES};
use rust_hdl::prelude::*;
use std::time::Instant;

/// xorshift64*: the stimulus generator (reproducible from its seed).
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }
    /// 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `p` percent.
    pub fn pct(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    /// `N` random bits.
    pub fn bits<const N: usize>(&mut self) -> Bits<N> {
        b(self.next())
    }
}

/// `x` truncated to `N` bits.
pub fn b<const N: usize>(x: u64) -> Bits<N> {
    if N >= 64 {
        x.into()
    } else {
        (x & ((1u64 << N) - 1)).into()
    }
}

/// A value's bits as 32-bit words, least significant first.
pub fn words<const N: usize, T: Into<Bits<N>>>(v: T, out: &mut Vec<u32>) {
    let x: Bits<N> = v.into();
    out.clear();
    if N <= 64 {
        let v = x.to_u64();
        out.push(v as u32);
        if N > 32 {
            out.push((v >> 32) as u32);
        }
    } else if N <= 128 {
        let v = x.to_u128();
        for k in 0..N.div_ceil(32) {
            out.push((v >> (32 * k)) as u32);
        }
    } else {
        for k in 0..N.div_ceil(32) {
            let mut w = 0u32;
            for j in 0..32 {
                let i = 32 * k + j;
                if i < N && x.get_bit(i) {
                    w |= 1 << j;
                }
            }
            out.push(w);
        }
    }
}

/// A unit under test on the rust-hdl side.
pub trait Dut {
    /// the unit's name (hopsync_hdl::verilog::UNITS), which names its Verilator model
    const UNIT: &'static str;
    /// the input ports' values (a tuple, in [`Dut::INPUTS`] order)
    type Inputs: Copy;
    /// The inputs as they are now.
    fn save_inputs(&self) -> Self::Inputs;
    /// Sets the inputs (without settling).
    fn load_inputs(&mut self, v: &Self::Inputs);
    /// input ports (the clock excluded), in the order of [`Dut::read_inputs`]
    const INPUTS: &'static [&'static str];
    /// output ports, in the order of [`Dut::read_outputs`]
    const OUTPUTS: &'static [&'static str];
    /// A fresh, connected and settled unit.
    fn create() -> Self;
    /// Sets the clock and settles.
    fn clock(&mut self, high: bool);
    /// Writes this cycle's random inputs.
    fn randomize(&mut self, rng: &mut Rng);
    /// The inputs' current values, as 32-bit words.
    fn read_inputs(&self, out: &mut [Vec<u32>]);
    /// The outputs' current values, as 32-bit words.
    fn read_outputs(&self, out: &mut [Vec<u32>]);
    /// Called after the inputs settled with the clock low (before the edge): a stimulus that
    /// models a responder (the TMA engine's global memory) records what is accepted now.
    fn observe(&mut self) {}
    /// Events seen in the registered outputs after an edge (coverage of the stimulus: phases
    /// completed, warps woken, findings raised...), as (name, happened) pairs.
    fn events(&self) -> Vec<(&'static str, bool)>;
    /// Seconds the unit's generated straight-line model (hopsync-hdl-fast) takes on the
    /// recorded inputs, `None` for a unit without one.
    fn bench_generated(_typed: &[Self::Inputs]) -> Option<f64> {
        None
    }
}

/// Settle iterations allowed.
const SETTLE: usize = 200;

macro_rules! port_io {
    ($field:ident; inputs [$($i:ident : $ti:ty),* $(,)?] outputs [$($o:ident : $to:ty),* $(,)?]) => {
        type Inputs = ($($ti,)*);
        fn save_inputs(&self) -> Self::Inputs {
            ($(self.$field.$i.val(),)*)
        }
        #[allow(non_snake_case)]
        fn load_inputs(&mut self, v: &Self::Inputs) {
            let ($($i,)*) = *v;
            $(self.$field.$i.next = $i;)*
        }
        const INPUTS: &'static [&'static str] = &[$(stringify!($i)),*];
        const OUTPUTS: &'static [&'static str] = &[$(stringify!($o)),*];
        fn read_inputs(&self, out: &mut [Vec<u32>]) {
            let mut k = 0;
            $(
                words::<{ <$ti as Synth>::BITS }, $ti>(self.$field.$i.val(), &mut out[k]);
                k += 1;
            )*
            let _ = k;
        }
        fn read_outputs(&self, out: &mut [Vec<u32>]) {
            let mut k = 0;
            $(
                words::<{ <$to as Synth>::BITS }, $to>(self.$field.$o.val(), &mut out[k]);
                k += 1;
            )*
            let _ = k;
        }
        fn clock(&mut self, high: bool) {
            self.$field.clock.next = high.into();
            assert!(simulate(&mut *self.$field, SETTLE), "{}: logic did not settle", Self::UNIT);
        }
    };
}

// ---------------------------------------------------------------- stimulus shapes


/// An mbarrier request: mostly on 4 words with small counts, so phases complete; now and then
/// any word, out-of-range counts and tx-counts, and words beyond the bank.
pub fn mbar_req(rng: &mut Rng, remote: bool) -> MbarrierReq {
    let op = if remote && rng.pct(80) {
        match rng.below(10) {
            0..=4 => MbarrierOp::Arrive,
            5 => MbarrierOp::ArriveDrop,
            6..=7 => MbarrierOp::ExpectTx,
            _ => MbarrierOp::CompleteTx,
        }
    } else {
        // weights in percent: arrives and waits most, init / inval now and then
        match rng.below(100) {
            0..=3 => MbarrierOp::Init,
            4 => MbarrierOp::Inval,
            5..=34 => MbarrierOp::Arrive,
            35..=39 => MbarrierOp::ArriveExpectTx,
            40..=42 => MbarrierOp::ArriveDrop,
            43..=44 => MbarrierOp::ArriveNoComplete,
            45 => MbarrierOp::ArriveDropNoComplete,
            46 => MbarrierOp::ArriveDropExpectTx,
            47..=51 => MbarrierOp::ExpectTx,
            52..=62 => MbarrierOp::CompleteTx,
            63..=66 => MbarrierOp::TestWait,
            67..=69 => MbarrierOp::TestWaitParity,
            70..=82 => MbarrierOp::TryWait,
            83..=94 => MbarrierOp::TryWaitParity,
            95..=97 => MbarrierOp::PendingCount,
            _ => MbarrierOp::CpAsyncArriveInc,
        }
    };
    let word = match rng.below(100) {
        0..=89 => rng.below(4),
        90..=98 => rng.below(1 << TEST_A),
        _ => rng.below(1 << 16),
    };
    let count = match rng.below(100) {
        0..=89 => 1 + (rng.below(4) / 3) * rng.below(3),
        90..=92 => 0,
        93..=96 => (1 << 20) - 1 - rng.below(2),
        _ => rng.next() & 0xFFFF_FFFF,
    };
    // tx amounts of 0 or 8 mostly, so a phase's tx-count returns to zero often
    let tx_count = match rng.below(100) {
        0..=59 => 0,
        60..=94 => 8,
        95..=97 => rng.below(1 << 22),
        _ => rng.next() & 0xFFFF_FFFF,
    };
    MbarrierReq {
        op,
        word: b(word),
        count: b(count),
        tx_count: b(tx_count),
        token: MbarrierWord::from_u64(rng.next()),
        phase_parity: rng.pct(50),
        warp: rng.bits(),
        suspend_time_hint: b(rng.below(80)),
        has_suspend_time_hint: rng.pct(50),
    }
}

const NAMED_OPS: [NamedBarrierOp; 5] = [
    NamedBarrierOp::Sync,
    NamedBarrierOp::Arrive,
    NamedBarrierOp::RedPopc,
    NamedBarrierOp::RedAnd,
    NamedBarrierOp::RedOr,
];

/// A named-barrier instruction: few barriers and warps, thread counts mostly 32..128.
pub fn named_req(rng: &mut Rng) -> NamedBarrierReq {
    let count = match rng.below(100) {
        0..=79 => 32 * (1 + rng.below(4)),
        80..=89 => 32 * rng.below(40),
        _ => rng.next() & 0xFFFF_FFFF,
    };
    NamedBarrierReq {
        op: if rng.pct(60) {
            NAMED_OPS[rng.below(2) as usize]
        } else {
            NAMED_OPS[rng.below(5) as usize]
        },
        barrier: b(if rng.pct(80) { rng.below(3) } else { rng.below(16) }),
        warp: b(if rng.pct(80) { rng.below(4) } else { rng.below(32) }),
        has_count: rng.pct(70),
        count: b(count),
        lanes: b(if rng.pct(80) { 0xFFFF_FFFF } else { rng.next() }),
        pred: rng.bits(),
    }
}

/// A warp exit (2% of cycles).
pub fn warp_exit(rng: &mut Rng) -> WarpExit {
    WarpExit {
        valid: rng.pct(2),
        warp: b(if rng.pct(80) { rng.below(4) } else { rng.below(32) }),
    }
}

/// A CTA launch (1% of cycles) with mostly 1-4 warps.
pub fn named_launch(rng: &mut Rng) -> NamedBarrierLaunch {
    NamedBarrierLaunch {
        valid: rng.pct(1),
        warps: b(if rng.pct(80) { (1 << (1 + rng.below(4))) - 1 } else { rng.next() }),
    }
}

const CLUSTER_OPS: [ClusterBarrierOp; 3] = [
    ClusterBarrierOp::Arrive,
    ClusterBarrierOp::ArriveRelaxed,
    ClusterBarrierOp::Wait,
];

/// A barrier.cluster instruction: mostly CTAs 0..1, warps 0..1 (so every live warp arrives).
pub fn cluster_req(rng: &mut Rng) -> ClusterBarrierReq {
    ClusterBarrierReq {
        op: CLUSTER_OPS[rng.below(3) as usize],
        cta: b(if rng.pct(90) { rng.below(2) } else { rng.below(16) }),
        warp: b(if rng.pct(90) { rng.below(2) } else { rng.below(32) }),
    }
}

/// A warp exit of a cluster CTA (1% of cycles).
pub fn cluster_exit(rng: &mut Rng) -> ClusterWarpExit {
    ClusterWarpExit {
        valid: rng.pct(1),
        cta: b(rng.below(2)),
        warp: b(if rng.pct(85) { rng.below(2) } else { rng.below(32) }),
    }
}

/// A cluster CTA launch (1% of cycles) with mostly 1-2 warps.
pub fn cluster_launch(rng: &mut Rng) -> ClusterLaunch {
    ClusterLaunch {
        valid: rng.pct(1),
        cta: b(if rng.pct(90) { rng.below(2) } else { rng.below(16) }),
        warps: b(if rng.pct(90) { 1 + 2 * rng.below(2) } else { rng.next() }),
    }
}

/// 16 random bytes.
pub fn data16(rng: &mut Rng) -> TmaData16 {
    TmaData16 {
        w0: rng.bits(),
        w1: rng.bits(),
        w2: rng.bits(),
        w3: rng.bits(),
    }
}

/// 128 random bytes (a line: a shared-memory line read, a read response).
pub fn data128(rng: &mut Rng) -> TmaData128 {
    TmaData128 { c0: data16(rng), c1: data16(rng), c2: data16(rng), c3: data16(rng), c4: data16(rng), c5: data16(rng), c6: data16(rng), c7: data16(rng) }
}

/// A shared-memory address: mostly inside the test bank (64 beats), now and then anywhere.
fn smem_addr(rng: &mut Rng) -> Bits<18> {
    b(if rng.pct(90) { rng.below(16 << TEST_S) } else { rng.next() })
}

/// A warp's shared-memory access: random beats, data and byte masks.
pub fn smem_req(rng: &mut Rng) -> SmemReq {
    SmemReq {
        addr: smem_addr(rng),
        write: rng.pct(50),
        wdata: data16(rng),
        wmask: b(if rng.pct(60) { 0xFFFF } else { rng.below(1 << 16) }),
        warp: rng.bits(),
    }
}

/// A TMA beat write.
pub fn smem_write(rng: &mut Rng) -> SmemWrite {
    SmemWrite {
        addr: smem_addr(rng),
        data: data16(rng),
        mask: b(if rng.pct(80) { 0xFFFF } else { rng.below(1 << 16) }),
    }
}

/// A TMA command: bulk loads / stores / prefetches / shared::cta -> shared::cluster copies and
/// reductions and commits with aligned operands mostly, tiled 2-D tensor loads / stores /
/// prefetches on a valid u8 tensor map (box 16 x 4, coordinates partly out of bounds) mostly,
/// im2col loads / stores / prefetches on a valid rank-3 u8 im2col map now and then,
/// and now and then any bits (faults).
pub fn tma_cmd(rng: &mut Rng, cta_rank: u64) -> (TmaCmd, TmaDescImage) {
    let kind = match rng.below(100) {
        0..=26 => TmaCmdKind::BulkLoad,
        27..=44 => TmaCmdKind::BulkStore,
        45..=58 => TmaCmdKind::TensorLoad,
        59..=67 => TmaCmdKind::TensorStore,
        68..=74 => TmaCmdKind::BulkS2S,
        75..=77 => TmaCmdKind::BulkPrefetch,
        78..=80 => TmaCmdKind::TensorPrefetch,
        _ => TmaCmdKind::CommitGroup,
    };
    const RED_OPS: [TmaRedOp; 9] = [
        TmaRedOp::Copy,
        TmaRedOp::Add,
        TmaRedOp::Min,
        TmaRedOp::Max,
        TmaRedOp::Inc,
        TmaRedOp::Dec,
        TmaRedOp::And,
        TmaRedOp::Or,
        TmaRedOp::Xor,
    ];
    const RED_TYPES: [TmaRedType; 10] = [
        TmaRedType::B32,
        TmaRedType::U32,
        TmaRedType::S32,
        TmaRedType::B64,
        TmaRedType::U64,
        TmaRedType::S64,
        TmaRedType::F32,
        TmaRedType::F64,
        TmaRedType::F16,
        TmaRedType::Bf16,
    ];
    let junk = rng.pct(5);
    let align = |rng: &mut Rng, a: u64| if junk && rng.pct(50) { rng.next() } else { rng.next() & !(a - 1) };
    let tensor = matches!(kind, TmaCmdKind::TensorLoad | TmaCmdKind::TensorStore | TmaCmdKind::TensorPrefetch);
    let cmd = TmaCmd {
        kind,
        im2col: rng.pct(2),
        dims: b(if rng.pct(95) { 2 } else { rng.below(8) }),
        smem: b(align(rng, if tensor { 128 } else { 16 }) & 0x3FF),
        gaddr_lo: b(align(rng, 16) & 0xFFF0),
        gaddr_hi: b(if rng.pct(95) { 0 } else { rng.next() }),
        size: b(if junk { rng.next() } else { 16 * (1 + rng.below(6)) }),
        mbar: b(rng.below(4)),
        cta_mask: b(match rng.below(100) {
            0..=69 => 1 << cta_rank,
            70..=94 => 1 + rng.below(3),
            95..=97 => 0,
            _ => rng.next(),
        }),
        c0: b((rng.below(80) as i64 - 8) as u64),
        c1: b((rng.below(20) as i64 - 2) as u64),
        c2: b(if rng.pct(95) { 0 } else { rng.next() }),
        c3: b(0),
        c4: b(0),
        dsmem: b(align(rng, 16) & 0x3FF),
        red_op: if rng.pct(50) { TmaRedOp::Copy } else { RED_OPS[rng.below(9) as usize] },
        red_type: RED_TYPES[rng.below(10) as usize],
        thread: b(rng.below(6)),
        o0: b(rng.below(4)),
        o1: b(0),
        o2: b(0),
    };
    let mut cmd = cmd;
    let mut d = TmaDescImage {
        version: b(1),
        rank_m1: b(1),
        data_type: b(0),
        gaddr_lo: b(0x1000),
        gdim0_m1: b(63),
        gdim1_m1: b(15),
        gstride0_lo: b(64),
        box0_m1: b(15),
        box1_m1: b(3),
        ..Default::default()
    };
    if rng.pct(5) {
        d.swizzle = b(rng.below(4));
    }
    if junk {
        d.rank_m1 = rng.bits();
        d.data_type = rng.bits();
        d.interleave = rng.bits();
        d.rsvd_24 = b(rng.below(2));
        d.box0_m1 = rng.bits();
    }
    if tensor && !junk && rng.pct(30) {
        // im2col (PTX 5.5.4) on a valid rank-3 u8 map (C 32, W 12, N 3): 16-channel pixels,
        // a random pixel box, element stride and offset, pixels before, in and past the box
        cmd.im2col = true;
        cmd.dims = b(3);
        cmd.c0 = b((rng.below(56) as i64 - 20) as u64);
        cmd.c1 = b((rng.below(22) as i64 - 5) as u64);
        cmd.c2 = b((rng.below(6) as i64 - 1) as u64);
        let corner = |rng: &mut Rng| b((rng.below(7) as i64 - 3) as u16 as u64);
        d = TmaDescImage {
            version: b(1),
            im2col: true,
            rank_m1: b(2),
            data_type: b(0),
            gaddr_lo: b(0x1000),
            gdim0_m1: b(31),
            gdim1_m1: b(11),
            gdim2_m1: b(2),
            gstride0_lo: b(32),
            gstride1_lo: b(384),
            estride1_m1: b(rng.below(3)),
            lower0: corner(rng),
            upper0: corner(rng),
            channels_m1: b(15),
            pixels_m1: b(rng.below(24)),
            ..Default::default()
        };
    }
    (cmd, d)
}

// ---------------------------------------------------------------- coverage events

fn mbar_events(
    r: hopsync_hdl::mbarrier_unit::MbarrierResp,
    w: hopsync_hdl::mbarrier_unit::MbarrierWake,
    f: hopsync_hdl::mbarrier_unit::MbarrierFault,
) -> Vec<(&'static str, bool)> {
    vec![
        ("mbarrier response", r.valid),
        ("mbarrier waitComplete", r.valid && r.wait_complete),
        ("mbarrier try_wait suspended", r.valid && r.suspended),
        ("mbarrier wake by completion", w.valid && w.completed),
        ("mbarrier wake by timeout", w.valid && !w.completed),
    ]
    .into_iter()
    .chain(MBAR_FINDINGS.iter().map(|k| (k.name().unwrap(), f.valid && f.kind == *k)))
    .collect()
}

const MBAR_FINDINGS: [MbarrierFinding; 8] = [
    MbarrierFinding::MbarrierUninitialized,
    MbarrierFinding::MbarrierInitOnValid,
    MbarrierFinding::MbarrierCountOutOfRange,
    MbarrierFinding::MbarrierPendingUnderflow,
    MbarrierFinding::MbarrierTxCountOutOfRange,
    MbarrierFinding::MbarrierNoCompleteCompleted,
    MbarrierFinding::MbarrierClusterAddressUnsupported,
    MbarrierFinding::MbarrierNotShared,
];

fn named_events(
    d: hopsync_hdl::named_barrier_unit::NamedBarrierRelease,
    f: hopsync_hdl::named_barrier_unit::NamedBarrierFault,
) -> Vec<(&'static str, bool)> {
    vec![
        ("named barrier completed", d.valid),
        ("named barrier released warps", d.valid && d.warps.any()),
        ("named barrier finding", f.valid),
    ]
}

fn cluster_events(
    r: hopsync_hdl::cluster_barrier_unit::ClusterBarrierResp,
    d: hopsync_hdl::cluster_barrier_unit::ClusterBarrierDone,
    f: hopsync_hdl::cluster_barrier_unit::ClusterBarrierFault,
) -> Vec<(&'static str, bool)> {
    vec![
        ("cluster wait blocked", r.valid && r.blocked),
        ("cluster wait passed", r.valid && !r.blocked),
        ("cluster phase completed", d.valid),
        ("cluster barrier finding", f.valid),
    ]
}

fn tma_events(
    smem_beat: bool,
    gmem_req: bool,
    mbar: bool,
    f: hopsync_hdl::tma_engine::TmaFault,
) -> Vec<(&'static str, bool)> {
    vec![
        ("tma shared-memory beat", smem_beat),
        ("tma global request", gmem_req),
        ("tma complete_tx", mbar),
        ("tma fault", f.valid),
    ]
}

// ---------------------------------------------------------------- the units

/// MbarrierUnit at the test sizes.
pub struct MbarrierDut {
    u: Box<MbarrierUnit<TEST_A>>,
}

impl Dut for MbarrierDut {
    const UNIT: &'static str = "mbarrier_unit";
    port_io!(u;
        inputs [local_req: MbarrierReq, local_valid: bool, tma_req: MbarrierReq,
                tma_valid: bool, cluster_req: MbarrierReq, cluster_valid: bool]
        outputs [local_ready: bool, tma_ready: bool, cluster_ready: bool,
                 resp: hopsync_hdl::mbarrier_unit::MbarrierResp,
                 wake: hopsync_hdl::mbarrier_unit::MbarrierWake,
                 fault: hopsync_hdl::mbarrier_unit::MbarrierFault]);
    fn create() -> Self {
        let mut u = Box::new(MbarrierUnit::<TEST_A>::new(TEST_SUSPEND_CYCLES));
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        MbarrierDut { u }
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        mbar_events(self.u.resp.val(), self.u.wake.val(), self.u.fault.val())
    }
    fn bench_generated(typed: &[Self::Inputs]) -> Option<f64> {
        let d = Self::create();
        let mut g = hopsync_hdl_fast::models::MbarrierUnitTest::from_block(&*d.u).expect("the generated model matches the unit");
        let t0 = Instant::now();
        for (lr, lv, tr, tv, cr, cv) in typed {
            g.set_local_req(lr);
            g.set_local_valid(lv);
            g.set_tma_req(tr);
            g.set_tma_valid(tv);
            g.set_cluster_req(cr);
            g.set_cluster_valid(cv);
            g.eval();
            g.edge();
            g.eval();
            std::hint::black_box(&g.v);
        }
        Some(t0.elapsed().as_secs_f64())
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let u = &mut self.u;
        u.local_valid.next = rng.pct(80);
        u.local_req.next = mbar_req(rng, false);
        u.tma_valid.next = rng.pct(25);
        u.tma_req.next = mbar_req(rng, true);
        u.cluster_valid.next = rng.pct(25);
        u.cluster_req.next = mbar_req(rng, true);
    }
}

/// NamedBarrierUnit.
pub struct NamedBarrierDut {
    u: Box<NamedBarrierUnit>,
}

impl Dut for NamedBarrierDut {
    const UNIT: &'static str = "named_barrier_unit";
    port_io!(u;
        inputs [req: NamedBarrierReq, req_valid: bool, exit: WarpExit,
                launch: NamedBarrierLaunch]
        outputs [req_ready: bool,
                 done: hopsync_hdl::named_barrier_unit::NamedBarrierRelease,
                 fault: hopsync_hdl::named_barrier_unit::NamedBarrierFault]);
    fn create() -> Self {
        let mut u = Box::<NamedBarrierUnit>::default();
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        NamedBarrierDut { u }
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        named_events(self.u.done.val(), self.u.fault.val())
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let u = &mut self.u;
        u.req_valid.next = rng.pct(70);
        u.req.next = named_req(rng);
        u.exit.next = warp_exit(rng);
        u.launch.next = named_launch(rng);
    }
}

/// ClusterBarrierUnit.
pub struct ClusterBarrierDut {
    u: Box<ClusterBarrierUnit>,
}

impl Dut for ClusterBarrierDut {
    const UNIT: &'static str = "cluster_barrier_unit";
    port_io!(u;
        inputs [req: ClusterBarrierReq, req_valid: bool, exit: ClusterWarpExit,
                launch: ClusterLaunch]
        outputs [req_ready: bool,
                 resp: hopsync_hdl::cluster_barrier_unit::ClusterBarrierResp,
                 done: hopsync_hdl::cluster_barrier_unit::ClusterBarrierDone,
                 fault: hopsync_hdl::cluster_barrier_unit::ClusterBarrierFault]);
    fn create() -> Self {
        let mut u = Box::<ClusterBarrierUnit>::default();
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        ClusterBarrierDut { u }
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        cluster_events(self.u.resp.val(), self.u.done.val(), self.u.fault.val())
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let u = &mut self.u;
        u.req_valid.next = rng.pct(70);
        u.req.next = cluster_req(rng);
        u.exit.next = cluster_exit(rng);
        u.launch.next = cluster_launch(rng);
    }
}

/// SmemPort at the test size.
pub struct SmemPortDut {
    u: Box<SmemPort<TEST_S>>,
}

impl Dut for SmemPortDut {
    const UNIT: &'static str = "smem_port";
    port_io!(u;
        inputs [tma_wr: SmemWrite, tma_wr_valid: bool, tma_rd_addr: Bits<18>,
                tma_rd_valid: bool, remote_wr: SmemWrite, remote_wr_valid: bool,
                local_req: SmemReq, local_valid: bool]
        outputs [tma_wr_ready: bool, tma_rd_ready: bool, tma_rd_data: TmaData16,
                 remote_wr_ready: bool, local_ready: bool,
                 local_resp: hopsync_hdl::smem_port::SmemResp]);
    fn create() -> Self {
        let mut u = Box::<SmemPort<TEST_S>>::default();
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        SmemPortDut { u }
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        vec![("smem read response", self.u.local_resp.val().valid)]
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let u = &mut self.u;
        u.tma_wr_valid.next = rng.pct(20);
        u.tma_wr.next = smem_write(rng);
        u.tma_rd_valid.next = rng.pct(20);
        u.tma_rd_addr.next = smem_addr(rng);
        u.remote_wr_valid.next = rng.pct(20);
        u.remote_wr.next = smem_write(rng);
        u.local_valid.next = rng.pct(70);
        u.local_req.next = smem_req(rng);
    }
}

/// The global memory of a TMA engine in the stimulus: accepted read requests are answered and
/// writes acknowledged later, in random order, with random data.
#[derive(Default)]
pub struct GmemResponder {
    /// (tag, write) of accepted requests not answered yet
    pending: Vec<(u64, bool)>,
    /// responses so far
    pub answered: u64,
}

impl GmemResponder {
    /// Records a request accepted this cycle.
    pub fn accept(&mut self, valid: bool, ready: bool, tag: u64, write: bool) {
        if valid && ready {
            self.pending.push((tag, write));
        }
    }
    /// This cycle's response (valid, response).
    pub fn respond(&mut self, rng: &mut Rng) -> (bool, TmaGmemResp) {
        let mut r = TmaGmemResp {
            tag: rng.bits(),
            write: rng.pct(50),
            data: TmaData128 {
                c0: data16(rng),
                c1: data16(rng),
                c2: data16(rng),
                c3: data16(rng),
                c4: data16(rng),
                c5: data16(rng),
                c6: data16(rng),
                c7: data16(rng),
            },
        };
        if !self.pending.is_empty() && rng.pct(40) {
            let (tag, write) = self.pending.swap_remove(rng.below(self.pending.len() as u64) as usize);
            r.tag = b(tag);
            r.write = write;
            self.answered += 1;
            return (true, r);
        }
        (false, r)
    }
}

/// TmaEngine (the CTA top's parameters: 256 tags, 112 B/cycle, 128-byte requests), with a
/// global-memory responder.
pub struct TmaEngineDut {
    u: Box<TmaEngine>,
    gmem: GmemResponder,
}

impl Dut for TmaEngineDut {
    const UNIT: &'static str = "tma_engine";
    port_io!(u;
        inputs [cta_rank: Bits<4>, cmd: TmaCmd, cmd_desc: TmaDescImage, cmd_valid: bool,
                gmem_req_ready: bool, gmem_resp: TmaGmemResp, gmem_resp_valid: bool,
                smem_wr_ready: bool, smem_rd_ready: bool, smem_rd_data: TmaData128,
                mbar_ready: bool, wait_n: Bits<8>, wait_read: bool, wait_thread: Bits<10>]
        outputs [cmd_ready: bool, gmem_req: hopsync_hdl::tma_engine::TmaGmemReq,
                 gmem_req_valid: bool, gmem_resp_ready: bool, smem_wr: TmaSmemWrite,
                 smem_wr_valid: bool, smem_rd_addr: Bits<18>, smem_rd_cen: Bits<8>, smem_rd_valid: bool,
                 mbar_req: MbarrierReq, mbar_cta: Bits<4>, mbar_remote: bool,
                 mbar_valid: bool, wait_done: bool, groups_pending: Bits<4>,
                 store_read_done: bool, store_writes_issued: bool,
                 fault: hopsync_hdl::tma_engine::TmaFault, idle: bool]);
    fn create() -> Self {
        let mut u = Box::new(TmaEngine::new(CTA_TMA_MAX_OUTSTANDING, CTA_TMA_BYTES_PER_CYCLE, CTA_TMA_REQUEST_BYTES));
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        TmaEngineDut { u, gmem: GmemResponder::default() }
    }
    fn observe(&mut self) {
        let u = &self.u;
        let r = u.gmem_req.val();
        self.gmem.accept(u.gmem_req_valid.val(), u.gmem_req_ready.val(), r.tag.to_u64(), r.write);
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        let mut e = tma_events(
            self.u.smem_wr_valid.val() && self.u.smem_wr_ready.val(),
            self.u.gmem_req_valid.val(),
            self.u.mbar_valid.val(),
            self.u.fault.val(),
        );
        // shared::cta -> shared::cluster: source reads and reducing beats
        e.push(("tma shared-memory read", self.u.smem_rd_valid.val() && self.u.smem_rd_ready.val()));
        e.push(("tma reducing beat", self.u.smem_wr_valid.val() && self.u.smem_wr.val().red_op != TmaRedOp::Copy));
        e
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let rank = self.u.cta_rank.val().to_u64();
        let u = &mut self.u;
        if rng.pct(1) {
            u.cta_rank.next = b(rng.below(2));
        }
        let (c, d) = tma_cmd(rng, rank);
        u.cmd_valid.next = rng.pct(30);
        u.cmd.next = c;
        u.cmd_desc.next = d;
        u.gmem_req_ready.next = rng.pct(80);
        let (v, r) = self.gmem.respond(rng);
        u.gmem_resp_valid.next = v;
        u.gmem_resp.next = r;
        u.smem_wr_ready.next = rng.pct(85);
        u.smem_rd_ready.next = rng.pct(85);
        u.smem_rd_data.next = data128(rng);
        u.mbar_ready.next = rng.pct(80);
        u.wait_n.next = b(rng.below(4));
        u.wait_read.next = rng.pct(50);
        u.wait_thread.next = b(rng.below(6));
    }
}

/// CtaTop at the test sizes, with a global-memory responder for its TMA engine.
pub struct CtaTopDut {
    u: Box<CtaTop<TEST_A, TEST_S>>,
    gmem: GmemResponder,
}

impl Dut for CtaTopDut {
    const UNIT: &'static str = "cta_top";
    port_io!(u;
        inputs [cta_rank: Bits<4>, exit: WarpExit, launch: NamedBarrierLaunch,
                mbar_local_req: MbarrierReq, mbar_local_valid: bool,
                mbar_cluster_req: MbarrierReq, mbar_cluster_valid: bool,
                bar_req: NamedBarrierReq, bar_req_valid: bool,
                cbar_req: ClusterBarrierReq, cbar_req_valid: bool,
                cbar_exit: ClusterWarpExit, cbar_launch: ClusterLaunch,
                tma_cmd: TmaCmd, tma_cmd_desc: TmaDescImage, tma_cmd_valid: bool,
                tma_gmem_req_ready: bool, tma_gmem_resp: TmaGmemResp, tma_gmem_resp_valid: bool,
                tma_wait_n: Bits<8>, tma_wait_read: bool, tma_wait_thread: Bits<10>,
                tma_remote_mbar_ready: bool,
                dsmem_out_ready: bool, dsmem_in: SmemWrite, dsmem_in_red_op: TmaRedOp, dsmem_in_valid: bool,
                smem_req: SmemReq, smem_valid: bool]
        outputs [mbar_local_ready: bool, mbar_cluster_ready: bool,
                 mbar_resp: hopsync_hdl::mbarrier_unit::MbarrierResp,
                 mbar_wake: hopsync_hdl::mbarrier_unit::MbarrierWake,
                 mbar_fault: hopsync_hdl::mbarrier_unit::MbarrierFault,
                 bar_req_ready: bool,
                 bar_done: hopsync_hdl::named_barrier_unit::NamedBarrierRelease,
                 bar_fault: hopsync_hdl::named_barrier_unit::NamedBarrierFault,
                 cbar_req_ready: bool,
                 cbar_resp: hopsync_hdl::cluster_barrier_unit::ClusterBarrierResp,
                 cbar_done: hopsync_hdl::cluster_barrier_unit::ClusterBarrierDone,
                 cbar_fault: hopsync_hdl::cluster_barrier_unit::ClusterBarrierFault,
                 tma_cmd_ready: bool, tma_gmem_req: hopsync_hdl::tma_engine::TmaGmemReq,
                 tma_gmem_req_valid: bool, tma_gmem_resp_ready: bool, tma_wait_done: bool,
                 tma_groups_pending: Bits<4>, tma_store_read_done: bool,
                 tma_store_writes_issued: bool, tma_fault: hopsync_hdl::tma_engine::TmaFault,
                 tma_idle: bool, tma_remote_mbar_req: MbarrierReq, tma_remote_mbar_cta: Bits<4>,
                 tma_remote_mbar_valid: bool, dsmem_out: TmaSmemBeat, dsmem_out_valid: bool,
                 dsmem_in_ready: bool, smem_red_dropped: bool,
                 smem_ready: bool, smem_resp: hopsync_hdl::smem_port::SmemResp]);
    fn create() -> Self {
        let mut u = Box::new(CtaTop::<TEST_A, TEST_S>::new(TEST_SUSPEND_CYCLES));
        u.connect_all();
        assert!(simulate(&mut *u, SETTLE));
        CtaTopDut { u, gmem: GmemResponder::default() }
    }
    fn observe(&mut self) {
        let u = &self.u;
        let r = u.tma_gmem_req.val();
        self.gmem.accept(u.tma_gmem_req_valid.val(), u.tma_gmem_req_ready.val(), r.tag.to_u64(), r.write);
    }
    fn events(&self) -> Vec<(&'static str, bool)> {
        let u = &self.u;
        let mut e = mbar_events(u.mbar_resp.val(), u.mbar_wake.val(), u.mbar_fault.val());
        e.extend(named_events(u.bar_done.val(), u.bar_fault.val()));
        e.extend(cluster_events(u.cbar_resp.val(), u.cbar_done.val(), u.cbar_fault.val()));
        e.extend(tma_events(
            u.dsmem_out_valid.val(),
            u.tma_gmem_req_valid.val(),
            u.tma_remote_mbar_valid.val(),
            u.tma_fault.val(),
        ));
        e.push(("smem read response", u.smem_resp.val().valid));
        e.push(("reducing beat dropped", u.smem_red_dropped.val()));
        e
    }
    fn randomize(&mut self, rng: &mut Rng) {
        let rank = self.u.cta_rank.val().to_u64();
        let u = &mut self.u;
        if rng.pct(1) {
            u.cta_rank.next = b(rng.below(2));
        }
        u.exit.next = warp_exit(rng);
        u.launch.next = named_launch(rng);
        u.mbar_local_valid.next = rng.pct(80);
        u.mbar_local_req.next = mbar_req(rng, false);
        u.mbar_cluster_valid.next = rng.pct(25);
        u.mbar_cluster_req.next = mbar_req(rng, true);
        u.bar_req_valid.next = rng.pct(70);
        u.bar_req.next = named_req(rng);
        u.cbar_req_valid.next = rng.pct(70);
        u.cbar_req.next = cluster_req(rng);
        u.cbar_exit.next = cluster_exit(rng);
        u.cbar_launch.next = cluster_launch(rng);
        let (c, d) = tma_cmd(rng, rank);
        u.tma_cmd_valid.next = rng.pct(30);
        u.tma_cmd.next = c;
        u.tma_cmd_desc.next = d;
        u.tma_gmem_req_ready.next = rng.pct(80);
        let (v, r) = self.gmem.respond(rng);
        u.tma_gmem_resp_valid.next = v;
        u.tma_gmem_resp.next = r;
        u.tma_wait_n.next = b(rng.below(4));
        u.tma_wait_read.next = rng.pct(50);
        u.tma_wait_thread.next = b(rng.below(6));
        u.tma_remote_mbar_ready.next = rng.pct(80);
        u.dsmem_out_ready.next = rng.pct(80);
        u.dsmem_in_valid.next = rng.pct(10);
        u.dsmem_in.next = smem_write(rng);
        u.dsmem_in_red_op.next = if rng.pct(90) { TmaRedOp::Copy } else { TmaRedOp::Add };
        u.smem_valid.next = rng.pct(70);
        u.smem_req.next = smem_req(rng);
    }
}

// ---------------------------------------------------------------- the runner

/// What a lockstep run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// the unit
    pub unit: &'static str,
    /// cycles run
    pub cycles: u64,
    /// output values compared (ports x 2 samples x cycles)
    pub compared: u64,
    /// output samples in which some output bit was set (the outputs are not stuck at zero)
    pub active_samples: u64,
    /// how often each event of [`Dut::events`] happened
    pub events: Vec<(&'static str, u64)>,
    /// wall time, s
    pub secs: f64,
}

fn hex(w: &[u32]) -> String {
    let mut s = String::from("0x");
    for x in w.iter().rev() {
        s += &format!("{x:08x}_");
    }
    s.pop();
    s
}

/// Runs `cycles` random cycles of `D` in lockstep with its Verilator model (stimulus from
/// `seed`); `Err` names the first cycle, sample and port where they differ.
pub fn run<D: Dut>(cycles: u64, seed: u64) -> Result<Report, String> {
    run_flipping::<D>(cycles, seed, None)
}

/// [`run`], flipping bit 0 of input `flip.1` (an index into [`Dut::INPUTS`]) of the Verilator
/// model only, in cycle `flip.0`: the tests' proof that a difference is caught.
pub fn run_flipping<D: Dut>(
    cycles: u64,
    seed: u64,
    flip: Option<(u64, usize)>,
) -> Result<Report, String> {
    crate::available()?;
    let mut dut = D::create();
    let mut m = Model::new(D::UNIT);
    let desc = m.desc();
    let in_idx: Vec<usize> = D::INPUTS.iter().map(|n| m.port(n)).collect();
    let out_idx: Vec<usize> = D::OUTPUTS.iter().map(|n| m.port(n)).collect();
    // every port of the model is driven or compared
    for (i, p) in desc.ports.iter().enumerate().skip(1) {
        let covered = if p.input { in_idx.contains(&i) } else { out_idx.contains(&i) };
        assert!(covered, "{}: port `{}` is not in the harness", D::UNIT, p.name);
    }
    let mut ib = vec![Vec::new(); in_idx.len()];
    let mut ob = vec![Vec::new(); out_idx.len()];
    let mut vb = Vec::new();
    dut.read_inputs(&mut ib);
    for (k, &i) in in_idx.iter().enumerate() {
        assert_eq!(
            ib[k].len(),
            desc.ports[i].width.div_ceil(32),
            "{}: width of `{}`",
            D::UNIT,
            desc.ports[i].name
        );
    }
    let vcd_limit: u64 = std::env::var("HOPSYNC_VERILATOR_VCD_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let mut tracing = false;
    if let Some(dir) = std::env::var_os("HOPSYNC_VERILATOR_VCD") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        m.trace(&dir.join(format!("{}.vcd", D::UNIT)))?;
        tracing = true;
    }
    let mut rng = Rng::new(seed);
    let mut compared = 0u64;
    let mut active = 0u64;
    let mut events: Vec<(&'static str, u64)> = vec![];
    let t0 = Instant::now();
    for c in 0..cycles {
        if tracing && c == vcd_limit {
            m.trace_close();
            tracing = false;
        }
        dut.randomize(&mut rng);
        dut.clock(false);
        dut.observe();
        dut.read_inputs(&mut ib);
        if let Some((fc, fk)) = flip {
            if fc == c {
                ib[fk][0] ^= 1;
            }
        }
        for (k, &i) in in_idx.iter().enumerate() {
            m.set(i, &ib[k]);
        }
        m.set_clock(false);
        m.eval();
        for (sample, phase) in ["with the clock low", "after the rising edge"].iter().enumerate() {
            if sample == 1 {
                dut.clock(true);
                m.set_clock(true);
                m.eval();
            }
            dut.read_outputs(&mut ob);
            let mut any = false;
            for (k, &i) in out_idx.iter().enumerate() {
                m.get(i, &mut vb);
                if vb != ob[k] {
                    let inputs: Vec<String> = D::INPUTS
                        .iter()
                        .zip(&ib)
                        .map(|(n, w)| format!("{n}={}", hex(w)))
                        .collect();
                    return Err(format!(
                        "{}: cycle {c} (seed {seed:#x}), {phase}: output `{}` differs: \
                         rust-hdl {} vs Verilator {}\ninputs: {}\n(set HOPSYNC_VERILATOR_VCD=DIR \
                         for Verilator's VCD)",
                        D::UNIT,
                        D::OUTPUTS[k],
                        hex(&ob[k]),
                        hex(&vb),
                        inputs.join(" ")
                    ));
                }
                any |= vb.iter().any(|&x| x != 0);
                compared += 1;
            }
            active += any as u64;
        }
        let ev = dut.events();
        if events.is_empty() {
            events = ev.iter().map(|(n, _)| (*n, 0)).collect();
        }
        for (k, (_, happened)) in ev.iter().enumerate() {
            events[k].1 += *happened as u64;
        }
    }
    if tracing {
        m.trace_close();
    }
    Ok(Report {
        unit: D::UNIT,
        cycles,
        compared,
        active_samples: active,
        events,
        secs: t0.elapsed().as_secs_f64(),
    })
}

/// Side-by-side speed of one unit: the same recorded stimulus replayed on a fresh rust-hdl
/// simulation and on a fresh Verilator model (inputs set, clock low and settle / eval, clock high
/// and settle / eval), outputs not read. Returns (cycles, rust-hdl s, Verilator s).
pub fn bench<D: Dut>(cycles: u64, seed: u64) -> (u64, f64, f64, Option<f64>) {
    // record: the harness's stimulus (with its responders) on a rust-hdl run
    let mut dut = D::create();
    let mut rng = Rng::new(seed);
    let mut typed = Vec::with_capacity(cycles as usize);
    let mut ib = vec![Vec::new(); D::INPUTS.len()];
    let mut flat: Vec<Vec<Vec<u32>>> = Vec::with_capacity(cycles as usize);
    for _ in 0..cycles {
        dut.randomize(&mut rng);
        dut.clock(false);
        dut.observe();
        typed.push(dut.save_inputs());
        dut.read_inputs(&mut ib);
        flat.push(ib.clone());
        dut.clock(true);
    }
    // rust-hdl
    let mut dut = D::create();
    let t0 = Instant::now();
    for v in &typed {
        dut.load_inputs(v);
        dut.clock(false);
        dut.clock(true);
    }
    let t_rust = t0.elapsed().as_secs_f64();
    // Verilator
    let mut m = Model::new(D::UNIT);
    let idx: Vec<usize> = D::INPUTS.iter().map(|n| m.port(n)).collect();
    let t0 = Instant::now();
    for v in &flat {
        for (k, &i) in idx.iter().enumerate() {
            m.set(i, &v[k]);
        }
        m.cycle();
    }
    let t_vl = t0.elapsed().as_secs_f64();
    (cycles, t_rust, t_vl, D::bench_generated(&typed))
}

/// [`bench`] for a unit given by name.
pub fn bench_unit(unit: &str, cycles: u64, seed: u64) -> Result<(u64, f64, f64, Option<f64>), String> {
    crate::available()?;
    Ok(match unit {
        "mbarrier_unit" => bench::<MbarrierDut>(cycles, seed),
        "named_barrier_unit" => bench::<NamedBarrierDut>(cycles, seed),
        "cluster_barrier_unit" => bench::<ClusterBarrierDut>(cycles, seed),
        "tma_engine" => bench::<TmaEngineDut>(cycles, seed),
        "smem_port" => bench::<SmemPortDut>(cycles, seed),
        "cta_top" => bench::<CtaTopDut>(cycles, seed),
        _ => return Err(format!("no harness for `{unit}`")),
    })
}

/// [`run`] for a unit given by name.
pub fn run_unit(unit: &str, cycles: u64, seed: u64) -> Result<Report, String> {
    crate::available()?;
    match unit {
        "mbarrier_unit" => run::<MbarrierDut>(cycles, seed),
        "named_barrier_unit" => run::<NamedBarrierDut>(cycles, seed),
        "cluster_barrier_unit" => run::<ClusterBarrierDut>(cycles, seed),
        "tma_engine" => run::<TmaEngineDut>(cycles, seed),
        "smem_port" => run::<SmemPortDut>(cycles, seed),
        "cta_top" => run::<CtaTopDut>(cycles, seed),
        _ => Err(format!("no lockstep harness for `{unit}`")),
    }
}
