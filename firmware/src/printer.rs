//! PTX printer: [`Module`] → text that [`crate::parser::parse_module`] reads back to the same IR.
//! Modifiers are written in the opcode table's group order.

use crate::ir::*;
use std::fmt::Write;

/// Prints a module as PTX (without the manifest).
pub fn print_module(m: &Module) -> String {
    let mut o = String::new();
    let _ = writeln!(o, ".version {}.{}", m.version.0, m.version.1);
    let _ = writeln!(o, ".target {}", m.target.join(", "));
    let _ = writeln!(o, ".address_size {}", m.address_size);
    o.push('\n');
    for s in m.symbols.iter().filter(|s| s.module_scope) {
        let _ = writeln!(o, "{};", symbol_decl(s));
    }
    let k = &m.kernel;
    let _ = write!(o, "{}.entry {}(", if k.visible { ".visible " } else { "" }, k.name);
    for (i, p) in k.params.iter().enumerate() {
        let _ = write!(o, "{}\n\t{}", if i > 0 { "," } else { "" }, symbol_decl(&m.symbols[p.0 as usize]));
    }
    o.push_str(if k.params.is_empty() { ")\n" } else { "\n)\n" });
    for d in &k.directives {
        let _ = writeln!(o, "{d}");
    }
    o.push_str("{\n");
    let mut seen_range = std::collections::HashSet::new();
    for r in &k.regs {
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
    for s in m.symbols.iter().filter(|s| !s.module_scope && s.space != Space::Param) {
        let _ = writeln!(o, "\t{};", symbol_decl(s));
    }
    o.push('\n');
    for (pc, ins) in k.body.iter().enumerate() {
        for (li, _) in k.label_pc.iter().enumerate().filter(|(_, p)| **p as usize == pc) {
            let _ = writeln!(o, "{}:", k.labels[li]);
        }
        let _ = writeln!(o, "\t{}", print_instr(m, ins));
    }
    for (li, _) in k.label_pc.iter().enumerate().filter(|(_, p)| **p as usize == k.body.len()) {
        let _ = writeln!(o, "{}:", k.labels[li]);
    }
    o.push_str("}\n");
    o
}

fn symbol_decl(s: &Symbol) -> String {
    let mut d = String::new();
    if s.is_extern {
        d.push_str(".extern ");
    }
    let _ = write!(d, ".{}", s.space.text());
    for a in &s.attrs {
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
        let v: Vec<String> = s.init.iter().map(|x| x.to_string()).collect();
        if s.array.is_some() {
            let _ = write!(d, " = {{{}}}", v.join(", "));
        } else {
            let _ = write!(d, " = {}", v[0]);
        }
    }
    d
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
    if offset > 0 {
        format!("{b}+{offset}")
    } else if offset < 0 {
        format!("{b}{offset}")
    } else {
        b
    }
}
