//! One pass over a session file for its usage: the header (the first line pi keeps), then
//! only the lines that can hold a `usage` member, found in one vector pass over the raw bytes.
//!
//! A member named `usage` is written `"usage"` in the raw line unless one of its letters
//! is a `\u` escape (`\u0075` for `u`, ...: all `\u006x` or `\u007x`); so a line with
//! neither `usage"` nor such an escape holds no usage, and is neither checked nor walked.
//! A candidate line gets pi's line test (`index::line::scan_line`, which also finds its
//! `type`, `id`, `timestamp`, `message` and role), then the walk of `extract.rs`. A
//! version-1 file (no ids: pi derives them on load) is opened whole instead, as is any
//! file through [`super::records_of`] in the slow twin's check.

use super::FileUsage;
use super::extract::record_of_raw_line;
use crate::index::line::{Line, scan_line};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::session::{Migration, OpenOptions, Session, V1Ids};

/// What the header of a session says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Header {
    /// `new Date(timestamp).getTime()` (NaN when invalid).
    pub(crate) created: f64,
    /// `cwd` when it is a string, else `""`.
    pub(crate) cwd: JsStr<'static>,
    /// `id`.
    pub(crate) id: Option<Value<'static>>,
    /// `parentSession`.
    pub(crate) parent: Option<Value<'static>>,
}

/// A file's scan: not a session (its first kept line is no header), or its header and
/// records.
pub(crate) enum Scan {
    NotSession,
    Session(Header, FileUsage),
}

/// The line of `b` from `start` to its `\n` (excluded), and where the next one starts.
fn line_at(b: &[u8], start: usize) -> (&[u8], usize) {
    match memchr::memchr(b'\n', &b[start..]) {
        Some(k) => (&b[start..start + k], start + k + 1),
        None => (&b[start..], b.len()),
    }
}

/// Where `b[i..]` can begin a `usage` key: `usage"`, or a `\u00` escape of a letter
/// `6x`/`7x` (every letter of the key is one of those).
#[inline(always)]
fn candidate_at(b: &[u8], i: usize) -> bool {
    let s = &b[i..];
    s.starts_with(b"usage\"") || (s.starts_with(b"\\u00") && matches!(s.get(4), Some(b'6' | b'7')))
}

/// The first [`candidate_at`] at or after `from`, in one pass over the bytes: per
/// 64-byte block, the byte masks of `u` at +0, `e` at +4 and `"` at +5 (the key), and of
/// `\` at +0, `u` at +1 and `6`/`7` at +4 (the escape), each a compare on an unaligned
/// block; the few positions left are checked whole. (Two `memmem` searches, one per
/// needle, read the file twice, and the escape's needle `\u00` alone stops at every
/// `\u001b` of a terminal's output.)
struct FindCandidate<'b> {
    b: &'b [u8],
    from: usize,
}

impl crate::json::dispatch::KernelTask for FindCandidate<'_> {
    type Out = Option<usize>;
    #[inline(always)]
    fn run<K: crate::json::kernel::Kernel + crate::json::kernel::ExtraMasks>(self) -> Option<usize> {
        let b = self.b;
        let block = |at: usize| -> &[u8; 64] { b[at..at + 64].try_into().expect("64 bytes") };
        let mut p = self.from;
        // Each block reads 69 bytes: 64 positions and the 5 after the last.
        while p + 69 <= b.len() {
            let (b0, b1, b4, b5) = (block(p), block(p + 1), block(p + 4), block(p + 5));
            let key = K::byte(b0, b'u') & K::byte(b4, b'e') & K::byte(b5, b'"');
            let esc = K::byte(b0, b'\\') & K::byte(b1, b'u') & (K::byte(b4, b'6') | K::byte(b4, b'7'));
            let mut m = key | esc;
            while m != 0 {
                let i = p + m.trailing_zeros() as usize;
                if candidate_at(b, i) {
                    return Some(i);
                }
                m &= m - 1;
            }
            p += 64;
        }
        (p..b.len()).find(|&i| candidate_at(b, i))
    }
}

/// The first [`candidate_at`] at or after `from`, with the best kernel this CPU has.
fn find_candidate(b: &[u8], from: usize) -> Option<usize> {
    crate::json::dispatch::with_kernel(FindCandidate { b, from })
}

/// The lines that may hold a `usage` member, in order: those with a [`candidate_at`].
struct Candidates<'b> {
    b: &'b [u8],
    /// The next candidate at or after where the scan stands (`None`: no more).
    next: Option<usize>,
}

