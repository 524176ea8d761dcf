//! What a status line shows (pi's footer, a shell prompt): today's cost, the current
//! session's, and the active billing block with its burn rate, from one read of every
//! session ([`Gathered`]).

use super::owners::Sessions;
use super::report::{Bound, Filter, Gathered, Period, Row, Sums};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use std::path::{Path, PathBuf};

/// A status line's figures at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Statusline {
    /// Now, Unix ms.
    pub now_ms: f64,
    /// Today, in the zone asked for.
    pub today: Date,
    /// Every record of today (each counted once, as in every report).
    pub today_sums: Sums,
    /// The session asked for and its records (those it owns: a fork's records copied from
    /// its parent are its parent's), when it was among the sessions read.
    pub session: Option<(PathBuf, Sums)>,
    /// The active block ([`Row::block_state`]), if any.
    pub block: Option<Row>,
}

impl Gathered {
    /// The status line at `now_ms` in `tz`, for `session` (a path, compared as the file it
    /// names) when given.
    pub fn statusline(&self, session: Option<&Path>, tz: &TimeZone, now_ms: f64) -> Statusline {
        let today = jiff::Timestamp::from_millisecond(now_ms.floor() as i64)
            .map(|t| t.to_zoned_datetime(tz.clone()).date())
            .unwrap_or_default();
        let filter = |period| Filter {
            period,
            tz: tz.clone(),
            ..Filter::default()
        };
        let today_sums = self
            .report(&Filter {
                since: Some(Bound::Day(today)),
                until: Some(Bound::Day(today)),
                ..filter(Period::Daily)
            })
            .totals
            .sums;
        let session = session.and_then(|want| {
            let want_id = file_id(want)?;
            // The session among those read (by its name first, then the file it names).
            let found = self
                .sessions()
                .find(|s| s.path.file_name() == want.file_name() && file_id(&s.path) == Some(want_id))?;
            let sums = self
                .report(&Filter {
                    session: Some(found.path.clone()),
                    ..filter(Period::Daily)
                })
                .totals
                .sums;
            Some((found.path.clone(), sums))
        });
        // (Blocks from the last stretch of six hours without a record on: the same blocks
        // after it as from the first record, see `quiet_since`.)
        let block = self
            .report(&Filter {
                since: self.quiet_since(now_ms).map(Bound::At),
                ..filter(Period::Blocks)
            })
            .rows
            .into_iter()
            .find(|r| r.block_state(now_ms).is_some_and(|s| s.active));
        Statusline {
            now_ms,
            today,
            today_sums,
            session,
            block,
        }
    }
}

impl Gathered {
    /// The start of the last six whole hours in which no record was made (counted or
    /// not) that starts five hours or more before `now_ms`: the first record after it
    /// comes more than five hours after the one before, so it opens a block whatever came
    /// before (`report.rs`, `blocks`), and every block from then on is the one a blocks
    /// report of every record makes; a block active at `now_ms` starts less than five
    /// hours before it, so after this. `None` when there is no such stretch (or the
    /// records span more than 10 million hours): then every record is taken.
    pub(crate) fn quiet_since(&self, now_ms: f64) -> Option<f64> {
        const H: f64 = 3_600_000.0;
        let hour = |ms: f64| (ms / H).floor();
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        let each = |f: &mut dyn FnMut(f64)| {
            for k in 0..Sessions::sessions(self) {
                for r in Sessions::records(self, k) {
                    if r.time.ms.is_finite() {
                        f(hour(r.time.ms));
                    }
                }
            }
        };
        each(&mut |h| {
            lo = lo.min(h);
            hi = hi.max(h);
        });
        // (The hours after the last record, up to now, are quiet too.)
        let top = hi.max(hour(now_ms));
        if !lo.is_finite() || !top.is_finite() || top - lo >= 1e7 {
            return None;
        }
        let mut used = vec![false; (top - lo) as usize + 1];
        each(&mut |h| used[(h - lo) as usize] = true);
        // From the last hour back: six empty hours in a row.
        let mut empty = 0;
        for (i, u) in used.iter().enumerate().rev() {
            if *u {
                empty = 0;
            } else {
                empty += 1;
                let start = (lo + i as f64) * H;
                if empty >= 6 && start <= now_ms - super::BLOCK_MS {
                    return Some(start);
                }
            }
        }
        None
    }
}

/// The file `p` names: its device and inode.
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}
