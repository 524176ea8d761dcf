//! `pi-session show`: the current branch (or the branch of `--leaf`) as a transcript a
//! person reads: a header per message (role, model, time, id, label), its text, tool
//! calls on one line each, tool results and long summaries cut to a few lines, images as
//! their type and size, thinking hidden unless asked for.
//!
//! Entries are decoded one at a time as they are printed, so the first screen of a
//! 1 GiB session shows while the rest is still unread; everything from the session is
//! escaped for the terminal (`text::escape`, line by line).

use crate::show::key_text;
use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;
use pi_session::text::{escape, escape_path};
use pi_session::{EntryPos, EntryType, OpenOptions, Session, Value};
use std::io::Write;
use std::path::Path;

/// What `show` prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShowFlags {
    /// Tool results and summaries in full.
    pub full: bool,
    /// Thinking blocks too.
    pub thinking: bool,
    /// ANSI colours (headers by role, notes dimmed).
    pub color: bool,
}

impl ShowFlags {
    /// `text` in `style` when colour is on.
    fn paint(&self, text: &str, style: Style) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }
}

const DIM: Style = Style::new().dimmed();
const CALL: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Magenta)));
const ERROR: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Red))).bold();

/// The header style of a role.
fn role_style(role: &str) -> Style {
    let c = match role {
        "user" => AnsiColor::Green,
        "assistant" => AnsiColor::Cyan,
        "toolResult" | "bashExecution" => AnsiColor::Yellow,
        _ => AnsiColor::Blue,
    };
    Style::new().fg_color(Some(Color::Ansi(c))).bold()
}

/// Lines of a tool result or summary shown before "(N more lines, --full)".
const SHOWN_LINES: usize = 6;
/// The widest a one-line summary (a tool call's arguments) gets.
const LINE_WIDTH: usize = 120;

/// Print the branch of `leaf` (default: the session's leaf) of `path`.
pub fn show(path: &Path, opts: OpenOptions, leaf: Option<&str>, flags: ShowFlags, out: &mut dyn Write) -> Result<i32> {
    let s = Session::open_with(path, opts).map_err(crate::show::at(path))?;
    let branch = match leaf {
        Some(id) => {
            let p = s.find_prefix(id).map_err(crate::show::at(path))?;
            s.branch_path(Some(&s.record(p).id.to_key()))
        }
        None => s.branch_path(None),
    }
    .map_err(crate::show::at(path))?;
    write_header(&s, path, out)?;
    let mut shown = 0usize;
    for &p in &branch {
        if entry(&s, p, flags, out)? {
            shown += 1;
        }
    }
    if shown == 0 {
        writeln!(out, "(no messages on this branch)")?;
    }
    s.verify().map_err(crate::show::at(path))?;
    Ok(0)
}

fn write_header(s: &Session, path: &Path, out: &mut dyn Write) -> Result<()> {
    let name = s.session_name().ok().flatten().map(|n| n.to_str_lossy().into_owned());
    let header = s.header().ok();
    let field = |k: &str| {
        header
            .as_ref()
            .and_then(|h| h.get(k))
            .and_then(Value::as_str)
            .map(|v| escape(v).into_owned())
    };
    writeln!(
        out,
        "# {}",
        name.as_deref()
            .map_or_else(|| escape_path(path).into_owned(), |n| escape(n).into_owned())
    )?;
    if let Some(id) = field("id") {
        writeln!(out, "session {id}")?;
    }
    if let Some(cwd) = field("cwd") {
        writeln!(out, "cwd {cwd}")?;
    }
    if !s.skipped().is_empty() {
        writeln!(
            out,
            "note: {} line(s) of the file are skipped, as pi skips them (`pi-session check` says why)",
            s.skipped().len()
        )?;
    }
    if !matches!(s.migration(), pi_session::Migration::None) {
        writeln!(
            out,
            "note: an old-format session: pi gives its entries new random ids when it opens it (`pi-session migrate` writes them)"
        )?;
    }
    Ok(())
}

/// `2025-12-01T09:01:53.680Z` as `2025-12-01 09:01:53 UTC`; anything else escaped as it is.
fn time_text(v: Option<&Value<'_>>) -> Option<String> {
    let t = v?.as_str()?;
    let b = t.as_bytes();
    if b.len() >= 19 && b[10] == b'T' && t.ends_with('Z') && t.is_ascii() {
        return Some(format!("{} {} UTC", &t[..10], &t[11..19]));
    }
    Some(escape(t).into_owned())
}

