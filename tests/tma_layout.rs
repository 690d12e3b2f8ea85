//! `hopsync tma-layout` (issue 17 §3): the SVG is rendered (resvg) and its pixels checked against
//! the swizzle patterns of PTX 5.5.7 computed by hand here, not only its text.
//!
//! The picture draws one row per 128-byte line of shared memory and 4-byte bank columns; each
//! element's cell is coloured by its logical 16-byte chunk within its box row. The palette is read
//! off the picture itself (a line whose chunks are in logical order), so the test does not repeat
//! the drawing code's colours: under SWIZZLE_128B, line L holds logical chunk `p ^ (L % 8)` at
//! chunk position p; without a swizzle, 64-byte box rows sit two to a line in order; elements
//! outside the tensor are grey.

use std::path::PathBuf;
use std::process::Command;

/// Geometry of the picture (src/tma_layout.rs): left margin, top margin, pixels per byte, line height.
const LEFT: f64 = 70.0;
const TOP: f64 = 56.0;
const PX: f64 = 6.0;
const ROW_H: f64 = 22.0;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `hopsync tma-layout`; returns (stdout, svg text).
fn layout(program: &str, map: &str, extra: &[&str], tag: &str) -> (String, String) {
    let dir = root().join("target/tma-layout-test");
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join(format!("{tag}.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_hopsync"))
        .arg("tma-layout")
        .arg(root().join("firmware/programs").join(program))
        .args(["--map", map, "--svg", svg.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    (text, std::fs::read_to_string(svg).unwrap())
}

struct Picture(resvg::tiny_skia::Pixmap);

impl Picture {
    fn render(svg: &str) -> Picture {
        let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).unwrap();
        let size = tree.size().to_int_size();
        let mut p = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(&tree, resvg::tiny_skia::Transform::identity(), &mut p.as_mut());
        Picture(p)
    }

    /// The colour inside the cell of byte `byte` (0..128) of line `line`, below its label.
    fn cell(&self, line: u32, byte: u32) -> (u8, u8, u8) {
        let x = LEFT + byte as f64 * PX + 3.0;
        let y = TOP + line as f64 * ROW_H + ROW_H - 4.0;
        let c = self.0.pixel(x as u32, y as u32).unwrap().demultiply();
        (c.red(), c.green(), c.blue())
    }
}

fn grey(c: (u8, u8, u8)) -> bool {
    c.0 == c.1 && c.1 == c.2 && c.0 < 0xf0
}

#[test]
fn swizzle_128b_permutes_the_chunks_of_each_line() {
    // INT32, box 32 x 16: one box row = one 128-byte line.
    let (text, svg) = layout("tma/swizzle_128b.ptx", "tmap_in", &["--box", "0,8"], "s128");
    assert!(text.contains("SWIZZLE_128B") && text.contains("16 box rows of 128 bytes"), "{text}");
    assert!(text.contains("reading a 16-byte column of 8 rows 1 at worst"), "{text}");
    let pic = Picture::render(&svg);
    // Line 0 is unswizzled (L % 8 = 0): its chunks give the palette.
    let palette: Vec<_> = (0..8).map(|p| pic.cell(0, p * 16)).collect();
    let distinct: std::collections::BTreeSet<_> = palette.iter().collect();
    assert_eq!(distinct.len(), 8, "eight chunk colours: {palette:?}");
    assert!(palette.iter().all(|c| !grey(*c)));
    for line in 0..16u32 {
        for p in 0..8u32 {
            let logical = p ^ (line % 8);
            assert_eq!(pic.cell(line, p * 16), palette[logical as usize], "line {line} chunk position {p} holds logical chunk {logical}");
            // Every element of the chunk (4 of 4 bytes) is that chunk's.
            assert_eq!(pic.cell(line, p * 16 + 12), palette[logical as usize]);
        }
    }
    assert!(svg.contains("r0: row 1, col 1") && svg.contains("r8: row 1, col 1"), "conflict-free both ways");
}

#[test]
fn no_swizzle_keeps_rows_in_order_and_column_reads_conflict() {
    // INT32, box 16 x 8, no swizzle: 64-byte box rows, two to a 128-byte line.
    let (text, svg) = layout("tma/tile_2d_load_modify_store.ptx", "tensor_map", &[], "none");
    assert!(text.contains("SWIZZLE_NONE") && text.contains("8 box rows of 64 bytes"), "{text}");
    let pic = Picture::render(&svg);
    let palette: Vec<_> = (0..4).map(|p| pic.cell(0, p * 16)).collect();
    assert_eq!(palette.iter().collect::<std::collections::BTreeSet<_>>().len(), 4);
    for line in 0..4u32 {
        for p in 0..8u32 {
            assert_eq!(pic.cell(line, p * 16), palette[(p % 4) as usize], "line {line} position {p}");
        }
    }
    // Chunk j of rows 0..7 sits in the same 4 banks of 4 lines: 4 wavefronts.
    assert!(svg.contains("r0: row 1, col 4"), "{svg}");
    assert!(text.contains("reading a 16-byte column of 8 rows 4 at worst"), "{text}");
}

#[test]
fn out_of_bounds_elements_are_grey() {
    // The tensor is 32 x 32; a box at (16, 24) has x 16..47 and y 24..39: logical chunks 4..7
    // (x >= 32) and rows 8..15 (y >= 32) are filled, not read.
    let (_, svg) = layout("tma/swizzle_128b.ptx", "tmap_in", &["--box", "16,24"], "oob");
    let pic = Picture::render(&svg);
    for line in 0..16u32 {
        for p in 0..8u32 {
            let logical = p ^ (line % 8);
            let oob = logical >= 4 || line >= 8;
            assert_eq!(grey(pic.cell(line, p * 16)), oob, "line {line} position {p} (logical chunk {logical})");
        }
    }
    assert!(svg.contains("out of bounds (filled)"));
}

#[test]
fn bad_arguments_exit_2_and_say_why() {
    let p = root().join("firmware/programs/tma/swizzle_128b.ptx");
    for (args, says) in [
        (vec!["--map", "nope"], "has no tensor map `nope` (its maps: tmap_in, tmap_out)"),
        (vec!["--map", "tmap_in", "--box", "1"], "--box gives 1 coordinates; tensor map `tmap_in` has rank 2"),
        (vec!["--map", "tmap_in", "--smem-base", "64"], "128-byte aligned"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hopsync")).arg("tma-layout").arg(&p).args(&args).args(["--svg", "/nonexistent/x.svg"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
