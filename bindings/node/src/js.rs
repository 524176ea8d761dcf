//! Decoded JSON values made into JavaScript values directly (objects, arrays, strings from
//! the bytes the library decoded, often borrowed from the file): no JSON text in between,
//! so a context full of images is copied once, into V8's strings, and parsed never.
//! Numbers cross as doubles (NaN, infinities and -0 as they are); strings with a lone
//! surrogate as UTF-16. Without recursion: values nested thousands deep are fine.
#![allow(unsafe_code)] // napi's C calls; each block says why it is sound

use napi::bindgen_prelude::{Result, ToNapiValue};
use napi::{Status, sys};
use pi_session::{JsStr, Value};
use std::ptr;

/// A value to hand to JavaScript as it is.
pub struct Js<'a>(pub Value<'a>);

impl ToNapiValue for Js<'_> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: called by napi-rs with the env of the current call, on the JS thread.
        unsafe { build(env, &val.0) }
    }
}

/// A value made from bytes of `src`, whose `range` is let go once it is made (see
/// `pi_session::Source::release`).
pub struct MadeThenReleased<'a> {
    pub value: Value<'a>,
    pub src: &'a pi_session::Source,
    pub range: std::ops::Range<usize>,
}

impl ToNapiValue for MadeThenReleased<'_> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: called by napi-rs with the env of the current call, on the JS thread.
        let h = unsafe { build(env, &val.value) }?;
        val.src.release(val.range);
        Ok(h)
    }
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(Status::from(status), "making a JavaScript value"))
    }
}

/// The string `s` (WTF-8) as a JavaScript string.
///
/// # Safety
/// `env` is the env of the current call, on the JS thread.
unsafe fn string(env: sys::napi_env, s: &JsStr<'_>) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    match s.as_str() {
        // SAFETY: a valid pointer and length of UTF-8 bytes; `out` is written by napi.
        // ASCII (most text, all base64): a copy for V8, no UTF-8 decoding.
        Some(t) if t.is_ascii() => {
            check(unsafe { sys::napi_create_string_latin1(env, t.as_ptr().cast(), t.len() as isize, &mut out) })?
        }
        Some(t) => check(unsafe { sys::napi_create_string_utf8(env, t.as_ptr().cast(), t.len() as isize, &mut out) })?,
        None => {
            let units: Vec<u16> = s.encode_utf16().collect();
            // SAFETY: as above, with UTF-16 code units.
            check(unsafe { sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out) })?
        }
    }
    Ok(out)
}

/// Long strings left undecoded in the values being made ([`Value::parse_deferring`] of
/// `bytes`, the session's), and the JavaScript function that defines an object member
/// reading one when it is first read: `defer(object, key, offset, length)`, with the
/// string's JSON text at `offset` in the file.
#[derive(Clone, Copy)]
pub(crate) struct Deferral<'b> {
    pub(crate) bytes: &'b [u8],
    pub(crate) define: sys::napi_value,
}

/// The JSON text of `s` if it is a deferred string of `bytes`.
fn deferred<'t>(bytes: Option<&'t [u8]>, s: &JsStr<'t>) -> Option<&'t [u8]> {
    bytes.and_then(|b| Value::deferred_json(b, s))
}

