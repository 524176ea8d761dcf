//! pi's `SessionInfo` from a file's bytes: a loop over the lines that sorts each one
//! ([`classify_line`]) and hands it to [`on_first_line`] (until the header is found),
//! [`on_session_info`] or [`on_message`]; [`finish`] turns what they gathered into the
//! [`SessionInfo`]. Spans recorded by the walk (`line.rs`) are decoded here, after their
//! line was found valid; bytes that no longer decode (a mapped file rewritten between the
//! walk and the decode) drop the file with [`SkipFileReason::Changed`], never a panic.

use super::line::{Block, Line, Msg, Span, scan_entry};
use super::{SessionInfo, SkipFileReason};
use crate::js::number::parse_json_number;
use crate::js::string::{JsStr, js_trim_wtf8};
use crate::json::string::decode_string;
use crate::json::value::js_date_time;
use crate::json::walk::skip_ws;
use crate::json::ws::Blank;
use crate::json::{Kind, Value};
use std::borrow::Cow;
use std::path::Path;

/// The buffers the builder reuses from file to file.
#[derive(Debug, Default)]
pub(super) struct InfoScratch {
    /// The blocks of the current line's content array.
    pub(super) blocks: Vec<Block>,
    /// The joined text of the messages so far.
    pub(super) all: Vec<u8>,
    /// Collect only the first user text, not `allMessagesText`.
    pub(super) skip_text: bool,
}

/// A recorded span no longer decodes: the bytes changed after the walk validated them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Changed;

impl From<Changed> for SkipFileReason {
    fn from(_: Changed) -> Self {
        SkipFileReason::Changed
    }
}

/// What is known about the file so far.
#[derive(Default)]
struct State {
    header: Option<Value<'static>>,
    /// The header's line, as read (what a [`Carry`] keeps of it).
    header_line: Option<Vec<u8>>,
    message_count: u64,
    first_message: Option<JsStr<'static>>,
    name: Option<JsStr<'static>>,
    last_activity: Option<f64>,
    /// `all` holds some text (the next one is preceded by a space).
    any_text: bool,
}

/// Where a file's listing can carry on when the file grows (pi appends): what the builder
/// knew just past the last `\n` it read, at `offset`. The lines before `offset` are never
/// read again; the ones after it (a last line without its `\n`, which the append may
/// complete) are. A listing cache stores one per file (`cache.rs`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Carry {
    /// Where the next line starts (just past a `\n`, or 0).
    pub(super) offset: u64,
    /// The lines before `offset` already decided that pi drops the file ([`SkipFileReason::NotSession`]
    /// or [`SkipFileReason::PiThrows`]): nothing appended changes that.
    pub(super) dropped: Option<SkipFileReason>,
    /// The header's line, when one was found.
    pub(super) header_line: Option<Vec<u8>>,
    pub(super) message_count: u64,
    pub(super) first_message: Option<Vec<u8>>,
    pub(super) name: Option<Vec<u8>>,
    pub(super) last_activity: Option<f64>,
    pub(super) any_text: bool,
    /// Bytes of the joined text so far: a prefix of the file's `allMessagesText` (0 when
    /// the text was not collected).
    pub(super) text_len: u64,
}

impl Carry {
    /// [`Carry::dropped`] of a `NotSession`, for tests.
    #[cfg(test)]
    pub(super) fn dropped_for_tests() -> Carry {
        Carry::dropped(SkipFileReason::NotSession)
    }

    /// The carry of a file the lines before it dropped: nothing else in it matters.
    fn dropped(why: SkipFileReason) -> Carry {
        Carry {
            offset: 0,
            dropped: Some(why),
            header_line: None,
            message_count: 0,
            first_message: None,
            name: None,
            last_activity: None,
            any_text: false,
            text_len: 0,
        }
    }
}

