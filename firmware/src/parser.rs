//! PTX parser: tokens → [`Module`], checking every instruction against its opcode-table row.

use crate::diag::Diag;
use crate::ir::*;
use crate::lexer::{lex, Tok, Token};
use crate::ops::{self, OpSpec};
use std::collections::HashMap;

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    symbols: Vec<Symbol>,
    /// Index of `symbols` by name.
    sym_index: HashMap<String, SymId>,
    regs: Vec<RegDecl>,
    reg_index: HashMap<String, RegId>,
    /// Open nested `{ }` blocks (PTX 4.4.1: a `.reg` declared in a block is visible only in it):
    /// per block, the names it declared and the binding each one shadowed.
    scopes: Vec<Vec<(String, Option<RegId>)>>,
    /// Every name in `regs` (block-local registers may be renamed to stay unique).
    reg_names: std::collections::HashSet<String>,
    /// Per register of `regs`: the block depth it was declared at (0: the kernel body).
    reg_depth: Vec<usize>,
    /// Per declared name: the last `$k` suffix given to a block-local redeclaration.
    reg_suffix: HashMap<String, u32>,
    labels: Vec<String>,
    label_pc: Vec<Option<u32>>,
    label_index: HashMap<String, LabelId>,
    label_use: Vec<Loc>,
    body: Vec<Instr>,
}

type R<T> = Result<T, Diag>;

/// The deepest nesting of `{ }` blocks inside a kernel body that ptxas accepts: 13.5 (sm_90)
/// assembles 1663 levels and fails on 1664 ("Parsing error near '{': memory exhausted").
pub const MAX_BLOCK_DEPTH: usize = 1663;

/// The most registers one kernel may declare. PTX sets no bound on virtual registers, but every
/// engine keeps each one for all 32 lanes of every warp; real kernels declare thousands
/// (nvcc's largest unrolled loops: tens of thousands), and a `%r<65536>` range per nested
/// block would otherwise grow without bound from a few bytes of source each.
pub const MAX_REGS: usize = 1 << 20;

/// Parses a PTX module with exactly one `.entry` kernel.
pub fn parse_module(src: &str) -> R<Module> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        symbols: Vec::new(),
        sym_index: HashMap::new(),
        regs: Vec::new(),
        reg_index: HashMap::new(),
        scopes: Vec::new(),
        reg_names: std::collections::HashSet::new(),
        reg_depth: Vec::new(),
        reg_suffix: HashMap::new(),
        labels: Vec::new(),
        label_pc: Vec::new(),
        label_index: HashMap::new(),
        label_use: Vec::new(),
        body: Vec::new(),
    };
    p.module()
}

