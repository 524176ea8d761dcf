//! `pi-session export FILE [--format md|html|jsonl] [-o OUT]`: the current branch (or
//! `--leaf`'s) of a session as a file to keep or share.
//!
//! - **md** (the default): a transcript that renders on GitHub; a heading with the name,
//!   the session's id, cwd and creation time, then a section per message (role, model,
//!   time, id, label) with its text as it is, tool calls on a line (or a fenced block when
//!   their arguments do not fit one), tool output in fenced blocks whose fence is longer
//!   than any run of backticks inside (content cannot close it), images as
//!   `[image/png 1.2 MB]`, thinking hidden unless `--thinking` (then quoted). Markdown is
//!   the default because it is what people paste into issues and chats, it reads as text
//!   on a terminal or in a pager, and it is safe to print; `-o x.html` or `-o x.jsonl`
//!   pick their format by the extension when `--format` is not given.
//! - **html**: one self-contained page, readable on a phone, light or dark as the system
//!   is. No script at all, no external reference (no link, no font, no `url()`), a
//!   Content-Security-Policy (`default-src 'none'; img-src data:; style-src
//!   'unsafe-inline'`) as a second line of defence. Every string from the session is
//!   escaped (`&`, `<`, `>`, `"`, `'`; C0 controls shown as their Unicode control
//!   pictures), in text and in the one attribute that carries one (`alt`). The only
//!   `src` is a `data:` URI built here, with `--images`, from an image whose type is one
//!   of PNG, JPEG, GIF, WebP and whose data is the base64 alphabet only; other images are
//!   placeholders. Text is shown as it is (`white-space: pre-wrap`), not rendered as
//!   Markdown: no markup of the session's reaches the page. (pi's own export renders
//!   Markdown with a script and had to fix XSS three times.)
//! - **jsonl**: pi's `serializeSessionBranch` (its `/export FILE.jsonl`):
//!   [`Session::write_branch_jsonl`], a valid session that pi opens with this branch.
//!
//! Without `-o` (or with `-o -`) the export goes to standard output. When that is a
//! terminal, a person reads it there: every line passes through `text::escape`, as all
//! terminal output of pi-session does, because an escape sequence in a session would
//! otherwise act on the terminal (clipboard, title, forged lines); backslashes show
//! doubled there. Piped or written to a file, the bytes are the export, exact: a file is
//! no terminal, and its reader (GitHub, a browser, pi) does its own escaping.
//!
//! `-o FILE` writes a temporary file beside FILE and renames it over FILE when complete,
//! so FILE is never half written; the session itself is never overwritten (refused,
//! exit 2). `-o` to a FIFO or a character device streams into it as `cat > FILE` would
//! (`-o /dev/null`, `-o /dev/stdout`, `-o >(gzip > x.gz)`), and never replaces it; a
//! symlink is written through (the link stays, the file it names gets the export). Lines of the session that could not be read are left out and the output
//! says so at its top (jsonl: on stderr, a session file has no place for a note).

use crate::show::{Kind, Printable};
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use pi_session::text::{escape, escape_path};
use pi_session::view::transcript::{
    Flow, Head, Info, Note, Part, Sink, arguments_block, arguments_line, block_note, count, one_line, walk,
};
use pi_session::{Env, Flavor, OpenOptions, OutputFile, Session};
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Markdown that renders on GitHub (the default).
    Md,
    /// One self-contained HTML page: no script, no network.
    Html,
    /// The branch as a pi session file (pi's own jsonl export).
    Jsonl,
}

/// `pi-session export`'s arguments.
#[derive(Args)]
#[command(
    after_help = "The format is --format's, else the extension of -o's file (.md, .html/.htm, .jsonl), else md.\nExamples:\n  pi-session export s.jsonl -o s.md\n  pi-session export s.jsonl --format html --images -o s.html\n  pi-session export s.jsonl --leaf 4bd0512f -o branch.jsonl"
)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub(crate) session: crate::flags::SessionArg,
    /// md, html or jsonl.
    #[arg(short, long, value_enum)]
    format: Option<Format>,
    /// Write to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Export the branch ending at this entry (an id or a unique prefix of one) instead of
    /// the current leaf.
    #[arg(short, long)]
    leaf: Option<String>,
    /// Include thinking blocks (md: quoted; html: collapsed).
    #[arg(long)]
    thinking: bool,
    /// html: embed PNG, JPEG, GIF and WebP images (as data: URIs) instead of placeholders.
    #[arg(long)]
    images: bool,
    #[command(flatten)]
    pub(crate) zone: crate::flags::ZoneArgs,
}

