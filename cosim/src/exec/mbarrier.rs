//! The mbarrier family (PTX 9.7.13.15) and cp.async.mbarrier.arrive (PTX 9.7.13.15.15), in three
//! halves that both engines share, so no check or message exists twice:
//!
//! - [`plan`]: operand evaluation, the checks an mbarrier unit cannot make (address, operand
//!   ranges, the side rules kept in the golden model's shadow: arrive-before-wait, the token's
//!   phase) and the merge of a warp's lanes into one [`MbarStep`] per object, as silicon merges
//!   them (docs/MBARRIER_ENCODING.md "Warps");
//! - the object's own semantics, step by step: the golden model applies the pure word functions
//!   of [`crate::mbarrier`] to the word in modelled shared memory ([`golden_step`]); the RTL engine
//!   sends the steps to its MbarrierUnit, which makes the lifecycle and range checks itself;
//! - [`apply`]: each step's [`MbarOutcome`] into the destination registers and the side facts
//!   (each lane's last arrive, `.noComplete` tokens, waits that returned true, polling).

use super::{lanes, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{AsyncOp, Machine, MbarShadow, Pending, Place, Poll, WARP};
use crate::mbarrier::{self as mb, Arrive, MbarrierState};
use crate::retire::{Retire, SyncEvent};
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

/// An mbarrier located: CTA holding it and shared offset; `remote` when addressed through the
/// `.shared::cluster` window (or a generic address) in another CTA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Obj {
    /// Linear CTA id.
    pub cta: u32,
    /// Shared offset.
    pub off: u32,
    /// Another CTA's object.
    pub remote: bool,
}

/// Resolves address operand `k` to an mbarrier object (PTX 9.7.13.15.1: 8-byte aligned, shared).
pub fn locate(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, lane: u32) -> Result<Obj, Stop> {
    let (a, sp) = (cx.addr(i, k, lane), cx.space(i, k));
    locate_at(cx, lane, a, sp)
}

/// [`locate`] of a lane's address `a` in state space `sp` (a whole-warp body decodes the
/// operand once: [`Cx::addr_lanes`], [`Cx::space`]).
fn locate_at(cx: &mut Cx<'_, '_>, lane: u32, a: u64, sp: Option<Mod>) -> Result<Obj, Stop> {
    if a % 8 != 0 {
        cx.finding(FindingKind::MbarrierMisaligned, lane, format!("mbarrier address 0x{a:x} is not 8-byte aligned"))?;
        return Err(Stop::Finding);
    }
    match cx.m.resolve(cx.cta, cx.warp, lane, sp, a, 8) {
        Ok(Place::Shared(c, o)) => Ok(Obj { cta: c, off: o as u32, remote: c != cx.cta }),
        Ok(_) => {
            cx.finding(FindingKind::MbarrierNotShared, lane, format!("mbarrier address 0x{a:x} is not in shared memory"))?;
            Err(Stop::Finding)
        }
        Err(b) => {
            cx.finding(FindingKind::MbarrierNotShared, lane, format!("mbarrier address: {}", b.msg))?;
            Err(Stop::Finding)
        }
    }
}

/// [`locate_at`] over a warp's lanes in lane order, the last address's object kept: the lanes
/// of a warp-instruction mostly name one object, and an address that located an object for one
/// lane locates the same one for every lane (only a `.local` place depends on the lane, and it is
/// no mbarrier), with no finding.
#[derive(Default)]
struct Located(Option<(u64, Obj)>);

impl Located {
    fn at(&mut self, cx: &mut Cx<'_, '_>, lane: u32, a: u64, sp: Option<Mod>) -> Result<Obj, Stop> {
        match self.0 {
            Some((b, o)) if b == a => Ok(o),
            _ => {
                let o = locate_at(cx, lane, a, sp)?;
                self.0 = Some((a, o));
                Ok(o)
            }
        }
    }
}

fn word(m: &Machine<'_>, o: Obj) -> u64 {
    m.read_mbar_word(o.cta, o.off)
}

fn store(m: &mut Machine<'_>, o: Obj, old: u64, new: u64) {
    m.write(Place::Shared(o.cta, o.off as usize), &new.to_le_bytes());
    m.sync_event(SyncEvent::Mbarrier { cta: o.cta, offset: o.off, old, new });
}

/// Describes an object's state for messages.
pub fn describe(m: &Machine<'_>, o: Obj) -> String {
    let s = MbarrierState::decode(word(m, o));
    format!(
        "mbarrier at cta {} shared 0x{:x}: phase {}, pending {}/{} arrivals, tx-count {}",
        o.cta,
        o.off,
        m.ctas[o.cta as usize].mbarriers.get(&o.off).map(|x| x.phase).unwrap_or(s.phase_parity as u64),
        s.pending_arrivals,
        s.expected_arrivals,
        s.tx_count
    )
}

/// PTX 9.7.13.15.3: every operation but init needs a valid (initialized, not invalidated) object.
fn require_valid(cx: &mut Cx<'_, '_>, o: Obj, lane: u32, what: &str) -> Result<(), Stop> {
    if cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
        return Ok(());
    }
    cx.finding(
        FindingKind::MbarrierUninitialized,
        lane,
        format!("{what} on cta {} shared 0x{:x}, which holds no valid mbarrier (never initialized, or invalidated)", o.cta, o.off),
    )?;
    Err(Stop::Finding)
}