/// A scalar, or an empty array or object to fill. A deferred string met here (an array's
/// element, a `__proto__` member) is decoded now.
///
/// # Safety
/// As [`string`].
unsafe fn make(
    env: sys::napi_env,
    v: &Value<'_>,
    ahead: &mut Ahead,
    defer: Option<Deferral<'_>>,
) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    if let Value::String(s) = v
        && let Some(raw) = deferred(defer.map(|d| d.bytes), s)
    {
        let decoded = Value::parse(raw)
            .map_err(|_| napi::Error::from_reason("Error: the session file changed while it was read"))?;
        // SAFETY: as the caller promises.
        return unsafe { make(env, &decoded, &mut Vec::new().into_iter(), None) };
    }
    // SAFETY (each call): `env` is live, `out` is written by napi.
    match v {
        Value::Null => check(unsafe { sys::napi_get_null(env, &mut out) })?,
        Value::Bool(b) => check(unsafe { sys::napi_get_boolean(env, *b, &mut out) })?,
        Value::Number(n) => check(unsafe { sys::napi_create_double(env, *n, &mut out) })?,
        Value::String(s) if made_ahead(s) => {
            let units = ahead.next().unwrap_or_else(|| to_utf16(s));
            // SAFETY: a valid pointer and length of UTF-16 code units.
            check(unsafe { sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out) })?
        }
        Value::String(s) => return unsafe { string(env, s) },
        Value::Array(a) => check(unsafe { sys::napi_create_array_with_length(env, a.len(), &mut out) })?,
        Value::Object(_) => check(unsafe { sys::napi_create_object(env, &mut out) })?,
    }
    Ok(out)
}

/// A container being filled: its handle and the children still to add.
enum Frame<'v, 'a> {
    Arr(sys::napi_value, std::iter::Enumerate<std::slice::Iter<'v, Value<'a>>>),
    Obj(
        sys::napi_value,
        Box<dyn Iterator<Item = (&'v JsStr<'a>, &'v Value<'a>)> + 'v>,
    ),
}

fn frame<'v, 'a>(h: sys::napi_value, v: &'v Value<'a>) -> Option<Frame<'v, 'a>> {
    match v {
        Value::Array(a) => Some(Frame::Arr(h, a.iter().enumerate())),
        Value::Object(o) => Some(Frame::Obj(h, Box::new(o.iter()))),
        _ => None,
    }
}

/// `v` as a JavaScript value.
///
/// # Safety
/// As [`string`].
pub(crate) unsafe fn build(env: sys::napi_env, v: &Value<'_>) -> Result<sys::napi_value> {
    // SAFETY: as the caller promises.
    unsafe { build_with(env, v, &mut Vec::new().into_iter(), None) }
}

/// The UTF-16 of strings made before (by [`utf16_ahead`]), in the order `build` meets them.
type Ahead = std::vec::IntoIter<Vec<u16>>;

/// Long strings that are not ASCII: V8 would decode their UTF-8 twice (once to measure,
/// once to convert) on the JavaScript thread; their UTF-16 is made ahead instead, on the
/// thread that decodes the entries.
fn made_ahead(s: &JsStr<'_>) -> bool {
    s.as_bytes().len() >= 1024 && !s.as_bytes().is_ascii()
}

fn to_utf16(s: &JsStr<'_>) -> Vec<u16> {
    match s.as_str() {
        // (The standard library's encoder, for the common case: valid UTF-8.)
        Some(t) => t.encode_utf16().collect(),
        None => s.encode_utf16().collect(),
    }
}

/// The UTF-16 of the strings of `v` that [`build`] makes from UTF-16 made ahead, in the
/// order it meets them: depth first, children in order (the same walk, without handles).
/// Strings deferred in `bytes` are not made.
pub(crate) fn utf16_ahead<'t>(v: &Value<'t>, bytes: Option<&'t [u8]>) -> Vec<Vec<u16>> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value<'_>> = vec![v];
    // (A stack of values in reverse child order gives the same preorder as `build`'s
    // stack of iterators.)
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if made_ahead(s) && deferred(bytes, s).is_none() => out.push(to_utf16(s)),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => {
                let n = stack.len();
                stack.extend(o.iter().map(|(_, c)| c));
                stack[n..].reverse();
            }
            _ => {}
        }
    }
    out
}

