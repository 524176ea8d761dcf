//! Deterministic generator of realistic pi session files (format version 3).
//!
//! Benchmarks and tests need session files of any size that look like the
//! ones pi writes: a `session` header, then a tree of entries (user,
//! assistant, toolResult, bashExecution and system messages, model and
//! thinking-level changes, compactions, branch summaries, labels, session
//! names, custom entries, custom messages, context edits, usage entries),
//! with escape-dense tool outputs (JSON-escaped source code: `\n`, `\t`,
//! `\"`, `\\`, `\u001b`, non-ASCII and emoji as raw UTF-8) and, in the
//! [`Mix::Realistic`] and [`Mix::ImageHeavy`] mixes, multi-MB base64 images.
//!
//! Everything is derived from a seed: the same [`SessionSpec`] always gives
//! the same bytes (on the same platform: the sizes use `f64` `ln`/`exp`).
//! Only `std` is used; the random numbers come from a built-in xoshiro256**
//! generator, and the bulk text (code, prose, base64) is cut at random
//! places from pools built once per process from a fixed seed (about 25 MB,
//! ~0.1 s), so a 1 GB file takes about a second to write (Realistic; about
//! 2.5 s for SmallEntries) and the process stays under 60 MB of memory.
//!
//! Guarantees, checked by the tests and by pi 1.6.0 itself:
//! - every line is exactly what `JSON.stringify` writes for its value (key
//!   order as pi writes it, JavaScript number formatting, the same string
//!   escapes: control characters as `\u00XX`, everything else non-ASCII raw
//!   UTF-8; no lone surrogates, so `serde_json` reads every line too);
//! - entry ids are unique 8-hex strings; each `parentId` names an earlier
//!   entry, the first entry's is `null` (one tree, one root);
//! - entry timestamps strictly increase; message `timestamp`s are Unix ms;
//! - compactions keep an entry on their own path (`firstKeptEntryId`, or
//!   their own id for "retain nothing"), context edits and labels target
//!   entries on the active branch, tool results answer the tool calls of
//!   the assistant message before them;
//! - the file has exactly [`SessionSpec::target_bytes`] bytes (filler
//!   messages of computed sizes close the file; rarely up to ~150 bytes
//!   less), unless the target is below a minimal session (header, user and
//!   assistant message: about 1 KB).
//!
//! [`write_sessions_tree`] lays out many sessions the way pi stores them:
//! `ROOT/--home-user-proj-N--/<ISO time>_<uuid v7>.jsonl`, with log-normal
//! sizes, plausible modification times, names and `parentSession` links.

//!
//! The code, by role (only `std`, nothing from the rest of the crate): this file holds
//! the public items; `session.rs` the simulator and its agent loop, `entries.rs` and
//! `messages.rs` the builders of the lines it writes, `params.rs` the tables of each mix,
//! `json.rs` the `JSON.stringify`-compatible writers, `pools.rs` and `corpus.rs` the text
//! pools and what they hold, `words.rs` the vocabulary, `rng.rs` the random numbers.

mod corpus;
mod entries;
mod json;
mod messages;
mod params;
mod pools;
mod rng;
mod session;
#[cfg(test)]
mod tests;
mod words;

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

pub use crate::flavor::Flavor;
use json::{put_iso, uuid_v7};
use rng::Rng;
use session::{Extra, generate};

/// What to generate for one session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSpec {
    /// Seed of every random choice; the same spec gives the same bytes.
    pub seed: u64,
    /// Wanted file size in bytes. The result is within a few hundred bytes
    /// of it (a header plus a user and an assistant message, about 1 KB, is
    /// the smallest session written).
    pub target_bytes: u64,
    /// The header's `cwd` (also used to build tool paths).
    pub cwd: String,
    /// Which kind of content to generate.
    pub mix: Mix,
    /// The header's `timestamp`, in Unix milliseconds; entries follow it.
    pub start_ms: i64,
    /// Whose content blocks: pi's, or PiG's (`tool_use` with `input`, `thinking` with
    /// `signature`, `image` with `media_type`, and now and then an image given by `url`).
    pub flavor: Flavor,
}

