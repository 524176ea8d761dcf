//! The listing cache's file: one per listed folder or sessions root, a versioned format of
//! this crate's own, written whole to a temporary file and renamed over the old one.
//!
//! ```text
//! magic      16 bytes  "pi-session-list\n"
//! version    u32       FORMAT
//! flags      u32       0
//! key        u64 length, bytes: what was listed (`all`/`dir`, a NUL, the folder's path)
//! count      u64       entries
//! meta       u64 length, u128 XXH3 of its bytes, then: the generation of the text log
//!            the entries' texts are in (u64, 0 for none), the entries
//! ```
//!
//! The texts (`allMessagesText`, often far larger than the rest) are in a file beside it,
//! the *text log* (`<name>.text`): [`TEXT_MAGIC`], its generation (u64), then texts one
//! after the other. A listing appends the texts it read to the log (one `write` with
//! `O_APPEND`, so concurrent writers never overlap) and never rewrites the ones it keeps,
//! so a re-list after a few changes writes a few texts, not all of them; the log is
//! written anew, under a new generation, when it holds more dead texts than live ones.
//! Each entry keeps its text's offset, length and XXH3 hash, checked on every read.
//!
//! Integers are little-endian; byte strings are a `u64` length and the bytes; an optional
//! value is a byte 0 (none) or 1 and the value. An entry is a file's path, its `fstat`
//! ([`Stamp::to_parts`]), whether it was racy when stored, the digest of its bytes' print, its
//! header line, the outcome (listed, with the fields the header does not give; or dropped,
//! and why), where its text is in the text section, and its [`Carry`]. The text section
//! is read only when a listing wants `allMessagesText`.
//!
//! Decoding checks every length against what is left and both checksums, and answers
//! `None` for anything off: a damaged file is never half-trusted. The format has no
//! pointers into itself but the text spans, which are checked against the section.

use super::SkipFileReason;
use super::info::Carry;
use super::read::Memo;
use crate::source::Stamp;
use crate::store::{Reader, put_bytes, put_u64};
use std::borrow::Cow;

/// The first bytes of every cache file.
pub(super) const MAGIC: &[u8; 16] = b"pi-session-list\n";
/// The format's version: a file of another version is rebuilt.
pub(super) const FORMAT: u32 = 3;
/// The first bytes of every text log, before its generation.
pub(super) const TEXT_MAGIC: &[u8; 16] = b"pi-session-text\n";

/// The reasons for dropping a file that an entry can store (the others are not cached:
/// an unreadable or changing file is read again).
const THROWS: &[&str] = &[
    "message entry without message",
    "message content is not a string or array",
    "null content block",
    "session name is not a string",
];

/// What a listed file gave, as stored.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome<'a> {
    /// Listed.
    Listed(Listed<'a>),
    /// Not listed, and why.
    Dropped(SkipFileReason),
}

/// A listed file's `SessionInfo` as stored (the values of `id` and `parentSessionPath`
/// as JSON text), but the path and the text. Equal when stored alike: times compare by
/// their bits, so that a `created` of NaN (an invalid header date) equals itself and an
/// unchanged file does not rewrite the cache.
#[derive(Clone, Debug)]
pub(super) struct Listed<'a> {
    pub(super) id: Option<Cow<'a, [u8]>>,
    pub(super) cwd: &'a [u8],
    pub(super) parent: Option<Cow<'a, [u8]>>,
    pub(super) created: f64,
    pub(super) name: Option<&'a [u8]>,
    pub(super) modified: f64,
    pub(super) message_count: u64,
    pub(super) first_message: &'a [u8],
    pub(super) bytes: u64,
}

impl PartialEq for Listed<'_> {
    fn eq(&self, o: &Self) -> bool {
        (self.id.as_deref(), self.cwd, self.parent.as_deref(), self.name)
            == (o.id.as_deref(), o.cwd, o.parent.as_deref(), o.name)
            && (self.message_count, self.first_message, self.bytes) == (o.message_count, o.first_message, o.bytes)
            && self.created.to_bits() == o.created.to_bits()
            && self.modified.to_bits() == o.modified.to_bits()
    }
}

