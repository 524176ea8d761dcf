//! The `gen` command: deterministic sessions for tests and benchmarks.

use anyhow::{Context as _, Result};
use std::io::Write;

/// Parse `10M`, `1G`, `512K`, `1000` (binary multiples).
fn parse_size(s: &str) -> Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: f64 = num.parse().with_context(|| format!("bad size {s:?} (try 10M or 1G)"))?;
    Ok((n * mult as f64) as u64)
}

/// `pi-session gen`.
pub fn generate(g: crate::GenCmd, out: &mut impl Write) -> Result<i32> {
    use pi_session::generator::{Mix, SessionSpec, TreeSpec, write_session, write_sessions_tree};
    match g {
        crate::GenCmd::Session {
            out: path,
            size,
            seed,
            small,
            shape,
        } => {
            let mut spec = SessionSpec::new(seed, parse_size(&size)?);
            spec.mix = match (small, shape) {
                (true, _) | (false, crate::GenShape::SmallEntries) => Mix::SmallEntries,
                (false, crate::GenShape::Realistic) => Mix::Realistic,
                (false, crate::GenShape::ImageHeavy) => Mix::ImageHeavy,
            };
            let f = std::fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
            let st = write_session(&spec, f)?;
            writeln!(
                out,
                "{}: {} bytes, {} lines, {} entries, leaf {}",
                pi_session::text::escape_path(&path),
                st.bytes,
                st.lines,
                st.entries,
                st.leaf_id
            )?;
        }
        crate::GenCmd::Tree {
            root,
            sessions,
            folders,
            size,
            seed,
        } => {
            let spec = TreeSpec {
                seed,
                sessions,
                folders,
                total_bytes: parse_size(&size)?,
                start_ms: 1_735_689_600_000,
            };
            let st = write_sessions_tree(&spec, &root)?;
            writeln!(
                out,
                "{}: {} sessions in {} folders, {} bytes",
                pi_session::text::escape_path(&root),
                st.sessions,
                st.folders,
                st.bytes
            )?;
        }
    }
    Ok(0)
}
