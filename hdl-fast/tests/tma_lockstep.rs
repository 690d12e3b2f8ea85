//! The generated TmaEngine model against rust-hdl's own simulation of the same engine: random
//! commands (bulk loads, stores and reductions, prefetches, shared::cta -> shared::cluster
//! copies, commit_group, tensor loads / stores / prefetches through valid tiled tensor maps of
//! the golden model's encoder, and malformed commands that fault), a global memory answering
//! out of order after random latencies, random back-pressure on every ready, random wait-port
//! queries; every output compared every cycle (the combinational ones with the clock low, the
//! registered ones after the edge) and every signal of the engine every 64 cycles. A second
//! model clocked as the SM engine clocks it (`eval_outputs` after the edge, not `eval`) must
//! hold every signal equal to the first's after each clock-low `eval`.

use hopsync_firmware::tensormap::{TensorMap, TensorMapDataType as Dt, TensorMapSpec, TensorMapSwizzle};
use hopsync_hdl::tma_engine::*;
use hopsync_hdl_fast::models::TmaEngineModel;
use hopsync_hdl_fast::rt::{extract, Snapshot};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_hdl::prelude::*;

/// Global base of the tensors and buffers (DESIGN.md: global buffers from 2^32).
const GBASE: u64 = 0x1_0000_0000;

fn b32(x: u64) -> Bits<32> {
    (x & 0xFFFF_FFFF).into()
}

fn data16(rng: &mut StdRng) -> TmaData16 {
    TmaData16 { w0: b32(rng.gen()), w1: b32(rng.gen()), w2: b32(rng.gen()), w3: b32(rng.gen()) }
}

fn data128(rng: &mut StdRng) -> TmaData128 {
    TmaData128 { c0: data16(rng), c1: data16(rng), c2: data16(rng), c3: data16(rng), c4: data16(rng), c5: data16(rng), c6: data16(rng), c7: data16(rng) }
}

/// A valid tiled tensor map of rank 1..=3 over a small tensor (boxes reach every edge).
fn random_map(rng: &mut StdRng) -> (TensorMap, TmaDescImage) {
    const DT: [Dt; 4] = [Dt::Uint8, Dt::Uint16, Dt::Uint32, Dt::Int64];
    loop {
        let dt = DT[rng.gen_range(0..4)];
        let es = dt.element_size().unwrap() as u64;
        let rank = rng.gen_range(1..=3usize);
        let sw = [TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128][rng.gen_range(0..4)];
        let max_row = sw.span_bytes().map(|s| s as u64).unwrap_or(256).min(256);
        let rowbytes = 16 * rng.gen_range(1..=max_row / 16);
        let mut box_dim = vec![(rowbytes / es) as u32];
        for _ in 1..rank {
            box_dim.push(rng.gen_range(1..=6));
        }
        let gdim: Vec<u64> = box_dim.iter().map(|&bd| rng.gen_range(1..=bd as u64 * 2 + 3)).collect();
        let mut strides = vec![];
        let mut prev = (gdim[0] * es).div_ceil(16) * 16 + 16 * rng.gen_range(0..3);
        for g in gdim.iter().skip(1) {
            strides.push(prev);
            prev = prev * g + 16 * rng.gen_range(0..3);
        }
        let mut spec = TensorMapSpec::tiled(dt, GBASE + 16 * rng.gen_range(0..1 << 12), gdim, strides, box_dim);
        spec.swizzle = sw;
        if let Ok(m) = TensorMap::new(spec) {
            let d = TmaDescImage::from_bytes(&m.encode());
            return (m, d);
        }
    }
}

