//! The Verilator backend of the SM engine (`hopsync run --engine verilator`, `hopsync cosim
//! --engine verilator`): the engine (hopsync-sim) clocks the Verilator models of the units'
//! generated Verilog instead of their rust-hdl simulations, through the seam in
//! `sim/src/units.rs` ([`UnitBackend`]).
//!
//! Per cycle, as the rust-hdl units do: inputs written through the port pointers, clock low and
//! `eval` (readies are read here), clock high and `eval` (the outputs, and the mbarrier bank's
//! write port: stage 2's write, stored at the next edge). Typed values (`MbarrierReq`, `MbarrierResp`, ...) cross as their packed
//! bits (rust-hdl's `LogicStruct` layout: fields LSB-first in declaration order; a `LogicState`
//! enum is its variant index); the decoders below are checked against the encoders by tests.
//!
//! Models: the named- and cluster-barrier units are the lockstep models (they have no size
//! parameter); the MbarrierUnit is built at each bank size the engine uses (2^9, 2^12, 2^15
//! words) with sm90.toml's try_wait limit ([`ENGINE_SUSPEND_CYCLES`]), its bank write port made
//! readable (`exec$bank_we`, `exec$bank_wa`, `exec$bank_wd`, `exec$bank_wv`).
//! The TmaEngine is built at sm90.toml's parameters ([`ENGINE_TMA_READ_TAGS`] read tags,
//! [`ENGINE_TMA_BYTES_PER_CYCLE`] bytes per cycle, [`ENGINE_TMA_REQUEST_BYTES`]-byte requests:
//! the lockstep model when those are its own).
//!
//! Ports: each unit's ports are declared once ([`input_ports`]: name, type, value from the
//! engine's inputs; [`output_ports`]: name, type), their widths checked against the Verilog when
//! a model is made; structs cross whole ([`Unpack`] decodes outputs from one field list per
//! struct, checked against rust-hdl's descriptor), so a new port is one line and a new struct
//! field one name in its [`unpack_struct`] list (or none, for an input).
//!
//! VCD: with a folder, every unit instance writes Verilator's own VCD there (`mbarrier_<n>.vcd`,
//! `named_<n>.vcd`, `cluster_<n>.vcd`, `tma_<n>.vcd`, n in creation order: CTA order, cluster
//! order). Time
//! advances 10 units per clock edge the engine gives that unit; cycles in which the engine leaves
//! the unit alone (idle) are not in the file.

use crate::lockstep::words;
use crate::{Model, ENGINE_SUSPEND_CYCLES, ENGINE_TMA_BYTES_PER_CYCLE, ENGINE_TMA_MODEL, ENGINE_TMA_READ_TAGS, ENGINE_TMA_REQUEST_BYTES};
use hopsync_hdl::cluster_barrier_unit::{
    ClusterBarrierDone, ClusterBarrierFault, ClusterBarrierFinding, ClusterBarrierReq,
    ClusterBarrierResp, ClusterLaunch, ClusterWarpExit,
};
use hopsync_hdl::mbarrier_unit::{
    MbarrierFault, MbarrierFinding, MbarrierReq, MbarrierResp, MbarrierSource, MbarrierWake,
    MbarrierWord,
};
use hopsync_hdl::named_barrier_unit::{
    NamedBarrierFault, NamedBarrierFinding, NamedBarrierLaunch, NamedBarrierRelease,
    NamedBarrierReq, WarpExit,
};
use hopsync_hdl::mbarrier_unit::MbarrierOp;
use hopsync_hdl::tma_engine::{
    TmaCmd, TmaData128, TmaData16, TmaDescImage, TmaFault, TmaFaultKind, TmaGmemReq, TmaGmemResp, TmaRedOp, TmaRedType, TmaSmemWrite,
};
use hopsync_sim::units::{
    tma_engine_params, Backend, ClusterInputs, ClusterOutputs, ClusterSim, MbarInputs,
    MbarOutputs, MbarSim, NamedInputs, NamedOutputs, NamedSim, TmaInputs, TmaOutputs, TmaSim,
    UnitBackend,
};
use hopsync_sim::SmConfig;
use rust_hdl::prelude::{Bits, Synth};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The engine's unit factory for Verilator models.
pub struct VerilatorBackend {
    vcd: Option<PathBuf>,
    made: [AtomicU32; 4],
}

