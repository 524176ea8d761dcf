//! Whether a JSON text is exactly what `JSON.stringify` writes for its parse: then the
//! bytes can be copied to the output as they are, with no decoding and no re-encoding.
//!
//! pi writes every line with `JSON.stringify`, so nearly every stored message passes.
//! [`is_stringify_form`] answers in one pass, block-wise over strings (the bulk of the
//! bytes: base64 images, tool outputs) with the index's mask kernels; its slow twin
//! [`is_stringify_form_naive`] parses with [`super::value::parse`] and compares
//! [`super::stringify`]'s output with the input. What breaks the equality, in the twin's
//! semantics:
//! - any white space outside strings;
//! - invalid UTF-8 anywhere (the parse is lossy, U+FFFD, and stringify writes UTF-8);
//! - a raw control byte (invalid JSON), and any escape `JSON.stringify` does not write:
//!   it writes `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00xx` (lowercase hex) for the
//!   other bytes below 0x20, `\udxxx` (lowercase) for a LONE surrogate, and everything
//!   else raw (DEL, U+2028, `/`, an escaped surrogate pair's character);
//! - a number not in JavaScript's shortest form (`1.0`, `1e5`, `-0`, `0.10`, `1E3`,
//!   `1e400`, 17 significant digits): [`crate::js::number::json_number`] decides;
//! - a duplicate key in an object (the parse keeps one member: first position, last
//!   value);
//! - array-index keys (`"0"`, `"42"`, below 2^32 - 1, no leading zero) not first or not
//!   ascending: stringify writes them first, ascending, as JavaScript orders them.
//!
//! `__proto__` is a key like any other (`JSON.parse` makes it an own property), and
//! nesting depth is unlimited (an explicit stack), as in the parser.
//!
//! So `{"a":[1,"x\n"],"0":null}` fails (the index key `0` would come first) and
//! `{"0":null,"a":[1.5,"x\n\u001f\ud800"]}` passes.
//!
//! How it is fast: outside strings the grammar is checked byte by byte (no white space
//! is allowed, so there is little to check); a string is read 64 bytes at a time through
//! the kernels' masks (quote, backslash, control, bytes from 0x80): plain blocks (base64)
//! cost a few instructions, escapes are found with the index's carry trick and checked
//! from the masks (only `\u` takes a scalar look), and each stretch of non-ASCII text is
//! validated in one SIMD UTF-8 call where it ends. Integers of up to 15 digits and plain
//! fractions of up to 15 significant digits are judged by their spelling; other numbers
//! are formatted and compared. Duplicate keys are compared as raw bytes (in stringify
//! form a key's bytes are the encoding of its text), linearly up to 16 keys, in a hash set
//! beyond.
//!
//! The answer is exact for the bytes it reads; bytes of a mapping that change while they
//! are read give some answer, never a panic.

use super::dispatch::{KernelTask, with_kernel};
use super::kernel::{ExtraMasks, Kernel, Masks};
use super::lex::{hex4, number_end};
use super::string::escaped_mask;
use crate::js::number::json_number;
use smallvec::SmallVec;

/// The bytes of a block (of `len` read) that are still inside the string, and where its
/// closing quote is, from the mask of the quotes that close it; `None` for a short last
/// block without one (the string is unterminated).
#[inline(always)]
fn closing(quote: u64, len: usize) -> Option<(u64, Option<usize>)> {
    if quote != 0 {
        let q = quote.trailing_zeros() as usize;
        Some(((1u64 << q) - 1, Some(q)))
    } else if len == 64 {
        Some((u64::MAX, None))
    } else {
        None
    }
}

/// Whether `raw` is exactly `JSON.stringify(JSON.parse(raw))` (false for anything that is
/// not JSON). One pass, with the best mask kernel this CPU has: `{"n":1.5}` passes,
/// `{"n":1.50}` and `{"n": 1.5}` do not.
/// (The library itself asks [`stringify_form_member`]; this is for the tests, benches and
/// fuzz targets.)
#[cfg(any(test, feature = "internals"))]
pub(crate) fn is_stringify_form(raw: &[u8]) -> bool {
    with_kernel(Check(raw, None)).is_some()
}

/// [`is_stringify_form`], and in the same pass the first byte of the value of the
/// top-level member `key` (`raw` being an object): `None` when `raw` is not in stringify
/// form, `Some(None)` when it is and has no such member. `context --json` asks for
/// `content`, which pi fills in when it is absent or `null`.
pub(crate) fn stringify_form_member(raw: &[u8], key: &[u8]) -> Option<Option<u8>> {
    with_kernel(Check(raw, Some(key)))
}

/// [`is_stringify_form`] with mask kernel `isa` (for the tests that run every kernel).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn is_stringify_form_kernel(isa: super::dispatch::Isa, raw: &[u8]) -> bool {
    super::dispatch::with_kernel_isa(isa, Check(raw, None)).is_some()
}

/// The slow twin, verbatim from the definition: parse, stringify, compare.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn is_stringify_form_naive(raw: &[u8]) -> bool {
    super::value::parse(raw).is_ok_and(|v| {
        let mut out = Vec::with_capacity(raw.len());
        super::stringify::stringify_into(&mut out, &v);
        out == raw
    })
}

/// The text, and the top-level key whose value's first byte to report.
struct Check<'a>(&'a [u8], Option<&'a [u8]>);

