//! The RTL units, clocked in a direct `simulate()` loop (rust-hdl's threaded `Simulation` is
//! about 30x slower): per cycle, set the inputs, settle with the clock low (ready signals are
//! combinational), raise the clock and settle again (the outputs after the edge).
//!
//! The MbarrierUnit holds the mbarrier words in its own RAM bank. The engine keeps its shared-memory
//! image consistent with that bank by observing the bank's write port (a [`Tap`] read after the
//! edge's settle: the word stage 2 writes at the next edge, seen with its response), so plain
//! loads and reports see the words the unit holds. The unit is instantiated with a bank just large enough for the program's
//! shared memory (2^9, 2^12 or 2^15 words).
//!
//! The MbarrierUnit (the hot unit: most of the engine's time was its rust-hdl settle loop), the
//! NamedBarrierUnit and the ClusterBarrierUnit run by default as their generated straight-line
//! models ([`UnitSim::Generated`], hopsync-hdl-fast: Rust generated at build time from each
//! unit's own rust-hdl HDL, checked against rust-hdl's simulation every cycle in that crate's
//! tests; the two single-port units share one wrapper, [`SingleUnit`]).
//! `HOPSYNC_UNIT_SIM=rust-hdl` (or a [`Backend`] with [`UnitSim::RustHdl`], as `--waves` takes,
//! whose VCD probe reads rust-hdl's signals) clocks rust-hdl's own simulation instead. Both give
//! the same values every cycle. The TmaEngine too ([`TmaUnit`]: `TmaEngineModel`).
//!
//! Backends: [`SmConfig::backend`] (a [`Backend`]) can name another simulator of the same RTL
//! (the Verilator models of the generated Verilog, `hopsync-verilator`, `hopsync run --engine
//! verilator`): it supplies [`MbarSim`] / [`NamedSim`] / [`ClusterSim`] objects with the same
//! per-cycle contract (inputs set, clock low and settle: readies; clock high and settle: the
//! outputs and the bank write), and the engine cannot tell them apart.
//!
//! [`SmConfig::backend`]: crate::SmConfig::backend
//!
//! The TmaEngine ([`TmaUnit`]) is clocked the same way, through the same seam ([`TmaSim`],
//! [`UnitBackend::tma`]); its ports are plain values here ([`TmaInputs`], [`TmaOutputs`]) and the
//! engine plays global memory, shared memory and the mbarrier paths around it.

use hopsync_hdl::cluster_barrier_unit::{ClusterBarrierDone, ClusterBarrierFault, ClusterBarrierReq, ClusterBarrierResp, ClusterBarrierUnit, ClusterLaunch, ClusterWarpExit};
use hopsync_hdl::mbarrier_unit::{MbarrierFault, MbarrierReq, MbarrierResp, MbarrierUnit, MbarrierWake, MbarrierWord, WaiterState, MBARRIER_WAITERS};
use hopsync_hdl::named_barrier_unit::{NamedBarrierFault, NamedBarrierLaunch, NamedBarrierRelease, NamedBarrierReq, NamedBarrierUnit, WarpExit};
use hopsync_hdl::tma_engine::{TmaCmd, TmaData128, TmaDescImage, TmaEngine, TmaFault, TmaGmemReq, TmaGmemResp, TmaSmemWrite};
use hopsync_hdl_fast::models::{ClusterBarrierUnitModel, NamedBarrierUnitModel, TmaEngineModel};
use hopsync_hdl_fast::rt::Model;
use rust_hdl::prelude::*;
use std::sync::Arc;

/// Another simulator of one CTA's MbarrierUnit (same ports, same cycle contract).
pub trait MbarSim {
    /// One clock cycle.
    fn cycle(&mut self, p: &MbarInputs) -> MbarOutputs;
    /// Words in the bank.
    fn words(&self) -> u32;
}

/// Another simulator of one CTA's NamedBarrierUnit.
pub trait NamedSim {
    /// One clock cycle.
    fn cycle(&mut self, p: &NamedInputs) -> NamedOutputs;
}

/// Another simulator of one cluster's ClusterBarrierUnit.
pub trait ClusterSim {
    /// One clock cycle.
    fn cycle(&mut self, p: &ClusterInputs) -> ClusterOutputs;
}

/// Another simulator of one SM's TmaEngine (same ports, same cycle contract: combinational
/// outputs sampled with the clock low, `fault` / `idle` / `groups_pending` after the edge).
pub trait TmaSim {
    /// One clock cycle.
    fn cycle(&mut self, p: &TmaInputs) -> TmaOutputs;
    /// The answer to `wait_group{.read} n` of `thread` now, between edges (the wait port is
    /// combinational): (wait_done, groups_pending of that thread).
    fn wait_query(&mut self, thread: u32, n: u8, read: bool) -> (bool, u32);
}

/// A factory of unit simulators other than rust-hdl's.
pub trait UnitBackend: Send + Sync {
    /// Its name (the JSON report's `engine`).
    fn name(&self) -> &'static str;
    /// An MbarrierUnit whose bank covers `smem_bytes`, with the try_wait limit
    /// `default_suspend_cycles` (the backend checked both when it was made).
    fn mbarrier(&self, smem_bytes: u32, default_suspend_cycles: u32) -> Box<dyn MbarSim>;
    /// A NamedBarrierUnit.
    fn named(&self) -> Box<dyn NamedSim>;
    /// A ClusterBarrierUnit.
    fn cluster(&self) -> Box<dyn ClusterSim>;
    /// A TmaEngine with `read_tags` global reads in flight, `bytes_per_cycle` bytes of requests
    /// per cycle and reads of `request_bytes` ([`tma_engine_params`]; the backend checked them
    /// when it was made).
    fn tma(&self, read_tags: u32, bytes_per_cycle: u32, request_bytes: u32) -> Box<dyn TmaSim>;
    /// `Some("unsupported: ...")` when the backend has no model of `unit` (a name of
    /// hopsync_hdl::verilog::UNITS): the engine must stop rather than fall back to rust-hdl.
    fn unsupported(&self, unit: &str) -> Option<String>;
}

/// How the rust-hdl units are simulated when no other [`UnitBackend`] is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitSim {
    /// The generated straight-line models (hopsync-hdl-fast: the MbarrierUnit,
    /// NamedBarrierUnit, ClusterBarrierUnit and TmaEngine).
    Generated,
    /// rust-hdl's own `simulate` for every unit (the VCD probe of `--waves` needs its signals).
    RustHdl,
}

impl UnitSim {
    /// The environment variable that picks one (`generated`, the default, or `rust-hdl`).
    pub const ENV: &'static str = "HOPSYNC_UNIT_SIM";

    /// The choice of [`UnitSim::ENV`]; an unknown value is an error naming the accepted ones.
    pub fn from_env() -> Result<UnitSim, String> {
        match std::env::var(Self::ENV) {
            Err(_) => Ok(UnitSim::Generated),
            Ok(v) => match v.as_str() {
                "" | "generated" => Ok(UnitSim::Generated),
                "rust-hdl" => Ok(UnitSim::RustHdl),
                _ => Err(format!("{}={v}: expected `generated` or `rust-hdl`", Self::ENV)),
            },
        }
    }
}

impl Default for UnitSim {
    /// [`UnitSim::from_env`], [`UnitSim::Generated`] when unset (the CLI rejects an unknown value
    /// before any unit is built).
    fn default() -> UnitSim {
        UnitSim::from_env().unwrap_or(UnitSim::Generated)
    }
}

/// Which simulator clocks the units: another [`UnitBackend`] when set, else the built-in ones
/// ([`UnitSim`]).
#[derive(Clone, Default)]
pub struct Backend(pub Option<Arc<dyn UnitBackend>>, pub UnitSim);

