//! Deterministic generator of realistic pi session files (format version 3).
//!
//! Benchmarks and tests need session files of any size that look like the
//! ones pi writes: a `session` header, then a tree of entries (user,
//! assistant, toolResult, bashExecution and system messages, model and
//! thinking-level changes, compactions, branch summaries, labels, session
//! names, custom entries, custom messages, context edits, usage entries),
//! with escape-dense tool outputs (JSON-escaped source code: `\n`, `\t`,
//! `\"`, `\\`, `\u001b`, non-ASCII and emoji as raw UTF-8) and, in the
//! [`Mix::Realistic`] mix, multi-MB base64 images.
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

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

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
        };
        let extra = Extra {
            session_id: Some(session_id.clone()),
            parent_session: parent_session.clone(),
            name_chance: Some(0.5),
        };
        let file = File::create(&path)?;
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

// ---------------------------------------------------------------------------
// Random numbers: xoshiro256** seeded by splitmix64
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    fn new(seed: u64) -> Self {
        let mut x = seed;
        Rng {
            s: [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)],
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    #[inline]
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    #[inline]
    fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    #[inline]
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal with the given median, clamped to `lo..=hi`.
    fn lognormal(&mut self, median: f64, sigma: f64, lo: usize, hi: usize) -> usize {
        let v = median * (sigma * self.normal()).exp();
        (v as usize).clamp(lo, hi)
    }

    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.f64() * (hi.ln() - lo.ln())).exp()
    }

    /// Number of failures before a success of probability `p`.
    fn geometric(&mut self, p: f64) -> u64 {
        let u = 1.0 - self.f64();
        (u.ln() / (1.0 - p).ln()) as u64
    }
}

// ---------------------------------------------------------------------------
// JSON writing helpers (JSON.stringify-compatible output)
// ---------------------------------------------------------------------------

const HEX: &[u8; 16] = b"0123456789abcdef";
const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

#[inline]
fn put(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(s.as_bytes());
}

fn put_u64(b: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    b.extend_from_slice(&tmp[i..]);
}

fn put_i64(b: &mut Vec<u8>, v: i64) {
    if v < 0 {
        b.push(b'-');
    }
    put_u64(b, v.unsigned_abs());
}

/// A finite number the way JavaScript's `String(number)` prints it.
fn put_f64(b: &mut Vec<u8>, v: f64) {
    if v == 0.0 || !v.is_finite() {
        b.push(b'0');
        return;
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        put_i64(b, v as i64);
    } else if (1e-6..1e21).contains(&a) {
        let _ = write!(VecFmt(b), "{v}");
    } else {
        // Exponent form: Rust prints `1.5e-7`, JavaScript `1.5e-7` too
        // (positive exponents never occur here).
        let _ = write!(VecFmt(b), "{v:e}");
    }
}

struct VecFmt<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecFmt<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The inside of a JSON string, escaped as `JSON.stringify` escapes it.
fn put_esc(b: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let e: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                b.extend_from_slice(&bytes[start..i]);
                b.extend_from_slice(b"\\u00");
                b.push(HEX[(c >> 4) as usize]);
                b.push(HEX[(c & 15) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        b.extend_from_slice(&bytes[start..i]);
        b.extend_from_slice(e);
        start = i + 1;
    }
    b.extend_from_slice(&bytes[start..]);
}

/// A JSON string.
fn put_str(b: &mut Vec<u8>, s: &str) {
    b.push(b'"');
    put_esc(b, s);
    b.push(b'"');
}

fn put_id(b: &mut Vec<u8>, id: u32) {
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = HEX[((id >> (28 - 4 * i)) & 15) as usize];
    }
    b.extend_from_slice(&out);
}

fn id_string(id: u32) -> String {
    format!("{id:08x}")
}

fn put_hex(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        b.push(HEX[rng.below(16) as usize]);
    }
}

fn put_alnum(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        b.push(ALNUM[rng.below(62) as usize]);
    }
}

/// `n` random base64 characters (`n` rounded up to a multiple of 4).
fn put_b64_random(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    let mut left = n.div_ceil(4) * 4;
    while left > 0 {
        let v = rng.next();
        let k = left.min(8);
        for i in 0..k {
            b.push(B64[((v >> (6 * i)) & 63) as usize]);
        }
        left -= k;
    }
}

/// Standard base64 with padding.
fn b64_encode(b: &mut Vec<u8>, data: &[u8]) {
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let v = (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32;
        b.extend_from_slice(&[
            B64[(v >> 18) as usize & 63],
            B64[(v >> 12) as usize & 63],
            B64[(v >> 6) as usize & 63],
            B64[v as usize & 63],
        ]);
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        let v = (r[0] as u32) << 16 | (*r.get(1).unwrap_or(&0) as u32) << 8;
        b.push(B64[(v >> 18) as usize & 63]);
        b.push(B64[(v >> 12) as usize & 63]);
        b.push(if r.len() == 2 {
            B64[(v >> 6) as usize & 63]
        } else {
            b'='
        });
        b.push(b'=');
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe as i64 + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as `Date.prototype.toISOString` writes it
/// (years 0-9999).
fn put_iso(b: &mut Vec<u8>, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    let y = y.clamp(0, 9999) as u32;
    let two = |b: &mut Vec<u8>, v: u32| {
        b.push(b'0' + (v / 10) as u8);
        b.push(b'0' + (v % 10) as u8);
    };
    two(b, y / 100);
    two(b, y % 100);
    b.push(b'-');
    two(b, mo);
    b.push(b'-');
    two(b, d);
    b.push(b'T');
    two(b, h as u32);
    b.push(b':');
    two(b, mi as u32);
    b.push(b':');
    two(b, s as u32);
    b.push(b'.');
    b.push(b'0' + (milli / 100) as u8);
    two(b, (milli % 100) as u32);
    b.push(b'Z');
}

fn uuid_v7(ms: i64, rng: &mut Rng) -> String {
    let ms = ms.max(0) as u64 & 0xFFFF_FFFF_FFFF;
    let ra = rng.next();
    let rb = rng.next();
    let hi = (ms << 16) | 0x7000 | (ra & 0x0FFF);
    let lo = (rb & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}

// ---------------------------------------------------------------------------
// Text pools: pre-escaped JSON string content, cut at safe boundaries
// ---------------------------------------------------------------------------

/// JSON-escaped text (the inside of a JSON string) with the offsets where a
/// line or sentence starts, and a bitmap of every offset where the text may
/// be cut (not inside an escape sequence or a UTF-8 character).
struct TextPool {
    data: Vec<u8>,
    starts: Vec<u32>,
    safe: Vec<u64>,
    /// Per [`Class`]: segments of one kind of text, as (index of the first
    /// line in `starts`, number of lines).
    segs: [Vec<(u32, u32)>; 3],
}

/// Kinds of text in the code pool.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Source files: TypeScript, Rust, Python, JSON, Markdown.
    Code = 0,
    /// Command output: test runners, compilers, `ls`, `git log`, warnings.
    Shell = 1,
    /// `path:line:text` search results.
    Grep = 2,
}

impl TextPool {
    #[inline]
    fn is_safe(&self, i: usize) -> bool {
        self.safe[i >> 6] >> (i & 63) & 1 == 1
    }

    /// Largest safe offset `<= i`.
    fn safe_floor(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_safe(i) {
            i -= 1;
        }
        i
    }

    /// Appends about `len` bytes (at most `len`, at least `len - 6` when
    /// `len` is not tiny) cut from random places of the pool, each piece
    /// starting at a line start.
    fn put(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize) -> usize {
        let mut left = len;
        let total = self.data.len();
        while left > 0 {
            let take = left.min(total / 2);
            let mut start = self.starts[rng.below(self.starts.len() as u64) as usize] as usize;
            if start + take > total {
                // Too close to the end: pick among the starts at or before
                // `total - take`.
                let lim = self.starts.partition_point(|&s| s as usize <= total - take);
                start = self.starts[rng.below(lim.max(1) as u64) as usize] as usize;
            }
            let end = self.safe_floor(start + take);
            if end <= start {
                break;
            }
            b.extend_from_slice(&self.data[start..end]);
            left -= end - start;
            if end - start < take {
                break;
            }
        }
        len - left
    }

    /// Like [`TextPool::put`], but starting in a segment of the given class
    /// (at its top half of the time, like a file read from the start).
    fn put_class(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize, class: Class) -> usize {
        let segs = &self.segs[class as usize];
        let total = self.data.len();
        if segs.is_empty() || len >= total / 2 {
            return self.put(b, rng, len);
        }
        let (first, n) = segs[rng.below(segs.len() as u64) as usize];
        let line = if rng.chance(0.5) {
            first
        } else {
            first + rng.below(u64::from(n)) as u32
        };
        let start = self.starts[line as usize] as usize;
        if start + len > total {
            return self.put(b, rng, len);
        }
        let end = self.safe_floor(start + len);
        b.extend_from_slice(&self.data[start..end]);
        end - start
    }

    /// Appends exactly `len` bytes: pool text padded with `.`.
    fn put_exact(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize) {
        let n = self.put(b, rng, len);
        b.resize(b.len() + (len - n), b'.');
    }
}

struct PoolBuilder {
    data: Vec<u8>,
    starts: Vec<u32>,
    safe: Vec<u64>,
    segs: [Vec<(u32, u32)>; 3],
}

impl PoolBuilder {
    fn new(cap: usize) -> Self {
        let mut p = PoolBuilder {
            data: Vec::with_capacity(cap + 4096),
            starts: Vec::new(),
            safe: Vec::new(),
            segs: [Vec::new(), Vec::new(), Vec::new()],
        };
        p.mark();
        p
    }

    fn mark(&mut self) {
        let i = self.data.len();
        if i >> 6 >= self.safe.len() {
            self.safe.resize((i >> 6) + 1, 0);
        }
        self.safe[i >> 6] |= 1 << (i & 63);
    }

    /// Appends `s` escaped, as one piece (a line or sentence start).
    fn piece(&mut self, s: &str) {
        self.starts.push(self.data.len() as u32);
        let mut tmp = [0u8; 4];
        for ch in s.chars() {
            let c = ch as u32;
            if c < 0x80 {
                let one = [c as u8];
                put_esc(&mut self.data, std::str::from_utf8(&one).unwrap_or_default());
            } else {
                self.data.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
            }
            self.mark();
        }
    }

    /// Appends a line: `s` and a newline.
    fn line(&mut self, s: &str) {
        self.piece(s);
        self.data.extend_from_slice(b"\\n");
        self.mark();
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    /// Records the pieces added since `first` (an index into `starts`) as
    /// one segment of `class`.
    fn segment(&mut self, first: usize, class: Class) {
        let n = self.starts.len() - first;
        if n > 0 {
            self.segs[class as usize].push((first as u32, n as u32));
        }
    }

    fn finish(self) -> TextPool {
        TextPool {
            data: self.data,
            starts: self.starts,
            safe: self.safe,
            segs: self.segs,
        }
    }
}

const CODE_POOL_BYTES: usize = 6 << 20;
const PROSE_POOL_BYTES: usize = 3 << 20;
const B64_POOL_BYTES: usize = 16 << 20;

fn code_pool() -> &'static TextPool {
    static POOL: OnceLock<TextPool> = OnceLock::new();
    POOL.get_or_init(|| build_code_pool(CODE_POOL_BYTES))
}

fn prose_pool() -> &'static TextPool {
    static POOL: OnceLock<TextPool> = OnceLock::new();
    POOL.get_or_init(|| build_prose_pool(PROSE_POOL_BYTES))
}

/// Random base64 (length a multiple of 4), built on first use.
fn b64_pool() -> &'static [u8] {
    static POOL: OnceLock<Vec<u8>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut rng = Rng::new(0xB64_B64_B64);
        let mut v = Vec::with_capacity(B64_POOL_BYTES);
        put_b64_random(&mut v, &mut rng, B64_POOL_BYTES);
        v
    })
}

// Vocabulary for synthetic code and prose.
const WORDS: &[&str] = &[
    "session",
    "entry",
    "parent",
    "leaf",
    "branch",
    "context",
    "message",
    "tool",
    "result",
    "index",
    "buffer",
    "line",
    "offset",
    "reader",
    "writer",
    "token",
    "usage",
    "model",
    "provider",
    "config",
    "path",
    "file",
    "cache",
    "tree",
    "node",
    "child",
    "label",
    "summary",
    "compaction",
    "header",
    "stream",
    "chunk",
    "parser",
    "value",
    "error",
    "state",
    "event",
    "handler",
    "render",
    "editor",
    "theme",
    "footer",
    "queue",
    "agent",
    "prompt",
    "thinking",
    "level",
    "signature",
    "image",
    "data",
    "cursor",
    "span",
    "scratch",
    "pool",
    "stats",
    "count",
    "bytes",
    "digest",
    "hash",
    "store",
    "settings",
    "manager",
    "loader",
    "watcher",
    "timer",
    "retry",
    "limit",
    "window",
    "frame",
    "layout",
    "widget",
    "command",
    "shell",
    "process",
    "output",
    "input",
    "status",
    "response",
    "request",
    "client",
    "server",
    "socket",
    "channel",
    "schema",
    "range",
    "slice",
    "block",
    "map",
];
const VERBS: &[&str] = &[
    "get",
    "set",
    "build",
    "parse",
    "load",
    "save",
    "read",
    "write",
    "find",
    "update",
    "create",
    "delete",
    "handle",
    "render",
    "apply",
    "compute",
    "resolve",
    "validate",
    "append",
    "flush",
    "open",
    "close",
    "scan",
    "collect",
    "emit",
    "format",
    "normalize",
    "merge",
    "split",
    "track",
    "reset",
    "init",
    "dispose",
    "subscribe",
    "notify",
    "select",
    "toggle",
    "cycle",
    "expand",
    "migrate",
    "index",
    "walk",
];
const TS_TYPES: &[&str] = &[
    "string",
    "number",
    "boolean",
    "void",
    "unknown",
    "SessionEntry",
    "AgentMessage",
    "Message[]",
    "Promise<void>",
    "Map<string, SessionEntry>",
    "Record<string, unknown>",
    "Uint8Array",
    "ToolCall",
    "Usage",
    "string | undefined",
    "ReadonlyArray<Entry>",
    "TreeNode | null",
];
const RS_TYPES: &[&str] = &[
    "&str",
    "String",
    "usize",
    "u64",
    "u32",
    "Vec<u8>",
    "Option<&Entry>",
    "Result<(), Error>",
    "&[u8]",
    "HashMap<u32, usize>",
    "Box<dyn Write>",
    "Cow<'a, str>",
    "Span",
    "Option<Span>",
    "io::Result<usize>",
];
const MODULES: &[&str] = &[
    "node:fs",
    "node:path",
    "node:crypto",
    "node:os",
    "node:readline",
    "./session-manager.js",
    "../core/agent.js",
    "./messages.js",
    "../tools/truncate.js",
    "@earendil-works/pi-ai",
    "@earendil-works/pi-tui",
    "chalk",
    "zod",
    "vitest",
    "./theme/theme.js",
    "../config.js",
];
const UNI: &[&str] = &[
    "→",
    "—",
    "é",
    "ü",
    "✓",
    "✗",
    "…",
    "•",
    "±",
    "°",
    "✅",
    "🚀",
    "🎉",
    "🐛",
    "⚠️",
    "📦",
    "中文注释",
    "日本語",
    "Привет",
    "naïve",
    "café",
    "Ωmega",
    "λ",
    "∑",
    "👋",
    "🔥",
    "ß",
    "Ø",
    "€",
    "½",
];
const DIRS: &[&str] = &[
    "src",
    "src/core",
    "src/tools",
    "src/tui",
    "src/modes",
    "packages/agent/src",
    "packages/ai/src",
    "packages/tui/src",
    "tests",
    "docs",
    "scripts",
    "src/util",
    "crates/core/src",
    "lib",
];
const EXTS: &[&str] = &[
    "ts", "ts", "ts", "rs", "rs", "md", "json", "py", "tsx", "js", "toml", "sh",
];
const LANGS: &[&str] = &["typescript", "ts", "rust", "bash", "json", "python", ""];

