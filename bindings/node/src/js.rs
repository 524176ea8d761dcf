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

/// A scalar, or an empty array or object to fill.
///
/// # Safety
/// As [`string`].
unsafe fn make(env: sys::napi_env, v: &Value<'_>, ahead: &mut Ahead) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
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
    unsafe { build_with(env, v, &mut Vec::new().into_iter()) }
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
pub(crate) fn utf16_ahead(v: &Value<'_>) -> Vec<Vec<u16>> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value<'_>> = vec![v];
    // (A stack of values in reverse child order gives the same preorder as `build`'s
    // stack of iterators.)
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if made_ahead(s) => out.push(to_utf16(s)),
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

/// [`build`], taking the UTF-16 of long non-ASCII strings from `ahead`.
///
/// # Safety
/// As [`string`].
unsafe fn build_with(env: sys::napi_env, v: &Value<'_>, ahead: &mut Ahead) -> Result<sys::napi_value> {
    // SAFETY: as the caller promises.
    let root = unsafe { make(env, v, ahead)? };
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
            let h = make(env, child, ahead)?;
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
    values: impl Iterator<Item = Result<(Value<'a>, Vec<Vec<u16>>)>>,
) -> Result<sys::napi_value> {
    let mut arr = ptr::null_mut();
    check(unsafe { sys::napi_create_array_with_length(env, len, &mut arr) })?;
    for (i, v) in values.enumerate() {
        let (v, ahead) = v?;
        // One handle scope per element: the handles of its members are let go once it is
        // in the array (else every collection during the call visits them all).
        let mut scope = ptr::null_mut();
        check(unsafe { sys::napi_open_handle_scope(env, &mut scope) })?;
        let made = unsafe { build_with(env, &v, &mut ahead.into_iter()) }
            .and_then(|h| check(unsafe { sys::napi_set_element(env, arr, i as u32, h) }));
        check(unsafe { sys::napi_close_handle_scope(env, scope) })?;
        made?;
    }
    Ok(arr)
}

/// Entries to make into JavaScript objects, in order (see `NativeSession::entries_made`).
pub struct MadeEntries<'a> {
    pub(crate) s: &'a pi_session::Session,
    pub(crate) pos: Vec<pi_session::EntryPos>,
}

/// How many bytes of lines one decoded window holds, at most (one line more when a line
/// alone is larger): what is decoded ahead of the JavaScript thread stays bounded.
const WINDOW_BYTES: usize = 4 << 20;

impl ToNapiValue for MadeEntries<'_> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let MadeEntries { s, pos } = val;
        let pos = &pos;
        std::thread::scope(|scope| {
            // At most two windows wait decoded: memory stays a few windows whatever the count.
            type Made<'v> = pi_session::Result<(Value<'v>, Vec<Vec<u16>>)>;
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Made<'_>>>(2);
            scope.spawn(move || {
                let mut i = 0;
                while i < pos.len() {
                    let mut j = i;
                    let mut bytes = 0;
                    while j < pos.len() && (j == i || bytes < WINDOW_BYTES) {
                        bytes += s.raw(pos[j]).len();
                        j += 1;
                    }
                    let window = pos[i..j]
                        .iter()
                        .map(|&p| {
                            s.value(p).map(|v| {
                                let ahead = utf16_ahead(&v);
                                (v, ahead)
                            })
                        })
                        .collect();
                    if tx.send(window).is_err() {
                        return; // The JavaScript side stopped (an error).
                    }
                    i = j;
                }
            });
            let values = rx.into_iter().flatten();
            // SAFETY: on the JavaScript thread, with the env napi gave this conversion.
            unsafe { array_of(env, pos.len(), values.map(|v| v.map_err(crate::js_error))) }
        })
    }
}
