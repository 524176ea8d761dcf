//! The slow twin of the usage report: every entry of every session decoded in full
//! (`Session::value`), its usage read from the decoded value, records deduplicated by
//! their key as text (not hashed), each record's day or month found on its own. Tests
//! and the `usage` fuzz target hold [`super::collect`] and [`super::report_files`] to it.

use super::{Period, Source, Tokens};
use crate::json::Value;
use crate::session::{OpenOptions, Session, V1Ids};
use jiff::tz::TimeZone;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One row of the twin's report: its key, tokens, cost (dollars, summed as `f64`) and
/// record count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TwinRow {
    /// As [`super::Row::key`].
    pub key: String,
    /// The tokens.
    pub tokens: Tokens,
    /// The cost.
    pub cost: f64,
    /// The records.
    pub records: u64,
}

/// A record as the twin reads it.
struct TwinRecord {
    key: String,
    ms: f64,
    source: Source,
    model: String,
    tokens: Tokens,
    cost: f64,
}

fn num(v: Option<&Value<'_>>) -> u64 {
    match v {
        Some(Value::Number(n)) if n.is_finite() && *n >= 0.0 => n.round() as u64,
        _ => 0,
    }
}

fn text(v: Option<&Value<'_>>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s.to_str_lossy().into_owned()),
        _ => None,
    }
}

fn valid(t: f64) -> bool {
    t.is_finite() && t.abs() <= 8.64e15
}

/// The records of one session, decoding every entry.
fn records(s: &Session) -> Option<(f64, String, Vec<TwinRecord>)> {
    let header = s.header().ok()?;
    let header_ms = crate::json::value::js_date_time(header.get("timestamp"));
    let cwd = text(header.get("cwd")).unwrap_or_default();
    let mut out = Vec::new();
    for &pos in s.entries() {
        let Ok(v) = s.value(pos) else { continue };
        let ty = text(v.get("type")).unwrap_or_default();
        let message = v.get("message").filter(|m| matches!(m, Value::Object(_)));
        let role = message.and_then(|m| text(m.get("role"))).unwrap_or_default();
        let (source, holder) = match (ty.as_str(), role.as_str()) {
            ("message", "assistant") => (Source::Assistant, message?),
            ("message", "toolResult") => (Source::Tool, message?),
            ("compaction" | "branch_summary", _) => (Source::Summary, &v),
            ("usage", _) => (Source::Entry, &v),
            _ => continue,
        };
        let Some(usage @ Value::Object(_)) = holder.get("usage") else {
            continue;
        };
        let entry_ts = text(v.get("timestamp")).unwrap_or_default();
        let id = s
            .record(pos)
            .id
            .str_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned());
        let response = if source == Source::Assistant {
            text(holder.get("responseId")).filter(|r| !r.is_empty())
        } else {
            None
        };
        let key = match response {
            Some(r) => format!("r{r}"),
            None => format!("e{}\0{entry_ts}", id.unwrap_or_default()),
        };
        let own = match (source, holder.get("timestamp")) {
            (Source::Assistant | Source::Tool, Some(Value::Number(n))) => *n,
            _ => f64::NAN,
        };
        let entry_ms = crate::json::value::js_date_time(v.get("timestamp"));
        let ms = [own, entry_ms, header_ms]
            .into_iter()
            .find(|t| valid(*t))
            .unwrap_or(f64::NAN);
        let model = match source {
            Source::Assistant | Source::Entry => text(holder.get("model")).unwrap_or_default(),
            _ => String::new(),
        };
        let cost = match usage.get("cost").and_then(|c| c.get("total")) {
            Some(Value::Number(n)) if n.is_finite() => *n,
            _ => 0.0,
        };
        out.push(TwinRecord {
            key,
            ms,
            source,
            model,
            tokens: Tokens {
                input: num(usage.get("input")),
                output: num(usage.get("output")),
                cache_read: num(usage.get("cacheRead")),
                cache_write: num(usage.get("cacheWrite")),
            },
            cost,
        });
    }
    Some((header_ms, cwd, out))
}

/// The twin's report over `paths` (each a session file; files that do not open as
/// sessions are left out): rows sorted by key, and the totals. Every filter setting is
/// taken.
pub fn report(paths: &[PathBuf], filter: &super::Filter) -> (Vec<TwinRow>, TwinRow) {
    let files: Vec<(PathBuf, Vec<u8>)> = paths
        .iter()
        .filter_map(|p| Some((p.clone(), std::fs::read(p).ok()?)))
        .collect();
    report_bytes(&files, filter)
}

