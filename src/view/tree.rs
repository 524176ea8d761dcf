//! pi's `/tree` view of a session, for every face: which entries a filter shows and in
//! what order, the gutter's nesting facts, and what each line says about its entry (`user:
//! …`, a tool result as its call `[read: src/x.rs:10-29]`, `[compaction: 45k tokens]`),
//! with a [`Tone`] per part for a face to colour; and the `--json` line of a node.
//!
//! - **Order is pi's.** Children in `getTree()`'s order (timestamps) with the child on the
//!   current branch moved first, so the current branch reads top to bottom.
//! - **Filters are pi's** ([`Filter`]): by default, bookkeeping entries (labels, model and
//!   thinking changes, titles, custom state, context edits, usage) and assistant messages
//!   that only call tools (their results show the calls) are left out, and their children
//!   hang on the nearest shown ancestor; `All` shows every entry. The current leaf is
//!   always shown (where pi's cursor starts).
//! - **Text** is at most 200 characters (pi's cut), line breaks and tabs as single spaces;
//!   it is raw: a face escapes it for its medium.
//! - **Speed.** The tree and most of what the filters ask come from the index; only
//!   assistant messages are read before the walk (they hold the tool calls the results
//!   show); a face reads the shown rows' texts ([`TreeView::preview`]) when it draws them,
//!   on every core if it likes: a tool result's output is skipped, never decoded, and so
//!   is everything of an entry but the `content` its text comes from.

use crate::view::sessions::shorten_home;
use crate::{EntryPos, EntryType, KeyRef, Role, Session, Value};
use ahash::AHashMap as HashMap;
use rayon::prelude::*;
use std::borrow::Cow;

/// pi's `/tree` filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Everything but bookkeeping entries and assistant messages that only call tools.
    Default,
    /// The default, without tool results.
    NoTools,
    /// User messages only.
    User,
    /// Labelled entries only.
    Labeled,
    /// Every entry.
    All,
}

/// [`Row::parent`] of a row whose every ancestor is hidden (or a root).
pub const NO_ROW: u32 = u32::MAX;
const NONE: u32 = NO_ROW;

/// Most characters of an entry's text kept (pi's `/tree` keeps 200).
const TEXT_CHARS: usize = 200;

/// A shown node, in display order.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The entry.
    pub pos: EntryPos,
    /// Depth in the whole tree (a root is 0).
    pub depth: u32,
    /// The row of the nearest shown ancestor, or [`NO_ROW`].
    pub parent: u32,
    /// Its entry in the view's `infos`.
    info: u32,
}

/// What the walk needs of an entry, read before it: how the filters see it, an
/// assistant message's tool calls, and (an assistant message's, read anyway) its text.
struct Classified {
    class: Class,
    calls: Calls,
    preview: Option<Box<Preview>>,
}

/// What an entry says, read once per entry (a node can repeat when ids do).
struct Info {
    class: Class,
    preview: Preview,
    /// An assistant message's tool calls: id and `[read: …]`.
    calls: Vec<(String, String)>,
}

/// How a part of a line is coloured: a face maps each tone to its colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // (each names what it colours)
pub enum Tone {
    Plain,
    Dim,
    User,
    Assistant,
    Tool,
    Summary,
    Custom,
    Error,
    Label,
    Mark,
    Branch,
}

/// What a line says about its entry (raw text; escaped when printed).
#[derive(Clone, Debug)]
pub enum Preview {
    /// A head (`user: `, `[branch summary]: `) and a body.
    Text {
        /// The head.
        head: Cow<'static, str>,
        /// Its tone.
        head_tone: Tone,
        /// The body.
        body: String,
        /// Its tone.
        body_tone: Tone,
    },
    /// A tool result: shown as its call, looked up once every call is known.
    ToolResult {
        /// The call's id.
        call: Option<String>,
        /// The tool's name.
        name: Option<String>,
    },
}

impl Preview {
    fn tag(text: String, tone: Tone) -> Preview {
        Preview::Text {
            head: Cow::Owned(text),
            head_tone: tone,
            body: String::new(),
            body_tone: Tone::Plain,
        }
    }