impl VerilatorBackend {
    /// A backend for `cfg` (its try_wait limit must be the models' one), writing VCDs into `vcd`
    /// when given.
    pub fn new(cfg: &SmConfig, vcd: Option<PathBuf>) -> Result<VerilatorBackend, String> {
        crate::available()?;
        let suspend = cfg.ns_to_cycles(cfg.sync.default_suspend_ns);
        if suspend != ENGINE_SUSPEND_CYCLES as u64 {
            return Err(format!(
                "unsupported: the Verilator MbarrierUnit models are built with a try_wait limit of \
                 {ENGINE_SUSPEND_CYCLES} cycles (sim/configs/sm90.toml); this configuration asks \
                 for {suspend} (change ENGINE_SUSPEND_CYCLES in verilator/build.rs)"
            ));
        }
        let (tags, per, req) = tma_engine_params(cfg);
        if (tags, per, req) != (ENGINE_TMA_READ_TAGS, ENGINE_TMA_BYTES_PER_CYCLE, ENGINE_TMA_REQUEST_BYTES) {
            return Err(format!(
                "unsupported: the Verilator TmaEngine model is built with {ENGINE_TMA_READ_TAGS} \
                 read tags, {ENGINE_TMA_BYTES_PER_CYCLE} bytes per cycle and \
                 {ENGINE_TMA_REQUEST_BYTES}-byte requests (sim/configs/sm90.toml); this \
                 configuration asks for {tags}, {per} and {req} (change ENGINE_TMA_READ_TAGS / \
                 ENGINE_TMA_BYTES_PER_CYCLE / ENGINE_TMA_REQUEST_BYTES in verilator/build.rs)"
            ));
        }
        if let Some(d) = &vcd {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        Ok(VerilatorBackend { vcd, made: Default::default() })
    }

    /// `cfg` with its units on Verilator.
    pub fn configure(mut cfg: SmConfig, vcd: Option<PathBuf>) -> Result<SmConfig, String> {
        cfg.backend = Backend::other(Arc::new(VerilatorBackend::new(&cfg, vcd)?));
        Ok(cfg)
    }

    fn model(&self, model: &str, kind: usize, what: &str) -> Model {
        let mut m = Model::new(model);
        if let Some(d) = &self.vcd {
            let n = self.made[kind].fetch_add(1, Ordering::Relaxed);
            let p = d.join(format!("{what}_{n}.vcd"));
            // a VCD that cannot be opened is reported, not fatal to the run
            if let Err(e) = m.trace(&p) {
                eprintln!("warning: {e}");
            }
        }
        m
    }
}

impl UnitBackend for VerilatorBackend {
    fn name(&self) -> &'static str {
        "verilator"
    }
    fn mbarrier(&self, smem_bytes: u32, default_suspend_cycles: u32) -> Box<dyn MbarSim> {
        // VerilatorBackend::new checked the limit against the configuration the engine uses
        debug_assert_eq!(default_suspend_cycles, ENGINE_SUSPEND_CYCLES);
        // the bank sizes of MbarUnit::new
        let words = (smem_bytes as u64).div_ceil(8).max(1);
        let a = if words <= 1 << 9 {
            9
        } else if words <= 1 << 12 {
            12
        } else {
            15
        };
        let m = self.model(&format!("mbarrier_unit_a{a}"), 0, "mbarrier");
        Box::new(VMbar::new(m, a))
    }
    fn named(&self) -> Box<dyn NamedSim> {
        Box::new(VUnit::new(self.model("named_barrier_unit", 1, "named"), |m| (NamedIn::new(m), NamedOut::new(m))))
    }
    fn cluster(&self) -> Box<dyn ClusterSim> {
        Box::new(VUnit::new(self.model("cluster_barrier_unit", 2, "cluster"), |m| (ClusterIn::new(m), ClusterOut::new(m))))
    }
    fn tma(&self, read_tags: u32, bytes_per_cycle: u32, request_bytes: u32) -> Box<dyn TmaSim> {
        // VerilatorBackend::new checked the parameters against the configuration
        debug_assert_eq!((read_tags, bytes_per_cycle, request_bytes), (ENGINE_TMA_READ_TAGS, ENGINE_TMA_BYTES_PER_CYCLE, ENGINE_TMA_REQUEST_BYTES));
        Box::new(vtma(self.model(ENGINE_TMA_MODEL, 3, "tma")))
    }
    fn unsupported(&self, unit: &str) -> Option<String> {
        match unit {
            "mbarrier_unit" | "named_barrier_unit" | "cluster_barrier_unit" | "tma_engine" => None,
            _ => Some(format!(
                "unsupported: the Verilator engine has no model of the {unit} in the SM engine yet \
                 (use --engine rtl)"
            )),
        }
    }
}

/// Reads packed fields, least significant first.
struct Rd<'a> {
    w: &'a [u32],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn new(w: &'a [u32]) -> Rd<'a> {
        Rd { w, pos: 0 }
    }
    /// The next `n` (<= 64) bits.
    fn take(&mut self, n: usize) -> u64 {
        let (k, sh) = (self.pos / 32, self.pos % 32);
        let mut v: u128 = 0;
        for j in 0..3 {
            if let Some(x) = self.w.get(k + j) {
                v |= (*x as u128) << (32 * j);
            }
        }
        self.pos += n;
        let v = (v >> sh) as u64;
        if n >= 64 {
            v
        } else {
            v & ((1u64 << n) - 1)
        }
    }
    fn flag(&mut self) -> bool {
        self.take(1) == 1
    }
    fn word(&mut self) -> MbarrierWord {
        MbarrierWord::from_u64(self.take(64))
    }
    /// A `LogicState` enum: its variant index into `all` (every variant, in declaration order).
    fn state<T: Synth + Copy>(&mut self, all: &[T]) -> T {
        let i = self.take(T::BITS) as usize;
        *all.get(i).unwrap_or_else(|| {
            panic!("Verilator model output: {} has no variant {i}", T::descriptor().name)
        })
    }
}

/// A value decoded from its packed bits (rust-hdl's `LogicStruct` layout: fields LSB-first in
/// declaration order; a `LogicState` enum is its variant index).
trait Unpack: Synth {
    fn unpack(r: &mut Rd) -> Self;
}

impl Unpack for bool {
    fn unpack(r: &mut Rd) -> Self {
        r.flag()
    }
}

