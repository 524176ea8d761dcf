//! JSON values exactly as JavaScript's `JSON.parse` produces them, borrowed from the file.
//!
//! This is the *obvious* decoder: a complete parser that builds a value tree. The index
//! never uses it (see `crate::index::line`); it runs only for the entries that a caller, or the
//! context builder, actually reaches, and it is the differential twin of the fast scanner.
//!
//! Fidelity to pi (which decodes a line as UTF-8 with replacement and then calls
//! `JSON.parse`):
//! - invalid UTF-8 inside a string reads as U+FFFD (maximal-subpart replacement, which is
//!   what both V8 and [`String::from_utf8_lossy`] do); outside strings it is a syntax error;
//! - escaped lone surrogates (`"\ud800"`) are kept: strings are stored as WTF-8 (UTF-8
//!   that may hold surrogate code points), and written back escaped;
//! - numbers are IEEE doubles (`1e400` is `Infinity`, `-0` is `-0`);
//! - a duplicate key keeps its first position and takes the last value;
//! - nesting depth is unlimited (an explicit stack, no recursion).
//!
//! Strings without escapes and with valid UTF-8 borrow from the input, so a 4 MB base64
//! image is never copied. Strings are where the bytes are: short ones (keys, ids) are
//! finished by one vector look, the rest go to the block-wise decoder
//! (`string::decode_string_with`, through `dispatch`), one pass of 64-byte masks that
//! checks UTF-8 only in blocks holding bytes >= 0x80 and unescapes from the same masks.
//! `parse_naive` is the same parser with the obvious string decoder, its twin.

use super::SyntaxError;
use super::dispatch;
use super::lex::number_end;
#[cfg(any(test, feature = "internals"))]
use super::string::decode_string_naive;
use super::string::short_string_end;
use super::ws::{Json, WhiteSpace};
use crate::js::string::JsStr;
use std::borrow::Cow;

/// A JSON object: members in JavaScript property order of creation, last duplicate wins.
/// Equal when the members are equal in the same order.
#[derive(Debug, Default, PartialEq)]
pub struct Object<'a> {
    pub(crate) members: Vec<(JsStr<'a>, Value<'a>)>,
}

impl Clone for Object<'_> {
    fn clone(&self) -> Self {
        Object {
            members: self.members.iter().map(|(k, v)| (k.clone(), deep_copy(v))).collect(),
        }
    }
}

impl<'a> Object<'a> {
    /// An empty object.
    pub fn new() -> Self {
        Object { members: Vec::new() }
    }
    /// The member named `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.members
            .iter()
            .find(|(k, _)| k.0.as_ref() == key.as_bytes())
            .map(|(_, v)| v)
    }
    /// Mutable access to the member named `key`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value<'a>> {
        self.members
            .iter_mut()
            .find(|(k, _)| k.0.as_ref() == key.as_bytes())
            .map(|(_, v)| v)
    }
    /// JavaScript assignment `obj[key] = value`: replaces in place or appends.
    pub fn set(&mut self, key: JsStr<'a>, value: Value<'a>) {
        if let Some(slot) = self.members.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            self.members.push((key, value));
        }
    }
    /// JavaScript `delete obj[key]`.
    pub fn remove(&mut self, key: &str) -> Option<Value<'a>> {
        let i = self.members.iter().position(|(k, _)| k.0.as_ref() == key.as_bytes())?;
        Some(self.members.remove(i).1)
    }
    /// Members in creation order.
    pub fn iter(&self) -> impl Iterator<Item = (&JsStr<'a>, &Value<'a>)> {
        self.members.iter().map(|(k, v)| (k, v))
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }
    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    /// Detach from the input (iterative, any depth).
    pub fn into_owned(self) -> Object<'static> {
        let mut v = Value::Object(self).into_owned();
        match &mut v {
            Value::Object(o) => std::mem::take(o),
            _ => unreachable!("an object stays an object"),
        }
    }
}