impl<'a> Parser<'a> {
    fn loc(&self) -> Loc {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.loc)
            .unwrap_or(Loc { line: 1, col: 1 })
    }
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn next(&mut self) -> Option<&'a Tok> {
        let t = self.toks.get(self.pos).map(|t| &t.tok);
        self.pos += 1;
        t
    }
    fn describe(t: Option<&Tok>) -> String {
        match t {
            None => "end of file".into(),
            Some(Tok::Word(w)) => format!("`{w}`"),
            Some(Tok::Int(v)) => format!("`{v}`"),
            Some(Tok::Float(b, _)) => format!("`0x{b:x}`"),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        }
    }
    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        Err(Diag::new(self.loc(), msg))
    }
    fn expected<T>(&self, what: &str) -> R<T> {
        self.err(format!("expected {what}, found {}", Self::describe(self.peek())))
    }
    fn punct(&mut self, c: char) -> R<()> {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            Ok(())
        } else if c == ';' {
            self.missing_semi("`;`")
        } else {
            self.expected(&format!("`{c}`"))
        }
    }
    /// A statement that does not end where it should. When the next token starts a later line
    /// (or the file ends), the `;` was forgotten: point just past the last token of the statement,
    /// where rustc would, rather than at the next statement.
    fn missing_semi<T>(&self, what: &str) -> R<T> {
        let prev = self.pos.checked_sub(1).and_then(|p| self.toks.get(p));
        let next = self.toks.get(self.pos);
        match (prev, next) {
            (Some(p), n) if n.is_none_or(|n| n.loc.line > p.end.line) => Err(Diag::new(
                p.end,
                format!(
                    "expected `;` at the end of this statement, found {}{}",
                    Self::describe(n.map(|t| &t.tok)),
                    if n.is_some() { " on a later line" } else { "" }
                ),
            )),
            _ => self.expected(what),
        }
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self, what: &str) -> R<String> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                self.pos += 1;
                Ok(w.clone())
            }
            _ => self.expected(what),
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn int(&mut self, what: &str) -> R<i64> {
        match self.peek() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(*v)
            }
            _ => self.expected(what),
        }
    }

    fn module(&mut self) -> R<Module> {
        let mut version = None;
        let mut target = Vec::new();
        let mut address_size = 64;
        let mut kernel = None;
        // Where `.version` should have been (the module's first token) and where `.target`
        // should have been (the first token after `.version`).
        let first_loc = self.loc();
        let mut after_version = None;
        while let Some(t) = self.peek() {
            let loc = self.loc();
            let Tok::Word(w) = t else {
                return self.expected("a directive (`.version`, `.target`, `.entry`, ...)");
            };
            match w.as_str() {
                ".version" => {
                    self.pos += 1;
                    let w = match self.next() {
                        Some(Tok::Word(w)) => w.clone(),
                        Some(Tok::Int(v)) => v.to_string(),
                        _ => return Err(Diag::new(loc, "expected a version like `8.0` after `.version`")),
                    };
                    // `8.0` lexes as the word `8.0`? No: digits lex as numbers, so `8` then `.0`.
                    let (maj, min) = if let Some((a, b)) = w.split_once('.') {
                        (a.parse().ok(), b.parse().ok())
                    } else {
                        let minor = match self.next() {
                            Some(Tok::Word(m)) if m.starts_with('.') => m[1..].parse().ok(),
                            _ => None,
                        };
                        (w.parse().ok(), minor)
                    };
                    after_version = Some(self.loc());
                    match (maj, min) {
                        (Some(a), Some(b)) => version = Some((a, b)),
                        _ => return Err(Diag::new(loc, "expected a version like `8.0` after `.version`")),
                    }
                }
                ".target" => {
                    self.pos += 1;
                    target.push(self.word("a target such as `sm_90`")?);
                    while self.eat_punct(',') {
                        target.push(self.word("a target option")?);
                    }
                }
                ".address_size" => {
                    self.pos += 1;
                    let a = self.int("`64`")?;
                    if a != 64 && a != 32 {
                        return Err(Diag::new(loc, "`.address_size` must be 32 or 64"));
                    }
                    address_size = a as u32;
                }
                ".visible" | ".weak" | ".extern" | ".entry" | ".func" | ".global" | ".shared" | ".const" => {
                    let start = self.pos;
                    let mut visible = false;
                    let mut is_extern = false;
                    loop {
                        if self.eat_word(".visible") {
                            visible = true;
                        } else if self.eat_word(".weak") {
                        } else if self.eat_word(".extern") {
                            is_extern = true;
                        } else {
                            break;
                        }
                    }
                    if self.eat_word(".entry") {
                        if kernel.is_some() {
                            return Err(Diag::new(loc, "a firmware program has exactly one `.entry` kernel; found a second"));
                        }
                        kernel = Some(self.kernel(visible)?);
                    } else if matches!(self.peek(), Some(Tok::Word(w)) if w == ".func") {
                        return self.err("unsupported: `.func` device functions (firmware programs are one `.entry` kernel)");
                    } else {
                        let _ = start;
                        self.var_decl(true, is_extern)?;
                        self.punct(';')?;
                    }
                }
                ".file" | ".loc" | ".section" => {
                    return self.err(format!("unsupported: `{w}` debug directives"));
                }
                _ => return self.err(format!("unexpected `{w}` at module scope: expected `.version`, `.target`, `.address_size`, a variable or `.entry`")),
            }
        }
        let Some(version) = version else {
            return Err(Diag::new(first_loc, "missing `.version` directive: a PTX module must begin with `.version`"));
        };
        if target.is_empty() {
            return Err(Diag::new(
                after_version.unwrap_or(first_loc),
                "missing `.target` directive: `.version` must be followed by `.target`",
            ));
        }
        let Some(kernel) = kernel else {
            return Err(Diag::new(self.loc(), "missing `.entry` kernel"));
        };
        let m = Module { version, target, address_size, symbols: std::mem::take(&mut self.symbols), kernel };
        check_target(&m)?;
        Ok(m)
    }

    /// `.shared .align 8 .b64 name[4] = {..}` (after `.visible`/`.extern`), without the `;`.
    fn var_decl(&mut self, module_scope: bool, is_extern: bool) -> R<SymId> {
        let loc = self.loc();
        let space = match self.word("a state space")?.as_str() {
            ".shared" => Space::Shared,
            ".global" => Space::Global,
            ".param" => Space::Param,
            ".local" => Space::Local,
            ".const" => Space::Const,
            s => return Err(Diag::new(loc, format!("expected a state space (`.shared`, `.global`, `.param`, `.local`, `.const`), found `{s}`"))),
        };
        let mut align = None;
        let mut ty = None;
        let mut attrs = Vec::new();
        loop {
            let l = self.loc();
            match self.peek() {
                Some(Tok::Word(w)) if w == ".align" => {
                    self.pos += 1;
                    let a = self.int("an alignment")?;
                    if a <= 0 || (a & (a - 1)) != 0 {
                        return Err(Diag::new(l, format!("alignment {a} is not a power of two")));
                    }
                    align = Some(a as u32);
                }
                Some(Tok::Word(w)) if w.starts_with(".ptr") => {
                    self.pos += 1;
                    attrs.push(w.clone());
                    if self.eat_word(".align") {
                        let a = self.int("an alignment")?;
                        attrs.push(format!(".align {a}"));
                    }
                }
                Some(Tok::Word(w)) if w.starts_with('.') => {
                    let m = Mod::from_text(&w[1..]).filter(|m| m.is_type());
                    match m {
                        Some(m) => {
                            self.pos += 1;
                            ty = Some(m);
                        }
                        None => return Err(Diag::new(l, format!("unknown type `{w}` in variable declaration"))),
                    }
                }
                _ => break,
            }
        }
        let Some(ty) = ty else {
            return self.expected("a type such as `.b64`");
        };
        let nloc = self.loc();
        let name = self.word("a variable name")?;
        if name.starts_with('.') || name.starts_with('%') && space != Space::Param {
            return Err(Diag::new(nloc, format!("`{name}` is not a valid variable name")));
        }
        let mut array = None;
        if self.eat_punct('[') {
            if self.eat_punct(']') {
                array = Some(0);
            } else {
                let n = self.int("an array length")?;
                if !(1..=(1 << 30)).contains(&n) {
                    return Err(Diag::new(nloc, format!("array length {n} out of range")));
                }
                array = Some(n as u32);
                self.punct(']')?;
            }
        }
        let mut init = Vec::new();
        if self.eat_punct('=') {
            if self.eat_punct('{') {
                loop {
                    init.push(self.int("an initializer value")?);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                self.punct('}')?;
            } else {
                init.push(self.int("an initializer value")?);
            }
        }
        if self.sym_index.contains_key(&name) {
            return Err(Diag::new(nloc, format!("`{name}` is declared twice")));
        }
        let id = SymId(self.symbols.len() as u32);
        self.sym_index.insert(name.clone(), id);
        self.symbols.push(Symbol { name, space, ty, align, array, is_extern, attrs, init, module_scope, loc: nloc });
        Ok(id)
    }

    fn kernel(&mut self, visible: bool) -> R<Kernel> {
        let name = self.word("the kernel name")?;
        let mut params = Vec::new();
        self.punct('(')?;
        if !self.eat_punct(')') {
            loop {
                if !matches!(self.peek(), Some(Tok::Word(w)) if w == ".param") {
                    return self.expected("`.param`");
                }
                params.push(self.var_decl(false, false)?);
                if self.eat_punct(')') {
                    break;
                }
                self.punct(',')?;
            }
        }
        let mut directives = Vec::new();
        while let Some(Tok::Word(w)) = self.peek() {
            if !matches!(w.as_str(), ".maxntid" | ".reqntid" | ".minnctapersm" | ".maxnreg" | ".explicitcluster" | ".reqnctapercluster" | ".maxclusterrank" | ".noreturn") {
                break;
            }
            let mut d = w.clone();
            self.pos += 1;
            let mut first = true;
            while let Some(Tok::Int(v)) = self.peek() {
                d.push_str(if first { " " } else { ", " });
                d.push_str(&v.to_string());
                first = false;
                self.pos += 1;
                if !self.eat_punct(',') {
                    break;
                }
            }
            directives.push(d);
        }
        self.punct('{')?;
        self.block()?;
        for (i, pc) in self.label_pc.iter().enumerate() {
            if pc.is_none() {
                return Err(Diag::new(self.label_use[i], format!("label `{}` is used but never defined", self.labels[i])));
            }
        }
        Ok(Kernel {
            name,
            visible,
            params,
            directives,
            regs: std::mem::take(&mut self.regs),
            labels: std::mem::take(&mut self.labels),
            label_pc: self.label_pc.iter().map(|p| p.unwrap_or(0)).collect(),
            body: std::mem::take(&mut self.body),
        })
    }

    /// Statements up to the `}` closing the kernel body. Nested blocks live on the `scopes`
    /// stack, not on the call stack: any nesting depth parses in constant stack space.
    fn block(&mut self) -> R<()> {
        loop {
            let loc = self.loc();
            match self.peek() {
                None if self.scopes.is_empty() => return self.expected("`}` closing the kernel body"),
                None => return self.expected("`}` closing a nested block"),
                Some(Tok::Punct('}')) => {
                    self.pos += 1;
                    match self.scopes.pop() {
                        None => return Ok(()),
                        Some(scope) => self.close_scope(scope),
                    }
                }
                Some(Tok::Punct('{')) => {
                    // A nested block: nvcc wraps inline asm that declares its own registers in one
                    // (`{ .reg .pred p; ... }`, several times per kernel).
                    if self.scopes.len() >= MAX_BLOCK_DEPTH {
                        return self.err(format!(
                            "blocks nest more than {MAX_BLOCK_DEPTH} deep inside the kernel body: ptxas (13.5, sm_90) stops there (\"Parsing error near '{{': memory exhausted\")"
                        ));
                    }
                    self.pos += 1;
                    self.scopes.push(Vec::new());
                }
                Some(Tok::Word(w)) if w == ".reg" => {
                    self.pos += 1;
                    self.reg_decl()?;
                }
                Some(Tok::Word(w)) if matches!(w.as_str(), ".shared" | ".local" | ".global" | ".const") => {
                    self.var_decl(false, false)?;
                    self.punct(';')?;
                }
                Some(Tok::Word(w)) if w == ".extern" => {
                    self.pos += 1;
                    self.var_decl(false, true)?;
                    self.punct(';')?;
                }
                Some(Tok::Word(w)) if w == ".pragma" => {
                    self.pos += 1;
                    match self.next() {
                        Some(Tok::Str(_)) => {}
                        _ => return Err(Diag::new(loc, "expected a string after `.pragma`")),
                    }
                    self.punct(';')?;
                }
                Some(Tok::Word(w)) if !w.starts_with('.') && !w.starts_with('%') && self.toks.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::Punct(':')) => {
                    let name = w.clone();
                    self.pos += 2;
                    let id = self.label_id(&name, loc);
                    if self.label_pc[id.0 as usize].is_some() {
                        return Err(Diag::new(loc, format!("label `{name}` is defined twice")));
                    }
                    self.label_pc[id.0 as usize] = Some(self.body.len() as u32);
                }
                Some(Tok::Word(w)) if w.starts_with('.') => {
                    return self.err(format!("unexpected directive `{w}` in a kernel body"));
                }
                _ => {
                    let ins = self.instr()?;
                    self.body.push(ins);
                }
            }
        }
    }

    /// Leaves a nested block: the names it declared get back the bindings they shadowed.
    fn close_scope(&mut self, scope: Vec<(String, Option<RegId>)>) {
        for (name, old) in scope.into_iter().rev() {
            match old {
                Some(id) => self.reg_index.insert(name, id),
                None => self.reg_index.remove(&name),
            };
        }
    }

    fn label_id(&mut self, name: &str, loc: Loc) -> LabelId {
        if let Some(id) = self.label_index.get(name) {
            return *id;
        }
        let id = LabelId(self.labels.len() as u32);
        self.labels.push(name.to_string());
        self.label_pc.push(None);
        self.label_use.push(loc);
        self.label_index.insert(name.to_string(), id);
        id
    }

    /// `.reg .b32 %r<10>, %x;` (after `.reg`).
    fn reg_decl(&mut self) -> R<()> {
        let loc = self.loc();
        let tw = self.word("a register type such as `.b32`")?;
        let ty = tw
            .strip_prefix('.')
            .and_then(Mod::from_text)
            .filter(|m| m.is_type())
            .ok_or_else(|| Diag::new(loc, format!("unknown register type `{tw}`")))?;
        loop {
            let nloc = self.loc();
            let name = self.word("a register name")?;
            if name.starts_with('.') {
                return Err(Diag::new(nloc, format!("`{name}` is not a register name")));
            }
            if self.eat_punct('<') {
                let n = self.int("a register count")?;
                if !(1..=65536).contains(&n) {
                    return Err(Diag::new(nloc, format!("register range `<{n}>` out of range")));
                }
                self.punct('>')?;
                for i in 0..n {
                    self.add_reg(format!("{name}{i}"), ty, Some((name.clone(), n as u32)), nloc)?;
                }
            } else {
                self.add_reg(name, ty, None, nloc)?;
            }
            if !self.eat_punct(',') {
                break;
            }
        }
        self.punct(';')
    }

    fn add_reg(&mut self, name: String, ty: Mod, range: Option<(String, u32)>, loc: Loc) -> R<()> {
        if self.regs.len() >= MAX_REGS {
            return Err(Diag::new(
                loc,
                format!("the kernel declares more than {MAX_REGS} registers: hopsync models at most 2^20 (each costs every warp 32 lanes x 8 bytes)"),
            ));
        }
        let old = self.reg_index.get(&name).copied();
        // The binding in force was made in this block exactly when it was made at this depth:
        // deeper blocks are closed, and closing restores what they shadowed.
        if old.is_some_and(|id| self.reg_depth[id.0 as usize] == self.scopes.len()) {
            return Err(Diag::new(loc, format!("register `{name}` is declared twice")));
        }
        // The kernel's register list is flat: a block-local register that reuses a name declared
        // elsewhere gets a unique name (`p$1`; `$` is legal in PTX identifiers, PTX 4.3) so the
        // printed module declares each once. The suffix counter per name only grows, so
        // renaming stays linear however many blocks redeclare the name.
        let mut unique = name.clone();
        if self.reg_names.contains(&unique) {
            let k = self.reg_suffix.entry(name.clone()).or_insert(0);
            while self.reg_names.contains(&unique) {
                *k += 1;
                unique = format!("{name}${k}");
            }
        }
        let id = RegId(self.regs.len() as u32);
        if let Some(sc) = self.scopes.last_mut() {
            sc.push((name.clone(), old));
        }
        // A renamed register prints on its own, not as part of a `%r<N>` range.
        let range = if unique != name { None } else { range };
        self.reg_index.insert(name, id);
        self.reg_names.insert(unique.clone());
        self.regs.push(RegDecl { name: unique, ty, range, loc });
        self.reg_depth.push(self.scopes.len());
        Ok(())
    }

    fn reg(&self, name: &str, loc: Loc) -> R<RegId> {
        self.reg_index
            .get(name)
            .copied()
            .ok_or_else(|| Diag::new(loc, format!("undeclared register `{name}`")))
    }

    fn instr(&mut self) -> R<Instr> {
        let start = self.loc();
        let mut guard = None;
        if self.eat_punct('@') {
            let negated = self.eat_punct('!');
            let gl = self.loc();
            let g = self.word("a predicate register after `@`")?;
            let reg = self.reg(&g, gl)?;
            if self.regs[reg.0 as usize].ty != Mod::Pred {
                return Err(Diag::new(gl, format!("guard `{g}` is not a `.pred` register")));
            }
            guard = Some(Guard { reg, negated });
        }
        let mloc = self.loc();
        let mn = self.word("an instruction")?;
        let segs: Vec<&str> = mn.split('.').collect();
        let Some((spec, used)) = ops::lookup(&segs) else {
            return Err(Diag::new(mloc, format!("unknown instruction `{}`", segs[0])));
        };
        // Column of each modifier segment, so a bad modifier is pointed at itself.
        let seg_locs: Vec<Loc> = segs
            .iter()
            .scan(mloc.col, |col, sg| {
                let c = *col;
                *col += sg.chars().count() as u32 + 1;
                Some(Loc { line: mloc.line, col: c })
            })
            .collect();
        let (mods, ty2) = parse_mods(spec, &segs[used..], &seg_locs[used..], mloc)?;
        let mut operands = Vec::new();
        let mut op_locs = Vec::new();
        if !self.eat_punct(';') {
            loop {
                op_locs.push(self.loc());
                operands.push(self.operand()?);
                if self.eat_punct(';') {
                    break;
                }
                if !self.eat_punct(',') {
                    return self.missing_semi("`,` or `;`");
                }
            }
        }
        let ins = Instr { op: spec.op, mods, ty2, guard, operands, loc: start };
        check_operands(spec, &ins, &self.regs, &self.labels, mloc, &op_locs)?;
        check_vectors(spec, &ins, mloc, &op_locs)?;
        Ok(ins)
    }

    fn operand(&mut self) -> R<Operand> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Punct('[')) => {
                self.pos += 1;
                let a = self.address()?;
                // `[tensorMap, {c0, ...}]`: the tensor operand of cp.async.bulk.tensor and its
                // kin (PTX 9.7.9.25.5).
                if self.eat_punct(',') {
                    let Operand::Addr { base, offset } = a else { unreachable!("address() returns an address") };
                    if !matches!(self.peek(), Some(Tok::Punct('{'))) {
                        return self.expected("`{` opening the tensor coordinates");
                    }
                    let Operand::Vector(coords) = self.operand()? else { unreachable!("`{{` starts a vector") };
                    if let Some(k) = coords.iter().position(|c| !matches!(c, Operand::Reg(_) | Operand::Imm(_))) {
                        return Err(Diag::new(loc, format!("tensor coordinate {} must be a register or an integer immediate", k + 1)));
                    }
                    self.punct(']')?;
                    return Ok(Operand::Tensor { base, offset, coords });
                }
                self.punct(']')?;
                Ok(a)
            }
            Some(Tok::Punct('{')) => {
                self.pos += 1;
                let mut v = Vec::new();
                loop {
                    // Vector elements are scalars (PTX 6.4.2). Refusing a nested `{` and reading a
                    // `[` as a plain address also keep this recursion one level deep.
                    match self.peek() {
                        Some(Tok::Punct('{')) => return self.err("a vector operand cannot contain another vector (PTX 6.4.2: elements are scalars)"),
                        Some(Tok::Punct('[')) => {
                            // Parsed only to be refused by `check_vectors`, which names the element.
                            self.pos += 1;
                            let a = self.address()?;
                            self.punct(']')?;
                            v.push(a);
                        }
                        _ => v.push(self.operand()?),
                    }
                    if self.eat_punct('}') {
                        break;
                    }
                    self.punct(',')?;
                }
                Ok(Operand::Vector(v))
            }
            Some(Tok::Punct('!')) => {
                self.pos += 1;
                let l = self.loc();
                let w = self.word("a predicate register after `!`")?;
                Ok(Operand::NotReg(self.reg(&w, l)?))
            }
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Operand::Imm(*v))
            }
            Some(Tok::Float(b, d)) => {
                self.pos += 1;
                Ok(Operand::FloatBits { bits: *b, double: *d })
            }
            Some(Tok::Word(w)) => {
                self.pos += 1;
                let w = w.clone();
                let first = if w == "_" {
                    Operand::Sink
                } else if w == "WARP_SZ" && !self.reg_index.contains_key(&w) {
                    // PTX 10.x predefined constant `WARP_SZ` (the warp size), as nvcc emits it.
                    Operand::Imm(32)
                } else if let Some(r) = self.reg_index.get(&w) {
                    Operand::Reg(*r)
                } else if let Some(s) = w.strip_prefix('%').and_then(|s| {
                    let (n, d) = match s.split_once('.') {
                        Some((n, d)) => (n, Some(d)),
                        None => (s, None),
                    };
                    Sreg::from_parts(n, d)
                }) {
                    Operand::Special(s)
                } else if let Some(&i) = self.sym_index.get(&w) {
                    Operand::Sym(i)
                } else if w.starts_with('%') {
                    return Err(Diag::new(loc, format!("undeclared register `{w}`")));
                } else {
                    Operand::Label(self.label_id(&w, loc))
                };
                if self.eat_punct('|') {
                    let l2 = self.loc();
                    let p = self.word("a predicate register after `|`")?;
                    let p = self.reg(&p, l2)?;
                    return match first {
                        Operand::Reg(d) => Ok(Operand::Pair(d, p)),
                        Operand::Sink => Ok(Operand::Pair(RegId(u32::MAX), p)),
                        _ => Err(Diag::new(loc, "expected a register before `|`")),
                    };
                }
                Ok(first)
            }
            _ => self.expected("an operand"),
        }
    }

    /// Inside `[...]`: `reg`, `sym`, `imm`, `reg+imm`, `sym+imm`, `reg-imm`.
    fn address(&mut self) -> R<Operand> {
        let loc = self.loc();
        let base = match self.next() {
            Some(Tok::Int(v)) => AddrBase::Imm(*v as u64),
            Some(Tok::Word(w)) => {
                if let Some(r) = self.reg_index.get(w) {
                    AddrBase::Reg(*r)
                } else if let Some(&i) = self.sym_index.get(w) {
                    AddrBase::Sym(i)
                } else if w.starts_with('%') {
                    return Err(Diag::new(loc, format!("undeclared register `{w}`")));
                } else {
                    return Err(Diag::new(loc, format!("unknown variable `{w}` in address")));
                }
            }
            _ => {
                self.pos -= 1;
                return self.expected("a register, variable or immediate address");
            }
        };
        let mut offset = 0i64;
        if self.eat_punct('+') {
            offset = self.int("an offset")?;
        } else if self.eat_punct('-') {
            offset = -self.int("an offset")?;
        } else if let Some(Tok::Int(v)) = self.peek() {
            // `[%r1+-8]` lexes as `+`, `-8`; `[%r1 -8]` lexes `-8` directly.
            if *v < 0 {
                offset = *v;
                self.pos += 1;
            }
        }
        Ok(Operand::Addr { base, offset })
    }
}