fn cap_first(s: &mut String, w: &str) {
    let mut c = w.chars();
    if let Some(f) = c.next() {
        s.extend(f.to_uppercase());
        s.push_str(c.as_str());
    }
}

fn camel(r: &mut Rng, s: &mut String, upper: bool) {
    let n = r.range(1, 3);
    for i in 0..n {
        let w = if i == 0 && n > 1 && !upper {
            r.pick(VERBS)
        } else {
            r.pick(WORDS)
        };
        if i == 0 && !upper {
            s.push_str(w);
        } else {
            cap_first(s, w);
        }
    }
}

fn snake(r: &mut Rng, s: &mut String) {
    let n = r.range(1, 3);
    for i in 0..n {
        if i > 0 {
            s.push('_');
        }
        s.push_str(if i == 0 && n > 1 { r.pick(VERBS) } else { r.pick(WORDS) });
    }
}

/// A short path for small lines: `src/<word>.<ext>`.
fn short_path(r: &mut Rng, s: &mut String) {
    s.push_str(r.pick(&DIRS[..5]));
    s.push('/');
    s.push_str(r.pick(WORDS));
    s.push('.');
    s.push_str(r.pick(&EXTS[..5]));
}

fn rel_path(r: &mut Rng, s: &mut String) {
    s.push_str(r.pick(DIRS));
    s.push('/');
    let w = r.pick(WORDS);
    s.push_str(w);
    if r.chance(0.5) {
        s.push('-');
        s.push_str(r.pick(WORDS));
    }
    s.push('.');
    s.push_str(r.pick(EXTS));
}

fn short_str(r: &mut Rng, s: &mut String) {
    match r.below(6) {
        0 => {
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(UNI));
        }
        1 => {
            s.push_str(r.pick(VERBS));
            s.push_str(": ");
            s.push_str(r.pick(WORDS));
        }
        2 => rel_path(r, s),
        _ => {
            s.push_str(r.pick(WORDS));
            s.push('-');
            s.push_str(r.pick(WORDS));
        }
    }
}

fn tabs(s: &mut String, n: usize) {
    for _ in 0..n {
        s.push('\t');
    }
}

fn ts_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..r.range(1, 6) {
        s.clear();
        s.push_str("import { ");
        for k in 0..r.range(1, 4) {
            if k > 0 {
                s.push_str(", ");
            }
            if r.chance(0.3) {
                s.push_str("type ");
            }
            camel(r, s, true);
        }
        let _ = write!(s, " }} from \"{}\";", r.pick(MODULES));
        p.line(s);
    }
    p.line("");
    let mut depth = 0usize;
    for _ in 0..n {
        s.clear();
        if depth == 0 {
            match r.below(4) {
                0 => {
                    s.push_str("export class ");
                    camel(r, s, true);
                    s.push_str(" {");
                }
                1 => {
                    s.push_str("export async function ");
                    camel(r, s, false);
                    s.push('(');
                    camel(r, s, false);
                    let _ = write!(s, ": {}, ", r.pick(TS_TYPES));
                    camel(r, s, false);
                    let _ = write!(s, ": {}): {} {{", r.pick(TS_TYPES), r.pick(TS_TYPES));
                }
                2 => {
                    s.push_str("const ");
                    camel(r, s, false);
                    s.push_str(" = (");
                    camel(r, s, false);
                    let _ = write!(s, ": {}) => {{", r.pick(TS_TYPES));
                }
                _ => {
                    s.push_str("/**\n * ");
                    s.push_str(r.pick(VERBS));
                    s.push_str(" the ");
                    s.push_str(r.pick(WORDS));
                    s.push_str(" for the current ");
                    s.push_str(r.pick(WORDS));
                    s.push_str(".\n */");
                    // A doc comment is several lines; split them.
                    for l in s.clone().split('\n') {
                        p.line(l);
                    }
                    continue;
                }
            }
            depth = 1;
            p.line(s);
            continue;
        }
        let k = r.below(100);
        if depth > 5 || (k < 12 && depth > 1) || k < 4 {
            tabs(s, depth - 1);
            s.push_str(r.pick(&["}", "}", "});", "};", "}"]));
            depth -= 1;
            p.line(s);
            if depth == 0 {
                p.line("");
            }
            continue;
        }
        tabs(s, depth);
        match k {
            16..=27 => {
                s.push_str("const ");
                camel(r, s, false);
                s.push_str(" = await this.");
                camel(r, s, false);
                s.push('(');
                camel(r, s, false);
                s.push_str(", \"");
                short_str(r, s);
                s.push_str("\");");
            }
            28..=35 => {
                s.push_str("if (!");
                camel(r, s, false);
                s.push_str(") {");
                depth += 1;
            }
            36..=41 => {
                s.push_str("for (const ");
                camel(r, s, false);
                s.push_str(" of this.");
                camel(r, s, false);
                s.push_str("s) {");
                depth += 1;
            }
            42..=47 => {
                s.push_str("throw new Error(`Failed to ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(": ${");
                camel(r, s, false);
                s.push_str("}`);");
            }
            48..=54 => {
                s.push_str("// ");
                s.push_str(r.pick(VERBS));
                s.push_str(" the ");
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
                s.push(' ');
                s.push_str(r.pick(WORDS));
            }
            55..=60 => {
                camel(r, s, false);
                s.push_str(".push(`${");
                camel(r, s, false);
                s.push_str("}\\t${");
                camel(r, s, false);
                s.push_str("}\\n`);");
            }
            61..=65 => {
                s.push_str("const re = /^([A-Za-z0-9_-]+)\\.(\\d+)\\s*\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\"$/;");
            }
            66..=72 => {
                s.push_str("return { type: \"");
                s.push_str(r.pick(WORDS));
                s.push_str("\", id: ");
                camel(r, s, false);
                s.push_str(".id, parentId: ");
                camel(r, s, false);
                s.push_str(" ?? null };");
            }
            73..=77 => {
                s.push_str("case \"");
                snake(r, s);
                s.push_str("\":");
            }
            78..=83 => {
                s.push_str("const lines = text.split(\"\\n\").map((l) => l.replace(/\\t/g, \"  \"));");
            }
            84..=88 => {
                s.push_str("this.");
                camel(r, s, false);
                s.push_str(" = JSON.parse(");
                camel(r, s, false);
                s.push_str(") as ");
                s.push_str(r.pick(TS_TYPES));
                s.push(';');
            }
            89..=93 => {
                s.push_str("console.log(chalk.dim(\"");
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
                s.push_str("\"), ");
                camel(r, s, false);
                s.push_str(");");
            }
            _ => {
                s.clear();
            }
        }
        p.line(s);
    }
    while depth > 0 {
        s.clear();
        tabs(s, depth - 1);
        s.push('}');
        depth -= 1;
        p.line(s);
    }
}

fn rust_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    let mut depth = 0usize;
    let ind = |s: &mut String, d: usize| {
        for _ in 0..d {
            s.push_str("    ");
        }
    };
    for _ in 0..r.range(1, 4) {
        s.clear();
        s.push_str("use std::");
        s.push_str(r.pick(&[
            "io::{self, Write}",
            "collections::HashMap",
            "path::Path",
            "borrow::Cow",
            "fmt",
        ]));
        s.push(';');
        p.line(s);
    }
    p.line("");
    for _ in 0..n {
        s.clear();
        if depth == 0 {
            s.push_str("/// ");
            cap_first(s, r.pick(VERBS));
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" of a `");
            camel(r, s, true);
            s.push_str("`.");
            p.line(s);
            s.clear();
            s.push_str("pub fn ");
            snake(r, s);
            s.push_str("(&self, ");
            snake(r, s);
            let _ = write!(s, ": {}) -> {} {{", r.pick(RS_TYPES), r.pick(RS_TYPES));
            depth = 1;
            p.line(s);
            continue;
        }
        let k = r.below(100);
        if depth > 4 || k < 15 {
            ind(s, depth - 1);
            s.push('}');
            depth -= 1;
            p.line(s);
            if depth == 0 {
                p.line("");
            }
            continue;
        }
        ind(s, depth);
        match k {
            15..=30 => {
                s.push_str("let ");
                if r.chance(0.3) {
                    s.push_str("mut ");
                }
                snake(r, s);
                s.push_str(" = self.");
                snake(r, s);
                s.push('(');
                snake(r, s);
                s.push_str(")?;");
            }
            31..=40 => {
                s.push_str("if let Some(");
                snake(r, s);
                s.push_str(") = self.");
                snake(r, s);
                s.push_str(".get(&");
                snake(r, s);
                s.push_str(") {");
                depth += 1;
            }
            41..=48 => {
                s.push_str("match b {");
                depth += 1;
            }
            49..=56 => {
                s.push_str(r.pick(&["b'\"' => ", "b'\\\\' => ", "b'\\n' => ", "b'\\t' => ", "b'{' => "]));
                snake(r, s);
                s.push_str("(),");
            }
            57..=64 => {
                s.push_str("eprintln!(\"");
                s.push_str(r.pick(WORDS));
                s.push_str(": {:?} ");
                s.push_str(r.pick(UNI));
                s.push_str("\\n\", ");
                snake(r, s);
                s.push_str(");");
            }
            65..=72 => {
                s.push_str("// ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("s before the ");
                s.push_str(r.pick(WORDS));
            }
            73..=80 => {
                s.push_str("return Err(Error::new(\"");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("\"));");
            }
            81..=88 => {
                s.push_str("for ");
                snake(r, s);
                s.push_str(" in ");
                snake(r, s);
                s.push_str(".iter() {");
                depth += 1;
            }
            _ => {
                s.clear();
            }
        }
        p.line(s);
    }
    while depth > 0 {
        s.clear();
        ind(s, depth - 1);
        s.push('}');
        depth -= 1;
        p.line(s);
    }
}

fn shell_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    let style = [0, 0, 0, 0, 1, 1, 2, 3, 3, 4][r.below(10) as usize];
    for i in 0..n {
        s.clear();
        match style {
            0 => {
                // Test runner with ANSI colours.
                if r.chance(0.85) {
                    let _ = write!(
                        s,
                        " \u{1b}[32m✓\u{1b}[39m {} \u{1b}[2m({} tests)\u{1b}[22m \u{1b}[33m{}ms\u{1b}[39m",
                        {
                            let mut t = String::new();
                            rel_path(r, &mut t);
                            t
                        },
                        r.range(1, 80),
                        r.range(1, 3000)
                    );
                } else {
                    let _ = write!(
                        s,
                        " \u{1b}[31m✗\u{1b}[39m {} {} \u{1b}[2m>\u{1b}[22m expected \"{}\" to equal \"{}\"",
                        r.pick(VERBS),
                        r.pick(WORDS),
                        r.pick(WORDS),
                        r.pick(WORDS)
                    );
                }
            }
            1 => {
                // Compiler errors.
                match i % 5 {
                    0 => {
                        let _ = write!(s, "error[E0{}]: mismatched types", r.range(200, 799));
                    }
                    1 => {
                        s.push_str("  --> ");
                        rel_path(r, s);
                        let _ = write!(s, ":{}:{}", r.range(1, 2000), r.range(1, 80));
                    }
                    2 => s.push_str("   |"),
                    3 => {
                        let _ = write!(s, "{} |     let ", r.range(10, 999));
                        snake(r, s);
                        let _ = write!(s, ": {} = ", r.pick(RS_TYPES));
                        snake(r, s);
                        s.push_str("(&buf[..n]);");
                    }
                    _ => {
                        let _ = write!(
                            s,
                            "   |              ^^^^ expected `{}`, found `{}`",
                            r.pick(RS_TYPES),
                            r.pick(RS_TYPES)
                        );
                    }
                }
            }
            2 => {
                let _ = write!(
                    s,
                    "-rw-r--r--  1 user  staff  {:>7} Nov {:>2} {:02}:{:02} ",
                    r.range(0, 400_000),
                    r.range(1, 30),
                    r.range(0, 23),
                    r.range(0, 59)
                );
                let color = r.chance(0.6);
                if color {
                    s.push_str("\u{1b}[01;34m");
                }
                s.push_str(r.pick(WORDS));
                s.push('.');
                s.push_str(r.pick(EXTS));
                if color {
                    s.push_str("\u{1b}[0m");
                }
            }
            3 => {
                s.push_str("\u{1b}[33m");
                for _ in 0..7 {
                    s.push(HEX[r.below(16) as usize] as char);
                }
                s.push_str("\u{1b}[m");
                s.push(' ');
                cap_first(s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(" handling in ");
                rel_path(r, s);
                if r.chance(0.2) {
                    s.push(' ');
                    s.push_str(r.pick(UNI));
                }
            }
            _ => {
                s.push_str(r.pick(&["npm warn ", "warning: ", "info: ", "\u{1b}[1m\u{1b}[33mwarn\u{1b}[0m "]));
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(" \"");
                rel_path(r, s);
                s.push('"');
                if r.chance(0.05) {
                    s.push('\r');
                }
                if r.chance(0.02) {
                    s.push_str("\u{7}\u{8}\u{c}\u{0}");
                }
            }
        }
        p.line(s);
    }
}

