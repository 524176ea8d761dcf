//! Wall-clock time as JavaScript's `Date.prototype.toISOString()` prints it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// The current time as `toISOString()` prints it.
pub fn now_iso() -> String {
    iso_from_ms(now_ms() as f64).expect("the current time is a valid date")
}

/// `new Date(ms).toISOString()`, or `None` for an invalid date (where JavaScript throws and
/// `JSON.stringify` prints `null`).
pub fn iso_from_ms(ms: f64) -> Option<String> {
    let ms = crate::js::date::time_clip(ms);
    if ms.is_nan() {
        return None;
    }
    let ms = ms as i64;
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", -y)
    } else {
        format!("+{y:06}")
    };
    Some(format!("{year}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"))
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_matches_javascript() {
        assert_eq!(iso_from_ms(0.0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_ms(1_765_233_665_292.0).unwrap(), "2025-12-08T22:41:05.292Z");
        assert_eq!(iso_from_ms(-1.0).unwrap(), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso_from_ms(8.64e15).unwrap(), "+275760-09-13T00:00:00.000Z");
        assert_eq!(iso_from_ms(-8.64e15).unwrap(), "-271821-04-20T00:00:00.000Z");
        assert!(iso_from_ms(f64::NAN).is_none());
    }
}
