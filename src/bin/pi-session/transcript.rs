//! `pi-session show`: the current branch (or the branch of `--leaf`) as a transcript a
//! person reads: a header per message (role, model, time, id, label), its text, tool
//! calls on one line each, tool results and long summaries cut to a few lines, images as
//! their type and size, thinking hidden unless asked for.
//!
//! What a message shows is decided by the library's walk
//! (`pi_session::view::transcript`), which hands the pieces, unescaped, to a `Sink`: the
//! terminal transcript here, Markdown and HTML in `export.rs`. This sink escapes for the
//! terminal (`text::escape`, line by line), formats times in the transcript's zone and
//! colours; entries are decoded one at a time as they are printed, so the first screen of
//! a 1 GiB session shows while the rest is still unread.
//!
//! `pi-session follow` prints the same transcript, then each entry as pi appends it.

use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;
use pi_session::follow::{Event, Follower, Target, Why};
use pi_session::text::{escape, escape_path};
use pi_session::view::transcript::{Flow, Head, Info, Note, Part, Sink, arguments_line, block_note, count, walk};
use pi_session::{EntryPos, OpenOptions};
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

/// The header style of a kind of message ([`Title::class`]).
fn role_style(class: &str) -> Style {
    let c = match class {
        "user" => AnsiColor::Green,
        "assistant" => AnsiColor::Cyan,
        "tool" => AnsiColor::Yellow,
        _ => AnsiColor::Blue,
    };
    Style::new().fg_color(Some(Color::Ansi(c))).bold()
}

/// Lines of a tool result or summary shown before "(N more lines, --full)".
const SHOWN_LINES: usize = 6;

// ----- the terminal transcript ------------------------------------------------------

/// Print the branch of `leaf` (default: the session's leaf) of `path`.
pub fn show(path: &Path, opts: OpenOptions, leaf: Option<&str>, flags: ShowFlags, out: &mut dyn Write) -> Result<i32> {
    let (s, branch) = crate::open::open_branch(path, opts, leaf)?;
    crate::show::note_old_format(path, &s);
    walk(&s, path, &branch, &mut Terminal { out, flags })?;
    s.verify().map_err(crate::show::at(path))?;
    Ok(0)
}

/// How `follow` prints entries.
#[derive(Clone, Copy, Debug)]
pub enum FollowAs {
    /// As `show` prints them.
    Text(ShowFlags),
    /// One JSON object per entry (`dump --branch-view`'s lines).
    Json,
    /// Each entry's line as written (`dump --entries`).
    Raw,
}

/// `pi-session follow`: the current branch (nothing with `skip`), then every entry as it
/// is appended, until interrupted (or the output closes).
pub fn follow(target: Target, opts: OpenOptions, skip: bool, how: FollowAs, out: &mut dyn Write) -> Result<i32> {
    let mut f = Follower::new(target, opts);
    if skip {
        f.skip_existing()
            .map_err(|e| anyhow::anyhow!(pi_session::text::escape(&e.to_string()).into_owned()))?;
    }
    // The first entries after a start are what the file held: the branch of them.
    let mut fresh = false;
    loop {
        let event = match f.next_event(None) {
            Ok(Some(e)) => e,
            Ok(None) => continue,
            Err(e) => {
                let path = f.path().map(Path::to_path_buf).unwrap_or_default();
                return Err(crate::show::at(&path)(e));
            }
        };
        let note = |out: &mut dyn Write, text: String| -> std::io::Result<()> {
            match how {
                FollowAs::Text(flags) => writeln!(out, "\n{}", flags.paint(&format!("── {text}"), DIM)),
                FollowAs::Json | FollowAs::Raw => {
                    eprintln!("pi-session: {text}");
                    Ok(())
                }
            }
        };
        match event {
            Event::Start { path, why } => {
                let file = escape_path(&path);
                match why {
                    Why::First => {}
                    Why::Rewritten => note(out, format!("{file} was rewritten: read again from its start"))?,
                    Why::Recreated => note(out, format!("{file} is back: read from its start"))?,
                    Why::Switched => note(out, format!("following {file}, a newer session of the project"))?,
                }
                if let (FollowAs::Text(flags), Some(s)) = (how, f.session()) {
                    Terminal { out: &mut *out, flags }.start(&pi_session::view::transcript::info(s, &path))?;
                }
                fresh = true;
            }
            Event::Gone { path } => note(
                out,
                format!("{} is gone: waiting for it to come back", escape_path(&path)),
            )?,
            Event::Entries(new) => {
                let Some(s) = f.session() else { continue };
                let shown: Vec<EntryPos> = match how {
                    FollowAs::Text(_) | FollowAs::Json if fresh => {
                        let set: std::collections::HashSet<EntryPos> = new.iter().copied().collect();
                        let branch = s
                            .branch_path(None)
                            .map_err(crate::show::at(f.path().unwrap_or(Path::new(""))))?;
                        branch.into_iter().filter(|p| set.contains(p)).collect()
                    }
                    _ => new,
                };
                fresh = false;
                for p in shown {
                    match how {
                        FollowAs::Text(flags) => {
                            pi_session::view::transcript::entry(s, p, &mut Terminal { out: &mut *out, flags })?;
                        }
                        FollowAs::Json => {
                            let item = s
                                .branch_item(p)
                                .map_err(crate::show::at(f.path().unwrap_or(Path::new(""))))?;
                            writeln!(out, "{}", item.to_json())?;
                        }
                        FollowAs::Raw => {
                            out.write_all(s.raw(p))?;
                            out.write_all(b"\n")?;
                        }
                    }
                }
            }
        }
        out.flush()?;
    }
}