/// A random command and its tensor-map image.
fn random_command(rng: &mut StdRng, maps: &[(TensorMap, TmaDescImage)]) -> (TmaCmd, TmaDescImage) {
    use TmaCmdKind as K;
    let size = 16 * if rng.gen_bool(0.7) { rng.gen_range(1..=16) } else { rng.gen_range(1..=256) };
    let g = GBASE + if rng.gen_bool(0.7) { 128 * rng.gen_range(0..64) } else { 16 * rng.gen_range(0..512) };
    let smem = if rng.gen_bool(0.7) { 128 * rng.gen_range(0..64) } else { 16 * rng.gen_range(0..1024) };
    let mut c = TmaCmd {
        smem: (smem as u64).into(),
        gaddr_lo: b32(g),
        gaddr_hi: b32(g >> 32),
        size: (size as u64).into(),
        mbar: rng.gen_range(0..4u64).into(),
        cta_mask: (if rng.gen_bool(0.8) { 1u64 } else { rng.gen_range(0..16) }).into(),
        thread: rng.gen_range(0..8u64).into(),
        ..Default::default()
    };
    let red = [TmaRedOp::Copy, TmaRedOp::Add, TmaRedOp::Min, TmaRedOp::Xor];
    let mut desc = TmaDescImage::default();
    c.kind = match rng.gen_range(0..100) {
        0..=24 => K::BulkLoad,
        25..=39 => K::BulkStore,
        40..=49 => K::CommitGroup,
        50..=54 => K::BulkPrefetch,
        55..=59 => {
            c.dsmem = ((16 * rng.gen_range(0..1024)) as u64).into();
            c.cta_mask = (1u64 << rng.gen_range(0..4)).into();
            K::BulkS2S
        }
        60..=94 => {
            let (m, d) = &maps[rng.gen_range(0..maps.len())];
            desc = *d;
            c.dims = (m.rank() as u64).into();
            let co: Vec<u64> = (0..5).map(|_| (rng.gen_range(-8i64..24) as i32 as u32) as u64).collect();
            (c.c0, c.c1, c.c2, c.c3, c.c4) = (b32(co[0]), b32(co[1]), b32(co[2]), b32(co[3]), b32(co[4]));
            [K::TensorLoad, K::TensorLoad, K::TensorStore, K::TensorPrefetch][rng.gen_range(0..4)]
        }
        _ => {
            // malformed: misaligned, a rank that is not the map's, garbage images
            c.smem = rng.gen_range(0..1u64 << 18).into();
            c.size = rng.gen_range(0..1u64 << 20).into();
            c.dims = rng.gen_range(0..8u64).into();
            if rng.gen_bool(0.5) {
                let mut img = [0u8; 128];
                rng.fill(&mut img[..]);
                desc = TmaDescImage::from_bytes(&img);
            }
            [K::BulkLoad, K::BulkStore, K::TensorLoad, K::BulkS2S][rng.gen_range(0..4)]
        }
    };
    if matches!(c.kind, K::BulkStore | K::TensorStore | K::BulkS2S) && rng.gen_bool(0.3) {
        c.red_op = red[rng.gen_range(0..4)];
    }
    (c, desc)
}

/// What a run saw (stimulus coverage).
#[derive(Default, Debug)]
struct Seen {
    commands: u64,
    reads: u64,
    writes: u64,
    smem_writes: u64,
    smem_reads: u64,
    complete_tx: u64,
    faults: u64,
}

/// Every signal of the model equals rust-hdl's.
fn same_state(hdl: &TmaEngine, m: &TmaEngineModel, ctx: &str) {
    let snap = Snapshot::read(hdl, &[]).unwrap();
    for (n, bits, fields) in TmaEngineModel::SIGNALS {
        if TmaEngineModel::CLOCKS.contains(n) {
            continue;
        }
        let x = snap.atom(n, *bits).unwrap();
        for (i, off, w) in *fields {
            assert_eq!(m.v[*i], extract(x, *off, *w), "signal {n} (field at bit {off}), {ctx}");
        }
    }
}

