//! pi's appends as a host language calls them: [`Writer::append_call`] takes one of pi's
//! `SessionManager` append methods by name ([`Append`]) with the arguments its caller
//! passed, as JSON values (missing: `undefined`), and builds the entry exactly as pi's
//! method builds it: its members in pi's order, pi's checks and pi's error texts. The typed
//! methods of `append.rs` and `branch.rs` are this with arguments of Rust types, so every
//! entry pi appends is built in one place.
//!
//! A host that keeps entries as objects of its own (the Node binding keeps the caller's
//! `message` object as the entry's `message`, as pi does) gets back, besides the line
//! written, which member of the entry is which argument ([`Appended::members`]); it puts its
//! caller's value there and the line's value everywhere else.

use crate::error::{Error, ErrorKind, InvalidInput, Result};
use crate::index::{EntryType, Key, Role};
use crate::js::string::JsStr;
use crate::json::value::{Object, Value};
use crate::session::context::current_system_message;
use crate::session::{key_from_value, key_to_value};
use crate::write::{Writer, line_of, put};

/// One of pi's `SessionManager` append methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Append {
    /// `appendMessage(message)`.
    Message,
    /// `appendThinkingLevelChange(thinkingLevel)`.
    ThinkingLevelChange,
    /// `appendModelChange(provider, modelId)`.
    ModelChange,
    /// `appendUsage(kind, provider, model, usage, note)`.
    Usage,
    /// `appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage)`.
    Compaction,
    /// `appendCustomEntry(customType, data)`.
    Custom,
    /// `appendCustomMessageEntry(customType, content, display, details)`.
    CustomMessage,
    /// `appendSessionInfo(name)`.
    SessionInfo,
    /// `appendLabelChange(targetId, label)`.
    Label,
    /// `appendContextEdit(targetId, replacement)`.
    ContextEdit,
    /// `branchWithSummary(branchFromId, summary, details, fromHook, usage)`.
    BranchSummary,
}

impl Append {
    /// Every method, with pi's name.
    pub const ALL: [(Append, &'static str); 11] = [
        (Append::Message, "appendMessage"),
        (Append::ThinkingLevelChange, "appendThinkingLevelChange"),
        (Append::ModelChange, "appendModelChange"),
        (Append::Usage, "appendUsage"),
        (Append::Compaction, "appendCompaction"),
        (Append::Custom, "appendCustomEntry"),
        (Append::CustomMessage, "appendCustomMessageEntry"),
        (Append::SessionInfo, "appendSessionInfo"),
        (Append::Label, "appendLabelChange"),
        (Append::ContextEdit, "appendContextEdit"),
        (Append::BranchSummary, "branchWithSummary"),
    ];

    /// The method of pi's name (`"appendMessage"`, ...).
    pub fn from_method(name: &str) -> Option<Append> {
        Append::ALL.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
    }
}

/// What [`Writer::append_call`] appended.
#[derive(Debug, Clone)]
pub struct Appended<'a> {
    /// The new entry's id.
    pub id: String,
    /// pi's entry object (its line is `JSON.stringify` of it).
    pub entry: Object<'a>,
    /// Its members in pi's order, each with the parameter whose argument it holds (`None`:
    /// a value the method made). A member whose value is `undefined` is listed but absent
    /// from `entry`.
    pub members: Members,
    /// Whether the session was read again from scratch meanwhile (see
    /// [`Writer::append_line`]): entries before may now have other positions.
    pub reread: bool,
}

/// The members of an object pi's method made, in its order, each with the parameter whose
/// argument it holds (`None`: a value the method made).
pub type Members = Vec<(&'static str, Option<&'static str>)>;

/// An entry being built: pi's object, and where each member came from.
struct Entry<'a> {
    o: Object<'a>,
    members: Members,
    /// The caller's arguments not taken yet: each goes into the entry as it is, not copied.
    args: Object<'a>,
}

impl<'a> Entry<'a> {
    /// A member the method made (`None`: `undefined`, left out of the line).
    fn made(&mut self, key: &'static str, v: Option<Value<'a>>) {
        put(&mut self.o, key, v);
        self.members.push((key, None));
    }

