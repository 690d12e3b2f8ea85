//! Waveforms of the RTL engine: `hopsync run --engine rtl --waves FILE.vcd` and
//! `hopsync cosim --waves FILE.vcd` write a VCD (the `vcd` crate) and, next to it, a GTKWave save
//! file `FILE.gtkw` with one group per unit and the most useful signals preselected, so that
//! `gtkwave FILE.vcd FILE.gtkw` opens ready to read.
//!
//! VCD scopes (time = cycle x the clock period of `sim/configs/sm90.toml`, timescale 1 ps):
//!
//! ```text
//! hopsync                      cycle
//!   cluster<k>
//!     cluster_barrier          clocked + every port, register and temporary of ClusterBarrierUnit
//!     cta<i>                   (i = linear CTA id)
//!       mbarrier               clocked + every signal of MbarrierUnit
//!       named_barrier          clocked + every signal of NamedBarrierUnit
//!       smem_port              busy, backlog (cycles the 32-bank shared-memory port is booked ahead)
//!       global_port            busy, backlog (global-memory pipe)
//!       dsmem_port             busy, backlog (DSMEM network port)
//!       warp<w>                pc, instr, state, stall, live
//! ```
//!
//! Unit signals come from rust-hdl's probe visitor (`Block::accept`): a struct port becomes one
//! variable per field named `port$field` (rust-hdl's own convention), an enum (opcodes, finding
//! kinds) a string variable holding the variant name. `clocked` is 1 in the cycles in which the
//! engine clocked the unit (it skips the edges of a unit with no work; its signals then hold).
//! Warp strings: `instr` is the instruction at `pc` as the printer writes it, `state` a
//! [`WarpActivity`](crate::probe::WarpActivity) name, `stall` a [`Stall`](crate::probe::Stall) name.
//! String values escape blanks as `\x20`, which GTKWave shows as blanks.
//!
//! Values are written when they change; the probe sees every cycle (the engine does not skip idle
//! cycles while a probe is attached) and costs nothing when none is attached.

use crate::config::SmConfig;
use crate::engine::Engine;
use crate::probe::{Probe, Snapshot};
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::RunReport;
use hopsync_firmware::{printer, Program};
use rust_hdl::prelude::{Atom, Block, VCDValue};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use vcd::{IdCode, TimescaleUnit, Value, VarType};

/// Warps per CTA that the save file preselects (the rest are in the VCD's tree).
pub const GTKW_WARPS: usize = 8;
/// CTAs whose units and warps the save file preselects.
pub const GTKW_CTAS: usize = 4;
/// Time units GTKWave shows across the wave pane of a 1600-pixel-wide window at zoom 0: the pane
/// spans `GTKW_SPAN_AT_ZOOM_0 * 2^-zoom` (measured with gtkwave 3.3.118 and its Tcl
/// `getWindowEndTime` at zooms -7..-16).
const GTKW_SPAN_AT_ZOOM_0: f64 = 4.7;

/// A GTKWave trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Hexadecimal.
    Hex,
    /// Decimal.
    Dec,
    /// Binary (1-bit signals and strings).
    Bin,
}

impl Format {
    /// The flags line of a `.gtkw` trace (GTKWave's TR_* bits, right-justified).
    fn flags(self) -> &'static str {
        match self {
            Format::Hex => "@22",
            Format::Dec => "@24",
            Format::Bin => "@28",
        }
    }
}

/// One variable of the VCD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// Dotted scope path and name (`hopsync.cluster0.cta0.warp0.pc`).
    pub path: String,
    /// Bits (strings: 1).
    pub width: u32,
    /// A string variable.
    pub string: bool,
}

impl Signal {
    /// The name GTKWave gives it (vectors get `[msb:0]`).
    pub fn gtkwave_name(&self) -> String {
        if self.width > 1 && !self.string {
            format!("{}[{}:0]", self.path, self.width - 1)
        } else {
            self.path.clone()
        }
    }
}

/// A group of the save file: one unit (or one CTA's warps) and its preselected signals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Title (`cta0 mbarrier`).
    pub title: String,
    /// Signals (indices into [`Layout::signals`]) with their formats.
    pub traces: Vec<(usize, Format)>,
}

/// What a VCD holds: every signal, the preselection, and the time span.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Every variable, in declaration order.
    pub signals: Vec<Signal>,
    /// The save file's groups.
    pub groups: Vec<Group>,
    /// Clock period, ps (VCD time of one cycle).
    pub period_ps: u64,
    /// First cycle observed.
    pub first_cycle: u64,
    /// Last cycle observed.
    pub last_cycle: u64,
    /// Per group title: cycles its unit had a request (a port: was busy). Warp groups are not
    /// counted.
    pub activity: BTreeMap<String, u64>,
    /// The first cycle any synchronization unit had a request.
    pub first_activity: Option<u64>,
    /// Cycles where a unit completed something: an mbarrier wait returned complete (rank 0), or
    /// a named or cluster barrier completed (`done$valid`, rank 1).
    pub completions: Vec<(u64, u8)>,
}

/// How a rust-hdl atom maps onto VCD variables (struct ports become one variable per field).
enum Code {
    Wire(IdCode, u32),
    Str(IdCode),
    Fields(Vec<Code>),
}