/// `cycles` random cycles of seed `seed` on a fresh engine and its model (module doc).
fn lockstep_tma(seed: u64, cycles: u64, params: (u32, u32, u32)) -> Seen {
    let mut hdl = Box::new(TmaEngine::new(params.0, params.1, params.2));
    hdl.connect_all();
    assert!(simulate(&mut *hdl, 400));
    let mut gen = TmaEngineModel::from_block(&*hdl).unwrap();
    let mut lean = TmaEngineModel::from_block(&*hdl).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let maps: Vec<_> = (0..6).map(|_| random_map(&mut rng)).collect();
    let rank: u64 = rng.gen_range(0..4);
    let mut seen = Seen::default();
    let mut cmd: Option<(TmaCmd, TmaDescImage)> = None;
    // global memory: (ready at cycle, response)
    let mut inflight: Vec<(u64, TmaGmemResp)> = vec![];
    let mut rd_data = TmaData128::default();
    for c in 0..cycles {
        if cmd.is_none() && rng.gen_bool(0.15) {
            cmd = Some(random_command(&mut rng, &maps));
        }
        let ready: Vec<usize> = (0..inflight.len()).filter(|k| inflight[*k].0 <= c).collect();
        let resp = (!ready.is_empty() && rng.gen_bool(0.8)).then(|| inflight.swap_remove(ready[rng.gen_range(0..ready.len())]).1);
        let (cm, cd) = cmd.unwrap_or_default();
        let ins = (
            rank,
            cm,
            cd,
            cmd.is_some(),
            rng.gen_bool(0.85),
            resp.unwrap_or_default(),
            resp.is_some(),
            (rng.gen_bool(0.9), rng.gen_bool(0.9), rd_data, rng.gen_bool(0.9)),
            (rng.gen_range(0..4u64), rng.gen_bool(0.3), rng.gen_range(0..8u64)),
        );
        let (smem_wr_ready, smem_rd_ready, data, mbar_ready) = ins.7;
        let (wait_n, wait_read, wait_thread) = ins.8;
        hdl.cta_rank.next = rank.into();
        hdl.cmd.next = cm;
        hdl.cmd_desc.next = cd;
        hdl.cmd_valid.next = ins.3;
        hdl.gmem_req_ready.next = ins.4;
        hdl.gmem_resp.next = ins.5;
        hdl.gmem_resp_valid.next = ins.6;
        hdl.smem_wr_ready.next = smem_wr_ready;
        hdl.smem_rd_ready.next = smem_rd_ready;
        hdl.smem_rd_data.next = data;
        hdl.mbar_ready.next = mbar_ready;
        hdl.wait_n.next = wait_n.into();
        hdl.wait_read.next = wait_read;
        hdl.wait_thread.next = wait_thread.into();
        for m in [&mut gen, &mut lean] {
            m.set_cta_rank(&rank.into());
            m.set_cmd(&cm);
            m.set_cmd_desc(&cd);
            m.set_cmd_valid(&ins.3);
            m.set_gmem_req_ready(&ins.4);
            m.set_gmem_resp(&ins.5);
            m.set_gmem_resp_valid(&ins.6);
            m.set_smem_wr_ready(&smem_wr_ready);
            m.set_smem_rd_ready(&smem_rd_ready);
            m.set_smem_rd_data(&data);
            m.set_mbar_ready(&mbar_ready);
            m.set_wait_n(&wait_n.into());
            m.set_wait_read(&wait_read);
            m.set_wait_thread(&wait_thread.into());
        }
        hdl.clock.next = false.into();
        assert!(simulate(&mut *hdl, 400));
        gen.eval();
        lean.eval();
        let ctx = || format!("seed {seed:#x}, params {params:?}, cycle {c}, inputs {ins:?}");
        assert!(lean.v == gen.v, "the model with eval_outputs after the edge, {}", ctx());
        let comb = |h: &TmaEngine| {
            format!(
                "{:?}",
                (
                    h.cmd_ready.val(),
                    (h.gmem_req_valid.val(), h.gmem_req.val(), h.gmem_resp_ready.val()),
                    (h.smem_wr_valid.val(), h.smem_wr.val()),
                    (h.smem_rd_valid.val(), h.smem_rd_addr.val(), h.smem_rd_cen.val()),
                    (h.mbar_valid.val(), h.mbar_req.val(), h.mbar_cta.val(), h.mbar_remote.val()),
                    (h.wait_done.val(), h.groups_pending.val(), h.store_read_done.val(), h.store_writes_issued.val()),
                )
            )
        };
        let comb_gen = |g: &TmaEngineModel| {
            format!(
                "{:?}",
                (
                    g.cmd_ready(),
                    (g.gmem_req_valid(), g.gmem_req(), g.gmem_resp_ready()),
                    (g.smem_wr_valid(), g.smem_wr()),
                    (g.smem_rd_valid(), g.smem_rd_addr(), g.smem_rd_cen()),
                    (g.mbar_valid(), g.mbar_req(), g.mbar_cta(), g.mbar_remote()),
                    (g.wait_done(), g.groups_pending(), g.store_read_done(), g.store_writes_issued()),
                )
            )
        };
        assert_eq!(comb_gen(&gen), comb(&hdl), "combinational outputs, {}", ctx());
        if c % 64 == 0 {
            same_state(&hdl, &gen, &ctx());
        }
        // the environment takes what was offered and accepted
        if hdl.cmd_ready.val() && cmd.is_some() {
            cmd = None;
            seen.commands += 1;
        }
        if hdl.gmem_req_valid.val() && ins.4 {
            let r = hdl.gmem_req.val();
            let resp = TmaGmemResp { tag: r.tag, write: r.write, data: if r.write { TmaData128::default() } else { data128(&mut rng) } };
            inflight.push((c + rng.gen_range(2..40), resp));
            if r.write {
                seen.writes += 1;
            } else {
                seen.reads += 1;
            }
        }
        seen.smem_writes += (hdl.smem_wr_valid.val() && smem_wr_ready) as u64;
        seen.complete_tx += (hdl.mbar_valid.val() && mbar_ready) as u64;
        if hdl.smem_rd_valid.val() && smem_rd_ready {
            seen.smem_reads += 1;
            rd_data = data128(&mut rng);
        }
        hdl.clock.next = true.into();
        assert!(simulate(&mut *hdl, 400));
        gen.edge();
        gen.eval();
        lean.edge();
        lean.eval_outputs();
        assert_eq!(
            (lean.fault(), lean.idle(), lean.groups_pending()),
            (hdl.fault.val(), hdl.idle.val(), hdl.groups_pending.val()),
            "registered outputs after eval_outputs, {}",
            ctx()
        );
        assert_eq!(
            (gen.fault(), gen.idle(), gen.groups_pending()),
            (hdl.fault.val(), hdl.idle.val(), hdl.groups_pending.val()),
            "registered outputs, {}",
            ctx()
        );
        seen.faults += hdl.fault.val().valid as u64;
        if c % 64 == 1 {
            same_state(&hdl, &gen, &ctx());
        }
    }
    seen
}

#[test]
fn generated_tma_engine_matches_rust_hdl_every_cycle() {
    // rust-hdl's settle of a deep block recurses deeply (as in build.rs)
    std::thread::Builder::new()
        .stack_size(1 << 28)
        .spawn(|| {
            // sm90.toml's engine; few tags, a slow request side and 32-byte reads
            for (seed, params) in [(1u64, (256, 112, 128)), (2, (256, 128, 128)), (3, (8, 32, 32)), (4, (64, 16, 64))] {
                let s = lockstep_tma(seed, 6_000, params);
                eprintln!("seed {seed}: {s:?}");
                assert!(
                    s.commands > 150 && s.reads > 200 && s.writes > 50 && s.smem_writes > 200 && s.smem_reads > 50 && s.complete_tx > 20 && s.faults > 10,
                    "stimulus coverage: {s:?}"
                );
            }
        })
        .unwrap()
        .join()
        .unwrap();
}