/// [`report`] over files in memory: (path, bytes).
pub fn report_bytes(input: &[(PathBuf, Vec<u8>)], filter: &super::Filter) -> (Vec<TwinRow>, TwinRow) {
    let opts = OpenOptions {
        read_mode: crate::source::ReadMode::Read,
        chunk: None,
        release_pages: false,
        v1_ids: V1Ids::Stable,
    };
    let mut files: Vec<(f64, PathBuf, String, Vec<TwinRecord>)> = Vec::new();
    for (p, bytes) in input {
        let source = crate::source::Source::from_bytes(bytes.clone());
        let Ok(s) = Session::from_source(source, opts) else {
            continue;
        };
        if let Some((ms, cwd, recs)) = records(&s) {
            files.push((if ms.is_nan() { f64::INFINITY } else { ms }, p.clone(), cwd, recs));
        }
    }
    files.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut seen = std::collections::BTreeSet::new();
    let mut rows: BTreeMap<String, TwinRow> = BTreeMap::new();
    let mut totals = TwinRow::default();
    let tz: &TimeZone = &filter.tz;
    let mut timeline: Vec<&TwinRecord> = Vec::new();
    for (_, path, cwd, recs) in &files {
        for r in recs {
            if filter.dedup && !seen.insert(r.key.clone()) {
                continue;
            }
            if !valid(r.ms) {
                continue;
            }
            let Ok(t) = jiff::Timestamp::from_millisecond(r.ms.floor() as i64) else {
                continue;
            };
            let date = t.to_zoned_datetime(tz.clone()).date();
            if filter.since.is_some_and(|b| !b.admits_after(date, r.ms))
                || filter.until.is_some_and(|b| !b.admits_before(date, r.ms))
                || !(filter.sources.is_empty() || filter.sources.contains(&r.source))
                || filter
                    .cwd
                    .as_ref()
                    .is_some_and(|d| !std::path::Path::new(cwd).starts_with(d))
                || filter.session.as_ref().is_some_and(|p| p != path)
            {
                continue;
            }
            let key = match filter.period {
                Period::Daily => format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day()),
                Period::Weekly(start) => {
                    // Back a day at a time to the week's first day.
                    let mut d = date;
                    while d.weekday() != start {
                        match d.yesterday() {
                            Ok(y) => d = y,
                            Err(_) => break,
                        }
                    }
                    format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
                }
                Period::Monthly => format!("{:04}-{:02}", date.year(), date.month()),
                Period::Session => path.to_string_lossy().into_owned(),
                Period::Model => r.model.clone(),
                Period::Blocks => {
                    timeline.push(r);
                    totals.tokens.add(&r.tokens);
                    totals.cost += r.cost;
                    totals.records += 1;
                    continue;
                }
            };
            let row = rows.entry(key.clone()).or_insert_with(|| TwinRow {
                key,
                ..TwinRow::default()
            });
            for row in [row, &mut totals] {
                row.tokens.add(&r.tokens);
                row.cost += r.cost;
                row.records += 1;
            }
        }
    }
    if filter.period == Period::Blocks {
        for row in ccusage_blocks(timeline) {
            rows.insert(row.key.clone(), row);
        }
    }
    (rows.into_values().collect(), totals)
}