impl Backend {
    /// Another simulator for every unit.
    pub fn other(b: Arc<dyn UnitBackend>) -> Backend {
        Backend(Some(b), UnitSim::default())
    }
    /// The backend's name (`rtl` for rust-hdl).
    pub fn name(&self) -> &'static str {
        self.0.as_ref().map_or("rtl", |b| b.name())
    }
    /// See [`UnitBackend::unsupported`] (rust-hdl has every unit).
    pub fn unsupported(&self, unit: &str) -> Option<String> {
        self.0.as_ref().and_then(|b| b.unsupported(unit))
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backend({})", self.name())
    }
}

impl PartialEq for Backend {
    fn eq(&self, o: &Backend) -> bool {
        // (the built-in simulations give equal values: a configuration is the same either way)
        self.name() == o.name()
    }
}

/// Iterations allowed for one settle.
const SETTLE: usize = 200;

/// Finds atoms by their dotted path in a block.
struct Finder {
    path: Vec<String>,
    found: Vec<(String, *const (), usize, String)>,
}

impl Probe for Finder {
    fn visit_start_scope(&mut self, name: &str, _: &dyn Block) {
        self.path.push(name.to_string());
    }
    fn visit_start_namespace(&mut self, name: &str, _: &dyn Block) {
        self.path.push(name.to_string());
    }
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        let full = format!("{}.{}", self.path.join("."), name);
        let p = signal as *const dyn Atom as *const ();
        self.found.push((full, p, signal.bits(), signal.descriptor().name));
    }
    fn visit_end_namespace(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
    }
    fn visit_end_scope(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
    }
}

/// Read access to the write port of the MbarrierUnit's word bank and shadow-valid bank.
///
/// The unit keeps these signals private; the tap finds them once through rust-hdl's probe visitor
/// (checking each one's width and type name) and reads them afterwards through pointers into the
/// boxed unit, which never moves and is only read between `simulate` calls.
struct Tap<const A: usize> {
    enable: *const Signal<In, bool>,
    address: *const Signal<In, Bits<A>>,
    data: *const Signal<In, MbarrierWord>,
    valid: *const Signal<In, bool>,
}

impl Finder {
    /// Every atom of `uut`.
    fn of<B: Block>(uut: &B) -> Finder {
        let mut f = Finder { path: Vec::new(), found: Vec::new() };
        uut.accept("uut", &mut f);
        f
    }

    /// The one atom whose path ends with `suffix`, checked to be `bits` wide with a type name
    /// containing `ty`.
    fn get(&self, suffix: &str, bits: usize, ty: &str) -> *const () {
        let hits: Vec<_> = self.found.iter().filter(|(n, ..)| n.ends_with(suffix)).collect();
        assert!(hits.len() == 1, "MbarrierUnit tap: expected one `{suffix}`, found {}", hits.len());
        let (n, p, b, t) = hits[0];
        assert!(*b == bits && t.contains(ty), "MbarrierUnit tap: `{n}` is {b} bits of `{t}`, expected {bits} bits of `{ty}`");
        *p
    }
}

impl<const A: usize> Tap<A> {
    fn find(uut: &MbarrierUnit<A>) -> Tap<A> {
        let f = Finder::of(uut);
        let get = |suffix: &str, bits: usize, ty: &str| f.get(suffix, bits, ty);
        Tap {
            enable: get(".ram.write_enable", 1, "") as *const Signal<In, bool>,
            address: get(".ram.write_address", A, "") as *const Signal<In, Bits<A>>,
            data: get(".ram.write_data", 64, "MbarrierWord") as *const Signal<In, MbarrierWord>,
            valid: get(".shadow.write_data", 1, "") as *const Signal<In, bool>,
        }
    }

    /// The write at the coming edge (read after an edge: stage 2's): (word index, new word,
    /// shadow valid bit).
    fn read(&self) -> Option<(u32, u64, bool)> {
        // SAFETY: the pointers name fields of the boxed unit the tap was built from (checked by
        // path, width and type name), which outlives the tap and is not borrowed mutably here.
        unsafe {
            if !(*self.enable).val() {
                return None;
            }
            Some(((*self.address).val().index() as u32, (*self.data).val().to_u64(), (*self.valid).val()))
        }
    }
}

/// The registers that decide whether an MbarrierUnit edge with no request changes anything but
/// its free-running cycle counter `now` (the idle fast-forward, [`MbarUnit::skip_idle_edge`]).
///
/// Why skipping such an edge is exact (hdl/src/mbarrier_unit): with no request valid, stage 0
/// accepts nothing (`rr` keeps its value) and stage 1 receives nothing. When in addition stages 1
/// and 2 are empty (`s1_valid`, `s2_valid`: stage 2 drives the bank write, `resp` and `fault`), no
/// completion is pending (`cpl_valid`), no suspension waits to enter the table (`ins_valid`)
/// and every waiter-table entry is `Idle` or `Waiting` (else `wake` is valid), the edge writes no
/// RAM word and raises no response, wake or finding; `now` is read only by the deadline compare
/// (`deadline == now`, of `Waiting` entries) and by the deadline of a new waiter (which needs a
/// request). So an edge at which no `Waiting` entry's deadline equals `now` only increments
/// `now`; the engine clocks a unit for at least 4 cycles after its last request (`busy_until`:
/// its bank write, its completion and its suspension reach the table by then). Skipped edges are owed and
/// paid at the next clocked edge by advancing `now` (a register load between edges, like the RAM
/// tap's read). The test `idle_fast_forward_matches_clocking_every_edge` checks it against the
/// unit clocked every cycle on random stimulus.
///
/// The signals are found like the [`Tap`]'s; they are held as byte offsets into the boxed unit so
/// that the one write (`now`) goes through a pointer derived from `&mut`.
struct IdleTap {
    now: usize,
    s1_valid: usize,
    s2_valid: usize,
    cpl_valid: usize,
    ins_valid: usize,
    state: [usize; MBARRIER_WAITERS],
    deadline: [usize; MBARRIER_WAITERS],
}

impl IdleTap {
    fn find<const A: usize>(uut: &MbarrierUnit<A>) -> IdleTap {
        let f = Finder::of(uut);
        let base = uut as *const MbarrierUnit<A> as usize;
        let off = |suffix: &str, bits: usize, ty: &str| f.get(suffix, bits, ty) as usize - base;
        IdleTap {
            now: off(".now.q", 32, ""),
            s1_valid: off(".s1_valid.q", 1, ""),
            s2_valid: off(".s2_valid.q", 1, ""),
            cpl_valid: off(".cpl_valid.q", 1, ""),
            ins_valid: off(".ins_valid.q", 1, ""),
            state: std::array::from_fn(|i| off(&format!(".waiter_state${i}.q"), WaiterState::BITS, "WaiterState")),
            deadline: std::array::from_fn(|i| off(&format!(".waiter_deadline${i}.q"), 32, "")),
        }
    }

    /// The value of the register at offset `off` of `uut`, of type `T`.
    ///
    /// SAFETY (all reads): each offset names a `Signal<Out, T>` field of a unit of this type
    /// (checked by path, width and type name when the tap was built); it is read between
    /// `simulate` calls.
    fn get<T: Synth, const A: usize>(uut: &MbarrierUnit<A>, off: usize) -> T {
        unsafe { (*((uut as *const MbarrierUnit<A> as *const u8).add(off) as *const Signal<Out, T>)).val() }
    }

    /// Edges with no request the unit can skip from now on, `now + owed` being the value its
    /// counter would hold before the next one: None when the unit is not quiet (an edge would
    /// change more than `now`), else the edges before a `Waiting` entry's deadline (u64::MAX
    /// when none waits).
    fn idle_edges_left<const A: usize>(&self, uut: &MbarrierUnit<A>, owed: u64) -> Option<u64> {
        let busy = [self.s1_valid, self.s2_valid, self.cpl_valid, self.ins_valid].iter().any(|&r| Self::get::<bool, A>(uut, r));
        if busy {
            return None;
        }
        let now = Self::get::<Bits<32>, A>(uut, self.now).to_u64().wrapping_add(owed) as u32;
        let mut left = u64::MAX;
        for i in 0..MBARRIER_WAITERS {
            match Self::get::<WaiterState, A>(uut, self.state[i]) {
                WaiterState::Idle => {}
                WaiterState::Waiting => {
                    let deadline = Self::get::<Bits<32>, A>(uut, self.deadline[i]).to_u64() as u32;
                    left = left.min(deadline.wrapping_sub(now) as u64);
                }
                WaiterState::WokenByCompletion | WaiterState::WokenByTimeout => return None,
            }
        }
        Some(left)
    }

