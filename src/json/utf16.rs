//! The length of a JSON string's text in UTF-16 code units (JavaScript's `length`),
//! counted on its JSON without decoding it: the `text_len` of the export's rows.

use super::dispatch::{KernelTask, with_kernel};
use super::kernel::{ExtraMasks, Kernel};
use super::string::escaped_mask;

/// The length in UTF-16 code units (JavaScript's `length`) of the string whose JSON text
/// is `raw`, quotes included, counted on the JSON without decoding it; `None` when its
/// bytes are not valid UTF-8 (the caller decodes, as the decoder replaces them). `raw`
/// must be a string [`decode_string`] accepts; for other bytes the count is some number.
///
/// 64 bytes at a time through the kernels' masks: each byte that starts a character is
/// one unit (those of four bytes two); each escape takes back the backslash, and a `\u`
/// escape its four hex digits too (`\uXXXX` is one unit, half a pair or a lone
/// surrogate, as in JavaScript). Escapes are found with the skipper's carry trick, so a
/// dense text (code, `\n` every line) costs no more than a plain one.
pub(crate) fn utf16_len_json(raw: &[u8]) -> Option<usize> {
    with_kernel(Utf16Len(raw))
}

/// [`utf16_len_json`] with mask kernel `isa` (for the tests that run every kernel).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn utf16_len_json_kernel(isa: super::dispatch::Isa, raw: &[u8]) -> Option<usize> {
    super::dispatch::with_kernel_isa(isa, Utf16Len(raw))
}

/// The slow twin of [`utf16_len_json`]: decode, count.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn utf16_len_json_naive(raw: &[u8]) -> Option<usize> {
    let body = raw.get(1..raw.len().checked_sub(1)?)?;
    std::str::from_utf8(body).ok()?;
    Some(super::string::decode_string_naive(raw, 0).ok()?.0.utf16_len())
}

struct Utf16Len<'a>(&'a [u8]);

impl KernelTask for Utf16Len<'_> {
    type Out = Option<usize>;
    #[inline(always)]
    fn run<K: Kernel + ExtraMasks>(self) -> Option<usize> {
        let body = self.0.get(1..self.0.len().checked_sub(1)?)?;
        let (mut units, mut taken) = (0usize, 0usize);
        let (mut carry, mut high) = (0u64, false);
        let mut buf: [u8; 64];
        for at in (0..body.len()).step_by(64) {
            let rest = &body[at..];
            let block: &[u8; 64] = if rest.len() >= 64 {
                rest[..64].try_into().expect("64 bytes")
            } else {
                // The tail, padded with ASCII that is no backslash and no `u`: one unit a
                // byte, taken back below.
                buf = [b' '; 64];
                buf[..rest.len()].copy_from_slice(rest);
                taken += 64 - rest.len();
                &buf
            };
            let h = K::high(block);
            units += if h == 0 {
                64
            } else {
                high = true;
                // Leads and ASCII are one unit, leads of four bytes two.
                block
                    .iter()
                    .map(|&x| usize::from((x as i8) >= -0x40) + usize::from(x >= 0xF0))
                    .sum()
            };
            let backslash = K::byte(block, b'\\');
            if backslash | carry != 0 {
                let escaped = escaped_mask(backslash, &mut carry);
                let u = K::byte(block, b'u');
                taken += (escaped.count_ones() + 4 * (escaped & u).count_ones()) as usize;
            }
        }
        if high && simdutf8::basic::from_utf8(body).is_err() {
            return None;
        }
        Some(units.saturating_sub(taken))
    }
}
