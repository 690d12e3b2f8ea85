//! `hopsync-vbench`: rust-hdl simulation vs Verilator simulation of the same unit (default: the
//! CTA top) on the same recorded random stimulus, in cycles per second, side by side in one run
//! (docs/PERF.md, "rust-hdl vs Verilator").
//!
//! ```sh
//! cargo run --release -p hopsync-verilator --bin hopsync-vbench -- [--cycles N] [--unit U | --all]
//! ```

use hopsync_verilator::lockstep::{bench_unit, run_unit};

fn main() {
    let mut cycles: u64 = 100_000;
    let mut units: Vec<String> = vec!["cta_top".into()];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--cycles" => cycles = args.next().and_then(|s| s.parse().ok()).expect("--cycles N"),
            "--unit" => units = vec![args.next().expect("--unit U")],
            "--all" => {
                units = hopsync_hdl::verilog::UNITS.iter().map(|u| u.name.to_string()).collect()
            }
            _ => {
                eprintln!("usage: hopsync-vbench [--cycles N] [--unit U | --all]");
                std::process::exit(2);
            }
        }
    }
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!(
        "{} ({} build; Verilator models: {}; C++ -O2; sizes {})",
        hopsync_verilator::VERILATOR_VERSION,
        profile,
        "verilator --cc -O3 --trace (tracing off)",
        hopsync_verilator::MODEL_SIZES
    );
    println!("| unit | cycles | rust-hdl (cycles/s) | generated (cycles/s) | Verilator (cycles/s) | Verilator / rust-hdl | Verilator / generated |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for u in &units {
        // the two simulations agree on this stimulus (the lockstep check, a short run)
        run_unit(u, cycles.min(2_000), 0xBE4C).unwrap_or_else(|e| panic!("{e}"));
        let (n, tr, tv, tg) = bench_unit(u, cycles, 0xBE4C).unwrap_or_else(|e| panic!("{e}"));
        let (g, vg) = match tg {
            Some(tg) => (format!("{:.0}", n as f64 / tg), format!("{:.2}x", tg / tv)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {u} | {n} | {:.0} | {g} | {:.0} | {:.0}x | {vg} |",
            n as f64 / tr,
            n as f64 / tv,
            tr / tv
        );
    }
}
