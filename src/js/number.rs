//! JavaScript number ↔ string conversions, as V8 performs them.
//!
//! * [`format_number`]: `String(x)` / `Number.prototype.toString()` (ES
//!   Number::toString with radix 10): the shortest digit string that
//!   round-trips, in decimal notation for `1e-7 <= |x| < 1e21` and in
//!   exponent notation (`1e+21`, `1.5e-7`) otherwise.
//! * [`json_number`]: what `JSON.stringify` prints for a number.
//! * [`string_to_number`]: ToNumber applied to a string (`Number(s)`,
//!   unary `+s`, and the implicit conversion in `s - t`).
//! * [`parse_json_number`]: the double `JSON.parse` produces for a number
//!   token.
//!
//! Decimal to binary conversions are correctly rounded (round to nearest,
//! ties to even), as in V8; Rust's `str::parse::<f64>` provides exactly that
//! for any input length, so it is used once the JavaScript grammar has been
//! checked here. Binary to decimal starts from Rust's shortest round-trip
//! digits, which are V8's except when the value lies exactly halfway between
//! two shortest candidates: V8 then takes the one with the even last digit
//! (`562949953421328.25` prints as `562949953421328.2`) while Rust rounds
//! up, so such ties are detected exactly and corrected.

use std::fmt::Write as _;

/// A small fixed-capacity buffer for formatting floats without allocating.
struct StackBuf {
    buf: [u8; 40],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        StackBuf { buf: [0; 40], len: 0 }
    }

    fn as_str(&self) -> &str {
        // Only `str` data is ever written into the buffer.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn push_zeros(out: &mut String, n: i32) {
    for _ in 0..n {
        out.push('0');
    }
}

