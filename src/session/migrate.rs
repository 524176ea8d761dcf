//! pi's migration on open: the format version decides the steps (v1 -> v2: fresh ids and
//! parent links; v2 -> v3: `hookMessage` roles become `custom`), applied in memory over the
//! index and to each entry as it is decoded, never to the bytes. What pi would write back
//! (the whole file rewritten, or a header for a zero-byte file) is [`rewrite_text`]: the
//! writer writes it and the oracle's report shows it.

use crate::error::{ErrorKind, Result};
use crate::index::{EntryPos, EntryType, Key};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value};
use crate::session::{Migration, Patch, Session, key_to_value, line_of};

impl Session {
    /// Decide pi's migration from the header's `version` and, for a v1 file, give every
    /// entry a fresh id and chain each to the previous one (pi's `migrateV1ToV2`); the
    /// v2 -> v3 step and v1's compaction fields are applied per entry by [`Session::patch`].
    pub(super) fn migrate(&mut self, uuid4: &mut dyn FnMut() -> String) -> Result<()> {
        let bytes = self.source.bytes();
        let header = value::parse(line_of(bytes, &self.index.get(bytes, 0))).map_err(|_| self.changed())?;
        let version = match header.get("version") {
            None | Some(Value::Null) => Some(1.0),
            Some(v) => Some(crate::json::value::js_to_number(v)),
        };
        let v = version.unwrap_or(f64::NAN);
        // `version >= 3` is false for NaN, and so are `< 2` and `< 3`.
        self.migration = if v >= 3.0 {
            Migration::None
        } else if v < 2.0 {
            Migration::FromV1
        } else if v < 3.0 {
            Migration::FromV2
        } else {
            Migration::RewriteOnly
        };
        if self.migration != Migration::FromV1 {
            return Ok(());
        }
        // v1 -> v2: fresh ids, each entry's parent is the previous entry.
        let mut stable;
        let uuid4: &mut dyn FnMut() -> String = match self.opts.v1_ids {
            crate::session::V1Ids::Random => uuid4,
            crate::session::V1Ids::Stable => {
                stable = stable_ids(line_of(bytes, &self.index.get(bytes, 0)));
                &mut stable
            }
        };
        let mut ids: ahash::AHashSet<Key> = ahash::AHashSet::new();
        let mut prev = Key::Null;
        let n = self.index.len();
        for i in 0..n {
            let e = self.index.get(bytes, i);
            if e.ty == EntryType::Session {
                continue;
            }
            if e.ty == EntryType::NonObject {
                let line = line_of(bytes, &e);
                let first = line
                    .iter()
                    .copied()
                    .find(|&c| !<crate::json::ws::Json as crate::json::ws::WhiteSpace>::is_ws(c))
                    .unwrap_or(b'[');
                if first != b'[' {
                    let v = value::parse(line).map_err(|_| self.changed())?;
                    let pi_message = format!(
                        "TypeError: Cannot create property 'id' on {} '{}'",
                        v.type_of(),
                        v.to_js_string()
                    );
                    return Err(ErrorKind::PiThrows {
                        line: e.line,
                        what: "a v1 session holds a line that is not an object, which pi's migration cannot give an id"
                            .into(),
                        pi_message,
                    }
                    .into());
                }
            }
            let id = generate_id(&ids, uuid4);
            ids.insert(id.clone());
            let is_compaction = e.ty == EntryType::Compaction;
            let line = line_of(bytes, &e);
            let parent = std::mem::replace(&mut prev, id.clone());
            self.index.set_keys(i, id, parent);
            if is_compaction {
                let v = value::parse(line).map_err(|_| self.changed())?;
                if let Some(Value::Number(idx)) = v.get("firstKeptEntryIndex") {
                    let target = if idx.fract() == 0.0 && *idx >= 0.0 && (*idx as usize) < n {
                        Some(self.index.get(bytes, *idx as usize))
                    } else {
                        None
                    };
                    let first_kept = match target {
                        Some(t) if t.ty != EntryType::Session => Some(t.id.to_key()),
                        _ => None,
                    };
                    self.patches.insert(
                        i as u32,
                        Patch {
                            first_kept,
                            drop_first_kept_index: true,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// Apply pi's in-memory migration to a decoded entry.
    pub(super) fn patch(&self, pos: EntryPos, v: &mut Value<'_>) {
        if self.migration == Migration::None || self.migration == Migration::RewriteOnly {
            return;
        }
        let e = self.record(pos);
        let Value::Object(o) = v else { return };
        if e.ty == EntryType::Session {
            o.set(JsStr::from_str("version"), Value::Number(3.0));
            return;
        }
        if self.migration == Migration::FromV1 {
            o.set(JsStr::from_str("id"), key_to_value(e.id));
            o.set(JsStr::from_str("parentId"), key_to_value(e.parent));
            if let Some(p) = self.patches.get(&pos.0) {
                match &p.first_kept {
                    Some(k) if !k.is_undefined() => o.set(JsStr::from_str("firstKeptEntryId"), key_to_value(k)),
                    // Assigned `undefined`: the key exists but JSON output omits it.
                    Some(_) => {
                        o.remove("firstKeptEntryId");
                    }
                    None => {}
                }
                if p.drop_first_kept_index {
                    o.remove("firstKeptEntryIndex");
                }
            }
        }
        if e.ty == EntryType::Message
            && let Some(Value::Object(m)) = o.get_mut("message")
            && m.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            m.set(JsStr::from_str("role"), Value::str("custom"));
        }
    }

    /// The header pi writes into a zero-byte file on open (a UUIDv7 id, now, the cwd).
    pub(super) fn new_header_value() -> Value<'static> {
        let id = uuid::Uuid::now_v7().hyphenated().to_string();
        let cwd = std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "/".into());
        let mut o = Object::new();
        o.set(JsStr::from_str("type"), Value::str("session"));
        o.set(JsStr::from_str("version"), Value::Number(3.0));
        o.set(JsStr::owned(String::from("id")), Value::string(id));
        o.set(JsStr::from_str("timestamp"), Value::string(crate::js::time::now_iso()));
        o.set(JsStr::from_str("cwd"), Value::string(cwd));
        Value::Object(o)
    }
}

/// [`V1Ids::Stable`](crate::session::V1Ids)'s generator: UUID-shaped text from a
/// splitmix64 stream seeded with the SHA-256 of the header line.
fn stable_ids(header: &[u8]) -> impl FnMut() -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(header);
    let mut state = u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8]));
    move || {
        let (a, b) = (splitmix64(&mut state), splitmix64(&mut state));
        uuid::Uuid::from_u64_pair(a, b).hyphenated().to_string()
    }
}

