//! The mbarrier family (PTX 9.7.13.15): each body resolves the object's address, checks the
//! object's lifecycle, then applies the pure word semantics of [`crate::mbarrier`] to the 64-bit
//! word in modelled shared memory, lane by lane in lane order.

use super::{lanes, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{Machine, MbarShadow, Place, Poll};
use crate::mbarrier::{self as mb, Arrive, MbarrierState};
use crate::retire::SyncEvent;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

/// An mbarrier located: CTA holding it and shared offset; `remote` when addressed through the
/// `.shared::cluster` window (or a generic address) in another CTA.
#[derive(Debug, Clone, Copy)]
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
    let a = cx.addr(i, k, lane);
    if a % 8 != 0 {
        cx.finding(FindingKind::MbarrierMisaligned, lane, format!("mbarrier address 0x{a:x} is not 8-byte aligned"))?;
        return Err(Stop::Finding);
    }
    let sp = cx.space(i, k);
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
    m.phases_completed += 1;
    if let Some(s) = m.ctas[o.cta as usize].mbarriers.get_mut(&o.off) {
        s.phase += 1;
        s.waited_prev = false;
    }
}

impl Exec for op::MbarrierInit {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let o = locate(cx, i, 0, l)?;
            if cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off) {
                fail(cx, FindingKind::MbarrierInitOnValid, o, l, "mbarrier.init on an object that is still valid (invalidate it first)")?;
                continue;
            }
            let count = cx.src(i, 1, l);
            match mb::init(count) {
                Ok(w) => {
                    let old = word(cx.m, o);
                    store(cx.m, o, old, w);
                    // Phase 0 completes nothing before it: no wait is owed.
                    cx.m.ctas[o.cta as usize].mbarriers.insert(o.off, MbarShadow { phase: 0, waited_prev: true, ..Default::default() });
                }
                Err(k) => cx.finding(k, l, format!("mbarrier.init count {count} is outside 1..=2^20-1"))?,
            }
        }
        Ok(Flow::Next)
    }
}

impl Exec for op::MbarrierInval {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let o = locate(cx, i, 0, l)?;
            require_valid(cx, o, l, "mbarrier.inval")?;
            let old = word(cx.m, o);
            store(cx.m, o, old, mb::inval(old));
            cx.m.ctas[o.cta as usize].mbarriers.remove(&o.off);
        }
        Ok(Flow::Next)
    }
}

fn tx_op(cx: &mut Cx<'_, '_>, i: &Instr, complete: bool) -> R {
    for l in lanes(cx.mask) {
        let o = locate(cx, i, 0, l)?;
        let name = if complete { "mbarrier.complete_tx" } else { "mbarrier.expect_tx" };
        require_valid(cx, o, l, name)?;
        let tx = cx.src(i, 1, l);
        if tx > mb::MAX_TX as u64 {
            fail(cx, FindingKind::MbarrierTxCountOutOfRange, o, l, &format!("{name} of {tx} bytes"))?;
            continue;
        }
        let old = word(cx.m, o);
        let r = if complete { mb::complete_tx(old, tx as u32) } else { mb::expect_tx(old, tx as u32) };
        match r {
            Ok((new, done)) => {
                store(cx.m, o, old, new);
                if done {
                    on_phase_complete(cx.m, o);
                }
            }
            Err(k) => fail(cx, k, o, l, &format!("{name} of {tx}"))?,
        }
    }
    Ok(Flow::Next)
}

impl Exec for op::MbarrierExpectTx {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        tx_op(cx, i, false)
    }
}

impl Exec for op::MbarrierCompleteTx {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        tx_op(cx, i, true)
    }
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

/// One lane's arrive request, before merging.
struct LaneArrive {
    lane: u32,
    obj: Obj,
    count: u64,
    tx: u64,
}