/// A [`Carry`] as stored: its header line is its entry's.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct CarryAt<'a> {
    pub(super) offset: u64,
    pub(super) dropped: Option<SkipFileReason>,
    pub(super) has_header: bool,
    pub(super) message_count: u64,
    pub(super) first_message: Option<&'a [u8]>,
    pub(super) name: Option<&'a [u8]>,
    pub(super) last_activity: Option<f64>,
    pub(super) any_text: bool,
    pub(super) text_len: u64,
}

impl<'a> CarryAt<'a> {
    /// The stored form of `c`.
    pub(super) fn of(c: &'a Carry) -> CarryAt<'a> {
        CarryAt {
            offset: c.offset,
            dropped: c.dropped.clone(),
            has_header: c.header_line.is_some(),
            message_count: c.message_count,
            first_message: c.first_message.as_deref(),
            name: c.name.as_deref(),
            last_activity: c.last_activity,
            any_text: c.any_text,
            text_len: c.text_len,
        }
    }

    /// The carry, with its entry's header line.
    pub(super) fn to_carry(&self, header_line: Option<&[u8]>) -> Carry {
        Carry {
            offset: self.offset,
            dropped: self.dropped.clone(),
            header_line: if self.has_header {
                header_line.map(<[u8]>::to_vec)
            } else {
                None
            },
            message_count: self.message_count,
            first_message: self.first_message.map(<[u8]>::to_vec),
            name: self.name.map(<[u8]>::to_vec),
            last_activity: self.last_activity,
            any_text: self.any_text,
            text_len: self.text_len,
        }
    }
}

/// One file in the cache; its byte strings borrow from the cache file's bytes (or, for
/// an entry about to be written, from what the read gave).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Entry<'a> {
    /// The path's bytes, as listed.
    pub(super) path: &'a [u8],
    /// The `fstat` its bytes were read under.
    pub(super) stamp: Stamp,
    /// The digest of its bytes' print (`crate::source::Print::digest`).
    pub(super) print: u64,
    /// Its ctime was too close to the time it was read to tell a later rewrite by its
    /// stamp alone: read it again.
    pub(super) racy: bool,
    /// The header line, when the file has one.
    pub(super) header_line: Option<&'a [u8]>,
    pub(super) outcome: Outcome<'a>,
    /// Where its `allMessagesText` is in the text log, its length and its XXH3-64 hash:
    /// `None` when it was not collected.
    pub(super) text: Option<(u64, u64, u64)>,
    pub(super) carry: Option<CarryAt<'a>>,
}

impl<'a> Entry<'a> {
    /// The entry for a file just read.
    pub(super) fn fresh(path: &'a [u8], memo: &'a Memo, racy: bool, outcome: Outcome<'a>, text: bool) -> Entry<'a> {
        Entry {
            path,
            stamp: memo.stamp,
            print: memo.print,
            racy,
            header_line: memo.header_line.as_deref(),
            outcome,
            text: text.then_some((0, 0, 0)),
            carry: memo.carry.as_ref().map(CarryAt::of),
        }
    }

    /// What a read of the file would keep: the entry as a [`Memo`].
    pub(super) fn memo(&self) -> Memo {
        Memo {
            stamp: self.stamp,
            carry: self.carry.as_ref().map(|c| c.to_carry(self.header_line)),
            print: self.print,
            header_line: self.header_line.map(<[u8]>::to_vec),
        }
    }
}

/// A cache file's sections, checked against their hashes (the entries not yet decoded).
#[derive(Debug, Default)]
pub(super) struct Sections {
    pub(super) key: Vec<u8>,
    pub(super) count: u64,
    /// Where the entries are in the bytes given to [`sections`].
    pub(super) meta: std::ops::Range<usize>,
    /// The generation of the text log the entries' texts are in (0: none).
    pub(super) text_gen: u64,
}

/// Bytes of the file before the meta section's entries: magic, version, flags, key, count,
/// meta length and hash.
fn prefix_len(key_len: usize) -> usize {
    16 + 4 + 4 + 8 + key_len + 8 + 8 + 16
}

/// A text log's first bytes: [`TEXT_MAGIC`] and its generation.
pub(super) fn text_log_header(generation: u64) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[..16].copy_from_slice(TEXT_MAGIC);
    h[16..].copy_from_slice(&generation.to_le_bytes());
    h
}

