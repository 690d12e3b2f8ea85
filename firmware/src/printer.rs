//! PTX printer: [`Module`] → text that [`crate::parser::parse_module`] reads back to the same IR.
//! Modifiers are written in the opcode table's group order.

use crate::ir::*;
use std::fmt::Write;

/// Prints a module as PTX (without the manifest): its module-scope items in source order, each
/// function with its registers, its variables (block-scoped ones renamed unique, so the body is
/// flat), its labels, `.callprototype`s and `.loc` lines.
pub fn print_module(m: &Module) -> String {
    let mut o = String::new();
    let _ = writeln!(o, ".version {}.{}", m.version.0, m.version.1);
    let _ = writeln!(o, ".target {}", m.target.join(", "));
    let _ = writeln!(o, ".address_size {}", m.address_size);
    for (n, path) in &m.files {
        let _ = writeln!(o, ".file {n} \"{path}\"");
    }
    o.push('\n');
    for item in &m.items {
        match *item {
            Item::Var(s) => {
                let _ = writeln!(o, "{};", symbol_decl(m, &m.symbols[s.0 as usize]));
            }
            Item::Decl(f) => {
                let _ = writeln!(o, "{};", func_header(m, &m.funcs[f.0 as usize]));
            }
            Item::Def(f) => print_func(m, &m.funcs[f.0 as usize], &mut o),
            Item::Pragma(i) => {
                let _ = writeln!(o, ".pragma \"{}\";", m.kernel.module_pragmas[i as usize]);
            }
        }
    }
    o
}

/// `.visible .func (.param .b32 r) name(.param .b64 p)` / `.entry name(...)` with directives.
fn func_header(m: &Module, f: &Func) -> String {
    let mut o = String::new();
    for l in &f.linkage {
        let _ = write!(o, "{l} ");
    }
    o.push_str(if f.entry { ".entry " } else { ".func " });
    let formal = |p: &Formal| match p {
        Formal::Param(s) => symbol_decl(m, &m.symbols[s.0 as usize]),
        Formal::Reg(r) => format!(".reg .{} {}", m.kernel.regs[r.0 as usize].ty.text(), m.kernel.regs[r.0 as usize].name),
    };
    if !f.rets.is_empty() {
        let r: Vec<String> = f.rets.iter().map(formal).collect();
        let _ = write!(o, "({}) ", r.join(", "));
    }
    o.push_str(&f.name);
    if f.entry || !f.params.is_empty() {
        o.push('(');
        for (i, p) in f.params.iter().enumerate() {
            let _ = write!(o, "{}\n\t{}", if i > 0 { "," } else { "" }, formal(p));
        }
        o.push_str(if f.params.is_empty() { ")" } else { "\n)" });
    }
    for d in &f.directives {
        let _ = write!(o, "\n{d}");
    }
    o
}

fn print_func(m: &Module, f: &Func, o: &mut String) {
    let k = &m.kernel;
    let _ = writeln!(o, "{}\n{{", func_header(m, f));
    let formal_regs: Vec<u32> = f.params.iter().chain(&f.rets).filter_map(|p| if let Formal::Reg(r) = p { Some(r.0) } else { None }).collect();
    let mut seen_range = std::collections::HashSet::new();
    let fid = m.funcs.iter().position(|x| std::ptr::eq(x, f)).map(|i| FuncId(i as u32));
    // Registers no function declared (added by a pass such as the GPU trace instrumentation)
    // belong to the launched entry.
    let owned = m.funcs.iter().map(|g| g.regs.1).max().unwrap_or(0);
    let extra = if fid == Some(m.entry) { owned..k.regs.len() as u32 } else { 0..0 };
    for r in (f.regs.0..f.regs.1).chain(extra).filter(|r| !formal_regs.contains(r)).map(|r| &k.regs[r as usize]) {
        match &r.range {
            Some((base, n)) => {
                if seen_range.insert(base.clone()) {
                    let _ = writeln!(o, "\t.reg .{} {}<{}>;", r.ty.text(), base, n);
                }
            }
            None => {
                let _ = writeln!(o, "\t.reg .{} {};", r.ty.text(), r.name);
            }
        }
    }
    let formals: Vec<u32> = f.params.iter().chain(&f.rets).filter_map(|p| if let Formal::Param(s) = p { Some(s.0) } else { None }).collect();
    for (i, s) in m.symbols.iter().enumerate() {
        if s.func.is_some() && s.func == fid && !formals.contains(&(i as u32)) {
            let _ = writeln!(o, "\t{};", symbol_decl(m, s));
        }
    }
    o.push('\n');
    let (start, end) = f.body.unwrap_or((0, 0));
    let labels_at = |pc: u32, o: &mut String| {
        for li in f.labels.0..f.labels.1 {
            if k.label_pc[li as usize] == pc {
                match k.protos.iter().find(|(l, _)| l.0 == li) {
                    Some((_, text)) => {
                        let _ = writeln!(o, "{}: {};", k.labels[li as usize], text);
                    }
                    None => {
                        let _ = writeln!(o, "{}:", k.labels[li as usize]);
                    }
                }
            }
        }
    };
    let mut last_src = None;
    for pc in start..end {
        labels_at(pc, o);
        for (_, text) in k.pragmas.iter().filter(|(at, _)| *at == pc) {
            let _ = writeln!(o, "\t.pragma \"{text}\";");
        }
        let ins = &k.body[pc as usize];
        if let Some(l) = ins.src.0.and_then(|i| m.src_locs.get(i as usize)) {
            if last_src != ins.src.0 {
                let _ = writeln!(o, "\t.loc {} {} {}", l.file, l.line, l.col);
                last_src = ins.src.0;
            }
        }
        let _ = writeln!(o, "\t{}", print_instr(m, ins));
    }
    labels_at(end, o);
    o.push_str("}\n");
}

