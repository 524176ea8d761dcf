//! JSON strings: skipping them block by block (the hot loop of indexing), finishing short
//! ones with one vector look, decoding them, and the obvious skipper that is their twin.
//!
//! Strings hold nearly all of a session's bytes (base64 images, tool outputs), and tool
//! outputs are escape-dense (a backslash every ~9 bytes), which stalls any skipper that
//! stops at each backslash. [`skip_string_with`] looks at 64 bytes at a time: it builds bit
//! masks of quotes, backslashes and control bytes, works out which characters are escaped
//! with simdjson's carry trick (odd-length backslash runs, carried across blocks), and
//! stops only at the first unescaped quote. Escapes are validated from the masks too; only
//! `\u` escapes (four hex digits) take a scalar look.
//!
//! The masks come from a [`Kernel`] ([`super::kernel`]); `skip_string_naive` is the
//! obvious twin every kernel is tested against, at every block offset
//! (`super::twins`). Which kernel runs is decided in [`super::dispatch`].
#![allow(unsafe_code)] // short_string_end: two SSE2 loads, baseline on x86_64

use super::SyntaxError;
use super::kernel::{DecodeKernel, Kernel, Masks};
#[cfg(any(test, feature = "internals"))]
use super::lex::first_control;
use super::lex::hex4;
use crate::js::string::JsStr;
use std::borrow::Cow;

const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// Which positions are escaped (preceded by an odd run of backslashes), given the
/// backslash mask and whether the previous block ended inside an odd run. Updates the
/// carry. (The algorithm is simdjson's; this is an independent implementation.)
#[inline(always)]
pub(crate) fn escaped_mask(backslash: u64, carry: &mut u64) -> u64 {
    let first_escaped = *carry;
    if backslash == 0 {
        *carry = 0;
        return first_escaped;
    }
    // A backslash at bit 0 that is itself escaped starts nothing.
    let bs = backslash & !first_escaped;
    let follows_escape = (bs << 1) | first_escaped;
    let odd_starts = bs & !EVEN_BITS & !follows_escape;
    let (seq_even, overflow) = odd_starts.overflowing_add(bs);
    *carry = u64::from(overflow);
    let invert = seq_even << 1;
    (EVEN_BITS ^ invert) & follows_escape
}

/// Skip the string whose opening quote is at `i`, computing masks with kernel `K`;
/// returns the offset past the closing quote and whether the string held escapes. Same
/// results as the naive skipper.
#[inline(always)]
pub(crate) fn skip_string_with<K: Kernel>(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut pos = i + 1;
    let mut carry = 0u64;
    let mut any_escape = false;
    let mut buf: [u8; 64];
    loop {
        let rest = &b[pos..];
        let (block, len): (&[u8; 64], usize) = if rest.len() >= 64 {
            (rest[..64].try_into().expect("64 bytes"), 64)
        } else {
            // The tail: pad with a byte that is none of quote, backslash, control.
            buf = [b'a'; 64];
            buf[..rest.len()].copy_from_slice(rest);
            (&buf, rest.len())
        };
        let Masks { quote, backslash, ctrl } = K::masks(block);
        if backslash | ctrl == 0 && carry == 0 {
            // The common case (base64, plain text): no escapes, no control bytes.
            if quote != 0 {
                return Ok((pos + quote.trailing_zeros() as usize + 1, any_escape));
            }
            if len == 64 {
                pos += 64;
                continue;
            }
        }
        let escaped = escaped_mask(backslash, &mut carry);
        let unescaped_quote = quote & !escaped;
        // Bits that belong to this string: up to (excluding) the closing quote.
        let (in_string, end) = if unescaped_quote != 0 {
            let q = unescaped_quote.trailing_zeros() as usize;
            ((1u64 << q) - 1, Some(q))
        } else if len < 64 {
            (if len == 0 { 0 } else { u64::MAX >> (64 - len) }, None)
        } else {
            (u64::MAX, None)
        };
        let bad_ctrl = ctrl & in_string;
        // Escaped letters inside the string (an escaped closing quote is not the end).
        let esc_here = escaped & in_string;
        let (letters, u_letters) = if esc_here != 0 {
            K::letters(block)
        } else {
            (u64::MAX, 0)
        };
        let bad_escape = esc_here & !letters;
        // \u escapes need four hex digits (which may run into the next block).
        let mut u_err = 64usize;
        if esc_here != 0 {
            any_escape = true;
            let mut us = esc_here & u_letters;
            while us != 0 {
                let k = us.trailing_zeros() as usize;
                us &= us - 1;
                let at = pos + k;
                if !b
                    .get(at + 1..at + 5)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                {
                    u_err = k;
                    break;
                }
            }
        }
        // The first problem in byte order wins, as in a sequential scan.
        let first_bad = (bad_ctrl | bad_escape).trailing_zeros() as usize;
        if first_bad < 64 || u_err < 64 {
            return Err(if u_err < first_bad {
                SyntaxError {
                    offset: pos + u_err + 1,
                    reason: "invalid \\u escape",
                }
            } else if bad_ctrl >> first_bad & 1 == 1 {
                SyntaxError {
                    offset: pos + first_bad,
                    reason: "control character in string",
                }
            } else {
                SyntaxError {
                    offset: pos + first_bad,
                    reason: "invalid escape",
                }
            });
        }
        if let Some(q) = end {
            // A backslash run that ends right before the quote must be even (it is, or
            // the quote would be escaped).
            return Ok((pos + q + 1, any_escape || backslash & in_string != 0));
        }
        if len < 64 {
            // A trailing backslash escapes nothing: the string is cut short either way.
            return Err(SyntaxError {
                offset: b.len(),
                reason: "unterminated string",
            });
        }
        pos += 64;
    }
}

