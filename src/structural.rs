//! Skipping a whole array or object through a structural index of its blocks.
//!
//! The descent walkers ([`crate::scan`], [`crate::jsonskip`]) spend ~10 ns per token:
//! a branch per byte class, a vector look per short string. Message bodies (content
//! arrays, usage objects, tool arguments) are nothing but short tokens, and they are
//! skipped, not read. This walker classifies 64 bytes at a time instead (as simdjson's
//! first stage does; this is an independent implementation): quotes, backslashes,
//! control bytes, structural characters and white space become bit masks; escapes and
//! string interiors follow from them with carries across blocks; and only the positions
//! of structural characters, opening quotes and scalar starts are visited, by a small
//! grammar automaton with a bit stack.
//!
//! It answers only when it is sure: `Some(end)` means the value is valid and ends at
//! `end`, exactly as the descent walker would find. Anything else (a syntax error, a
//! `\u` escape without four hex digits, nesting deeper than 64, a value cut off by the
//! end of the input) gives `None`, and the caller runs its exact walker, which finds the
//! error and its offset. Tests and the fuzz targets compare the two on every input.

use crate::simd::Kernel;
use crate::strscan::escaped_mask;
use crate::value::number_end;

/// White space: space and tab only (the listing, where `\r` and `\n` end lines).
pub(crate) const WS_BLANK: u8 = 0;
/// White space: space, tab and `\r` (a line of the index: `\n` ended it).
pub(crate) const WS_LINE: u8 = 1;
/// White space: space, tab, `\r` and `\n` (`JSON.parse`).
pub(crate) const WS_JSON: u8 = 2;

/// Bit k set when an odd number of bits at or below k are set in `x`.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[inline(always)]
fn ends_scalar<const WS: u8>(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'{' | b'}' | b'[' | b']' | b':' | b',' | b'"')
        || (WS >= WS_LINE && c == b'\r')
        || (WS >= WS_JSON && c == b'\n')
}

/// The positions to visit, block by block: structural characters and opening quotes
/// outside strings, and the first byte of every run of scalar bytes (numbers, literals,
/// garbage), in order.
struct Cursor<'a, K, const WS: u8> {
    b: &'a [u8],
    /// Where the current block starts.
    pos: usize,
    /// Positions of the current block not visited yet.
    visit: u64,
    /// Problems in the current block: control bytes in strings, backslashes outside
    /// them, bad escapes.
    bad: u64,
    esc_carry: u64,
    /// All ones when the previous block ended inside a string.
    in_carry: u64,
    /// 1 when the previous block ended in a run of scalar bytes.
    sc_carry: u64,
    kernel: std::marker::PhantomData<K>,
}

impl<'a, K: Kernel, const WS: u8> Cursor<'a, K, WS> {
    #[inline(always)]
    fn new(b: &'a [u8], pos: usize) -> Self {
        let mut c = Cursor {
            b,
            pos,
            visit: 0,
            bad: 0,
            esc_carry: 0,
            in_carry: 0,
            sc_carry: 0,
            kernel: std::marker::PhantomData,
        };
        c.fill();
        c
    }

