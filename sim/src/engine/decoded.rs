//! What the schedulers read of each static instruction every cycle, laid out flat once at engine
//! start: per pc a small `Copy` record ([`IssueFacts`]) and its register lists in one shared
//! array ([`Decoded`]).
//!
//! Every fact here is copied from `timing::analyze`'s [`InstrInfo`] (or the golden model's
//! `exec::runs_ahead_of_barrier`): the timing rules stay in `timing.rs`, this only stores their
//! results where the per-cycle loop reads them with one cache line per instruction instead of an
//! `InstrInfo` of well over 100 bytes and two heap lists. Why: pipeline_32warps asks for the
//! operand wait of a warp's next instruction ~3.6 times per issued instruction, and for its
//! unroll state ~6.5 times (perf probes, docs/PERF.md 2026-11-27 "decoded once").

use super::*;
use hopsync_firmware::ir::Module;

/// One instruction's facts that eligibility and issue read (see [`InstrInfo`] for each).
#[derive(Debug, Clone, Copy)]
pub(super) struct IssueFacts {
    /// Where its registers start in [`Decoded::regs`]: its sources, then its destinations.
    start: u32,
    /// How many sources ([`InstrInfo::srcs`]).
    n_srcs: u32,
    /// How many destinations ([`InstrInfo::dsts`]).
    n_dsts: u32,
    /// [`InstrInfo::class`].
    pub(super) class: Class,
    /// [`InstrInfo::pipe`].
    pub(super) pipe: IssuePipe,
    /// A plain store ([`Class::Mem`], neither [`InstrInfo::load`] nor [`InstrInfo::atomic`]).
    pub(super) plain_store: bool,
    /// A plain load ([`Class::Mem`], [`InstrInfo::load`], not [`InstrInfo::atomic`]).
    pub(super) plain_load: bool,
    /// An mbarrier arrive with release semantics (`timing::arrive_releases`).
    pub(super) arrive_releases: bool,
    /// [`InstrInfo::load`].
    pub(super) load: bool,
    /// [`InstrInfo::sequence`].
    pub(super) sequence: bool,
    /// [`InstrInfo::if_converted`].
    pub(super) if_converted: bool,
    /// [`InstrInfo::ordering`] is not `None`: the warp may wait for it before the instruction
    /// issues (`Engine::hold_for_ordering` reads which ordering from the `InstrInfo`).
    pub(super) ordered: bool,
    /// Its registers read are its sources and its destinations ([`InstrInfo::merges`]).
    merges: bool,
    /// [`InstrInfo::rename`].
    pub(super) rename: bool,
    /// [`InstrInfo::lookahead`].
    pub(super) lookahead: Lookahead,
    /// [`InstrInfo::unroll`] is not `Kept`: [`Engine::unrolled_away`] must look at the warp's
    /// loop count (false: never unrolled away, the common case answered without it).
    pub(super) unrolled: bool,
    /// [`InstrInfo::branch_guard`].
    pub(super) branch_guard: Option<(u32, u64)>,
    /// The wait for the SASS ptxas puts before it, from the warp's previous issue: the largest
    /// of [`InstrInfo::window_base`], [`InstrInfo::yield_cycles`], [`InstrInfo::setup_cycles`]
    /// (they are one wait, `WarpState::operands_at`).
    pub(super) sass_before: u64,
    /// It waits for a named barrier the warp ran ahead of (`exec::runs_ahead_of_barrier` is
    /// `No`).
    pub(super) waits_for_barrier: bool,
}

/// The per-pc table: [`IssueFacts`] and the register lists they index.
pub(super) struct Decoded {
    facts: Vec<IssueFacts>,
    regs: Vec<u32>,
}

/// One instruction's facts and its register lists.
#[derive(Clone, Copy)]
pub(super) struct DecodedInstr<'a> {
    pub(super) f: IssueFacts,
    /// Its sources, then its destinations.
    regs: &'a [u32],
}

impl<'a> DecodedInstr<'a> {
    /// Its sources ([`InstrInfo::srcs`]).
    pub(super) fn srcs(&self) -> &'a [u32] {
        &self.regs[..self.f.n_srcs as usize]
    }

    /// Its destinations ([`InstrInfo::dsts`]).
    pub(super) fn dsts(&self) -> &'a [u32] {
        &self.regs[self.f.n_srcs as usize..]
    }

    /// The registers whose values it needs ([`InstrInfo::reads`]): its sources, and its
    /// destinations when it merges into them.
    pub(super) fn reads(&self) -> &'a [u32] {
        if self.f.merges {
            self.regs
        } else {
            self.srcs()
        }
    }
}