/// Bytes the short-string look covers.
const SHORT: usize = 32;

/// The end (past the closing quote) of the string whose opening quote is at `i`, when it
/// closes within [`SHORT`] bytes with no backslash or control byte before the quote:
/// keys, ids, types and timestamps. `None` sends the caller to the block-wise skipper.
/// Inlined into the structural walkers (SSE2 is baseline on x86_64), it spares short
/// strings the kernel dispatch.
#[inline(always)]
pub(crate) fn short_string_end(b: &[u8], i: usize) -> Option<usize> {
    let body = b.get(i + 1..i + 1 + SHORT)?;
    #[cfg(target_arch = "x86_64")]
    let (quote, special) = {
        use std::arch::x86_64::*;
        // SAFETY: `body` holds exactly SHORT = 32 bytes, so both 16-byte unaligned loads
        // stay inside it; SSE2 is part of the x86_64 baseline; the rest are register
        // operations.
        unsafe {
            let lo = _mm_loadu_si128(body.as_ptr().cast());
            let hi = _mm_loadu_si128(body.as_ptr().add(16).cast());
            let q = _mm_set1_epi8(b'"' as i8);
            let bs = _mm_set1_epi8(b'\\' as i8);
            let f = _mm_set1_epi8(0x1f);
            let sp = |v: __m128i| {
                // backslash, or x < 0x20  <=>  max(x, 0x1f) == 0x1f (unsigned)
                _mm_movemask_epi8(_mm_or_si128(
                    _mm_cmpeq_epi8(v, bs),
                    _mm_cmpeq_epi8(_mm_max_epu8(v, f), f),
                )) as u32
            };
            let qm = |v: __m128i| _mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) as u32;
            (qm(lo) | qm(hi) << 16, sp(lo) | sp(hi) << 16)
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (quote, special) = {
        let mut quote = 0u32;
        let mut special = 0u32;
        for (k, &c) in body.iter().enumerate() {
            quote |= u32::from(c == b'"') << k;
            special |= u32::from(c == b'\\' || c < 0x20) << k;
        }
        (quote, special)
    };
    let q = quote.trailing_zeros();
    (q < SHORT as u32 && special & ((1u32 << q) - 1) == 0).then_some(i + 2 + q as usize)
}

/// The obvious string skipper: the twin of [`skip_string_with`] in tests and fuzzing.
#[cfg(any(test, feature = "internals"))]
pub fn skip_string_naive(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        let Some(off) = memchr::memchr2(b'"', b'\\', &b[j..]) else {
            if let Some(p) = first_control(&b[j..]) {
                return Err(SyntaxError {
                    offset: j + p,
                    reason: "control character in string",
                });
            }
            return Err(SyntaxError {
                offset: b.len(),
                reason: "unterminated string",
            });
        };
        if let Some(p) = first_control(&b[j..j + off]) {
            return Err(SyntaxError {
                offset: j + p,
                reason: "control character in string",
            });
        }
        j += off;
        if b[j] == b'"' {
            return Ok((j + 1, escaped));
        }
        escaped = true;
        match b.get(j + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
            Some(b'u') => {
                let hex = b.get(j + 2..j + 6);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return Err(SyntaxError {
                        offset: j + 2,
                        reason: "invalid \\u escape",
                    });
                }
                j += 6;
            }
            Some(_) => {
                return Err(SyntaxError {
                    offset: j + 1,
                    reason: "invalid escape",
                });
            }
            None => {
                return Err(SyntaxError {
                    offset: b.len(),
                    reason: "unterminated string",
                });
            }
        }
    }
}

