//! GPU traces: run firmware programs on a real sm_90 GPU and compare them with the golden model.
//!
//! The flow (`hopsync gpu ...`, see `cosim/gpu/runner/README.md`):
//!
//! 1. [`pack`]: per program, an *instrumented* copy of the PTX ([`instrument`]) that stores the
//!    results of every sync instruction into a per-thread trace in a global buffer, plus a
//!    launch description the C++ runner (`cosim/gpu/runner/runner.cpp`) reads. The uninstrumented
//!    program is packed too, so the GPU's outputs with and without instrumentation can be compared.
//! 2. The runner loads the PTX unchanged with the CUDA driver's JIT, launches it and writes every
//!    output buffer back (`cosim/gpu/runner/run_batch.sh` does all of it on the device).
//! 3. [`trace`]: `hopsync gpu import` turns the runner's results and the device's provenance into
//!    `cosim/traces/sm90/<program>.json`.
//! 4. [`replay`]: `hopsync gpu replay` re-packs each traced program from the repository (the
//!    program's hash must match, else "stale trace"), runs the instrumented program on the golden
//!    engine and compares outputs and trace slots.

pub mod cli;
pub mod instrument;
pub mod pack;
pub mod replay;
pub mod trace;

/// Version tag of the instrumentation and the trace format. A change to either bumps it.
pub const FORMAT: &str = "hopsync-gpu-trace/2";

/// Name of the trace buffer and of the kernel parameter holding its address.
pub const TRACE_BUFFER: &str = "__hopsync_trace";

/// FNV-1a 64 of a text, as 16 lower-case hex digits (the program hash of a trace).
pub fn fnv64_hex(text: &str) -> String {
    format!("{:016x}", crate::report::digest(text.as_bytes()))
}
