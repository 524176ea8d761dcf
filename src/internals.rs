//! Plumbing for the fuzz targets, benches and property tests (feature `internals`): the
//! per-line scanner, index builders, every string and structural kernel by name, and the
//! slow twins they are held against. Not part of the stable API: names and signatures
//! follow the code.

pub use crate::index::line::{Fields, Line, scan_line, scan_object_line};
pub use crate::index::{build, build_with};
pub use crate::js::string::is_js_blank;
pub use crate::json::dispatch::Isa;
pub use crate::json::string::skip_string_naive;
pub use crate::json::walk::max_depth;
pub use crate::json::{Field, Kind};
pub use crate::session::context_twin::{EagerContext, compare_with_twin};

use crate::json::ws;

/// A white-space flavour of the JSON walkers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhiteSpace {
    /// Space and tab (the listing's readline lines).
    Blank,
    /// Space, tab and `\r` (an index line).
    Line,
    /// Space, tab, `\r` and `\n` (`JSON.parse`).
    Json,
}

impl WhiteSpace {
    /// All three.
    pub const ALL: [WhiteSpace; 3] = [WhiteSpace::Blank, WhiteSpace::Line, WhiteSpace::Json];
}

/// Every mask kernel this CPU can run.
pub fn kernels() -> Vec<Isa> {
    crate::json::dispatch::kernels()
}

/// Skip the string whose quote is at `i` with kernel `isa`.
pub fn skip_string_kernel(isa: Isa, b: &[u8], i: usize) -> Result<(usize, bool), crate::json::SyntaxError> {
    crate::json::dispatch::skip_string_kernel(isa, b, i)
}

/// Decode the string whose quote is at `i` with kernel `isa` (the block-wise decoder):
/// its WTF-8 bytes, borrowed exactly when it has no escape and valid UTF-8, and the offset
/// past the closing quote.
pub fn decode_string_kernel(
    isa: Isa,
    b: &[u8],
    i: usize,
) -> Result<(std::borrow::Cow<'_, [u8]>, usize), crate::json::SyntaxError> {
    crate::json::dispatch::decode_string_kernel(isa, b, i).map(|(s, end)| (s.0, end))
}

/// The length in UTF-16 units of the JSON string `raw` (quotes included), counted on
/// the JSON with kernel `isa`; `None` for invalid UTF-8.
pub fn utf16_len_json_kernel(isa: Isa, raw: &[u8]) -> Option<usize> {
    crate::json::utf16::utf16_len_json_kernel(isa, raw)
}

/// The twin of [`utf16_len_json_kernel`]: decode, count.
pub fn utf16_len_json_naive(raw: &[u8]) -> Option<usize> {
    crate::json::utf16::utf16_len_json_naive(raw)
}

/// The obvious string decoder, twin of [`decode_string_kernel`].
pub fn decode_string_naive(
    b: &[u8],
    i: usize,
) -> Result<(std::borrow::Cow<'_, [u8]>, usize), crate::json::SyntaxError> {
    crate::json::string::decode_string_naive(b, i).map(|(s, end)| (s.0, end))
}

/// `Value::parse_deferring` with each deferred string decoded in place (it must equal
/// `Value::parse`).
pub fn parse_deferring_resolved(text: &[u8], min: usize) -> Result<crate::Value<'_>, crate::json::SyntaxError> {
    crate::json::value::parse_deferring_resolved(text, min)
}

/// `Value::parse` with the obvious string decoder.
pub fn parse_naive(text: &[u8]) -> Result<crate::Value<'_>, crate::json::SyntaxError> {
    crate::json::value::parse_naive(text)
}

/// The structural walker over the container at `i`: the AVX-512 build for
/// [`Isa::Avx512`] (when the CPU has it), the portable classes otherwise. `None` when it
/// cannot vouch for the value.
pub fn skip_container_kernel(isa: Isa, w: WhiteSpace, b: &[u8], i: usize) -> Option<usize> {
    use crate::json::dispatch::skip_container_kernel as k;
    match w {
        WhiteSpace::Blank => k::<ws::Blank>(isa, b, i),
        WhiteSpace::Line => k::<ws::Line>(isa, b, i),
        WhiteSpace::Json => k::<ws::Json>(isa, b, i),
    }
}

/// The exact (descent) walk over the container at `i`, compiled as the index and listing
/// run it: the twin of [`skip_container_kernel`]. `None` for anything but a valid container.
pub fn skip_container_exact(w: WhiteSpace, b: &[u8], i: usize) -> Option<usize> {
    use crate::json::walk::skip_container_exact_ws as k;
    match w {
        WhiteSpace::Blank => k::<ws::Blank>(b, i),
        WhiteSpace::Line => k::<ws::Line>(b, i),
        WhiteSpace::Json => k::<ws::Json>(b, i),
    }
}

/// WTF-8 bytes as code points (surrogates included).
pub fn wtf8_code_points(b: &[u8]) -> Vec<u32> {
    crate::js::string::code_points(b).collect()
}

/// What the listing's line walker records for one entry line (the spans into the buffer
/// it was given), for the twin tests: see [`listing_walk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkedLine {
    /// Offset of the line's terminator (`\n`, `\r`, or the end of the buffer).
    pub term: usize,
    /// The top-level `type`.
    pub ty: Option<Field>,
    /// The top-level `timestamp`.
    pub timestamp: Option<Field>,
    /// The top-level `name`.
    pub name: Option<Field>,
    /// The kind of the top-level `message`, when present.
    pub message: Option<Kind>,
    /// In an object `message`: `role`.
    pub role: Option<Field>,
    /// In an object `message`: `timestamp`.
    pub message_timestamp: Option<Field>,
    /// In an object `message`: `content`.
    pub content: Option<Field>,
    /// When `content` is an array: its elements.
    pub blocks: Vec<WalkedBlock>,
}