/// ccusage's `identifySessionBlocks`, step by step: records sorted by time; a block
/// starts at the UTC hour of its first record (`setUTCMinutes(0, 0, 0)`) and is closed by
/// a record more than five hours after its start or after the block's last record; a gap
/// longer than five hours is a gap block from last + 5 h to the next record.
fn ccusage_blocks(mut recs: Vec<&TwinRecord>) -> Vec<TwinRow> {
    const FIVE_HOURS: f64 = 5.0 * 60.0 * 60.0 * 1000.0;
    recs.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let floor_to_hour = |ms: f64| {
        let t = jiff::Timestamp::from_millisecond(ms.floor() as i64).expect("a valid time");
        let z = t.to_zoned_datetime(TimeZone::UTC);
        let hour = z
            .with()
            .minute(0)
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .expect("an hour");
        hour.timestamp().as_millisecond() as f64
    };
    let iso = |ms: f64| crate::js::time::iso_from_ms(ms).unwrap_or_default();
    let mut out = Vec::new();
    let mut current: Option<(f64, Vec<&TwinRecord>)> = None;
    let close = |start: f64, entries: &[&TwinRecord], out: &mut Vec<TwinRow>| {
        let mut row = TwinRow {
            key: iso(start),
            ..TwinRow::default()
        };
        for e in entries {
            row.tokens.add(&e.tokens);
            row.cost += e.cost;
            row.records += 1;
        }
        out.push(row);
    };
    for e in recs {
        match &mut current {
            None => current = Some((floor_to_hour(e.ms), vec![e])),
            Some((start, entries)) => {
                let last = entries.last().expect("a block has a record").ms;
                let since_start = e.ms - *start;
                let since_last = e.ms - last;
                if since_start > FIVE_HOURS || since_last > FIVE_HOURS {
                    close(*start, entries, &mut out);
                    if since_last > FIVE_HOURS {
                        out.push(TwinRow {
                            key: format!("gap-{}", iso(last + FIVE_HOURS)),
                            ..TwinRow::default()
                        });
                    }
                    current = Some((floor_to_hour(e.ms), vec![e]));
                } else {
                    entries.push(e);
                }
            }
        }
    }
    if let Some((start, entries)) = current {
        close(start, &entries, &mut out);
    }
    out
}

/// The fast report ([`super::report_files`] over each file's scan, as [`super::collect`]
/// reads files) against [`report_bytes`], for `filter`: `Err` says
/// where they differ (tokens and record counts exactly, costs to the cent).
///
/// # Errors
/// The first difference.
pub fn check_against_twin(input: &[(PathBuf, Vec<u8>)], filter: &super::Filter) -> Result<(), String> {
    let mut files = Vec::new();
    for (p, bytes) in input {
        match super::scan::scan(bytes).map_err(|e| format!("{}: {e}", p.display()))? {
            super::scan::Scan::NotSession => {}
            super::scan::Scan::Session(h, u) => files.push((super::scan::info(p, h), u)),
        }
    }
    // One file a part and all in one part: the same report, every field of it.
    let owned = super::owners::Owned::of(files.as_slice());
    let one = super::report::report_in_runs(files.as_slice(), &owned, filter, 1);
    let whole = super::report::report_in_runs(files.as_slice(), &owned, filter, usize::MAX);
    same_report(&one, &whole)?;
    let fast = super::report_files(files, filter);
    let (rows, totals) = report_bytes(input, filter);
    let mut got: Vec<&super::Row> = fast.rows.iter().collect();
    got.sort_by(|a, b| a.key.cmp(&b.key));
    let differ = |what: &str, key: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
        Err(format!("{what} of {key:?}: fast {a:?}, twin {b:?}"))
    };
    if got.len() != rows.len() {
        let a: Vec<&str> = got.iter().map(|r| r.key.as_str()).collect();
        let b: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        return differ("rows", "", &a, &b);
    }
    let pairs = got
        .iter()
        .map(|r| (r.key.as_str(), &r.sums))
        .chain(std::iter::once(("(totals)", &fast.totals.sums)));
    for ((key, sums), twin) in pairs.zip(rows.iter().chain(std::iter::once(&totals))) {
        if key != "(totals)" && key != twin.key {
            return differ("key", key, &key, &twin.key);
        }
        if sums.tokens != twin.tokens {
            return differ("tokens", key, &sums.tokens, &twin.tokens);
        }
        if sums.records != twin.records {
            return differ("records", key, &sums.records, &twin.records);
        }
        if (sums.cost() - twin.cost).abs() >= 0.005 {
            return differ("cost", key, &sums.cost(), &twin.cost);
        }
    }
    Ok(())
}

