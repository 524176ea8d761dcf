//! Lookups that read headers only: pi's `readSessionHeader`, `findById` and
//! `findMostRecentSession`.

use super::dirs::Env;
use super::read::mtime_ms;
use super::run::{cwd_matches, join_name, jsonl_names, project_dir};
use crate::js::sort::v8_sort_by;
use crate::js::string::JsStr;
use crate::json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// pi's `readSessionHeader` for discovery: the first parsed line of the first MiB, when it
/// is a header (`type` "session" and a string `id`); `None` otherwise or when unreadable.
///
/// It reads as far as that line only, in growing chunks (4 KiB first): pi reads the whole
/// first MiB, which for a folder of big sessions is most of their bytes.
///
/// Only a regular file is read: a FIFO or a device named `*.jsonl` is no session (the open
/// never blocks, and the type is checked on the opened descriptor).
pub fn read_session_header(path: &Path) -> Option<Value<'static>> {
    let f = crate::source::open_for_reading(path).ok()?;
    crate::source::regular(&f.metadata().ok()?).ok()?;
    header_from(f, HEADER_LIMIT, 4096)
}

/// What can be said of a session that pi's listing drops (its `buildSessionInfo` throws on
/// it: [`super::SkipFileReason::PiThrows`]) but pi opens all the same: the header's fields
/// (`id`, `cwd`, `parentSessionPath`, `created`), `modified` the file's mtime, no message
/// counted. `None` when the file has no header (or cannot be read). A search reads such a
/// session; a listing never shows it.
pub fn header_session_info(path: &Path) -> Option<super::SessionInfo> {
    let h = read_session_header(path)?;
    let meta = std::fs::metadata(path).ok()?;
    let mut info = super::info::from_header(path, &h);
    info.modified = mtime_ms(&meta).unwrap_or(f64::NAN);
    info.bytes = meta.len();
    Some(info)
}

/// How far pi looks for the header: its first MiB.
pub(crate) const HEADER_LIMIT: usize = 1 << 20;

/// [`read_session_header`] of what `r` reads: the lines that end in the first `limit`
/// bytes (and a last line without a line break when the input is no longer), read
/// `first_chunk` bytes at first, twice as many each time after.
pub(crate) fn header_from(mut r: impl Read, limit: usize, first_chunk: usize) -> Option<Value<'static>> {
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = 0;
    let mut chunk = first_chunk.max(1);
    loop {
        // The lines complete within the first `limit` bytes.
        while let Some(o) = memchr::memchr(b'\n', &buf[pos..buf.len().min(limit)]) {
            if let Some(answer) = header_line(&buf[pos..pos + o]) {
                return answer;
            }
            pos += o + 1;
        }
        if buf.len() > limit {
            // The line goes on past the limit: pi never sees its end.
            return None;
        }
        let old = buf.len();
        buf.resize(old + chunk.min(limit + 1 - old), 0);
        let n = loop {
            match r.read(&mut buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        };
        buf.truncate(old + n);
        if n == 0 {
            // The end: a last line without a line break.
            return header_line(&buf[pos..]).flatten();
        }
        chunk = chunk.saturating_mul(2);
    }
}

/// For a line of the first MiB: `None` when pi reads on (the line does not parse, or
/// parses to a falsy value); else the answer, the header or `None` for no header.
fn header_line(line: &[u8]) -> Option<Option<Value<'static>>> {
    let v = crate::json::value::parse(line).ok().filter(Value::truthy)?;
    let ok = v
        .get("type")
        .and_then(Value::as_js_str)
        .is_some_and(|t| t.as_bytes() == b"session")
        && matches!(v.get("id"), Some(Value::String(_)));
    Some(ok.then(|| v.into_owned()))
}

/// A session whose header `id` begins with the prefix asked for ([`find_by_id_prefix`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdMatch {
    /// The session file.
    pub path: PathBuf,
    /// Its header's `id`.
    pub id: String,
}

/// Every session among the `.jsonl` files of `dirs` whose header `id` begins with
/// `prefix` (headers only, read in parallel), in the order of `dirs` and of the files'
/// names. When one id equals `prefix`, only the sessions with that id are returned (a
/// whole id is never ambiguous with the longer ids it begins).
///
/// pi's `--session` takes "a file path or full/partial ID" and the first session that
/// matches; callers here should refuse an answer of several sessions, as git does with a
/// short hash that names several objects.
pub fn find_by_id_prefix(dirs: &[PathBuf], prefix: &str) -> Vec<IdMatch> {
    use rayon::prelude::*;
    let files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| {
            jsonl_names(d)
                .unwrap_or_default()
                .into_iter()
                .map(move |n| join_name(d, &n))
        })
        .collect();
    let found: Vec<IdMatch> = files
        .into_par_iter()
        .filter_map(|path| {
            let h = read_session_header(&path)?;
            let id = h.get("id").and_then(Value::as_str)?;
            id.starts_with(prefix).then(|| IdMatch {
                id: id.to_owned(),
                path: path.clone(),
            })
        })
        .collect();
    if found.iter().any(|m| m.id == prefix) {
        found.into_iter().filter(|m| m.id == prefix).collect()
    } else {
        found
    }
}

fn header_cwd_matches(env: &Env, h: &Value<'_>, resolved_cwd: &Path) -> bool {
    match h.get("cwd") {
        Some(Value::String(s)) => cwd_matches(env, s, resolved_cwd),
        _ => false,
    }
}

/// pi's `findById(cwd, id, sessionDir)`: the first file (in name order) of the project's
/// folder whose header has this `id` (and, with a custom dir, this cwd). Headers only.
pub fn find_by_id(env: &Env, cwd: &Path, id: &str, session_dir: Option<&Path>, agent_dir: &Path) -> Option<PathBuf> {
    let (dir, filter) = project_dir(env, cwd, session_dir, agent_dir);
    find_by_id_in(env, &dir, id, filter.as_deref())
}

/// [`find_by_id`] in one folder, with an optional resolved-cwd filter.
pub fn find_by_id_in(env: &Env, dir: &Path, id: &str, filter_cwd: Option<&Path>) -> Option<PathBuf> {
    for name in jsonl_names(dir).ok()? {
        let path = join_name(dir, &name);
        let Some(h) = read_session_header(&path) else {
            continue;
        };
        if h.get("id").and_then(Value::as_js_str).map(JsStr::as_bytes) != Some(id.as_bytes()) {
            continue;
        }
        if let Some(c) = filter_cwd
            && !header_cwd_matches(env, &h, c)
        {
            continue;
        }
        return Some(path);
    }
    None
}

/// pi's `findMostRecentSession(dir, cwd?)`: the newest file (by mtime) in `dir` with a
/// header (and, when `filter_cwd` is given, that cwd). `None` when a file cannot be stat'ed,
/// as in pi.
pub fn find_most_recent(env: &Env, dir: &Path, filter_cwd: Option<&Path>) -> Option<PathBuf> {
    let mut files: Vec<(PathBuf, f64)> = Vec::new();
    for name in jsonl_names(dir).ok()? {
        let path = join_name(dir, &name);
        let m = std::fs::metadata(&path).ok().and_then(|m| mtime_ms(&m))?;
        files.push((path, m));
    }
    v8_sort_by(&mut files, |a, b| b.1 - a.1);
    files
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| read_session_header(p).is_some_and(|h| filter_cwd.is_none_or(|c| header_cwd_matches(env, &h, c))))
}