/// PTX 9.7.13.15.8: only arrive, expect_tx and complete_tx may address another CTA's object.
fn require_local(cx: &mut Cx<'_, '_>, i: &Instr, o: Obj, lane: u32) -> Result<(), Stop> {
    if o.remote || i.has(Mod::SharedCluster) {
        cx.finding(
            FindingKind::MbarrierClusterAddressUnsupported,
            lane,
            format!("`{}` on a .shared::cluster mbarrier address (cta {} shared 0x{:x}): only arrive, expect_tx and complete_tx support it (PTX 9.7.13.15.8)", i.op.name(), o.cta, o.off),
        )?;
        return Err(Stop::Finding);
    }
    Ok(())
}

/// Maps a pure-semantics error to a finding with the object's state.
fn fail(cx: &mut Cx<'_, '_>, k: FindingKind, o: Obj, lane: u32, what: &str) -> Result<(), Stop> {
    let state = describe(cx.m, o);
    cx.finding(k, lane, format!("{what}: {state}"))
}

/// Applies phase-completion bookkeeping after an operation that completed a phase.
pub fn on_phase_complete(m: &mut Machine<'_>, o: Obj) {
    crate::race::mbar_phase_complete(m, o.cta, o.off);
    m.phases_completed += 1;
    if let Some(s) = m.ctas[o.cta as usize].mbarriers.get_mut(&o.off) {
        s.phase += 1;
        s.waited_prev = false;
    }
}

/// Which instruction of the family (the engines map every opcode to one; no wildcard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MbarFamily {
    /// mbarrier.init (PTX 9.7.13.15.9)
    Init,
    /// mbarrier.inval (PTX 9.7.13.15.10)
    Inval,
    /// mbarrier.expect_tx (PTX 9.7.13.15.11)
    ExpectTx,
    /// mbarrier.complete_tx (PTX 9.7.13.15.12)
    CompleteTx,
    /// mbarrier.arrive (PTX 9.7.13.15.13)
    Arrive,
    /// mbarrier.arrive_drop (PTX 9.7.13.15.14)
    ArriveDrop,
    /// mbarrier.test_wait (PTX 9.7.13.15.16)
    TestWait,
    /// mbarrier.try_wait (PTX 9.7.13.15.16)
    TryWait,
    /// mbarrier.pending_count (PTX 9.7.13.15.17)
    PendingCount,
    /// cp.async.mbarrier.arrive (PTX 9.7.13.15.15)
    CpAsyncArrive,
}

/// What one step asks of its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MbarStepOp {
    /// Initialize with this expected arrival count (its range is the object's check).
    Init {
        /// the count operand
        count: u64,
    },
    /// Invalidate.
    Inval,
    /// expect-tx (`complete` false) or complete-tx of `tx` bytes (at most 2^20-1).
    Tx {
        /// complete_tx rather than expect_tx
        complete: bool,
        /// bytes
        tx: u64,
    },
    /// One arrive-on of the step's lanes merged: their counts and tx amounts summed.
    Arrive {
        /// summed arrival count
        count: u64,
        /// summed expect-tx bytes
        tx: u64,
        /// arrive_drop
        drop: bool,
        /// `.noComplete`
        no_complete: bool,
        /// `.expect_tx`
        expect_tx: bool,
        /// one lane's count (the `.noComplete` group's lanes have equal counts)
        per: u64,
    },
    /// test_wait / try_wait of the step's lanes, whose operands agree on the question silicon
    /// asks (the token's parity, or the parity operand).
    Wait {
        /// `.parity`: `arg & 1` is the phase parity; else `arg` is a state token
        parity: bool,
        /// the token or parity operand of the step's first lane
        arg: u64,
        /// try_wait (potentially blocking)
        try_wait: bool,
        /// try_wait's suspendTimeHint operand, nanoseconds
        suspend_hint_ns: Option<u64>,
    },
    /// pending_count of a `.noComplete` token (no object: `obj` is the issuing CTA's offset 0).
    PendingCount {
        /// the token
        token: u64,
    },
    /// cp.async.mbarrier.arrive: the pending count raised at once unless `.noinc`, the arrive-on
    /// when the thread's prior cp.async complete.
    CpAsyncArrive {
        /// `.noinc`
        noinc: bool,
    },
}

/// One object-level operation of an mbarrier instruction: the lanes it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MbarStep {
    /// The object.
    pub obj: Obj,
    /// The lanes whose operation this is.
    pub lanes: u32,
    /// The operation.
    pub op: MbarStepOp,
}

/// What a step did to its object, as the engine that performed it saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MbarOutcome {
    /// The word before the step (an arrive's token is its high half).
    pub old: u64,
    /// The step completed the object's current phase.
    pub completed: bool,
    /// The object's phase (the golden shadow's count) after the step.
    pub phase_after: u64,
    /// A wait's answer.
    pub wait: bool,
    /// pending_count's answer.
    pub pending_count: u64,
}