    /// Classify the block at `pos` (the caller checked `pos < b.len()`).
    #[inline(always)]
    fn fill(&mut self) {
        let rest = &self.b[self.pos..];
        let mut buf: [u8; 64];
        let block: &[u8; 64] = if rest.len() >= 64 {
            rest[..64].try_into().expect("64 bytes")
        } else {
            // Pad with spaces: white space in every flavour, so the padding adds no position.
            buf = [b' '; 64];
            buf[..rest.len()].copy_from_slice(rest);
            &buf
        };
        let c = K::classes(block);
        let escaped = escaped_mask(c.masks.backslash, &mut self.esc_carry);
        let quote = c.masks.quote & !escaped;
        // From an opening quote up to (not including) its closing quote.
        let inside = prefix_xor(quote) ^ self.in_carry;
        self.in_carry = 0u64.wrapping_sub(inside >> 63);
        let mut ws = c.blank;
        if WS >= WS_LINE {
            ws |= c.cr;
        }
        if WS >= WS_JSON {
            ws |= c.lf;
        }
        let mut bad = (c.masks.ctrl & inside) | (c.masks.backslash & !inside);
        let esc_in = escaped & inside;
        if esc_in != 0 {
            let (letters, u) = K::letters(block);
            bad |= esc_in & !letters;
            let mut us = esc_in & u;
            while us != 0 {
                let k = us.trailing_zeros() as usize;
                us &= us - 1;
                let hex = self.b.get(self.pos + k + 1..self.pos + k + 5);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    bad |= 1 << k;
                }
            }
        }
        // Bytes outside strings that are none of white space, structure or quotes: numbers
        // and literals (or garbage, which their check rejects).
        let scalar = !inside & !(c.structural | ws | c.masks.quote);
        let starts = scalar & !((scalar << 1) | self.sc_carry);
        self.sc_carry = scalar >> 63;
        self.bad = bad;
        // Nothing at or after the first problem is visited: the walk gives up there.
        let before_bad = bad & bad.wrapping_neg();
        let visit = (c.structural & !inside) | (quote & inside) | starts;
        self.visit = if bad == 0 { visit } else { visit & (before_bad - 1) };
    }

    /// The next position to visit and its byte.
    #[inline(always)]
    fn next(&mut self) -> Option<(usize, u8)> {
        while self.visit == 0 {
            // A problem in this block that no visit stepped over lies before the end.
            if self.bad != 0 {
                return None;
            }
            self.pos += 64;
            if self.pos >= self.b.len() {
                return None;
            }
            self.fill();
        }
        let p = self.pos + self.visit.trailing_zeros() as usize;
        self.visit &= self.visit - 1;
        Some((p, self.b[p]))
    }

    /// Called on the opening quote at `p`: a string that runs past the current block is
    /// skipped by the string kernel, which is far faster on long strings (it looks at
    /// quotes, backslashes and control bytes only, and passes plain blocks at once); the
    /// walk resumes after it, outside any string.
    #[inline(always)]
    fn string(&mut self, p: usize) -> Option<()> {
        if self.visit == 0 && self.in_carry != 0 {
            let (end, _) = crate::strscan::skip_string_with::<K>(self.b, p).ok()?;
            if end >= self.b.len() {
                return None;
            }
            self.pos = end;
            (self.esc_carry, self.in_carry, self.sc_carry) = (0, 0, 0);
            self.fill();
        }
        Some(())
    }

    /// A member of an object starts at `p` (byte `ch`): its key, then `:`. Returns the
    /// position and byte where its value starts.
    #[inline(always)]
    fn member(&mut self, p: usize, ch: u8) -> Option<(usize, u8)> {
        if ch != b'"' {
            return None;
        }
        self.string(p)?;
        if self.next()?.1 != b':' {
            return None;
        }
        self.next()
    }
}

