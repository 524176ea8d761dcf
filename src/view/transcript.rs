//! A branch of a session as a transcript, for every face: the walk over the branch that
//! decides what each message shows (which entries are messages, their titles, text, tool
//! calls, images, thinking, summaries, notes) and hands the pieces, unescaped, to a
//! [`Sink`]: the terminal transcript of `show`, the Markdown and HTML of `export`, and the
//! faces to come. Each sink escapes for its medium and formats times in its zone.
//!
//! Entries are decoded one at a time as they are handed out, so a face shows the first
//! screen of a 1 GiB session while the rest is still unread.

use crate::{Block, EntryPos, EntryType, Session, Value};
use std::io::Result;
use std::path::Path;

/// The session as a whole, for the top of a transcript (strings unescaped).
pub struct Info<'a> {
    /// The file as it was given.
    pub path: &'a Path,
    /// The session's name (`session_info`), if it has one.
    pub name: Option<String>,
    /// The header's `id`.
    pub id: Option<String>,
    /// The header's `cwd`.
    pub cwd: Option<String>,
    /// The header's `timestamp`, as written (a face formats it).
    pub created: Option<String>,
    /// How many lines of the file are skipped (as pi skips them).
    pub skipped: usize,
    /// An old-format (v1/v2) file: its ids are given when it is opened.
    pub old_format: bool,
}

/// What a message is, in the words of its header.
pub enum Title<'a> {
    /// An assistant message and the model that wrote it.
    Assistant {
        /// The message's `provider`.
        provider: Option<&'a str>,
        /// Its `model`.
        model: Option<&'a str>,
    },
    /// A tool's result, failed or not.
    ToolResult {
        /// The tool's name.
        name: &'a str,
        /// Whether it failed (`isError`).
        failed: bool,
    },
    /// A `!` command run by the user.
    Bash,
    /// A `branchSummary` or `compactionSummary` message (its role).
    Summary(&'a str),
    /// A system prompt.
    System,
    /// A `custom` message of an extension.
    Custom(&'a str),
    /// A message of another role (a user message: `user`).
    Role(&'a str),
    /// A compaction entry and the tokens it summarised.
    Compaction(Option<String>),
    /// A branch summary entry.
    BranchSummary,
    /// A `custom_message` entry.
    CustomMessage(&'a str),
}

impl Title<'_> {
    /// The header's words, session strings passed through `esc`.
    pub fn words(&self, esc: &dyn Fn(&str) -> String) -> String {
        match self {
            Title::Assistant { provider, model } => match (provider, model) {
                (Some(p), Some(m)) => format!("assistant ({}/{})", esc(p), esc(m)),
                (None, Some(m)) => format!("assistant ({})", esc(m)),
                _ => "assistant".into(),
            },
            Title::ToolResult { name, failed } => {
                format!("tool result {}{}", esc(name), if *failed { " (error)" } else { "" })
            }
            Title::Bash => "bash".into(),
            Title::Summary(role) => format!("{} (summary)", esc(role)),
            Title::System => "system".into(),
            Title::Custom(ty) => format!("custom {}", esc(ty)),
            Title::Role(role) => esc(role),
            Title::Compaction(Some(t)) => format!("compaction (summary of {} tokens before it)", esc(t)),
            Title::Compaction(None) => "compaction".into(),
            Title::BranchSummary => "branch summary (of a branch left)".into(),
            Title::CustomMessage(ty) => format!("custom message {}", esc(ty)),
        }
    }

    /// The kind of message, for colours and CSS classes (never a session string).
    pub fn class(&self) -> &'static str {
        match self {
            Title::Assistant { .. } => "assistant",
            Title::ToolResult { .. } | Title::Bash => "tool",
            Title::Role("user") => "user",
            Title::System => "system",
            Title::Custom(_) | Title::CustomMessage(_) => "custom",
            Title::Role(_) => "other",
            Title::Summary(_) | Title::Compaction(_) | Title::BranchSummary => "summary",
        }
    }
}

/// The header of a message.
pub struct Head<'a> {
    /// What the message is.
    pub title: Title<'a>,
    /// The entry's `timestamp`, as written (a face formats it).
    pub time: Option<String>,
    /// The entry's id (unescaped).
    pub id: String,
    /// The entry's label, if it has one.
    pub label: Option<String>,
}

/// What kind of text a text is: how much of it `show` prints, how a file sets it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flow {
    /// What a person wrote or a model answered: all of it, as it is.
    Prose,
    /// A summary or a system prompt: cut by `show`, prose in a file.
    Summary,
    /// A tool's or a command's output: cut by `show`, verbatim (a fenced block) in a file.
    Output,
}