/// One rust-hdl unit in the VCD: its `clocked` variable and its atoms in visiting order.
struct UnitCodes {
    /// Its group's title.
    title: String,
    /// Leaves whose rise is a completion: (leaf index, rank, a leaf that must be high too).
    completions: Vec<(usize, u8, Option<usize>)>,
    /// Leaves that are request valids (the unit is used in a cycle one of them is high).
    requests: Vec<usize>,
    clocked: IdCode,
    atoms: Vec<Code>,
    /// Last written value per leaf variable, in leaf order.
    last: Vec<Option<String>>,
    /// The unit's edge count at the previous cycle.
    edges: u64,
    /// `clocked` as last written.
    clocked_last: Option<bool>,
    /// Its signals have been written once.
    visited: bool,
}

struct PortCodes {
    /// Its group's title, if it has one.
    title: Option<String>,
    busy: IdCode,
    backlog: IdCode,
    last: Option<(bool, u64)>,
}

struct WarpCodes {
    pc: IdCode,
    instr: IdCode,
    state: IdCode,
    stall: IdCode,
    live: IdCode,
    last: Option<(u32, &'static str, &'static str, u32)>,
}

struct CtaCodes {
    mbarrier: UnitCodes,
    named: UnitCodes,
    ports: [PortCodes; 3],
}

struct Codes {
    cycle: IdCode,
    warps: Vec<WarpCodes>,
    ctas: Vec<CtaCodes>,
    clusters: Vec<UnitCodes>,
    /// The instruction text per pc, escaped.
    instr: Vec<String>,
}

/// A [`Probe`] that writes a VCD. Its [`Layout`] (shared through [`VcdProbe::layout`]) is filled
/// in as the run goes and feeds [`gtkw`].
pub struct VcdProbe<W: Write> {
    w: vcd::Writer<W>,
    codes: Option<Codes>,
    layout: Rc<RefCell<Layout>>,
    err: Option<io::Error>,
    /// The time of the current cycle, until its first change is written.
    pending_time: Option<u64>,
    /// Scope path while declaring.
    path: Vec<String>,
    buf: String,
    finished: bool,
}

/// Bits of a `busy`/`backlog` port counter.
const BACKLOG_BITS: u32 = 16;

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            ' ' => o.push_str("\\x20"),
            '\t' => o.push_str("\\x09"),
            '\\' => o.push_str("\\x5c"),
            c if c.is_ascii_graphic() => o.push(c),
            c => {
                let _ = write!(o, "\\x{:02x}", (c as u32).min(0xff));
            }
        }
    }
    if o.is_empty() {
        o.push('-');
    }
    o
}

/// Undoes the `\xNN` escapes of string values (tests, tools).
pub fn unescape(s: &str) -> String {
    let mut o = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            if let Ok(v) = u8::from_str_radix(std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("-"), 16) {
                o.push(v as char);
                i += 4;
                continue;
            }
        }
        o.push(b[i] as char);
        i += 1;
    }
    o
}

fn bit(c: char) -> Value {
    match c {
        '0' => Value::V0,
        '1' => Value::V1,
        'x' | 'X' => Value::X,
        _ => Value::Z,
    }
}

/// Declares the variables of one rust-hdl unit under the current scope (rust-hdl's probe
/// visitor: scopes for sub-blocks, one atom per port, register and temporary).
struct Declare<'a, W: Write> {
    p: &'a mut VcdProbe<W>,
    atoms: Vec<Code>,
    leaves: usize,
}

impl<W: Write> Declare<'_, W> {
    fn code(&mut self, name: &str, d: &rust_hdl::prelude::TypeDescriptor) -> Code {
        use rust_hdl::prelude::TypeKind;
        match &d.kind {
            TypeKind::Bits(n) | TypeKind::Signed(n) => {
                self.leaves += 1;
                Code::Wire(self.p.var(VarType::Wire, *n as u32, name, false), *n as u32)
            }
            TypeKind::Enum(_) => {
                self.leaves += 1;
                Code::Str(self.p.var(VarType::String, 1, name, true))
            }
            TypeKind::Composite(fields) => Code::Fields(fields.iter().map(|f| self.code(&format!("{name}${}", f.fieldname), &f.kind)).collect()),
        }
    }
}

impl<W: Write> rust_hdl::prelude::Probe for Declare<'_, W> {
    fn visit_start_scope(&mut self, name: &str, _: &dyn Block) {
        self.p.scope(name);
    }
    fn visit_start_namespace(&mut self, name: &str, _: &dyn Block) {
        self.p.scope(name);
    }
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        // The clock is high whenever the probe looks (after the edge): `clocked` says more.
        if name == "clock" {
            return;
        }
        let c = self.code(name, &signal.descriptor());
        self.atoms.push(c);
    }
    fn visit_end_namespace(&mut self, _: &str, _: &dyn Block) {
        self.p.upscope();
    }
    fn visit_end_scope(&mut self, _: &str, _: &dyn Block) {
        self.p.upscope();
    }
}

/// Writes the changed values of one unit (same visiting order as [`Declare`]).
struct Change<'a, W: Write> {
    p: &'a mut VcdProbe<W>,
    codes: &'a [Code],
    last: &'a mut Vec<Option<String>>,
    atom: usize,
    leaf: usize,
}

