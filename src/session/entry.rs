//! Typed, borrowed views of entries, and PiG's flattened branch view.
//!
//! [`Session::entry`] decodes one entry (strings borrowed from the file) and wraps it in the
//! variant of its `type`; unknown types, and entries that are not objects, stay
//! [`Entry::Unknown`] with their full JSON, so nothing is lost. The exact bytes of any entry
//! are [`Session::raw`].

use crate::error::Result;
use crate::index::{EntryPos, EntryType};
use crate::json::{Object, Value};
use crate::session::Session;

/// Accessors shared by every typed entry.
pub trait EntryFields {
    /// The decoded JSON object.
    fn object(&self) -> &Object<'_>;
    /// `id` when it is a string.
    fn id(&self) -> Option<&str> {
        self.object().get("id").and_then(Value::as_str)
    }
    /// `parentId` when it is a string (`None` for null, missing or another type).
    fn parent_id(&self) -> Option<&str> {
        self.object().get("parentId").and_then(Value::as_str)
    }
    /// The entry's ISO `timestamp` when it is a string.
    fn timestamp(&self) -> Option<&str> {
        self.object().get("timestamp").and_then(Value::as_str)
    }
    /// Any member.
    fn get(&self, key: &str) -> Option<&Value<'_>> {
        self.object().get(key)
    }
}

macro_rules! views {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name<'a>(pub Object<'a>);
        impl EntryFields for $name<'_> {
            fn object(&self) -> &Object<'_> {
                &self.0
            }
        }
    )*};
}

views!(
    /// `message`: one agent message (user, assistant, toolResult, bashExecution, custom, ...).
    MessageEntry,
    /// `model_change`
    ModelChangeEntry,
    /// `thinking_level_change`
    ThinkingLevelChangeEntry,
    /// `compaction`: a summary that replaces older context.
    CompactionEntry,
    /// `branch_summary`: a summary of an abandoned branch.
    BranchSummaryEntry,
    /// `custom`: extension state, not part of the context.
    CustomEntry,
    /// `custom_message`: an extension message that is part of the context.
    CustomMessageEntry,
    /// `label`: sets or clears a label on another entry.
    LabelEntry,
    /// `session_info`: the session's display name.
    SessionInfoEntry,
    /// `context_edit`: replaces or drops an earlier entry's model-visible content.
    ContextEditEntry,
    /// `usage`: token usage that is not part of the context.
    UsageEntry,
    /// `session`: the header (or a later header-like line pi ignores).
    SessionHeader,
);

fn str_of<'v>(o: &'v Object<'_>, key: &str) -> Option<&'v str> {
    o.get(key).and_then(Value::as_str)
}

impl<'a> MessageEntry<'a> {
    /// The message object.
    pub fn message(&self) -> Option<&Value<'a>> {
        self.0.get("message")
    }
    /// The message role.
    pub fn role(&self) -> Option<&str> {
        self.message().and_then(|m| m.get("role")).and_then(Value::as_str)
    }
    /// The message content (a string or an array of blocks).
    pub fn content(&self) -> Option<&Value<'a>> {
        self.message().and_then(|m| m.get("content"))
    }
    /// The message's numeric `timestamp` (Unix ms).
    pub fn message_timestamp(&self) -> Option<f64> {
        match self.message().and_then(|m| m.get("timestamp")) {
            Some(Value::Number(n)) => Some(*n),
            _ => None,
        }
    }
}

impl ModelChangeEntry<'_> {
    /// `provider`
    pub fn provider(&self) -> Option<&str> {
        str_of(&self.0, "provider")
    }
    /// `modelId`
    pub fn model_id(&self) -> Option<&str> {
        str_of(&self.0, "modelId")
    }
}

impl ThinkingLevelChangeEntry<'_> {
    /// `thinkingLevel`
    pub fn thinking_level(&self) -> Option<&str> {
        str_of(&self.0, "thinkingLevel")
    }
}

