//! JavaScript strings: [`JsStr`] (WTF-8: UTF-8 that may hold the lone surrogates an
//! escape like `\ud800` produces), UTF-16 code-unit order, and `String.prototype.trim()`.
//!
//! Everything here is JavaScript semantics on bytes; nothing knows about JSON or sessions.

use std::borrow::Cow;
use std::fmt;

/// A JavaScript string as WTF-8 bytes: UTF-8, except that lone surrogates (which only an
/// escape like `\ud800` can produce) are encoded as three-byte sequences `ED A0..BF xx`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsStr<'a>(pub(crate) Cow<'a, [u8]>);

impl<'a> JsStr<'a> {
    /// A string from ordinary UTF-8 text.
    #[allow(clippy::should_implement_trait)] // borrows, which FromStr cannot
    pub fn from_str(s: &'a str) -> Self {
        JsStr(Cow::Borrowed(s.as_bytes()))
    }
    /// An owned string from ordinary UTF-8 text.
    pub fn owned(s: String) -> JsStr<'static> {
        JsStr(Cow::Owned(s.into_bytes()))
    }
    /// The WTF-8 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// True when the string holds no lone surrogate, so its bytes are valid UTF-8.
    pub fn is_utf8(&self) -> bool {
        std::str::from_utf8(&self.0).is_ok()
    }
    /// The text, with each lone surrogate replaced by one U+FFFD, as JavaScript's UTF-8
    /// encoders do (`Buffer.from(s, "utf8")`, `TextEncoder`); borrowed when there are
    /// none. (`String::from_utf8_lossy` of the stored three bytes would give three.)
    pub fn to_str_lossy(&self) -> Cow<'_, str> {
        let b = &self.0;
        // (simdutf8: this check runs over every searched text, std's is a few times slower.)
        if let Ok(s) = simdutf8::basic::from_utf8(b) {
            return Cow::Borrowed(s);
        }
        let mut out = String::with_capacity(b.len());
        let (mut start, mut i) = (0, 0);
        while i < b.len() {
            // A surrogate as WTF-8 stores it: ED A0..BF xx.
            if b[i] == 0xED && i + 2 < b.len() && (0xA0..=0xBF).contains(&b[i + 1]) {
                out.push_str(&String::from_utf8_lossy(&b[start..i]));
                out.push('\u{FFFD}');
                i += 3;
                start = i;
            } else {
                i += 1;
            }
        }
        out.push_str(&String::from_utf8_lossy(&b[start..]));
        Cow::Owned(out)
    }
    /// The string as `&str` when it holds no lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        simdutf8::basic::from_utf8(&self.0).ok()
    }
    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Length in UTF-16 code units (JavaScript's `length`).
    pub fn utf16_len(&self) -> usize {
        let b = &self.0;
        let mut n = 0;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            let (w, units) = if c < 0x80 {
                (1, 1)
            } else if c < 0xE0 {
                (2, 1)
            } else if c < 0xF0 {
                (3, 1)
            } else {
                (4, 2)
            };
            n += units;
            i += w;
        }
        n
    }
    /// The string as JavaScript holds it: UTF-16 code units, a lone surrogate as itself.
    pub fn encode_utf16(&self) -> impl Iterator<Item = u16> + '_ {
        code_points(&self.0).flat_map(|cp| {
            if cp >= 0x10000 {
                let v = cp - 0x10000;
                [Some(0xD800 | (v >> 10) as u16), Some(0xDC00 | (v & 0x3FF) as u16)]
            } else {
                [Some(cp as u16), None]
            }
            .into_iter()
            .flatten()
        })
    }
    /// Detach from the input.
    pub fn into_owned(self) -> JsStr<'static> {
        JsStr(Cow::Owned(self.0.into_owned()))
    }
    /// Compare as JavaScript's default sort does: by UTF-16 code units.
    pub fn cmp_utf16(&self, other: &JsStr<'_>) -> std::cmp::Ordering {
        cmp_utf16(&self.0, &other.0)
    }
}

impl fmt::Debug for JsStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_str_lossy(), f)
    }
}

/// Iterate WTF-8 bytes as code points (surrogates included).
pub(crate) fn code_points(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        let c = b[i] as u32;
        let (w, cp) = if c < 0x80 {
            (1, c)
        } else if c < 0xE0 {
            (2, ((c & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F))
        } else if c < 0xF0 {
            (
                3,
                ((c & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F),
            )
        } else {
            (
                4,
                ((c & 0x07) << 18)
                    | ((b[i + 1] as u32 & 0x3F) << 12)
                    | ((b[i + 2] as u32 & 0x3F) << 6)
                    | (b[i + 3] as u32 & 0x3F),
            )
        };
        i += w;
        Some(cp)
    })
}

/// UTF-16 code-unit order of two WTF-8 strings.
pub(crate) fn cmp_utf16(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    // UTF-8 byte order equals code point order; UTF-16 order differs only where a
    // supplementary character (surrogate pair, units D800-DBFF) meets U+E000..U+FFFF.
    fn units(cp: u32) -> (u32, u32) {
        if cp >= 0x10000 {
            let v = cp - 0x10000;
            (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
        } else {
            (cp, u32::MAX)
        }
    }
    let mut x = code_points(a);
    let mut y = code_points(b);
    loop {
        match (x.next(), y.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(p), Some(q)) if p == q => continue,
            (Some(p), Some(q)) => {
                let (p1, p2) = units(p);
                let (q1, q2) = units(q);
                if p1 != q1 {
                    return p1.cmp(&q1);
                }
                // Same high surrogate: the low ones decide (u32::MAX never ties here
                // because p != q).
                return p2.cmp(&q2);
            }
        }
    }
}

