//! Times for people: in the local time zone (`TZ`, else `/etc/localtime`, through `jiff`
//! and the system's zoneinfo) or in UTC (`--utc`), and ages as pi's `/resume` picker
//! prints them (`5m`, `3h`, `2d`, `1w`, `4mo`).
//!
//! Times in session files are Unix milliseconds as JavaScript holds them (`f64`, NaN for an
//! invalid date); a time that is NaN or outside the years -9999..=9999 has no local form
//! (`None`).
//!
//! ```text
//! let zone = Zone::new(false);               // TZ=Europe/Berlin
//! zone.local(1764076080000.0)                // Some("2025-11-25 14:08")
//! zone.stamp(1764076083000.0)                // Some("2025-11-25 14:08:03 CET")
//! zone.abbreviation(1764076080000.0)         // Some("CET")
//! age(1764076080000.0, 1764086880000.0)      // "3h"
//! ```

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use std::fmt::Write as _;

/// The zone of the transcript commands (`show`, `export`), set once from `--utc`.
static TRANSCRIPT: std::sync::OnceLock<Zone> = std::sync::OnceLock::new();

/// Set the zone [`transcript_zone`] answers (the first call wins).
pub fn set_transcript_zone(zone: Zone) {
    let _ = TRANSCRIPT.set(zone);
}

/// The zone `show` and `export` print times in: the system's unless `--utc`.
pub fn transcript_zone() -> &'static Zone {
    TRANSCRIPT.get_or_init(|| Zone::new(false))
}

/// A session's ISO timestamp as a transcript shows it ([`transcript_zone`]):
/// `2025-12-01 10:01:53 CET`; any other text as it is.
pub fn stamp(iso: &str) -> String {
    transcript_zone().stamp_iso(iso).unwrap_or_else(|| iso.to_owned())
}

/// Where times are shown: the system's time zone or UTC.
#[derive(Clone, Debug)]
pub struct Zone {
    tz: TimeZone,
}

impl Zone {
    /// UTC when `utc`, else the system's zone: `TZ` when it names one (an IANA name, a
    /// TZif path or a POSIX rule), else `/etc/localtime`; UTC when neither is usable.
    pub fn new(utc: bool) -> Zone {
        if !utc {
            return Zone::of(TimeZone::try_system().unwrap_or(TimeZone::UTC));
        }
        Zone::of(TimeZone::UTC)
    }

    /// Times in `tz`.
    pub fn of(tz: TimeZone) -> Zone {
        Zone { tz }
    }

    fn at(&self, ms: f64) -> Option<(DateTime, Timestamp)> {
        if !ms.is_finite() {
            return None;
        }
        // Whole milliseconds, as JavaScript's TimeClip keeps them.
        let ts = Timestamp::from_millisecond(ms.trunc() as i64).ok()?;
        Some((self.tz.to_datetime(ts), ts))
    }

    /// Date and time to the minute: `2025-11-25 14:08`.
    pub fn local(&self, ms: f64) -> Option<String> {
        let (dt, _) = self.at(ms)?;
        let mut s = String::with_capacity(16);
        push_date(&mut s, dt);
        let _ = write!(s, " {:02}:{:02}", dt.hour(), dt.minute());
        Some(s)
    }

    /// Date, time to the second and the zone's abbreviation, for a header line:
    /// `2025-11-25 14:08:03 CET`.
    pub fn stamp(&self, ms: f64) -> Option<String> {
        let (dt, ts) = self.at(ms)?;
        let mut s = String::with_capacity(24);
        push_date(&mut s, dt);
        let info = self.tz.to_offset_info(ts);
        let _ = write!(
            s,
            " {:02}:{:02}:{:02} {}",
            dt.hour(),
            dt.minute(),
            dt.second(),
            info.abbreviation()
        );
        Some(s)
    }