impl State {
    fn carry(&self, offset: u64, all: &[u8]) -> Carry {
        Carry {
            offset,
            dropped: None,
            header_line: self.header_line.clone(),
            message_count: self.message_count,
            first_message: self.first_message.as_ref().map(|s| s.as_bytes().to_vec()),
            name: self.name.as_ref().map(|s| s.as_bytes().to_vec()),
            last_activity: self.last_activity,
            any_text: self.any_text,
            text_len: all.len() as u64,
        }
    }

    /// The state a [`Carry`] describes; `None` when its header line no longer parses (a
    /// cache that lies).
    fn from_carry(c: &Carry) -> Option<State> {
        let header = match &c.header_line {
            Some(l) => Some(crate::json::value::parse(l).ok()?.into_owned()),
            None => None,
        };
        Some(State {
            header,
            header_line: c.header_line.clone(),
            message_count: c.message_count,
            first_message: c.first_message.as_ref().map(|b| JsStr(b.clone().into())),
            name: c.name.as_ref().map(|b| JsStr(b.clone().into())),
            last_activity: c.last_activity,
            any_text: c.any_text,
        })
    }
}

/// A listing carried on from a [`Carry`]: the bytes given to [`build_carried`] start at
/// `carry.offset`, and `text` is the file's joined text up to there (`carry.text_len`
/// bytes).
#[derive(Clone, Copy)]
pub(super) struct Resume<'a> {
    pub(super) carry: &'a Carry,
    pub(super) text: &'a [u8],
}

/// What the line at some offset is.
enum Piece {
    /// No more lines.
    End,
    /// Nothing to look at (blank, invalid, or not an object after the header): go on at
    /// the offset given.
    Skip(usize),
    /// A line before the header was found, `start..end` (its terminator at `end`).
    BeforeHeader { start: usize, end: usize },
    /// A valid object line after the header, walked; the next line starts at `next`.
    Entry { line: Line, next: usize },
}

/// Build pi's [`SessionInfo`]. `walk` is what the lines are validated in, `read` what
/// their spans are decoded from: the same bytes, except when a test plays a file that
/// changes between the two (a mapped file can).
#[inline(always)]
pub(super) fn build(
    path: &Path,
    walk: &[u8],
    read: &[u8],
    mtime_ms: f64,
    scratch: &mut InfoScratch,
) -> Result<SessionInfo, SkipFileReason> {
    build_carried(path, walk, read, mtime_ms, scratch, None, false).map_or(Err(SkipFileReason::Changed), |r| r.result)
}

/// What [`build_carried`] gives.
pub(super) struct Carried {
    pub(super) result: Result<SessionInfo, SkipFileReason>,
    /// Where the listing can carry on (when asked for, and the bytes held still).
    pub(super) carry: Option<Carry>,
    /// The header's line, when one was found.
    pub(super) header_line: Option<Vec<u8>>,
}

