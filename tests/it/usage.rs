//! `pi-session usage` (issue #17) from the command line: the reports and their JSON
//! (docs/cli.md), records counted once across copies, the cache, filters, exit codes, and
//! the demo corpus's totals checked against an independent sum of its files.

use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    crate::common::run_cli("usage", args)
}

fn json(o: &Output) -> J {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// The demo corpus's sessions root.
fn demo() -> String {
    root().join("corpus/demo/sessions").display().to_string()
}

/// The demo corpus's usage, summed independently: every line of every file parsed with
/// serde_json, assistant/toolResult messages' usage, compaction/branch_summary/usage
/// entries' usage (its files share no record).
fn naive_totals(dir: &Path) -> (u64, u64, f64) {
    let (mut tokens, mut records, mut cost) = (0u64, 0u64, 0.0f64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&p).unwrap().lines().skip(1) {
                let Ok(v) = serde_json::from_str::<J>(line) else {
                    continue;
                };
                let usage = match (v["type"].as_str(), v["message"]["role"].as_str()) {
                    (Some("message"), Some("assistant" | "toolResult")) => &v["message"]["usage"],
                    (Some("compaction" | "branch_summary" | "usage"), _) => &v["usage"],
                    _ => continue,
                };
                if !usage.is_object() {
                    continue;
                }
                records += 1;
                for k in ["input", "output", "cacheRead", "cacheWrite"] {
                    tokens += usage[k].as_f64().filter(|n| *n >= 0.0).map_or(0, |n| n.round() as u64);
                }
                cost += usage["cost"]["total"].as_f64().unwrap_or(0.0);
            }
        }
    }
    (tokens, records, cost)
}

#[test]
fn the_demo_report_sums_every_record_once() {
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path().to_str().unwrap();
    let (tokens, records, cost) = naive_totals(&root().join("corpus/demo"));
    assert!(records > 0);
    for period in ["daily", "monthly", "session", "model"] {
        let v = json(&run(&[period, "--json", "--cache-dir", c, &demo()]));
        let t = &v["totals"];
        assert_eq!(t["totalTokens"].as_u64(), Some(tokens), "{period}");
        assert_eq!(t["records"].as_u64(), Some(records), "{period}");
        assert!((t["totalCost"].as_f64().unwrap() - cost).abs() < 0.005, "{period}");
        let key = match period {
            "daily" => "daily",
            "monthly" => "monthly",
            "session" => "sessions",
            _ => "models",
        };
        let rows = v[key].as_array().expect("rows");
        assert!(!rows.is_empty());
        // The rows add up to the totals.
        let sum: u64 = rows.iter().map(|r| r["totalTokens"].as_u64().unwrap()).sum();
        assert_eq!(sum, tokens, "{period}");
        for r in rows {
            let parts: u64 = ["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens"]
                .iter()
                .map(|k| r[k].as_u64().unwrap())
                .sum();
            assert_eq!(parts, r["totalTokens"].as_u64().unwrap());
            assert!(r["modelBreakdowns"].is_array() && r["sources"]["assistant"].is_object());
        }
        if period == "daily" {
            assert!(rows[0]["date"].as_str().unwrap().len() == 10);
        }
        if period == "session" {
            assert!(rows[0]["sessionId"].is_string() && rows[0]["lastActivity"].is_string());
        }
    }
    // Unchanged files come from the cache the second time.
    let v = json(&run(&["--json", "--cache-dir", c, &demo()]));
    assert_eq!(v["report"]["cachedFiles"], v["report"]["sessions"]);
}

