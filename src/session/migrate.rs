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