impl<'b> Candidates<'b> {
    fn new(b: &'b [u8], at: usize) -> Candidates<'b> {
        Candidates {
            b,
            next: find_candidate(b, at),
        }
    }

    /// The start of the next candidate line at or after `at` (a line start).
    fn next(&mut self, at: usize) -> Option<usize> {
        if self.next.is_some_and(|k| k < at) {
            self.next = find_candidate(self.b, at);
        }
        let p = self.next?;
        Some(memchr::memrchr(b'\n', &self.b[at..p]).map_or(at, |i| at + i + 1))
    }
}

/// Scan a session file's bytes.
pub(crate) fn scan(bytes: &[u8]) -> crate::error::Result<Scan> {
    // The first line pi keeps (not blank, parses, truthy).
    let mut at = 0;
    let header_end = loop {
        if at >= bytes.len() {
            return Ok(Scan::NotSession);
        }
        let (line, next) = line_at(bytes, at);
        match scan_line(line) {
            Line::Blank | Line::Malformed(_) | Line::Falsy => at = next,
            Line::NonObject | Line::Object(_) => break next,
        }
    };
    // The header, read as `Session` reads it.
    let opts = OpenOptions {
        read_mode: crate::source::ReadMode::Read,
        chunk: None,
        release_pages: false,
        v1_ids: V1Ids::Stable,
    };
    let Ok(head) = Session::from_source(crate::source::Source::from_bytes(bytes[..header_end].to_vec()), opts) else {
        return Ok(Scan::NotSession);
    };
    let Ok(h) = head.header() else {
        return Ok(Scan::NotSession);
    };
    let header = Header {
        created: crate::json::value::js_date_time(h.get("timestamp")),
        cwd: match h.get("cwd") {
            Some(Value::String(s)) => s.clone().into_owned(),
            _ => JsStr::default(),
        },
        id: h.get("id").cloned().map(Value::into_owned),
        parent: h.get("parentSession").cloned().map(Value::into_owned),
    };
    if head.migration() == Migration::FromV1 {
        // Ids are derived from the whole file.
        let s = Session::from_source(crate::source::Source::from_bytes(bytes.to_vec()), opts)?;
        let u = super::records_of(&s, header.created)?;
        return Ok(Scan::Session(header, u));
    }
    let mut out = FileUsage::default();
    let mut at = header_end;
    let mut candidates = Candidates::new(bytes, at);
    while let Some(start) = candidates.next(at) {
        let (line, next) = line_at(bytes, start);
        at = next;
        // A line that is no entry pi keeps gives nothing.
        record_of_raw_line(line, header.created, &mut out);
    }
    // Kept until the report is made: without the slack of its growth.
    out.records.shrink_to_fit();
    Ok(Scan::Session(header, out))
}

/// A session's [`crate::listing::SessionInfo`] as far as its header goes (the rest is not read: no name,
/// counts or texts; `modified` is `created`, `bytes` 0).
pub(crate) fn info(path: &std::path::Path, h: Header) -> crate::listing::SessionInfo {
    crate::listing::SessionInfo {
        path: path.to_path_buf(),
        id: h.id,
        cwd: h.cwd,
        name: None,
        parent_session_path: h.parent,
        created: h.created,
        modified: h.created,
        message_count: 0,
        first_message: crate::js::string::JsStr::default(),
        all_messages_text: crate::js::string::JsStr::default(),
        bytes: 0,
        text_ref: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{FindCandidate, candidate_at};
    use crate::json::dispatch::{kernels, with_kernel_isa};

    /// The slow twin: every position in turn.
    fn naive(b: &[u8], from: usize) -> Option<usize> {
        (from..b.len()).find(|&i| candidate_at(b, i))
    }

    fn check(b: &[u8]) {
        for isa in kernels() {
            for from in 0..=b.len() {
                assert_eq!(
                    with_kernel_isa(isa, FindCandidate { b, from }),
                    naive(b, from),
                    "{isa:?} from {from} in {:?}",
                    String::from_utf8_lossy(b)
                );
            }
        }
    }

    #[test]
    fn every_kernel_finds_what_the_naive_scan_finds() {
        // Needles at every offset of a block and across block ends, near misses, ends.
        for at in [0, 1, 58, 59, 60, 63, 64, 65, 127, 128, 130] {
            for needle in [
                &b"usage\""[..],
                b"\\u0075",
                b"\\u006",
                b"\\u007",
                b"usage",
                b"\\u0060",
                b"\\u001b",
                b"usag\"",
            ] {
                let mut b = vec![b'x'; 200];
                b[at..at + needle.len()].copy_from_slice(needle);
                check(&b);
                check(&b[..at + needle.len()]);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]
        #[test]
        fn the_finder_equals_the_naive_scan(parts in proptest::collection::vec(0usize..10, 0..120)) {
            const PIECES: [&[u8]; 10] = [b"usage\"", b"\\u00", b"6", b"7", b"u", b"e\"", b"\\", b"sage\"", b"x", b"\n"];
            let b: Vec<u8> = parts.iter().flat_map(|&k| PIECES[k].iter().copied()).collect();
            check(&b);
        }
    }
}