fn push_cp(out: &mut Vec<u8>, cp: u32) {
    // Generalised UTF-8: surrogates are encoded like any other BMP code point.
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

#[cfg(any(test, feature = "internals"))]
fn push_lossy(out: &mut Vec<u8>, raw: &[u8]) {
    match std::str::from_utf8(raw) {
        Ok(_) => out.extend_from_slice(raw),
        Err(_) => out.extend_from_slice(String::from_utf8_lossy(raw).as_bytes()),
    }
}

/// What unescaping a letter after a backslash gives: the byte, or 0 for `u` (four hex
/// digits follow) and for every letter that is no escape.
const UNESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 8;
    t[b'f' as usize] = 12;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

/// Bits `0..n` (n <= 64).
#[inline(always)]
fn below(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// A plain run of the string being decoded (from the opening quote or the end of an
/// escape to the next quote or backslash) and what is known of its UTF-8: `start..checked`
/// is valid UTF-8 ending at a character boundary, unless `valid` is false. Only blocks
/// that hold bytes >= 0x80 are checked, as the scan passes them; ASCII needs no check.
struct Run {
    start: usize,
    checked: usize,
    valid: bool,
}

impl Run {
    #[inline(always)]
    fn new(at: usize) -> Run {
        Run {
            start: at,
            checked: at,
            valid: true,
        }
    }

    /// Account for the bytes >= 0x80 (`high`) of the block at `pos` that lie in this run
    /// before `to` (the run's end when `ends`, else the block's end). A character the
    /// block's end cuts is checked whole, so `checked` may pass `to` by up to 3 bytes.
    #[inline(always)]
    fn check(&mut self, b: &[u8], pos: usize, high: u64, to: usize, ends: bool) {
        let done = self.checked.saturating_sub(pos);
        let high = if done >= 64 { 0 } else { high & (u64::MAX << done) };
        if high != 0 && self.valid {
            self.check_window(b, pos + high.trailing_zeros() as usize, to, ends);
        }
    }

    /// `from..to` starts at a character boundary: the bytes before it, back to
    /// `checked`, are ASCII.
    fn check_window(&mut self, b: &[u8], from: usize, to: usize, ends: bool) {
        let Some(w) = b.get(from..to) else {
            self.valid = false;
            return;
        };
        match std::str::from_utf8(w) {
            Ok(_) => self.checked = to,
            // A character cut by the block's end: check it whole.
            Err(e) if !ends && e.error_len().is_none() => {
                let k = from + e.valid_up_to();
                let width = match b[k] {
                    0xC2..=0xDF => 2,
                    0xE0..=0xEF => 3,
                    _ => 4,
                };
                let end = (k + width).min(b.len());
                if std::str::from_utf8(&b[k..end]).is_ok() {
                    self.checked = end;
                } else {
                    self.valid = false;
                }
            }
            Err(_) => self.valid = false,
        }
    }
}

/// Append the run `b[start..end]` to `out`: copied when its UTF-8 is valid, decoded
/// lossily (maximal-subpart U+FFFD, as pi's decoding of the line) when not. A short run
/// is copied as one fixed 64-byte move and the surplus cut off again, which spares
/// escape-dense text a variable-length copy per escape.
#[inline(always)]
fn push_run(out: &mut Vec<u8>, b: &[u8], start: usize, end: usize, valid: bool) {
    if !valid {
        out.extend_from_slice(String::from_utf8_lossy(&b[start..end]).as_bytes());
        return;
    }
    let n = end - start;
    if n <= 64
        && let Some(chunk) = b.get(start..start + 64)
    {
        let chunk: &[u8; 64] = chunk.try_into().expect("64 bytes");
        let l = out.len();
        out.extend_from_slice(chunk);
        out.truncate(l + n);
    } else {
        out.extend_from_slice(&b[start..end]);
    }
}

#[cold]
fn unterminated(b: &[u8]) -> SyntaxError {
    SyntaxError::new(b.len(), "unterminated string")
}

/// The error for a control byte at `at`, the first special byte of its run: the naive
/// decoder looks for the run's end (a quote or backslash) first, so with none anywhere
/// after it the string is unterminated instead. `after` holds the quotes and backslashes
/// of the block from `at` on; the block ends at `block_end`.
#[cold]
fn control_error(b: &[u8], at: usize, after: u64, block_end: usize) -> SyntaxError {
    if after != 0 || memchr::memchr2(b'"', b'\\', b.get(block_end..).unwrap_or_default()).is_some() {
        SyntaxError::new(at, "control character in string")
    } else {
        unterminated(b)
    }
}

/// Decode the JSON string whose opening quote is at `start` with mask kernel `K`, in one
/// pass of 64-byte blocks; returns it and the offset just past the closing quote. Same
/// results and errors as [`decode_string_naive`] for every input.
///
/// Each block gives masks of quotes, backslashes, control bytes and bytes >= 0x80. The
/// string's special bytes (quote, backslash, control) are visited in order through the
/// masks; the runs between them are checked for UTF-8 only in blocks that hold bytes
/// >= 0x80. A string without escapes is borrowed; at the first backslash the decoder
/// switches to an owned buffer and copies each run, handles the escape, and goes on with
/// the same block's masks.
#[inline(always)]
pub(crate) fn decode_string_with<K: DecodeKernel>(b: &[u8], start: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    let body = start + 1;
    let mut pos = body;
    let mut run = Run::new(body);
    // Empty (no allocation) until the first backslash.
    let mut out: Vec<u8> = Vec::new();
    let mut owned = false;
    let mut pending_high: Option<u32> = None;
    let mut buf: [u8; 64];
    'blocks: loop {
        let rest = b.get(pos..).unwrap_or_default();
        let (block, len): (&[u8; 64], usize) = if rest.len() >= 64 {
            (rest[..64].try_into().expect("64 bytes"), 64)
        } else {
            // The tail: pad with a byte that is none of quote, backslash, control, >= 0x80.
            buf = [b'a'; 64];
            buf[..rest.len()].copy_from_slice(rest);
            (&buf, rest.len())
        };
        let (Masks { quote, backslash, ctrl }, high) = K::decode_masks(block);
        let special = quote | backslash | ctrl;
        // Where this block's part of the run begins (a run may start inside it).
        let mut cur = run.start.saturating_sub(pos);
        loop {
            let pending = if cur >= 64 { 0 } else { special & (u64::MAX << cur) };
            if pending == 0 {
                break;
            }
            let e = pending.trailing_zeros() as usize;
            let end = pos + e;
            run.check(b, pos, high & below(e), end, true);
            let bit = 1u64 << e;
            if ctrl & bit != 0 {
                return Err(control_error(b, end, (quote | backslash) & !below(e), pos + len));
            }
            if !owned {
                if quote & bit != 0 {
                    let raw = &b[run.start..end];
                    let s = if run.valid {
                        Cow::Borrowed(raw)
                    } else {
                        Cow::Owned(String::from_utf8_lossy(raw).into_owned().into_bytes())
                    };
                    return Ok((JsStr(s), end + 1));
                }
                owned = true;
                out.reserve(end - run.start + 64);
            }
            if end > run.start {
                if let Some(h) = pending_high.take() {
                    push_cp(&mut out, h);
                }
                push_run(&mut out, b, run.start, end, run.valid);
            }
            if quote & bit != 0 {
                if let Some(h) = pending_high.take() {
                    push_cp(&mut out, h);
                }
                return Ok((JsStr(Cow::Owned(out)), end + 1));
            }
            // A backslash at `end`.
            let esc = *b.get(end + 1).ok_or_else(|| unterminated(b))?;
            let next = match UNESCAPE[usize::from(esc)] {
                0 if esc == b'u' => {
                    let cp = hex4(b, end + 2).ok_or(SyntaxError::new(end + 2, "invalid \\u escape"))?;
                    match (pending_high.take(), cp) {
                        (Some(h), 0xDC00..=0xDFFF) => {
                            push_cp(&mut out, 0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00));
                        }
                        (prev, _) => {
                            if let Some(h) = prev {
                                push_cp(&mut out, h);
                            }
                            if (0xD800..=0xDBFF).contains(&cp) {
                                pending_high = Some(cp);
                            } else {
                                push_cp(&mut out, cp);
                            }
                        }
                    }
                    end + 6
                }
                0 => return Err(SyntaxError::new(end + 1, "invalid escape")),
                c => {
                    if let Some(h) = pending_high.take() {
                        push_cp(&mut out, h);
                    }
                    out.push(c);
                    end + 2
                }
            };
            run = Run::new(next);
            if next - pos >= 64 {
                // The escape ran past this block: the next block starts right after it.
                pos = next;
                continue 'blocks;
            }
            cur = next - pos;
        }
        if len < 64 {
            return Err(unterminated(b));
        }
        run.check(b, pos, high, pos + 64, false);
        pos += 64;
    }
}

