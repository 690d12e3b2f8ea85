//! `hopsync tma-layout PROGRAM.ptx --map NAME [--box COORDS] [--smem-base OFF] --svg FILE`: where
//! each element of a tensor map's box lands in shared memory under the map's swizzle, and the
//! bank conflicts a reader of that layout sees.
//!
//! The placement is the TMA's own, from the one walk and the one swizzle the golden model and the
//! TmaEngine use (`TensorMap::box_walk`, `swizzle_offset`, firmware/src/tensormap.rs, PTX 5.5.3,
//! 5.5.4, 5.5.7): element k of the dense box at byte `offset` lands at
//! `swizzle_offset(smem_base + offset)`.
//!
//! The picture has one row per 128-byte shared-memory line, one column per 4-byte bank (32 banks,
//! bank = address / 4 mod 32; the header shows each bank's colour). Each element is a cell at its
//! bytes, coloured by its logical 16-byte chunk within its box row (so a swizzle shows as the
//! colours permuting from line to line) and labelled with its tensor coordinates (out-of-bounds
//! elements, which the TMA fills, are grey). Beside each line, for every box row that starts
//! there, the shared-memory wavefronts (1 = no bank conflict) of two reads by one warp:
//! - `row`: the whole box row, lanes taking consecutive words;
//! - `col`: at the first row of each group of 8, the group's rows read 16 bytes each at the same
//!   logical chunk (8 lanes x 16 bytes, as `ldmatrix` and 128-bit column reads do), the worst
//!   chunk: the access the swizzle modes exist to make conflict-free.

use hopsync_firmware::tensormap::{swizzle_offset, BoxElement, TensorMap, TensorMapMode};
use hopsync_firmware::Program;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Bytes per shared-memory line (32 banks x 4 bytes).
pub const LINE: u64 = 128;
/// Lines drawn at most (32 KiB of shared memory); the rest is summarized.
pub const MAX_LINES: u64 = 256;
/// Pixels per byte.
pub const PX: f64 = 6.0;
/// Height of a line.
pub const ROW_H: f64 = 22.0;
/// Left margin (line offsets).
pub const LEFT: f64 = 70.0;
/// Top margin (title, bank header).
pub const TOP: f64 = 56.0;

/// One element placed in shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The element (dense offset, tensor coordinates, global address).
    pub el: BoxElement,
    /// Its shared-memory byte address (swizzled).
    pub smem: u64,
    /// Its box row (elements that share every coordinate but the innermost).
    pub row: u64,
    /// Its logical 16-byte chunk within the box row.
    pub chunk: u64,
}

/// The conflicts of one box row's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowReads {
    /// Box row index.
    pub row: u64,
    /// The shared-memory address where it starts (its first element).
    pub start: u64,
    /// Wavefronts to read the whole row with one warp.
    pub row_wavefronts: u32,
    /// At a row that starts a group of 8: wavefronts of the worst 16-byte column read of the
    /// group (8 lanes x 16 bytes at one logical chunk).
    pub col_wavefronts: Option<u32>,
}

/// A box's layout in shared memory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Element size in bytes.
    pub elem: u64,
    /// Bytes per box row.
    pub row_bytes: u64,
    /// Shared-memory address of the box (before the swizzle).
    pub base: u64,
    /// Bytes of the box.
    pub bytes: u64,
    /// Every element.
    pub placed: Vec<Placed>,
    /// Per box row, its reads.
    pub rows: Vec<RowReads>,
    /// One line of text about the map (type, box, swizzle).
    pub title: String,
}

/// Wavefronts of one warp access touching `bytes` (address, length) ranges: per bank, the number
/// of distinct 4-byte words it must deliver; the most of any bank (at least 1).
pub fn wavefronts(bytes: impl IntoIterator<Item = (u64, u64)>) -> u32 {
    let mut words: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for (a, n) in bytes {
        for w in a / 4..(a + n).div_ceil(4) {
            words.entry(w % 32).or_default().insert(w);
        }
    }
    words.values().map(|s| s.len() as u32).max().unwrap_or(0).max(1)
}