/// Front half: operand evaluation, the checks the object cannot make, and the steps.
pub fn plan(cx: &mut Cx<'_, '_>, i: &Instr, f: MbarFamily) -> Result<Vec<MbarStep>, Stop> {
    match f {
        MbarFamily::Init => plan_per_lane(cx, i, |cx, l, _| Ok(Some(MbarStepOp::Init { count: cx.src(i, 1, l) }))),
        MbarFamily::Inval => plan_per_lane(cx, i, |_, _, _| Ok(Some(MbarStepOp::Inval))),
        MbarFamily::ExpectTx => plan_tx(cx, i, false),
        MbarFamily::CompleteTx => plan_tx(cx, i, true),
        MbarFamily::Arrive => plan_arrive(cx, i, false),
        MbarFamily::ArriveDrop => plan_arrive(cx, i, true),
        MbarFamily::TestWait => plan_wait(cx, i, false),
        MbarFamily::TryWait => plan_wait(cx, i, true),
        MbarFamily::PendingCount => plan_pending_count(cx, i),
        MbarFamily::CpAsyncArrive => plan_per_lane(cx, i, |cx, l, o| {
            if !cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
                cx.finding(FindingKind::MbarrierUninitialized, l, format!("cp.async.mbarrier.arrive on cta {} shared 0x{:x}, which holds no valid mbarrier", o.cta, o.off))?;
                return Ok(None);
            }
            Ok(Some(MbarStepOp::CpAsyncArrive { noinc: i.has(Mod::Noinc) }))
        }),
    }
}

/// One step per lane on the object of operand 0 (`op` None: the lane does nothing, after a
/// finding in warn mode).
fn plan_per_lane(
    cx: &mut Cx<'_, '_>,
    i: &Instr,
    op: impl Fn(&mut Cx<'_, '_>, u32, Obj) -> Result<Option<MbarStepOp>, Stop>,
) -> Result<Vec<MbarStep>, Stop> {
    let mut steps = Vec::new();
    for l in lanes(cx.mask) {
        let o = locate(cx, i, 0, l)?;
        if let Some(op) = op(cx, l, o)? {
            steps.push(MbarStep { obj: o, lanes: 1 << l, op });
        }
    }
    Ok(steps)
}

fn plan_tx(cx: &mut Cx<'_, '_>, i: &Instr, complete: bool) -> Result<Vec<MbarStep>, Stop> {
    let name = if complete { "mbarrier.complete_tx" } else { "mbarrier.expect_tx" };
    plan_per_lane(cx, i, |cx, l, o| {
        let tx = cx.src(i, 1, l);
        // An invalid object is the object's finding (it is checked first); a tx-count beyond the
        // field is the operand's (PTX 9.7.13.15.11: 0..=2^20-1).
        if cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) && tx > mb::MAX_TX as u64 {
            fail(cx, FindingKind::MbarrierTxCountOutOfRange, o, l, &format!("{name} of {tx} bytes"))?;
            return Ok(None);
        }
        Ok(Some(MbarStepOp::Tx { complete, tx }))
    })
}

/// mbarrier.arrive / arrive_drop (PTX 9.7.13.15.13, 9.7.13.15.14). As on silicon
/// (docs/MBARRIER_ENCODING.md, "Warps"), the plain forms of one warp-instruction merge per object
/// into a single arrive-on with the counts and tx amounts summed, and every lane gets the same
/// token. The `.noComplete` forms arrive per group of lanes with equal counts (lowest lane's group
/// first); each lane's token reads as if the group's lanes had arrived one by one in lane order,
/// and its low half holds the group's lane mask.
fn plan_arrive(cx: &mut Cx<'_, '_>, i: &Instr, drop: bool) -> Result<Vec<MbarStep>, Stop> {
    let no_complete = i.has(Mod::NoComplete);
    let expect_tx = i.has(Mod::ExpectTx);
    let name = if drop { "mbarrier.arrive_drop" } else { "mbarrier.arrive" };
    let mut reqs: Vec<(u32, Obj, u64, u64)> = Vec::with_capacity(cx.mask.count_ones() as usize);
    let (addrs, sp) = (cx.addr_lanes(i, 1), cx.space(i, 1));
    let mut located = Located::default();
    for l in lanes(cx.mask) {
        let o = located.at(cx, l, addrs[l as usize], sp)?;
        let Some((count, tx)) = arrive_operands(cx, i, o, l)? else { continue };
        reqs.push((l, o, count, tx));
    }
    // Group: by object; for .noComplete also by count. Groups keep the order of their lowest lane.
    let mut groups: Vec<(Obj, u64, u32)> = Vec::new(); // (object, count key, lane mask)
    for &(l, o, count, _) in &reqs {
        let key = if no_complete { count } else { 0 };
        match groups.iter_mut().find(|(g, k, _)| g.cta == o.cta && g.off == o.off && *k == key) {
            Some(g) => g.2 |= 1 << l,
            None => groups.push((o, key, 1 << l)),
        }
    }
    let mut steps = Vec::with_capacity(groups.len());
    for (o, _, mask) in groups {
        let members = reqs.iter().filter(|r| mask >> r.0 & 1 == 1);
        let (count, tx) = members.clone().fold((0u64, 0u64), |(c, t), r| (c + r.2, t + r.3));
        let per = members.clone().next().map(|r| r.2).unwrap_or(1);
        let l = mask.trailing_zeros();
        if count > mb::MAX_COUNT as u64 || tx > mb::MAX_TX as u64 {
            let k = if count > mb::MAX_COUNT as u64 { FindingKind::MbarrierCountOutOfRange } else { FindingKind::MbarrierTxCountOutOfRange };
            fail(cx, k, o, l, &format!("{name} by lanes {mask:#010x}: merged count {count}, tx {tx}"))?;
            continue;
        }
        // PTX 9.7.13.15.4: no arrive in the next phase before a wait returned true in this one
        // (a side rule of the golden model's shadow; an invalid object is the object's finding).
        if cx.m.ctas[o.cta as usize].mbarriers.get(&o.off).is_some_and(|s| !s.waited_prev) {
            fail(
                cx,
                FindingKind::MbarrierArriveBeforeWait,
                o,
                l,
                &format!("{name} in a new phase before any test_wait/try_wait returned true for the phase that just completed (PTX 9.7.13.15.4)"),
            )?;
            continue;
        }
        steps.push(MbarStep { obj: o, lanes: mask, op: MbarStepOp::Arrive { count, tx, drop, no_complete, expect_tx, per } });
    }
    Ok(steps)
}

