//! `pi-session tree`: the conversation's shape, as pi's `/tree` draws it, as text for a
//! terminal or a pipe, or as `--json` for scripts.
//!
//! One line an entry: `ID  GUTTER MARK [LABEL] TEXT`, where TEXT is what pi's `/tree`
//! shows for the entry (`user: …`, `assistant: …` or `(aborted)` or the error, a tool
//! result as its call `[read: src/x.rs:10-29]`, `[bash]: cmd`, `[compaction: 45k tokens]`,
//! `[branch summary]: …`, `[model: …]`, `[label: …]`, `[title: …]`), the current branch
//! marked `*` and its leaf `@` (also without colour), a fork `[N branches]`.
//!
//! Choices, and why:
//! - **Order and indentation are pi's.** Children in `getTree()`'s order (timestamps)
//!   with the child on the current branch moved first, so the current branch reads top
//!   to bottom; indentation grows only where the tree forks (and one step after, to
//!   line a fork's chain up under its connector), so a chain of a thousand entries stays
//!   flat.
//! - **Filters are pi's** (`--filter default|no-tools|user|labeled|all`): by default,
//!   bookkeeping entries (labels, model and thinking changes, titles, custom state,
//!   context edits, usage) and assistant messages that only call tools (their results
//!   show the calls) are left out, and their children hang on the nearest shown
//!   ancestor; `all` shows every entry. The current leaf is always shown (where pi's
//!   cursor starts). `--json` shows every entry unless `--filter` is given: a script
//!   wants all of them.
//! - **Folding.** pi's `/tree` folds nothing when it opens, and folds linear runs only in
//!   the sense above (they stay at one level); a folded node (`⊞`) is one a person
//!   collapsed, at the start of a branch segment. A text dump cannot be unfolded later,
//!   so it folds nothing by default either; `--fold` collapses every branch segment off
//!   the current branch into its first entry, `⊞ [+N]` saying how many entries it hides
//!   (the current branch itself is never folded). Output that changed with whether
//!   stdout is a terminal would make `tree | grep` disagree with `tree`.
//! - **Bounded indentation.** pi pans a deep tree sideways; a dump cannot pan, so at most
//!   [`cap_levels`] levels of gutter are drawn (a third of the width, 4 to 16 levels) and
//!   the levels left of them are one number, `…12 ` (twelve levels not drawn). A
//!   600-step ladder (every step leaves one alternative) stays inside 80 columns.
//! - **Width.** Lines are cut by display width (wide CJK and emoji count two, combining
//!   marks none) to `--width N`, else, on a terminal, to `$COLUMNS` or the terminal's
//!   width. Piped, nothing is cut (`--width` cuts): what goes to a file or `grep` should
//!   not lose text to a width that belongs to no screen. The text itself is at most 200
//!   characters (pi's cut), line breaks and tabs as single spaces.
//! - **Speed.** The tree and most of what the filters ask come from the index; only
//!   assistant messages are read before the walk (they hold the tool calls the results
//!   show); the shown rows' texts are read a chunk at a time on every core, member by
//!   member: a tool result's output is skipped, never decoded, and so is everything of
//!   an entry but the `content` its text comes from.
//!
//! `--json` is NDJSON, one object a node in the same order (docs/cli.md lists the
//! fields). A tree that cannot be built (a cycle of `parentId` links that a root
//! reaches, or no root at all) is an error; a cycle no root reaches, or a current
//! branch that cannot be walked, prints the tree and then fails (exit 2) saying why.

use crate::show::{Kind, Printable, key_text};
use ahash::AHashMap as HashMap;
use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;
use pi_session::text::{escape, escape_path};
use pi_session::{EntryPos, EntryType, KeyRef, OpenOptions, Role, Session, Value};
use rayon::prelude::*;
use std::borrow::Cow;
use std::io::Write;
use unicode_width::UnicodeWidthStr;