/// `Ok` when two reports are the same in every field but the cache's (rows with their
/// sources, models, sessions and bounds; totals; counts), else the first difference.
///
/// # Errors
/// The first difference.
pub fn same_report(a: &super::Report, b: &super::Report) -> Result<(), String> {
    let counts = |r: &super::Report| {
        [
            r.records,
            r.duplicates,
            r.time_from_entry,
            r.time_from_header,
            r.undated,
            r.filtered,
        ]
    };
    if counts(a) != counts(b) {
        return Err(format!("counts: {:?} vs {:?}", counts(a), counts(b)));
    }
    if a.rows.len() != b.rows.len() {
        return Err(format!("{} rows vs {}", a.rows.len(), b.rows.len()));
    }
    for (x, y) in a
        .rows
        .iter()
        .zip(&b.rows)
        .chain(std::iter::once((&a.totals, &b.totals)))
    {
        // (Bounds compared as bits: a gap row's are NaN; sessions by path: a header
        // without a valid time is NaN.)
        let bits = |r: &super::Row| (r.first_ms.to_bits(), r.last_ms.to_bits());
        if x.key != y.key
            || x.sums != y.sums
            || x.sources != y.sources
            || x.models != y.models
            || x.session.as_ref().map(|s| &s.path) != y.session.as_ref().map(|s| &s.path)
            || x.block != y.block
            || bits(x) != bits(y)
        {
            return Err(format!("row {:?}:\n{x:?}\nvs\n{y:?}", x.key));
        }
    }
    Ok(())
}

/// Hostile usage sessions from bytes, for the property test and the `usage` fuzz target:
/// every source, ids and `responseId`s from small pools (so records repeat within and
/// across files), times of every form near DST changes and day ends, tokens and costs
/// that are no counts, malformed and repeated lines, lines copied between files.
pub mod hostile {
    use super::super::{Filter, Period, Source};
    use std::path::PathBuf;