    /// [`Zone::stamp`] of an ISO 8601 time with a zone or offset (pi's `toISOString()`
    /// timestamps: `2025-11-25T13:08:03.440Z`); `None` for any other text.
    pub fn stamp_iso(&self, iso: &str) -> Option<String> {
        let ts: Timestamp = iso.parse().ok()?;
        self.stamp(ts.as_millisecond() as f64)
    }

    /// The zone's abbreviation at that time (`CET`, `CEST`, `EST`, `JST`, `UTC`; a zone
    /// without one gives its offset, e.g. `+0530`... as the zoneinfo file spells it).
    pub fn abbreviation(&self, ms: f64) -> Option<String> {
        let (_, ts) = self.at(ms)?;
        Some(self.tz.to_offset_info(ts).abbreviation().to_owned())
    }

    /// The zone `tz`.
    pub fn with(tz: TimeZone) -> Zone {
        Zone { tz }
    }

    /// A `--since`/`--until` value, one grammar for every command: a day `2025-11-01` or
    /// `20251101` (in this zone), a local date and time `2025-11-01T14:00` or
    /// `2025-11-01 14:00[:ss]` (that instant), or an age before `now_ms` as the age column
    /// prints it: `30m`, `3h`, `2d`, `1w`, `4mo` (30 days), `1y` (365 days).
    ///
    /// # Errors
    /// A value of none of these forms, or a date the zone cannot place.
    pub fn when(&self, s: &str, now_ms: f64) -> Result<When, String> {
        let t = s.trim();
        if let Some(ms) = age_back(t) {
            return Ok(When::At(now_ms - ms));
        }
        let bad = || format!("{s}: not a date (YYYY-MM-DD, YYYYMMDD, YYYY-MM-DD HH:MM or an age such as 3d)");
        if t.len() == 8 && t.bytes().all(|b| b.is_ascii_digit()) {
            let iso = format!("{}-{}-{}", &t[..4], &t[4..6], &t[6..]);
            let d = iso.parse::<Date>().map_err(|_| bad())?;
            self.day_start(d, true)?;
            return Ok(When::Day(d));
        }
        // (jiff reads a date out of a date and time too: a time decides.)
        let has_time = t.contains([' ', 'T', 't']);
        if !has_time && let Ok(d) = t.parse::<Date>() {
            self.day_start(d, true)?;
            return Ok(When::Day(d));
        }
        let dt: DateTime = t.replacen(' ', "T", 1).parse().map_err(|_| bad())?;
        let z = dt.to_zoned_datetime(self.tz.clone()).map_err(|e| e.to_string())?;
        Ok(When::At(z.timestamp().as_millisecond() as f64))
    }

    /// The first millisecond of `d` (with `next`, of the day after) in this zone.
    fn day_start(&self, d: Date, next: bool) -> Result<f64, String> {
        let d = if next {
            d.tomorrow().map_err(|e| e.to_string())?
        } else {
            d
        };
        let z = d.to_zoned_datetime(self.tz.clone()).map_err(|e| e.to_string())?;
        Ok(z.timestamp().as_millisecond() as f64)
    }

    /// `--since`/`--until` read with [`Zone::when`], as a usage error naming the flag,
    /// and a warning when the range is empty because since is after until.
    ///
    /// # Errors
    /// A value that is no date (a usage error).
    pub fn range(
        &self,
        since: Option<&str>,
        until: Option<&str>,
        now_ms: f64,
    ) -> anyhow::Result<(Option<When>, Option<When>)> {
        let read = |flag: &str, v: Option<&str>| -> anyhow::Result<Option<When>> {
            v.map(|v| self.when(v, now_ms)).transpose().map_err(|e| {
                anyhow::anyhow!(crate::show::Printable::kind(
                    format!("{flag} {}", pi_session::text::escape(&e)),
                    crate::show::Kind::Usage
                ))
            })
        };
        let (s, u) = (read("--since", since)?, read("--until", until)?);
        if let (Some(a), Some(b)) = (s, u) {
            let start = self.start_ms(a);
            let end = match b {
                When::Day(d) => self.day_start(d, true).ok(),
                When::At(ms) => Some(ms),
            };
            if let (Some(x), Some(y)) = (start, end)
                && x >= y
            {
                eprintln!(
                    "pi-session: warning: --since {} is not before --until {}: nothing can match",
                    pi_session::text::escape(since.unwrap_or_default()),
                    pi_session::text::escape(until.unwrap_or_default())
                );
            }
        }
        Ok((s, u))
    }

