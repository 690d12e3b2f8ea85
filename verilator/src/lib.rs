//! hopsync-verilator: the generated Verilog of every hopsync unit (hopsync_hdl::verilog::UNITS,
//! at the test sizes `Sizes::test()`) compiled by Verilator 5, and a lockstep harness that runs
//! each one beside its rust-hdl simulation on the same random stimulus, comparing every output
//! every cycle.
//!
//! How the models are built (build.rs): `verilator --cc -O3 --trace`, then the generated C++,
//! a per-model extern "C" shim and the Verilator runtime compiled with `cc`. A [`Model`] holds a
//! pointer to each port's storage inside the Verilated object, so Rust writes inputs and reads
//! outputs directly; only `eval` is a call across the FFI. The `verilated` crate is not used: it
//! targets Verilator 4 and does not build against Verilator 5 (`VerilatedVoidCb`).
//!
//! VCD: [`Model::trace`] (Verilator's own `VerilatedVcdC`), or `HOPSYNC_VERILATOR_VCD=DIR` for
//! the lockstep runs (see [`lockstep`]).

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::path::Path;

pub mod engine;
pub mod lockstep;

/// A port of a model (as in the generated Verilog).
#[derive(Debug)]
pub struct PortDesc {
    /// the port name
    pub name: &'static str,
    /// width in bits
    pub width: usize,
    /// an input (else an output)
    pub input: bool,
}

/// A compiled model.
pub struct ModelDesc {
    /// the unit (hopsync_hdl::verilog::UNITS name)
    pub unit: &'static str,
    /// its Verilog top module
    pub module: &'static str,
    /// its ports in declaration order (the clock first)
    pub ports: &'static [PortDesc],
    /// internal signals made readable (`/*verilator public_flat_rd*/`), indexed after the ports
    pub taps: &'static [PortDesc],
    new: unsafe extern "C" fn() -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    eval: unsafe extern "C" fn(*mut c_void),
    port: unsafe extern "C" fn(*mut c_void, u32) -> *mut c_void,
    trace_open: unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int,
    trace_dump: unsafe extern "C" fn(*mut c_void, u64),
    trace_close: unsafe extern "C" fn(*mut c_void),
}

include!(concat!(env!("OUT_DIR"), "/models.rs"));

/// Whether this build has the Verilator models: a build on a machine without Verilator 5 (or
/// without a C++ compiler) has none, and says here what to install (`unsupported: ...`).
pub fn available() -> Result<(), String> {
    match MISSING {
        None => Ok(()),
        Some(why) => Err(why.to_string()),
    }
}

/// One Verilated instance of a unit.
pub struct Model {
    desc: &'static ModelDesc,
    handle: *mut c_void,
    ptrs: Vec<*mut u8>,
    tracing: bool,
    /// VCD time of the next dump (two per cycle: clock low, clock high)
    time: u64,
}

impl Model {
    /// A fresh instance of `unit`'s model (registers and memories zero, like the rust-hdl
    /// model's defaults; the rust-hdl `RAM` initializers become `initial` blocks).
    pub fn new(unit: &str) -> Model {
        if let Err(why) = available() {
            panic!("{why}");
        }
        let desc = MODELS
            .iter()
            .find(|m| m.unit == unit)
            .unwrap_or_else(|| panic!("no Verilator model of `{unit}`"));
        // SAFETY: the shim's constructor; the handle is freed in Drop.
        let handle = unsafe { (desc.new)() };
        assert!(!handle.is_null());
        let ptrs = (0..desc.ports.len() + desc.taps.len())
            .map(|i| {
                // SAFETY: i is a port index of this model; the pointer targets the port's
                // storage inside the Verilated object, which lives as long as `handle`.
                let p = unsafe { (desc.port)(handle, i as u32) } as *mut u8;
                assert!(!p.is_null());
                p
            })
            .collect();
        Model {
            desc,
            handle,
            ptrs,
            tracing: false,
            time: 0,
        }
    }