/// A JSON value as `JSON.parse` gives it.
#[derive(Debug, Default)]
pub enum Value<'a> {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number (an IEEE double, as in JavaScript).
    Number(f64),
    /// A string (WTF-8).
    String(JsStr<'a>),
    /// An array.
    Array(Vec<Value<'a>>),
    /// An object.
    Object(Object<'a>),
}

impl<'a> Value<'a> {
    /// Parse one JSON text exactly as `JSON.parse` does after pi's lossy UTF-8 decoding;
    /// strings without escapes borrow from `text`.
    ///
    /// ```
    /// let v = pi_session::Value::parse(br#"{"role":"user","n":1e400}"#)?;
    /// assert_eq!(v.get("role").and_then(pi_session::Value::as_str), Some("user"));
    /// assert_eq!(v.stringify(), r#"{"role":"user","n":null}"#);
    /// # Ok::<(), pi_session::SyntaxError>(())
    /// ```
    pub fn parse(text: &'a [u8]) -> Result<Value<'a>, SyntaxError> {
        parse(text)
    }

    /// [`Value::parse`], leaving string values of `min` bytes of JSON or more undecoded,
    /// as their JSON text: for a caller that hands values on and decodes long strings
    /// only when they are read (see [`Value::deferred_json`]).
    ///
    /// ```
    /// use pi_session::Value;
    /// let line = format!(r#"{{"type":"image","data":"{}"}}"#, "QUJD".repeat(40));
    /// let v = Value::parse_deferring(line.as_bytes(), 64)?;
    /// let data = v.get("data").and_then(Value::as_js_str).unwrap();
    /// let json = Value::deferred_json(line.as_bytes(), data).unwrap();
    /// assert_eq!(Value::parse(json)?, *Value::parse(line.as_bytes())?.get("data").unwrap());
    /// assert!(Value::deferred_json(line.as_bytes(), v.get("type").and_then(Value::as_js_str).unwrap()).is_none());
    /// # Ok::<(), pi_session::SyntaxError>(())
    /// ```
    pub fn parse_deferring(text: &'a [u8], min: usize) -> Result<Value<'a>, SyntaxError> {
        parse_deferring(text, min)
    }

    /// Whether `s`, a string of [`Value::parse_deferring`]`(text, ..)`, was left undecoded;
    /// then its JSON text, quotes included.
    pub fn deferred_json<'t>(text: &'t [u8], s: &JsStr<'t>) -> Option<&'t [u8]> {
        deferred_json(text, s)
    }

    /// A string value from text.
    pub fn str(s: &'a str) -> Self {
        Value::String(JsStr::from_str(s))
    }
    /// An owned string value.
    pub fn string(s: String) -> Value<'static> {
        Value::String(JsStr::owned(s))
    }
    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => *n != 0.0 && !n.is_nan(),
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) => true,
        }
    }
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// The string, if this is one.
    pub fn as_js_str(&self) -> Option<&JsStr<'a>> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The string as UTF-8 text, if this is a string without lone surrogates.
    pub fn as_str(&self) -> Option<&str> {
        self.as_js_str().and_then(|s| s.as_str())
    }
    /// JavaScript property read `value.key` for the keys pi reads (own data properties;
    /// none of them lives on a prototype). `None` is `undefined`.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(o) => o.get(key),
            _ => None,
        }
    }
    /// Detach from the input. Iterative: any nesting depth is fine.
    pub fn into_owned(self) -> Value<'static> {
        rebuild(self, |s| JsStr(std::borrow::Cow::Owned(s.0.into_owned())))
    }
    /// JavaScript `typeof` name (`"object"` for null, arrays and objects).
    pub fn type_of(&self) -> &'static str {
        match self {
            Value::Null | Value::Array(_) | Value::Object(_) => "object",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
        }
    }
    /// JavaScript `String(value)` (ToString after ToPrimitive) for parsed JSON values.
    pub fn to_js_string(&self) -> String {
        let mut out = String::new();
        self.push_js_string(&mut out);
        out
    }
    fn push_js_string(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => crate::js::number::format_number(*n, out),
            Value::String(s) => out.push_str(&s.to_str_lossy()),
            Value::Object(_) => out.push_str("[object Object]"),
            Value::Array(a) => {
                // Array.prototype.join(","): null and undefined elements print nothing.
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !matches!(v, Value::Null) {
                        v.push_js_string(out);
                    }
                }
            }
        }
    }
}