/// The next number of the splitmix64 stream whose state is `state`.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// pi's `generateId`: the first 8 characters of a random UUID, re-drawn on collision
/// (100 tries, then a whole UUID).
pub(crate) fn generate_id(taken: &ahash::AHashSet<Key>, uuid4: &mut dyn FnMut() -> String) -> Key {
    for _ in 0..100 {
        let u = uuid4();
        let k = Key::str(u.get(..8).unwrap_or(&u));
        if !taken.contains(&k) {
            return k;
        }
    }
    Key::str(&uuid4())
}

/// The bytes pi writes when it rewrites the file on open: `JSON.stringify` of every kept
/// line as pi holds it in memory, one per line.
///
/// # Errors
/// [`ErrorKind::FileChanged`].
pub fn rewrite_text(s: &Session) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if s.index().is_empty() {
        crate::json::stringify::stringify_into(&mut out, &s.header()?);
        out.push(b'\n');
        return Ok(out);
    }
    for i in 0..s.index().len() {
        let v = s.value(EntryPos(i as u32))?;
        crate::json::stringify::stringify_into(&mut out, &v);
        out.push(b'\n');
    }
    Ok(out)
}

/// One change pi's migration makes to an entry held in memory: at entry `at` of the array,
/// the member at `path` (`["message", "role"]`) gets `change`.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationEdit {
    /// The entry's place in the array.
    pub at: usize,
    /// The member's path from the entry.
    pub path: &'static [&'static str],
    /// What becomes of it.
    pub change: Change,
}

