//! `_manifest.json`: what the export keeps of each session file between runs (its
//! `fstat`, the days it has rows on, its `sessions` row) and the renames and deletions a
//! committed run still has to make; read and written as JSON.

use super::out::{ExportError, FORMAT, MANIFEST, io, new_file, temporary};
use super::rows::SessionRow;
use crate::js::string::JsStr;
use crate::json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What the manifest keeps of a session file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Kept {
    pub(crate) stamp: [u64; 4],
    pub(crate) row: SessionRow,
    pub(crate) entries: u64,
    pub(crate) usage: u64,
    /// The days it has rows on, per table.
    pub(crate) days: [Vec<String>; 2],
    /// The bytes read; the digest of their print (as the listing cache keeps it:
    /// [`crate::source::Print::digest`]); the branch's fingerprint
    /// ([`rows::branch_print`]). A file that grew with all three as they were was appended
    /// to.
    pub(crate) len: u64,
    pub(crate) print: u64,
    pub(crate) branch: u128,
}

/// The manifest: the sessions, and the renames and deletions a committed run still has
/// to make (relative paths; a rename is (temporary, final)).
#[derive(Default)]
pub(crate) struct Manifest {
    pub(crate) sessions: BTreeMap<String, Kept>,
    /// Files that were no session under that stamp, and why: not read again until their
    /// stamp changes.
    pub(crate) no_session: BTreeMap<String, ([u64; 4], String)>,
    pub(crate) renames: Vec<(String, String)>,
    pub(crate) deletions: Vec<String>,
    /// Read from a file of this format; and its `withText`.
    pub(crate) known: bool,
    pub(crate) with_text: bool,
}

// The manifest: JSON, one object per session file, by path.

fn opt_str(v: &Option<String>) -> Value<'static> {
    v.as_ref().map_or(Value::Null, |s| Value::string(s.clone()))
}

fn opt_num(v: Option<i64>) -> Value<'static> {
    v.map_or(Value::Null, |n| Value::Number(n as f64))
}

fn set(o: &mut crate::json::Object<'static>, k: &'static str, v: Value<'static>) {
    o.set(JsStr::from_str(k), v);
}

fn row_value(r: &SessionRow) -> Value<'static> {
    let mut o = crate::json::Object::new();
    set(&mut o, "path", Value::string(r.path.clone()));
    set(&mut o, "id", opt_str(&r.id));
    set(&mut o, "cwd", Value::string(r.cwd.clone()));
    set(&mut o, "name", opt_str(&r.name));
    set(&mut o, "parentSessionPath", opt_str(&r.parent_session_path));
    set(&mut o, "created", opt_num(r.created_ms));
    set(&mut o, "modified", opt_num(r.modified_ms));
    set(&mut o, "messageCount", Value::Number(r.message_count as f64));
    set(&mut o, "firstMessage", Value::string(r.first_message.clone()));
    set(&mut o, "version", r.version.map_or(Value::Null, Value::Number));
    set(&mut o, "headerTimestamp", opt_str(&r.header_timestamp));
    set(&mut o, "fileBytes", Value::Number(r.file_bytes as f64));
    set(&mut o, "lines", Value::Number(r.lines as f64));
    set(&mut o, "entries", Value::Number(r.entries as f64));
    set(&mut o, "skippedLines", Value::Number(r.skipped_lines as f64));
    set(&mut o, "leafId", opt_str(&r.leaf_id));
    Value::Object(o)
}

fn row_of_value(v: &Value<'_>) -> Option<SessionRow> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| match v.get(k) {
        Some(Value::Number(x)) => Some(*x),
        _ => None,
    };
    Some(SessionRow {
        path: s("path")?,
        id: s("id"),
        cwd: s("cwd")?,
        name: s("name"),
        parent_session_path: s("parentSessionPath"),
        created_ms: n("created").map(|x| x as i64),
        modified_ms: n("modified").map(|x| x as i64),
        message_count: n("messageCount")? as u64,
        first_message: s("firstMessage")?,
        version: n("version"),
        header_timestamp: s("headerTimestamp"),
        file_bytes: n("fileBytes")? as u64,
        lines: n("lines")? as u64,
        entries: n("entries")? as u64,
        skipped_lines: n("skippedLines")? as u64,
        leaf_id: s("leafId"),
    })
}

impl Manifest {
    /// Whether the sessions of the manifest can be trusted for a run with `with_text`:
    /// it was read, of this format, made with the same `with_text`.
    pub(crate) fn format_ok(&self, with_text: bool) -> bool {
        self.known && self.with_text == with_text
    }
}

fn strs(v: Option<&Value<'_>>) -> Option<Vec<String>> {
    match v {
        Some(Value::Array(a)) => Some(a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect()),
        _ => None,
    }
}

