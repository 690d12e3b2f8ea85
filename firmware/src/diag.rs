//! Diagnostics in rustc style: `file:line:col`, the source line, a caret, what was expected.

use crate::ir::Loc;
use std::fmt;

/// A parse or validation error at a source location.
#[derive(Debug, Clone, PartialEq)]
pub struct Diag {
    /// File the error is in.
    pub file: String,
    /// Position.
    pub loc: Loc,
    /// What is wrong.
    pub msg: String,
    /// The offending source line (filled by [`Diag::with_source`]).
    pub line_text: String,
    /// A note printed under the caret (for PTX compiled from CUDA: the `.cu` line).
    pub note: Option<String>,
    /// Further errors of the same input (the parser reports them all).
    pub also: Vec<Diag>,
}

impl Diag {
    /// A diagnostic at `loc`.
    pub fn new(loc: Loc, msg: impl Into<String>) -> Diag {
        Diag { file: String::new(), loc, msg: msg.into(), line_text: String::new(), note: None, also: Vec::new() }
    }
    /// Attaches the file name and the source line.
    pub fn with_source(mut self, file: &str, src: &str) -> Diag {
        self.also = std::mem::take(&mut self.also).into_iter().map(|d| d.with_source(file, src)).collect();
        self.file = file.to_string();
        self.line_text = src
            .lines()
            .nth(self.loc.line.saturating_sub(1) as usize)
            .unwrap_or("")
            .to_string();
        self
    }
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.line == 0 {
            // about the input as a whole (nvcc's own errors follow in the message)
            write!(f, "error: {}\n  --> {}", self.msg, self.file)?;
            return Ok(());
        }
        writeln!(f, "error: {}", self.msg)?;
        writeln!(f, "  --> {}:{}:{}", self.file, self.loc.line, self.loc.col)?;
        if !self.line_text.is_empty() {
            let n = self.loc.line.to_string();
            let pad = " ".repeat(n.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{n} | {}", self.line_text)?;
            // Columns count characters; tabs are kept so the caret lines up under them.
            let lead: String = self
                .line_text
                .chars()
                .take(self.loc.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(f, "{pad} | {lead}^")?;
        }
        if let Some(n) = &self.note {
            write!(f, "\n  = note: {n}")?;
        }
        for d in &self.also {
            write!(f, "\n\n{d}")?;
        }
        if !self.also.is_empty() {
            write!(f, "\n\nerror: {} errors in {}", self.also.len() + 1, self.file)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diag {}
