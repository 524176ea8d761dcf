//! The usage report against its slow twin on generated trees with forks, branched
//! copies, every usage source, odd timestamps and malformed lines, in every grouping and
//! in time zones with DST changes and at +13.

use super::twin::{self, TwinRow};
use super::{Filter, Period, Report, Source, collect};
use crate::generator::{TreeSpec, write_sessions_tree};
use crate::session::Session;
use crate::write::{Entropy, Writer};
use jiff::tz::TimeZone;
use std::path::{Path, PathBuf};

/// Lines of a hand-written session with every source and every kind of time, a
/// malformed line, a duplicated line and a record copied from another file.
fn odd_session(cwd: &str) -> String {
    let usage = |i: u64, o: u64, cost: &str| {
        format!(
            r#"{{"input":{i},"output":{o},"cacheRead":7,"cacheWrite":3,"totalTokens":999999,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}}"#
        )
    };
    let mut l = vec![format!(
        r#"{{"type":"session","version":3,"id":"odd-1","timestamp":"2025-03-30T00:30:00.123456+13:00","cwd":"{cwd}"}}"#
    )];
    // Assistant: own time (ms), microsecond entry times, offsets, a responseId shared with
    // the generated files' first response, no time of its own, a bad entry time.
    l.push(format!(
        r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2025-03-30T01:59:59.999999Z","message":{{"role":"assistant","content":[],"provider":"p","model":"m1","usage":{},"stopReason":"stop","timestamp":1743292799999}}}}"#,
        usage(10, 20, "0.125")
    ));
    l.push(format!(
        r#"{{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-03-30T03:00:00.5+02:00","message":{{"role":"assistant","content":[],"provider":"p","model":"m2","usage":{},"stopReason":"stop"}}}}"#,
        usage(1, 2, "0.0001")
    ));
    l.push(format!(
        r#"{{"type":"message","id":"a3","parentId":"a2","timestamp":"not a date","message":{{"role":"assistant","content":[],"provider":"p","model":"m2","responseId":"resp-shared","usage":{},"stopReason":"stop","timestamp":"1743300000000"}}}}"#,
        usage(5, 5, "1e-3")
    ));
    // The same response again under another entry (a retry pi wrote twice): one record.
    l.push(format!(
        r#"{{"type":"message","id":"a3b","parentId":"a3","timestamp":"2025-03-30T04:00:00Z","message":{{"role":"assistant","content":[],"provider":"p","model":"m2","responseId":"resp-shared","usage":{},"stopReason":"stop","timestamp":1743300001000}}}}"#,
        usage(5, 5, "1e-3")
    ));
    // A malformed line, then the same entry twice.
    l.push(r#"{"type":"message","id":"broken","message":{"role":"assistant","usage":{"input":5"#.to_string());
    let tool = format!(
        r#"{{"type":"message","id":"t1","parentId":"a3","timestamp":"2025-10-26T00:59:00.000Z","message":{{"role":"toolResult","toolCallId":"c","toolName":"x","content":[{{"type":"text","text":"usage"}}],"isError":false,"usage":{},"timestamp":1761440340000}}}}"#,
        usage(100, 200, "0.5")
    );
    l.push(tool.clone());
    l.push(tool);
    l.push(format!(
        r#"{{"type":"compaction","id":"c1","parentId":"t1","timestamp":"2025-10-26T01:30:00+00:00","summary":"s","firstKeptEntryId":"a1","tokensBefore":5,"usage":{}}}"#,
        usage(1000, 10, "2")
    ));
    l.push(format!(
        r#"{{"type":"branch_summary","id":"b1","parentId":"c1","timestamp":"2025-11-02T05:30:00Z","fromId":"a1","summary":"s","usage":{}}}"#,
        usage(3, 4, "0.01")
    ));
    l.push(format!(
        r#"{{"type":"usage","id":"u1","parentId":"b1","timestamp":"2025-11-02T06:30:00.000000001Z","kind":"cache_warm","provider":"q","model":"m3","usage":{},"note":"n"}}"#,
        usage(0, 0, "0.3")
    ));
    // Tokens that are not counts, a usage that is no object, a message whose usage sits
    // at the top level (not read).
    l.push(
        r#"{"type":"message","id":"a4","parentId":"u1","timestamp":"2025-11-02T07:00:00Z","message":{"role":"assistant","content":[],"provider":"p","model":"m1","usage":{"input":-5,"output":"7","cacheRead":2.6,"cacheWrite":1e400,"cost":{"total":"3"}},"stopReason":"stop","timestamp":1762066800000}}"#
            .to_string(),
    );
    l.push(r#"{"type":"message","id":"a5","parentId":"a4","timestamp":"2025-11-02T07:00:01Z","message":{"role":"assistant","content":[],"usage":null}}"#.to_string());
    l.push(r#"{"type":"message","id":"a6","parentId":"a5","timestamp":"2025-11-02T07:00:02Z","usage":{"input":1},"message":{"role":"user","content":"hi"}}"#.to_string());
    l.join("\n") + "\n"
}

/// A tree: generated sessions, forks and branched copies of some of them (newer and
/// older than their source), odd hand-written files, a file without a header.
fn corpus(root: &Path) -> Vec<PathBuf> {
    let spec = TreeSpec {
        seed: 17,
        sessions: 24,
        folders: 3,
        total_bytes: 3 << 20,
        start_ms: 1_735_689_600_000,
        flavor: Default::default(),
    };
    let tree = write_sessions_tree(&spec, root).expect("tree");
    let mut paths: Vec<PathBuf> = tree.files.iter().map(|f| f.path.clone()).collect();
    let folder = paths[0].parent().unwrap().to_path_buf();
    for (k, src) in paths.clone().iter().enumerate().take(6) {
        // Forks: into another folder, some dated before their source.
        let start = if k % 2 == 0 {
            1_800_000_000_000
        } else {
            1_600_000_000_000
        };
        let w = Writer::fork_from(src, "/elsewhere", &folder, None, Entropy::seeded(k as u64, start)).expect("fork");
        paths.extend(w.file().map(Path::to_path_buf));
        // Branched copies: the path to an entry in the middle.
        let s = Session::open(src).expect("open");
        let mid = s.entries()[s.entries().len() / 2];
        let leaf = s.record(mid).id.as_str().expect("id").to_string();
        let mut w = Writer::open(src, None, Entropy::seeded(100 + k as u64, start + 1)).expect("writer");
        if let Some(p) = w.create_branched_session(&leaf).expect("branch") {
            paths.push(p);
        }
    }
    let odd = folder.join("2025-03-29T11-30-00-000Z_odd.jsonl");
    std::fs::write(&odd, odd_session("/home/user/odd")).unwrap();
    paths.push(odd.clone());
    let copy = root.join("--zz-copies--");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(&odd, copy.join("odd-copy.jsonl")).unwrap();
    paths.push(copy.join("odd-copy.jsonl"));
    let headless = odd_session("/x").lines().skip(1).collect::<Vec<_>>().join("\n");
    std::fs::write(copy.join("no-header.jsonl"), headless).unwrap();
    paths.push(copy.join("no-header.jsonl"));
    paths
}

fn same(fast: &Report, slow: &(Vec<TwinRow>, TwinRow), what: &str) {
    let (rows, totals) = slow;
    let mut fast_rows: Vec<(String, super::Tokens, f64, u64)> = fast
        .rows
        .iter()
        .map(|r| (r.key.clone(), r.sums.tokens, r.sums.cost(), r.sums.records))
        .collect();
    fast_rows.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        fast_rows.len(),
        rows.len(),
        "{what}: rows {:?}\nvs {:?}",
        fast_rows,
        rows
    );
    for (f, s) in fast_rows.iter().zip(rows) {
        assert_eq!(f.0, s.key, "{what}");
        assert_eq!(f.1, s.tokens, "{what}: {}", s.key);
        assert!(
            (f.2 - s.cost).abs() < 0.005,
            "{what}: {} cost {} vs {}",
            s.key,
            f.2,
            s.cost
        );
        assert_eq!(f.3, s.records, "{what}: {}", s.key);
    }
    assert_eq!(fast.totals.sums.tokens, totals.tokens, "{what}: totals");
    assert!(
        (fast.totals.sums.cost() - totals.cost).abs() < 0.005,
        "{what}: total cost"
    );
    assert_eq!(fast.totals.sums.records, totals.records, "{what}: total records");
}

#[test]
fn the_report_equals_the_twin_in_every_grouping_and_zone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let paths = corpus(&root);
    let zones = [
        "UTC",
        "America/New_York",
        "Europe/Berlin",
        "Pacific/Tongatapu",
        "Pacific/Auckland",
    ];
    let mut checked = 0;
    for zone in zones {
        let Ok(tz) = TimeZone::get(zone) else {
            eprintln!("time zone {zone} not on this system: skipped");
            continue;
        };
        for period in [
            Period::Daily,
            Period::Weekly(jiff::civil::Weekday::Sunday),
            Period::Weekly(jiff::civil::Weekday::Monday),
            Period::Monthly,
            Period::Session,
            Period::Model,
            Period::Blocks,
        ] {
            for dedup in [true, false] {
                let f = Filter {
                    period,
                    tz: tz.clone(),
                    dedup,
                    ..Filter::default()
                };
                let fast = collect(std::slice::from_ref(&root), &f, &mut Default::default()).unwrap();
                same(
                    &fast,
                    &twin::report(&paths, &f),
                    &format!("{zone} {period:?} dedup {dedup}"),
                );
                checked += 1;
            }
        }
        // Filters: dates, sources, cwd.
        let f = Filter {
            tz: tz.clone(),
            since: Some(super::Bound::Day(jiff::civil::date(2025, 1, 15))),
            until: Some(super::Bound::Day(jiff::civil::date(2025, 11, 2))),
            sources: vec![Source::Assistant, Source::Summary, Source::Entry],
            ..Filter::default()
        };
        let fast = collect(std::slice::from_ref(&root), &f, &mut Default::default()).unwrap();
        same(&fast, &twin::report(&paths, &f), &format!("{zone} filtered"));
        let f = Filter {
            tz,
            cwd: Some(PathBuf::from("/home/user/odd")),
            ..Filter::default()
        };
        let fast = collect(std::slice::from_ref(&root), &f, &mut Default::default()).unwrap();
        same(&fast, &twin::report(&paths, &f), &format!("{zone} cwd"));
        assert!(fast.totals.sums.records > 0);
    }
    assert!(checked >= 8, "no time zone could be loaded");
}

#[test]
fn each_record_is_counted_once_and_what_is_left_out_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    corpus(&root);
    let once = collect(std::slice::from_ref(&root), &Filter::default(), &mut Default::default()).unwrap();
    let naive = collect(
        std::slice::from_ref(&root),
        &Filter {
            dedup: false,
            ..Filter::default()
        },
        &mut Default::default(),
    )
    .unwrap();
    assert!(once.duplicates > 0, "forks and copies repeat records");
    assert_eq!(once.records, naive.records);
    assert_eq!(
        once.totals.sums.records + once.duplicates + once.undated + once.filtered,
        once.records
    );
    assert!(naive.totals.sums.tokens.total() > once.totals.sums.tokens.total());
    assert_eq!(once.skipped.len(), 1, "the file without a header: {:?}", once.skipped);
    assert!(once.time_from_entry > 0 && once.time_from_header > 0);
    for s in Source::ALL {
        assert!(once.totals.sources[s as usize].records > 0, "{s:?}");
    }
    // The odd file's copy adds nothing; its records belong to the odd file (same header
    // time, the smaller path).
    let by_session = collect(
        std::slice::from_ref(&root),
        &Filter {
            period: Period::Session,
            ..Filter::default()
        },
        &mut Default::default(),
    )
    .unwrap();
    assert!(by_session.rows.iter().any(|r| r.key.ends_with("_odd.jsonl")));
    assert!(!by_session.rows.iter().any(|r| r.key.ends_with("odd-copy.jsonl")));
}