impl ExportArgs {
    /// The format asked for: `--format`, else `-o`'s extension, else md.
    ///
    /// # Errors
    /// An extension of another format (`-o out.pdf`) without `--format` (a usage error:
    /// Markdown written into `out.pdf` is no answer).
    fn format(&self) -> Result<Format> {
        if let Some(f) = self.format {
            return Ok(f);
        }
        let Some(out) = self.output() else {
            return Ok(Format::Md);
        };
        let ext = out.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("html" | "htm") => Ok(Format::Html),
            Some("jsonl") => Ok(Format::Jsonl),
            None | Some("md" | "markdown" | "txt") => Ok(Format::Md),
            Some(other) => bail!(Printable::kind(
                format!(
                    "{}: pi-session cannot write .{} files: name the file .md, .html or .jsonl, or say --format",
                    escape_path(out),
                    escape(other)
                ),
                Kind::Usage
            )),
        }
    }

    /// The output file; `None` for standard output.
    fn output(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| p.as_os_str() != "-")
    }
}

/// Run `pi-session export`.
pub(crate) fn run(a: &ExportArgs, open: OpenOptions, stdout: &mut dyn Write) -> Result<i32> {
    let format = a.format()?;
    let (s, branch) = crate::open::open_branch(&a.session.file, open, a.leaf.as_deref())?;
    let render = |out: &mut dyn Write| -> Result<()> {
        match format {
            Format::Md => {
                walk(
                    &s,
                    &a.session.file,
                    &branch,
                    &mut Markdown {
                        out,
                        thinking: a.thinking,
                    },
                )?;
            }
            Format::Html => {
                let mut h = Html {
                    out,
                    thinking: a.thinking,
                    images: a.images,
                    open: false,
                };
                walk(&s, &a.session.file, &branch, &mut h)?;
            }
            Format::Jsonl => jsonl(&s, &branch, out)?,
        }
        // The bytes read were the file's (a mapping that changed is an error, not an export).
        s.verify().map_err(crate::show::at(&a.session.file))?;
        Ok(())
    };
    match a.output() {
        Some(target) => {
            refuse_input(&a.session.file, target)?;
            write_output(target, render)?;
        }
        None => {
            use std::io::IsTerminal;
            let stdout_name = Path::new("standard output");
            let cannot = |e: std::io::Error| Printable::io("cannot write to", stdout_name, e);
            let mut w = Tagged {
                out: stdout,
                failed: None,
            };
            if std::io::stdout().is_terminal() {
                let mut t = TerminalSafe {
                    out: &mut w,
                    line: Vec::new(),
                };
                let r = render(&mut t).and_then(|()| t.finish().map_err(Into::into));
                named(r, w.failed, cannot)?;
            } else {
                let r = render(&mut w).and_then(|()| w.flush().map_err(Into::into));
                named(r, w.failed, cannot)?;
            }
        }
    }
    if format == Format::Jsonl && !s.skipped().is_empty() {
        eprintln!(
            "pi-session: {}: {} could not be read and {} left out (`pi-session check` says why)",
            escape_path(&a.session.file),
            lines_text(s.skipped().len()),
            if s.skipped().len() == 1 { "is" } else { "are" }
        );
    }
    Ok(0)
}

/// `1 line`, `3 lines`.
/// The notes at the top of an export, each as the text before a command, the command, and
/// the text after it (no session text: each format marks them up as they are).
fn header_notes(info: &Info<'_>) -> Vec<[String; 3]> {
    let mut notes = Vec::new();
    if info.skipped > 0 {
        notes.push([
            format!(
                "{} of the file could not be read and {} left out (",
                lines_text(info.skipped),
                if info.skipped == 1 { "is" } else { "are" }
            ),
            "pi-session check".into(),
            " says why).".into(),
        ]);
    }
    if info.old_format {
        notes.push([
            "an old-format session, which stores no entry ids: the ids shown are derived from the file, the same on every run (".into(),
            "pi-session migrate".into(),
            " writes them into it).".into(),
        ]);
    }
    notes
}