#[test]
fn a_copied_session_is_counted_once_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("--a--"), dir.path().join("--b--"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let src = root().join("corpus/valid/branches.jsonl");
    std::fs::copy(&src, a.join("s.jsonl")).unwrap();
    std::fs::copy(&src, b.join("copy.jsonl")).unwrap();
    let d = dir.path().to_str().unwrap();
    let once = json(&run(&["--json", "--no-cache", d]));
    let twice = json(&run(&["--json", "--no-cache", "--no-dedup", d]));
    let alone = json(&run(&["--json", "--no-cache", src.to_str().unwrap()]));
    assert_eq!(once["totals"]["totalTokens"], alone["totals"]["totalTokens"]);
    assert_eq!(once["report"]["duplicates"], alone["totals"]["records"]);
    assert_eq!(
        twice["totals"]["totalTokens"].as_u64().unwrap(),
        2 * alone["totals"]["totalTokens"].as_u64().unwrap()
    );
    // The session report gives the records to the file with the smaller path.
    let s = json(&run(&["session", "--json", "--no-cache", d]));
    let rows = s["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["sessionPath"].as_str().unwrap().ends_with("--a--/s.jsonl"));
}

#[test]
fn filters_zones_and_exit_codes() {
    let s = root().join("corpus/valid/branches.jsonl");
    let s = s.to_str().unwrap();
    let all = json(&run(&["--json", "--no-cache", s]));
    assert!(all["totals"]["records"].as_u64().unwrap() > 0);
    // A day range that holds nothing; the YYYYMMDD form.
    let none = json(&run(&["--json", "--no-cache", "--since", "20250315", s]));
    assert_eq!(none["totals"]["records"], 0);
    assert_eq!(none["report"]["filtered"], all["totals"]["records"]);
    let tool = json(&run(&["--json", "--no-cache", "--source", "tool,summary", s]));
    assert_eq!(tool["totals"]["records"], 0);
    let tz = json(&run(&[
        "monthly",
        "--json",
        "--no-cache",
        "--timezone",
        "Pacific/Tongatapu",
        s,
    ]));
    assert_eq!(tz["report"]["timeZone"], "Pacific/Tongatapu");
    // Errors: a bad day, zone or source (2); a named file that is no session (2).
    for bad in [
        &["--since", "2025-02-30"][..],
        &["--timezone", "Mars/Base"],
        &["--source", "bank"],
    ] {
        let mut args = bad.to_vec();
        args.push(s);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr).lines().count(),
            1,
            "{bad:?}: one line"
        );
    }
    let o = run(&["--no-cache", root().join("Cargo.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    // A folder named like a session is passed over, as `ls` and `search` pass it over
    // (#35; a FIFO named on the command line is an error: tests/it/special_targets.rs).
    let tree = tempfile::tempdir().unwrap();
    let p = tree.path().join("--p--");
    std::fs::create_dir_all(p.join("dir.jsonl")).unwrap();
    std::fs::copy(root().join("corpus/valid/branches.jsonl"), p.join("s.jsonl")).unwrap();
    let o = run(&["--json", "--no-cache", tree.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: J = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["report"]["unreadableFiles"], 0);
    assert_eq!(v["report"]["skippedFiles"], 1);
    assert_eq!(v["totals"]["records"], all["totals"]["records"]);

    // An agent dir without a sessions folder fails as `ls --all` does (#36: it was an
    // empty $0.00 report); one whose sessions folder is empty gives an empty report.
    let empty = tempfile::tempdir().unwrap();
    let o = run(&["--agent-dir", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/sessions: no such folder"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::create_dir(empty.path().join("sessions")).unwrap();
    let o = run(&["--agent-dir", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(no usage records)"));
    // The same with the agent dir from the environment, and for `search`.
    for cmd in ["usage", "search"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args([cmd, "x"].iter().take(if cmd == "usage" { 1 } else { 2 }))
            .env("PI_CODING_AGENT_DIR", "/nonexistent/agent")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            "pi-session: /nonexistent/agent/sessions: no such folder\n",
            "{cmd}"
        );
    }
    // --strict: a record without a time of its own.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"usage","id":"u","parentId":null,"kind":"k","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}}}"#,
            "\n"
        ),
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let o = run(&["--no-cache", f]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2025-01-01"),
        "placed at the header's time"
    );
    let o = run(&["--no-cache", "--strict", f]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn the_table_fits_the_width_and_escapes_names() {
    let o = run(&["monthly", "--breakdown", "--no-cache", "--width", "80", &demo()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("└─ "), "{text}");
    assert!(text.lines().next().unwrap().starts_with("Month"));
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("Total"), "{text}");
    // A model name with control characters is escaped.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"usage","id":"u","parentId":null,"timestamp":"2025-01-01T00:00:00Z","kind":"k","provider":"p","model":"evil\u001b[2Jmodel","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}}}"#,
            "\n"
        ),
    )
    .unwrap();
    for period in ["daily", "model"] {
        let o = run(&[period, "--breakdown", "--no-cache", f.to_str().unwrap()]);
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(!text.contains('\u{1b}'), "{period}: {text:?}");
    }
    // A session id that would retitle the terminal (review bug 1): its first 8 characters
    // label the row, escaped.
    let text = std::fs::read_to_string(&f)
        .unwrap()
        .replace(r#""id":"x""#, r#""id":"\u001b]0;PWN\u0007-x""#);
    std::fs::write(&f, text).unwrap();
    let o = run(&["session", "--no-cache", f.to_str().unwrap()]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert!(text.contains(r"\x1b]0;PWN"), "{text:?}");
}

/// The rough edges of `usage` a new user hit (#36), each on the demo corpus.
#[test]
fn reports_dates_costs_and_session_rows_as_a_user_expects() {
    // An unknown report is a usage error that lists the reports, not an id lookup.
    for r in ["hourly", "yearly", "burnrate"] {
        let o = run(&[r]);
        assert_eq!(o.status.code(), Some(2), "{r}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err,
            format!(
                "pi-session: no report {r} (the reports: daily, weekly, monthly, session, model, blocks, statusline)\n"
            )
        );
    }
    // --active is the blocks report's.
    let o = run(&["daily", "--active", &demo()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "pi-session: --active is for the blocks report\n"
    );
    // One date grammar: ages and times as `ls` and `search` take them, ccusage's YYYYMMDD.
    let d = demo();
    for since in ["2d", "2025-01-09 12:00", "20250109", "2025-01-09"] {
        let o = run(&["--no-cache", "--utc", "--since", since, &d]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{since}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let day = json(&run(&["--json", "--no-cache", "--utc", "--since", "20250109", &d]));
    let same = json(&run(&["--json", "--no-cache", "--utc", "--since", "2025-01-09", &d]));
    assert_eq!(day["totals"], same["totals"]);
    let at = json(&run(&[
        "--json",
        "--no-cache",
        "--utc",
        "--since",
        "2025-01-09 12:00",
        &d,
    ]));
    assert!(
        at["totals"]["records"].as_u64() <= day["totals"]["records"].as_u64(),
        "a time within the day counts no more than the whole day"
    );
    // An inverted range warns (once) and counts nothing.
    let o = run(&["--no-cache", "--since", "2025-02-01", "--until", "2025-01-01", &d]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("is not before --until").count(), 1, "{err}");
    // One precision for the costs of a table (#36: `$0.0019` beside `$0.01`): four
    // decimals when a cost would show as $0.00, else cents.
    let t = String::from_utf8_lossy(&run(&["session", "--no-cache", &d]).stdout).into_owned();
    let decimals: Vec<usize> = t
        .split_whitespace()
        .filter(|w| w.starts_with('$'))
        .map(|c| c.split('.').nth(1).map_or(0, str::len))
        .collect();
    assert!(decimals.len() > 2 && decimals.iter().all(|&n| n == 4), "{t}");
    let m = String::from_utf8_lossy(&run(&["monthly", "--no-cache", &d]).stdout).into_owned();
    assert!(
        m.split_whitespace()
            .filter(|w| w.starts_with('$'))
            .all(|c| c.split('.').nth(1).map(str::len) == Some(2)),
        "{m}"
    );
    // A session row names the session: id, last day, title (a name, else the first
    // message), cut to a readable width.
    let row = t
        .lines()
        .find(|l| l.starts_with("0194a75c"))
        .expect("the session's row");
    assert!(row.contains("  2025-01-27  Emit data command #991"), "{row}");
    assert!(t.lines().all(|l| l.chars().count() < 200), "{t}");
}

/// The records' totals of a report: records, tokens, cost in cents.
fn totals(j: &J) -> (u64, u64, i64) {
    let t = &j["totals"];
    (
        t["records"].as_u64().unwrap(),
        t["totalTokens"].as_u64().unwrap(),
        (t["totalCost"].as_f64().unwrap() * 100.0).round() as i64,
    )
}

fn ms(iso: &J) -> f64 {
    iso.as_str()
        .unwrap()
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond() as f64
}

#[test]
fn weeks_blocks_and_the_status_line_on_real_sessions() {
    let Some(real) = crate::common::real_sessions() else {
        return;
    };
    let mut inputs: Vec<String> = real.iter().map(|p| p.display().to_string()).collect();
    inputs.push(demo());
    for input in &inputs {
        let daily = json(&run(&[input, "--json", "--utc"]));
        let want = totals(&daily);
        assert!(want.0 > 0, "{input}: no records");
        // Weeks: the same records, each week from the day asked for.
        for (start, day) in [
            ("sunday", jiff::civil::Weekday::Sunday),
            ("monday", jiff::civil::Weekday::Monday),
        ] {
            let w = json(&run(&["weekly", input, "--json", "--utc", "--start-of-week", start]));
            assert_eq!(totals(&w), want, "{input} weekly");
            let rows = w["weekly"].as_array().unwrap();
            assert_eq!(rows.iter().map(|r| r["records"].as_u64().unwrap()).sum::<u64>(), want.0);
            for r in rows {
                let d: jiff::civil::Date = r["week"].as_str().unwrap().parse().unwrap();
                assert_eq!(d.weekday(), day, "{input}: week {d}");
            }
        }
        // Blocks: the same records, in five-hour blocks from an hour, gaps between.
        let b = json(&run(&["blocks", input, "--json"]));
        assert_eq!(totals(&b), want, "{input} blocks");
        let rows = b["blocks"].as_array().unwrap();
        let mut records = 0;
        let mut last_end = f64::NEG_INFINITY;
        for (k, r) in rows.iter().enumerate() {
            let (start, end) = (ms(&r["startTime"]), ms(&r["endTime"]));
            if r["isGap"].as_bool().unwrap() {
                assert_eq!(r["records"], 0);
                assert!(k > 0 && k + 1 < rows.len(), "{input}: a gap is between blocks");
            } else {
                // (A block's first record is over five hours after the start of the one
                // before, so it begins at that one's end or later; a gap may end after
                // the hour a block begins.)
                assert!(
                    start >= last_end,
                    "{input}: block {k} starts before the one before ends"
                );
                assert_eq!(start % 3_600_000.0, 0.0, "{input}: block {k} starts on the hour");
                assert_eq!(end - start, 5.0 * 3_600_000.0);
                let last = ms(&r["actualEndTime"]);
                assert!(start <= last && last <= end, "{input}: block {k}'s records are in it");
                records += r["records"].as_u64().unwrap();
            }
            if r["isGap"] == false {
                last_end = end;
            }
        }
        assert_eq!(records, want.0);
        // The status line a minute after the last record: that block is active, and the
        // session's and the day's costs are those of the session and daily reports.
        let last = rows.last().unwrap();
        let now = ms(&last["actualEndTime"]) + 60_000.0;
        let mut args = vec!["statusline", "--json", "--utc"];
        let file = real.iter().find(|p| p.display().to_string() == *input);
        let place;
        match file {
            Some(f) => {
                // The file's own folder stands for the agent dir's sessions.
                place = f.parent().unwrap().display().to_string();
                args.extend(["--session-dir", &place, input]);
            }
            None => args.extend(["--agent-dir", "corpus/demo"]),
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .arg("usage")
            .args(&args)
            .current_dir(root())
            .env("PI_SESSION_NOW_MS", now.to_string())
            .env("PI_SESSION_CACHE_DIR", root().join("target/listing-cache"))
            .env_remove("PI_CODING_AGENT_DIR")
            .output()
            .unwrap();
        let s = json(&out);
        assert_eq!(s["block"]["id"], last["id"], "{input}");
        assert_eq!(s["block"]["isActive"], true);
        assert_eq!(s["block"]["totalCost"], last["totalCost"]);
        let today = &s["today"]["date"];
        let scope = match file {
            Some(f) => f.parent().unwrap().display().to_string(),
            None => demo(),
        };
        let day = json(&run(&[
            &scope,
            "--json",
            "--utc",
            "--since",
            today.as_str().unwrap(),
            "--until",
            today.as_str().unwrap(),
        ]));
        assert_eq!(s["today"]["totalCost"], day["totals"]["totalCost"], "{input}");
        if file.is_some() {
            let sessions = json(&run(&["session", &scope, "--json"]));
            let row = sessions["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["sessionPath"].as_str() == Some(input.as_str()))
                .expect("the session's row");
            assert_eq!(s["session"]["totalCost"], row["totalCost"], "{input}");
        }
    }
}

/// `usage --live` on a terminal: drawn at once, drawn again when a session gets a record
/// (file events, well before the interval), and refused where it cannot draw.
#[test]
fn live_redraws_when_a_session_changes() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.jsonl");
    std::fs::copy(root().join("corpus/valid/branches.jsonl"), &session).unwrap();
    let (master, slave) = crate::common::pty();
    let fd = || std::process::Stdio::from(std::fs::File::from(slave.try_clone().unwrap()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["usage", "daily", "--live", "--interval", "60", "--utc"])
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .env("PI_SESSION_CACHE_DIR", dir.path().join("cache"))
        .stdin(fd())
        .stdout(fd())
        .stderr(fd())
        .spawn()
        .unwrap();
    drop(slave);
    // What the terminal shows, read on a thread of its own.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut buf = [0u8; 1 << 14];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = Vec::new();
    // Until the last drawing (what follows the last clear) is whole and shows `what`.
    let wait_for = |what: &str, screen: &mut Vec<u8>| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let drawn = |s: &[u8]| {
            let s = String::from_utf8_lossy(s);
            let last = s.rsplit("\x1b[2J").next().unwrap_or_default().to_string();
            last.contains(what) && last.contains("Ctrl-C stops)")
        };
        while !drawn(screen) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(b) => screen.extend(b),
                Err(_) => panic!("no {what:?} on the terminal:\n{}", String::from_utf8_lossy(screen)),
            }
        }
    };
    wait_for("$0.0048", &mut screen);
    assert!(
        String::from_utf8_lossy(&screen).starts_with("\x1b[H\x1b[2J"),
        "drawn from the top"
    );
    assert!(String::from_utf8_lossy(&screen).contains("again on each change and every 60s"));
    // A record of $1.50 more: drawn again within seconds, not after the minute.
    let mut text = std::fs::read_to_string(&session).unwrap();
    text.push_str(r#"{"type":"usage","id":"u9","parentId":null,"timestamp":"2025-03-14T10:00:00.000Z","kind":"k","provider":"q","model":"m3","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":1.5}}}"#);
    text.push('\n');
    let started = std::time::Instant::now();
    std::fs::write(&session, text).unwrap();
    screen.clear();
    wait_for("$1.50\n", &mut screen);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(rx);
    reader.join().unwrap();
    // Not on a terminal, with --json, or for the status line: a usage error.
    for (args, says) in [
        (
            vec!["--live"],
            "--live draws on a terminal, and standard output is not one",
        ),
        (vec!["statusline", "--live"], "--live draws the tables"),
    ] {
        let o = run(&[&args[..], &[&dir.path().display().to_string()]].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = run(&["--live", "--json"]);
    assert_eq!(o.status.code(), Some(2));
}