/// The layout of the box of `map` at `coords` (im2col `offsets`) placed at `base`.
pub fn layout(name: &str, map: &TensorMap, coords: &[i64], offsets: &[i64], base: u64) -> Layout {
    let s = map.spec();
    let elem = map.element_size() as u64;
    let row_elems = match s.mode {
        TensorMapMode::Tiled => s.box_dim[0] as u64,
        TensorMapMode::Im2col => s.channels_per_pixel as u64,
    };
    let row_bytes = row_elems * elem;
    let place = |off: u64| swizzle_offset(s.swizzle, base + off).expect("a validated map holds an sm_90 swizzle");
    let placed: Vec<Placed> = map
        .box_walk(coords, offsets)
        .into_iter()
        .map(|el| {
            let (row, chunk) = (el.offset / row_bytes, el.offset % row_bytes / 16);
            Placed { smem: place(el.offset), row, chunk, el }
        })
        .collect();
    let nrows = (placed.len() as u64).div_ceil(row_elems);
    let mut by_row: Vec<Vec<&Placed>> = vec![Vec::new(); nrows as usize];
    for p in &placed {
        by_row[p.row as usize].push(p);
    }
    let rows = (0..nrows)
        .map(|r| {
            let mine = &by_row[r as usize];
            let row_wavefronts = wavefronts(mine.iter().map(|p| (p.smem, elem)));
            let col_wavefronts = (r % 8 == 0).then(|| {
                let group: Vec<&Placed> = (r..(r + 8).min(nrows)).flat_map(|q| by_row[q as usize].iter().copied()).collect();
                (0..row_bytes.div_ceil(16)).map(|c| wavefronts(group.iter().filter(|p| p.chunk == c).map(|p| (p.smem, elem)))).max().unwrap_or(1)
            });
            RowReads { row: r, start: mine.first().map(|p| p.smem).unwrap_or(base), row_wavefronts, col_wavefronts }
        })
        .collect();
    let dims: Vec<String> = match s.mode {
        TensorMapMode::Tiled => s.box_dim.iter().map(|d| d.to_string()).collect(),
        TensorMapMode::Im2col => vec![s.channels_per_pixel.to_string(), s.pixels_per_column.to_string()],
    };
    let title = format!(
        "tensor map `{name}`: {}, box {} at ({}), {}, shared memory from 0x{base:x}",
        s.data_type.driver_name(),
        dims.join(" x "),
        coords.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
        s.swizzle.driver_name()
    );
    Layout { elem, row_bytes, base, bytes: map.smem_box_bytes(), placed, rows, title }
}

/// The colour of bank `b` (header).
pub fn bank_colour(b: u64) -> (u8, u8, u8) {
    hsl(b as f64 * 360.0 / 32.0, 0.55, 0.62)
}

/// The colour of logical chunk `c` of a box row (cells).
pub fn chunk_colour(c: u64) -> (u8, u8, u8) {
    hsl((c % 8) as f64 * 45.0, 0.65, if c % 16 < 8 { 0.72 } else { 0.55 })
}

/// Grey of out-of-bounds (filled) elements.
pub const OOB: (u8, u8, u8) = (0xb0, 0xb0, 0xb0);

fn hsl(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let f = |v: f64| ((v + m) * 255.0).round() as u8;
    (f(r), f(g), f(b))
}

