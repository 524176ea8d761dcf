//! Token and cost reports: every usage record of every session, each counted once.
//!
//! pi records what an LLM call used in five places (`../shared/SPEC.md`, pi's
//! `AgentSession.getSessionStats`, which sums all of them for `/session`):
//!
//! | source | where | model |
//! | --- | --- | --- |
//! | `assistant` | `usage` of an assistant message | its `provider`/`model` |
//! | `tool` | `usage` of a tool result (nested LLM work a tool did) | not recorded |
//! | `summary` | `usage` of a `compaction` or `branch_summary` entry | not recorded |
//! | `entry` | a `usage` entry (`appendUsage(kind, provider, model, usage, note)`) | its `provider`/`model` |
//!
//! A record's tokens are `input`, `output`, `cacheRead` and `cacheWrite` (a number that
//! is not finite and at least 0 counts 0; fractions are rounded); its total is their
//! sum, as pi's `getSessionStats` computes it (the record's own `totalTokens` is not
//! read). Its cost is `cost.total`, as pi recorded it (0 when that is not a number).
//!
//! **Counted once.** Forks and branched sessions copy entries with their ids and
//! timestamps, so the same record can be in many files. A record's key is the
//! provider's `responseId` when an assistant message has one, else the entry's id with
//! its `timestamp`; a key seen in several files is counted once, for the file with the
//! oldest header `timestamp` (a file without a valid one after all others; ties by
//! path). Its time is the message's own `timestamp` (Unix ms), else the entry's
//! `timestamp` (any form `Date.parse` reads), else the header's; a record with none is
//! left out and counted.
//!
//! The fast path (`extract.rs`) walks only the entries that can hold usage; the slow
//! twin (`twin.rs`) decodes every entry in full; the report (`report.rs`) groups records
//! by day, month, session or model in a time zone; `store.rs` keeps each file's records
//! between runs, beside the listing cache.

pub(crate) mod extract;
mod owners;
mod report;
mod scan;
mod statusline;
mod store;
mod summary;
mod tree;
#[cfg(any(test, feature = "internals"))]
pub mod twin;

pub use report::{
    BLOCK_MS, BlockSpan, BlockState, Bound, Breakdown, CollectOptions, Filter, Gathered, Period, Report, Row, Sums,
    collect, gather, report_files, session_files,
};
pub use statusline::Statusline;

/// The usage cache files that hold the records of `paths` (the session files of `roots`)
/// and the usage summary of the folders among `roots` when there is one, whether each is
/// there and usable, and the stamp each path's records were read under in the per-folder
/// caches (`None`: none kept).
pub(crate) fn stored_stamps(
    dir: &std::path::Path,
    roots: &[std::path::PathBuf],
    paths: &[std::path::PathBuf],
) -> (Vec<(std::path::PathBuf, bool)>, Vec<Option<crate::source::Stamp>>) {
    let st = store::Stored::load(dir, paths);
    let mut files = st.files();
    let dirs: Vec<std::path::PathBuf> = roots.iter().filter(|r| r.is_dir()).cloned().collect();
    if !dirs.is_empty() {
        let file = summary::file_of(dir, &dirs);
        match summary::Summary::load(&file) {
            Ok(_) => files.push((file, true)),
            Err(summary::Unusable::Damaged(_)) => files.push((file, false)),
            // (Or of another format: then it is there, and not usable.)
            Err(summary::Unusable::Missing) if std::fs::symlink_metadata(&file).is_ok() => files.push((file, false)),
            Err(summary::Unusable::Missing) => {}
        }
    }
    (files, (0..paths.len()).map(|i| st.get(i).map(|(s, _)| s)).collect())
}

use crate::json::Value;

/// Where a usage record was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// An assistant message's `usage`.
    Assistant,
    /// A tool result's `usage`.
    Tool,
    /// A compaction's or branch summary's `usage`.
    Summary,
    /// A `usage` entry.
    Entry,
}

impl Source {
    /// Every source, in report order.
    pub const ALL: [Source; 4] = [Source::Assistant, Source::Tool, Source::Summary, Source::Entry];

    /// The name used in options and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Assistant => "assistant",
            Source::Tool => "tool",
            Source::Summary => "summary",
            Source::Entry => "entry",
        }
    }

    /// The source named `s`.
    pub fn parse(s: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|x| x.as_str() == s)
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn of_code(c: u8) -> Option<Source> {
        Source::ALL.get(usize::from(c)).copied()
    }
}

/// The tokens of one record, or a sum of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `input`
    pub input: u64,
    /// `output`
    pub output: u64,
    /// `cacheRead`
    pub cache_read: u64,
    /// `cacheWrite`
    pub cache_write: u64,
}

