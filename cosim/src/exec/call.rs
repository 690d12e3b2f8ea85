//! Calls (PTX 9.7.12.5 `call`, 9.7.12.6 `ret`) and the functions a CUDA runtime links into every
//! kernel: `vprintf` (printf), `__assertfail` (assert), `malloc` and `free` (the device heap).
//!
//! A call pushes a [`Frame`] on each executing lane's stack: the callee's frame (its `.local`
//! variables and `.param` parameters, PTX 5.1.6.4) starts where the caller's ends in the thread's
//! local memory, the arguments are copied into the callee's parameters (pass by value), and the
//! lane jumps to the callee's first instruction. A recursive call (the callee already running on
//! the lane) saves the callee's registers in the frame. `ret` copies the return parameters into
//! the call's return operands, restores saved registers, frees the frame and resumes after the
//! call. A lane's targets may differ (`call` through a register), so both end in
//! [`Flow::Lanes`]. `.extern` functions are not in the module: the ones above run here, any other
//! is `unsupported`.

use super::{lanes, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::heap::BadFree;
use crate::machine::{DeviceOutput, Frame, Place, Region, FUNC_ADDR_BASE, STACK_BYTES, WARP};
use hopsync_firmware::ir::{Formal, FuncId, Instr, Mod, Operand, Space};
use hopsync_firmware::ops::op;

/// The parts of a `call`: return operands, target, arguments.
fn list(o: Option<&Operand>) -> &[Operand] {
    match o {
        Some(Operand::List(v)) => v.as_slice(),
        _ => &[],
    }
}

fn parts(i: &Instr) -> (&[Operand], &Operand, &[Operand]) {
    match i.operands.first() {
        Some(Operand::List(r)) => (r.as_slice(), &i.operands[1], list(i.operands.get(2))),
        Some(t) => (&[], t, list(i.operands.get(1))),
        None => (&[], &Operand::Sink, &[]),
    }
}

impl Exec for op::Call {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (rets, target, args) = parts(i);
        let module = cx.m.module();
        let mut jumped = false;
        for l in lanes(cx.mask) {
            let f = match target {
                Operand::Func(f) => *f,
                Operand::Reg(r) => {
                    let a = cx.reg(*r, l);
                    let k = a.wrapping_sub(FUNC_ADDR_BASE);
                    if k % 16 != 0 || k / 16 >= module.funcs.len() as u64 {
                        cx.finding(FindingKind::CallTargetInvalid, l, format!("indirect call through 0x{a:x}, which is not the address of a function"))?;
                        return Err(Stop::Finding);
                    }
                    FuncId((k / 16) as u32)
                }
                _ => return super::unsupported(cx, i, "this call form"),
            };
            let func = &module.funcs[f.0 as usize];
            if func.body.is_none() {
                builtin(cx, i, l, &func.name, rets, args)?;
                cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].set_pc(l as usize, cx.pc + 1);
                continue;
            }
            enter(cx, l, f, args)?;
            jumped = true;
        }
        Ok(if jumped { Flow::Lanes } else { Flow::Next })
    }
}

/// `ret` (PTX 9.7.12.6): from the entry, the thread ends (like `exit`); from a function, each
/// lane returns to its caller.
impl Exec for op::Ret {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let m = cx.m.module();
        let in_entry = m.func_at(cx.pc).is_none_or(|f| m.funcs[f.0 as usize].entry);
        if in_entry {
            return Ok(Flow::Exit);
        }
        for l in lanes(cx.mask) {
            leave(cx, i, l)?;
        }
        Ok(Flow::Lanes)
    }
}

/// Pushes `f`'s frame on lane `l` and copies the arguments in.
fn enter(cx: &mut Cx<'_, '_>, l: u32, f: FuncId, args: &[Operand]) -> Result<(), Stop> {
    let module = cx.m.module();
    let func = &module.funcs[f.0 as usize];
    let caller = module.func_at(cx.pc).unwrap_or(module.entry);
    let t = cx.warp as usize * WARP + l as usize;
    let base = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].frame_base(l) + cx.m.frame_bytes[caller.0 as usize];
    let end = base + cx.m.frame_bytes[f.0 as usize];
    if end > STACK_BYTES {
        let depth = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].frames()[l as usize].len();
        cx.finding(FindingKind::CallStackOverflow, l, format!("calling `{}` at depth {depth} needs {end} bytes of stack; a thread has {STACK_BYTES}", func.name))?;
        return Err(Stop::Finding);
    }
    if args.len() != func.params.len() {
        return Err(Stop::Unsupported(format!("unsupported: call to `{}` with {} arguments; it has {} parameters ({}:{})", func.name, args.len(), func.params.len(), cx.m.prog.path, module.kernel.body[cx.pc as usize].loc)));
    }
    // The argument values, read in the caller's frame.
    let mut vals = Vec::new();
    for (a, p) in args.iter().zip(&func.params) {
        let n = formal_bytes(cx, p);
        vals.push(arg_bytes(cx, l, a, n)?);
    }
    let (r0, r1) = func.regs;
    let warp = &cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    let recursive = warp.frames()[l as usize].iter().any(|fr| fr.func == f) || caller == f;
    let saved = if recursive { (r0..r1).map(|r| warp.regs[r as usize * WARP + l as usize]).collect() } else { Vec::new() };
    let local = &mut cx.m.ctas[cx.cta as usize].local[t];
    local.truncate(base as usize);
    local.resize(end as usize, 0);
    let w = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    w.push_frame(l as usize, Frame { call_pc: cx.pc, func: f, base, saved });
    w.set_pc(l as usize, func.body.map(|b| b.0).unwrap_or(0));
    for (p, v) in func.params.iter().zip(vals) {
        store_formal(cx, l, p, &v);
    }
    Ok(())
}