    /// The line's two parts and their tones, a tool result's call looked up in `calls`
    /// ([`TreeView::calls`]).
    pub fn parts<'a>(&'a self, calls: &'a HashMap<String, String>) -> [(Cow<'a, str>, Tone); 2] {
        match self {
            Preview::Text {
                head,
                head_tone,
                body,
                body_tone,
            } => [
                (Cow::Borrowed(head.as_ref()), *head_tone),
                (Cow::Borrowed(body), *body_tone),
            ],
            Preview::ToolResult { call, name } => {
                let text = match call.as_ref().and_then(|c| calls.get(c)) {
                    Some(f) => Cow::Borrowed(f.as_str()),
                    None => Cow::Owned(format!("[{}]", name.as_deref().unwrap_or("tool"))),
                };
                [(text, Tone::Tool), (Cow::Borrowed(""), Tone::Plain)]
            }
        }
    }

    /// The text as one string (for `--json`).
    pub fn text(&self, calls: &HashMap<String, String>) -> String {
        let [(a, _), (b, _)] = self.parts(calls);
        format!("{a}{b}")
    }
}

/// What the filters look at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    User,
    /// An assistant message; `shown`: it has text, or stopped on an error or abort.
    Assistant {
        shown: bool,
    },
    ToolResult,
    /// Labels, model and thinking changes, titles, custom state, context edits.
    Setting,
    Usage,
    Other,
}

/// Whether a filter shows an entry: pi's rules, except that the current leaf is always
/// shown (pi's cursor starts there; a dump has no cursor).
fn shown(filter: Filter, class: Class, is_leaf: bool, labeled: bool) -> bool {
    if filter == Filter::All || is_leaf {
        return true;
    }
    if class == Class::Usage || class == (Class::Assistant { shown: false }) {
        return false;
    }
    match filter {
        Filter::User => class == Class::User,
        Filter::NoTools => class != Class::Setting && class != Class::ToolResult,
        Filter::Labeled => labeled,
        Filter::Default | Filter::All => class != Class::Setting,
    }
}

/// A fixed-size set of entry positions.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, p: EntryPos) -> bool {
        let (w, b) = ((p.0 / 64) as usize, p.0 % 64);
        match self.0.get_mut(w) {
            Some(word) => {
                let was = *word >> b & 1 == 1;
                *word |= 1 << b;
                !was
            }
            None => false,
        }
    }
    fn has(&self, p: EntryPos) -> bool {
        self.0
            .get((p.0 / 64) as usize)
            .is_some_and(|w| w >> (p.0 % 64) & 1 == 1)
    }
}

/// Push `kids` (to be popped in pi's order: the one on the current branch first, then
/// the others in `getTree()`'s order).
fn push_children(stack: &mut Vec<(EntryPos, u32, u32)>, kids: &[EntryPos], on: &Bits, depth: u32, row: u32) {
    stack.extend(kids.iter().rev().filter(|&&k| !on.has(k)).map(|&k| (k, depth, row)));
    stack.extend(kids.iter().rev().filter(|&&k| on.has(k)).map(|&k| (k, depth, row)));
}

// ----- what an entry says -------------------------------------------------------------

