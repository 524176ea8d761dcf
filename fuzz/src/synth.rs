//! The `parent_links` generator: a session of up to [`MAX_ENTRIES`] entries whose ids come
//! from a tiny alphabet (so duplicates are common), with parent links pointing anywhere.

use arbitrary::Arbitrary;
use pi_session::Key;
use std::fmt::Write;

/// At most this many entries are rendered.
pub const MAX_ENTRIES: usize = 1999;

/// The id alphabet.
pub const IDS: &[&str] = &["a", "b", "c", "d", "e", "ab"];

/// An `id`, `parentId`, `targetId` or `firstKeptEntryId` value.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum KeySpec {
    /// The member is left out (`undefined`).
    Absent,
    /// `null`
    Null,
    /// A string from [`IDS`].
    Id(u8),
    /// The same string, written with `\u` escapes (must be the same key).
    Escaped(u8),
    /// `""`
    Empty,
    /// A number: `0`, `1`, `1.0`, `1e0`, `-0`, `2`.
    Num(u8),
    /// `true`
    True,
    /// `false`
    False,
    /// `{}` (unique: equal to nothing).
    Obj,
    /// `["a"]`
    Arr,
}

const NUMS: &[&str] = &["0", "1", "1.0", "1e0", "-0", "2"];

impl KeySpec {
    /// The JSON text, or `None` for an absent member.
    pub fn json(self) -> Option<String> {
        Some(match self {
            KeySpec::Absent => return None,
            KeySpec::Null => "null".into(),
            KeySpec::Id(i) => format!("\"{}\"", IDS[i as usize % IDS.len()]),
            KeySpec::Escaped(i) => {
                let mut s = String::from("\"");
                for c in IDS[i as usize % IDS.len()].chars() {
                    let _ = write!(s, "\\u{:04x}", c as u32);
                }
                s.push('"');
                s
            }
            KeySpec::Empty => "\"\"".into(),
            KeySpec::Num(i) => NUMS[i as usize % NUMS.len()].into(),
            KeySpec::True => "true".into(),
            KeySpec::False => "false".into(),
            KeySpec::Obj => "{}".into(),
            KeySpec::Arr => "[\"a\"]".into(),
        })
    }

    /// The key, as a leaf to navigate to.
    pub fn key(self) -> Key {
        match self {
            KeySpec::Absent => Key::Undefined,
            KeySpec::Null => Key::Null,
            KeySpec::Id(i) | KeySpec::Escaped(i) => Key::str(IDS[i as usize % IDS.len()]),
            KeySpec::Empty => Key::str(""),
            KeySpec::Num(i) => {
                let n: f64 = NUMS[i as usize % NUMS.len()].parse().unwrap_or(0.0);
                Key::Num(if n == 0.0 { 0f64.to_bits() } else { n.to_bits() })
            }
            KeySpec::True => Key::Bool(true),
            KeySpec::False => Key::Bool(false),
            KeySpec::Obj | KeySpec::Arr => Key::Unique(0),
        }
    }
}

/// A small JSON value for content, labels, names, replacements.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Small {
    /// Member left out.
    Absent,
    /// `null`
    Null,
    /// `""`
    EmptyStr,
    /// `"  text  "`
    Str,
    /// `[{"type":"text","text":"t"}]`
    Blocks,
    /// `42`
    Num,
    /// `{}`
    Obj,
    /// `false`
    False,
}

impl Small {
    fn json(self) -> Option<&'static str> {
        Some(match self {
            Small::Absent => return None,
            Small::Null => "null",
            Small::EmptyStr => "\"\"",
            Small::Str => "\"  text \\u2028 \"",
            Small::Blocks => "[{\"type\":\"text\",\"text\":\"t\"},{\"type\":\"image\",\"data\":\"x\"}]",
            Small::Num => "42",
            Small::Obj => "{}",
            Small::False => "false",
        })
    }
}

const ROLES: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "system",
    "branchSummary",
    "compactionSummary",
    "hookMessage",
];

