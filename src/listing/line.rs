//! The recording walk over one line: validates the line like `JSON.parse` (through the
//! crate's one exact walker, `crate::json::walk`, with white space [`Blank`]: `\n` and `\r`
//! end lines here, as in pi's readline) and records, as byte spans into the buffer, only
//! what the listing needs: the top-level `type`, `timestamp` and `name`, and inside
//! `message` its `role`, `timestamp` and `content`, with the `type` and `text` of every
//! block of a content array. Nothing is decoded here.

use crate::json::walk::{skip_value, skip_ws, walk_elements, walk_members};
use crate::json::ws::Blank;
use crate::json::{Kind, SyntaxError};

/// Where a member's value lies in the buffer, and what it is.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// What the value is; `None` when the member is missing.
    pub(crate) kind: Option<Kind>,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize, kind: Kind) -> Self {
        Span {
            start,
            end,
            kind: Some(kind),
        }
    }
}

/// One element of a message's content array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Block {
    /// A `null` element: `block.type` throws.
    Null,
    /// Not an object and not null: no `type`, filtered out.
    Other,
    /// An object with its `type` and `text` (missing: kind None).
    Obj { ty: Span, text: Span },
}

/// The spans of an entry's `message` member.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Msg {
    /// The `message` member (None when missing).
    pub(crate) present: Option<Kind>,
    pub(crate) role: Span,
    pub(crate) timestamp: Span,
    pub(crate) content: Span,
    /// Blocks of the content array are `blocks[blocks_from..]`.
    pub(crate) blocks_from: usize,
}

/// The spans of one entry line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Line {
    pub(crate) ty: Span,
    pub(crate) timestamp: Span,
    pub(crate) name: Span,
    pub(crate) msg: Msg,
}

#[inline(always)]
fn skip_any(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    skip_value::<Blank>(b, i)
}

/// Walk the object at `first` and what follows it up to the end of its line; returns the
/// spans and the offset of the line's terminator (`\n`, `\r` or the end of `line`).
#[inline(always)]
pub(crate) fn scan_entry(line: &[u8], first: usize, blocks: &mut Vec<Block>) -> Result<(Line, usize), SyntaxError> {
    let mut l = Line::default();
    let end = walk_members::<Blank>(line, first, |key, i| {
        let span = match key {
            b"type" => &mut l.ty,
            b"timestamp" => &mut l.timestamp,
            b"name" => &mut l.name,
            b"message" if line.get(i) == Some(&b'{') => {
                let mut m = Msg {
                    present: Some(Kind::Object),
                    blocks_from: blocks.len(),
                    ..Msg::default()
                };
                let e = scan_message(line, i, blocks, &mut m)?;
                l.msg = m;
                return Ok(e);
            }
            b"message" => {
                let (e, k) = skip_any(line, i)?;
                l.msg = Msg {
                    present: Some(k),
                    ..Msg::default()
                };
                return Ok(e);
            }
            _ => return skip_any(line, i).map(|(e, _)| e),
        };
        let (e, k) = skip_any(line, i)?;
        *span = Span::new(i, e, k);
        Ok(e)
    })?;
    let term = skip_ws::<Blank>(line, end);
    if term != line.len() && !matches!(line[term], b'\n' | b'\r') {
        return Err(SyntaxError::new(end, "unexpected data after the JSON value"));
    }
    Ok((l, term))
}

#[inline(always)]
fn scan_message(b: &[u8], start: usize, blocks: &mut Vec<Block>, m: &mut Msg) -> Result<usize, SyntaxError> {
    walk_members::<Blank>(b, start, |key, i| {
        let span = match key {
            b"role" => &mut m.role,
            b"timestamp" => &mut m.timestamp,
            b"content" => {
                m.blocks_from = blocks.len();
                if b.get(i) == Some(&b'[') {
                    let e = scan_blocks(b, i, blocks)?;
                    m.content = Span::new(i, e, Kind::Array);
                    return Ok(e);
                }
                &mut m.content
            }
            _ => return skip_any(b, i).map(|(e, _)| e),
        };
        let (e, k) = skip_any(b, i)?;
        *span = Span::new(i, e, k);
        Ok(e)
    })
}

#[inline(always)]
fn scan_blocks(b: &[u8], start: usize, blocks: &mut Vec<Block>) -> Result<usize, SyntaxError> {
    walk_elements::<Blank>(b, start, |i| {
        if b.get(i) == Some(&b'{') {
            let mut ty = Span::default();
            let mut text = Span::default();
            let e = walk_members::<Blank>(b, i, |key, j| {
                let (e, k) = skip_any(b, j)?;
                match key {
                    b"type" => ty = Span::new(j, e, k),
                    b"text" => text = Span::new(j, e, k),
                    _ => {}
                }
                Ok(e)
            })?;
            blocks.push(Block::Obj { ty, text });
            Ok(e)
        } else {
            let (e, k) = skip_any(b, i)?;
            blocks.push(if k == Kind::Null { Block::Null } else { Block::Other });
            Ok(e)
        }
    })
}