impl Tokens {
    /// The tokens of a `usage` object.
    pub fn of(usage: &Value<'_>) -> Tokens {
        Tokens {
            input: token(usage.get("input")),
            output: token(usage.get("output")),
            cache_read: token(usage.get("cacheRead")),
            cache_write: token(usage.get("cacheWrite")),
        }
    }

    /// All four added.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Add `o`.
    pub fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// A token count: a finite number of at least 0, rounded; anything else counts 0.
fn token(v: Option<&Value<'_>>) -> u64 {
    token_of(match v {
        Some(Value::Number(n)) => Some(*n),
        _ => None,
    })
}

/// [`token`] of a number (`None`: not a number).
fn token_of(n: Option<f64>) -> u64 {
    match n {
        // (`as` saturates: a count beyond u64 is u64::MAX.)
        Some(n) if n.is_finite() && n >= 0.0 => n.round() as u64,
        _ => 0,
    }
}

/// Which time a record is placed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeFrom {
    /// Its message's own `timestamp`.
    Record,
    /// Its entry's `timestamp` (the message had none, or it has no other).
    Entry,
    /// The session header's `timestamp`.
    Header,
    /// None is valid: the record is left out.
    None,
}

/// When a record was made: Unix ms (NaN with [`TimeFrom::None`]) and which time it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Time {
    /// Unix ms.
    pub ms: f64,
    /// Where it comes from.
    pub from: TimeFrom,
}

impl Time {
    /// The first valid time of the record's own, its entry's and its header's.
    /// Whether `t` is a time (finite, within JavaScript's range of dates).
    pub(crate) fn valid(t: f64) -> bool {
        t.is_finite() && t.abs() <= 8.64e15
    }

    pub(crate) fn pick(own: f64, entry: f64, header: f64) -> Time {
        let valid = Time::valid;
        let (ms, from) = if valid(own) {
            (own, TimeFrom::Record)
        } else if valid(entry) {
            (entry, TimeFrom::Entry)
        } else if valid(header) {
            (header, TimeFrom::Header)
        } else {
            (f64::NAN, TimeFrom::None)
        };
        Time { ms, from }
    }
}

/// One usage record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Record {
    /// XXH3-128 of its dedup key ([`record_key`]), as two halves (low first): a `u128`
    /// field would align the record to 16 bytes, 24 more per record.
    pub key: [u64; 2],
    /// When.
    pub time: Time,
    /// Where it was found.
    pub source: Source,
    /// Its provider and model: an index into [`FileUsage::models`].
    pub model: u32,
    /// Its tokens.
    pub tokens: Tokens,
    /// `cost.total`, in dollars.
    pub cost: f64,
}

/// The usage records of one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileUsage {
    /// (provider, model) pairs the records name (`""` where not recorded).
    pub models: Vec<(String, String)>,
    /// The records, in file order.
    pub records: Vec<Record>,
}

impl FileUsage {
    fn model_index(&mut self, provider: &str, model: &str) -> u32 {
        if let Some(i) = self.models.iter().position(|(p, m)| p == provider && m == model) {
            return i as u32;
        }
        self.models.push((provider.to_string(), model.to_string()));
        (self.models.len() - 1) as u32
    }

    fn push(&mut self, r: Record) {
        self.records.push(r);
    }
}

/// The dedup key of a record: `r` and the `responseId` when there is one, else `e`,
/// the entry's id and its `timestamp` as written; hashed with XXH3-128.
pub fn record_key(response_id: Option<&str>, entry_id: Option<&str>, entry_timestamp: &str) -> [u64; 2] {
    let mut k = Vec::with_capacity(64);
    match response_id {
        Some(r) if !r.is_empty() => {
            k.push(b'r');
            k.extend_from_slice(r.as_bytes());
        }
        _ => {
            k.push(b'e');
            k.extend_from_slice(entry_id.unwrap_or_default().as_bytes());
            k.push(0);
            k.extend_from_slice(entry_timestamp.as_bytes());
        }
    }
    let h = xxhash_rust::xxh3::xxh3_128(&k);
    [h as u64, (h >> 64) as u64]
}

/// The header's time of `s` as Unix ms (NaN when it has none): the last fallback for a
/// record's time, as [`records_of`] takes it.
pub fn header_ms(s: &crate::session::Session) -> f64 {
    crate::json::value::js_date_time(s.header().ok().as_ref().and_then(|h| h.get("timestamp")))
}

/// The usage records of one session (the fast path).
///
/// # Errors
/// The file changed while it was read.
pub fn records_of(s: &crate::session::Session, header_ms: f64) -> crate::error::Result<FileUsage> {
    let r = extract::records(s, header_ms);
    s.verify()?;
    r.map_err(|_| {
        crate::error::ErrorKind::FileChanged {
            path: s.path().map(std::path::Path::to_path_buf),
        }
        .into()
    })
}

#[cfg(test)]
mod tests;