/// Assigns each modifier segment to a group of `spec`; `cvt`-like rows with two type groups put
/// the second type in `ty2`.
fn parse_mods(spec: &OpSpec, segs: &[&str], seg_locs: &[Loc], mnemonic: Loc) -> R<(ModSet, Option<Mod>)> {
    let mut taken = vec![false; spec.groups.len()];
    let mut set = ModSet::default();
    let mut ty2 = None;
    let first_type_group = spec.groups.iter().position(|g| g.of.iter().any(|m| m.is_type()));
    for (s, &loc) in segs.iter().zip(seg_locs) {
        let m = Mod::from_text(s).ok_or_else(|| {
            Diag::new(loc, format!("unknown modifier `.{s}` on `{}`", spec.name))
        })?;
        let Some(g) = spec.group_of(m, &taken) else {
            let dup = spec.groups.iter().enumerate().any(|(i, g)| taken[i] && g.of.contains(&m));
            return Err(Diag::new(
                loc,
                if dup {
                    format!("`{}` takes one modifier from the set containing `.{s}`; found more", spec.name)
                } else {
                    format!("`.{s}` is not a valid modifier of `{}`", spec.name)
                },
            ));
        };
        taken[g] = true;
        if m.is_type() && Some(g) != first_type_group && first_type_group.is_some() && spec.groups[g].of.len() > 4 {
            ty2 = Some(m);
        } else {
            set.insert(m);
        }
    }
    for (i, g) in spec.groups.iter().enumerate() {
        if g.req && !taken[i] {
            let names: Vec<String> = g.of.iter().map(|m| format!(".{}", m.text())).collect();
            return Err(Diag::new(
                mnemonic,
                format!("`{}` needs one of {{{}}}", spec.name, names.join(", ")),
            ));
        }
    }
    Ok((set, ty2))
}

