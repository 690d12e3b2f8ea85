//! The memory a run takes, estimated from the manifest and the declarations before anything is
//! allocated, and the budget it must fit (`--mem-limit`, default [`DEFAULT_MEM_LIMIT`]).
//!
//! Every engine holds a golden [`Machine`]: the global buffers and `.global`/`.const`
//! variables, per CTA its shared memory (and the mbarrier table over it, which grows to one slot
//! per 8 bytes), per warp its registers (32 lanes x 8 bytes each), per thread its local frame and,
//! where the entry calls functions, its call stack (the deepest chain of frames; a recursive or
//! indirect call: the whole 512 KiB stack), where the module uses the TMA the proxy state (8
//! bytes per shared byte per CTA), where it calls `malloc` the device heap (8 MiB and its block
//! records, crate::heap), and where it prints the printf output a run keeps (`machine::PRINTF_BUFFER_BYTES`). An output
//! buffer costs its hex in the report and the JSON text besides. The RTL and Verilator engines
//! add their per-CTA units ([`Footprint::add`] from hopsync-sim); `cosim` holds the golden model
//! and the engine under test. [`Footprint`] lists these allocations item by item with the
//! declaration or manifest field that causes each, so a run over budget is refused before it
//! allocates, with an error at its largest item. tests/memory_budget.rs measures every engine's
//! real allocations against the estimate.

use crate::heap::MAX_BLOCKS;
use crate::race::RaceMode;
use crate::machine::{Cta, DeviceOutput, Frame, MbarShadow, NamedBarrier, Region, Warp, HEAP_BYTES, STACK_BYTES, WARP};
use bytesize::ByteSize;
use hopsync_firmware::ir::{Loc, Module, Opcode, Operand, Space};
use hopsync_firmware::limits::Layout;
use hopsync_firmware::manifest::{Key, Locator};
use hopsync_firmware::{Diag, Program};

/// The default budget: a third of a 24 GiB machine, so that two runs side by side (nextest runs
/// two tests at once on 2 cores) leave room for the build and the rest of the machine.
pub const DEFAULT_MEM_LIMIT: u64 = 8 << 30;

/// Bytes of bookkeeping a machine holds besides the items (parameters, tensor maps, tables, up
/// to `machine::MAX_FINDINGS` findings).
const FIXED: u64 = 4 << 20;

/// Bytes of a heap block's entries in the heap's maps and its region's name, besides the
/// region itself (B-tree nodes hold up to 11 entries of key and value; half full at worst).
const HEAP_BLOCK_RECORD: u64 = 256;

/// One allocation (or set of like allocations) of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// What it is and how it is counted, e.g. "registers: 1000 x 32 lanes x 8 bytes x 64 warps".
    pub what: String,
    /// Bytes.
    pub bytes: u64,
    /// The declaration or manifest field that causes it.
    pub loc: Loc,
}

/// The allocations of a run, item by item.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footprint {
    /// The items.
    pub items: Vec<Item>,
}

/// Human-readable bytes (binary units).
pub fn show(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

/// Parses a size such as `8GiB`, `512 MiB`, `16G` (binary multiples: a budget is RAM) or a plain
/// byte count.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    // bytesize reads `G`/`GB` as 10^9; memory sizes here are binary, as `free -g` shows them.
    let binary = match t.strip_suffix(['B', 'b']).unwrap_or(t) {
        x if x.ends_with(['K', 'k', 'M', 'm', 'G', 'g', 'T', 't']) => format!("{x}iB"),
        _ => t.to_string(),
    };
    binary.parse::<ByteSize>().map(|b| b.as_u64()).map_err(|e| format!("`{s}` is not a size such as 8GiB, 512MiB or 1048576: {e}"))
}

impl Footprint {
    /// The golden machine of `prog` (module doc) with the default race detector (a run's
    /// default, `--race shared`).
    pub fn golden(prog: &Program) -> Footprint {
        Footprint::golden_with_race(prog, RaceMode::default())
    }