/// test_wait / try_wait (PTX 9.7.13.15.16). Silicon compares only the token's phase parity (bit
/// 63; DESIGN.md): lanes whose operands agree there on one object ask the same question, in one
/// step.
fn plan_wait(cx: &mut Cx<'_, '_>, i: &Instr, try_wait: bool) -> Result<Vec<MbarStep>, Stop> {
    let parity = i.has(Mod::Parity);
    let mut steps: Vec<MbarStep> = Vec::new();
    let mut keys: Vec<(u32, u32, u64)> = Vec::new();
    let (addrs, sp, args) = (cx.addr_lanes(i, 1), cx.space(i, 1), cx.src_lanes(i, 2));
    let mut located = Located::default();
    for l in lanes(cx.mask) {
        let o = located.at(cx, l, addrs[l as usize], sp)?;
        require_local(cx, i, o, l)?;
        let arg = args[l as usize];
        if !parity && cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
            wait_phase_check(cx, o, l, arg)?;
        }
        let key = if parity { arg & 1 } else { arg >> 63 };
        match keys.iter().position(|k| *k == (o.cta, o.off, key)) {
            Some(k) => steps[k].lanes |= 1 << l,
            None => {
                keys.push((o.cta, o.off, key));
                let suspend_hint_ns = (try_wait && i.operands.len() > 3).then(|| cx.src(i, 3, l));
                steps.push(MbarStep { obj: o, lanes: 1 << l, op: MbarStepOp::Wait { parity, arg, try_wait, suspend_hint_ns } });
            }
        }
    }
    Ok(steps)
}

