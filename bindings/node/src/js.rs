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
            let units = utf16(s.as_bytes());
            // SAFETY: as above, with UTF-16 code units.
            check(unsafe { sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut out) })?
        }
    }
    Ok(out)
}

/// WTF-8 bytes (UTF-8 that may encode lone surrogates) as UTF-16 code units; a byte that
/// starts no sequence becomes U+FFFD.
fn utf16(b: &[u8]) -> Vec<u16> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let (cp, n) = match c {
            0x00..=0x7F => (u32::from(c), 1),
            0xC0..=0xDF if i + 1 < b.len() => ((u32::from(c & 0x1F) << 6) | u32::from(b[i + 1] & 0x3F), 2),
            0xE0..=0xEF if i + 2 < b.len() => (
                (u32::from(c & 0x0F) << 12) | (u32::from(b[i + 1] & 0x3F) << 6) | u32::from(b[i + 2] & 0x3F),
                3,
            ),
            0xF0..=0xF7 if i + 3 < b.len() => (
                (u32::from(c & 0x07) << 18)
                    | (u32::from(b[i + 1] & 0x3F) << 12)
                    | (u32::from(b[i + 2] & 0x3F) << 6)
                    | u32::from(b[i + 3] & 0x3F),
                4,
            ),
            _ => (0xFFFD, 1),
        };
        if cp >= 0x10000 {
            let v = cp - 0x10000;
            out.push(0xD800 | (v >> 10) as u16);
            out.push(0xDC00 | (v & 0x3FF) as u16);
        } else {
            out.push(cp as u16);
        }
        i += n;
    }
    out
}

/// A scalar, or an empty array or object to fill.
///
/// # Safety
/// As [`string`].
unsafe fn make(env: sys::napi_env, v: &Value<'_>) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY (each call): `env` is live, `out` is written by napi.
    match v {
        Value::Null => check(unsafe { sys::napi_get_null(env, &mut out) })?,
        Value::Bool(b) => check(unsafe { sys::napi_get_boolean(env, *b, &mut out) })?,
        Value::Number(n) => check(unsafe { sys::napi_create_double(env, *n, &mut out) })?,
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
    let root = unsafe { make(env, v)? };
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
            let h = make(env, child)?;
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

#[cfg(test)]
mod tests {
    use super::utf16;

    #[test]
    fn wtf8_to_utf16() {
        assert_eq!(utf16("aé€😀".as_bytes()), "aé€😀".encode_utf16().collect::<Vec<_>>());
        // A lone high surrogate as WTF-8 (ED A0 80) stays a lone surrogate.
        assert_eq!(utf16(&[0x61, 0xED, 0xA0, 0x80, 0x62]), vec![0x61, 0xD800, 0x62]);
    }
}