/// [`build`], carried on from `resume` when given (then `walk` and `read` are the file's
/// bytes from `resume.carry.offset` on), and with the [`Carry`] at the file's last `\n`
/// when `want_carry`. `None` when `resume` cannot be used (its header line does not parse).
#[inline(always)]
pub(super) fn build_carried(
    path: &Path,
    walk: &[u8],
    read: &[u8],
    mtime_ms: f64,
    scratch: &mut InfoScratch,
    resume: Option<Resume<'_>>,
    want_carry: bool,
) -> Option<Carried> {
    let base = resume.map_or(0, |r| r.carry.offset);
    scratch.all.clear();
    let mut st = match resume {
        Some(r) => {
            if let Some(d) = &r.carry.dropped {
                return Some(Carried {
                    result: Err(d.clone()),
                    carry: Some(r.carry.clone()),
                    header_line: r.carry.header_line.clone(),
                });
            }
            scratch.all.extend_from_slice(r.text);
            State::from_carry(r.carry)?
        }
        None => State::default(),
    };
    // The carry is taken when the loop reaches the line after the last `\n`; lines end at
    // their terminators, so it lands there exactly (`lost` if it ever jumped over it).
    let snap_at = if want_carry {
        memchr::memrchr(b'\n', walk).map_or(0, |i| i + 1)
    } else {
        usize::MAX
    };
    let mut carry: Option<Carry> = None;
    let mut lost = false;
    let mut pos = 0usize;
    let header_line;
    let res = loop {
        if pos >= snap_at && carry.is_none() && !lost {
            if pos == snap_at {
                carry = Some(st.carry(base + pos as u64, &scratch.all));
            } else {
                lost = true;
            }
        }
        let step = match classify_line(walk, pos, st.header.is_some(), &mut scratch.blocks) {
            Piece::End => {
                header_line = st.header_line.clone();
                break finish(path, st, mtime_ms, &scratch.all, base + walk.len() as u64);
            }
            Piece::Skip(next) => {
                pos = next;
                Ok(())
            }
            Piece::BeforeHeader { start, end } => {
                pos = end + 1;
                on_first_line(&mut st, &walk[start..end])
            }
            Piece::Entry { line, next } => {
                pos = next;
                on_entry(&mut st, read, &line, scratch)
            }
        };
        if let Err(e) = step {
            // A line before the carry's offset dropped the file: for good.
            if want_carry
                && carry.is_none()
                && !lost
                && matches!(e, SkipFileReason::NotSession | SkipFileReason::PiThrows(_))
            {
                carry = Some(Carry::dropped(e.clone()));
            }
            header_line = st.header_line.take();
            break Err(e);
        }
    };
    if matches!(res, Err(SkipFileReason::Changed)) {
        carry = None;
    }
    Some(Carried {
        result: res,
        carry,
        header_line,
    })
}

/// The end of the line starting at or before `from` (pi's readline ends a line at `\n`,
/// `\r\n` or a lone `\r`; an empty piece between `\r` and `\n` is a blank line).
#[inline(always)]
fn line_end(bytes: &[u8], from: usize) -> usize {
    memchr::memchr2(b'\n', b'\r', &bytes[from..]).map_or(bytes.len(), |o| from + o)
}

/// Sort the line at `pos`. Object lines after the header are validated and their spans
/// recorded in one pass; the walk finds the line's end itself, so memchr is needed only
/// to resynchronise after a bad line.
#[inline(always)]
fn classify_line(bytes: &[u8], pos: usize, have_header: bool, blocks: &mut Vec<Block>) -> Piece {
    let n = bytes.len();
    let first = skip_ws::<Blank>(bytes, pos);
    if first >= n {
        return Piece::End;
    }
    if matches!(bytes[first], b'\n' | b'\r') {
        return Piece::Skip(first + 1);
    }
    if !have_header {
        return Piece::BeforeHeader {
            start: pos,
            end: line_end(bytes, first),
        };
    }
    if bytes[first] != b'{' {
        // After the header, an entry that is not an object has no type.
        return Piece::Skip(line_end(bytes, first) + 1);
    }
    blocks.clear();
    match scan_entry(bytes, first, blocks) {
        Ok((line, term)) => Piece::Entry { line, next: term + 1 },
        Err(_) => Piece::Skip(line_end(bytes, first) + 1),
    }
}

/// A line before any header: the first one that parses to a truthy value decides, and it
/// must be a session header.
fn on_first_line(st: &mut State, line: &[u8]) -> Result<(), SkipFileReason> {
    let Ok(v) = crate::json::value::parse(line) else {
        return Ok(());
    };
    if !v.truthy() {
        return Ok(());
    }
    let is_session = v
        .get("type")
        .and_then(|t| t.as_js_str())
        .is_some_and(|t| t.as_bytes() == b"session");
    if !is_session {
        return Err(SkipFileReason::NotSession);
    }
    st.header = Some(v.into_owned());
    st.header_line = Some(line.to_vec());
    Ok(())
}