/// A piece of a message, unescaped.
pub enum Part<'a> {
    /// Text.
    Text(&'a str, Flow),
    /// A thinking block.
    Thinking(&'a str),
    /// A tool call: its name and arguments (`key: value` with strings as they are, the
    /// rest as JSON; one unnamed value when the arguments are no object).
    Call {
        /// The tool's name.
        name: &'a str,
        /// Its arguments.
        args: Vec<(Option<String>, String)>,
    },
    /// An image.
    Image(Image<'a>),
    /// A block of a type no rule here knows: its type and size, never its contents.
    Block {
        /// Its `type`, when a string.
        ty: Option<&'a str>,
        /// The length of its JSON, in bytes.
        bytes: usize,
    },
    /// The command of a `bashExecution`.
    Command(&'a str),
    /// A command's exit code.
    Exit(String),
    /// An assistant's error message.
    Error(&'a str),
    /// Anything else, as JSON.
    Json(String),
}

/// An image: pi's (`mimeType`, `data`) or PiG's (`media_type`, `data` or `url`).
pub struct Image<'a> {
    /// Its type, when given.
    pub mime: Option<&'a str>,
    /// Its base64 data (measured, never decoded; empty when it has none).
    pub data: &'a str,
    /// Its address, when it is given by one (never fetched).
    pub url: Option<&'a str>,
}

/// A one-line note between messages.
pub enum Note<'a> {
    /// A `model_change` entry.
    Model {
        /// The `provider`.
        provider: &'a str,
        /// The `modelId`.
        model: &'a str,
    },
    /// A `thinking_level_change` entry.
    ThinkingLevel(String),
}

impl Note<'_> {
    /// The note's words, session strings passed through `esc`.
    pub fn words(&self, esc: &dyn Fn(&str) -> String) -> String {
        match self {
            Note::Model { provider, model } => format!("· model: {}/{}", esc(provider), esc(model)),
            Note::ThinkingLevel(level) => format!("· thinking level: {}", esc(level)),
        }
    }
}

/// Where [`walk`] sends what it finds, in order: `start`, then per entry `unreadable`, a
/// `note`, or a `head` followed by its `part`s, then `end`.
pub trait Sink {
    /// The session before its first entry.
    fn start(&mut self, info: &Info<'_>) -> Result<()>;
    /// An entry of the branch whose line cannot be decoded now (the file changed).
    fn unreadable(&mut self, id: &str, error: &str) -> Result<()>;
    /// A model or thinking level change.
    fn note(&mut self, note: &Note<'_>) -> Result<()>;
    /// A message begins.
    fn head(&mut self, head: &Head<'_>) -> Result<()>;
    /// A piece of the last message headed.
    fn part(&mut self, part: &Part<'_>) -> Result<()>;
    /// After the last entry; `messages` headed.
    fn end(&mut self, messages: usize) -> Result<()>;
}

/// The session's [`Info`].
pub fn info<'a>(s: &Session, path: &'a Path) -> Info<'a> {
    let field = |k: &str| -> Option<String> {
        let header = s.header().ok()?;
        let v = header.get(k)?.as_js_str()?;
        Some(v.to_str_lossy().into_owned())
    };
    Info {
        path,
        name: s.session_name().ok().flatten().map(|n| n.to_str_lossy().into_owned()),
        id: field("id"),
        cwd: field("cwd"),
        created: field("timestamp"),
        skipped: s.skipped().len(),
        old_format: !matches!(s.migration(), crate::Migration::None),
    }
}

/// Walk `branch` of `s` into `sink`; the number of messages headed.
pub fn walk(s: &Session, path: &Path, branch: &[EntryPos], sink: &mut dyn Sink) -> Result<usize> {
    sink.start(&info(s, path))?;
    let mut shown = 0usize;
    for &p in branch {
        if entry(s, p, sink)? {
            shown += 1;
        }
    }
    sink.end(shown)?;
    Ok(shown)
}

/// An entry's `timestamp` when it is a string.
fn time_text(v: Option<&Value<'_>>) -> Option<String> {
    v?.as_str().map(str::to_owned)
}

/// One entry; `true` when it headed a message.
/// One entry as [`walk`] hands it to `sink` (a note, a message's head and parts, or
/// nothing for entries that show nothing); whether it was a message. For faces that show
/// entries one by one, as `follow` does while they are appended.
///
/// # Errors
/// The sink's.
pub fn entry(s: &Session, p: EntryPos, sink: &mut dyn Sink) -> Result<bool> {
    let rec = s.record(p);
    let v = match s.value(p) {
        Ok(v) => v,
        Err(e) => {
            sink.unreadable(&super::id_text(rec.id), &e.to_string())?;
            return Ok(false);
        }
    };
    let id = super::id_text(rec.id);
    let time = time_text(v.get("timestamp"));
    let label = s
        .label_entry(rec.id)
        .and_then(|l| s.value(l).ok())
        .and_then(|l| l.get("label").and_then(Value::as_str).map(str::to_owned));
    let mut head = |title: Title<'_>, sink: &mut dyn Sink| {
        sink.head(&Head {
            title,
            time: time.clone(),
            id: id.clone(),
            label: label.clone(),
        })
    };
    let str_of = |k: &str| v.get(k).and_then(Value::as_str);
    match rec.ty {
        EntryType::Message => {
            let Some(m) = v.get("message") else { return Ok(false) };
            message(m, &mut head, sink)?;
            Ok(true)
        }
        EntryType::Compaction => {
            head(Title::Compaction(v.get("tokensBefore").map(Value::stringify)), sink)?;
            content(v.get("summary"), Flow::Summary, sink)?;
            Ok(true)
        }
        EntryType::BranchSummary => {
            head(Title::BranchSummary, sink)?;
            content(v.get("summary"), Flow::Summary, sink)?;
            Ok(true)
        }
        EntryType::CustomMessage => {
            head(Title::CustomMessage(str_of("customType").unwrap_or("?")), sink)?;
            content(v.get("content"), Flow::Prose, sink)?;
            Ok(true)
        }
        EntryType::ModelChange => {
            let note = Note::Model {
                provider: str_of("provider").unwrap_or("?"),
                model: str_of("modelId").unwrap_or("?"),
            };
            sink.note(&note)?;
            Ok(false)
        }
        EntryType::ThinkingLevelChange => {
            let level = match v.get("thinkingLevel") {
                Some(l) => l.as_str().map_or_else(|| l.stringify(), str::to_owned),
                None => String::new(),
            };
            sink.note(&Note::ThinkingLevel(level))?;
            Ok(false)
        }
        _ => Ok(false),
    }
}

fn message(
    m: &Value<'_>,
    head: &mut dyn FnMut(Title<'_>, &mut dyn Sink) -> Result<()>,
    sink: &mut dyn Sink,
) -> Result<()> {
    let str_of = |k: &str| m.get(k).and_then(Value::as_str);
    let role = str_of("role").unwrap_or("?");
    match role {
        "assistant" => {
            let title = Title::Assistant {
                provider: str_of("provider"),
                model: str_of("model"),
            };
            head(title, sink)?;
            content(m.get("content"), Flow::Prose, sink)?;
            if let Some(e) = str_of("errorMessage") {
                sink.part(&Part::Error(e))?;
            }
        }
        "toolResult" => {
            let title = Title::ToolResult {
                name: str_of("toolName").unwrap_or("?"),
                failed: m.get("isError").is_some_and(Value::truthy),
            };
            head(title, sink)?;
            content(m.get("content"), Flow::Output, sink)?;
        }
        "bashExecution" => {
            head(Title::Bash, sink)?;
            sink.part(&Part::Command(str_of("command").unwrap_or("")))?;
            content(m.get("output"), Flow::Output, sink)?;
            if let Some(code) = m.get("exitCode").filter(|c| !matches!(c, Value::Null)) {
                sink.part(&Part::Exit(code.stringify()))?;
            }
        }
        "branchSummary" | "compactionSummary" => {
            head(Title::Summary(role), sink)?;
            content(m.get("summary"), Flow::Summary, sink)?;
        }
        "system" => {
            head(Title::System, sink)?;
            // pi's structured system prompt keeps its text in `sections` (content empty).
            match (m.get("content"), m.get("sections")) {
                (Some(Value::String(c)), Some(Value::Object(sections))) if c.as_bytes().is_empty() => {
                    for (_, text) in sections.iter() {
                        content(Some(text), Flow::Summary, sink)?;
                    }
                }
                (c, _) => content(c, Flow::Summary, sink)?,
            }
        }
        "custom" => {
            head(Title::Custom(str_of("customType").unwrap_or("?")), sink)?;
            content(m.get("content"), Flow::Prose, sink)?;
        }
        other => {
            head(Title::Role(other), sink)?;
            content(m.get("content"), Flow::Prose, sink)?;
        }
    }
    Ok(())
}

/// A `content` (or `summary`, `output`): a string, or blocks of text, thinking, tool
/// calls and images.
fn content(c: Option<&Value<'_>>, flow: Flow, sink: &mut dyn Sink) -> Result<()> {
    match c {
        Some(Value::String(_)) => sink.part(&Part::Text(c.and_then(Value::as_str).unwrap_or(""), flow)),
        Some(Value::Array(blocks)) => {
            for b in blocks.iter() {
                block(b, flow, sink)?;
            }
            Ok(())
        }
        Some(other) => sink.part(&Part::Json(other.stringify())),
        None => Ok(()),
    }
}

fn block(b: &Value<'_>, flow: Flow, sink: &mut dyn Sink) -> Result<()> {
    match crate::block(b) {
        Block::Text(t) => sink.part(&Part::Text(t.as_deref().unwrap_or(""), flow)),
        Block::Thinking { text, .. } => sink.part(&Part::Thinking(text.as_deref().unwrap_or(""))),
        Block::Call { name, args, .. } => sink.part(&Part::Call {
            name: name.and_then(Value::as_str).unwrap_or("?"),
            args: arguments(args),
        }),
        Block::Image { mime, data, url } => sink.part(&Part::Image(Image {
            mime: mime.as_deref(),
            data: data.unwrap_or(""),
            url: url.as_deref(),
        })),
        Block::Other { ty, bytes } => sink.part(&Part::Block {
            ty: ty.as_deref(),
            bytes,
        }),
    }
}

/// A tool call's arguments: `(key, value)` with strings as they are, the rest as JSON.
fn arguments(a: Option<&Value<'_>>) -> Vec<(Option<String>, String)> {
    match a {
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| {
                let v = match v.as_str() {
                    Some(s) => s.to_owned(),
                    None => v.stringify(),
                };
                (Some(k.to_str_lossy().into_owned()), v)
            })
            .collect(),
        Some(v) => vec![(None, v.stringify())],
        None => Vec::new(),
    }
}

/// Arguments on one line as `key: value, ...`.
pub fn arguments_line(args: &[(Option<String>, String)]) -> String {
    arguments_joined(args, ", ")
}

/// Arguments one per line, `key: value`.
pub fn arguments_block(args: &[(Option<String>, String)]) -> String {
    arguments_joined(args, "\n")
}

fn arguments_joined(args: &[(Option<String>, String)], sep: &str) -> String {
    args.iter()
        .map(|(k, v)| match k {
            Some(k) => format!("{k}: {v}"),
            None => v.clone(),
        })
        .collect::<Vec<_>>()
        .join(sep)
}

impl Image<'_> {
    /// The image's placeholder, its session strings passed through `esc`:
    /// `[image/png 1.2 MB]` (the size from the base64 length; the data is never decoded),
    /// or for an image given by its address `[image/jpeg at https://…]` (never fetched).
    pub fn note(&self, esc: &dyn Fn(&str) -> String) -> String {
        let mime = esc(self.mime.unwrap_or("image"));
        match self.url {
            Some(url) => format!("[{mime} at {}]", esc(url)),
            None => format!("[{mime} {}]", size_text((self.data.len() / 4 * 3) as u64)),
        }
    }

    /// The image's address when a page may link to it: `http:` or `https:` only (never a
    /// `javascript:` or `data:` one).
    pub fn link(&self) -> Option<&str> {
        self.url.filter(|u| {
            let scheme = u.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
            matches!(scheme.as_deref(), Some("http" | "https"))
        })
    }
}

/// An opaque block's placeholder, its type passed through `esc`: `[tool_result block,
/// 55 B]`.
pub fn block_note(ty: Option<&str>, bytes: usize, esc: &dyn Fn(&str) -> String) -> String {
    match ty {
        Some(t) => format!("[{} block, {}]", esc(t), size_text(bytes as u64)),
        None => format!("[block, {}]", size_text(bytes as u64)),
    }
}

/// `1 line`, `3 lines`.
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn size_text(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}

/// The widest a one-line summary (a tool call's arguments) gets, in characters.
pub const LINE_WIDTH: usize = 120;

/// Text on one line: line breaks shown as `⏎`, cut to [`LINE_WIDTH`] characters (`…`
/// where cut): a tool call's arguments in a transcript.
pub fn one_line(t: &str) -> String {
    let flat: String = t.replace('\n', "⏎");
    let mut cut: String = flat.chars().take(LINE_WIDTH).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    cut
}
