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

/// `cp` as generalised UTF-8 (WTF-8): surrogates are encoded like any other BMP code
/// point. Returns the bytes in `buf` that hold it.
#[inline(always)]
fn wtf8(cp: u32, buf: &mut [u8; 4]) -> &[u8] {
    if cp < 0x80 {
        buf[0] = cp as u8;
        &buf[..1]
    } else if cp < 0x800 {
        *buf = [0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8, 0, 0];
        &buf[..2]
    } else if cp < 0x10000 {
        *buf = [
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
            0,
        ];
        &buf[..3]
    } else {
        *buf = [
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ];
        &buf[..]
    }
}

#[cfg(any(test, feature = "internals"))]
fn push_cp(out: &mut Vec<u8>, cp: u32) {
    out.extend_from_slice(wtf8(cp, &mut [0; 4]));
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

/// Where the valid UTF-8 that starts at `from` (a character boundary) ends, checked up
/// to `to`; with `cut`, a character that `to` cuts is checked whole, so the answer may
/// pass `to` by up to 3 bytes. `None` when the bytes are not valid UTF-8.
#[inline]
fn valid_through(b: &[u8], from: usize, to: usize, cut: bool) -> Option<usize> {
    let w = b.get(from..to)?;
    match std::str::from_utf8(w) {
        Ok(_) => Some(to),
        Err(e) if cut && e.error_len().is_none() => {
            let k = from + e.valid_up_to();
            let width = match b[k] {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let end = (k + width).min(b.len());
            std::str::from_utf8(&b[k..end]).is_ok().then_some(end)
        }
        Err(_) => None,
    }
}

/// What is known of the UTF-8 of the string being decoded, which is checked as the scan
/// passes its blocks, and only in blocks that hold bytes >= 0x80 (ASCII needs no check).
/// The runs of a string (the bytes between its quotes and escapes) are separated by ASCII
/// bytes, so valid UTF-8 over several runs is valid UTF-8 in each: a block is checked
/// whole first, and only when that fails run by run.
struct Utf8 {
    /// The string's non-ASCII bytes before `checked` are checked: valid, ending at a
    /// character boundary, or in a run already found invalid.
    checked: usize,
    /// Whether the current run is valid UTF-8 so far.
    run_valid: bool,
    /// The current block failed the whole-block check: its runs are checked one by one.
    precise: bool,
}

impl Utf8 {
    /// The non-ASCII bytes (`high`) of the block at `pos`, `len` bytes long, that are
    /// not checked yet. Checks them all at once when there are any.
    #[inline(always)]
    fn block(&mut self, b: &[u8], pos: usize, len: usize, high: u64) {
        let done = self.checked.saturating_sub(pos);
        let high = if done >= 64 { 0 } else { high & (u64::MAX << done) };
        self.precise = false;
        if high != 0 {
            match valid_through(b, pos + high.trailing_zeros() as usize, pos + len, len == 64) {
                Some(end) => self.checked = end,
                None => self.precise = true,
            }
        }
    }

    /// In a block that failed the whole-block check: the run starting at `run_start`
    /// reaches `to` in the block at `pos` (`ends`: the run ends there; else the block
    /// does, and a character it cuts is checked whole).
    #[inline(always)]
    fn run_part(&mut self, b: &[u8], pos: usize, high: u64, run_start: usize, to: usize, ends: bool) {
        if !self.precise || !self.run_valid {
            return;
        }
        let from = self.checked.max(run_start);
        let done = from.saturating_sub(pos);
        let high = if done >= 64 {
            0
        } else {
            high & (u64::MAX << done) & below(to - pos)
        };
        if high != 0 {
            match valid_through(b, pos + high.trailing_zeros() as usize, to, !ends) {
                Some(end) => self.checked = end,
                None => self.run_valid = false,
            }
        }
    }
}

/// The owned buffer of a string being unescaped: `out[..w]` is the text so far. `out`
/// is sized (zero-filled) up front to the string's escaped length plus 64, which the
/// text never exceeds unless lossy decoding grows it; so the write cursor stays in a
/// register and a run of up to 64 bytes is one fixed 64-byte copy (the surplus is
/// overwritten next), never a variable-length one per escape.
struct Out {
    out: Vec<u8>,
    w: usize,
}

impl Out {
    #[inline(always)]
    fn with_len(n: usize) -> Out {
        Out {
            out: vec![0; n + 64],
            w: 0,
        }
    }

    /// Make room for `n` more bytes and 64 of slack.
    #[cold]
    fn grow(&mut self, n: usize) {
        let want = (self.w + n + 64).max(self.out.len() * 2);
        self.out.resize(want, 0);
    }

    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        if self.out.len() < self.w + bytes.len() {
            self.grow(bytes.len());
        }
        self.out[self.w..self.w + bytes.len()].copy_from_slice(bytes);
        self.w += bytes.len();
    }

    #[inline(always)]
    fn byte(&mut self, c: u8) {
        match self.out.get_mut(self.w) {
            Some(slot) => *slot = c,
            None => {
                self.grow(1);
                self.out[self.w] = c;
            }
        }
        self.w += 1;
    }

    /// A code point as generalised UTF-8: surrogates are encoded like any other BMP code
    /// point (WTF-8), as the naive decoder's `push_cp` does.
    #[inline(always)]
    fn cp(&mut self, cp: u32) {
        if cp < 0x80 {
            self.byte(cp as u8);
        } else {
            self.put(wtf8(cp, &mut [0; 4]));
        }
    }

    /// The run `b[start..end]`: copied when its UTF-8 is valid, decoded lossily
    /// (maximal-subpart U+FFFD, as pi's decoding of the line) when not.
    #[inline(always)]
    fn run(&mut self, b: &[u8], start: usize, end: usize, valid: bool) {
        if !valid {
            self.put(String::from_utf8_lossy(&b[start..end]).as_bytes());
            return;
        }
        let n = end - start;
        if n <= 64
            && let Some(chunk) = b.get(start..start + 64)
            && let Some(dst) = self.out.get_mut(self.w..self.w + 64)
        {
            dst.copy_from_slice(chunk);
            self.w += n;
        } else {
            self.put(&b[start..end]);
        }
    }

    #[inline(always)]
    fn finish(mut self) -> Vec<u8> {
        self.out.truncate(self.w);
        self.out
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

/// The block at `pos`: 64 bytes of `b`, or its tail padded with a byte that is none of
/// quote, backslash, control, >= 0x80; and how many bytes are real.
#[inline(always)]
fn block_at<'b>(b: &'b [u8], pos: usize, buf: &'b mut [u8; 64]) -> (&'b [u8; 64], usize) {
    let rest = b.get(pos..).unwrap_or_default();
    if rest.len() >= 64 {
        (rest[..64].try_into().expect("64 bytes"), 64)
    } else {
        *buf = [b'a'; 64];
        buf[..rest.len()].copy_from_slice(rest);
        (buf, rest.len())
    }
}

/// Decode the JSON string whose opening quote is at `start` with mask kernel `K`, in one
/// pass of 64-byte blocks; returns it and the offset just past the closing quote. Same
/// results and errors as [`decode_string_naive`] for every input.
///
/// Each block gives masks of quotes, backslashes, control bytes and bytes >= 0x80; the
/// first quote, backslash or control byte ends the scan, and UTF-8 is checked only in
/// blocks that hold bytes >= 0x80 ([`Utf8`]). A string without escapes is borrowed; one
/// with escapes goes on in [`unescape_with`] from its first backslash.
#[inline(always)]
pub(crate) fn decode_string_with<K: DecodeKernel>(b: &[u8], start: usize) -> Result<(JsStr<'_>, usize), SyntaxError> {
    let body = start + 1;
    let mut utf8 = Utf8 {
        checked: body,
        run_valid: true,
        precise: false,
    };
    let mut pos = body;
    let mut buf = [0u8; 64];
    loop {
        let (block, len) = block_at(b, pos, &mut buf);
        let (Masks { quote, backslash, ctrl }, high) = K::decode_masks(block);
        if high != 0 {
            utf8.block(b, pos, len, high);
        }
        let special = quote | backslash | ctrl;
        if special == 0 {
            if len < 64 {
                return Err(unterminated(b));
            }
            utf8.run_part(b, pos, high, body, pos + 64, false);
            pos += 64;
            continue;
        }
        let e = special.trailing_zeros() as usize;
        let end = pos + e;
        utf8.run_part(b, pos, high, body, end, true);
        let bit = 1u64 << e;
        if ctrl & bit != 0 {
            return Err(control_error(b, end, (quote | backslash) & !below(e), pos + len));
        }
        if quote & bit != 0 {
            let raw = &b[body..end];
            let s = if utf8.run_valid {
                Cow::Borrowed(raw)
            } else {
                Cow::Owned(String::from_utf8_lossy(raw).into_owned().into_bytes())
            };
            return Ok((JsStr(s), end + 1));
        }
        return unescape_with::<K>(b, body, end, utf8);
    }
}

/// The rest of [`decode_string_with`] for a string with escapes, from its first
/// backslash at `first`. The block skipper ([`skip_string_with`]) finds the string's end
/// first, so the buffer is allocated once at its final size ([`Out`]); then each run is
/// copied, each escape unescaped, and the scan goes on with the same block's masks.
#[inline(always)]
fn unescape_with<K: DecodeKernel>(
    b: &[u8],
    body: usize,
    first: usize,
    mut utf8: Utf8,
) -> Result<(JsStr<'_>, usize), SyntaxError> {
    // Unescaped text is never longer than its escaped form (only lossy U+FFFD can grow
    // it; then the buffer grows). When the skipper finds an error, so will the decoder.
    let close = skip_string_with::<K>(b, first - 1).map_or(first + 64, |(close, _)| close);
    let mut out = Out::with_len(close.max(first) - body);
    out.run(b, body, first, utf8.run_valid);
    let mut pending_high: Option<u32> = None;
    let mut pos = first;
    let mut run_start = first;
    let mut carry = 0u64;
    let mut buf = [0u8; 64];
    loop {
        let (block, len) = block_at(b, pos, &mut buf);
        let (Masks { quote, backslash, ctrl }, high) = K::decode_masks(block);
        if high != 0 {
            utf8.block(b, pos, len, high);
        } else {
            utf8.precise = false;
        }
        // The backslashes that start escapes, the closing quote, control bytes: known
        // from the masks alone, so finding the next one never waits for the letter of
        // the escape before it. (A letter that is no escape is an error at its
        // backslash, before anything after it is looked at.)
        let escaped = escaped_mask(backslash, &mut carry);
        let events = ((backslash | quote) & !escaped) | ctrl;
        // Where this block's part of the run begins (a run may start inside it).
        let cur = run_start.saturating_sub(pos);
        let mut pending = if cur >= 64 { 0 } else { events & (u64::MAX << cur) };
        while pending != 0 {
            let e = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let end = pos + e;
            utf8.run_part(b, pos, high, run_start, end, true);
            let bit = 1u64 << e;
            if ctrl & bit != 0 {
                return Err(control_error(b, end, (quote | backslash) & !below(e), pos + len));
            }
            // The letter after a backslash at `end` (in this block unless it is the
            // last), read before the run's copy is stored: the load then never waits
            // behind the store.
            let esc = if e + 1 < len {
                Some(block[e + 1])
            } else {
                b.get(end + 1).copied()
            };
            if end > run_start {
                if let Some(h) = pending_high.take() {
                    out.cp(h);
                }
                out.run(b, run_start, end, utf8.run_valid);
            }
            if quote & bit != 0 {
                if let Some(h) = pending_high.take() {
                    out.cp(h);
                }
                return Ok((JsStr(Cow::Owned(out.finish())), end + 1));
            }
            let esc = esc.ok_or_else(|| unterminated(b))?;
            run_start = match UNESCAPE[usize::from(esc)] {
                0 if esc == b'u' => {
                    let cp = hex4(b, end + 2).ok_or(SyntaxError::new(end + 2, "invalid \\u escape"))?;
                    match (pending_high.take(), cp) {
                        (Some(h), 0xDC00..=0xDFFF) => out.cp(0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00)),
                        (prev, _) => {
                            if let Some(h) = prev {
                                out.cp(h);
                            }
                            if (0xD800..=0xDBFF).contains(&cp) {
                                pending_high = Some(cp);
                            } else {
                                out.cp(cp);
                            }
                        }
                    }
                    // Four hex digits hold no quote, backslash or control byte.
                    end + 6
                }
                0 => return Err(SyntaxError::new(end + 1, "invalid escape")),
                c => {
                    if let Some(h) = pending_high.take() {
                        out.cp(h);
                    }
                    out.byte(c);
                    end + 2
                }
            };
            utf8.run_valid = true;
        }
        if len < 64 {
            return Err(unterminated(b));
        }
        utf8.run_part(b, pos, high, run_start, pos + 64, false);
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