/// An entry after the header: only `session_info` and `message` entries matter.
#[inline(always)]
fn on_entry(st: &mut State, read: &[u8], l: &Line, scratch: &mut InfoScratch) -> Result<(), SkipFileReason> {
    match str_bytes(read, l.ty)?.as_deref() {
        Some(b"session_info") => on_session_info(st, read, l.name),
        Some(b"message") => on_message(st, read, l, scratch),
        _ => Ok(()),
    }
}

/// A `session_info` entry: its trimmed `name` (a non-string name makes pi throw).
#[inline(always)]
fn on_session_info(st: &mut State, read: &[u8], name: Span) -> Result<(), SkipFileReason> {
    st.name = match name.kind {
        None | Some(Kind::Null) => None,
        Some(Kind::String { .. }) => {
            let s = decode_at(read, name)?;
            let t = js_trim_wtf8(s.as_bytes());
            (!t.is_empty()).then(|| JsStr(t.to_vec().into()))
        }
        Some(_) => return Err(SkipFileReason::PiThrows("session name is not a string")),
    };
    Ok(())
}

/// A `message` entry: counted; a user or assistant message also gives an activity time
/// and text (see [`message_text`]).
#[inline(always)]
fn on_message(st: &mut State, read: &[u8], l: &Line, scratch: &mut InfoScratch) -> Result<(), SkipFileReason> {
    st.message_count += 1;
    let m = &l.msg;
    match m.present {
        None | Some(Kind::Null) => return Err(SkipFileReason::PiThrows("message entry without message")),
        Some(Kind::Object) => {}
        Some(_) => return Ok(()),
    }
    if !matches!(m.role.kind, Some(Kind::String { .. })) || m.content.kind.is_none() {
        return Ok(());
    }
    let role = str_bytes(read, m.role)?.ok_or(Changed)?;
    let is_user = &*role == b"user";
    if !is_user && &*role != b"assistant" {
        return Ok(());
    }
    if let Some(t) = activity_time(read, m, l.timestamp)? {
        st.last_activity = Some(st.last_activity.unwrap_or(0.0).max(t));
    }
    message_text(st, read, m, is_user, scratch)
}

/// The message's own numeric `timestamp`, else the entry's `timestamp` as a date; `None`
/// for an invalid date.
#[inline(always)]
fn activity_time(read: &[u8], m: &Msg, entry_time: Span) -> Result<Option<f64>, Changed> {
    if m.timestamp.kind == Some(Kind::Number) {
        return number_at(read, m.timestamp).map(Some);
    }
    let v = entry_time
        .kind
        .and_then(|_| read.get(entry_time.start..entry_time.end))
        .and_then(|t| crate::json::value::parse(t).ok());
    let t = js_date_time(v.as_ref());
    Ok((!t.is_nan()).then_some(t))
}

/// The message's text, decoded straight into the joined text: a space, then this
/// message's text (taken back out when it is empty, which pi skips). When only the first
/// user text is wanted and this message cannot supply it, nothing is decoded (nothing is
/// added, so it is taken back out), but the checks where pi throws still run.
#[inline(always)]
fn message_text(
    st: &mut State,
    read: &[u8],
    m: &Msg,
    is_user: bool,
    scratch: &mut InfoScratch,
) -> Result<(), SkipFileReason> {
    let skip_text = scratch.skip_text;
    let all = &mut scratch.all;
    let want_text = !skip_text || (is_user && st.first_message.is_none());
    let mark = all.len();
    if st.any_text {
        all.push(b' ');
    }
    let start = all.len();
    match m.content.kind {
        Some(Kind::String { .. }) if want_text => push_js_string_of(read, m.content, all)?,
        Some(Kind::String { .. }) => {}
        Some(Kind::Array) => {
            let mut first_block = true;
            for b in &scratch.blocks[m.blocks_from..] {
                match *b {
                    Block::Null => return Err(SkipFileReason::PiThrows("null content block")),
                    Block::Other => {}
                    Block::Obj { ty, text } => {
                        if !want_text || str_bytes(read, ty)?.as_deref() != Some(b"text") {
                            continue;
                        }
                        if !first_block {
                            all.push(b' ');
                        }
                        first_block = false;
                        push_js_string_of(read, text, all)?;
                    }
                }
            }
        }
        _ => return Err(SkipFileReason::PiThrows("message content is not a string or array")),
    }
    if all.len() == start {
        all.truncate(mark);
        return Ok(());
    }
    if st.first_message.is_none() && is_user {
        st.first_message = Some(JsStr(if skip_text && start == 0 {
            // Nothing else is kept: the buffer itself, not a copy (a first message may be
            // hundreds of megabytes).
            std::mem::take(all).into()
        } else {
            all[start..].to_vec().into()
        }));
    }
    if skip_text {
        // Only the first user text is wanted: keep nothing else.
        all.truncate(0);
    } else {
        st.any_text = true;
    }
    Ok(())
}