/// [`build`], taking the UTF-16 of long non-ASCII strings from `ahead`; object members
/// holding a deferred string are defined by `defer`'s function.
///
/// # Safety
/// As [`string`].
unsafe fn build_with<'t>(
    env: sys::napi_env,
    v: &Value<'t>,
    ahead: &mut Ahead,
    defer: Option<Deferral<'t>>,
) -> Result<sys::napi_value> {
    // SAFETY: as the caller promises.
    let root = unsafe { make(env, v, ahead, defer)? };
    let mut stack: Vec<Frame<'_, '_>> = frame(root, v).into_iter().collect();
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Frame::Arr(h, it) => it.next().map(|(i, c)| (*h, Err(i as u32), c)),
            Frame::Obj(h, it) => it.next().map(|(k, c)| (*h, Ok(k), c)),
        };
        let Some((parent, at, child)) = next else {
            stack.pop();
            continue;
        };
        // SAFETY: `env` is live; `parent` and the new handles belong to this call's scope.
        unsafe {
            if let (Some(d), Ok(k), Value::String(s)) = (defer, at, child)
                && k.as_bytes() != b"__proto__"
                && let Some(raw) = Value::deferred_json(d.bytes, s)
            {
                let offset = raw.as_ptr() as usize - d.bytes.as_ptr() as usize;
                let mut args = [parent, string(env, k)?, ptr::null_mut(), ptr::null_mut()];
                check(sys::napi_create_double(env, offset as f64, &mut args[2]))?;
                check(sys::napi_create_double(env, raw.len() as f64, &mut args[3]))?;
                let mut recv = ptr::null_mut();
                check(sys::napi_get_undefined(env, &mut recv))?;
                let mut ignored = ptr::null_mut();
                check(sys::napi_call_function(
                    env,
                    recv,
                    d.define,
                    args.len(),
                    args.as_ptr(),
                    &mut ignored,
                ))?;
                continue;
            }
            let h = make(env, child, ahead, defer)?;
            match at {
                Err(i) => check(sys::napi_set_element(env, parent, i, h))?,
                // `__proto__` as a key would set the prototype: JSON.parse makes it an
                // own data property, and so does defining it.
                Ok(k) if k.as_bytes() == b"__proto__" => {
                    let d = sys::napi_property_descriptor {
                        utf8name: ptr::null(),
                        name: string(env, k)?,
                        method: None,
                        getter: None,
                        setter: None,
                        value: h,
                        attributes: sys::PropertyAttributes::writable
                            | sys::PropertyAttributes::enumerable
                            | sys::PropertyAttributes::configurable,
                        data: ptr::null_mut(),
                    };
                    check(sys::napi_define_properties(env, parent, 1, &d))?
                }
                Ok(k) => check(sys::napi_set_property(env, parent, string(env, k)?, h))?,
            }
            if let Some(f) = frame(h, child) {
                stack.push(f);
            }
        }
    }
    Ok(root)
}

/// A JavaScript array of `len` values made from `values` in order.
///
/// # Safety
/// On the JavaScript thread, with a live `env`.
pub(crate) unsafe fn array_of<'a>(
    env: sys::napi_env,
    len: usize,
    values: impl Iterator<Item = Result<Made<'a>>>,
    defer: Option<Deferral<'a>>,
    release: &dyn Fn(std::ops::Range<usize>),
) -> Result<sys::napi_value> {
    let mut arr = ptr::null_mut();
    check(unsafe { sys::napi_create_array_with_length(env, len, &mut arr) })?;
    for (i, v) in values.enumerate() {
        let (v, ahead, then_release) = v?;
        // One handle scope per element: the handles of its members are let go once it is
        // in the array (else every collection during the call visits them all).
        let mut scope = ptr::null_mut();
        check(unsafe { sys::napi_open_handle_scope(env, &mut scope) })?;
        let made = unsafe { build_with(env, &v, &mut ahead.into_iter(), defer) }
            .and_then(|h| check(unsafe { sys::napi_set_element(env, arr, i as u32, h) }));
        check(unsafe { sys::napi_close_handle_scope(env, scope) })?;
        made?;
        // (After the strings are made: a byte read after a release maps its pages again.)
        for r in then_release {
            release(r);
        }
    }
    Ok(arr)
}