fn symbol_decl(m: &Module, s: &Symbol) -> String {
    let mut d = String::new();
    for a in s.attrs.iter().filter(|a| matches!(a.as_str(), ".visible" | ".weak" | ".common")) {
        let _ = write!(d, "{a} ");
    }
    if s.is_extern {
        d.push_str(".extern ");
    }
    let _ = write!(d, ".{}", s.space.text());
    for a in s.attrs.iter().filter(|a| !matches!(a.as_str(), ".visible" | ".weak" | ".common")) {
        let _ = write!(d, " {a}");
    }
    if let Some(a) = s.align {
        let _ = write!(d, " .align {a}");
    }
    let _ = write!(d, " .{} {}", s.ty.text(), s.name);
    match s.array {
        Some(0) => d.push_str("[]"),
        Some(n) => {
            let _ = write!(d, "[{n}]");
        }
        None => {}
    }
    if !s.init.is_empty() {
        let v: Vec<String> = s.init.iter().map(|x| init_text(m, x)).collect();
        if s.array.is_some() {
            let _ = write!(d, " = {{{}}}", v.join(", "));
        } else {
            let _ = write!(d, " = {}", v[0]);
        }
    }
    d
}

/// One initializer value as PTX.
fn init_text(m: &Module, v: &Init) -> String {
    match v {
        Init::Int(x) => x.to_string(),
        Init::Float { bits, double: true } => format!("0d{bits:016X}"),
        Init::Float { bits, double: false } => format!("0f{bits:08X}"),
        Init::Addr { of, generic, offset } => {
            let name = match of {
                AddrOf::Sym(s) => m.symbols[s.0 as usize].name.clone(),
                AddrOf::Func(f) => m.funcs[f.0 as usize].name.clone(),
            };
            let base = if *generic { format!("generic({name})") } else { name };
            match offset {
                0 => base,
                o if *o > 0 => format!("{base}+{o}"),
                o => format!("{base}{o}"),
            }
        }
    }
}

/// The mnemonic with its modifiers in canonical order.
pub fn mnemonic(ins: &Instr) -> String {
    let spec = ins.op.spec();
    let mut s = spec.name.to_string();
    let mut printed = ModSet::default();
    let slots = spec.type_slots();
    for (gi, g) in spec.groups.iter().enumerate() {
        match slots.iter().position(|&k| k == gi) {
            Some(k) if k > 0 => {
                if let Some(t) = [ins.ty2, ins.ty3, ins.ty4][(k - 1).min(2)] {
                    let _ = write!(s, ".{}", t.text());
                }
                continue;
            }
            _ => {}
        }
        if let Some(m) = g.of.iter().find(|m| ins.mods.has(**m) && !printed.has(**m)) {
            printed.insert(*m);
            let _ = write!(s, ".{}", m.text());
        }
    }
    s
}

/// One instruction as PTX text (with guard, without the trailing newline).
pub fn print_instr(m: &Module, ins: &Instr) -> String {
    let mut s = String::new();
    if let Some(g) = ins.guard {
        let _ = write!(s, "@{}{} ", if g.negated { "!" } else { "" }, m.kernel.regs[g.reg.0 as usize].name);
    }
    s.push_str(&mnemonic(ins));
    for (i, op) in ins.operands.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&operand_text(m, op));
    }
    s.push(';');
    s
}

/// An operand as PTX text.
pub fn operand_text(m: &Module, op: &Operand) -> String {
    let reg = |r: &RegId| m.kernel.regs[r.0 as usize].name.clone();
    match op {
        Operand::Reg(r) => reg(r),
        Operand::NotReg(r) => format!("!{}", reg(r)),
        Operand::Imm(v) => v.to_string(),
        Operand::FloatBits { bits, double } => {
            if *double {
                format!("0d{bits:016X}")
            } else {
                format!("0f{bits:08X}")
            }
        }
        Operand::Special(s) => s.to_string(),
        Operand::Sym(s) => m.symbols[s.0 as usize].name.clone(),
        Operand::Addr { base, offset } => format!("[{}]", address_text(m, base, *offset)),
        Operand::Tensor { base, offset, coords } => {
            let parts: Vec<String> = coords.iter().map(|o| operand_text(m, o)).collect();
            format!("[{}, {{{}}}]", address_text(m, base, *offset), parts.join(", "))
        }
        Operand::Vector(v) => {
            let parts: Vec<String> = v.iter().map(|o| operand_text(m, o)).collect();
            format!("{{{}}}", parts.join(", "))
        }
        Operand::Label(l) => m.kernel.labels[l.0 as usize].clone(),
        Operand::Func(f) => m.funcs[f.0 as usize].name.clone(),
        Operand::List(v) => {
            let parts: Vec<String> = v.iter().map(|o| operand_text(m, o)).collect();
            format!("({})", parts.join(", "))
        }
        Operand::Sink => "_".into(),
        Operand::Pair(d, p) => {
            let dn = if d.0 == u32::MAX { "_".to_string() } else { reg(d) };
            format!("{dn}|{}", reg(p))
        }
    }
}

/// The inside of an address operand: `base`, `base+offset` or `base-offset`.
fn address_text(m: &Module, base: &AddrBase, offset: i64) -> String {
    let b = match base {
        AddrBase::Reg(r) => m.kernel.regs[r.0 as usize].name.clone(),
        AddrBase::Sym(s) => m.symbols[s.0 as usize].name.clone(),
        AddrBase::Imm(v) => v.to_string(),
    };
    // A negative offset is written `+-N`, as nvcc writes it: ptxas rejects `[%rd2-636]`.
    if offset != 0 {
        format!("{b}+{offset}")
    } else {
        b
    }
}