fn lines_text(n: usize) -> String {
    count(n, "line")
}

/// pi's jsonl export of `branch`, stamped with the current time (as pi stamps it).
fn jsonl(s: &Session, branch: &[pi_session::EntryPos], out: &mut dyn Write) -> Result<()> {
    let env = Env::from_process(Flavor::Pi)?;
    let now = (pi_session::Entropy::default().now)();
    s.write_branch_jsonl(branch, &now, &env, out)?;
    Ok(())
}

/// Fail when `target` is the session being exported (the same file, through any name).
fn refuse_input(input: &Path, target: &Path) -> Result<()> {
    let (Ok(i), Ok(t)) = (std::fs::metadata(input), std::fs::metadata(target)) else {
        return Ok(());
    };
    #[cfg(unix)]
    let same = {
        use std::os::unix::fs::MetadataExt as _;
        i.dev() == t.dev() && i.ino() == t.ino()
    };
    #[cfg(not(unix))]
    let same = std::fs::canonicalize(input).ok() == std::fs::canonicalize(target).ok();
    if same {
        bail!(Printable::kind(
            format!(
                "{}: is the session being exported; refusing to write over it",
                escape_path(target)
            ),
            Kind::InvalidInput
        ));
    }
    Ok(())
}

/// Write the export to `target` as [`OutputFile`] writes a file the user names: a regular
/// file (or none yet) through a temporary file renamed over it once `render` and the write
/// are complete (on any failure `target` is as it was); a FIFO or a character device
/// (`/dev/null`, a pipe, `/dev/stdout`) streamed into, escaped when it is a terminal;
/// a folder, a socket or a block device refused.
fn write_output(target: &Path, render: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let cannot = |e: std::io::Error| Printable::io("cannot write", target, e);
    let mut out = OutputFile::create(target).map_err(cannot)?;
    if out.is_terminal() {
        let mut w = Tagged {
            out: &mut out,
            failed: None,
        };
        let mut t = TerminalSafe {
            out: &mut w,
            line: Vec::new(),
        };
        let r = render(&mut t);
        let r = r.and_then(|()| t.finish().map_err(Into::into));
        named(r, w.failed, cannot)?;
    } else {
        let mut w = Tagged {
            out: std::io::BufWriter::with_capacity(1 << 16, &mut out),
            failed: None,
        };
        let r = render(&mut w).and_then(|()| w.flush().map_err(Into::into));
        named(r, w.failed, cannot)?;
    }
    out.finish().map_err(cannot)?;
    Ok(())
}

/// A writer that remembers its first failure, so that a failed export names the file it
/// could not write (a full disk) rather than only the system's words.
struct Tagged<W: Write> {
    out: W,
    failed: Option<std::io::Error>,
}

impl<W: Write> Tagged<W> {
    fn note<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r
            && self.failed.is_none()
        {
            self.failed = Some(match e.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(e.kind(), e.to_string()),
            });
        }
        r
    }
}

impl<W: Write> Write for Tagged<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.out.write(buf);
        self.note(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.out.flush();
        self.note(r)
    }
}

/// `r`, where a failure that came from writing the output is the output's error
/// (`cannot`), not the bare system error.
fn named(
    r: Result<()>,
    failed: Option<std::io::Error>,
    cannot: impl FnOnce(std::io::Error) -> Printable,
) -> Result<()> {
    match (r, failed) {
        (Err(_), Some(e)) => Err(cannot(e).into()),
        (r, _) => r,
    }
}

/// Standard output on a terminal: each line passed through `text::escape`.
struct TerminalSafe<'w> {
    out: &'w mut dyn Write,
    line: Vec<u8>,
}

impl TerminalSafe<'_> {
    fn flush_line(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line);
        self.out.write_all(escape(&text).as_bytes())?;
        self.line.clear();
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.flush_line()?;
        }
        self.out.flush()
    }
}

impl Write for TerminalSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..i]);
            self.flush_line()?;
            self.out.write_all(b"\n")?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The file's name, for a heading when the session has no name.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

