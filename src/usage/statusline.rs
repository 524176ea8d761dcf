//! What a status line shows (pi's footer, a shell prompt): today's cost, the current
//! session's, and the active billing block with its burn rate, from one read of every
//! session ([`Gathered`]).

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
        let block = self
            .report(&filter(Period::Blocks))
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

/// The file `p` names: its device and inode.
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}