/// The generation of a text log (its first bytes), when they are one's.
pub(super) fn text_log_generation(bytes: &[u8]) -> Option<u64> {
    let generation = bytes.get(16..24)?;
    (bytes.get(..16)? == TEXT_MAGIC).then(|| u64::from_le_bytes(generation.try_into().expect("8 bytes")))
}

/// The file: its entries, whose texts are in the text log of generation `text_gen`.
#[cfg(any(test, feature = "internals"))]
pub(super) fn encode(key: &[u8], text_gen: u64, entries: &[Entry<'_>]) -> Vec<u8> {
    encode_pieces(key, text_gen, entries).concat()
}

/// [`encode`] in pieces to write one after the other: the prefix, then the entries in
/// chunks encoded in parallel (10,000 entries are 12 MB; encoding them on one thread was
/// most of what a cold listing spent on its cache).
pub(super) fn encode_pieces(key: &[u8], text_gen: u64, entries: &[Entry<'_>]) -> Vec<Vec<u8>> {
    use rayon::prelude::*;
    let chunks: Vec<Vec<u8>> = entries
        .par_chunks(512)
        .map(|c| {
            let mut buf = Vec::with_capacity(c.iter().map(entry_size_guess).sum());
            for e in c {
                put_entry(&mut buf, e);
            }
            buf
        })
        .collect();
    let gen_bytes = text_gen.to_le_bytes();
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&gen_bytes);
    for c in &chunks {
        h.update(c);
    }
    let meta_len = 8 + chunks.iter().map(Vec::len).sum::<usize>();
    let mut prefix = Vec::with_capacity(prefix_len(key.len()) + 8);
    prefix.extend_from_slice(MAGIC);
    prefix.extend_from_slice(&FORMAT.to_le_bytes());
    prefix.extend_from_slice(&0u32.to_le_bytes());
    put_bytes(&mut prefix, key);
    put_u64(&mut prefix, entries.len() as u64);
    put_u64(&mut prefix, meta_len as u64);
    prefix.extend_from_slice(&h.digest128().to_le_bytes());
    prefix.extend_from_slice(&gen_bytes);
    let mut pieces = Vec::with_capacity(chunks.len() + 1);
    pieces.push(prefix);
    pieces.extend(chunks);
    pieces
}

/// About how many bytes an entry takes (at least as many, unless its carry keeps a name or
/// first message of its own).
fn entry_size_guess(e: &Entry<'_>) -> usize {
    let strings = match &e.outcome {
        Outcome::Listed(l) => {
            l.id.as_ref().map_or(0, |v| v.len())
                + l.cwd.len()
                + l.parent.as_ref().map_or(0, |v| v.len())
                + l.name.map_or(0, <[u8]>::len)
                + l.first_message.len()
        }
        Outcome::Dropped(_) => 0,
    };
    e.path.len() + e.header_line.map_or(0, <[u8]>::len) + strings + 320
}

/// Why a cache file was not used.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// Not a cache file of this format (another version, or not one at all).
    Foreign,
    /// Damaged: a checksum, a length or a value is off.
    Damaged,
}

