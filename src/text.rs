//! Strings from session files and file names, made safe to print for people.
//!
//! A session file is untrusted input (a shared project, a fork, a downloaded log): printed
//! raw, an escape sequence in a message, a label or a file name sets the window title
//! (`ESC ] 0 ;`), writes the clipboard (`ESC ] 52 ;`), clears the screen (`ESC [ 2 J`) or
//! forges lines (`\r`). Every text output of `pi-session` passes such strings through
//! [`escape`], [`escape_bytes`] or [`escape_path`], on a terminal or not (people pipe to
//! `less -R`). JSON output needs none of this: `JSON.stringify` escapes controls itself.
//!
//! # The escaped form
//! Everything prints as it is, except:
//!
//! | what | printed as |
//! | --- | --- |
//! | a backslash | `\\` |
//! | a control byte U+0000–U+001F (tab excepted; newline included) and DEL | `\x1b`, `\x0a`, `\x7f` (two lowercase hex digits) |
//! | a byte that is not part of valid UTF-8 (file names only) | `\xe9` |
//! | a C1 control U+0080–U+009F | `\u009b` (four lowercase hex digits) |
//! | a bidirectional override or isolate U+202A–U+202E, U+2066–U+2069 | `\u202e` |
//! | an invisible or direction character: the zero-width space U+200B and joiner U+200D (but between two emoji, where it joins them), marks U+200E, U+200F, U+061C, separators U+2028, U+2029, U+2060–U+2064, U+FEFF, U+180E, the soft hyphen U+00AD | `\u200b` |
//!
//! A tab stays a tab. The form is reversible ([`unescape`] gives the exact bytes back) and
//! it is what bash's `printf '%b'` and `$'…'` decode (in a UTF-8 locale), so a printed file
//! name can be used again:
//!
//! ```
//! use pi_session::text::{escape, escape_bytes, unescape};
//!
//! assert_eq!(escape("title\u{1b}]0;owned\u{7}"), r"title\x1b]0;owned\x07");
//! assert_eq!(escape(r"C:\tmp"), r"C:\\tmp");
//! assert_eq!(escape("\u{202e}txt.exe"), r"\u202etxt.exe");
//! assert_eq!(escape_bytes(b"caf\xe9.jsonl"), r"caf\xe9.jsonl");
//! assert_eq!(unescape(r"caf\xe9.jsonl").unwrap(), b"caf\xe9.jsonl");
//! // Nothing to escape: the string itself, not a copy.
//! assert!(matches!(escape("plain text"), std::borrow::Cow::Borrowed(_)));
//! ```
//!
//! ```sh
//! f=$(printf '%b' 'sessions/caf\xe9.jsonl')   # the file itself
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// `s` in the escaped form of the [module docs](self): borrowed when nothing needs escaping.
pub fn escape(s: &str) -> Cow<'_, str> {
    match first_special(s.as_bytes()) {
        None => Cow::Borrowed(s),
        Some(at) => {
            let mut out = String::with_capacity(s.len() + 16);
            out.push_str(&s[..at]);
            push_escaped(&mut out, &s[at..]);
            Cow::Owned(out)
        }
    }
}

/// Bytes in the escaped form: valid UTF-8 as [`escape`] prints it, every byte that is not
/// part of valid UTF-8 as `\xNN`. Borrowed when nothing needs escaping.
pub fn escape_bytes(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return escape(s);
    }
    let mut out = String::with_capacity(b.len() + 16);
    for chunk in b.utf8_chunks() {
        push_escaped(&mut out, chunk.valid());
        for &byte in chunk.invalid() {
            push_byte(&mut out, byte);
        }
    }
    Cow::Owned(out)
}

/// A path in the escaped form of its bytes ([`escape_bytes`]; on Unix the exact bytes of
/// the name, so `unescape` gives the path back).
pub fn escape_path(p: &Path) -> Cow<'_, str> {
    escape_bytes(p.as_os_str().as_encoded_bytes())
}

/// [`unescape`] met a backslash that starts none of `\\`, `\xNN`, `\uNNNN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not an escape at byte {offset}: only \\\\, \\xNN and \\uNNNN are")]
pub struct UnescapeError {
    /// Where the backslash is.
    pub offset: usize,
}