    /// Loads `now + owed` into the counter (its next settle propagates it).
    fn pay<const A: usize>(&self, uut: &mut MbarrierUnit<A>, owed: u64) {
        let now = Self::get::<Bits<32>, A>(uut, self.now).to_u64().wrapping_add(owed) & 0xFFFF_FFFF;
        // SAFETY: as `get`, through a pointer derived from the unique borrow of the unit.
        unsafe {
            (*((uut as *mut MbarrierUnit<A> as *mut u8).add(self.now) as *mut Signal<Out, Bits<32>>)).next = now.into();
        }
    }
}

/// The requests presented to the MbarrierUnit's three ports this cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MbarInputs {
    /// This CTA's warps.
    pub local: Option<MbarrierReq>,
    /// The async-copy path (cp.async.mbarrier.arrive's arrive-on, the local TMA engine's
    /// complete-tx).
    pub tma: Option<MbarrierReq>,
    /// Other CTAs and the async-store path (st.async / red.async complete-tx, remote arrives).
    pub cluster: Option<MbarrierReq>,
}

/// What the MbarrierUnit did in one cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct MbarOutputs {
    /// The local request was accepted.
    pub local_ready: bool,
    /// The tma request was accepted.
    pub tma_ready: bool,
    /// The cluster request was accepted.
    pub cluster_ready: bool,
    /// The bank write of the operation that responds (in stage 2 after this edge; stored at the
    /// next): (word index, new word, shadow valid bit).
    pub write: Option<(u32, u64, bool)>,
    /// The response after this edge.
    pub resp: MbarrierResp,
    /// The wake event after this edge.
    pub wake: MbarrierWake,
    /// The finding after this edge.
    pub fault: MbarrierFault,
}

impl MbarOutputs {
    /// The outputs with an invalid response, wake or finding at its default: the unit drives
    /// their other fields combinationally from whatever stage 2 and the waiter table hold, and
    /// the generated model does not settle them when none can be valid ([`MbarGen::cycle`]).
    fn valid_only(self) -> MbarOutputs {
        MbarOutputs {
            resp: if self.resp.valid { self.resp } else { MbarrierResp::default() },
            wake: if self.wake.valid { self.wake } else { MbarrierWake::default() },
            fault: if self.fault.valid { self.fault } else { MbarrierFault::default() },
            ..self
        }
    }
}

struct MbarInst<const A: usize> {
    uut: Box<MbarrierUnit<A>>,
    tap: Tap<A>,
    idle: IdleTap,
    /// Idle edges skipped since the last clocked one (paid into `now` at the next).
    owed: u64,
}

impl<const A: usize> MbarInst<A> {
    fn new(default_suspend_cycles: u32) -> Self {
        let mut uut = Box::new(MbarrierUnit::<A>::new(default_suspend_cycles));
        uut.connect_all();
        assert!(simulate(&mut *uut, SETTLE));
        let tap = Tap::find(&uut);
        let idle = IdleTap::find(&uut);
        let mut s = MbarInst { uut, tap, idle, owed: 0 };
        // The RAM read registers are defined after two edges.
        for _ in 0..2 {
            s.cycle(&MbarInputs::default());
        }
        s
    }

    fn cycle(&mut self, p: &MbarInputs) -> MbarOutputs {
        if self.owed > 0 {
            self.idle.pay(&mut self.uut, self.owed);
            self.owed = 0;
        }
        let u = &mut *self.uut;
        u.local_valid.next = p.local.is_some();
        u.local_req.next = p.local.unwrap_or_default();
        u.tma_valid.next = p.tma.is_some();
        u.tma_req.next = p.tma.unwrap_or_default();
        u.cluster_valid.next = p.cluster.is_some();
        u.cluster_req.next = p.cluster.unwrap_or_default();
        u.clock.next = false.into();
        assert!(simulate(u, SETTLE), "MbarrierUnit did not settle");
        let (local_ready, tma_ready, cluster_ready) = (u.local_ready.val(), u.tma_ready.val(), u.cluster_ready.val());
        u.clock.next = true.into();
        assert!(simulate(u, SETTLE), "MbarrierUnit did not settle");
        // stage 2's write, stored at the next edge: seen with its response (hdl exec.rs)
        let write = self.tap.read();
        let u = &*self.uut;
        MbarOutputs { local_ready, tma_ready, cluster_ready, write, resp: u.resp.val(), wake: u.wake.val(), fault: u.fault.val() }
    }
}

impl<const A: usize> MbarInst<A> {
    fn idle_edges_left(&self) -> Option<u64> {
        self.idle.idle_edges_left(&self.uut, self.owed)
    }
}


/// One size of the generated MbarrierUnit model (hopsync-hdl-fast), behind one interface.
trait GenMbar: Send {
    /// Sets the three request ports.
    fn set(&mut self, p: &MbarInputs);
    /// Settles the combinational logic.
    fn eval(&mut self);
    /// The clock edge.
    fn edge(&mut self);
    /// (local_ready, tma_ready, cluster_ready).
    fn readies(&self) -> (bool, bool, bool);
    /// (resp, wake, fault).
    fn outs(&self) -> (MbarrierResp, MbarrierWake, MbarrierFault);
    /// Every field of every signal.
    fn v(&self) -> &[u64];
    /// The same, to load a register between edges.
    fn v_mut(&mut self) -> &mut [u64];
    /// (signal path, bits, its fields (index, offset, width)).
    fn signals(&self) -> &'static [(&'static str, usize, &'static [(usize, usize, usize)])];
}

macro_rules! gen_mbar {
    ($t:ty) => {
        impl GenMbar for $t {
            fn set(&mut self, p: &MbarInputs) {
                self.set_local_valid(&p.local.is_some());
                self.set_local_req(&p.local.unwrap_or_default());
                self.set_tma_valid(&p.tma.is_some());
                self.set_tma_req(&p.tma.unwrap_or_default());
                self.set_cluster_valid(&p.cluster.is_some());
                self.set_cluster_req(&p.cluster.unwrap_or_default());
            }
            fn eval(&mut self) {
                <$t>::eval(self)
            }
            fn edge(&mut self) {
                <$t>::edge(self)
            }
            fn readies(&self) -> (bool, bool, bool) {
                (self.local_ready(), self.tma_ready(), self.cluster_ready())
            }
            fn outs(&self) -> (MbarrierResp, MbarrierWake, MbarrierFault) {
                (self.resp(), self.wake(), self.fault())
            }
            fn v(&self) -> &[u64] {
                &self.v
            }
            fn v_mut(&mut self) -> &mut [u64] {
                &mut self.v
            }
            fn signals(&self) -> &'static [(&'static str, usize, &'static [(usize, usize, usize)])] {
                <$t>::SIGNALS
            }
        }
    };
}
gen_mbar!(hopsync_hdl_fast::models::MbarrierUnitA9);
gen_mbar!(hopsync_hdl_fast::models::MbarrierUnitA12);
gen_mbar!(hopsync_hdl_fast::models::MbarrierUnitA15);