/// Text on one line: runs of line breaks, tabs and spaces as one space, trimmed, at most
/// [`TEXT_CHARS`] characters.
fn flat(parts: &mut dyn Iterator<Item = String>) -> String {
    let mut out = String::new();
    let mut chars = 0usize;
    let mut space = false;
    'all: for part in parts {
        for c in part.chars() {
            if c.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if chars >= TEXT_CHARS {
                break 'all;
            }
            if space {
                out.push(' ');
                chars += 1;
                space = false;
                if chars >= TEXT_CHARS {
                    break 'all;
                }
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

fn flat_str(s: &str) -> String {
    flat(&mut std::iter::once(s.to_owned()))
}

/// The text of a `content`: the string, or its text blocks joined (pi's `extractContent`),
/// taking only what [`flat`] keeps.
fn content_text(c: Option<&Value<'_>>) -> String {
    match c {
        Some(Value::String(s)) => flat_str(&s.to_str_lossy()),
        Some(Value::Array(blocks)) => {
            let mut taken = 0usize;
            let mut it = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_js_str))
                .map_while(|t| {
                    // Enough for `flat`'s cut, even if the text is mostly white space.
                    (taken < TEXT_CHARS * 8).then(|| {
                        let t = t.to_str_lossy();
                        let keep: String = t.chars().take(TEXT_CHARS * 8).collect();
                        taken += keep.len();
                        keep
                    })
                });
            flat(&mut it)
        }
        _ => String::new(),
    }
}

fn js_text(v: Option<&Value<'_>>) -> String {
    v.map_or_else(|| "undefined".into(), Value::to_js_string)
}

/// pi's `formatReadLineRange(offset, limit)`: `:10`, `:10-29` or nothing.
fn line_range(offset: Option<&Value<'_>>, limit: Option<&Value<'_>>) -> String {
    let absent = |v: Option<&Value<'_>>| matches!(v, None | Some(Value::Null));
    // pi's parseLineNumber: a positive integer, as a number or a string of digits.
    let number = |v: Option<&Value<'_>>| -> Option<f64> {
        let n = match v? {
            Value::Number(n) => *n,
            Value::String(s) => {
                let t = s.to_str_lossy();
                let t = t.trim();
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                t.parse().ok()?
            }
            _ => return None,
        };
        (n.is_finite() && n.fract() == 0.0 && n >= 1.0).then_some(n)
    };
    if absent(offset) && absent(limit) {
        return String::new();
    }
    let start = if absent(offset) { Some(1.0) } else { number(offset) };
    let Some(start) = start else { return String::new() };
    let num = |n: f64| Value::Number(n).stringify();
    if absent(limit) {
        return format!(":{}", num(start));
    }
    let Some(count) = number(limit) else {
        return String::new();
    };
    format!(":{}-{}", num(start), num(start + count - 1.0))
}

/// pi's `formatToolCall(name, args)`.
fn format_call(name: &str, args: Option<&Value<'_>>, home: Option<&str>) -> String {
    let arg = |k: &str| args.and_then(|a| a.get(k));
    // `String(args.x || fallback)`.
    let or = |k: &str, fallback: &str| match arg(k) {
        Some(v) if v.truthy() => v.to_js_string(),
        _ => fallback.to_owned(),
    };
    let file = || {
        let p = match arg("path") {
            Some(v) if v.truthy() => v.to_js_string(),
            _ => or("file_path", ""),
        };
        shorten_home(&p, home.map(std::path::Path::new))
    };
    match name {
        "read" => format!("[read: {}{}]", file(), line_range(arg("offset"), arg("limit"))),
        "write" => format!("[write: {}]", file()),
        "edit" => format!("[edit: {}]", file()),
        "bash" => {
            let raw = or("command", "");
            let cmd: String = raw.replace(['\n', '\t'], " ").trim().chars().take(50).collect();
            let more = if raw.encode_utf16().count() > 50 { "..." } else { "" };
            format!("[bash: {cmd}{more}]")
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            or("pattern", ""),
            shorten_home(&or("path", "."), home.map(std::path::Path::new))
        ),
        "find" => format!(
            "[find: {} in {}]",
            or("pattern", ""),
            shorten_home(&or("path", "."), home.map(std::path::Path::new))
        ),
        "ls" => format!(
            "[ls: {}]",
            shorten_home(&or("path", "."), home.map(std::path::Path::new))
        ),
        _ => {
            let json = args.map_or_else(|| "undefined".into(), Value::stringify);
            let cut: String = json.chars().take(40).collect();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {cut}{more}]")
        }
    }
}

/// An assistant message's tool calls: id, and the call as pi shows it (`[read: …]`).
type Calls = Box<[(String, String)]>;

