//! PTX parser: tokens → [`Module`], checking every instruction against its opcode-table row.
//!
//! A module holds any number of `.entry` kernels and `.func` device functions (declared,
//! `.extern`, or defined), module-scope variables with initializers, and the debugging
//! directives nvcc writes with `-lineinfo` (`.file`, `.loc`, `.section`). Every function body is
//! linked into one instruction list ([`Kernel`]); [`Module::funcs`] says which part is whose.
//!
//! Scopes (PTX 4.4, 9.7.12.1 `{}`): a `{ }` block opens a scope for the registers, variables and
//! labels declared in it (nvcc wraps inline asm in such blocks, and inline asm from several call
//! sites declares the same labels). A label is visible in its whole block, before its definition
//! too. The printed module is flat, so a name reused in another block of the same function is
//! renamed `name$k` (`$` is legal in PTX identifiers, PTX 4.3).
//!
//! Limits: nested blocks live on an explicit scope stack (any nesting parses in constant stack
//! space) up to ptxas's own depth, [`MAX_BLOCK_DEPTH`]; vector and list operands hold scalars
//! and initializer braces are counted, not recursed into; renaming keeps a suffix counter per
//! name and "declared twice" is a depth comparison, so no input makes the parser superlinear;
//! a module declares at most [`MAX_REGS`] registers.
//!
//! Errors: the parser goes on after a bad statement (to the next `;`) and reports every error,
//! up to [`MAX_ERRORS`], as one [`Diag`] whose `also` holds the rest.

use crate::diag::Diag;
use crate::ir::*;
use crate::lexer::{lex, Tok, Token};
use crate::ops::{self, OpSpec};
use std::collections::{HashMap, HashSet};

/// Errors reported before the parser gives up.
pub const MAX_ERRORS: usize = 20;

/// The deepest nesting of `{ }` blocks inside a function body that ptxas accepts: 13.5 (sm_90)
/// assembles 1663 levels and fails on 1664 ("Parsing error near '{': memory exhausted").
pub const MAX_BLOCK_DEPTH: usize = 1663;

/// The most registers one module may declare. PTX sets no bound on virtual registers, but every
/// engine keeps each one for all 32 lanes of every warp; real kernels declare thousands
/// (nvcc's largest unrolled loops: tens of thousands), and a `%r<65536>` range per nested
/// block would otherwise grow without bound from a few bytes of source each.
pub const MAX_REGS: usize = 1 << 20;

type R<T> = Result<T, Diag>;

/// A module-scope name.
#[derive(Clone, Copy)]
enum Global {
    Sym(SymId),
    Func(FuncId),
}

/// A label while its function is parsed: uses resolve when their block closes.
struct TmpLabel {
    name: String,
    /// The first use (for "never defined").
    use_loc: Loc,
    /// The instruction index it labels, once defined.
    pc: Option<u32>,
    /// Resolved to another temporary label (a use inside a block naming an outer label).
    alias: Option<u32>,
    /// `.callprototype` / `.calltargets` text, for such labels.
    directive: Option<String>,
}

/// One `{ }` scope of a function body.
#[derive(Default)]
struct Scope {
    /// Registers declared here and the bindings they shadowed.
    regs: Vec<(String, Option<RegId>)>,
    /// Variables declared here and the bindings they shadowed.
    syms: Vec<(String, Option<SymId>)>,
    /// Labels defined here.
    defs: HashMap<String, u32>,
    /// Labels used here (or in closed inner blocks) and not defined here yet.
    fwd: HashMap<String, u32>,
}

/// The function being parsed.
struct FnState {
    func: FuncId,
    reg_index: HashMap<String, RegId>,
    sym_index: HashMap<String, SymId>,
    scopes: Vec<Scope>,
    /// Names given out in this function (registers, variables, labels), kept unique.
    reg_names: HashSet<String>,
    sym_names: HashSet<String>,
    /// Per register name: the last `$k` suffix given to a redeclaration in another block (the
    /// counter only grows, so renaming stays linear however many blocks reuse the name).
    reg_suffix: HashMap<String, u32>,
    /// The same for variable names.
    sym_suffix: HashMap<String, u32>,
    labels: Vec<TmpLabel>,
    first_reg: u32,
    first_pc: u32,
}

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    symbols: Vec<Symbol>,
    globals: HashMap<String, Global>,
    funcs: Vec<Func>,
    items: Vec<Item>,
    regs: Vec<RegDecl>,
    /// Per register of `regs`: the scope depth it was declared at (1: the function body).
    reg_depth: Vec<usize>,
    /// Per symbol of `symbols`: the scope depth it was declared at (0: module scope).
    sym_depth: Vec<usize>,
    labels: Vec<String>,
    label_pc: Vec<u32>,
    protos: Vec<(LabelId, String)>,
    /// Statement-level pragmas: (index of the next instruction, string).
    pragmas: Vec<(u32, String)>,
    /// Module-scope pragmas' strings.
    module_pragmas: Vec<String>,
    body: Vec<Instr>,
    fs: Option<FnState>,
    errors: Vec<Diag>,
    files: Vec<(u32, String)>,
    src_locs: Vec<SrcLoc>,
    src_index: HashMap<SrcLoc, u32>,
    /// The latest `src_locs` entry at each (file, line, col), for `inlined_at`.
    src_latest: HashMap<(u32, u32, u32), u32>,
    src: SrcRef,
}