// ----- Markdown ---------------------------------------------------------------------

/// The [`Sink`] of `--format md`.
struct Markdown<'w> {
    out: &'w mut dyn Write,
    thinking: bool,
}

/// Text for a Markdown line outside code: line breaks become spaces, other controls their
/// control pictures (`␇`), bidirectional overrides and isolates their escapes (`\u202e`,
/// as on a terminal: they would reorder the heading), and the characters
/// that start markup (`` \ ` * _ [ ] < > ! & | ~ $ ``) are backslash-escaped, so a name
/// or a label shows as it is and makes no link, tag or emphasis.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            c if c < ' ' && c != '\t' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{7f}' => out.push('\u{2421}'),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => out.push_str(&format!("\\\\u{:04x}", u32::from(c))),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '&' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The longest run of `c` in `s` (`memchr` finds each run: tool output is most of a big
/// export, and it rarely holds a backtick).
fn longest_run(s: &str, c: u8) -> usize {
    let b = s.as_bytes();
    let (mut best, mut at) = (0, 0);
    while let Some(i) = memchr::memchr(c, &b[at..]) {
        let start = at + i;
        let len = b[start..].iter().take_while(|&&x| x == c).count();
        best = best.max(len);
        at = start + len;
    }
    best
}

/// A fenced code block holding `body` as it is: the fence is longer than any run of
/// backticks in it (at least three), so no line of it closes the block.
fn fenced(body: &str, info: &str) -> String {
    let fence = "`".repeat((longest_run(body, b'`') + 1).max(3));
    let nl = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{fence}{info}\n{body}{nl}{fence}\n\n")
}