    /// The model's description (ports).
    pub fn desc(&self) -> &'static ModelDesc {
        self.desc
    }

    /// The index of port `name`.
    pub fn port(&self, name: &str) -> usize {
        self.desc
            .ports
            .iter()
            .position(|p| p.name == name)
            .unwrap_or_else(|| panic!("{} has no port `{name}`", self.desc.unit))
    }

    /// The index of internal signal `name` (readable with [`Model::get`]).
    pub fn tap(&self, name: &str) -> usize {
        self.desc.ports.len()
            + self
                .desc
                .taps
                .iter()
                .position(|p| p.name == name)
                .unwrap_or_else(|| panic!("{} has no tap `{name}`", self.desc.unit))
    }

    fn pdesc(&self, i: usize) -> &'static PortDesc {
        let n = self.desc.ports.len();
        if i < n {
            &self.desc.ports[i]
        } else {
            &self.desc.taps[i - n]
        }
    }

    /// Writes port `i` from 32-bit words, least significant first (bits above the width are
    /// dropped).
    pub fn set(&mut self, i: usize, words: &[u32]) {
        let p = &self.desc.ports[i];
        debug_assert!(p.input);
        let w = |k: usize| words.get(k).copied().unwrap_or(0);
        let ptr = self.ptrs[i];
        // SAFETY: Verilator stores a port of width <= 8 / 16 / 32 / 64 as CData / SData /
        // IData / QData, a wider one as VlWide (an array of 32-bit words, `data()`).
        unsafe {
            match p.width {
                0..=8 => *ptr = (w(0) & mask(p.width)) as u8,
                9..=16 => *(ptr as *mut u16) = (w(0) & mask(p.width)) as u16,
                17..=32 => *(ptr as *mut u32) = w(0) & mask(p.width),
                33..=64 => {
                    *(ptr as *mut u64) =
                        (w(0) as u64 | (w(1) as u64) << 32) & ((!0u64) >> (64 - p.width))
                }
                _ => {
                    let n = p.width.div_ceil(32);
                    let q = ptr as *mut u32;
                    for k in 0..n {
                        let m = if k == n - 1 { mask(p.width - 32 * k) } else { !0 };
                        *q.add(k) = w(k) & m;
                    }
                }
            }
        }
    }

    /// Reads port (or tap) `i` into 32-bit words, least significant first (`out` is resized).
    pub fn get(&self, i: usize, out: &mut Vec<u32>) {
        let p = self.pdesc(i);
        let n = p.width.div_ceil(32);
        out.clear();
        let ptr = self.ptrs[i];
        // SAFETY: as in `set`.
        unsafe {
            match p.width {
                0..=8 => out.push(*ptr as u32),
                9..=16 => out.push(*(ptr as *const u16) as u32),
                17..=32 => out.push(*(ptr as *const u32)),
                33..=64 => {
                    let v = *(ptr as *const u64);
                    out.push(v as u32);
                    out.push((v >> 32) as u32);
                }
                _ => {
                    for k in 0..n {
                        out.push(*(ptr as *const u32).add(k));
                    }
                }
            }
        }
    }

    /// Sets the clock (port 0).
    pub fn set_clock(&mut self, high: bool) {
        // SAFETY: port 0 is the 1-bit clock (checked by build.rs), a CData.
        unsafe { *self.ptrs[0] = high as u8 };
    }

    /// Evaluates the model (and dumps a VCD sample when tracing).
    pub fn eval(&mut self) {
        // SAFETY: a live handle.
        unsafe { (self.desc.eval)(self.handle) };
        if self.tracing {
            // SAFETY: a live handle with an open trace.
            unsafe { (self.desc.trace_dump)(self.handle, self.time) };
            self.time += 5;
        }
    }

    /// One clock cycle the way the lockstep harness runs it: inputs already written, clock low
    /// and eval, then clock high and eval.
    pub fn cycle(&mut self) {
        self.set_clock(false);
        self.eval();
        self.set_clock(true);
        self.eval();
    }

    /// Starts Verilator's own VCD of this instance (every `eval` after this dumps a sample,
    /// 5 time units apart: one cycle is 10 units).
    pub fn trace(&mut self, path: &Path) -> Result<(), String> {
        let c = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a live handle and a NUL-terminated path.
        let ok = unsafe { (self.desc.trace_open)(self.handle, c.as_ptr()) };
        if ok == 1 {
            self.tracing = true;
            Ok(())
        } else {
            Err(format!("Verilator could not open {}", path.display()))
        }
    }

    /// Ends the VCD (also done on drop).
    pub fn trace_close(&mut self) {
        // SAFETY: a live handle.
        unsafe { (self.desc.trace_close)(self.handle) };
        self.tracing = false;
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: the handle from `new`, freed once.
        unsafe { (self.desc.free)(self.handle) };
    }
}

fn mask(bits: usize) -> u32 {
    if bits >= 32 {
        !0
    } else {
        (1u32 << bits) - 1
    }
}
