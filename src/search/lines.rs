//! Matching lines of one decoded text, with context lines, as ripgrep reports them: a
//! line holds a match when the regex matches in the line alone (or, with `-U`, a match
//! may span lines and reports every line it touches).

use super::pattern::Matcher;
use std::ops::Range;

/// A line (or, with `-U`, lines) of a text, reported as a match or as context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextLine {
    /// Where the line lies in the text, without its `\n` (with `-U`, a match's lines
    /// joined by their `\n`s).
    pub span: Range<usize>,
    /// The matches, as offsets in the text (the first [`MATCHES_KEPT`]); empty for a
    /// context line.
    pub matches: Vec<Range<usize>>,
    /// Whether the line holds more matches than `matches` keeps.
    pub more_matches: bool,
}

/// How many matches of one line are kept: a line is shown around its first match, and
/// a 300 MB line of `a`s searched for `a` would otherwise keep 300 million ranges (4.8 GB).
pub const MATCHES_KEPT: usize = 1000;

impl TextLine {
    /// Whether this is a matching line (not context).
    pub fn is_match(&self) -> bool {
        !self.matches.is_empty()
    }
}

/// The line of `text` that holds offset `at`: `[start, end)` without the `\n`.
fn line_at(text: &str, at: usize) -> Range<usize> {
    let b = text.as_bytes();
    let start = memchr::memrchr(b'\n', &b[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i);
    start..end
}

/// The first [`MATCHES_KEPT`] matches of `m` within one line of `text`, as text offsets,
/// and whether there are more.
fn matches_in(m: &Matcher, text: &str, line: &Range<usize>) -> (Vec<Range<usize>>, bool) {
    let l = &text[line.clone()];
    let mut it = m.re.find_iter(l).map(|x| line.start + x.start()..line.start + x.end());
    let out: Vec<_> = it.by_ref().take(MATCHES_KEPT).collect();
    let more = out.len() == MATCHES_KEPT && it.next().is_some();
    (out, more)
}

/// The matching lines of `text`, each with its matches, in order; `at_most` caps their
/// number. A text the whole regex does not match is passed over at once (when the
/// pattern allows: [`Matcher::gate`]), and a long text is walked from match to match,
/// not line by line.
pub(crate) fn matching_lines(m: &Matcher, text: &str, at_most: usize, out: &mut Vec<TextLine>) {
    if at_most == 0 {
        return;
    }
    let mut found = 0;
    if m.multiline {
        let mut cur: Option<TextLine> = None;
        for x in m.re.find_iter(text) {
            let first = line_at(text, x.start());
            let last_at = if x.end() > x.start() { x.end() - 1 } else { x.start() };
            let last = line_at(text, last_at.max(first.start));
            let span = first.start..last.end.max(first.end);
            match &mut cur {
                Some(c) if span.start <= c.span.end => {
                    c.span.end = c.span.end.max(span.end);
                    if c.matches.len() < MATCHES_KEPT {
                        c.matches.push(x.start()..x.end());
                    } else {
                        c.more_matches = true;
                    }
                }
                _ => {
                    if let Some(done) = cur.take() {
                        out.push(done);
                        found += 1;
                        if found == at_most {
                            return;
                        }
                    }
                    cur = Some(TextLine {
                        span,
                        matches: std::iter::once(x.start()..x.end()).collect(),
                        more_matches: false,
                    });
                }
            }
        }
        if let Some(done) = cur {
            out.push(done);
        }
        return;
    }
    if !m.gate {
        // `\A` or `\z`: each line must be searched alone.
        let mut start = 0;
        for line in text.split('\n') {
            let span = start..start + line.len();
            start = span.end + 1;
            let (ms, more) = matches_in(m, text, &span);
            if !ms.is_empty() {
                out.push(TextLine {
                    span,
                    matches: ms,
                    more_matches: more,
                });
                found += 1;
                if found == at_most {
                    return;
                }
            }
        }
        return;
    }
    // A match of the line alone is a match in the whole text at the same place (the
    // line's ends are `^`/`$` and non-word either way), so the whole-text search from `p`
    // never passes over a line that holds one.
    let mut p = 0;
    while p <= text.len() {
        let Some(x) = m.re.find_at(text, p) else { break };
        let line = line_at(text, x.start());
        let (ms, more) = matches_in(m, text, &line);
        let next = line.end + 1;
        if !ms.is_empty() {
            out.push(TextLine {
                span: line,
                matches: ms,
                more_matches: more,
            });
            found += 1;
            if found == at_most {
                return;
            }
        }
        p = next;
    }
}

/// `lines` (matching lines, in order) with up to `before` lines of context before and
/// `after` after each, within `text`; context lines are never repeated nor overlap a match.
pub(crate) fn with_context(text: &str, lines: Vec<TextLine>, (before_n, after_n): (usize, usize)) -> Vec<TextLine> {
    if before_n == 0 && after_n == 0 || lines.is_empty() {
        return lines;
    }
    let b = text.as_bytes();
    let mut out: Vec<TextLine> = Vec::with_capacity(lines.len() * (1 + before_n + after_n));
    // Where context may start: past the last line already given.
    let mut floor = 0usize;
    let ctx = |r: Range<usize>| TextLine {
        span: r,
        matches: Vec::new(),
        more_matches: false,
    };
    for (k, l) in lines.iter().enumerate() {
        // Before: up to n lines ending right before l, not below `floor`.
        let mut before = Vec::new();
        let mut end = l.span.start;
        while before.len() < before_n && end > floor {
            // The line ending at end-1 (the '\n' at end-1).
            let stop = end - 1;
            let start = memchr::memrchr(b'\n', &b[..stop]).map_or(0, |i| i + 1);
            if start < floor {
                break;
            }
            before.push(start..stop);
            end = start;
        }
        out.extend(before.into_iter().rev().map(ctx));
        out.push(l.clone());
        floor = (l.span.end + 1).min(b.len() + 1);
        // After: up to n lines, stopping before the next match line.
        let limit = lines.get(k + 1).map_or(b.len() + 1, |x| x.span.start);
        let mut start = l.span.end + 1;
        let mut taken = 0;
        while taken < after_n && start < limit && start <= b.len() {
            let e = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |i| start + i);
            out.push(ctx(start..e));
            taken += 1;
            floor = e + 1;
            start = e + 1;
        }
    }
    out
}