/// A code span holding `s` (one line: line breaks shown as `⏎`/`␍`), its backtick
/// string longer than any run inside.
fn code_span(s: &str) -> String {
    let s = s.replace('\r', "␍").replace('\n', "⏎");
    let ticks = "`".repeat(longest_run(&s, b'`') + 1);
    let pad = if s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// A prose text as it is, as a paragraph of its own; a code fence it opens and leaves
/// open is closed after it (else the rest of the transcript would be code).
fn prose(t: &str) -> String {
    let t = t.trim_end_matches(['\n', '\r']);
    if t.trim().is_empty() {
        return String::new();
    }
    match open_fence(t) {
        Some(fence) => format!("{t}\n{fence}\n\n"),
        None => format!("{t}\n\n"),
    }
}

/// The fence of a fenced code block that `t` leaves open (CommonMark: a line of three or
/// more backticks or tildes, indented by at most three spaces, closed by a line of at
/// least as many of the same character and nothing else).
fn open_fence(t: &str) -> Option<String> {
    let mut open: Option<(char, usize)> = None;
    for line in t.lines() {
        let l = line.trim_end_matches('\r');
        let indent = l.len() - l.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let l = &l[indent..];
        let Some(c) = l.chars().next().filter(|c| matches!(c, '`' | '~')) else {
            continue;
        };
        let n = l.len() - l.trim_start_matches(c).len();
        if n < 3 {
            continue;
        }
        match open {
            None if !(c == '`' && l[n..].contains('`')) => open = Some((c, n)),
            Some((oc, on)) if oc == c && n >= on && l[n..].trim().is_empty() => open = None,
            _ => {}
        }
    }
    open.map(|(c, n)| c.to_string().repeat(n))
}

/// A quoted text (`> ` before every line).
fn quoted(t: &str) -> String {
    let mut out = String::new();
    for line in t.lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            out.push_str("> ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Does a tool call's argument line fit one line?
fn fits_one_line(line: &str) -> bool {
    !line.contains(['\n', '\r']) && one_line(line) == line
}

impl Sink for Markdown<'_> {
    fn start(&mut self, info: &Info<'_>) -> std::io::Result<()> {
        let title = info.name.clone().unwrap_or_else(|| file_name(info.path));
        let mut t = format!("# {}\n\n", md(&title));
        if let Some(id) = &info.id {
            t.push_str(&format!("- session: {}\n", code_span(id)));
        }
        if let Some(cwd) = &info.cwd {
            t.push_str(&format!("- cwd: {}\n", code_span(cwd)));
        }
        if let Some(c) = info.created.as_deref().map(crate::when::stamp) {
            t.push_str(&format!("- created: {}\n", md(&c)));
        }
        t.push('\n');
        for [before, code, after] in header_notes(info) {
            t.push_str(&format!("> **Note:** {before}`{code}`{after}\n\n"));
        }
        self.out.write_all(t.as_bytes())?;
        Ok(())
    }

    fn unreadable(&mut self, id: &str, error: &str) -> std::io::Result<()> {
        writeln!(self.out, "> **entry {} could not be read:** {}\n", md(id), md(error))?;
        Ok(())
    }

    fn note(&mut self, note: &Note<'_>) -> std::io::Result<()> {
        writeln!(self.out, "*{}*\n", note.words(&|s| md(s)))?;
        Ok(())
    }

    fn head(&mut self, head: &Head<'_>) -> std::io::Result<()> {
        let mut h = format!("---\n\n## {}", head.title.words(&|s| md(s)));
        if let Some(t) = head.time.as_deref().map(crate::when::stamp) {
            h.push_str(&format!(" · {}", md(&t)));
        }
        h.push_str(&format!(" · {}", md(&head.id)));
        if let Some(l) = &head.label {
            h.push_str(&format!(" · label: {}", md(l)));
        }
        writeln!(self.out, "{h}\n")?;
        Ok(())
    }

    fn part(&mut self, part: &Part<'_>) -> std::io::Result<()> {
        let t = match part {
            Part::Text(t, Flow::Output) => fenced(t, ""),
            Part::Text(t, Flow::Prose | Flow::Summary) => prose(t),
            Part::Thinking(t) if self.thinking => format!("> *thinking*\n>\n{}\n", quoted(t)),
            Part::Thinking(t) => format!("*(thinking: {} hidden)*\n\n", lines_text(t.lines().count())),
            Part::Call { name, args } => {
                let line = arguments_line(args);
                if fits_one_line(&line) {
                    format!("**→ {}** {}\n\n", md(name), code_span(&line))
                } else {
                    format!("**→ {}**\n\n{}", md(name), fenced(&arguments_block(args), ""))
                }
            }
            Part::Image(img) => {
                let note = md(&img.note(&|s| s.to_owned()));
                match img.link() {
                    Some(url) => format!("*[{note}](<{}>)*\n\n", link_target(url)),
                    None => format!("*{note}*\n\n"),
                }
            }
            Part::Block { ty, bytes } => format!("*{}*\n\n", md(&block_note(*ty, *bytes, &|s| s.to_owned()))),
            Part::Command(c) => fenced(&format!("$ {c}"), "sh"),
            Part::Exit(code) => format!("(exit {})\n\n", md(code)),
            Part::Error(e) => format!("**error:**\n\n{}", fenced(e, "")),
            Part::Json(j) => fenced(j, "json"),
        };
        self.out.write_all(t.as_bytes())?;
        Ok(())
    }

    fn end(&mut self, messages: usize) -> std::io::Result<()> {
        if messages == 0 {
            writeln!(self.out, "*(no messages on this branch)*")?;
        }
        Ok(())
    }
}

// ----- HTML -------------------------------------------------------------------------

/// The [`Sink`] of `--format html`.
struct Html<'w> {
    out: &'w mut dyn Write,
    thinking: bool,
    images: bool,
    /// A `<section>` is open.
    open: bool,
}

/// `s` as HTML text or attribute value: `& < > " '` as references, C0 controls (but tab,
/// newline, carriage return) and DEL as their control pictures (`␛`), so that nothing
/// of the string is markup and nothing of it is invisible.
fn h(s: &str) -> Cow<'_, str> {
    /// The bytes [`h`] replaces.
    const HTML_SPECIAL: [bool; 256] = {
        let mut t = [false; 256];
        let mut c = 0;
        while c < 0x20 {
            t[c] = !matches!(c as u8, b'\t' | b'\n' | b'\r');
            c += 1;
        }
        t[b'&' as usize] = true;
        t[b'<' as usize] = true;
        t[b'>' as usize] = true;
        t[b'"' as usize] = true;
        t[b'\'' as usize] = true;
        t[0x7f] = true;
        t
    };
    // Every byte that needs a replacement is ASCII, so the text between two of them is
    // copied as it is (a slice of whole characters), not character by character.
    let special = |c: &u8| HTML_SPECIAL[usize::from(*c)];
    let b = s.as_bytes();
    let Some(mut i) = b.iter().position(special) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + s.len() / 8 + 16);
    let mut start = 0;
    loop {
        out.push_str(&s[start..i]);
        match b[i] {
            b'&' => out.push_str("&amp;"),
            b'<' => out.push_str("&lt;"),
            b'>' => out.push_str("&gt;"),
            b'"' => out.push_str("&quot;"),
            b'\'' => out.push_str("&#39;"),
            0x7f => out.push('\u{2421}'),
            c => out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}')),
        }
        start = i + 1;
        match b[start..].iter().position(special) {
            Some(j) => i = start + j,
            None => break,
        }
    }
    out.push_str(&s[start..]);
    Cow::Owned(out)
}