/// JavaScript `Number(value)` for parsed JSON values.
pub fn js_to_number(v: &Value<'_>) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => *n,
        Value::String(s) => crate::js::number::string_to_number(&s.to_str_lossy()),
        Value::Array(_) | Value::Object(_) => crate::js::number::string_to_number(&v.to_js_string()),
    }
}

/// `new Date(value).getTime()` for a property that may be missing (`None` = undefined).
pub fn js_date_time(value: Option<&Value<'_>>) -> f64 {
    use crate::js::date::{parse_date, time_clip};
    match value {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => {
            if *b {
                1.0
            } else {
                0.0
            }
        }
        Some(Value::Number(n)) => time_clip(*n),
        Some(Value::String(s)) => parse_date(&s.to_str_lossy()),
        Some(v @ (Value::Array(_) | Value::Object(_))) => parse_date(&v.to_js_string()),
    }
}

/// Rebuild a value bottom-up with an explicit stack, mapping every string (and key) with
/// `f`: the engine of [`Value::into_owned`] and of `Clone`, so neither recurses.
fn rebuild<'a, 'b>(v: Value<'a>, f: impl Fn(JsStr<'a>) -> JsStr<'b>) -> Value<'b> {
    enum Work<'a, 'b> {
        Visit(Value<'a>),
        Array(usize),
        Object(Vec<JsStr<'b>>),
    }
    let mut work = vec![Work::Visit(v)];
    let mut done: Vec<Value<'b>> = Vec::new();
    while let Some(w) = work.pop() {
        match w {
            Work::Visit(mut v) => match &mut v {
                Value::Null => done.push(Value::Null),
                Value::Bool(b) => done.push(Value::Bool(*b)),
                Value::Number(n) => done.push(Value::Number(*n)),
                Value::String(s) => done.push(Value::String(f(std::mem::take(s)))),
                Value::Array(a) => {
                    let items = std::mem::take(a);
                    work.push(Work::Array(items.len()));
                    work.extend(items.into_iter().rev().map(Work::Visit));
                }
                Value::Object(o) => {
                    let members = std::mem::take(&mut o.members);
                    let mut keys = Vec::with_capacity(members.len());
                    let mut vals = Vec::with_capacity(members.len());
                    for (k, v) in members {
                        keys.push(f(k));
                        vals.push(v);
                    }
                    work.push(Work::Object(keys));
                    work.extend(vals.into_iter().rev().map(Work::Visit));
                }
            },
            Work::Array(n) => {
                let items = done.split_off(done.len() - n);
                done.push(Value::Array(items));
            }
            Work::Object(keys) => {
                let vals = done.split_off(done.len() - keys.len());
                done.push(Value::Object(Object {
                    members: keys.into_iter().zip(vals).collect(),
                }));
            }
        }
    }
    done.pop().expect("one value in, one value out")
}

impl Clone for Value<'_> {
    /// Iterative (no recursion), so deep values clone safely; strings stay borrowed.
    fn clone(&self) -> Self {
        deep_copy(self)
    }
}

/// A deep copy with an explicit stack (strings stay borrowed).
fn deep_copy<'a>(v: &Value<'a>) -> Value<'a> {
    match v {
        Value::Array(_) | Value::Object(_) => {
            // Serialize-free deep copy: walk with an explicit stack.
            let mut work: Vec<(&Value<'a>, usize)> = vec![(v, 0)];
            let mut built: Vec<Vec<Value<'a>>> = vec![Vec::new()];
            let mut keys: Vec<Vec<JsStr<'a>>> = vec![Vec::new()];
            let mut result = None;
            while let Some((node, i)) = work.pop() {
                let len = match node {
                    Value::Array(a) => a.len(),
                    Value::Object(o) => o.members.len(),
                    _ => 0,
                };
                if i < len {
                    work.push((node, i + 1));
                    let child = match node {
                        Value::Array(a) => &a[i],
                        Value::Object(o) => {
                            keys.last_mut().expect("frame").push(o.members[i].0.clone());
                            &o.members[i].1
                        }
                        _ => unreachable!("containers only"),
                    };
                    match child {
                        Value::Array(_) | Value::Object(_) => {
                            work.push((child, 0));
                            built.push(Vec::new());
                            keys.push(Vec::new());
                        }
                        leaf => built.last_mut().expect("frame").push(match leaf {
                            Value::Null => Value::Null,
                            Value::Bool(b) => Value::Bool(*b),
                            Value::Number(n) => Value::Number(*n),
                            Value::String(s) => Value::String(s.clone()),
                            _ => unreachable!("leaves only"),
                        }),
                    }
                    continue;
                }
                let items = built.pop().expect("frame");
                let ks = keys.pop().expect("frame");
                let made = match node {
                    Value::Array(_) => Value::Array(items),
                    _ => Value::Object(Object {
                        members: ks.into_iter().zip(items).collect(),
                    }),
                };
                match built.last_mut() {
                    Some(parent) if !work.is_empty() => parent.push(made),
                    _ => result = Some(made),
                }
            }
            result.expect("a container was copied")
        }
        Value::Null => Value::Null,
        Value::Bool(b) => Value::Bool(*b),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(s.clone()),
    }
}