impl<'a> CompactionEntry<'a> {
    /// `summary`
    pub fn summary(&self) -> Option<&str> {
        str_of(&self.0, "summary")
    }
    /// `firstKeptEntryId`
    pub fn first_kept_entry_id(&self) -> Option<&str> {
        str_of(&self.0, "firstKeptEntryId")
    }
    /// `tokensBefore`
    pub fn tokens_before(&self) -> Option<f64> {
        match self.0.get("tokensBefore") {
            Some(Value::Number(n)) => Some(*n),
            _ => None,
        }
    }
    /// `systemMessage`, the system prompt in force when the compaction was made.
    pub fn system_message(&self) -> Option<&Value<'a>> {
        self.0.get("systemMessage")
    }
    /// `retainedTail` (**seed** format): messages that stand in for the kept range.
    pub fn retained_tail(&self) -> Option<&[Value<'a>]> {
        match self.0.get("retainedTail") {
            Some(Value::Array(a)) => Some(a),
            _ => None,
        }
    }
}

impl BranchSummaryEntry<'_> {
    /// `summary`
    pub fn summary(&self) -> Option<&str> {
        str_of(&self.0, "summary")
    }
    /// `fromId`
    pub fn from_id(&self) -> Option<&str> {
        str_of(&self.0, "fromId")
    }
}

impl CustomEntry<'_> {
    /// `customType`
    pub fn custom_type(&self) -> Option<&str> {
        str_of(&self.0, "customType")
    }
}

impl CustomMessageEntry<'_> {
    /// `customType`
    pub fn custom_type(&self) -> Option<&str> {
        str_of(&self.0, "customType")
    }
}

impl<'a> LabelEntry<'a> {
    /// `targetId`
    pub fn target_id(&self) -> Option<&str> {
        str_of(&self.0, "targetId")
    }
    /// `label` (any JSON value; a falsy one clears the label)
    pub fn label(&self) -> Option<&Value<'a>> {
        self.0.get("label")
    }
}

impl SessionInfoEntry<'_> {
    /// `name`
    pub fn name(&self) -> Option<&str> {
        str_of(&self.0, "name")
    }
}

impl<'a> ContextEditEntry<'a> {
    /// `targetId`
    pub fn target_id(&self) -> Option<&str> {
        str_of(&self.0, "targetId")
    }
    /// `replacement` (`null` drops the target's messages)
    pub fn replacement(&self) -> Option<&Value<'a>> {
        self.0.get("replacement")
    }
}