/// A value to make, the UTF-16 of its long non-ASCII strings made ahead, and byte ranges
/// of the file to let go once it is made.
pub(crate) type Made<'a> = (Value<'a>, Vec<Vec<u16>>, Vec<std::ops::Range<usize>>);

/// Entries to make into JavaScript objects, in order (see `NativeSession::entries_made`).
pub struct MadeEntries<'a> {
    pub(crate) s: &'a pi_session::Session,
    pub(crate) pos: Vec<pi_session::EntryPos>,
    /// The function that defines members holding long strings, read when first read
    /// (`None`: every string is made now).
    pub(crate) define: Option<sys::napi_value>,
}

/// How many bytes of lines one decoded window holds, at most (one line more when a line
/// alone is larger): what is decoded ahead of the JavaScript thread stays bounded.
const WINDOW_BYTES: usize = 4 << 20;

/// String values whose JSON text is this long or longer are left in the file until read
/// (see `deferString` in `index.js`): images, long tool outputs.
pub(crate) const DEFER_BYTES: usize = 64 << 10;

/// Lines that lie closer than this are released as one range (with what lies between).
const RELEASE_GAP: usize = 1 << 20;

/// The byte ranges of `lines` (slices of `bytes`), merged where they lie close.
fn ranges_of<'t>(bytes: &[u8], lines: impl Iterator<Item = &'t [u8]>) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for l in lines {
        let start = l.as_ptr() as usize - bytes.as_ptr() as usize;
        let r = start..start + l.len();
        match out.last_mut() {
            Some(last) if r.start >= last.start && r.start <= last.end + RELEASE_GAP => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

impl ToNapiValue for MadeEntries<'_> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let MadeEntries { s, pos, define } = val;
        let pos = &pos;
        let bytes = define.map(|_| s.bytes());
        let defer = define.map(|define| Deferral {
            bytes: s.bytes(),
            define,
        });
        let decode = move |p: pi_session::EntryPos| match bytes {
            Some(_) => s.value_deferring(p, DEFER_BYTES),
            None => s.value(p),
        };
        let release = |r| s.release_range(r);
        if pos.len() < 2 {
            // (No thread for one entry.)
            let values = pos.iter().map(|&p| {
                decode(p).map_err(crate::js_error).map(|v| {
                    let ahead = utf16_ahead(&v, bytes);
                    (v, ahead, Vec::new())
                })
            });
            // SAFETY: on the JavaScript thread, with the env napi gave this conversion.
            return unsafe { array_of(env, pos.len(), values, defer, &release) };
        }
        std::thread::scope(|scope| {
            // At most two windows wait decoded: memory stays a few windows whatever the count.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<pi_session::Result<Made<'_>>>>(2);
            scope.spawn(move || {
                let mut i = 0;
                while i < pos.len() {
                    let mut j = i;
                    let mut size = 0;
                    while j < pos.len() && (j == i || size < WINDOW_BYTES) {
                        size += s.raw(pos[j]).len();
                        j += 1;
                    }
                    let mut window: Vec<_> = pos[i..j]
                        .iter()
                        .map(|&p| {
                            decode(p).map(|v| {
                                let ahead = utf16_ahead(&v, bytes);
                                (v, ahead, Vec::new())
                            })
                        })
                        .collect();
                    // With strings deferred, what is made holds little of the lines: their
                    // pages go once the window's last entry is made.
                    if bytes.is_some()
                        && let Some(Ok(last)) = window.last_mut()
                    {
                        last.2 = ranges_of(s.bytes(), pos[i..j].iter().map(|&p| s.raw(p)));
                    }
                    if tx.send(window).is_err() {
                        return; // The JavaScript side stopped (an error).
                    }
                    i = j;
                }
            });
            let values = rx.into_iter().flatten();
            // SAFETY: on the JavaScript thread, with the env napi gave this conversion.
            unsafe {
                array_of(
                    env,
                    pos.len(),
                    values.map(|v| v.map_err(crate::js_error)),
                    defer,
                    &release,
                )
            }
        })
    }
}