    /// Where a bound begins, Unix ms.
    pub fn start_ms(&self, w: When) -> Option<f64> {
        match w {
            When::At(ms) => Some(ms),
            When::Day(d) => self.day_start(d, false).ok(),
        }
    }

    /// Where a bound that ends a range ends (a day: with all of it), Unix ms, exclusive
    /// for a day.
    pub fn end_ms(&self, w: When) -> Option<f64> {
        match w {
            When::At(ms) => Some(ms),
            When::Day(d) => self.day_start(d, true).ok(),
        }
    }
}

/// A `--since`/`--until` value read ([`Zone::when`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// A whole day, in the zone it was read in.
    Day(Date),
    /// An instant, Unix ms.
    At(f64),
}

fn push_date(s: &mut String, dt: DateTime) {
    let y = dt.year();
    if y < 0 {
        let _ = write!(s, "-{:04}", -i32::from(y));
    } else {
        let _ = write!(s, "{y:04}");
    }
    let _ = write!(s, "-{:02}-{:02}", dt.month(), dt.day());
}

/// `30m`, `3h`, `2d`, `1w`, `4mo`, `1y` as milliseconds.
fn age_back(s: &str) -> Option<f64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: f64 = s[..digits].parse().ok()?;
    let unit = match &s[digits..] {
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        "w" => 7.0 * 86_400_000.0,
        "mo" => 30.0 * 86_400_000.0,
        "y" => 365.0 * 86_400_000.0,
        _ => return None,
    };
    Some(n * unit)
}

/// How long ago `ms` was, as pi's `/resume` picker (`formatSessionDate`) prints it:
/// `now` under a minute (and for a time in the future), then whole minutes `5m`, hours
/// `3h`, days `2d` (under 7), weeks `1w` (under 30 days), months of 30 days `4mo` (under
/// 365 days), years of 365 days `2y`; each rounded down. An invalid date is `?` (pi
/// prints `NaNy`).
pub fn age(ms: f64, now_ms: f64) -> String {
    let diff = now_ms - ms;
    if diff.is_nan() {
        return "?".into();
    }
    let mins = (diff / 60_000.0).floor();
    let hours = (diff / 3_600_000.0).floor();
    let days = (diff / 86_400_000.0).floor();
    if mins < 1.0 {
        "now".into()
    } else if mins < 60.0 {
        format!("{mins}m")
    } else if hours < 24.0 {
        format!("{hours}h")
    } else if days < 7.0 {
        format!("{days}d")
    } else if days < 30.0 {
        format!("{}w", (days / 7.0).floor())
    } else if days < 365.0 {
        format!("{}mo", (days / 30.0).floor())
    } else {
        format!("{}y", (days / 365.0).floor())
    }
}

