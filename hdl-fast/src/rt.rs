//! What the generated models need at run time (and the generator at build time): values of a
//! rust-hdl block's signals as bit vectors, read through rust-hdl's probe, and the contents of
//! its RAMs.
//!
//! A generated model starts from a live rust-hdl instance of its unit (`from_block`): every
//! signal's current value (constants included: they are constructor parameters, e.g. the
//! MbarrierUnit's try_wait limit) and every RAM's contents are copied, so the model needs no
//! parameters of its own and starts exactly where the rust-hdl simulation stands.

use rust_hdl::prelude::*;
use std::collections::HashMap;

/// A value as little-endian 64-bit limbs.
pub type Limbs = Vec<u64>;

/// What every generated model offers (each implementation forwards to the model's own
/// functions): generic code clocks any of them with the per-cycle contract of the module doc.
pub trait Model: Sized {
    /// (signal path, bits, its fields (index in `values`, bit offset, width)).
    const SIGNALS: &'static [(&'static str, usize, &'static [(usize, usize, usize)])];
    /// The clock signals (not modelled).
    const CLOCKS: &'static [&'static str];
    /// Every field of every signal.
    fn values(&self) -> &[u64];
    /// The model of `uut` as it stands (signals, constants, RAM contents).
    fn from_block<B: Block>(uut: &B) -> Result<Box<Self>, String>;
    /// Settles the combinational logic.
    fn eval(&mut self);
    /// The rising clock edge.
    fn edge(&mut self);
}

/// Parses a `VerilogLiteral`'s text (`8'h1f`, `3'b101`, `1'b0`) into its width and limbs.
pub fn parse_literal(s: &str) -> Result<(usize, Limbs), String> {
    let (bits, rest) = s.split_once('\'').ok_or_else(|| format!("literal `{s}`: no width"))?;
    let bits: usize = bits.trim().parse().map_err(|_| format!("literal `{s}`: bad width"))?;
    let (radix_bits, digits) = match rest.split_at(1) {
        ("h", d) => (4, d),
        ("b", d) => (1, d),
        _ => return Err(format!("literal `{s}`: unknown radix")),
    };
    let mut limbs = vec![0u64; bits.div_ceil(64).max(1)];
    for (i, c) in digits.chars().rev().filter(|c| *c != '_').enumerate() {
        let d = c.to_digit(1 << radix_bits).ok_or_else(|| format!("literal `{s}`: bad digit"))? as u64;
        for b in 0..radix_bits {
            if d >> b & 1 == 1 {
                let at = i * radix_bits + b;
                if at >= bits {
                    return Err(format!("literal `{s}`: value wider than {bits} bits"));
                }
                limbs[at / 64] |= 1 << (at % 64);
            }
        }
    }
    Ok((bits, limbs))
}

/// Bits `off..off + w` (w <= 64) of `limbs`.
pub fn extract(limbs: &[u64], off: usize, w: usize) -> u64 {
    let mut x = 0u64;
    for b in 0..w {
        let at = off + b;
        if limbs.get(at / 64).is_some_and(|l| l >> (at % 64) & 1 == 1) {
            x |= 1 << b;
        }
    }
    x
}

/// Every signal of a block (its `$`-joined path from `top`, as generate_verilog names it) with
/// its width and value, and the `hdl()` text of the scopes asked for (the RAMs).
#[derive(Default)]
pub struct Snapshot {
    /// path -> (bits, value)
    pub atoms: HashMap<String, (usize, Limbs)>,
    /// scope path -> its `Verilog::Custom` text
    pub custom: HashMap<String, String>,
    /// the errors met while reading
    pub errors: Vec<String>,
    path: Vec<String>,
    scopes: Vec<&'static str>,
}

impl Snapshot {
    /// Reads `uut`; the `hdl()` text of the scopes in `want` is kept.
    pub fn read<B: Block>(uut: &B, want: &[&'static str]) -> Result<Snapshot, String> {
        let mut s = Snapshot { scopes: want.to_vec(), ..Default::default() };
        uut.accept("top", &mut s);
        match s.errors.first() {
            Some(e) => Err(e.clone()),
            None => Ok(s),
        }
    }

    /// The value of `name`, checked to be `bits` wide.
    pub fn atom(&self, name: &str, bits: usize) -> Result<&Limbs, String> {
        match self.atoms.get(name) {
            Some((b, v)) if *b == bits => Ok(v),
            Some((b, _)) => Err(format!("generated model is stale: `{name}` is {b} bits, the model has {bits}")),
            None => Err(format!("generated model is stale: the block has no signal `{name}`")),
        }
    }

    /// The contents of the RAM at scope `path` (`mem[a] = v` lines of its Verilog), as
    /// (address, value) pairs.
    pub fn ram(&self, path: &str) -> Result<Vec<(usize, Limbs)>, String> {
        let text = self.custom.get(path).ok_or_else(|| format!("generated model is stale: no RAM `{path}`"))?;
        let mut out = Vec::new();
        for line in text.lines() {
            let line = line.trim().trim_end_matches(';');
            // the `initial` block's `mem[a] = v;` lines (not the write port's `mem[..] <= ..`)
            let Some((addr, val)) = line.strip_prefix("mem[").and_then(|r| r.split_once("] = ")) else { continue };
            let (_, a) = parse_literal(addr)?;
            let (_, v) = parse_literal(val)?;
            out.push((a[0] as usize, v));
        }
        Ok(out)
    }
}

impl Probe for Snapshot {
    fn visit_start_scope(&mut self, name: &str, node: &dyn Block) {
        self.path.push(name.to_string());
        let here = self.path.join("$");
        if let Some(w) = self.scopes.iter().find(|w| **w == here) {
            match node.hdl() {
                Verilog::Custom(t) => {
                    self.custom.insert(w.to_string(), t);
                }
                _ => self.errors.push(format!("generated model is stale: `{here}` is no longer a RAM")),
            }
        }
    }
    fn visit_start_namespace(&mut self, name: &str, _: &dyn Block) {
        self.path.push(name.to_string());
    }
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        let full = format!("{}${name}", self.path.join("$"));
        match parse_literal(&signal.verilog().to_string()) {
            Ok((_, v)) => {
                self.atoms.insert(full, (signal.bits(), v));
            }
            Err(e) => self.errors.push(format!("signal `{full}`: {e}")),
        }
    }
    fn visit_end_namespace(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
    }
    fn visit_end_scope(&mut self, _: &str, _: &dyn Block) {
        self.path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parse_in_both_radixes() {
        assert_eq!(parse_literal("8'h1f").unwrap(), (8, vec![0x1f]));
        assert_eq!(parse_literal("3'b101").unwrap(), (3, vec![5]));
        assert_eq!(parse_literal("1'b0").unwrap(), (1, vec![0]));
        let (b, v) = parse_literal("72'h1_0000_0000_0000_0003").unwrap();
        assert_eq!((b, v.clone()), (72, vec![3, 1]));
        assert_eq!(extract(&v, 63, 2), 2);
        assert!(parse_literal("4'h1f").is_err());
    }
}