impl<W: Write> Change<'_, W> {
    fn leaf(&mut self, code: &Code, v: Option<&VCDValue>) {
        let mut s = std::mem::take(&mut self.p.buf);
        s.clear();
        match (code, v) {
            (Code::Fields(fs), Some(VCDValue::Composite(vs))) if fs.len() == vs.len() => {
                self.p.buf = s;
                for (f, v) in fs.iter().zip(vs) {
                    self.leaf(f, Some(v));
                }
                return;
            }
            (Code::Fields(fs), _) => {
                // An undriven struct reads as one vector of z: every field is z.
                self.p.buf = s;
                for f in fs {
                    self.leaf(f, None);
                }
                return;
            }
            (_, Some(VCDValue::Single(b))) => {
                let _ = write!(s, "{b}");
            }
            (_, Some(VCDValue::Vector(bs))) => {
                for b in bs {
                    let _ = write!(s, "{b}");
                }
            }
            (_, Some(VCDValue::String(t))) => s.push_str(t),
            (Code::Wire(_, n), _) => s.extend(std::iter::repeat('z').take(*n as usize)),
            (Code::Str(_), _) => s.push('z'),
        }
        let k = self.leaf;
        self.leaf += 1;
        if self.last[k].as_deref() != Some(s.as_str()) {
            let r = match code {
                Code::Wire(id, 1) => {
                    let c = s.chars().last().unwrap_or('z');
                    self.p.stamp().and_then(|w| w.change_scalar(*id, bit(c)))
                }
                Code::Wire(id, _) => self.p.stamp().and_then(|w| w.change_vector(*id, s.chars().map(bit))),
                Code::Str(id) => {
                    let e = escape(&s);
                    self.p.stamp().and_then(|w| w.change_string(*id, &e))
                }
                Code::Fields(_) => Ok(()),
            };
            self.p.keep(r);
            self.last[k] = Some(s.clone());
        }
        self.p.buf = s;
    }
}

impl<W: Write> rust_hdl::prelude::Probe for Change<'_, W> {
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        if name == "clock" {
            return;
        }
        let codes = self.codes;
        let Some(code) = codes.get(self.atom) else { return };
        self.atom += 1;
        let v = signal.vcd();
        self.leaf(code, Some(&v));
    }
}

impl<W: Write> VcdProbe<W> {
    /// A probe writing a VCD to `w` (the header is written at the first cycle, when the units
    /// are known).
    pub fn new(w: W) -> VcdProbe<W> {
        VcdProbe { w: vcd::Writer::new(w), codes: None, layout: Rc::new(RefCell::new(Layout::default())), err: None, pending_time: None, path: Vec::new(), buf: String::new(), finished: false }
    }

    /// The layout, shared: complete once the run has ended.
    pub fn layout(&self) -> Rc<RefCell<Layout>> {
        self.layout.clone()
    }

