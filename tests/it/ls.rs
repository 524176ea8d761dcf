//! `pi-session ls` as a table people read (issue #14 item 5): a header, short ids, local
//! times (TZ honoured, `--utc`), pi's ages, sizes, names marked, titles and cwds cut by
//! display width to the width asked for; `--sort`, `--limit`, `--since`/`--until`,
//! `--named`, `--long`, the hint of an empty project. The fixtures are
//! `corpus/listing/ls/agent` (made by `corpus/listing/ls/make.py`); the expected tables
//! are `corpus/listing/ls/*.txt`, run with `PI_SESSION_NOW_MS` (the test-only clock),
//! `HOME=/home/u` and a fixed `TZ` (`PI_SESSION_BLESS=1` rewrites them).

use crate::common::{strip_sgr, terminal_safe};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use unicode_width::UnicodeWidthStr;

/// 2025-11-25T16:08:00Z, the fixtures' "now".
const NOW_MS: &str = "1764086880000";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn agent() -> PathBuf {
    root().join("corpus/listing/ls/agent")
}

fn ls(tz: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg("ls")
        .args(args)
        .arg("--agent-dir")
        .arg(agent())
        .env("PI_SESSION_NOW_MS", NOW_MS)
        .env("HOME", "/home/u")
        .env("TZ", tz)
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .expect("run pi-session")
}