impl PartialEq for Value<'_> {
    /// Structural equality, objects' members in order, numbers as `==` compares them.
    /// Iterative, as `Clone` and `Drop` are: a value nested a million levels deep is
    /// compared without overflowing the stack.
    fn eq(&self, other: &Self) -> bool {
        let mut pairs = vec![(self, other)];
        while let Some(pair) = pairs.pop() {
            match pair {
                (Value::Null, Value::Null) => {}
                (Value::Bool(a), Value::Bool(b)) if a == b => {}
                (Value::Number(a), Value::Number(b)) if a == b => {}
                (Value::String(a), Value::String(b)) if a == b => {}
                (Value::Array(a), Value::Array(b)) if a.len() == b.len() => pairs.extend(a.iter().zip(b)),
                (Value::Object(a), Value::Object(b)) if a.members.len() == b.members.len() => {
                    for ((ka, va), (kb, vb)) in a.members.iter().zip(&b.members) {
                        if ka != kb {
                            return false;
                        }
                        pairs.push((va, vb));
                    }
                }
                _ => return false,
            }
        }
        true
    }
}

impl Drop for Value<'_> {
    /// Iterative, so that a value nested a million levels deep does not overflow the stack.
    fn drop(&mut self) {
        let mut stack: Vec<Value<'_>> = match self {
            Value::Array(a) if !a.is_empty() => std::mem::take(a),
            Value::Object(o) if !o.is_empty() => std::mem::take(&mut o.members).into_iter().map(|(_, v)| v).collect(),
            _ => return,
        };
        while let Some(mut v) = stack.pop() {
            match &mut v {
                Value::Array(a) => stack.append(a),
                Value::Object(o) => stack.extend(o.members.drain(..).map(|(_, v)| v)),
                _ => {}
            }
        }
    }
}
/// Parse one JSON text (a whole line) exactly as `JSON.parse` does after pi's lossy
/// UTF-8 decoding.
pub fn parse(text: &[u8]) -> Result<Value<'_>, SyntaxError> {
    parse_with::<false>(text, usize::MAX)
}