fn grep_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        rel_path(r, s);
        let _ = write!(s, ":{}:", r.range(1, 3000));
        tabs(s, r.range(0, 3) as usize);
        match r.below(3) {
            0 => {
                s.push_str("const ");
                camel(r, s, false);
                s.push_str(" = \"");
                short_str(r, s);
                s.push_str("\";");
            }
            1 => {
                s.push_str("if (entry.type === \"");
                snake(r, s);
                s.push_str("\") {");
            }
            _ => {
                camel(r, s, false);
                s.push_str("(\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\\n\");");
            }
        }
        p.line(s);
    }
}

fn json_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    p.line("{");
    let mut depth = 1usize;
    for _ in 0..n {
        s.clear();
        tabs(s, depth);
        let k = r.below(10);
        if depth > 1 && k < 2 {
            s.pop();
            s.push_str("},");
            depth -= 1;
        } else if k < 3 && depth < 4 {
            s.push('"');
            camel(r, s, false);
            s.push_str("\": {");
            depth += 1;
        } else if k < 7 {
            s.push('"');
            camel(r, s, false);
            s.push_str("\": \"");
            short_str(r, s);
            s.push_str("\",");
        } else {
            s.push('"');
            camel(r, s, false);
            let _ = write!(s, "\": {},", r.range(0, 100_000));
        }
        p.line(s);
    }
    while depth > 0 {
        s.clear();
        tabs(s, depth - 1);
        s.push('}');
        depth -= 1;
        p.line(s);
    }
}

fn python_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        match r.below(8) {
            0 => {
                s.push_str("def ");
                snake(r, s);
                s.push_str("(self, ");
                snake(r, s);
                s.push_str(": str) -> dict:");
            }
            1 => {
                s.push_str("    return f\"{");
                snake(r, s);
                s.push_str("!r} \\t {");
                snake(r, s);
                s.push_str("}\"");
            }
            2 => {
                s.push_str("        raise ValueError(\"invalid ");
                s.push_str(r.pick(WORDS));
                s.push_str(": %s\" % ");
                snake(r, s);
                s.push(')');
            }
            3 => {
                s.push_str("    ");
                snake(r, s);
                s.push_str(" = json.loads(line.rstrip(\"\\n\"))");
            }
            4 => {
                s.push_str("    # ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
            }
            5 => {
                s.push_str("    for ");
                snake(r, s);
                s.push_str(" in self.");
                snake(r, s);
                s.push(':');
            }
            _ => {
                s.push_str("        ");
                snake(r, s);
                s.push_str("[\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\"] = ");
                snake(r, s);
            }
        }
        p.line(s);
    }
}

fn markdown_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        match r.below(7) {
            0 => {
                s.push_str("## ");
                cap_first(s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
            }
            1 | 2 => {
                s.push_str("- `");
                camel(r, s, false);
                s.push_str("()` — ");
                s.push_str(r.pick(VERBS));
                s.push_str("s the ");
                s.push_str(r.pick(WORDS));
            }
            3 => {
                s.push_str("| `");
                s.push_str(r.pick(WORDS));
                s.push_str("` | ");
                s.push_str(r.pick(VERBS));
                s.push_str(" | ");
                s.push_str(r.pick(UNI));
                s.push_str(" |");
            }
            _ => {
                cap_first(s, r.pick(WORDS));
                s.push_str(" entries go through `");
                s.push_str(r.pick(VERBS));
                s.push_str("()` when the \"");
                s.push_str(r.pick(WORDS));
                s.push_str("\" option is set.");
            }
        }
        p.line(s);
    }
}