/// The file's bytes, its meta section checked against its hash.
pub(super) fn sections(bytes: &[u8]) -> Result<Sections, Refused> {
    if bytes.len() < 24 || bytes[..16] != MAGIC[..] {
        return Err(if bytes.len() >= 16 && bytes[..16] != MAGIC[..] {
            Refused::Foreign
        } else {
            Refused::Damaged
        });
    }
    let mut r = Reader { b: bytes, at: 16 };
    if r.u32().ok_or(Refused::Damaged)? != FORMAT {
        return Err(Refused::Foreign);
    }
    let _flags = r.u32().ok_or(Refused::Damaged)?;
    let s = (|| {
        let key = r.bytes()?.to_vec();
        let count = r.u64()?;
        let meta_len = usize::try_from(r.u64()?).ok()?;
        let meta_hash = r.u128()?;
        let meta_at = r.at;
        let meta = r.take(meta_len)?;
        if xxhash_rust::xxh3::xxh3_128(meta) != meta_hash || r.at != bytes.len() {
            return None;
        }
        let text_gen = u64::from_le_bytes(meta.get(..8)?.try_into().ok()?);
        Some(Sections {
            key,
            count,
            meta: meta_at + 8..meta_at + meta_len,
            text_gen,
        })
    })();
    s.ok_or(Refused::Damaged)
}

/// Where the meta section (the bytes its hash covers) is, without checking the hash: for
/// tests that change bytes past the checksum.
#[cfg(test)]
pub(super) fn sections_unchecked(bytes: &[u8]) -> Result<std::ops::Range<usize>, Refused> {
    let mut r = Reader { b: bytes, at: 24 };
    let _key = r.bytes().ok_or(Refused::Damaged)?;
    let _count = r.u64().ok_or(Refused::Damaged)?;
    let len = usize::try_from(r.u64().ok_or(Refused::Damaged)?).map_err(|_| Refused::Damaged)?;
    let _hash = r.u128().ok_or(Refused::Damaged)?;
    let at = r.at;
    bytes
        .get(at..at.checked_add(len).ok_or(Refused::Damaged)?)
        .ok_or(Refused::Damaged)?;
    Ok(at..at + len)
}

/// The entries of a meta section (`meta`, holding `count` of them); `None` when anything
/// is off.
pub(super) fn entries(meta: &[u8], count: u64) -> Option<Vec<Entry<'_>>> {
    let mut m = Reader { b: meta, at: 0 };
    // Each entry takes well over 64 bytes: a count beyond that is a lie.
    let mut out = Vec::with_capacity(usize::try_from(count).ok()?.min(meta.len() / 64 + 1));
    for _ in 0..count {
        out.push(get_entry(&mut m)?);
    }
    (m.at == meta.len()).then_some(out)
}

fn put_opt_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
    }
}

fn put_opt_f64(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_u64(out, v.to_bits());
        }
    }
}

/// A dropped file's reason: 1 not a session, 2 + index for pi throwing.
fn reason_code(r: &SkipFileReason) -> Option<u8> {
    match r {
        SkipFileReason::NotSession => Some(1),
        SkipFileReason::PiThrows(why) => THROWS.iter().position(|t| t == why).map(|i| 2 + i as u8),
        _ => None,
    }
}

fn reason_of(code: u8) -> Option<SkipFileReason> {
    match code {
        1 => Some(SkipFileReason::NotSession),
        c => THROWS
            .get(usize::from(c.checked_sub(2)?))
            .map(|t| SkipFileReason::PiThrows(t)),
    }
}

/// Whether `r` can be stored (see [`THROWS`]).
pub(super) fn storable(r: &SkipFileReason) -> bool {
    reason_code(r).is_some()
}

fn put_entry(out: &mut Vec<u8>, e: &Entry<'_>) {
    put_bytes(out, e.path);
    for p in e.stamp.to_parts() {
        put_u64(out, p);
    }
    out.push(u8::from(e.racy));
    put_u64(out, e.print);
    put_opt_bytes(out, e.header_line);
    match &e.outcome {
        Outcome::Listed(l) => {
            out.push(0);
            put_opt_bytes(out, l.id.as_deref());
            put_bytes(out, l.cwd);
            put_opt_bytes(out, l.parent.as_deref());
            put_u64(out, l.created.to_bits());
            put_opt_bytes(out, l.name);
            put_u64(out, l.modified.to_bits());
            put_u64(out, l.message_count);
            put_bytes(out, l.first_message);
            put_u64(out, l.bytes);
        }
        Outcome::Dropped(r) => out.push(reason_code(r).unwrap_or(1)),
    }
    match e.text {
        None => out.push(0),
        Some((at, len, hash)) => {
            out.push(1);
            put_u64(out, at);
            put_u64(out, len);
            put_u64(out, hash);
        }
    }
    match &e.carry {
        None => out.push(0),
        Some(c) => {
            out.push(1);
            put_carry(out, c, e);
        }
    }
}

