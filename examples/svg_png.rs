//! Renders an SVG to PNG with resvg and the system's fonts: the README's pictures
//! (docs/tma_layout_128b.png, docs/timeline.png; README "Timeline" and "Tensor-map layouts").
//!
//! `cargo run --example svg_png -- IN.svg OUT.png [SCALE]`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output, rest @ ..] = args.as_slice() else {
        eprintln!("usage: svg_png IN.svg OUT.png [SCALE]");
        std::process::exit(2);
    };
    let scale: f32 = rest.first().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| panic!("{input}: {e}"));
    let tree = resvg::usvg::Tree::from_str(&text, &opt).unwrap_or_else(|e| panic!("{input}: {e}"));
    let size = tree.size().to_int_size().scale_by(scale).expect("a non-empty picture");
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a non-empty picture");
    resvg::render(&tree, resvg::tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.save_png(output).unwrap_or_else(|e| panic!("{output}: {e}"));
    println!("{output}: {} x {}", size.width(), size.height());
}