/// What pi's migration does to a member.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Assigned this value.
    Set(Value<'static>),
    /// Assigned `undefined` (the key stays; JSON leaves it out).
    SetUndefined,
    /// Deleted.
    Delete,
}

/// What [`migrate_entries`] found pi's migration does.
#[derive(Debug)]
pub struct Migrated {
    /// The changes, in pi's order.
    pub edits: Vec<MigrationEdit>,
    /// Whether a migration applied (pi's `migrateToCurrentVersion` returns it).
    pub ran: bool,
    /// What pi throws, after making `edits` (its changes are in place when it throws).
    pub thrown: Option<crate::Error>,
}

/// pi's `migrateSessionEntries(entries)` (its `migrateToCurrentVersion`) over entries held
/// in memory, as the changes it makes to them, in pi's order (the caller applies them to
/// its own objects). The header is the first entry of type `session`, wherever it is;
/// version 1 gives every other entry an id from `uuid4` (pi's `generateId` over a set it
/// never adds to) and the one before it as parent, and a compaction's
/// `firstKeptEntryIndex` (an index into `entries`) becomes `firstKeptEntryId`; below
/// version 3, `hookMessage` roles become `custom`. The same rules on a file are
/// [`Session`]'s migration on open.
///
/// pi throws ([`ErrorKind::PiThrows`] in [`Migrated::thrown`]) on an entry that is `null`
/// (it reads its `type`) or, for version 1, one that is no object (it gives it an id).
pub fn migrate_entries(entries: &[Value<'_>], uuid4: &mut dyn FnMut() -> String) -> Migrated {
    let mut edits = Vec::new();
    let (ran, thrown) = match migrate_into(entries, uuid4, &mut edits) {
        Ok(ran) => (ran, None),
        Err(e) => (true, Some(e)),
    };
    Migrated { edits, ran, thrown }
}

fn migrate_into(
    entries: &[Value<'_>],
    uuid4: &mut dyn FnMut() -> String,
    edits: &mut Vec<MigrationEdit>,
) -> Result<bool> {
    let throws = |at: usize, what: &str, pi_message: String| -> crate::Error {
        ErrorKind::PiThrows {
            line: crate::index::LineNo(at as u64 + 1),
            what: what.into(),
            pi_message,
        }
        .into()
    };
    // `entry.type`, which throws on `null`.
    let ty = |at: usize| -> Result<Option<&str>> {
        match &entries[at] {
            Value::Null => Err(throws(
                at,
                "an entry is null",
                "TypeError: Cannot read properties of null (reading 'type')".into(),
            )),
            v => Ok(v.get("type").and_then(Value::as_str)),
        }
    };
    let mut header = None;
    for (at, e) in entries.iter().enumerate() {
        if ty(at)? == Some("session") {
            header = Some(e);
            break;
        }
    }
    // `header?.version ?? 1`, compared as JavaScript compares it (NaN: no step runs, and
    // pi still says it migrated).
    let version = match header.and_then(|h| h.get("version")) {
        None | Some(Value::Null) => 1.0,
        Some(v) => value::js_to_number(v),
    };
    if version >= 3.0 {
        return Ok(false);
    }
    let mut edit = |at, path, change| edits.push(MigrationEdit { at, path, change });
    if version < 2.0 {
        let none = ahash::AHashSet::new();
        let mut ids: Vec<Option<Key>> = vec![None; entries.len()];
        let mut prev = Value::Null;
        for (at, e) in entries.iter().enumerate() {
            if ty(at)? == Some("session") {
                edit(at, &["version"], Change::Set(Value::Number(2.0)));
                continue;
            }
            if !matches!(e, Value::Object(_) | Value::Array(_)) {
                return Err(throws(
                    at,
                    "an entry that is not an object cannot be given an id",
                    format!(
                        "TypeError: Cannot create property 'id' on {} '{}'",
                        e.type_of(),
                        e.to_js_string()
                    ),
                ));
            }
            let id = generate_id(&none, uuid4);
            let id_value = key_to_value(&id);
            edit(at, &["id"], Change::Set(id_value.clone()));
            edit(at, &["parentId"], Change::Set(std::mem::replace(&mut prev, id_value)));
            ids[at] = Some(id);
            if ty(at)? == Some("compaction")
                && let Some(Value::Number(idx)) = e.get("firstKeptEntryIndex")
            {
                // `entries[idx]`, when truthy and no header: an entry up to this one has its
                // new id, a later one still its old (pi assigns them in order).
                let target = (idx.fract() == 0.0 && *idx >= 0.0)
                    .then(|| entries.get(*idx as usize).map(|t| (*idx as usize, t)))
                    .flatten()
                    .filter(|(_, t)| t.truthy());
                if let Some((t, target)) = target
                    && target.get("type").and_then(Value::as_str) != Some("session")
                {
                    let id = match &ids[t] {
                        Some(k) => Some(key_to_value(k)),
                        None => target.get("id").map(|v| v.clone().into_owned()),
                    };
                    edit(at, &["firstKeptEntryId"], id.map_or(Change::SetUndefined, Change::Set));
                }
                edit(at, &["firstKeptEntryIndex"], Change::Delete);
            }
        }
    }
    if version < 3.0 {
        for (at, e) in entries.iter().enumerate() {
            if ty(at)? == Some("session") {
                edit(at, &["version"], Change::Set(Value::Number(3.0)));
            } else if ty(at)? == Some("message")
                && let Some(m) = e.get("message")
                && m.truthy()
                && m.get("role").and_then(Value::as_str) == Some("hookMessage")
            {
                edit(at, &["message", "role"], Change::Set(Value::str("custom")));
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::OpenOptions;
    use crate::source::Source;

    /// UUID-shaped ids, the same sequence for both sides.
    fn ids() -> impl FnMut() -> String {
        let mut n = 0u32;
        move || {
            n += 1;
            format!("{n:08x}-0000-4000-8000-000000000000")
        }
    }

    fn apply(values: &mut [Value<'static>], edits: &[MigrationEdit]) {
        for e in edits {
            let (last, parents) = e.path.split_last().expect("a path");
            let mut v = &mut values[e.at];
            for k in parents {
                v = match v {
                    Value::Object(o) => o.get_mut(k).expect("the member the edit goes into"),
                    _ => panic!("edit {e:?} goes into no object"),
                };
            }
            let Value::Object(o) = v else {
                // (An array entry gets members JSON cannot show.)
                continue;
            };
            match &e.change {
                Change::Set(x) => o.set(JsStr::owned((*last).to_string()), x.clone()),
                Change::SetUndefined | Change::Delete => {
                    o.remove(last);
                }
            }
        }
    }

    /// The two paths of pi's migration, entries held in memory and a file opened, give
    /// the same entries on every old-format file of the corpus.
    #[test]
    fn entries_held_in_memory_migrate_as_their_file_does() {
        let mut checked = 0;
        for dir in ["corpus/valid", "corpus/malformed"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            for f in std::fs::read_dir(&dir).expect("the corpus") {
                let f = f.expect("a corpus file").path();
                let bytes = std::fs::read(&f).expect("read");
                let Ok(s) =
                    Session::from_source_with_ids(Source::from_bytes(bytes), OpenOptions::default(), &mut ids())
                else {
                    continue;
                };
                if matches!(s.migration(), Migration::None | Migration::RewriteOnly) {
                    continue;
                }
                let mut values: Vec<Value<'static>> = (0..s.index().len())
                    .map(|i| {
                        value::parse(s.raw(EntryPos(i as u32)))
                            .expect("a kept line")
                            .into_owned()
                    })
                    .collect();
                let m = migrate_entries(&values, &mut ids());
                assert!(m.ran && m.thrown.is_none(), "{}: {:?}", f.display(), m.thrown);
                apply(&mut values, &m.edits);
                for (i, v) in values.iter().enumerate() {
                    assert_eq!(
                        v,
                        &s.value(EntryPos(i as u32)).expect("an entry"),
                        "{} entry {i}",
                        f.display()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 4, "only {checked} old-format files");
    }
}