/// pending_count (PTX 9.7.13.15.17): the token must come from a `.noComplete` arrive.
fn plan_pending_count(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Vec<MbarStep>, Stop> {
    let mut steps: Vec<MbarStep> = Vec::new();
    for l in lanes(cx.mask) {
        let token = cx.src(i, 1, l);
        if !cx.m.nocomplete_tokens.contains(&token) {
            cx.finding(
                FindingKind::MbarrierPendingCountBadToken,
                l,
                format!("mbarrier.pending_count on state 0x{token:016x}, which no .noComplete arrive returned (PTX 9.7.13.15.17)"),
            )?;
        }
        match steps.iter_mut().find(|s| s.op == MbarStepOp::PendingCount { token }) {
            Some(s) => s.lanes |= 1 << l,
            None => steps.push(MbarStep { obj: Obj { cta: cx.cta, off: 0, remote: false }, lanes: 1 << l, op: MbarStepOp::PendingCount { token } }),
        }
    }
    Ok(steps)
}

/// The golden model of one step: the object's lifecycle and range checks and the pure word
/// semantics of [`crate::mbarrier`] (what the RTL engine's MbarrierUnit does). None: the step
/// changed nothing (a finding, warn mode).
pub fn golden_step(cx: &mut Cx<'_, '_>, i: &Instr, s: &MbarStep) -> Result<Option<MbarOutcome>, Stop> {
    step_word(cx, i, s, false)
}

/// [`golden_step`]; with `increment_only`, a cp.async.mbarrier.arrive step raises the pending
/// count and leaves its deferred arrive-on to the retire ([`cp_async_arrive_on`]).
fn step_word(cx: &mut Cx<'_, '_>, i: &Instr, s: &MbarStep, increment_only: bool) -> Result<Option<MbarOutcome>, Stop> {
    let o = s.obj;
    let l = s.lanes.trailing_zeros();
    let old = word(cx.m, o);
    let mut out = MbarOutcome { old, ..Default::default() };
    match s.op {
        MbarStepOp::Init { count } => {
            if cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
                fail(cx, FindingKind::MbarrierInitOnValid, o, l, "mbarrier.init on an object that is still valid (invalidate it first)")?;
                return Ok(None);
            }
            match mb::init(count) {
                Ok(w) => {
                    store(cx.m, o, old, w);
                    // Phase 0 completes nothing before it: no wait is owed.
                    cx.m.ctas[o.cta as usize].mbarriers.insert(o.off, MbarShadow { phase: 0, waited_prev: true, ..Default::default() });
                }
                Err(k) => {
                    cx.finding(k, l, format!("mbarrier.init count {count} is outside 1..=2^20-1"))?;
                    return Ok(None);
                }
            }
        }
        MbarStepOp::Inval => {
            require_valid(cx, o, l, "mbarrier.inval")?;
            store(cx.m, o, old, mb::inval(old));
            cx.m.ctas[o.cta as usize].mbarriers.remove(&o.off);
        }
        MbarStepOp::Tx { complete, tx } => {
            let name = if complete { "mbarrier.complete_tx" } else { "mbarrier.expect_tx" };
            require_valid(cx, o, l, name)?;
            let r = if complete { mb::complete_tx(old, tx as u32) } else { mb::expect_tx(old, tx as u32) };
            match r {
                Ok((new, done)) => {
                    store(cx.m, o, old, new);
                    if done {
                        on_phase_complete(cx.m, o);
                    }
                }
                Err(k) => {
                    fail(cx, k, o, l, &format!("{name} of {tx}"))?;
                    return Ok(None);
                }
            }
        }
        MbarStepOp::Arrive { count, tx, drop, no_complete, .. } => {
            let name = if drop { "mbarrier.arrive_drop" } else { "mbarrier.arrive" };
            let mask = s.lanes;
            match arrive_on(cx.m, o, Arrive { count: count as u32, expect_tx: tx as u32, no_complete, drop }) {
                Ok((_, completed)) => out.completed = completed,
                Err(FindingKind::MbarrierUninitialized) => {
                    require_valid(cx, o, l, name)?;
                    return Ok(None);
                }
                Err(k) => {
                    let what = match k {
                        FindingKind::MbarrierPendingUnderflow => format!(
                            "{name} by lanes {mask:#010x} with count {count} would take the pending arrival count below zero (PTX 9.7.13.15.2: pending arrivals are 0..=2^20-1)"
                        ),
                        FindingKind::MbarrierNoCompleteCompleted => format!(
                            "{name}.noComplete by lanes {mask:#010x} with count {count} completes the current phase, which is undefined (PTX 9.7.13.15.13)"
                        ),
                        FindingKind::MbarrierTxCountOutOfRange => {
                            format!("{name}.expect_tx of {tx} takes the tx-count outside -(2^20-1)..=2^20-1 (PTX 9.7.13.15.2)")
                        }
                        FindingKind::MbarrierCountOutOfRange => format!("{name} by lanes {mask:#010x} would drop the expected arrival count to zero"),
                        _ => format!("{name} (count {count}, tx {tx})"),
                    };
                    fail(cx, k, o, l, &what)?;
                    return Ok(None);
                }
            }
        }
        MbarStepOp::Wait { parity, arg, .. } => {
            require_valid(cx, o, l, i.op.name())?;
            out.wait = if parity { mb::test_wait_parity(old, arg & 1 == 1) } else { mb::test_wait_token(old, arg) };
        }
        MbarStepOp::PendingCount { token } => out.pending_count = mb::pending_count(token) as u64,
        MbarStepOp::CpAsyncArrive { noinc } => {
            if !noinc {
                let mut st = MbarrierState::decode(old);
                if st.pending_arrivals >= mb::MAX_COUNT {
                    let d = describe(cx.m, o);
                    cx.finding(FindingKind::MbarrierCountOutOfRange, l, format!("cp.async.mbarrier.arrive increments pending past 2^20-1: {d}"))?;
                    return Ok(None);
                }
                st.pending_arrivals += 1;
                store(cx.m, o, old, st.encode());
            }
            if !increment_only {
                cp_async_arrive_on(cx, o, noinc, l);
            }
        }
    }
    out.phase_after = cx.m.ctas[o.cta as usize].mbarriers.get(&o.off).map(|s| s.phase).unwrap_or(0);
    Ok(Some(out))
}

/// The deferred arrive-on of lane `l`'s cp.async.mbarrier.arrive on `o` (PTX 9.7.9.24.3): it
/// is issued (takes its issue number) when the instruction retires and completes after every
/// earlier cp.async of the thread.
fn cp_async_arrive_on(cx: &mut Cx<'_, '_>, o: Obj, noinc: bool, l: u32) {
    let w = &cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    let after = w.cp_inflight.iter().filter(|(ln, _, _)| *ln == l).map(|(_, _, r)| *r).max();
    let ready = after.unwrap_or(0).max(cx.m.async_ready_at());
    cx.m.seq += 1;
    let seq = cx.m.seq;
    crate::race::issued(cx.m, seq, cx.cta, cx.warp, l, cx.pc, crate::race::CP, true);
    cx.m.pending.push(Pending { ready_at: ready, seq, issued_at: (cx.cta, cx.warp, cx.pc), op: AsyncOp::CpAsyncArrive { cta: o.cta, offset: o.off, noinc, warp: cx.warp, lane: l } });
}

