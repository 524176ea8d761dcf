//! Where the searched strings of an entry lie in its raw line, found by walking the
//! line's structure through the crate's exact walker without decoding anything: image
//! data, signatures, ids, keys and every member not searched are skipped by the string
//! and structural skippers. The slow twin (`twin.rs`) finds the same strings in a full
//! decode of the line.
//!
//! What is searched, by entry and role (fixed order within an entry: content blocks in
//! array order, then `command`, `output`, `summary`):
//!
//! | entry | strings | field |
//! | --- | --- | --- |
//! | message, role user or custom (`hookMessage` too) | `content` (a string, or its `text` blocks) | text |
//! | message, role assistant | `text` blocks; `thinking` blocks; every string in a `toolCall` block's `arguments` | text; thinking; toolCall |
//! | message, role toolResult | `content` (a string, or its `text` blocks) | toolResult |
//! | message, role bashExecution | `command`; `output` | command; output |
//! | message, role branchSummary or compactionSummary | `summary` | summary |
//! | compaction, branch_summary | `summary` | summary |
//! | custom_message | `content` (a string, or its `text` blocks) | text |
//! | session_info | `name` | name |
//! | label | `label` | label |
//!
//! Nothing else: system messages, `custom` entries (extension state), keys, ids, images.
//! Duplicate keys: the last one wins, as in `JSON.parse`.

use super::{FieldKind, Fields};
use crate::index::{EntryType, Role};
use crate::json::walk::{skip_value, walk_elements, walk_members};
use crate::json::ws::Line;
use crate::json::{Kind, SyntaxError};

/// A member's value: `[start, end)` in the line and its kind (`None`: missing); the
/// listing's walker records members the same way.
pub(crate) use crate::listing::line::Span as At;

fn is_string(at: &At) -> bool {
    matches!(at.kind, Some(Kind::String { .. }))
}

/// One searched value of an entry: a string, or (for a tool call's `arguments`) any JSON
/// value whose strings are all searched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub(crate) field: FieldKind,
    /// The index in the content array, for a block.
    pub(crate) block: Option<u32>,
    pub(crate) at: At,
}

fn skip(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    skip_value::<Line>(b, i)
}

/// Record a member's value span and return where it ends.
fn record(b: &[u8], i: usize, slot: &mut At) -> Result<usize, SyntaxError> {
    let (end, kind) = skip(b, i)?;
    *slot = At::new(i, end, kind);
    Ok(end)
}

/// Whether the string value at `at` equals `want` once decoded.
fn string_is(b: &[u8], at: &At, want: &[u8]) -> bool {
    match at.kind {
        Some(Kind::String { escaped: false }) => &b[at.start + 1..at.end - 1] == want,
        Some(Kind::String { escaped: true }) => {
            crate::json::string::decode_string(b, at.start).is_ok_and(|(s, _)| s.as_bytes() == want)
        }
        _ => false,
    }
}

/// The searched role of a message (hookMessage reads as custom, as after pi's migration).
fn content_field(role: Role) -> Option<FieldKind> {
    match role {
        Role::User | Role::Custom | Role::HookMessage | Role::Assistant => Some(FieldKind::Text),
        Role::ToolResult => Some(FieldKind::ToolResult),
        _ => None,
    }
}

/// The searched strings of one entry line (`line` is the entry's bytes; `ty`, `role` and
/// where its `message` lies from its index record), and its top-level `timestamp`. Returns them in the fixed order
/// of the module docs.
pub(crate) fn walk_entry(
    line: &[u8],
    ty: EntryType,
    role: Role,
    message_span: Option<(usize, usize)>,
    want: Fields,
    out: &mut Vec<Found>,
) -> Result<At, SyntaxError> {
    let first = crate::json::walk::skip_ws::<Line>(line, 0);
    let mut ts = At::default();
    if line.get(first) != Some(&b'{') {
        return Ok(ts);
    }
    let mut message = At::default();
    let mut top = At::default();
    let top_key: &[u8] = match ty {
        EntryType::Compaction | EntryType::BranchSummary => b"summary",
        EntryType::CustomMessage => b"content",
        EntryType::SessionInfo => b"name",
        EntryType::Label => b"label",
        _ => b"",
    };
    walk_members::<Line>(line, first, |key, i| match key {
        b"timestamp" => record(line, i, &mut ts),
        // The index validated the line and knows where its (last) `message` ends: it is
        // not skipped here only to be walked again below.
        b"message" if ty == EntryType::Message => match message_span {
            Some((start, end)) if start == i && line.get(i) == Some(&b'{') => {
                message = At::new(start, end, Kind::Object);
                Ok(end)
            }
            _ => record(line, i, &mut message),
        },
        k if !top_key.is_empty() && k == top_key => record(line, i, &mut top),
        _ => skip(line, i).map(|(e, _)| e),
    })?;
    match ty {
        EntryType::Message if message.kind == Some(Kind::Object) => walk_message(line, message.start, role, want, out)?,
        EntryType::CustomMessage => content(line, &top, FieldKind::Text, false, want, out)?,
        EntryType::Compaction | EntryType::BranchSummary if is_string(&top) => out.push(Found {
            field: FieldKind::Summary,
            block: None,
            at: top,
        }),
        EntryType::SessionInfo if is_string(&top) => out.push(Found {
            field: FieldKind::Name,
            block: None,
            at: top,
        }),
        EntryType::Label if is_string(&top) => out.push(Found {
            field: FieldKind::Label,
            block: None,
            at: top,
        }),
        _ => {}
    }
    Ok(ts)
}