/// Decode the JSON string whose opening quote is at `start` with the baseline kernel
/// (SSE2 on x86_64, SWAR elsewhere); `super::dispatch::decode_string` picks the best one
/// this CPU has. Returns the string and the offset just past the closing quote.
#[inline]
pub(crate) fn decode_string(b: &[u8], start: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    #[cfg(target_arch = "x86_64")]
    {
        decode_string_with::<super::kernel::Sse2>(b, start)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        decode_string_with::<super::kernel::Swar>(b, start)
    }
}

/// The obvious string decoder (memchr2 for quote and backslash, a control-byte scan and
/// UTF-8 validation of each run, one escape at a time): the twin of
/// [`decode_string_with`] in tests and fuzzing, and the definition of its results and
/// errors. Decodes the JSON string whose opening quote is at `start`; returns it and the
/// offset just past the closing quote.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn decode_string_naive(b: &[u8], start: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    debug_assert_eq!(b[start], b'"');
    let body = start + 1;
    let mut i = body;
    // Fast path: no escapes.
    let Some(off) = memchr::memchr2(b'"', b'\\', &b[i..]) else {
        return Err(SyntaxError {
            offset: b.len(),
            reason: "unterminated string",
        });
    };
    let run = &b[i..i + off];
    if let Some(p) = first_control(run) {
        return Err(SyntaxError {
            offset: i + p,
            reason: "control character in string",
        });
    }
    i += off;
    if b[i] == b'"' {
        let raw = &b[body..i];
        let s = match std::str::from_utf8(raw) {
            Ok(_) => Cow::Borrowed(raw),
            Err(_) => Cow::Owned(String::from_utf8_lossy(raw).into_owned().into_bytes()),
        };
        return Ok((JsStr(s), i + 1));
    }
    // Slow path: escapes present; `i` is at the first backslash.
    let mut out = Vec::with_capacity(i - body + 16);
    push_lossy(&mut out, &b[body..i]);
    let mut pending_high: Option<u32> = None;
    loop {
        // Here b[i] is '\\' or '"'.
        if b[i] == b'"' {
            if let Some(h) = pending_high.take() {
                push_cp(&mut out, h);
            }
            return Ok((JsStr(Cow::Owned(out)), i + 1));
        }
        let esc = *b.get(i + 1).ok_or(SyntaxError {
            offset: i + 1,
            reason: "unterminated string",
        })?;
        let simple = match esc {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => {
                return Err(SyntaxError {
                    offset: i + 1,
                    reason: "invalid escape",
                });
            }
        };
        if let Some(c) = simple {
            if let Some(h) = pending_high.take() {
                push_cp(&mut out, h);
            }
            out.push(c);
            i += 2;
        } else {
            let cp = hex4(b, i + 2).ok_or(SyntaxError {
                offset: i + 2,
                reason: "invalid \\u escape",
            })?;
            i += 6;
            match (pending_high.take(), cp) {
                (Some(h), 0xDC00..=0xDFFF) => {
                    push_cp(&mut out, 0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00));
                }
                (prev, _) => {
                    if let Some(h) = prev {
                        push_cp(&mut out, h);
                    }
                    if (0xD800..=0xDBFF).contains(&cp) {
                        pending_high = Some(cp);
                    } else {
                        push_cp(&mut out, cp);
                    }
                }
            }
        }
        // Copy the plain run up to the next quote or backslash.
        let off = memchr::memchr2(b'"', b'\\', &b[i..]).ok_or(SyntaxError {
            offset: b.len(),
            reason: "unterminated string",
        })?;
        let run = &b[i..i + off];
        if let Some(p) = first_control(run) {
            return Err(SyntaxError {
                offset: i + p,
                reason: "control character in string",
            });
        }
        if !run.is_empty() {
            if let Some(h) = pending_high.take() {
                push_cp(&mut out, h);
            }
            push_lossy(&mut out, run);
        }
        i += off;
    }
}
