//! The terminal: how wide it is, text cut to display columns, the pager, progress bars.
//! Every command measures and cuts through here, so that one rule holds everywhere.
//!
//! Width ([`width`]): `--width N` (0: never cut), else, when standard output is a
//! terminal, `$COLUMNS`, else the terminal's own width, else 80; piped output has no
//! width (commands that must stay on one line cut to their own bound).
//!
//! Display width: what a terminal gives a text, counted in clusters.
//!
//! A cluster is a character with the zero-width characters after it (combining marks,
//! variation selectors, ZWJ and the character a ZWJ joins, emoji modifiers, a second
//! regional indicator), measured whole by `unicode-width`, so an emoji ZWJ sequence
//! (`👩‍💻`) is 2 columns, `e` + U+0301 is 1 and a CJK character 2, and a cut never splits
//! one. Text is measured and cut in its escaped form (`pi_session::text::escape`: a C1
//! control or a bidi override prints as `\u009b`, 6 columns), escaped cluster by cluster.

use pi_session::text::escape;
use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::time::Duration;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width to fit output into (see the module doc); `None`: nothing is cut.
pub fn width(arg: Option<usize>) -> Option<usize> {
    if let Some(w) = arg {
        return (w > 0).then_some(w);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
    {
        return Some(w);
    }
    #[cfg(unix)]
    if let Ok(ws) = rustix::termios::tcgetwinsize(std::io::stdout())
        && ws.ws_col > 0
    {
        return Some(ws.ws_col.into());
    }
    Some(80)
}

/// A text fitted to a width.
pub struct Cell<'a> {
    /// What to print (escaped; the text itself when nothing needed escaping or cutting).
    pub text: Cow<'a, str>,
    /// Its display width.
    pub width: usize,
}

/// A regional indicator (two make a flag).
fn is_regional(c: char) -> bool {
    ('\u{1f1e6}'..='\u{1f1ff}').contains(&c)
}

/// Calls `f` with the byte range of each cluster of `s`, until `f` says stop.
fn raw_clusters(s: &str, mut f: impl FnMut(usize, usize) -> bool) {
    let mut start = 0;
    let mut prev: Option<char> = None;
    // A cluster that is one regional indicator so far (a flag takes two).
    let mut lone_regional = false;
    for (i, c) in s.char_indices() {
        let joins = match prev {
            None => true,
            Some(p) => {
                c.width() == Some(0)
                    || p == '\u{200d}'
                    || ('\u{1f3fb}'..='\u{1f3ff}').contains(&c)
                    || (lone_regional && is_regional(c))
            }
        };
        if !joins {
            if !f(start, i) {
                return;
            }
            start = i;
            lone_regional = is_regional(c);
        } else if prev.is_none() {
            lone_regional = is_regional(c);
        } else {
            lone_regional = false;
        }
        prev = Some(c);
    }
    if start < s.len() {
        f(start, s.len());
    }
}

/// Calls `f` with each cluster of `s` (escaped) and its width, until `f` says stop.
fn clusters(s: &str, mut f: impl FnMut(&str, usize) -> bool) {
    raw_clusters(s, |a, b| {
        let e = escape(&s[a..b]);
        let w = e.width();
        f(&e, w)
    });
}

/// The display width of `s` escaped, counted up to `cap + 1` (a text wider than
/// `cap` gives more than `cap`, without being read to its end).
pub fn measure(s: &str, cap: usize) -> usize {
    // Printable ASCII without a backslash is one column a byte.
    let head = &s.as_bytes()[..s.len().min(cap.saturating_add(1))];
    if head.iter().all(|&b| (b' '..0x7f).contains(&b) && b != b'\\') && (head.len() == s.len() || head.len() > cap) {
        return head.len();
    }
    let mut total = 0usize;
    clusters(s, |_, w| {
        total += w;
        total <= cap
    });
    total
}

/// `s` escaped, cut to `w` columns with `…` at the end when it is wider and `cut`.
pub fn fit(s: &str, w: usize, cut: bool) -> Cell<'_> {
    let full = measure(s, w);
    if full <= w || !cut {
        // (Past `w`, `full` is only known to be more: nothing pads such a cell.)
        return Cell {
            text: escape(s),
            width: full,
        };
    }
    let mut text = String::new();
    let mut width = 0;
    let room = w.saturating_sub(1);
    clusters(s, |e, cw| {
        if width + cw > room {
            return false;
        }
        text.push_str(e);
        width += cw;
        true
    });
    if w > 0 {
        text.push('…');
        width += 1;
    }
    Cell {
        text: Cow::Owned(text),
        width,
    }
}

