//! The `gen` command: deterministic sessions for tests and benchmarks.

use crate::flags::FlavorArg;
use anyhow::{Context as _, Result};
use clap::{Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// `gen session --shape`: the generator's [`Mix`](pi_session::generator::Mix).
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub(crate) enum GenShape {
    /// About 90% small lines, two thirds of the bytes in images and big tool outputs.
    Realistic,
    /// Only small lines (100-600 bytes).
    SmallEntries,
    /// The current branch holds nearly all bytes: images and big tool outputs, no compaction.
    ImageHeavy,
}

#[derive(Subcommand)]
pub(crate) enum GenCmd {
    /// One session file of about SIZE bytes (suffixes K, M, G).
    Session {
        /// Where to write it.
        out: PathBuf,
        /// Target size, e.g. 10M or 1G.
        #[arg(long, default_value = "10M")]
        size: String,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only small entries (no images or big tool outputs); the same as `--shape small-entries`.
        #[arg(long, conflicts_with = "shape")]
        small: bool,
        /// The shape of the content: `realistic` (the default), `small-entries`, or
        /// `image-heavy` (the current branch holds most bytes: images and big tool outputs,
        /// no compaction).
        #[arg(long, value_enum, default_value_t = GenShape::Realistic)]
        shape: GenShape,
        /// Whose content blocks: pi's, or PiG's (`tool_use`, `signature`, `media_type`,
        /// images given by `url`).
        #[arg(long, value_enum, default_value_t = FlavorArg::Pi)]
        flavor: FlavorArg,
    },
    /// A sessions root: SESSIONS files in FOLDERS project folders, about SIZE bytes in all.
    Tree {
        /// The sessions root to create (an agent dir's `sessions/`: `gen tree DIR/sessions`,
        /// then `ls --all --agent-dir DIR`).
        #[arg(value_name = "SESSIONS_ROOT")]
        root: PathBuf,
        /// Number of session files.
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
        /// Number of project folders.
        #[arg(long, default_value_t = 20)]
        folders: usize,
        /// Total size, e.g. 300M or 3G.
        #[arg(long, default_value = "300M")]
        size: String,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Whose content blocks: pi's, or PiG's.
        #[arg(long, value_enum, default_value_t = FlavorArg::Pi)]
        flavor: FlavorArg,
    },
}

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

/// What lists a generated tree: `ls --agent-dir DIR` reads `DIR/sessions`, so a tree
/// written to `DIR/sessions` is listed by `pi-session ls --all --agent-dir DIR`; one written
/// elsewhere by no `ls` (`--session-dir` is a flat folder, not one of project folders).
fn ls_hint(root: &std::path::Path) -> String {
    use pi_session::text::escape_path;
    match (root.file_name(), root.parent()) {
        (Some(n), Some(parent)) if n == "sessions" => {
            let dir = if parent.as_os_str().is_empty() {
                ".".into()
            } else {
                escape_path(parent)
            };
            let plain = dir
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@".contains(&b));
            let dir = if plain {
                dir.into_owned()
            } else {
                format!("'{}'", dir.replace('\'', "'\\''"))
            };
            format!("list it with: pi-session ls --all --agent-dir {dir}")
        }
        _ => format!(
            "`pi-session ls --agent-dir DIR` lists DIR/sessions: to list this tree with `ls`, generate it as DIR/sessions (`pi-session gen tree DIR/sessions`), not as {}",
            escape_path(root)
        ),
    }
}

/// `pi-session gen`.
pub fn generate(g: GenCmd, out: &mut impl Write) -> Result<i32> {
    use pi_session::generator::{Mix, SessionSpec, TreeSpec, write_session, write_sessions_tree};
    match g {
        GenCmd::Session {
            out: path,
            size,
            seed,
            small,
            shape,
            flavor,
        } => {
            let mut spec = SessionSpec::new(seed, parse_size(&size)?);
            spec.flavor = flavor.into();
            spec.mix = match (small, shape) {
                (true, _) | (false, GenShape::SmallEntries) => Mix::SmallEntries,
                (false, GenShape::Realistic) => Mix::Realistic,
                (false, GenShape::ImageHeavy) => Mix::ImageHeavy,
            };
            // Written as `export -o` writes: a regular file all at once, a FIFO or a
            // device (`/dev/null`, for timing) streamed into, never replaced.
            let cannot = || format!("cannot write {}", pi_session::text::escape_path(&path));
            let mut f = pi_session::OutputFile::create(&path).with_context(cannot)?;
            let st = write_session(&spec, &mut f).with_context(cannot)?;
            f.finish().with_context(cannot)?;
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
        GenCmd::Tree {
            root,
            sessions,
            folders,
            size,
            seed,
            flavor,
        } => {
            let spec = TreeSpec {
                seed,
                sessions,
                folders,
                total_bytes: parse_size(&size)?,
                start_ms: 1_735_689_600_000,
                flavor: flavor.into(),
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
            eprintln!("pi-session: {}", ls_hint(&root));
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::ls_hint;
    use std::path::Path;

    #[test]
    fn the_hint_names_the_agent_dir_of_a_sessions_root() {
        assert_eq!(
            ls_hint(Path::new("gt/sessions")),
            "list it with: pi-session ls --all --agent-dir gt"
        );
        assert_eq!(
            ls_hint(Path::new("sessions")),
            "list it with: pi-session ls --all --agent-dir ."
        );
        assert_eq!(
            ls_hint(Path::new("/tmp/my dir/sessions")),
            "list it with: pi-session ls --all --agent-dir '/tmp/my dir'"
        );
        assert!(ls_hint(Path::new("gt")).contains("generate it as DIR/sessions"));
        assert!(!ls_hint(Path::new("x\u{1b}[2J/sessions")).contains('\u{1b}'));
    }
}