impl<const N: usize> Unpack for Bits<N> {
    fn unpack(r: &mut Rd) -> Self {
        if N <= 64 {
            return r.take(N).into();
        }
        let mut v = Bits::<N>::default();
        for i in 0..N {
            v.set_bits::<1>(i, r.take(1).into());
        }
        v
    }
}

/// A whole packed value.
fn decode<T: Unpack>(w: &[u32]) -> T {
    T::unpack(&mut Rd::new(w))
}

/// Struct decoders: the fields in declaration order (the test `unpack_field_lists_follow_the_
/// declarations` checks the order against rust-hdl's descriptor; a field missing here stops the
/// build at the struct literal).
macro_rules! unpack_struct {
    ($($T:ty { $($f:ident),* $(,)? })*) => { $(
        impl Unpack for $T {
            fn unpack(r: &mut Rd) -> Self {
                // struct-literal fields are evaluated in the order written
                Self { $($f: Unpack::unpack(r)),* }
            }
        }
        #[cfg(test)]
        impl Fields for $T {
            const FIELDS: &'static [&'static str] = &[$(stringify!($f)),*];
        }
    )* };
}

/// Enum decoders: every variant in declaration order (a variant missing here stops the build at
/// the exhaustive match; the test `variant_tables_are_complete` checks the order).
macro_rules! unpack_enum {
    ($($T:ident [$($v:ident),* $(,)?])*) => { $(
        impl Unpack for $T {
            fn unpack(r: &mut Rd) -> Self {
                r.state(<$T as Variants>::ALL)
            }
        }
        impl Variants for $T {
            const ALL: &'static [$T] = &[$($T::$v),*];
        }
        const _: fn($T) = |x| match x { $($T::$v => ()),* };
    )* };
}

/// A struct's fields as [`unpack_struct`] reads them.
#[cfg(test)]
trait Fields {
    const FIELDS: &'static [&'static str];
}

/// An enum's variants as [`unpack_enum`] reads them.
trait Variants: Sized + std::fmt::Debug + 'static {
    const ALL: &'static [Self];
}

impl Unpack for MbarrierWord {
    fn unpack(r: &mut Rd) -> Self {
        r.word()
    }
}

unpack_struct! {
    MbarrierReq { op, word, count, tx_count, token, phase_parity, warp, suspend_time_hint, has_suspend_time_hint }
    TmaData16 { w0, w1, w2, w3 }
    TmaData128 { c0, c1, c2, c3, c4, c5, c6, c7 }
    TmaGmemReq { addr_lo, addr_hi, sect, tag, write, data_lo, data_hi, mask_lo, mask_hi, red_op, red_type }
    TmaSmemWrite { ctam, addr, data, cen, red_op, red_type }
    TmaFault { valid, kind, thread }
}

unpack_enum! {
    MbarrierOp [Init, Inval, Arrive, ArriveNoComplete, ArriveExpectTx, ArriveDrop,
        ArriveDropNoComplete, ArriveDropExpectTx, ExpectTx, CompleteTx, TestWait, TestWaitParity,
        TryWait, TryWaitParity, PendingCount, CpAsyncArriveInc]
    TmaFaultKind [NoFault, TensorMapInvalid, TmaCoordOutOfRange, TmaMisaligned,
        ClusterRankOutOfRange, UnsupportedInterleave, UnsupportedThreads]
    TmaRedOp [Copy, Add, Min, Max, Inc, Dec, And, Or, Xor]
    TmaRedType [B32, U32, S32, B64, U64, S64, F32, F64, F16, Bf16]
}

unpack_struct! {
    MbarrierResp { valid, warp, state, wait_complete, suspended, pending_count }
    MbarrierWake { valid, warp, completed }
    MbarrierFault { valid, kind, word, source, warp }
    NamedBarrierRelease { valid, barrier, warps, popc, all_true, any_true }
    NamedBarrierFault { valid, kind, barrier, warp }
    ClusterBarrierResp { valid, cta, warp, blocked }
    ClusterBarrierDone { valid, phase }
    ClusterBarrierFault { valid, kind, cta, warp }
}

unpack_enum! {
    MbarrierFinding [NoFinding, MbarrierUninitialized, MbarrierInitOnValid,
        MbarrierCountOutOfRange, MbarrierPendingUnderflow, MbarrierTxCountOutOfRange,
        MbarrierNoCompleteCompleted, MbarrierClusterAddressUnsupported, MbarrierNotShared]
    MbarrierSource [Local, Tma, Cluster]
    NamedBarrierFinding [NoFinding, BarrierCountNotMultipleOfWarp, BarrierCountAboveCta,
        UnsupportedArriveWithoutCount, BarrierWarpArrivedTwice, BarrierCountMismatch,
        BarrierRedMixed, BarrierCountTooSmall]
    ClusterBarrierFinding [NoFinding, ClusterBarrierWaitWithoutArrive, ClusterBarrierArriveTwice]
}

/// A port's width in the model is its type's (a port declared with the wrong type stops here,
/// not as silently truncated bits).
fn check_width(m: &Model, i: usize, bits: usize) {
    let p = &m.desc().ports[i];
    assert_eq!(p.width, bits, "{}: port `{}` is {} bits in the Verilog, {bits} in its declaration", m.desc().unit, p.name, p.width);
}