fn build_code_pool(size: usize) -> TextPool {
    let mut r = Rng::new(0xC0DE_C0DE_5EED);
    let mut p = PoolBuilder::new(size);
    let mut s = String::new();
    while p.len() < size {
        let n = r.range(15, 160) as usize;
        let first = p.starts.len();
        let class = match r.below(100) {
            0..=44 => {
                ts_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            45..=56 => {
                rust_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            57..=71 => {
                shell_block(&mut r, &mut p, n, &mut s);
                Class::Shell
            }
            72..=79 => {
                grep_block(&mut r, &mut p, n, &mut s);
                Class::Grep
            }
            80..=91 => {
                json_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            92..=95 => {
                python_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            _ => {
                markdown_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
        };
        p.segment(first, class);
    }
    p.finish()
}

fn sentence(r: &mut Rng, s: &mut String) {
    const OPENERS: &[&str] = &[
        "I'll",
        "Let me",
        "Now I'll",
        "The problem is that we",
        "It looks like we",
        "Looking at this, we",
        "We should",
        "This means we",
        "Next, I'll",
        "Finally, we",
        "Note that we",
        "Perfect! Now let me",
        "Good, now I'll",
        "Hmm, we still",
        "OK so we",
        "First I need to",
        "Then we",
    ];
    s.push_str(r.pick(OPENERS));
    s.push(' ');
    s.push_str(r.pick(VERBS));
    match r.below(6) {
        0 => {
            s.push_str(" the `");
            camel(r, s, false);
            s.push_str("` ");
            s.push_str(r.pick(WORDS));
        }
        1 => {
            s.push(' ');
            rel_path(r, s);
        }
        2 => {
            s.push_str(" the \"");
            s.push_str(r.pick(WORDS));
            s.push_str("\" ");
            s.push_str(r.pick(WORDS));
            s.push_str(" handling");
        }
        _ => {
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
        }
    }
    match r.below(6) {
        0 => {
            s.push_str(" so that `");
            camel(r, s, false);
            s.push_str("()` ");
            s.push_str(r.pick(VERBS));
            s.push_str("s the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" correctly");
        }
        1 => {
            s.push_str(" — ");
            s.push_str(r.pick(WORDS));
            s.push_str(" first, then ");
            s.push_str(r.pick(WORDS));
        }
        2 => {
            s.push_str(" → ");
            s.push_str(r.pick(UNI));
        }
        3 => {
            s.push_str(" before we ");
            s.push_str(r.pick(VERBS));
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" and the ");
            s.push_str(r.pick(WORDS));
        }
        _ => {}
    }
    s.push('.');
}

fn build_prose_pool(size: usize) -> TextPool {
    let mut r = Rng::new(0x9405_E5EE_D000);
    let mut p = PoolBuilder::new(size);
    let mut s = String::new();
    let mut code = String::new();
    while p.len() < size {
        s.clear();
        match r.below(100) {
            0..=54 => {
                sentence(&mut r, &mut s);
                s.push_str(if r.chance(0.25) { "\n\n" } else { " " });
            }
            55..=61 => {
                s.push_str("## ");
                cap_first(&mut s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("\n\n");
            }
            62..=76 => {
                s.push_str("- **");
                cap_first(&mut s, r.pick(WORDS));
                s.push_str("**: ");
                sentence(&mut r, &mut s);
                s.push('\n');
            }
            77..=83 => {
                let _ = write!(s, "{}. ", r.range(1, 9));
                sentence(&mut r, &mut s);
                s.push('\n');
            }
            84..=90 => {
                let _ = writeln!(s, "```{}", r.pick(LANGS));
                for _ in 0..r.range(2, 8) {
                    code.clear();
                    tabs(&mut code, r.range(0, 2) as usize);
                    code.push_str("const ");
                    camel(&mut r, &mut code, false);
                    code.push_str(" = ");
                    camel(&mut r, &mut code, false);
                    code.push_str("(\"");
                    short_str(&mut r, &mut code);
                    code.push_str("\");\n");
                    s.push_str(&code);
                }
                s.push_str("```\n\n");
            }
            91..=95 => {
                let _ = writeln!(s, "| `{}` | {} | {} |", r.pick(WORDS), r.pick(VERBS), r.range(0, 9999));
            }
            _ => {
                s.push_str(r.pick(UNI));
                s.push(' ');
                sentence(&mut r, &mut s);
                s.push('\n');
            }
        }
        p.piece(&s);
    }
    p.finish()
}

// ---------------------------------------------------------------------------
// The session simulator
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Extra {
    session_id: Option<String>,
    parent_session: Option<String>,
    /// Chance that the session gets a name early on (default 0.6).
    name_chance: Option<f64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    User,
    Assistant,
    ToolResult,
    CustomMsg,
    Bash,
    System,
    Other,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    id: u32,
    role: Role,
    /// Path index where the model context starts at this node (a
    /// compaction's first kept entry), 0 without compaction.
    ctx_start: u32,
    /// Approximate tokens along the path up to and including this node.
    cum: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Header,
    User,
    UserImage,
    Assistant,
    ToolResult,
    ToolResultBig,
    ToolResultImage,
    Bash,
    System,
    ModelChange,
    ThinkingChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    ContextEdit,
    Usage,
}

const KIND_NAMES: [&str; 19] = [
    "session",
    "message/user",
    "message/user+image",
    "message/assistant",
    "message/toolResult",
    "message/toolResult(big)",
    "message/toolResult+image",
    "message/bashExecution",
    "message/system",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
    "usage",
];

struct Model {
    api: &'static str,
    provider: &'static str,
    id: &'static str,
    /// $ per million tokens: input, output, cache read, cache write.
    price: [f64; 4],
    sig: Sig,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sig {
    Anthropic,
    OpenAi,
    None,
}

const MODELS: &[Model] = &[
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-sonnet-4-5",
        price: [3.0, 15.0, 0.3, 3.75],
        sig: Sig::Anthropic,
    },
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-opus-4-5",
        price: [5.0, 25.0, 0.5, 6.25],
        sig: Sig::Anthropic,
    },
    Model {
        api: "openai-responses",
        provider: "openai",
        id: "gpt-5.1-codex",
        price: [1.25, 10.0, 0.125, 0.0],
        sig: Sig::OpenAi,
    },
    Model {
        api: "google-generative-ai",
        provider: "google",
        id: "gemini-2.5-pro",
        price: [1.25, 10.0, 0.31, 0.0],
        sig: Sig::None,
    },
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-haiku-4-5",
        price: [1.0, 5.0, 0.1, 1.25],
        sig: Sig::Anthropic,
    },
    Model {
        api: "openai-completions",
        provider: "openrouter",
        id: "z-ai/glm-4.6",
        price: [0.6, 2.2, 0.11, 0.0],
        sig: Sig::None,
    },
];
/// Model choice weights (index into MODELS).
const MODEL_WEIGHTS: [u64; 6] = [40, 25, 15, 8, 7, 5];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    Read,
    Bash,
    Edit,
    Write,
    Grep,
    Find,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Bash => "bash",
            Tool::Edit => "edit",
            Tool::Write => "write",
            Tool::Grep => "grep",
            Tool::Find => "find",
        }
    }
}

struct Pending {
    call_id: Vec<u8>,
    tool: Tool,
    path: String,
    /// Bytes written by a `write` call.
    written: usize,
    image: bool,
}

/// Probabilities and sizes of one mix.
struct Params {
    branch: f64,
    branch_summary: f64,
    model_change: f64,
    thinking_change: f64,
    bash_exec: f64,
    custom: f64,
    custom_message: f64,
    label: f64,
    usage: f64,
    context_edit: f64,
    system_update: f64,
    rename: f64,
    img_user: f64,
    img_tool: f64,
    big_tool: f64,
    /// Chance to stop the agent loop after each tool round.
    stop: f64,
    /// Context size (tokens) that triggers a compaction, range.
    compact_at: (u64, u64),
    /// Bytes kept free for the final fillers: target / 40 within these
    /// bounds.
    reserve: (i64, i64),
    /// Largest filler lines.
    fill_user_max: usize,
    fill_assistant_max: usize,
}

const REALISTIC: Params = Params {
    branch: 0.28,
    branch_summary: 0.4,
    model_change: 0.02,
    thinking_change: 0.03,
    bash_exec: 0.04,
    custom: 0.04,
    custom_message: 0.03,
    label: 0.03,
    usage: 0.02,
    context_edit: 0.05,
    system_update: 0.005,
    rename: 0.004,
    img_user: 0.007,
    img_tool: 0.0015,
    big_tool: 0.007,
    stop: 0.2,
    compact_at: (120_000, 180_000),
    reserve: (8_000, 40_000),
    fill_user_max: 3_000,
    fill_assistant_max: 8_000,
};

const SMALL: Params = Params {
    branch: 0.28,
    branch_summary: 0.4,
    model_change: 0.02,
    thinking_change: 0.03,
    bash_exec: 0.04,
    custom: 0.04,
    custom_message: 0.03,
    label: 0.03,
    usage: 0.02,
    context_edit: 0.05,
    system_update: 0.005,
    rename: 0.004,
    img_user: 0.0,
    img_tool: 0.0,
    big_tool: 0.0,
    stop: 0.2,
    compact_at: (12_000, 24_000),
    reserve: (1_800, 1_800),
    fill_user_max: 560,
    fill_assistant_max: 590,
};

/// Lines of a SmallEntries file stay within these bounds.
const SMALL_MAX_LINE: usize = 600;

struct Gen<W: Write> {
    out: W,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    flushed: u64,
    target: u64,
    reserve: i64,
    small: bool,
    p: &'static Params,
    rng: Rng,
    code: &'static TextPool,
    prose: &'static TextPool,
    cwd: String,
    clock: i64,
    ids: HashSet<u32, IdHash>,
    path: Vec<Node>,
    pending: Vec<Pending>,
    model: usize,
    level: usize,
    turns: u64,
    next_compact: u64,
    named: bool,
    name_chance: f64,
    stats: GenStats,
    kinds: [(u64, u64); 19],
    tmp: String,
}

const FLUSH_AT: usize = 1 << 20;

/// Hasher for the set of entry ids: they are random already, one multiply
/// spreads them enough.
#[derive(Default, Clone, Copy)]
struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

fn generate<W: Write>(spec: &SessionSpec, extra: &Extra, out: W) -> io::Result<GenStats> {
    let small = matches!(spec.mix, Mix::SmallEntries);
    let p: &'static Params = if small { &SMALL } else { &REALISTIC };
    let mut rng = Rng::new(spec.seed);
    let session_id = extra
        .session_id
        .clone()
        .unwrap_or_else(|| uuid_v7(spec.start_ms, &mut rng));
    let model = weighted(&mut rng, &MODEL_WEIGHTS);
    let level = rng.pick(&[0usize, 0, 1, 2, 3, 3, 4]);
    let next_compact = rng.range(p.compact_at.0, p.compact_at.1);
    let mut g = Gen {
        out,
        buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
        scratch: Vec::with_capacity(4096),
        flushed: 0,
        target: spec.target_bytes,
        reserve: (spec.target_bytes as i64 / 40).clamp(p.reserve.0, p.reserve.1),
        small,
        p,
        rng,
        code: code_pool(),
        prose: prose_pool(),
        cwd: spec.cwd.clone(),
        clock: spec.start_ms,
        ids: HashSet::default(),
        path: Vec::new(),
        pending: Vec::new(),
        model,
        level,
        turns: 0,
        next_compact,
        named: false,
        name_chance: extra.name_chance.unwrap_or(0.6),
        stats: GenStats {
            bytes: 0,
            lines: 0,
            entries: 0,
            messages: 0,
            branches: 0,
            compactions: 0,
            leaf_id: String::new(),
            session_id: session_id.clone(),
            session_name: None,
            images: 0,
            image_bytes: 0,
            max_line_bytes: 0,
            first_ms: spec.start_ms,
            last_ms: spec.start_ms,
            by_kind: Vec::new(),
        },
        kinds: [(0, 0); 19],
        tmp: String::new(),
    };
    g.header(&session_id, extra.parent_session.as_deref())?;
    g.run()?;
    g.finish_file()
}

fn weighted(rng: &mut Rng, w: &[u64]) -> usize {
    let total: u64 = w.iter().sum();
    let mut x = rng.below(total);
    for (i, &v) in w.iter().enumerate() {
        if x < v {
            return i;
        }
        x -= v;
    }
    w.len() - 1
}

impl<W: Write> Gen<W> {
    // ----- bookkeeping -----

    fn written(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    fn remaining(&self) -> i64 {
        self.target as i64 - self.written() as i64
    }

    fn near_end(&self) -> bool {
        self.remaining() <= self.reserve
    }

    /// Bytes the variable parts of the next entry may use.
    fn avail(&self) -> usize {
        (self.remaining() - self.reserve / 2).max(0) as usize
    }

    fn new_id(&mut self) -> u32 {
        loop {
            let v = self.rng.next() as u32;
            if self.ids.insert(v) {
                return v;
            }
        }
    }

    fn leaf(&self) -> Option<u32> {
        self.path.last().map(|n| n.id)
    }

    /// Advances the clock by `lo..=hi` ms (log-uniform) and returns it.
    fn tick(&mut self, lo: u64, hi: u64) -> i64 {
        let d = if hi > lo {
            self.rng.log_uniform(lo.max(1) as f64, hi as f64) as i64
        } else {
            lo as i64
        };
        self.clock += d.max(1);
        self.clock
    }

    /// `{"type":"<ty>","id":"..","parentId":..,"timestamp":".."` for a new
    /// entry; returns (line start, id).
    fn head(&mut self, ty: &str, ts: i64) -> (usize, u32) {
        let start = self.buf.len();
        let id = self.new_id();
        let b = &mut self.buf;
        put(b, "{\"type\":\"");
        put(b, ty);
        put(b, "\",\"id\":\"");
        put_id(b, id);
        self.put_parent_ts(ts);
        (start, id)
    }

    fn put_parent_ts(&mut self, ts: i64) {
        let parent = self.leaf();
        let b = &mut self.buf;
        put(b, "\",\"parentId\":");
        match parent {
            Some(p) => {
                b.push(b'"');
                put_id(b, p);
                b.push(b'"');
            }
            None => put(b, "null"),
        }
        put(b, ",\"timestamp\":\"");
        put_iso(b, ts);
        b.push(b'"');
    }

    /// Ends the line started at `start` (the caller wrote the closing
    /// brace), records it and appends the node to the path.
    fn finish(&mut self, start: usize, id: u32, kind: Kind, role: Role, img_bytes: usize) -> io::Result<()> {
        self.buf.push(b'\n');
        let len = self.buf.len() - start;
        let k = &mut self.kinds[kind as usize];
        k.0 += 1;
        k.1 += len as u64;
        let st = &mut self.stats;
        st.lines += 1;
        st.entries += 1;
        st.max_line_bytes = st.max_line_bytes.max(len as u64);
        st.last_ms = self.clock;
        if matches!(
            role,
            Role::User | Role::Assistant | Role::ToolResult | Role::CustomMsg | Role::Bash | Role::System
        ) && kind != Kind::CustomMessage
        {
            st.messages += 1;
        }
        debug_assert!(
            !self.small || (101..=SMALL_MAX_LINE).contains(&len),
            "small line of {len} bytes"
        );
        let (ctx_start, cum) = match self.path.last() {
            Some(n) => (n.ctx_start, n.cum),
            None => (0, 0),
        };
        let tokens = ((len - img_bytes) / 4 + if img_bytes > 0 { 1600 } else { 0 }) as u64;
        self.path.push(Node {
            id,
            role,
            ctx_start,
            cum: cum + tokens,
        });
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn finish_file(mut self) -> io::Result<GenStats> {
        self.flush_buf()?;
        self.out.flush()?;
        let mut st = self.stats;
        st.bytes = self.flushed;
        st.leaf_id = self.path.last().map(|n| id_string(n.id)).unwrap_or_default();
        st.by_kind = KIND_NAMES
            .iter()
            .zip(self.kinds.iter())
            .filter(|(_, k)| k.0 > 0)
            .map(|(name, k)| KindStats {
                kind: name,
                lines: k.0,
                bytes: k.1,
            })
            .collect();
        Ok(st)
    }

    fn cur_model(&self) -> &'static Model {
        &MODELS[self.model]
    }

    /// Tokens in the model context at the leaf (roughly).
    fn ctx_tokens(&self) -> u64 {
        match self.path.last() {
            Some(n) => n.cum - self.path.get(n.ctx_start as usize).map_or(0, |s| s.cum),
            None => 0,
        }
    }

    // ----- the conversation -----

    fn header(&mut self, id: &str, parent: Option<&str>) -> io::Result<()> {
        let b = &mut self.buf;
        put(b, "{\"type\":\"session\",\"version\":3,\"id\":");
        put_str(b, id);
        put(b, ",\"timestamp\":\"");
        put_iso(b, self.clock);
        put(b, "\",\"cwd\":");
        put_str(b, &self.cwd);
        if let Some(p) = parent {
            put(b, ",\"parentSession\":");
            put_str(b, p);
        }
        put(b, "}\n");
        let len = self.buf.len() as u64;
        self.kinds[Kind::Header as usize] = (1, len);
        self.stats.lines += 1;
        self.stats.max_line_bytes = len;
        Ok(())
    }

    fn run(&mut self) -> io::Result<()> {
        // What pi writes when a session starts.
        if !self.near_end() {
            let (prov, id) = (self.cur_model().provider, self.cur_model().id);
            self.tick(20, 400);
            self.model_change_to(prov, id)?;
        }
        if !self.near_end() {
            self.tick(1, 5);
            self.thinking_change_to(self.level)?;
        }
        if !self.near_end() && self.rng.chance(0.85) {
            self.system_message(true)?;
        }
        while !self.near_end() {
            self.turn()?;
        }
        self.fill()
    }

    fn turn(&mut self) -> io::Result<()> {
        self.turns += 1;
        let p = self.p;
        if self.turns > 2 && self.rng.chance(p.branch) {
            self.branch()?;
        }
        type Step<W> = fn(&mut Gen<W>) -> io::Result<()>;
        let steps: [(f64, Step<W>); 8] = [
            (p.model_change, Self::model_change),
            (p.thinking_change, Self::thinking_change),
            (p.bash_exec, Self::bash_execution),
            (p.custom, Self::custom),
            (p.label, Self::label),
            (p.usage, Self::usage_entry),
            (p.context_edit, Self::context_edit),
            (p.system_update, Self::system_update),
        ];
        for (prob, step) in steps {
            if self.near_end() {
                return Ok(());
            }
            if self.rng.chance(prob) {
                step(self)?;
            }
        }
        let name_chance = if !self.named && self.turns >= 2 {
            self.named = true;
            self.name_chance
        } else {
            p.rename
        };
        if self.near_end() {
            return Ok(());
        }
        if self.rng.chance(name_chance) {
            self.session_info()?;
        }
        if self.near_end() {
            return Ok(());
        }
        if self.ctx_tokens() >= self.next_compact {
            self.compaction()?;
            self.next_compact = self.rng.range(p.compact_at.0, p.compact_at.1);
            if self.near_end() {
                return Ok(());
            }
        }
        if self.near_end() {
            return Ok(());
        }
        if self.rng.chance(p.custom_message) {
            self.custom_message()?;
            if self.near_end() {
                return Ok(());
            }
        }
        self.user()?;
        loop {
            if self.near_end() {
                return Ok(());
            }
            let stop = self.assistant(false)?;
            if stop {
                return Ok(());
            }
            while !self.pending.is_empty() {
                if self.near_end() {
                    return Ok(());
                }
                self.tool_result()?;
            }
            if self.rng.chance(p.stop) {
                break;
            }
        }
        if self.near_end() {
            return Ok(());
        }
        self.assistant(true)?;
        Ok(())
    }

    /// Goes back to an earlier point of the path: the parent of a recent
    /// (sometimes an old) user message; sometimes records a branch summary.
    fn branch(&mut self) -> io::Result<()> {
        let n = self.path.len();
        if n < 4 {
            return Ok(());
        }
        let r = self.rng.below(1000);
        // Mostly a few entries back (a retried turn), sometimes further.
        let back = if r < 920 {
            self.rng.geometric(0.15) as usize
        } else if r < 997 {
            self.rng.below(100) as usize
        } else {
            self.rng.below(3_000) as usize
        };
        let mut i = n - 1 - back.min(n - 1);
        while i > 0 && self.path[i].role != Role::User {
            i -= 1;
        }
        if i == 0 {
            return Ok(());
        }
        let from = self.path[n - 1].id;
        self.path.truncate(i);
        self.pending.clear();
        self.stats.branches += 1;
        if self.rng.chance(self.p.branch_summary) {
            self.branch_summary(from)?;
        }
        Ok(())
    }

    fn branch_summary(&mut self, from: u32) -> io::Result<()> {
        let ts = self.tick(2_000, 40_000);
        let (start, id) = self.head("branch_summary", ts);
        put(&mut self.buf, ",\"fromId\":\"");
        put_id(&mut self.buf, from);
        put(&mut self.buf, "\",\"summary\":\"");
        let len = if self.small {
            self.rng.range(40, 200) as usize
        } else {
            self.rng.lognormal(1200.0, 0.7, 200, 6000)
        };
        let len = len.min(self.avail());
        self.prose.put(&mut self.buf, &mut self.rng, len);
        self.buf.push(b'"');
        if !self.small && self.rng.chance(0.6) {
            put(&mut self.buf, ",\"details\":");
            self.file_lists();
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::BranchSummary, Role::Other, 0)
    }

    /// `{"readFiles":[..],"modifiedFiles":[..]}`
    fn file_lists(&mut self) {
        put(&mut self.buf, "{\"readFiles\":[");
        for i in 0..self.rng.range(0, 8) {
            if i > 0 {
                self.buf.push(b',');
            }
            self.tmp.clear();
            rel_path(&mut self.rng, &mut self.tmp);
            put_str(&mut self.buf, &self.tmp);
        }
        put(&mut self.buf, "],\"modifiedFiles\":[");
        for i in 0..self.rng.range(0, 5) {
            if i > 0 {
                self.buf.push(b',');
            }
            self.tmp.clear();
            rel_path(&mut self.rng, &mut self.tmp);
            put_str(&mut self.buf, &self.tmp);
        }
        put(&mut self.buf, "]}");
    }

    fn model_change(&mut self) -> io::Result<()> {
        let mut m = weighted(&mut self.rng, &MODEL_WEIGHTS);
        if m == self.model {
            m = (m + 1) % MODELS.len();
        }
        self.model = m;
        self.tick(1_000, 60_000);
        self.model_change_to(MODELS[m].provider, MODELS[m].id)
    }

    fn model_change_to(&mut self, provider: &str, model: &str) -> io::Result<()> {
        let ts = self.clock;
        let (start, id) = self.head("model_change", ts);
        put(&mut self.buf, ",\"provider\":");
        put_str(&mut self.buf, provider);
        put(&mut self.buf, ",\"modelId\":");
        put_str(&mut self.buf, model);
        self.buf.push(b'}');
        self.finish(start, id, Kind::ModelChange, Role::Other, 0)
    }

    fn thinking_change(&mut self) -> io::Result<()> {
        let mut l = self.rng.below(LEVELS.len() as u64) as usize;
        if l == self.level {
            l = (l + 1) % LEVELS.len();
        }
        self.level = l;
        self.tick(1_000, 60_000);
        self.thinking_change_to(l)
    }

    fn thinking_change_to(&mut self, level: usize) -> io::Result<()> {
        let ts = self.clock;
        let (start, id) = self.head("thinking_level_change", ts);
        put(&mut self.buf, ",\"thinkingLevel\":\"");
        put(&mut self.buf, LEVELS[level]);
        put(&mut self.buf, "\"}");
        self.finish(start, id, Kind::ThinkingChange, Role::Other, 0)
    }

    /// A system message: the first one declares prompt sections and tools,
    /// later ones patch them.
    fn system_message(&mut self, initial: bool) -> io::Result<()> {
        let ts = self.tick(5, 200);
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"system\",\"content\":");
        if self.small {
            if initial {
                put(
                    &mut self.buf,
                    "\"You are an expert coding assistant. Use the tools to read and edit files.\"",
                );
            } else {
                put(
                    &mut self.buf,
                    "\"\",\"sections\":{\"skills\":null},\"toolsRemoved\":[{\"name\":\"write\"}]",
                );
            }
        } else if initial {
            put(&mut self.buf, "\"\",\"sections\":{\"preamble\":\"");
            let n = self.rng.range(600, 2500) as usize;
            let n = n.min(self.avail());
            self.prose.put(&mut self.buf, &mut self.rng, n);
            put(&mut self.buf, "\",\"tools\":\"<tools>\\n");
            for t in ["read", "bash", "edit", "write", "grep", "find"] {
                put(&mut self.buf, "- ");
                put(&mut self.buf, t);
                put(&mut self.buf, ": ");
                let n = self.rng.range(60, 200) as usize;
                self.prose.put(&mut self.buf, &mut self.rng, n);
                put(&mut self.buf, "\\n");
            }
            put(&mut self.buf, "</tools>\",\"cwd\":");
            put_str(&mut self.buf, &self.cwd);
            put(&mut self.buf, "},\"toolsAdded\":[");
            self.tool_decls();
            put(&mut self.buf, "]");
        } else {
            put(&mut self.buf, "\"\",\"sections\":{\"skills\":\"<skills>\\n");
            let n = self.rng.range(200, 1500) as usize;
            let n = n.min(self.avail());
            self.prose.put(&mut self.buf, &mut self.rng, n);
            put(&mut self.buf, "\\n</skills>\"},\"toolsRemoved\":[{\"name\":\"write\"}]");
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - 1);
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::System, Role::System, 0)
    }

    fn system_update(&mut self) -> io::Result<()> {
        self.system_message(false)
    }

    fn tool_decls(&mut self) {
        const DECLS: &[(&str, &str, &[&str])] = &[
            (
                "read",
                "Read the contents of a file. Supports text files and images (jpg, png, gif, webp).",
                &["path", "offset", "limit"],
            ),
            (
                "bash",
                "Execute a bash command in the current working directory. Returns stdout and stderr.",
                &["command", "timeout"],
            ),
            (
                "edit",
                "Edit a file by replacing exact text. The oldText must match exactly (including whitespace).",
                &["path", "oldText", "newText"],
            ),
            (
                "write",
                "Write content to a file. Creates the file if it doesn't exist, overwrites if it does.",
                &["path", "content"],
            ),
        ];
        for (i, (name, desc, params)) in DECLS.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            put(&mut self.buf, "{\"name\":\"");
            put(&mut self.buf, name);
            put(&mut self.buf, "\",\"description\":");
            put_str(&mut self.buf, desc);
            put(&mut self.buf, ",\"parameters\":{\"type\":\"object\",\"properties\":{");
            for (j, p) in params.iter().enumerate() {
                if j > 0 {
                    self.buf.push(b',');
                }
                put(&mut self.buf, "\"");
                put(&mut self.buf, p);
                let ty = if matches!(*p, "offset" | "limit" | "timeout") {
                    "number"
                } else {
                    "string"
                };
                put(&mut self.buf, "\":{\"type\":\"");
                put(&mut self.buf, ty);
                put(&mut self.buf, "\",\"description\":\"The ");
                put(&mut self.buf, p);
                put(&mut self.buf, " to use\"}");
            }
            put(&mut self.buf, "},\"required\":[\"");
            put(&mut self.buf, params[0]);
            put(&mut self.buf, "\"]}}");
        }
    }

    fn session_info(&mut self) -> io::Result<()> {
        let ts = self.tick(500, 30_000);
        self.tmp.clear();
        session_name(&mut self.rng, &mut self.tmp);
        if self.rng.chance(0.02) {
            self.tmp.clear();
        }
        let name = std::mem::take(&mut self.tmp);
        let (start, id) = self.head("session_info", ts);
        put(&mut self.buf, ",\"name\":");
        put_str(&mut self.buf, &name);
        self.buf.push(b'}');
        self.stats.session_name = if name.trim().is_empty() {
            None
        } else {
            Some(name.trim().to_string())
        };
        self.tmp = name;
        self.finish(start, id, Kind::SessionInfo, Role::Other, 0)
    }

    fn label(&mut self) -> io::Result<()> {
        let n = self.path.len();
        if n == 0 {
            return Ok(());
        }
        let target = self.path[n - 1 - (self.rng.geometric(0.1) as usize).min(n - 1)].id;
        let ts = self.tick(1_000, 30_000);
        let (start, id) = self.head("label", ts);
        put(&mut self.buf, ",\"targetId\":\"");
        put_id(&mut self.buf, target);
        self.buf.push(b'"');
        if self.rng.chance(0.9) {
            const LABELS: &[&str] = &[
                "checkpoint",
                "before-refactor",
                "good state",
                "bug repro",
                "tests green",
                "WIP",
                "try again here",
                "✅ works",
                "perf baseline",
                "review",
                "stable",
                "release-candidate",
            ];
            put(&mut self.buf, ",\"label\":");
            self.tmp.clear();
            self.tmp.push_str(self.rng.pick(LABELS));
            if self.rng.chance(0.5) {
                let _ = write!(self.tmp, "-{}", self.rng.range(1, 40));
            }
            put_str(&mut self.buf, &self.tmp);
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::Label, Role::Other, 0)
    }

    fn custom(&mut self) -> io::Result<()> {
        let ts = self.tick(10, 5_000);
        let start = self.buf.len();
        let id = self.new_id();
        put(&mut self.buf, "{\"type\":\"custom\",\"customType\":");
        match self.rng.below(4) {
            0 => {
                let m = &MODELS[self.model];
                put(&mut self.buf, "\"pi.virtual-model-state\",\"data\":{\"provider\":");
                put_str(&mut self.buf, m.provider);
                put(&mut self.buf, ",\"modelId\":");
                put_str(&mut self.buf, m.id);
                put(&mut self.buf, ",\"state\":{\"turn\":");
                put_u64(&mut self.buf, self.turns);
                put(&mut self.buf, ",\"route\":\"");
                put(&mut self.buf, self.rng.pick(&["primary", "fallback", "cheap"]));
                put(&mut self.buf, "\"}}");
            }
            1 => {
                put(&mut self.buf, "\"todo\",\"data\":{\"todos\":[");
                let k = if self.small { 1 } else { self.rng.range(1, 6) };
                for i in 0..k {
                    if i > 0 {
                        self.buf.push(b',');
                    }
                    put(&mut self.buf, "{\"id\":");
                    put_u64(&mut self.buf, i + 1);
                    put(&mut self.buf, ",\"text\":\"");
                    let n = self.rng.range(15, 70) as usize;
                    self.prose.put(&mut self.buf, &mut self.rng, n);
                    put(&mut self.buf, "\",\"done\":");
                    put(&mut self.buf, if self.rng.chance(0.5) { "true}" } else { "false}" });
                }
                put(&mut self.buf, "]}");
            }
            2 => {
                put(&mut self.buf, "\"git-checkpoint\",\"data\":{\"commit\":\"");
                put_hex(&mut self.buf, &mut self.rng, 40);
                put(&mut self.buf, "\",\"dirty\":");
                put(&mut self.buf, if self.rng.chance(0.3) { "true" } else { "false" });
                put(&mut self.buf, ",\"files\":");
                put_u64(&mut self.buf, self.rng.range(0, 30));
                self.buf.push(b'}');
            }
            _ => {
                put(
                    &mut self.buf,
                    "\"permission-gate\",\"data\":{\"tool\":\"bash\",\"decision\":\"",
                );
                put(&mut self.buf, self.rng.pick(&["allow", "allow-always", "deny"]));
                put(&mut self.buf, "\",\"pattern\":");
                self.tmp.clear();
                self.tmp.push_str(
                    self.rng
                        .pick(&["npm run *", "git *", "cargo test*", "rm -rf \"$TMP\"/*"]),
                );
                put_str(&mut self.buf, &self.tmp);
                self.buf.push(b'}');
            }
        }
        put(&mut self.buf, ",\"id\":\"");
        put_id(&mut self.buf, id);
        self.put_parent_ts(ts);
        self.buf.push(b'}');
        self.finish(start, id, Kind::Custom, Role::Other, 0)
    }

    fn custom_message(&mut self) -> io::Result<()> {
        let ts = self.tick(10, 5_000);
        let start = self.buf.len();
        let id = self.new_id();
        put(&mut self.buf, "{\"type\":\"custom_message\",\"customType\":\"");
        put(
            &mut self.buf,
            self.rng
                .pick(&["git-status", "plan-mode", "todo-reminder", "lsp-diagnostics"]),
        );
        put(&mut self.buf, "\",\"content\":");
        let len = if self.small {
            self.rng.range(30, 220) as usize
        } else {
            self.rng.lognormal(500.0, 1.0, 30, 20_000)
        };
        let len = len.min(self.avail());
        let array = self.rng.chance(0.3);
        if array {
            put(&mut self.buf, "[{\"type\":\"text\",\"text\":\"");
        } else {
            self.buf.push(b'"');
        }
        if self.rng.chance(0.5) {
            self.code.put(&mut self.buf, &mut self.rng, len);
        } else {
            self.prose.put(&mut self.buf, &mut self.rng, len);
        }
        put(&mut self.buf, if array { "\"}]" } else { "\"" });
        put(&mut self.buf, ",\"display\":");
        put(&mut self.buf, if self.rng.chance(0.7) { "true" } else { "false" });
        if !self.small && self.rng.chance(0.4) {
            put(&mut self.buf, ",\"details\":{\"source\":\"extension\",\"count\":");
            put_u64(&mut self.buf, self.rng.range(1, 50));
            self.buf.push(b'}');
        }
        put(&mut self.buf, ",\"id\":\"");
        put_id(&mut self.buf, id);
        self.put_parent_ts(ts);
        self.buf.push(b'}');
        self.finish(start, id, Kind::CustomMessage, Role::CustomMsg, 0)
    }

    /// A usage object; costs like pi computes them (price / 1e6 * tokens).
    fn put_usage(&mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) {
        let m = self.cur_model();
        let round = self.small;
        let cost = |price: f64, n: u64| {
            let c = price / 1_000_000.0 * n as f64;
            if round { (c * 1e6).round() / 1e6 } else { c }
        };
        let ci = cost(m.price[0], input);
        let co = cost(m.price[1], output);
        let cr = cost(m.price[2], cache_read);
        let cw = cost(m.price[3], cache_write);
        let total = if round {
            ((ci + co + cr + cw) * 1e6).round() / 1e6
        } else {
            ci + co + cr + cw
        };
        let b = &mut self.buf;
        put(b, "{\"input\":");
        put_u64(b, input);
        put(b, ",\"output\":");
        put_u64(b, output);
        put(b, ",\"cacheRead\":");
        put_u64(b, cache_read);
        put(b, ",\"cacheWrite\":");
        put_u64(b, cache_write);
        put(b, ",\"totalTokens\":");
        put_u64(b, input + output + cache_read + cache_write);
        put(b, ",\"cost\":{\"input\":");
        put_f64(b, ci);
        put(b, ",\"output\":");
        put_f64(b, co);
        put(b, ",\"cacheRead\":");
        put_f64(b, cr);
        put(b, ",\"cacheWrite\":");
        put_f64(b, cw);
        put(b, ",\"total\":");
        put_f64(b, total);
        put(b, "}}");
    }

    fn usage_entry(&mut self) -> io::Result<()> {
        let ts = self.tick(100, 10_000);
        let (start, id) = self.head("usage", ts);
        let m = self.cur_model();
        put(&mut self.buf, ",\"kind\":\"");
        put(
            &mut self.buf,
            self.rng
                .pick(&["cache_warm", "cache_warm", "title_generation", "embedding"]),
        );
        put(&mut self.buf, "\",\"provider\":");
        put_str(&mut self.buf, m.provider);
        put(&mut self.buf, ",\"model\":");
        put_str(&mut self.buf, m.id);
        put(&mut self.buf, ",\"usage\":");
        let cr = self.ctx_tokens().min(190_000);
        let out = self.rng.range(0, 40);
        let input = self.rng.range(0, 20);
        self.put_usage(input, out, cr, 0);
        self.buf.push(b'}');
        self.finish(start, id, Kind::Usage, Role::Other, 0)
    }

    fn context_edit(&mut self) -> io::Result<()> {
        let n = self.path.len();
        let Some(last) = self.path.last() else {
            return Ok(());
        };
        let lo = (last.ctx_start as usize).max(n.saturating_sub(300));
        if lo >= n {
            return Ok(());
        }
        let mut target = None;
        for _ in 0..12 {
            let i = lo + self.rng.below((n - lo) as u64) as usize;
            let node = self.path[i];
            if matches!(
                node.role,
                Role::User | Role::Assistant | Role::ToolResult | Role::CustomMsg
            ) {
                target = Some(node);
                break;
            }
        }
        let Some(t) = target else { return Ok(()) };
        let ts = self.tick(500, 20_000);
        let (start, id) = self.head("context_edit", ts);
        put(&mut self.buf, ",\"targetId\":\"");
        put_id(&mut self.buf, t.id);
        put(&mut self.buf, "\",\"replacement\":");
        let r = self.rng.below(10);
        if r < 4 {
            put(&mut self.buf, "null");
        } else {
            let len = if self.small {
                self.rng.range(10, 80) as usize
            } else {
                self.rng.lognormal(120.0, 1.0, 10, 4000)
            };
            let len = len.min(self.avail());
            match t.role {
                Role::Assistant | Role::ToolResult => {
                    put(&mut self.buf, "{\"content\":[{\"type\":\"text\",\"text\":\"");
                    if r < 8 {
                        put(&mut self.buf, "[output pruned: ");
                        put_u64(&mut self.buf, self.rng.range(100, 90_000));
                        put(&mut self.buf, " bytes] ");
                    }
                    self.prose.put(&mut self.buf, &mut self.rng, len);
                    put(&mut self.buf, "\"}]}");
                }
                _ => {
                    put(&mut self.buf, "{\"content\":\"");
                    self.prose.put(&mut self.buf, &mut self.rng, len);
                    put(&mut self.buf, "\"}");
                }
            }
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::ContextEdit, Role::Other, 0)
    }

    fn compaction(&mut self) -> io::Result<()> {
        let n = self.path.len();
        let Some(last) = self.path.last().copied() else {
            return Ok(());
        };
        let tokens_before = self.ctx_tokens();
        // Keep the last ~15% of the context, cut at a user message.
        let keep = tokens_before * self.rng.range(5, 25) / 100;
        let cs = last.ctx_start as usize;
        let mut k = n - 1;
        while k > cs && last.cum - self.path[k].cum < keep {
            k -= 1;
        }
        while k > cs && self.path[k].role != Role::User {
            k -= 1;
        }
        let retain_none = k <= cs || self.path[k].role != Role::User || self.rng.chance(0.08);
        let ts = self.tick(10_000, 120_000);
        let (start, id) = self.head("compaction", ts);
        put(&mut self.buf, ",\"summary\":\"");
        if self.small {
            let len = self.rng.range(60, 180) as usize;
            self.prose.put(&mut self.buf, &mut self.rng, len);
        } else {
            put(&mut self.buf, "# Context Checkpoint\\n\\n## Goal\\n");
            let len = self.rng.lognormal(3500.0, 0.6, 500, 16_000).min(self.avail() / 2);
            self.prose.put(&mut self.buf, &mut self.rng, len);
        }
        put(&mut self.buf, "\",\"firstKeptEntryId\":\"");
        put_id(&mut self.buf, if retain_none { id } else { self.path[k].id });
        put(&mut self.buf, "\",\"tokensBefore\":");
        put_u64(&mut self.buf, tokens_before);
        if !self.small {
            put(&mut self.buf, ",\"details\":");
            self.file_lists();
            if self.rng.chance(0.5) {
                put(&mut self.buf, ",\"usage\":");
                let out = self.rng.range(800, 4000);
                let input = self.rng.range(1_000, 20_000);
                self.put_usage(input, out, tokens_before.min(190_000), 0);
            }
            if self.rng.chance(0.7) {
                put(&mut self.buf, ",\"systemMessage\":{\"role\":\"system\",\"content\":\"");
                let len = self.rng.range(600, 3000) as usize;
                let len = len.min(self.avail() / 2);
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(&mut self.buf, "\",\"toolsAdded\":[");
                self.tool_decls();
                put(&mut self.buf, "],\"timestamp\":");
                put_i64(&mut self.buf, ts);
                self.buf.push(b'}');
            }
        }
        self.buf.push(b'}');
        self.stats.compactions += 1;
        self.finish(start, id, Kind::Compaction, Role::Other, 0)?;
        let idx = self.path.len() - 1;
        let node = &mut self.path[idx];
        node.ctx_start = if retain_none { idx as u32 } else { k as u32 };
        Ok(())
    }

    fn bash_execution(&mut self) -> io::Result<()> {
        let ts = self.tick(3_000, 120_000);
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"bashExecution\",\"command\":");
        self.tmp.clear();
        bash_command(&mut self.rng, &mut self.tmp, &self.cwd, self.small);
        put_str(&mut self.buf, &self.tmp);
        put(&mut self.buf, ",\"output\":\"");
        let len = if self.small {
            self.rng.range(0, 150) as usize
        } else {
            self.rng.lognormal(600.0, 1.5, 0, 40_000)
        };
        let len = len.min(self.avail());
        self.code.put_class(&mut self.buf, &mut self.rng, len, Class::Shell);
        let cancelled = self.rng.chance(0.03);
        let truncated = !self.small && len > 20_000;
        put(&mut self.buf, "\"");
        if !cancelled {
            put(&mut self.buf, ",\"exitCode\":");
            put_u64(
                &mut self.buf,
                if self.rng.chance(0.85) { 0 } else { self.rng.range(1, 2) },
            );
        }
        put(
            &mut self.buf,
            if cancelled {
                ",\"cancelled\":true"
            } else {
                ",\"cancelled\":false"
            },
        );
        put(
            &mut self.buf,
            if truncated {
                ",\"truncated\":true"
            } else {
                ",\"truncated\":false"
            },
        );
        if truncated {
            put(&mut self.buf, ",\"fullOutputPath\":\"/tmp/pi-bash-");
            put_hex(&mut self.buf, &mut self.rng, 16);
            put(&mut self.buf, ".log\"");
        }
        if self.rng.chance(0.1) {
            put(&mut self.buf, ",\"excludeFromContext\":true");
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - self.rng.range(1, 3) as i64);
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::Bash, Role::Bash, 0)
    }

    /// A base64 PNG of `len` bytes of data (a multiple of 4, at least 44).
    fn put_image(&mut self, len: usize) -> usize {
        let pool = b64_pool();
        let mut hdr = [0u8; 33];
        hdr[..8].copy_from_slice(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]);
        hdr[8..16].copy_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R']);
        let w = self.rng.range(400, 3840) as u32;
        let h = self.rng.range(300, 2400) as u32;
        hdr[16..20].copy_from_slice(&w.to_be_bytes());
        hdr[20..24].copy_from_slice(&h.to_be_bytes());
        hdr[24..29].copy_from_slice(&[8, 6, 0, 0, 0]);
        hdr[29..33].copy_from_slice(&(self.rng.next() as u32).to_be_bytes());
        put(&mut self.buf, "{\"type\":\"image\",\"data\":\"");
        b64_encode(&mut self.buf, &hdr);
        let mut left = (len.max(44) - 44) / 4 * 4;
        let data_len = 44 + left;
        while left > 0 {
            let take = left.min(pool.len() / 2);
            let off = self.rng.below(((pool.len() - take) / 4) as u64) as usize * 4;
            self.buf.extend_from_slice(&pool[off..off + take]);
            left -= take;
        }
        put(&mut self.buf, "\",\"mimeType\":\"image/png\"}");
        self.stats.images += 1;
        self.stats.image_bytes += data_len as u64;
        data_len
    }

    /// Size of a new image, if one fits.
    fn image_size(&mut self) -> Option<usize> {
        let avail = self.avail();
        if self.small || avail < 1_100_000 {
            return None;
        }
        let s = self.rng.log_uniform(1_000_000.0, 6_000_000.0) as usize;
        Some(s.min(avail - 50_000))
    }

    fn user(&mut self) -> io::Result<()> {
        let ts = self.tick(4_000, 600_000);
        let ts = if self.rng.chance(0.01) {
            self.tick(3_600_000, 40_000_000)
        } else {
            ts
        };
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"user\",\"content\":");
        let img = if self.rng.chance(self.p.img_user) {
            self.image_size()
        } else {
            None
        };
        let len = if self.small {
            self.rng.range(10, 250) as usize
        } else {
            self.rng.lognormal(110.0, 1.1, 3, 12_000)
        };
        let len = len.min(self.avail() - img.unwrap_or(0));
        let mut img_bytes = 0;
        if img.is_none() && self.rng.chance(0.2) {
            self.buf.push(b'"');
            self.user_text(len);
            self.buf.push(b'"');
        } else {
            put(&mut self.buf, "[{\"type\":\"text\",\"text\":\"");
            self.user_text(len);
            put(&mut self.buf, "\"}");
            if let Some(size) = img {
                self.buf.push(b',');
                img_bytes = self.put_image(size);
            }
            self.buf.push(b']');
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - self.rng.range(2, 30) as i64);
        put(&mut self.buf, "}}");
        let kind = if img_bytes > 0 { Kind::UserImage } else { Kind::User };
        self.finish(start, id, kind, Role::User, img_bytes)
    }

    /// About `len` bytes of escaped user prompt: an opener, then prose.
    fn user_text(&mut self, len: usize) {
        const OPENERS: &[&str] = &[
            "can you",
            "please",
            "ok, now",
            "hmm, that didn't work.",
            "why does",
            "let's",
            "great. next:",
            "fix the failing test.",
            "look at this:",
            "what about",
            "no, revert that.",
            "nice!",
            "wait,",
            "read",
            "continue",
            "alright,",
            "this is still broken:",
            "ship it. then",
        ];
        let start = self.buf.len();
        let o = self.rng.pick(OPENERS);
        put(&mut self.buf, o);
        if o == "read" {
            put(&mut self.buf, " @");
            self.tmp.clear();
            if self.small {
                short_path(&mut self.rng, &mut self.tmp);
            } else {
                rel_path(&mut self.rng, &mut self.tmp);
            }
            put_esc(&mut self.buf, &self.tmp);
            put(&mut self.buf, " and");
        }
        self.buf.push(b' ');
        let used = self.buf.len() - start;
        self.prose.put(&mut self.buf, &mut self.rng, len.saturating_sub(used));
    }

    fn tool_call_id(&mut self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        match self.cur_model().sig {
            Sig::Anthropic => {
                put(&mut v, "toolu_01");
                put_alnum(&mut v, &mut self.rng, 22);
            }
            Sig::OpenAi => {
                put(&mut v, "call_");
                put_alnum(&mut v, &mut self.rng, 24);
                if !self.small {
                    put(&mut v, "|fc_");
                    put_hex(&mut v, &mut self.rng, 48);
                }
            }
            Sig::None => {
                put(&mut v, "call_");
                put_hex(&mut v, &mut self.rng, 16);
            }
        }
        v
    }

    /// An assistant message. A non-final one calls 1-3 tools (recorded in
    /// `pending`); returns true when the message ended the turn (an error or
    /// an abort).
    fn assistant(&mut self, final_: bool) -> io::Result<bool> {
        let msg_ts = self.tick(1, 30);
        let dur = self.rng.lognormal(5_000.0, 0.9, 300, 400_000) as i64;
        self.clock += dur;
        let ts = self.clock;
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"assistant\",\"content\":[");
        let m = self.cur_model();
        let fail = self.rng.below(1000);
        let (aborted, errored) = (fail < 12, (12..16).contains(&fail));
        let mut budget = self.avail();
        let mut out_bytes = 0usize;
        let mut blocks = 0;
        self.pending.clear();
        if !errored {
            // Thinking.
            if !self.small && self.level > 0 && m.sig != Sig::None && self.rng.chance(0.35) {
                let len = self.rng.lognormal(400.0, 1.1, 30, 14_000).min(budget);
                budget -= len;
                out_bytes += len;
                put(&mut self.buf, "{\"type\":\"thinking\",\"thinking\":\"");
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(&mut self.buf, "\",\"thinkingSignature\":\"");
                let sig = self.rng.lognormal(700.0, 0.8, 100, 12_000).min(budget);
                budget -= sig;
                if m.sig == Sig::Anthropic {
                    put_b64_random(&mut self.buf, &mut self.rng, sig);
                } else {
                    put(&mut self.buf, "{\\\"type\\\":\\\"reasoning\\\",\\\"id\\\":\\\"rs_");
                    put_hex(&mut self.buf, &mut self.rng, 48);
                    put(&mut self.buf, "\\\",\\\"encrypted_content\\\":\\\"gAAAAAB");
                    put_b64_random(&mut self.buf, &mut self.rng, sig);
                    put(&mut self.buf, "\\\",\\\"summary\\\":[]}");
                }
                put(&mut self.buf, "\"}");
                blocks += 1;
            }
            // Text.
            if final_ || (!self.small && self.rng.chance(0.45)) || (self.small && self.rng.chance(0.15)) {
                let len = if self.small {
                    self.rng.range(8, 90) as usize
                } else if final_ {
                    self.rng.lognormal(400.0, 1.1, 10, 24_000)
                } else {
                    self.rng.lognormal(80.0, 1.2, 5, 6_000)
                };
                let len = len.min(budget);
                budget -= len;
                out_bytes += len;
                if blocks > 0 {
                    self.buf.push(b',');
                }
                put(&mut self.buf, "{\"type\":\"text\",\"text\":\"");
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(&mut self.buf, "\"}");
                blocks += 1;
            }
            // Tool calls.
            if !(final_ || aborted || (self.small && blocks > 0)) {
                let k = if self.small {
                    1
                } else {
                    [1, 1, 1, 1, 1, 1, 1, 2, 2, 3][self.rng.below(10) as usize]
                };
                for _ in 0..k {
                    if blocks > 0 {
                        self.buf.push(b',');
                    }
                    let used = self.tool_call(budget);
                    budget = budget.saturating_sub(used);
                    out_bytes += used;
                    blocks += 1;
                }
            }
        }
        put(&mut self.buf, "],\"api\":\"");
        put(&mut self.buf, m.api);
        put(&mut self.buf, "\",\"provider\":\"");
        put(&mut self.buf, m.provider);
        put(&mut self.buf, "\",\"model\":\"");
        put(&mut self.buf, m.id);
        put(&mut self.buf, "\"");
        if !self.small && m.sig == Sig::Anthropic && self.rng.chance(0.7) {
            put(&mut self.buf, ",\"responseId\":\"msg_01");
            put_alnum(&mut self.buf, &mut self.rng, 22);
            put(&mut self.buf, "\"");
        }
        put(&mut self.buf, ",\"usage\":");
        if aborted || errored {
            self.put_usage(0, 0, 0, 0);
        } else {
            let ctx = self.ctx_tokens().min(195_000);
            let fresh = self.path.last().map_or(0, |n| {
                n.cum
                    .saturating_sub(self.path.get(self.path.len().saturating_sub(3)).map_or(0, |p| p.cum))
            });
            // Small lines keep their numbers short.
            let (fresh_cap, extra, out_extra) = if self.small {
                (9_999, 900, 60)
            } else {
                (60_000, 2_000, 300)
            };
            let (input, cr, cw) = if m.sig == Sig::Anthropic {
                (self.rng.range(1, 12), ctx.saturating_sub(fresh), fresh.min(fresh_cap))
            } else {
                (
                    fresh.min(fresh_cap) + self.rng.range(10, extra),
                    ctx.saturating_sub(fresh) / 2 * 2,
                    0,
                )
            };
            let out = (out_bytes / 4) as u64 + self.rng.range(5, out_extra);
            self.put_usage(input, out, cr, cw);
        }
        put(&mut self.buf, ",\"stopReason\":\"");
        let stop = if errored {
            "error"
        } else if aborted {
            "aborted"
        } else if self.pending.is_empty() {
            "stop"
        } else {
            "toolUse"
        };
        put(&mut self.buf, stop);
        put(&mut self.buf, "\",\"timestamp\":");
        put_i64(&mut self.buf, msg_ts);
        if aborted {
            put(&mut self.buf, ",\"errorMessage\":\"Request was aborted.\"");
        } else if errored {
            put(&mut self.buf, ",\"errorMessage\":");
            let e = self.rng.pick(&[
                "429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}",
                "Connection error.",
                "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
                "terminated",
            ]);
            let e = if self.small && e.len() > 40 {
                "Connection error."
            } else {
                e
            };
            put_str(&mut self.buf, e);
        }
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::Assistant, Role::Assistant, 0)?;
        Ok(errored || aborted || (self.pending.is_empty() && !final_))
    }

    /// A toolCall block; returns the bytes of its variable parts.
    fn tool_call(&mut self, budget: usize) -> usize {
        let call_id = self.tool_call_id();
        let t = match self.rng.below(100) {
            0..=34 => Tool::Bash,
            35..=64 => Tool::Read,
            65..=88 => Tool::Edit,
            89..=92 => Tool::Write,
            93..=96 => Tool::Grep,
            _ => Tool::Find,
        };
        // Small lines have no room for edit/write arguments.
        let t = match t {
            Tool::Edit | Tool::Write if self.small => Tool::Read,
            t => t,
        };
        put(&mut self.buf, "{\"type\":\"toolCall\",\"id\":\"");
        self.buf.extend_from_slice(&call_id);
        put(&mut self.buf, "\",\"name\":\"");
        put(&mut self.buf, t.name());
        put(&mut self.buf, "\",\"arguments\":{");
        let mut path = String::new();
        let mut image = false;
        if matches!(t, Tool::Read | Tool::Edit | Tool::Write) {
            if !self.small {
                path.push_str(&self.cwd);
                path.push('/');
            }
            if self.small {
                short_path(&mut self.rng, &mut path);
            } else {
                rel_path(&mut self.rng, &mut path);
            }
            if t == Tool::Read && self.rng.chance(self.p.img_tool) {
                path.truncate(path.rfind('.').unwrap_or(path.len()));
                path.push_str(".png");
                image = true;
            }
        }
        let mut used = 0;
        let mut written = 0;
        match t {
            Tool::Read => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                if !self.small && self.rng.chance(0.3) {
                    put(&mut self.buf, ",\"offset\":");
                    put_u64(&mut self.buf, self.rng.range(1, 3000));
                    put(&mut self.buf, ",\"limit\":");
                    put_u64(&mut self.buf, self.rng.range(20, 400));
                }
            }
            Tool::Bash => {
                self.tmp.clear();
                bash_command(&mut self.rng, &mut self.tmp, &self.cwd, self.small);
                put(&mut self.buf, "\"command\":");
                put_str(&mut self.buf, &self.tmp);
                if !self.small && self.rng.chance(0.2) {
                    put(&mut self.buf, ",\"timeout\":");
                    put_u64(&mut self.buf, self.rng.pick(&[30, 60, 120, 600]));
                }
            }
            Tool::Edit => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                let (a, b) = if self.small {
                    (self.rng.range(5, 25) as usize, self.rng.range(5, 25) as usize)
                } else {
                    (
                        self.rng.lognormal(180.0, 1.0, 5, 6_000),
                        self.rng.lognormal(260.0, 1.0, 5, 8_000),
                    )
                };
                let a = a.min(budget / 2);
                let b = b.min(budget / 2);
                put(&mut self.buf, ",\"oldText\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, a, Class::Code);
                put(&mut self.buf, "\",\"newText\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, b, Class::Code);
                self.buf.push(b'"');
            }
            Tool::Write => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                let n = self.rng.lognormal(3_000.0, 1.0, 50, 40_000).min(budget);
                put(&mut self.buf, ",\"content\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, n, Class::Code);
                written = used;
                self.buf.push(b'"');
            }
            Tool::Grep => {
                put(&mut self.buf, "\"pattern\":");
                self.tmp.clear();
                if self.small {
                    self.tmp.push_str(self.rng.pick(WORDS));
                } else {
                    camel(&mut self.rng, &mut self.tmp, false);
                    if self.rng.chance(0.3) {
                        self.tmp.push_str("\\(");
                    }
                }
                put_str(&mut self.buf, &self.tmp);
                put(&mut self.buf, ",\"path\":\"");
                put(&mut self.buf, self.rng.pick(if self.small { &DIRS[..5] } else { DIRS }));
                put(&mut self.buf, "\"");
            }
            Tool::Find => {
                put(&mut self.buf, "\"pattern\":\"**/*.");
                put(&mut self.buf, self.rng.pick(EXTS));
                put(&mut self.buf, "\"");
            }
        }
        put(&mut self.buf, "}}");
        self.pending.push(Pending {
            call_id,
            tool: t,
            path,
            written,
            image,
        });
        used
    }

    fn tool_result(&mut self) -> io::Result<()> {
        let call = self.pending.remove(0);
        let dur = match call.tool {
            Tool::Bash => self.rng.lognormal(900.0, 1.6, 5, 600_000),
            _ => self.rng.range(2, 80) as usize,
        };
        self.clock += dur as i64;
        let ts = self.clock;
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"");
        self.buf.extend_from_slice(&call.call_id);
        put(&mut self.buf, "\",\"toolName\":\"");
        put(&mut self.buf, call.tool.name());
        put(&mut self.buf, "\",\"content\":[{\"type\":\"text\",\"text\":\"");
        let avail = self.avail();
        let mut kind = Kind::ToolResult;
        let mut img_bytes = 0;
        let mut is_error = false;
        let big = !self.small
            && matches!(call.tool, Tool::Bash | Tool::Read | Tool::Grep)
            && self.rng.chance(self.p.big_tool)
            && avail > 100_000;
        if call.image {
            put(&mut self.buf, "Read image file [image/png]\"}");
            if let Some(size) = self.image_size() {
                self.buf.push(b',');
                img_bytes = self.put_image(size);
                kind = Kind::ToolResultImage;
            }
            put(&mut self.buf, "]");
        } else if big {
            let len = (self.rng.log_uniform(64_000.0, 2_500_000.0) as usize).min(avail - 50_000);
            let class = self.output_class(call.tool);
            self.code.put_class(&mut self.buf, &mut self.rng, len, class);
            put(&mut self.buf, "\"}]");
            kind = Kind::ToolResultBig;
        } else {
            match call.tool {
                Tool::Read | Tool::Grep | Tool::Find | Tool::Bash => {
                    let len = match (self.small, call.tool) {
                        (true, _) => self.rng.range(0, 160) as usize,
                        (false, Tool::Read) => self.rng.lognormal(1_100.0, 1.3, 40, 120_000),
                        (false, Tool::Bash) => self.rng.lognormal(400.0, 1.6, 0, 50_000),
                        (false, _) => self.rng.lognormal(800.0, 1.2, 20, 30_000),
                    };
                    let limit = 51_200;
                    let len = if len > limit {
                        len.min(avail / 2).max(limit.min(avail))
                    } else {
                        len.min(avail)
                    };
                    let len = if len > limit && avail < 2 * limit + 4_000 {
                        limit.min(avail)
                    } else {
                        len
                    };
                    let text_start = self.buf.len();
                    let class = self.output_class(call.tool);
                    let n = self.code.put_class(&mut self.buf, &mut self.rng, len.min(limit), class);
                    if call.tool == Tool::Read && len > limit {
                        // pi's read truncates at 50 KB and keeps a copy in details.
                        let total_lines = self.rng.range(1_800, 9_000);
                        let shown = self.rng.range(900, 1_700);
                        self.tmp.clear();
                        let _ = write!(
                            self.tmp,
                            "\\n\\n[Showing lines 1-{shown} of {total_lines} (50.0KB limit). Use offset={} to continue]",
                            shown + 1
                        );
                        put(&mut self.buf, &self.tmp);
                        put(&mut self.buf, "\"}],\"details\":{\"truncation\":{\"content\":\"");
                        self.buf.extend_from_within(text_start..text_start + n);
                        put(
                            &mut self.buf,
                            "\",\"truncated\":true,\"truncatedBy\":\"bytes\",\"totalLines\":",
                        );
                        put_u64(&mut self.buf, total_lines);
                        put(&mut self.buf, ",\"totalBytes\":");
                        put_u64(&mut self.buf, len as u64 + self.rng.range(0, 100_000));
                        put(&mut self.buf, ",\"outputLines\":");
                        put_u64(&mut self.buf, shown);
                        put(&mut self.buf, ",\"outputBytes\":");
                        put_u64(&mut self.buf, n as u64);
                        put(
                            &mut self.buf,
                            ",\"lastLinePartial\":false,\"firstLineExceedsLimit\":false}}",
                        );
                    } else {
                        if call.tool == Tool::Bash && self.rng.chance(0.08) {
                            is_error = true;
                            put(&mut self.buf, "\\n\\nCommand exited with code ");
                            put_u64(&mut self.buf, self.rng.range(1, 2));
                        }
                        put(&mut self.buf, "\"}]");
                        if !self.small && call.tool == Tool::Bash && self.rng.chance(0.1) {
                            put(&mut self.buf, ",\"details\":{}");
                        }
                    }
                }
                Tool::Edit => {
                    if self.rng.chance(0.05) {
                        is_error = true;
                        put(&mut self.buf, "Could not find the exact text in ");
                        put_esc(&mut self.buf, &call.path);
                        put(
                            &mut self.buf,
                            ". The old text must match exactly including all whitespace and newlines.\"}]",
                        );
                        put(&mut self.buf, ",\"details\":{}");
                    } else {
                        put(&mut self.buf, "Successfully replaced text in ");
                        put_esc(&mut self.buf, &call.path);
                        if !self.small {
                            put(&mut self.buf, ". Changed ");
                            put_u64(&mut self.buf, self.rng.range(5, 3000));
                            put(&mut self.buf, " characters to ");
                            put_u64(&mut self.buf, self.rng.range(5, 3000));
                            put(&mut self.buf, " characters.");
                        }
                        put(&mut self.buf, "\"}],\"details\":{\"diff\":\"");
                        let len = if self.small {
                            self.rng.range(10, 90) as usize
                        } else {
                            self.rng.lognormal(900.0, 1.0, 40, 12_000)
                        };
                        let len = len.min(avail);
                        let lines = self.rng.range(3, 12);
                        let first = self.rng.range(1, 900);
                        let per = len / lines as usize;
                        for (i, ln) in (first..first + lines).enumerate() {
                            let mark = match i % 4 {
                                1 => "-",
                                2 => "+",
                                _ => " ",
                            };
                            put(&mut self.buf, mark);
                            put_u64(&mut self.buf, ln);
                            put(&mut self.buf, " ");
                            // One line of code: cut at its newline.
                            let s = self.buf.len();
                            self.code
                                .put_class(&mut self.buf, &mut self.rng, per.max(4), Class::Code);
                            let cut = self.buf[s..].windows(2).position(|w| w == b"\\n");
                            if let Some(p) = cut.filter(|&p| self.code_safe_cut(s, p)) {
                                self.buf.truncate(s + p);
                            }
                            put(&mut self.buf, "\\n");
                        }
                        put(&mut self.buf, "\"}");
                    }
                }
                Tool::Write => {
                    put(&mut self.buf, "Successfully wrote ");
                    put_u64(&mut self.buf, call.written as u64);
                    put(&mut self.buf, " bytes to ");
                    put_esc(&mut self.buf, &call.path);
                    put(&mut self.buf, "\"}]");
                }
            }
        }
        put(
            &mut self.buf,
            if is_error {
                ",\"isError\":true,\"timestamp\":"
            } else {
                ",\"isError\":false,\"timestamp\":"
            },
        );
        put_i64(&mut self.buf, ts - self.rng.range(1, 8) as i64);
        put(&mut self.buf, "}}");
        self.finish(start, id, kind, Role::ToolResult, img_bytes)
    }

    /// What a tool's output looks like: `bash` runs tests and builds, but
    /// also `cat`, `git diff` and `rg`.
    fn output_class(&mut self, tool: Tool) -> Class {
        match tool {
            Tool::Read => Class::Code,
            Tool::Grep => Class::Grep,
            Tool::Bash => [
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Code,
                Class::Code,
                Class::Code,
                Class::Grep,
                Class::Grep,
            ][self.rng.below(10) as usize],
            _ => Class::Shell,
        }
    }

    /// Whether `\n` found at `buf[s + p..]` is a real newline escape (an even
    /// number of backslashes before it).
    fn code_safe_cut(&self, s: usize, p: usize) -> bool {
        let mut k = s + p;
        let mut n = 0;
        while k > s && self.buf[k - 1] == b'\\' {
            k -= 1;
            n += 1;
        }
        n % 2 == 0
    }

    // ----- exact-size fillers at the end -----

    /// Fills the remaining bytes with user/assistant messages of exact
    /// sizes, ending on an assistant message when the room allows.
    fn fill(&mut self) -> io::Result<()> {
        let a_min = if self.small { 520 } else { 700 };
        let u_min = 200;
        let c_min = 150;
        let a_max = self.p.fill_assistant_max;
        let u_max = self.p.fill_user_max;
        let c_max = if self.small { 590 } else { 4_000 };
        // A session holds at least one user and one assistant message.
        let mut need_user = self.kinds[Kind::User as usize].0 + self.kinds[Kind::UserImage as usize].0 == 0;
        self.pending.clear();
        loop {
            let r = self.remaining();
            if r < c_min as i64 {
                break;
            }
            let r = r as usize;
            if need_user {
                let s = r.saturating_sub(a_min).min(u_max).max(u_min);
                self.fill_message(s, true)?;
                need_user = false;
                continue;
            }
            if (a_min..=a_max).contains(&r) {
                self.fill_message(r, false)?;
                break;
            }
            if r < a_min {
                self.fill_custom(r.min(c_max))?;
                break;
            }
            // r > a_max: a user or assistant message leaving at least a_min.
            let last_user = self.path.last().is_some_and(|n| n.role == Role::User);
            let room = r - a_min;
            if !last_user && room >= u_min {
                self.fill_message(room.min(u_max), true)?;
            } else if room >= a_min {
                self.fill_message(room.min(a_max), false)?;
            } else {
                self.fill_custom(room.min(c_max).max(c_min))?;
            }
        }
        Ok(())
    }

    /// A user or assistant message of exactly `size` bytes (or the smallest
    /// possible if `size` is below that).
    fn fill_message(&mut self, size: usize, user: bool) -> io::Result<()> {
        let msg_ts = self.tick(1, 20);
        let ts = if user {
            self.tick(3_000, 200_000)
        } else {
            self.tick(800, 20_000)
        };
        let (start, id) = self.head("message", ts);
        // Suffix first, to know how long the text must be.
        let mut suf = std::mem::take(&mut self.scratch);
        suf.clear();
        if user {
            put(
                &mut self.buf,
                ",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"",
            );
            put(&mut suf, "\"}],\"timestamp\":");
            put_i64(&mut suf, msg_ts);
            put(&mut suf, "}}\n");
        } else {
            put(
                &mut self.buf,
                ",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"",
            );
            let m = self.cur_model();
            let mark = self.buf.len();
            put(&mut self.buf, "\"}],\"api\":\"");
            put(&mut self.buf, m.api);
            put(&mut self.buf, "\",\"provider\":\"");
            put(&mut self.buf, m.provider);
            put(&mut self.buf, "\",\"model\":\"");
            put(&mut self.buf, m.id);
            put(&mut self.buf, "\",\"usage\":");
            let cr = self.ctx_tokens().min(150_000);
            let i = self.rng.range(1, 9);
            let o = self.rng.range(20, 900);
            let w = self.rng.range(0, 900);
            self.put_usage(i, o, cr, w);
            put(&mut self.buf, ",\"stopReason\":\"stop\",\"timestamp\":");
            put_i64(&mut self.buf, msg_ts);
            put(&mut self.buf, "}}\n");
            suf.extend_from_slice(&self.buf[mark..]);
            self.buf.truncate(mark);
        }
        let used = self.buf.len() - start + suf.len();
        let text = size.saturating_sub(used).max(1);
        self.prose.put_exact(&mut self.buf, &mut self.rng, text);
        self.buf.extend_from_slice(&suf[..suf.len() - 1]);
        self.scratch = suf;
        let role = if user { Role::User } else { Role::Assistant };
        let kind = if user { Kind::User } else { Kind::Assistant };
        self.finish(start, id, kind, role, 0)
    }

    /// A `custom` entry of exactly `size` bytes (at least ~140).
    fn fill_custom(&mut self, size: usize) -> io::Result<()> {
        let ts = self.tick(10, 2_000);
        let start = self.buf.len();
        let id = self.new_id();
        put(
            &mut self.buf,
            "{\"type\":\"custom\",\"customType\":\"notes\",\"data\":{\"text\":\"",
        );
        let mut suf = std::mem::take(&mut self.scratch);
        suf.clear();
        let mark = self.buf.len();
        put(&mut self.buf, "\"},\"id\":\"");
        put_id(&mut self.buf, id);
        self.put_parent_ts(ts);
        put(&mut self.buf, "}\n");
        suf.extend_from_slice(&self.buf[mark..]);
        self.buf.truncate(mark);
        let used = self.buf.len() - start + suf.len();
        let text = size.saturating_sub(used);
        self.prose.put_exact(&mut self.buf, &mut self.rng, text);
        self.buf.extend_from_slice(&suf[..suf.len() - 1]);
        self.scratch = suf;
        self.finish(start, id, Kind::Custom, Role::Other, 0)
    }
}