fn walk_message(b: &[u8], start: usize, role: Role, want: Fields, out: &mut Vec<Found>) -> Result<(), SyntaxError> {
    let (mut content_at, mut command, mut output, mut summary) =
        (At::default(), At::default(), At::default(), At::default());
    walk_members::<Line>(b, start, |key, i| match key {
        b"content" => record(b, i, &mut content_at),
        b"command" => record(b, i, &mut command),
        b"output" => record(b, i, &mut output),
        b"summary" => record(b, i, &mut summary),
        _ => skip(b, i).map(|(e, _)| e),
    })?;
    if let Some(field) = content_field(role) {
        content(b, &content_at, field, role == Role::Assistant, want, out)?;
    }
    match role {
        Role::BashExecution => {
            if is_string(&command) {
                out.push(Found {
                    field: FieldKind::Command,
                    block: None,
                    at: command,
                });
            }
            if want.tool_results && is_string(&output) {
                out.push(Found {
                    field: FieldKind::Output,
                    block: None,
                    at: output,
                });
            }
        }
        Role::BranchSummary | Role::CompactionSummary if is_string(&summary) => {
            out.push(Found {
                field: FieldKind::Summary,
                block: None,
                at: summary,
            });
        }
        _ => {}
    }
    Ok(())
}

/// A `content` that is a string (searched whole) or an array of blocks: `text` blocks,
/// and for an assistant (`assistant`) `thinking` and `toolCall` blocks (PiG's `tool_use`)
/// when asked for.
fn content(
    b: &[u8],
    at: &At,
    field: FieldKind,
    assistant: bool,
    want: Fields,
    out: &mut Vec<Found>,
) -> Result<(), SyntaxError> {
    if field == FieldKind::ToolResult && !want.tool_results {
        return Ok(());
    }
    match at.kind {
        Some(Kind::String { .. }) => out.push(Found {
            field,
            block: None,
            at: *at,
        }),
        Some(Kind::Array) => {
            let mut k = 0u32;
            walk_elements::<Line>(b, at.start, |i| {
                let end = if b[i] == b'{' {
                    let (mut ty, mut text, mut thinking, mut args, mut input) = (
                        At::default(),
                        At::default(),
                        At::default(),
                        At::default(),
                        At::default(),
                    );
                    let end = walk_members::<Line>(b, i, |key, j| match key {
                        b"type" => record(b, j, &mut ty),
                        b"text" => record(b, j, &mut text),
                        b"thinking" if assistant => record(b, j, &mut thinking),
                        b"arguments" if assistant => record(b, j, &mut args),
                        b"input" if assistant => record(b, j, &mut input),
                        _ => skip(b, j).map(|(e, _)| e),
                    })?;
                    let block = Some(k);
                    if is_string(&text) && string_is(b, &ty, b"text") {
                        out.push(Found { field, block, at: text });
                    } else if want.thinking && is_string(&thinking) && string_is(b, &ty, b"thinking") {
                        out.push(Found {
                            field: FieldKind::Thinking,
                            block,
                            at: thinking,
                        });
                    } else if want.tool_calls && args.kind.is_some() && string_is(b, &ty, b"toolCall") {
                        out.push(Found {
                            field: FieldKind::ToolCall,
                            block,
                            at: args,
                        });
                    } else if want.tool_calls && input.kind.is_some() && string_is(b, &ty, b"tool_use") {
                        // PiG's tool call: its `input`.
                        out.push(Found {
                            field: FieldKind::ToolCall,
                            block,
                            at: input,
                        });
                    }
                    end
                } else {
                    skip(b, i)?.0
                };
                k += 1;
                Ok(end)
            })?;
        }
        _ => {}
    }
    Ok(())
}