/// mbarrier.arrive / arrive_drop (PTX 9.7.13.15.13, 9.7.13.15.14). As on silicon
/// (docs/MBARRIER_ENCODING.md, "Warps"), the plain forms of one warp-instruction merge per object
/// into a single arrive-on with the counts and tx amounts summed, and every lane gets the same
/// token. The `.noComplete` forms arrive per group of lanes with equal counts (lowest lane's group
/// first); each lane's token reads as if the group's lanes had arrived one by one in lane order,
/// and its low half holds the group's lane mask.
/// The per-lane operand checks of mbarrier.arrive{_drop}{.expect_tx} on object `o` for lane
/// `l`, shared by the golden model and the RTL engine (so they cannot drift): a
/// `.shared::cluster` arrive returns no state token, the count is 1..=2^20-1 and the tx-count
/// at most 2^20-1 (PTX 9.7.13.15.13). Returns (count, tx), or None after a finding (warn mode:
/// the lane makes no arrival).
pub fn arrive_operands(cx: &mut Cx<'_, '_>, i: &Instr, o: Obj, l: u32) -> Result<Option<(u64, u64)>, Stop> {
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

fn arrive_exec(cx: &mut Cx<'_, '_>, i: &Instr, drop: bool) -> R {
    let no_complete = i.has(Mod::NoComplete);
    let name = if drop { "mbarrier.arrive_drop" } else { "mbarrier.arrive" };
    // Per-lane checks, then collect the requests.
    let mut reqs: Vec<LaneArrive> = Vec::with_capacity(cx.mask.count_ones() as usize);
    for l in lanes(cx.mask) {
        let o = locate(cx, i, 1, l)?;
        let Some((count, tx)) = arrive_operands(cx, i, o, l)? else { continue };
        reqs.push(LaneArrive { lane: l, obj: o, count, tx });
    }
    // Group: by object; for .noComplete also by count. Groups keep the order of their lowest lane.
    let mut groups: Vec<(Obj, u64, u32)> = Vec::new(); // (object, count key, lane mask)
    for r in &reqs {
        let key = if no_complete { r.count } else { 0 };
        match groups.iter_mut().find(|(o, k, _)| o.cta == r.obj.cta && o.off == r.obj.off && *k == key) {
            Some(g) => g.2 |= 1 << r.lane,
            None => groups.push((r.obj, key, 1 << r.lane)),
        }
    }
    for (o, _, mask) in groups {
        let members: Vec<&LaneArrive> = reqs.iter().filter(|r| mask >> r.lane & 1 == 1).collect();
        let count: u64 = members.iter().map(|r| r.count).sum();
        let tx: u64 = members.iter().map(|r| r.tx).sum();
        let l = mask.trailing_zeros();
        if count > mb::MAX_COUNT as u64 || tx > mb::MAX_TX as u64 {
            let k = if count > mb::MAX_COUNT as u64 { FindingKind::MbarrierCountOutOfRange } else { FindingKind::MbarrierTxCountOutOfRange };
            fail(cx, k, o, l, &format!("{name} by lanes {mask:#010x}: merged count {count}, tx {tx}"))?;
            continue;
        }
        let a = Arrive { count: count as u32, expect_tx: tx as u32, no_complete, drop };
        match arrive_on(cx.m, o, a) {
            Ok((token, _)) => {
                let phase = cx.m.ctas[o.cta as usize].mbarriers.get(&o.off).map(|s| s.phase).unwrap_or(0);
                // The phase the token belongs to: the one before a completion this arrive caused.
                let token_phase = if (token >> 63 != 0) != (word(cx.m, o) >> 63 != 0) { phase.saturating_sub(1) } else { phase };
                for (k, r) in members.iter().enumerate() {
                    let t = if no_complete {
                        let per = members[0].count;
                        let t = token + ((k as u64 * per) << 43);
                        cx.m.nocomplete_tokens.insert(t | mask as u64);
                        t | mask as u64
                    } else {
                        token
                    };
                    cx.dst(i, 0, r.lane, t);
                    cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].last_arrive[r.lane as usize] = Some((o.cta, o.off, token_phase));
                }
            }
            Err(FindingKind::MbarrierUninitialized) => require_valid(cx, o, l, name)?,
            Err(FindingKind::MbarrierArriveBeforeWait) => fail(
                cx,
                FindingKind::MbarrierArriveBeforeWait,
                o,
                l,
                &format!("{name} in a new phase before any test_wait/try_wait returned true for the phase that just completed (PTX 9.7.13.15.4)"),
            )?,
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
                fail(cx, k, o, l, &what)?
            }
        }
    }
    Ok(Flow::Next)
}

impl Exec for op::MbarrierArrive {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        arrive_exec(cx, i, false)
    }
}

impl Exec for op::MbarrierArriveDrop {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        arrive_exec(cx, i, true)
    }
}

/// The side check of a token wait by lane `l` on `o` with token `arg` (PTX 9.7.13.15.16: the
/// token must name the current or the immediately preceding phase). Silicon compares only the
/// token's parity (bit 63); which phase the token names comes from the phase of this thread's last
/// arrive on this object. Shared with the RTL engine, whose unit cannot see it.
pub fn wait_phase_check(cx: &mut Cx<'_, '_>, o: Obj, l: u32, arg: u64) -> Result<(), Stop> {
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

fn wait_exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    let parity = i.has(Mod::Parity);
    let mut any_false = None;
    for l in lanes(cx.mask) {
        let o = locate(cx, i, 1, l)?;
        require_local(cx, i, o, l)?;
        require_valid(cx, o, l, i.op.name())?;
        let w = word(cx.m, o);
        let arg = cx.src(i, 2, l);
        let done = if parity {
            mb::test_wait_parity(w, arg & 1 == 1)
        } else {
            wait_phase_check(cx, o, l, arg)?;
            mb::test_wait_token(w, arg)
        };
        if done {
            if let Some(s) = cx.m.ctas[o.cta as usize].mbarriers.get_mut(&o.off) {
                if !s.waited_prev {
                    s.waited_prev = true;
                    cx.m.progress();
                }
            }
        } else {
            any_false = Some(o);
        }
        cx.dst(i, 0, l, done as u64);
    }
    let pc = cx.pc;
    let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    warp.polling = any_false.map(|o| Poll { cta: o.cta, offset: o.off, pc });
    Ok(Flow::Next)
}

/// test_wait (PTX 9.7.13.15.16): a non-blocking test for the completion of a phase.
impl Exec for op::MbarrierTestWait {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        wait_exec(cx, i)
    }
}

/// try_wait (PTX 9.7.13.15.16) is "potentially blocking": the thread may be suspended until the
/// phase completes or a time limit passes. Time is the RTL engine's business; the golden model
/// answers at once, which is one of the behaviours the spec allows (a time limit of zero).
impl Exec for op::MbarrierTryWait {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        wait_exec(cx, i)
    }
}

impl Exec for op::MbarrierPendingCount {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let token = cx.src(i, 1, l);
            if !cx.m.nocomplete_tokens.contains(&token) {
                cx.finding(
                    FindingKind::MbarrierPendingCountBadToken,
                    l,
                    format!("mbarrier.pending_count on state 0x{token:016x}, which no .noComplete arrive returned (PTX 9.7.13.15.17)"),
                )?;
            }
            cx.dst(i, 0, l, mb::pending_count(token) as u64);
        }
        Ok(Flow::Next)
    }
}