/// Checks operand count and kinds against the row's patterns; the first alternative that fits wins,
/// otherwise the error of the alternative with the operand count closest to the one given.
fn check_operands(spec: &OpSpec, ins: &Instr, regs: &[RegDecl], labels: &[String], loc: Loc, op_locs: &[Loc]) -> R<()> {
    let mut first_err: Option<(bool, Diag)> = None;
    for slots in spec.patterns() {
        match check_pattern(spec, &slots, ins, regs, labels, loc, op_locs) {
            Ok(()) => return Ok(()),
            Err((count_ok, d)) => {
                if first_err.as_ref().is_none_or(|(c, _): &(bool, Diag)| !*c && count_ok) {
                    first_err = Some((count_ok, d));
                }
            }
        }
    }
    Err(first_err.map(|(_, d)| d).unwrap_or_else(|| Diag::new(loc, "no operand pattern")))
}

fn check_pattern(
    spec: &OpSpec,
    slots: &[ops::OperandSlot],
    ins: &Instr,
    regs: &[RegDecl],
    labels: &[String],
    loc: Loc,
    op_locs: &[Loc],
) -> Result<(), (bool, Diag)> {
    let min = slots.iter().filter(|s| !s.optional).count();
    if ins.operands.len() < min || ins.operands.len() > slots.len() {
        return Err((
            false,
            Diag::new(
                loc,
                if min == slots.len() {
                    format!("`{}` takes {} operand(s), found {}", spec.name, min, ins.operands.len())
                } else {
                    format!("`{}` takes {}..={} operands, found {}", spec.name, min, slots.len(), ins.operands.len())
                },
            ),
        ));
    }
    for (i, (op, slot)) in ins.operands.iter().zip(slots).enumerate() {
        let k = slot.kinds;
        let ok = match op {
            Operand::Reg(r) => k.contains('d') || k.contains('s') || k.contains('|') || (k.contains('!') && regs[r.0 as usize].ty == Mod::Pred),
            Operand::NotReg(_) => k.contains('!'),
            Operand::Imm(_) | Operand::FloatBits { .. } | Operand::Special(_) | Operand::Sym(_) => k.contains('s'),
            Operand::Addr { .. } => k.contains('a'),
            Operand::Vector(_) => k.contains('v'),
            Operand::Tensor { .. } => k.contains('t'),
            Operand::Label(_) => k.contains('l'),
            Operand::Sink => k.contains('_') || k.contains('|'),
            Operand::Pair(..) => k.contains('|'),
        };
        let at = op_locs.get(i).copied().unwrap_or(loc);
        let fail = |what: String| Err((true, Diag::new(at, what)));
        if !ok {
            let what = match op {
                Operand::Reg(_) => "a register",
                Operand::NotReg(_) => "a negated predicate",
                Operand::Imm(_) | Operand::FloatBits { .. } => "an immediate",
                Operand::Special(_) => "a special register",
                Operand::Sym(_) => "a variable",
                Operand::Addr { .. } => "an address",
                Operand::Vector(_) => "a vector",
                Operand::Tensor { .. } => "a tensor operand `[tensorMap, {...}]`",
                Operand::Label(l) => {
                    return fail(format!(
                        "operand {} of `{}`: `{}` is not a declared register or variable",
                        i + 1,
                        spec.name,
                        labels[l.0 as usize]
                    ))
                }
                Operand::Sink => "`_`",
                Operand::Pair(..) => "a `d|p` pair",
            };
            return fail(format!("operand {} of `{}` cannot be {what}", i + 1, spec.name));
        }
        // Destinations must be registers (or `_` where the pattern allows it).
        if (k == "d" || k == "d_" || k == "dv") && matches!(op, Operand::Imm(_) | Operand::Special(_) | Operand::Sym(_)) {
            return fail(format!("operand {} of `{}` must be a destination register", i + 1, spec.name));
        }
    }
    Ok(())
}