    fn keep(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.err.get_or_insert(e);
        }
    }

    fn scope(&mut self, name: &str) {
        let r = self.w.add_module(name);
        self.keep(r);
        self.path.push(name.to_string());
    }

    fn upscope(&mut self) {
        let r = self.w.upscope();
        self.keep(r);
        self.path.pop();
    }

    fn var(&mut self, t: VarType, width: u32, name: &str, string: bool) -> IdCode {
        let r = self.w.add_var(t, width, name, None);
        let path = format!("{}.{}", self.path.join("."), name);
        self.layout.borrow_mut().signals.push(Signal { path, width, string });
        match r {
            Ok(id) => id,
            Err(e) => {
                self.err.get_or_insert(e);
                IdCode::FIRST
            }
        }
    }

    /// The writer, after the current cycle's timestamp.
    fn stamp(&mut self) -> io::Result<&mut vcd::Writer<W>> {
        if let Some(t) = self.pending_time.take() {
            self.w.timestamp(t)?;
        }
        Ok(&mut self.w)
    }

    fn declare_unit(&mut self, name: &str, title: String, accept: &dyn Fn(&str, &mut dyn rust_hdl::prelude::Probe), edges: u64) -> UnitCodes {
        self.scope(name);
        let clocked = self.var(VarType::Wire, 1, "clocked", false);
        let first_leaf = self.layout.borrow().signals.len();
        let mut d = Declare { p: self, atoms: Vec::new(), leaves: 0 };
        // rust-hdl opens a scope named after the block itself: name it `rtl` inside the unit's
        // scope so that the engine-side `clocked` sits beside the unit's own signals.
        accept("rtl", &mut d);
        let (atoms, leaves) = (d.atoms, d.leaves);
        self.upscope();
        // Leaves are declared in visiting order, one variable each. An mbarrier wait ends when
        // a response says so (`resp$wait_complete` with `resp$valid`; a try_wait suspended until
        // the phase completes ends with its wake, `wake$completed`); a barrier completes with
        // `done$valid`.
        let leaf = |n: &str| self.layout.borrow().signals[first_leaf..].iter().position(|s| s.path.rsplit('.').next() == Some(n));
        let completions = [
            leaf("resp$wait_complete").map(|k| (k, 0, leaf("resp$valid"))),
            leaf("wake$completed").map(|k| (k, 0, leaf("wake$valid"))),
            leaf("done$valid").map(|k| (k, 1, None)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let requests = self.layout.borrow().signals[first_leaf..]
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.path.rsplit('.').next(), Some("req_valid" | "local_valid" | "tma_valid" | "cluster_valid")))
            .map(|(k, _)| k)
            .collect();
        UnitCodes { title, completions, requests, clocked, atoms, last: vec![None; leaves], edges, clocked_last: None, visited: false }
    }

    fn declare_port(&mut self, name: &str, title: Option<String>) -> PortCodes {
        self.scope(name);
        let busy = self.var(VarType::Wire, 1, "busy", false);
        let backlog = self.var(VarType::Wire, BACKLOG_BITS, "backlog", false);
        self.upscope();
        PortCodes { title, busy, backlog, last: None }
    }

    /// Writes the header: scopes and variables of every unit and warp, and the preselection.
    fn declare(&mut self, snap: &Snapshot<'_>) -> Codes {
        let r = self.w.timescale(1, TimescaleUnit::PS).and_then(|_| self.w.comment("hopsync RTL engine (sim/src/waves.rs); time = cycle x clock period"));
        self.keep(r);
        self.scope("hopsync");
        let cycle = self.var(VarType::Wire, 32, "cycle", false);
        let mut ctas: Vec<Option<CtaCodes>> = (0..snap.ctas.len()).map(|_| None).collect();
        let mut warps: Vec<Option<WarpCodes>> = (0..snap.warps.len()).map(|_| None).collect();
        let mut clusters = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        let idx = |l: &Layout, path: &str| l.signals.iter().position(|s| s.path == path);
        for (k, cl) in snap.clusters.iter().enumerate() {
            let cname = format!("cluster{k}");
            self.scope(&cname);
            let base = self.layout.borrow().signals.len();
            let cu = self.declare_unit("cluster_barrier", format!("{cname} cluster_barrier"), &|n, p| cl.accept(n, p), cl.edges());
            let pre = format!("hopsync.{cname}.cluster_barrier");
            groups.push(self.group(&format!("{cname} cluster_barrier"), &pre, base, CLUSTER_TRACES));
            clusters.push(cu);
            for (ci, c) in snap.ctas.iter().enumerate().filter(|(_, c)| c.cluster as usize == k) {
                let name = format!("cta{ci}");
                self.scope(&name);
                let pre = format!("hopsync.{cname}.{name}");
                let shown = ci < GTKW_CTAS;
                let base = self.layout.borrow().signals.len();
                let mbarrier = self.declare_unit("mbarrier", format!("{name} mbarrier"), &|n, p| c.mbarrier.accept(n, p), c.mbarrier.edges());
                let g_mbar = self.group(&format!("{name} mbarrier"), &format!("{pre}.mbarrier"), base, MBARRIER_TRACES);
                let base = self.layout.borrow().signals.len();
                let named = self.declare_unit("named_barrier", format!("{name} named_barrier"), &|n, p| c.named.accept(n, p), c.named.edges());
                let g_named = self.group(&format!("{name} named_barrier"), &format!("{pre}.named_barrier"), base, NAMED_TRACES);
                let ports = [self.declare_port("smem_port", Some(format!("{name} smem_port"))), self.declare_port("global_port", None), self.declare_port("dsmem_port", None)];
                let mut g_warps = Group { title: format!("{name} warps"), traces: Vec::new() };
                let g_smem = {
                    let l = self.layout.borrow();
                    let mut g = Group { title: format!("{name} smem_port"), traces: Vec::new() };
                    g.traces.extend(idx(&l, &format!("{pre}.smem_port.busy")).map(|i| (i, Format::Bin)));
                    g.traces.extend(idx(&l, &format!("{pre}.smem_port.backlog")).map(|i| (i, Format::Dec)));
                    g
                };
                for (wi, wv) in snap.warps.iter().enumerate().filter(|(_, w)| w.cta as usize == ci) {
                    let wname = format!("warp{}", wv.warp);
                    self.scope(&wname);
                    let base = self.layout.borrow().signals.len();
                    let pc = self.var(VarType::Wire, 32, "pc", false);
                    let instr = self.var(VarType::String, 1, "instr", true);
                    let state = self.var(VarType::String, 1, "state", true);
                    let stall = self.var(VarType::String, 1, "stall", true);
                    let live = self.var(VarType::Wire, 32, "live", false);
                    self.upscope();
                    if (wv.warp as usize) < GTKW_WARPS {
                        g_warps.traces.extend([(base, Format::Dec), (base + 2, Format::Bin), (base + 3, Format::Bin), (base + 1, Format::Bin)]);
                    }
                    warps[wi] = Some(WarpCodes { pc, instr, state, stall, live, last: None });
                }
                self.upscope();
                if shown {
                    groups.extend([g_warps, g_mbar, g_named, g_smem]);
                }
                ctas[ci] = Some(CtaCodes { mbarrier, named, ports });
            }
            self.upscope();
        }
        self.upscope();
        let r = self.w.enddefinitions();
        self.keep(r);
        let module = snap.module;
        let instr = module.kernel.body.iter().map(|i| escape(&printer::print_instr(module, i))).collect();
        {
            let mut l = self.layout.borrow_mut();
            let c = l.signals.iter().position(|s| s.path == "hopsync.cycle");
            let mut top = Group { title: "hopsync".into(), traces: Vec::new() };
            top.traces.extend(c.map(|i| (i, Format::Dec)));
            groups.insert(0, top);
            groups.retain(|g| !g.traces.is_empty());
            l.groups = groups;
            l.period_ps = snap.period_ps;
            l.first_cycle = snap.cycle;
        }
        Codes {
            cycle,
            warps: warps.into_iter().map(|w| w.expect("every warp belongs to a CTA")).collect(),
            ctas: ctas.into_iter().map(|c| c.expect("every CTA belongs to a cluster")).collect(),
            clusters,
            instr,
        }
    }

    /// A group of the unit declared from signal `base` on: the traces named (relative to
    /// `prefix`) that exist, in the order given.
    fn group(&self, title: &str, prefix: &str, base: usize, traces: &[(&str, Format)]) -> Group {
        let l = self.layout.borrow();
        let mut g = Group { title: title.into(), traces: Vec::new() };
        for (rel, f) in traces {
            let path = format!("{prefix}.{rel}");
            if let Some(i) = l.signals[base..].iter().position(|s| s.path == path) {
                g.traces.push((base + i, *f));
            }
        }
        g
    }

    /// Writes a unit's changes: `clocked`, then every leaf variable that changed; counts its
    /// activity and completions (`now`: the cycle).
    fn unit(&mut self, u: &mut UnitCodes, edges: u64, now: u64, accept: &dyn Fn(&str, &mut dyn rust_hdl::prelude::Probe)) {
        let clocked = edges != u.edges;
        u.edges = edges;
        if u.clocked_last != Some(clocked) {
            let id = u.clocked;
            let r = self.stamp().and_then(|w| w.change_scalar(id, if clocked { Value::V1 } else { Value::V0 }));
            self.keep(r);
            u.clocked_last = Some(clocked);
        }
        // A unit's signals change only when the engine clocks it (inputs are set and settled
        // inside its `cycle`): an unclocked unit already written needs no visit.
        if !clocked && u.visited {
            return;
        }
        u.visited = true;
        let codes = std::mem::take(&mut u.atoms);
        let mut last = std::mem::take(&mut u.last);
        let high = |v: &Option<String>| v.as_deref() == Some("1");
        let done = |last: &[Option<String>], (k, _, q): (usize, u8, Option<usize>)| high(&last[k]) && q.is_none_or(|q| high(&last[q]));
        let before: Vec<bool> = u.completions.iter().map(|&c| done(&last, c)).collect();
        {
            let mut c = Change { p: self, codes: &codes, last: &mut last, atom: 0, leaf: 0 };
            accept("rtl", &mut c);
        }
        for (&(k, rank, q), was) in u.completions.iter().zip(before) {
            if done(&last, (k, rank, q)) && !was {
                self.layout.borrow_mut().completions.push((now, rank));
            }
        }
        if u.requests.iter().any(|&k| high(&last[k])) {
            let mut l = self.layout.borrow_mut();
            *l.activity.entry(u.title.clone()).or_default() += 1;
            l.first_activity.get_or_insert(now);
        }
        u.atoms = codes;
        u.last = last;
    }

    fn port(&mut self, p: &mut PortCodes, booked_until: u64, now: u64) {
        if let (Some(t), true) = (&p.title, booked_until > now) {
            *self.layout.borrow_mut().activity.entry(t.clone()).or_default() += 1;
        }
        let backlog = booked_until.saturating_sub(now).min((1 << BACKLOG_BITS) - 1);
        let v = (booked_until > now, backlog);
        if p.last == Some(v) {
            return;
        }
        let (busy, backlog_id) = (p.busy, p.backlog);
        let r = self.stamp().and_then(|w| {
            w.change_scalar(busy, if v.0 { Value::V1 } else { Value::V0 })?;
            w.change_vector(backlog_id, bits(v.1, BACKLOG_BITS))
        });
        self.keep(r);
        p.last = Some(v);
    }

    fn observe(&mut self, snap: &Snapshot<'_>) {
        let mut codes = match self.codes.take() {
            Some(c) => c,
            None => self.declare(snap),
        };
        self.pending_time = Some(snap.cycle * snap.period_ps);
        let cycle = codes.cycle;
        let r = self.stamp().and_then(|w| w.change_vector(cycle, bits(snap.cycle, 32)));
        self.keep(r);
        for (k, cl) in snap.clusters.iter().enumerate() {
            self.unit(&mut codes.clusters[k], cl.edges(), snap.cycle, &|n, p| cl.accept(n, p));
        }
        for (ci, c) in snap.ctas.iter().enumerate() {
            let cc = &mut codes.ctas[ci];
            self.unit(&mut cc.mbarrier, c.mbarrier.edges(), snap.cycle, &|n, p| c.mbarrier.accept(n, p));
            self.unit(&mut cc.named, c.named.edges(), snap.cycle, &|n, p| c.named.accept(n, p));
            let [a, b, d] = &mut cc.ports;
            self.port(a, c.smem_booked_until, snap.cycle);
            self.port(b, c.global_booked_until, snap.cycle);
            self.port(d, c.dsmem_booked_until, snap.cycle);
        }
        for (wi, wv) in snap.warps.iter().enumerate() {
            let wc = &mut codes.warps[wi];
            let v = (wv.pc, wv.state.name(), wv.stall.name(), wv.live);
            let old = wc.last.replace(v);
            let instr = codes.instr.get(wv.pc as usize).map(String::as_str).unwrap_or("(end)");
            let (pc, ins, state, stall, live) = (wc.pc, wc.instr, wc.state, wc.stall, wc.live);
            let r = self.stamp().and_then(|w| {
                if old.map(|o| o.0) != Some(v.0) {
                    w.change_vector(pc, bits(v.0 as u64, 32))?;
                    w.change_string(ins, instr)?;
                }
                if old.map(|o| o.1) != Some(v.1) {
                    w.change_string(state, v.1)?;
                }
                if old.map(|o| o.2) != Some(v.2) {
                    w.change_string(stall, v.2)?;
                }
                if old.map(|o| o.3) != Some(v.3) {
                    w.change_vector(live, bits(v.3 as u64, 32))?;
                }
                Ok(())
            });
            self.keep(r);
        }
        self.layout.borrow_mut().last_cycle = snap.cycle;
        self.codes = Some(codes);
    }
}