/// [`h`], and the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069)
/// shown as `\u202e`, as the terminal shows them: in a page they would reorder the text
/// around them (a label `first try \u{202e}evil` reads `first try live`).
fn hb(s: &str) -> Cow<'_, str> {
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let escaped = h(s);
    if !escaped.contains(bidi) {
        return escaped;
    }
    let mut out = String::with_capacity(escaped.len() + 16);
    for c in escaped.chars() {
        if bidi(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn hs(s: &str) -> String {
    hb(s).into_owned()
}

/// A link's target in plain ASCII: what could end a Markdown `<...>` target or be read
/// as markup (`<`, `>`, `\`, spaces, control and non-ASCII characters, bidirectional
/// overrides among them) percent-encoded. (In an HTML attribute, `h` escapes `"` and `&`.)
fn link_target(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for b in url.bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'\\') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Image types a page may show from a `data:` URI (no SVG: it can hold script).
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The image's type from [`IMAGE_TYPES`] when `data` is base64 and nothing else.
fn embeddable(mime: Option<&str>, data: &str) -> Option<&'static str> {
    let m = IMAGE_TYPES.iter().find(|t| Some(**t) == mime)?;
    let ok = !data.is_empty()
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    ok.then_some(*m)
}

const CSS: &str = r#"
:root { color-scheme: light dark; --bg: #fdfdfc; --fg: #1f2328; --dim: #656d76; --card: #f6f8fa; --line: #d0d7de;
  --user: #1a7f37; --assistant: #0969da; --tool: #9a6700; --summary: #8250df; --warn: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --dim: #8d96a0; --card: #161b22; --line: #30363d;
    --user: #3fb950; --assistant: #58a6ff; --tool: #d29922; --summary: #bc8cff; --warn: #f85149; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); overflow-wrap: anywhere;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 1rem; margin: 0 0 1rem; color: var(--dim); }
dd { margin: 0; overflow-wrap: anywhere; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9rem; }
section { border-top: 1px solid var(--line); padding: 0.75rem 0; }
h2 { font-size: 1rem; margin: 0 0 0.5rem; overflow-wrap: anywhere; }
h2 .meta { color: var(--dim); font-weight: normal; font-size: 0.85rem; }
.user h2 .who { color: var(--user); } .assistant h2 .who { color: var(--assistant); }
.tool h2 .who { color: var(--tool); } .summary h2 .who { color: var(--summary); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: isolate; }
pre, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.85rem; }
pre { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 0.75rem;
  white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: isolate; margin: 0.5rem 0; }
.call { margin: 0.5rem 0; } .call .name { color: var(--tool); font-weight: 600; }
.call code { overflow-wrap: anywhere; white-space: pre-wrap; unicode-bidi: isolate; }
.dim, .note { color: var(--dim); font-size: 0.9rem; margin: 0.25rem 0; overflow-wrap: anywhere; }
.warn { color: var(--warn); font-weight: 600; overflow-wrap: anywhere; }
.error { border-color: var(--warn); }
details { margin: 0.5rem 0; color: var(--dim); } summary { cursor: pointer; }
img { max-width: 100%; height: auto; display: block; margin: 0.5rem 0; }
footer { color: var(--dim); font-size: 0.8rem; padding: 1rem 0; }
"#;

impl Html<'_> {
    fn close(&mut self) -> std::io::Result<()> {
        if self.open {
            self.out.write_all(b"</section>\n")?;
            self.open = false;
        }
        Ok(())
    }
}