/// What a `message` entry's `message` member is.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum MessageSpec {
    /// `{"role": ROLES[i], "content": ...}` (with provider/model for assistants).
    Role(u8, Small),
    /// No `message` member (pi throws).
    Missing,
    /// `"message": null` (pi throws).
    Null,
    /// `"message": "text"`.
    NotObject,
    /// A message without a role.
    NoRole(Small),
}

/// The entry kinds.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Kind {
    /// `message`
    Message(MessageSpec),
    /// `compaction`
    Compaction {
        /// `firstKeptEntryId`
        first_kept: KeySpec,
        /// `summary`
        summary: Small,
        /// a `systemMessage`
        system: bool,
        /// a `retainedTail` array
        retained: bool,
        /// `firstKeptEntryIndex` (for v1 files)
        index: Option<u8>,
    },
    /// `label`
    Label {
        /// `targetId`
        target: KeySpec,
        /// `label`
        label: Small,
    },
    /// `context_edit`
    ContextEdit {
        /// `targetId`
        target: KeySpec,
        /// `replacement`
        replacement: Small,
    },
    /// `custom_message`
    CustomMessage(Small),
    /// `branch_summary`
    BranchSummary(Small),
    /// `model_change`
    ModelChange,
    /// `thinking_level_change`
    ThinkingLevel(Small),
    /// `session_info`
    SessionInfo(Small),
    /// `custom`
    Custom,
    /// `usage`
    Usage,
    /// An unknown type.
    Unknown,
    /// A non-string type.
    TypeNumber,
    /// No type at all.
    NoType,
    /// A later `session` line (not an entry).
    Session,
    /// A kept line that is not an object.
    NonObject(u8),
    /// A malformed line.
    Malformed,
    /// A blank line.
    Blank,
}

/// One line.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Ent {
    /// What it is.
    pub kind: Kind,
    /// `id`
    pub id: KeySpec,
    /// `parentId`
    pub parent: KeySpec,
    /// `timestamp`: index into a few values (equal, invalid, missing, numeric).
    pub ts: u8,
    /// Write `\r\n` instead of `\n`.
    pub crlf: bool,
}

/// A whole generated session.
#[derive(Arbitrary, Debug, Clone)]
pub struct Input {
    /// Header version: 0 absent (v1), 1 → 2, else 3.
    pub version: u8,
    /// The lines after the header.
    pub entries: Vec<Ent>,
    /// Leaves to try with `set_leaf_raw`.
    pub leaves: Vec<KeySpec>,
    /// End the last line with `\n`.
    pub final_newline: bool,
}

const TIMES: &[Option<&str>] = &[
    Some("\"2025-01-01T00:00:00.000Z\""),
    Some("\"2025-01-01T00:00:01.000Z\""),
    Some("\"2024-12-31T23:59:59.999Z\""),
    Some("\"not a date\""),
    None,
    Some("1735689600000"),
    Some("null"),
    Some("\"2025-01-01T00:00:00.000Z\""),
];

impl Input {
    /// Render the session file.
    pub fn render(&self) -> Vec<u8> {
        let mut out = String::new();
        match self.version % 4 {
            0 => out.push_str(
                "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
            ),
            1 => out.push_str(
                "{\"type\":\"session\",\"version\":2,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
            ),
            _ => out.push_str(
                "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
            ),
        }
        let n = self.entries.len().min(MAX_ENTRIES);
        for (i, e) in self.entries[..n].iter().enumerate() {
            render_entry(&mut out, e);
            if i + 1 < n || self.final_newline {
                out.push_str(if e.crlf { "\r\n" } else { "\n" });
            }
        }
        out.into_bytes()
    }

    /// The leaves to try (at most 8).
    pub fn leaf_keys(&self) -> Vec<Key> {
        self.leaves.iter().take(8).map(|k| k.key()).collect()
    }
}

fn member(out: &mut String, name: &str, v: Option<&str>) {
    if let Some(v) = v {
        let _ = write!(out, ",\"{name}\":{v}");
    }
}