/// How the filters see an entry (as [`describe`] says), and an assistant message's tool
/// calls: only an assistant message is read.
fn classify(s: &Session, p: EntryPos, hook_is_custom: bool, home: Option<&str>) -> crate::Result<Classified> {
    let rec = s.record(p);
    let class = match (rec.ty, rec.role) {
        (EntryType::Message, Role::Assistant) => {
            let i = describe(s, p, hook_is_custom, home)?;
            return Ok(Classified {
                class: i.class,
                calls: i.calls.into_boxed_slice(),
                preview: Some(Box::new(i.preview)),
            });
        }
        (EntryType::Message, Role::User) => Class::User,
        (EntryType::Message, Role::ToolResult) => Class::ToolResult,
        (
            EntryType::ModelChange
            | EntryType::ThinkingLevelChange
            | EntryType::Custom
            | EntryType::ContextEdit
            | EntryType::Label
            | EntryType::SessionInfo,
            _,
        ) => Class::Setting,
        (EntryType::Usage, _) => Class::Usage,
        _ => Class::Other,
    };
    Ok(Classified {
        class,
        calls: Box::default(),
        preview: None,
    })
}

/// How the filters see an entry, its line's text, and an assistant message's tool calls
/// (id, `[read: …]`).
fn describe(s: &Session, p: EntryPos, hook_is_custom: bool, home: Option<&str>) -> crate::Result<Info> {
    let mut calls = Vec::new();
    let rec = s.record(p);
    let text = |head: Cow<'static, str>, head_tone: Tone, body: String, body_tone: Tone| Preview::Text {
        head,
        head_tone,
        body,
        body_tone,
    };
    if rec.ty == EntryType::Message {
        let role = match rec.role {
            Role::HookMessage if hook_is_custom => Role::Custom,
            r => r,
        };
        let members = |keys: &[&str]| s.message_members_of(p, keys);
        let (class, preview) = match role {
            Role::User => {
                let m = members(&["content"])?.unwrap_or_default();
                let body = content_text(m.first().and_then(Option::as_ref));
                (
                    Class::User,
                    text(Cow::Borrowed("user: "), Tone::User, body, Tone::Plain),
                )
            }
            Role::Assistant => {
                let m = members(&["content", "stopReason", "errorMessage"])?.unwrap_or_default();
                let get = |i: usize| m.get(i).and_then(Option::as_ref);
                if let Some(Value::Array(blocks)) = get(0) {
                    for b in blocks {
                        // pi's `toolCall`, and PiG's `tool_use` (its `input`) alike.
                        if let crate::Block::Call {
                            id: Some(id),
                            name,
                            args,
                            ..
                        } = crate::block(b)
                        {
                            let name = name.map_or_else(|| "undefined".into(), Value::to_js_string);
                            calls.push((id.to_js_string(), format_call(&name, args, home)));
                        }
                    }
                }
                let body = content_text(get(0));
                let stop = get(1);
                let failed = stop.is_some_and(|v| v.truthy() && !matches!(v.as_str(), Some("stop" | "toolUse")));
                let (body, tone) = if !body.is_empty() {
                    (body, Tone::Plain)
                } else if stop.and_then(Value::as_str) == Some("aborted") {
                    ("(aborted)".into(), Tone::Dim)
                } else if let Some(e) = get(2).filter(|e| e.truthy()) {
                    let e: String = flat_str(&e.to_js_string()).chars().take(80).collect();
                    (e, Tone::Error)
                } else {
                    ("(no content)".into(), Tone::Dim)
                };
                let shown = tone == Tone::Plain || failed;
                (
                    Class::Assistant { shown },
                    text(Cow::Borrowed("assistant: "), Tone::Assistant, body, tone),
                )
            }
            Role::ToolResult => {
                let m = members(&["toolCallId", "toolName"])?.unwrap_or_default();
                let str_at = |i: usize| {
                    m.get(i)
                        .and_then(Option::as_ref)
                        .filter(|v| v.truthy())
                        .map(Value::to_js_string)
                };
                (
                    Class::ToolResult,
                    Preview::ToolResult {
                        call: str_at(0),
                        name: str_at(1),
                    },
                )
            }
            Role::BashExecution => {
                let m = members(&["command"])?.unwrap_or_default();
                let cmd = m
                    .first()
                    .and_then(Option::as_ref)
                    .filter(|v| !matches!(v, Value::Null))
                    .map_or_else(String::new, |c| flat_str(&c.to_js_string()));
                (
                    Class::Other,
                    text(Cow::Borrowed("[bash]: "), Tone::Tool, cmd, Tone::Dim),
                )
            }
            Role::Missing | Role::NotString if rec.message_kind.is_none_or(|k| k == crate::Kind::Null) => (
                Class::Other,
                Preview::tag("[message without a message]".into(), Tone::Error),
            ),
            _ => {
                let m = members(&["role"])?.unwrap_or_default();
                let r = js_text(m.first().and_then(Option::as_ref));
                let r = if role == Role::Custom { "custom".into() } else { r };
                (Class::Other, Preview::tag(format!("[{r}]"), Tone::Dim))
            }
        };
        return Ok(Info { class, preview, calls });
    }
    let v = s.value(p)?;
    let get = |k: &str| v.get(k);
    let str_of = |k: &str| js_text(get(k));
    let (class, preview) = match rec.ty {
        EntryType::CustomMessage => {
            let body = match get("content") {
                Some(Value::String(c)) => flat_str(&c.to_str_lossy()),
                c => content_text(c),
            };
            (
                Class::Other,
                text(
                    Cow::Owned(format!("[{}]: ", str_of("customType"))),
                    Tone::Custom,
                    body,
                    Tone::Plain,
                ),
            )
        }
        EntryType::Compaction => {
            let tag = match get("tokensBefore") {
                Some(Value::Number(t)) => {
                    format!(
                        "[compaction: {}k tokens]",
                        Value::Number((t / 1000.0 + 0.5).floor()).stringify()
                    )
                }
                _ => "[compaction]".into(),
            };
            (Class::Other, Preview::tag(tag, Tone::Summary))
        }
        EntryType::BranchSummary => {
            let body = get("summary").map_or_else(String::new, |t| flat_str(&t.to_js_string()));
            (
                Class::Other,
                text(Cow::Borrowed("[branch summary]: "), Tone::Summary, body, Tone::Plain),
            )
        }
        EntryType::ModelChange => (
            Class::Setting,
            Preview::tag(format!("[model: {}]", str_of("modelId")), Tone::Dim),
        ),
        EntryType::ThinkingLevelChange => (
            Class::Setting,
            Preview::tag(format!("[thinking: {}]", str_of("thinkingLevel")), Tone::Dim),
        ),
        EntryType::Custom => (
            Class::Setting,
            Preview::tag(format!("[custom: {}]", str_of("customType")), Tone::Dim),
        ),
        EntryType::ContextEdit => {
            let what = if matches!(get("replacement"), Some(Value::Null)) {
                "omit"
            } else {
                "replace"
            };
            (
                Class::Setting,
                Preview::tag(format!("[context {what}: {}]", str_of("targetId")), Tone::Dim),
            )
        }
        EntryType::Label => {
            let l = match get("label") {
                None | Some(Value::Null) => "(cleared)".into(),
                Some(l) => flat_str(&l.to_js_string()),
            };
            (Class::Setting, Preview::tag(format!("[label: {l}]"), Tone::Dim))
        }
        EntryType::SessionInfo => {
            let name = get("name").filter(|n| n.truthy()).map(|n| flat_str(&n.to_js_string()));
            (
                Class::Setting,
                Preview::tag(format!("[title: {}]", name.as_deref().unwrap_or("empty")), Tone::Dim),
            )
        }
        EntryType::Usage => (Class::Usage, Preview::tag("[usage]".into(), Tone::Dim)),
        EntryType::NonObject => (Class::Other, Preview::tag("(not an object)".into(), Tone::Error)),
        _ => {
            let ty = get("type").map_or_else(|| "(no type)".into(), |t| flat_str(&t.to_js_string()));
            (Class::Other, Preview::tag(format!("[{ty}]"), Tone::Dim))
        }
    };
    Ok(Info { class, preview, calls })
}