impl KernelTask for Check<'_> {
    type Out = Option<Option<u8>>;
    #[inline(always)]
    fn run<K: Kernel + ExtraMasks>(self) -> Option<Option<u8>> {
        check::<K>(self.0, self.1)
    }
}

/// Objects with more keys than this find duplicates in a hash set, not by comparing.
const LINEAR_KEYS: usize = 16;

/// An open container.
enum Frame<'a> {
    Array,
    Object(Obj<'a>),
}

/// What an open object has seen of its keys.
struct Obj<'a> {
    /// Where its keys start in the shared key stack.
    keys_from: usize,
    /// The last array-index key (they must come first, ascending).
    last_index: Option<u32>,
    /// Whether a key that is no array index came already.
    named: bool,
    /// The keys as a set, once there are more than [`LINEAR_KEYS`].
    set: Option<Box<ahash::AHashSet<&'a [u8]>>>,
}

/// The key is an array index (JavaScript orders those first, ascending): digits, no
/// leading zero, below 2^32 - 1.
#[inline]
fn array_index(k: &[u8]) -> Option<u32> {
    if k.is_empty() || k.len() > 10 || (k.len() > 1 && k[0] == b'0') {
        return None;
    }
    let mut n = 0u64;
    for &c in k {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(c - b'0');
    }
    u32::try_from(n).ok().filter(|&n| n != u32::MAX)
}

/// The whole check: `None` as soon as `b` is not in stringify form.
#[inline(always)]
fn check<K: Kernel + ExtraMasks>(b: &[u8], want: Option<&[u8]>) -> Option<Option<u8>> {
    let mut i = 0usize;
    let mut found = None;
    // On the stack for the usual lines: no allocation per line.
    let mut stack: SmallVec<[Frame<'_>; 16]> = SmallVec::new();
    let mut keys: SmallVec<[&[u8]; 32]> = SmallVec::new();
    let mut num = String::new();
    'value: loop {
        match *b.get(i)? {
            b'{' => {
                if b.get(i + 1) == Some(&b'}') {
                    i += 2;
                } else {
                    stack.push(Frame::Object(Obj {
                        keys_from: keys.len(),
                        last_index: None,
                        named: false,
                        set: None,
                    }));
                    i = key::<K>(b, i + 1, &mut stack, &mut keys)?;
                    if stack.len() == 1 && want.is_some() && keys.last().copied() == want {
                        found = b.get(i).copied();
                    }
                    continue 'value;
                }
            }
            b'[' => {
                if b.get(i + 1) == Some(&b']') {
                    i += 2;
                } else {
                    stack.push(Frame::Array);
                    i += 1;
                    continue 'value;
                }
            }
            b'"' => i = string::<K>(b, i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i, &mut num)?,
            _ => return None,
        }
        // A value ended at `i`: a separator, or containers closing.
        loop {
            let Some(top) = stack.last_mut() else {
                return (i == b.len()).then_some(found);
            };
            match (top, *b.get(i)?) {
                (Frame::Array, b',') => {
                    i += 1;
                    continue 'value;
                }
                (Frame::Object(_), b',') => {
                    i = key::<K>(b, i + 1, &mut stack, &mut keys)?;
                    if stack.len() == 1 && want.is_some() && keys.last().copied() == want {
                        found = b.get(i).copied();
                    }
                    continue 'value;
                }
                (Frame::Array, b']') => {
                    i += 1;
                    stack.pop();
                }
                (Frame::Object(o), b'}') => {
                    i += 1;
                    keys.truncate(o.keys_from);
                    stack.pop();
                }
                _ => return None,
            }
        }
    }
}

/// The key at `i` (its opening quote) of the object on top of `stack`, and its colon:
/// returns the offset of the value. `None` for a duplicate or an array index out of order.
#[inline(always)]
fn key<'a, K: Kernel + ExtraMasks>(
    b: &'a [u8],
    i: usize,
    stack: &mut [Frame<'a>],
    keys: &mut SmallVec<[&'a [u8]; 32]>,
) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = string::<K>(b, i)?;
    if b.get(end) != Some(&b':') {
        return None;
    }
    // In stringify form a key's raw bytes are the encoding of its decoded text, so equal
    // raw keys are the equal keys (and a key in any other form fails anyway).
    let k = b.get(i + 1..end - 1)?;
    let Some(Frame::Object(o)) = stack.last_mut() else {
        return None;
    };
    match array_index(k) {
        Some(n) => {
            if o.named || o.last_index.is_some_and(|last| last >= n) {
                return None;
            }
            o.last_index = Some(n);
        }
        None => o.named = true,
    }
    let mine = &keys[o.keys_from..];
    if let Some(set) = &mut o.set {
        if !set.insert(k) {
            return None;
        }
    } else if mine.len() < LINEAR_KEYS {
        if mine.contains(&k) {
            return None;
        }
    } else {
        let mut set: ahash::AHashSet<&[u8]> = mine.iter().copied().collect();
        if !set.insert(k) {
            return None;
        }
        o.set = Some(Box::new(set));
    }
    keys.push(k);
    Some(end + 1)
}