/// The bytes an escaped text stands for: `\\` is a backslash, `\xNN` the byte NN, `\uNNNN`
/// the UTF-8 of U+NNNN (hex digits of either case); everything else is itself.
///
/// # Errors
/// A backslash that starts none of these (or `\u` of a surrogate).
pub fn unescape(s: &str) -> Result<Vec<u8>, UnescapeError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let err = UnescapeError { offset: i };
        let hex = |digits: usize| {
            let h = s
                .get(i + 2..i + 2 + digits)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
            h.and_then(|h| u32::from_str_radix(h, 16).ok())
        };
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let v = hex(2).ok_or(err)?;
                out.push(u8::try_from(v).map_err(|_| err)?);
                i += 4;
            }
            Some(b'u') => {
                let c = hex(4).and_then(char::from_u32).ok_or(err)?;
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                i += 6;
            }
            _ => return Err(err),
        }
    }
    Ok(out)
}

/// Whether `c` is printed escaped (see the module docs).
fn is_special(c: char) -> bool {
    matches!(
        c,
        '\\'
            | '\u{7f}'
            | '\u{80}'..='\u{9f}'
            | '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{200d}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    ) || (c < ' ' && c != '\t')
}

/// Where the first character that needs escaping may start: any byte below 0x20 but tab,
/// a backslash, DEL, and the lead bytes of U+0080–U+00BF (0xC2) and U+2000–U+2FFF (0xE2),
/// where the C1 controls and the bidi overrides live. A quick scan; [`push_escaped`]
/// decides per character.
fn first_special(b: &[u8]) -> Option<usize> {
    b.iter()
        // (The first bytes of every special character's UTF-8: C1 and U+00AD start with
        // C2, U+061C with D8, U+180E with E1, U+200B-U+206F with E2, U+FEFF with EF.)
        .position(|&c| (c < 0x20 && c != b'\t') || matches!(c, b'\\' | 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef))
}

fn push_escaped(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(at) = first_special(rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let mut chars = rest[at..].chars();
        let c = chars.next().unwrap_or_default();
        if c == '\\' {
            out.push_str("\\\\");
        } else if c.is_ascii() && is_special(c) {
            push_byte(out, c as u8);
        } else if c == '\u{200d}'
            && out.chars().next_back().is_some_and(is_emoji)
            && chars.clone().next().is_some_and(is_emoji)
        {
            // A zero-width joiner inside an emoji sequence (👨‍👩‍👧) is the emoji's own.
            out.push(c);
        } else if is_special(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out.push_str(rest);
}

/// Whether `c` takes part in emoji sequences joined by U+200D (pictographs, symbols, the
/// emoji presentation selector, skin tones): a joiner between two of them stays.
fn is_emoji(c: char) -> bool {
    matches!(c, '\u{2300}'..='\u{23ff}' | '\u{2600}'..='\u{27bf}' | '\u{2b00}'..='\u{2bff}' | '\u{fe0f}' | '\u{1f000}'..='\u{1faff}')
}

fn push_byte(out: &mut String, b: u8) {
    let _ = write!(out, "\\x{b:02x}");
}

/// The last line of defence on a terminal: a writer that passes everything through but
/// the characters a terminal acts on without showing them (C1 controls, DEL, the
/// invisible and direction characters of the table above), which it writes as `\uNNNN`
/// (a joiner between two emoji excepted, as [`escape`] keeps it). That form is [`escape`]'s
/// and also a JSON string escape of the same character, so text and `--json` output stay
/// what they were, only inert: `JSON.stringify` leaves U+202E or U+009B raw, and a
/// terminal would reorder the line or start a control sequence. ASCII controls pass as
/// they are (the output's own newlines, tabs and colours; a string from a session reaches
/// the writer already escaped, or as JSON).
///
/// ```
/// use std::io::Write;
/// let mut out = Vec::new();
/// let mut w = pi_session::text::TerminalWriter::new(&mut out);
/// w.write_all("{\"name\":\"\u{202e}txt.exe\u{9b}2J\"}\n".as_bytes())?;
/// drop(w);
/// assert_eq!(out, br#"{"name":"\u202etxt.exe\u009b2J"}
/// "#);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TerminalWriter<W: std::io::Write> {
    inner: W,
    /// The start of a character split between two writes.
    partial: Vec<u8>,
    /// The last character written (for a joiner between emoji).
    last: Option<char>,
    /// A joiner held until the next character says whether it joins two emoji.
    held_joiner: bool,
}

impl<W: std::io::Write> TerminalWriter<W> {
    /// Guard `inner`.
    pub fn new(inner: W) -> Self {
        TerminalWriter {
            inner,
            partial: Vec::new(),
            last: None,
            held_joiner: false,
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.held_joiner {
            self.held_joiner = false;
            self.inner.write_all(b"\\u200d")?;
        }
        if !self.partial.is_empty() {
            let p = std::mem::take(&mut self.partial);
            self.inner.write_all(&p)?;
        }
        Ok(())
    }

    fn put_str(&mut self, s: &str) -> std::io::Result<()> {
        let mut rest = s;
        while let Some(at) = first_terminal_special(rest.as_bytes()) {
            if at > 0 {
                self.release_joiner(rest[..at].chars().next())?;
                self.inner.write_all(&rest.as_bytes()[..at])?;
                self.last = rest[..at].chars().next_back();
            }
            let mut chars = rest[at..].chars();
            let c = chars.next().unwrap_or_default();
            rest = chars.as_str();
            self.release_joiner(Some(c))?;
            if c == '\u{200d}' && self.last.is_some_and(is_emoji) {
                self.held_joiner = true;
            } else if !c.is_ascii() && is_special(c) || c == '\u{7f}' {
                write!(self.inner, "\\u{:04x}", u32::from(c))?;
            } else {
                let mut b = [0u8; 4];
                self.inner.write_all(c.encode_utf8(&mut b).as_bytes())?;
            }
            self.last = Some(c);
        }
        if !rest.is_empty() {
            self.release_joiner(rest.chars().next())?;
            self.inner.write_all(rest.as_bytes())?;
            self.last = rest.chars().next_back();
        }
        Ok(())
    }

    /// Write a held joiner: as it is when `next` is an emoji, else escaped.
    fn release_joiner(&mut self, next: Option<char>) -> std::io::Result<()> {
        if self.held_joiner {
            self.held_joiner = false;
            if next.is_some_and(is_emoji) {
                self.inner.write_all("\u{200d}".as_bytes())?;
            } else {
                self.inner.write_all(b"\\u200d")?;
            }
        }
        Ok(())
    }
}

/// Where the first character [`TerminalWriter`] changes may start (lead bytes as in
/// [`first_special`], without the ASCII controls and the backslash).
fn first_terminal_special(b: &[u8]) -> Option<usize> {
    b.iter()
        .position(|&c| matches!(c, 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef))
}

impl<W: std::io::Write> std::io::Write for TerminalWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let joined;
        let bytes = if self.partial.is_empty() {
            buf
        } else {
            let mut j = std::mem::take(&mut self.partial);
            j.extend_from_slice(buf);
            joined = j;
            &joined[..]
        };
        for chunk in bytes.utf8_chunks() {
            self.put_str(chunk.valid())?;
            let bad = chunk.invalid();
            if bad.is_empty() {
                continue;
            }
            // An incomplete character at the very end waits for the next write.
            let at_end = std::ptr::eq(bad.as_ptr_range().end, bytes.as_ptr_range().end);
            if at_end && bad.len() < 4 && std::str::from_utf8(bad).is_err_and(|e| e.error_len().is_none()) {
                self.partial.extend_from_slice(bad);
            } else {
                self.release_joiner(None)?;
                self.inner.write_all(bad)?;
                self.last = None;
            }
        }
        Ok(buf.len())
    }

    /// (A joiner after an emoji stays held: the next write may be the emoji it joins.)
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What is held (a split character, a joiner) is written when the writer goes.
impl<W: std::io::Write> Drop for TerminalWriter<W> {
    fn drop(&mut self) {
        let _ = self.finish();
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The slow twin: the table of the module docs, one character (or bad byte) at a time.
    fn twin(b: &[u8]) -> String {
        let mut out = String::new();
        for chunk in b.utf8_chunks() {
            let valid: Vec<char> = chunk.valid().chars().collect();
            for (i, &c) in valid.iter().enumerate() {
                let n = u32::from(c);
                // A joiner between two emoji (by a list of its own, not `is_emoji`'s).
                let emoji = |c: Option<&char>| {
                    c.is_some_and(|&c| {
                        let n = u32::from(c);
                        (0x1f000..0x1fb00).contains(&n)
                            || (0x2300..0x2400).contains(&n)
                            || (0x2600..0x27c0).contains(&n)
                            || (0x2b00..0x2c00).contains(&n)
                            || n == 0xfe0f
                    })
                };
                let joins = emoji(out.chars().last().as_ref()) && emoji(valid.get(i + 1));
                if c == '\\' {
                    out.push_str("\\\\");
                } else if (n < 0x20 && c != '\t') || n == 0x7f {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if (0x80..=0x9f).contains(&n)
                    || (0x202a..=0x202e).contains(&n)
                    || (0x2066..=0x2069).contains(&n)
                    // Invisible and direction characters.
                    || [0xad, 0x61c, 0x180e, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff].contains(&n)
                    || (0x2060..=0x2064).contains(&n)
                    || (n == 0x200d && !joins)
                {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push(c);
                }
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        out
    }

    /// Whether the escaped form holds nothing a terminal acts on: no control but the tab
    /// (not even a newline: one string, one line), no DEL, no C1, no bidi override.
    fn is_inert(s: &str) -> bool {
        let v: Vec<char> = s.chars().collect();
        !v.iter().enumerate().any(|(i, &c)| {
            let joiner = c == '\u{200d}' && i > 0 && is_emoji(v[i - 1]) && v.get(i + 1).is_some_and(|&n| is_emoji(n));
            c != '\t' && is_special(c) && c != '\\' && !joiner
        })
    }

    #[test]
    fn the_table_of_the_docs() {
        for (raw, shown) in [
            ("", ""),
            ("plain", "plain"),
            ("tab\there", "tab\there"),
            ("a\nb\r\n", r"a\x0ab\x0d\x0a"),
            ("\u{1b}[2J\u{7}\u{7f}\0", r"\x1b[2J\x07\x7f\x00"),
            (r"back\slash\\", r"back\\slash\\\\"),
            (
                "\u{9b}31m\u{85}\u{80}\u{9f}\u{a0}",
                "\\u009b31m\\u0085\\u0080\\u009f\u{a0}",
            ),
            ("\u{202a}\u{202e}\u{2066}\u{2069}", r"\u202a\u202e\u2066\u2069"),
            (
                "\u{2027}\u{2065}\u{206a}\u{2030}€é\u{fefe}\u{200a}",
                "\u{2027}\u{2065}\u{206a}\u{2030}€é\u{fefe}\u{200a}",
            ),
            (
                "a\u{200b}b\u{200d}c\u{200e}\u{200f}\u{61c}\u{2028}\u{2029}\u{2060}\u{feff}\u{ad}\u{180e}",
                r"a\u200bb\u200dc\u200e\u200f\u061c\u2028\u2029\u2060\ufeff\u00ad\u180e",
            ),
        ] {
            assert_eq!(escape(raw), shown, "{raw:?}");
            assert_eq!(unescape(shown).expect("unescapes"), raw.as_bytes(), "{shown:?}");
        }
        assert_eq!(
            escape_bytes(b"caf\xe9 \xff\xc2 ok\xe2\x80"),
            r"caf\xe9 \xff\xc2 ok\xe2\x80"
        );
        assert_eq!(escape_bytes(b"\xc2\x9b"), r"\u009b");
        assert!(matches!(escape_bytes(b"caf\xc3\xa9"), Cow::Borrowed("café")));
    }

    #[test]
    fn unescape_refuses_what_escape_never_writes() {
        for (bad, at) in [
            (r"\", 0),
            (r"a\n", 1),
            (r"\x1", 0),
            (r"\xg0", 0),
            (r"\u12", 0),
            (r"\ud800", 0),
            (r"\u{1b}", 0),
        ] {
            assert_eq!(unescape(bad), Err(UnescapeError { offset: at }), "{bad:?}");
        }
        assert_eq!(
            unescape(r"\X").map_err(|e| e.to_string()).unwrap_err(),
            r"not an escape at byte 0: only \\, \xNN and \uNNNN are"
        );
        assert_eq!(unescape(r"\xE9\u00E9").expect("either case"), b"\xe9\xc3\xa9");
    }

    #[cfg(unix)]
    #[test]
    fn a_path_is_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/s/x\x1b]0;T\x07\xe9.jsonl"));
        let shown = escape_path(p);
        assert_eq!(shown, r"/s/x\x1b]0;T\x07\xe9.jsonl");
        assert_eq!(unescape(&shown).expect("unescapes"), p.as_os_str().as_bytes());
    }

    /// Bytes biased towards what matters here: controls, backslashes, the lead bytes of C1
    /// and bidi characters, broken sequences.
    fn hostile() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            (0u8..0x20).prop_map(|b| vec![b]),
            Just(b"\\".to_vec()),
            Just(b"\x7f".to_vec()),
            (0x80u32..0xa0).prop_map(|n| char::from_u32(n).map(String::from).unwrap_or_default().into_bytes()),
            (0x2020u32..0x2070).prop_map(|n| char::from_u32(n).map(String::from).unwrap_or_default().into_bytes()),
            any::<char>().prop_map(|c| String::from(c).into_bytes()),
            Just(b"\xe2\x80".to_vec()),
            Just(b"\xc2".to_vec()),
            // Invisible characters, and emoji that a zero-width joiner may join.
            prop::sample::select(vec![
                '\u{200b}',
                '\u{200c}',
                '\u{200d}',
                '\u{200e}',
                '\u{61c}',
                '\u{feff}',
                '\u{ad}',
                '\u{180e}',
                '\u{2060}',
                '\u{1f468}',
                '\u{1f469}',
                '\u{2764}',
                '\u{fe0f}',
                '\u{1f3fd}',
                '\u{23f0}',
                '\u{2b50}',
                'a'
            ])
            .prop_map(|c| String::from(c).into_bytes()),
            "[a-z\\\\xu0-9{}]{0,4}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn escape_is_its_twin_inert_and_reversible(b in hostile()) {
            let shown = escape_bytes(&b);
            prop_assert_eq!(&*shown, twin(&b));
            prop_assert!(is_inert(&shown), "{:?}", shown);
            prop_assert_eq!(unescape(&shown).expect("unescapes"), b.clone());
            if let Ok(s) = std::str::from_utf8(&b) {
                prop_assert_eq!(escape(s), shown);
            }
        }

        /// The terminal's writer, fed in pieces cut anywhere (inside a character too),
        /// gives what the obvious per-character rule gives on the whole.
        #[test]
        fn the_terminal_writer_is_its_twin_whatever_the_pieces(
            b in hostile(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(b.len() + 1)).collect();
            at.sort_unstable();
            let mut out = Vec::new();
            {
                let mut w = TerminalWriter::new(&mut out);
                let mut from = 0;
                for k in at.into_iter().chain([b.len()]) {
                    std::io::Write::write_all(&mut w, &b[from..k]).expect("write");
                    from = k;
                }
            }
            prop_assert_eq!(String::from_utf8_lossy(&out), terminal_twin(&b));
        }
    }

    /// [`TerminalWriter`] the obvious way: character by character over the whole input.
    fn terminal_twin(b: &[u8]) -> String {
        let mut out = String::new();
        for chunk in b.utf8_chunks() {
            let cs: Vec<char> = chunk.valid().chars().collect();
            for (i, &c) in cs.iter().enumerate() {
                let joins =
                    c == '\u{200d}' && i > 0 && is_emoji(cs[i - 1]) && cs.get(i + 1).is_some_and(|&n| is_emoji(n));
                if (c == '\u{7f}' || (!c.is_ascii() && is_special(c))) && !joins {
                    out.push_str(&format!("\\u{:04x}", u32::from(c)));
                } else {
                    out.push(c);
                }
            }
            out.push_str(&String::from_utf8_lossy(chunk.invalid()));
        }
        out
    }
}