/// Declares a unit's input ports, each in one place: its Verilog name (the rust-hdl field
/// name), its type (sent as a whole packed value) and its value from the engine's inputs.
macro_rules! input_ports {
    ($(#[$m:meta])* $name:ident($x:ident: $X:ty) { $($port:ident: $T:ty = $e:expr),* $(,)? }) => {
        $(#[$m])*
        struct $name {
            idx: Vec<usize>,
        }
        impl $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($port)),*];
            fn new(m: &Model) -> Self {
                let idx: Vec<usize> = Self::NAMES.iter().map(|n| m.port(n)).collect();
                let bits = [$(<$T as Synth>::BITS),*];
                for (k, &i) in idx.iter().enumerate() {
                    check_width(m, i, bits[k]);
                }
                $name { idx }
            }
            fn write(&self, m: &mut Model, buf: &mut Vec<u32>, $x: &$X) {
                let mut k = 0;
                $(
                    words::<{ <$T as Synth>::BITS }, $T>($e, buf);
                    m.set(self.idx[k], buf);
                    k += 1;
                )*
                let _ = k;
            }
        }
    };
}

/// Declares a unit's output ports, each in one place: its name and type (decoded whole by
/// [`Unpack`]); a method per port reads it.
macro_rules! output_ports {
    ($(#[$m:meta])* $name:ident { $($port:ident: $T:ty),* $(,)? }) => {
        $(#[$m])*
        struct $name {
            $($port: usize,)*
        }
        impl $name {
            #[cfg(test)]
            const NAMES: &'static [&'static str] = &[$(stringify!($port)),*];
            fn new(m: &Model) -> Self {
                $name { $($port: {
                    let i = m.port(stringify!($port));
                    check_width(m, i, <$T as Synth>::BITS);
                    i
                },)* }
            }
            $(
                fn $port(&self, m: &Model, buf: &mut Vec<u32>) -> $T {
                    m.get(self.$port, buf);
                    decode(buf)
                }
            )*
        }
    };
}

/// A unit model with its port declarations and a scratch buffer.
struct VUnit<I, O> {
    m: Model,
    i: I,
    o: O,
    buf: Vec<u32>,
}

impl<I, O> VUnit<I, O> {
    fn new(m: Model, decl: impl FnOnce(&Model) -> (I, O)) -> Self {
        let (i, o) = decl(&m);
        VUnit { m, i, o, buf: Vec::with_capacity(16) }
    }

    /// One cycle (the seam's contract): `write` sets the inputs, `low` samples with the clock
    /// low (readies, combinational outputs), `high` after the rising edge (registered outputs).
    fn clock<A, R>(
        &mut self,
        write: impl FnOnce(&I, &mut Model, &mut Vec<u32>),
        low: impl FnOnce(&O, &Model, &mut Vec<u32>) -> A,
        high: impl FnOnce(&O, &Model, &mut Vec<u32>, A) -> R,
    ) -> R {
        let (m, o, b) = (&mut self.m, &self.o, &mut self.buf);
        write(&self.i, m, b);
        m.set_clock(false);
        m.eval();
        let a = low(o, m, b);
        m.set_clock(true);
        m.eval();
        high(o, m, b, a)
    }
}

input_ports! {
    /// The MbarrierUnit's inputs.
    MbarIn(x: MbarInputs) {
        local_req: MbarrierReq = x.local.unwrap_or_default(),
        local_valid: bool = x.local.is_some(),
        tma_req: MbarrierReq = x.tma.unwrap_or_default(),
        tma_valid: bool = x.tma.is_some(),
        cluster_req: MbarrierReq = x.cluster.unwrap_or_default(),
        cluster_valid: bool = x.cluster.is_some(),
    }
}

output_ports! {
    /// The MbarrierUnit's outputs.
    MbarOut {
        local_ready: bool,
        tma_ready: bool,
        cluster_ready: bool,
        resp: MbarrierResp,
        wake: MbarrierWake,
        fault: MbarrierFault,
    }
}

/// An MbarrierUnit model.
struct VMbar {
    u: VUnit<MbarIn, MbarOut>,
    /// the bank's write port: enable, address, data, shadow-valid data
    taps: [usize; 4],
    a: usize,
}

impl VMbar {
    fn new(m: Model, a: usize) -> VMbar {
        let taps = ["exec$bank_we", "exec$bank_wa", "exec$bank_wd", "exec$bank_wv"]
            .map(|n| m.tap(n));
        let u = VUnit::new(m, |m| (MbarIn::new(m), MbarOut::new(m)));
        let mut v = VMbar { u, taps, a };
        // as MbarUnit::new: the RAM read registers are defined after two edges
        for _ in 0..2 {
            v.cycle(&MbarInputs::default());
        }
        v
    }
}

impl MbarSim for VMbar {
    fn cycle(&mut self, x: &MbarInputs) -> MbarOutputs {
        let taps = self.taps;
        self.u.clock(
            |i, m, b| i.write(m, b, x),
            |o, m, b| (o.local_ready(m, b), o.tma_ready(m, b), o.cluster_ready(m, b)),
            |o, m, b, (local_ready, tma_ready, cluster_ready)| {
                // stage 2's bank write (stored at the next edge), seen with its response
                let mut tap = |k: usize| {
                    m.get(taps[k], b);
                    b[0] as u64 | b.get(1).map_or(0, |x| (*x as u64) << 32)
                };
                let write = (tap(0) == 1).then(|| (tap(1) as u32, tap(2), tap(3) == 1));
                MbarOutputs {
                    local_ready,
                    tma_ready,
                    cluster_ready,
                    write,
                    resp: o.resp(m, b),
                    wake: o.wake(m, b),
                    fault: o.fault(m, b),
                }
            },
        )
    }
    fn words(&self) -> u32 {
        1 << self.a
    }
}

input_ports! {
    /// The NamedBarrierUnit's inputs.
    NamedIn(x: NamedInputs) {
        req: NamedBarrierReq = x.req.unwrap_or_default(),
        req_valid: bool = x.req.is_some(),
        exit: WarpExit = WarpExit { valid: x.exit.is_some(), warp: (x.exit.unwrap_or(0) as u64).into() },
        launch: NamedBarrierLaunch =
            NamedBarrierLaunch { valid: x.launch.is_some(), warps: (x.launch.unwrap_or(0) as u64).into() },
    }
}

output_ports! {
    /// The NamedBarrierUnit's outputs.
    NamedOut {
        req_ready: bool,
        done: NamedBarrierRelease,
        fault: NamedBarrierFault,
    }
}

impl NamedSim for VUnit<NamedIn, NamedOut> {
    fn cycle(&mut self, x: &NamedInputs) -> NamedOutputs {
        self.clock(
            |i, m, b| i.write(m, b, x),
            |o, m, b| o.req_ready(m, b),
            |o, m, b, ready| NamedOutputs { ready, done: o.done(m, b), fault: o.fault(m, b) },
        )
    }
}

input_ports! {
    /// The ClusterBarrierUnit's inputs.
    ClusterIn(x: ClusterInputs) {
        req: ClusterBarrierReq = x.req.unwrap_or_default(),
        req_valid: bool = x.req.is_some(),
        exit: ClusterWarpExit = {
            let (cta, warp) = x.exit.unwrap_or((0, 0));
            ClusterWarpExit { valid: x.exit.is_some(), cta: (cta as u64).into(), warp: (warp as u64).into() }
        },
        launch: ClusterLaunch = {
            let (cta, warps) = x.launch.unwrap_or((0, 0));
            ClusterLaunch { valid: x.launch.is_some(), cta: (cta as u64).into(), warps: (warps as u64).into() }
        },
    }
}

output_ports! {
    /// The ClusterBarrierUnit's outputs.
    ClusterOut {
        req_ready: bool,
        resp: ClusterBarrierResp,
        done: ClusterBarrierDone,
        fault: ClusterBarrierFault,
    }
}

impl ClusterSim for VUnit<ClusterIn, ClusterOut> {
    fn cycle(&mut self, x: &ClusterInputs) -> ClusterOutputs {
        self.clock(
            |i, m, b| i.write(m, b, x),
            |o, m, b| o.req_ready(m, b),
            |o, m, b, ready| ClusterOutputs { ready, resp: o.resp(m, b), done: o.done(m, b), fault: o.fault(m, b) },
        )
    }
}

input_ports! {
    /// The TmaEngine's inputs.
    TmaIn(x: TmaInputs) {
        cta_rank: Bits<4> = (x.cta_rank as u64).into(),
        cmd: TmaCmd = x.cmd.unwrap_or_default().0,
        cmd_desc: TmaDescImage = x.cmd.unwrap_or_default().1,
        cmd_valid: bool = x.cmd.is_some(),
        gmem_req_ready: bool = x.gmem_req_ready,
        gmem_resp: TmaGmemResp = x.gmem_resp.unwrap_or_default(),
        gmem_resp_valid: bool = x.gmem_resp.is_some(),
        smem_wr_ready: bool = x.smem_wr_ready,
        smem_rd_ready: bool = x.smem_rd_ready,
        smem_rd_data: TmaData128 = x.smem_rd_data,
        mbar_ready: bool = x.mbar_ready,
        wait_n: Bits<8> = (x.wait_n as u64).into(),
        wait_read: bool = x.wait_read,
        wait_thread: Bits<10> = (x.wait_thread as u64).into(),
    }
}

output_ports! {
    /// The TmaEngine's outputs.
    TmaOut {
        cmd_ready: bool,
        gmem_req: TmaGmemReq,
        gmem_req_valid: bool,
        gmem_resp_ready: bool,
        smem_wr: TmaSmemWrite,
        smem_wr_valid: bool,
        smem_rd_addr: Bits<18>,
        smem_rd_cen: Bits<8>,
        smem_rd_valid: bool,
        mbar_req: MbarrierReq,
        mbar_cta: Bits<4>,
        mbar_remote: bool,
        mbar_valid: bool,
        wait_done: bool,
        groups_pending: Bits<4>,
        store_read_done: bool,
        store_writes_issued: bool,
        fault: TmaFault,
        idle: bool,
    }
}

/// A TmaEngine model.
fn vtma(m: Model) -> VUnit<TmaIn, TmaOut> {
    let mut u = VUnit::new(m, |m| (TmaIn::new(m), TmaOut::new(m)));
    // as TmaUnit::new: registers are defined after two edges
    for _ in 0..2 {
        u.cycle(&TmaInputs::default());
    }
    u
}

impl TmaSim for VUnit<TmaIn, TmaOut> {
    fn wait_query(&mut self, thread: u32, n: u8, read: bool) -> (bool, u32) {
        // Between edges: the clock stays high, only the wait port's answer is read (the next
        // `cycle` writes every input again).
        let x = TmaInputs { wait_n: n, wait_read: read, wait_thread: thread, ..Default::default() };
        let (m, b) = (&mut self.m, &mut self.buf);
        self.i.write(m, b, &x);
        m.eval();
        (self.o.wait_done(m, b), self.o.groups_pending(m, b).to_u64() as u32)
    }

    fn cycle(&mut self, x: &TmaInputs) -> TmaOutputs {
        self.clock(
            |i, m, b| i.write(m, b, x),
            |o, m, b| {
                // the engine answers every read response the cycle it arrives (hdl: "always")
                debug_assert!(x.gmem_resp.is_none() || o.gmem_resp_ready(m, b));
                TmaOutputs {
                    cmd_ready: o.cmd_ready(m, b),
                    gmem_req: o.gmem_req_valid(m, b).then(|| o.gmem_req(m, b)),
                    smem_wr: o.smem_wr_valid(m, b).then(|| o.smem_wr(m, b)),
                    smem_rd: o.smem_rd_valid(m, b).then(|| (o.smem_rd_addr(m, b).to_u64() as u32, o.smem_rd_cen(m, b).to_u64() as u8)),
                    mbar: o.mbar_valid(m, b).then(|| (o.mbar_req(m, b), o.mbar_cta(m, b).to_u64() as u32, o.mbar_remote(m, b))),
                    wait_done: o.wait_done(m, b),
                    store_read_done: o.store_read_done(m, b),
                    store_writes_issued: o.store_writes_issued(m, b),
                    ..Default::default()
                }
            },
            |o, m, b, r| TmaOutputs {
                fault: o.fault(m, b),
                idle: o.idle(m, b),
                groups_pending: o.groups_pending(m, b).to_u64() as u32,
                ..r
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::{cluster_req, mbar_req, named_req, Rng};
    use rust_hdl::prelude::TypeKind;

    /// The variant tables list every variant in declaration order.
    fn check_variants<T: Variants + Synth>() {
        let TypeKind::Enum(names) = T::descriptor().kind else { panic!("not an enum") };
        let ours: Vec<String> = T::ALL.iter().map(|v| format!("{}::{v:?}", T::descriptor().name)).collect();
        assert_eq!(ours, names);
    }

    #[test]
    fn variant_tables_are_complete() {
        check_variants::<MbarrierFinding>();
        check_variants::<MbarrierSource>();
        check_variants::<MbarrierOp>();
        check_variants::<NamedBarrierFinding>();
        check_variants::<ClusterBarrierFinding>();
        check_variants::<TmaFaultKind>();
        check_variants::<TmaRedOp>();
        check_variants::<TmaRedType>();
    }

    /// Decoding what the encoder packed gives the value back (random values of every output
    /// type the backend decodes).
    #[test]
    fn decoders_invert_the_packing() {
        let mut rng = Rng::new(7);
        let mut w = Vec::new();
        for _ in 0..2000 {
            let resp = MbarrierResp {
                valid: rng.pct(50),
                warp: rng.bits(),
                state: MbarrierWord::from_u64(rng.next()),
                wait_complete: rng.pct(50),
                suspended: rng.pct(50),
                pending_count: rng.bits(),
            };
            words::<{ MbarrierResp::BITS }, MbarrierResp>(resp, &mut w);
            assert_eq!(decode::<MbarrierResp>(&w), resp);
            let wake = MbarrierWake { valid: rng.pct(50), warp: rng.bits(), completed: rng.pct(50) };
            words::<{ MbarrierWake::BITS }, MbarrierWake>(wake, &mut w);
            assert_eq!(decode::<MbarrierWake>(&w), wake);
            let f = MbarrierFault {
                valid: rng.pct(50),
                kind: <MbarrierFinding as Variants>::ALL[rng.below(9) as usize],
                word: rng.bits(),
                source: <MbarrierSource as Variants>::ALL[rng.below(3) as usize],
                warp: rng.bits(),
            };
            words::<{ MbarrierFault::BITS }, MbarrierFault>(f, &mut w);
            assert_eq!(decode::<MbarrierFault>(&w), f);
            let d = NamedBarrierRelease {
                valid: rng.pct(50),
                barrier: rng.bits(),
                warps: rng.bits(),
                popc: rng.bits(),
                all_true: rng.pct(50),
                any_true: rng.pct(50),
            };
            words::<{ NamedBarrierRelease::BITS }, NamedBarrierRelease>(d, &mut w);
            assert_eq!(decode::<NamedBarrierRelease>(&w), d);
            let f = NamedBarrierFault {
                valid: rng.pct(50),
                kind: <NamedBarrierFinding as Variants>::ALL[rng.below(8) as usize],
                barrier: rng.bits(),
                warp: rng.bits(),
            };
            words::<{ NamedBarrierFault::BITS }, NamedBarrierFault>(f, &mut w);
            assert_eq!(decode::<NamedBarrierFault>(&w), f);
            let r = ClusterBarrierResp { valid: rng.pct(50), cta: rng.bits(), warp: rng.bits(), blocked: rng.pct(50) };
            words::<{ ClusterBarrierResp::BITS }, ClusterBarrierResp>(r, &mut w);
            assert_eq!(decode::<ClusterBarrierResp>(&w), r);
            let d = ClusterBarrierDone { valid: rng.pct(50), phase: rng.bits() };
            words::<{ ClusterBarrierDone::BITS }, ClusterBarrierDone>(d, &mut w);
            assert_eq!(decode::<ClusterBarrierDone>(&w), d);
            let f = ClusterBarrierFault {
                valid: rng.pct(50),
                kind: <ClusterBarrierFinding as Variants>::ALL[rng.below(3) as usize],
                cta: rng.bits(),
                warp: rng.bits(),
            };
            words::<{ ClusterBarrierFault::BITS }, ClusterBarrierFault>(f, &mut w);
            assert_eq!(decode::<ClusterBarrierFault>(&w), f);
        }
    }

    /// The backend's units and the engine's rust-hdl units give the same outputs, every cycle,
    /// on the lockstep stimulus (requests only; the engine-level agreement is
    /// tests/verilator_engine.rs).
    #[test]
    fn backend_units_match_rust_hdl_units() {
        use hopsync_sim::units::{ClusterUnit, MbarUnit, NamedUnit};
        let cfg = SmConfig::sm90();
        let be = Backend::other(Arc::new(VerilatorBackend::new(&cfg, None).unwrap()));
        let suspend = ENGINE_SUSPEND_CYCLES;
        let mut rng = Rng::new(11);
        for smem in [4096u32, 32 * 1024, 200 * 1024] {
            let mut a = MbarUnit::new(smem, suspend);
            let mut b = MbarUnit::with_backend(&be, smem, suspend);
            assert_eq!(a.words(), b.words());
            for c in 0..3000 {
                let mut req = |p: u64, remote: bool| {
                    rng.pct(p).then(|| {
                        let mut r = mbar_req(&mut rng, remote);
                        r.word = (r.word.index() as u64 & 7).into();
                        r
                    })
                };
                let x = MbarInputs { local: req(60, false), tma: req(15, true), cluster: req(15, true) };
                let (oa, ob) = (a.cycle(&x), b.cycle(&x));
                let s = |o: &MbarOutputs| format!("{:?}", (o.local_ready, o.tma_ready, o.cluster_ready, o.write, o.resp, o.wake, o.fault));
                assert_eq!(s(&oa), s(&ob), "smem {smem} cycle {c}");
            }
        }
        let mut a = NamedUnit::new();
        let mut b = NamedUnit::with_backend(&be);
        for c in 0..3000 {
            let x = NamedInputs {
                req: rng.pct(60).then(|| named_req(&mut rng)),
                exit: rng.pct(2).then(|| rng.below(4) as u32),
                launch: (c == 0 || rng.pct(1)).then(|| 0xF),
            };
            let (oa, ob) = (a.cycle(&x), b.cycle(&x));
            assert_eq!(format!("{:?}", (oa.ready, oa.done, oa.fault)), format!("{:?}", (ob.ready, ob.done, ob.fault)), "named cycle {c}");
        }
        let mut a = ClusterUnit::new();
        let mut b = ClusterUnit::with_backend(&be);
        for c in 0..3000 {
            let x = ClusterInputs {
                req: rng.pct(60).then(|| cluster_req(&mut rng)),
                exit: rng.pct(2).then(|| (rng.below(2) as u32, rng.below(4) as u32)),
                launch: (c < 2 || rng.pct(1)).then(|| ((c % 2) as u32, 0xF)),
            };
            let (oa, ob) = (a.cycle(&x), b.cycle(&x));
            assert_eq!(
                format!("{:?}", (oa.ready, oa.resp, oa.done, oa.fault)),
                format!("{:?}", (ob.ready, ob.resp, ob.done, ob.fault)),
                "cluster cycle {c}"
            );
        }
    }

    /// The unpack field lists are the structs' declarations, in order.
    #[test]
    fn unpack_field_lists_follow_the_declarations() {
        fn check<T: Fields + Synth>() {
            let TypeKind::Composite(fs) = T::descriptor().kind else { panic!("not a struct") };
            let names: Vec<&str> = fs.iter().map(|f| f.fieldname.as_str()).collect();
            assert_eq!(names, T::FIELDS, "{}", T::descriptor().name);
        }
        check::<MbarrierReq>();
        check::<TmaData16>();
        check::<TmaData128>();
        check::<TmaGmemReq>();
        check::<TmaSmemWrite>();
        check::<TmaFault>();
        check::<MbarrierResp>();
        check::<MbarrierWake>();
        check::<MbarrierFault>();
        check::<NamedBarrierRelease>();
        check::<NamedBarrierFault>();
        check::<ClusterBarrierResp>();
        check::<ClusterBarrierDone>();
        check::<ClusterBarrierFault>();
    }

    /// A random variant of an enum the backend decodes.
    fn pick<T: Variants + Copy>(rng: &mut Rng) -> T {
        T::ALL[rng.below(T::ALL.len() as u64) as usize]
    }

    /// The TMA outputs decode what the encoder packed (random values).
    #[test]
    fn tma_decoders_invert_the_packing() {
        use crate::lockstep::data16;
        let mut rng = Rng::new(5);
        let mut w = Vec::new();
        for _ in 0..2000 {
            let g = TmaGmemReq {
                addr_lo: rng.bits(),
                addr_hi: rng.bits(),
                sect: rng.bits(),
                tag: rng.bits(),
                write: rng.pct(50),
                data_lo: data16(&mut rng),
                data_hi: data16(&mut rng),
                mask_lo: rng.bits(),
                mask_hi: rng.bits(),
                red_op: pick(&mut rng),
                red_type: pick(&mut rng),
            };
            words::<{ TmaGmemReq::BITS }, TmaGmemReq>(g, &mut w);
            assert_eq!(decode::<TmaGmemReq>(&w), g);
            let data = crate::lockstep::data128(&mut rng);
            let s = TmaSmemWrite { ctam: rng.bits(), addr: rng.bits(), data, cen: rng.bits(), red_op: pick(&mut rng), red_type: pick(&mut rng) };
            words::<{ TmaSmemWrite::BITS }, TmaSmemWrite>(s, &mut w);
            assert_eq!(decode::<TmaSmemWrite>(&w), s);
            let remote = rng.pct(50);
            let r = mbar_req(&mut rng, remote);
            words::<{ MbarrierReq::BITS }, MbarrierReq>(r, &mut w);
            assert_eq!(decode::<MbarrierReq>(&w), r);
            let f = TmaFault { valid: rng.pct(50), kind: pick(&mut rng), thread: rng.bits() };
            words::<{ TmaFault::BITS }, TmaFault>(f, &mut w);
            assert_eq!(decode::<TmaFault>(&w), f);
        }
    }

    /// Every port of each engine model is driven or read by the backend (the declarations'
    /// widths are checked against the Verilog by `new`, in the `backend_*` tests).
    #[test]
    fn port_declarations_cover_the_models() {
        fn covers(model: &str, inputs: &[&str], outputs: &[&str]) {
            let m = Model::new(model);
            let mut named: Vec<&str> = inputs.iter().chain(outputs).copied().collect();
            named.push("clock");
            for p in m.desc().ports {
                assert!(named.contains(&p.name), "port `{}` of {model} is not declared", p.name);
            }
            assert_eq!(named.len(), m.desc().ports.len(), "{model}");
        }
        covers(ENGINE_TMA_MODEL, TmaIn::NAMES, TmaOut::NAMES);
        covers("mbarrier_unit_a9", MbarIn::NAMES, MbarOut::NAMES);
        covers("named_barrier_unit", NamedIn::NAMES, NamedOut::NAMES);
        covers("cluster_barrier_unit", ClusterIn::NAMES, ClusterOut::NAMES);
    }

    /// The backend's TmaEngine and the engine's rust-hdl one give the same outputs every cycle
    /// (the lockstep's command mix and global-memory responder; shared-memory reads answered
    /// with random data).
    #[test]
    fn backend_tma_matches_rust_hdl_tma() {
        use crate::lockstep::{data16, tma_cmd, GmemResponder};
        use hopsync_sim::units::TmaUnit;
        let cfg = SmConfig::sm90();
        let be = Backend::other(Arc::new(VerilatorBackend::new(&cfg, None).unwrap()));
        let (tags, per, req) = tma_engine_params(&cfg);
        let mut a = TmaUnit::new(tags, per, req);
        let mut b = TmaUnit::with_backend(&be, tags, per, req);
        let mut rng = Rng::new(3);
        let mut gmem = GmemResponder::default();
        let mut busy = 0;
        for c in 0..4000 {
            let (v, r) = gmem.respond(&mut rng);
            let x = TmaInputs {
                cta_rank: (c / 1000) % 2,
                cmd: rng.pct(30).then(|| tma_cmd(&mut rng, ((c / 1000) % 2) as u64)),
                gmem_req_ready: rng.pct(80),
                gmem_resp: v.then_some(r),
                smem_wr_ready: rng.pct(85),
                smem_rd_ready: rng.pct(85),
                smem_rd_data: crate::lockstep::data128(&mut rng),
                mbar_ready: rng.pct(80),
                wait_n: rng.below(4) as u8,
                wait_read: rng.pct(50),
                wait_thread: rng.below(6) as u32,
            };
            let (oa, ob) = (a.cycle(&x), b.cycle(&x));
            assert_eq!(format!("{oa:?}"), format!("{ob:?}"), "cycle {c}");
            // the wait port between edges (the lockstep's bulk-group view)
            let (t, n, rd) = (rng.below(6) as u32, rng.below(4) as u8, rng.pct(50));
            assert_eq!(a.wait_query(t, n, rd), b.wait_query(t, n, rd), "cycle {c}: wait_group {n} of thread {t}");
            if let Some(q) = oa.gmem_req {
                gmem.accept(true, x.gmem_req_ready, q.tag.to_u64(), q.write);
            }
            busy += !oa.idle as u32;
        }
        assert!(busy > 1000 && gmem.answered > 100, "the stimulus keeps the engine busy: {busy} cycles, {} responses", gmem.answered);
    }

    /// The TmaEngine model's parameters are sm90.toml's.
    #[test]
    fn engine_models_use_the_sm90_tma_parameters() {
        let c = SmConfig::sm90();
        assert_eq!(tma_engine_params(&c), (ENGINE_TMA_READ_TAGS, ENGINE_TMA_BYTES_PER_CYCLE, ENGINE_TMA_REQUEST_BYTES));
        let mut other = SmConfig::sm90();
        other.tma.read_tags = ENGINE_TMA_READ_TAGS / 2;
        let e = VerilatorBackend::new(&other, None).err().unwrap();
        assert!(e.starts_with("unsupported:"), "{e}");
    }

    /// The models' try_wait limit is sm90.toml's.
    #[test]
    fn engine_models_use_the_sm90_try_wait_limit() {
        let c = SmConfig::sm90();
        assert_eq!(c.ns_to_cycles(c.sync.default_suspend_ns), ENGINE_SUSPEND_CYCLES as u64);
        let mut other = SmConfig::sm90();
        other.sync.default_suspend_ns += 1000.0;
        let e = VerilatorBackend::new(&other, None).err().unwrap();
        assert!(e.starts_with("unsupported:"), "{e}");
    }
}