/// A signal of a generated model, found by the end of its path (as the rust-hdl [`Tap`] finds
/// its signals), checked for its width: its fields (index, offset, width).
fn gen_signal(m: &dyn GenMbar, suffix: &str, bits: usize) -> &'static [(usize, usize, usize)] {
    let hits: Vec<_> = m.signals().iter().filter(|(n, ..)| n.ends_with(suffix)).collect();
    assert!(hits.len() == 1, "generated MbarrierUnit: expected one `{suffix}`, found {}", hits.len());
    let (n, b, f) = hits[0];
    assert!(*b == bits, "generated MbarrierUnit: `{n}` is {b} bits, expected {bits}");
    f
}

/// The value of a signal (<= 64 bits) from its fields.
fn gen_value(v: &[u64], fields: &[(usize, usize, usize)]) -> u64 {
    fields.iter().fold(0, |x, (i, off, _)| x | v[*i] << off)
}

/// The generated model's signals the engine reads between edges: the bank's write port ([`Tap`])
/// and the idle fast-forward's registers ([`IdleTap`]), as field indices.
struct GenTap {
    we: usize,
    wa: usize,
    wd: &'static [(usize, usize, usize)],
    wv: usize,
    now: usize,
    s1_valid: usize,
    s2_valid: usize,
    cpl_valid: usize,
    ins_valid: usize,
    state: [usize; MBARRIER_WAITERS],
    deadline: [usize; MBARRIER_WAITERS],
}

impl GenTap {
    fn find(m: &dyn GenMbar, a: usize) -> GenTap {
        let one = |suffix: &str, bits: usize| gen_signal(m, suffix, bits)[0].0;
        GenTap {
            we: one("$exec$ram$write_enable", 1),
            wa: one("$exec$ram$write_address", a),
            wd: gen_signal(m, "$exec$ram$write_data", 64),
            wv: one("$exec$shadow$write_data", 1),
            now: one("$now$q", 32),
            s1_valid: one("$s1_valid$q", 1),
            s2_valid: one("$s2_valid$q", 1),
            cpl_valid: one("$cpl_valid$q", 1),
            ins_valid: one("$ins_valid$q", 1),
            state: std::array::from_fn(|i| one(&format!("$waiter_state${i}$q"), WaiterState::BITS)),
            deadline: std::array::from_fn(|i| one(&format!("$waiter_deadline${i}$q"), 32)),
        }
    }
}

/// One CTA's MbarrierUnit as its generated model: the same cycle contract, tap and idle
/// fast-forward as [`MbarInst`] (the same registers, read as fields).
struct MbarGen {
    m: Box<dyn GenMbar>,
    tap: GenTap,
    /// Idle edges skipped since the last clocked one (paid into `now` at the next).
    owed: u64,
    /// Words in the bank.
    words: u32,
    /// The requests the model's ports hold (set again only when they change: each `set` converts
    /// the three requests field by field).
    ports: MbarInputs,
    /// The combinational signals are settled for the registers and the ports as they are (the
    /// second `eval` of the last cycle ran and nothing changed since): `eval` is a pure function
    /// of both, so this cycle's first one would compute the same.
    settled: bool,
}

impl MbarGen {
    /// The model of a fresh rust-hdl `MbarrierUnit<A>` (its constants and RAM contents).
    fn new<const A: usize>(default_suspend_cycles: u32, from: fn(&MbarrierUnit<A>) -> Box<dyn GenMbar>) -> MbarGen {
        let mut uut = Box::new(MbarrierUnit::<A>::new(default_suspend_cycles));
        uut.connect_all();
        assert!(simulate(&mut *uut, SETTLE));
        let m = from(&uut);
        let tap = GenTap::find(&*m, A);
        let mut s = MbarGen { m, tap, owed: 0, words: 1 << A, ports: MbarInputs::default(), settled: false };
        s.m.set(&s.ports);
        // as MbarInst: the RAM read registers are defined after two edges
        for _ in 0..2 {
            s.cycle(&MbarInputs::default());
        }
        s
    }

    fn cycle(&mut self, p: &MbarInputs) -> MbarOutputs {
        if self.owed > 0 {
            let v = self.m.v_mut();
            v[self.tap.now] = (v[self.tap.now].wrapping_add(self.owed)) & 0xFFFF_FFFF;
            self.owed = 0;
            self.settled = false;
        }
        if *p != self.ports {
            self.ports = *p;
            self.m.set(p);
            self.settled = false;
        }
        if !self.settled {
            self.m.eval();
        }
        let (local_ready, tma_ready, cluster_ready) = self.m.readies();
        self.m.edge();
        self.settled = false;
        // The outputs after the edge are combinational from registers (stage 2, the waiter
        // table; hdl/src/mbarrier_unit): settled only when one can be valid, else all invalid
        // (a second `eval` settles the whole unit; the next cycle's settles everything anyway).
        let (v, t) = (self.m.v(), &self.tap);
        if v[t.s2_valid] == 0 && t.state.iter().all(|&i| v[i] == WaiterState::Idle as u64 || v[i] == WaiterState::Waiting as u64) {
            return MbarOutputs { local_ready, tma_ready, cluster_ready, ..Default::default() };
        }
        self.m.eval();
        self.settled = true;
        let v = self.m.v();
        let write = (v[t.we] != 0).then(|| (v[t.wa] as u32, gen_value(v, t.wd), v[t.wv] != 0));
        let (resp, wake, fault) = self.m.outs();
        MbarOutputs { local_ready, tma_ready, cluster_ready, write, resp, wake, fault }
    }

    /// As [`IdleTap::idle_edges_left`], on the model's fields.
    fn idle_edges_left(&self) -> Option<u64> {
        let (v, t) = (self.m.v(), &self.tap);
        if [t.s1_valid, t.s2_valid, t.cpl_valid, t.ins_valid].iter().any(|&r| v[r] != 0) {
            return None;
        }
        let now = v[t.now].wrapping_add(self.owed) as u32;
        let mut left = u64::MAX;
        for i in 0..MBARRIER_WAITERS {
            match v[t.state[i]] {
                x if x == WaiterState::Idle as u64 => {}
                x if x == WaiterState::Waiting as u64 => left = left.min((v[t.deadline[i]] as u32).wrapping_sub(now) as u64),
                _ => return None,
            }
        }
        Some(left)
    }
}

enum MbarAny {
    Gen(MbarGen),
    A9(MbarInst<9>),
    A12(MbarInst<12>),
    A15(MbarInst<15>),
    Other(Box<dyn MbarSim>),
}

/// One CTA's MbarrierUnit.
pub struct MbarUnit {
    inner: MbarAny,
    /// Clock edges simulated (waveforms mark the cycles the engine clocked the unit).
    edges: u64,
}

impl MbarUnit {
    /// A unit whose bank covers `smem_bytes` of shared memory (at most 2^15 words, 256 KiB),
    /// with the try_wait time limit `default_suspend_cycles`.
    pub fn new(smem_bytes: u32, default_suspend_cycles: u32) -> MbarUnit {
        let inner = match Self::bank_words_log2(smem_bytes) {
            9 => MbarAny::A9(MbarInst::new(default_suspend_cycles)),
            12 => MbarAny::A12(MbarInst::new(default_suspend_cycles)),
            _ => MbarAny::A15(MbarInst::new(default_suspend_cycles)),
        };
        MbarUnit { inner, edges: 0 }
    }

    /// log2 of the words of the bank that covers `smem_bytes`: 9, 12 or 15.
    pub fn bank_words_log2(smem_bytes: u32) -> u32 {
        match (smem_bytes as u64).div_ceil(8).max(1) {
            w if w <= 1 << 9 => 9,
            w if w <= 1 << 12 => 12,
            _ => 15,
        }
    }