/// Pops lane `l`'s frame: return values out, registers back, the lane after its call.
fn leave(cx: &mut Cx<'_, '_>, i: &Instr, l: u32) -> Result<(), Stop> {
    let module = cx.m.module();
    let Some(fr) = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].frames()[l as usize].last().cloned() else {
        return Err(Stop::Unsupported(format!("unsupported: `ret` outside a call ({}:{})", cx.m.prog.path, i.loc)));
    };
    let func = &module.funcs[fr.func.0 as usize];
    let vals: Vec<Vec<u8>> = func.rets.iter().map(|p| load_formal(cx, l, p)).collect();
    let (r0, _) = func.regs;
    let w = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    for (k, v) in fr.saved.iter().enumerate() {
        w.regs[(r0 as usize + k) * WARP + l as usize] = *v;
    }
    w.pop_frame(l as usize);
    w.set_pc(l as usize, fr.call_pc + 1);
    let t = cx.warp as usize * WARP + l as usize;
    cx.m.ctas[cx.cta as usize].local[t].truncate(fr.base as usize);
    let call = &module.kernel.body[fr.call_pc as usize];
    let (rets, _, _) = parts(call);
    for (o, v) in rets.iter().zip(vals) {
        store_operand(cx, l, o, &v)?;
    }
    Ok(())
}

/// Bytes of a formal parameter.
fn formal_bytes(cx: &Cx<'_, '_>, p: &Formal) -> usize {
    match p {
        Formal::Param(s) => cx.m.module().symbols[s.0 as usize].bytes() as usize,
        Formal::Reg(r) => cx.m.module().kernel.regs[r.0 as usize].ty.type_bytes().unwrap_or(8) as usize,
    }
}

/// The value of a call argument for lane `l`, `n` bytes: a `.param` variable's bytes, or a
/// register or immediate (PTX 9.7.12.5: arguments may be registers, immediates or `.param`
/// variables).
fn arg_bytes(cx: &mut Cx<'_, '_>, l: u32, a: &Operand, n: usize) -> Result<Vec<u8>, Stop> {
    match a {
        Operand::Sym(s) => {
            let size = (cx.m.module().symbols[s.0 as usize].bytes() as usize).min(n);
            let p = frame_place(cx, l, *s, size)?;
            let mut v = cx.m.read(p, size).to_vec();
            v.resize(n, 0);
            Ok(v)
        }
        Operand::Reg(r) => Ok(cx.reg(*r, l).to_le_bytes().iter().copied().chain(std::iter::repeat(0)).take(n).collect()),
        Operand::Imm(v) => Ok(v.to_le_bytes().iter().copied().chain(std::iter::repeat(0)).take(n).collect()),
        Operand::FloatBits { bits, .. } => Ok(bits.to_le_bytes().iter().copied().chain(std::iter::repeat(0)).take(n).collect()),
        _ => Ok(vec![0; n]),
    }
}

/// Where variable `s` is for lane `l` (in the current frame when it is a frame variable).
fn frame_place(cx: &mut Cx<'_, '_>, l: u32, s: hopsync_firmware::ir::SymId, size: usize) -> Result<Place, Stop> {
    let size = size.max(1);
    let addr = cx.m.symbol_address_of(s, cx.cta, cx.warp, l);
    let space = if cx.m.sym_in_frame[s.0 as usize] {
        Some(Mod::Local)
    } else {
        match cx.m.module().symbols[s.0 as usize].space {
            Space::Param => Some(Mod::Param),
            Space::Shared => Some(Mod::SharedCta),
            Space::Local => Some(Mod::Local),
            _ => Some(Mod::Global),
        }
    };
    match cx.m.resolve(cx.cta, cx.warp, l, space, addr, if size.is_power_of_two() && size <= 16 { size } else { 1 }) {
        Ok(p) => Ok(p),
        Err(b) => {
            cx.finding(b.kind, l, b.msg)?;
            Err(Stop::Finding)
        }
    }
}

