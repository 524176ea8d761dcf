//! The byte-level JSON engine: everything that looks at JSON bytes, from CPU kernels up to
//! the full decoder, and nothing that knows about sessions.
//!
//! Bottom to top (each file imports only from those above it in this list):
//! - [`ws`] (below): the three white-space flavours, as types;
//! - `lex`: numbers, control bytes, hex digits;
//! - `kernel`: 64-byte blocks to bit masks (SWAR, SSE2, AVX2, AVX-512): CPU `unsafe` only;
//! - `string`: strings skipped and decoded block by block, short strings, the naive twins;
//! - `structural`: arrays and objects skipped through a structural index of their blocks;
//! - `dispatch`: the one place that asks the CPU what it has, decided once per process;
//! - `walk`: THE exact walker, generic over white space, that every reader uses;
//! - `value`: the obvious decoder (`JSON.parse` into [`Value`]), twin of the walkers;
//! - `stringify`: `JSON.stringify`;
//! - `verbatim`: whether a text is exactly what `JSON.stringify` writes for its parse
//!   (then it can be copied to the output as it is);
//! - `utf16`: a string's JavaScript length, counted on its JSON without decoding.
//!
//! Fast paths answer only when they are sure and defer to the exact walk otherwise; the
//! `twins` tests hold each of them against its slow twin for every kernel and flavour.

use std::fmt;

pub(crate) mod dispatch;
pub(crate) mod kernel;
mod lex;
pub(crate) mod string;
pub(crate) mod stringify;
mod structural;
#[cfg(test)]
mod twins;
pub(crate) mod utf16;
pub(crate) mod value;
pub(crate) mod verbatim;
pub(crate) mod walk;

pub(crate) use dispatch::with_avx2_bmi;
pub use value::{Object, Value};

/// The JSON kind of a recorded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string; `escaped` is true when it contains a backslash escape.
    String {
        /// Whether the raw string holds escapes (then it must be decoded before use).
        escaped: bool,
    },
    /// A number.
    Number,
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
    /// An object.
    Object,
    /// An array.
    Array,
}

/// Where a value sits in its text: `[start, end)` byte offsets, with its JSON kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Offset of the value's first byte (the opening quote for a string).
    pub start: usize,
    /// Offset just past the value.
    pub end: usize,
    /// Its JSON kind.
    pub kind: Kind,
}

impl Field {
    /// The raw JSON text of the value within `line`.
    pub fn raw<'a>(&self, line: &'a [u8]) -> &'a [u8] {
        &line[self.start..self.end]
    }
}

/// Why a text is not JSON, with the byte offset (within the text) where parsing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset within the parsed text.
    pub offset: usize,
    /// What was wrong.
    pub reason: &'static str,
}

impl SyntaxError {
    #[inline]
    pub(crate) const fn new(offset: usize, reason: &'static str) -> SyntaxError {
        SyntaxError { offset, reason }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl std::error::Error for SyntaxError {}

/// JSON white space in the three flavours the crate reads, as types: one exact walker and
/// one structural walker serve all three, monomorphised, with no flag passed at run time.
pub(crate) mod ws {
    /// A white-space flavour: space and tab always; `\r` and `\n` as the flavour says.
    pub(crate) trait WhiteSpace: 'static {
        /// Whether `\r` is white space.
        const CR: bool;
        /// Whether `\n` is white space.
        const LF: bool;
        /// Whether `c` is white space in this flavour.
        #[inline(always)]
        fn is_ws(c: u8) -> bool {
            c == b' ' || c == b'\t' || (Self::CR && c == b'\r') || (Self::LF && c == b'\n')
        }
    }

    /// Space and tab only: a line as pi's `readline` gives it to the listing, where `\r`
    /// and `\n` end lines.
    pub(crate) struct Blank;
    /// Space, tab and `\r`: a line of the index (`\n` ended it; `\r` stays inside, and
    /// `JSON.parse` skips it).
    pub(crate) struct Line;
    /// Space, tab, `\r` and `\n`: a whole JSON text (`JSON.parse`).
    pub(crate) struct Json;

    impl WhiteSpace for Blank {
        const CR: bool = false;
        const LF: bool = false;
    }
    impl WhiteSpace for Line {
        const CR: bool = true;
        const LF: bool = false;
    }
    impl WhiteSpace for Json {
        const CR: bool = true;
        const LF: bool = true;
    }
}
