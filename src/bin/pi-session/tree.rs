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
//! - **Speed.** The view (`pi_session::view::tree`) reads the index and the assistant
//!   messages; the shown rows' texts are read a chunk at a time on every core.
//!
//! What the view decides (order, filters, each line's text and tone, `--json`'s line)
//! is `pi_session::view::tree`'s; this file lays the rows out as pi's gutter draws them
//! and colours them.
//!
//! `--json` is NDJSON, one object a node in the same order (docs/cli.md lists the
//! fields). A tree that cannot be built (a cycle of `parentId` links that a root
//! reaches, or no root at all) is an error; a cycle no root reaches, or a current
//! branch that cannot be walked, prints the tree and then fails (exit 2) saying why.

use crate::show::{Kind, Printable, key_text};
use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;
use pi_session::text::{escape, escape_path};
use pi_session::view::tree::{self as view, NO_ROW, Preview, Tone};
use pi_session::{OpenOptions, Session};
use rayon::prelude::*;
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

/// pi's `/tree` filters (`pi_session::view::tree::Filter`).
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

impl From<Filter> for view::Filter {
    fn from(f: Filter) -> view::Filter {
        match f {
            Filter::Default => view::Filter::Default,
            Filter::NoTools => view::Filter::NoTools,
            Filter::User => view::Filter::User,
            Filter::Labeled => view::Filter::Labeled,
            Filter::All => view::Filter::All,
        }
    }
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

/// How a tone looks on a terminal.
fn style(tone: Tone) -> Style {
    let fg = |c| Style::new().fg_color(Some(Color::Ansi(c)));
    match tone {
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

fn tree(a: &TreeArgs, open: OpenOptions, out: &mut dyn Write) -> Result<i32> {
    let path = a.session.file.as_path();
    let at = || crate::show::at(path);
    let s = crate::open::open(path, open)?.map_err(at())?;
    crate::show::note_old_format(path, &s);
    let filter = a.filter.unwrap_or(if a.json { Filter::All } else { Filter::Default });
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    let v = view::TreeView::new(&s, a.leaf.as_deref(), filter.into(), home.as_deref()).map_err(at())?;
    if v.rootless() {
        // Entries but no root: every one has a parent, so the links form a cycle.
        anyhow::bail!(Printable::kind(
            format!(
                "{}: no entry is a root of the tree (its parentId links form a cycle): nothing to draw",
                escape_path(path)
            ),
            Kind::InvalidSession
        ));
    }
    if a.json {
        // Lines made on every core, a chunk at a time, written in order.
        for chunk in v.rows().chunks(4096) {
            let lines: Vec<String> = chunk
                .par_iter()
                .map(|r| v.json_line(r))
                .collect::<pi_session::Result<_>>()
                .map_err(at())?;
            for l in lines {
                out.write_all(l.as_bytes())?;
            }
        }
    } else {
        let width = crate::term::width(a.width);
        let draw = Draw {
            s: &s,
            v: &v,
            path,
            width,
            cap: cap_levels(width),
            color: a.color.on_stdout(),
            fold: a.fold,
        };
        if v.rows().is_empty() {
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
    if !v.problems().is_empty() {
        let problems: Vec<String> = v.problems().iter().map(|p| escape(p).into_owned()).collect();
        anyhow::bail!(Printable::kind(
            format!("{}: {}", escape_path(path), problems.join("; ")),
            Kind::InvalidSession
        ));
    }
    Ok(0)
}

/// The most gutter levels drawn: a third of the width at three columns a level, 4 to 16
/// (16 when nothing is cut).
fn cap_levels(width: Option<usize>) -> usize {
    width.map_or(16, |w| (w / 9).clamp(4, 16))
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
        let st = style(tone);
        out.push_str(&format!("{st}{text}{st:#}"));
    } else {
        out.push_str(text);
    }
}

/// The text printer: layout as pi's `recalculateVisualStructure`, then one line a row.
struct Draw<'a> {
    s: &'a Session,
    v: &'a view::TreeView<'a>,
    path: &'a std::path::Path,
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
        let n = self.v.rows().len();
        let mut starts = vec![0u32; n + 3];
        for r in self.v.rows() {
            let parent = if r.parent == NO_ROW { n } else { r.parent as usize };
            starts[parent + 2] += 1;
        }
        for i in 2..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut kids = vec![0u32; n];
        for (i, r) in self.v.rows().iter().enumerate() {
            let parent = if r.parent == NO_ROW { n } else { r.parent as usize };
            let slot = &mut starts[parent + 1];
            kids[*slot as usize] = i as u32;
            *slot += 1;
        }
        let children = |parent: usize| &kids[starts[parent] as usize..starts[parent + 1] as usize];
        // Hidden below a folded row: its shown descendants (rows are in preorder).
        let mut below = vec![0u32; n];
        for i in (0..n).rev() {
            let p = self.v.rows()[i].parent as usize;
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
            let segment_start = it.forked || self.v.rows()[row].parent == NO_ROW;
            let folded = self.fold && !kids.is_empty() && segment_start && !self.v.on_branch(self.v.rows()[row].pos);
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
        let read: Vec<std::borrow::Cow<'_, Preview>> = pending
            .par_iter()
            .map(|p| self.v.preview(&self.v.rows()[p.row as usize]))
            .collect::<pi_session::Result<_>>()
            .map_err(crate::show::at(self.path))?;
        for (p, preview) in pending.iter().zip(&read) {
            writeln!(out, "{}", self.line(p, preview))?;
        }
        pending.clear();
        Ok(())
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
        let r = &self.v.rows()[p.row as usize];
        let rec = self.s.record(r.pos);
        let on = self.v.on_branch(r.pos);
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
        if Some(r.pos) == self.v.leaf() {
            line.push("@ ", Tone::Mark);
        } else if on {
            line.push("* ", Tone::Mark);
        }
        if let Some(text) = self.v.label(r.pos) {
            line.push(format!("[{}] ", escape(&text)), Tone::Label);
        }
        if p.kids > 1 {
            line.push(format!("[{} branches] ", p.kids), Tone::Dim);
        }
        for (text, tone) in preview.parts(self.v.calls()) {
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
}
