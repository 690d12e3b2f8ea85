//! The generator: straight-line Rust from a rust-hdl block's HDL.
//!
//! Input: a connected rust-hdl block. Its hierarchy is walked with rust-hdl's probe (the walk
//! `generate_verilog` makes): every scope's `hdl()` (the `#[hdl_gen]` AST, `Verilog::Combinatorial`,
//! or a leaf's `Verilog::Custom`) and every signal's `TypeDescriptor`. Output: the source of one
//! Rust struct whose `eval` computes every combinational signal once, in dependency order, and
//! whose `edge` is the clock edge of the leaves (DFF, RAM).
//!
//! Semantics are rust-hdl's *simulation*, not Verilog's:
//! - a settled rust-hdl circuit is the fixed point of every block's `update`; a read of a signal
//!   sees its final value in that block (all writes to it done). So the generator cuts each
//!   block into top-level statements (loops unrolled, `dff_setup!` expanded), and orders all
//!   statements of all blocks (the hierarchy flattened: a parent's write of a child's input and
//!   the child's reads are one signal) so that every writer of a signal precedes its readers,
//!   writers of one signal keep their program order (last write wins), and ties keep the source
//!   order. A top-level statement that writes several signals is cut into one slice per signal
//!   (`Gen::slices`: the conditions around each signal's assignments kept) where every slice
//!   reads what the whole statement would. A statement may read a signal it writes where an
//!   earlier statement of its block writes it too (the default-first form: rust-hdl's Out /
//!   Local `val()` is the latest write in program order, as in the generated code); other
//!   self-reads and cycles are refused.
//! - combinational leaves with hand-written Verilog and a Rust `update` ([`RUST_LEAVES`]) run
//!   that `update` on a private instance.
//! - widths: the Rust simulation wraps every `Bits<N>` sub-expression at N bits (Verilog
//!   widens); literals take the width of the other operand; `bit_cast` / `bits::<N>` cut or
//!   zero-extend. Every value is a u64 (fields wider than 64 bits are refused); records
//!   (`LogicStruct`) are split into their fields, one u64 each.
//! - the clock: every DFF / RAM clock must be a chain of plain copies of the top's one clock
//!   input, of lengths D or D + 1 (rust-hdl's settle raises a chain of length n in pass n + 1
//!   and the leaf latches in pass n + 2, from its input as committed in the pass before: the
//!   first latches (pass D + 2) reach another leaf's input no earlier than its commit in pass
//!   D + 3, so leaves of both lengths latch their inputs as settled with the clock low; a
//!   length D + 2 could latch a value of after the edge).
//!
//! What the generator does not know fails with `unsupported: <construct> in <block path>`.

use crate::rt::parse_literal;
use rust_hdl::prelude::ast::{
    VerilogBlock, VerilogBlockOrConditional, VerilogCase, VerilogConditional, VerilogExpression as E, VerilogLoop,
    VerilogMatch, VerilogOp, VerilogOpUnary, VerilogStatement as S,
};
use rust_hdl::prelude::*;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fmt::Write as _;

/// One field of a signal's value (a whole scalar signal is one field named "").
#[derive(Clone, Debug, PartialEq)]
struct Leaf {
    /// dotted field path inside the signal's type ("" for a scalar)
    name: String,
    /// bit offset in the packed value
    off: usize,
    /// width in bits (<= 64)
    w: usize,
    /// what the field holds
    kind: LeafKind,
}

/// The Rust type of a leaf field.
#[derive(Clone, Debug, PartialEq)]
enum LeafKind {
    /// `bool` (rust-hdl's `Bit`)
    Bool,
    /// `Bits<N>`
    Bits,
    /// a `LogicState` enum: its type name and variant names (discriminant = position)
    Enum(String, Vec<String>),
    /// rust-hdl's `Clock`
    Clock,
}

/// A signal of the flattened unit.
#[derive(Clone, Debug)]
struct Sig {
    /// its fields, LSB first
    leaves: Vec<Leaf>,
    /// index of its first field in the model's value array
    var: usize,
    /// total width
    bits: usize,
    /// its type
    desc: TypeDescriptor,
    /// rust-hdl's kind (ports, locals, constants)
    kind: AtomKind,
}

/// A scope of the hierarchy (one block instance).
struct Scope {
    /// `$`-joined path from `top`
    path: String,
    /// its `hdl()`
    hdl: Verilog,
    /// names of the signals declared directly in it (relative)
    atoms: Vec<String>,
}

/// The probe pass: scopes and signals.
#[derive(Default)]
struct Collect {
    scopes: Vec<Scope>,
    stack: Vec<usize>,
    path: Vec<String>,
    atoms: Vec<(String, usize, TypeDescriptor, AtomKind)>,
}

impl Probe for Collect {
    fn visit_start_scope(&mut self, name: &str, node: &dyn Block) {
        self.path.push(name.to_string());
        self.stack.push(self.scopes.len());
        self.scopes.push(Scope { path: self.path.join("$"), hdl: node.hdl(), atoms: vec![] });
    }
    fn visit_start_namespace(&mut self, name: &str, _: &dyn Block) {
        self.path.push(name.to_string());
    }
    fn visit_atom(&mut self, name: &str, a: &dyn Atom) {
        let full = format!("{}${name}", self.path.join("$"));
        let scope = *self.stack.last().expect("atoms live in scopes");
        let rel = full[self.scopes[scope].path.len() + 1..].to_string();
        self.scopes[scope].atoms.push(rel);
        self.atoms.push((full, a.bits(), a.descriptor(), a.kind()));
    }
    fn visit_end_namespace(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
    }
    fn visit_end_scope(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
        self.stack.pop();
    }
}

/// The fields of a type, LSB first.
fn leaves(d: &TypeDescriptor, prefix: &str, off: usize, out: &mut Vec<Leaf>) -> Result<usize, String> {
    let name = prefix.to_string();
    let (w, kind) = match &d.kind {
        TypeKind::Bits(1) if d.name == "clock" => (1, LeafKind::Clock),
        TypeKind::Bits(1) if d.name == "Bit" => (1, LeafKind::Bool),
        TypeKind::Bits(n) => (*n, LeafKind::Bits),
        TypeKind::Enum(v) => (clog2(v.len()), LeafKind::Enum(d.name.clone(), v.clone())),
        TypeKind::Signed(_) => return Err(format!("unsupported: Signed type `{}`", d.name)),
        TypeKind::Composite(fields) => {
            let mut at = off;
            for f in fields {
                let p = if prefix.is_empty() { f.fieldname.clone() } else { format!("{prefix}.{}", f.fieldname) };
                at += leaves(&f.kind, &p, at, out)?;
            }
            return Ok(at - off);
        }
    };
    if w > 64 {
        return Err(format!("unsupported: field `{name}` of {w} bits (wider than 64)"));
    }
    out.push(Leaf { name, off, w, kind });
    Ok(w)
}

/// All-ones of `w` bits.
fn mask(w: usize) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// A value during expression translation.
#[derive(Clone, Debug)]
enum Val {
    /// a literal (takes the width of the other operand)
    Lit(i128),
    /// Rust code of a u64 holding `w` bits
    Sc(String, usize),
    /// a record: code of each field and its (offset, width) relative to the record
    Rec(Vec<String>, Vec<(usize, usize)>),
}

/// One statement to schedule: a top-level statement of a block, with its loop indices, or a
/// combinational leaf's own `update` ([`RustLeaf`]).
struct Unit<'a> {
    scope: usize,
    env: Vec<(String, i64)>,
    stmt: &'a S,
    /// `Some(k)`: the unit is `rust_leaves[k]`'s update (`stmt` is unused)
    leaf: Option<usize>,
    reads: BTreeSet<usize>,
    writes: BTreeSet<usize>,
}

/// The combinational leaves whose HDL is hand-written Verilog (a construct `hdl_gen` has no
/// form for: a wide multiply, signed arithmetic, a funnel shift) and whose rust-hdl simulation
/// is their own Rust `update`: a leaf's Verilog is recognized by a line of it, and the model
/// runs that same `update` on a private instance of the type named here (its inputs set from
/// the model's values, its outputs read back), so the leaf's Rust stays the one model of it.
pub const RUST_LEAVES: &[(&str, &str)] = &[
    ("wire [63:0] mul_p =", "hopsync_hdl::tma_engine::dec_dim::TmaMul"),
    ("wire [35:0] wn_c =", "hopsync_hdl::tma_engine::dec_dim::TmaI2cWin"),
    ("wire [17:0] ck_t0 =", "hopsync_hdl::tma_engine::dec_check::TmaI2cCheck"),
    ("wire [255:0] al_win =", "hopsync_hdl::tma_engine::ba_y::TmaAlign"),
    ("out = line[{sel, 7'b0000000} +: 128];", "hopsync_hdl::tma_engine::ba_y::TmaChunkPick"),
    ("wire [2:0] lp_k0 =", "hopsync_hdl::tma_engine::ba_y::TmaLinePlace"),
];