/// Instructions with a `.v2`/`.v4`/`.v8` modifier (ld, st, atom, red, st.async) move that many
/// elements: their vector operands must have exactly that many, and a vector operand needs the
/// modifier (PTX 6.4.2 Vector Operands).
fn check_vectors(spec: &OpSpec, ins: &Instr, loc: Loc, op_locs: &[Loc]) -> R<()> {
    if !spec.groups.iter().any(|g| g.of.contains(&Mod::V2) || g.of.contains(&Mod::V4)) {
        return Ok(());
    }
    let n = [(Mod::V2, 2), (Mod::V4, 4), (Mod::V8, 8)].into_iter().find(|(m, _)| ins.has(*m)).map(|(_, n)| n);
    let mut vectors = 0;
    for (i, op) in ins.operands.iter().enumerate() {
        let Operand::Vector(v) = op else { continue };
        vectors += 1;
        let at = op_locs.get(i).copied().unwrap_or(loc);
        match n {
            None => {
                return Err(Diag::new(at, format!("operand {} of `{}` is a vector, but the instruction has no `.v2`/`.v4` modifier", i + 1, spec.name)));
            }
            Some(n) if v.len() != n => {
                return Err(Diag::new(at, format!("operand {} of `{}` has {} elements, but `.v{n}` moves {n}", i + 1, spec.name, v.len())));
            }
            _ => {}
        }
        if let Some(k) = v.iter().position(|e| !matches!(e, Operand::Reg(_) | Operand::Imm(_) | Operand::FloatBits { .. } | Operand::Sink)) {
            return Err(Diag::new(at, format!("element {} of vector operand {} of `{}` must be a register or an immediate", k + 1, i + 1, spec.name)));
        }
    }
    if let (Some(n), 0) = (n, vectors) {
        return Err(Diag::new(loc, format!("`.v{n}` needs a vector operand `{{...}}` of {n} elements on `{}`", spec.name)));
    }
    Ok(())
}