/// A carry, with what it shares with its entry stored once: its first message and name
/// when they are the entry's (a flag 2).
fn put_carry(out: &mut Vec<u8>, c: &CarryAt<'_>, e: &Entry<'_>) {
    put_u64(out, c.offset);
    out.push(c.dropped.as_ref().and_then(reason_code).unwrap_or(0));
    out.push(u8::from(c.has_header));
    put_u64(out, c.message_count);
    let (first, name) = shared_fields(&e.outcome);
    put_shared(out, c.first_message, first);
    put_shared(out, c.name, name);
    put_opt_f64(out, c.last_activity);
    out.push(u8::from(c.any_text));
    put_u64(out, c.text_len);
}

/// The first message and name of a listed outcome, which a carry may share.
fn shared_fields<'a>(o: &Outcome<'a>) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    match o {
        Outcome::Listed(l) => (Some(l.first_message), l.name),
        Outcome::Dropped(_) => (None, None),
    }
}

fn put_shared(out: &mut Vec<u8>, v: Option<&[u8]>, entry_has: Option<&[u8]>) {
    match v {
        Some(v) if Some(v) == entry_has => out.push(2),
        _ => put_opt_bytes(out, v),
    }
}

/// The listing cache's own values.
impl<'a> Reader<'a> {
    fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn opt_bytes(&mut self) -> Option<Option<&'a [u8]>> {
        Some(if self.bool()? { Some(self.bytes()?) } else { None })
    }
    fn opt_f64(&mut self) -> Option<Option<f64>> {
        Some(if self.bool()? {
            Some(f64::from_bits(self.u64()?))
        } else {
            None
        })
    }
    fn shared(&mut self, entry_has: Option<&'a [u8]>) -> Option<Option<&'a [u8]>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.bytes()?)),
            2 => Some(Some(entry_has?)),
            _ => None,
        }
    }
}

fn get_entry<'a>(r: &mut Reader<'a>) -> Option<Entry<'a>> {
    let path = r.bytes()?;
    let mut parts = [0u64; 7];
    for p in &mut parts {
        *p = r.u64()?;
    }
    let racy = r.bool()?;
    let print = r.u64()?;
    let header_line = r.opt_bytes()?;
    let outcome = match r.u8()? {
        0 => Outcome::Listed(Listed {
            id: r.opt_bytes()?.map(Cow::Borrowed),
            cwd: r.bytes()?,
            parent: r.opt_bytes()?.map(Cow::Borrowed),
            created: f64::from_bits(r.u64()?),
            name: r.opt_bytes()?,
            modified: f64::from_bits(r.u64()?),
            message_count: r.u64()?,
            first_message: r.bytes()?,
            bytes: r.u64()?,
        }),
        c => Outcome::Dropped(reason_of(c)?),
    };
    if matches!(outcome, Outcome::Listed(_)) && header_line.is_none() {
        return None;
    }
    let text = if r.bool()? {
        Some((r.u64()?, r.u64()?, r.u64()?))
    } else {
        None
    };
    let carry = if r.bool()? {
        let offset = r.u64()?;
        let dropped = match r.u8()? {
            0 => None,
            c => Some(reason_of(c)?),
        };
        let has_header = r.bool()?;
        if has_header && header_line.is_none() {
            return None;
        }
        let message_count = r.u64()?;
        let (first, name) = shared_fields(&outcome);
        Some(CarryAt {
            offset,
            dropped,
            has_header,
            message_count,
            first_message: r.shared(first)?,
            name: r.shared(name)?,
            last_activity: r.opt_f64()?,
            any_text: r.bool()?,
            text_len: r.u64()?,
        })
    } else {
        None
    };
    Some(Entry {
        path,
        stamp: Stamp::from_parts(parts),
        print,
        racy,
        header_line,
        outcome,
        text,
        carry,
    })
}