fn rgb((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Where line `i`'s top is in the picture.
pub fn line_y(i: u64) -> f64 {
    TOP + i as f64 * ROW_H
}

/// Where bank `b`'s left edge is.
pub fn bank_x(b: u64) -> f64 {
    LEFT + b as f64 * 4.0 * PX
}

/// The picture.
pub fn svg(l: &Layout) -> String {
    let first = l.base / LINE;
    let lines = (l.base + l.bytes).div_ceil(LINE) - first;
    let shown = lines.min(MAX_LINES);
    let width = LEFT + LINE as f64 * PX + 330.0;
    let height = line_y(shown) + 40.0;
    let mut o = String::new();
    let _ = writeln!(o, r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, sans-serif">"##);
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(o, r##"<text x="8" y="18" font-size="13" font-weight="bold">{}</text>"##, esc(&l.title));
    // Bank header.
    let _ = writeln!(o, r##"<text x="8" y="{}" font-size="10">bank</text>"##, TOP - 8.0);
    for b in 0..32 {
        let _ = writeln!(o, r##"<rect class="bank" x="{}" y="{}" width="{}" height="16" fill="{}" stroke="white"/>"##, bank_x(b), TOP - 22.0, 4.0 * PX, rgb(bank_colour(b)));
        let _ = writeln!(o, r##"<text x="{}" y="{}" font-size="9" text-anchor="middle">{b}</text>"##, bank_x(b) + 2.0 * PX, TOP - 10.0);
    }
    // Lines.
    for i in 0..shown {
        let y = line_y(i);
        let _ = writeln!(o, r##"<text x="8" y="{}" font-size="10" font-family="DejaVu Sans Mono, monospace">0x{:05x}</text>"##, y + ROW_H * 0.65, (first + i) * LINE);
        let _ = writeln!(o, r##"<rect x="{LEFT}" y="{y}" width="{}" height="{ROW_H}" fill="#f4f4f4" stroke="#dddddd"/>"##, LINE as f64 * PX);
    }
    // Elements.
    let label = l.elem as f64 * PX >= 22.0;
    for p in &l.placed {
        let line = p.smem / LINE - first;
        if line >= shown {
            continue;
        }
        let (x, y) = (LEFT + (p.smem % LINE) as f64 * PX, line_y(line));
        let fill = if p.el.global.is_some() { chunk_colour(p.chunk) } else { OOB };
        let coords = p.el.coords.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        let _ = writeln!(
            o,
            r##"<rect class="el" x="{x}" y="{y}" width="{}" height="{ROW_H}" fill="{}" stroke="white" stroke-width="0.5"><title>({coords}) box row {} chunk {}: shared 0x{:x}{}</title></rect>"##,
            l.elem as f64 * PX,
            rgb(fill),
            p.row,
            p.chunk,
            p.smem,
            if p.el.global.is_some() { "" } else { ", out of bounds (filled)" }
        );
        if label {
            let _ = writeln!(o, r##"<text x="{}" y="{}" font-size="7" text-anchor="middle">{coords}</text>"##, x + l.elem as f64 * PX / 2.0, y + 8.0);
        }
    }
    // Conflicts, beside the line where each box row starts.
    let tx = LEFT + LINE as f64 * PX + 10.0;
    let _ = writeln!(o, r##"<text x="{tx}" y="{}" font-size="10">wavefronts per box row (1 = no bank conflict)</text>"##, TOP - 10.0);
    let mut per_line: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for r in &l.rows {
        let mut t = format!("r{}: row {}", r.row, r.row_wavefronts);
        if let Some(c) = r.col_wavefronts {
            let _ = write!(t, ", col {c}");
        }
        per_line.entry(r.start / LINE - first).or_default().push(t);
    }
    for (line, texts) in per_line.into_iter().filter(|(line, _)| *line < shown) {
        let _ = writeln!(o, r##"<text class="conflicts" x="{tx}" y="{}" font-size="10">{}</text>"##, line_y(line) + ROW_H * 0.65, esc(&texts.join("; ")));
    }
    if lines > shown {
        let _ = writeln!(o, r##"<text x="8" y="{}" font-size="11">... {} more lines not drawn ({} bytes in all)</text>"##, line_y(shown) + 18.0, lines - shown, l.bytes);
    }
    let _ = writeln!(o, r##"<text x="8" y="{}" font-size="10">cell colour: the element's 16-byte chunk within its box row; label: tensor coordinates; grey: out of bounds (filled)</text>"##, line_y(shown) + 32.0);
    o.push_str("</svg>\n");
    o
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The text summary `hopsync tma-layout` prints.
pub fn summary(l: &Layout) -> String {
    let mut o = format!("{}\n  {} elements of {} bytes, {} box rows of {} bytes, {} bytes of shared memory\n", l.title, l.placed.len(), l.elem, l.rows.len(), l.row_bytes, l.bytes);
    let worst_row = l.rows.iter().map(|r| r.row_wavefronts).max().unwrap_or(1);
    let worst_col = l.rows.iter().filter_map(|r| r.col_wavefronts).max().unwrap_or(1);
    let _ = writeln!(o, "  wavefronts (1 = no bank conflict): reading a box row {worst_row} at worst; reading a 16-byte column of 8 rows {worst_col} at worst");
    o
}

/// `hopsync tma-layout`: the layout of tensor map `name` of `prog`'s manifest.
pub fn for_program(prog: &Program, name: &str, coords: Option<&[i64]>, base: u64) -> Result<Layout, String> {
    let decl = prog.manifest.tensormaps.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = prog.manifest.tensormaps.iter().map(|t| t.name.as_str()).collect();
        format!("error: {} has no tensor map `{name}` (its maps: {})", prog.path, if names.is_empty() { "none".to_string() } else { names.join(", ") })
    })?;
    let map = TensorMap::new(decl.spec.clone()).map_err(|e| format!("error: tensor map `{name}`: {e}"))?;
    let rank = map.rank();
    let zeros = vec![0i64; rank];
    let coords = coords.unwrap_or(&zeros);
    if coords.len() != rank {
        return Err(format!("error: --box gives {} coordinates; tensor map `{name}` has rank {rank}", coords.len()));
    }
    if base % 128 != 0 {
        return Err(format!("error: --smem-base 0x{base:x}: a tensor copy's shared-memory destination is 128-byte aligned (PTX 9.7.9.25.5.2)"));
    }
    let offsets = vec![0i64; rank.saturating_sub(2)];
    Ok(layout(name, &map, coords, &offsets, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wavefronts_count_distinct_words_per_bank() {
        // 32 consecutive words: one wavefront; the same bank in 8 lines: 8.
        assert_eq!(wavefronts((0..32).map(|w| (w * 4, 4))), 1);
        assert_eq!(wavefronts((0..8).map(|l| (l * 128, 16))), 8);
        // Two lanes reading the same word: one.
        assert_eq!(wavefronts([(0, 4), (0, 4)]), 1);
    }

    #[test]
    fn colours_differ() {
        let banks: BTreeSet<_> = (0..32).map(bank_colour).collect();
        let chunks: BTreeSet<_> = (0..16).map(chunk_colour).collect();
        assert_eq!((banks.len(), chunks.len()), (32, 16));
        assert!(!chunks.contains(&OOB));
    }
}
