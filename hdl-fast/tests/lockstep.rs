//! The generated models against rust-hdl's own simulation of the same unit: random inputs on
//! every port, every output compared every cycle (the readies with the clock low, the registered
//! outputs after the edge), and every signal (and RAM word) of the unit compared every 64 cycles.
//! MbarrierUnit (three request ports, two RAMs), NamedBarrierUnit, ClusterBarrierUnit.

use hopsync_hdl::cluster_barrier_unit::*;
use hopsync_hdl::mbarrier_unit::*;
use hopsync_hdl::named_barrier_unit::*;
use hopsync_hdl_fast::models::{ClusterBarrierUnitModel, MbarrierUnitA12, MbarrierUnitA9, NamedBarrierUnitModel};
use hopsync_hdl_fast::rt::{extract, Model, Snapshot};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_hdl::prelude::*;

/// A request: mostly on 4 words with small counts (phases complete, warps wake), now and then
/// any word, out-of-range operands and words beyond the bank (findings).
fn req(rng: &mut StdRng, a: usize, remote: bool) -> MbarrierReq {
    const OPS: [MbarrierOp; 16] = [
        MbarrierOp::Init,
        MbarrierOp::Inval,
        MbarrierOp::Arrive,
        MbarrierOp::ArriveNoComplete,
        MbarrierOp::ArriveExpectTx,
        MbarrierOp::ArriveDrop,
        MbarrierOp::ArriveDropNoComplete,
        MbarrierOp::ArriveDropExpectTx,
        MbarrierOp::ExpectTx,
        MbarrierOp::CompleteTx,
        MbarrierOp::TestWait,
        MbarrierOp::TestWaitParity,
        MbarrierOp::TryWait,
        MbarrierOp::TryWaitParity,
        MbarrierOp::PendingCount,
        MbarrierOp::CpAsyncArriveInc,
    ];
    let op = match rng.gen_range(0..100) {
        _ if remote && rng.gen_bool(0.8) => [MbarrierOp::Arrive, MbarrierOp::ExpectTx, MbarrierOp::CompleteTx][rng.gen_range(0..3)],
        0..=5 => MbarrierOp::Init,
        6..=40 => MbarrierOp::Arrive,
        41..=60 => [MbarrierOp::TryWait, MbarrierOp::TryWaitParity][rng.gen_range(0..2)],
        61..=70 => MbarrierOp::CompleteTx,
        _ => OPS[rng.gen_range(0..16)],
    };
    let word: u64 = match rng.gen_range(0..100) {
        0..=89 => rng.gen_range(0..4),
        90..=98 => rng.gen_range(0..1 << a),
        _ => rng.gen_range(0..1 << 16),
    };
    let count: u64 = match rng.gen_range(0..100) {
        0..=89 => rng.gen_range(1..4),
        90..=92 => 0,
        93..=96 => (1 << 20) - 1,
        _ => rng.gen::<u32>() as u64,
    };
    let tx: u64 = match rng.gen_range(0..100) {
        0..=59 => 0,
        60..=94 => 8,
        95..=97 => rng.gen_range(0..1 << 22),
        _ => rng.gen::<u32>() as u64,
    };
    MbarrierReq {
        op,
        word: word.into(),
        count: count.into(),
        tx_count: tx.into(),
        token: MbarrierWord::from_u64(rng.gen()),
        phase_parity: rng.gen(),
        warp: (rng.gen_range(0..32) as u64).into(),
        suspend_time_hint: (rng.gen_range(0..80) as u64).into(),
        has_suspend_time_hint: rng.gen(),
    }
}

/// What the two simulations are compared on, and how often each event happened.
#[derive(Default, Debug)]
struct Seen {
    responses: u64,
    wakes: u64,
    faults: u64,
}

