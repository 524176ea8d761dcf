//! Runs the fixed write-operation sequence (tests/common/write_ops.rs) on every valid
//! corpus file into OUTDIR/<stem>/, for `corpus/bless_writes.sh` to dump with pi.
#[path = "../tests/common/write_ops.rs"]
mod write_ops;

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: write_ops OUTDIR"));
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid");
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for (i, f) in files.iter().enumerate() {
        if f.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let stem = f.file_stem().expect("stem").to_string_lossy().into_owned();
        let dir = out.join(&stem);
        if let Some(w) = write_ops::run(f, &dir, i as u64) {
            for p in [Some(w.main), w.branched, w.forked].into_iter().flatten() {
                println!("{stem}\t{}", p.display());
            }
        }
    }
}
