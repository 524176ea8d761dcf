//! The pattern: what users type (ripgrep's syntax and flags) turned into the regex that
//! runs on decoded text, and the literal prefilter that runs on raw JSON bytes.
//!
//! ## Why a prefilter on raw bytes is exact
//! A match lies in a decoded JSON string. A character of that string stands in the raw
//! line either as itself or as an escape: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`
//! (only for `"`, `\`, `/` and control characters) or `\uXXXX` (for any character: pi's
//! `JSON.stringify` writes it only for control characters and lone surrogates, other
//! writers for anything). U+FFFD may also come from bytes that are not UTF-8. So a run
//! of characters other than `"`, `\`, `/`, control characters and U+FFFD appears in the
//! raw bytes as it is, unless the string holds a `\u` escape. Every match starts with one
//! of the pattern's prefix literals (regex-syntax's extractor; or ends with one of its
//! suffix literals): the longest such run of each is a *piece*, and a raw text in which no
//! piece and no `\u` escape occurs cannot hold a match once decoded. An escape of a
//! control character (`\u0000` to `\u001F`: pi writes the ANSI escapes of tool output so)
//! cannot make a piece's character, so only other `\u` escapes count. The prefilter looks for the
//! pieces and `\u` at once; a pattern whose literals give no piece (`\w+`, `.`) has no
//! prefilter, and every string is decoded and searched.

use regex::Regex;
use regex::bytes::Regex as BytesRegex;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Hir, Look};

/// Case sensitivity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Case {
    /// Insensitive when no pattern has an upper-case letter (ripgrep's `--smart-case`).
    #[default]
    Smart,
    /// Always sensitive (`-s`).
    Sensitive,
    /// Always insensitive (`-i`).
    Insensitive,
}

/// What to look for: one or more patterns and how to read them.
#[derive(Clone, Debug, Default)]
pub struct Pattern {
    /// The patterns; a text matches when any of them does.
    pub patterns: Vec<String>,
    /// Take the patterns as literal strings, not regexes (`-F`).
    pub fixed: bool,
    /// Case sensitivity.
    pub case: Case,
    /// Only whole words: the match is surrounded by word boundaries (`\b`; `-w`).
    pub word: bool,
    /// A match may span lines of one text (`-U`); `^` and `$` still match at every line.
    pub multiline: bool,
}

/// A pattern that cannot be used, with the regex crate's or this module's reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(pub String);

/// A searcher for the pieces: memchr's `memmem` for one, a bytes regex (Teddy) for more.
#[derive(Clone, Debug)]
pub(crate) enum Pieces {
    One(Box<memchr::memmem::Finder<'static>>),
    Many(BytesRegex),
}

impl Pieces {
    /// Where the first piece at or after `at` starts and ends.
    #[inline]
    fn find_at(&self, b: &[u8], at: usize) -> Option<(usize, usize)> {
        match self {
            Pieces::One(f) => f.find(&b[at..]).map(|i| (at + i, at + i + f.needle().len())),
            Pieces::Many(r) => r.find_at(b, at).map(|m| (m.start(), m.end())),
        }
    }
}

/// Whether the `\u` at `i` (a backslash and a `u`) may be an escape of a character a
/// piece holds: any but `\u0000`-`\u001F` (whether the backslash is itself escaped does
/// not matter: a false alarm costs a decode, never a miss).
#[inline]
fn relevant_escape(b: &[u8], i: usize) -> bool {
    !matches!(
        (b.get(i + 2), b.get(i + 3), b.get(i + 4)),
        (Some(b'0'), Some(b'0'), Some(b'0' | b'1'))
    )
}

/// Whether `b` holds a relevant `\u` escape ([`relevant_escape`]).
pub(crate) fn has_relevant_escape(b: &[u8]) -> bool {
    memchr::memmem::find_iter(b, b"\\u").any(|i| relevant_escape(b, i))
}

/// The starts of the lines of `b` that hold a relevant `\u` escape, in order.
fn escape_lines(b: &[u8], out: &mut Vec<usize>) {
    let finder = memchr::memmem::Finder::new(b"\\u");
    let mut at = 0;
    while let Some(i) = finder.find(&b[at..]).map(|i| at + i) {
        if relevant_escape(b, i) {
            out.push(memchr::memrchr(b'\n', &b[..i]).map_or(0, |k| k + 1));
            match memchr::memchr(b'\n', &b[i..]) {
                Some(k) => at = i + k + 1,
                None => break,
            }
        } else {
            at = i + 2;
        }
    }
}

/// The compiled pattern.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// Runs on decoded text.
    pub(crate) re: Regex,
    /// The pieces, searched in raw JSON bytes (`None`: every string is a candidate).
    pub(crate) prefilter: Option<Pieces>,
    /// Whether a whole text without a match proves that none of its lines has one (false
    /// when the pattern uses `\A` or `\z`, which match at a line's ends only when the line
    /// is searched alone).
    pub(crate) gate: bool,
    pub(crate) multiline: bool,
    /// The pieces the prefilter looks for (for tests and `--debug`-style reports).
    pub(crate) pieces: Vec<String>,
    /// What a file's sketch is asked (`None`: no file can be passed over by it).
    pub(crate) probe: Option<super::sketch::Probe>,
}