/// Whether `c` is white space to JavaScript's `trim()` (WhiteSpace and LineTerminator).
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{B}' | '\u{C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// JavaScript's `trim()` on WTF-8 bytes (lone surrogates are never white space).
pub fn js_trim_wtf8(b: &[u8]) -> &[u8] {
    let is_space = |cp: u32| char::from_u32(cp).is_some_and(is_js_space);
    let mut start = 0;
    for cp in code_points(b) {
        if !is_space(cp) {
            break;
        }
        start += char::from_u32(cp).map_or(3, char::len_utf8);
    }
    let mut end = b.len();
    while end > start {
        // Step back one code point.
        let mut j = end - 1;
        while j > start && (b[j] & 0xC0) == 0x80 {
            j -= 1;
        }
        let cp = code_points(&b[j..end]).next().unwrap_or(0);
        if !is_space(cp) {
            break;
        }
        end = j;
    }
    &b[start..end]
}
impl Default for JsStr<'_> {
    fn default() -> Self {
        JsStr(Cow::Borrowed(&[]))
    }
}

/// True when the line is empty after JavaScript's `String.prototype.trim()` of its
/// lossily decoded text (ASCII white space, NBSP, BOM and the Unicode space separators).
pub fn is_js_blank(line: &[u8]) -> bool {
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        let w = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => 1,
            0xC2 if line.get(i + 1) == Some(&0xA0) => 2,
            0xE1 if line.get(i + 1..i + 3) == Some(&[0x9A, 0x80]) => 3,
            0xE2 => match line.get(i + 1..i + 3) {
                Some([0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF]) | Some([0x81, 0x9F]) => 3,
                _ => return false,
            },
            0xE3 if line.get(i + 1..i + 3) == Some(&[0x80, 0x80]) => 3,
            0xEF if line.get(i + 1..i + 3) == Some(&[0xBB, 0xBF]) => 3,
            _ => return false,
        };
        i += w;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WTF-8 of UTF-16 code units: pairs as one four-byte character, lone surrogates as
    /// three bytes (what the JSON decoder stores for `\\ud800`).
    fn wtf8(units: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in char::decode_utf16(units.iter().copied()) {
            match r {
                Ok(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                Err(e) => {
                    let u = u32::from(e.unpaired_surrogate());
                    out.extend_from_slice(&[
                        0xE0 | (u >> 12) as u8,
                        0x80 | ((u >> 6) & 0x3F) as u8,
                        0x80 | (u & 0x3F) as u8,
                    ]);
                }
            }
        }
        out
    }

    #[test]
    fn each_lone_surrogate_is_one_replacement_character() {
        // pi's `Buffer.from("\ud800abcdefgh", "utf8")` is 11 bytes, not 17.
        let s = JsStr(Cow::Owned(wtf8(&[
            0xD800, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
        ])));
        assert_eq!(s.to_str_lossy(), "\u{FFFD}abcdefgh");
        assert_eq!(s.to_str_lossy().len(), 11);
        let s = JsStr(Cow::Owned(wtf8(&[0x78, 0xDC00, 0xD800, 0xD83D, 0xDE00])));
        assert_eq!(s.to_str_lossy(), "x\u{FFFD}\u{FFFD}\u{1F600}");
        assert!(matches!(
            JsStr::from_str("plain").to_str_lossy(),
            Cow::Borrowed("plain")
        ));
    }

    proptest::proptest! {
        /// Against the slow twin: UTF-16 decoding with one U+FFFD per lone surrogate, as
        /// JavaScript's UTF-8 encoders do.
        #[test]
        fn lossy_text_is_utf16s(units in proptest::collection::vec(
            proptest::prop_oneof![0u16..0x80, 0xD800u16..0xE000, 0u16..=0xFFFF], 0..40)) {
            let s = JsStr(Cow::Owned(wtf8(&units)));
            proptest::prop_assert_eq!(s.to_str_lossy().into_owned(), String::from_utf16_lossy(&units));
        }
    }

    #[test]
    fn encode_utf16_is_javascripts_string() {
        let s = "aé€😀";
        assert_eq!(
            JsStr::from_str(s).encode_utf16().collect::<Vec<_>>(),
            s.encode_utf16().collect::<Vec<_>>()
        );
        // A lone surrogate (WTF-8 ED A0 80) stays one code unit.
        let lone = JsStr(Cow::Borrowed(&[0x61, 0xED, 0xA0, 0x80, 0x62][..]));
        assert_eq!(lone.encode_utf16().collect::<Vec<_>>(), vec![0x61, 0xD800, 0x62]);
        assert_eq!(lone.encode_utf16().count(), lone.utf16_len());
    }

    #[test]
    fn utf16_order_differs_from_utf8_order() {
        let a = JsStr::from_str("\u{FF61}");
        let b = JsStr::from_str("\u{1F600}");
        assert_eq!(a.cmp_utf16(&b), std::cmp::Ordering::Greater);
    }
}
