//! The generated MbarrierUnit models against rust-hdl's own simulation of the same unit: random
//! requests on the three ports, every output compared every cycle (the readies with the clock
//! low, the registered outputs after the edge), and every signal and RAM word of the unit
//! compared every 64 cycles.

use hopsync_hdl::mbarrier_unit::*;
use hopsync_hdl_fast::models::{MbarrierUnitA12, MbarrierUnitA9};
use hopsync_hdl_fast::rt::{extract, Snapshot};
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
                if c % 64 == 0 {
                    same_state(&*hdl, &gen.v, <$model>::SIGNALS, <$model>::CLOCKS, &ctx());
                }
                hdl.clock.next = true.into();
                assert!(simulate(&mut *hdl, 200));
                gen.edge();
                gen.eval();
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