/// Back half: each step's outcome (None: the step did nothing) into the destination registers
/// and the side facts: tokens of `.noComplete` arrives, each lane's last arrive, waits that
/// returned true, the warp's polling state.
pub fn apply(cx: &mut Cx<'_, '_>, i: &Instr, steps: &[MbarStep], outcomes: &[Option<MbarOutcome>]) -> Result<(), Stop> {
    let mut polled_false: Option<Obj> = None;
    for (s, out) in steps.iter().zip(outcomes) {
        let Some(out) = out else { continue };
        match s.op {
            MbarStepOp::Arrive { no_complete, per, .. } => {
                let token = mb::token_of(out.old);
                // The phase the token belongs to: the one before a completion this arrive caused.
                let token_phase = if out.completed { out.phase_after.saturating_sub(1) } else { out.phase_after };
                let mut tokens = [token; WARP];
                for (k, l) in lanes(s.lanes).enumerate() {
                    if no_complete {
                        let t = (token + ((k as u64 * per) << 43)) | s.lanes as u64;
                        cx.m.nocomplete_tokens.insert(t);
                        tokens[l as usize] = t;
                    }
                    cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].last_arrive[l as usize] = Some((s.obj.cta, s.obj.off, token_phase));
                }
                cx.dst_lanes_in(i, 0, s.lanes, &tokens);
                crate::race::mbar_arrive(cx.m, cx.cta, cx.warp, s.obj.cta, s.obj.off, out.completed, i.has(Mod::Relaxed));
                cx.m.note_arrival(s.obj.cta, s.obj.off, cx.cta, cx.warp, false);
            }
            MbarStepOp::Wait { .. } => {
                if out.wait {
                    crate::race::mbar_acquire(cx.m, cx.cta, cx.warp, s.obj.cta, s.obj.off, i.has(Mod::Relaxed));
                }
                if out.wait {
                    if let Some(sh) = cx.m.ctas[s.obj.cta as usize].mbarriers.get_mut(&s.obj.off) {
                        if !sh.waited_prev {
                            sh.waited_prev = true;
                            cx.m.progress();
                        }
                    }
                } else {
                    polled_false = Some(s.obj);
                }
                cx.dst_lanes_in(i, 0, s.lanes, &[out.wait as u64; WARP]);
            }
            MbarStepOp::PendingCount { .. } => {
                cx.dst_lanes_in(i, 0, s.lanes, &[out.pending_count; WARP]);
            }
            MbarStepOp::Init { .. } | MbarStepOp::Inval | MbarStepOp::Tx { .. } | MbarStepOp::CpAsyncArrive { .. } => {}
        }
    }
    if matches!(i.op, hopsync_firmware::Opcode::MbarrierTestWait | hopsync_firmware::Opcode::MbarrierTryWait) {
        let pc = cx.pc;
        cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].polling = polled_false.map(|o| Poll { cta: o.cta, offset: o.off, pc });
    }
    Ok(())
}

/// The golden model of an mbarrier instruction: plan, each step's word semantics, apply. Under
/// the lockstep, steps the engine under test already applied ([`step_early`]) are not applied
/// again: their word changes go into this instruction's record in step order.
fn golden(cx: &mut Cx<'_, '_>, i: &Instr, f: MbarFamily) -> R {
    let early = cx.m.mbar_early.iter().position(|e| (e.cta, e.warp, e.pc) == (cx.cta, cx.warp, cx.pc)).map(|k| cx.m.mbar_early.swap_remove(k));
    let (steps, done, before_half) = match early {
        Some(e) => (e.steps, e.done, e.before_half),
        None => {
            let steps = plan(cx, i, f)?;
            let n = steps.len();
            (steps, vec![None; n], vec![None; n])
        }
    };
    let mut outcomes = Vec::with_capacity(steps.len());
    for ((s, d), b) in steps.iter().zip(done).zip(before_half) {
        match d {
            Some((out, changes)) => {
                for e in changes {
                    cx.m.sync_event(e);
                }
                // An early cp.async.mbarrier.arrive step raised the count only; its arrive-on
                // is issued now, in step order, as the engine under test issues it.
                if let (MbarStepOp::CpAsyncArrive { noinc }, Some(_)) = (s.op, &out) {
                    cp_async_arrive_on(cx, s.obj, noinc, s.lanes.trailing_zeros());
                }
                outcomes.push(out);
            }
            None => outcomes.push(arrive_half(golden_step(cx, i, s)?, b)),
        }
    }
    apply(cx, i, &steps, &outcomes)?;
    Ok(Flow::Next)
}

/// An mbarrier instruction in flight in the lockstep, some of whose steps were applied before it
/// retires ([`step_early`]).
#[derive(Debug, Clone)]
pub struct EarlySteps {
    /// Linear CTA id of the issuing warp.
    pub cta: u32,
    /// The issuing warp.
    pub warp: u32,
    /// The instruction.
    pub pc: u32,
    /// Its plan (made at the first early step).
    pub steps: Vec<MbarStep>,
    /// Per step: applied already, with its outcome and the word changes it made.
    pub done: Vec<Option<(Option<MbarOutcome>, Vec<SyncEvent>)>>,
    /// Per step: the expect-tx half of a merged `.expect_tx` arrive was applied already, on this
    /// word (the step is then a plain arrive, whose token is still this word's high half).
    pub before_half: Vec<Option<u64>>,
}