impl Sink for Html<'_> {
    fn start(&mut self, info: &Info<'_>) -> std::io::Result<()> {
        let title = info.name.clone().unwrap_or_else(|| file_name(info.path));
        let mut t = String::new();
        t.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        t.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n");
        t.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        t.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
        t.push_str("<meta name=\"generator\" content=\"pi-session\">\n");
        t.push_str(&format!(
            "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
            hb(&title)
        ));
        t.push_str(&format!("<header>\n<h1 class=\"text\">{}</h1>\n<dl>\n", hb(&title)));
        let created = info.created.as_deref().map(crate::when::stamp);
        for (k, v) in [("session", &info.id), ("cwd", &info.cwd), ("created", &created)] {
            if let Some(v) = v {
                t.push_str(&format!("<dt>{k}</dt><dd>{}</dd>\n", hb(v)));
            }
        }
        t.push_str("</dl>\n");
        for [before, code, after] in header_notes(info) {
            t.push_str(&format!(
                "<p class=\"warn\">Note: {before}<code>{code}</code>{after}</p>\n"
            ));
        }
        t.push_str("</header>\n");
        self.out.write_all(t.as_bytes())?;
        Ok(())
    }

    fn unreadable(&mut self, id: &str, error: &str) -> std::io::Result<()> {
        self.close()?;
        writeln!(
            self.out,
            "<p class=\"warn\">entry {} could not be read: {}</p>",
            hb(id),
            hb(error)
        )?;
        Ok(())
    }

    fn note(&mut self, note: &Note<'_>) -> std::io::Result<()> {
        self.close()?;
        writeln!(self.out, "<p class=\"note\">{}</p>", note.words(&hs))?;
        Ok(())
    }

    fn head(&mut self, head: &Head<'_>) -> std::io::Result<()> {
        self.close()?;
        let mut meta = String::new();
        if let Some(t) = head.time.as_deref().map(crate::when::stamp) {
            meta.push_str(&format!(" · {}", hb(&t)));
        }
        meta.push_str(&format!(" · {}", hb(&head.id)));
        if let Some(l) = &head.label {
            meta.push_str(&format!(" · label: {}", hb(l)));
        }
        writeln!(
            self.out,
            "<section class=\"{}\">\n<h2><span class=\"who\">{}</span><span class=\"meta\">{meta}</span></h2>",
            head.title.class(),
            head.title.words(&hs)
        )?;
        self.open = true;
        Ok(())
    }

    fn part(&mut self, part: &Part<'_>) -> std::io::Result<()> {
        let t = match part {
            Part::Text(t, Flow::Output) => format!("<pre>{}</pre>\n", h(t)),
            Part::Text(t, Flow::Prose | Flow::Summary) => format!("<div class=\"text\">{}</div>\n", h(t)),
            Part::Thinking(t) if self.thinking => format!(
                "<details><summary>thinking ({})</summary><div class=\"text\">{}</div></details>\n",
                lines_text(t.lines().count()),
                h(t)
            ),
            Part::Thinking(t) => format!(
                "<p class=\"dim\">(thinking: {} hidden)</p>\n",
                lines_text(t.lines().count())
            ),
            Part::Call { name, args } => {
                let line = arguments_line(args);
                if fits_one_line(&line) {
                    format!(
                        "<div class=\"call\"><span class=\"name\">→ {}</span> <code>{}</code></div>\n",
                        hb(name),
                        hb(&line)
                    )
                } else {
                    format!(
                        "<div class=\"call\"><span class=\"name\">→ {}</span><pre>{}</pre></div>\n",
                        hb(name),
                        h(&arguments_block(args))
                    )
                }
            }
            Part::Image(img) => {
                let (mime, data) = (img.mime, img.data);
                let note = img.note(&hs);
                if let Some(url) = img.link() {
                    // A link, never an <img>: the page fetches nothing.
                    let a = format!(
                        "<a href=\"{}\" rel=\"noopener noreferrer nofollow\">{note}</a>",
                        h(&link_target(url))
                    );
                    return self.out.write_all(format!("<p class=\"dim\">{a}</p>\n").as_bytes());
                }
                // Without --images the data is not looked at (only its length).
                match self.images.then(|| embeddable(mime, data)) {
                    Some(Some(m)) => format!("<img src=\"data:{m};base64,{data}\" alt=\"{note}\">\n"),
                    Some(None) => {
                        format!(
                            "<p class=\"dim\">{note} (not embedded: only PNG, JPEG, GIF and WebP images in base64 are)</p>\n"
                        )
                    }
                    _ => format!("<p class=\"dim\">{note}</p>\n"),
                }
            }
            Part::Command(c) => format!("<pre>$ {}</pre>\n", h(c)),
            Part::Exit(code) => format!("<p class=\"dim\">(exit {})</p>\n", h(code)),
            Part::Error(e) => format!("<pre class=\"error\">error: {}</pre>\n", h(e)),
            Part::Block { ty, bytes } => format!("<p class=\"dim\">{}</p>\n", block_note(*ty, *bytes, &hs)),
            Part::Json(j) => format!("<pre>{}</pre>\n", h(j)),
        };
        self.out.write_all(t.as_bytes())?;
        Ok(())
    }

    fn end(&mut self, messages: usize) -> std::io::Result<()> {
        self.close()?;
        if messages == 0 {
            self.out
                .write_all(b"<p class=\"dim\">(no messages on this branch)</p>\n")?;
        }
        self.out
            .write_all(b"<footer>Exported by pi-session.</footer>\n</main>\n</body>\n</html>\n")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_leaves_no_markup() {
        assert_eq!(
            h("<a href=\"x\" onclick='y'>&</a>"),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(h("bell\u{7}\u{1b}[0m\u{7f}"), "bell\u{2407}\u{241b}[0m\u{2421}");
        assert!(matches!(h("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(hb("first try \u{202e}evil<"), "first try \\u202eevil&lt;");
        assert_eq!(h("é<ü>\u{0}ß'"), "é&lt;ü&gt;\u{2400}ß&#39;");
    }

    #[test]
    fn only_allowed_base64_images_embed() {
        assert_eq!(embeddable(Some("image/png"), "iVBORw0KGgo="), Some("image/png"));
        assert_eq!(embeddable(Some("image/svg+xml"), "PHN2Zz4="), None);
        assert_eq!(embeddable(Some("text/html"), "PHNjcmlwdD4="), None);
        assert_eq!(embeddable(Some("image/png"), "\" onerror=\"x"), None);
        assert_eq!(embeddable(Some("image/png"), ""), None);
        assert_eq!(embeddable(None, "AAAA"), None);
    }

    #[test]
    fn no_content_closes_a_fence_or_a_code_span() {
        let body = "a\n```\n````` x\nb";
        let f = fenced(body, "");
        assert!(f.starts_with("``````\n") && f.ends_with("\n``````\n\n"), "{f}");
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span("l1\nl2"), "`l1⏎l2`");
        assert_eq!(longest_run("a``b````c`", b'`'), 4);
        assert_eq!(longest_run("none", b'`'), 0);
    }

    #[test]
    fn prose_that_opens_a_fence_closes_it() {
        assert_eq!(prose("a\n```rust\nfn x"), "a\n```rust\nfn x\n```\n\n");
        assert_eq!(prose("~~~~\nx\n~~~~~\nafter"), "~~~~\nx\n~~~~~\nafter\n\n");
        assert_eq!(prose("````\nx\n```"), "````\nx\n```\n````\n\n");
        assert_eq!(
            prose("``` not a fence ` here\ntext"),
            "``` not a fence ` here\ntext\n\n"
        );
    }

    #[test]
    fn markdown_metadata_makes_no_markup() {
        assert_eq!(
            md("<img src=x>[a](javascript:b) *c*\nd"),
            "\\<img src=x\\>\\[a\\](javascript:b) \\*c\\* d"
        );
        // Rendered: `a\u202eb`, the override shown, not obeyed.
        assert_eq!(md("a\u{202e}b"), r"a\\u202eb");
    }
}