/// One entry; `true` when it printed a message.
fn entry(s: &Session, p: EntryPos, flags: ShowFlags, out: &mut dyn Write) -> Result<bool> {
    let rec = s.record(p);
    let v = match s.value(p) {
        Ok(v) => v,
        Err(e) => {
            writeln!(
                out,
                "\n(entry {} could not be read: {})",
                key_text(rec.id),
                escape(&e.to_string())
            )?;
            return Ok(false);
        }
    };
    let id = key_text(rec.id);
    let time = time_text(v.get("timestamp"));
    let label = s
        .label_entry(rec.id)
        .and_then(|l| s.value(l).ok())
        .and_then(|l| l.get("label").and_then(Value::as_str).map(|t| escape(t).into_owned()));
    let head = |what: &str, role: &str| {
        let mut h = format!("── {what}");
        if let Some(t) = &time {
            h.push_str(&format!(" · {t}"));
        }
        h.push_str(&format!(" · {id}"));
        if let Some(l) = &label {
            h.push_str(&format!(" · label: {l}"));
        }
        format!("\n{}", flags.paint(&h, role_style(role)))
    };
    match rec.ty {
        EntryType::Message => {
            let Some(m) = v.get("message") else { return Ok(false) };
            message(m, &head, flags, out)?;
            Ok(true)
        }
        EntryType::Compaction => {
            let tokens = v.get("tokensBefore").map(Value::stringify);
            let what = match tokens {
                Some(t) => format!("compaction (summary of {t} tokens before it)"),
                None => "compaction".into(),
            };
            writeln!(out, "{}", head(&what, "summary"))?;
            content(v.get("summary"), flags, Length::Cut, out)?;
            Ok(true)
        }
        EntryType::BranchSummary => {
            writeln!(out, "{}", head("branch summary (of a branch left)", "summary"))?;
            content(v.get("summary"), flags, Length::Cut, out)?;
            Ok(true)
        }
        EntryType::CustomMessage => {
            let ty = v.get("customType").and_then(Value::as_str).unwrap_or("?");
            writeln!(out, "{}", head(&format!("custom message {}", escape(ty)), "custom"))?;
            content(v.get("content"), flags, Length::Whole, out)?;
            Ok(true)
        }
        EntryType::ModelChange => {
            let provider = v.get("provider").and_then(Value::as_str).unwrap_or("?");
            let model = v.get("modelId").and_then(Value::as_str).unwrap_or("?");
            let note = format!("· model: {}/{}", escape(provider), escape(model));
            writeln!(out, "\n{}", flags.paint(&note, DIM))?;
            Ok(false)
        }
        EntryType::ThinkingLevelChange => {
            let level = match v.get("thinkingLevel") {
                Some(l) => l.as_str().map_or_else(|| l.stringify(), str::to_owned),
                None => String::new(),
            };
            let note = format!("· thinking level: {}", escape(&level));
            writeln!(out, "\n{}", flags.paint(&note, DIM))?;
            Ok(false)
        }
        _ => Ok(false),
    }
}

fn message(m: &Value<'_>, head: &dyn Fn(&str, &str) -> String, flags: ShowFlags, out: &mut dyn Write) -> Result<()> {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
    match role {
        "assistant" => {
            let provider = m.get("provider").and_then(Value::as_str);
            let model = m.get("model").and_then(Value::as_str);
            let what = match (provider, model) {
                (Some(p), Some(m)) => format!("assistant ({}/{})", escape(p), escape(m)),
                (None, Some(m)) => format!("assistant ({})", escape(m)),
                _ => "assistant".into(),
            };
            writeln!(out, "{}", head(&what, role))?;
            content(m.get("content"), flags, Length::Whole, out)?;
            if let Some(e) = m.get("errorMessage").and_then(Value::as_str) {
                writeln!(out, "{}", flags.paint(&format!("error: {}", escape(e)), ERROR))?;
            }
        }
        "toolResult" => {
            let name = m.get("toolName").and_then(Value::as_str).unwrap_or("?");
            let failed = m.get("isError").is_some_and(Value::truthy);
            let what = format!("tool result {}{}", escape(name), if failed { " (error)" } else { "" });
            writeln!(out, "{}", head(&what, role))?;
            content(m.get("content"), flags, Length::Cut, out)?;
        }
        "bashExecution" => {
            writeln!(out, "{}", head("bash", role))?;
            let command = m.get("command").and_then(Value::as_str).unwrap_or("");
            writeln!(out, "{}", flags.paint(&format!("$ {}", one_line(command)), CALL))?;
            content(m.get("output"), flags, Length::Cut, out)?;
            if let Some(code) = m.get("exitCode").filter(|c| !matches!(c, Value::Null)) {
                writeln!(out, "(exit {})", code.stringify())?;
            }
        }
        "branchSummary" | "compactionSummary" => {
            writeln!(out, "{}", head(&format!("{} (summary)", escape(role)), role))?;
            content(m.get("summary"), flags, Length::Cut, out)?;
        }
        "system" => {
            writeln!(out, "{}", head("system", role))?;
            // pi's structured system prompt keeps its text in `sections` (content empty).
            match (m.get("content"), m.get("sections")) {
                (Some(Value::String(c)), Some(Value::Object(sections))) if c.as_bytes().is_empty() => {
                    for (_, text) in sections.iter() {
                        content(Some(text), flags, Length::Cut, out)?;
                    }
                }
                (c, _) => content(c, flags, Length::Cut, out)?,
            }
        }
        "custom" => {
            let ty = m.get("customType").and_then(Value::as_str).unwrap_or("?");
            writeln!(out, "{}", head(&format!("custom {}", escape(ty)), role))?;
            content(m.get("content"), flags, Length::Whole, out)?;
        }
        other => {
            writeln!(out, "{}", head(&escape(other), other))?;
            content(m.get("content"), flags, Length::Whole, out)?;
        }
    }
    Ok(())
}