#[test]
fn the_cache_gives_the_same_report_and_follows_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let paths = corpus(&root);
    let cache = crate::listing::ListingCache::at(dir.path().join("cache")).with_racy_window(std::time::Duration::ZERO);
    let run = || {
        let mut o = super::CollectOptions {
            cache: Some(cache.clone()),
            ..Default::default()
        };
        collect(std::slice::from_ref(&root), &Filter::default(), &mut o).unwrap()
    };
    let plain = collect(std::slice::from_ref(&root), &Filter::default(), &mut Default::default()).unwrap();
    let first = run();
    let second = run();
    assert_eq!(
        second.cached,
        second.sessions + second.skipped.len(),
        "every file from the cache"
    );
    for r in [&first, &second] {
        assert_eq!(r.rows, plain.rows);
        assert_eq!(r.totals, plain.totals);
    }
    // An appended record is seen.
    let odd = paths
        .iter()
        .find(|p| p.to_string_lossy().ends_with("_odd.jsonl"))
        .unwrap();
    let mut text = std::fs::read_to_string(odd).unwrap();
    text.push_str(r#"{"type":"usage","id":"u9","parentId":"u1","timestamp":"2025-11-03T06:30:00Z","kind":"k","provider":"q","model":"m3","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":1}}}"#);
    text.push('\n');
    std::fs::write(odd, text).unwrap();
    let third = run();
    assert_eq!(third.totals.sums.records, plain.totals.sums.records + 1);
    assert_eq!(third.cached, third.sessions + third.skipped.len() - 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]
    #[test]
    fn the_fast_report_equals_the_twin_on_hostile_sessions(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let (files, filter) = twin::hostile::case(&data);
        if let Err(e) = twin::check_against_twin(&files, &filter) {
            let text: Vec<String> = files.iter().map(|(p, b)| format!("{}:\n{}", p.display(), String::from_utf8_lossy(b))).collect();
            panic!("{e}\nfilter {filter:?}\n{}", text.join("\n"));
        }
    }
}