// ----- --json -------------------------------------------------------------------------

fn json_str(s: &str) -> String {
    Value::str(s).stringify()
}

/// An id (or parentId) as JSON: a string as it is, `null`, a number; `null` when absent.
fn key_json(s: &Session, p: EntryPos, k: KeyRef<'_>, member: &str) -> String {
    if let Some(t) = k.as_str() {
        return json_str(t);
    }
    match k.non_string() {
        Some(crate::Key::Null | crate::Key::Undefined) => "null".into(),
        Some(crate::Key::Bool(b)) => b.to_string(),
        Some(crate::Key::Num(bits)) => Value::Number(f64::from_bits(*bits)).stringify(),
        // A string that is not UTF-8 (a lone surrogate), an object or an array: as the
        // line holds it.
        _ => s
            .value(p)
            .ok()
            .and_then(|v| v.get(member).map(Value::stringify))
            .unwrap_or_else(|| "null".into()),
    }
}

#[allow(clippy::too_many_arguments)]
fn json_line(
    s: &Session,
    r: &Row,
    rows: &[Row],
    tree: &crate::Tree,
    on_branch: &Bits,
    leaf: Option<EntryPos>,
    preview: &str,
) -> crate::Result<String> {
    let rec = s.record(r.pos);
    let ty = match rec.ty.as_str() {
        Some(t) => json_str(t),
        None => s
            .value(r.pos)
            .ok()
            .and_then(|v| v.get("type").map(Value::stringify))
            .unwrap_or_else(|| "null".into()),
    };
    // The role from the index; decoded only when it is none pi knows.
    let known = match rec.role {
        Role::User => Some("user"),
        Role::Assistant => Some("assistant"),
        Role::ToolResult => Some("toolResult"),
        Role::System => Some("system"),
        Role::Custom => Some("custom"),
        Role::BashExecution => Some("bashExecution"),
        Role::BranchSummary => Some("branchSummary"),
        Role::CompactionSummary => Some("compactionSummary"),
        _ => None,
    };
    let role = match known {
        _ if rec.ty != EntryType::Message => "null".into(),
        Some(r) => json_str(r),
        None => s
            .message_members_of(r.pos, &["role"])?
            .and_then(|m| m.into_iter().next().flatten())
            .map_or_else(|| "null".into(), |v| v.stringify()),
    };
    let (label, label_ts) = match s.label_entry(rec.id).and_then(|l| s.value(l).ok()) {
        Some(l) => (
            l.get("label").map_or_else(|| "null".into(), Value::stringify),
            l.get("timestamp").map_or_else(|| "null".into(), Value::stringify),
        ),
        None => ("null".into(), "null".into()),
    };
    let ts = s
        .entry_timestamp(r.pos)?
        .map_or_else(|| "null".into(), |t| t.stringify());
    let shown_parent = rows
        .get(r.parent as usize)
        .map_or_else(|| "null".into(), |p| key_json(s, p.pos, s.record(p.pos).id, "id"));
    Ok(format!(
        "{{\"id\":{},\"parentId\":{},\"shownParentId\":{shown_parent},\"type\":{ty},\"role\":{role},\"depth\":{},\"children\":{},\"onBranch\":{},\"isLeaf\":{},\"label\":{label},\"labelTimestamp\":{label_ts},\"timestamp\":{ts},\"line\":{},\"preview\":{}}}\n",
        key_json(s, r.pos, rec.id, "id"),
        key_json(s, r.pos, rec.parent, "parentId"),
        r.depth,
        tree.children(r.pos).len(),
        on_branch.has(r.pos),
        Some(r.pos) == leaf,
        s.line_of(r.pos).0,
        json_str(preview),
    ))
}