/// Whether ripgrep's smart case would pick case-insensitive matching for `p`: no
/// upper-case letter outside escapes (`\S`, `\p{Lu}` do not count).
fn has_upper(p: &str, fixed: bool) -> bool {
    if fixed {
        return p.chars().any(char::is_uppercase);
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some('p' | 'P') = chars.next() {
                // \pL or \p{...}
                let mut rest = chars.clone();
                if rest.next() == Some('{') {
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
        } else if c.is_uppercase() {
            return true;
        }
    }
    false
}

/// A character that may be written other than as itself in a raw JSON string (besides
/// `\u` escapes): see the module docs.
fn breaks_piece(c: char) -> bool {
    matches!(c, '"' | '\\' | '/' | '\u{fffd}') || (c as u32) < 0x20
}

/// The longest run of a literal's characters that must appear raw.
fn piece_of(lit: &[u8]) -> String {
    let text = String::from_utf8_lossy(lit);
    text.split(breaks_piece)
        .max_by_key(|s| s.len())
        .unwrap_or("")
        .to_owned()
}

/// The pieces of a literal sequence, or `None` when it gives no usable prefilter.
fn pieces_of(seq: &Seq) -> Option<Vec<String>> {
    let lits = seq.literals()?;
    if lits.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(lits.len());
    for l in lits {
        let p = piece_of(l.as_bytes());
        if p.is_empty() {
            return None;
        }
        out.push(p);
    }
    out.sort();
    out.dedup();
    // Case-insensitive patterns give a variant per case of each letter (128 for
    // `handler`): more than regex's SIMD searcher (Teddy) takes, and its fallback reads a
    // byte at a time. A prefix of a piece is a piece too, so they are shortened a
    // character at a time until at most 16 remain (`hand` in 16 cases).
    while out.len() > MAX_PIECES {
        let longest = out.iter().map(|p| p.chars().count()).max().unwrap_or(0);
        if longest <= 1 {
            break;
        }
        for p in &mut out {
            if p.chars().count() == longest {
                let cut = p.char_indices().last().map_or(0, |(i, _)| i);
                p.truncate(cut);
            }
        }
        out.sort();
        out.dedup();
    }
    Some(out)
}

/// At most this many pieces, when they can be shortened to fit.
const MAX_PIECES: usize = 16;

fn extract(hir: &Hir, prefix: bool) -> Option<Vec<String>> {
    let kind = if prefix {
        ExtractKind::Prefix
    } else {
        ExtractKind::Suffix
    };
    let mut seq = Extractor::new().kind(kind).extract(hir);
    if prefix {
        seq.optimize_for_prefix_by_preference();
    } else {
        seq.optimize_for_suffix_by_preference();
    }
    pieces_of(&seq)
}

/// The better of two piece sets: the one whose shortest piece is longer (rarer), then the
/// smaller set.
fn better(a: Option<Vec<String>>, b: Option<Vec<String>>) -> Option<Vec<String>> {
    let key = |v: &Vec<String>| (v.iter().map(String::len).min().unwrap_or(0), usize::MAX - v.len());
    match (a, b) {
        (Some(a), Some(b)) => Some(if key(&b) > key(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

impl Pattern {
    /// One pattern, regex syntax, smart case.
    pub fn new(p: impl Into<String>) -> Pattern {
        Pattern {
            patterns: vec![p.into()],
            ..Pattern::default()
        }
    }

    /// Whether matching ignores case (after smart case).
    pub fn case_insensitive(&self) -> bool {
        match self.case {
            Case::Sensitive => false,
            Case::Insensitive => true,
            Case::Smart => !self.patterns.iter().any(|p| has_upper(p, self.fixed)),
        }
    }

    /// The regex the patterns stand for (without the case flag).
    pub fn regex_source(&self) -> String {
        let alts: Vec<String> = self
            .patterns
            .iter()
            .map(|p| if self.fixed { regex::escape(p) } else { p.clone() })
            .map(|p| format!("(?:{p})"))
            .collect();
        let any = alts.join("|");
        if self.word { format!(r"\b(?:{any})\b") } else { any }
    }

    /// Compile.
    ///
    /// # Errors
    /// No pattern; a regex the `regex` crate refuses; a pattern that can only match a
    /// line break without [`Pattern::multiline`] (as ripgrep refuses it).
    pub fn compile(&self) -> Result<Matcher, PatternError> {
        if self.patterns.is_empty() {
            return Err(PatternError("no pattern".into()));
        }
        if !self.fixed {
            // Each pattern alone first, so that an error names the user's text, on one line.
            for p in &self.patterns {
                if let Err(e) = regex_syntax::ParserBuilder::new().build().parse(p) {
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or("").trim_start_matches("error: ");
                    return Err(PatternError(format!("`{p}`: {why}")));
                }
            }
        }
        let source = self.regex_source();
        let ci = self.case_insensitive();
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(ci)
            .multi_line(true)
            .build()
            .parse(&source)
            .map_err(|e| PatternError(e.to_string().replace('\n', " ")))?;
        if !self.multiline && names_a_line_break(&hir) {
            return Err(PatternError(
                "the pattern contains a line break (\\n), which no single line holds: add -U to let matches span lines"
                    .into(),
            ));
        }
        let re = regex::RegexBuilder::new(&source)
            .case_insensitive(ci)
            .multi_line(true)
            .build()
            .map_err(|e| PatternError(e.to_string()))?;
        let looks = hir.properties().look_set();
        let gate = !(looks.contains(Look::Start) || looks.contains(Look::End));
        let pieces = better(extract(&hir, true), extract(&hir, false));
        let prefilter = match &pieces {
            Some(ps) if ps.len() == 1 => Some(Pieces::One(Box::new(
                memchr::memmem::Finder::new(ps[0].as_bytes()).into_owned(),
            ))),
            Some(ps) => {
                let alts: Vec<String> = ps.iter().map(|p| regex::escape(p)).collect();
                Some(Pieces::Many(
                    regex::bytes::RegexBuilder::new(&alts.join("|"))
                        .unicode(false)
                        .build()
                        .map_err(|e| PatternError(e.to_string()))?,
                ))
            }
            None => None,
        };
        Ok(Matcher {
            re,
            prefilter,
            gate,
            multiline: self.multiline,
            probe: pieces.as_deref().and_then(super::sketch::Probe::of),
            pieces: pieces.unwrap_or_default(),
        })
    }
}

/// Whether the pattern names a line break itself: a literal holding `\n` (`a\nb`, also
/// under `(?i)`), or a class of that one character, anywhere in it (ripgrep's rule). A
/// class that also matches other characters (`\s`, `[\s\S]`, `[^a]`) is allowed.
fn names_a_line_break(hir: &Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => false,
        HirKind::Literal(l) => l.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(c)) => {
            let r = c.ranges();
            r.len() == 1 && r[0].start() == '\n' && r[0].end() == '\n'
        }
        HirKind::Class(Class::Bytes(c)) => {
            let r = c.ranges();
            r.len() == 1 && r[0].start() == b'\n' && r[0].end() == b'\n'
        }
        HirKind::Repetition(r) => names_a_line_break(&r.sub),
        HirKind::Capture(c) => names_a_line_break(&c.sub),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().any(names_a_line_break),
    }
}

impl Matcher {
    /// Whether raw JSON bytes (a line, a string with its quotes) may hold a match once
    /// decoded (see the module docs); always true without a prefilter.
    #[inline]
    pub fn may_match_raw(&self, raw: &[u8]) -> bool {
        let Some(p) = &self.prefilter else { return true };
        p.find_at(raw, 0).is_some() || has_relevant_escape(raw)
    }

    /// The starts of the lines of `bytes` that may hold a match, in order (`None`: every
    /// line may, the pattern has no prefilter): two passes, one for the pieces, one for
    /// `\u` escapes, merged.
    pub(crate) fn candidate_lines(&self, bytes: &[u8]) -> Option<Vec<u64>> {
        let p = self.prefilter.as_ref()?;
        let mut a = Vec::new();
        let mut at = 0;
        while let Some((s, e)) = p.find_at(bytes, at) {
            a.push(memchr::memrchr(b'\n', &bytes[..s]).map_or(0, |i| i + 1));
            match memchr::memchr(b'\n', &bytes[e..]) {
                Some(i) => at = e + i + 1,
                None => break,
            }
        }
        let mut b = Vec::new();
        escape_lines(bytes, &mut b);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x <= y => {
                    i += 1;
                    if x == y {
                        j += 1;
                    }
                    x
                }
                (_, Some(&y)) => {
                    j += 1;
                    y
                }
                (Some(&x), None) => {
                    i += 1;
                    x
                }
                (None, None) => break,
            };
            out.push(next as u64);
        }
        Some(out)
    }

    /// The literal pieces the prefilter looks for besides `\u` (empty: no prefilter).
    pub fn pieces(&self) -> &[String] {
        &self.pieces
    }

    /// The regex run on decoded text.
    pub fn regex(&self) -> &Regex {
        &self.re
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(p: Pattern) -> Vec<String> {
        p.compile().unwrap().pieces
    }

    #[test]
    fn smart_case_reads_letters_not_escapes() {
        assert!(Pattern::new("hello").case_insensitive());
        assert!(!Pattern::new("Hello").case_insensitive());
        assert!(Pattern::new(r"\S+\p{Lu}\pL").case_insensitive());
        let mut p = Pattern::new("x");
        p.case = Case::Sensitive;
        assert!(!p.case_insensitive());
    }

    #[test]
    fn pieces_stop_at_characters_json_may_escape() {
        let mut exact = Pattern::new("foobar");
        exact.case = Case::Sensitive;
        assert_eq!(pieces(exact), vec!["foobar"]);
        let mut q = Pattern::new("say \"hello world\"\nnow");
        q.fixed = true;
        q.multiline = true;
        q.case = Case::Sensitive;
        assert_eq!(pieces(q), vec!["hello world"]);
        assert_eq!(pieces(Pattern::new("A/bc")), vec!["bc"]);
        assert!(pieces(Pattern::new(r"\w+")).is_empty());
        assert!(pieces(Pattern::new("\"")).is_empty());
        // Case-insensitive: every variant of the prefix, shortened until 16 or fewer remain.
        assert!(pieces(Pattern::new("ab")).len() >= 4);
        let h = pieces(Pattern::new("handler"));
        assert!(
            h.len() <= 16 && h.iter().all(|p| p.eq_ignore_ascii_case("hand")),
            "{h:?}"
        );
    }

    #[test]
    fn a_line_break_needs_multiline() {
        let mut p = Pattern::new("a\nb");
        p.fixed = true;
        assert!(p.compile().is_err());
        p.multiline = true;
        assert!(p.compile().is_ok());
        assert!(Pattern::new(r"a\sb").compile().is_ok());
        // Written as an escape, lower case (smart case: case-insensitive), in a group or
        // an alternation, as a class of one (#36: these matched nothing, exit 1).
        for bad in [
            r#"she said "ship it\nthen"#,
            r"ship it\nthen",
            r"(a|b\n)",
            r"x[\n]y",
            r"(?i)A\nB",
            r"\x0a",
        ] {
            assert!(Pattern::new(bad).compile().is_err(), "{bad}");
        }
        for ok in [r"a[\s\S]b", r"[^a]+", r"\s+", r"a.b"] {
            assert!(Pattern::new(ok).compile().is_ok(), "{ok}");
        }
    }

    #[test]
    fn the_prefilter_sees_escapes() {
        let m = Pattern::new("café").compile().unwrap();
        assert!(m.may_match_raw("un café".as_bytes()));
        assert!(m.may_match_raw(br"caf\u00e9"));
        assert!(m.may_match_raw(br"caf\u00E9"));
        assert!(m.may_match_raw(br"\u0063af\u00e9"));
        assert!(m.may_match_raw(br"\ud83d\ude00"), "a surrogate pair");
        assert!(
            !m.may_match_raw(br"\u001b[31mtea\u0000\u001F"),
            "controls make no piece"
        );
        assert!(!m.may_match_raw(b"tea"));
    }
}