/// The [`SessionInfo`] from the header and what the lines gave.
fn finish(path: &Path, st: State, mtime_ms: f64, all: &[u8], bytes: u64) -> Result<SessionInfo, SkipFileReason> {
    let Some(header) = st.header else {
        return Err(SkipFileReason::NotSession);
    };
    let header_time = match header.get("timestamp") {
        Some(v @ Value::String(_)) => js_date_time(Some(v)),
        _ => f64::NAN,
    };
    let modified = match st.last_activity {
        Some(t) if t > 0.0 => crate::js::date::time_clip(t),
        _ if !header_time.is_nan() => header_time,
        _ => crate::js::date::time_clip(mtime_ms.round()),
    };
    let mut info = from_header(path, &header);
    info.name = st.name;
    info.modified = modified;
    info.message_count = st.message_count;
    if let Some(f) = st.first_message {
        info.first_message = f;
    }
    info.all_messages_text = JsStr(all.to_vec().into());
    info.bytes = bytes;
    Ok(info)
}

/// A [`SessionInfo`] with the fields the header gives (`id`, `cwd`, `parentSessionPath`,
/// `created`) and the others as for a file with nothing after its header but a time
/// `modified` of 0.
pub(super) fn from_header(path: &Path, header: &Value<'_>) -> SessionInfo {
    let cwd = match header.get("cwd") {
        Some(Value::String(s)) => s.clone().into_owned(),
        _ => JsStr::from_str("").into_owned(),
    };
    SessionInfo {
        path: path.to_path_buf(),
        id: header.get("id").map(|v| v.clone().into_owned()),
        cwd,
        name: None,
        parent_session_path: header.get("parentSession").map(|v| v.clone().into_owned()),
        created: js_date_time(header.get("timestamp")),
        modified: 0.0,
        message_count: 0,
        first_message: JsStr::from_str("(no messages)").into_owned(),
        all_messages_text: JsStr::from_str("").into_owned(),
        bytes: 0,
        text_ref: None,
    }
}

// Decoding recorded spans. Each one was validated by the walk, in the same bytes unless
// they changed since: every failure (out of range, no longer a string, a bad escape, an
// end that moved) is `Changed`.

/// The bytes of a string span (decoded when it has escapes); `None` when it is not a
/// string.
#[inline(always)]
fn str_bytes(line: &[u8], s: Span) -> Result<Option<Cow<'_, [u8]>>, Changed> {
    match s.kind {
        Some(Kind::String { escaped: false }) => Ok(Some(raw_string(line, s)?.into())),
        Some(Kind::String { escaped: true }) => Ok(Some(decode_at(line, s)?.0.into_owned().into())),
        _ => Ok(None),
    }
}

/// The bytes between the quotes of an unescaped string span.
#[inline(always)]
fn raw_string(line: &[u8], s: Span) -> Result<&[u8], Changed> {
    line.get(s.start + 1..s.end.wrapping_sub(1)).ok_or(Changed)
}

/// The string span decoded.
fn decode_at(line: &[u8], s: Span) -> Result<JsStr<'static>, Changed> {
    if line.get(s.start) != Some(&b'"') {
        return Err(Changed);
    }
    match decode_string(line, s.start) {
        Ok((d, end)) if end == s.end => Ok(d.into_owned()),
        _ => Err(Changed),
    }
}