/// `pi-session tree`'s arguments.
#[derive(clap::Args)]
#[command(
    after_help = "Each line: ID, the tree's gutter, `*` on the current branch (`@` its leaf), [label], [N branches] at a fork, then the entry as pi's /tree shows it. Deep forks draw at most 16 levels of gutter (fewer on a narrow terminal); `…N` stands for N levels not drawn.\n\nExample: pi-session tree s.jsonl --filter no-tools --fold"
)]
pub(crate) struct TreeArgs {
    #[command(flatten)]
    pub(crate) session: crate::flags::SessionArg,
    /// Mark the branch ending at this entry (an id or a unique prefix of one) instead of
    /// the current leaf's.
    #[arg(short, long, value_name = "ID")]
    pub(crate) leaf: Option<String>,
    /// Which entries to show (pi's /tree filters); default: `default` as text, `all`
    /// with --json.
    #[arg(short, long, value_enum)]
    pub(crate) filter: Option<Filter>,
    /// Fold each branch segment off the current branch into its first entry.
    #[arg(long, conflicts_with = "json")]
    pub(crate) fold: bool,
    /// Cut lines to N columns (0: never); default: the terminal's width, no cut when
    /// piped.
    #[arg(short, long, value_name = "N")]
    pub(crate) width: Option<usize>,
    /// One JSON object a node (NDJSON), in the same order.
    #[arg(short, long)]
    pub(crate) json: bool,
    /// Never page, even on a terminal.
    #[arg(long)]
    pub(crate) no_pager: bool,
    #[command(flatten)]
    pub(crate) color: crate::flags::ColorArgs,
}

/// pi's `/tree` filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Filter {
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

/// `pi-session tree`.
pub(crate) fn run(a: &TreeArgs, open: OpenOptions, out: &mut dyn Write) -> Result<i32> {
    if a.json {
        return tree(a, open, out);
    }
    let mut pager = (!a.no_pager).then(crate::term::Pager::start).flatten();
    let r = match &mut pager {
        Some(p) => tree(a, open, p.input()),
        None => tree(a, open, out),
    };
    if let Some(p) = pager {
        p.finish();
    }
    r
}

const NONE: u32 = u32::MAX;

/// Most characters of an entry's text kept (pi's `/tree` keeps 200).
const TEXT_CHARS: usize = 200;

/// A visible node, in display order.
struct Row {
    pos: EntryPos,
    /// Depth in the whole tree (a root is 0).
    depth: u32,
    /// The row of the nearest shown ancestor, or [`NONE`].
    parent: u32,
    /// Its entry in `infos`.
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

/// How a line is coloured, by part.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tone {
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

impl Tone {
    fn style(self) -> Style {
        let fg = |c| Style::new().fg_color(Some(Color::Ansi(c)));
        match self {
            Tone::Plain => Style::new(),
            Tone::Dim => Style::new().dimmed(),
            Tone::User => fg(AnsiColor::Green).bold(),
            Tone::Assistant => fg(AnsiColor::Cyan).bold(),
            Tone::Tool => fg(AnsiColor::Yellow),
            Tone::Summary => fg(AnsiColor::Blue),
            Tone::Custom => fg(AnsiColor::Magenta),
            Tone::Error => fg(AnsiColor::Red),
            Tone::Label => fg(AnsiColor::Yellow).bold(),
            Tone::Mark => fg(AnsiColor::Cyan).bold(),
            Tone::Branch => fg(AnsiColor::Yellow),
        }
    }
}

/// What a line says about its entry (raw text; escaped when printed).
enum Preview {
    /// A head (`user: `, `[branch summary]: `) and a body.
    Text {
        head: Cow<'static, str>,
        head_tone: Tone,
        body: String,
        body_tone: Tone,
    },
    /// A tool result: shown as its call, looked up once every call is known.
    ToolResult { call: Option<String>, name: Option<String> },
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