    /// The same unit as its generated straight-line model (hopsync-hdl-fast).
    pub fn generated(smem_bytes: u32, default_suspend_cycles: u32) -> MbarUnit {
        use hopsync_hdl_fast::models::{MbarrierUnitA12, MbarrierUnitA15, MbarrierUnitA9};
        // the model is generated from this very HDL at build time; a mismatch is a build bug
        const STALE: &str = "the generated MbarrierUnit model matches hopsync-hdl (hdl-fast is rebuilt with it)";
        let g = match Self::bank_words_log2(smem_bytes) {
            9 => MbarGen::new::<9>(default_suspend_cycles, |u| MbarrierUnitA9::from_block(u).expect(STALE)),
            12 => MbarGen::new::<12>(default_suspend_cycles, |u| MbarrierUnitA12::from_block(u).expect(STALE)),
            _ => MbarGen::new::<15>(default_suspend_cycles, |u| MbarrierUnitA15::from_block(u).expect(STALE)),
        };
        MbarUnit { inner: MbarAny::Gen(g), edges: 0 }
    }

    /// [`MbarUnit::new`] on `backend`'s simulator.
    pub fn with_backend(backend: &Backend, smem_bytes: u32, default_suspend_cycles: u32) -> MbarUnit {
        match &backend.0 {
            None if backend.1 == UnitSim::Generated => MbarUnit::generated(smem_bytes, default_suspend_cycles),
            None => MbarUnit::new(smem_bytes, default_suspend_cycles),
            Some(b) => MbarUnit { inner: MbarAny::Other(b.mbarrier(smem_bytes, default_suspend_cycles)), edges: 0 },
        }
    }

    /// Words in the bank.
    pub fn words(&self) -> u32 {
        match &self.inner {
            MbarAny::Gen(u) => u.words,
            MbarAny::A9(_) => 1 << 9,
            MbarAny::A12(_) => 1 << 12,
            MbarAny::A15(_) => 1 << 15,
            MbarAny::Other(u) => u.words(),
        }
    }

    /// Clock edges simulated so far.
    pub fn edges(&self) -> u64 {
        self.edges
    }

    /// Edges with no request that provably change nothing but the unit's cycle counter, from
    /// the next one on ([`IdleTap`]): None when the next one may change more (or the backend
    /// cannot tell), u64::MAX when no waiter has a deadline.
    pub fn idle_edges_left(&self) -> Option<u64> {
        match &self.inner {
            MbarAny::Gen(u) => u.idle_edges_left(),
            MbarAny::A9(u) => u.idle_edges_left(),
            MbarAny::A12(u) => u.idle_edges_left(),
            MbarAny::A15(u) => u.idle_edges_left(),
            MbarAny::Other(_) => None,
        }
    }

    /// Skips `k` edges with no request (at most [`MbarUnit::idle_edges_left`]); they are paid
    /// into the unit's cycle counter at the next [`MbarUnit::cycle`].
    pub fn skip_idle_edges(&mut self, k: u64) {
        match &mut self.inner {
            MbarAny::Gen(u) => u.owed += k,
            MbarAny::A9(u) => u.owed += k,
            MbarAny::A12(u) => u.owed += k,
            MbarAny::A15(u) => u.owed += k,
            // (the engine asks idle_edges_left first, None here: clocking the edges is exact)
            MbarAny::Other(u) => (0..k).for_each(|_| {
                u.cycle(&MbarInputs::default());
            }),
        }
    }

    /// Skips the coming edge when it has no request and provably changes nothing but the
    /// cycle counter; false: clock it.
    pub fn skip_idle_edge(&mut self) -> bool {
        let skip = self.idle_edges_left().is_some_and(|k| k > 0);
        if skip {
            self.skip_idle_edges(1);
        }
        skip
    }

    /// One clock cycle.
    pub fn cycle(&mut self, p: &MbarInputs) -> MbarOutputs {
        self.edges += 1;
        let o = match &mut self.inner {
            MbarAny::Gen(u) => u.cycle(p),
            MbarAny::A9(u) => u.cycle(p),
            MbarAny::A12(u) => u.cycle(p),
            MbarAny::A15(u) => u.cycle(p),
            MbarAny::Other(u) => u.cycle(p),
        };
        o.valid_only()
    }

    /// Visits every signal of the unit (rust-hdl's probe; a VCD writer hooks in here). Another
    /// backend's signals are not rust-hdl signals: nothing is visited (Verilator writes its own
    /// VCD).
    pub fn accept(&self, name: &str, probe: &mut dyn Probe) {
        match &self.inner {
            // (the generated model's fields are not rust-hdl signals: `--waves` takes rust-hdl)
            MbarAny::Gen(_) => {}
            MbarAny::A9(u) => u.uut.accept(name, probe),
            MbarAny::A12(u) => u.uut.accept(name, probe),
            MbarAny::A15(u) => u.uut.accept(name, probe),
            MbarAny::Other(_) => {}
        }
    }
}

/// The inputs of a NamedBarrierUnit this cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct NamedInputs {
    /// A warp's barrier instruction.
    pub req: Option<NamedBarrierReq>,
    /// A warp exited.
    pub exit: Option<u32>,
    /// The CTA starts with these warps.
    pub launch: Option<u32>,
}

/// What a NamedBarrierUnit did in one cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct NamedOutputs {
    /// The request was accepted.
    pub ready: bool,
    /// Registered completion.
    pub done: NamedBarrierRelease,
    /// Registered finding.
    pub fault: NamedBarrierFault,
}

/// The inputs of a ClusterBarrierUnit this cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterInputs {
    /// A warp's arrive / wait.
    pub req: Option<ClusterBarrierReq>,
    /// A warp of a CTA (rank, warp) exited.
    pub exit: Option<(u32, u32)>,
    /// A CTA (rank, warps) starts.
    pub launch: Option<(u32, u32)>,
}

/// What a ClusterBarrierUnit did in one cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterOutputs {
    /// The request was accepted.
    pub ready: bool,
    /// Registered answer to a wait.
    pub resp: ClusterBarrierResp,
    /// Registered phase completion.
    pub done: ClusterBarrierDone,
    /// Registered finding.
    pub fault: ClusterBarrierFault,
}

/// One simulator of a single-port unit's RTL (NamedBarrierUnit, ClusterBarrierUnit) with the
/// engine's cycle contract: inputs set and the clock low settled (the combinational `ready`),
/// then the edge and its settle (the registered outputs).
pub trait TwoPhase {
    /// The inputs of a cycle.
    type In;
    /// What the unit did in a cycle.
    type Out;
    /// Sets the inputs and settles with the clock low.
    fn low(&mut self, p: &Self::In);
    /// The request was accepted (after `low`).
    fn ready(&self) -> bool;
    /// The clock edge and its settle.
    fn high(&mut self);
    /// The outputs (after `high`), with the `ready` read after `low`.
    fn outs(&self, ready: bool) -> Self::Out;

    /// One clock cycle.
    fn cycle(&mut self, p: &Self::In) -> Self::Out {
        self.low(p);
        let ready = self.ready();
        self.high();
        self.outs(ready)
    }
}

/// Drives a rust-hdl unit's clock to `level` and settles it.
fn settle_hdl<B: Block>(u: &mut B, clock: fn(&mut B) -> &mut Signal<In, Clock>, level: bool) {
    clock(u).next = level.into();
    assert!(simulate(u, SETTLE), "{} did not settle", std::any::type_name::<B>());
}

/// [`TwoPhase`] for a single-port unit's rust-hdl block and its generated model (the model has
/// the block's ports): `ports` maps the cycle's inputs to `req_valid`, `req`, `exit`, `launch`;
/// the outputs are `ready` (`req_ready` with the clock low) and the named registered ports.
macro_rules! single_port_unit {
    ($hdl:ty, $model:ty, $in:ty, $ports:ident, $out:ident { $($o:ident),* }) => {
        impl TwoPhase for $hdl {
            type In = $in;
            type Out = $out;
            fn low(&mut self, p: &$in) {
                (self.req_valid.next, self.req.next, self.exit.next, self.launch.next) = $ports(p);
                settle_hdl(self, |u| &mut u.clock, false);
            }
            fn ready(&self) -> bool {
                self.req_ready.val()
            }
            fn high(&mut self) {
                settle_hdl(self, |u| &mut u.clock, true);
            }
            fn outs(&self, ready: bool) -> $out {
                $out { ready, $($o: self.$o.val()),* }
            }
        }

        impl TwoPhase for $model {
            type In = $in;
            type Out = $out;
            fn low(&mut self, p: &$in) {
                let (valid, req, exit, launch) = $ports(p);
                self.set_req_valid(&valid);
                self.set_req(&req);
                self.set_exit(&exit);
                self.set_launch(&launch);
                self.eval();
            }
            fn ready(&self) -> bool {
                self.req_ready()
            }
            fn high(&mut self) {
                self.edge();
                self.eval();
            }
            fn outs(&self, ready: bool) -> $out {
                $out { ready, $($o: self.$o()),* }
            }
        }
    };
}