// ----- the view -------------------------------------------------------------------------

/// pi's `/tree` of one session, walked once: its shown rows and what a face needs to draw
/// them.
pub struct TreeView<'s> {
    s: &'s Session,
    tree: crate::Tree,
    infos: Vec<Classified>,
    calls: HashMap<String, String>,
    on_branch: Bits,
    leaf: Option<EntryPos>,
    rows: Vec<Row>,
    hook_is_custom: bool,
    home: Option<String>,
    problems: Vec<String>,
}

impl<'s> TreeView<'s> {
    /// Walk `s`'s tree with `filter`, the branch of `leaf` (an entry's id or a unique prefix
    /// of one; default: the session's leaf) marked; `home` shortens paths in tool calls as
    /// pi's `shortenPath` does.
    ///
    /// # Errors
    /// A tree that cannot be built (a `parentId` cycle a root reaches), a `leaf` that names
    /// no entry, or several, a file that changed under the mapping. What leaves something to
    /// show (a branch that cannot be walked, entries no root reaches) is in
    /// [`TreeView::problems`].
    pub fn new(s: &'s Session, leaf: Option<&str>, filter: Filter, home: Option<&str>) -> crate::Result<TreeView<'s>> {
        let tree = s.tree()?;
        let leaf = match leaf {
            Some(id) => Some(s.record(s.find_prefix(id)?).id.to_key()),
            None => None,
        };
        let mut problems: Vec<String> = Vec::new();
        let n = s.index().len();
        let mut on_branch = Bits::new(n);
        let mut leaf_pos = None;
        match s.branch_path(leaf.as_ref()) {
            Ok(b) => {
                leaf_pos = b.last().copied();
                for &p in &b {
                    on_branch.set(p);
                }
            }
            Err(e) => problems.push(format!("the current branch cannot be marked: {e}")),
        }
        let hook_is_custom = matches!(s.migration(), crate::Migration::FromV1 | crate::Migration::FromV2);
        // How the filters see every entry, and the assistants' tool calls, on every core;
        // the texts are read later, for the shown rows only.
        let mut infos: Vec<Classified> = s
            .entries()
            .par_iter()
            .map(|&p| classify(s, p, hook_is_custom, home))
            .collect::<crate::Result<_>>()?;
        let mut slot = vec![NONE; n];
        for (i, p) in s.entries().iter().enumerate() {
            if let Some(x) = slot.get_mut(p.0 as usize) {
                *x = i as u32;
            }
        }
        // Walk the tree in pi's order, keeping the shown nodes as rows, each with its
        // nearest shown ancestor; tool calls are known in the order pi's walk meets them.
        let mut calls: HashMap<String, String> = HashMap::default();
        let mut rows: Vec<Row> = Vec::new();
        let mut reached = Bits::new(n);
        let mut reached_count = 0usize;
        let mut stack: Vec<(EntryPos, u32, u32)> = Vec::new();
        push_children(&mut stack, &tree.roots, &on_branch, 0, NONE);
        while let Some((p, depth, parent)) = stack.pop() {
            if reached.set(p) {
                reached_count += 1;
            }
            let rec = s.record(p);
            let i = slot.get(p.0 as usize).copied().unwrap_or(NONE);
            let Some(info) = infos.get_mut(i as usize) else {
                // Every tree node is an entry.
                continue;
            };
            // Moved, not copied (a node met again, through a duplicate id, adds its calls
            // once).
            for (id, call) in std::mem::take(&mut info.calls) {
                calls.insert(id, call);
            }
            let class = info.class;
            let labeled = s.label_entry(rec.id).is_some();
            let row = if shown(filter, class, Some(p) == leaf_pos, labeled) {
                rows.push(Row {
                    pos: p,
                    depth,
                    parent,
                    info: i,
                });
                (rows.len() - 1) as u32
            } else {
                parent
            };
            push_children(&mut stack, tree.children(p), &on_branch, depth + 1, row);
        }
        if s.entry_count() == s.entries_len() && reached_count < s.entries_len() {
            let missing = s.entries_len() - reached_count;
            problems.push(format!(
                "{missing} {} in no tree: {} parentId links form a cycle that no root reaches (pi's /tree does not show {} either)",
                if missing == 1 { "entry is" } else { "entries are" },
                if missing == 1 { "its" } else { "their" },
                if missing == 1 { "it" } else { "them" },
            ));
        }
        Ok(TreeView {
            s,
            tree,
            infos,
            calls,
            on_branch,
            leaf: leaf_pos,
            rows,
            hook_is_custom,
            home: home.map(str::to_owned),
            problems,
        })
    }

    /// Whether the session has entries but no root: every entry has a parent, so the
    /// links form a cycle, and there is nothing to draw.
    pub fn rootless(&self) -> bool {
        self.tree.roots.is_empty() && !self.s.entries().is_empty()
    }

    /// The shown rows, in display order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// What went wrong but left something to show (raw text; escape it to print it).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether the entry is on the marked branch.
    pub fn on_branch(&self, p: EntryPos) -> bool {
        self.on_branch.has(p)
    }

    /// The marked branch's last entry.
    pub fn leaf(&self) -> Option<EntryPos> {
        self.leaf
    }

    /// Every tool call met so far: its id and the call as pi shows it (for
    /// [`Preview::parts`]).
    pub fn calls(&self) -> &HashMap<String, String> {
        &self.calls
    }

    /// How many children the entry has in the whole tree.
    pub fn child_count(&self, p: EntryPos) -> usize {
        self.tree.children(p).len()
    }

    /// A row's preview when the walk read it already (an assistant message's).
    pub fn stored_preview(&self, r: &Row) -> Option<&Preview> {
        self.infos.get(r.info as usize).and_then(|i| i.preview.as_deref())
    }

    /// What a row's line says about its entry, read now unless the walk read it.
    ///
    /// # Errors
    /// The file changed under the mapping.
    pub fn preview(&self, r: &Row) -> crate::Result<Cow<'_, Preview>> {
        match self.stored_preview(r) {
            Some(p) => Ok(Cow::Borrowed(p)),
            None => describe(self.s, r.pos, self.hook_is_custom, self.home.as_deref()).map(|i| Cow::Owned(i.preview)),
        }
    }