    /// A member that is the caller's argument `param` as it is.
    fn arg(&mut self, key: &'static str, param: &'static str) {
        put(&mut self.o, key, self.args.remove(param));
        self.members.push((key, Some(param)));
    }

    /// A member that is the caller's argument of the same name.
    fn same(&mut self, key: &'static str) {
        self.arg(key, key);
    }
}

impl Writer {
    /// Append an entry as pi's `method` does, `args` holding the caller's arguments by
    /// their parameter names (pi's, as each variant of [`Append`] lists them; a missing one
    /// is `undefined`), each taken into the entry as it is, not copied. The entry is built
    /// as pi builds it, checked as pi checks it (an unknown target, a context edit pi
    /// refuses, with pi's messages), written (to memory before the file exists, else to
    /// the file) and made the leaf.
    ///
    /// ```
    /// use pi_session::{Append, Entropy, Object, Value, Writer};
    /// let mut w = Writer::in_memory("/p", Entropy::seeded(1, 0));
    /// let args = Value::parse(br#"{"message":{"role":"user","content":"hi","timestamp":1}}"#).unwrap();
    /// let a = w.append_call(Append::Message, args.as_object().unwrap().clone()).unwrap();
    /// assert_eq!(a.members[0], ("type", None));
    /// assert_eq!(a.members[4], ("message", Some("message")));
    /// assert_eq!(a.entry.get("id").and_then(Value::as_str), Some(a.id.as_str()));
    /// assert_eq!(a.entry.get("message"), args.get("message"));
    /// # let _: Object = Object::new();
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] and [`ErrorKind::InvalidInput`] where pi throws (its
    /// text is [`Error::pi_text`]); I/O errors (memory and file are then as before).
    pub fn append_call<'a>(&mut self, method: Append, args: Object<'a>) -> Result<Appended<'a>> {
        let (id, entry, members) = self.build(method, args)?;
        let mut entry = Value::Object(entry);
        let reread = self.append_bytes(&line_of(&entry))?;
        // pi's leaf is the entry just appended, whatever else another process appended.
        if self.session.find(&id).is_some() {
            self.session.branch(&id)?;
        }
        // (`Value` drops its members itself: the object is taken out, not moved.)
        let Value::Object(entry) = &mut entry else {
            unreachable!("made an object above")
        };
        let entry = std::mem::replace(entry, Object::new());
        Ok(Appended {
            id,
            entry,
            members,
            reread,
        })
    }

    /// The entry `method` makes of `args` now, checked: its id, pi's object, its members.
    pub(super) fn build<'a>(&mut self, method: Append, args: Object<'a>) -> Result<(String, Object<'a>, Members)> {
        let mut e = Entry {
            o: Object::new(),
            members: Vec::new(),
            args,
        };
        let id = match method {
            Append::Message => self.headed(&mut e, "message", &["message"]),
            Append::ThinkingLevelChange => self.headed(&mut e, "thinking_level_change", &["thinkingLevel"]),
            Append::ModelChange => self.headed(&mut e, "model_change", &["provider", "modelId"]),
            Append::Usage => {
                let id = self.headed(&mut e, "usage", &["kind", "provider", "model", "usage"]);
                // `...(note ? { note } : {})`
                if e.args.get("note").is_some_and(Value::truthy) {
                    e.same("note");
                }
                id
            }
            Append::Compaction => self.compaction(&mut e)?,
            Append::Custom => {
                e.made("type", Some(Value::str("custom")));
                e.same("customType");
                e.same("data");
                self.tail(&mut e)
            }
            Append::CustomMessage => {
                e.made("type", Some(Value::str("custom_message")));
                for key in ["customType", "content", "display", "details"] {
                    e.same(key);
                }
                self.tail(&mut e)
            }
            Append::SessionInfo => {
                let name = session_name(e.args.get("name"))?;
                let id = self.headed(&mut e, "session_info", &[]);
                e.made("name", Some(name));
                id
            }
            Append::Label => {
                self.must_have(e.args.get("targetId"))?;
                self.headed(&mut e, "label", &["targetId", "label"])
            }
            Append::ContextEdit => {
                let made = self.context_edit(&e.args)?;
                let id = self.headed(&mut e, "context_edit", &["targetId"]);
                match made {
                    Some(replacement) => e.made("replacement", Some(replacement)),
                    None => e.same("replacement"),
                }
                id
            }
            Append::BranchSummary => self.branch_summary(&mut e)?,
        };
        Ok((id, e.o, e.members))
    }

    /// `{ type, id, parentId, timestamp, ...params }`, pi's common head then the
    /// arguments of `params` under their own names. Returns the id.
    fn headed(&mut self, e: &mut Entry<'_>, ty: &'static str, params: &[&'static str]) -> String {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        e.made("type", Some(Value::str(ty)));
        e.made("id", Some(Value::string(id.clone())));
        e.made("parentId", self.parent_value());
        e.made("timestamp", Some(Value::string(ts)));
        for p in params {
            e.same(p);
        }
        id
    }

    /// `id, parentId, timestamp` at the end, where pi's custom entries put them (the same
    /// id-then-clock order as [`Writer::headed`]).
    fn tail(&mut self, e: &mut Entry<'_>) -> String {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        e.made("id", Some(Value::string(id.clone())));
        e.made("parentId", self.parent_value());
        e.made("timestamp", Some(Value::string(ts)));
        id
    }

    /// pi's `this.byId.has(id)` check, with its error.
    fn must_have(&self, id: Option<&Value<'_>>) -> Result<()> {
        if self.session.entry_by_id(&key_from_value(id)).is_none() {
            return Err(not_found(id));
        }
        Ok(())
    }

    /// `appendCompaction`: the clock first, then the system message in force in the
    /// current context, then the id (pi's order); `firstKeptEntryId ?? id`.
    fn compaction(&mut self, e: &mut Entry<'_>) -> Result<String> {
        let ts = (self.entropy.now)();
        let system = {
            let leaf = self.session.leaf().clone();
            let ctx = self.session.context(&leaf)?;
            // Only system messages count: the others are not decoded.
            let system = ctx
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| self.session.message(m))
                .collect::<Result<Vec<_>>>()?;
            current_system_message(&system).map(Object::into_owned)
        };
        let id = self.new_id();
        e.made("type", Some(Value::str("compaction")));
        e.made("id", Some(Value::string(id.clone())));
        e.made("parentId", self.parent_value());
        e.made("timestamp", Some(Value::string(ts.clone())));
        e.same("summary");
        if e.args
            .get("firstKeptEntryId")
            .is_some_and(|v| !matches!(v, Value::Null))
        {
            e.same("firstKeptEntryId");
        } else {
            e.made("firstKeptEntryId", Some(Value::string(id.clone())));
        }
        for key in ["tokensBefore", "details", "usage", "fromHook"] {
            e.same(key);
        }
        if let Some(mut sm) = system {
            // `{ ...systemMessage, timestamp: new Date(timestamp).getTime() }`
            sm.set(
                JsStr::from_str("timestamp"),
                Value::Number(crate::js::date::parse_date(&ts)),
            );
            e.made("systemMessage", Some(Value::Object(sm)));
        }
        Ok(id)
    }

    /// `appendContextEdit`'s checks; the replacement the entry records when pi makes one
    /// (a string content of an assistant or tool result wrapped in a text block), `None`
    /// when it records the caller's.
    fn context_edit(&self, args: &Object<'_>) -> Result<Option<Value<'static>>> {
        let replacement = args.get("replacement");
        let content = match replacement {
            Some(Value::Null) => None,
            Some(Value::Object(o)) if matches!(o.get("content"), Some(Value::String(_) | Value::Array(_))) => {
                o.get("content")
            }
            _ => {
                return Err(invalid_edit(
                    "Context edit replacement must be null or contain string/array content",
                ));
            }
        };
        let target_value = args.get("targetId");
        let target_key = key_from_value(target_value);
        let Some(target) = self.session.entry_by_id(&target_key) else {
            return Err(not_found(target_value));
        };
        let on_branch = self
            .session
            .branch_path(None)?
            .iter()
            .any(|&p| self.session.record(p).id.to_key() == target_key);
        let shown = show(target_value);
        if !on_branch {
            return Err(invalid_edit(&format!("Entry {shown} is not on the active branch")));
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
                "Entry {shown} does not contribute editable model content"
            )));
        }
        match content {
            Some(Value::String(s)) if matches!(role, Some(Role::Assistant | Role::ToolResult)) => {
                let mut block = Object::new();
                block.set(JsStr::from_str("type"), Value::str("text"));
                block.set(JsStr::from_str("text"), Value::String(s.clone().into_owned()));
                let mut r = Object::new();
                r.set(JsStr::from_str("content"), Value::Array(vec![Value::Object(block)]));
                Ok(Some(Value::Object(r)))
            }
            _ => Ok(None),
        }
    }

    /// `branchWithSummary`: the leaf moves to `branchFromId` (`null`: before the first
    /// entry), where the summary of the branch left is recorded.
    fn branch_summary(&mut self, e: &mut Entry<'_>) -> Result<String> {
        let from = e.args.get("branchFromId");
        if !matches!(from, Some(Value::Null)) {
            self.must_have(from)?;
        }
        // `this.leafId ?? 'root'`
        let from_id = match self.session.leaf() {
            Key::Null | Key::Undefined => Value::str("root"),
            k => key_to_value(k),
        };
        self.session.set_leaf_raw(key_from_value(from));
        let id = self.new_id();
        let ts = (self.entropy.now)();
        e.made("type", Some(Value::str("branch_summary")));
        e.made("id", Some(Value::string(id.clone())));
        e.arg("parentId", "branchFromId");
        e.made("timestamp", Some(Value::string(ts)));
        e.made("fromId", Some(from_id));
        for key in ["summary", "details", "usage", "fromHook"] {
            e.same(key);
        }
        Ok(id)
    }
}