macro_rules! lockstep {
    ($name:ident, $model:ty, $a:expr) => {
        /// `cycles` random cycles of seed `seed`, compared (see the module doc).
        fn $name(seed: u64, cycles: u64, suspend: u32) -> Seen {
            let mut hdl = Box::new(MbarrierUnit::<$a>::new(suspend));
            hdl.connect_all();
            assert!(simulate(&mut *hdl, 200));
            let mut gen = <$model>::from_block(&*hdl).unwrap();
            // clocked without an `eval` after the edge (the engine skips it when no output can be
            // valid, sim/src/units.rs `MbarGen::cycle`); its first `eval` of each cycle must
            // still settle every signal as rust-hdl does
            let mut lean = <$model>::from_block(&*hdl).unwrap();
            let mut rng = StdRng::seed_from_u64(seed);
            let mut seen = Seen::default();
            for c in 0..cycles {
                let p = [rng.gen_bool(0.8), rng.gen_bool(0.25), rng.gen_bool(0.25)];
                let r = [req(&mut rng, $a, false), req(&mut rng, $a, true), req(&mut rng, $a, true)];
                hdl.local_valid.next = p[0];
                hdl.local_req.next = r[0];
                hdl.tma_valid.next = p[1];
                hdl.tma_req.next = r[1];
                hdl.cluster_valid.next = p[2];
                hdl.cluster_req.next = r[2];
                gen.set_local_valid(&p[0]);
                gen.set_local_req(&r[0]);
                gen.set_tma_valid(&p[1]);
                gen.set_tma_req(&r[1]);
                gen.set_cluster_valid(&p[2]);
                gen.set_cluster_req(&r[2]);
                lean.set_local_valid(&p[0]);
                lean.set_local_req(&r[0]);
                lean.set_tma_valid(&p[1]);
                lean.set_tma_req(&r[1]);
                lean.set_cluster_valid(&p[2]);
                lean.set_cluster_req(&r[2]);
                lean.eval();
                hdl.clock.next = false.into();
                assert!(simulate(&mut *hdl, 200));
                gen.eval();
                let ctx = || format!("seed {seed:#x}, cycle {c}, requests {p:?} {r:?}");
                assert_eq!(
                    (gen.local_ready(), gen.tma_ready(), gen.cluster_ready()),
                    (hdl.local_ready.val(), hdl.tma_ready.val(), hdl.cluster_ready.val()),
                    "readies, {}",
                    ctx()
                );
                assert_eq!(lean.v, gen.v, "the model without the post-edge eval, {}", ctx());
                if c % 64 == 0 {
                    same_state(&*hdl, &gen.v, <$model>::SIGNALS, <$model>::CLOCKS, &ctx());
                }
                hdl.clock.next = true.into();
                assert!(simulate(&mut *hdl, 200));
                gen.edge();
                gen.eval();
                lean.edge();
                assert_eq!(gen.resp(), hdl.resp.val(), "resp, {}", ctx());
                assert_eq!(gen.wake(), hdl.wake.val(), "wake, {}", ctx());
                assert_eq!(gen.fault(), hdl.fault.val(), "fault, {}", ctx());
                if c % 64 == 1 {
                    same_state(&*hdl, &gen.v, <$model>::SIGNALS, <$model>::CLOCKS, &ctx());
                    let snap = Snapshot::read(&*hdl, <$model>::RAMS).unwrap();
                    let mems: [Vec<u64>; 2] = [
                        gen.mem0.iter().map(|e| pack(e)).collect(),
                        gen.mem1.iter().map(|e| pack(e)).collect(),
                    ];
                    for (k, path) in <$model>::RAMS.iter().enumerate() {
                        let mut want = vec![0u64; mems[k].len()];
                        for (a, x) in snap.ram(path).unwrap() {
                            want[a] = extract(&x, 0, 64);
                        }
                        let got = &mems[k];
                        assert!(*got == want, "RAM {path}, {}", ctx());
                    }
                }
                let (rs, w, f) = (hdl.resp.val(), hdl.wake.val(), hdl.fault.val());
                seen.responses += rs.valid as u64;
                seen.wakes += w.valid as u64;
                seen.faults += f.valid as u64;
            }
            seen
        }
    };
}

/// A RAM entry's fields packed as the rust-hdl value (the word bank: MbarrierWord's fields; the
/// shadow bank: one bool).
fn pack(e: &[u64]) -> u64 {
    if e.len() == 1 {
        return e[0];
    }
    assert_eq!(e.len(), 6, "an MbarrierWord has 6 fields");
    let w = MbarrierWord {
        bit0: e[0] != 0,
        expected_complement: e[1].into(),
        tx_negated: e[2].into(),
        bit42: e[3] != 0,
        pending_complement: e[4].into(),
        phase_parity: e[5] != 0,
    };
    w.to_u64()
}

/// Every signal of the generated model equals rust-hdl's.
fn same_state<B: Block>(hdl: &B, v: &[u64], signals: &[(&str, usize, &[(usize, usize, usize)])], clocks: &[&str], ctx: &str) {
    let snap = Snapshot::read(hdl, &[]).unwrap();
    for (n, bits, fields) in signals {
        if clocks.contains(n) {
            continue;
        }
        let x = snap.atom(n, *bits).unwrap();
        for (i, off, w) in *fields {
            assert_eq!(v[*i], extract(x, *off, *w), "signal {n} (field at bit {off}), {ctx}");
        }
    }
}