#[inline(always)]
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// The number at `i`, if it is written as `JSON.stringify` writes its value; returns its
/// end.
#[inline(always)]
fn number(b: &[u8], i: usize, scratch: &mut String) -> Option<usize> {
    let end = number_end(b, i).ok()?;
    let t = b.get(i..end)?;
    let neg = usize::from(t.first() == Some(&b'-'));
    let digits = &t[neg..];
    match plain_decimal(digits) {
        // Plain integers of at most 15 digits are exact doubles that print as themselves
        // (`number_end` allows no leading zero before more digits); `-0` prints as `0`.
        Some(Decimal::Integer) => return (t != b"-0").then_some(end),
        Some(Decimal::Fraction) => return Some(end),
        Some(Decimal::Not) => return None,
        None => {}
    }
    let x: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    scratch.clear();
    json_number(x, scratch);
    (scratch.as_bytes() == t).then_some(end)
}

/// What [`plain_decimal`] knows of a number's spelling.
enum Decimal {
    /// An integer of at most 15 digits: in stringify form unless it is `-0`.
    Integer,
    /// A fraction stringify writes as it is.
    Fraction,
    /// A fraction stringify writes otherwise (a trailing zero, or below 1e-6).
    Not,
}

/// The unsigned `digits` of a number token without exponent and with at most 15
/// significant digits, which stringify writes as they are unless they end in a fraction
/// zero or need an exponent (below 1e-6): such decimals are exact enough that the double
/// read from them prints as the same digits (15 digits always survive the round trip, so
/// no other string of at most 15 digits reads as the same double, and no tie between two
/// shortest candidates can arise). `None`: anything else, left to the formatter.
#[inline(always)]
fn plain_decimal(digits: &[u8]) -> Option<Decimal> {
    let dot = digits.iter().position(|&c| matches!(c, b'.' | b'e' | b'E'));
    let Some(dot) = dot else {
        return (digits.len() <= 15).then_some(Decimal::Integer);
    };
    let frac = digits.get(dot + 1..)?;
    if digits[dot] != b'.' || frac.len() > 15 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if frac.last() == Some(&b'0') {
        return Some(Decimal::Not);
    }
    let significant = if &digits[..dot] == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        if zeros > 5 {
            return Some(Decimal::Not);
        }
        frac.len() - zeros
    } else {
        dot + frac.len()
    };
    (significant <= 15).then_some(Decimal::Fraction)
}

/// Whether the `\u` escape whose `u` is at `at` is one `JSON.stringify` writes: lowercase
/// hex, and either a control byte without a short escape or a lone surrogate.
#[inline(always)]
fn u_escape_ok(b: &[u8], at: usize) -> bool {
    // The common one first: a control byte, `\u00xx` (ANSI colours: `\u001b`).
    match b.get(at + 1..at + 5) {
        Some(&[b'0', b'0', hi @ (b'0' | b'1'), lo]) => match lo {
            b'0'..=b'9' | b'a'..=b'f' => hi == b'1' || !matches!(lo, b'8' | b'9' | b'a' | b'c' | b'd'),
            _ => false,
        },
        Some(&[b'd', ..]) => surrogate_escape_ok(b, at),
        _ => false,
    }
}

/// [`u_escape_ok`] for `\ud...`: a lone surrogate, lowercase.
#[inline(never)]
fn surrogate_escape_ok(b: &[u8], at: usize) -> bool {
    let Some(h) = b.get(at + 1..at + 5) else {
        return false;
    };
    if !h.iter().all(|&c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return false;
    }
    match hex4(b, at + 1) {
        // A high surrogate is lone unless a `\u` low surrogate follows (in any case: the
        // parse joins them, and stringify writes the pair's character raw).
        Some(0xD800..=0xDBFF) => {
            !(b.get(at + 5..at + 7) == Some(b"\\u")
                && hex4(b, at + 7).is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo)))
        }
        // A low surrogate after a high one was refused at the high one.
        Some(0xDC00..=0xDFFF) => true,
        _ => false,
    }
}

/// `Some` when `s` is valid UTF-8.
#[inline]
fn utf8(s: &[u8]) -> Option<()> {
    simdutf8::basic::from_utf8(s).ok().map(|_| ())
}

/// The string whose opening quote is at `i`, if stringify writes its decoded text as it
/// is: returns the offset past its closing quote.
#[inline(always)]
fn string<K: Kernel + ExtraMasks>(b: &[u8], i: usize) -> Option<usize> {
    let mut s = StringScan {
        pos: i + 1,
        carry: 0,
        utf8_from: None,
    };
    loop {
        if s.carry == 0 && s.utf8_from.is_none() {
            // Whole blocks of plain ASCII text (base64): nothing to look at.
            while let Some(full) = b.get(s.pos..).and_then(<[u8]>::first_chunk::<64>) {
                let m = K::masks(full);
                if m.quote | m.backslash | m.ctrl | K::high(full) != 0 {
                    break;
                }
                s.pos += 64;
            }
        }
        // Full blocks straight from the input (a copy would be loaded back at once, and a
        // 64-byte load from a fresh 64-byte store stalls), the tail padded in a copy.
        let end = if let Some(full) = b.get(s.pos..).and_then(<[u8]>::first_chunk::<64>) {
            s.block::<K>(b, full, 64)?
        } else {
            let rest = b.get(s.pos..)?;
            // Padded with a byte that is none of quote, backslash, control, high.
            let mut buf = [b'a'; 64];
            buf[..rest.len()].copy_from_slice(rest);
            s.block::<K>(b, &buf, rest.len())?
        };
        if let Some(end) = end {
            return Some(end);
        }
        s.pos += 64;
    }
}