/// [`parse`], except that a string value (not a key) whose JSON text, quotes included, is
/// at least `min` bytes long (64 at the least) is not decoded: it stays a borrowed [`JsStr`] of that JSON
/// text, opening and closing quote included, for the caller to decode when (and if) it
/// is wanted ([`Value::parse`] of those bytes gives the string). A decoded string that
/// borrows from `text` never begins with a quote (a quote in a string is escaped, and an
/// escaped string is decoded into a buffer of its own), so the deferred ones are the
/// borrowed strings of `text` that do.
///
/// The string is checked as [`parse`] checks it (a syntax error is an error here too);
/// only its decoding waits.
pub fn parse_deferring(text: &[u8], min: usize) -> Result<Value<'_>, SyntaxError> {
    parse_with::<false>(text, min.max(64))
}

/// [`parse_deferring`]'s value with every deferred string decoded in place: the slow
/// twin's way to a value that must equal [`parse`]'s.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn parse_deferring_resolved(text: &[u8], min: usize) -> Result<Value<'_>, SyntaxError> {
    let mut v = parse_deferring(text, min)?;
    let mut stack = vec![&mut v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Some(raw) = deferred_json(text, s) {
                    *v = parse(raw)?;
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(o) => stack.extend(o.members.iter_mut().map(|(_, v)| v)),
            _ => {}
        }
    }
    Ok(v)
}

/// Whether `s`, from [`parse_deferring`] of `text`, is a deferred string; then its JSON
/// text (quotes included).
pub fn deferred_json<'t>(text: &'t [u8], s: &JsStr<'t>) -> Option<&'t [u8]> {
    match &s.0 {
        Cow::Borrowed(b) if b.first() == Some(&b'"') && text.as_ptr_range().contains(&b.as_ptr()) => Some(b),
        _ => None,
    }
}

/// [`parse`] with the obvious string decoder (`decode_string_naive`): the slow twin the
/// fast decoder is held against (`super::twins`, the `decode_twin` fuzz target).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn parse_naive(text: &[u8]) -> Result<Value<'_>, SyntaxError> {
    parse_with::<true>(text, usize::MAX)
}

#[inline(always)]
fn parse_with<const NAIVE: bool>(text: &[u8], defer: usize) -> Result<Value<'_>, SyntaxError> {
    let mut p = Parser::<NAIVE> { b: text, i: 0, defer };
    let v = p.value()?;
    p.ws();
    if p.i != text.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

enum Frame<'a> {
    Arr(Vec<Value<'a>>),
    Obj(Object<'a>, JsStr<'a>, Option<ahash::AHashMap<Vec<u8>, usize>>),
}

/// The decoder's cursor; `NAIVE` picks the obvious string decoder (the twin).
struct Parser<'a, const NAIVE: bool> {
    b: &'a [u8],
    i: usize,
    /// String values whose JSON text is at least this long are not decoded
    /// ([`parse_deferring`]); `usize::MAX`: all are.
    defer: usize,
}