/// The arguments of a call from Rust values, by parameter name (`None`: `undefined`).
pub(super) fn args<'a>(pairs: impl IntoIterator<Item = (&'static str, Option<Value<'a>>)>) -> Object<'a> {
    let mut o = Object::new();
    for (k, v) in pairs {
        put(&mut o, k, v);
    }
    o
}

/// pi's `name.replace(/[\r\n]+/g, ' ').trim()` (on WTF-8: a lone surrogate stays), and
/// V8's error when `name` is no string.
fn session_name(name: Option<&Value<'_>>) -> Result<Value<'static>> {
    let name = match name {
        Some(Value::String(s)) => s.as_bytes(),
        None | Some(Value::Null) => {
            let what = if name.is_none() { "undefined" } else { "null" };
            return Err(InvalidInput::Type {
                message: format!("Cannot read properties of {what} (reading 'replace')"),
            }
            .into());
        }
        Some(_) => {
            return Err(InvalidInput::Type {
                message: "name.replace is not a function".into(),
            }
            .into());
        }
    };
    let mut folded = Vec::with_capacity(name.len());
    let mut in_break = false;
    for &b in name {
        if b == b'\r' || b == b'\n' {
            if !in_break {
                folded.push(b' ');
            }
            in_break = true;
        } else {
            folded.push(b);
            in_break = false;
        }
    }
    let trimmed = crate::js::string::js_trim_wtf8(&folded).to_vec();
    Ok(Value::String(JsStr(std::borrow::Cow::Owned(trimmed))))
}

/// An id as a template literal prints it (`undefined` when missing).
fn show(id: Option<&Value<'_>>) -> String {
    id.map_or_else(|| "undefined".to_string(), Value::to_js_string)
}

fn not_found(id: Option<&Value<'_>>) -> Error {
    ErrorKind::EntryNotFound { id: show(id) }.into()
}

fn invalid_edit(what: &str) -> Error {
    InvalidInput::Edit {
        message: what.to_string(),
    }
    .into()
}