fn bash_command(r: &mut Rng, s: &mut String, cwd: &str, small: bool) {
    match r.below(10) {
        0 => {
            if !small {
                let _ = write!(s, "cd {cwd} && ");
            }
            s.push_str("npm run check");
        }
        1 => s.push_str("git status --short"),
        2 => s.push_str("git diff --stat HEAD~1"),
        3 => {
            s.push_str("rg -n \"");
            if small {
                s.push_str(r.pick(WORDS));
            } else {
                camel(r, s, false);
            }
            s.push_str("\" src/");
        }
        4 if small => {
            s.push_str("cargo test ");
            s.push_str(r.pick(WORDS));
        }
        4 => {
            s.push_str("cargo test --release -- ");
            snake(r, s);
        }
        5 => {
            s.push_str("ls -la ");
            s.push_str(r.pick(DIRS));
        }
        6 => {
            s.push_str("cat ");
            if small {
                short_path(r, s);
            } else {
                rel_path(r, s);
                s.push_str(" | head -50");
            }
        }
        7 => {
            s.push_str("find . -name \"*.");
            s.push_str(r.pick(EXTS));
            s.push('"');
            if !small {
                s.push_str(" -newer package.json");
            }
        }
        8 => {
            s.push_str("npx vitest run ");
            if small {
                short_path(r, s);
            } else {
                rel_path(r, s);
            }
        }
        _ => {
            s.push_str("git log --oneline -");
            let _ = write!(s, "{}", r.range(5, 30));
        }
    }
}