/// The port values of a NamedBarrierUnit cycle (req_valid, req, exit, launch).
fn named_ports(p: &NamedInputs) -> (bool, NamedBarrierReq, WarpExit, NamedBarrierLaunch) {
    let exit = WarpExit { valid: p.exit.is_some(), warp: (p.exit.unwrap_or(0) as u64).into() };
    let launch = NamedBarrierLaunch { valid: p.launch.is_some(), warps: (p.launch.unwrap_or(0) as u64).into() };
    (p.req.is_some(), p.req.unwrap_or_default(), exit, launch)
}

single_port_unit!(NamedBarrierUnit, NamedBarrierUnitModel, NamedInputs, named_ports, NamedOutputs { done, fault });

/// The port values of a ClusterBarrierUnit cycle (req_valid, req, exit, launch).
fn cluster_ports(p: &ClusterInputs) -> (bool, ClusterBarrierReq, ClusterWarpExit, ClusterLaunch) {
    let (xc, xw) = p.exit.unwrap_or((0, 0));
    let exit = ClusterWarpExit { valid: p.exit.is_some(), cta: (xc as u64).into(), warp: (xw as u64).into() };
    let (lc, lw) = p.launch.unwrap_or((0, 0));
    let launch = ClusterLaunch { valid: p.launch.is_some(), cta: (lc as u64).into(), warps: (lw as u64).into() };
    (p.req.is_some(), p.req.unwrap_or_default(), exit, launch)
}

single_port_unit!(ClusterBarrierUnit, ClusterBarrierUnitModel, ClusterInputs, cluster_ports, ClusterOutputs { resp, done, fault });

/// Another backend's simulator of a single-port unit (`dyn NamedSim`, `dyn ClusterSim`).
pub trait OtherSim {
    /// The inputs of a cycle.
    type In;
    /// What the unit did in a cycle.
    type Out;
    /// `backend`'s simulator of the unit.
    fn make(backend: &dyn UnitBackend) -> Box<Self>;
    /// One clock cycle.
    fn step(&mut self, p: &Self::In) -> Self::Out;
}

impl OtherSim for dyn NamedSim {
    type In = NamedInputs;
    type Out = NamedOutputs;
    fn make(backend: &dyn UnitBackend) -> Box<Self> {
        backend.named()
    }
    fn step(&mut self, p: &NamedInputs) -> NamedOutputs {
        self.cycle(p)
    }
}

impl OtherSim for dyn ClusterSim {
    type In = ClusterInputs;
    type Out = ClusterOutputs;
    fn make(backend: &dyn UnitBackend) -> Box<Self> {
        backend.cluster()
    }
    fn step(&mut self, p: &ClusterInputs) -> ClusterOutputs {
        self.cycle(p)
    }
}

/// The simulator of a single-port unit: rust-hdl's `simulate` of block `H`, its generated model
/// `G`, or another backend's `O`.
enum SingleSim<H, G, O: ?Sized> {
    RustHdl(Box<H>),
    Generated(Box<G>),
    Other(Box<O>),
}

/// One single-port unit ([`NamedUnit`], [`ClusterUnit`]) on one of its simulators.
pub struct SingleUnit<H, G, O: ?Sized> {
    sim: SingleSim<H, G, O>,
    /// Clock edges simulated.
    edges: u64,
}

/// One CTA's NamedBarrierUnit.
pub type NamedUnit = SingleUnit<NamedBarrierUnit, NamedBarrierUnitModel, dyn NamedSim>;

/// One cluster's ClusterBarrierUnit.
pub type ClusterUnit = SingleUnit<ClusterBarrierUnit, ClusterBarrierUnitModel, dyn ClusterSim>;

impl<I, O, H, G, S> SingleUnit<H, G, S>
where
    H: Block + Default + TwoPhase<In = I, Out = O>,
    G: Model + TwoPhase<In = I, Out = O>,
    S: OtherSim<In = I, Out = O> + ?Sized,
{
    /// A fresh unit on rust-hdl's simulation.
    pub fn new() -> Self {
        Self::with_backend(&Backend(None, UnitSim::RustHdl))
    }

    /// A fresh unit as its generated straight-line model (hopsync-hdl-fast).
    pub fn generated() -> Self {
        Self::with_backend(&Backend(None, UnitSim::Generated))
    }

    /// A fresh unit on `backend`'s simulator (`accept` then visits nothing unless it is
    /// rust-hdl's).
    pub fn with_backend(backend: &Backend) -> Self {
        let sim = match &backend.0 {
            Some(b) => SingleSim::Other(S::make(&**b)),
            None => {
                let mut uut = Box::new(H::default());
                uut.connect_all();
                assert!(simulate(&mut *uut, SETTLE));
                match backend.1 {
                    UnitSim::RustHdl => SingleSim::RustHdl(uut),
                    // generated from this very HDL at build time: a mismatch is a build bug
                    UnitSim::Generated => SingleSim::Generated(G::from_block(&*uut).expect("the generated model matches hopsync-hdl (hdl-fast is rebuilt with it)")),
                }
            }
        };
        SingleUnit { sim, edges: 0 }
    }

    /// Clock edges simulated so far.
    pub fn edges(&self) -> u64 {
        self.edges
    }

    /// One clock cycle.
    pub fn cycle(&mut self, p: &I) -> O {
        self.edges += 1;
        match &mut self.sim {
            SingleSim::RustHdl(u) => u.cycle(p),
            SingleSim::Generated(m) => m.cycle(p),
            SingleSim::Other(s) => s.step(p),
        }
    }

    /// Visits every signal of the unit (rust-hdl's probe; nothing on the generated model or
    /// another backend: `--waves` takes rust-hdl).
    pub fn accept(&self, name: &str, probe: &mut dyn Probe) {
        if let SingleSim::RustHdl(u) = &self.sim {
            u.accept(name, probe)
        }
    }
}

impl<I, O, H, G, S> Default for SingleUnit<H, G, S>
where
    H: Block + Default + TwoPhase<In = I, Out = O>,
    G: Model + TwoPhase<In = I, Out = O>,
    S: OtherSim<In = I, Out = O> + ?Sized,
{
    fn default() -> Self {
        Self::new()
    }
}

/// The inputs of a TmaEngine this cycle.
#[derive(Debug, Clone, Copy, Default)]
pub struct TmaInputs {
    /// This SM's CTA rank in its cluster.
    pub cta_rank: u32,
    /// A command with its tensor-map image (zero for bulk commands).
    pub cmd: Option<(TmaCmd, TmaDescImage)>,
    /// The global-memory port accepts a request.
    pub gmem_req_ready: bool,
    /// A read response or write acknowledgement.
    pub gmem_resp: Option<TmaGmemResp>,
    /// Shared memory accepts a write.
    pub smem_wr_ready: bool,
    /// Shared memory accepts a read.
    pub smem_rd_ready: bool,
    /// The data of the read accepted last cycle: its 128-byte line (the wanted chunks).
    pub smem_rd_data: TmaData128,
    /// The mbarrier path accepts a complete-tx.
    pub mbar_ready: bool,
    /// wait_group N.
    pub wait_n: u8,
    /// wait_group.read.
    pub wait_read: bool,
    /// The waiting thread (CTA-local `warp * 32 + lane`).
    pub wait_thread: u32,
}