    /// Bytes read one at a time (zeros past the end).
    pub struct Bytes<'a>(&'a [u8], usize);

    impl<'a> Bytes<'a> {
        /// Read from `b`.
        pub fn new(b: &'a [u8]) -> Bytes<'a> {
            Bytes(b, 0)
        }
        fn next(&mut self) -> u8 {
            let v = self.0.get(self.1).copied().unwrap_or(0);
            self.1 += 1;
            v
        }
        fn pick<'p, T>(&mut self, pool: &'p [T]) -> &'p T {
            &pool[usize::from(self.next()) % pool.len()]
        }
        fn done(&self) -> bool {
            self.1 >= self.0.len()
        }
    }

    const ISO: &[&str] = &[
        r#""2025-03-30T00:59:59.999Z""#,
        r#""2025-03-30T01:00:00.000001+13:00""#,
        r#""2025-03-29T23:30:00-05:00""#,
        r#""2025-10-26T01:30:00.5+01:00""#,
        r#""2025-11-02T05:59:59.999999999Z""#,
        r#""2025-04-05T13:59:59Z""#,
        r#""2025-09-27T14:00:00+00:00""#,
        r#""not a date""#,
        "17",
        "null",
    ];
    const MS: &[&str] = &[
        "1743296399999",
        "1743296400000",
        "1761442200000",
        "1762063199999",
        "1743818399999.5",
        "\"1743296400000\"",
        "1e20",
        "null",
    ];
    const NUM: &[&str] = &[
        "0",
        "1",
        "17",
        "1000000",
        "2.5",
        "-3",
        "\"7\"",
        "1e400",
        "null",
        "12345678901",
    ];
    const COST: &[&str] = &["0.1", "0.000001", "3", "\"1\"", "-0.5", "1e-9", "null"];
    const IDS: &[&str] = &["a", "b", "c", "d"];
    const RESP: &[&str] = &[
        "",
        r#","responseId":"r1""#,
        r#","responseId":"r2""#,
        r#","responseId":"""#,
        r#","responseId":7"#,
    ];
    const MODELS: &[&str] = &[
        r#","provider":"p","model":"m""#,
        r#","provider":"p","model":"n""#,
        r#","model":"m""#,
        "",
    ];
    const TZ: &[&str] = &[
        "UTC",
        "America/New_York",
        "Pacific/Tongatapu",
        "Pacific/Auckland",
        "Europe/Berlin",
    ];

    fn usage(b: &mut Bytes<'_>) -> String {
        if b.next().is_multiple_of(8) {
            return b.pick(&["null", "7", "[]", "\"usage\""]).to_string();
        }
        let mut u = String::from("{");
        for (k, key) in ["input", "output", "cacheRead", "cacheWrite"].iter().enumerate() {
            if k > 0 {
                u.push(',');
            }
            u.push_str(&format!(r#""{key}":{}"#, b.pick(NUM)));
        }
        u.push_str(&format!(r#","cost":{{"total":{}}}}}"#, b.pick(COST)));
        u
    }

    fn line(b: &mut Bytes<'_>, copies: &[String]) -> String {
        let id = b.pick(IDS);
        let ts = b.pick(ISO);
        let head = format!(r#""id":"{id}","parentId":null,"timestamp":{ts}"#);
        match b.next() % 10 {
            0 | 1 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"text","text":"usage"}}]{}{},"usage":{},"timestamp":{}}}}}"#,
                b.pick(RESP),
                b.pick(MODELS),
                usage(b),
                b.pick(MS)
            ),
            2 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"toolResult","content":[],"usage":{},"timestamp":{}}}}}"#,
                usage(b),
                b.pick(MS)
            ),
            3 => format!(
                r#"{{"type":"compaction",{head},"summary":"s","firstKeptEntryId":"a","tokensBefore":1,"usage":{}}}"#,
                usage(b)
            ),
            4 => format!(
                r#"{{"type":"branch_summary",{head},"fromId":"a","summary":"s","usage":{}}}"#,
                usage(b)
            ),
            5 => format!(
                r#"{{"type":"usage",{head},"kind":"k"{},"usage":{}}}"#,
                b.pick(MODELS),
                usage(b)
            ),
            6 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"user","content":"hi","usage":{}}}}}"#,
                usage(b)
            ),
            7 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","usage":{}"#,
                usage(b)
            ),
            _ => copies
                .get(usize::from(b.next()) % copies.len().max(1))
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// One to three files under `/h/`, the same query of every filter kind.
    pub fn case(data: &[u8]) -> (Vec<(PathBuf, Vec<u8>)>, Filter) {
        let mut b = Bytes::new(data);
        let name: &&str = b.pick(TZ);
        let tz = jiff::tz::TimeZone::get(name.to_owned()).unwrap_or(jiff::tz::TimeZone::UTC);
        let period = *b.pick(&[
            Period::Daily,
            Period::Weekly(jiff::civil::Weekday::Sunday),
            Period::Weekly(jiff::civil::Weekday::Wednesday),
            Period::Monthly,
            Period::Session,
            Period::Model,
            Period::Blocks,
        ]);
        let sources: Vec<Source> = match b.next() % 4 {
            0 => vec![Source::Assistant],
            1 => vec![Source::Tool, Source::Summary, Source::Entry],
            _ => Vec::new(),
        };
        let filter = Filter {
            period,
            tz,
            dedup: !b.next().is_multiple_of(4),
            sources,
            since: match b.next() % 6 {
                0 | 3 => Some(crate::usage::Bound::Day(jiff::civil::date(2025, 3, 30))),
                1 => Some(crate::usage::Bound::At(1_743_300_000_000.0)),
                _ => None,
            },
            until: match b.next() % 6 {
                0 | 3 => Some(crate::usage::Bound::Day(jiff::civil::date(2025, 10, 26))),
                1 => Some(crate::usage::Bound::At(1_761_400_000_000.0)),
                _ => None,
            },
            ..Filter::default()
        };
        let n = 1 + usize::from(b.next() % 3);
        let mut files = Vec::new();
        let mut copies: Vec<String> = Vec::new();
        for k in 0..n {
            let mut text = format!(
                r#"{{"type":"session","version":3,"id":"s{k}","timestamp":{},"cwd":"/p"}}"#,
                b.pick(ISO)
            );
            text.push('\n');
            let lines = 1 + usize::from(b.next() % 12);
            for _ in 0..lines {
                if b.done() {
                    break;
                }
                let mut l = line(&mut b, &copies);
                if b.next().is_multiple_of(4) {
                    // The key with an escaped letter: still `usage` once decoded.
                    l = l.replacen("\"usage\":", "\"us\\u0061ge\":", 1);
                }
                if b.next().is_multiple_of(16) {
                    // Something after the object: pi's JSON.parse throws.
                    l.push_str(" 1");
                }
                text.push_str(&l);
                text.push('\n');
                copies.push(l);
            }
            files.push((PathBuf::from(format!("/h/f{k}.jsonl")), text.into_bytes()));
        }
        // (Drawn last, so that the bytes before keep their meaning; past the end, never.)
        let mut filter = filter;
        if b.next() % 5 == 1 {
            filter.session = Some(files[0].0.clone());
        }
        (files, filter)
    }
}