/// A session whose assistant messages were made at `times` (Unix ms), each with `(input,
/// output, cost)`, in `dir`; ids unique to `name`.
fn timed_session(dir: &Path, name: &str, times: &[(f64, u64, u64, f64)]) -> PathBuf {
    let mut text =
        format!(r#"{{"type":"session","version":3,"id":"{name}","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}}"#);
    text.push('\n');
    for (k, (ms, i, o, cost)) in times.iter().enumerate() {
        text.push_str(&format!(
            r#"{{"type":"message","id":"{name}-{k}","parentId":null,"timestamp":"2024-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[],"provider":"p","model":"m","usage":{{"input":{i},"output":{o},"cacheRead":0,"cacheWrite":0,"cost":{{"total":{cost}}}}},"stopReason":"stop","timestamp":{ms}}}}}"#
        ));
        text.push('\n');
    }
    let p = dir.join(format!("{name}.jsonl"));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn blocks_follow_ccusages_rules() {
    const H: f64 = 3_600_000.0;
    // 2024-01-01T10:00:00Z, as in ccusage's own tests.
    let base = 1_704_103_200_000.0;
    let blocks = |times: &[(f64, u64, u64, f64)]| -> Report {
        let dir = tempfile::tempdir().unwrap();
        let p = timed_session(dir.path(), "b", times);
        let f = Filter {
            period: Period::Blocks,
            ..Filter::default()
        };
        collect(&[p], &f, &mut Default::default()).unwrap()
    };
    let keys = |r: &Report| -> Vec<(String, u64)> { r.rows.iter().map(|r| (r.key.clone(), r.sums.records)).collect() };
    let e = |ms: f64| (ms, 1000, 500, 0.01);
    // Within five hours: one block, from the hour of its first record.
    let r = blocks(&[e(base), e(base + H), e(base + 2.0 * H)]);
    assert_eq!(keys(&r), [("2024-01-01T10:00:00.000Z".to_string(), 3)]);
    assert_eq!(r.rows[0].sums.tokens.input, 3000);
    // Floored to the UTC hour.
    let r = blocks(&[e(base + 55.0 * 60_000.0 + 30_000.0)]);
    assert_eq!(r.rows[0].key, "2024-01-01T10:00:00.000Z");
    assert_eq!(r.rows[0].block.unwrap().end_ms, base + 5.0 * H);
    // Six hours later: a block, a gap from five hours after the last record, a block.
    let r = blocks(&[e(base), e(base + 6.0 * H)]);
    assert_eq!(
        keys(&r),
        [
            ("2024-01-01T10:00:00.000Z".to_string(), 1),
            ("gap-2024-01-01T15:00:00.000Z".to_string(), 0),
            ("2024-01-01T16:00:00.000Z".to_string(), 1)
        ]
    );
    assert!(r.rows[1].block.unwrap().gap && r.rows[1].block.unwrap().end_ms == base + 6.0 * H);
    // Records out of order are sorted; a gap of eight hours after two.
    let r = blocks(&[e(base + 8.0 * H), e(base), e(base + 2.0 * H)]);
    assert_eq!(
        keys(&r),
        [
            ("2024-01-01T10:00:00.000Z".to_string(), 2),
            ("gap-2024-01-01T17:00:00.000Z".to_string(), 0),
            ("2024-01-01T18:00:00.000Z".to_string(), 1)
        ]
    );
    // Exactly five hours after the start is still in the block; a millisecond more is not
    // (and, five hours after the record before, makes a gap of one millisecond).
    let r = blocks(&[e(base), e(base + 5.0 * H)]);
    assert_eq!(keys(&r), [("2024-01-01T10:00:00.000Z".to_string(), 2)]);
    let r = blocks(&[e(base), e(base + 5.0 * H + 1.0)]);
    assert_eq!(
        keys(&r),
        [
            ("2024-01-01T10:00:00.000Z".to_string(), 1),
            ("gap-2024-01-01T15:00:00.000Z".to_string(), 0),
            ("2024-01-01T15:00:00.000Z".to_string(), 1)
        ]
    );
    // Five hours after the start but not after the record before: a new block, no gap.
    let r = blocks(&[e(base + 0.5 * H), e(base + 4.0 * H), e(base + 5.5 * H)]);
    assert_eq!(
        keys(&r),
        [
            ("2024-01-01T10:00:00.000Z".to_string(), 2),
            ("2024-01-01T15:00:00.000Z".to_string(), 1)
        ]
    );
    // Burn rate and projection (ccusage's case): 4,500 tokens and $0.03 in one minute.
    let r = blocks(&[(base, 1000, 500, 0.01), (base + 60_000.0, 2000, 1000, 0.02)]);
    let st = r.rows[0].block_state(base + 0.5 * H).unwrap();
    assert!(st.active);
    assert_eq!(st.tokens_per_minute, Some(4500.0));
    assert!((st.cost_per_hour.unwrap() - 1.8).abs() < 1e-9);
    assert_eq!(st.remaining_minutes, Some(270.0));
    assert_eq!(st.projected_tokens, Some(4500.0 + 4500.0 * 270.0));
    assert!((st.projected_cost.unwrap() - (0.03 + 1.8 / 60.0 * 270.0)).abs() < 1e-9);
    // Not active before it begins, five hours after its last record, nor after its end;
    // no rate at one instant.
    assert!(!r.rows[0].block_state(base - 1.0).unwrap().active);
    assert!(!r.rows[0].block_state(base + 60_000.0 + 5.0 * H).unwrap().active);
    assert!(!r.rows[0].block_state(base + 5.0 * H).unwrap().active);
    let one = blocks(&[e(base)]);
    let st = one.rows[0].block_state(base + H).unwrap();
    assert!(st.active && st.tokens_per_minute.is_none() && st.projected_cost.is_none());
}

#[test]
fn weeks_start_on_the_day_asked_for_in_the_zone() {
    use jiff::civil::{Weekday, date};
    // Every day of two years against counting back a day at a time.
    let mut d = date(2023, 12, 20);
    while d < date(2026, 1, 10) {
        for start in [Weekday::Sunday, Weekday::Monday, Weekday::Saturday] {
            let w = super::report::week_of(d, start);
            assert_eq!(w.weekday(), start, "{d} {start:?}");
            assert!(w <= d && d.since(w).unwrap().get_days() < 7, "{d} {start:?} -> {w}");
        }
        d = d.tomorrow().unwrap();
    }
    // A record just after midnight on a Monday in Auckland is in that week there, in the
    // week before in UTC.
    let dir = tempfile::tempdir().unwrap();
    // 2025-03-02T11:30:00Z = Monday 2025-03-03 00:30 in Auckland (+13).
    let p = timed_session(dir.path(), "w", &[(1_740_915_000_000.0, 1, 1, 0.5)]);
    let week = |tz: &str| {
        let f = Filter {
            period: Period::Weekly(Weekday::Monday),
            tz: TimeZone::get(tz).unwrap(),
            ..Filter::default()
        };
        collect(std::slice::from_ref(&p), &f, &mut Default::default())
            .unwrap()
            .rows[0]
            .key
            .clone()
    };
    assert_eq!(week("Pacific/Auckland"), "2025-03-03");
    assert_eq!(week("UTC"), "2025-02-24");
}

#[test]
fn a_status_line_counts_today_the_session_and_the_active_block() {
    const H: f64 = 3_600_000.0;
    let dir = tempfile::tempdir().unwrap();
    let base = 1_704_103_200_000.0; // 2024-01-01T10:00:00Z
    let a = timed_session(dir.path(), "a", &[(base - 24.0 * H, 1, 1, 1.0), (base, 1, 1, 2.0)]);
    let b = timed_session(
        dir.path(),
        "b",
        &[(base + H, 10, 10, 4.0), (base + 2.0 * H, 10, 10, 8.0)],
    );
    let g = super::gather(&[dir.path().to_path_buf()], &mut Default::default()).unwrap();
    let now = base + 2.5 * H;
    let s = g.statusline(Some(&a), &TimeZone::UTC, now);
    assert_eq!(s.today, jiff::civil::date(2024, 1, 1));
    assert_eq!(s.today_sums.cost(), 14.0);
    assert_eq!(
        s.session.as_ref().map(|(p, s)| (p.clone(), s.cost())),
        Some((a.clone(), 3.0))
    );
    let block = s.block.expect("an active block");
    assert_eq!(
        (block.key.as_str(), block.sums.cost()),
        ("2024-01-01T10:00:00.000Z", 14.0)
    );
    // Through another path to the same file; a file not read is no session.
    let other = dir.path().join(".").join("b.jsonl");
    assert_eq!(
        g.statusline(Some(&other), &TimeZone::UTC, now)
            .session
            .map(|(_, s)| s.cost()),
        Some(12.0)
    );
    assert_eq!(
        g.statusline(Some(Path::new("/nonexistent")), &TimeZone::UTC, now)
            .session,
        None
    );
    // In Auckland (+13) it is already the next day, which began at 11:00 UTC: only b's.
    let nz = g.statusline(None, &TimeZone::get("Pacific/Auckland").unwrap(), now);
    assert_eq!(nz.today, jiff::civil::date(2024, 1, 2));
    assert_eq!(nz.today_sums.cost(), 12.0);
    // Six hours after the last record, no block is active.
    assert_eq!(g.statusline(None, &TimeZone::UTC, base + 8.0 * H).block, None);
    assert!(b.exists());
}

/// A temporary folder with a generated tree of `sessions` sessions (`bytes` in all) in
/// two folders under `sessions/`, and that root.
fn small_tree(seed: u64, sessions: usize, bytes: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let spec = TreeSpec {
        seed,
        sessions,
        folders: 2,
        total_bytes: bytes,
        start_ms: 1_735_689_600_000,
        flavor: Default::default(),
    };
    write_sessions_tree(&spec, &root).expect("tree");
    (dir, root)
}

/// What can happen to a tree of sessions and its caches between two reports.
#[derive(Clone, Debug)]
enum Change {
    /// A usage record appended to file `0`, its response id one of a few (so that it may
    /// repeat a record of another file).
    Append(usize, u8),
    /// File `0` cut to its first half of lines.
    Cut(usize),
    /// File `0` removed.
    Remove(usize),
    /// A copy of file `0`, its header dated `1` days before or after, in its own folder
    /// (`2`) or another.
    Copy(usize, i8, bool),
    /// File `0` rewritten as it is (a new inode, same bytes).
    Rewrite(usize),
    /// The usage summary: a byte flipped at `0` (per mille of its length), cut there,
    /// or `None`: of another version.
    Damage(u16, bool),
    /// Two reports at once.
    Concurrent,
    /// A file that is no session made and removed in file `0`'s folder (the folder's
    /// stamp changes, its sessions do not).
    Litter(usize),
    /// Time enough for the folders' stamps to vouch for their names.
    Pause,
}

fn change() -> impl proptest::strategy::Strategy<Value = Change> {
    use proptest::prelude::*;
    prop_oneof![
        3 => (0..64usize, 0..4u8).prop_map(|(f, r)| Change::Append(f, r)),
        1 => (0..64usize).prop_map(Change::Cut),
        1 => (0..64usize).prop_map(Change::Remove),
        2 => (0..64usize, -3..3i8, any::<bool>()).prop_map(|(f, d, here)| Change::Copy(f, d, here)),
        1 => (0..64usize).prop_map(Change::Rewrite),
        1 => (0..1000u16, any::<bool>()).prop_map(|(at, cut)| Change::Damage(at, cut)),
        1 => Just(Change::Concurrent),
        1 => (0..64usize).prop_map(Change::Litter),
        2 => Just(Change::Pause),
    ]
}

/// The sessions of a tree, in path order.
fn files_of(root: &Path) -> Vec<PathBuf> {
    super::session_files(&[root.to_path_buf()]).0
}

fn apply(root: &Path, cache: &Path, c: &Change, n: &mut u32) {
    let files = files_of(root);
    let pick = |i: usize| files.get(i % files.len().max(1)).cloned();
    *n += 1;
    match c {
        Change::Append(i, r) => {
            if let Some(p) = pick(*i) {
                let line = format!(
                    r#"{{"type":"message","id":"x{n}","parentId":null,"timestamp":"2025-02-0{d}T10:00:00Z","message":{{"role":"assistant","content":[],"provider":"p","model":"m{r}","responseId":"resp-{r}","usage":{{"input":{n},"output":1,"cacheRead":0,"cacheWrite":0,"cost":{{"total":0.5}}}},"stopReason":"stop"}}}}"#,
                    d = 1 + r
                );
                let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
                std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
            }
        }
        Change::Cut(i) => {
            if let Some(p) = pick(*i) {
                let text = std::fs::read_to_string(&p).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                std::fs::write(&p, lines[..lines.len().div_ceil(2)].join("\n") + "\n").unwrap();
            }
        }
        Change::Remove(i) => {
            if let Some(p) = pick(*i) {
                std::fs::remove_file(p).unwrap();
            }
        }
        Change::Copy(i, days, here) => {
            if let Some(p) = pick(*i) {
                let text = std::fs::read_to_string(&p).unwrap();
                // The header dated otherwise: the copy may now own its records.
                let ms = 1_735_689_600_000i64 + i64::from(*days) * 86_400_000;
                let stamp = jiff::Timestamp::from_millisecond(ms).unwrap().to_string();
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                if let Some(h) = lines.first_mut() {
                    *h = h.replacen("\"timestamp\":\"", &format!("\"timestamp\":\"{stamp}\",\"was\":\""), 1);
                }
                let to = match p.parent() {
                    Some(d) if *here => d.to_path_buf(),
                    _ => root.join("--copies--"),
                };
                std::fs::create_dir_all(&to).unwrap();
                std::fs::write(to.join(format!("copy-{n}.jsonl")), lines.join("\n") + "\n").unwrap();
            }
        }
        Change::Rewrite(i) => {
            if let Some(p) = pick(*i) {
                let bytes = std::fs::read(&p).unwrap();
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, bytes).unwrap();
                std::fs::rename(tmp, p).unwrap();
            }
        }
        Change::Damage(at, cut) => {
            for e in std::fs::read_dir(cache).into_iter().flatten().flatten() {
                if !e.file_name().to_string_lossy().starts_with("usum-") {
                    continue;
                }
                let mut b = std::fs::read(e.path()).unwrap();
                let k = b.len() * usize::from(*at) / 1000;
                if *cut {
                    b.truncate(k);
                } else if let Some(x) = b.get_mut(k) {
                    *x ^= 0x40;
                }
                std::fs::write(e.path(), b).unwrap();
            }
        }
        Change::Litter(i) => {
            if let Some(d) = pick(*i).as_deref().and_then(Path::parent) {
                let p = d.join(format!("litter-{n}.tmp"));
                std::fs::write(&p, b"x").unwrap();
                std::fs::remove_file(p).unwrap();
            }
        }
        Change::Pause => std::thread::sleep(std::time::Duration::from_millis(120)),
        Change::Concurrent => {}
    }
}

/// Every report field the summary can change: rows, totals and the counts.
fn report_view(r: &Report) -> String {
    format!(
        "{:?}\n{:?}\nrecords {} duplicates {} undated {} skipped {}",
        r.rows,
        r.totals,
        r.records,
        r.duplicates,
        r.undated,
        r.skipped.len()
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]
    /// The usage summary (and the per-folder caches under it) against no cache, through
    /// appends, cuts, removals, copies that take records over, rewrites, damage to the
    /// summary and two runs at once: after each change every report is the one read
    /// without a cache, in a grouping by day and by session (who owns each record).
    #[test]
    fn the_summary_gives_the_report_without_cache_through_any_change(changes in proptest::collection::vec(change(), 1..8)) {
        let (dir, root) = small_tree(5, 6, 120 << 10);
        let cache_dir = dir.path().join("cache");
        let cache = crate::listing::ListingCache::at(cache_dir.clone()).with_racy_window(std::time::Duration::ZERO);
        let filters = [
            Filter::default(),
            Filter { period: Period::Session, ..Filter::default() },
        ];
        let roots = [root.clone()];
        let with_cache = |f: &Filter| {
            let mut o = super::CollectOptions { cache: Some(cache.clone()), ..Default::default() };
            collect(&roots, f, &mut o).unwrap()
        };
        let check = |what: &str| {
            for f in &filters {
                let plain = collect(&roots, f, &mut Default::default()).unwrap();
                let got = with_cache(f);
                proptest::prop_assert_eq!(report_view(&got), report_view(&plain), "{} ({:?})", what, f.period);
                // (The totals' bounds are the rows'.)
                let first = plain.rows.iter().map(|r| r.first_ms).fold(f64::INFINITY, f64::min);
                if plain.totals.sums.records > 0 {
                    proptest::prop_assert_eq!(plain.totals.first_ms, first);
                }
            }
            Ok(())
        };
        check("first")?;
        check("warm")?;
        let mut n = 0;
        for c in &changes {
            apply(&root, &cache_dir, c, &mut n);
            if let Change::Concurrent = c {
                let plain = report_view(&collect(&roots, &filters[1], &mut Default::default()).unwrap());
                std::thread::scope(|s| {
                    let a = s.spawn(|| report_view(&with_cache(&filters[1])));
                    let b = s.spawn(|| report_view(&with_cache(&filters[1])));
                    for got in [a.join().unwrap(), b.join().unwrap()] {
                        assert_eq!(got, plain, "two runs at once");
                    }
                });
            }
            check(&format!("after {c:?}"))?;
        }
        // The last report came from the summary, which was not written again: nothing
        // changed since.
        let summary = || {
            std::fs::read_dir(&cache_dir)
                .unwrap()
                .flatten()
                .find(|e| e.file_name().to_string_lossy().starts_with("usum-"))
                .map(|e| std::os::unix::fs::MetadataExt::ino(&e.metadata().unwrap()))
        };
        let before = summary();
        let last = with_cache(&filters[0]);
        proptest::prop_assert!(before.is_some());
        proptest::prop_assert_eq!(summary(), before);
        proptest::prop_assert_eq!(last.cached, last.sessions + last.skipped.len());
    }
}

/// The cache folder of a test's caches under `dir`, and a cache there in which only the
/// stamps decide (no racy window).
fn test_cache(dir: &Path) -> (PathBuf, crate::listing::ListingCache) {
    let at = dir.join("cache");
    let cache = crate::listing::ListingCache::at(at.clone()).with_racy_window(std::time::Duration::ZERO);
    (at, cache)
}

/// Options that read and write `cache`.
fn cached(cache: &crate::listing::ListingCache) -> super::CollectOptions<'static> {
    super::CollectOptions {
        cache: Some(cache.clone()),
        ..Default::default()
    }
}