/// Now, in Unix ms; for tests the environment variable `PI_SESSION_NOW_MS` (a number of
/// milliseconds) stands in for the clock.
pub fn now_ms() -> f64 {
    if let Some(ms) = std::env::var("PI_SESSION_NOW_MS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return ms;
    }
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as f64,
        Err(e) => -(e.duration().as_millis() as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 60_000.0;
    const DAY: f64 = 86_400_000.0;

    #[test]
    fn ages_follow_pis_picker() {
        let now = 1_764_086_880_000.0;
        for (ago, want) in [
            (-5.0 * MIN, "now"),
            (0.0, "now"),
            (59_999.0, "now"),
            (MIN, "1m"),
            (59.0 * MIN, "59m"),
            (60.0 * MIN, "1h"),
            (23.0 * 60.0 * MIN + 59.0 * MIN, "23h"),
            (DAY, "1d"),
            (6.9 * DAY, "6d"),
            (7.0 * DAY, "1w"),
            (29.9 * DAY, "4w"),
            (30.0 * DAY, "1mo"),
            (364.0 * DAY, "12mo"),
            (365.0 * DAY, "1y"),
            (800.0 * DAY, "2y"),
        ] {
            assert_eq!(age(now - ago, now), want, "{ago} ms ago");
        }
        assert_eq!(age(f64::NAN, now), "?");
    }

    /// `TZ` decides the local time; `TZ=UTC` is `--utc`. (Zones are built from files here,
    /// not from the process's `TZ`, so that tests in parallel do not race on it.)
    #[test]
    fn zones_give_different_local_times() {
        let ms = 1_764_079_683_000.0; // 2025-11-25T14:08:03Z
        let zone = |name: &str| Zone {
            tz: TimeZone::get(name).expect("the system's zoneinfo has it"),
        };
        let (ny, tokyo, berlin) = (zone("America/New_York"), zone("Asia/Tokyo"), zone("Europe/Berlin"));
        assert_eq!(ny.local(ms).as_deref(), Some("2025-11-25 09:08"));
        assert_eq!(tokyo.local(ms).as_deref(), Some("2025-11-25 23:08"));
        assert_eq!(berlin.stamp(ms).as_deref(), Some("2025-11-25 15:08:03 CET"));
        assert_eq!(berlin.abbreviation(ms - 150.0 * DAY).as_deref(), Some("CEST"));
        assert_eq!(ny.abbreviation(ms).as_deref(), Some("EST"));
        let utc = Zone::new(true);
        assert_eq!(utc.stamp(ms).as_deref(), Some("2025-11-25 14:08:03 UTC"));
        assert_eq!(zone("UTC").local(ms), utc.local(ms));
        assert_eq!(utc.local(f64::NAN), None);
        assert_eq!(utc.local(8.64e15), None, "year 275760: out of jiff's range");
        assert_eq!(utc.local(-62_198_755_200_000.0).as_deref(), Some("-0001-01-01 00:00"));
    }

    #[test]
    fn bounds_are_local_dates_times_or_ages() {
        let tokyo = Zone {
            tz: TimeZone::get("Asia/Tokyo").expect("zoneinfo"),
        };
        let now = 1_764_079_683_000.0;
        let bound_of = |z: &Zone, s: &str, end: bool| -> Result<f64, String> {
            let w = z.when(s, now)?;
            Ok(if end { z.end_ms(w) } else { z.start_ms(w) }.expect("placed"))
        };
        // 2025-11-01 00:00 in Tokyo is 2025-10-31T15:00Z.
        assert_eq!(bound_of(&tokyo, "2025-11-01", false), Ok(1_761_922_800_000.0));
        assert_eq!(bound_of(&tokyo, "2025-11-01", true), Ok(1_761_922_800_000.0 + DAY));
        assert_eq!(bound_of(&tokyo, "2025-11-01 09:30", false), Ok(1_761_957_000_000.0));
        assert_eq!(bound_of(&tokyo, "2025-11-01T09:30:00", false), Ok(1_761_957_000_000.0));
        assert_eq!(bound_of(&tokyo, "3d", false), Ok(now - 3.0 * DAY));
        assert_eq!(bound_of(&tokyo, "2mo", false), Ok(now - 60.0 * DAY));
        assert!(bound_of(&tokyo, "yesterday", false).is_err());
        assert!(bound_of(&tokyo, "2025-13-01", false).is_err());
        assert!(bound_of(&tokyo, "3x", false).is_err());
        // ccusage's day form, one grammar for every command (#36).
        assert_eq!(bound_of(&tokyo, "20251101", false), Ok(1_761_922_800_000.0));
        assert_eq!(
            tokyo.when("20251101", now),
            Ok(When::Day(jiff::civil::date(2025, 11, 1)))
        );
        assert!(tokyo.when("20251301", now).is_err());
    }
}
