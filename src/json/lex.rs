//! The JSON lexer's scalar pieces, shared by every walker and by the decoder: numbers,
//! the control-byte test of string bodies, `\u` hex digits.

/// End of the JSON number token starting at `i`, or the offset of the first bad byte.
#[inline(always)]
pub(crate) fn number_end(b: &[u8], mut i: usize) -> Result<usize, usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits_end(b, i + 1),
        _ => return Err(i),
    }
    if b.get(i) == Some(&b'.') {
        let d = digits_end(b, i + 1);
        if d == i + 1 {
            return Err(d);
        }
        i = d;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let d = digits_end(b, i);
        if d == i {
            return Err(i);
        }
        i = d;
    }
    Ok(i)
}

/// The end of the run of ASCII digits starting at `i`, eight bytes at a time (costs and
/// fractions have 15-20 digits).
#[inline(always)]
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // Per byte t = x ^ '0': a digit iff t < 10. Bit 7 of each byte of `non_digit` is
        // set iff t >= 0x80 or (t & 0x7F) >= 10 (adding 0x76 carries no further).
        let t = x ^ 0x3030_3030_3030_3030;
        let non_digit = (t | ((t & 0x7F7F_7F7F_7F7F_7F7F) + 0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080;
        if non_digit != 0 {
            return i + (non_digit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The first byte below 0x20 (invalid inside a JSON string), checked with a vectorisable
/// reduction first because it almost never occurs. (The naive twins' piece: the block-wise
/// skipper and decoder find control bytes in their masks.)
#[cfg(any(test, feature = "internals"))]
#[inline]
pub(crate) fn first_control(run: &[u8]) -> Option<usize> {
    if run.iter().copied().fold(0xFFu8, u8::min) >= 0x20 {
        return None;
    }
    run.iter().position(|&c| c < 0x20)
}

pub(crate) fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let h = b.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in h {
        v = (v << 4) | (c as char).to_digit(16)?;
    }
    Some(v)
}