lockstep!(lockstep_a9, MbarrierUnitA9, 9);
lockstep!(lockstep_a12, MbarrierUnitA12, 12);

#[test]
fn generated_mbarrier_unit_matches_rust_hdl_every_cycle() {
    for (seed, suspend) in [(1u64, 48u32), (2, 0), (0x5EED, 7)] {
        let s = lockstep_a9(seed, 20_000, suspend);
        assert!(s.responses > 10_000 && s.wakes > 500 && s.faults > 500, "stimulus coverage: {s:?}");
    }
    let s = lockstep_a12(3, 5_000, 16);
    assert!(s.responses > 2_000, "{s:?}");
}

#[test]
#[ignore]
fn long_generated_mbarrier_unit_matches_rust_hdl() {
    for seed in 100..110u64 {
        lockstep_a9(seed, 200_000, (seed % 64) as u32);
    }
}

/// Puts the port values (req_valid, req, exit, launch) on rust-hdl's block and on the model
/// (the same port names); the inputs, for the failure message.
macro_rules! set_ports {
    ($hdl:ident, $gen:ident, $valid:expr, $req:ident, $exit:ident, $launch:ident) => {{
        let valid = $valid;
        ($hdl.req_valid.next, $hdl.req.next, $hdl.exit.next, $hdl.launch.next) = (valid, $req, $exit, $launch);
        $gen.set_req_valid(&valid);
        $gen.set_req(&$req);
        $gen.set_exit(&$exit);
        $gen.set_launch(&$launch);
        format!("{valid} {:?} {:?} {:?}", $req, $exit, $launch)
    }};
}

/// One cycle of a single-port unit on both simulators: `set` puts the same random inputs on
/// rust-hdl's block and on the model, `ready` and `outs` read the combinational ready (clock
/// low) and the registered outputs (after the edge) of each, as (rust-hdl's, the model's).
struct Single<B, M, R, O> {
    clock: fn(&mut B) -> &mut Signal<In, Clock>,
    set: fn(&mut StdRng, u64, &mut B, &mut M) -> String,
    ready: fn(&B, &M) -> (R, R),
    outs: fn(&B, &M) -> (O, O),
}

/// `cycles` random cycles of seed `seed` on a fresh `B` and its model `M`, compared every cycle
/// (see the module doc); returns the registered outputs of every cycle (rust-hdl's), for the
/// caller's coverage check.
fn lockstep_single<B, M, R, O>(seed: u64, cycles: u64, io: Single<B, M, R, O>) -> Vec<O>
where
    B: Block + Default,
    M: Model,
    R: PartialEq + std::fmt::Debug,
    O: PartialEq + std::fmt::Debug,
{
    let mut hdl = Box::new(B::default());
    hdl.connect_all();
    assert!(simulate(&mut *hdl, 200));
    let mut gen = M::from_block(&*hdl).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Vec::new();
    for c in 0..cycles {
        let inputs = (io.set)(&mut rng, c, &mut hdl, &mut gen);
        let ctx = || format!("seed {seed:#x}, cycle {c}, inputs {inputs}");
        (io.clock)(&mut hdl).next = false.into();
        assert!(simulate(&mut *hdl, 200));
        gen.eval();
        let (want, got) = (io.ready)(&hdl, &gen);
        assert_eq!(got, want, "ready, {}", ctx());
        if c % 64 == 0 {
            same_state(&*hdl, gen.values(), M::SIGNALS, M::CLOCKS, &ctx());
        }
        (io.clock)(&mut hdl).next = true.into();
        assert!(simulate(&mut *hdl, 200));
        gen.edge();
        gen.eval();
        let (want, got) = (io.outs)(&hdl, &gen);
        assert_eq!(got, want, "registered outputs, {}", ctx());
        if c % 64 == 1 {
            same_state(&*hdl, gen.values(), M::SIGNALS, M::CLOCKS, &ctx());
        }
        seen.push(want);
    }
    seen
}

