//! Engine-level tests of the TMA engine: everything through the top's ports, every output
//! checked against the reference of tb.rs; the stage blocks' own tests are in their files.

use super::tb::*;
use super::*;
use crate::common::{require_yosys, yosys_check_flat};
use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};
use rust_hdl::prelude::*;


#[test]
fn tma_check_all_and_yosys_validate() {
    require_yosys();
    let uut = new_uut(MAX_OUT, BPC, REQ);
    check_all(&*uut).unwrap();
    let vlog = generate_verilog(&*uut);
    yosys_validate("hopsync_tma_engine", &vlog).unwrap();
    yosys_check_flat("tma_engine", &vlog);
}

/// 1-D bulk copies: sizes 0..=1 KiB, sources on and off the 32-byte sector grid, loads and
/// stores; every byte, sector request and complete_tx is checked against the reference.
#[test]
fn bulk_copies_1d() {
    let mut tb = Tb::new(FAST, 1);
    let cases = [
        (0u64, 16u32),
        (16, 16),
        (0, 48),
        (16, 48),
        (0, 256),
        (48, 1024),
        (16, 0),
        (32, 4096),
    ];
    for (i, &(off, size)) in cases.iter().enumerate() {
        load_b(
            &mut tb,
            GBASE + 0x2000 * i as u64 + off,
            0x2000 * i as u32 + 16 * (i as u32 % 3),
            size,
            1 << 2,
            40 + i as u16,
        );
    }
    tb.drain();
    assert_eq!((tb.st.copies, tb.st.cpls), (8, 8));
    assert_eq!(
        tb.st.smem_bytes,
        cases.iter().map(|c| c.1 as u64).sum::<u64>()
    );
    // 16@0: 1 sector, 16@16: 1, 48@0: 2, 48@16: 2, 256@0: 8, 1024@48: 33, 0: 0, 4096@32: 128
    assert_eq!(tb.st.reads, 1 + 1 + 2 + 2 + 8 + 33 + 128);
    for (i, &(off, size)) in cases.iter().enumerate() {
        store_b(
            &mut tb,
            GBASE + 0x10_0000 + 0x2000 * i as u64 + off,
            0x400 + 16 * i as u32,
            size,
        );
    }
    tb.drain();
    assert_eq!(tb.st.writes, 1 + 1 + 2 + 2 + 8 + 33 + 128);
}

/// A 2-D box, row start aligned and misaligned to 16 bytes in global memory, load and store.
#[test]
fn tensor_2d_box() {
    let mut tb = Tb::new(FAST, 2);
    let m = map(TensorMapSpec::tiled(
        Dt::Float32,
        GBASE,
        vec![64, 32],
        vec![256],
        vec![16, 8],
    ));
    load_t(&mut tb, &m, &[8, 4], 0x800, 1 << 2, 10);
    load_t(&mut tb, &m, &[3, 5], 0x1000, 1 << 2, 11);
    tb.drain();
    assert_eq!((tb.st.copies, tb.st.smem_bytes), (2, 1024));
    // aligned rows: 2 sectors each; rows starting 12 bytes into a chunk: 3 sectors
    assert_eq!(tb.st.reads, 8 * 2 + 8 * 3);
    store_t(&mut tb, &m, &[8, 4], 0x800);
    store_t(&mut tb, &m, &[3, 5], 0x1000);
    tb.drain();
    assert_eq!(tb.st.writes, 8 * 2 + 8 * 3);
}