/// Parses a PTX module; the first `.entry` is the launched kernel until
/// [`Module::select_entry`] picks another.
pub fn parse_module(src: &str) -> R<Module> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        symbols: Vec::new(),
        globals: HashMap::new(),
        funcs: Vec::new(),
        items: Vec::new(),
        regs: Vec::new(),
        reg_depth: Vec::new(),
        sym_depth: Vec::new(),
        labels: Vec::new(),
        label_pc: Vec::new(),
        protos: Vec::new(),
        pragmas: Vec::new(),
        module_pragmas: Vec::new(),
        body: Vec::new(),
        fs: None,
        errors: Vec::new(),
        files: Vec::new(),
        src_locs: Vec::new(),
        src_index: HashMap::new(),
        src_latest: HashMap::new(),
        src: SrcRef(None),
    };
    p.prescan_files();
    let m = p.module();
    let mut errors = std::mem::take(&mut p.errors);
    let m = match m {
        Ok(m) => Some(m),
        Err(d) => {
            errors.push(d);
            None
        }
    };
    if let Some(m) = &m {
        if errors.is_empty() {
            check_target(m, &mut errors);
        }
    }
    if errors.is_empty() {
        return Ok(m.expect("a module without errors"));
    }
    let mut first = errors.remove(0);
    first.also = errors;
    Err(first)
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
    fn peek_at(&self, k: usize) -> Option<&'a Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
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

    /// Records an error; after [`MAX_ERRORS`] gives up.
    fn error(&mut self, d: Diag) -> R<()> {
        let d = self.with_note(d);
        if self.errors.len() + 1 >= MAX_ERRORS {
            let mut last = d;
            last.msg.push_str(&format!(" (stopped after {MAX_ERRORS} errors)"));
            return Err(last);
        }
        self.errors.push(d);
        Ok(())
    }

    /// Adds the CUDA source line of the last `.loc` to a diagnostic (`.cu` input).
    fn with_note(&self, mut d: Diag) -> Diag {
        if d.note.is_none() {
            if let Some(l) = self.src.0.and_then(|k| self.src_locs.get(k as usize)) {
                if let Some((_, path)) = self.files.iter().find(|(n, _)| *n == l.file) {
                    d.note = Some(format!("nvcc's .loc: {path}:{}:{}", l.line, l.col));
                }
            }
        }
        d
    }

    /// Skips the rest of a bad statement: past its `;`, or up to the `}` closing its block.
    fn recover(&mut self, start: usize) {
        if self.pos == start {
            self.pos += 1;
        }
        while let Some(t) = self.peek() {
            match t {
                Tok::Punct(';') => {
                    self.pos += 1;
                    return;
                }
                Tok::Punct('}') => return,
                // a vector operand of the bad statement (`{%f1, %f2}`: closed before any `;`) is
                // skipped whole, its `}` closing no block; a block's `{` is not this statement's
                Tok::Punct('{') => {
                    let rest = &self.toks[self.pos + 1..];
                    match rest.iter().position(|t| matches!(t.tok, Tok::Punct('}' | ';' | '{'))) {
                        Some(k) if rest[k].tok == Tok::Punct('}') => self.pos += k + 2,
                        _ => return,
                    }
                }
                _ => self.pos += 1,
            }
        }
    }

    /// `.file` directives come at the end of nvcc's output; read them first so diagnostics can
    /// name the CUDA line.
    fn prescan_files(&mut self) {
        let t = self.toks;
        for i in 0..t.len() {
            if let (Tok::Word(w), Some(Tok::Int(n)), Some(Tok::Str(s))) = (&t[i].tok, t.get(i + 1).map(|x| &x.tok), t.get(i + 2).map(|x| &x.tok)) {
                if w == ".file" {
                    self.files.push((*n as u32, s.clone()));
                }
            }
        }
    }

    fn module(&mut self) -> R<Module> {
        let mut version = None;
        let mut target = Vec::new();
        let mut address_size = 64;
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
                    // Digits lex as numbers, so `8.0` is `8` then `.0`.
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
                ".file" => {
                    // Read by prescan_files; `.file N "path" {, timestamp, size}`.
                    self.pos += 1;
                    self.int("a file number")?;
                    match self.next() {
                        Some(Tok::Str(_)) => {}
                        _ => return Err(Diag::new(loc, "expected a file name string after `.file N`")),
                    }
                    while self.eat_punct(',') {
                        self.int("a timestamp or size")?;
                    }
                }
                ".section" => self.skip_section()?,
                ".pragma" => {
                    self.pos += 1;
                    let text = match self.next() {
                        Some(Tok::Str(t)) => t.clone(),
                        _ => return Err(Diag::new(loc, "expected a string after `.pragma`")),
                    };
                    self.punct(';')?;
                    self.items.push(Item::Pragma(self.module_pragmas.len() as u32));
                    self.module_pragmas.push(text);
                }
                ".visible" | ".weak" | ".extern" | ".common" | ".entry" | ".func" | ".global" | ".shared" | ".const" => {
                    let mut linkage = Vec::new();
                    while let Some(Tok::Word(l)) = self.peek() {
                        if !matches!(l.as_str(), ".visible" | ".weak" | ".extern" | ".common") {
                            break;
                        }
                        linkage.push(l.clone());
                        self.pos += 1;
                    }
                    if self.eat_word(".entry") {
                        self.function(true, linkage, loc)?;
                    } else if self.eat_word(".func") {
                        self.function(false, linkage, loc)?;
                    } else {
                        let is_extern = linkage.iter().any(|l| l == ".extern");
                        let s = self.var_decl(None, is_extern)?;
                        self.symbols[s.0 as usize].attrs.splice(0..0, linkage.into_iter().filter(|l| l != ".extern"));
                        self.punct(';')?;
                        self.items.push(Item::Var(s));
                    }
                }
                ".loc" => {
                    return self.err("`.loc` outside a function body");
                }
                _ => return self.err(format!("unexpected `{w}` at module scope: expected `.version`, `.target`, `.address_size`, a variable, `.func` or `.entry`")),
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
        let Some(entry) = self.funcs.iter().position(|f| f.entry && f.body.is_some()) else {
            return Err(Diag::new(self.loc(), "missing `.entry` kernel"));
        };
        let kernel = Kernel {
            name: String::new(),
            visible: false,
            params: Vec::new(),
            directives: Vec::new(),
            regs: std::mem::take(&mut self.regs),
            labels: std::mem::take(&mut self.labels),
            label_pc: std::mem::take(&mut self.label_pc),
            body: std::mem::take(&mut self.body),
            protos: std::mem::take(&mut self.protos),
            pragmas: std::mem::take(&mut self.pragmas),
            module_pragmas: std::mem::take(&mut self.module_pragmas),
        };
        let mut m = Module {
            version,
            target,
            address_size,
            symbols: std::mem::take(&mut self.symbols),
            kernel,
            funcs: std::mem::take(&mut self.funcs),
            entry: FuncId(entry as u32),
            items: std::mem::take(&mut self.items),
            files: std::mem::take(&mut self.files),
            src_locs: std::mem::take(&mut self.src_locs),
        };
        m.select_entry(FuncId(entry as u32));
        Ok(m)
    }

    /// `.section .debug_xxx { ... }`: debugging data nvcc writes with `-lineinfo`; skipped.
    fn skip_section(&mut self) -> R<()> {
        self.pos += 1;
        self.word("a section name")?;
        self.punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => depth -= 1,
                Some(_) => {}
                None => return self.expected("`}` closing the `.section`"),
            }
        }
        Ok(())
    }

    /// `.entry name (params) directives { body }` or `.func (rets) name (params) directives
    /// {body | ;}` (after the keyword).
    fn function(&mut self, entry: bool, linkage: Vec<String>, loc: Loc) -> R<()> {
        let f = FuncId(self.funcs.len() as u32);
        let sym0 = self.symbols.len();
        self.fs = Some(FnState {
            func: f,
            reg_index: HashMap::new(),
            sym_index: HashMap::new(),
            scopes: vec![Scope::default()],
            reg_names: HashSet::new(),
            sym_names: HashSet::new(),
            reg_suffix: HashMap::new(),
            sym_suffix: HashMap::new(),
            labels: Vec::new(),
            first_reg: self.regs.len() as u32,
            first_pc: self.body.len() as u32,
        });
        let mut rets = Vec::new();
        if !entry && matches!(self.peek(), Some(Tok::Punct('('))) {
            rets = self.formals(f)?;
        }
        let nloc = self.loc();
        let name = self.word("the function name")?;
        let params = if matches!(self.peek(), Some(Tok::Punct('('))) { self.formals(f)? } else { Vec::new() };
        let mut directives = Vec::new();
        while let Some(Tok::Word(w)) = self.peek() {
            // An entry-level pragma (PTX ISA, Pragma Strings: `"nounroll"` there applies to every
            // loop of the function), kept verbatim among the directives.
            if w == ".pragma" {
                let ploc = self.loc();
                self.pos += 1;
                let text = match self.next() {
                    Some(Tok::Str(t)) => t.clone(),
                    _ => return Err(Diag::new(ploc, "expected a string after `.pragma`")),
                };
                self.punct(';')?;
                directives.push(format!(".pragma \"{text}\";"));
                continue;
            }
            if !matches!(w.as_str(), ".maxntid" | ".reqntid" | ".minnctapersm" | ".maxnctapersm" | ".maxnreg" | ".explicitcluster" | ".reqnctapercluster" | ".maxclusterrank" | ".noreturn" | ".blocksareclusters") {
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
        let prior = match self.globals.get(&name) {
            Some(Global::Func(g)) => Some(*g),
            Some(Global::Sym(_)) => return Err(Diag::new(nloc, format!("`{name}` is declared twice (a variable and a function)"))),
            None => None,
        };
        if let Some(g) = prior {
            let old = &self.funcs[g.0 as usize];
            if old.entry != entry {
                return Err(Diag::new(nloc, format!("`{name}` is declared both as `.entry` and as `.func`")));
            }
        }
        let has_body = !self.eat_punct(';');
        let id = prior.unwrap_or(f);
        if !has_body {
            self.fs = None;
            // A declaration's parameters name no storage: the definition's do.
            for s in &mut self.symbols[sym0..] {
                s.func = None;
            }
            if prior.is_none() {
                let (r0, l0) = (self.regs.len() as u32, self.labels.len() as u32);
                self.funcs.push(Func { name: name.clone(), entry, linkage, rets, params, directives, body: None, regs: (r0, r0), labels: (l0, l0) });
                self.globals.insert(name, Global::Func(id));
            }
            self.items.push(Item::Decl(id));
            return Ok(());
        }
        if entry && linkage.iter().any(|l| l == ".extern") {
            return Err(Diag::new(loc, format!("`.extern .entry {name}` has a body")));
        }
        if let Some(g) = prior {
            if self.funcs[g.0 as usize].body.is_some() {
                return Err(Diag::new(nloc, format!("function `{name}` is defined twice")));
            }
        }
        if prior.is_none() {
            let r0 = self.regs.len() as u32;
            let l0 = self.labels.len() as u32;
            self.funcs.push(Func { name: name.clone(), entry, linkage: linkage.clone(), rets: rets.clone(), params: params.clone(), directives: directives.clone(), body: None, regs: (r0, r0), labels: (l0, l0) });
            self.globals.insert(name, Global::Func(id));
        }
        // The body's symbols belong to the definition.
        if let Some(fs) = self.fs.as_mut() {
            fs.func = id;
        }
        for s in self.symbols.iter_mut().filter(|s| s.func == Some(f)) {
            s.func = Some(id);
        }
        self.punct('{')?;
        let start = self.body.len() as u32;
        self.block()?;
        let fs = self.fs.take().expect("function state");
        let labels = self.finish_labels(fs.labels, fs.first_pc)?;
        let def = &mut self.funcs[id.0 as usize];
        def.linkage = linkage;
        def.rets = rets;
        def.params = params;
        def.directives = directives;
        def.body = Some((start, self.body.len() as u32));
        def.regs = (fs.first_reg, self.regs.len() as u32);
        def.labels = labels;
        self.items.push(Item::Def(id));
        Ok(())
    }

    /// `( .param .b32 a, .reg .u32 b, ... )`: formal parameters (or return parameters).
    fn formals(&mut self, f: FuncId) -> R<Vec<Formal>> {
        self.punct('(')?;
        let mut out = Vec::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            let l = self.loc();
            match self.peek() {
                Some(Tok::Word(w)) if w == ".param" => out.push(Formal::Param(self.var_decl(Some(f), false)?)),
                Some(Tok::Word(w)) if w == ".reg" => {
                    self.pos += 1;
                    let tw = self.word("a register type such as `.b32`")?;
                    let ty = tw.strip_prefix('.').and_then(Mod::from_text).filter(|m| m.is_type()).ok_or_else(|| Diag::new(l, format!("unknown register type `{tw}`")))?;
                    let nloc = self.loc();
                    let name = self.word("a register name")?;
                    out.push(Formal::Reg(self.add_reg(name, ty, None, nloc)?));
                }
                _ => return self.expected("`.param` or `.reg`"),
            }
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.punct(',')?;
        }
    }

    /// Resolves a function's temporary labels into the module's label table: aliases followed,
    /// names made unique within the function, label operands rewritten.
    fn finish_labels(&mut self, tmp: Vec<TmpLabel>, first_pc: u32) -> R<(u32, u32)> {
        let root = |mut t: usize| {
            while let Some(a) = tmp[t].alias {
                t = a as usize;
            }
            t
        };
        let first = self.labels.len() as u32;
        let mut fin = vec![u32::MAX; tmp.len()];
        let mut names = HashSet::new();
        let mut suffix: HashMap<&str, u32> = HashMap::new();
        for (t, l) in tmp.iter().enumerate() {
            let Some(pc) = l.pc else { continue };
            if l.alias.is_some() {
                continue;
            }
            let mut name = l.name.clone();
            while !names.insert(name.clone()) {
                let k = suffix.entry(l.name.as_str()).or_insert(0);
                *k += 1;
                name = format!("{}${k}", l.name);
            }
            fin[t] = self.labels.len() as u32;
            if let Some(d) = &l.directive {
                self.protos.push((LabelId(fin[t]), d.clone()));
            }
            self.labels.push(name);
            self.label_pc.push(pc);
        }
        for ins in &mut self.body[first_pc as usize..] {
            for op in &mut ins.operands {
                if let Operand::Label(l) = op {
                    *l = LabelId(fin[root(l.0 as usize)]);
                }
            }
        }
        Ok((first, self.labels.len() as u32))
    }

    /// `.shared .align 8 .b64 name[4] = {..}` (after `.visible`/`.extern`), without the `;`.
    /// `func` is the declaring function (None at module scope).
    fn var_decl(&mut self, func: Option<FuncId>, is_extern: bool) -> R<SymId> {
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
            self.initializer(&mut init)?;
        }
        let unique = match func {
            None => {
                if self.globals.contains_key(&name) {
                    return Err(Diag::new(nloc, format!("`{name}` is declared twice")));
                }
                name.clone()
            }
            Some(_) => {
                let fs = self.fs.as_mut().expect("function-scope declaration inside a function");
                // The binding in force was made in this block exactly when it was made at this
                // depth: deeper blocks are closed, and closing restores what they shadowed.
                let depth = fs.scopes.len();
                if fs.sym_index.get(&name).is_some_and(|s| self.sym_depth[s.0 as usize] == depth) {
                    return Err(Diag::new(nloc, format!("`{name}` is declared twice")));
                }
                unique_name(&name, &fs.sym_names, &mut fs.sym_suffix)
            }
        };
        let id = SymId(self.symbols.len() as u32);
        self.symbols.push(Symbol { name: unique.clone(), space, ty, align, array, is_extern, attrs, init, module_scope: func.is_none(), loc: nloc, func });
        self.sym_depth.push(self.fs.as_ref().filter(|_| func.is_some()).map_or(0, |fs| fs.scopes.len()));
        match func {
            None => {
                self.globals.insert(name, Global::Sym(id));
            }
            Some(_) => {
                let fs = self.fs.as_mut().expect("function state");
                let old = fs.sym_index.insert(name.clone(), id);
                fs.sym_names.insert(unique);
                fs.scopes.last_mut().expect("scope").syms.push((name, old));
            }
        }
        Ok(id)
    }

    /// `= v` or `= {v, {v, v}, ...}` (nested braces flatten): integers, float bit patterns,
    /// addresses (`name`, `name+8`, `generic(name)`). Braces are counted, not recursed into, so
    /// no nesting exhausts the stack.
    fn initializer(&mut self, out: &mut Vec<Init>) -> R<()> {
        let mut depth = 0usize;
        loop {
            if self.eat_punct('{') {
                depth += 1;
                if !self.eat_punct('}') {
                    continue;
                }
                depth -= 1;
            } else {
                self.init_value(out)?;
            }
            // After a value or `{}`: the braces it closes, then `,` before the next one.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                if self.eat_punct('}') {
                    depth -= 1;
                    continue;
                }
                self.punct(',')?;
                break;
            }
        }
    }

    /// One initializer value.
    fn init_value(&mut self, out: &mut Vec<Init>) -> R<()> {
        let l = self.loc();
        match self.next() {
            Some(Tok::Int(v)) => out.push(Init::Int(*v)),
            Some(Tok::Float(b, d)) => out.push(Init::Float { bits: *b, double: *d }),
            Some(Tok::Punct('-')) => {
                let v = self.int("a number after `-`")?;
                out.push(Init::Int(v.wrapping_neg()));
            }
            Some(Tok::Word(w)) => {
                let w = w.clone();
                let generic = w == "generic" && self.eat_punct('(');
                let name = if generic { self.word("a variable name in `generic(...)`")? } else { w };
                if generic {
                    self.punct(')')?;
                }
                let of = match self.globals.get(&name) {
                    Some(Global::Sym(s)) => AddrOf::Sym(*s),
                    Some(Global::Func(f)) => AddrOf::Func(*f),
                    None => return Err(Diag::new(l, format!("unknown variable or function `{name}` in an initializer"))),
                };
                let mut offset = 0;
                if self.eat_punct('+') {
                    offset = self.int("an offset")?;
                } else if self.eat_punct('-') {
                    offset = -self.int("an offset")?;
                }
                out.push(Init::Addr { of, generic, offset });
            }
            _ => {
                self.pos -= 1;
                return self.expected("an initializer value");
            }
        }
        Ok(())
    }

    /// Statements up to the `}` closing the function body, each bad one reported and skipped.
    /// Nested blocks live on the `scopes` stack, not on the call stack: any nesting and any
    /// number of blocks parse in constant stack space.
    fn block(&mut self) -> R<()> {
        loop {
            let depth = self.fs.as_ref().map_or(0, |f| f.scopes.len());
            match self.peek() {
                None if depth > 1 => return self.expected("`}` closing a nested block"),
                None => return self.expected("`}` closing the function body"),
                Some(Tok::Punct('}')) => {
                    self.pos += 1;
                    self.close_scope()?;
                    if depth == 1 {
                        return Ok(());
                    }
                }
                Some(Tok::Punct('{')) => {
                    // A nested block: nvcc wraps inline asm that declares its own registers and
                    // labels in one (several times per kernel).
                    if depth > MAX_BLOCK_DEPTH {
                        return self.err(format!(
                            "blocks nest more than {MAX_BLOCK_DEPTH} deep inside a function body: ptxas (13.5, sm_90) stops there (\"Parsing error near '{{': memory exhausted\")"
                        ));
                    }
                    self.pos += 1;
                    self.fs.as_mut().expect("function state").scopes.push(Scope::default());
                }
                _ => {
                    let start = self.pos;
                    let mark = self.fs.as_ref().map(|f| f.labels.len()).unwrap_or(0) as u32;
                    if let Err(d) = self.statement() {
                        // Label uses of the dropped statement are forgotten (no second error).
                        for sc in self.fs.as_mut().expect("function state").scopes.iter_mut() {
                            sc.fwd.retain(|_, t| *t < mark);
                        }
                        self.error(d)?;
                        self.recover(start);
                    }
                }
            }
        }
    }

    /// Closes the innermost scope: its bindings end, its unresolved label uses move out (at the
    /// function body's end: each is an error).
    fn close_scope(&mut self) -> R<()> {
        let fs = self.fs.as_mut().expect("function state");
        let sc = fs.scopes.pop().expect("scope");
        for (name, old) in sc.regs.into_iter().rev() {
            match old {
                Some(id) => fs.reg_index.insert(name, id),
                None => fs.reg_index.remove(&name),
            };
        }
        for (name, old) in sc.syms.into_iter().rev() {
            match old {
                Some(id) => fs.sym_index.insert(name, id),
                None => fs.sym_index.remove(&name),
            };
        }
        let mut fwd: Vec<(String, u32)> = sc.fwd.into_iter().collect();
        fwd.sort_by_key(|(_, t)| *t);
        match fs.scopes.last_mut() {
            Some(parent) => {
                // `{` ... `}` ends a block (more follow): its body continues.
                for (name, t) in fwd {
                    if let Some(d) = parent.defs.get(&name).or(parent.fwd.get(&name)) {
                        fs.labels[t as usize].alias = Some(*d);
                    } else {
                        parent.fwd.insert(name, t);
                    }
                }
                Ok(())
            }
            None => {
                let missing: Vec<Diag> = fwd.iter().map(|(name, t)| Diag::new(fs.labels[*t as usize].use_loc, format!("label `{name}` is used but never defined"))).collect();
                for d in missing {
                    self.error(d)?;
                }
                Ok(())
            }
        }
    }

    /// One statement of a function body (not a block).
    fn statement(&mut self) -> R<()> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Word(w)) if w == ".reg" => {
                self.pos += 1;
                self.reg_decl()
            }
            Some(Tok::Word(w)) if matches!(w.as_str(), ".shared" | ".local" | ".global" | ".const" | ".param") => {
                let f = self.fs.as_ref().map(|f| f.func);
                self.var_decl(f, false)?;
                self.punct(';')
            }
            Some(Tok::Word(w)) if w == ".extern" => {
                self.pos += 1;
                let f = self.fs.as_ref().map(|f| f.func);
                self.var_decl(f, true)?;
                self.punct(';')
            }
            Some(Tok::Word(w)) if w == ".pragma" => {
                self.pos += 1;
                let text = match self.next() {
                    Some(Tok::Str(t)) => t.clone(),
                    _ => return Err(Diag::new(loc, "expected a string after `.pragma`")),
                };
                self.pragmas.push((self.body.len() as u32, text));
                self.punct(';')
            }
            Some(Tok::Word(w)) if w == ".loc" => {
                self.pos += 1;
                self.loc_directive()
            }
            Some(Tok::Word(w)) if !w.starts_with('.') && !w.starts_with('%') && self.peek_at(1) == Some(&Tok::Punct(':')) => {
                let name = w.clone();
                self.pos += 2;
                let directive = match self.peek() {
                    Some(Tok::Word(d)) if d == ".callprototype" || d == ".calltargets" => {
                        let d = d.clone();
                        self.pos += 1;
                        Some(format!("{d} {}", self.tokens_to_semi()?))
                    }
                    _ => None,
                };
                self.define_label(name, loc, directive)
            }
            Some(Tok::Word(w)) if w.starts_with('.') => self.err(format!("unexpected directive `{w}` in a function body")),
            _ => {
                let ins = self.instr()?;
                self.body.push(ins);
                Ok(())
            }
        }
    }

    /// The tokens up to `;` (consumed) as text, for directives kept verbatim.
    fn tokens_to_semi(&mut self) -> R<String> {
        let mut s = String::new();
        loop {
            match self.next() {
                Some(Tok::Punct(';')) => return Ok(s),
                Some(t) => {
                    let text = match t {
                        Tok::Word(w) => w.clone(),
                        Tok::Int(v) => v.to_string(),
                        Tok::Float(b, d) => if *d { format!("0d{b:016X}") } else { format!("0f{b:08X}") },
                        Tok::Str(x) => format!("\"{x}\""),
                        Tok::Punct(c) => c.to_string(),
                    };
                    let glue = s.is_empty() || s.ends_with('(') || matches!(text.as_str(), ")" | ",");
                    if !glue {
                        s.push(' ');
                    }
                    s.push_str(&text);
                }
                None => return self.expected("`;`"),
            }
        }
    }

    /// `.loc file line col {, function_name label, inlined_at file line col}` (PTX 11.6.2).
    fn loc_directive(&mut self) -> R<()> {
        let file = self.int("a file number")? as u32;
        let line = self.int("a line number")? as u32;
        let col = self.int("a column")? as u32;
        let mut inlined_at = None;
        while self.eat_punct(',') {
            let key = self.word("`function_name` or `inlined_at`")?;
            match key.as_str() {
                "function_name" => {
                    self.word("a label")?;
                    if self.eat_punct('+') {
                        self.int("an offset")?;
                    }
                }
                "inlined_at" => {
                    let f = self.int("a file number")? as u32;
                    let l = self.int("a line number")? as u32;
                    let c = self.int("a column")? as u32;
                    // The latest position at f:l:c carries the rest of the chain.
                    let parent = self.src_latest.get(&(f, l, c)).copied();
                    inlined_at = Some(parent.unwrap_or_else(|| self.intern_src(SrcLoc { file: f, line: l, col: c, inlined_at: None })));
                }
                _ => return self.err(format!("unknown `.loc` attribute `{key}`")),
            }
        }
        let k = self.intern_src(SrcLoc { file, line, col, inlined_at });
        self.src = SrcRef(Some(k));
        Ok(())
    }

    fn intern_src(&mut self, l: SrcLoc) -> u32 {
        if let Some(k) = self.src_index.get(&l) {
            return *k;
        }
        let k = self.src_locs.len() as u32;
        self.src_locs.push(l);
        self.src_index.insert(l, k);
        self.src_latest.insert((l.file, l.line, l.col), k);
        k
    }

    /// A label definition in the innermost scope.
    fn define_label(&mut self, name: String, loc: Loc, directive: Option<String>) -> R<()> {
        let pc = self.body.len() as u32;
        let fs = self.fs.as_mut().expect("function state");
        let sc = fs.scopes.last_mut().expect("scope");
        if sc.defs.contains_key(&name) {
            return Err(Diag::new(loc, format!("label `{name}` is defined twice")));
        }
        let t = match sc.fwd.remove(&name) {
            Some(t) => t,
            None => {
                fs.labels.push(TmpLabel { name: name.clone(), use_loc: loc, pc: None, alias: None, directive: None });
                fs.labels.len() as u32 - 1
            }
        };
        fs.labels[t as usize].pc = Some(pc);
        fs.labels[t as usize].directive = directive;
        sc.defs.insert(name, t);
        Ok(())
    }

    /// A label use: resolved now if the innermost scope defines it, else when its block closes.
    fn label_use(&mut self, name: &str, loc: Loc) -> LabelId {
        let fs = self.fs.as_mut().expect("function state");
        let sc = fs.scopes.last_mut().expect("scope");
        if let Some(t) = sc.defs.get(name).or(sc.fwd.get(name)) {
            return LabelId(*t);
        }
        fs.labels.push(TmpLabel { name: name.to_string(), use_loc: loc, pc: None, alias: None, directive: None });
        let t = fs.labels.len() as u32 - 1;
        sc.fwd.insert(name.to_string(), t);
        LabelId(t)
    }

    /// `.reg .b32 %r<10>, %x;` (after `.reg`).
    fn reg_decl(&mut self) -> R<()> {
        let loc = self.loc();
        let mut tw = self.word("a register type such as `.b32`")?;
        // A vector register (PTX ISA 5.4.2, `.reg .v2 .f32 mx;`, as in CUTLASS's inline asm) is
        // its elements, registers of the element type named `mx.x`, `mx.y` (`.z`, `.w`; `.r`,
        // `.g`, `.b`, `.a` name the same ones: [`Self::reg`]).
        let elements = match tw.as_str() {
            ".v2" => 2,
            ".v4" => 4,
            _ => 1,
        };
        let loc = if elements > 1 {
            let l = self.loc();
            tw = self.word("the element type of a vector register, such as `.f32`")?;
            l
        } else {
            loc
        };
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
            if elements > 1 {
                if self.peek() == Some(&Tok::Punct('<')) {
                    return Err(Diag::new(nloc, format!("unsupported: a range of vector registers (`{name}<N>`); declare each vector by name")));
                }
                for e in &["x", "y", "z", "w"][..elements] {
                    self.add_reg_as(format!("{name}.{e}"), format!("{name}_{e}"), ty, None, nloc)?;
                }
            } else if self.eat_punct('<') {
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

    fn add_reg(&mut self, name: String, ty: Mod, range: Option<(String, u32)>, loc: Loc) -> R<RegId> {
        let printed = name.clone();
        self.add_reg_as(name, printed, ty, range, loc)
    }

    /// [`Self::add_reg`] for a register the source names `name` and the printed module
    /// `printed` (made unique): a vector register's element `mx.x` prints as `mx_x`, which ptxas
    /// takes as a scalar register's name.
    fn add_reg_as(&mut self, name: String, printed: String, ty: Mod, range: Option<(String, u32)>, loc: Loc) -> R<RegId> {
        if self.regs.len() >= MAX_REGS {
            return Err(Diag::new(
                loc,
                format!("the module declares more than {MAX_REGS} registers: hopsync models at most 2^20 (each costs every warp 32 lanes x 8 bytes)"),
            ));
        }
        let fs = self.fs.as_mut().expect("function state");
        let old = fs.reg_index.get(&name).copied();
        // The binding in force was made in this block exactly when it was made at this depth:
        // deeper blocks are closed, and closing restores what they shadowed.
        let depth = fs.scopes.len();
        if old.is_some_and(|id| self.reg_depth[id.0 as usize] == depth) {
            return Err(Diag::new(loc, format!("register `{name}` is declared twice")));
        }
        // The function's register list is flat: a block-local register that reuses a name
        // declared elsewhere gets a unique name (`p$1`) so the printed module declares each once.
        let unique = unique_name(&printed, &fs.reg_names, &mut fs.reg_suffix);
        let id = RegId(self.regs.len() as u32);
        fs.scopes.last_mut().expect("scope").regs.push((name.clone(), old));
        // A renamed register prints on its own, not as part of a `%r<N>` range.
        let range = if unique != printed { None } else { range };
        fs.reg_index.insert(name, id);
        fs.reg_names.insert(unique.clone());
        self.regs.push(RegDecl { name: unique, ty, range, loc });
        self.reg_depth.push(depth);
        Ok(id)
    }

    fn reg(&self, name: &str, loc: Loc) -> R<RegId> {
        self.find_reg(name).ok_or_else(|| self.vector_whole(name, loc).unwrap_or_else(|| Diag::new(loc, format!("undeclared register `{name}`"))))
    }

    /// The register `name` names in the current scope: a vector register's element also by its
    /// colour name (PTX ISA 5.4.2: `.r .g .b .a` are `.x .y .z .w`).
    fn find_reg(&self, name: &str) -> Option<RegId> {
        let find = |n: &str| self.fs.as_ref().and_then(|fs| fs.reg_index.get(n)).copied();
        find(name).or_else(|| {
            let (v, e) = name.rsplit_once('.')?;
            let xyzw = match e {
                "r" => "x",
                "g" => "y",
                "b" => "z",
                "a" => "w",
                _ => return None,
            };
            find(&format!("{v}.{xyzw}"))
        })
    }

    /// The error for a vector register named as a whole (`mx` of `.reg .v2 .f32 mx;`), which
    /// hopsync takes only element by element; `None` when `name` is no vector register.
    fn vector_whole(&self, name: &str, loc: Loc) -> Option<Diag> {
        self.find_reg(&format!("{name}.x"))
            .map(|_| Diag::new(loc, format!("unsupported: the vector register `{name}` as a whole operand; name its elements (`{name}.x`, `{name}.y`, ...)")))
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
        let mut mn = self.word("an instruction")?;
        // Each piece of the mnemonic and where it starts: ptxas takes blanks between the mnemonic
        // and its modifiers (`lop3 .b32`, `xor  .b32` in CUTLASS's inline asm), and no operand
        // starts with `.`.
        let mut pieces = vec![(mn.clone(), mloc)];
        while let Some(Tok::Word(w)) = self.peek() {
            if !w.starts_with('.') || mn.starts_with('.') {
                break;
            }
            let w = w.clone();
            mn.push_str(&w);
            pieces.push((w, self.loc()));
            self.pos += 1;
        }
        let segs: Vec<&str> = mn.split('.').collect();
        if let Some(what) = ops::unmodelled(&segs) {
            return Err(Diag::new(mloc, format!("unsupported: {what} is not modelled")));
        }
        let Some((spec, used)) = ops::lookup(&segs) else {
            if PTX_MNEMONICS.contains(&segs[0]) {
                return Err(Diag::new(mloc, format!("unsupported: the PTX instruction `{mn}` (hopsync does not model `{}` yet)", segs[0])));
            }
            return Err(Diag::new(mloc, format!("unknown instruction `{}`", segs[0])));
        };
        // Where each modifier segment starts, so a bad modifier is pointed at itself.
        let mut seg_locs: Vec<Loc> = Vec::with_capacity(segs.len());
        for (k, (text, l)) in pieces.iter().enumerate() {
            let mut col = l.col;
            for (j, part) in text.split('.').enumerate() {
                // a later piece's leading `.` starts no segment of its own
                if !(k > 0 && j == 0) {
                    seg_locs.push(Loc { line: l.line, col });
                }
                col += part.chars().count() as u32 + 1;
            }
        }
        seg_locs.resize(segs.len(), mloc);
        let (mods, [ty2, ty3, ty4]) = parse_mods(spec, &segs[used..], &seg_locs[used..], mloc)?;
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
        let ins = Instr { op: spec.op, mods, ty2, ty3, ty4, guard, operands, loc: start, src: self.src };
        let labels = self.fs.as_ref().map_or(&[][..], |f| f.labels.as_slice());
        check_operands(spec, &ins, &self.regs, labels, mloc, &op_locs)?;
        check_vectors(spec, &ins, mloc, &op_locs)?;
        crate::mma::check(&ins).map_err(|e| Diag::new(mloc, e))?;
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
            Some(Tok::Punct(open @ ('{' | '('))) => {
                let close = if *open == '{' { '}' } else { ')' };
                let paren = *open == '(';
                self.pos += 1;
                let mut v = Vec::new();
                if paren && self.eat_punct(')') {
                    return Ok(Operand::List(v));
                }
                loop {
                    // Vector elements and call arguments are scalars (PTX 6.4.2, 9.7.12.5).
                    // Refusing a nested `{`/`(` and reading a `[` as a plain address also keep
                    // this recursion one level deep.
                    match self.peek() {
                        Some(Tok::Punct('{' | '(')) => {
                            return self.err(if paren {
                                "a call's parenthesized list cannot contain another list or vector (its elements are scalars)"
                            } else {
                                "a vector operand cannot contain another vector (PTX 6.4.2: elements are scalars)"
                            })
                        }
                        Some(Tok::Punct('[')) => {
                            // Parsed only to be refused by `check_vectors`, which names the element.
                            self.pos += 1;
                            let a = self.address()?;
                            self.punct(']')?;
                            v.push(a);
                        }
                        _ => v.push(self.operand()?),
                    }
                    if self.eat_punct(close) {
                        break;
                    }
                    self.punct(',')?;
                }
                Ok(if paren { Operand::List(v) } else { Operand::Vector(v) })
            }
            Some(Tok::Punct('!')) => {
                self.pos += 1;
                let l = self.loc();
                let w = self.word("a predicate register after `!`")?;
                Ok(Operand::NotReg(self.reg(&w, l)?))
            }
            // `bar.warp.sync -1`: the lexer leaves the sign apart after a mnemonic.
            Some(Tok::Punct('-')) if matches!(self.peek_at(1), Some(Tok::Int(_))) => {
                self.pos += 1;
                let v = self.int("a number")?;
                Ok(Operand::Imm(v.wrapping_neg()))
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
                let wloc = self.loc();
                self.pos += 1;
                let w = w.clone();
                let element = self.find_reg(&w);
                if let (None, Some(d)) = (element, self.vector_whole(&w, wloc)) {
                    return Err(d);
                }
                let fs = self.fs.as_ref().expect("function state");
                let first = if w == "_" {
                    Operand::Sink
                } else if w == "WARP_SZ" && !fs.reg_index.contains_key(&w) {
                    // PTX 10.x predefined constant `WARP_SZ` (the warp size), as nvcc emits it.
                    Operand::Imm(32)
                } else if let Some(r) = element {
                    Operand::Reg(r)
                } else if let Some(s) = w.strip_prefix('%').and_then(|s| {
                    let (n, d) = match s.split_once('.') {
                        Some((n, d)) => (n, Some(d)),
                        None => (s, None),
                    };
                    Sreg::from_parts(n, d)
                }) {
                    Operand::Special(s)
                } else if let Some(s) = fs.sym_index.get(&w) {
                    Operand::Sym(*s)
                } else if let Some(g) = self.globals.get(&w) {
                    match g {
                        Global::Sym(s) => Operand::Sym(*s),
                        Global::Func(f) => Operand::Func(*f),
                    }
                } else if w.starts_with('%') {
                    return Err(Diag::new(loc, format!("undeclared register `{w}`")));
                } else {
                    Operand::Label(self.label_use(&w, loc))
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

    /// A variable visible here by name: function scope first, then module scope.
    fn symbol_named(&self, w: &str) -> Option<SymId> {
        if let Some(s) = self.fs.as_ref().and_then(|f| f.sym_index.get(w)) {
            return Some(*s);
        }
        match self.globals.get(w) {
            Some(Global::Sym(s)) => Some(*s),
            _ => None,
        }
    }

    /// Inside `[...]`: `reg`, `sym`, `imm`, `reg+imm`, `sym+imm`, `reg-imm`.
    fn address(&mut self) -> R<Operand> {
        let loc = self.loc();
        let base = match self.next() {
            Some(Tok::Int(v)) => AddrBase::Imm(*v as u64),
            Some(Tok::Word(w)) => {
                if let Some(r) = self.find_reg(w) {
                    AddrBase::Reg(r)
                } else if let Some(s) = self.symbol_named(w) {
                    AddrBase::Sym(s)
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

/// `name`, or `name$k` with the next `k` of `name`'s counter when `taken` has it: linear however
/// many blocks redeclare a name.
fn unique_name(name: &str, taken: &HashSet<String>, suffix: &mut HashMap<String, u32>) -> String {
    let mut unique = name.to_string();
    if taken.contains(&unique) {
        let k = suffix.entry(name.to_string()).or_insert(0);
        while taken.contains(&unique) {
            *k += 1;
            unique = format!("{name}${k}");
        }
    }
    unique
}

/// The instruction names of the PTX ISA (its instruction index, PTX 9.7): a name here that the
/// opcode table lacks is a real instruction hopsync does not model yet, and says so.
const PTX_MNEMONICS: &[&str] = &[
    "abs", "activemask", "add", "addc", "alloca", "and", "applypriority", "atom", "bar", "barrier", "bfe", "bfi", "bfind", "bmsk", "bra", "brev", "brkpt", "brx",
    "call", "clusterlaunchcontrol", "clz", "cnot", "copysign", "cos", "cp", "createpolicy", "cvt", "cvta", "discard", "div", "dp2a", "dp4a", "elect", "ex2", "exit",
    "fence", "fma", "fns", "getctarank", "griddepcontrol", "isspacep", "istypep", "ld", "ldmatrix", "ldu", "lg2", "lop3", "mad", "mad24", "madc", "mapa", "match",
    "max", "mbarrier", "membar", "min", "mma", "mov", "movmatrix", "mul", "mul24", "multimem", "nanosleep", "neg", "not", "or", "pmevent", "popc", "prefetch",
    "prefetchu", "prmt", "rcp", "red", "redux", "rem", "ret", "rsqrt", "sad", "selp", "set", "setmaxnreg", "setp", "shf", "shfl", "shl", "shr", "sin", "slct",
    "sqrt", "st", "stackrestore", "stacksave", "stmatrix", "sub", "subc", "suld", "suq", "sured", "sust", "szext", "tanh", "tcgen05", "tensormap", "testp", "tex",
    "tld4", "trap", "txq", "vabsdiff", "vabsdiff2", "vabsdiff4", "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4", "vmad", "vmax", "vmax2", "vmax4", "vmin", "vmin2",
    "vmin4", "vote", "vset", "vset2", "vset4", "vshl", "vshr", "vsub", "vsub2", "vsub4", "wgmma", "wmma", "xor",
];

/// Assigns each modifier segment to a group of `spec`. A group made only of data types is a type
/// slot: the first slot of the row goes into the modifier set, the later ones (`cvt`'s source
/// type, `mma`'s `.atype.btype.ctype`) into `ty2`, `ty3`, `ty4`, since they may repeat a type.
fn parse_mods(spec: &OpSpec, segs: &[&str], seg_locs: &[Loc], mnemonic: Loc) -> R<(ModSet, [Option<Mod>; 3])> {
    let mut taken = vec![false; spec.groups.len()];
    let mut set = ModSet::default();
    let mut later_types = [None; 3];
    let slots = spec.type_slots();
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
        match slots.iter().position(|&k| k == g) {
            Some(k) if k > 0 => later_types[(k - 1).min(2)] = Some(m),
            _ => set.insert(m),
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
    Ok((set, later_types))
}

/// Checks operand count and kinds against the row's patterns; the first alternative that fits wins,
/// otherwise the error of the alternative with the operand count closest to the one given.
fn check_operands(spec: &OpSpec, ins: &Instr, regs: &[RegDecl], labels: &[TmpLabel], loc: Loc, op_locs: &[Loc]) -> R<()> {
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
    labels: &[TmpLabel],
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
            Operand::Reg(r) => k.contains('d') || k.contains('s') || k.contains('|') || k.contains('f') || (k.contains('!') && regs[r.0 as usize].ty == Mod::Pred),
            Operand::NotReg(_) => k.contains('!'),
            Operand::Imm(_) | Operand::FloatBits { .. } | Operand::Special(_) | Operand::Sym(_) => k.contains('s'),
            Operand::Addr { .. } => k.contains('a'),
            Operand::Vector(_) => k.contains('v') || k.contains('w'),
            Operand::Tensor { .. } => k.contains('t'),
            Operand::Label(_) => k.contains('l'),
            Operand::Func(_) => k.contains('f') || k.contains('s'),
            Operand::List(_) => k.contains('p'),
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
                        labels.get(l.0 as usize).map_or("?", |t| t.name.as_str())
                    ))
                }
                Operand::Sink => "`_`",
                Operand::Pair(..) => "a `d|p` pair",
                Operand::Func(_) => "a function",
                Operand::List(_) => "a parenthesized list",
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
/// Every error is collected (at most [`MAX_ERRORS`]).
fn check_target(m: &Module, errors: &mut Vec<Diag>) {
    let sm = m.sm();
    if sm < 90 {
        errors.push(Diag::new(Loc { line: 1, col: 1 }, format!("unsupported target `{}`: hopsync models sm_90", m.target.join(", "))));
        return;
    }
    for ins in &m.kernel.body {
        if errors.len() >= MAX_ERRORS {
            return;
        }
        let r = (|| {
            let spec = ins.op.spec();
            if spec.min_sm > sm {
                return Err(Diag::new(ins.loc, format!("`{}` requires sm_{}", spec.name, spec.min_sm)));
            }
            // red.async's .mmio / .release forms are sm_100 (PTX 9.7.13.7 Target ISA Notes).
            if ins.op == Opcode::RedAsync && (ins.has(Mod::Mmio) || ins.has(Mod::Release)) && sm < 100 {
                return Err(Diag::new(ins.loc, "`red.async.mmio`/`.release` requires sm_100"));
            }
            check_ptx_rules(m, ins)?;
            crate::mma::check_arch(m, ins).map_err(|e| Diag::new(ins.loc, e))?;
            check_tensor_operands(m, ins)
        })();
        if let Err(d) = r {
            errors.push(d);
        }
    }
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
    // cp.async.bulk .ignore_oob (PTX 9.7.9.25.4.1, PTX ISA 9.2): global -> .shared::cta only, with
    // `ignoreBytesLeft, ignoreBytesRight` between `size` and `[mbar]`; ptxas: "Illegal modifier
    // '.ignore_oob' for instruction 'cp.async.bulk' with '.shared::cluster.global'", "Feature
    // '.ignore_oob' requires PTX ISA .version 9.2 or later".
    if ins.op == CpAsyncBulk {
        let ignore = ins.has(Mod::IgnoreOob);
        let six = matches!(ins.operands.get(5), Some(Operand::Addr { .. }));
        if ignore && !(ins.has(Mod::SharedCta) && ins.has(Mod::Global) && !ins.has(Mod::SharedCluster) && ins.has(Mod::MbarrierCompleteTxBytes)) {
            return Err(Diag::new(ins.loc, "`.ignore_oob` is only available on `cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes` (PTX 9.7.9.25.4.1; ptxas: illegal modifier)"));
        }
        if ignore && !six {
            return Err(Diag::new(ins.loc, "`cp.async.bulk...ignore_oob` takes [dstMem], [srcMem], size, ignoreBytesLeft, ignoreBytesRight, [mbar] (PTX 9.7.9.25.4.1)"));
        }
        if !ignore && six {
            return Err(Diag::new(ins.loc, "`cp.async.bulk` with ignoreBytesLeft, ignoreBytesRight operands needs `.ignore_oob` (PTX 9.7.9.25.4.1)"));
        }
        if ignore && m.version < (9, 2) {
            return Err(Diag::new(ins.loc, format!("`.ignore_oob` requires PTX ISA `.version 9.2` or later (this module is {}.{})", m.version.0, m.version.1)));
        }
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