/// Writes a callee's formal parameter (in its new frame).
fn store_formal(cx: &mut Cx<'_, '_>, l: u32, p: &Formal, v: &[u8]) {
    match p {
        Formal::Param(s) => {
            let t = cx.warp as usize * WARP + l as usize;
            let off = cx.m.symbol_address_of(*s, cx.cta, cx.warp, l) as usize;
            cx.m.write(Place::Local(cx.cta, t, off), v);
        }
        Formal::Reg(r) => {
            let mut b = [0u8; 8];
            b[..v.len().min(8)].copy_from_slice(&v[..v.len().min(8)]);
            cx.set_reg(*r, l, u64::from_le_bytes(b));
        }
    }
}

/// Reads a callee's formal (return) parameter in its frame.
fn load_formal(cx: &Cx<'_, '_>, l: u32, p: &Formal) -> Vec<u8> {
    match p {
        Formal::Param(s) => {
            let t = cx.warp as usize * WARP + l as usize;
            let off = cx.m.symbol_address_of(*s, cx.cta, cx.warp, l) as usize;
            let n = cx.m.module().symbols[s.0 as usize].bytes() as usize;
            cx.m.ctas[cx.cta as usize].local[t].get(off..off + n).map(|b| b.to_vec()).unwrap_or_else(|| vec![0; n])
        }
        Formal::Reg(r) => cx.reg(*r, l).to_le_bytes()[..formal_bytes(cx, p)].to_vec(),
    }
}

/// Writes a return value into a call's return operand (a `.param` variable or a register).
fn store_operand(cx: &mut Cx<'_, '_>, l: u32, o: &Operand, v: &[u8]) -> Result<(), Stop> {
    match o {
        Operand::Sym(s) => {
            let n = (cx.m.module().symbols[s.0 as usize].bytes() as usize).min(v.len());
            let p = frame_place(cx, l, *s, n)?;
            cx.m.write(p, &v[..n]);
        }
        Operand::Reg(r) => {
            let mut b = [0u8; 8];
            b[..v.len().min(8)].copy_from_slice(&v[..v.len().min(8)]);
            cx.set_reg(*r, l, u64::from_le_bytes(b));
        }
        _ => {}
    }
    Ok(())
}

/// A 64-bit argument of a builtin.
fn arg_u64(cx: &mut Cx<'_, '_>, l: u32, args: &[Operand], k: usize) -> Result<u64, Stop> {
    let Some(a) = args.get(k) else { return Ok(0) };
    let b = arg_bytes(cx, l, a, 8)?;
    Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

/// Writes a builtin's return value (little-endian `v`) into the call's first return operand.
fn give(cx: &mut Cx<'_, '_>, l: u32, rets: &[Operand], v: u64) -> Result<(), Stop> {
    if let Some(o) = rets.first() {
        store_operand(cx, l, o, &v.to_le_bytes())?;
    }
    Ok(())
}

/// The functions of the CUDA device runtime every module may call (module doc).
fn builtin(cx: &mut Cx<'_, '_>, i: &Instr, l: u32, name: &str, rets: &[Operand], args: &[Operand]) -> Result<(), Stop> {
    match name {
        "vprintf" => {
            let fmt = arg_u64(cx, l, args, 0)?;
            let buf = arg_u64(cx, l, args, 1)?;
            // CUDA's printf returns the number of arguments parsed, -1 for a NULL format.
            let (text, n) = match read_cstring(cx, l, fmt) {
                Some(f) => {
                    // The arguments are packed in a local buffer, each at its natural alignment.
                    let mut off = 0u64;
                    let c: &Cx<'_, '_> = cx;
                    let mut fetch = |size: usize| -> u64 {
                        off = off.div_ceil(size as u64) * size as u64;
                        let v = read_generic(c, l, buf + off, size).unwrap_or(0);
                        off += size as u64;
                        v
                    };
                    let mut string_at = |a: u64| read_cstring(c, l, a);
                    let (t, n) = super::printf::format(&f, &mut fetch, &mut string_at);
                    (t, n as i64)
                }
                None => (String::new(), -1),
            };
            push_output(cx, l, text);
            give(cx, l, rets, n as u64)
        }
        "__assertfail" => {
            let msg = arg_u64(cx, l, args, 0)?;
            let file = arg_u64(cx, l, args, 1)?;
            let line = arg_u64(cx, l, args, 2)? as u32;
            let func = arg_u64(cx, l, args, 3)?;
            let s = |cx: &mut Cx<'_, '_>, a| read_cstring(cx, l, a).unwrap_or_else(|| "?".into());
            let (msg, file, func) = (s(cx, msg), s(cx, file), s(cx, func));
            let (block, thread) = ids(cx, l);
            let text = format!("{file}:{line}: {func}: block: [{},{},{}], thread: [{},{},{}] Assertion `{msg}` failed.\n", block[0], block[1], block[2], thread[0], thread[1], thread[2]);
            push_output(cx, l, text);
            cx.finding(FindingKind::AssertionFailed, l, format!("assertion `{msg}` failed in {func} ({file}:{line}), block [{},{},{}], thread [{},{},{}]", block[0], block[1], block[2], thread[0], thread[1], thread[2]))?;
            // --ub warn: the thread ends, as the kernel would (__assertfail traps).
            cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].set_lane(l as usize, crate::machine::Lane::Done);
            Ok(())
        }
        "malloc" => {
            let size = arg_u64(cx, l, args, 0)?;
            let p = malloc(cx, size);
            give(cx, l, rets, p)
        }
        "free" => {
            let p = arg_u64(cx, l, args, 0)?;
            free(cx, l, p)
        }
        _ => Err(Stop::Unsupported(format!(
            "unsupported: call to the external function `{name}` (hopsync provides vprintf, __assertfail, malloc and free) (`{}` at {}:{})",
            cx.text(i),
            cx.m.prog.path,
            i.loc
        ))),
    }
}