    /// The golden machine of `prog` with race detection `race` (its shadow memory: a word per 4
    /// bytes of shared memory, and of global memory with `--race global`, and a vector clock
    /// per warp as long as its domain has agents: [`crate::race::estimate_bytes`]).
    pub fn golden_with_race(prog: &Program, race: RaceMode) -> Footprint {
        let (m, man) = (&prog.module, &prog.manifest);
        let at = Locator::new(&prog.source);
        let layout = Layout::of(m, man);
        let ctas = man.ctas() as u64;
        let warps_per_cta = (man.threads_per_cta() as u64).div_ceil(WARP as u64);
        let warps = ctas * warps_per_cta;
        let mut f = Footprint::default();
        f.add("machine bookkeeping", FIXED, Loc { line: 1, col: 1 });
        for (i, b) in man.buffers.iter().enumerate() {
            let (k, why) = if b.output { (5, " (an output: also twice in the report's hex and its JSON)") } else { (1, "") };
            f.add(&format!("buffer `{}`: {} bytes{why}", b.name, b.bytes), b.bytes * k, at.at(Key::Buffer(i, "bytes")));
        }
        for s in m.symbols.iter().filter(|s| matches!(s.space, Space::Global | Space::Const)) {
            f.add(&format!("`.{} {}`", s.space.text(), s.name), s.bytes().max(1), s.loc);
        }
        let per_cta = |what: String, bytes: u64| (format!("{what} x {ctas} CTAs"), bytes.saturating_mul(ctas));
        let shared_at = if man.launch.dynamic_smem as u64 >= layout.static_smem {
            at.at(Key::Launch("dynamic_smem"))
        } else {
            largest(prog, Space::Shared).unwrap_or_else(|| at.at(Key::Launch("grid")))
        };
        let smem = layout.smem_bytes;
        let (w, b) = per_cta(format!("shared memory: {smem} bytes"), smem);
        f.add(&w, b, shared_at);
        let slots = smem.div_ceil(8) * std::mem::size_of::<Option<MbarShadow>>() as u64;
        let (w, b) = per_cta(format!("mbarrier table: {slots} bytes (one slot per 8 shared bytes)"), slots);
        f.add(&w, b, shared_at);
        if crate::exec::tma_tracks(m) {
            let tma = smem * 8 + warps_per_cta * WARP as u64 * 4;
            let (w, b) = per_cta(format!("TMA proxy state: {tma} bytes (8 per shared byte)"), tma);
            f.add(&w, b, shared_at);
        }
        let nregs = m.kernel.regs.len() as u64;
        // Its registers, its state and its lanes' (empty) call stacks.
        let warp = nregs * WARP as u64 * 8 + std::mem::size_of::<Warp>() as u64 + 64 + WARP as u64 * std::mem::size_of::<Vec<Frame>>() as u64;
        f.add(&format!("registers: {nregs} x 32 lanes x 8 bytes per warp x {warps} warps"), warp.saturating_mul(warps), reg_loc(prog).unwrap_or_else(|| at.at(Key::Launch("block"))));
        // Every thread has its local memory, the entry's frame (empty without variables: calls
        // grow it).
        let frames = warps * WARP as u64;
        f.add(
            &format!("local memory: {} bytes per thread x {frames} threads", layout.local_bytes),
            (layout.local_bytes + 24).saturating_mul(frames),
            largest(prog, Space::Local).unwrap_or_else(|| at.at(Key::Launch("block"))),
        );
        if let Some((bytes, why)) = call_stack(m, &layout) {
            let threads = warps * WARP as u64;
            f.add(&format!("call stack: {} per thread ({why}) x {threads} threads", show(bytes)), bytes.saturating_mul(threads), at.at(Key::Launch("block")));
        }
        if let Some(loc) = builtin_call(m, "malloc") {
            // At most HEAP_BYTES live, in at most MAX_BLOCKS blocks (live or quarantined), each
            // with its region and its entries in the heap's maps (crate::heap).
            let records = MAX_BLOCKS * (std::mem::size_of::<Region>() as u64 + HEAP_BLOCK_RECORD);
            f.add(&format!("device heap: {} (malloc) and up to {MAX_BLOCKS} block records", show(HEAP_BYTES)), HEAP_BYTES + records, loc);
        }
        if let Some(loc) = builtin_call(m, "vprintf").or_else(|| builtin_call(m, "__assertfail")) {
            let lines = crate::machine::PRINTF_BUFFER_BYTES * (std::mem::size_of::<DeviceOutput>() as u64 + 1);
            f.add(&format!("printf output: the last {} of it (CUDA's printf buffer), twice in the report", show(crate::machine::PRINTF_BUFFER_BYTES)), 2 * lines, loc);
        }
        if race != RaceMode::Off {
            let global_bytes: u64 = man.buffers.iter().map(|b| b.bytes).sum::<u64>()
                + m.symbols.iter().filter(|s| matches!(s.space, Space::Global | Space::Const)).map(|s| s.bytes().max(1)).sum::<u64>();
            let domain = if race == RaceMode::Global { ctas } else { man.cluster_size().max(1) as u64 };
            let agents = crate::race::domain_agents(domain, warps_per_cta);
            let bytes = crate::race::estimate_bytes(ctas, smem, global_bytes, warps, agents, race);
            let what = match race {
                RaceMode::Global => "race detector (--race global): a shadow word per 4 bytes of shared and global memory, a vector clock of",
                _ => "race detector: a shadow word per 4 shared bytes, a vector clock of",
            };
            f.add(&format!("{what} {agents} agents x {warps} warps"), bytes, at.at(Key::Launch(if race == RaceMode::Global { "grid" } else { "cluster" })));
        }
        let cta = std::mem::size_of::<Cta>() as u64 + 16 * std::mem::size_of::<NamedBarrier>() as u64 + 64;
        let (w, b) = per_cta(format!("CTA state: {cta} bytes"), cta);
        f.add(&w, b, at.at(Key::Launch("grid")));
        // The scheduler's order, speeds and runnable list: a few words per warp.
        f.add(&format!("scheduler: 48 bytes x {warps} warps"), 48 * warps, at.at(Key::Launch("grid")));
        f
    }