/// `s` escaped, cut to `w` columns at its start, `…` first, when it is wider and
/// `cut`: the end of a path names the project.
pub fn fit_left(s: &str, w: usize, cut: bool) -> Cell<'_> {
    let full = measure(s, w);
    if full <= w || !cut {
        return Cell {
            text: escape(s),
            width: full,
        };
    }
    let mut all: Vec<(String, usize)> = Vec::new();
    clusters(s, |e, cw| {
        all.push((e.to_owned(), cw));
        true
    });
    let room = w.saturating_sub(1);
    let mut width = 0;
    let mut from = all.len();
    while from > 0 && width + all[from - 1].1 <= room {
        from -= 1;
        width += all[from].1;
    }
    let mut text = String::from(if w > 0 { "…" } else { "" });
    for (e, _) in &all[from..] {
        text.push_str(e);
    }
    Cell {
        text: Cow::Owned(text),
        width: width + usize::from(w > 0),
    }
}

/// The length in bytes of the longest start of `s` (text as printed, already escaped)
/// at most `w` columns wide, ending between clusters.
pub fn cut_at(s: &str, w: usize) -> usize {
    let mut cols = 0usize;
    let mut end = 0usize;
    raw_clusters(s, |a, b| {
        let cw = s[a..b].width();
        if cols + cw > w {
            return false;
        }
        cols += cw;
        end = b;
        true
    });
    end
}

/// `s` (already escaped) cut to `w` columns, `…` last, when it is wider.
pub fn cut(s: &str, w: usize) -> Cow<'_, str> {
    if s.width() <= w {
        return Cow::Borrowed(s);
    }
    let mut out = s[..cut_at(s, w.saturating_sub(1))].to_string();
    if w > 0 {
        out.push('…');
    }
    Cow::Owned(out)
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

/// How long a run goes before its progress bar shows: a quick run shows none.
const BAR_DELAY: Duration = Duration::from_millis(300);

/// The progress bar of a run over sessions, on standard error when it is a terminal and
/// not `quiet`; drawn only once the run has taken [`BAR_DELAY`], and taken off the screen
/// for good before results go to a terminal ([`Bar::before_output`]), so that it is never
/// drawn again under them.
pub struct Bar {
    bar: std::sync::Mutex<Option<indicatif::ProgressBar>>,
    start: std::time::Instant,
    shown: std::sync::atomic::AtomicBool,
}

impl Bar {
    /// A bar counting sessions (none when standard error is no terminal, or `quiet`).
    pub fn sessions(quiet: bool) -> Bar {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
            b.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sessions {elapsed}")
                    .expect("the template is valid"),
            );
            b
        });
        Bar {
            bar: std::sync::Mutex::new(bar),
            start: std::time::Instant::now(),
            shown: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&indicatif::ProgressBar) -> R) -> Option<R> {
        let guard = self.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.as_ref().map(f)
    }

    /// Whether a bar may still be drawn.
    pub fn active(&self) -> bool {
        self.with(|_| ()).is_some()
    }

    /// `done` of `total` (`None`: the total stays as it is).
    pub fn set(&self, done: usize, total: Option<usize>) {
        self.with(|b| {
            if let Some(t) = total {
                b.set_length(t as u64);
            }
            b.set_position(done as u64);
            if self.start.elapsed() >= BAR_DELAY && !self.shown.swap(true, std::sync::atomic::Ordering::Relaxed) {
                b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
        });
    }

    /// Run `f` (which prints to standard error) with the bar off the screen.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let guard = self.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match guard.as_ref() {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Results are about to be printed: on a terminal the bar goes for good.
    pub fn before_output(&self) {
        if std::io::stdout().is_terminal() {
            self.clear();
        }
    }

    /// Take the bar off the screen for good.
    pub fn clear(&self) {
        let mut guard = self.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(b) = guard.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.clear();
    }
}