/// Random NamedBarrierUnit inputs: a launch of 1-4 warps at cycle 0 (and now and then again),
/// requests mostly from those warps on barriers 0-3 with all-thread or warp-multiple counts (so
/// barriers complete), now and then any barrier, odd counts, partial lanes, and exits.
fn named_inputs(rng: &mut StdRng, c: u64, hdl: &mut NamedBarrierUnit, gen: &mut NamedBarrierUnitModel) -> String {
    const OPS: [NamedBarrierOp; 5] = [NamedBarrierOp::Sync, NamedBarrierOp::Arrive, NamedBarrierOp::RedPopc, NamedBarrierOp::RedAnd, NamedBarrierOp::RedOr];
    let warps = rng.gen_range(1..=4u64);
    let launch = NamedBarrierLaunch { valid: c == 0 || rng.gen_bool(0.005), warps: ((1u64 << warps) - 1).into() };
    let exit = WarpExit { valid: rng.gen_bool(0.002), warp: rng.gen_range(0..4u64).into() };
    let count: u64 = match rng.gen_range(0..100) {
        0..=79 => 32 * rng.gen_range(1..=4),
        80..=89 => rng.gen_range(0..300),
        _ => rng.gen::<u32>() as u64,
    };
    let req = NamedBarrierReq {
        op: if rng.gen_bool(0.8) { OPS[rng.gen_range(0..2)] } else { OPS[rng.gen_range(0..5)] },
        barrier: (if rng.gen_bool(0.9) { rng.gen_range(0..4) } else { rng.gen_range(0..16) } as u64).into(),
        warp: (if rng.gen_bool(0.95) { rng.gen_range(0..4) } else { rng.gen_range(0..32) } as u64).into(),
        has_count: rng.gen_bool(0.1),
        count: count.into(),
        lanes: (if rng.gen_bool(0.9) { u32::MAX } else { rng.gen() } as u64).into(),
        pred: (rng.gen::<u32>() as u64).into(),
    };
    set_ports!(hdl, gen, rng.gen_bool(0.7), req, exit, launch)
}

#[test]
fn generated_named_barrier_unit_matches_rust_hdl_every_cycle() {
    for seed in [1u64, 2, 0x5EED] {
        let io = Single {
            clock: |u: &mut NamedBarrierUnit| &mut u.clock,
            set: named_inputs,
            ready: |h, g| (h.req_ready.val(), g.req_ready()),
            outs: |h, g| ((h.done.val(), h.fault.val()), (g.done(), g.fault())),
        };
        let seen = lockstep_single(seed, 20_000, io);
        let done = seen.iter().filter(|(d, _)| d.valid).count();
        let faults = seen.iter().filter(|(_, f)| f.valid).count();
        assert!(done > 300 && faults > 300, "stimulus coverage: {done} completions, {faults} findings");
    }
}

/// Random ClusterBarrierUnit inputs: launches of CTAs 0-3 with 1-4 warps in the first cycles
/// (and now and then again), arrives and waits mostly from those warps (so phases complete),
/// now and then any CTA or warp, and exits.
fn cluster_inputs(rng: &mut StdRng, c: u64, hdl: &mut ClusterBarrierUnit, gen: &mut ClusterBarrierUnitModel) -> String {
    const OPS: [ClusterBarrierOp; 3] = [ClusterBarrierOp::Arrive, ClusterBarrierOp::ArriveRelaxed, ClusterBarrierOp::Wait];
    let launch = ClusterLaunch {
        valid: c < 4 || rng.gen_bool(0.002),
        cta: (if c < 4 { c } else { rng.gen_range(0..4) }).into(),
        warps: ((1u64 << rng.gen_range(1..=4)) - 1).into(),
    };
    let exit = ClusterWarpExit { valid: rng.gen_bool(0.005), cta: rng.gen_range(0..4u64).into(), warp: rng.gen_range(0..4u64).into() };
    let req = ClusterBarrierReq {
        op: OPS[rng.gen_range(0..3)],
        cta: (if rng.gen_bool(0.95) { rng.gen_range(0..4) } else { rng.gen_range(0..16) } as u64).into(),
        warp: (if rng.gen_bool(0.95) { rng.gen_range(0..4) } else { rng.gen_range(0..32) } as u64).into(),
    };
    set_ports!(hdl, gen, rng.gen_bool(0.7), req, exit, launch)
}

#[test]
fn generated_cluster_barrier_unit_matches_rust_hdl_every_cycle() {
    for seed in [1u64, 2, 0x5EED] {
        let io = Single {
            clock: |u: &mut ClusterBarrierUnit| &mut u.clock,
            set: cluster_inputs,
            ready: |h, g| (h.req_ready.val(), g.req_ready()),
            outs: |h, g| ((h.resp.val(), h.done.val(), h.fault.val()), (g.resp(), g.done(), g.fault())),
        };
        let seen = lockstep_single(seed, 20_000, io);
        let resp = seen.iter().filter(|(r, ..)| r.valid).count();
        let done = seen.iter().filter(|(_, d, _)| d.valid).count();
        let faults = seen.iter().filter(|(.., f)| f.valid).count();
        assert!(resp > 2_000 && done > 100 && faults > 500, "stimulus coverage: {resp} responses, {done} completions, {faults} findings");
    }
}
