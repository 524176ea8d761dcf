//! pi's in-memory state of an open session: the header, the leaf and where it moves,
//! labels, the session's name, where an entry is in the file.

use super::{Session, key_to_value};
use crate::error::{Error, ErrorKind, Result};
use crate::index::{ByteOffset, EntryPos, EntryType, Key, KeyRef, LineNo, Position};
use crate::js::string::JsStr;
use crate::json::value::{self, Value};

impl Session {
    /// Whether the file was empty (zero bytes): pi's open starts a new session in it, with
    /// a header made in memory ([`Session::header`]: a new random id, the process's cwd)
    /// that the first append writes. Readers that show a session say it holds none.
    pub fn is_empty_file(&self) -> bool {
        self.new_header.is_some()
    }

    /// pi's `getHeader()`, after migration.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    pub fn header(&self) -> Result<Value<'_>> {
        if let Some(h) = &self.new_header {
            return Ok(h.clone());
        }
        self.value(EntryPos(0))
    }

    /// The header's `version` as the file stores it: `None` when it has none (a version-1
    /// file, or a zero-byte file, which has no header yet). [`Session::header`] shows the
    /// header as pi holds it after its migration, with `version` 3.
    ///
    /// ```
    /// let s = pi_session::Session::from_bytes(
    ///     br#"{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#.to_vec(),
    /// ).unwrap();
    /// assert!(s.stored_version().is_none());
    /// assert_eq!(s.header().unwrap().get("version").map(|v| v.stringify()).as_deref(), Some("3"));
    /// ```
    pub fn stored_version(&self) -> Option<Value<'static>> {
        if self.new_header.is_some() || self.index.is_empty() {
            return None;
        }
        let header = value::parse(self.raw(EntryPos(0))).ok()?;
        header.get("version").map(|v| v.clone().into_owned())
    }

    /// The entry with the string id `id`, or else the one entry whose id begins with it
    /// (at least four characters: a short id, as git takes them).
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] when no id is or begins with `id`,
    /// [`ErrorKind::AmbiguousId`] when several ids begin with it.
    ///
    /// ```
    /// # let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
    /// # {\"type\":\"label\",\"id\":\"4bd0512f\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\"}\n\
    /// # {\"type\":\"label\",\"id\":\"4bd07777\",\"parentId\":\"4bd0512f\",\"timestamp\":\"2025-01-01T00:00:02.000Z\"}\n";
    /// let s = pi_session::Session::from_bytes(text.as_bytes().to_vec()).unwrap();
    /// assert_eq!(s.find_prefix("4bd05").unwrap(), s.find("4bd0512f").unwrap());
    /// assert!(s.find_prefix("4bd0").is_err()); // both begin with it
    /// ```
    pub fn find_prefix(&self, id: &str) -> Result<EntryPos> {
        if let Some(p) = self.find(id) {
            return Ok(p);
        }
        let not_found = || -> Error { ErrorKind::EntryNotFound { id: id.to_string() }.into() };
        if id.chars().count() < 4 {
            return Err(not_found());
        }
        let ids = self.ids();
        let mut found: Vec<KeyRef<'_>> = Vec::new();
        for p in self.list.iter() {
            let k = ids.id(p.0 as usize);
            if k.str_bytes().is_some_and(|b| b.starts_with(id.as_bytes())) && !found.contains(&k) {
                found.push(k);
                if found.len() > 10 {
                    break;
                }
            }
        }
        match found.as_slice() {
            [] => Err(not_found()),
            [one] => self.entry_by_id(*one).ok_or_else(not_found),
            many => Err(ErrorKind::AmbiguousId {
                prefix: id.to_string(),
                candidates: many
                    .iter()
                    .take(10)
                    .map(|k| String::from_utf8_lossy(k.str_bytes().unwrap_or_default()).into_owned())
                    .collect(),
            }
            .into()),
        }
    }

    /// pi's `getLeafId()`: the id of the last entry, or where navigation put it.
    pub fn leaf(&self) -> &Key {
        &self.leaf
    }

    /// pi's `getLeafId()` as a value (`null` for none): the leaf entry's own `id` value.
    pub fn leaf_id_value(&self) -> Value<'_> {
        match self.leaf() {
            Key::Unique(_) => self
                .entry_by_id(self.leaf())
                .and_then(|p| self.id_value(p))
                .unwrap_or(Value::Null),
            k => key_to_value(k),
        }
    }

    /// pi's `branch(id)`: move the leaf to an existing entry.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] when no entry has that id.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        let k = Key::str(id);
        if self.entry_by_id(&k).is_none() {
            return Err(ErrorKind::EntryNotFound { id: id.to_string() }.into());
        }
        self.leaf = k;
        Ok(())
    }

    /// pi's `resetLeaf()`: a null leaf (the next append starts a new root).
    pub fn reset_leaf(&mut self) {
        self.leaf = Key::Null;
    }

    /// Set the leaf to any key without checks (pi's free functions take any leaf id).
    pub fn set_leaf_raw(&mut self, leaf: Key) {
        self.leaf = leaf;
    }

    /// The label entry currently labelling `target`, if any.
    pub fn label_entry<'k>(&self, target: impl Into<KeyRef<'k>>) -> Option<EntryPos> {
        if self.labels.is_empty() {
            return None;
        }
        self.labels.get(&target.into().to_key()).map(|l| l.0)
    }

    /// Labelled targets and their label entries, in pi's label-map order.
    pub fn label_order(&self) -> Vec<(Key, EntryPos)> {
        let mut v: Vec<(&Key, &(EntryPos, u64))> = self.labels.iter().collect();
        v.sort_by_key(|(_, (_, seq))| *seq);
        v.into_iter().map(|(k, (p, _))| (k.clone(), *p)).collect()
    }

    /// pi's `getLabel(id)`: the label value of an entry.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    pub fn label(&self, id: &str) -> Result<Option<Value<'_>>> {
        let Some(p) = self.label_entry(&Key::str(id)) else {
            return Ok(None);
        };
        let mut v = self.value(p)?;
        Ok(match &mut v {
            Value::Object(o) => o.remove("label"),
            _ => None,
        })
    }

    /// pi's `getSessionName()`: the latest `session_info` entry's trimmed name (lone
    /// surrogates kept; see [`JsStr::to_str_lossy`] for text).
    ///
    /// # Errors
    /// [`ErrorKind::PiThrows`] when that name is neither a string nor null (pi throws a
    /// `TypeError`), [`ErrorKind::FileChanged`].
    pub fn session_name(&self) -> Result<Option<JsStr<'static>>> {
        let bytes = self.check()?;
        for (i, e) in self.index.iter(bytes).enumerate().rev() {
            if e.ty != EntryType::SessionInfo {
                continue;
            }
            let v = self.value_in(bytes, EntryPos(i as u32))?;
            return match v.get("name") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    let t = crate::js::string::js_trim_wtf8(s.as_bytes());
                    Ok(if t.is_empty() {
                        None
                    } else {
                        Some(JsStr(std::borrow::Cow::Owned(t.to_vec())))
                    })
                }
                Some(_) => Err(ErrorKind::PiThrows {
                    line: e.line,
                    what: "session_info name is not a string".into(),
                    pi_message: "TypeError: entry.name?.trim is not a function".into(),
                }
                .into()),
            };
        }
        Ok(None)
    }

    /// The line of an entry.
    pub fn line_of(&self, pos: EntryPos) -> LineNo {
        self.record(pos).line
    }

    /// The byte offset of an entry.
    pub fn offset_of(&self, pos: EntryPos) -> ByteOffset {
        self.record(pos).offset
    }

    /// Where an entry is: its byte, line and position, as errors and skipped lines say it.
    pub fn position(&self, pos: EntryPos) -> Position {
        let r = self.record(pos);
        Position {
            byte: Some(r.offset),
            line: Some(r.line),
            entry: Some(pos),
        }
    }
}