impl Decoded {
    /// The table of `module`'s instructions from their `info` (`timing::analyze`).
    pub(super) fn new(module: &Module, info: &[InstrInfo]) -> Decoded {
        let mut regs = Vec::new();
        let facts = info
            .iter()
            .zip(&module.kernel.body)
            .map(|(i, ins)| {
                let start = regs.len() as u32;
                regs.extend_from_slice(&i.srcs);
                regs.extend_from_slice(&i.dsts);
                IssueFacts {
                    start,
                    n_srcs: i.srcs.len() as u32,
                    n_dsts: i.dsts.len() as u32,
                    class: i.class,
                    pipe: i.pipe,
                    plain_store: i.class == Class::Mem && !i.load && !i.atomic,
                    plain_load: i.class == Class::Mem && i.load && !i.atomic,
                    arrive_releases: timing::arrive_releases(ins),
                    load: i.load,
                    sequence: i.sequence,
                    if_converted: i.if_converted,
                    ordered: i.ordering != Ordering::None,
                    merges: i.merges,
                    rename: i.rename,
                    lookahead: i.lookahead,
                    unrolled: i.unroll != Unroll::Kept,
                    branch_guard: i.branch_guard,
                    sass_before: i.sass_before(),
                    waits_for_barrier: exec::runs_ahead_of_barrier(ins.op) == exec::RunAhead::No,
                }
            })
            .collect();
        Decoded { facts, regs }
    }

    /// Instruction `pc` (`None` past the kernel's end).
    #[inline]
    pub(super) fn at(&self, pc: u32) -> Option<DecodedInstr<'_>> {
        let f = *self.facts.get(pc as usize)?;
        let start = f.start as usize;
        Some(DecodedInstr { f, regs: &self.regs[start..start + (f.n_srcs + f.n_dsts) as usize] })
    }

    /// The facts of instruction `pc` (`None` past the kernel's end).
    #[inline]
    pub(super) fn facts(&self, pc: u32) -> Option<&IssueFacts> {
        self.facts.get(pc as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table says what `timing::analyze` says, instruction by instruction, for every
    /// program the firmware tree runs (bad programs that do not load left out).
    #[test]
    fn the_table_holds_each_instructions_info() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/programs");
        let mut dirs = vec![root];
        let (mut programs, mut instrs) = (0, 0);
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).expect("reads the programs folder") {
                let p = e.expect("a folder entry").path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "ptx") {
                    continue;
                }
                let Ok(prog) = hopsync_firmware::Program::load(&p) else { continue };
                let info = timing::analyze(&prog.module, &SmConfig::sm90());
                let table = Decoded::new(&prog.module, &info);
                for (pc, (i, ins)) in info.iter().zip(&prog.module.kernel.body).enumerate() {
                    let d = table.at(pc as u32).expect("every instruction is in the table");
                    let at = format!("{} pc {pc}", p.display());
                    assert_eq!(d.srcs(), &i.srcs[..], "{at}");
                    assert_eq!(d.dsts(), &i.dsts[..], "{at}");
                    assert_eq!(d.reads(), i.reads().collect::<Vec<_>>(), "{at}");
                    assert_eq!((d.f.class, d.f.pipe, d.f.rename, d.f.lookahead, d.f.branch_guard), (i.class, i.pipe, i.rename, i.lookahead, i.branch_guard), "{at}");
                    assert_eq!(d.f.plain_store, i.class == Class::Mem && !i.load && !i.atomic, "{at}");
                    assert_eq!(d.f.unrolled, i.unroll != Unroll::Kept, "{at}");
                    assert_eq!((d.f.load, d.f.sequence, d.f.if_converted, d.f.ordered), (i.load, i.sequence, i.if_converted, i.ordering != Ordering::None), "{at}");
                    assert_eq!(d.f.sass_before, i.sass_before(), "{at}");
                    assert_eq!(d.f.waits_for_barrier, exec::runs_ahead_of_barrier(ins.op) == exec::RunAhead::No, "{at}");
                    instrs += 1;
                }
                assert!(table.at(info.len() as u32).is_none());
                programs += 1;
            }
        }
        assert!(programs > 100 && instrs > 1000, "{programs} programs, {instrs} instructions");
        // one instruction's record within one cache line (the point of the table)
        assert!(std::mem::size_of::<IssueFacts>() <= 64, "{} bytes", std::mem::size_of::<IssueFacts>());
    }
}