fn render_entry(out: &mut String, e: &Ent) {
    let ty = match e.kind {
        Kind::Blank => {
            out.push_str("  ");
            return;
        }
        Kind::Malformed => {
            out.push_str("{\"type\":\"message\",\"id\":\"a\"");
            return;
        }
        Kind::NonObject(k) => {
            out.push_str(["42", "true", "\"x\"", "[1]", "0", "null"][k as usize % 6]);
            return;
        }
        Kind::Message(_) => "\"message\"",
        Kind::Compaction { .. } => "\"compaction\"",
        Kind::Label { .. } => "\"label\"",
        Kind::ContextEdit { .. } => "\"context_edit\"",
        Kind::CustomMessage(_) => "\"custom_message\"",
        Kind::BranchSummary(_) => "\"branch_summary\"",
        Kind::ModelChange => "\"model_change\"",
        Kind::ThinkingLevel(_) => "\"thinking_level_change\"",
        Kind::SessionInfo(_) => "\"session_info\"",
        Kind::Custom => "\"custom\"",
        Kind::Usage => "\"usage\"",
        Kind::Unknown => "\"mystery\"",
        Kind::TypeNumber => "7",
        Kind::NoType => "",
        Kind::Session => "\"session\"",
    };
    out.push_str("{\"_\":0");
    if !ty.is_empty() {
        member(out, "type", Some(ty));
    }
    member(out, "id", e.id.json().as_deref());
    member(out, "parentId", e.parent.json().as_deref());
    member(out, "timestamp", TIMES[e.ts as usize % TIMES.len()]);
    match e.kind {
        Kind::Message(m) => match m {
            MessageSpec::Role(r, content) => {
                let role = ROLES[r as usize % ROLES.len()];
                let _ = write!(out, ",\"message\":{{\"role\":\"{role}\"");
                member(out, "content", content.json());
                if role == "assistant" {
                    out.push_str(",\"provider\":\"p\",\"model\":\"m\"");
                }
                if role == "bashExecution" {
                    out.push_str(",\"command\":\"ls\",\"output\":\"o\"");
                }
                out.push_str(",\"timestamp\":1735689600000}");
            }
            MessageSpec::Missing => {}
            MessageSpec::Null => out.push_str(",\"message\":null"),
            MessageSpec::NotObject => out.push_str(",\"message\":\"hi\""),
            MessageSpec::NoRole(c) => {
                out.push_str(",\"message\":{\"x\":1");
                member(out, "content", c.json());
                out.push('}');
            }
        },
        Kind::Compaction {
            first_kept,
            summary,
            system,
            retained,
            index,
        } => {
            member(out, "firstKeptEntryId", first_kept.json().as_deref());
            member(out, "summary", summary.json());
            out.push_str(",\"tokensBefore\":10");
            if system {
                out.push_str(",\"systemMessage\":{\"role\":\"system\",\"content\":\"sys\"}");
            }
            if retained {
                out.push_str(
                    ",\"retainedTail\":[{\"role\":\"user\",\"content\":\"kept\"},{\"role\":\"assistant\",\"content\":null}]",
                );
            }
            if let Some(i) = index {
                let _ = write!(out, ",\"firstKeptEntryIndex\":{}", i % 8);
            }
        }
        Kind::Label { target, label } => {
            member(out, "targetId", target.json().as_deref());
            member(out, "label", label.json());
        }
        Kind::ContextEdit { target, replacement } => {
            member(out, "targetId", target.json().as_deref());
            member(out, "replacement", replacement.json());
        }
        Kind::CustomMessage(c) => {
            out.push_str(",\"customType\":\"t\",\"display\":true");
            member(out, "content", c.json());
        }
        Kind::BranchSummary(s) => {
            out.push_str(",\"fromId\":\"a\"");
            member(out, "summary", s.json());
        }
        Kind::ModelChange => out.push_str(",\"provider\":\"p2\",\"modelId\":\"m2\""),
        Kind::ThinkingLevel(s) => member(out, "thinkingLevel", s.json()),
        Kind::SessionInfo(s) => member(out, "name", s.json()),
        _ => {}
    }
    out.push('}');
}