/// `%ctaid` and `%tid` of lane `l`.
fn ids(cx: &Cx<'_, '_>, l: u32) -> ([u32; 3], [u32; 3]) {
    use hopsync_firmware::ir::{Dim, Sreg};
    let g = |s| cx.m.sreg(cx.cta, cx.warp, l, s) as u32;
    ([g(Sreg::Ctaid(Dim::X)), g(Sreg::Ctaid(Dim::Y)), g(Sreg::Ctaid(Dim::Z))], [g(Sreg::Tid(Dim::X)), g(Sreg::Tid(Dim::Y)), g(Sreg::Tid(Dim::Z))])
}

fn push_output(cx: &mut Cx<'_, '_>, l: u32, text: String) {
    let (block, thread) = ids(cx, l);
    cx.m.push_output(DeviceOutput { cta: cx.cta, block, thread, text });
}

/// `size` bytes at generic address `a`, little-endian.
fn read_generic(cx: &Cx<'_, '_>, l: u32, a: u64, size: usize) -> Option<u64> {
    let mut v = 0u64;
    for k in 0..size {
        let p = cx.m.resolve(cx.cta, cx.warp, l, None, a + k as u64, 1).ok()?;
        v |= (cx.m.read(p, 1)[0] as u64) << (8 * k);
    }
    Some(v)
}

/// The NUL-terminated string at generic address `a` (at most 64 KiB), or None when it is not
/// all in memory.
fn read_cstring(cx: &Cx<'_, '_>, l: u32, a: u64) -> Option<String> {
    if a == 0 {
        return None;
    }
    let mut out = Vec::new();
    for k in 0..(1u64 << 16) {
        let p = cx.m.resolve(cx.cta, cx.warp, l, None, a + k, 1).ok()?;
        match cx.m.read(p, 1)[0] {
            0 => return Some(String::from_utf8_lossy(&out).into_owned()),
            b => out.push(b),
        }
    }
    None
}

/// `malloc` (CUDA C++ Programming Guide, Dynamic Global Memory Allocation): a fresh region of
/// the device heap (crate::heap), or NULL when the heap cannot hold it.
fn malloc(cx: &mut Cx<'_, '_>, size: u64) -> u64 {
    let m = &mut *cx.m;
    let Some((base, block, k)) = m.heap.alloc(size, m.global.len()) else { return 0 };
    let region = Region { name: format!("malloc#{k}"), base, bytes: vec![0; block.size as usize] };
    if block.slot == m.global.len() {
        m.global.push(region);
    } else {
        m.global[block.slot] = region;
    }
    crate::race::heap_allocated(m, block.slot);
    base
}

/// `free`: the region's bytes go (later accesses are outside every allocation, named use after
/// free); NULL is ignored (CUDA: "If ptr is NULL, no operation is performed").
fn free(cx: &mut Cx<'_, '_>, l: u32, p: u64) -> Result<(), Stop> {
    if p == 0 {
        return Ok(());
    }
    match cx.m.heap.free(p) {
        Ok(block) => {
            let r = &mut cx.m.global[block.slot];
            r.bytes = Vec::new();
            r.name = r.name.replacen("malloc#", "free#", 1);
            Ok(())
        }
        Err(bad) => {
            let what = match bad {
                BadFree::FreedAlready => "was freed already (double free)".to_string(),
                BadFree::Interior { base } => format!("points inside the allocation at 0x{base:x}, not at its start"),
                BadFree::NotAllocated => "was not returned by malloc".to_string(),
            };
            cx.finding(FindingKind::HeapFreeInvalid, l, format!("free(0x{p:x}): the pointer {what}"))
        }
    }
}
