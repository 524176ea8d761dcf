//! Block-wise JSON string skipping: the hot loop of indexing.
//!
//! Strings hold nearly all of a session's bytes (base64 images, tool outputs), and tool
//! outputs are escape-dense (a backslash every ~9 bytes), which stalls any skipper that
//! stops at each backslash. This one looks at 64 bytes at a time: it builds bit masks of
//! quotes, backslashes and control bytes, works out which characters are escaped with
//! simdjson's carry trick (odd-length backslash runs, carried across blocks), and stops
//! only at the first unescaped quote. Escapes are validated from the masks too; only `\u`
//! escapes (four hex digits) take a scalar look.
//!
//! The masks come from a kernel in [`crate::simd`] (AVX2 chosen at run time, SSE2, or
//! portable SWAR); `crate::scan::skip_string_naive` is the obvious twin every kernel is
//! tested against, at every block offset.

use crate::simd::{Kernel, Masks};
use crate::value::SyntaxError;

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

#[cfg(test)]
mod tests {
    use crate::scan::skip_string_naive;

    fn both(s: &[u8]) {
        for k in crate::simd::kernels() {
            same_as_naive(k, s, crate::simd::skip_string_kernel(k, s, 0));
        }
        // The walkers' entry point: the short-string look, then the best kernel.
        same_as_naive("scan::skip_string", s, crate::scan::skip_string(s, 0));
    }

    #[test]
    fn short_strings_every_special_byte_at_every_position() {
        for len in 0..40 {
            for at in 0..=len {
                for special in [b'"', b'\\', b'\n', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff] {
                    for tail in [&b"\""[..], b"", b"\"abcdefghijklmnopqrstuvwxyz0123456789"] {
                        let mut s = vec![b'"'];
                        s.extend(std::iter::repeat_n(b'x', len));
                        if at < len {
                            s[1 + at] = special;
                        }
                        s.extend_from_slice(tail);
                        both(&s);
                    }
                }
            }
        }
    }

    /// `fast` (from `who`) agrees with the naive skipper on `s`: same end, or an error at
    /// the same offset.
    fn same_as_naive(who: &str, s: &[u8], fast: Result<(usize, bool), crate::value::SyntaxError>) {
        let naive = skip_string_naive(s, 0);
        let text = String::from_utf8_lossy(s);
        match (&fast, &naive) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{who}: {text:?}"),
            (Err(x), Err(y)) => assert_eq!(x.offset, y.offset, "{who}: {text:?}: {x:?} vs {y:?}"),
            _ => panic!("{who}: {text:?}: fast {fast:?}, naive {naive:?}"),
        }
    }

    #[test]
    fn every_escape_at_every_block_offset() {
        let escapes: [&[u8]; 14] = [
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\n",
            b"\\u00e9",
            b"\\uD83D",
            b"\\x",
            b"\\u12",
            b"\\\\\\\"",
            b"\x01",
            b"\\",
            b"\\\\\\",
            b"\"",
        ];
        for esc in escapes {
            for pad in 0..140 {
                for tail in [&b"\""[..], b"abc\"", b"", b"\\\""] {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'x', pad));
                    s.extend_from_slice(esc);
                    s.extend_from_slice(tail);
                    s.extend_from_slice(b",rest");
                    both(&s);
                }
            }
        }
    }

    #[test]
    fn long_backslash_runs_across_blocks() {
        for run in 0..200 {
            for pad in [0, 1, 30, 62, 63, 64, 65] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'y', pad));
                s.extend(std::iter::repeat_n(b'\\', run));
                s.extend_from_slice(b"\"tail\"");
                both(&s);
            }
        }
    }
}