/// Skip the array or object whose opening bracket is at `i`, with block classes from
/// kernel `K` and white space `WS` ([`WS_BLANK`], [`WS_LINE`] or [`WS_JSON`]). `Some(end)`
/// (past the closing bracket) only when the value is valid; `None` when it is not or the
/// walker cannot tell (see the module documentation).
///
/// The grammar is the shape of the code: a value, then (inside a container) a comma and
/// the next member or a closing bracket, with a bit stack of container kinds.
#[inline(always)]
pub(crate) fn skip_container_with<K: Kernel, const WS: u8>(b: &[u8], i: usize) -> Option<usize> {
    debug_assert!(matches!(b.get(i), Some(b'{' | b'[')));
    let mut c = Cursor::<K, WS>::new(b, i);
    // Bit d is set when the container at depth d + 1 is an object.
    let mut stack = 0u64;
    let mut depth = 0u32;
    let (mut p, mut ch) = c.next()?;
    'value: loop {
        // A value starts at p.
        match ch {
            b'{' | b'[' => {
                if depth == 64 {
                    return None;
                }
                let obj = ch == b'{';
                stack = stack & !(1 << depth) | u64::from(obj) << depth;
                depth += 1;
                (p, ch) = c.next()?;
                if ch == if obj { b'}' } else { b']' } {
                    depth -= 1;
                } else if obj {
                    (p, ch) = c.member(p, ch)?;
                    continue 'value;
                } else {
                    continue 'value;
                }
            }
            b'"' => c.string(p)?,
            _ => {
                let end = match ch {
                    b't' => b[p..].starts_with(b"true").then_some(p + 4)?,
                    b'f' => b[p..].starts_with(b"false").then_some(p + 5)?,
                    b'n' => b[p..].starts_with(b"null").then_some(p + 4)?,
                    b'-' | b'0'..=b'9' => number_end(b, p).ok()?,
                    _ => return None,
                };
                // The scalar must fill its run of scalar bytes.
                if !b.get(end).is_some_and(|&c| ends_scalar::<WS>(c)) {
                    return None;
                }
            }
        }
        // After a value: a comma and the next member, or closing brackets.
        loop {
            if depth == 0 {
                return Some(p + 1);
            }
            (p, ch) = c.next()?;
            let obj = stack >> (depth - 1) & 1 == 1;
            match ch {
                b',' => {
                    (p, ch) = c.next()?;
                    if obj {
                        (p, ch) = c.member(p, ch)?;
                    }
                    continue 'value;
                }
                b'}' if obj => depth -= 1,
                b']' if !obj => depth -= 1,
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Kind;

    /// The fast walker (every kernel) agrees with the exact one on `s` for all three
    /// flavours of white space: when it answers, the exact walker accepts with the same
    /// end; when the exact walker accepts a shallow value, it answers.
    fn agrees(s: &[u8]) {
        if !matches!(s.first(), Some(b'{' | b'[')) {
            return;
        }
        let text = String::from_utf8_lossy(s);
        let kind = if s[0] == b'{' { Kind::Object } else { Kind::Array };
        let exact_line = crate::scan::skip_container_exact::<false>(s, 0, kind).ok().map(|r| r.0);
        let exact_json = crate::scan::skip_container_exact::<true>(s, 0, kind).ok().map(|r| r.0);
        let exact_blank = crate::jsonskip::skip_container_exact(s, 0, kind).ok().map(|r| r.0);
        for k in crate::simd::kernels() {
            for (ws, exact) in [(WS_LINE, exact_line), (WS_JSON, exact_json), (WS_BLANK, exact_blank)] {
                let fast = crate::simd::skip_container_kernel(k, ws, s, 0);
                match fast {
                    Some(end) => assert_eq!(Some(end), exact, "{k} ws {ws}: {text:?}"),
                    None => assert!(
                        exact.is_none() || depth(s) > 64,
                        "{k} ws {ws}: fast gave up on a valid value: {text:?}"
                    ),
                }
            }
        }
    }

    fn depth(s: &[u8]) -> usize {
        crate::scan::max_depth(s)
    }

    #[test]
    fn structures() {
        let cases: &[&[u8]] = &[
            b"{}",
            b"[]",
            b"[ ]",
            b"{ }",
            b"[1,2,3]",
            b"[1,2,3,]",
            b"[,1]",
            b"{\"a\":1}",
            b"{\"a\":1,}",
            b"{\"a\" : [true, false, null, -0.5e+3, \"x\\\"y\"], \"b\": {\"c\": {}}}",
            b"{\"a\":1 2}",
            b"[1 2]",
            b"[truex]",
            b"[tru]",
            b"[nul]",
            b"[-]",
            b"[01]",
            b"[1.]",
            b"[1e]",
            b"[\"a\"\"b\"]",
            b"[\"a\" \"b\"]",
            b"{\"a\"}",
            b"{\"a\":}",
            b"{1:2}",
            b"[}",
            b"{]",
            b"[[[]]",
            b"[\"\\u00e9\\n\\/\"]",
            b"[\"\\x\"]",
            b"[\"\\u12\"]",
            b"[\"\x01\"]",
            b"[1]\x01",
            b"[\"a\"]\"\x01",
            b"[1\r]",
            b"[1\n]",
            b"[1\t,\r\n2]",
            b"[\\]",
            b"[\"\xff\"]",
            b"[\xff]",
            b"{\"a\":[1,{\"b\":[2,{\"c\":3}]}]}",
            b"[1,2]] trailing",
            b"[\"unterminated",
            b"[1",
            b"[",
            b"{",
        ];
        for s in cases {
            agrees(s);
        }
    }

    #[test]
    fn every_token_at_every_block_offset() {
        let tokens: [&[u8]; 16] = [
            b"\"\\\\\"",
            b"\"a\\\"b\"",
            b"\"\\u00e9\"",
            b"\"\\u0g\"",
            b"-12.5e-3",
            b"true",
            b"null",
            b"false",
            b"{\"k\":[]}",
            b"\"\x01\"",
            b"\"\\q\"",
            b"tru",
            b"1 2",
            b"\"x\"\"y\"",
            b"\"a\\\\\\\\\\\"\"",
            b"{}",
        ];
        for t in tokens {
            for pad in 0..140 {
                for shape in 0..3 {
                    let mut s = Vec::new();
                    match shape {
                        0 => {
                            s.extend_from_slice(b"[\"");
                            s.extend(std::iter::repeat_n(b'x', pad));
                            s.extend_from_slice(b"\",");
                            s.extend_from_slice(t);
                            s.extend_from_slice(b",3]");
                        }
                        1 => {
                            s.extend_from_slice(b"{\"k\":");
                            s.extend(std::iter::repeat_n(b' ', pad));
                            s.extend_from_slice(t);
                            s.push(b'}');
                        }
                        _ => {
                            s.extend_from_slice(b"[");
                            s.extend(std::iter::repeat_n(b"1,".as_slice(), pad / 2).flatten());
                            s.extend_from_slice(t);
                            s.push(b']');
                        }
                    }
                    agrees(&s);
                    // Cut short at every length near the token.
                    for cut in s.len().saturating_sub(t.len() + 3)..s.len() {
                        agrees(&s[..cut]);
                    }
                }
            }
        }
    }

    #[test]
    fn long_backslash_runs_and_deep_nesting() {
        for run in 0..150 {
            for pad in [0, 1, 30, 61, 62, 63, 64, 65] {
                let mut s = b"[\"".to_vec();
                s.extend(std::iter::repeat_n(b'y', pad));
                s.extend(std::iter::repeat_n(b'\\', run));
                s.extend_from_slice(b"\",\"tail\"]");
                agrees(&s);
            }
        }
        for d in [1, 2, 63, 64, 65, 100, 200] {
            let s = format!("{}1{}", "[{\"a\":".repeat(d), "}]".repeat(d));
            agrees(s.as_bytes());
            let s = format!("{}{}", "[".repeat(d), "]".repeat(d));
            agrees(s.as_bytes());
        }
    }

    #[test]
    fn random_values() {
        let alphabet = b"[]{}\",:\\ \tunl01e-.a\x01\r\n\xff";
        let words: [&[u8]; 10] = [
            b"{\"a\":",
            b"[",
            b"]",
            b"}",
            b",",
            b"\"s\\\"t\"",
            b"12",
            b"true",
            b"\"x\"",
            b"null",
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..60_000 {
            let len = (next() % 200) as usize;
            let mut s = vec![if round % 2 == 0 { b'[' } else { b'{' }];
            for _ in 0..len {
                let r = next();
                if r % 3 == 0 {
                    s.push(alphabet[(r >> 8) as usize % alphabet.len()]);
                } else {
                    s.extend_from_slice(words[(r >> 8) as usize % words.len()]);
                }
            }
            agrees(&s);
        }
    }

    #[test]
    #[cfg(feature = "generator")]
    fn valid_generated_values_are_answered() {
        // Real message bodies from the generator: the fast walker must answer on each.
        let mut spec = crate::generator::SessionSpec::new(5, 2 << 20);
        spec.mix = crate::generator::Mix::SmallEntries;
        let mut out = Vec::new();
        crate::generator::write_session(&spec, &mut out).expect("generate");
        let mut n = 0;
        for line in out.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            assert!(crate::simd::skip_container_kernel("best", WS_LINE, line, 0) == Some(line.len()));
            n += 1;
        }
        assert!(n > 1000);
    }
}
