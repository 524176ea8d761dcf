//! Writes a tree of realistic sessions with the project's generator (src/gen.rs):
//! `cargo run --release --example gen_sessions_tree -- ROOT SESSIONS FOLDERS TOTAL_BYTES [SEED]`.
//! Used by benches/compare_listing.sh.

#[path = "../src/gen.rs"]
#[allow(dead_code, missing_docs)]
mod generator;

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 4 {
        eprintln!("usage: gen_sessions_tree ROOT SESSIONS FOLDERS TOTAL_BYTES [SEED]");
        std::process::exit(2);
    }
    let num = |i: usize| a[i].parse::<u64>().expect("a number");
    let spec = generator::TreeSpec {
        seed: a.get(4).map_or(7, |s| s.parse().expect("a seed")),
        sessions: num(1) as usize,
        folders: num(2) as usize,
        total_bytes: num(3),
        start_ms: 1_750_000_000_000,
    };
    let t = std::time::Instant::now();
    let stats = generator::write_sessions_tree(&spec, std::path::Path::new(&a[0]))?;
    eprintln!(
        "wrote {} sessions in {} folders, {} bytes, in {:.1?}",
        stats.sessions,
        stats.folders,
        stats.bytes,
        t.elapsed()
    );
    Ok(())
}