/// The [`Sink`] of `show`: escaped text for a terminal, coloured when asked.
struct Terminal<'w> {
    out: &'w mut dyn Write,
    flags: ShowFlags,
}

fn esc(s: &str) -> String {
    escape(s).into_owned()
}

impl Terminal<'_> {
    /// A text line by line, escaped; cut to its first lines (then how many more there
    /// are) unless it is prose or `--full` says so.
    fn text(&mut self, t: &str, flow: Flow) -> std::io::Result<()> {
        let total = t.lines().count();
        let keep = if self.flags.full || flow == Flow::Prose {
            total
        } else {
            SHOWN_LINES.min(total)
        };
        for line in t.lines().take(keep) {
            writeln!(self.out, "{}", escape(line))?;
        }
        if keep < total {
            let note = format!("({}, --full)", count(total - keep, "more line"));
            writeln!(self.out, "{}", self.flags.paint(&note, DIM))?;
        }
        Ok(())
    }
}

impl Sink for Terminal<'_> {
    fn start(&mut self, info: &Info<'_>) -> std::io::Result<()> {
        let out = &mut *self.out;
        writeln!(
            out,
            "# {}",
            info.name
                .as_deref()
                .map_or_else(|| escape_path(info.path).into_owned(), esc)
        )?;
        if let Some(id) = &info.id {
            writeln!(out, "session {}", escape(id))?;
        }
        if let Some(cwd) = &info.cwd {
            writeln!(out, "cwd {}", escape(cwd))?;
        }
        if info.skipped > 0 {
            writeln!(
                out,
                "note: {} line(s) of the file are skipped, as pi skips them (`pi-session check` says why)",
                info.skipped
            )?;
        }
        Ok(())
    }

    fn unreadable(&mut self, id: &str, error: &str) -> std::io::Result<()> {
        writeln!(
            self.out,
            "\n(entry {} could not be read: {})",
            escape(id),
            escape(error)
        )?;
        Ok(())
    }

    fn note(&mut self, note: &Note<'_>) -> std::io::Result<()> {
        writeln!(self.out, "\n{}", self.flags.paint(&note.words(&esc), DIM))?;
        Ok(())
    }

    fn head(&mut self, head: &Head<'_>) -> std::io::Result<()> {
        let mut h = format!("── {}", head.title.words(&esc));
        if let Some(t) = head.time.as_deref().map(crate::when::stamp) {
            h.push_str(&format!(" · {}", escape(&t)));
        }
        h.push_str(&format!(" · {}", escape(&head.id)));
        if let Some(l) = &head.label {
            h.push_str(&format!(" · label: {}", escape(l)));
        }
        writeln!(self.out, "\n{}", self.flags.paint(&h, role_style(head.title.class())))?;
        Ok(())
    }

    fn part(&mut self, part: &Part<'_>) -> std::io::Result<()> {
        let flags = self.flags;
        match part {
            Part::Text(t, flow) => self.text(t, *flow)?,
            Part::Thinking(t) => {
                if flags.thinking {
                    writeln!(self.out, "[thinking]")?;
                    self.text(t, Flow::Prose)?;
                } else {
                    let note = format!("[thinking: {} hidden, --thinking]", count(t.lines().count(), "line"));
                    writeln!(self.out, "{}", flags.paint(&note, DIM))?;
                }
            }
            Part::Call { name, args } => {
                let call = format!("→ {}({})", escape(name), one_line(&arguments_line(args)));
                writeln!(self.out, "{}", flags.paint(&call, CALL))?;
            }
            Part::Image(img) => writeln!(self.out, "{}", flags.paint(&img.note(&esc), DIM))?,
            Part::Block { ty, bytes } => writeln!(self.out, "{}", flags.paint(&block_note(*ty, *bytes, &esc), DIM))?,
            Part::Command(c) => writeln!(self.out, "{}", flags.paint(&format!("$ {}", one_line(c)), CALL))?,
            Part::Exit(code) => writeln!(self.out, "(exit {code})")?,
            Part::Error(e) => writeln!(self.out, "{}", flags.paint(&format!("error: {}", escape(e)), ERROR))?,
            Part::Json(j) => writeln!(self.out, "{}", one_line(j))?,
        }
        Ok(())
    }

    fn end(&mut self, messages: usize) -> std::io::Result<()> {
        if messages == 0 {
            writeln!(self.out, "(no messages on this branch)")?;
        }
        Ok(())
    }
}

/// Text on one line ([`pi_session::view::transcript::one_line`]), escaped.
fn one_line(t: &str) -> String {
    escape(&pi_session::view::transcript::one_line(t)).into_owned()
}