impl SessionSpec {
    /// A realistic session of about `target_bytes` in `/home/user/proj`,
    /// starting 2025-12-01T09:00:00Z.
    pub fn new(seed: u64, target_bytes: u64) -> Self {
        SessionSpec {
            seed,
            target_bytes,
            cwd: "/home/user/proj".to_string(),
            mix: Mix::Realistic,
            start_ms: 1_764_579_600_000,
            flavor: Flavor::Pi,
        }
    }
}

/// The shape of the generated content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mix {
    /// The shape of real heavy sessions: about 90% of the lines are small
    /// (under 4 KB), while roughly two thirds of the bytes of a large file
    /// are base64 images (1-6 MB each, in user and toolResult content) and
    /// big escape-dense tool outputs (64 KB - 2.5 MB).
    Realistic,
    /// Only small lines (100-600 bytes each), the same entry types, no
    /// images: a file where per-line work dominates.
    SmallEntries,
    /// A long single-thread session whose current branch holds nearly all
    /// of the bytes: base64 images (1-6 MB) and big escape-dense tool
    /// outputs are ten times as frequent as in [`Mix::Realistic`], branches
    /// are rare and short, and no compaction hides them, so the leaf's
    /// context carries the images and outputs (over 80% of the file; a
    /// 1 GiB file has ~25,000 lines, ~7,000 of them context messages).
    /// The shape that makes the context build and `check` pay for every byte.
    ///
    /// ```
    /// use pi_session::generator::{Mix, SessionSpec, write_session};
    /// let spec = SessionSpec { mix: Mix::ImageHeavy, ..SessionSpec::new(3, 8 << 20) };
    /// let mut out = Vec::new();
    /// let st = write_session(&spec, &mut out).unwrap();
    /// assert!(st.images > 0 && st.compactions == 0);
    /// ```
    ImageHeavy,
}

/// Lines and bytes of one kind of line, see [`GenStats::by_kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindStats {
    /// The kind: `session` (the header), an entry type, or
    /// `message/<role>` with a suffix: `message/user+image`,
    /// `message/toolResult+image`, `message/toolResult(big)` (a tool output
    /// of 64 KB or more).
    pub kind: &'static str,
    /// Number of lines of this kind.
    pub lines: u64,
    /// Bytes of these lines, newlines included.
    pub bytes: u64,
}

/// What [`write_session`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenStats {
    /// Bytes written (the file size).
    pub bytes: u64,
    /// Lines written, the header included (every line ends with `\n`).
    pub lines: u64,
    /// Entries (lines after the header).
    pub entries: u64,
    /// `message` entries.
    pub messages: u64,
    /// Branch points: times the conversation went back to an earlier entry
    /// and continued from there (with or without a `branch_summary`).
    pub branches: u64,
    /// `compaction` entries.
    pub compactions: u64,
    /// Id of the last entry (pi's leaf after loading the file).
    pub leaf_id: String,
    /// The header's session id (a UUID v7).
    pub session_id: String,
    /// The session name pi shows: the trimmed name of the last
    /// `session_info` entry, `None` if there is none or it is empty.
    pub session_name: Option<String>,
    /// Base64 images written (`{"type":"image",...}` blocks).
    pub images: u64,
    /// Bytes of base64 image data.
    pub image_bytes: u64,
    /// The longest line, newline included.
    pub max_line_bytes: u64,
    /// The header timestamp, Unix ms.
    pub first_ms: i64,
    /// The last entry's timestamp, Unix ms (a plausible file mtime).
    pub last_ms: i64,
    /// Lines and bytes per kind of line, in a fixed order, kinds with no
    /// line left out.
    pub by_kind: Vec<KindStats>,
}