/// What a TmaEngine did in one cycle (combinational outputs sampled before the edge; `fault`,
/// `idle` and `groups_pending` after it).
#[derive(Debug, Clone, Copy, Default)]
pub struct TmaOutputs {
    /// The command was accepted.
    pub cmd_ready: bool,
    /// A global request (taken when `gmem_req_ready` was set).
    pub gmem_req: Option<TmaGmemReq>,
    /// A shared-memory write (taken when `smem_wr_ready` was set).
    pub smem_wr: Option<TmaSmemWrite>,
    /// A shared-memory line read: the first wanted chunk's address and the line's chunk enables
    /// (taken when `smem_rd_ready` was set).
    pub smem_rd: Option<(u32, u8)>,
    /// A complete-tx: (request, destination CTA rank, remote) (taken when `mbar_ready` was set).
    pub mbar: Option<(MbarrierReq, u32, bool)>,
    /// wait_group{.read} wait_n holds.
    pub wait_done: bool,
    /// Committed bulk groups not complete.
    pub groups_pending: u32,
    /// A store op's shared-memory reads are done (ops in command order).
    pub store_read_done: bool,
    /// A store op's writes are all issued (ops in command order).
    pub store_writes_issued: bool,
    /// A refused command (registered).
    pub fault: TmaFault,
    /// Nothing in flight.
    pub idle: bool,
}

/// The TmaEngine parameters of configuration `cfg`: (global reads in flight: `[tma]
/// read_tags`, bytes of requests per cycle: `[global] bytes_per_cycle`, at most the engine's
/// 128-byte line, read request size: `[tma] request_bytes`).
pub fn tma_engine_params(cfg: &crate::SmConfig) -> (u32, u32, u32) {
    (cfg.tma.read_tags, (cfg.global.bytes_per_cycle as u32).clamp(1, 128), cfg.tma.request_bytes)
}

/// The rust-hdl simulation of a TmaEngine.
struct TmaHdl {
    uut: Box<TmaEngine>,
}

impl TmaSim for TmaHdl {
    fn wait_query(&mut self, thread: u32, n: u8, read: bool) -> (bool, u32) {
        let u = &mut *self.uut;
        u.wait_n.next = (n as u64).into();
        u.wait_read.next = read;
        u.wait_thread.next = (thread as u64).into();
        assert!(simulate(u, 400), "TmaEngine did not settle");
        (u.wait_done.val(), u.groups_pending.val().to_u64() as u32)
    }

    fn cycle(&mut self, p: &TmaInputs) -> TmaOutputs {
        let u = &mut *self.uut;
        u.cta_rank.next = (p.cta_rank as u64).into();
        let (cm, cd) = p.cmd.unwrap_or_default();
        u.cmd.next = cm;
        u.cmd_desc.next = cd;
        u.cmd_valid.next = p.cmd.is_some();
        u.gmem_req_ready.next = p.gmem_req_ready;
        u.gmem_resp.next = p.gmem_resp.unwrap_or_default();
        u.gmem_resp_valid.next = p.gmem_resp.is_some();
        u.smem_wr_ready.next = p.smem_wr_ready;
        u.smem_rd_ready.next = p.smem_rd_ready;
        u.smem_rd_data.next = p.smem_rd_data;
        u.mbar_ready.next = p.mbar_ready;
        u.wait_n.next = (p.wait_n as u64).into();
        u.wait_read.next = p.wait_read;
        u.wait_thread.next = (p.wait_thread as u64).into();
        u.clock.next = false.into();
        assert!(simulate(u, 400), "TmaEngine did not settle");
        let mut o = TmaOutputs {
            cmd_ready: u.cmd_ready.val(),
            gmem_req: u.gmem_req_valid.val().then(|| u.gmem_req.val()),
            smem_wr: u.smem_wr_valid.val().then(|| u.smem_wr.val()),
            smem_rd: u.smem_rd_valid.val().then(|| (u.smem_rd_addr.val().to_u64() as u32, u.smem_rd_cen.val().to_u64() as u8)),
            mbar: u.mbar_valid.val().then(|| (u.mbar_req.val(), u.mbar_cta.val().to_u64() as u32, u.mbar_remote.val())),
            wait_done: u.wait_done.val(),
            store_read_done: u.store_read_done.val(),
            store_writes_issued: u.store_writes_issued.val(),
            ..Default::default()
        };
        u.clock.next = true.into();
        assert!(simulate(u, 400), "TmaEngine did not settle");
        o.fault = u.fault.val();
        o.idle = u.idle.val();
        o.groups_pending = u.groups_pending.val().to_u64() as u32;
        o
    }
}

/// The generated model of a TmaEngine (hopsync-hdl-fast `TmaEngineModel`), clocked as
/// [`TmaHdl`] clocks rust-hdl's: inputs set, `eval` (clock low), the combinational outputs,
/// `edge`, `eval_outputs` (what `fault`, `idle` and `groups_pending` depend on), the
/// registered ones.
struct TmaGen {
    m: Box<TmaEngineModel>,
}

impl TmaGen {
    /// Wait-port inputs (the wait port is combinational).
    fn set_wait(&mut self, thread: u32, n: u8, read: bool) {
        self.m.set_wait_n(&(n as u64).into());
        self.m.set_wait_read(&read);
        self.m.set_wait_thread(&(thread as u64).into());
    }
}

impl TmaSim for TmaGen {
    fn wait_query(&mut self, thread: u32, n: u8, read: bool) -> (bool, u32) {
        self.set_wait(thread, n, read);
        self.m.eval();
        (self.m.wait_done(), self.m.groups_pending().to_u64() as u32)
    }

    fn cycle(&mut self, p: &TmaInputs) -> TmaOutputs {
        let m = &mut *self.m;
        m.set_cta_rank(&(p.cta_rank as u64).into());
        let (cm, cd) = p.cmd.unwrap_or_default();
        m.set_cmd(&cm);
        m.set_cmd_desc(&cd);
        m.set_cmd_valid(&p.cmd.is_some());
        m.set_gmem_req_ready(&p.gmem_req_ready);
        m.set_gmem_resp(&p.gmem_resp.unwrap_or_default());
        m.set_gmem_resp_valid(&p.gmem_resp.is_some());
        m.set_smem_wr_ready(&p.smem_wr_ready);
        m.set_smem_rd_ready(&p.smem_rd_ready);
        m.set_smem_rd_data(&p.smem_rd_data);
        m.set_mbar_ready(&p.mbar_ready);
        self.set_wait(p.wait_thread, p.wait_n, p.wait_read);
        let m = &mut *self.m;
        m.eval();
        let mut o = TmaOutputs {
            cmd_ready: m.cmd_ready(),
            gmem_req: m.gmem_req_valid().then(|| m.gmem_req()),
            smem_wr: m.smem_wr_valid().then(|| m.smem_wr()),
            smem_rd: m.smem_rd_valid().then(|| (m.smem_rd_addr().to_u64() as u32, m.smem_rd_cen().to_u64() as u8)),
            mbar: m.mbar_valid().then(|| (m.mbar_req(), m.mbar_cta().to_u64() as u32, m.mbar_remote())),
            wait_done: m.wait_done(),
            store_read_done: m.store_read_done(),
            store_writes_issued: m.store_writes_issued(),
            ..Default::default()
        };
        m.edge();
        // the registered outputs' cone only (the next `eval` settles everything again)
        m.eval_outputs();
        o.fault = m.fault();
        o.idle = m.idle();
        o.groups_pending = m.groups_pending().to_u64() as u32;
        o
    }
}

enum TmaAny {
    Hdl(TmaHdl),
    Gen(TmaGen),
    Other(Box<dyn TmaSim>),
}

/// One SM's TmaEngine.
pub struct TmaUnit {
    inner: TmaAny,
    /// Clock edges simulated.
    edges: u64,
}