    /// Adds an item.
    pub fn add(&mut self, what: &str, bytes: u64, loc: Loc) {
        self.items.push(Item { what: what.to_string(), bytes, loc });
    }

    /// Adds every item of `other`, each named as `role`'s (e.g. "the golden model's").
    pub fn extend(&mut self, role: &str, other: Footprint) {
        self.items.extend(other.items.into_iter().map(|i| Item { what: format!("{role} {}", i.what), ..i }));
    }

    /// Bytes in all.
    pub fn total(&self) -> u64 {
        self.items.iter().fold(0u64, |t, i| t.saturating_add(i.bytes))
    }

    /// The run of `prog` on `engine` fits `limit`, or the error at its largest item.
    pub fn check(&self, prog: &Program, engine: &str, limit: u64) -> Result<(), Diag> {
        let total = self.total();
        if total <= limit {
            return Ok(());
        }
        let top = self.items.iter().reduce(|a, b| if b.bytes > a.bytes { b } else { a }).expect("over a limit means some item");
        // Sizes that print alike are told apart by their bytes.
        let (need, have) = match (show(total), show(limit)) {
            (n, h) if n == h => (format!("{n} ({total} bytes)"), format!("{h} ({limit} bytes)")),
            nh => nh,
        };
        let msg = format!(
            "{engine} run needs {need} of memory, above its budget of {have} (`--mem-limit` raises it); the largest part: {} = {}",
            top.what,
            show(top.bytes)
        );
        Err(Diag::new(top.loc, msg).with_source(&prog.path, &prog.source))
    }
}

