//! Every entry pi's `SessionManager` appends (`appendMessage`, `appendCompaction`, ...),
//! and the one path they share: the common head of an entry, a fresh id, then
//! [`Writer::append`], which serialises the entry and either appends it to the file or,
//! before the file exists, to the session in memory.

use crate::error::{Error, ErrorKind, InvalidInput, Result};
use crate::index::{EntryType, Key, Role};
use crate::js::string::JsStr;
use crate::json::value::{Object, Value};
use crate::session::context::current_system_message;
use crate::session::{Session, key_to_value};
use crate::write::fs::{append_line, create_exclusive};
use crate::write::journal::{JournalUse, append_locked, with_lock};
use crate::write::{Writer, line_of, object_line, put, set};

impl Writer {
    pub(super) fn new_id(&mut self) -> String {
        for _ in 0..100 {
            let u = (self.entropy.uuid4)();
            let id = u[..8].to_string();
            if self.session.entry_by_id(&Key::str(&id)).is_none() {
                return id;
            }
        }
        (self.entropy.uuid4)()
    }

    /// `this.leafId` as the JSON value a new entry's `parentId` gets (`None`: undefined).
    pub(super) fn parent_value(&self) -> Option<Value<'static>> {
        match self.session.leaf() {
            Key::Undefined => None,
            Key::Unique(_) => self
                .session
                .entry_by_id(self.session.leaf())
                .and_then(|p| self.session.id_value(p))
                .map(Value::into_owned),
            k => Some(key_to_value(k)),
        }
    }

    /// The common head of an entry: `type, id, parentId, timestamp`.
    pub(super) fn head(&mut self, ty: &'static str) -> (Object<'static>, String, String) {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        let mut o = Object::new();
        set(&mut o, "type", Value::str(ty));
        set(&mut o, "id", Value::string(id.clone()));
        put(&mut o, "parentId", self.parent_value());
        set(&mut o, "timestamp", Value::string(ts.clone()));
        (o, id, ts)
    }

    /// `id, parentId, timestamp` at the end of an entry, where pi's custom entries put
    /// them (same id-then-clock order as [`Writer::head`]).
    pub(super) fn stamp_tail(&mut self, o: &mut Object<'_>) -> String {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        set(o, "id", Value::string(id.clone()));
        put(o, "parentId", self.parent_value());
        set(o, "timestamp", Value::string(ts));
        id
    }

    /// pi's `_appendEntry` + `_persist`: serialise, write (or keep in memory), index only
    /// the new line.
    pub(super) fn append(&mut self, entry: Object<'_>) -> Result<()> {
        self.append_bytes(line_of(&Value::Object(entry))).map(|_| ())
    }

    /// Append an entry another serialiser made (a JavaScript host's `JSON.stringify` of
    /// the entry object it keeps): `line` must be one JSON object on one line (a final
    /// `\n` is added when missing). It goes where [`Writer::append_message`]'s line goes:
    /// into memory before the file exists, else to the file under the lock; only it is
    /// indexed, and the leaf moves to it. Returns whether the session was read again
    /// from scratch meanwhile (the file was replaced or rewritten under it, so entries
    /// before may have other positions; the leaf is then the file's last entry).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when `line` is not one JSON object on one line (nothing
    /// written); I/O errors.
    pub fn append_line(&mut self, line: &[u8]) -> Result<bool> {
        let Some(owned) = object_line(line) else {
            return Err(InvalidInput::Entry {
                message: "an appended entry must be one JSON object on one line".into(),
            }
            .into());
        };
        self.append_bytes(owned)
    }

    fn append_bytes(&mut self, line: Vec<u8>) -> Result<bool> {
        let mut rebuilt = false;
        self.last_journal = JournalUse::NotNeeded;
        match (&self.file, self.persist, self.flushed) {
            (Some(path), true, true) => {
                let path = path.clone();
                self.last_journal = append_line(&path, &line, &self.options)?;
                // Whatever else was appended meanwhile is indexed too; nothing is lost. An
                // error means the line is in the file but the session could not take it
                // in (the file changed under it): open the file again.
                rebuilt = self.session.refresh()?.rebuilt;
            }
            (Some(path), true, false) => {
                // Until now the session had no user or assistant message (else it would
                // be in its file): only the new line can start the conversation. Indexed
                // alone, it gets the type, role and id the whole file's index gives it.
                let alone = crate::index::build(&line);
                let rec = alone.iter(&line).next_back();
                match rec.filter(|r| r.ty == EntryType::Message && matches!(r.role, Role::User | Role::Assistant)) {
                    Some(r) => {
                        // pi's first conversation message creates the file with everything.
                        let mut bytes = Vec::with_capacity(self.session.bytes().len() + line.len());
                        bytes.extend_from_slice(self.session.bytes());
                        bytes.extend_from_slice(&line);
                        create_exclusive(path, &bytes)?;
                        let path = path.clone();
                        self.session = Session::open(&path)?;
                        self.session.set_leaf_raw(r.id.to_key());
                        self.flushed = true;
                    }
                    None => {
                        self.session.append_in_memory(&line)?;
                    }
                }
            }
            _ => {
                self.session.append_in_memory(&line)?;
            }
        }
        Ok(rebuilt)
    }

    /// pi's `appendMessage(message)`: returns the new entry's id.
    ///
    /// # Errors
    /// I/O errors (memory and file are then as before).
    pub fn append_message(&mut self, message: Value<'_>) -> Result<String> {
        let (mut o, id, _) = self.head("message");
        set(&mut o, "message", message);
        self.append(o)?;
        Ok(id)
    }

    /// [`Writer::append_message`] with the file brought up to date under the append lock
    /// first: the lock is taken, what other processes appended since the open is taken in
    /// (the leaf moves to the file's last entry, as on opening), and only then is the entry
    /// made, its parent that leaf, and appended, before the lock is let go. For a one-shot
    /// writer (the command line's `append`): two of them appending to one file at once each
    /// put their entry on the current branch. A writer that keeps a leaf of its own, as
    /// pi's `SessionManager` does, uses [`Writer::append_message`]. Before the session has
    /// a file (or in memory) the two are the same.
    ///
    /// # Errors
    /// As [`Writer::append_message`]; the lock stayed taken past the writer's wait.
    pub fn append_message_at_file_leaf(&mut self, message: Value<'_>) -> Result<String> {
        let (Some(path), true, true) = (self.file.clone(), self.persist, self.flushed) else {
            return self.append_message(message);
        };
        let opts = self.options;
        with_lock(&path, &opts, |file, _| {
            self.session.refresh()?;
            let (mut o, id, _) = self.head("message");
            set(&mut o, "message", message);
            let (_, used) = append_locked(file, &path, &line_of(&Value::Object(o)), false)?;
            self.last_journal = used;
            self.session.refresh()?;
            Ok(id)
        })
    }

    /// pi's `appendThinkingLevelChange(level)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        let (mut o, id, _) = self.head("thinking_level_change");
        set(&mut o, "thinkingLevel", Value::str(level));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendModelChange(provider, modelId)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let (mut o, id, _) = self.head("model_change");
        set(&mut o, "provider", Value::str(provider));
        set(&mut o, "modelId", Value::str(model_id));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendUsage(kind, provider, model, usage, note?)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Value<'_>,
        note: Option<&str>,
    ) -> Result<String> {
        let (mut o, id, _) = self.head("usage");
        set(&mut o, "kind", Value::str(kind));
        set(&mut o, "provider", Value::str(provider));
        set(&mut o, "model", Value::str(model));
        set(&mut o, "usage", usage);
        if let Some(n) = note.filter(|n| !n.is_empty()) {
            set(&mut o, "note", Value::str(n));
        }
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook,
    /// usage)`: `systemMessage` is the system prompt in force in the current context.
    ///
    /// # Errors
    /// The context cannot be built (pi throws too), I/O errors.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: f64,
        details: Option<Value<'_>>,
        from_hook: Option<bool>,
        usage: Option<Value<'_>>,
    ) -> Result<String> {
        let ts = (self.entropy.now)();
        let system = {
            let leaf = self.session.leaf().clone();
            let ctx = self.session.context(&leaf)?;
            // Only system messages count: the others are not decoded.
            let system = ctx
                .messages
                .iter()
                .filter(|m| m.role == crate::index::Role::System)
                .map(|m| self.session.message(m))
                .collect::<Result<Vec<_>>>()?;
            current_system_message(&system).map(Object::into_owned)
        };
        let id = self.new_id();
        let mut o = Object::new();
        set(&mut o, "type", Value::str("compaction"));
        set(&mut o, "id", Value::string(id.clone()));
        put(&mut o, "parentId", self.parent_value());
        set(&mut o, "timestamp", Value::string(ts.clone()));
        set(&mut o, "summary", Value::str(summary));
        set(
            &mut o,
            "firstKeptEntryId",
            Value::string(first_kept_entry_id.unwrap_or(&id).to_string()),
        );
        set(&mut o, "tokensBefore", Value::Number(tokens_before));
        put(&mut o, "details", details);
        put(&mut o, "usage", usage);
        put(&mut o, "fromHook", from_hook.map(Value::Bool));
        if let Some(mut sm) = system {
            sm.set(
                JsStr::from_str("timestamp"),
                Value::Number(crate::js::date::parse_date(&ts)),
            );
            set(&mut o, "systemMessage", Value::Object(sm));
        }
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCustomEntry(customType, data)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<Value<'_>>) -> Result<String> {
        let mut o = Object::new();
        set(&mut o, "type", Value::str("custom"));
        set(&mut o, "customType", Value::str(custom_type));
        put(&mut o, "data", data);
        let id = self.stamp_tail(&mut o);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCustomMessageEntry(customType, content, display, details)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value<'_>,
        display: bool,
        details: Option<Value<'_>>,
    ) -> Result<String> {
        let mut o = Object::new();
        set(&mut o, "type", Value::str("custom_message"));
        set(&mut o, "customType", Value::str(custom_type));
        set(&mut o, "content", content);
        set(&mut o, "display", Value::Bool(display));
        put(&mut o, "details", details);
        let id = self.stamp_tail(&mut o);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendSessionInfo(name)`: runs of `\r`/`\n` become one space, then trimmed.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let mut folded = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    folded.push(' ');
                }
                in_break = true;
            } else {
                folded.push(c);
                in_break = false;
            }
        }
        let (mut o, id, _) = self.head("session_info");
        set(
            &mut o,
            "name",
            Value::string(crate::js::string::js_trim(&folded).to_string()),
        );
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendLabelChange(targetId, label)`: an empty or absent label clears.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] when the target does not exist; I/O errors.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if self.session.find(target_id).is_none() {
            return Err(ErrorKind::EntryNotFound {
                id: target_id.to_string(),
            }
            .into());
        }
        let (mut o, id, _) = self.head("label");
        set(&mut o, "targetId", Value::str(target_id));
        put(&mut o, "label", label.map(Value::str));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendContextEdit(targetId, replacement)`: `None` drops the target's messages,
    /// `Some(content)` (a string or an array) replaces its content; the target must be on
    /// the active branch and model-visible.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`], [`ErrorKind::InvalidInput`]; I/O errors.
    pub fn append_context_edit(&mut self, target_id: &str, replacement: Option<Value<'_>>) -> Result<String> {
        if let Some(c) = &replacement
            && !matches!(c, Value::String(_) | Value::Array(_))
        {
            return Err(invalid_edit(
                "Context edit replacement must be null or contain string/array content",
            ));
        }
        let Some(target) = self.session.find(target_id) else {
            return Err(ErrorKind::EntryNotFound {
                id: target_id.to_string(),
            }
            .into());
        };
        let on_branch = self
            .session
            .branch_path(None)?
            .iter()
            .any(|&p| self.session.record(p).id == Key::str(target_id));
        if !on_branch {
            return Err(invalid_edit(&format!("Entry {target_id} is not on the active branch")));
        }
        let rec = self.session.record(target);
        let role = if rec.ty == EntryType::Message {
            Some(self.session.message_role(target)?)
        } else {
            None
        };
        let editable =
            rec.ty == EntryType::CustomMessage || matches!(role, Some(Role::User | Role::Assistant | Role::ToolResult));
        if !editable {
            return Err(invalid_edit(&format!(
                "Entry {target_id} does not contribute editable model content"
            )));
        }
        let wrap = matches!(role, Some(Role::Assistant | Role::ToolResult));
        let replacement = match replacement {
            None => Value::Null,
            Some(Value::String(ref s)) if wrap => {
                let mut block = Object::new();
                set(&mut block, "type", Value::str("text"));
                block.set(JsStr::from_str("text"), Value::String(s.clone().into_owned()));
                let mut r = Object::new();
                set(&mut r, "content", Value::Array(vec![Value::Object(block)]));
                Value::Object(r)
            }
            Some(c) => {
                let mut r = Object::new();
                r.set(JsStr::from_str("content"), c);
                Value::Object(r)
            }
        };
        let (mut o, id, _) = self.head("context_edit");
        set(&mut o, "targetId", Value::str(target_id));
        o.set(JsStr::from_str("replacement"), replacement);
        self.append(o)?;
        Ok(id)
    }
}

fn invalid_edit(what: &str) -> Error {
    InvalidInput::Edit {
        message: what.to_string(),
    }
    .into()
}
