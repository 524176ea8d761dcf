//! JSON writing helpers whose output is what `JSON.stringify` writes (numbers, string
//! escapes, ISO dates), plus ids, UUID v7 and base64.

use std::fmt::Write as _;

use super::rng::Rng;

pub(super) const HEX: &[u8; 16] = b"0123456789abcdef";
const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

#[inline]
pub(super) fn put(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(s.as_bytes());
}

pub(super) fn put_u64(b: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    b.extend_from_slice(&tmp[i..]);
}

pub(super) fn put_i64(b: &mut Vec<u8>, v: i64) {
    if v < 0 {
        b.push(b'-');
    }
    put_u64(b, v.unsigned_abs());
}

/// A finite number the way JavaScript's `String(number)` prints it.
pub(super) fn put_f64(b: &mut Vec<u8>, v: f64) {
    if v == 0.0 || !v.is_finite() {
        b.push(b'0');
        return;
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        put_i64(b, v as i64);
    } else if (1e-6..1e21).contains(&a) {
        let _ = write!(VecFmt(b), "{v}");
    } else {
        // Exponent form: Rust prints `1.5e-7`, JavaScript `1.5e-7` too
        // (positive exponents never occur here).
        let _ = write!(VecFmt(b), "{v:e}");
    }
}

struct VecFmt<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecFmt<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The inside of a JSON string, escaped as `JSON.stringify` escapes it.
pub(super) fn put_esc(b: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let e: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                b.extend_from_slice(&bytes[start..i]);
                b.extend_from_slice(b"\\u00");
                b.push(HEX[(c >> 4) as usize]);
                b.push(HEX[(c & 15) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        b.extend_from_slice(&bytes[start..i]);
        b.extend_from_slice(e);
        start = i + 1;
    }
    b.extend_from_slice(&bytes[start..]);
}

/// A JSON string.
pub(super) fn put_str(b: &mut Vec<u8>, s: &str) {
    b.push(b'"');
    put_esc(b, s);
    b.push(b'"');
}

pub(super) fn put_id(b: &mut Vec<u8>, id: u32) {
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = HEX[((id >> (28 - 4 * i)) & 15) as usize];
    }
    b.extend_from_slice(&out);
}

pub(super) fn id_string(id: u32) -> String {
    format!("{id:08x}")
}

pub(super) fn put_hex(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        b.push(HEX[rng.below(16) as usize]);
    }
}

pub(super) fn put_alnum(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    for _ in 0..n {
        b.push(ALNUM[rng.below(62) as usize]);
    }
}

/// `n` random base64 characters (`n` rounded up to a multiple of 4).
pub(super) fn put_b64_random(b: &mut Vec<u8>, rng: &mut Rng, n: usize) {
    let mut left = n.div_ceil(4) * 4;
    while left > 0 {
        let v = rng.next();
        let k = left.min(8);
        for i in 0..k {
            b.push(B64[((v >> (6 * i)) & 63) as usize]);
        }
        left -= k;
    }
}

/// Standard base64 with padding.
pub(super) fn b64_encode(b: &mut Vec<u8>, data: &[u8]) {
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let v = (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32;
        b.extend_from_slice(&[
            B64[(v >> 18) as usize & 63],
            B64[(v >> 12) as usize & 63],
            B64[(v >> 6) as usize & 63],
            B64[v as usize & 63],
        ]);
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        let v = (r[0] as u32) << 16 | (*r.get(1).unwrap_or(&0) as u32) << 8;
        b.push(B64[(v >> 18) as usize & 63]);
        b.push(B64[(v >> 12) as usize & 63]);
        b.push(if r.len() == 2 {
            B64[(v >> 6) as usize & 63]
        } else {
            b'='
        });
        b.push(b'=');
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe as i64 + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as `Date.prototype.toISOString` writes it
/// (years 0-9999).
pub(super) fn put_iso(b: &mut Vec<u8>, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    let y = y.clamp(0, 9999) as u32;
    let two = |b: &mut Vec<u8>, v: u32| {
        b.push(b'0' + (v / 10) as u8);
        b.push(b'0' + (v % 10) as u8);
    };
    two(b, y / 100);
    two(b, y % 100);
    b.push(b'-');
    two(b, mo);
    b.push(b'-');
    two(b, d);
    b.push(b'T');
    two(b, h as u32);
    b.push(b':');
    two(b, mi as u32);
    b.push(b':');
    two(b, s as u32);
    b.push(b'.');
    b.push(b'0' + (milli / 100) as u8);
    two(b, (milli % 100) as u32);
    b.push(b'Z');
}

pub(super) fn uuid_v7(ms: i64, rng: &mut Rng) -> String {
    let ms = ms.max(0) as u64 & 0xFFFF_FFFF_FFFF;
    let ra = rng.next();
    let rb = rng.next();
    let hi = (ms << 16) | 0x7000 | (ra & 0x0FFF);
    let lo = (rb & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}