/// The outcome of the arrive half of a step whose expect-tx half ran on word `before` (None:
/// the whole step ran at once): the token comes from the word before the whole step.
fn arrive_half(out: Option<MbarOutcome>, before: Option<u64>) -> Option<MbarOutcome> {
    match (out, before) {
        (Some(o), Some(b)) => Some(MbarOutcome { old: b, ..o }),
        (o, _) => o,
    }
}

/// Lockstep: the expect-tx half of step `k` (a merged multi-lane `.expect_tx` arrive, which the
/// RTL engine's unit performs as expect-tx of the summed bytes, then the arrive of the summed
/// count; PTX 9.7.13.15.7 orders each thread's expect-tx before its arrive-on, and another
/// thread's operation may fall between): applies the expect-tx and leaves a plain arrive as
/// the step. Returns the word changes.
fn expect_half_early(cx: &mut Cx<'_, '_>, i: &Instr, e: usize, k: usize) -> Result<Vec<SyncEvent>, Stop> {
    let s = cx.m.mbar_early[e].steps[k];
    let MbarStepOp::Arrive { tx, expect_tx: true, .. } = s.op else {
        return Err(Stop::Unsupported(format!("the expect-tx half of mbarrier step {k} of `{}`, which is no .expect_tx arrive", i.op.name())));
    };
    if cx.m.mbar_early[e].done[k].is_some() || cx.m.mbar_early[e].before_half[k].is_some() {
        return Err(Stop::Unsupported(format!("the expect-tx half of mbarrier step {k} of `{}` applied twice", i.op.name())));
    }
    let outer = cx.m.rec.replace(Retire::default());
    let r = golden_step(cx, i, &MbarStep { op: MbarStepOp::Tx { complete: false, tx }, ..s });
    let changes = std::mem::replace(&mut cx.m.rec, outer).map(|r| r.sync).unwrap_or_default();
    let out = r?;
    let before = out.map(|o| o.old).unwrap_or_else(|| word(cx.m, s.obj));
    cx.m.mbar_early[e].before_half[k] = Some(before);
    if let MbarStepOp::Arrive { tx, expect_tx, .. } = &mut cx.m.mbar_early[e].steps[k].op {
        (*tx, *expect_tx) = (0, false);
    }
    Ok(changes)
}

/// Lockstep: applies step `k` of the mbarrier instruction (family `f`) that warp (c, w) executes
/// at `pc` for the lanes of `group` now, before the instruction retires, because the engine under
/// test's unit applied it now; returns the word changes. The steps of one warp-instruction can
/// reach different CTAs' units tens of cycles apart (a `.shared::cluster` arrive whose lanes name
/// barriers in several CTAs: CUTLASS consumers releasing a multicast stage), and another
/// instruction may change the same word in between, so the golden model must apply each step
/// when the engine did. The rest of the instruction (the other steps, registers, `apply`) runs
/// when it retires ([`golden`]). `half`: only the expect-tx half of the step
/// ([`expect_half_early`]).
#[allow(clippy::too_many_arguments)]
pub fn step_early(m: &mut Machine<'_>, c: u32, w: u32, pc: u32, group: u32, f: MbarFamily, k: usize, half: bool) -> Result<Vec<SyncEvent>, Stop> {
    let module = m.module();
    let Some(i) = module.kernel.body.get(pc as usize) else { return Err(Stop::Unsupported(format!("mbarrier step at pc {pc}, past the kernel body"))) };
    let mask = m.guard_mask(c, w, pc, group);
    m.cur_at = (c, w, pc);
    let mut cx = Cx { m, cta: c, warp: w, pc, mask, group };
    if !cx.m.mbar_early.iter().any(|e| (e.cta, e.warp, e.pc) == (c, w, pc)) {
        let steps = plan(&mut cx, i, f)?;
        let n = steps.len();
        cx.m.mbar_early.push(EarlySteps { cta: c, warp: w, pc, steps, done: vec![None; n], before_half: vec![None; n] });
    }
    let e = cx.m.mbar_early.iter().position(|e| (e.cta, e.warp, e.pc) == (c, w, pc)).expect("pushed above");
    let Some(s) = cx.m.mbar_early[e].steps.get(k).copied() else {
        return Err(Stop::Unsupported(format!("mbarrier step {k} of `{}`, whose plan has {} steps", i.op.name(), cx.m.mbar_early[e].steps.len())));
    };
    if half {
        return expect_half_early(&mut cx, i, e, k);
    }
    if cx.m.mbar_early[e].done[k].is_some() {
        return Err(Stop::Unsupported(format!("mbarrier step {k} of `{}` applied twice", i.op.name())));
    }
    // The step's word changes, caught in a record of their own.
    let outer = cx.m.rec.replace(Retire::default());
    // (a cp.async.mbarrier.arrive step: the count only; the arrive-on is issued at the retire)
    let r = step_word(&mut cx, i, &s, true);
    let changes = std::mem::replace(&mut cx.m.rec, outer).map(|r| r.sync).unwrap_or_default();
    let out = arrive_half(r?, cx.m.mbar_early[e].before_half[k]);
    cx.m.mbar_early[e].done[k] = Some((out, changes.clone()));
    Ok(changes)
}