/// One element of a content array as the listing's walker records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkedBlock {
    /// `null`.
    Null,
    /// Neither an object nor null.
    Other,
    /// An object, with its `type` and `text`.
    Obj {
        /// `type`.
        ty: Option<Field>,
        /// `text`.
        text: Option<Field>,
    },
}

/// The listing's recording walk over the entry line whose `{` is at `first` in `buf` (the
/// walk ends the line at `\n` or `\r`, as pi's readline does): what it recorded, or the
/// error that makes the listing skip the line.
pub fn listing_walk(buf: &[u8], first: usize) -> Result<WalkedLine, crate::json::SyntaxError> {
    use crate::listing::line::{Block, Span, scan_entry};
    let field = |s: Span| {
        s.kind.map(|kind| Field {
            start: s.start,
            end: s.end,
            kind,
        })
    };
    let mut blocks = Vec::new();
    let (l, term) = crate::json::with_avx2_bmi(|| scan_entry(buf, first, &mut blocks))?;
    let m = l.msg;
    let object = m.present == Some(Kind::Object);
    let inner = |s: Span| if object { field(s) } else { None };
    let blocks = if object && m.content.kind == Some(Kind::Array) {
        blocks[m.blocks_from..]
            .iter()
            .map(|b| match *b {
                Block::Null => WalkedBlock::Null,
                Block::Other => WalkedBlock::Other,
                Block::Obj { ty, text } => WalkedBlock::Obj {
                    ty: field(ty),
                    text: field(text),
                },
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(WalkedLine {
        term,
        ty: field(l.ty),
        timestamp: field(l.timestamp),
        name: field(l.name),
        message: m.present,
        role: inner(m.role),
        message_timestamp: inner(m.timestamp),
        content: inner(m.content),
        blocks,
    })
}

/// Whether `raw` is exactly `JSON.stringify(JSON.parse(raw))`, with the best kernel.
pub fn is_stringify_form(raw: &[u8]) -> bool {
    crate::json::verbatim::is_stringify_form(raw)
}

/// [`is_stringify_form`] with mask kernel `isa`.
pub fn is_stringify_form_kernel(isa: Isa, raw: &[u8]) -> bool {
    crate::json::verbatim::is_stringify_form_kernel(isa, raw)
}

/// The slow twin of [`is_stringify_form`]: parse, stringify, compare.
pub fn is_stringify_form_naive(raw: &[u8]) -> bool {
    crate::json::verbatim::is_stringify_form_naive(raw)
}

/// The structural walk over the rest of the object at `start` from `i` (just past one of
/// its member values), refusing a later member named `deny` (see
/// `json::structural::skip_object_tail_with`), with kernel `isa`, in an index line's white space.
pub fn skip_object_tail_kernel(isa: Isa, b: &[u8], i: usize, deny: &[u8]) -> Option<usize> {
    crate::json::dispatch::skip_object_tail_kernel::<ws::Line>(isa, b, i, deny)
}

/// The twin of [`skip_object_tail_kernel`]: the exact walk of the whole object at
/// `start`, refusing where the structural walk must.
pub fn skip_object_tail_exact(b: &[u8], start: usize, i: usize, deny: &[u8]) -> Option<usize> {
    crate::json::walk::skip_object_tail_exact::<ws::Line>(b, start, i, deny)
}

/// Where the value of the first member of the object at `start` ends (an index line's
/// white space), if the object starts with a valid member: where the tail walk can start.
pub fn first_member_value_end(b: &[u8], start: usize) -> Option<usize> {
    use crate::json::walk::{skip_string, skip_value, skip_ws};
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let k = skip_ws::<ws::Line>(b, start + 1);
    if b.get(k) != Some(&b'"') {
        return None;
    }
    let (kend, _) = skip_string(b, k).ok()?;
    let c = skip_ws::<ws::Line>(b, kend);
    if b.get(c) != Some(&b':') {
        return None;
    }
    let v = skip_ws::<ws::Line>(b, c + 1);
    skip_value::<ws::Line>(b, v).ok().map(|(e, _)| e)
}

/// [`crate::Session::write_branch_jsonl`] (`verbatim`: stored lines in stringify form
/// copied) or its slow twin (`verbatim` false: every line decoded and stringified).
///
/// # Errors
/// As [`crate::Session::write_branch_jsonl`].
pub fn write_branch_jsonl_with(
    s: &crate::Session,
    branch: &[crate::EntryPos],
    timestamp: &str,
    env: &crate::Env,
    out: &mut dyn std::io::Write,
    verbatim: bool,
) -> crate::Result<()> {
    s.branch_jsonl(branch, timestamp, env, out, verbatim)
}

/// The listing cache's append path against a listing of the whole file: `bytes` listed
/// when they ended at `cut`, then carried on to their end, must list as `bytes` read at
/// once (`Err` says how they differ). See `listing/checks.rs`.
pub fn listing_carry_twin(bytes: &[u8], cut: usize, skip_text: bool) -> Result<(), String> {
    crate::listing::checks::carry_twin(bytes, cut, skip_text)
}

/// `bytes` decoded as a listing cache file (never a panic); entries that decode survive
/// being encoded again. `Ok(true)` when they decoded.
pub fn listing_cache_roundtrip(bytes: &[u8]) -> Result<bool, String> {
    crate::listing::checks::cache_file_roundtrip(bytes)
}