/// A leaf of [`RUST_LEAVES`] in the unit.
#[derive(Debug)]
struct RustLeaf {
    /// its scope path
    path: String,
    /// its Rust type
    ty: &'static str,
    /// (port name, signal) of its inputs
    ins: Vec<(String, usize)>,
    /// (port name, signal) of its outputs
    outs: Vec<(String, usize)>,
}

/// A leaf element with a hand-written model (the registry, keyed by the leaf's Verilog).
#[derive(Debug)]
enum Element {
    /// rust-hdl's `DFF<T>`: q <= d at the edge
    Dff { d: usize, q: usize },
    /// rust-hdl's `RAM<T, N>`: synchronous read (old value on a same-edge write), write enable
    Ram { path: String, ra: usize, rd: usize, wa: usize, wd: usize, we: usize, entries: usize },
}

/// The flattened unit.
struct Gen {
    scopes: Vec<Scope>,
    sigs: Vec<(String, Sig)>,
    by_name: HashMap<String, usize>,
    /// enum variant `Type$Variant` -> discriminant
    enums: HashMap<String, i64>,
    vars: usize,
    /// clock signal -> the clock signal it copies
    clock_src: HashMap<usize, usize>,
    /// the clock inputs of the leaf elements
    leaf_clocks: Vec<usize>,
    elements: Vec<Element>,
    /// the combinational leaves run by their own `update`
    rust_leaves: Vec<RustLeaf>,
}

/// Generates the model of `uut` (connected with `connect_all`) as the source of a struct named
/// `name`; port types are named as their descriptors name them (the caller brings them into
/// scope).
pub fn generate<B: Block>(uut: &B, name: &str) -> Result<String, String> {
    generate_with_outputs(uut, name, &[])
}

/// [`generate`], and a method `eval_outputs` that settles only the statements the top's
/// outputs `outputs` depend on (their fan-in cone): what a caller that reads only those after
/// the edge needs (every other signal is settled again by the next `eval`).
pub fn generate_with_outputs<B: Block>(uut: &B, name: &str, outputs: &[&str]) -> Result<String, String> {
    let mut c = Collect::default();
    uut.accept("top", &mut c);
    let mut g = Gen {
        scopes: c.scopes,
        sigs: vec![],
        by_name: HashMap::new(),
        enums: HashMap::new(),
        vars: 0,
        clock_src: HashMap::new(),
        leaf_clocks: vec![],
        elements: vec![],
        rust_leaves: vec![],
    };
    for (full, bits, desc, kind) in c.atoms {
        let mut ls = vec![];
        let w = leaves(&desc, "", 0, &mut ls).map_err(|e| format!("{e} in signal `{full}`"))?;
        if w != bits {
            return Err(format!("unsupported: signal `{full}` is {bits} bits, its type's fields {w}"));
        }
        for l in &ls {
            if let LeafKind::Enum(t, vs) = &l.kind {
                for (i, v) in vs.iter().enumerate() {
                    g.enums.insert(format!("{t}${}", v.rsplit("::").next().unwrap_or(v)), i as i64);
                }
                let _ = t;
            }
        }
        let sig = Sig { var: g.vars, bits, desc, kind, leaves: ls };
        g.vars += sig.leaves.len();
        g.by_name.insert(full.clone(), g.sigs.len());
        g.sigs.push((full, sig));
    }
    g.elements()?;
    let units = g.units()?;
    let order = g.schedule(&units)?;
    g.check_clocks()?;
    let mut cone = BTreeSet::new();
    for o in outputs {
        let i = *g.by_name.get(&format!("top${o}")).ok_or_else(|| format!("unsupported: no output `{o}` for eval_outputs"))?;
        cone.insert(i);
    }
    let mut in_cone = vec![false; units.len()];
    for &k in order.iter().rev() {
        if units[k].writes.iter().any(|w| cone.contains(w)) {
            in_cone[k] = true;
            cone.extend(units[k].reads.iter().copied());
        }
    }
    let cone_order: Vec<usize> = order.iter().copied().filter(|k| in_cone[*k]).collect();
    g.emit(name, &units, &order, (!outputs.is_empty()).then_some((outputs, &cone_order[..])))
}

impl Gen {
    fn sig(&self, i: usize) -> &Sig {
        &self.sigs[i].1
    }

    /// The signal `rel` of scope `s`.
    fn find(&self, s: usize, rel: &str) -> Result<usize, String> {
        let full = format!("{}${rel}", self.scopes[s].path);
        self.by_name.get(&full).copied().ok_or_else(|| format!("unsupported: no signal `{full}`"))
    }

    /// Recognizes the custom leaves (the registry) and checks every scope is a known kind.
    fn elements(&mut self) -> Result<(), String> {
        for s in 0..self.scopes.len() {
            let path = self.scopes[s].path.clone();
            let text = match &self.scopes[s].hdl {
                Verilog::Combinatorial(_) | Verilog::Empty => continue,
                Verilog::Custom(t) => t.clone(),
                Verilog::Blackbox(_) => return Err(format!("unsupported: Verilog::Blackbox in {path}")),
                Verilog::Wrapper(_) => return Err(format!("unsupported: Verilog::Wrapper in {path}")),
            };
            let mut atoms = self.scopes[s].atoms.clone();
            atoms.sort();
            let is = |names: &[&str]| {
                let mut n: Vec<String> = names.iter().map(|x| x.to_string()).collect();
                n.sort();
                n == atoms
            };
            if text.contains("q <= d;") && is(&["d", "q", "clock"]) {
                let (d, q, clk) = (self.find(s, "d")?, self.find(s, "q")?, self.find(s, "clock")?);
                self.leaf_clocks.push(clk);
                self.elements.push(Element::Dff { d, q });
            } else if text.contains("read_data <= mem[read_address];")
                && text.contains("mem[write_address] <= write_data;")
                && is(&["read_address", "read_clock", "read_data", "write_address", "write_clock", "write_data", "write_enable"])
            {
                let ra = self.find(s, "read_address")?;
                for c in ["read_clock", "write_clock"] {
                    let c = self.find(s, c)?;
                    self.leaf_clocks.push(c);
                }
                let e = Element::Ram {
                    path: path.clone(),
                    ra,
                    rd: self.find(s, "read_data")?,
                    wa: self.find(s, "write_address")?,
                    wd: self.find(s, "write_data")?,
                    we: self.find(s, "write_enable")?,
                    entries: 1usize << self.sig(ra).bits,
                };
                self.elements.push(e);
            } else if let Some((_, ty)) = RUST_LEAVES.iter().find(|(line, _)| text.contains(line)) {
                let (mut ins, mut outs) = (vec![], vec![]);
                for a in &atoms {
                    let i = self.find(s, a)?;
                    match self.sig(i).kind {
                        AtomKind::InputParameter if !self.sig_is_clock(i) => ins.push((a.clone(), i)),
                        AtomKind::OutputParameter => outs.push((a.clone(), i)),
                        _ => return Err(format!("unsupported: signal `{a}` of a combinational leaf (not a data input or output) in {path}")),
                    }
                }
                self.rust_leaves.push(RustLeaf { path: path.clone(), ty, ins, outs });
            } else {
                return Err(format!("unsupported: custom Verilog leaf (not a DFF, RAM or one of gen::RUST_LEAVES) in {path}"));
            }
        }
        Ok(())
    }