    fn parts<'a>(&'a self, calls: &'a HashMap<String, String>) -> [(Cow<'a, str>, Tone); 2] {
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
    fn text(&self, calls: &HashMap<String, String>) -> String {
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

fn tree(a: &TreeArgs, open: OpenOptions, out: &mut dyn Write) -> Result<i32> {
    let path = a.session.file.as_path();
    let at = || crate::show::at(path);
    let s = crate::open::open(path, open)?.map_err(at())?;
    crate::show::note_old_format(path, &s);
    let tree = s.tree().map_err(at())?;
    if tree.roots.is_empty() && !s.entries().is_empty() {
        // Entries but no root: every one has a parent, so the links form a cycle.
        anyhow::bail!(Printable::kind(
            format!(
                "{}: no entry is a root of the tree (its parentId links form a cycle): nothing to draw",
                escape_path(path)
            ),
            Kind::InvalidSession
        ));
    }
    let leaf = match &a.leaf {
        Some(id) => Some(s.record(s.find_prefix(id).map_err(at())?).id.to_key()),
        None => None,
    };
    // What went wrong but left something to print: said after the tree, then exit 2.
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
        Err(e) => problems.push(format!(
            "the current branch cannot be marked: {}",
            escape(&e.to_string())
        )),
    }
    let filter = a.filter.unwrap_or(if a.json { Filter::All } else { Filter::Default });
    let hook_is_custom = matches!(
        s.migration(),
        pi_session::Migration::FromV1 | pi_session::Migration::FromV2
    );

    // How the filters see every entry, and the assistants' tool calls, on every core;
    // the texts are read later, for the shown rows only.
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    let mut infos: Vec<Classified> = s
        .entries()
        .par_iter()
        .map(|&p| classify(&s, p, hook_is_custom, home.as_deref()))
        .collect::<pi_session::Result<_>>()
        .map_err(at())?;
    let mut slot = vec![NONE; n];
    for (i, p) in s.entries().iter().enumerate() {
        if let Some(x) = slot.get_mut(p.0 as usize) {
            *x = i as u32;
        }
    }
    // Walk the tree in pi's order, keeping the shown nodes as rows, each with its nearest
    // shown ancestor; tool calls are known in the order pi's walk meets them.
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

    if a.json {
        let j = Json {
            s: &s,
            infos: &infos,
            hook_is_custom,
            home: home.as_deref(),
            rows: &rows,
            tree: &tree,
            on_branch: &on_branch,
            leaf: leaf_pos,
            calls: &calls,
        };
        // Lines made on every core, a chunk at a time, written in order.
        for chunk in rows.chunks(4096) {
            let lines: Vec<String> = chunk
                .par_iter()
                .map(|r| j.line(r))
                .collect::<pi_session::Result<_>>()
                .map_err(at())?;
            for l in lines {
                out.write_all(l.as_bytes())?;
            }
        }
    } else {
        let width = crate::term::width(a.width);
        let color = a.color.on_stdout();
        let draw = Draw {
            s: &s,
            infos: &infos,
            path,
            hook_is_custom,
            home: home.as_deref(),
            rows: &rows,
            calls: &calls,
            on_branch: &on_branch,
            leaf: leaf_pos,
            width,
            cap: cap_levels(width),
            color,
            fold: a.fold,
        };
        if rows.is_empty() {
            if s.entries().is_empty() {
                writeln!(out, "(no entries)")?;
            } else {
                writeln!(out, "(no entry passes --filter)")?;
            }
        } else {
            draw.all(out)?;
        }
    }
    s.verify().map_err(at())?;
    if !problems.is_empty() {
        anyhow::bail!(Printable::kind(
            format!("{}: {}", escape_path(path), problems.join("; ")),
            Kind::InvalidSession
        ));
    }
    Ok(0)
}

/// Push `kids` (to be popped in pi's order: the one on the current branch first, then
/// the others in `getTree()`'s order).
fn push_children(stack: &mut Vec<(EntryPos, u32, u32)>, kids: &[EntryPos], on: &Bits, depth: u32, row: u32) {
    stack.extend(kids.iter().rev().filter(|&&k| !on.has(k)).map(|&k| (k, depth, row)));
    stack.extend(kids.iter().rev().filter(|&&k| on.has(k)).map(|&k| (k, depth, row)));
}

/// The most gutter levels drawn: a third of the width at three columns a level, 4 to 16
/// (16 when nothing is cut).
fn cap_levels(width: Option<usize>) -> usize {
    width.map_or(16, |w| (w / 9).clamp(4, 16))
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

/// pi's `shortenHomePath`.
fn shorten_home(p: &str, home: Option<&str>) -> String {
    match home {
        Some(h) if p == h => "~".into(),
        Some(h) if p.starts_with(h) && p[h.len()..].starts_with('/') => format!("~{}", &p[h.len()..]),
        _ => p.to_owned(),
    }
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
        shorten_home(&p, home)
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
            shorten_home(&or("path", "."), home)
        ),
        "find" => format!(
            "[find: {} in {}]",
            or("pattern", ""),
            shorten_home(&or("path", "."), home)
        ),
        "ls" => format!("[ls: {}]", shorten_home(&or("path", "."), home)),
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
fn classify(s: &Session, p: EntryPos, hook_is_custom: bool, home: Option<&str>) -> pi_session::Result<Classified> {
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
fn describe(s: &Session, p: EntryPos, hook_is_custom: bool, home: Option<&str>) -> pi_session::Result<Info> {
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
                        if b.get("type").and_then(Value::as_str) == Some("toolCall")
                            && let Some(id) = b.get("id")
                        {
                            let name = b.get("name").map_or_else(|| "undefined".into(), Value::to_js_string);
                            calls.push((id.to_js_string(), format_call(&name, b.get("arguments"), home)));
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
            Role::Missing | Role::NotString if rec.message_kind.is_none_or(|k| k == pi_session::Kind::Null) => (
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
        Some(pi_session::Key::Null | pi_session::Key::Undefined) => "null".into(),
        Some(pi_session::Key::Bool(b)) => b.to_string(),
        Some(pi_session::Key::Num(bits)) => Value::Number(f64::from_bits(*bits)).stringify(),
        // A string that is not UTF-8 (a lone surrogate), an object or an array: as the
        // line holds it.
        _ => s
            .value(p)
            .ok()
            .and_then(|v| v.get(member).map(Value::stringify))
            .unwrap_or_else(|| "null".into()),
    }
}

/// `--json`'s lines.
struct Json<'a> {
    s: &'a Session,
    infos: &'a [Classified],
    hook_is_custom: bool,
    home: Option<&'a str>,
    rows: &'a [Row],
    tree: &'a pi_session::Tree,
    on_branch: &'a Bits,
    leaf: Option<EntryPos>,
    calls: &'a HashMap<String, String>,
}

impl Json<'_> {
    /// A row's line (with its line break).
    fn line(&self, r: &Row) -> pi_session::Result<String> {
        let Json {
            s,
            infos,
            hook_is_custom,
            home,
            rows,
            tree,
            on_branch,
            leaf,
            calls,
        } = *self;
        let preview = match infos.get(r.info as usize).and_then(|i| i.preview.as_deref()) {
            Some(p) => p.text(calls),
            None => describe(s, r.pos, hook_is_custom, home)?.preview.text(calls),
        };
        json_line(s, r, rows, tree, on_branch, leaf, &preview)
    }
}

#[allow(clippy::too_many_arguments)]
fn json_line(
    s: &Session,
    r: &Row,
    rows: &[Row],
    tree: &pi_session::Tree,
    on_branch: &Bits,
    leaf: Option<EntryPos>,
    preview: &str,
) -> pi_session::Result<String> {
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

// ----- text -----------------------------------------------------------------------------

/// One line being built: parts of text, each with its tone (raw text, already escaped).
#[derive(Default)]
struct Line {
    parts: Vec<(String, Tone)>,
}

impl Line {
    fn push(&mut self, text: impl Into<String>, tone: Tone) {
        let t = text.into();
        if !t.is_empty() {
            self.parts.push((t, tone));
        }
    }

    /// The line cut to `width` display columns (`…` at the cut), coloured or not.
    fn render(&self, width: Option<usize>, color: bool) -> String {
        let plain: String = self.parts.iter().map(|(t, _)| t.as_str()).collect();
        let keep = match width {
            Some(w) if plain.width() > w => Some(crate::term::cut_at(&plain, w.saturating_sub(1))),
            _ => None,
        };
        let mut out = String::new();
        let mut left = keep.unwrap_or(plain.len());
        for (t, tone) in &self.parts {
            if left == 0 {
                break;
            }
            let piece = &t[..t.len().min(left)];
            left -= piece.len();
            paint(&mut out, piece, *tone, color);
        }
        if keep.is_some() {
            paint(&mut out, "…", Tone::Dim, color);
        }
        out
    }
}

fn paint(out: &mut String, text: &str, tone: Tone, color: bool) {
    if color && tone != Tone::Plain {
        let st = tone.style();
        out.push_str(&format!("{st}{text}{st:#}"));
    } else {
        out.push_str(text);
    }
}

/// The text printer: layout as pi's `recalculateVisualStructure`, then one line a row.
struct Draw<'a> {
    s: &'a Session,
    infos: &'a [Classified],
    path: &'a std::path::Path,
    hook_is_custom: bool,
    home: Option<&'a str>,
    rows: &'a [Row],
    calls: &'a HashMap<String, String>,
    on_branch: &'a Bits,
    leaf: Option<EntryPos>,
    width: Option<usize>,
    cap: usize,
    color: bool,
    fold: bool,
}

/// Rows laid out at a time before their texts are read (in parallel).
const CHUNK: usize = 4096;

/// A row laid out: its gutter, and what its line says besides the entry's text.
struct Pending {
    row: u32,
    prefix: String,
    connector: bool,
    kids: usize,
    folded: Option<u32>,
}

/// A gutter column: the level it is drawn at, and whether it shows `│`.
#[derive(Clone, Copy)]
struct Gutter {
    level: usize,
    show: bool,
}

/// One row to lay out (pi's stack item): its row, indent, whether its parent forked,
/// whether it is its parent's last child, how many gutters it inherits and the one its
/// parent adds.
#[derive(Clone, Copy)]
struct Item {
    row: u32,
    indent: usize,
    forked: bool,
    last: bool,
    base: usize,
    gutter: Option<Gutter>,
    virtual_root: bool,
}

impl Draw<'_> {
    fn all(&self, out: &mut dyn Write) -> Result<()> {
        // Shown children of each row (and of the virtual root, at the end), in row order.
        let n = self.rows.len();
        let mut starts = vec![0u32; n + 3];
        for r in self.rows {
            let parent = if r.parent == NONE { n } else { r.parent as usize };
            starts[parent + 2] += 1;
        }
        for i in 2..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut kids = vec![0u32; n];
        for (i, r) in self.rows.iter().enumerate() {
            let parent = if r.parent == NONE { n } else { r.parent as usize };
            let slot = &mut starts[parent + 1];
            kids[*slot as usize] = i as u32;
            *slot += 1;
        }
        let children = |parent: usize| &kids[starts[parent] as usize..starts[parent + 1] as usize];
        // Hidden below a folded row: its shown descendants (rows are in preorder).
        let mut below = vec![0u32; n];
        for i in (0..n).rev() {
            let p = self.rows[i].parent as usize;
            if p < n {
                below[p] += below[i] + 1;
            }
        }
        let roots = children(n);
        let multi = roots.len() > 1;
        let mut gutters: Vec<Gutter> = Vec::new();
        let mut pending: Vec<Pending> = Vec::with_capacity(CHUNK);
        let mut stack: Vec<Item> = roots
            .iter()
            .enumerate()
            .rev()
            .map(|(i, &r)| Item {
                row: r,
                indent: usize::from(multi),
                forked: multi,
                last: i + 1 == roots.len(),
                base: 0,
                gutter: None,
                virtual_root: multi,
            })
            .collect();
        while let Some(it) = stack.pop() {
            gutters.truncate(it.base);
            if let Some(g) = it.gutter {
                gutters.push(g);
            }
            let row = it.row as usize;
            let kids = children(row);
            // A segment's start (a root, or a fork's child) off the current branch folds.
            let segment_start = it.forked || self.rows[row].parent == NONE;
            let folded = self.fold && !kids.is_empty() && segment_start && !self.on_branch.has(self.rows[row].pos);
            let (prefix, connector) = self.gutter(&it, &gutters, multi, folded);
            pending.push(Pending {
                row: it.row,
                prefix,
                connector,
                kids: kids.len(),
                folded: folded.then_some(below[row]),
            });
            if pending.len() == CHUNK {
                self.flush(&mut pending, out)?;
            }
            if folded {
                continue;
            }
            let many = kids.len() > 1;
            let indent = if many || (it.forked && it.indent > 0) {
                it.indent + 1
            } else {
                it.indent
            };
            let shows_connector = it.forked && !it.virtual_root;
            let display = if multi { it.indent.saturating_sub(1) } else { it.indent };
            let base = gutters.len();
            let gutter = shows_connector.then_some(Gutter {
                level: display.saturating_sub(1),
                show: !it.last,
            });
            stack.extend(kids.iter().enumerate().rev().map(|(i, &k)| Item {
                row: k,
                indent,
                forked: many,
                last: i + 1 == kids.len(),
                base,
                gutter,
                virtual_root: false,
            }));
        }
        self.flush(&mut pending, out)
    }

    /// Read the texts of laid-out rows (on every core), then write their lines in order.
    fn flush(&self, pending: &mut Vec<Pending>, out: &mut dyn Write) -> Result<()> {
        // An assistant message's text is known already.
        let stored = |p: &Pending| {
            let r = &self.rows[p.row as usize];
            self.infos.get(r.info as usize).and_then(|i| i.preview.as_deref())
        };
        let read: Vec<Option<Preview>> = pending
            .par_iter()
            .map(|p| match stored(p) {
                Some(_) => Ok(None),
                None => self.preview(self.rows[p.row as usize].pos).map(Some),
            })
            .collect::<pi_session::Result<_>>()
            .map_err(crate::show::at(self.path))?;
        for (p, preview) in pending.iter().zip(&read) {
            if let Some(preview) = preview.as_ref().or_else(|| stored(p)) {
                writeln!(out, "{}", self.line(p, preview))?;
            }
        }
        pending.clear();
        Ok(())
    }

    fn preview(&self, p: EntryPos) -> pi_session::Result<Preview> {
        describe(self.s, p, self.hook_is_custom, self.home).map(|i| i.preview)
    }

    /// The gutter of a row as laid out: pi's prefix, at most `cap` levels of it; and
    /// whether it ends in a connector.
    fn gutter(&self, it: &Item, gutters: &[Gutter], multi: bool, folded: bool) -> (String, bool) {
        let display = if multi { it.indent.saturating_sub(1) } else { it.indent };
        let connector = it.forked && !it.virtual_root;
        let from = display.saturating_sub(self.cap);
        let mut prefix = String::new();
        if from > 0 {
            prefix.push_str(&format!("…{from:<2} "));
        }
        // Gutters in increasing level; only those from `from` on are drawn.
        let first = gutters.partition_point(|g| g.level < from);
        let mut gs = gutters[first..].iter().peekable();
        for level in from..display {
            while gs.peek().is_some_and(|g| g.level < level) {
                gs.next();
            }
            match gs.peek() {
                Some(g) if g.level == level => prefix.push_str(if g.show { "│  " } else { "   " }),
                _ if connector && level + 1 == display => {
                    prefix.push_str(if it.last { "└" } else { "├" });
                    prefix.push_str(if folded { "⊞ " } else { "─ " });
                }
                _ => prefix.push_str("   "),
            }
        }
        (prefix, connector)
    }

    /// A laid-out row's line, with its entry's text.
    fn line(&self, p: &Pending, preview: &Preview) -> String {
        let r = &self.rows[p.row as usize];
        let rec = self.s.record(r.pos);
        let on = self.on_branch.has(r.pos);
        let mut line = Line::default();
        // The id: its first 8 characters (all of a pi id, a unique prefix of a longer
        // one), escaped, padded to 8 columns.
        let id = match rec.id.as_str() {
            Some(t) => escape(&t.chars().take(8).collect::<String>()).into_owned(),
            None if rec.id.is_undefined() => "(no id)".to_owned(),
            None => key_text(rec.id),
        };
        let pad = 8usize.saturating_sub(id.width());
        line.push(
            format!("{id}{} ", " ".repeat(pad)),
            if on { Tone::Branch } else { Tone::Dim },
        );
        line.push(p.prefix.as_str(), Tone::Dim);
        if let Some(hidden) = p.folded {
            if !p.connector {
                line.push("⊞ ", Tone::Mark);
            }
            line.push(format!("[+{hidden}] "), Tone::Dim);
        }
        if Some(r.pos) == self.leaf {
            line.push("@ ", Tone::Mark);
        } else if on {
            line.push("* ", Tone::Mark);
        }
        if let Some(l) = self.s.label_entry(rec.id).and_then(|l| self.s.value(l).ok()) {
            let text = l.get("label").map_or_else(String::new, |t| flat_str(&t.to_js_string()));
            line.push(format!("[{}] ", escape(&text)), Tone::Label);
        }
        if p.kids > 1 {
            line.push(format!("[{} branches] ", p.kids), Tone::Dim);
        }
        for (text, tone) in preview.parts(self.calls) {
            line.push(escape(&text).into_owned(), tone);
        }
        line.render(self.width, self.color)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_line_never_exceeds_its_width() {
        let mut l = Line::default();
        l.push("12345678 ", Tone::Dim);
        l.push("user: ", Tone::User);
        l.push("日本語のテキスト👩‍👩‍👧 e\u{301}".repeat(5), Tone::Plain);
        for w in 1..60 {
            let s = l.render(Some(w), false);
            assert!(s.width() <= w, "{w}: {s}");
            let c = l.render(Some(w), true);
            assert!(c.contains('\u{1b}'));
        }
        assert!(!l.render(None, false).contains('…'));
    }

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