impl<'a, const NAIVE: bool> Parser<'a, NAIVE> {
    fn err(&self, reason: &'static str) -> SyntaxError {
        SyntaxError { offset: self.i, reason }
    }
    fn ws(&mut self) {
        while self.i < self.b.len() && Json::is_ws(self.b[self.i]) {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn lit(&mut self, word: &[u8], v: Value<'a>) -> Result<Value<'a>, SyntaxError> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn value(&mut self) -> Result<Value<'a>, SyntaxError> {
        let mut stack: Vec<Frame<'a>> = Vec::new();
        'value: loop {
            self.ws();
            let mut v = match self.peek() {
                None => return Err(self.err("unexpected end of JSON input")),
                Some(b'{') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        Value::Object(Object::new())
                    } else {
                        let key = self.key()?;
                        stack.push(Frame::Obj(Object::new(), key, None));
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Frame::Arr(Vec::new()));
                        continue 'value;
                    }
                }
                Some(b'"') if self.defer != usize::MAX => Value::String(self.string_or_deferred()?),
                Some(b'"') => Value::String(self.string()?),
                Some(b't') => self.lit(b"true", Value::Bool(true))?,
                Some(b'f') => self.lit(b"false", Value::Bool(false))?,
                Some(b'n') => self.lit(b"null", Value::Null)?,
                Some(b'-' | b'0'..=b'9') => Value::Number(self.number()?),
                Some(_) => return Err(self.err("unexpected character")),
            };
            // Attach the finished value to its container; close containers as they end.
            loop {
                let Some(top) = stack.last_mut() else {
                    return Ok(v);
                };
                self.ws();
                match top {
                    Frame::Arr(items) => {
                        items.push(v);
                        match self.peek() {
                            Some(b',') => {
                                self.i += 1;
                                continue 'value;
                            }
                            Some(b']') => {
                                self.i += 1;
                                let Some(Frame::Arr(items)) = stack.pop() else {
                                    unreachable!("top frame is an array")
                                };
                                v = Value::Array(items);
                            }
                            _ => return Err(self.err("expected ',' or ']'")),
                        }
                    }
                    Frame::Obj(obj, key, big) => {
                        let key = std::mem::replace(key, JsStr(Cow::Borrowed(&[])));
                        insert_member(obj, big, key, v);
                        match self.peek() {
                            Some(b',') => {
                                self.i += 1;
                                self.ws();
                                let k = self.key()?;
                                if let Some(Frame::Obj(_, slot, _)) = stack.last_mut() {
                                    *slot = k;
                                }
                                continue 'value;
                            }
                            Some(b'}') => {
                                self.i += 1;
                                let Some(Frame::Obj(obj, _, _)) = stack.pop() else {
                                    unreachable!("top frame is an object")
                                };
                                v = Value::Object(obj);
                            }
                            _ => return Err(self.err("expected ',' or '}'")),
                        }
                    }
                }
            }
        }
    }

    /// `"key" :` with the cursor on the opening quote.
    fn key(&mut self) -> Result<JsStr<'a>, SyntaxError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a string key"));
        }
        let k = self.string()?;
        self.ws();
        if self.peek() != Some(b':') {
            return Err(self.err("expected ':'"));
        }
        self.i += 1;
        Ok(k)
    }

    fn number(&mut self) -> Result<f64, SyntaxError> {
        let start = self.i;
        let end = number_end(self.b, self.i).map_err(|off| SyntaxError {
            offset: off,
            reason: "invalid number",
        })?;
        self.i = end;
        // Read again for the conversion: the bytes may be a mapping another process is
        // changing, so what was checked a moment ago is checked again, never assumed.
        std::str::from_utf8(&self.b[start..end])
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .ok_or(SyntaxError {
                offset: start,
                reason: "invalid number",
            })
    }

    #[inline(always)]
    /// A string value, left as its JSON text when that is at least `defer` bytes long.
    fn string_or_deferred(&mut self) -> Result<JsStr<'a>, SyntaxError> {
        if short_string_end(self.b, self.i).is_some() {
            return self.string();
        }
        let (end, _) = dispatch::skip_string(self.b, self.i)?;
        if end - self.i < self.defer {
            return self.string();
        }
        let raw = &self.b[self.i..end];
        self.i = end;
        Ok(JsStr(Cow::Borrowed(raw)))
    }

    fn string(&mut self) -> Result<JsStr<'a>, SyntaxError> {
        #[cfg(any(test, feature = "internals"))]
        if NAIVE {
            let (s, end) = decode_string_naive(self.b, self.i)?;
            self.i = end;
            return Ok(s);
        }
        // Keys, ids, types: closed within 32 bytes, no escape, no control byte (one
        // vector look); ASCII or checked UTF-8 is borrowed as it is.
        if let Some(end) = short_string_end(self.b, self.i) {
            let raw = &self.b[self.i + 1..end - 1];
            if raw.is_ascii() || std::str::from_utf8(raw).is_ok() {
                self.i = end;
                return Ok(JsStr(Cow::Borrowed(raw)));
            }
        }
        let (s, end) = dispatch::decode_string(self.b, self.i)?;
        self.i = end;
        Ok(s)
    }
}