/// Reports from a gathering whose usage summary another process cut short afterwards
/// are known untrusted (`Gathered::intact`); before that, they are the plain ones.
#[test]
fn a_gathering_whose_summary_was_cut_short_says_so() {
    let (dir, root) = small_tree(9, 12, 2 << 20);
    let (cache_dir, cache) = test_cache(dir.path());
    let roots = [root.clone()];
    let gather = || super::gather(&roots, &mut cached(&cache)).unwrap();
    let plain = report_view(&collect(&roots, &Filter::default(), &mut Default::default()).unwrap());
    drop(gather());
    let g = gather();
    assert!(g.cached > 0 && g.intact());
    assert_eq!(report_view(&g.report(&Filter::default())), plain);
    let file = super::summary::file_of(&cache_dir, &roots);
    // (Past its first page: the part of a page past the new end reads as zeros with no
    // fault, which no reader can tell.)
    assert!(std::fs::metadata(&file).unwrap().len() > 4 * 4096);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(64)
        .unwrap();
    let _ = g.report(&Filter::default());
    assert!(!g.intact());
}

/// A folder whose stamp the summary took, past a clock tick, is not listed again: its
/// names come from the summary, and they are the listing's; a folder changed since is
/// listed.
#[test]
fn a_folder_that_did_not_change_is_not_listed_again() {
    use super::summary::{Summary, file_of};
    use super::tree::{Memo, walk};
    let (dir, root) = small_tree(7, 8, 64 << 10);
    let (cache_dir, cache) = test_cache(dir.path());
    let roots = [root.clone()];
    let report = || report_view(&collect(&roots, &Filter::default(), &mut cached(&cache)).unwrap());
    let plain = || report_view(&collect(&roots, &Filter::default(), &mut Default::default()).unwrap());
    let stamp = |d: &Path| crate::source::stamps_of(&[d.to_path_buf()]);
    let folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(folders.len(), 2);
    let listed = |d: &Path| {
        let mut v: Vec<PathBuf> = files_of(&root).into_iter().filter(|p| p.parent() == Some(d)).collect();
        v.sort();
        v
    };
    // (A folder's stamp, as the walk takes it: `stamps_of` takes regular files only.)
    let folder_stamp = |d: &Path| {
        assert!(stamp(d)[0].is_none());
        crate::source::Stamp::of(&std::fs::metadata(d).unwrap())
    };
    assert_eq!(report(), plain());
    let load = || Summary::load(&file_of(&cache_dir, &roots)).ok().expect("a summary");
    // Just made: not yet past a tick, so not vouched for.
    for d in &folders {
        assert_eq!(load().folder(d, &folder_stamp(d)), None);
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(report(), plain());
    let s = load();
    for d in &folders {
        assert_eq!(s.folder(d, &folder_stamp(d)), Some(listed(d)), "{}", d.display());
    }
    // The walk takes them from it, and finds what a listing finds.
    let memo = |d: &Path, st: &crate::source::Stamp| s.folder(d, st);
    let w = walk(&roots, Some(&memo as Memo<'_>), true);
    assert_eq!(w.files, files_of(&root));
    assert_eq!(w.stamps, crate::source::stamps_of(&w.files));
    // A session made in one: that folder is listed again, and the report sees it.
    let p = listed(&folders[0])[0].clone();
    std::fs::copy(&p, folders[0].join("made-later.jsonl")).unwrap();
    assert_eq!(s.folder(&folders[0], &folder_stamp(&folders[0])), None);
    assert_eq!(
        s.folder(&folders[1], &folder_stamp(&folders[1])),
        Some(listed(&folders[1]))
    );
    let w = walk(&roots, Some(&memo as Memo<'_>), false);
    assert_eq!(w.files, files_of(&root));
    drop(s);
    assert_eq!(report(), plain());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    /// The status line's active block, made from the last six quiet hours on, is the one
    /// a blocks report of every record finds active, at any moment: records an hour or a
    /// few apart, gaps of four to seven hours, many sessions.
    #[test]
    fn the_status_lines_block_is_the_full_reports(steps in proptest::collection::vec((0..3usize, 0..30u32), 1..40), probe in 0..60u32) {
        const M: f64 = 60_000.0;
        let dir = tempfile::tempdir().unwrap();
        let base = 1_704_103_200_000.0;
        let mut t = base;
        let mut per: [Vec<(f64, u64, u64, f64)>; 3] = Default::default();
        for (i, (who, gap)) in steps.iter().enumerate() {
            // Gaps from 10 minutes to 7.25 hours, most under five.
            t += f64::from(*gap) * 15.0 * M;
            per[*who].push((t, 1 + i as u64, 1, 1.0 + i as f64));
        }
        for (i, times) in per.iter().enumerate() {
            if !times.is_empty() {
                timed_session(dir.path(), &format!("s{i}"), times);
            }
        }
        let g = super::gather(&[dir.path().to_path_buf()], &mut Default::default()).unwrap();
        let now = base + f64::from(probe) * 15.0 * M * f64::from(steps.len() as u32) / 4.0;
        let full = g
            .report(&Filter { period: Period::Blocks, ..Filter::default() })
            .rows
            .into_iter()
            .find(|r| r.block_state(now).is_some_and(|s| s.active));
        let line = g.statusline(None, &TimeZone::UTC, now).block;
        proptest::prop_assert_eq!(line, full);
    }
}

/// A damaged usage summary is said once and rebuilt; one of another format (after an
/// upgrade) is rebuilt without a word; either way the report is the one without it.
#[test]
fn a_damaged_summary_is_said_and_rebuilt_another_format_silently() {
    let (dir, root) = small_tree(9, 4, 60 << 10);
    let cache = crate::listing::ListingCache::at(dir.path().join("cache")).with_racy_window(std::time::Duration::ZERO);
    let roots = [root.clone()];
    let run = || {
        let mut o = super::CollectOptions {
            cache: Some(cache.clone()),
            ..Default::default()
        };
        collect(&roots, &Filter::default(), &mut o).unwrap()
    };
    let plain = collect(&roots, &Filter::default(), &mut Default::default()).unwrap();
    assert!(run().cache_warnings.is_empty());
    let file = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("usum-"))
        .expect("a summary");
    let good = std::fs::read(&file).unwrap();
    // Another format: the same magic, another version number.
    let mut other = good.clone();
    other[16] ^= 0x7f;
    std::fs::write(&file, &other).unwrap();
    let r = run();
    assert!(r.cache_warnings.is_empty(), "{:?}", r.cache_warnings);
    assert_eq!(report_view(&r), report_view(&plain));
    assert_eq!(std::fs::read(&file).unwrap(), good, "written anew");
    // Damaged: the magic's last letters, then a byte of a record.
    for at in [14, good.len() - 20] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        std::fs::write(&file, &bad).unwrap();
        let r = run();
        assert_eq!(
            r.cache_warnings,
            vec![format!("the usage summary {} is damaged: rebuilt", file.display())]
        );
        assert_eq!(report_view(&r), report_view(&plain));
        assert!(run().cache_warnings.is_empty(), "rebuilt");
    }
}