/// How much of a text to print.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Length {
    /// All of it (what a person wrote or the model answered).
    Whole,
    /// Its first lines unless `--full` (tool output, summaries).
    Cut,
}

/// A `content` (or `summary`, `output`): a string, or blocks of text, thinking, tool
/// calls and images.
fn content(c: Option<&Value<'_>>, flags: ShowFlags, len: Length, out: &mut dyn Write) -> Result<()> {
    match c {
        Some(Value::String(_)) => text(c.and_then(Value::as_str).unwrap_or(""), flags, len, out),
        Some(Value::Array(blocks)) => {
            for b in blocks.iter() {
                block(b, flags, len, out)?;
            }
            Ok(())
        }
        Some(other) => {
            writeln!(out, "{}", one_line(&other.stringify()))?;
            Ok(())
        }
        None => Ok(()),
    }
}

fn block(b: &Value<'_>, flags: ShowFlags, len: Length, out: &mut dyn Write) -> Result<()> {
    let str_of = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("");
    match b.get("type").and_then(Value::as_str) {
        Some("text") => text(str_of("text"), flags, len, out),
        Some("thinking") => {
            let t = str_of("thinking");
            if flags.thinking {
                writeln!(out, "[thinking]")?;
                text(t, flags, Length::Whole, out)
            } else {
                let note = format!("[thinking: {} hidden, --thinking]", count(t.lines().count(), "line"));
                writeln!(out, "{}", flags.paint(&note, DIM))?;
                Ok(())
            }
        }
        Some("toolCall") => {
            let name = b.get("name").and_then(Value::as_str).unwrap_or("?");
            let call = format!("→ {}({})", escape(name), one_line(&arguments(b.get("arguments"))));
            writeln!(out, "{}", flags.paint(&call, CALL))?;
            Ok(())
        }
        Some("image") => {
            let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("image");
            let bytes = str_of("data").len() / 4 * 3;
            let note = format!("[{} {}]", escape(mime), size_text(bytes as u64));
            writeln!(out, "{}", flags.paint(&note, DIM))?;
            Ok(())
        }
        _ => {
            writeln!(out, "{}", one_line(&b.stringify()))?;
            Ok(())
        }
    }
}

/// A text line by line, escaped; cut to its first lines (then how many more there are)
/// when `len` says so and `--full` does not.
fn text(t: &str, flags: ShowFlags, len: Length, out: &mut dyn Write) -> Result<()> {
    let total = t.lines().count();
    let keep = if flags.full || len == Length::Whole {
        total
    } else {
        SHOWN_LINES.min(total)
    };
    for line in t.lines().take(keep) {
        writeln!(out, "{}", escape(line))?;
    }
    if keep < total {
        let note = format!("({}, --full)", count(total - keep, "more line"));
        writeln!(out, "{}", flags.paint(&note, DIM))?;
    }
    Ok(())
}

/// A tool call's arguments as `key: value, ...` (strings as they are, the rest as JSON).
fn arguments(a: Option<&Value<'_>>) -> String {
    match a {
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| {
                let v = match v.as_str() {
                    Some(s) => s.to_owned(),
                    None => v.stringify(),
                };
                format!("{}: {v}", k.to_str_lossy())
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(v) => v.stringify(),
        None => String::new(),
    }
}

/// Text on one line: newlines shown as `⏎`, escaped, cut to [`LINE_WIDTH`] characters.
fn one_line(t: &str) -> String {
    let flat: String = t.replace('\n', "⏎");
    let mut cut: String = flat.chars().take(LINE_WIDTH).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    escape(&cut).into_owned()
}

/// `1 line`, `3 lines`.
fn count(n: usize, what: &str) -> String {
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

/// `$PAGER` (default `less -FRX`: quits when the text fits one screen, keeps colours,
/// leaves the screen as it is) fed through a pipe, when standard output is a terminal.
pub struct Pager {
    child: std::process::Child,
    input: std::io::BufWriter<std::process::ChildStdin>,
}

impl Pager {
    /// Start the pager; `None` when standard output is no terminal, `PAGER` is empty or
    /// `cat`, or the pager cannot be started (then the text goes to standard output).
    pub fn start() -> Option<Pager> {
        use std::io::IsTerminal;
        if !std::io::stdout().is_terminal() {
            return None;
        }
        let cmd = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".into());
        if cmd.trim().is_empty() || cmd.trim() == "cat" {
            return None;
        }
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        Some(Pager {
            child,
            input: std::io::BufWriter::new(stdin),
        })
    }

    /// Where the text goes.
    pub fn input(&mut self) -> &mut dyn Write {
        &mut self.input
    }

    /// Close the pipe and wait for the reader to quit.
    pub fn finish(self) {
        let Pager { mut child, input } = self;
        drop(input.into_inner());
        let _ = child.wait();
    }
}