    /// The entry's label as a line shows it (on one line, raw), when it has one.
    pub fn label(&self, p: EntryPos) -> Option<String> {
        let l = self.s.label_entry(self.s.record(p).id)?;
        let v = self.s.value(l).ok()?;
        Some(v.get("label").map_or_else(String::new, |t| flat_str(&t.to_js_string())))
    }

    /// A row's `--json` line (with its line break; docs/cli.md lists the fields).
    ///
    /// # Errors
    /// The file changed under the mapping.
    pub fn json_line(&self, r: &Row) -> crate::Result<String> {
        let preview = self.preview(r)?.text(&self.calls);
        json_line(self.s, r, &self.rows, &self.tree, &self.on_branch, self.leaf, &preview)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_joins_lines_and_keeps_200_characters() {
        assert_eq!(flat_str("  a\n\n b\tc  "), "a b c");
        assert_eq!(flat_str(&"x".repeat(500)).len(), TEXT_CHARS);
        assert_eq!(flat_str(""), "");
    }

    #[test]
    fn read_ranges_follow_pi() {
        let n = |x: f64| Value::Number(x);
        assert_eq!(line_range(None, None), "");
        assert_eq!(line_range(Some(&n(10.0)), None), ":10");
        assert_eq!(line_range(Some(&n(10.0)), Some(&n(20.0))), ":10-29");
        assert_eq!(line_range(None, Some(&n(5.0))), ":1-5");
        assert_eq!(line_range(Some(&n(0.0)), None), "");
        assert_eq!(line_range(Some(&Value::str("7")), None), ":7");
    }

    #[test]
    fn tool_calls_read_as_pi_formats_them() {
        let args = Value::parse(br#"{"path":"/home/u/src/a.rs","offset":3,"limit":2}"#).unwrap();
        assert_eq!(
            format_call("read", Some(&args), Some("/home/u")),
            "[read: ~/src/a.rs:3-4]"
        );
        let text = format!(r#"{{"command":"echo {}"}}"#, "y".repeat(60));
        let bash = Value::parse(text.as_bytes()).unwrap();
        let f = format_call("bash", Some(&bash), None);
        assert!(f.starts_with("[bash: echo yyy") && f.ends_with("...]"), "{f}");
        let other = Value::parse(br#"{"q":1}"#).unwrap();
        assert_eq!(format_call("search", Some(&other), None), r#"[search: {"q":1}]"#);
        assert_eq!(format_call("grep", None, None), "[grep: // in .]");
    }

    #[test]
    fn filters_follow_pi() {
        let tool_only = Class::Assistant { shown: false };
        assert!(!shown(Filter::Default, tool_only, false, false));
        assert!(shown(Filter::Default, tool_only, true, false));
        assert!(shown(Filter::All, tool_only, false, false));
        assert!(!shown(Filter::Default, Class::Setting, false, true));
        assert!(shown(Filter::Labeled, Class::Setting, false, true));
        assert!(!shown(Filter::NoTools, Class::ToolResult, false, false));
        assert!(!shown(Filter::User, Class::Other, false, false));
        assert!(!shown(Filter::Default, Class::Usage, false, false));
        assert!(shown(Filter::User, Class::Setting, true, false));
    }
}
