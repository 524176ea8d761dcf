//! Every entry pi's `SessionManager` appends (`appendMessage`, `appendCompaction`, ...),
//! with arguments of Rust types: each is [`Writer::append_call`] (`call.rs`, where the
//! entries are built), whose line goes the one way every line goes, `append_bytes`: to the
//! file or, before the file exists, to the session in memory.

use crate::error::{InvalidInput, Result};
use crate::index::{EntryType, Key, Role};
use crate::json::value::Value;
use crate::session::{Session, key_to_value};
use crate::write::call::{Append, args};
use crate::write::fs::{append_line, create_exclusive};
use crate::write::journal::{JournalUse, append_locked, with_lock};
use crate::write::{Writer, line_of, object_line};

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

    /// Append an entry another serialiser made (a JavaScript host's `JSON.stringify` of
    /// the entry object it keeps): `line` must be one JSON object on one line (a final
    /// `\n` is added when missing). It goes where [`Writer::append_message`]'s line goes:
    /// into memory before the file exists, else to the file under the lock; only it is
    /// indexed, and the leaf moves to it. Returns whether the session was read again
    /// from scratch meanwhile (the file was replaced or rewritten under it, so entries
    /// before may have other positions; the leaf is then the file's last entry).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when `line` is not one JSON object on one line (nothing
    /// written); I/O errors.
    pub fn append_line(&mut self, line: &[u8]) -> Result<bool> {
        let Some(owned) = object_line(line) else {
            return Err(InvalidInput::Entry {
                message: "an appended entry must be one JSON object on one line".into(),
            }
            .into());
        };
        self.append_bytes(&owned)
    }

    pub(super) fn append_bytes(&mut self, line: &[u8]) -> Result<bool> {
        let mut rebuilt = false;
        self.last_journal = JournalUse::NotNeeded;
        match (&self.file, self.persist, self.flushed) {
            (Some(path), true, true) => {
                let path = path.clone();
                self.last_journal = append_line(&path, line, &self.options)?;
                // Whatever else was appended meanwhile is indexed too; nothing is lost. An
                // error means the line is in the file but the session could not take it
                // in (the file changed under it): open the file again.
                rebuilt = self.session.refresh()?.rebuilt;
            }
            (Some(path), true, false) => {
                // Until now the session had no user or assistant message (else it would
                // be in its file): only the new line can start the conversation. Indexed
                // alone, it gets the type, role and id the whole file's index gives it.
                let alone = crate::index::build(line);
                let rec = alone.iter(line).next_back();
                match rec.filter(|r| r.ty == EntryType::Message && matches!(r.role, Role::User | Role::Assistant)) {
                    Some(r) => {
                        // pi's first conversation message creates the file with everything.
                        let mut bytes = Vec::with_capacity(self.session.bytes().len() + line.len());
                        bytes.extend_from_slice(self.session.bytes());
                        bytes.extend_from_slice(line);
                        create_exclusive(path, &bytes)?;
                        let path = path.clone();
                        self.session = Session::open(&path)?;
                        self.session.set_leaf_raw(r.id.to_key());
                        self.flushed = true;
                    }
                    None => {
                        self.session.append_in_memory(line)?;
                    }
                }
            }
            _ => {
                self.session.append_in_memory(line)?;
            }
        }
        Ok(rebuilt)
    }

    /// pi's `appendMessage(message)`: returns the new entry's id.
    ///
    /// # Errors
    /// I/O errors (memory and file are then as before).
    pub fn append_message(&mut self, message: Value<'_>) -> Result<String> {
        self.call(Append::Message, [("message", Some(message))])
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
        let args = args([("message", Some(message))]);
        with_lock(&path, &opts, |file, _| {
            self.session.refresh()?;
            let (id, o, _) = self.build(Append::Message, args)?;
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
        self.call(
            Append::ThinkingLevelChange,
            [("thinkingLevel", Some(Value::str(level)))],
        )
    }

    /// pi's `appendModelChange(provider, modelId)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        self.call(
            Append::ModelChange,
            [
                ("provider", Some(Value::str(provider))),
                ("modelId", Some(Value::str(model_id))),
            ],
        )
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
        self.call(
            Append::Usage,
            [
                ("kind", Some(Value::str(kind))),
                ("provider", Some(Value::str(provider))),
                ("model", Some(Value::str(model))),
                ("usage", Some(usage)),
                ("note", note.map(Value::str)),
            ],
        )
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
        self.call(
            Append::Compaction,
            [
                ("summary", Some(Value::str(summary))),
                ("firstKeptEntryId", first_kept_entry_id.map(Value::str)),
                ("tokensBefore", Some(Value::Number(tokens_before))),
                ("details", details),
                ("fromHook", from_hook.map(Value::Bool)),
                ("usage", usage),
            ],
        )
    }

    /// pi's `appendCustomEntry(customType, data)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<Value<'_>>) -> Result<String> {
        self.call(
            Append::Custom,
            [("customType", Some(Value::str(custom_type))), ("data", data)],
        )
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
        self.call(
            Append::CustomMessage,
            [
                ("customType", Some(Value::str(custom_type))),
                ("content", Some(content)),
                ("display", Some(Value::Bool(display))),
                ("details", details),
            ],
        )
    }

    /// pi's `appendSessionInfo(name)`: runs of `\r`/`\n` become one space, then trimmed.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        self.call(Append::SessionInfo, [("name", Some(Value::str(name)))])
    }

    /// pi's `appendLabelChange(targetId, label)`: an empty or absent label clears.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`](crate::ErrorKind::EntryNotFound) when the target does not exist; I/O errors.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        self.call(
            Append::Label,
            [
                ("targetId", Some(Value::str(target_id))),
                ("label", label.map(Value::str)),
            ],
        )
    }

    /// pi's `appendContextEdit(targetId, replacement)`: `None` drops the target's messages,
    /// `Some(content)` (a string or an array) replaces its content; the target must be on
    /// the active branch and model-visible.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`](crate::ErrorKind::EntryNotFound), [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput); I/O errors.
    pub fn append_context_edit(&mut self, target_id: &str, replacement: Option<Value<'_>>) -> Result<String> {
        let replacement = match replacement {
            None => Value::Null,
            Some(content) => Value::Object(args([("content", Some(content))])),
        };
        self.call(
            Append::ContextEdit,
            [
                ("targetId", Some(Value::str(target_id))),
                ("replacement", Some(replacement)),
            ],
        )
    }

    /// [`Writer::append_call`] of arguments given by name; the new entry's id.
    pub(super) fn call<'a>(
        &mut self,
        method: Append,
        pairs: impl IntoIterator<Item = (&'static str, Option<Value<'a>>)>,
    ) -> Result<String> {
        self.append_call(method, args(pairs)).map(|a| a.id)
    }
}
