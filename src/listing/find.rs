//! Lookups that read headers only: pi's `readSessionHeader`, `findById` and
//! `findMostRecentSession`.

use super::dirs::Env;
use super::read::mtime_ms;
use super::run::{cwd_matches, join_name, jsonl_names, project_dir};
use crate::js::sort::v8_sort_by;
use crate::js::string::JsStr;
use crate::json::Value;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// pi's `readSessionHeader` for discovery: the first parsed line of the first MiB, when it
/// is a header (`type` "session" and a string `id`); `None` otherwise or when unreadable.
pub fn read_session_header(path: &Path) -> Option<Value<'static>> {
    const LIMIT: usize = 1 << 20;
    let file = File::open(path).ok()?;
    let mut buf = Vec::with_capacity(4096);
    file.take(LIMIT as u64 + 1).read_to_end(&mut buf).ok()?;
    let over = buf.len() > LIMIT;
    buf.truncate(LIMIT);
    let mut pos = 0;
    loop {
        let (line, next) = match memchr::memchr(b'\n', &buf[pos..]) {
            Some(o) => (&buf[pos..pos + o], Some(pos + o + 1)),
            None if over => return None,
            None => (&buf[pos..], None),
        };
        if let Ok(v) = crate::json::value::parse(line)
            && v.truthy()
        {
            let ok = v
                .get("type")
                .and_then(Value::as_js_str)
                .is_some_and(|t| t.as_bytes() == b"session")
                && matches!(v.get("id"), Some(Value::String(_)));
            return ok.then(|| v.into_owned());
        }
        pos = next?;
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