/// Target checks: instructions newer than the module's target are rejected as ptxas would.
fn check_target(m: &Module) -> R<()> {
    let sm = m.sm();
    if sm < 90 {
        return Err(Diag::new(Loc { line: 1, col: 1 }, format!("unsupported target `{}`: hopsync models sm_90", m.target.join(", "))));
    }
    for ins in &m.kernel.body {
        let spec = ins.op.spec();
        if spec.min_sm > sm {
            return Err(Diag::new(ins.loc, format!("`{}` requires sm_{}", spec.name, spec.min_sm)));
        }
        // red.async's .mmio / .release forms are sm_100 (PTX 9.7.13.7 Target ISA Notes).
        if ins.op == Opcode::RedAsync && (ins.has(Mod::Mmio) || ins.has(Mod::Release)) && sm < 100 {
            return Err(Diag::new(ins.loc, "`red.async.mmio`/`.release` requires sm_100"));
        }
        check_ptx_rules(m, ins)?;
        check_tensor_operands(m, ins)?;
    }
    Ok(())
}

/// The tensor-map operand of the cp.async.bulk.tensor family is a generic address (PTX
/// 9.7.9.25.5.2): ptxas (nvcc 13.0, sm_90) rejects a `.param`, `.shared` or `.local` variable
/// named directly ("State space mismatch between instruction and address in instruction
/// 'cp.async.bulk.tensor'"); kernels take the param's generic address into a register
/// (`mov.u64 %rd, tmap; cvta.param.u64 %rd, %rd;`).
fn check_tensor_operands(m: &Module, ins: &Instr) -> R<()> {
    for op in &ins.operands {
        if let Operand::Tensor { base: AddrBase::Sym(s), .. } = op {
            let sym = &m.symbols[s.0 as usize];
            if matches!(sym.space, Space::Param | Space::Shared | Space::Local) {
                return Err(Diag::new(
                    ins.loc,
                    format!(
                        "the tensor-map operand `{}` is a .{} variable: ptxas rejects it (state space mismatch); use its generic address in a register (mov.u64 %rd, {}; cvta.{}.u64 %rd, %rd)",
                        sym.name,
                        sym.space.text(),
                        sym.name,
                        sym.space.text()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Rules ptxas (nvcc 13.0, sm_90) enforces that the syntax blocks leave implicit; each was seen
/// rejecting a program on the device (cosim/gpu/runner: JIT log), so hopsync rejects it too.
fn check_ptx_rules(m: &Module, ins: &Instr) -> R<()> {
    use Opcode::*;
    let mbar_sem_scoped = matches!(
        ins.op,
        MbarrierArrive | MbarrierArriveDrop | MbarrierExpectTx | MbarrierCompleteTx | MbarrierTestWait | MbarrierTryWait
    );
    if mbar_sem_scoped && !ins.has(Mod::Cta) && !ins.has(Mod::Cluster) {
        // ptxas: "Modifier '.release' requires scope with 'mbarrier.arrive' instruction".
        if let Some(sem) = [Mod::Release, Mod::Acquire, Mod::Relaxed].into_iter().find(|s| ins.has(*s)) {
            return Err(Diag::new(
                ins.loc,
                format!("modifier `.{}` requires a scope (`.cta` or `.cluster`) with `{}` (as ptxas says)", sem.text(), ins.op.name()),
            ));
        }
    }
    // ptxas: "Modifier '.relaxed' on 'mbarrier.arrive' requires PTX ISA .version 8.6 or later"
    // (PTX 9.7.13.15.13 / .16 PTX ISA Notes).
    let relaxed_86 = matches!(ins.op, MbarrierArrive | MbarrierArriveDrop | MbarrierTestWait | MbarrierTryWait);
    if relaxed_86 && ins.has(Mod::Relaxed) && m.version < (8, 6) {
        return Err(Diag::new(
            ins.loc,
            format!("`.relaxed` on `{}` requires PTX ISA `.version 8.6` or later (this module is {}.{})", ins.op.name(), m.version.0, m.version.1),
        ));
    }
    // st.async and red.async were introduced in PTX ISA 8.1 (PTX 9.7.9.12, 9.7.13.7 PTX ISA Notes).
    if matches!(ins.op, StAsync | RedAsync) && m.version < (8, 1) {
        return Err(Diag::new(
            ins.loc,
            format!("`{}` requires PTX ISA `.version 8.1` or later (this module is {}.{})", ins.op.name(), m.version.0, m.version.1),
        ));
    }
    Ok(())
}