fn table(tz: &str, args: &[&str]) -> String {
    let out = ls(tz, args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The ids of a table's rows (the header skipped).
fn ids(t: &str) -> Vec<&str> {
    t.lines()
        .filter(|l| !l.starts_with("ID "))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn tables_match_their_goldens() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "w80-utc",
            "Asia/Tokyo",
            &["--all", "--width", "80", "--header", "--utc"],
        ),
        ("w120-tokyo", "Asia/Tokyo", &["--all", "--width", "120", "--header"]),
        ("w100-berlin", "Europe/Berlin", &["--all", "--width", "100", "--header"]),
        (
            "w60-new-york",
            "America/New_York",
            &["--all", "--width", "60", "--header"],
        ),
        ("piped-utc", "UTC", &["--all"]),
    ];
    let bless = std::env::var_os("PI_SESSION_BLESS").is_some();
    let mut failures = Vec::new();
    for (name, tz, args) in cases {
        let got = table(tz, args);
        let file = root().join(format!("corpus/listing/ls/{name}.txt"));
        if bless {
            std::fs::write(&file, &got).expect("bless");
            continue;
        }
        let want = std::fs::read_to_string(&file).unwrap_or_default();
        if got != want {
            failures.push(format!(
                "{name} (TZ={tz} ls {}):\n{got}\nwanted:\n{want}",
                args.join(" ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every row fits the width, and the cwd column starts at the same display column in
/// every row: the CJK, combining, ZWJ-emoji and flag titles are measured right.
#[test]
fn rows_fit_the_width_and_columns_align() {
    for w in [64usize, 70, 80, 91, 100, 120, 157, 200] {
        let t = table("UTC", &["--all", "--width", &w.to_string(), "--header"]);
        let mut cwd_columns = Vec::new();
        for line in t.lines() {
            assert!(line.width() <= w, "{w} columns: {} wide: {line}", line.width());
            // The cwd is after the last two spaces (no cwd of the fixtures holds two).
            let at = line.rfind("  ").expect("columns") + 2;
            cwd_columns.push(line[..at].width());
        }
        assert!(
            cwd_columns.windows(2).all(|p| p[0] == p[1]),
            "{w} columns: cwd starts at {cwd_columns:?}:\n{t}"
        );
        assert_eq!(t.lines().count(), 10, "header and nine sessions");
    }
    // The titles are the reason: each of them is in the table, cut or whole.
    let t = table("UTC", &["--all", "--width", "200"]);
    for part in [
        "セッション一覧の表示幅を正しく計算して",
        "Cafe\u{301} re\u{301}sume\u{301}",
        "👩\u{200d}💻 pair on the 👨\u{200d}👩\u{200d}👧 tree \u{1f1ef}\u{1f1f5}\u{1f1eb}\u{1f1f7} 👍\u{1f3fd} ok",
    ] {
        assert!(t.contains(part), "{part}: {t}");
    }
    // Piped, with no width: only a title is cut, to 100 columns (#36: a row of `ls --all
    // | head` was ~2,500 characters); --wide (or --width 0) cuts nothing.
    let piped = table("UTC", &["--all"]);
    assert!(!piped.starts_with("ID"), "no header when piped");
    let long = piped
        .lines()
        .find(|l| l.contains("Refactor the listing code"))
        .expect("the long title's row");
    assert!(
        long.contains('…') && !long.contains("then add tests for wide characters"),
        "{long}"
    );
    let title = &long[long.find("Refactor").expect("title")..long.rfind("  ").expect("cwd")];
    assert_eq!(title.width(), 100, "{title}");
    for wide in [&["--all", "--wide"][..], &["--all", "--width", "0"]] {
        let whole = table("UTC", wide);
        assert!(
            !whole.contains('…') && whole.contains("then add tests for wide characters"),
            "{whole}"
        );
    }
}

#[test]
fn local_time_follows_tz_and_utc_is_utc() {
    let ny = table("America/New_York", &["--all", "--width", "120", "--header"]);
    let tokyo = table("Asia/Tokyo", &["--all", "--width", "120", "--header"]);
    assert_ne!(ny, tokyo);
    assert!(ny.starts_with("ID        MODIFIED (EST/EDT)"), "{ny}");
    assert!(ny.contains("019ab002  2025-11-25 11:03"), "{ny}");
    assert!(tokyo.starts_with("ID        MODIFIED (JST)"), "{tokyo}");
    assert!(tokyo.contains("019ab002  2025-11-26 01:03"), "{tokyo}");
    let utc_flag = table("Asia/Tokyo", &["--all", "--width", "120", "--header", "--utc"]);
    assert_eq!(table("UTC", &["--all", "--width", "120", "--header"]), utc_flag);
    assert!(utc_flag.contains("019ab002  2025-11-25 16:03   5m"), "{utc_flag}");
}

#[test]
fn ages_are_pis() {
    let t = table("UTC", &["--all", "--width", "200"]);
    let ages: Vec<&str> = t.lines().map(|l| l.split_whitespace().nth(3).expect("age")).collect();
    assert_eq!(ages, ["now", "5m", "45m", "3h", "2d", "1w", "2w", "4mo", "1y"]);
}

#[test]
fn names_are_marked_and_coloured() {
    let t = table("UTC", &["--all", "--width", "120"]);
    let named: Vec<&str> = t.lines().filter(|l| l.contains("  * ")).collect();
    assert_eq!(named.len(), 2, "{t}");
    assert!(named[0].contains("* release notes 1.6"), "{t}");
    let colored = table("UTC", &["--all", "--width", "120", "--color", "always"]);
    assert!(colored.contains("\u{1b}[33mrelease notes 1.6\u{1b}[0m"), "{colored}");
    assert_eq!(strip_sgr(&colored), t, "colour adds SGR sequences and nothing else");
    // auto: not on a pipe.
    assert_eq!(table("UTC", &["--all", "--width", "120", "--color", "auto"]), t);
    // The hostile name prints nothing a terminal acts on.
    assert!(terminal_safe(&t), "{t}");
}

#[test]
fn header_only_on_a_terminal_or_when_asked() {
    let piped = table("UTC", &["--all", "--width", "100"]);
    assert!(piped.starts_with("019ab001"), "{piped}");
    let header = table("UTC", &["--all", "--width", "100", "--header"]);
    assert!(
        header.starts_with("ID        MODIFIED (UTC)    AGE  MSGS  SIZE    TITLE"),
        "{header}"
    );
    assert_eq!(
        table("UTC", &["--all", "--width", "100", "--header", "--no-header"]),
        piped
    );
    assert_eq!(
        table("UTC", &["--all", "--width", "100", "--no-header", "--header"]),
        header
    );
}

#[test]
fn sort_filter_and_limit() {
    let all = ["--all", "--width", "100"];
    let with = |extra: &[&str]| table("UTC", &[&all[..], extra].concat());
    let t = with(&[]);
    assert_eq!(
        ids(&t),
        [
            "019ab001", "019ab002", "019ab009", "019ab003", "019ab004", "019ab005", "019ab008", "019ab006", "019ab007"
        ]
    );
    assert_eq!(ids(&with(&["--sort", "size"]))[..2], ["019ab008", "019ab004"]);
    assert_eq!(ids(&with(&["--sort", "size", "--reverse"]))[0], "019ab007");
    assert_eq!(ids(&with(&["--sort", "messages"])).last(), Some(&"019ab007"));
    assert_eq!(ids(&with(&["--sort", "created"]))[..2], ["019ab002", "019ab001"]);
    // Name or first message, ignoring case: "(no messages)", "Café…", "deploy", …
    assert_eq!(
        ids(&with(&["--sort", "name"]))[..3],
        ["019ab007", "019ab002", "019ab009"]
    );
    assert_eq!(ids(&with(&["--limit", "2"])), ["019ab001", "019ab002"]);
    assert_eq!(ids(&with(&["--named"])), ["019ab005", "019ab006"]);
    assert_eq!(
        ids(&with(&["--since", "1d"])),
        ["019ab001", "019ab002", "019ab009", "019ab003"]
    );
    // Local dates: the 25th in Tokyo starts at 15:00 UTC on the 24th.
    assert_eq!(ids(&with(&["--since", "2025-11-25", "--utc"])).len(), 4);
    let tokyo = table("Asia/Tokyo", &[&all[..], &["--since", "2025-11-26"]].concat());
    assert_eq!(ids(&tokyo), ["019ab001", "019ab002", "019ab009"]);
    assert_eq!(
        ids(&with(&["--until", "2025-07-23", "--utc"])),
        ["019ab006", "019ab007"]
    );
    assert_eq!(
        ids(&with(&[
            "--since",
            "2025-11-17 16:00",
            "--until",
            "2025-11-23",
            "--utc"
        ])),
        ["019ab004", "019ab005"]
    );
    // --json takes the same filters and order, and keeps pi's fields.
    let out = ls("UTC", &["--all", "--json", "--named", "--sort", "name"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("JSON"))
        .collect();
    let names: Vec<&str> = lines.iter().map(|v| v["name"].as_str().expect("a name")).collect();
    assert_eq!(names, ["release notes 1.6", "名前 \u{1b}[31mred\u{1b}[0m"]);
    // pi's fields in pi's order.
    let raw = String::from_utf8_lossy(&out.stdout);
    let first = raw.lines().next().expect("a line");
    let at: Vec<usize> = [
        "path",
        "id",
        "cwd",
        "name",
        "parentSessionPath",
        "created",
        "modified",
        "messageCount",
        "firstMessage",
    ]
    .iter()
    .map(|k| first.find(&format!("\"{k}\":")).expect("the field"))
    .collect();
    assert!(at.windows(2).all(|p| p[0] < p[1]), "{first}");
    assert_eq!(lines[0].as_object().expect("object").len(), 9, "{first}");
}

#[test]
fn nothing_listed_is_the_answer_no() {
    // An empty project: the hint, exit 1, nothing on stdout.
    let out = ls("UTC", &["--cwd", "/home/u/elsewhere"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such folder") && err.contains("`pi-session ls --all`"),
        "{err}"
    );
    // The project's own sessions (by --cwd).
    let t = table("UTC", &["--cwd", "/home/u/app", "--width", "100"]);
    assert_eq!(ids(&t).len(), 7, "{t}");
    // Filters that leave nothing: exit 1, said on stderr.
    let out = ls("UTC", &["--all", "--since", "2030-01-01"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("none of the 9 session(s) matches"));
    // A date that is none: a usage error.
    let out = ls("UTC", &["--all", "--since", "last tuesday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(": not a date ("));
}

#[test]
fn long_adds_the_absolute_path() {
    let t = table("UTC", &["--all", "--long", "--width", "100"]);
    for line in t.lines() {
        let path = Path::new(line.rsplit("  ").next().expect("a path column"));
        assert!(path.is_absolute() && path.is_file(), "{line}");
        let id = line.split_whitespace().next().expect("id");
        assert!(path.to_string_lossy().contains(&format!("_{id}-")), "{line}");
    }
    let plain = table("UTC", &["--all", "--width", "100"]);
    assert!(!plain.contains(".jsonl"), "no path without --long: {plain}");
    // The cwd is shortened to ~ under HOME, and the one outside it is not.
    assert!(
        plain.contains("~/app") && plain.contains("/srv/x") && !plain.contains("/home/u"),
        "{plain}"
    );
}

/// `--tree`: pi's threaded view by `parentSession`; a parent cycle (where pi recurses
/// without end) is cut.
#[test]
fn tree_threads_forks_under_their_parents() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("agent/sessions/--p--");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let now: f64 = NOW_MS.parse().expect("ms");
    let hour = 3_600_000.0;
    let file = |n: &str| dir.join(format!("{n}.jsonl"));
    let write = |n: &str, ago_h: f64, parent: Option<&str>| {
        let ms = now - ago_h * hour;
        let iso = |ms: f64| {
            let out = Command::new("date")
                .args(["-u", "-d", &format!("@{}", ms / 1000.0), "+%Y-%m-%dT%H:%M:%S.000Z"])
                .output()
                .expect("date");
            String::from_utf8(out.stdout).expect("UTF-8").trim().to_string()
        };
        let parent = parent.map_or(String::new(), |p| {
            format!(
                ",\"parentSession\":{}",
                serde_json::Value::from(file(p).to_str().expect("UTF-8"))
            )
        });
        let text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{n}0000000-x\",\"timestamp\":\"{t}\",\"cwd\":\"/p\"{parent}}}\n\
             {{\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"{t}\",\"message\":{{\"role\":\"user\",\"content\":\"session {n}\",\"timestamp\":{ms}}}}}\n",
            t = iso(ms)
        );
        std::fs::write(file(n), text).expect("write");
    };
    write("a", 24.0, None);
    write("b", 2.0, Some("a"));
    write("c", 5.0, Some("a"));
    write("d", 1.0, Some("b"));
    write("e", 3.0, Some("gone"));
    write("x", 240.0, Some("y"));
    write("y", 216.0, Some("x"));
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(["ls", "--all", "--width", "80", "--agent-dir"])
            .arg(tmp.path().join("agent"))
            .args(args)
            .env("PI_SESSION_NOW_MS", NOW_MS)
            .env("TZ", "UTC")
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let t = run(&["--tree"]);
    // The title cell: after the size column (`…B  `), up to the end of the title.
    let cells: Vec<&str> = t
        .lines()
        .map(|l| {
            let start = l.find("B  ").expect("a size") + 3;
            let end = l.find("session ").expect("a title") + "session x".len();
            &l[start..end]
        })
        .collect();
    assert_eq!(
        cells,
        [
            "  session a",
            "├─   session b",
            "│  └─   session d",
            "└─   session c",
            "  session e",
            "  session y",
            "└─   session x",
        ],
        "{t}"
    );
    // Without --tree: pi's flat order.
    let flat = run(&[]);
    assert_eq!(
        ids(&flat),
        [
            "d0000000", "b0000000", "e0000000", "c0000000", "a0000000", "y0000000", "x0000000"
        ]
    );
    assert!(flat.lines().all(|l| !l.contains('─')));
}