/// Writes one generated session (JSON Lines, `\n` after every line) to
/// `out`, which is written in large chunks and needs no buffering.
///
/// The header is `{"type":"session","version":3,"id":<uuid v7>,...}`; the
/// entries form one tree rooted at the first entry. Errors are those of
/// `out`.
pub fn write_session<W: Write>(spec: &SessionSpec, out: W) -> io::Result<GenStats> {
    generate(spec, &Extra::default(), out)
}

/// What to generate for a folder tree of sessions, see
/// [`write_sessions_tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSpec {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of session files.
    pub sessions: usize,
    /// Number of project folders (`--home-user-proj-N--`), at least 1.
    pub folders: usize,
    /// Wanted total size of all files, in bytes.
    pub total_bytes: u64,
    /// Creation time of the first session, Unix ms; the others follow over
    /// about three months.
    pub start_ms: i64,
    /// Whose content blocks (see [`SessionSpec::flavor`]).
    pub flavor: Flavor,
}

/// One file written by [`write_sessions_tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Path of the file (under the root given).
    pub path: PathBuf,
    /// The header's `cwd`.
    pub cwd: String,
    /// The header's session id.
    pub session_id: String,
    /// The header's `parentSession`, if any (an absolute path of an earlier
    /// file in the same folder).
    pub parent_session: Option<String>,
    /// The session name pi shows, if any.
    pub name: Option<String>,
    /// File size.
    pub bytes: u64,
    /// `message` entries.
    pub messages: u64,
    /// Header time, Unix ms.
    pub created_ms: i64,
    /// The file mtime that was set, Unix ms (shortly after the last entry).
    pub modified_ms: i64,
}

/// What [`write_sessions_tree`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStats {
    /// Files written.
    pub sessions: usize,
    /// Folders that received at least one file.
    pub folders: usize,
    /// Total bytes written.
    pub bytes: u64,
    /// Every file, in creation-time order.
    pub files: Vec<TreeFile>,
}

