//! Content blocks as pi and PiG write them, read once for every face.
//!
//! pi 1.6.0 writes `text` (`text`), `thinking` (`thinking`, `thinkingSignature`),
//! `toolCall` (`id`, `name`, `arguments`) and `image` (`mimeType`, `data`). PiG's document
//! (`pig-session-format.txt`) adds its own shapes: `image` with `media_type` and either
//! `data` or `url`, `thinking` with `signature`, and `tool_use` with `id`, `name` and
//! `input`. A block of any other type is opaque: shown by its type and size, never
//! guessed at.
//!
//! pi's own blocks read exactly as before; PiG's shapes use type names (`tool_use`) or
//! members (`media_type`, `url`, `signature`) that pi's blocks do not have, so one reading
//! serves sessions of both.

use crate::json::Value;
use std::borrow::Cow;

/// Which program's shape a tool call has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallShape {
    /// pi's `toolCall` with `arguments`.
    Pi,
    /// PiG's `tool_use` with `input`.
    Pig,
}

/// One content block, its strings unescaped (a lone surrogate shown as U+FFFD).
#[derive(Debug, PartialEq)]
pub enum Block<'v, 'a> {
    /// `text`: its `text` when a string.
    Text(Option<Cow<'v, str>>),
    /// `thinking`: its `thinking` when a string, and PiG's `signature` (pi's
    /// `thinkingSignature`) when one is present.
    Thinking {
        /// The thinking text.
        text: Option<Cow<'v, str>>,
        /// Whether the block carries a signature (its value is opaque).
        signed: bool,
    },
    /// A tool call: pi's `toolCall` or PiG's `tool_use`.
    Call {
        /// pi's or PiG's.
        shape: CallShape,
        /// `id`, any JSON value, as written.
        id: Option<&'v Value<'a>>,
        /// `name`, any JSON value, as written.
        name: Option<&'v Value<'a>>,
        /// pi's `arguments` or PiG's `input`.
        args: Option<&'v Value<'a>>,
    },
    /// An image: pi's (`mimeType`, `data`) or PiG's (`media_type`, `data` or `url`).
    Image {
        /// `mimeType`, else `media_type`, when a string.
        mime: Option<Cow<'v, str>>,
        /// The base64 `data`, when a string.
        data: Option<&'v str>,
        /// PiG's `url`, when a string and there is no `data` (a link, never fetched).
        url: Option<Cow<'v, str>>,
    },
    /// Any other block (or an element that is no object): its `type` when a string, and
    /// the length of its JSON.
    Other {
        /// The block's `type`.
        ty: Option<Cow<'v, str>>,
        /// The length of the block's JSON text, in bytes.
        bytes: usize,
    },
}

fn text<'v>(v: Option<&'v Value<'_>>) -> Option<Cow<'v, str>> {
    v.and_then(Value::as_js_str).map(|s| s.to_str_lossy())
}

/// How a content block reads.
///
/// ```
/// use pi_session::{Block, CallShape};
/// let v = pi_session::Value::parse(br#"{"type":"tool_use","id":"tu1","name":"bash","input":{"command":"go test"}}"#).unwrap();
/// match pi_session::block(&v) {
///     Block::Call { shape, name, args, .. } => {
///         assert_eq!(shape, CallShape::Pig);
///         assert_eq!(name.and_then(|n| n.as_str()), Some("bash"));
///         assert!(args.is_some());
///     }
///     _ => unreachable!(),
/// }
/// ```
pub fn block<'v, 'a>(b: &'v Value<'a>) -> Block<'v, 'a> {
    let ty = b.get("type").and_then(Value::as_js_str);
    match ty.map(|t| t.as_bytes()) {
        Some(b"text") => Block::Text(text(b.get("text"))),
        Some(b"thinking") => Block::Thinking {
            text: text(b.get("thinking")),
            signed: b.get("signature").or_else(|| b.get("thinkingSignature")).is_some(),
        },
        Some(t @ (b"toolCall" | b"tool_use")) => {
            let shape = if t == b"toolCall" {
                CallShape::Pi
            } else {
                CallShape::Pig
            };
            Block::Call {
                shape,
                id: b.get("id"),
                name: b.get("name"),
                args: b.get(if shape == CallShape::Pi { "arguments" } else { "input" }),
            }
        }
        Some(b"image") => {
            let data = b.get("data").and_then(Value::as_str);
            Block::Image {
                mime: text(b.get("mimeType")).or_else(|| text(b.get("media_type"))),
                data,
                url: data.is_none().then(|| text(b.get("url"))).flatten(),
            }
        }
        _ => Block::Other {
            ty: ty.map(|t| t.to_str_lossy()),
            bytes: b.stringify().len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str, f: impl FnOnce(Block<'_, '_>)) {
        let v = Value::parse(line.as_bytes()).unwrap();
        f(block(&v));
    }

    #[test]
    fn pis_blocks_and_pigs_read_alike() {
        read(r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#, |b| {
            assert_eq!(
                b,
                Block::Image {
                    mime: Some("image/png".into()),
                    data: Some("AAAA"),
                    url: None
                }
            )
        });
        read(
            r#"{"type":"image","media_type":"image/jpeg","url":"https://x/y.jpg"}"#,
            |b| {
                assert_eq!(
                    b,
                    Block::Image {
                        mime: Some("image/jpeg".into()),
                        data: None,
                        url: Some("https://x/y.jpg".into())
                    }
                )
            },
        );
        read(r#"{"type":"thinking","thinking":"hm","signature":"sig"}"#, |b| {
            assert_eq!(
                b,
                Block::Thinking {
                    text: Some("hm".into()),
                    signed: true
                }
            )
        });
        read(
            r#"{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a"}}"#,
            |b| {
                assert!(matches!(
                    b,
                    Block::Call {
                        shape: CallShape::Pi,
                        args: Some(_),
                        ..
                    }
                ))
            },
        );
        // pi's call never reads PiG's `input`, nor PiG's call pi's `arguments`.
        read(r#"{"type":"toolCall","name":"read","input":{"path":"a"}}"#, |b| {
            assert!(matches!(b, Block::Call { args: None, .. }))
        });
        read(r#"{"type":"tool_use","name":"read","arguments":{}}"#, |b| {
            assert!(matches!(
                b,
                Block::Call {
                    shape: CallShape::Pig,
                    args: None,
                    ..
                }
            ))
        });
    }

    #[test]
    fn an_unknown_block_is_its_type_and_size() {
        read(r#"{"type":"tool_result","tool_use_id":"t","content":"ok"}"#, |b| {
            assert_eq!(
                b,
                Block::Other {
                    ty: Some("tool_result".into()),
                    bytes: 55
                }
            )
        });
        read(r#"[1,2]"#, |b| assert_eq!(b, Block::Other { ty: None, bytes: 5 }));
        // A lone surrogate is shown, not dropped.
        read(r#"{"type":"text","text":"a\ud800b"}"#, |b| {
            assert_eq!(b, Block::Text(Some("a\u{fffd}b".into())))
        });
    }
}