/// The most stack a thread's calls take beyond the entry's frame, and why: the deepest chain of
/// direct calls (each callee's frame, the lane's frame record and, for a recursive call, its
/// saved registers); a recursive or indirect call can grow to the thread's whole stack,
/// `STACK_BYTES`. None when the entry calls no function with a body.
fn call_stack(m: &Module, layout: &Layout) -> Option<(u64, &'static str)> {
    let callees = |f: usize| -> Vec<Option<usize>> {
        let Some((a, b)) = m.funcs[f].body else { return Vec::new() };
        m.kernel.body[a as usize..b as usize]
            .iter()
            .filter(|i| i.op == Opcode::Call)
            .map(|i| {
                let target = match i.operands.first() {
                    Some(Operand::List(_)) => i.operands.get(1),
                    t => t,
                };
                match target {
                    Some(Operand::Func(g)) => Some(g.0 as usize),
                    _ => None,
                }
            })
            .filter(|g| g.is_none_or(|g| m.funcs[g].body.is_some()))
            .collect()
    };
    let frame = |f: usize| layout.frame_bytes.get(f).copied().unwrap_or(0) + std::mem::size_of::<Frame>() as u64;
    // Depth-first over the call graph from the entry: (function, next callee index).
    let entry = m.entry.0 as usize;
    let mut deepest = vec![None::<u64>; m.funcs.len()];
    let mut on_path = vec![false; m.funcs.len()];
    let mut stack: Vec<(usize, Vec<Option<usize>>, u64)> = vec![(entry, callees(entry), 0)];
    on_path[entry] = true;
    let mut calls = false;
    while let Some((f, todo, best)) = stack.last_mut() {
        match todo.pop() {
            Some(None) => return Some((STACK_BYTES + worst_frames(m), "an indirect call")),
            Some(Some(g)) if on_path[g] => return Some((STACK_BYTES + worst_frames(m), "a recursive call")),
            Some(Some(g)) => {
                calls = true;
                match deepest[g] {
                    Some(d) => *best = (*best).max(d),
                    None => {
                        on_path[g] = true;
                        let next = callees(g);
                        stack.push((g, next, 0));
                    }
                }
            }
            None => {
                let (f, best) = (*f, *best);
                on_path[f] = false;
                stack.pop();
                let d = if f == entry { best } else { frame(f) + best };
                deepest[f] = Some(d);
                if let Some((_, _, b)) = stack.last_mut() {
                    *b = (*b).max(d);
                }
            }
        }
    }
    calls.then(|| (deepest[entry].unwrap_or(0).min(STACK_BYTES + worst_frames(m)), "the deepest chain of calls"))
}

/// The frame records and saved registers of a stack full of the smallest frames (16 bytes each:
/// `STACK_BYTES / 16` calls deep, each saving its function's registers).
fn worst_frames(m: &Module) -> u64 {
    let regs = m.funcs.iter().filter(|f| !f.entry).map(|f| (f.regs.1 - f.regs.0) as u64).max().unwrap_or(0);
    STACK_BYTES / 16 * (std::mem::size_of::<Frame>() as u64 + 8 * regs)
}

/// Where the module calls the external function `name` (`vprintf`, `malloc`, ...), if it does.
fn builtin_call(m: &Module, name: &str) -> Option<Loc> {
    let f = m.funcs.iter().position(|f| f.name == name && f.body.is_none())?;
    m.kernel.body.iter().find(|i| i.op == Opcode::Call && i.operands.iter().any(|o| matches!(o, Operand::Func(g) if g.0 as usize == f))).map(|i| i.loc)
}

/// The declaration of the largest variable of `space`.
fn largest(prog: &Program, space: Space) -> Option<Loc> {
    prog.module.symbols.iter().filter(|s| s.space == space).max_by_key(|s| s.bytes()).map(|s| s.loc)
}

/// The declaration that declares the most registers.
fn reg_loc(prog: &Program) -> Option<Loc> {
    let regs = &prog.module.kernel.regs;
    regs.iter().max_by_key(|r| r.range.as_ref().map_or(1, |(_, n)| *n)).map(|r| r.loc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_binary_multiples() {
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("8 GB"), Ok(8 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("lots").is_err());
        assert_eq!(show(8 << 30), "8.0 GiB");
    }
}