impl TmaUnit {
    /// An engine with at most `max_outstanding` (1..=256) global requests in flight,
    /// `bytes_per_cycle` (1..=128) bytes per cycle of requests and reads of `request_bytes`
    /// (32, 64 or 128).
    pub fn new(max_outstanding: u32, bytes_per_cycle: u32, request_bytes: u32) -> TmaUnit {
        Self::on(UnitSim::RustHdl, max_outstanding, bytes_per_cycle, request_bytes)
    }

    /// [`TmaUnit::new`] simulated by `sim` (the generated model starts from the settled
    /// rust-hdl instance).
    pub fn on(sim: UnitSim, max_outstanding: u32, bytes_per_cycle: u32, request_bytes: u32) -> TmaUnit {
        let mut uut = Box::new(TmaEngine::new(max_outstanding, bytes_per_cycle, request_bytes));
        uut.connect_all();
        assert!(simulate(&mut *uut, 400));
        let inner = match sim {
            UnitSim::RustHdl => TmaAny::Hdl(TmaHdl { uut }),
            UnitSim::Generated => TmaAny::Gen(TmaGen { m: TmaEngineModel::from_block(&*uut).expect("the generated model matches hopsync-hdl (hdl-fast is rebuilt with it)") }),
        };
        let mut t = TmaUnit { inner, edges: 0 };
        // Registers are defined after two edges (as the unit's own testbench warms up).
        for _ in 0..2 {
            t.cycle(&TmaInputs::default());
        }
        t.edges = 0;
        t
    }

    /// [`TmaUnit::new`] on `backend`'s simulator (`accept` then visits nothing).
    pub fn with_backend(backend: &Backend, max_outstanding: u32, bytes_per_cycle: u32, request_bytes: u32) -> TmaUnit {
        match &backend.0 {
            None => TmaUnit::on(backend.1, max_outstanding, bytes_per_cycle, request_bytes),
            Some(b) => TmaUnit { inner: TmaAny::Other(b.tma(max_outstanding, bytes_per_cycle, request_bytes)), edges: 0 },
        }
    }

    /// Clock edges simulated so far (the two warm-up edges of [`TmaUnit::new`] not counted).
    pub fn edges(&self) -> u64 {
        self.edges
    }

    /// Visits every signal of the unit (nothing on the generated model or another backend).
    pub fn accept(&self, name: &str, probe: &mut dyn Probe) {
        if let TmaAny::Hdl(h) = &self.inner {
            h.uut.accept(name, probe)
        }
    }
}

impl TmaSim for TmaUnit {
    fn cycle(&mut self, p: &TmaInputs) -> TmaOutputs {
        self.edges += 1;
        match &mut self.inner {
            TmaAny::Hdl(u) => u.cycle(p),
            TmaAny::Gen(u) => u.cycle(p),
            TmaAny::Other(u) => u.cycle(p),
        }
    }

    fn wait_query(&mut self, thread: u32, n: u8, read: bool) -> (bool, u32) {
        match &mut self.inner {
            TmaAny::Hdl(u) => u.wait_query(thread, n, read),
            TmaAny::Gen(u) => u.wait_query(thread, n, read),
            TmaAny::Other(u) => u.wait_query(thread, n, read),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopsync_hdl::mbarrier_unit::MbarrierOp;
    use std::collections::VecDeque;

    /// A unit clocked every cycle and one clocked as the engine clocks it (an edge with no
    /// request skipped when `skip_idle_edge` allows, whole idle gaps skipped up to
    /// `idle_edges_left`), on random try_wait suspensions with short and long suspend-time
    /// hints, arrivals that complete phases and idle gaps: equal outputs on every clocked edge,
    /// nothing on every skipped one, and the skips must happen.
    #[test]
    fn idle_fast_forward_matches_clocking_every_edge() {
        fast_forward_against_every_edge(MbarUnit::new(64, 300));
    }

    /// The generated model (hopsync-hdl-fast) with the idle fast-forward against rust-hdl's
    /// simulation clocked every edge: every output of every clocked edge equal.
    #[test]
    fn generated_model_matches_rust_hdl_clocked_every_edge() {
        fast_forward_against_every_edge(MbarUnit::generated(64, 300));
    }

    /// `ff` clocked as the engine clocks it against rust-hdl's unit clocked every edge (see
    /// `idle_fast_forward_matches_clocking_every_edge`).
    fn fast_forward_against_every_edge(mut ff: MbarUnit) {
        let mut every = MbarUnit::new(64, 300);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let idle_out = |o: &MbarOutputs| !o.local_ready && !o.resp.valid && !o.wake.valid && !o.fault.valid && o.write.is_none();
        let req = |op: MbarrierOp, word: u64, warp: u64| MbarrierReq { op, word: word.into(), warp: warp.into(), ..Default::default() };
        // four mbarriers of count 2
        let mut script: VecDeque<MbarrierReq> = (0..4).map(|w| MbarrierReq { count: 2u64.into(), ..req(MbarrierOp::Init, w, 0) }).collect();
        let (mut busy_until, mut skipped, mut gap) = (0u64, 0u64, 0u64);
        let mut t = 0u64;
        while t < 20_000 {
            t += 1;
            if script.is_empty() && gap == 0 {
                match rnd(4) {
                    0 => gap = rnd(200),
                    1 => script.push_back(req(MbarrierOp::Arrive, rnd(4), rnd(32))),
                    _ => {
                        let mut r = req(MbarrierOp::TryWaitParity, rnd(4), rnd(32));
                        r.phase_parity = rnd(2) == 1;
                        if rnd(2) == 1 {
                            r.suspend_time_hint = rnd(120).into();
                            r.has_suspend_time_hint = true;
                        }
                        script.push_back(r);
                    }
                }
            }
            let local = if gap > 0 { None } else { script.front().copied() };
            let p = MbarInputs { local, ..Default::default() };
            let o = every.cycle(&p);
            if local.is_none() && t >= busy_until {
                if gap > 1 && rnd(3) == 0 {
                    // a whole gap at once, as the engine's idle skip does
                    if let Some(left) = ff.idle_edges_left().filter(|&l| l > 1) {
                        // edges t..=t+k, k + 1 <= left of them
                        let k = (left - 1).min(gap - 1);
                        ff.skip_idle_edges(k + 1);
                        skipped += k + 1;
                        assert!(idle_out(&o), "cycle {t}: skipped edge {o:?}");
                        for _ in 0..k {
                            t += 1;
                            let o = every.cycle(&p);
                            assert!(idle_out(&o), "cycle {t}: skipped edge {o:?}");
                        }
                        gap -= k + 1;
                        continue;
                    }
                }
                if ff.skip_idle_edge() {
                    skipped += 1;
                    assert!(idle_out(&o), "cycle {t}: skipped edge {o:?}");
                    gap = gap.saturating_sub(1);
                    continue;
                }
            }
            let f = ff.cycle(&p);
            assert_eq!(format!("{o:?}"), format!("{f:?}"), "cycle {t}");
            if local.is_some() || o.local_ready {
                busy_until = t + 5;
            }
            if o.local_ready {
                script.pop_front();
            }
            gap = gap.saturating_sub(1);
        }
        assert!(skipped > 1000, "only {skipped} edges skipped");
    }

    #[test]
    fn the_tap_sees_the_word_an_init_writes() {
        let mut u = MbarUnit::new(64, 100);
        let req = MbarrierReq { op: MbarrierOp::Init, word: 3u64.into(), count: 5u64.into(), ..Default::default() };
        let o = u.cycle(&MbarInputs { local: Some(req), ..Default::default() });
        assert!(o.local_ready);
        let o = u.cycle(&MbarInputs::default());
        let (w, word, valid) = o.write.expect("stage 1 writes the word");
        assert_eq!(w, 3);
        assert!(valid);
        assert_ne!(word, 0);
        assert!(o.resp.valid);
        assert!(!o.fault.valid);
    }
}