/// The number span as `JSON.parse` reads it.
fn number_at(line: &[u8], s: Span) -> Result<f64, Changed> {
    let t = line.get(s.start..s.end).ok_or(Changed)?;
    let t = std::str::from_utf8(t).map_err(|_| Changed)?;
    Ok(parse_json_number(t))
}

/// `String(block.text)` as `Array.prototype.join` writes it (undefined and null: nothing).
#[inline(always)]
fn push_js_string_of(line: &[u8], s: Span, out: &mut Vec<u8>) -> Result<(), Changed> {
    match s.kind {
        None | Some(Kind::Null) => {}
        Some(Kind::String { escaped: false }) => {
            // No escapes: the raw bytes, with invalid UTF-8 replaced as pi's decoder does.
            let raw = raw_string(line, s)?;
            match std::str::from_utf8(raw) {
                Ok(_) => out.extend_from_slice(raw),
                Err(_) => out.extend_from_slice(String::from_utf8_lossy(raw).as_bytes()),
            }
        }
        Some(Kind::String { escaped: true }) => {
            if line.get(s.start) != Some(&b'"') {
                return Err(Changed);
            }
            match decode_string(line, s.start) {
                Ok((d, end)) if end == s.end => out.extend_from_slice(d.as_bytes()),
                _ => return Err(Changed),
            }
        }
        Some(_) => {
            let t = line.get(s.start..s.end).ok_or(Changed)?;
            let v = crate::json::value::parse(t).map_err(|_| Changed)?;
            out.extend_from_slice(v.to_js_string().as_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::{Scratch, SkipFileReason, session_info_from_bytes};

    fn info(text: &str) -> Result<SessionInfo, SkipFileReason> {
        session_info_from_bytes(Path::new("x.jsonl"), text.as_bytes(), 5.0, &mut Scratch::new())
    }

    #[test]
    fn basic_info() {
        let s = info(concat!(
            "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
            "{\"type\":\"message\",\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"image\",\"data\":\"AAA\"},{\"type\":\"text\",\"text\":\"there\"}]}}\r",
            "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"yo\",\"timestamp\":1}}\n",
            "{\"type\":\"session_info\",\"name\":\"  n  \"}\n",
        ))
        .expect("a session");
        assert_eq!(s.message_count, 2);
        assert_eq!(s.first_message.as_bytes(), b"hi there");
        assert_eq!(s.all_messages_text.as_bytes(), b"hi there yo");
        assert_eq!(s.name.expect("named").as_bytes(), b"n");
        assert_eq!(s.modified, 1_735_776_000_000.0);
    }

    #[test]
    fn throws_and_not_session() {
        let h = "{\"type\":\"session\",\"id\":\"s\"}\n";
        assert_eq!(info("{\"type\":\"message\"}\n"), Err(SkipFileReason::NotSession));
        assert!(matches!(
            info(&format!("{h}{{\"type\":\"message\"}}")),
            Err(SkipFileReason::PiThrows(_))
        ));
        assert!(matches!(
            info(&format!("{h}{{\"type\":\"session_info\",\"name\":3}}")),
            Err(SkipFileReason::PiThrows(_))
        ));
        let s = info(&format!("{h}{{\"type\":\"message\"")).expect("torn line skipped");
        assert_eq!(s.message_count, 0);
        assert!(s.modified == 5.0);
    }

    /// A session that goes through every decode: escaped type, name, role and texts, a
    /// numeric message timestamp, a content array, a non-string block text.
    const EVERY_DECODE: &str = concat!(
        "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
        "{\"type\":\"sess\\u0069on_info\",\"name\":\" n\\u0061me \"}\n",
        "{\"type\":\"mess\\u0061ge\",\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{\"role\":\"us\\u0065r\",",
        "\"content\":\"h\\u0069\",\"timestamp\":1735776000001}}\n",
        "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"te\\u0078t\",",
        "\"text\":\"a\\nb\"},{\"type\":\"text\",\"text\":12},{\"type\":\"text\",\"text\":\"plain\"}]}}\n",
    );

    /// The builder with the spans found valid in `walk` decoded from `read`, as when a
    /// mapped file is rewritten between the two.
    fn changed(walk: &[u8], read: &[u8]) -> Result<SessionInfo, SkipFileReason> {
        build(Path::new("x.jsonl"), walk, read, 5.0, &mut InfoScratch::default())
    }

    #[test]
    fn the_same_bytes_twice_give_the_usual_answer() {
        let b = EVERY_DECODE.as_bytes();
        let s = changed(b, b).expect("a session");
        assert_eq!(s, info(EVERY_DECODE).expect("a session"));
        assert_eq!(s.name.expect("named").as_bytes(), b"name");
        assert_eq!(s.all_messages_text.as_bytes(), b"hi a\nb 12 plain");
        assert_eq!(s.modified, 1_735_776_000_001.0);
    }

    #[test]
    fn bytes_that_change_after_the_walk_drop_the_file_as_changed() {
        let walk = EVERY_DECODE.as_bytes();
        // Every quote gone: the escaped type no longer decodes.
        let read: Vec<u8> = walk.iter().map(|&c| if c == b'"' { b'#' } else { c }).collect();
        assert_eq!(changed(walk, &read), Err(SkipFileReason::Changed));
        // Truncated (the slice cannot shrink under a mapping, but nothing may index past it).
        for cut in 0..walk.len() {
            let r = changed(walk, &walk[..cut]);
            assert!(matches!(r, Ok(_) | Err(SkipFileReason::Changed)), "cut at {cut}: {r:?}");
        }
        // Any one byte rewritten: an answer or `Changed`, never a panic.
        for i in 0..walk.len() {
            for c in [b'"', b'\\', b'x', b'{', b'0', 0xff, b'\n'] {
                let mut read = walk.to_vec();
                read[i] = c;
                let r = changed(walk, &read);
                assert!(
                    matches!(r, Ok(_) | Err(SkipFileReason::Changed)),
                    "byte {i} -> {c:#x}: {r:?}"
                );
            }
        }
    }

    #[test]
    fn decode_helpers_report_spans_that_no_longer_decode() {
        let esc = Kind::String { escaped: true };
        let plain = Kind::String { escaped: false };
        let span = |start, end, kind| Span::new(start, end, kind);
        assert_eq!(decode_at(b"x\\u0061\"", span(0, 8, esc)), Err(Changed));
        assert_eq!(decode_at(b"\"\\q\"", span(0, 4, esc)), Err(Changed));
        assert_eq!(decode_at(b"\"a\"", span(9, 12, esc)), Err(Changed));
        // The closing quote moved.
        assert_eq!(decode_at(b"\"\\n\"xx\"", span(0, 7, esc)), Err(Changed));
        assert_eq!(
            decode_at(b"\"\\n\"", span(0, 4, esc)).expect("decodes").as_bytes(),
            b"\n"
        );
        assert_eq!(str_bytes(b"\"ab", span(0, 5, plain)), Err(Changed));
        assert_eq!(str_bytes(b"", span(0, 0, plain)), Err(Changed));
        assert_eq!(number_at(b"1\xff", span(0, 2, Kind::Number)), Err(Changed));
        assert_eq!(number_at(b"12", span(0, 5, Kind::Number)), Err(Changed));
        let mut out = Vec::new();
        assert_eq!(
            push_js_string_of(b"{\"a\":", span(0, 5, Kind::Object), &mut out),
            Err(Changed)
        );
        assert_eq!(push_js_string_of(b"\"\\", span(0, 3, esc), &mut out), Err(Changed));
        assert_eq!(
            push_js_string_of(b"tru", span(0, 4, Kind::True), &mut out),
            Err(Changed)
        );
        assert!(out.is_empty());
    }
}
