//! Skipping a whole array or object through a structural index of its blocks.
//!
//! The descent walker ([`super::walk`]) spends ~10 ns per token:
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

use super::kernel::Kernel;
use super::lex::number_end;
use super::string::{escaped_mask, short_string_end, skip_string_with};
use super::ws::WhiteSpace;
use std::marker::PhantomData;

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
fn ends_scalar<W: WhiteSpace>(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'{' | b'}' | b'[' | b']' | b':' | b',' | b'"')
        || (W::CR && c == b'\r')
        || (W::LF && c == b'\n')
}

/// [`Cursor::state`] bits: the carries from one block into the next, and whether the
/// current block has a problem. One word instead of four keeps the walker's own state
/// (position, bit stack, depth) in registers.
const ESC_CARRY: u64 = 1;
const SCALAR_CARRY: u64 = 2;
const IN_STRING: u64 = 4;
const BAD: u64 = 8;

/// The positions to visit, block by block: structural characters and opening quotes
/// outside strings, and the first byte of every run of scalar bytes (numbers, literals,
/// garbage), in order.
struct Cursor<'a, K, W> {
    b: &'a [u8],
    /// Where the current block starts.
    pos: usize,
    /// Positions of the current block not visited yet.
    visit: u64,
    /// [`ESC_CARRY`]: the previous block ended in an odd run of backslashes;
    /// [`SCALAR_CARRY`]: in a run of scalar bytes; [`IN_STRING`]: inside a string;
    /// [`BAD`]: the current block has a problem (a control byte in a string, a backslash
    /// outside one, a bad escape), and nothing from it on is visited.
    state: u64,
    kernel: PhantomData<(K, W)>,
}