/// `512B`, `1.2K`, `34K`, `1.2M`, `3.0G`: powers of 1024, one decimal under 10.
pub fn human_size(n: u64) -> String {
    if n < 1024 {
        return format!("{n}B");
    }
    let mut v = n as f64;
    for unit in ["K", "M", "G", "T", "P"] {
        v /= 1024.0;
        // Rounded as printed: 1023.96K is 1.0M.
        if (v * 10.0).round() / 10.0 < 10.0 {
            return format!("{v:.1}{unit}");
        }
        if v.round() < 1024.0 || unit == "P" {
            return format!("{v:.0}{unit}");
        }
    }
    unreachable!("the loop returns at P")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_widths_of_wide_combining_and_joined_text() {
        assert_eq!(measure("abc", usize::MAX), 3);
        assert_eq!(measure("日本語", usize::MAX), 6, "CJK: 2 columns each");
        assert_eq!(measure("e\u{301}te\u{301}", usize::MAX), 3, "combining accents: none");
        assert_eq!(measure("👩\u{200d}💻", usize::MAX), 2, "a ZWJ sequence is one emoji");
        assert_eq!(measure("👨\u{200d}👩\u{200d}👧", usize::MAX), 2);
        assert_eq!(measure("👍\u{1f3fd}", usize::MAX), 2, "a skin tone joins its emoji");
        assert_eq!(measure("\u{1f1ef}\u{1f1f5}", usize::MAX), 2, "a flag");
        assert_eq!(measure("☺\u{fe0f}", usize::MAX), 2, "emoji presentation");
        // Escaped as printed: a bidi override is `\u202e`, a backslash `\\`.
        assert_eq!(measure("\u{202e}x", usize::MAX), 7);
        assert_eq!(measure("a\\b", usize::MAX), 4);
        // Counting stops past the cap.
        assert_eq!(measure(&"x".repeat(10_000), 5), 6);
    }

    #[test]
    fn cuts_never_split_a_character_or_a_sequence() {
        let c = fit("日本語のテキスト", 7, true);
        assert_eq!((&*c.text, c.width), ("日本語…", 7));
        let c = fit("日本語のテキスト", 8, true);
        assert_eq!((&*c.text, c.width), ("日本語…", 7), "no room for half a character");
        let c = fit("Cafe\u{301} au lait", 6, true);
        assert_eq!((&*c.text, c.width), ("Cafe\u{301} …", 6), "the accent stays on its e");
        let c = fit("ab👩\u{200d}💻cd", 5, true);
        assert_eq!((&*c.text, c.width), ("ab👩\u{200d}💻…", 5));
        let c = fit("ab👩\u{200d}💻cd", 4, true);
        assert_eq!((&*c.text, c.width), ("ab…", 3), "the sequence is cut whole");
        let c = fit("\u{1f1ef}\u{1f1f5}\u{1f1eb}\u{1f1f7}", 3, true);
        assert_eq!((&*c.text, c.width), ("\u{1f1ef}\u{1f1f5}…", 3), "flags in pairs");
        let c = fit("short", 10, true);
        assert_eq!((&*c.text, c.width), ("short", 5));
        let c = fit("long text", 4, false);
        assert_eq!(c.text, "long text", "not cut without a width");
        assert!(c.width > 4, "measured as far as padding needs");
        let c = fit("x\u{1b}y\u{202e}", 20, true);
        assert_eq!(c.text, "x\\x1by\\u202e", "escaped");
        let c = fit_left("/home/u/src/project", 9, true);
        assert_eq!((&*c.text, c.width), ("…/project", 9));
        let c = fit_left("/srv/日本語", 6, true);
        assert_eq!((&*c.text, c.width), ("…本語", 5));
    }

    #[test]
    fn cut_keeps_whole_clusters_and_marks_the_cut() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(cut("日本語", 4), "日…");
        assert_eq!(cut("ab👩\u{200d}💻cd", 4), "ab…", "a ZWJ sequence is cut whole");
        assert_eq!(cut_at("e\u{301}x", 1), "e\u{301}".len(), "the accent stays with its e");
    }

    #[test]
    fn cut_at_measures_display_width() {
        assert_eq!(cut_at("abc", 2), 2);
        // Wide characters are two columns: one fits in 3, not two.
        assert_eq!(cut_at("漢字", 3), "漢".len());
        // A combining mark stays with its letter.
        assert_eq!(cut_at("e\u{301}x", 1), "e\u{301}".len());
        // Red heart + VS16 is two columns wide though its characters count one: in one
        // column nothing fits (a cut never splits a sequence).
        assert_eq!(cut_at("\u{2764}\u{fe0f}", 1), 0);
        assert_eq!(cut_at("\u{2764}\u{fe0f}x", 2), "\u{2764}\u{fe0f}".len());
        assert_eq!(cut_at("", 5), 0);
    }
}