/// Bulk async-groups: commit_group closes a group at acceptance; wait_group N holds once
/// every committed group but the N newest completed (all writes acknowledged), .read once
/// their shared-memory reads are done (before the acknowledgements with slow memory).
/// shared::cta -> shared::cluster copies and reductions (PTX 9.7.9.25.4.1, 9.7.9.25.4.2):
/// every source beat is read once, written (with its reduction) into the destination CTA at
/// the destination offset, and the destination's mbarrier gets one complete_tx of the size
/// (`mbar_remote` for another rank), also with a slow shared-memory port.
#[test]
fn shared_to_cluster_copies_and_reductions() {
    for (seed, k) in [(7, FAST), (8, RANDOM)] {
        let mut tb = Tb::new(k, seed);
        let cases = [
            (0x100u32, 0x8000u32, 16u32, 2u8, (TmaRedOp::Copy, TmaRedType::B32)),
            (0x200, 0x9010, 48, 5, (TmaRedOp::Copy, TmaRedType::B32)),
            (0x400, 0xA000, 1024, 0, (TmaRedOp::Add, TmaRedType::U32)),
            (0x800, 0xB000, 0, 3, (TmaRedOp::Copy, TmaRedType::B32)),
            (0x900, 0x900, 256, 15, (TmaRedOp::Min, TmaRedType::U64)),
            (0xA00, 0xC000, 64, 2, (TmaRedOp::Xor, TmaRedType::B64)),
        ];
        for (i, &(src, dst, size, cta, red)) in cases.iter().enumerate() {
            s2s_b(&mut tb, src, dst, size, cta, 7 + i as u16, red);
            if i == 2 {
                // a global load between them keeps its order and its bytes
                load_b(&mut tb, GBASE + 0x40, 0x20000, 96, 1 << 2, 99);
            }
        }
        tb.drain();
        assert_eq!(tb.st.cpls, cases.len() as u64 + 1);
        assert_eq!(tb.st.remote_cpls, 4, "ranks 5, 0, 3, 15 are remote to rank 2");
        assert_eq!(tb.st.smem_bytes, cases.iter().map(|c| c.2 as u64).sum::<u64>() + 96);
        assert_eq!(tb.st.reads, 3, "only the global load reads global memory (3 sectors)");
        assert_eq!(tb.st.writes, 0);
    }
}

/// Random copies (every rank, element size, swizzle, element strides, OOB edge, multicast
/// mask, bulk loads and stores, tensor stores, commit_group, refused commands) with random
/// back-pressure and out-of-order responses: every shared-memory byte, every sector request
/// and write, every complete_tx (bytes, CTA, word) and every bulk-group answer checked
/// against the reference built from firmware/src/tensormap.rs. Returns the statistics.
fn random_against_reference(k: Knobs, copies: u64) -> Stats {
    let mut tb = Tb::new(k, 0x5EED_0004);
    let st = run_random(&mut tb, 0x5EED_0005, copies);
    // the mix reached every kind of outcome (about 70% of random copies are tensor or bulk
    // loads with bytes, 20% stores; 4% of commands are refused)
    assert!(st.copies > copies * 6 / 10, "{st:?}");
    assert!(st.writes > copies / 10, "{st:?}");
    assert!(st.faults > copies / 200, "{st:?}");
    assert!(st.remote_cpls > copies / 10, "{st:?}");
    st
}

/// 1e4 random copies under heavy back-pressure (the default test; see the long variant).
#[test]
fn randomized_copies_against_tensormap_reference() {
    random_against_reference(RANDOM, 10_000);
}

/// Random copies with memory latencies around sm90.toml's 384 cycles (responses out of
/// order over 300..=450 cycles; requests always accepted, so 256 issue before the first
/// response): the ROB fills (all 256 tags in flight), its tags wrap many
/// times (the arrival marks' pass parity), and the row queue runs far ahead of BA.
#[test]
fn randomized_copies_at_silicon_latency() {
    let k = Knobs {
        gmem_ready: 100,
        lat_min: 300,
        lat_max: 450,
        ..RANDOM
    };
    let mut tb = Tb::new(k, 0x5EED_0007);
    // two 16 KiB bulk loads (512 sectors each) ahead of the random mix fill the ROB
    for i in 0..2u64 {
        load_b(&mut tb, GBASE + 0x1_0000 * i, 0x4000 * i as u32, 16384, 1 << 2, 1);
    }
    let st = run_random(&mut tb, 0x5EED_0008, 600);
    assert_eq!(st.max_tags, TMA_TAGS as u64, "{st:?}");
    assert!(st.reads > 8 * TMA_TAGS as u64, "{st:?}");
    assert!(st.copies > 300, "{st:?}");
}

/// Issue 4's 1e5 random copies (`cargo nextest run --profile long --run-ignored only`).
#[test]
#[ignore]
fn long_randomized_1e5_copies_against_tensormap_reference() {
    random_against_reference(RANDOM, 100_000);
}

/// The generated Verilog, simulated by iverilog, reproduces the Rust simulation's outputs
/// cycle for cycle on random traffic (loads, stores, commits, refused commands).
#[test]
fn generated_verilog_matches_the_rust_simulation() {
    let mut tb = Tb::traced(RANDOM, 21);
    run_random(&mut tb, 5, 150);
    let uut = new_uut(MAX_OUT, BPC, REQ);
    let vlog = generate_verilog(&*uut);
    tb.trace.unwrap().check_with_iverilog("tma_engine", &vlog);
}