/// The manifest at `path`; an empty one when it is missing, unreadable, or of another
/// format or `with_text` (its pending renames are kept in any case: they finish a
/// committed run).
pub(crate) fn load_manifest(path: &Path) -> Manifest {
    let mut m = Manifest::default();
    let Ok(bytes) = std::fs::read(path) else { return m };
    let Ok(v) = Value::parse(&bytes) else { return m };
    if let Some(Value::Array(r)) = v.get("renames") {
        for pair in r {
            if let (Some(t), Some(f)) = (
                pair.get("from").and_then(Value::as_str),
                pair.get("to").and_then(Value::as_str),
            ) {
                m.renames.push((t.to_string(), f.to_string()));
            }
        }
    }
    m.deletions = strs(v.get("deletions")).unwrap_or_default();
    if v.get("format") != Some(&Value::Number(FORMAT)) {
        return m;
    }
    m.with_text = matches!(v.get("withText"), Some(Value::Bool(true)));
    if let Some(Value::Array(files)) = v.get("noSession") {
        for f in files {
            if let (Some(path), Some(stamp), Some(why)) = (
                f.get("path").and_then(Value::as_str),
                stamp_from(f.get("stamp")),
                f.get("why").and_then(Value::as_str),
            ) {
                m.no_session.insert(path.to_string(), (stamp, why.to_string()));
            }
        }
    }
    let Some(Value::Array(sessions)) = v.get("sessions") else {
        return m;
    };
    for s in sessions {
        let Some(stamp) = stamp_from(s.get("stamp")) else {
            continue;
        };
        let (Some(row), Some(Value::Number(e)), Some(Value::Number(u)), Some(de), Some(du)) = (
            s.get("row").and_then(row_of_value),
            s.get("entries"),
            s.get("usage"),
            strs(s.get("entryDays")),
            strs(s.get("usageDays")),
        ) else {
            continue;
        };
        let hex = |v: Option<&Value<'_>>| v.and_then(Value::as_str).and_then(|t| u128::from_str_radix(t, 16).ok());
        let (Some(Value::Number(len)), Some(print), Some(branch)) = (
            s.get("len"),
            hex(s.get("print")).and_then(|p| u64::try_from(p).ok()),
            hex(s.get("branch")),
        ) else {
            continue;
        };
        m.sessions.insert(
            row.path.clone(),
            Kept {
                stamp,
                row,
                entries: *e as u64,
                usage: *u as u64,
                days: [de, du],
                len: *len as u64,
                print,
                branch,
            },
        );
    }
    m.known = true;
    m
}

/// A stamp as the manifest keeps it: four strings (64-bit numbers do not fit a double).
pub(crate) fn stamp_value(stamp: &[u64; 4]) -> Value<'static> {
    Value::Array(stamp.iter().map(|x| Value::string(x.to_string())).collect())
}

/// A stamp from the manifest (`None` unless four numbers as strings).
pub(crate) fn stamp_from(v: Option<&Value<'_>>) -> Option<[u64; 4]> {
    match v {
        Some(Value::Array(a)) if a.len() == 4 => {
            let mut st = [0u64; 4];
            for (i, x) in a.iter().enumerate() {
                st[i] = x.as_str()?.parse().ok()?;
            }
            Some(st)
        }
        _ => None,
    }
}

/// The manifest's `sessions` array, as JSON text.
pub(crate) fn sessions_json(m: &Manifest) -> String {
    let strings_of = |v: &[String]| Value::Array(v.iter().map(|f| Value::string(f.clone())).collect());
    let sessions = m
        .sessions
        .values()
        .map(|k| {
            let mut o = crate::json::Object::new();
            set(&mut o, "stamp", stamp_value(&k.stamp));
            set(&mut o, "entries", Value::Number(k.entries as f64));
            set(&mut o, "usage", Value::Number(k.usage as f64));
            set(&mut o, "entryDays", strings_of(&k.days[0]));
            set(&mut o, "usageDays", strings_of(&k.days[1]));
            set(&mut o, "row", row_value(&k.row));
            set(&mut o, "len", Value::Number(k.len as f64));
            let hex = |x: u128| Value::string(format!("{x:032x}"));
            set(&mut o, "print", Value::string(format!("{:016x}", k.print)));
            set(&mut o, "branch", hex(k.branch));
            Value::Object(o)
        })
        .collect();
    Value::Array(sessions).stringify()
}

/// Write the manifest `m` (whose sessions' part is `sessions_json`) under a temporary
/// name, then rename it into place (the commit).
pub(crate) fn save_manifest(
    path: &Path,
    m: &Manifest,
    sessions_json: &str,
    with_text: bool,
) -> Result<(), ExportError> {
    let mut top = crate::json::Object::new();
    set(&mut top, "format", Value::Number(FORMAT));
    set(&mut top, "withText", Value::Bool(with_text));
    let renames = m
        .renames
        .iter()
        .map(|(t, f)| {
            let mut o = crate::json::Object::new();
            set(&mut o, "from", Value::string(t.clone()));
            set(&mut o, "to", Value::string(f.clone()));
            Value::Object(o)
        })
        .collect();
    set(&mut top, "renames", Value::Array(renames));
    let no_session = m
        .no_session
        .iter()
        .map(|(path, (stamp, why))| {
            let mut o = crate::json::Object::new();
            set(&mut o, "path", Value::string(path.clone()));
            set(&mut o, "stamp", stamp_value(stamp));
            set(&mut o, "why", Value::string(why.clone()));
            Value::Object(o)
        })
        .collect();
    set(&mut top, "noSession", Value::Array(no_session));
    set(
        &mut top,
        "deletions",
        Value::Array(m.deletions.iter().map(|f| Value::string(f.clone())).collect()),
    );
    let mut text = Value::Object(top).stringify();
    // `{...}` becomes `{...,"sessions":[...]}`.
    text.pop();
    text.push_str(",\"sessions\":");
    text.push_str(sessions_json);
    text.push_str("}\n");
    let tmp = path.with_file_name(temporary(MANIFEST));
    std::io::Write::write_all(&mut new_file(&tmp)?, text.as_bytes()).map_err(io(&tmp))?;
    crate::files::rename_over(&tmp, path).map_err(io(path))
}