/// One arrive-on by a thread (or an asynchronous arrive on its behalf); returns the token.
pub fn arrive_on(m: &mut Machine<'_>, o: Obj, a: Arrive) -> Result<(u64, bool), FindingKind> {
    if !m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
        return Err(FindingKind::MbarrierUninitialized);
    }
    let shadow = m.ctas[o.cta as usize].mbarriers[&o.off];
    if !shadow.waited_prev {
        return Err(FindingKind::MbarrierArriveBeforeWait);
    }
    let old = word(m, o);
    let r = mb::arrive(old, a)?;
    store(m, o, old, r.word);
    if r.completed {
        on_phase_complete(m, o);
    }
    Ok((r.token, r.completed))
}

/// The per-lane operand checks of mbarrier.arrive{_drop}{.expect_tx} on object `o` for lane
/// `l`: a `.shared::cluster` arrive returns no state token, the count is 1..=2^20-1 and the
/// tx-count at most 2^20-1 (PTX 9.7.13.15.13). Returns (count, tx), or None after a finding (warn
/// mode: the lane makes no arrival).
fn arrive_operands(cx: &mut Cx<'_, '_>, i: &Instr, o: Obj, l: u32) -> Result<Option<(u64, u64)>, Stop> {
    let expect = i.has(Mod::ExpectTx);
    let name = if i.op == hopsync_firmware::Opcode::MbarrierArriveDrop { "mbarrier.arrive_drop" } else { "mbarrier.arrive" };
    let wants_token = !matches!(i.operands[0], Operand::Sink);
    if (o.remote || i.has(Mod::SharedCluster)) && wants_token {
        fail(cx, FindingKind::MbarrierClusterAddressUnsupported, o, l, &format!("{name} on a .shared::cluster address cannot return a state token (use `_`)"))?;
        return Ok(None);
    }
    let third = if i.operands.len() > 2 { Some(cx.src(i, 2, l)) } else { None };
    let (count, tx) = if expect { (1, third.unwrap_or(0)) } else { (third.unwrap_or(1), 0) };
    if count == 0 || count > mb::MAX_COUNT as u64 {
        fail(cx, FindingKind::MbarrierCountOutOfRange, o, l, &format!("{name} count {count}"))?;
        return Ok(None);
    }
    if tx > mb::MAX_TX as u64 {
        fail(cx, FindingKind::MbarrierTxCountOutOfRange, o, l, &format!("{name}.expect_tx of {tx} bytes"))?;
        return Ok(None);
    }
    Ok(Some((count, tx)))
}

/// The side check of a token wait by lane `l` on `o` with token `arg` (PTX 9.7.13.15.16: the
/// token must name the current or the immediately preceding phase). Silicon compares only the
/// token's parity (bit 63); which phase the token names comes from the phase of this thread's last
/// arrive on this object.
fn wait_phase_check(cx: &mut Cx<'_, '_>, o: Obj, l: u32, arg: u64) -> Result<(), Stop> {
    let last = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].last_arrive[l as usize];
    let now = cx.m.ctas[o.cta as usize].mbarriers.get(&o.off).map(|s| s.phase).unwrap_or(0);
    if let Some((c, off, p)) = last {
        // The token's phase: the latest phase up to the last arrive with the token's parity.
        let q = if (arg >> 63) == (p & 1) { Some(p) } else { p.checked_sub(1) };
        if let Some(q) = q.filter(|q| c == o.cta && off == o.off && now >= q + 2) {
            fail(
                cx,
                FindingKind::MbarrierWaitPhaseInvalid,
                o,
                l,
                &format!("waiting with a token of phase {q}, but the object is in phase {now}: neither the current phase nor the one before (PTX 9.7.13.15.16)"),
            )?;
        }
    }
    Ok(())
}

macro_rules! mbarrier_bodies {
    ($($op:ident => $f:ident),* $(,)?) => {
        $(
            impl Exec for op::$op {
                fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
                    golden(cx, i, MbarFamily::$f)
                }
            }
        )*
    };
}

// try_wait (PTX 9.7.13.15.16) is "potentially blocking": the thread may be suspended until the
// phase completes or a time limit passes. Time is the RTL engine's business; the golden model
// answers at once, which is one of the behaviours the spec allows (a time limit of zero).
mbarrier_bodies! {
    MbarrierInit => Init,
    MbarrierInval => Inval,
    MbarrierExpectTx => ExpectTx,
    MbarrierCompleteTx => CompleteTx,
    MbarrierArrive => Arrive,
    MbarrierArriveDrop => ArriveDrop,
    MbarrierTestWait => TestWait,
    MbarrierTryWait => TryWait,
    MbarrierPendingCount => PendingCount,
    CpAsyncMbarrierArrive => CpAsyncArrive,
}
