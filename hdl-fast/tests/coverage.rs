//! What the generator makes of each of the project's units: a model, or a refusal in its one
//! named form (`unsupported: <construct> in <block path>` or `... signal ...`), never a panic.
//! Every unit the engine clocks is generated today (build.rs); a unit it refused would stay on
//! rust-hdl's simulation in the engine (docs/PERF.md).

use hopsync_hdl::cluster_barrier_unit::ClusterBarrierUnit;
use hopsync_hdl::named_barrier_unit::NamedBarrierUnit;
use hopsync_hdl::tma_engine::TmaEngine;
use hopsync_hdl_fast::gen::generate;
use rust_hdl::prelude::*;

fn try_unit<B: Block>(mut u: B, name: &str) -> Result<usize, String> {
    u.connect_all();
    generate(&u, name).map(|src| src.len())
}

#[test]
fn every_unit_is_generated_or_refused_by_name() {
    // rust-hdl's hdl() of a deep block recurses deeply (as in build.rs)
    std::thread::Builder::new().stack_size(1 << 30).spawn(every_unit).unwrap().join().unwrap();
}

fn every_unit() {
    let results = [
        ("NamedBarrierUnit", try_unit(NamedBarrierUnit::default(), "N")),
        ("ClusterBarrierUnit", try_unit(ClusterBarrierUnit::default(), "C")),
        ("TmaEngine", try_unit(TmaEngine::new(256, 112, 128), "T")),
    ];
    for (unit, r) in &results {
        eprintln!("{unit}: {r:?}");
        if let Err(e) = r {
            assert!(e.starts_with("unsupported: "), "{unit}: {e}");
        }
    }
}

/// A combinational cycle inside one block is refused by name.
#[test]
fn a_combinational_cycle_is_refused() {
    #[derive(LogicBlock, Default)]
    struct Loop {
        clock: Signal<In, Clock>,
        x: Signal<In, Bits<4>>,
        y: Signal<Out, Bits<4>>,
        a: Signal<Local, Bits<4>>,
        b: Signal<Local, Bits<4>>,
    }
    impl Logic for Loop {
        #[hdl_gen]
        fn update(&mut self) {
            self.a.next = self.b.val() + self.x.val();
            self.b.next = self.a.val();
            self.y.next = self.b.val();
        }
    }
    let mut u = Loop::default();
    u.x.connect();
    u.clock.connect();
    u.connect_all();
    let e = generate(&u, "Loop").unwrap_err();
    assert!(e.starts_with("unsupported: combinational cycle"), "{e}");
}
