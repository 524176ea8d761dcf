//! One pass over a session file for its usage: the header (the first line pi keeps), then
//! only the lines that can hold a `usage` member, found with `memmem` over the raw bytes.
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

/// The lines that may hold a `usage` member, in order: those with `usage"` or a `\u00`
/// escape of `6x`/`7x`. Each of the two searches is resumed where it stopped (only when
/// the scan has passed its last find), so the file is searched once.
struct Candidates<'b> {
    b: &'b [u8],
    key: memchr::memmem::Finder<'static>,
    esc: memchr::memmem::Finder<'static>,
    /// The next find of each at or after where the scan stands (`None`: no more).
    next_key: Option<usize>,
    next_esc: Option<usize>,
}

impl<'b> Candidates<'b> {
    fn new(b: &'b [u8], at: usize) -> Candidates<'b> {
        let mut c = Candidates {
            b,
            key: memchr::memmem::Finder::new(b"usage\""),
            esc: memchr::memmem::Finder::new(b"\\u00"),
            next_key: None,
            next_esc: None,
        };
        c.next_key = c.find_key(at);
        c.next_esc = c.find_esc(at);
        c
    }

    fn find_key(&self, at: usize) -> Option<usize> {
        self.key.find(self.b.get(at..)?).map(|i| at + i)
    }

    fn find_esc(&self, mut from: usize) -> Option<usize> {
        loop {
            let i = self.esc.find(self.b.get(from..)?).map(|i| from + i)?;
            if matches!(self.b.get(i + 4), Some(b'6' | b'7')) {
                return Some(i);
            }
            from = i + 4;
        }
    }

    /// The start of the next candidate line at or after `at` (a line start).
    fn next(&mut self, at: usize) -> Option<usize> {
        if self.next_key.is_some_and(|k| k < at) {
            self.next_key = self.find_key(at);
        }
        if self.next_esc.is_some_and(|e| e < at) {
            self.next_esc = self.find_esc(at);
        }
        let p = [self.next_key, self.next_esc].into_iter().flatten().min()?;
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