fn session_name(r: &mut Rng, s: &mut String) {
    match r.below(10) {
        0 => {
            s.push_str("Fix flaky ");
            s.push_str(r.pick(WORDS));
            s.push_str(" test");
        }
        1 => {
            s.push_str("Refactor ");
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
        }
        2 => {
            s.push_str("Port ");
            s.push_str(r.pick(WORDS));
            s.push_str(" parser to Rust");
        }
        3 => {
            s.push_str("Investigate ");
            s.push_str(r.pick(WORDS));
            s.push_str(" regression");
        }
        4 => {
            cap_first(s, r.pick(WORDS));
            s.push_str(" perf ");
            s.push_str(r.pick(UNI));
        }
        5 => {
            s.push_str("Add ");
            s.push_str(r.pick(WORDS));
            s.push_str(" support to ");
            camel(r, s, true);
        }
        6 => s.push_str(r.pick(&[
            "Überarbeitung der Sitzungen",
            "修复 session 解析",
            "🚀 release prep",
            "café order bug",
        ])),
        7 => {
            s.push_str("  ");
            cap_first(s, r.pick(VERBS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            s.push_str("s  ");
        }
        _ => {
            cap_first(s, r.pick(VERBS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            let _ = write!(s, " #{}", r.range(1, 999));
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn gen_bytes(seed: u64, target: u64, mix: Mix) -> (Vec<u8>, GenStats) {
        let spec = SessionSpec {
            mix,
            ..SessionSpec::new(seed, target)
        };
        let mut v = Vec::new();
        let st = write_session(&spec, &mut v).unwrap();
        (v, st)
    }

    /// Parses every line, checks ids, parents and timestamps; returns the
    /// parsed entries.
    fn check_file(bytes: &[u8], small: bool) -> Vec<serde_json::Value> {
        assert_eq!(bytes.last(), Some(&b'\n'));
        let mut ids = HashSet::new();
        let mut last_ts = String::new();
        let mut out = Vec::new();
        for (i, line) in bytes[..bytes.len() - 1].split(|&b| b == b'\n').enumerate() {
            if small {
                assert!(
                    (100..SMALL_MAX_LINE).contains(&line.len()),
                    "line {} has {} bytes",
                    i + 1,
                    line.len()
                );
            }
            let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
            let o = v.as_object().expect("object");
            let ty = o["type"].as_str().expect("type");
            if i == 0 {
                assert_eq!(ty, "session");
                assert_eq!(o["version"], 3);
                continue;
            }
            let id = o["id"].as_str().expect("id");
            assert_eq!(id.len(), 8);
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
            match &o["parentId"] {
                serde_json::Value::Null => assert_eq!(i, 1, "only the first entry is a root"),
                serde_json::Value::String(p) => assert!(ids.contains(p.as_str()), "line {}: parent {p} unknown", i + 1),
                other => panic!("parentId {other:?}"),
            }
            assert!(ids.insert(id.to_string()), "duplicate id {id}");
            let ts = o["timestamp"].as_str().unwrap().to_string();
            assert!(ts > last_ts, "timestamps increase");
            last_ts = ts;
            out.push(v);
        }
        out
    }

    #[test]
    fn same_seed_same_bytes() {
        for mix in [Mix::Realistic, Mix::SmallEntries] {
            let (a, sa) = gen_bytes(7, 300_000, mix);
            let (b, sb) = gen_bytes(7, 300_000, mix);
            assert!(a == b);
            assert_eq!(sa, sb);
            let (c, _) = gen_bytes(8, 300_000, mix);
            assert!(a != c);
        }
    }

    #[test]
    fn size_within_tolerance() {
        for (seed, target, mix) in [
            (1, 5_000, Mix::Realistic),
            (2, 100_000, Mix::Realistic),
            (3, 3_000_000, Mix::Realistic),
            (4, 5_000, Mix::SmallEntries),
            (5, 250_000, Mix::SmallEntries),
        ] {
            let (v, st) = gen_bytes(seed, target, mix);
            assert_eq!(v.len() as u64, st.bytes);
            let diff = (st.bytes as i64 - target as i64).abs();
            assert!(diff <= 200, "seed {seed}: {} bytes for {target}", st.bytes);
            assert_eq!(st.lines as usize, v.iter().filter(|&&b| b == b'\n').count());
        }
    }

    #[test]
    fn lines_are_valid_entries() {
        let (v, st) = gen_bytes(11, 12_000_000, Mix::Realistic);
        let entries = check_file(&v, false);
        assert_eq!(entries.len() as u64, st.entries);
        assert_eq!(entries.last().unwrap()["id"].as_str().unwrap(), st.leaf_id);
        assert!(st.images >= 1 && st.branches >= 1 && st.compactions >= 1, "{st:?}");
        let types: HashSet<&str> = entries.iter().map(|e| e["type"].as_str().unwrap()).collect();
        for t in [
            "message",
            "model_change",
            "thinking_level_change",
            "compaction",
            "label",
            "custom",
            "context_edit",
        ] {
            assert!(types.contains(t), "no {t}");
        }
        let (v, _) = gen_bytes(12, 400_000, Mix::SmallEntries);
        check_file(&v, true);
    }

    #[test]
    fn tool_results_answer_calls() {
        let (v, _) = gen_bytes(21, 2_000_000, Mix::Realistic);
        let entries = check_file(&v, false);
        let mut calls = HashSet::new();
        for e in &entries {
            let m = &e["message"];
            if m["role"] == "assistant" {
                for b in m["content"].as_array().unwrap() {
                    if b["type"] == "toolCall" {
                        calls.insert(b["id"].as_str().unwrap().to_string());
                    }
                }
            } else if m["role"] == "toolResult" {
                assert!(calls.contains(m["toolCallId"].as_str().unwrap()));
            }
        }
    }

    #[test]
    fn compaction_keeps_an_entry_on_the_path() {
        let (v, _) = gen_bytes(31, 3_000_000, Mix::SmallEntries);
        let entries = check_file(&v, true);
        let parent: std::collections::HashMap<&str, &str> = entries
            .iter()
            .filter_map(|e| Some((e["id"].as_str()?, e["parentId"].as_str()?)))
            .collect();
        let mut n = 0;
        for e in entries.iter().filter(|e| e["type"] == "compaction") {
            let id = e["id"].as_str().unwrap();
            let kept = e["firstKeptEntryId"].as_str().unwrap();
            let mut cur = Some(id);
            let mut found = false;
            while let Some(c) = cur {
                if c == kept {
                    found = true;
                    break;
                }
                cur = parent.get(c).copied();
            }
            assert!(found, "compaction {id} keeps {kept}, not on its path");
            n += 1;
        }
        assert!(n > 0);
    }

    #[test]
    fn numbers_and_dates_format_like_javascript() {
        let f = |v: f64| {
            let mut b = Vec::new();
            put_f64(&mut b, v);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(f(0.0), "0");
        assert_eq!(f(3.0), "3");
        assert_eq!(f(0.013875000000000002), "0.013875000000000002");
        assert_eq!(f(0.000005), "0.000005");
        assert_eq!(f(3e-7), "3e-7");
        assert_eq!(f(1.5e-7), "1.5e-7");
        let mut b = Vec::new();
        put_iso(&mut b, 1_765_233_665_292);
        assert_eq!(b, b"2025-12-08T22:41:05.292Z");
        b.clear();
        put_esc(&mut b, "a\"b\\c\n\t\u{1b}é🚀\u{8}\u{c}\r");
        assert_eq!(b, "a\\\"b\\\\c\\n\\t\\u001bé🚀\\b\\f\\r".as_bytes());
        let u = uuid_v7(1_765_233_665_292, &mut Rng::new(1));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "7");
    }

    #[test]
    fn tree_layout() {
        let dir = std::env::temp_dir().join(format!("pi-gen-tree-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let spec = TreeSpec {
            seed: 5,
            sessions: 30,
            folders: 4,
            total_bytes: 3_000_000,
            start_ms: 1_760_000_000_000,
        };
        let st = write_sessions_tree(&spec, &dir).unwrap();
        assert_eq!(st.sessions, 30);
        assert_eq!(st.folders, 4);
        let diff = (st.bytes as i64 - 3_000_000i64).abs();
        assert!(diff < 30 * 300, "{} bytes", st.bytes);
        for f in &st.files {
            let name = f.path.file_name().unwrap().to_str().unwrap();
            assert!(name.ends_with(&format!("_{}.jsonl", f.session_id)));
            let folder = f.path.parent().unwrap().file_name().unwrap().to_str().unwrap();
            assert_eq!(folder, format!("--{}--", f.cwd[1..].replace('/', "-")));
            let meta = fs::metadata(&f.path).unwrap();
            assert_eq!(meta.len(), f.bytes);
            let mtime = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
            assert_eq!(mtime, f.modified_ms);
            check_file(&fs::read(&f.path).unwrap(), false);
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