/// Writes `spec.sessions` session files under `root`, laid out the way pi
/// stores sessions: `root/--home-user-proj-N--/<ISO time>_<uuid>.jsonl`
/// (the ISO time with `:` and `.` replaced by `-`), so that `root` can serve
/// as `<agent dir>/sessions`.
///
/// Sizes are log-normal (most sessions are tens to hundreds of KB, a few are
/// tens of MB) and scaled so their sum is about `spec.total_bytes`; project
/// folders get Zipf-like shares of the sessions; about half of the sessions
/// have a `session_info` name and a few percent a `parentSession` header
/// naming an earlier file of the same folder. Each file's mtime is set
/// shortly after its last entry. `root` and the folders are created as
/// needed; existing files with the same names are overwritten.
pub fn write_sessions_tree(spec: &TreeSpec, root: &Path) -> io::Result<TreeStats> {
    fs::create_dir_all(root)?;
    let root_abs = std::path::absolute(root)?;
    let mut rng = Rng::new(spec.seed ^ 0x7EE5_5EED_0000_0001);
    let n = spec.sessions;
    let nf = spec.folders.max(1);
    let mut stats = TreeStats {
        sessions: 0,
        folders: 0,
        bytes: 0,
        files: Vec::with_capacity(n),
    };
    if n == 0 {
        return Ok(stats);
    }

    // Sizes: a floor per session plus log-normal shares of the rest.
    let floor: u64 = 1_400;
    let weights: Vec<f64> = (0..n).map(|_| (1.9 * rng.normal()).exp()).collect();
    let wsum: f64 = weights.iter().sum();
    let spare = spec.total_bytes.saturating_sub(floor * n as u64) as f64;
    let sizes: Vec<u64> = weights
        .iter()
        .map(|w| {
            if spare > 0.0 {
                floor + (spare * w / wsum) as u64
            } else {
                (spec.total_bytes / n as u64).max(200)
            }
        })
        .collect();

    // Creation times over ~90 days, sorted.
    let span = 90 * 86_400_000i64;
    let mut starts: Vec<i64> = (0..n)
        .map(|_| spec.start_ms + (rng.f64() * span as f64) as i64)
        .collect();
    starts.sort_unstable();
    if let Some(s) = starts.first_mut() {
        *s = spec.start_ms;
    }

    // Folder weights: Zipf-like, over a shuffled order.
    let mut order: Vec<usize> = (0..nf).collect();
    for i in (1..nf).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let fweights: Vec<f64> = (0..nf).map(|i| 1.0 / ((i + 1) as f64).powf(0.9)).collect();
    let fsum: f64 = fweights.iter().sum();
    let mut used = vec![false; nf];
    let mut prev_in_folder: Vec<Vec<String>> = vec![Vec::new(); nf];

    for (i, (&size, &start_ms)) in sizes.iter().zip(&starts).enumerate() {
        let folder = if i < nf && n >= nf {
            // Every folder gets one session early on, in shuffled order.
            order[i]
        } else {
            let mut x = rng.f64() * fsum;
            let mut k = nf - 1;
            for (j, w) in fweights.iter().enumerate() {
                if x < *w {
                    k = j;
                    break;
                }
                x -= w;
            }
            order[k]
        };
        let cwd = format!("/home/user/proj-{folder}");
        let dir_name = format!("--{}--", cwd.trim_start_matches('/').replace('/', "-"));
        let dir = root.join(&dir_name);
        if !used[folder] {
            fs::create_dir_all(&dir)?;
            used[folder] = true;
            stats.folders += 1;
        }
        let mut srng = Rng::new(rng.next());
        let session_id = uuid_v7(start_ms, &mut srng);
        let parent_session = if !prev_in_folder[folder].is_empty() && rng.chance(0.05) {
            let list = &prev_in_folder[folder];
            Some(list[rng.below(list.len() as u64) as usize].clone())
        } else {
            None
        };
        let mut iso = Vec::with_capacity(24);
        put_iso(&mut iso, start_ms);
        let file_ts: String = String::from_utf8_lossy(&iso).replace([':', '.'], "-");
        let file_name = format!("{file_ts}_{session_id}.jsonl");
        let path = dir.join(&file_name);
        let sspec = SessionSpec {
            seed: srng.next(),
            target_bytes: size,
            cwd: cwd.clone(),
            mix: Mix::Realistic,
            start_ms,
            flavor: spec.flavor,
        };
        let extra = Extra {
            session_id: Some(session_id.clone()),
            parent_session: parent_session.clone(),
            name_chance: Some(0.5),
        };
        let file = create_regular(&path)?;
        let st = generate(&sspec, &extra, &file)?;
        let modified_ms = st.last_ms + 20 + rng.below(900) as i64;
        file.set_modified(UNIX_EPOCH + Duration::from_millis(modified_ms.max(0) as u64))?;
        drop(file);
        prev_in_folder[folder].push(root_abs.join(&dir_name).join(&file_name).to_string_lossy().into_owned());
        stats.sessions += 1;
        stats.bytes += st.bytes;
        stats.files.push(TreeFile {
            path,
            cwd,
            session_id,
            parent_session,
            name: st.session_name,
            bytes: st.bytes,
            messages: st.messages,
            created_ms: start_ms,
            modified_ms,
        });
    }
    Ok(stats)
}

/// `path` created or emptied for a generated session, as `File::create` would, except that
/// what is there already must be a regular file: a FIFO, a device or a symlink at the name
/// is refused, never written into or truncated (the open does not block on a FIFO, and the
/// type is checked on the opened descriptor).
fn create_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Refused before any open (which would wake a FIFO's reader); checked again on the
    // descriptor below.
    if let Ok(m) = fs::symlink_metadata(path)
        && !m.is_file()
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a regular file; left as it is", path.display()),
        ));
    }
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::NOFOLLOW;
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a regular file; left as it is", path.display()),
        ));
    }
    file.set_len(0)?;
    Ok(file)
}