/// Where [`string`] is in its string.
struct StringScan {
    /// Start of the block.
    pos: usize,
    /// Whether the block starts escaped (an odd backslash run ended the last one).
    carry: u64,
    /// The start of a stretch with bytes >= 0x80 not yet validated as UTF-8: it is
    /// validated in one call where it ends (at a block with no such byte, or at the
    /// closing quote, both ASCII, so a character cut there is invalid anyway).
    utf8_from: Option<usize>,
}

impl StringScan {
    /// One block of the string (`len` bytes of `block` are the input's at `pos`):
    /// `None` when the string is not in stringify form, `Some(Some(end))` when it closes
    /// here (`end` past the quote), `Some(None)` when it goes on.
    #[inline(always)]
    fn block<K: Kernel + ExtraMasks>(&mut self, b: &[u8], block: &[u8; 64], len: usize) -> Option<Option<usize>> {
        let pos = self.pos;
        let Masks { quote, backslash, ctrl } = K::masks(block);
        let high = K::high(block);
        let (in_string, end) = if backslash | ctrl == 0 && self.carry == 0 {
            // No escapes, no control bytes.
            closing(quote, len)?
        } else {
            let escaped = escaped_mask(backslash, &mut self.carry);
            let unescaped_quote = quote & !escaped;
            // `None`: unterminated (a trailing backslash escapes nothing).
            let (in_string, end) = closing(unescaped_quote, len)?;
            if ctrl & in_string != 0 {
                return None;
            }
            let esc = escaped & in_string;
            if esc != 0 {
                let (letters, u) = K::letters(block);
                // `/` is a valid escape that stringify never writes.
                if esc & !letters != 0 || esc & K::byte(block, b'/') != 0 {
                    return None;
                }
                let mut us = esc & u;
                while us != 0 {
                    if !u_escape_ok(b, pos + us.trailing_zeros() as usize) {
                        return None;
                    }
                    us &= us - 1;
                }
            }
            (in_string, end)
        };
        let h = high & in_string;
        if h != 0 {
            if self.utf8_from.is_none() {
                self.utf8_from = Some(pos + h.trailing_zeros() as usize);
            }
        } else if let Some(from) = self.utf8_from.take() {
            utf8(b.get(from..pos)?)?;
        }
        match end {
            Some(q) => {
                if let Some(from) = self.utf8_from {
                    utf8(b.get(from..pos + q)?)?;
                }
                Some(Some(pos + q + 1))
            }
            None => Some(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::dispatch::{Isa, kernels};
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    /// Every kernel, the dispatched entry point and the twin agree on `t`: the answer.
    fn answer(t: &[u8]) -> bool {
        let want = is_stringify_form_naive(t);
        for k in kernels() {
            assert_eq!(
                is_stringify_form_kernel(k, t),
                want,
                "{k:?} on {:?}",
                String::from_utf8_lossy(t)
            );
        }
        assert_eq!(is_stringify_form(t), want, "{:?}", String::from_utf8_lossy(t));
        for key in ["content", "role", "a", "0"] {
            assert_eq!(
                stringify_form_member(t, key.as_bytes()),
                member_naive(t, key),
                "member {key} of {:?}",
                String::from_utf8_lossy(t)
            );
        }
        want
    }

    /// The twin of [`stringify_form_member`]: parse, and the first byte of the member's
    /// value as stringify writes it.
    fn member_naive(t: &[u8], key: &str) -> Option<Option<u8>> {
        if !is_stringify_form_naive(t) {
            return None;
        }
        let v = crate::json::value::parse(t).expect("parses");
        Some(
            v.as_object()
                .and_then(|o| o.get(key))
                .map(|m| crate::json::stringify::stringify(m).as_bytes()[0]),
        )
    }

    #[test]
    fn the_member_is_found_at_the_top_level_only() {
        assert_eq!(
            stringify_form_member(br#"{"content":null}"#, b"content"),
            Some(Some(b'n'))
        );
        assert_eq!(stringify_form_member(br#"{"a":{"content":1}}"#, b"content"), Some(None));
        assert_eq!(
            stringify_form_member(br#"{"a":1,"content":[2]}"#, b"content"),
            Some(Some(b'['))
        );
        assert_eq!(stringify_form_member(br#"["content"]"#, b"content"), Some(None));
        assert_eq!(stringify_form_member(br#"{"content": null}"#, b"content"), None);
    }

    fn yes(t: impl AsRef<[u8]>) {
        let t = t.as_ref();
        assert!(
            answer(t),
            "should be in stringify form: {:?}",
            String::from_utf8_lossy(t)
        );
    }

    fn no(t: impl AsRef<[u8]>) {
        let t = t.as_ref();
        assert!(
            !answer(t),
            "should not be in stringify form: {:?}",
            String::from_utf8_lossy(t)
        );
    }

    #[test]
    fn what_stringify_writes_passes() {
        for t in [
            r#"{"a":[1,"x\n"],"b":null,"c":true,"d":false,"e":{},"f":[],"g":""}"#,
            r#"[]"#,
            r#"{}"#,
            r#""s""#,
            r#"0"#,
            r#"[[[{"a":[{}]}]]]"#,
            r#"{"role":"user","content":[{"type":"text","text":"a b\tc"}],"timestamp":1764579600000}"#,
        ] {
            yes(t);
        }
    }

    #[test]
    fn white_space_outside_strings_breaks_it() {
        yes(r#"{"a":[1,"b c"]}"#);
        for t in [
            r#"{"a": 1}"#,
            r#"{ "a":1}"#,
            r#"{"a" :1}"#,
            r#"{"a":1 }"#,
            r#"[1 ,2]"#,
            r#"[1, 2]"#,
            " {}",
            "{} ",
            "{}\n",
            "{}\r",
            "\t[]",
            "[\n]",
        ] {
            no(t);
        }
    }

    #[test]
    fn escapes_only_as_stringify_writes_them() {
        yes(r#""\"\\\b\f\n\r\t""#);
        yes(r#""\u0000\u0001\u000b\u000e\u001f""#);
        yes("\"/ \u{7f} \u{2028} \u{e9} \u{1F600}\"");
        for t in [
            r#""\/""#,
            r#""\u0041""#,
            r#""\u001F""#,
            r#""\u000A""#,
            r#""\u0008""#,
            r#""\u0009""#,
            r#""\u000a""#,
            r#""\u000c""#,
            r#""\u000d""#,
            r#""\u0022""#,
            r#""\u005c""#,
            r#""\u007f""#,
            r#""\u00e9""#,
            r#""\u2028""#,
            r#""\x""#,
            r#""\u12""#,
            r#""\u12g4""#,
        ] {
            no(t);
        }
    }

    #[test]
    fn lone_surrogates_are_escaped_lowercase_pairs_are_raw() {
        yes(r#""\ud800""#);
        yes(r#""\udbff""#);
        yes(r#""\udc00""#);
        yes(r#""\udfff""#);
        yes(r#""\ud800\ud800""#);
        yes(r#""\udc00\ud800""#);
        yes(r#""\ud800a\udc00""#);
        yes(r#""\ud800\\udc00""#);
        yes(r#""\ud800\n""#);
        for t in [
            r#""\ud83d\ude00""#,
            r#""\ud800\udc00""#,
            r#""\ud800\uDC00""#,
            r#""\uD800""#,
            r#""\uDC00""#,
            r#""\ud800\udC00""#,
        ] {
            no(t);
        }
    }

    #[test]
    fn control_bytes_must_be_escaped_del_need_not() {
        yes("\"a\u{7f}b\"");
        for c in 0..0x20u8 {
            no([b'"', b'a', c, b'"']);
        }
    }

    #[test]
    fn invalid_utf8_breaks_it() {
        yes("\"é😀中\"");
        for t in [
            &b"\"\xff\""[..],
            b"\"a\xc3\"",
            b"\"\xc3\\n\"",
            b"\"\xed\xa0\x80\"",
            b"\"\xc0\xaf\"",
            b"\"\xf4\x90\x80\x80\"",
            b"\"\x80\"",
            b"{\"\xff\":1}",
            b"\xef\xbb\xbf{}",
        ] {
            no(t);
        }
    }

    #[test]
    fn numbers_only_in_shortest_form() {
        for t in [
            "0",
            "-1",
            "7",
            "1.5",
            "-1.5",
            "0.1",
            "100",
            "123456789012345",
            "-123456789012345",
            "1234567890123456",
            "9007199254740992",
            "123456789012345680000",
            "1e+21",
            "1.5e-7",
            "1e-7",
            "0.000001",
            "5e-324",
            "1.7976931348623157e+308",
            "0.30000000000000004",
            "0.5",
            "10.5",
            "-0.5",
            "0.000001",
            "0.000123",
            "0.0000012",
            "99999999999999.9",
            "0.123456789012345",
            "123456789.123456",
        ] {
            yes(t);
            yes(format!("[{t}]"));
        }
        for t in [
            "1.50",
            "0.0",
            "10.0",
            "-0.10",
            "0.00000012",
            "1.0e0",
            "0.30000000000000005",
            "1.0",
            "1e5",
            "-0",
            "0.10",
            "1E3",
            "1e400",
            "-1e400",
            "1e21",
            "1e+5",
            "12345678901234567",
            "9007199254740993",
            "-0.0",
            "0e0",
            "1.5E-7",
            "0.0000001",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "00",
        ] {
            no(t);
            no(format!("[{t}]"));
        }
    }

    #[test]
    fn decimals_of_every_length_agree_with_the_twin() {
        // The fraction fast path (at most 15 significant digits, no exponent) against
        // the formatter, around its limits: digit counts, leading and trailing zeros.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut digit = |nonzero: bool| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if nonzero {
                b'1' + (seed % 9) as u8
            } else {
                b'0' + (seed % 10) as u8
            }
        };
        let (mut pass, mut total) = (0, 0);
        for int_len in 0..18 {
            for zeros in 0..8 {
                for frac_len in 1..18 {
                    for _ in 0..4 {
                        let mut t = Vec::new();
                        if int_len == 0 {
                            t.push(b'0');
                        } else {
                            t.push(digit(true));
                            t.extend((1..int_len).map(|_| digit(false)));
                        }
                        t.push(b'.');
                        t.extend(std::iter::repeat_n(b'0', zeros));
                        t.extend((0..frac_len).map(|_| digit(false)));
                        pass += usize::from(answer(&t));
                        t.insert(0, b'-');
                        answer(&t);
                        total += 1;
                    }
                }
            }
        }
        assert!(pass > total / 4 && pass < total, "{pass} of {total}");
    }

    #[test]
    fn duplicate_keys_break_it() {
        yes(r#"{"a":1,"b":{"a":1}}"#);
        yes(r#"{"a":{"b":1},"b":1}"#);
        yes(r#"[{"a":1},{"a":1}]"#);
        no(r#"{"a":1,"a":1}"#);
        no(r#"{"a":1,"b":2,"a":3}"#);
        no(r#"{"a":1,"\u0061":1}"#);
        no(r#"{"b":{"a":1,"a":2}}"#);
        // Past the linear look: the hash set, built from the keys so far.
        let keys: Vec<String> = (0..40).map(|k| format!("\"k{k}\":{k}")).collect();
        yes(format!("{{{}}}", keys.join(",")));
        for dup in [0, 5, 15, 16, 17, 30, 39] {
            no(format!("{{{},\"k{dup}\":0}}", keys.join(",")));
            if dup < 20 {
                no(format!("{{{},\"x\":0,\"k{dup}\":0}}", keys[..20].join(",")));
            }
        }
    }

    #[test]
    fn array_index_keys_first_and_ascending() {
        yes(r#"{"0":1,"1":2,"a":3}"#);
        yes(r#"{"2":1,"10":2,"b":3,"a":4}"#);
        yes(r#"{"0":1,"01":1}"#);
        yes(r#"{"4294967294":1,"a":1}"#);
        yes(r#"{"a":1,"4294967295":1}"#);
        yes(r#"{"a":1,"-1":1,"1.5":1,"1e3":1," 1":1}"#);
        no(r#"{"1":1,"0":2}"#);
        no(r#"{"10":1,"9":1}"#);
        no(r#"{"a":1,"0":2}"#);
        no(r#"{"01":1,"0":2}"#);
        no(r#"{"a":1,"4294967294":1}"#);
        no(r#"{"b":{"a":1,"7":1}}"#);
    }

    #[test]
    fn proto_is_a_key_like_any_other() {
        yes(r#"{"__proto__":1}"#);
        yes(r#"{"a":1,"__proto__":{"b":[]},"c":2}"#);
        no(r#"{"__proto__":1,"__proto__":2}"#);
    }

    #[test]
    fn any_nesting_depth() {
        let depth = 200_000;
        yes(format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
        yes(format!("{}1{}", "{\"a\":[".repeat(depth / 2), "]}".repeat(depth / 2)));
        no(format!("{}{}", "[".repeat(depth), "]".repeat(depth - 1)));
    }

    #[test]
    fn not_json_is_false() {
        for t in [
            "",
            "{",
            "}",
            "[",
            "[1,]",
            "[,1]",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{1:1}",
            "tru",
            "nul",
            "falsey",
            "\"abc",
            "\"abc\\",
            "\"\\",
            "[]]",
            "[][]",
            "1 2",
            "{\"a\":1}}",
            "\"a\"\"b\"",
        ] {
            no(t);
        }
        // Every cut of a text in stringify form.
        let t = r#"{"a":[1.5,"x\ny\ud800",{"0":true,"b":null}],"c":-2e-7}"#;
        yes(t);
        for cut in 0..t.len() {
            answer(&t.as_bytes()[..cut]);
        }
    }

    #[test]
    fn every_special_at_every_block_offset() {
        // Around each block edge, for strings that start anywhere in their block: the
        // escape carry, the \u look that crosses blocks, UTF-8 cut by a block edge.
        let snippets: &[&[u8]] = &[
            b"\\\"",
            b"\\\\",
            b"\\\\\\\"",
            b"\\\\\\\\",
            b"\\n",
            b"\\/",
            b"\\u001f",
            b"\\u001F",
            b"\\u0041",
            b"\\ud800",
            b"\\ud800\\udc00",
            b"\\ud800\\ud800",
            b"\\udc00",
            "é".as_bytes(),
            "😀".as_bytes(),
            "\u{2028}".as_bytes(),
            b"\x7f",
            b"\x01",
            b"\xff",
            b"\xc3",
            b"\xe4\xb8",
            b"\xed\xa0\x80",
            b"\\",
            b"\\x",
        ];
        for lead in [0usize, 1, 7, 33] {
            for pad in 0..140 {
                for snip in snippets {
                    for tail in [0usize, 1, 70] {
                        let mut t = b"[".to_vec();
                        t.extend(std::iter::repeat_n(b'0', lead.min(1)));
                        if lead > 0 {
                            t.push(b',');
                            t.push(b'"');
                            t.extend(std::iter::repeat_n(b'q', lead));
                            t.push(b'"');
                            t.push(b',');
                        }
                        t.push(b'"');
                        t.extend(std::iter::repeat_n(b'x', pad));
                        t.extend_from_slice(snip);
                        t.extend(std::iter::repeat_n(b'y', tail));
                        t.extend_from_slice(b"\"]");
                        answer(&t);
                        // The same string cut short, and as a key.
                        answer(&t[..t.len() - 2]);
                        let mut k = b"{".to_vec();
                        k.extend_from_slice(&t[1..t.len() - 1]);
                        k.extend_from_slice(b":1}");
                        if lead == 0 {
                            answer(&k);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn extra_masks_agree_across_kernels() {
        struct Extra([u8; 64], u8);
        impl KernelTask for Extra {
            type Out = (u64, u64);
            #[inline(always)]
            fn run<K: Kernel + ExtraMasks>(self) -> (u64, u64) {
                (K::high(&self.0), K::byte(&self.0, self.1))
            }
        }
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..5000 {
            let mut block = [0u8; 64];
            for (k, b) in block.iter_mut().enumerate() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = if round < 256 {
                    (round as u8).wrapping_add(k as u8)
                } else if seed.is_multiple_of(4) {
                    b'/'
                } else {
                    seed as u8
                };
            }
            for c in [b'/', 0x00, 0x80, 0xff] {
                let bits = |f: &dyn Fn(u8) -> bool| {
                    block
                        .iter()
                        .enumerate()
                        .fold(0u64, |m, (k, &b)| m | (u64::from(f(b)) << k))
                };
                let want = (bits(&|b| b >= 0x80), bits(&|b| b == c));
                for isa in kernels() {
                    let got = crate::json::dispatch::with_kernel_isa(isa, Extra(block, c));
                    assert_eq!(got, want, "{isa:?}");
                }
            }
        }
    }

    // --- Near-canonical texts with perturbations, against the twin. ---

    /// A spelling of a piece of string content: mostly what stringify writes.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        const CANONICAL_ESCAPES: &[&str] = &[
            "\\\"",
            "\\\\",
            "\\b",
            "\\f",
            "\\n",
            "\\r",
            "\\t",
            "\\u0000",
            "\\u001f",
            "\\u000b",
            "\\ud800",
            "\\udfff",
            "\\ud83d\\ud83d",
        ];
        const OTHER_ESCAPES: &[&str] = &[
            "\\/",
            "\\u0041",
            "\\u001F",
            "\\u000a",
            "\\u0008",
            "\\uD800",
            "\\ud83d\\ude00",
            "\\ud800\\uDC00",
            "\\u2028",
            "\\u00e9",
            "\\u007f",
        ];
        const RAW_TEXT: &[&str] = &["é", "😀", "\u{2028}", "\u{7f}", "中文", "/", " "];
        const BAD: &[&[u8]] = &[b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x01", b"\xc0\xaf", b"\n"];
        prop_oneof![
            40 => "[a-zA-Z0-9+/= ]{0,24}".prop_map(String::into_bytes),
            4 => "[A-Za-z0-9+/]{60,200}".prop_map(String::into_bytes),
            8 => proptest::sample::select(CANONICAL_ESCAPES).prop_map(|s| s.as_bytes().to_vec()),
            2 => proptest::sample::select(OTHER_ESCAPES).prop_map(|s| s.as_bytes().to_vec()),
            6 => proptest::sample::select(RAW_TEXT).prop_map(|s| s.as_bytes().to_vec()),
            1 => proptest::sample::select(BAD).prop_map(<[u8]>::to_vec),
        ]
    }

    fn string_body() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(piece(), 0..5).prop_map(|p| p.concat())
    }

    fn number() -> impl Strategy<Value = Vec<u8>> {
        const SPELLED: &[&str] = &[
            "1.0",
            "1e5",
            "-0",
            "0.10",
            "1E3",
            "1e400",
            "12345678901234567",
            "0.1e1",
            "-0.0",
            "1e+21",
            "1e21",
            "5e-324",
            "123456789012345",
            "1234567890123456",
            "1e-7",
            "1.5e-7",
            "0.0000001",
        ];
        prop_oneof![
            4 => any::<i32>().prop_map(|n| n.to_string().into_bytes()),
            3 => any::<f64>().prop_map(|x| {
                let mut s = String::new();
                json_number(x, &mut s);
                s.into_bytes()
            }),
            1 => (any::<i64>(), -30i32..30).prop_map(|(m, e)| format!("{m}e{e}").into_bytes()),
            2 => proptest::sample::select(SPELLED).prop_map(|s| s.as_bytes().to_vec()),
        ]
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        const POOL: &[&str] = &[
            "0",
            "1",
            "2",
            "10",
            "01",
            "4294967294",
            "4294967295",
            "__proto__",
            "a",
            "b",
            "role",
            "content",
        ];
        prop_oneof![
            3 => proptest::sample::select(POOL).prop_map(|s| s.as_bytes().to_vec()),
            1 => string_body(),
        ]
    }

    fn quoted(body: Vec<u8>) -> Vec<u8> {
        let mut s = Vec::with_capacity(body.len() + 2);
        s.push(b'"');
        s.extend(body);
        s.push(b'"');
        s
    }

    /// A JSON text as the parts are spelled, without white space.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let leaf = prop_oneof![
            Just(b"null".to_vec()),
            Just(b"true".to_vec()),
            Just(b"false".to_vec()),
            number(),
            string_body().prop_map(quoted),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(|items| {
                    let mut s = b"[".to_vec();
                    s.extend(items.join(&b","[..]));
                    s.push(b']');
                    s
                }),
                proptest::collection::vec((key(), inner), 0..5).prop_map(|members| {
                    let parts: Vec<Vec<u8>> = members
                        .into_iter()
                        .map(|(k, v)| {
                            let mut m = quoted(k);
                            m.push(b':');
                            m.extend(v);
                            m
                        })
                        .collect();
                    let mut s = b"{".to_vec();
                    s.extend(parts.join(&b","[..]));
                    s.push(b'}');
                    s
                }),
            ]
        })
    }

    #[derive(Clone, Debug)]
    enum Perturb {
        Insert(proptest::sample::Index, u8),
        Overwrite(proptest::sample::Index, u8),
        Truncate(proptest::sample::Index),
    }

    fn perturbed() -> impl Strategy<Value = Vec<u8>> {
        let op = prop_oneof![
            proptest::sample::select(&b" \t\n\r"[..])
                .prop_flat_map(|c| any::<proptest::sample::Index>().prop_map(move |i| Perturb::Insert(i, c))),
            (any::<proptest::sample::Index>(), any::<u8>()).prop_map(|(i, c)| Perturb::Overwrite(i, c)),
            (
                any::<proptest::sample::Index>(),
                proptest::sample::select(&b"\\\"{}[],:0.e-\xff\xc3"[..])
            )
                .prop_map(|(i, c)| Perturb::Insert(i, c)),
            any::<proptest::sample::Index>().prop_map(Perturb::Truncate),
        ];
        let ops = prop_oneof![3 => Just(Vec::new()), 1 => proptest::collection::vec(op, 1..3)];
        (text(), ops).prop_map(|(mut t, ops)| {
            for op in ops {
                match op {
                    Perturb::Insert(i, c) => {
                        let at = i.index(t.len() + 1);
                        t.insert(at, c);
                    }
                    Perturb::Overwrite(i, c) if !t.is_empty() => {
                        let at = i.index(t.len());
                        t[at] = c;
                    }
                    Perturb::Overwrite(..) => {}
                    Perturb::Truncate(i) => t.truncate(i.index(t.len() + 1)),
                }
            }
            t
        })
    }

    proptest! {
        // 512 texts by default; `PROPTEST_CASES=100000` for a longer run.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn near_canonical_texts_agree_with_the_twin(t in perturbed()) {
            answer(&t);
        }
    }

    #[test]
    fn generated_texts_cover_both_answers() {
        // The generator must make both answers common, or the property above tests little.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = perturbed();
        let (mut pass, total) = (0, 2000);
        for _ in 0..total {
            let t = strategy.new_tree(&mut runner).expect("a text").current();
            pass += usize::from(answer(&t));
        }
        assert!(pass > total / 10 && pass < total * 9 / 10, "{pass} of {total} pass");
    }

    // --- Real and generated sessions. ---

    /// Every line of `bytes` checked against the twin: (lines, lines in stringify form).
    fn lines_agree(bytes: &[u8]) -> (usize, usize) {
        let (mut lines, mut pass) = (0, 0);
        for line in bytes.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            lines += 1;
            let want = is_stringify_form_naive(line);
            assert_eq!(is_stringify_form(line), want, "line {lines}");
            for key in ["message", "type"] {
                assert_eq!(
                    stringify_form_member(line, key.as_bytes()),
                    member_naive(line, key),
                    "line {lines}"
                );
            }
            assert_eq!(is_stringify_form_kernel(Isa::Swar, line), want, "SWAR, line {lines}");
            pass += usize::from(want);
        }
        (lines, pass)
    }

    #[test]
    fn real_sessions_written_by_pi_are_in_stringify_form() {
        let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real");
        let Ok(rd) = std::fs::read_dir(&real) else {
            // (Outside the package: a published crate's tests skip it; CI must have it.)
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and {} is missing: the test would check nothing",
                real.display()
            );
            eprintln!("skipped: {} is absent", real.display());
            return;
        };
        let (mut lines, mut pass) = (0, 0);
        for e in rd {
            let path = e.expect("dir entry").path();
            if path.extension().is_some_and(|x| x == "jsonl") {
                let (l, p) = lines_agree(&std::fs::read(&path).expect("readable"));
                eprintln!("{}: {p} of {l} lines in stringify form", path.display());
                lines += l;
                pass += p;
            }
        }
        assert!(lines > 0, "no .jsonl files in {}", real.display());
        assert_eq!(pass, lines, "pi writes every line with JSON.stringify");
    }

    #[test]
    fn corpus_files_agree_with_the_twin() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).expect("corpus is readable") {
                let p = e.expect("entry").path();
                let kind = std::fs::symlink_metadata(&p).expect("metadata").file_type();
                if kind.is_symlink() {
                    continue; // the listing fixtures hold loops and dangling links
                }
                if kind.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        let mut files = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"),
            &mut files,
        );
        let (mut lines, mut pass) = (0, 0);
        for f in &files {
            let (l, p) = lines_agree(&std::fs::read(f).expect("readable"));
            lines += l;
            pass += p;
        }
        eprintln!(
            "{} corpus files: {pass} of {lines} lines in stringify form",
            files.len()
        );
        assert!(pass > 0 && pass < lines, "{pass} of {lines}");
    }

    #[cfg(feature = "generator")]
    #[test]
    fn generated_sessions_agree_with_the_twin() {
        use crate::generator::{Mix, SessionSpec, write_session};
        for (mix, seed) in [(Mix::Realistic, 1), (Mix::SmallEntries, 2), (Mix::ImageHeavy, 3)] {
            let spec = SessionSpec {
                mix,
                ..SessionSpec::new(seed, 3 << 20)
            };
            let mut out = Vec::new();
            write_session(&spec, &mut out).expect("generate");
            let (lines, pass) = lines_agree(&out);
            eprintln!("{mix:?}: {pass} of {lines} lines in stringify form");
            assert!(lines > 0);
        }
    }
}