    /// The statements to schedule: loops unrolled, macros expanded, comments dropped, clock
    /// copies recorded.
    fn units(&mut self) -> Result<Vec<Unit<'static>>, String> {
        // The scopes' ASTs live as long as the generator; leak a copy for simple lifetimes
        // (build time only).
        let mut out = vec![];
        for s in 0..self.scopes.len() {
            let Verilog::Combinatorial(b) = &self.scopes[s].hdl else { continue };
            let b: &'static VerilogBlock = Box::leak(Box::new(b.clone()));
            self.flatten(s, b, &mut vec![], &mut out)?;
        }
        static NONE: S = S::Comment(String::new());
        for (k, l) in self.rust_leaves.iter().enumerate() {
            let s = self.scopes.iter().position(|x| x.path == l.path).expect("a leaf's scope");
            let reads = l.ins.iter().map(|(_, i)| *i).collect();
            let writes = l.outs.iter().map(|(_, i)| *i).collect();
            out.push(Unit { scope: s, env: vec![], stmt: &NONE, leaf: Some(k), reads, writes });
        }
        Ok(out)
    }

    fn flatten(&mut self, s: usize, b: &'static VerilogBlock, env: &mut Vec<(String, i64)>, out: &mut Vec<Unit<'static>>) -> Result<(), String> {
        for st in b {
            match st {
                S::Comment(_) => {}
                S::Macro(inner) => self.flatten(s, inner, env, out)?,
                S::Loop(l) => {
                    for i in l.from.as_usize()..l.to.as_usize() {
                        env.push((l.index.clone(), i as i64));
                        self.flatten(s, &l.block, env, out)?;
                        env.pop();
                    }
                }
                S::Assignment(E::Signal(t), E::Signal(f)) if self.is_clock(s, t, env) => {
                    let (t, f) = (self.resolve_sig(s, t, env)?, self.resolve_sig(s, f, env)?);
                    if !self.sig_is_clock(f) {
                        return Err(format!("unsupported: clock `{}` driven by a non-clock in {}", self.sigs[t].0, self.scopes[s].path));
                    }
                    if self.clock_src.contains_key(&t) {
                        return Err(format!("unsupported: clock `{}` driven twice", self.sigs[t].0));
                    }
                    self.clock_src.insert(t, f);
                }
                _ => {
                    let (mut r, mut w) = (BTreeSet::new(), BTreeSet::new());
                    self.rw_stmt(s, st, &mut env.clone(), &mut r, &mut w)?;
                    if w.len() > 1 {
                        if let Some(slices) = self.slices(s, st, env, &w)? {
                            let slices: &'static VerilogBlock = Box::leak(Box::new(slices));
                            self.flatten(s, slices, env, out)?;
                            continue;
                        }
                    }
                    let mut u = Unit { scope: s, env: env.clone(), stmt: st, leaf: None, reads: BTreeSet::new(), writes: BTreeSet::new() };
                    // a statement may read what it writes when an earlier statement of its block
                    // writes it too (the default-first form of the module doc of
                    // hopsync_hdl::tma): rust-hdl reads an Out or Local's latest write in
                    // program order, and so does the generated code
                    for x in r.intersection(&w).copied().collect::<Vec<_>>() {
                        if !out.iter().any(|p| p.scope == s && p.writes.contains(&x)) {
                            return Err(format!("unsupported: a statement reads the signal it writes (`{}`) before any other statement of {} writes it", self.sigs[x].0, self.scopes[s].path));
                        }
                        r.remove(&x);
                    }
                    u.reads = r;
                    u.writes = w;
                    out.push(u);
                }
            }
        }
        Ok(())
    }

    /// A statement that writes several signals cut into one statement per signal (each keeps
    /// the conditions around its signal's assignments), so that blocks whose paths cross
    /// within a cycle (module doc of hopsync_hdl::tma) are no cycle of statements. `None`
    /// where the slices could read another value than the statement: a signal it writes is
    /// read before its last write (a slice would see the final value; only when every write
    /// comes before every read is that what the statement reads), or an inner loop writes
    /// `x` at some indices and other signals at others.
    fn slices(&self, s: usize, st: &S, env: &mut Vec<(String, i64)>, w: &BTreeSet<usize>) -> Result<Option<Vec<S>>, String> {
        let mut ev = vec![];
        self.events(s, st, env, &mut ev)?;
        for y in w {
            let last_w = ev.iter().rposition(|(wr, i)| *wr && i == y);
            let first_r = ev.iter().position(|(wr, i)| !*wr && i == y);
            if let (Some(a), Some(b)) = (last_w, first_r) {
                if b < a {
                    return Ok(None);
                }
            }
        }
        let mut out = vec![];
        for &x in w {
            match self.slice(s, st, env, x)? {
                Some(Some(sl)) => out.push(sl),
                Some(None) => {}
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    /// Reads and writes of a statement in program order ((is a write, signal)).
    fn events(&self, s: usize, st: &S, env: &mut Vec<(String, i64)>, ev: &mut Vec<(bool, usize)>) -> Result<(), String> {
        let reads = |e: &E, env: &[(String, i64)], ev: &mut Vec<(bool, usize)>| -> Result<(), String> {
            let mut r = BTreeSet::new();
            self.rw_expr(s, e, env, &mut r)?;
            ev.extend(r.into_iter().map(|i| (false, i)));
            Ok(())
        };
        match st {
            S::Assignment(E::Signal(t), v) => {
                reads(v, env, ev)?;
                ev.push((true, self.resolve_sig(s, t, env)?));
            }
            S::SliceAssignment { base: E::Signal(t), offset, replacement, .. } => {
                reads(offset, env, ev)?;
                reads(replacement, env, ev)?;
                // a part of the signal (its slice keeps every part write in order)
                ev.push((true, self.resolve_sig(s, t, env)?));
            }
            S::If(c) => {
                reads(&c.test, env, ev)?;
                for x in &c.then {
                    self.events(s, x, env, ev)?;
                }
                match &c.otherwise {
                    VerilogBlockOrConditional::Block(b) => b.iter().try_for_each(|x| self.events(s, x, env, ev))?,
                    VerilogBlockOrConditional::Conditional(x) => self.events(s, x, env, ev)?,
                    VerilogBlockOrConditional::None => {}
                }
            }
            S::Match(m) => {
                reads(&m.test, env, ev)?;
                for c in &m.cases {
                    c.block.iter().try_for_each(|x| self.events(s, x, env, ev))?;
                }
            }
            S::Loop(l) => {
                for i in l.from.as_usize()..l.to.as_usize() {
                    env.push((l.index.clone(), i as i64));
                    l.block.iter().try_for_each(|x| self.events(s, x, env, ev))?;
                    env.pop();
                }
            }
            S::Macro(b) => b.iter().try_for_each(|x| self.events(s, x, env, ev))?,
            S::Comment(_) => {}
            _ => return Err(format!("unsupported: statement {st:?} in {}", self.scopes[s].path)),
        }
        Ok(())
    }

    /// `st` with only the assignments to signal `x` (and the conditions around them):
    /// `Some(None)` when it has none, `None` when an inner loop writes `x` at some indices and
    /// other signals at others.
    fn slice(&self, s: usize, st: &S, env: &mut Vec<(String, i64)>, x: usize) -> Result<Option<Option<S>>, String> {
        let block = |b: &VerilogBlock, env: &mut Vec<(String, i64)>| -> Result<Option<VerilogBlock>, String> {
            let mut o = vec![];
            for y in b {
                match self.slice(s, y, env, x)? {
                    None => return Ok(None),
                    Some(Some(y)) => o.push(y),
                    Some(None) => {}
                }
            }
            Ok(Some(o))
        };
        Ok(Some(match st {
            S::Assignment(E::Signal(t), _) | S::SliceAssignment { base: E::Signal(t), .. } => (self.resolve_sig(s, t, env)? == x).then(|| st.clone()),
            S::If(c) => {
                let Some(then) = block(&c.then, env)? else { return Ok(None) };
                let otherwise = match &c.otherwise {
                    VerilogBlockOrConditional::Block(b) => match block(b, env)? {
                        None => return Ok(None),
                        Some(b) if b.is_empty() => VerilogBlockOrConditional::None,
                        Some(b) => VerilogBlockOrConditional::Block(b),
                    },
                    VerilogBlockOrConditional::Conditional(y) => match self.slice(s, y, env, x)? {
                        None => return Ok(None),
                        Some(None) => VerilogBlockOrConditional::None,
                        Some(Some(y)) => VerilogBlockOrConditional::Conditional(Box::new(y)),
                    },
                    VerilogBlockOrConditional::None => VerilogBlockOrConditional::None,
                };
                (!then.is_empty() || !matches!(otherwise, VerilogBlockOrConditional::None))
                    .then(|| S::If(VerilogConditional { test: c.test.clone(), then, otherwise }))
            }
            S::Match(m) => {
                let mut cases = vec![];
                for c in &m.cases {
                    let Some(b) = block(&c.block, env)? else { return Ok(None) };
                    cases.push(VerilogCase { condition: c.condition.clone(), block: b });
                }
                cases.iter().any(|c| !c.block.is_empty()).then(|| S::Match(VerilogMatch { test: m.test.clone(), cases }))
            }
            S::Loop(l) => {
                // the same statements kept at every index, or none
                let mut kept: Option<Vec<bool>> = None;
                for i in l.from.as_usize()..l.to.as_usize() {
                    env.push((l.index.clone(), i as i64));
                    let mut k = vec![];
                    for y in &l.block {
                        let mut r = BTreeSet::new();
                        let mut w = BTreeSet::new();
                        self.rw_stmt(s, y, env, &mut r, &mut w)?;
                        if w.contains(&x) && w.len() > 1 {
                            env.pop();
                            return Ok(None);
                        }
                        k.push(w.contains(&x));
                    }
                    env.pop();
                    if kept.as_ref().is_some_and(|p| *p != k) {
                        return Ok(None);
                    }
                    kept = Some(k);
                }
                let kept = kept.unwrap_or_default();
                let body: VerilogBlock = l.block.iter().zip(&kept).filter(|(_, k)| **k).map(|(y, _)| y.clone()).collect();
                (!body.is_empty()).then(|| S::Loop(VerilogLoop { index: l.index.clone(), from: l.from.clone(), to: l.to.clone(), block: body }))
            }
            S::Macro(b) => {
                let Some(b) = block(b, env)? else { return Ok(None) };
                (!b.is_empty()).then(|| S::Macro(b))
            }
            S::Comment(_) => None,
            _ => return Err(format!("unsupported: statement {st:?} in {}", self.scopes[s].path)),
        }))
    }

    fn sig_is_clock(&self, i: usize) -> bool {
        self.sig(i).leaves.len() == 1 && self.sig(i).leaves[0].kind == LeafKind::Clock
    }

    fn is_clock(&self, s: usize, raw: &str, env: &[(String, i64)]) -> bool {
        self.resolve_sig(s, raw, env).is_ok_and(|i| self.sig_is_clock(i))
    }

    /// A signal name of the AST (`a$b`, `x[31-i]$q`, `d$next`) in scope `s`.
    fn resolve_name(&self, raw: &str, env: &[(String, i64)]) -> Result<String, String> {
        let mut x = raw.trim_start_matches('.').replace('.', "$").replace("::", "$");
        if let Some(t) = x.strip_suffix("$next") {
            x = t.to_string();
        }
        while let Some(a) = x.find('[') {
            let b = x[a..].find(']').ok_or_else(|| format!("unsupported: index in `{raw}`"))? + a;
            let v = eval_index(&x[a + 1..b], env).map_err(|e| format!("unsupported: index `{raw}`: {e}"))?;
            x = format!("{}${v}{}", &x[..a], &x[b + 1..]);
        }
        Ok(x)
    }

    fn resolve_sig(&self, s: usize, raw: &str, env: &[(String, i64)]) -> Result<usize, String> {
        let n = self.resolve_name(raw, env)?;
        self.find(s, &n).map_err(|e| format!("{e} in {}", self.scopes[s].path))
    }

    /// A name in an expression: a loop index, an enum variant or a signal.
    fn resolve(&self, s: usize, raw: &str, env: &[(String, i64)]) -> Result<Result<usize, i128>, String> {
        if let Some((_, v)) = env.iter().rev().find(|(n, _)| n == raw) {
            return Ok(Err(*v as i128));
        }
        let n = self.resolve_name(raw, env)?;
        if let Some(v) = self.enums.get(&n) {
            return Ok(Err(*v as i128));
        }
        match self.find(s, &n) {
            Ok(i) => {
                if self.sig_is_clock(i) {
                    return Err(format!("unsupported: clock `{}` read as data in {}", self.sigs[i].0, self.scopes[s].path));
                }
                Ok(Ok(i))
            }
            Err(_) => Err(format!("unsupported: `{raw}` (not a signal, enum value or loop index) in {}", self.scopes[s].path)),
        }
    }

    /// Signals read and written by a statement.
    fn rw_stmt(&self, s: usize, st: &S, env: &mut Vec<(String, i64)>, r: &mut BTreeSet<usize>, w: &mut BTreeSet<usize>) -> Result<(), String> {
        match st {
            S::Assignment(t, v) => {
                let E::Signal(t) = t else { return Err(format!("unsupported: assignment target {t:?} in {}", self.scopes[s].path)) };
                w.insert(self.resolve_sig(s, t, env)?);
                self.rw_expr(s, v, env, r)
            }
            S::SliceAssignment { base, offset, replacement, .. } => {
                let E::Signal(t) = base else { return Err(format!("unsupported: slice assignment target {base:?} in {}", self.scopes[s].path)) };
                w.insert(self.resolve_sig(s, t, env)?);
                self.rw_expr(s, offset, env, r)?;
                self.rw_expr(s, replacement, env, r)
            }
            S::If(c) => {
                self.rw_expr(s, &c.test, env, r)?;
                self.rw_block(s, &c.then, env, r, w)?;
                match &c.otherwise {
                    VerilogBlockOrConditional::Block(b) => self.rw_block(s, b, env, r, w),
                    VerilogBlockOrConditional::Conditional(x) => self.rw_stmt(s, x, env, r, w),
                    VerilogBlockOrConditional::None => Ok(()),
                }
            }
            S::Match(m) => {
                self.rw_expr(s, &m.test, env, r)?;
                m.cases.iter().try_for_each(|c| self.rw_block(s, &c.block, env, r, w))
            }
            S::Loop(l) => {
                for i in l.from.as_usize()..l.to.as_usize() {
                    env.push((l.index.clone(), i as i64));
                    self.rw_block(s, &l.block, env, r, w)?;
                    env.pop();
                }
                Ok(())
            }
            S::Macro(b) => self.rw_block(s, b, env, r, w),
            S::Comment(_) => Ok(()),
            S::Link(_) => Err(format!("unsupported: link/join in {}", self.scopes[s].path)),
        }
    }

    fn rw_block(&self, s: usize, b: &VerilogBlock, env: &mut Vec<(String, i64)>, r: &mut BTreeSet<usize>, w: &mut BTreeSet<usize>) -> Result<(), String> {
        b.iter().try_for_each(|st| self.rw_stmt(s, st, env, r, w))
    }

    fn rw_expr(&self, s: usize, e: &E, env: &[(String, i64)], r: &mut BTreeSet<usize>) -> Result<(), String> {
        match e {
            E::Signal(n) => {
                if let Ok(i) = self.resolve(s, n, env)? {
                    r.insert(i);
                }
                Ok(())
            }
            E::Literal(_) => Ok(()),
            E::Cast(a, _) | E::Signed(a) | E::Unsigned(a) | E::Paren(a) | E::Unary(_, a) => self.rw_expr(s, a, env, r),
            E::Binary(a, _, b) | E::Index(a, b) | E::Slice(a, _, b) => {
                self.rw_expr(s, a, env, r)?;
                self.rw_expr(s, b, env, r)
            }
            E::IndexReplace(a, b, c) => {
                self.rw_expr(s, a, env, r)?;
                self.rw_expr(s, b, env, r)?;
                self.rw_expr(s, c, env, r)
            }
        }
    }

    /// The evaluation order: writers before readers, writers of one signal in program order,
    /// otherwise source order.
    fn schedule(&self, units: &[Unit]) -> Result<Vec<usize>, String> {
        let mut writers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (k, u) in units.iter().enumerate() {
            for w in &u.writes {
                writers.entry(*w).or_default().push(k);
            }
        }
        let mut succ: Vec<Vec<usize>> = vec![vec![]; units.len()];
        let mut indeg = vec![0usize; units.len()];
        let mut edge = |a: usize, b: usize, succ: &mut Vec<Vec<usize>>| {
            succ[a].push(b);
            indeg[b] += 1;
        };
        for (sig, ws) in &writers {
            let scope = units[ws[0]].scope;
            if ws.iter().any(|k| units[*k].scope != scope) {
                return Err(format!("unsupported: `{}` is written by two blocks", self.sigs[*sig].0));
            }
            for p in ws.windows(2) {
                edge(p[0], p[1], &mut succ);
            }
        }
        for (k, u) in units.iter().enumerate() {
            for r in &u.reads {
                for w in writers.get(r).map(|v| v.as_slice()).unwrap_or(&[]) {
                    edge(*w, k, &mut succ);
                }
            }
        }
        let mut ready: BinaryHeap<std::cmp::Reverse<usize>> = (0..units.len()).filter(|k| indeg[*k] == 0).map(std::cmp::Reverse).collect();
        let mut order = vec![];
        while let Some(std::cmp::Reverse(k)) = ready.pop() {
            order.push(k);
            for &n in &succ[k] {
                indeg[n] -= 1;
                if indeg[n] == 0 {
                    ready.push(std::cmp::Reverse(n));
                }
            }
        }
        if order.len() < units.len() {
            let stuck: BTreeSet<String> = (0..units.len())
                .filter(|k| indeg[*k] > 0)
                .flat_map(|k| units[k].writes.iter().map(|w| self.sigs[*w].0.clone()))
                .take(8)
                .collect();
            // one cycle of statements, named by what each writes
            // (walked backwards: every stuck statement has a stuck predecessor)
            let mut pred: Vec<Vec<usize>> = vec![vec![]; units.len()];
            for (a, ns) in succ.iter().enumerate() {
                for n in ns {
                    pred[*n].push(a);
                }
            }
            let mut at = (0..units.len()).find(|k| indeg[*k] > 0).expect("a stuck unit");
            let mut path = vec![];
            while !path.contains(&at) {
                path.push(at);
                at = *pred[at].iter().find(|n| indeg[**n] > 0).expect("a stuck unit has a stuck predecessor");
            }
            let from = path.iter().position(|k| *k == at).unwrap();
            let cycle: Vec<String> = path[from..].iter().rev().map(|k| format!("{:?}", units[*k].writes.iter().map(|w| self.sigs[*w].0.as_str()).collect::<Vec<_>>())).collect();
            return Err(format!("unsupported: combinational cycle through {stuck:?} (statements writing {})", cycle.join(" -> ")));
        }
        Ok(order)
    }

    /// Every leaf's clock is a chain of copies of the top's clock input, all chains equally long.
    fn check_clocks(&self) -> Result<(), String> {
        let mut depths: BTreeMap<usize, usize> = BTreeMap::new();
        for &leaf in &self.leaf_clocks {
            let (mut at, mut d) = (leaf, 0);
            while let Some(&up) = self.clock_src.get(&at) {
                at = up;
                d += 1;
                if d > self.sigs.len() {
                    return Err("unsupported: clock loop".into());
                }
            }
            let top = &self.sigs[at].0;
            if !(top.starts_with("top$") && top.matches('$').count() == 1 && self.sigs[at].1.kind == AtomKind::InputParameter) {
                return Err(format!("unsupported: clock `{}` is not driven from the top's clock input", self.sigs[leaf].0));
            }
            depths.entry(d).or_insert(leaf);
        }
        if let (Some((lo, _)), Some((hi, leaf))) = (depths.first_key_value(), depths.last_key_value()) {
            if hi - lo > 1 {
                return Err(format!("unsupported: clock `{}` is {hi} copies from the top clock, others {lo} (rust-hdl latches them in settle passes too far apart)", self.sigs[*leaf].0));
            }
        }
        Ok(())
    }
}

/// Evaluates a loop-index expression (`31-i`, `i+1`, `(i*2)`).
fn eval_index(t: &str, env: &[(String, i64)]) -> Result<i64, String> {
    let toks: Vec<char> = t.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = 0;
    let v = ix_sum(&toks, &mut p, env)?;
    if p != toks.len() {
        return Err(format!("`{t}`"));
    }
    Ok(v)
}

fn ix_sum(t: &[char], p: &mut usize, env: &[(String, i64)]) -> Result<i64, String> {
    let mut v = ix_prod(t, p, env)?;
    while *p < t.len() && (t[*p] == '+' || t[*p] == '-') {
        let op = t[*p];
        *p += 1;
        let r = ix_prod(t, p, env)?;
        v = if op == '+' { v + r } else { v - r };
    }
    Ok(v)
}

fn ix_prod(t: &[char], p: &mut usize, env: &[(String, i64)]) -> Result<i64, String> {
    let mut v = ix_atom(t, p, env)?;
    while *p < t.len() && t[*p] == '*' {
        *p += 1;
        v *= ix_atom(t, p, env)?;
    }
    Ok(v)
}

fn ix_atom(t: &[char], p: &mut usize, env: &[(String, i64)]) -> Result<i64, String> {
    if *p < t.len() && t[*p] == '(' {
        *p += 1;
        let v = ix_sum(t, p, env)?;
        if *p >= t.len() || t[*p] != ')' {
            return Err("unbalanced".into());
        }
        *p += 1;
        return Ok(v);
    }
    let start = *p;
    while *p < t.len() && (t[*p].is_alphanumeric() || t[*p] == '_') {
        *p += 1;
    }
    let w: String = t[start..*p].iter().collect();
    let w = w.trim_end_matches("usize").to_string();
    if let Ok(v) = w.parse::<i64>() {
        return Ok(v);
    }
    env.iter().rev().find(|(n, _)| *n == w).map(|(_, v)| *v).ok_or_else(|| format!("unknown `{w}`"))
}

// ---- code emission

impl Gen {
    fn var(&self, sig: usize, leaf: usize) -> String {
        format!("v[{}]", self.sig(sig).var + leaf)
    }

    /// The value of signal `i`.
    fn sig_val(&self, i: usize) -> Val {
        let s = self.sig(i);
        if s.leaves.len() == 1 && s.leaves[0].name.is_empty() {
            Val::Sc(self.var(i, 0), s.leaves[0].w)
        } else {
            Val::Rec((0..s.leaves.len()).map(|k| self.var(i, k)).collect(), s.leaves.iter().map(|l| (l.off, l.w)).collect())
        }
    }

    fn lit_code(&self, v: i128, w: usize, at: &str) -> Result<String, String> {
        if v < 0 || (v as u128) > mask(w) as u128 {
            return Err(format!("unsupported: literal {v} does not fit {w} bits in {at}"));
        }
        Ok(format!("{v}u64"))
    }

    /// Brings two operands to one width (a literal takes the other's).
    fn pair(&self, a: Val, b: Val, at: &str) -> Result<(String, String, usize), String> {
        match (a, b) {
            (Val::Sc(x, wx), Val::Sc(y, wy)) => Ok((x, y, wx.max(wy))),
            (Val::Sc(x, w), Val::Lit(l)) => Ok((x, self.lit_code(l, w, at)?, w)),
            (Val::Lit(l), Val::Sc(y, w)) => Ok((self.lit_code(l, w, at)?, y, w)),
            _ => Err(format!("unsupported: record or literal-only operands in {at}")),
        }
    }

    fn expr(&self, s: usize, e: &E, env: &[(String, i64)]) -> Result<Val, String> {
        let at = &self.scopes[s].path;
        Ok(match e {
            E::Signal(n) => match self.resolve(s, n, env)? {
                Ok(i) => self.sig_val(i),
                Err(v) => Val::Lit(v),
            },
            E::Literal(l) => {
                let (_, limbs) = parse_literal(&l.to_string())?;
                if limbs.iter().skip(1).any(|x| *x != 0) {
                    return Err(format!("unsupported: literal {l} wider than 64 bits in {at}"));
                }
                Val::Lit(limbs[0] as i128)
            }
            E::Paren(a) => self.expr(s, a, env)?,
            E::Cast(a, w) => match self.expr(s, a, env)? {
                Val::Lit(v) => Val::Sc(format!("{}u64", (v as u128 & mask(*w) as u128)), *w),
                Val::Sc(x, _) => Val::Sc(format!("(({x}) & {:#x}u64)", mask(*w)), *w),
                Val::Rec(..) => return Err(format!("unsupported: cast of a record in {at}")),
            },
            E::Signed(_) | E::Unsigned(_) => return Err(format!("unsupported: signed arithmetic in {at}")),
            E::Unary(op, a) => {
                let a = self.expr(s, a, env)?;
                let Val::Sc(x, w) = a else {
                    return match (op, a) {
                        (VerilogOpUnary::Not, Val::Lit(v)) => Ok(Val::Lit(if v == 0 { 1 } else { 0 })),
                        _ => Err(format!("unsupported: unary {op:?} on a record or literal in {at}")),
                    };
                };
                match op {
                    VerilogOpUnary::Not if w == 1 => Val::Sc(format!("({x} ^ 1)"), 1),
                    VerilogOpUnary::Not => Val::Sc(format!("(!{x} & {:#x}u64)", mask(w)), w),
                    VerilogOpUnary::Neg => Val::Sc(format!("({x}.wrapping_neg() & {:#x}u64)", mask(w)), w),
                    VerilogOpUnary::All => Val::Sc(format!("(({x} == {:#x}u64) as u64)", mask(w)), 1),
                    VerilogOpUnary::Any => Val::Sc(format!("(({x} != 0) as u64)"), 1),
                    VerilogOpUnary::Xor => Val::Sc(format!("(({x}).count_ones() as u64 & 1)"), 1),
                }
            }
            E::Binary(a, op, b) => {
                let (a, b) = (self.expr(s, a, env)?, self.expr(s, b, env)?);
                if let (Val::Lit(x), Val::Lit(y)) = (&a, &b) {
                    return lit_binop(*x, op, *y).ok_or_else(|| format!("unsupported: {op:?} of two literals in {at}"));
                }
                if let (Val::Rec(xa, sa), Val::Rec(xb, sb)) = (&a, &b) {
                    if sa != sb || !matches!(op, VerilogOp::Eq | VerilogOp::Ne) {
                        return Err(format!("unsupported: {op:?} of records in {at}"));
                    }
                    let eq: Vec<String> = xa.iter().zip(xb).map(|(x, y)| format!("{x} == {y}")).collect();
                    let c = format!("({})", eq.join(" && "));
                    return Ok(Val::Sc(if matches!(op, VerilogOp::Eq) { format!("({c} as u64)") } else { format!("((!{c}) as u64)") }, 1));
                }
                let shift = matches!(op, VerilogOp::Shl | VerilogOp::Shr);
                if shift {
                    let (Val::Sc(x, w), y) = (a, b) else { return Err(format!("unsupported: shift of a literal in {at}")) };
                    let y = match y {
                        Val::Lit(v) => format!("{v}u64"),
                        Val::Sc(y, _) => y,
                        Val::Rec(..) => return Err(format!("unsupported: shift by a record in {at}")),
                    };
                    let f = if matches!(op, VerilogOp::Shl) { "checked_shl" } else { "checked_shr" };
                    return Ok(Val::Sc(format!("({x}.{f}(({y}).min(64) as u32).unwrap_or(0) & {:#x}u64)", mask(w)), w));
                }
                let (x, y, w) = self.pair(a, b, at)?;
                let m = mask(w);
                match op {
                    VerilogOp::Add => Val::Sc(format!("({x}.wrapping_add({y}) & {m:#x}u64)"), w),
                    VerilogOp::Sub => Val::Sc(format!("({x}.wrapping_sub({y}) & {m:#x}u64)"), w),
                    VerilogOp::Mul => Val::Sc(format!("({x}.wrapping_mul({y}) & {m:#x}u64)"), w),
                    VerilogOp::LogicalAnd => Val::Sc(format!("({x} & {y})"), 1),
                    VerilogOp::LogicalOr => Val::Sc(format!("({x} | {y})"), 1),
                    VerilogOp::BitAnd => Val::Sc(format!("({x} & {y})"), w),
                    VerilogOp::BitOr => Val::Sc(format!("({x} | {y})"), w),
                    VerilogOp::BitXor => Val::Sc(format!("({x} ^ {y})"), w),
                    VerilogOp::Eq => Val::Sc(format!("(({x} == {y}) as u64)"), 1),
                    VerilogOp::Ne => Val::Sc(format!("(({x} != {y}) as u64)"), 1),
                    VerilogOp::Lt => Val::Sc(format!("(({x} < {y}) as u64)"), 1),
                    VerilogOp::Le => Val::Sc(format!("(({x} <= {y}) as u64)"), 1),
                    VerilogOp::Gt => Val::Sc(format!("(({x} > {y}) as u64)"), 1),
                    VerilogOp::Ge => Val::Sc(format!("(({x} >= {y}) as u64)"), 1),
                    VerilogOp::Shl | VerilogOp::Shr => unreachable!("handled above"),
                }
            }
            E::Index(a, i) => {
                let Val::Sc(x, _) = self.expr(s, a, env)? else { return Err(format!("unsupported: bit of a record in {at}")) };
                let i = match self.expr(s, i, env)? {
                    Val::Lit(v) => format!("{v}"),
                    Val::Sc(y, _) => format!("(({y}).min(63))"),
                    Val::Rec(..) => return Err(format!("unsupported: record index in {at}")),
                };
                Val::Sc(format!("(({x} >> {i}) & 1)"), 1)
            }
            E::IndexReplace(a, i, b) => {
                let Val::Sc(x, w) = self.expr(s, a, env)? else { return Err(format!("unsupported: replace_bit of a record in {at}")) };
                let i = match self.expr(s, i, env)? {
                    Val::Lit(v) => format!("{v}"),
                    _ => return Err(format!("unsupported: replace_bit at a computed index in {at}")),
                };
                let b = match self.expr(s, b, env)? {
                    Val::Lit(v) => format!("{}u64", v & 1),
                    Val::Sc(y, _) => y,
                    Val::Rec(..) => return Err(format!("unsupported: record bit in {at}")),
                };
                Val::Sc(format!("(({x} & !(1u64 << {i})) | (({b} & 1) << {i}))"), w)
            }
            E::Slice(a, w, off) => {
                let off = match self.expr(s, off, env)? {
                    Val::Lit(v) => v as usize,
                    _ => return Err(format!("unsupported: slice at a computed offset in {at}")),
                };
                match self.expr(s, a, env)? {
                    Val::Sc(x, _) => Val::Sc(format!("(({x} >> {off}) & {:#x}u64)", mask(*w)), *w),
                    Val::Lit(v) => Val::Lit((v >> off) & mask(*w) as i128),
                    Val::Rec(codes, shape) => self.sub_record(&codes, &shape, off, *w, at)?,
                }
            }
        })
    }

    /// Fields `off..off + w` of a record: one field, part of one field, or a run of whole
    /// fields (a nested record).
    fn sub_record(&self, codes: &[String], shape: &[(usize, usize)], off: usize, w: usize, at: &str) -> Result<Val, String> {
        if let Some(k) = shape.iter().position(|(o, fw)| *o <= off && off + w <= o + fw) {
            let (o, fw) = shape[k];
            if o == off && fw == w {
                return Ok(Val::Sc(codes[k].clone(), w));
            }
            return Ok(Val::Sc(format!("(({} >> {}) & {:#x}u64)", codes[k], off - o, mask(w)), w));
        }
        let ks: Vec<usize> = (0..shape.len()).filter(|k| shape[*k].0 >= off && shape[*k].0 + shape[*k].1 <= off + w).collect();
        let covered: usize = ks.iter().map(|k| shape[*k].1).sum();
        if ks.is_empty() || covered != w {
            return Err(format!("unsupported: slice {off}+:{w} across record fields in {at}"));
        }
        Ok(Val::Rec(ks.iter().map(|k| codes[*k].clone()).collect(), ks.iter().map(|k| (shape[*k].0 - off, shape[*k].1)).collect()))
    }

    /// Writes `val` into fields `[off, off + w)` of signal `t` (the whole signal when w is its
    /// width).
    fn store(&self, out: &mut String, ind: &str, t: usize, off: usize, w: usize, val: Val, at: &str) -> Result<(), String> {
        let sig = self.sig(t);
        let shape: Vec<(usize, usize)> = sig.leaves.iter().map(|l| (l.off, l.w)).collect();
        let vars: Vec<String> = (0..shape.len()).map(|k| self.var(t, k)).collect();
        match self.sub_record(&vars, &shape, off, w, at)? {
            Val::Sc(dst, dw) => {
                let src = match val {
                    Val::Lit(v) => self.lit_code(v & mask(dw) as i128, dw, at)?,
                    Val::Sc(x, _) => format!("({x} & {:#x}u64)", mask(dw)),
                    Val::Rec(..) => return Err(format!("unsupported: record stored into a field of `{}` in {at}", self.sigs[t].0)),
                };
                if dst.starts_with("v[") {
                    writeln!(out, "{ind}{dst} = {src};").unwrap();
                } else {
                    // part of one field: dst is `((v[k] >> o) & m)`
                    let k = shape.iter().position(|(o, fw)| *o <= off && off + w <= o + fw).unwrap();
                    let (o, _) = shape[k];
                    let sh = off - o;
                    let var = &vars[k];
                    writeln!(out, "{ind}{var} = ({var} & !({:#x}u64 << {sh})) | ({src} << {sh});", mask(dw)).unwrap();
                }
            }
            Val::Rec(dst, dshape) => {
                let Val::Rec(src, sshape) = val else { return Err(format!("unsupported: scalar stored into record `{}` in {at}", self.sigs[t].0)) };
                if dshape != sshape {
                    return Err(format!("unsupported: record of another shape stored into `{}` in {at}", self.sigs[t].0));
                }
                // field by field: a record copied whole (a copy of itself at most: a statement
                // reads what it writes only in the default-first form, `units`)
                for (d, s) in dst.iter().zip(src) {
                    writeln!(out, "{ind}{d} = {s};").unwrap();
                }
            }
            Val::Lit(_) => unreachable!("sub_record gives fields"),
        }
        Ok(())
    }

    fn stmt(&self, out: &mut String, ind: &str, s: usize, st: &S, env: &mut Vec<(String, i64)>) -> Result<(), String> {
        let at = self.scopes[s].path.clone();
        match st {
            S::Assignment(E::Signal(t), v) => {
                let t = self.resolve_sig(s, t, env)?;
                let val = self.expr(s, v, env)?;
                self.store(out, ind, t, 0, self.sig(t).bits, val, &at)?;
            }
            S::SliceAssignment { base: E::Signal(t), width, offset, replacement } => {
                let t = self.resolve_sig(s, t, env)?;
                let val = self.expr(s, replacement, env)?;
                match self.expr(s, offset, env)? {
                    Val::Lit(o) => self.store(out, ind, t, o as usize, *width, val, &at)?,
                    Val::Sc(o, _) if self.sig(t).leaves.len() == 1 && *width == 1 => {
                        let d = self.var(t, 0);
                        let src = match val {
                            Val::Lit(v) => format!("{}u64", v & 1),
                            Val::Sc(x, _) => x,
                            Val::Rec(..) => return Err(format!("unsupported: record bit in {at}")),
                        };
                        writeln!(out, "{ind}{{ let o = ({o}).min(63); {d} = ({d} & !(1u64 << o)) | (({src} & 1) << o); }}").unwrap();
                    }
                    _ => return Err(format!("unsupported: slice assignment at a computed offset in {at}")),
                }
            }
            S::If(c) => {
                let Val::Sc(t, _) = self.expr(s, &c.test, env)? else { return Err(format!("unsupported: constant or record condition in {at}")) };
                writeln!(out, "{ind}if {t} != 0 {{").unwrap();
                self.block(out, &format!("{ind}    "), s, &c.then, env)?;
                match &c.otherwise {
                    VerilogBlockOrConditional::None => writeln!(out, "{ind}}}").unwrap(),
                    VerilogBlockOrConditional::Block(b) => {
                        writeln!(out, "{ind}}} else {{").unwrap();
                        self.block(out, &format!("{ind}    "), s, b, env)?;
                        writeln!(out, "{ind}}}").unwrap();
                    }
                    VerilogBlockOrConditional::Conditional(x) => {
                        writeln!(out, "{ind}}} else {{").unwrap();
                        self.stmt(out, &format!("{ind}    "), s, x, env)?;
                        writeln!(out, "{ind}}}").unwrap();
                    }
                }
            }
            S::Match(m) => {
                let Val::Sc(t, _) = self.expr(s, &m.test, env)? else { return Err(format!("unsupported: match on a record or constant in {at}")) };
                writeln!(out, "{ind}#[allow(unreachable_patterns)]\n{ind}match {t} {{").unwrap();
                let mut has_default = false;
                for c in &m.cases {
                    let pat = match c.condition.as_str() {
                        "default" | "_" => {
                            has_default = true;
                            "_".to_string()
                        }
                        "true" => "1".into(),
                        "false" => "0".into(),
                        x => match x.trim_end_matches(|c: char| c.is_alphabetic() && c != '$').parse::<i64>() {
                            Ok(v) => format!("{v}"),
                            Err(_) => match self.enums.get(&x.replace("::", "$")) {
                                Some(v) => format!("{v}"),
                                None => return Err(format!("unsupported: match pattern `{x}` in {at}")),
                            },
                        },
                    };
                    writeln!(out, "{ind}    {pat} => {{").unwrap();
                    self.block(out, &format!("{ind}        "), s, &c.block, env)?;
                    writeln!(out, "{ind}    }}").unwrap();
                }
                if !has_default {
                    writeln!(out, "{ind}    _ => {{}}").unwrap();
                }
                writeln!(out, "{ind}}}").unwrap();
            }
            S::Loop(l) => {
                for i in l.from.as_usize()..l.to.as_usize() {
                    env.push((l.index.clone(), i as i64));
                    self.block(out, ind, s, &l.block, env)?;
                    env.pop();
                }
            }
            S::Macro(b) => self.block(out, ind, s, b, env)?,
            S::Comment(_) => {}
            S::Assignment(..) | S::SliceAssignment { .. } | S::Link(_) => return Err(format!("unsupported: statement {st:?} in {at}")),
        }
        Ok(())
    }

    fn block(&self, out: &mut String, ind: &str, s: usize, b: &VerilogBlock, env: &mut Vec<(String, i64)>) -> Result<(), String> {
        b.iter().try_for_each(|st| self.stmt(out, ind, s, st, env))
    }
}

fn lit_binop(x: i128, op: &VerilogOp, y: i128) -> Option<Val> {
    Some(Val::Lit(match op {
        VerilogOp::Add => x + y,
        VerilogOp::Sub => x - y,
        VerilogOp::Mul => x * y,
        VerilogOp::Eq => (x == y) as i128,
        VerilogOp::Ne => (x != y) as i128,
        VerilogOp::Lt => (x < y) as i128,
        VerilogOp::Le => (x <= y) as i128,
        VerilogOp::Gt => (x > y) as i128,
        VerilogOp::Ge => (x >= y) as i128,
        _ => return None,
    }))
}

/// A Rust identifier for a signal path (`top$exec$s1_valid$q` -> `EXEC__S1_VALID__Q`).
fn ident(path: &str) -> String {
    path.trim_start_matches("top$").replace('$', "__").replace('.', "_").to_uppercase()
}

// ---- the struct

impl Gen {
    fn emit(&self, name: &str, units: &[Unit], order: &[usize], cone: Option<(&[&str], &[usize])>) -> Result<String, String> {
        let mut o = String::new();
        let rams: Vec<&Element> = self.elements.iter().filter(|e| matches!(e, Element::Ram { .. })).collect();
        writeln!(o, "/// Generated by hopsync-hdl-fast's build script from the unit's rust-hdl HDL; see gen.rs.").unwrap();
        if self.rust_leaves.is_empty() {
            writeln!(o, "#[derive(Clone)]").unwrap();
        }
        writeln!(o, "pub struct {name} {{").unwrap();
        writeln!(o, "    /// every field of every signal, one u64 each (indices: the `*` constants)").unwrap();
        writeln!(o, "    pub v: [u64; {}],", self.vars).unwrap();
        for (k, r) in rams.iter().enumerate() {
            let Element::Ram { path, rd, .. } = r else { unreachable!() };
            writeln!(o, "    /// RAM `{path}`: one entry per address, its fields").unwrap();
            writeln!(o, "    pub mem{k}: Vec<[u64; {}]>,", self.sig(*rd).leaves.len()).unwrap();
        }
        for (k, l) in self.rust_leaves.iter().enumerate() {
            writeln!(o, "    /// `{}`: a leaf run by its own `update` (gen::RUST_LEAVES)\n    leaf{k}: {},", l.path, l.ty).unwrap();
        }
        writeln!(o, "}}\n").unwrap();
        // indices of every field
        writeln!(o, "#[allow(dead_code)]\nimpl {name} {{").unwrap();
        let mut seen = BTreeSet::new();
        for (n, s) in &self.sigs {
            for (k, l) in s.leaves.iter().enumerate() {
                if l.kind == LeafKind::Clock {
                    continue;
                }
                let id = if l.name.is_empty() { ident(n) } else { format!("{}___{}", ident(n), ident(&l.name)) };
                if !seen.insert(id.clone()) {
                    return Err(format!("unsupported: two fields named {id}"));
                }
                writeln!(o, "    pub const {id}: usize = {};", s.var + k).unwrap();
            }
        }
        // the signal table (from_block)
        writeln!(o, "    /// (signal, bits, its fields: (index, offset, width))").unwrap();
        writeln!(o, "    pub const SIGNALS: &'static [(&'static str, usize, &'static [(usize, usize, usize)])] = &[").unwrap();
        for (n, s) in &self.sigs {
            let f: Vec<String> = s.leaves.iter().enumerate().map(|(k, l)| format!("({}, {}, {})", s.var + k, l.off, l.w)).collect();
            writeln!(o, "        ({n:?}, {}, &[{}]),", s.bits, f.join(", ")).unwrap();
        }
        writeln!(o, "    ];").unwrap();
        writeln!(o, "    /// the RAMs' scope paths, in `mem0, mem1, ...` order").unwrap();
        let rp: Vec<String> = rams.iter().map(|r| if let Element::Ram { path, .. } = r { format!("{path:?}") } else { unreachable!() }).collect();
        writeln!(o, "    pub const RAMS: &'static [&'static str] = &[{}];", rp.join(", ")).unwrap();
        let clocks: Vec<String> = self.sigs.iter().filter(|(_, s)| s.leaves.iter().any(|l| l.kind == LeafKind::Clock)).map(|(n, _)| format!("{n:?}")).collect();
        writeln!(o, "    /// the clock signals (not modelled: `edge` is the clock)").unwrap();
        writeln!(o, "    pub const CLOCKS: &'static [&'static str] = &[{}];", clocks.join(", ")).unwrap();
        let ram_paths: Vec<String> = rams.iter().map(|r| if let Element::Ram { path, .. } = r { format!("{path:?}") } else { unreachable!() }).collect();
        writeln!(o, "    /// The model of `uut` as it stands (signals, constants, RAM contents).").unwrap();
        writeln!(o, "    pub fn from_block<B: rust_hdl::prelude::Block>(uut: &B) -> Result<Box<Self>, String> {{").unwrap();
        writeln!(o, "        let snap = crate::rt::Snapshot::read(uut, &[{}])?;", ram_paths.join(", ")).unwrap();
        writeln!(o, "        if snap.atoms.len() != Self::SIGNALS.len() {{ return Err(format!(\"generated model is stale: the block has {{}} signals, the model {}\", snap.atoms.len())); }}", self.sigs.len()).unwrap();
        let inits: Vec<String> = (0..rams.len()).map(|k| format!("mem{k}: Vec::new()")).chain((0..self.rust_leaves.len()).map(|k| format!("leaf{k}: Default::default()"))).collect();
        writeln!(o, "        let mut m = Box::new({name} {{ v: [0; {}], {} }});", self.vars, inits.join(", ")).unwrap();
        writeln!(o, "        for (n, bits, fields) in Self::SIGNALS {{ let x = snap.atom(n, *bits)?; for (i, off, w) in *fields {{ m.v[*i] = crate::rt::extract(x, *off, *w); }} }}").unwrap();
        for (k, r) in rams.iter().enumerate() {
            let Element::Ram { path, rd, entries, .. } = r else { unreachable!() };
            let s = self.sig(*rd);
            let n = s.leaves.len();
            writeln!(o, "        m.mem{k} = vec![[0u64; {n}]; {entries}];").unwrap();
            let f: Vec<String> = s.leaves.iter().map(|l| format!("crate::rt::extract(&x, {}, {})", l.off, l.w)).collect();
            writeln!(o, "        for (a, x) in snap.ram({path:?})? {{ if a < {entries} {{ m.mem{k}[a] = [{}]; }} }}", f.join(", ")).unwrap();
        }
        writeln!(o, "        Ok(m)\n    }}\n").unwrap();
        // eval
        writeln!(o, "    /// Settles the combinational logic: every statement once, in dependency order.").unwrap();
        writeln!(o, "    #[inline(never)]\n    pub fn eval(&mut self) {{\n        let v = &mut self.v;").unwrap();
        self.eval_body(&mut o, units, order)?;
        writeln!(o, "    }}\n").unwrap();
        if let Some((outputs, cone)) = cone {
            writeln!(o, "    /// Settles only what the outputs {outputs:?} depend on ({} of {} statements).", cone.len(), order.len()).unwrap();
            writeln!(o, "    #[inline(never)]\n    pub fn eval_outputs(&mut self) {{\n        let v = &mut self.v;").unwrap();
            self.eval_body(&mut o, units, cone)?;
            writeln!(o, "    }}\n").unwrap();
        }
        // edge
        writeln!(o, "    /// The rising clock edge: every DFF takes its input, every RAM reads then writes.").unwrap();
        writeln!(o, "    #[inline(never)]\n    pub fn edge(&mut self) {{").unwrap();
        let mut k_ram = 0;
        for e in &self.elements {
            match e {
                Element::Dff { d, q } => {
                    for k in 0..self.sig(*q).leaves.len() {
                        writeln!(o, "        self.{} = self.{};", self.var(*q, k), self.var(*d, k)).unwrap();
                    }
                }
                Element::Ram { ra, rd, wa, wd, we, entries, .. } => {
                    let n = self.sig(*rd).leaves.len();
                    writeln!(o, "        {{").unwrap();
                    writeln!(o, "            let e = self.mem{k_ram}[(self.{} as usize) % {entries}];", self.var(*ra, 0)).unwrap();
                    for k in 0..n {
                        writeln!(o, "            self.{} = e[{k}];", self.var(*rd, k)).unwrap();
                    }
                    let f: Vec<String> = (0..n).map(|k| format!("self.{}", self.var(*wd, k))).collect();
                    writeln!(o, "            if self.{} != 0 {{ self.mem{k_ram}[(self.{} as usize) % {entries}] = [{}]; }}", self.var(*we, 0), self.var(*wa, 0), f.join(", ")).unwrap();
                    writeln!(o, "        }}").unwrap();
                    k_ram += 1;
                }
            }
        }
        writeln!(o, "    }}\n").unwrap();
        self.ports(&mut o)?;
        writeln!(o, "}}\n").unwrap();
        writeln!(o, "impl crate::rt::Model for {name} {{").unwrap();
        writeln!(o, "    const SIGNALS: &'static [(&'static str, usize, &'static [(usize, usize, usize)])] = {name}::SIGNALS;").unwrap();
        writeln!(o, "    const CLOCKS: &'static [&'static str] = {name}::CLOCKS;").unwrap();
        writeln!(o, "    fn values(&self) -> &[u64] {{ &self.v }}").unwrap();
        writeln!(o, "    fn from_block<B: rust_hdl::prelude::Block>(uut: &B) -> Result<Box<Self>, String> {{ {name}::from_block(uut) }}").unwrap();
        writeln!(o, "    fn eval(&mut self) {{ {name}::eval(self) }}").unwrap();
        writeln!(o, "    fn edge(&mut self) {{ {name}::edge(self) }}").unwrap();
        writeln!(o, "}}").unwrap();
        Ok(o)
    }

    /// The statements `order` of `eval`.
    fn eval_body(&self, o: &mut String, units: &[Unit], order: &[usize]) -> Result<(), String> {
        for &k in order {
            let u = &units[k];
            let writes: Vec<&str> = u.writes.iter().map(|w| self.sigs[*w].0.as_str()).collect();
            writeln!(o, "        // {}", writes.join(", ")).unwrap();
            match u.leaf {
                Some(k) => self.rust_leaf(o, k)?,
                None => self.stmt(o, "        ", u.scope, u.stmt, &mut u.env.clone())?,
            }
        }
        Ok(())
    }

    /// The code of leaf `k`'s `update` in `eval`: its inputs set (and taken, as rust-hdl's
    /// settle takes them), `update`, its outputs read back into the values.
    fn rust_leaf(&self, o: &mut String, k: usize) -> Result<(), String> {
        let l = &self.rust_leaves[k];
        writeln!(o, "        {{\n            let l = &mut self.leaf{k};").unwrap();
        for (port, i) in &l.ins {
            let s = self.sig(*i);
            let e = build(&s.desc, "v", s.var, &mut 0)?;
            writeln!(o, "            l.{port}.next = {e};\n            rust_hdl::prelude::Block::update_all(&mut l.{port});").unwrap();
        }
        writeln!(o, "            rust_hdl::prelude::Logic::update(l);").unwrap();
        for (port, i) in &l.outs {
            let s = self.sig(*i);
            for (j, f) in s.leaves.iter().enumerate() {
                let x = if f.name.is_empty() { format!("l.{port}.next") } else { format!("l.{port}.next.{}", f.name) };
                let conv = match f.kind {
                    LeafKind::Bool | LeafKind::Enum(..) => format!("{x} as u64"),
                    LeafKind::Bits => format!("{x}.to_u64()"),
                    LeafKind::Clock => return Err(format!("unsupported: a clock output of the leaf {}", l.path)),
                };
                writeln!(o, "            v[{}] = {conv};", s.var + j).unwrap();
            }
        }
        writeln!(o, "        }}").unwrap();
        Ok(())
    }

    /// Typed accessors of the top's ports: `set_<input>(value)`, `<output>()`.
    fn ports(&self, o: &mut String) -> Result<(), String> {
        for (n, s) in &self.sigs {
            let Some(port) = n.strip_prefix("top$").filter(|p| !p.contains('$')) else { continue };
            if s.leaves.iter().any(|l| l.kind == LeafKind::Clock) {
                continue;
            }
            let ty = &s.desc.name;
            match s.kind {
                AtomKind::InputParameter => {
                    writeln!(o, "    /// Sets the input `{port}`.\n    pub fn set_{port}(&mut self, x: &{}) {{", rust_ty(ty)).unwrap();
                    for (k, l) in s.leaves.iter().enumerate() {
                        let f = if l.name.is_empty() { "(*x)".to_string() } else { format!("x.{}", l.name) };
                        let conv = match l.kind {
                            LeafKind::Bool | LeafKind::Enum(..) => format!("{f} as u64"),
                            LeafKind::Bits => format!("{f}.to_u64()"),
                            LeafKind::Clock => unreachable!(),
                        };
                        writeln!(o, "        self.v[{}] = {conv};", s.var + k).unwrap();
                    }
                    writeln!(o, "    }}").unwrap();
                }
                AtomKind::OutputParameter => {
                    writeln!(o, "    /// The output `{port}`.\n    pub fn {port}(&self) -> {} {{", rust_ty(ty)).unwrap();
                    let mut k = 0;
                    let e = build(&s.desc, "self.v", s.var, &mut k)?;
                    writeln!(o, "        {e}\n    }}").unwrap();
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The Rust spelling of a descriptor's type name.
fn rust_ty(name: &str) -> String {
    match name {
        "Bit" => "bool".into(),
        n => n.replace("Bits::<", "Bits<"),
    }
}

/// A value of type `d` built from fields `v[var + *k..]`.
fn build(d: &TypeDescriptor, arr: &str, var: usize, k: &mut usize) -> Result<String, String> {
    Ok(match &d.kind {
        TypeKind::Bits(1) if d.name == "Bit" => {
            *k += 1;
            format!("{arr}[{}] != 0", var + *k - 1)
        }
        TypeKind::Bits(n) => {
            *k += 1;
            format!("Bits::<{n}>::from({arr}[{}])", var + *k - 1)
        }
        TypeKind::Enum(vs) => {
            *k += 1;
            let arms: Vec<String> = vs.iter().enumerate().map(|(i, v)| format!("{i} => {v}")).collect();
            format!("match {arr}[{}] {{ {}, _ => unreachable!(\"{} holds no variant\") }}", var + *k - 1, arms.join(", "), d.name)
        }
        TypeKind::Composite(fs) => {
            let mut parts = vec![];
            for f in fs {
                parts.push(format!("{}: {}", f.fieldname, build(&f.kind, arr, var, k)?));
            }
            format!("{} {{ {} }}", d.name, parts.join(", "))
        }
        TypeKind::Signed(_) => return Err(format!("unsupported: Signed port type {}", d.name)),
    })
}