fn insert_member<'a>(
    obj: &mut Object<'a>,
    big: &mut Option<ahash::AHashMap<Vec<u8>, usize>>,
    key: JsStr<'a>,
    v: Value<'a>,
) {
    const LINEAR: usize = 16;
    if obj.members.len() < LINEAR {
        if let Some(slot) = obj.members.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = v;
        } else {
            obj.members.push((key, v));
        }
        return;
    }
    let map = big.get_or_insert_with(|| {
        obj.members
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.0.to_vec(), i))
            .collect()
    });
    match map.get(key.as_bytes()) {
        Some(&i) => obj.members[i].1 = v,
        None => {
            map.insert(key.0.to_vec(), obj.members.len());
            obj.members.push((key, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &Value<'_>) -> String {
        match v {
            Value::String(s) => s.to_str_lossy().into_owned(),
            _ => panic!("not a string"),
        }
    }

    #[test]
    fn duplicate_keys_keep_position_take_last_value() {
        let v = parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
        let o = v.as_object().unwrap();
        let keys: Vec<_> = o.iter().map(|(k, _)| k.to_str_lossy().into_owned()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(o.get("a"), Some(&Value::Number(3.0)));
    }

    #[test]
    fn lone_surrogates_are_kept_and_pairs_combine() {
        let v = parse(br#""\ud83d\ude00""#).unwrap();
        assert_eq!(s(&v), "\u{1F600}");
        let v = parse(br#""a\ud800b""#).unwrap();
        assert_eq!(v.as_js_str().unwrap().as_bytes(), b"a\xED\xA0\x80b");
        assert_eq!(v.as_js_str().unwrap().utf16_len(), 3);
    }

    #[test]
    fn invalid_utf8_inside_strings_is_replaced_outside_is_an_error() {
        let v = parse(b"\"a\xffb\"").unwrap();
        assert_eq!(s(&v), "a\u{FFFD}b");
        assert!(parse(b"\xff1").is_err());
    }

    /// The JSON number grammar one byte at a time: the twin of `number_end`.
    fn number_end_naive(b: &[u8], mut i: usize) -> Result<usize, usize> {
        let digits = |b: &[u8], mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(b, i),
            _ => return Err(i),
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if digits(b, i) == i {
                return Err(i);
            }
            i = digits(b, i);
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if digits(b, i) == i {
                return Err(i);
            }
            i = digits(b, i);
        }
        Ok(i)
    }

    #[test]
    fn number_end_agrees_with_the_bytewise_grammar() {
        // Every byte value after runs of digits of every length up to 20, in each part
        // of a number, so the eight-byte digit runs end at every lane.
        for prefix in [&b""[..], b"-", b"1", b"-0.", b"12.5e", b"7E+", b"0.0000"] {
            for run in 0..20 {
                for stop in 0..=255u8 {
                    let mut t = prefix.to_vec();
                    t.extend(std::iter::repeat_n(b'7', run));
                    t.push(stop);
                    t.extend_from_slice(b"123456789");
                    for cut in [t.len(), prefix.len() + run + 1, prefix.len() + run] {
                        assert_eq!(
                            number_end(&t[..cut], 0),
                            number_end_naive(&t[..cut], 0),
                            "{:?}",
                            String::from_utf8_lossy(&t[..cut])
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn numbers_follow_js() {
        assert_eq!(parse(b"1e400").unwrap(), Value::Number(f64::INFINITY));
        assert!(matches!(parse(b"-0").unwrap(), Value::Number(n) if n == 0.0 && n.is_sign_negative()));
        for bad in ["01", "1.", ".5", "+1", "1e", "-", "0x10", "NaN"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let depth = 200_000;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let v = parse(text.as_bytes()).expect("deep arrays");
        // Clone, compare and drop deep values too (each iterative).
        assert!(v == v.clone());
        let objects = format!("{}1{}", r#"{"a":["#.repeat(depth), "]}".repeat(depth));
        let o = parse(objects.as_bytes()).expect("deep objects");
        let changed = objects.replace('1', "2");
        let other = parse(changed.as_bytes()).expect("deep objects");
        assert!(o == o.clone() && o != other && o != v);
    }
}
