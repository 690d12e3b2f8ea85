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

/// Characters of a source line shown at most (a window around the column).
const WINDOW: usize = 120;

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
            // A very long line (generated or fuzzed source) shows a window around the column.
            let chars: Vec<char> = self.line_text.chars().collect();
            let col = (self.loc.col.saturating_sub(1) as usize).min(chars.len());
            let (from, to) = if chars.len() > WINDOW { (col.saturating_sub(WINDOW / 2), (col.saturating_sub(WINDOW / 2) + WINDOW).min(chars.len())) } else { (0, chars.len()) };
            let (open, close) = (if from > 0 { "..." } else { "" }, if to < chars.len() { "..." } else { "" });
            let shown: String = chars[from..to].iter().collect();
            writeln!(f, "{n} | {open}{shown}{close}")?;
            // Columns count characters; tabs are kept so the caret lines up under them.
            let lead: String = open.chars().map(|_| ' ').chain(chars[from..col.max(from)].iter().map(|&c| if c == '\t' { '\t' } else { ' ' })).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_shows_a_window_with_the_caret_under_the_column() {
        let line = format!("{}x{}", "{".repeat(5000), "}".repeat(5000));
        let d = Diag::new(Loc { line: 1, col: 5001 }, "here").with_source("f.ptx", &line);
        let text = d.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[3].len() < WINDOW + 20, "{}", lines[3]);
        let (src, caret) = (lines[3].find('x').unwrap(), lines[4].find('^').unwrap());
        assert_eq!(src, caret, "{text}");
        assert!(lines[3].contains("...{") && lines[3].ends_with("}..."), "{text}");
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let d = Diag::new(Loc { line: 1, col: 3 }, "here").with_source("f.ptx", "\tab cd");
        assert_eq!(d.to_string(), "error: here\n  --> f.ptx:1:3\n  |\n1 | \tab cd\n  | \t ^");
    }
}