/// `v` as `n` VCD bits, most significant first.
fn bits(v: u64, n: u32) -> impl Iterator<Item = Value> {
    (0..n).rev().map(move |i| if (v >> i) & 1 == 1 { Value::V1 } else { Value::V0 })
}

impl<W: Write> Probe for VcdProbe<W> {
    fn cycle(&mut self, snap: &Snapshot<'_>) {
        self.observe(snap);
    }

    fn finish(&mut self) -> io::Result<()> {
        if !self.finished {
            self.finished = true;
            let l = self.layout.borrow();
            // One more timestamp, so that the last cycle's values have a width in the viewer.
            let end = (l.last_cycle + 1) * l.period_ps;
            drop(l);
            if self.codes.is_some() {
                let r = self.w.timestamp(end);
                self.keep(r);
            }
            let r = self.w.flush();
            self.keep(r);
        }
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

// ---- the preselection ------------------------------------------------------------------------

/// Preselected MbarrierUnit signals (relative to its scope), in display order.
const MBARRIER_TRACES: &[(&str, Format)] = &[
    ("clocked", Format::Bin),
    ("rtl.local_valid", Format::Bin),
    ("rtl.local_req$op", Format::Bin),
    ("rtl.local_req$word", Format::Hex),
    ("rtl.local_req$warp", Format::Dec),
    ("rtl.local_ready", Format::Bin),
    ("rtl.tma_valid", Format::Bin),
    ("rtl.tma_req$op", Format::Bin),
    ("rtl.cluster_valid", Format::Bin),
    ("rtl.cluster_req$op", Format::Bin),
    ("rtl.cluster_req$word", Format::Hex),
    ("rtl.resp$valid", Format::Bin),
    ("rtl.resp$warp", Format::Dec),
    ("rtl.resp$state$phase_parity", Format::Bin),
    ("rtl.resp$state$pending_complement", Format::Hex),
    ("rtl.resp$state$tx_negated", Format::Hex),
    ("rtl.resp$wait_complete", Format::Bin),
    ("rtl.resp$suspended", Format::Bin),
    ("rtl.wake$valid", Format::Bin),
    ("rtl.wake$warp", Format::Dec),
    ("rtl.wake$completed", Format::Bin),
    ("rtl.fault$valid", Format::Bin),
    ("rtl.fault$kind", Format::Bin),
];

/// Preselected NamedBarrierUnit signals.
const NAMED_TRACES: &[(&str, Format)] = &[
    ("clocked", Format::Bin),
    ("rtl.req_valid", Format::Bin),
    ("rtl.req$op", Format::Bin),
    ("rtl.req$barrier", Format::Dec),
    ("rtl.req$warp", Format::Dec),
    ("rtl.req_ready", Format::Bin),
    ("rtl.done$valid", Format::Bin),
    ("rtl.done$barrier", Format::Dec),
    ("rtl.done$warps", Format::Hex),
    ("rtl.exit$valid", Format::Bin),
    ("rtl.exit$warp", Format::Dec),
    ("rtl.fault$valid", Format::Bin),
    ("rtl.fault$kind", Format::Bin),
];

/// Preselected ClusterBarrierUnit signals.
const CLUSTER_TRACES: &[(&str, Format)] = &[
    ("clocked", Format::Bin),
    ("rtl.req_valid", Format::Bin),
    ("rtl.req$op", Format::Bin),
    ("rtl.req$cta", Format::Dec),
    ("rtl.req$warp", Format::Dec),
    ("rtl.req_ready", Format::Bin),
    ("rtl.resp$valid", Format::Bin),
    ("rtl.resp$blocked", Format::Bin),
    ("rtl.done$valid", Format::Bin),
    ("rtl.done$phase", Format::Dec),
    ("rtl.fault$valid", Format::Bin),
    ("rtl.fault$kind", Format::Bin),
];

/// What the save file opens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The VCD path written into the save file (`[dumpfile]`).
    pub dumpfile: String,
    /// The save file's own path (`[savefile]`).
    pub savefile: String,
    /// Cycles shown: from, to (None: from the first cycle, a power-of-two span covering the run).
    pub window: Option<(u64, u64)>,
    /// A marker at this cycle (a divergence).
    pub marker: Option<u64>,
}

/// The GTKWave save file for `layout`: one group per unit (and per CTA's warps) with the
/// preselected signals, the dump file, the time window and zoom.
pub fn gtkw(layout: &Layout, view: &View) -> String {
    let p = layout.period_ps.max(1);
    let (from, to) = view.window.unwrap_or_else(|| story_window(layout));
    let span_ps = ((to.saturating_sub(from)).max(1) * p) as f64;
    let zoom = -(span_ps / GTKW_SPAN_AT_ZOOM_0).log2().ceil();
    let mut s = String::new();
    let _ = writeln!(s, "[*] GTKWave save file written by hopsync (sim/src/waves.rs); regenerate with `hopsync waves`");
    let _ = writeln!(s, "[*] one group per unit; every signal is in the tree (SST) on the left");
    let _ = writeln!(s, "[dumpfile] \"{}\"", view.dumpfile);
    let _ = writeln!(s, "[savefile] \"{}\"", view.savefile);
    let _ = writeln!(s, "[timestart] {}", from * p);
    let _ = writeln!(s, "[size] 1600 1000");
    let _ = writeln!(s, "[pos] -1 -1");
    let marker = view.marker.map(|c| (c * p) as i64).unwrap_or(-1);
    let _ = writeln!(s, "*{zoom:.6} {marker}{}", " -1".repeat(26));
    let _ = writeln!(s, "[treeopen] hopsync.");
    let _ = writeln!(s, "[treeopen] hopsync.cluster0.");
    let _ = writeln!(s, "[sst_width] 240");
    let _ = writeln!(s, "[signals_width] 360");
    let _ = writeln!(s, "[sst_expanded] 1");
    let _ = writeln!(s, "[sst_vpaned_height] 300");
    for g in ordered_groups(layout) {
        // An idle unit's group is closed (GTKWave's TR_CLOSED, 0x400000): one line, below the
        // units the program uses.
        let open = !idle(layout, g);
        let _ = writeln!(s, "{}\n-{}", if open { "@800200" } else { "@c00200" }, g.title);
        for &(i, f) in &g.traces {
            let sig = &layout.signals[i];
            let alias = alias(&sig.path);
            let _ = writeln!(s, "{}\n+{{{alias}}} {}", f.flags(), sig.gtkwave_name());
        }
        let _ = writeln!(s, "{}\n-{}", if open { "@1000200" } else { "@1401200" }, g.title);
    }
    s.push_str("[pattern_trace] 1
[pattern_trace] 0
");
    s
}

/// Whether a group is a unit (or port) the run never clocked (warp groups and the cycle are not
/// units).
pub fn idle(layout: &Layout, g: &Group) -> bool {
    let unit = g.title.ends_with(" mbarrier") || g.title.ends_with(" named_barrier") || g.title.ends_with(" cluster_barrier") || g.title.ends_with(" smem_port");
    unit && layout.activity.get(&g.title).copied().unwrap_or(0) == 0
}

/// The groups in the save file's order: the cycle, the units the program uses (most active
/// first), the warps, then the idle units (closed).
pub fn ordered_groups(layout: &Layout) -> Vec<&Group> {
    let rank = |g: &Group| {
        let act = layout.activity.get(&g.title).copied();
        match (g.title.as_str(), act) {
            ("hopsync", _) => (0, 0),
            _ if idle(layout, g) => (3, 0),
            (_, Some(a)) => (1, u64::MAX - a),
            _ => (2, 0),
        }
    };
    let mut v: Vec<&Group> = layout.groups.iter().collect();
    v.sort_by_key(|g| rank(g));
    v
}

/// The window a save file opens on when no divergence names one: from just before the first
/// synchronization request to a little after the completion that ended the program's first long
/// wait: the first successful mbarrier wait (else the first barrier completion) whose distance from the previous one (or from the first request) is at least half
/// the longest such distance. The waiting, the completion and the wake are on one screen, not a
/// whole run of solid warp bands. Without a completion, the whole run (a power-of-two span).
pub fn story_window(layout: &Layout) -> (u64, u64) {
    let whole = || (0, (layout.last_cycle + 1).saturating_sub(layout.first_cycle).max(64).next_power_of_two());
    let Some(start) = layout.first_activity else { return whole() };
    let from = start.saturating_sub(16);
    let rank = if layout.completions.iter().any(|&(c, r)| r == 0 && c > start) { 0 } else { 1 };
    let times: Vec<u64> = layout.completions.iter().filter(|&&(c, r)| r == rank && c > start).map(|&(c, _)| c).collect();
    let gaps: Vec<(u64, u64)> = times.iter().scan(start, |prev, &c| Some((c, c - std::mem::replace(prev, c)))).collect();
    let longest = gaps.iter().map(|g| g.1).max().unwrap_or(0);
    let Some(&(done, _)) = gaps.iter().find(|g| 2 * g.1 >= longest && !times.is_empty()) else { return whole() };
    let to = (done + (done - from) / 8 + 16).max(from + 64).min(layout.last_cycle + 1);
    (from, to.max(from + 1))
}

/// The name a preselected trace shows under its group's title: `warp3 pc`, `local_req$op`,
/// `clocked` (GTKWave cuts aliases at dots).
fn alias(path: &str) -> String {
    let parts: Vec<&str> = path.split('.').collect();
    let last = parts.last().copied().unwrap_or(path);
    match parts.iter().position(|p| *p == "rtl" || p.starts_with("warp")) {
        Some(i) if parts[i] == "rtl" => parts[i + 1..].join("/"),
        Some(i) => format!("{} {last}", parts[i]),
        None => last.to_string(),
    }
}

/// The save file beside a VCD: `x.vcd` -> `x.gtkw`.
pub fn gtkw_path(vcd: &Path) -> PathBuf {
    vcd.with_extension("gtkw")
}

fn create(path: &Path) -> Result<io::BufWriter<std::fs::File>, String> {
    std::fs::File::create(path).map(io::BufWriter::new).map_err(|e| format!("error: cannot write {}: {e}", path.display()))
}

/// Runs `prog` on the RTL engine with a [`VcdProbe`] writing into `out`; returns the report and
/// the layout.
pub fn record<W: Write>(prog: &Program, cfg: Config, mut sm: SmConfig, out: W) -> Result<(RunReport, Layout), String> {
    // the probe reads the units' rust-hdl signals (the generated models have none)
    sm.backend.1 = crate::units::UnitSim::RustHdl;
    let probe = VcdProbe::new(out);
    let layout = probe.layout();
    let mut e = Engine::new(prog, cfg, sm);
    e.set_probe(Box::new(probe));
    let outcome = e.run();
    let report = e.report(&outcome);
    let mut p = e.take_probe().expect("the probe is attached");
    p.finish().map_err(|err| format!("error: writing the VCD: {err}"))?;
    drop(p);
    let l = layout.borrow().clone();
    Ok((report, l))
}

/// `hopsync run --engine rtl --waves VCD`: runs `prog`, writes `vcd` and its save file beside it
/// (naming `vcd` as given).
pub fn run_with_waves(prog: &Program, cfg: Config, sm: SmConfig, vcd: &Path) -> Result<RunReport, String> {
    let (report, layout) = record(prog, cfg, sm, create(vcd)?)?;
    let save = gtkw_path(vcd);
    let view = View { dumpfile: vcd.display().to_string(), savefile: save.display().to_string(), window: None, marker: None };
    std::fs::write(&save, gtkw(&layout, &view)).map_err(|e| format!("error: cannot write {}: {e}", save.display()))?;
    Ok(report)
}

/// `hopsync cosim --waves VCD`: the lockstep run with the RTL engine's waveforms; a divergence's
/// window names the file, and the save file opens on that window with a marker at the
/// divergence.
pub fn cosim_with_waves(prog: &Program, cfg: Config, mut sm: SmConfig, vcd: &Path) -> Result<hopsync_cosim::lockstep::CosimReport, String> {
    sm.backend.1 = crate::units::UnitSim::RustHdl;
    let probe = VcdProbe::new(create(vcd)?);
    let layout = probe.layout();
    let (mut r, p) = crate::lockstep::run_cosim_probed(prog, cfg, sm, Some(Box::new(probe)));
    if let Some(mut p) = p {
        p.finish().map_err(|err| format!("error: writing {}: {err}", vcd.display()))?;
    }
    let layout = layout.borrow().clone();
    let save = gtkw_path(vcd);
    let mut view = View { dumpfile: vcd.display().to_string(), savefile: save.display().to_string(), window: None, marker: None };
    for d in &mut r.divergences {
        d.waves.file = Some(vcd.display().to_string());
        if view.marker.is_none() {
            view.window = Some((d.waves.from_cycle, d.waves.to_cycle));
            view.marker = Some(d.cycle);
        }
    }
    std::fs::write(&save, gtkw(&layout, &view)).map_err(|e| format!("error: cannot write {}: {e}", save.display()))?;
    Ok(r)
}

/// `hopsync waves`: for each program, `dir/<stem>.vcd` and `dir/<stem>.gtkw` (the save file names
/// the VCD as `dir/<stem>.vcd`, so `dir` relative to the repository root gives files that open
/// from there). Returns the files written.
pub fn write_for_programs(progs: &[Program], dir: &Path, sm: &SmConfig) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("error: cannot create {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for prog in progs {
        let stem = Path::new(&prog.path).file_stem().and_then(|s| s.to_str()).unwrap_or("program").to_string();
        let vcd = dir.join(format!("{stem}.vcd"));
        run_with_waves(prog, Config::default(), sm.clone(), &vcd)?;
        out.push(vcd.clone());
        out.push(gtkw_path(&vcd));
    }
    Ok(out)
}

/// The save file `hopsync waves` writes for `prog` (tests compare it with the committed one):
/// the program runs with its VCD going nowhere.
pub fn seed_gtkw(prog: &Program, dir: &str, sm: &SmConfig) -> Result<String, String> {
    let stem = Path::new(&prog.path).file_stem().and_then(|s| s.to_str()).unwrap_or("program").to_string();
    let (_, layout) = record(prog, Config::default(), sm.clone(), io::sink())?;
    let view = View { dumpfile: format!("{dir}/{stem}.vcd"), savefile: format!("{dir}/{stem}.gtkw"), window: None, marker: None };
    Ok(gtkw(&layout, &view))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        for t in ["mbarrier.arrive.shared.b64 %rd1, [shMem];", "a\\b\tc", ""] {
            let e = escape(t);
            assert!(!e.contains(' ') && !e.contains('\t') && !e.is_empty());
            if !t.is_empty() {
                assert_eq!(unescape(&e), t);
            }
        }
    }

    #[test]
    fn bits_are_msb_first() {
        let v: Vec<Value> = bits(5, 4).collect();
        assert_eq!(v, vec![Value::V0, Value::V1, Value::V0, Value::V1]);
    }
}