impl<'a, K: Kernel, W: WhiteSpace> Cursor<'a, K, W> {
    #[inline(always)]
    fn new(b: &'a [u8], pos: usize) -> Self {
        let mut c = Cursor {
            b,
            pos,
            visit: 0,
            state: 0,
            kernel: PhantomData,
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
        let mut esc_carry = self.state & ESC_CARRY;
        let escaped = escaped_mask(c.masks.backslash, &mut esc_carry);
        let quote = c.masks.quote & !escaped;
        // From an opening quote up to (not including) its closing quote.
        let inside = prefix_xor(quote) ^ 0u64.wrapping_sub(self.state >> 2 & 1);
        let mut ws = c.blank;
        if W::CR {
            ws |= c.cr;
        }
        if W::LF {
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
        let starts = scalar & !((scalar << 1) | (self.state & SCALAR_CARRY) >> 1);
        self.state = esc_carry | (scalar >> 63) << 1 | (inside >> 63) << 2 | u64::from(bad != 0) << 3;
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
            if self.state & BAD != 0 {
                return None;
            }
            self.pos += 64;
            if self.pos >= self.b.len() {
                return None;
            }
            self.fill();
            // A block wholly inside a string (a long one: it opened in an earlier block):
            // the string kernel passes the rest of it far faster, as it looks at quotes,
            // backslashes and control bytes only. Not when the next byte is escaped (the
            // kernel would take it as plain); the walk then goes on block by block.
            if self.visit == 0 && self.state == IN_STRING && self.pos + 64 < self.b.len() {
                let (end, _) = skip_string_with::<K>(self.b, self.pos + 63).ok()?;
                if end >= self.b.len() {
                    return None;
                }
                self.pos = end;
                self.state = 0;
                self.fill();
            }
        }
        let p = self.pos + self.visit.trailing_zeros() as usize;
        self.visit &= self.visit - 1;
        Some((p, self.b[p]))
    }

    /// A member of an object starts with byte `ch` (the position `next` gave last): its
    /// key, then `:`. Returns the
    /// position and byte where its value starts.
    #[inline(always)]
    fn member(&mut self, ch: u8) -> Option<(usize, u8)> {
        if ch != b'"' {
            return None;
        }
        if self.next()?.1 != b':' {
            return None;
        }
        self.next()
    }
}

/// Skip the array or object whose opening bracket is at `i`, with block classes from
/// kernel `K` and white space `W` ([`super::ws`]). `Some(end)`
/// (past the closing bracket) only when the value is valid; `None` when it is not or the
/// walker cannot tell (see the module documentation).
///
/// The grammar is the shape of the code: a value, then (inside a container) a comma and
/// the next member or a closing bracket, with a bit stack of container kinds.
#[inline(always)]
pub(crate) fn skip_container_with<K: Kernel, W: WhiteSpace>(b: &[u8], i: usize) -> Option<usize> {
    debug_assert!(matches!(b.get(i), Some(b'{' | b'[')));
    walk_with::<K, W, false>(b, i, b"")
}

/// Skip the rest of an object from `i`, just past one of its member values (the
/// members before it walked by the caller): `Some(end)` past its closing brace only when
/// the rest is valid and no member after `i` is named `deny` or has a key the walker
/// cannot compare without decoding (escaped, or longer than a short string). The index
/// reads a message's first member, its `role`, and skips the rest at once; a later
/// `role` would win in `JSON.parse`, so one sends it back to the exact walk.
#[inline(always)]
pub(crate) fn skip_object_tail_with<K: Kernel, W: WhiteSpace>(b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    if i >= b.len() {
        return None;
    }
    walk_with::<K, W, true>(b, i, deny)
}

/// The automaton of [`skip_container_with`]; with `TAIL`, that of
/// [`skip_object_tail_with`]: it starts after a value inside an object and checks the
/// keys of that object's later members.
#[inline(always)]
fn walk_with<K: Kernel, W: WhiteSpace, const TAIL: bool>(b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    let mut c = Cursor::<K, W>::new(b, i);
    // Bit 0 is set when the innermost container is an object, bit 1 for the one around
    // it, and so on (as deep as `depth`).
    let mut stack = u64::from(TAIL);
    let mut depth = u32::from(TAIL);
    // The tail starts as if a string had just been read at `i`: the string arm is then a
    // no-op (no string is open), and the walk goes on after a value.
    // (A string the first block opens is visited, unless a problem comes first: then
    // the walk would stop there anyway.)
    if TAIL && c.visit == 0 && c.state & IN_STRING != 0 {
        return None;
    }
    let (mut p, mut ch) = if TAIL { (i, b'"') } else { c.next()? };
    'value: loop {
        // A value starts at p.
        match ch {
            b'{' | b'[' => {
                if depth == 64 {
                    return None;
                }
                let obj = ch == b'{';
                stack = stack << 1 | u64::from(obj);
                depth += 1;
                (p, ch) = c.next()?;
                if ch == if obj { b'}' } else { b']' } {
                    stack >>= 1;
                    depth -= 1;
                } else if obj {
                    (p, ch) = c.member(ch)?;
                    continue 'value;
                } else {
                    continue 'value;
                }
            }
            // A string was read whole by the block masks.
            b'"' => {}
            _ => {
                let end = match ch {
                    b't' => b[p..].starts_with(b"true").then_some(p + 4)?,
                    b'f' => b[p..].starts_with(b"false").then_some(p + 5)?,
                    b'n' => b[p..].starts_with(b"null").then_some(p + 4)?,
                    b'-' | b'0'..=b'9' => number_end(b, p).ok()?,
                    _ => return None,
                };
                // The scalar must fill its run of scalar bytes.
                if !b.get(end).is_some_and(|&c| ends_scalar::<W>(c)) {
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
            let obj = stack & 1 == 1;
            match ch {
                b',' => {
                    (p, ch) = c.next()?;
                    if obj {
                        if TAIL && depth == 1 {
                            let key = short_string_end(b, p).map(|end| &b[p + 1..end - 1]);
                            if key.is_none_or(|k| k == deny) {
                                return None;
                            }
                        }
                        (p, ch) = c.member(ch)?;
                    }
                    continue 'value;
                }
                b'}' if obj => {
                    stack >>= 1;
                    depth -= 1;
                }
                b']' if !obj => {
                    stack >>= 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}