/// An entry as a typed view; the variant follows its `type`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Entry<'a> {
    /// `session`
    Session(SessionHeader<'a>),
    /// `message`
    Message(MessageEntry<'a>),
    /// `model_change`
    ModelChange(ModelChangeEntry<'a>),
    /// `thinking_level_change`
    ThinkingLevelChange(ThinkingLevelChangeEntry<'a>),
    /// `compaction`
    Compaction(CompactionEntry<'a>),
    /// `branch_summary`
    BranchSummary(BranchSummaryEntry<'a>),
    /// `custom`
    Custom(CustomEntry<'a>),
    /// `custom_message`
    CustomMessage(CustomMessageEntry<'a>),
    /// `label`
    Label(LabelEntry<'a>),
    /// `session_info`
    SessionInfo(SessionInfoEntry<'a>),
    /// `context_edit`
    ContextEdit(ContextEditEntry<'a>),
    /// `usage`
    Usage(UsageEntry<'a>),
    /// Any other type, or a line that is not an object: the full JSON, kept as it is.
    Unknown(Value<'a>),
}

/// One entry of PiG's flattened branch view (`GetBranch()`): the fields a reader of a
/// conversation uses, whatever the entry's type. [`BranchItem::to_json`] writes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BranchItem {
    /// `id`, when a string.
    pub id: Option<String>,
    /// `parentId`, when a string.
    pub parent_id: Option<String>,
    /// `type`, when a string.
    pub entry_type: Option<String>,
    /// The message role (message entries), or `custom` for `custom_message`.
    pub role: Option<String>,
    /// The readable text: string content, or text blocks joined by `\n`; a bash
    /// execution's command; summaries for compactions, branch summaries and summary
    /// messages.
    pub text: String,
    /// A tool result's `toolName`.
    pub tool_name: Option<String>,
    /// The names of an assistant message's tool calls (pi's `toolCall`, PiG's
    /// `tool_use`), in order.
    pub tool_calls: Vec<String>,
    /// An assistant message's `provider`, or a `model_change`'s.
    pub provider: Option<String>,
    /// An assistant message's `model`, or a `model_change`'s `modelId`.
    pub model: Option<String>,
    /// The entry's ISO timestamp.
    pub timestamp: Option<String>,
    /// The message's numeric timestamp (Unix ms), for message entries.
    pub message_timestamp: Option<f64>,
}

impl BranchItem {
    /// One line of JSON, keys in the order of the fields (camelCase: `id`, `parentId`,
    /// `type`, `role`, `text`, `toolName`, `toolCalls`, `provider`, `model`,
    /// `timestamp`, `messageTimestamp`); a field without a value is left out, `text`
    /// and `toolCalls` never are.
    pub fn to_json(&self) -> String {
        use crate::json::stringify::push_json_string;
        let mut out = Vec::with_capacity(64 + self.text.len());
        out.push(b'{');
        let key = |out: &mut Vec<u8>, k: &str| {
            if out.len() > 1 {
                out.push(b',');
            }
            push_json_string(out, k.as_bytes());
            out.push(b':');
        };
        let opt = |out: &mut Vec<u8>, k: &str, v: &Option<String>| {
            if let Some(v) = v {
                key(out, k);
                push_json_string(out, v.as_bytes());
            }
        };
        opt(&mut out, "id", &self.id);
        opt(&mut out, "parentId", &self.parent_id);
        opt(&mut out, "type", &self.entry_type);
        opt(&mut out, "role", &self.role);
        key(&mut out, "text");
        push_json_string(&mut out, self.text.as_bytes());
        opt(&mut out, "toolName", &self.tool_name);
        key(&mut out, "toolCalls");
        out.push(b'[');
        for (i, c) in self.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_json_string(&mut out, c.as_bytes());
        }
        out.push(b']');
        opt(&mut out, "provider", &self.provider);
        opt(&mut out, "model", &self.model);
        opt(&mut out, "timestamp", &self.timestamp);
        if let Some(t) = self.message_timestamp {
            out.extend_from_slice(b",\"messageTimestamp\":");
            let mut n = String::new();
            crate::js::number::format_number(t, &mut n);
            out.extend_from_slice(n.as_bytes());
        }
        out.push(b'}');
        String::from_utf8(out).expect("JSON of UTF-8 strings")
    }
}

fn text_of(content: Option<&Value<'_>>) -> String {
    match content {
        Some(Value::String(s)) => s.to_str_lossy().into_owned(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match crate::block(b) {
                crate::Block::Text(Some(t)) => Some(t.into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl Session {
    /// A typed view of one entry (decoded, strings borrowed).
    ///
    /// # Errors
    /// [`crate::ErrorKind::FileChanged`].
    pub fn entry(&self, pos: EntryPos) -> Result<Entry<'_>> {
        let mut v = self.value(pos)?;
        let ty = self.record(pos).ty;
        let o = match &mut v {
            Value::Object(o) => std::mem::take(o),
            _ => return Ok(Entry::Unknown(v)),
        };
        Ok(match ty {
            EntryType::Session => Entry::Session(SessionHeader(o)),
            EntryType::Message => Entry::Message(MessageEntry(o)),
            EntryType::ModelChange => Entry::ModelChange(ModelChangeEntry(o)),
            EntryType::ThinkingLevelChange => Entry::ThinkingLevelChange(ThinkingLevelChangeEntry(o)),
            EntryType::Compaction => Entry::Compaction(CompactionEntry(o)),
            EntryType::BranchSummary => Entry::BranchSummary(BranchSummaryEntry(o)),
            EntryType::Custom => Entry::Custom(CustomEntry(o)),
            EntryType::CustomMessage => Entry::CustomMessage(CustomMessageEntry(o)),
            EntryType::Label => Entry::Label(LabelEntry(o)),
            EntryType::SessionInfo => Entry::SessionInfo(SessionInfoEntry(o)),
            EntryType::ContextEdit => Entry::ContextEdit(ContextEditEntry(o)),
            EntryType::Usage => Entry::Usage(UsageEntry(o)),
            EntryType::Other | EntryType::NonObject => Entry::Unknown(Value::Object(o)),
        })
    }

    /// PiG's `GetBranch()`: the active branch (root first), flattened to common fields.
    ///
    /// # Errors
    /// [`crate::ErrorKind::ParentCycle`], [`crate::ErrorKind::FileChanged`].
    pub fn branch_items(&self) -> Result<Vec<BranchItem>> {
        self.branch_path(None)?
            .into_iter()
            .map(|p| self.branch_item(p))
            .collect()
    }

    /// One entry of [`Session::branch_items`].
    ///
    /// ```
    /// let text = br#"{"type":"session","version":3,"id":"s"}
    /// {"type":"message","id":"a","parentId":null,"message":{"role":"assistant","provider":"p","model":"m","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t","name":"bash","input":{}}]}}
    /// "#;
    /// let s = pi_session::Session::from_bytes(text.to_vec()).unwrap();
    /// let item = s.branch_item(s.entries()[0]).unwrap();
    /// assert_eq!(item.tool_calls, ["bash"]);
    /// assert_eq!(
    ///     item.to_json(),
    ///     r#"{"id":"a","type":"message","role":"assistant","text":"ok","toolCalls":["bash"],"provider":"p","model":"m"}"#
    /// );
    /// ```
    ///
    /// # Errors
    /// [`crate::ErrorKind::FileChanged`].
    pub fn branch_item(&self, pos: EntryPos) -> Result<BranchItem> {
        let v = self.value(pos)?;
        let lossy = |v: Option<&Value<'_>>| v.and_then(Value::as_js_str).map(|s| s.to_str_lossy().into_owned());
        let s = |k: &str| lossy(v.get(k));
        let mut item = BranchItem {
            id: s("id"),
            parent_id: s("parentId"),
            entry_type: s("type"),
            timestamp: s("timestamp"),
            ..BranchItem::default()
        };
        match item.entry_type.as_deref() {
            Some("message") => {
                let m = v.get("message");
                let ms = |k: &str| lossy(m.and_then(|m| m.get(k)));
                item.role = ms("role");
                item.message_timestamp = match m.and_then(|m| m.get("timestamp")) {
                    Some(Value::Number(n)) => Some(*n),
                    _ => None,
                };
                item.text = match item.role.as_deref() {
                    Some("bashExecution") => ms("command").unwrap_or_default(),
                    Some("branchSummary" | "compactionSummary") => ms("summary").unwrap_or_default(),
                    _ => text_of(m.and_then(|m| m.get("content"))),
                };
                match item.role.as_deref() {
                    Some("toolResult") => item.tool_name = ms("toolName"),
                    Some("assistant") => {
                        item.provider = ms("provider");
                        item.model = ms("model");
                        if let Some(Value::Array(blocks)) = m.and_then(|m| m.get("content")) {
                            item.tool_calls = blocks
                                .iter()
                                .filter_map(|b| match crate::block(b) {
                                    crate::Block::Call { name, .. } => lossy(name),
                                    _ => None,
                                })
                                .collect();
                        }
                    }
                    _ => {}
                }
            }
            Some("custom_message") => {
                item.role = Some("custom".into());
                item.text = text_of(v.get("content"));
            }
            Some("compaction" | "branch_summary") => item.text = s("summary").unwrap_or_default(),
            Some("model_change") => {
                item.provider = s("provider");
                item.model = s("modelId");
            }
            _ => {}
        }
        Ok(item)
    }
}
