//! `hopsync cosim`: the RTL engine checked against the golden model, instruction by instruction,
//! in the RTL engine's retire order (the harness and the comparison are
//! [`hopsync_cosim::lockstep`]; this is the driver, which lives here because `hopsync-sim`
//! depends on `hopsync-cosim`).
//!
//! Each cycle the engine's [`Event`]s go to the golden side in order: asynchronous completions
//! and the cycle through its setters, retired instructions through `step`, which executes the
//! same warp's next instruction and compares. TMA completions (each destination CTA of a copy,
//! a store's read and write events) go through `complete_tma` with what the engine wrote, its
//! complete-tx and the bulk async-group state, compared byte for byte. The first divergence
//! stops the run. At the end the two sides' findings must be the same (under `--ub warn` both
//! record them and go on), and the report carries the golden model's: a cosim in which the golden
//! model found something is not a clean run, whatever the comparison says. Races are the golden
//! model's alone (the engine's machine runs without the detector): the golden side records them
//! and goes on, and they are reported as findings of the run.

use crate::config::SmConfig;
use crate::engine::{Engine, Event};
use crate::probe::Probe;
use hopsync_cosim::budget::Footprint;
use hopsync_cosim::exec::Stop;
use hopsync_cosim::lockstep::{CosimReport, Divergence, Golden};
use hopsync_cosim::machine::{Config, Machine, Outcome};
use hopsync_firmware::Program;

/// Hands one engine event to the golden side.
pub fn apply(g: &mut Golden<'_>, ev: Event) -> Result<(), Divergence> {
    match ev {
        Event::Retire { cycle, rec } => {
            g.set_time(cycle);
            g.step(&rec)
        }
        Event::Complete { cycle, seq } => {
            g.set_time(cycle);
            g.complete_async(seq)
        }
        Event::Release { cycle, ev, regs } => {
            g.set_time(cycle);
            g.release(&ev, &regs)
        }
        Event::TmaComplete { cycle, seq, cta, effect } => {
            g.set_time(cycle);
            g.complete_tma(seq, cta, &effect)
        }
        Event::MbarPart { cycle, cta, warp, pc, family, part, half, change } => {
            g.set_time(cycle);
            g.mbar_part(cta, warp, pc, family, part, half, change.as_ref())
        }
        Event::AsyncFault { cycle, seq, cta, kind } => {
            g.set_time(cycle);
            g.expect_async_finding(seq, cta, kind)
        }
    }
}

/// The memory a lockstep run takes: the golden model's machine (with race detection `race`)
/// beside the SM engine's.
pub fn footprint(prog: &Program, sm: &SmConfig, race: hopsync_cosim::race::RaceMode) -> Footprint {
    let mut f = crate::footprint(prog, sm);
    f.extend("golden model:", Footprint::golden_with_race(prog, race));
    f
}

/// Runs `prog` on the RTL engine in lockstep with the golden model.
pub fn run_cosim(prog: &Program, cfg: Config, sm: SmConfig) -> CosimReport {
    run_cosim_probed(prog, cfg, sm, None).0
}

/// [`run_cosim`] with a probe on the RTL engine (`--waves`); gives the probe back.
pub fn run_cosim_probed<'p>(prog: &'p Program, cfg: Config, sm: SmConfig, probe: Option<Box<dyn Probe + 'p>>) -> (CosimReport, Option<Box<dyn Probe + 'p>>) {
    run_cosim_observed(prog, cfg, sm, probe, &mut |_, _, _| {})
}

/// [`run_cosim_probed`] that also shows `observe` each cycle's events and the engine's machine
/// after the cycle, before the golden side takes them (`--timeline`).
pub fn run_cosim_observed<'p>(
    prog: &'p Program,
    cfg: Config,
    sm: SmConfig,
    probe: Option<Box<dyn Probe + 'p>>,
    observe: &mut dyn FnMut(u64, &[Event], &mut Machine<'p>),
) -> (CosimReport, Option<Box<dyn Probe + 'p>>) {
    let period = sm.period_ps();
    let mut e = Engine::new(prog, cfg.clone(), sm);
    e.record_events();
    if let Some(p) = probe {
        e.set_probe(p);
    }
    let mut g = Golden::new(prog, cfg, period);
    let mut divergence = None;
    // The engine's finding came from an asynchronous completion the golden side already replayed.
    let mut async_fault = false;
    let outcome = loop {
        let r = e.step();
        let events = e.take_events();
        observe(e.cycle, &events, &mut e.m);
        for ev in events {
            async_fault |= matches!(ev, Event::AsyncFault { .. });
            if let Err(d) = apply(&mut g, ev) {
                divergence = Some(d);
                break;
            }
        }
        if divergence.is_some() {
            break Outcome::Fault;
        }
        match r {
            Ok(true) => {}
            Ok(false) => break Outcome::Completed,
            Err(Stop::Finding) => break Outcome::Fault,
            Err(Stop::Unsupported(s)) => break Outcome::Unsupported(s),
        }
    };
    if divergence.is_none() {
        g.set_time(e.cycle);
        divergence = match &outcome {
            Outcome::Completed => g.finish(&e.m).err(),
            Outcome::Fault if async_fault => None,
            Outcome::Fault => match e.m.findings().last() {
                Some(f) => {
                    let l = &f.location;
                    let at = (!l.instr.is_empty()).then_some((l.cta, l.warp, l.pc));
                    g.expect_finding(f.kind, at).err()
                }
                None => None,
            },
            Outcome::Unsupported(_) => None,
        };
    }
    if divergence.is_none() {
        // Under `--ub warn` both sides record findings and go on: they must be the same ones.
        divergence = g.compare_findings(e.m.findings()).err();
    }
    let report = CosimReport::new(e.report(&outcome), &g, divergence);
    (report, e.take_probe())
}
