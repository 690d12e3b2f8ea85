//! Tokens of PTX source. Mnemonics, directives and register names are single tokens
//! (`mbarrier.arrive.shared::cta.b64`, `.reg`, `%tid.x`); the parser splits them on dots.

use crate::diag::Diag;
use crate::ir::Loc;

/// Token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Identifier-like word: mnemonic, name, register, directive (leading `.`).
    Word(String),
    /// Integer literal (decimal, hex, octal, binary; a trailing `U` is accepted).
    Int(i64),
    /// `0fXXXXXXXX` / `0dXXXXXXXXXXXXXXXX`.
    Float(u64, bool),
    /// A string literal (`.pragma "nounroll";`).
    Str(String),
    /// One punctuation character.
    Punct(char),
}

/// A token with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it starts.
    pub loc: Loc,
    /// Just past its last character (where a missing `;` after it belongs).
    pub end: Loc,
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '%' | '.')
}
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// Splits `src` into tokens, skipping `//` and `/* */` comments (the `//!` manifest lines included).
pub fn lex(src: &str) -> Result<Vec<Token>, Diag> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    macro_rules! bump {
        () => {{
            if chars[i] == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
            i += 1;
        }};
    }
    while i < chars.len() {
        let c = chars[i];
        let loc = Loc { line, col };
        if c.is_whitespace() {
            bump!();
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                bump!();
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            bump!();
            bump!();
            loop {
                if i + 1 >= chars.len() {
                    return Err(Diag::new(loc, "unterminated block comment"));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    bump!();
                    bump!();
                    break;
                }
                bump!();
            }
        } else if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) && prev_allows_sign(&out)) {
            let neg = c == '-';
            if neg {
                bump!();
            }
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric()) {
                bump!();
            }
            let text: String = chars[start..i].iter().collect();
            let tok = parse_number(&text, neg).ok_or_else(|| {
                Diag::new(loc, format!("malformed number `{}{}`", if neg { "-" } else { "" }, text))
            })?;
            out.push(Token { tok, loc, end: Loc { line, col } });
        } else if is_word_start(c) {
            let start = i;
            while i < chars.len() {
                if is_word_char(chars[i]) {
                    bump!();
                } else if chars[i] == ':' && chars.get(i + 1) == Some(&':') {
                    bump!();
                    bump!();
                } else {
                    break;
                }
            }
            let word: String = chars[start..i].iter().collect();
            // `.reg.b32 f;` (cuda_fp16.h's inline asm) is the directive `.reg` and the type
            // `.b32` written without the blank (ptxas accepts it): two tokens.
            match word.strip_prefix(".reg.") {
                Some(ty) => {
                    let mid = Loc { line: loc.line, col: loc.col + 4 };
                    out.push(Token { tok: Tok::Word(".reg".into()), loc, end: mid });
                    out.push(Token { tok: Tok::Word(format!(".{ty}")), loc: mid, end: Loc { line, col } });
                }
                None => out.push(Token { tok: Tok::Word(word), loc, end: Loc { line, col } }),
            }
        } else if c == '"' {
            bump!();
            let start = i;
            while i < chars.len() && chars[i] != '"' && chars[i] != '\n' {
                bump!();
            }
            if i >= chars.len() || chars[i] != '"' {
                return Err(Diag::new(loc, "unterminated string literal"));
            }
            let s: String = chars[start..i].iter().collect();
            bump!();
            out.push(Token { tok: Tok::Str(s), loc, end: Loc { line, col } });
        } else if "{}[](),;:+-<>@!|=".contains(c) {
            bump!();
            out.push(Token { tok: Tok::Punct(c), loc, end: Loc { line, col } });
        } else {
            return Err(Diag::new(loc, format!("unexpected character `{c}`")));
        }
    }
    Ok(out)
}

/// A `-` starts a negative literal unless it follows something it could subtract from.
fn prev_allows_sign(out: &[Token]) -> bool {
    !matches!(out.last().map(|t| &t.tok), Some(Tok::Word(_)) | Some(Tok::Int(_)) | Some(Tok::Punct(']')) | Some(Tok::Punct(')')))
}

fn parse_number(t: &str, neg: bool) -> Option<Tok> {
    let lower = t.to_ascii_lowercase();
    if (lower.starts_with("0f") && t.len() == 10) || (lower.starts_with("0d") && t.len() == 18) {
        let bits = u64::from_str_radix(&t[2..], 16).ok()?;
        if neg {
            return None;
        }
        return Some(Tok::Float(bits, lower.starts_with("0d")));
    }
    let body = lower.strip_suffix('u').unwrap_or(&lower);
    let v: u64 = if let Some(h) = body.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = body.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some(Tok::Int(if neg { (v as i64).wrapping_neg() } else { v as i64 }))
}
