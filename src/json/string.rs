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
use super::kernel::{Kernel, Masks};
use super::lex::{first_control, hex4};
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

fn push_lossy(out: &mut Vec<u8>, raw: &[u8]) {
    match std::str::from_utf8(raw) {
        Ok(_) => out.extend_from_slice(raw),
        Err(_) => out.extend_from_slice(String::from_utf8_lossy(raw).as_bytes()),
    }
}

/// Decode the JSON string whose opening quote is at `start`; returns it and the offset
/// just past the closing quote.
pub(crate) fn decode_string(b: &[u8], start: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
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