/// Appends JavaScript's `String(x)` (`Number.prototype.toString()` in radix
/// 10) to `out`.
///
/// Examples: `0.1`, `-0` → `0`, `1e+21`, `123456789012345680000`, `1.5e-7`,
/// `0.000001`, `NaN`, `-Infinity`.
pub fn format_number(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // Fast path: integers that print in decimal notation without rounding.
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        let _ = write!(out, "{}", x as i64);
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    let (digits, n) = shortest_digits(x.abs());
    let mut dbuf = StackBuf::new();
    let _ = write!(dbuf, "{digits}");
    let d = dbuf.as_str();
    let k = d.len() as i32;
    // The value is 0.d * 10^n, as in ES Number::toString.
    if k <= n && n <= 21 {
        out.push_str(d);
        push_zeros(out, n - k);
    } else if 0 < n && n <= 21 {
        let split = n as usize;
        out.push_str(&d[..split]);
        out.push('.');
        out.push_str(&d[split..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        push_zeros(out, -n);
        out.push_str(d);
    } else {
        out.push_str(&d[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&d[1..]);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// Shortest round-trip decimal digits of the positive finite `x`, as V8
/// chooses them: returns `(digits, n)` with `x ≈ 0.digits × 10^n` and no
/// trailing zeros in `digits`.
///
/// Among the shortest digit strings that read back as `x`, the one closest to
/// `x` is chosen; when `x` lies exactly halfway between two of them, V8 takes
/// the one with an even last digit, while Rust's formatter rounds such ties
/// up, so ties are detected and corrected here.
fn shortest_digits(x: f64) -> (u64, i32) {
    let mut buf = StackBuf::new();
    // `{:e}` yields the shortest round-trip digits as `d[.ddd]e<exp>`; it
    // fits in the buffer (at most 17 digits and a short exponent).
    let _ = write!(buf, "{:e}", x);
    let s = buf.as_str();
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: u64 = 0;
    let mut k: u32 = 0;
    for c in mantissa.bytes().filter(u8::is_ascii_digit) {
        digits = digits * 10 + u64::from(c - b'0');
        k += 1;
    }
    let n = exp + 1;
    if let Some(sig) = exact_significand(x) {
        // A tie: x is exactly halfway between two k-digit candidates, i.e.
        // its exact decimal significand has k + 1 digits and ends in 5.
        if sig % 10 == 5 && decimal_len(sig) == k + 1 {
            let low = (sig / 10) as u64;
            let even = if low & 1 == 0 { low } else { low + 1 };
            if even != digits && decimal_len(u128::from(even)) == k {
                // Check that the even candidate also reads back as x.
                let mut cbuf = StackBuf::new();
                let _ = write!(cbuf, "{}e{}", even, n - k as i32);
                if cbuf.as_str().parse::<f64>() == Ok(x) {
                    return (even, n);
                }
            }
        }
    }
    (digits, n)
}

/// Number of decimal digits of `v` (`v > 0`).
fn decimal_len(mut v: u128) -> u32 {
    let mut len = 0;
    while v > 0 {
        v /= 10;
        len += 1;
    }
    len
}

/// The exact decimal significand of the positive finite `x` (its exact
/// decimal digits with trailing zeros removed), when it is small enough to
/// matter for tie detection and ends in an odd digit; `None` otherwise.
///
/// Write `x = m × 2^q` with `m` odd. For `q < 0`, `x = m × 5^-q / 10^-q` and
/// the significand is `m × 5^-q` (odd, so no trailing zero); it has more than
/// 18 digits once `-q > 32`. For `q >= 0` the significand is odd only when
/// `5^q` divides `m`, and is then `m / 5^q`.
fn exact_significand(x: f64) -> Option<u128> {
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut q) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    if m == 0 {
        return None;
    }
    let tz = m.trailing_zeros();
    m >>= tz;
    q += tz as i32;
    if q < 0 {
        let p = (-q) as u32;
        if p > 32 {
            return None;
        }
        Some(u128::from(m) * 5u128.pow(p))
    } else {
        let mut s = m;
        for _ in 0..q {
            if s % 5 != 0 {
                return None;
            }
            s /= 5;
        }
        Some(u128::from(s))
    }
}

/// Appends what `JSON.stringify` prints for the number `x`: the same as
/// [`format_number`], except that `NaN` and the infinities print as `null`.
pub fn json_number(x: f64, out: &mut String) {
    if x.is_finite() {
        format_number(x, out);
    } else {
        out.push_str("null");
    }
}

/// Whether `c` is a JavaScript WhiteSpace or LineTerminator code point (the
/// characters `String.prototype.trim` and StringToNumber strip).
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{A}' | '\u{B}' | '\u{C}' | '\u{D}' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// JavaScript's ToNumber applied to a string (StringToNumber), e.g. `Number(s)`.
///
/// Leading and trailing JavaScript whitespace and line terminators are
/// ignored; an empty (or all-whitespace) string gives `0`. Accepted are
/// `Infinity` with an optional sign, decimal literals with an optional sign
/// (`12`, `-1.5`, `.5`, `5.`, `1e-7`, `00012`), and unsigned `0x`, `0o`, `0b`
/// integers (either letter case). Everything else, including numeric
/// separators (`1_000`), gives `NaN`. Results are correctly rounded.
pub fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_whitespace);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix_bits = match b[1] {
            b'x' | b'X' => 4,
            b'o' | b'O' => 3,
            b'b' | b'B' => 1,
            _ => 0,
        };
        if radix_bits != 0 {
            return parse_power_of_two_radix(&b[2..], radix_bits);
        }
    }
    let (sign, unsigned) = match b[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if unsigned == "Infinity" {
        return sign * f64::INFINITY;
    }
    if !is_str_unsigned_decimal_literal(unsigned.as_bytes()) {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// StrUnsignedDecimalLiteral without `Infinity`: `digits [. [digits]] [exp]`
/// or `. digits [exp]`, where `exp` is `e|E [+|-] digits`.
fn is_str_unsigned_decimal_literal(b: &[u8]) -> bool {
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - frac_start;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// Parses the digits of a `0x` / `0o` / `0b` literal (radix `2^bits`),
/// rounding to nearest, ties to even; `NaN` when empty or not all digits.
fn parse_power_of_two_radix(digits: &[u8], bits: u32) -> f64 {
    if digits.is_empty() {
        return f64::NAN;
    }
    let radix = 1u32 << bits;
    let mut top: u64 = 0; // the first (up to) 53 significant bits
    let mut round_bit = false; // the 54th significant bit
    let mut sticky = false; // whether any later bit is set
    let mut nbits: u64 = 0; // number of significant bits
    for &c in digits {
        let Some(d) = (c as char).to_digit(radix) else {
            return f64::NAN;
        };
        for j in (0..bits).rev() {
            let bit = u64::from((d >> j) & 1);
            if nbits == 0 && bit == 0 {
                continue;
            }
            if nbits < 53 {
                top = (top << 1) | bit;
            } else if nbits == 53 {
                round_bit = bit == 1;
            } else if bit == 1 {
                sticky = true;
            }
            nbits += 1;
        }
    }
    if nbits <= 53 {
        return top as f64;
    }
    let mut exp = nbits - 53;
    if round_bit && (sticky || top & 1 == 1) {
        top += 1;
        if top == 1 << 53 {
            top >>= 1;
            exp += 1;
        }
    }
    if exp > 1024 {
        return f64::INFINITY;
    }
    // `top < 2^53` converts exactly; scaling by powers of two is exact up to
    // overflow, which correctly gives Infinity.
    let mut v = top as f64;
    let mut e = exp as i32;
    while e > 0 {
        let step = e.min(1000);
        v *= f64::from_bits(((1023 + step) as u64) << 52);
        e -= step;
    }
    v
}

/// The double `JSON.parse` yields for the JSON number token `text`
/// (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), correctly rounded;
/// magnitudes too large give ±Infinity (`1e400`), `-0` stays `-0.0`.
///
/// Text that does not start like a JSON number gives `NaN`; the rest of the
/// grammar is not re-validated.
pub fn parse_json_number(text: &str) -> f64 {
    match text.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => text.parse::<f64>().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(x: f64) -> String {
        let mut s = String::new();
        format_number(x, &mut s);
        s
    }

    #[test]
    fn format_matches_node() {
        // Expected strings from Node 20 `String(x)`.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (1.0, "1"),
            (-42.0, "-42"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1.5e-7, "1.5e-7"),
            (1e-7, "1e-7"),
            (1e-6, "0.000001"),
            (1.2345e-6, "0.0000012345"),
            (-1.2345678901234568e25, "-1.2345678901234568e+25"),
            (9007199254740993.0, "9007199254740992"),
            (2f64.powi(53) * 3.0, "27021597764222976"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (1.7e308, "1.7e+308"),
            (123.456, "123.456"),
            (1_700_000_000_000.5, "1700000000000.5"),
            // Exact ties between two shortest candidates: V8 takes the even one.
            (562949953421328.0 + 0.25, "562949953421328.2"),
            (134139716625213.0 + 0.625, "134139716625213.62"),
            (76260835620.0 + 0.765625, "76260835620.76562"),
        ];
        for &(x, want) in cases {
            assert_eq!(fmt(x), want, "String({x:e})");
        }
        let mut s = String::new();
        json_number(f64::NAN, &mut s);
        json_number(f64::NEG_INFINITY, &mut s);
        json_number(-0.0, &mut s);
        assert_eq!(s, "nullnull0");
    }

    #[test]
    fn string_to_number_matches_node() {
        // Expected values from Node 20 `Number(s)`; `None` stands for NaN.
        let cases: &[(&str, Option<f64>)] = &[
            ("", Some(0.0)),
            (" \t\n\u{FEFF}\u{A0}\u{3000} ", Some(0.0)),
            ("\u{2028}12\u{205F}", Some(12.0)),
            ("\u{85}1", None),
            ("Infinity", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("+Infinity", Some(f64::INFINITY)),
            ("infinity", None),
            ("inf", None),
            ("NaN", None),
            ("-0", Some(-0.0)),
            ("+.5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-5.e1", Some(-50.0)),
            (".", None),
            ("e5", None),
            ("1e", None),
            ("1e+", None),
            ("0012", Some(12.0)),
            ("1_000", None),
            ("1 2", None),
            ("0x1F", Some(31.0)),
            ("0XfF", Some(255.0)),
            ("-0x1F", None),
            ("0x", None),
            ("0o17", Some(15.0)),
            ("0b101", Some(5.0)),
            ("0b102", None),
            ("0x20000000000001", Some(9007199254740992.0)),
            ("0x20000000000003", Some(9007199254740996.0)),
            ("0x20000000000001000000001", Some(6.189700196426903e26)),
            ("+0x1", None),
            ("0x1.5", None),
            ("00x1", None),
            ("0o8", None),
            ("\u{180E}1", None),
            ("\u{200B}1", None),
            ("-.e1", None),
            ("1.e5", Some(1e5)),
            (".0e-0", Some(0.0)),
            ("1e400", Some(f64::INFINITY)),
            ("-1e-400", Some(-0.0)),
            ("2.4703282292062328e-324", Some(5e-324)),
            ("9007199254740993", Some(9007199254740992.0)),
            ("9007199254740993.0000000000000000001", Some(9007199254740994.0)),
        ];
        for &(s, want) in cases {
            let got = string_to_number(s);
            match want {
                None => assert!(got.is_nan(), "Number({s:?}) = {got}"),
                Some(w) => assert!(got.to_bits() == w.to_bits(), "Number({s:?}) = {got:e}, want {w:e}"),
            }
        }
        let long_hex = format!("0x{}", "f".repeat(300));
        assert_eq!(string_to_number(&long_hex), f64::INFINITY);
    }

    #[test]
    fn json_parse_numbers() {
        assert_eq!(parse_json_number("1e400"), f64::INFINITY);
        assert_eq!(parse_json_number("-1e400"), f64::NEG_INFINITY);
        assert!(parse_json_number("-0").is_sign_negative());
        assert_eq!(parse_json_number("0.1"), 0.1);
        assert_eq!(parse_json_number("1.7976931348623158e308"), f64::MAX);
        assert!(parse_json_number("Infinity").is_nan());
    }
}
