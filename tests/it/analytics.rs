//! The tables of `pi_session::analytics` (issue #19): the entry rows' fast path (long
//! strings left in the file) against its twin (every entry decoded whole) on the corpus,
//! generated shapes and random sessions; and, with the feature `parquet`, the export read
//! back by DuckDB (`PI_SESSION_REQUIRE_DUCKDB=1` makes a missing DuckDB a failure).

use pi_session::Session;
use pi_session::analytics::{EntryRow, UsageRow, entry_rows_twin, session_rows, usage_rows};
use pi_session::generator::{Mix, SessionSpec, write_session};
use proptest::prelude::*;
use std::path::Path;

/// The fast path's entry rows and usage rows.
fn fast(s: &Session, with_text: bool) -> (Vec<EntryRow>, Vec<UsageRow>) {
    let mut out = Vec::new();
    let usage = session_rows(s, with_text, |r| -> pi_session::Result<()> {
        out.push(r);
        Ok(())
    })
    .expect("rows");
    (out, usage_rows(&usage))
}

/// The twin's entry rows, and the usage scan's usage rows (itself held against the usage
/// twin by the usage tests).
fn slow(s: &Session, with_text: bool) -> (Vec<EntryRow>, Vec<UsageRow>) {
    let usage = pi_session::usage::records_of(s, pi_session::usage::header_ms(s)).expect("usage");
    (entry_rows_twin(s, with_text).expect("twin rows"), usage_rows(&usage))
}

fn agree(s: &Session, what: &str) {
    for with_text in [false, true] {
        let (rows, usage) = fast(s, with_text);
        let (twin, twin_usage) = slow(s, with_text);
        assert_eq!(rows.len(), s.entries_len(), "{what}: a row per entry");
        assert!(
            rows == twin,
            "{what} (with_text {with_text}): the rows differ from the twin's"
        );
        assert!(
            usage == twin_usage,
            "{what}: the usage rows differ from the usage scan's"
        );
    }
}

#[test]
fn entry_rows_equal_the_twin_on_the_corpus() {
    let mut files = Vec::new();
    crate::readme::jsonl_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"), &mut files);
    let mut n = 0;
    for f in &files {
        if let Ok(s) = Session::open(f) {
            agree(&s, &f.display().to_string());
            n += 1;
        }
    }
    assert!(n > 50, "the corpus is there ({n} sessions)");
}

#[test]
fn entry_rows_equal_the_twin_on_every_shape() {
    use pi_session::Flavor;
    for (k, (mix, flavor)) in [
        (Mix::ImageHeavy, Flavor::Pi),
        (Mix::Realistic, Flavor::Pi),
        (Mix::SmallEntries, Flavor::Pi),
        // PiG's blocks: tool_use names count as tool calls.
        (Mix::Realistic, Flavor::Pig),
    ]
    .into_iter()
    .enumerate()
    {
        let mut bytes = Vec::new();
        write_session(
            &SessionSpec {
                mix,
                flavor,
                ..SessionSpec::new(k as u64 + 11, 6 << 20)
            },
            &mut bytes,
        )
        .expect("generate");
        let s = Session::from_bytes(bytes).expect("a session");
        if flavor == Flavor::Pig {
            let (rows, _) = fast(&s, false);
            assert!(
                rows.iter().any(|r| r.tool_name.is_some()),
                "PiG's tool_use names are read"
            );
        }
        agree(&s, &format!("{mix:?} {flavor:?}"));
    }
}

/// The pieces hostile entries are made of: long strings (deferred) with escapes,
/// non-ASCII and lone surrogates, in every place a row reads.
fn hostile_line(k: usize, long: &str, kind: u8) -> String {
    let id = format!("e{k}");
    let parent = if k == 0 {
        "null".to_string()
    } else {
        format!("\"e{}\"", k - 1)
    };
    let ts = "2025-03-01T10:00:00.000Z";
    match kind % 10 {
        0 => format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"user","content":[{{"type":"text","text":"{long}"}},{{"type":"image","data":"{long}","mimeType":"image/png"}},{{"type":"text","text":"b"}}]}}}}"#
        ),
        1 => format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"toolResult","toolName":"{long}","isError":true,"content":"{long}"}}}}"#
        ),
        2 => format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"nope","message":{{"role":"assistant","provider":"p","model":"{long}","content":[{{"type":"toolCall","name":"bash","arguments":{{"x":"{long}"}}}},{{"type":"thinking","thinking":"{long}"}}]}}}}"#
        ),
        3 => {
            format!(r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"{ts}","summary":"{long}"}}"#)
        }
        4 => format!(
            r#"{{"type":"custom_message","id":"{id}","parentId":{parent},"timestamp":"{ts}","customType":"x","content":[{{"type":"text","text":"{long}"}}],"display":true}}"#
        ),
        5 => format!(
            r#"{{"type":"model_change","id":"{id}","parentId":{parent},"timestamp":{k},"provider":"{long}","modelId":"m"}}"#
        ),
        // Duplicate and escaped keys (the last one counts), a number id, blocks that are
        // no object, a tool name that is no string, a usage record.
        6 => format!(
            r#"{{"type":"message","id":{k},"parentId":{parent},"\u0074imestamp":"{ts}","message":"x","message":{{"role":"assistant","model":"a","mod\u0065l":"{long}","provider":"p","responseId":"r{k}","usage":{{"input":1,"output":2,"cacheRead":3,"cacheWrite":0,"totalTokens":6,"cost":{{"total":0.01}}}},"content":[1,"s",null,{{"type":"text","text":"{long}"}},{{"type":"toolCall","name":7}},{{"type":"toolCall","name":"a","name":"{long}"}},{{"type":"tool_use","name":"g","input":{{}}}}]}}}}"#
        ),
        // A message object overridden by a later non-object; a type given twice.
        7 => format!(
            r#"{{"type":"model_change","id":"{id}","parentId":{parent},"timestamp":"{ts}","type":"message","message":{{"role":"user","content":"{long}"}},"message":null}}"#
        ),
        8 => format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"toolResult","toolName":"t","isError":"true","content":[{{"type":"text","text":"x","text":"{long}"}},{{"type":"text"}}]}}}}"#
        ),
        // A custom usage record and a branch summary whose summary is no string.
        _ => format!(
            r#"{{"type":"branch_summary","id":"{id}","parentId":{parent},"timestamp":"{ts}","summary":["{long}"],"usage":{{"input":5,"output":1}}}}"#
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(32),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random sessions of hostile entries whose strings are around the deferral size
    /// (64 KiB of JSON): the fast rows equal the twin's.
    #[test]
    fn entry_rows_equal_the_twin_on_hostile_sessions(
        kinds in proptest::collection::vec(any::<u8>(), 1..8),
        piece in proptest::sample::select(vec!["a", "\\n", "\\\"", "é", "\\ud800", "😀", "\\u0041", "\\\\u0041", "\\\\"]),
        reps in (60usize << 10) / 8..(70usize << 10) / 8,
    ) {
        let long = piece.repeat(reps * 8 / piece.len().max(1));
        let mut text = String::from(r#"{"type":"session","version":3,"id":"s","timestamp":"2025-03-01T10:00:00.000Z","cwd":"/p"}"#);
        text.push('\n');
        for (k, kind) in kinds.iter().enumerate() {
            text.push_str(&hostile_line(k, &long, *kind));
            text.push('\n');
        }
        let s = Session::from_bytes(text.into_bytes()).expect("a session");
        for with_text in [false, true] {
            prop_assert_eq!(fast(&s, with_text), slow(&s, with_text));
        }
    }
}

#[cfg(feature = "parquet")]
mod parquet {
    use crate::common::run_cli;
    use std::path::Path;
    use std::process::Command;

    /// `sql`'s rows as text (one line a row, values `|`-separated) from DuckDB in Python,
    /// or `None` when DuckDB is not there.
    fn duckdb(sql: &str) -> Option<String> {
        let out = Command::new("python3")
            .args([
                "-c",
                "import duckdb,sys\nfor r in duckdb.sql(sys.argv[1]).fetchall(): print('|'.join(map(str, r)))",
                sql,
            ])
            .output()
            .ok()?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("No module named 'duckdb'") {
                assert!(
                    std::env::var_os("PI_SESSION_REQUIRE_DUCKDB").is_none(),
                    "DuckDB is required (PI_SESSION_REQUIRE_DUCKDB) but python3 has no duckdb"
                );
                return None;
            }
            panic!("duckdb: {err}\n{sql}");
        }
        Some(String::from_utf8(out.stdout).expect("utf-8").trim().to_string())
    }

    fn cli(sub: &str, args: &[&str]) -> String {
        let out = run_cli(sub, args);
        assert!(
            out.status.success(),
            "{sub} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("json")
    }

    /// What the folder's tables say: sessions, entries, the usage totals counted once
    /// (the `usage` command's rule), and problems (rows twice, one key with two values).
    fn tables(out: &Path) -> Option<Vec<String>> {
        let o = out.display();
        let e = format!("read_parquet('{o}/entries/*/*.parquet', hive_partitioning=true)");
        let u = format!("read_parquet('{o}/usage/*/*.parquet', hive_partitioning=true)");
        let s = format!("read_parquet('{o}/sessions/sessions.parquet')");
        let q = [
            format!("SELECT count(*), sum(entries), sum(skipped_lines) FROM {s}"),
            format!("SELECT count(*), count(DISTINCT (session_path, byte_offset)) FROM {e}"),
            // Each record once: the copy in the file with the oldest header, ties by path.
            format!(
                "WITH r AS (SELECT *, row_number() OVER (PARTITION BY dedup_key ORDER BY session_created NULLS LAST, session_path) AS n FROM {u} WHERE time IS NOT NULL) \
                 SELECT count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(total_tokens), round(sum(cost), 2) FROM r WHERE n = 1"
            ),
            // A key names one record: its copies agree.
            format!(
                "SELECT count(*) FROM (SELECT dedup_key FROM {u} GROUP BY dedup_key \
                 HAVING count(DISTINCT (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, source)) > 1)"
            ),
            format!("SELECT count(*) FROM {u}"),
        ];
        q.iter().map(|q| duckdb(q)).collect()
    }

    #[test]
    fn duckdb_reads_what_ls_check_and_usage_say_and_a_second_run_adds_only_new_rows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("sessions");
        let out = dir.path().join("tables");
        let (r, o) = (root.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
        cli(
            "gen",
            &[
                "tree",
                r,
                "--sessions",
                "30",
                "--folders",
                "3",
                "--size",
                "12M",
                "--seed",
                "5",
            ],
        );
        // A copy of a session in another project: its usage records are counted once.
        let mut files: Vec<_> = walk(&root);
        files.sort();
        let copy = files[1]
            .parent()
            .expect("folder")
            .parent()
            .expect("root")
            .join("--copied--");
        std::fs::create_dir_all(&copy).expect("mkdir");
        std::fs::copy(&files[0], copy.join("2030-01-01T00-00-00-000Z_copy.jsonl")).expect("copy");
        let first = json(&cli("export-parquet", &[r, "--out", o, "--json"]));
        assert_eq!(first["read"], 31);
        let Some(t) = tables(&out) else { return };

        // Sessions and entries: as `ls` lists them and `check` counts them.
        let listed = cli(
            "ls",
            &[
                "--all",
                "--agent-dir",
                dir.path().to_str().expect("utf-8"),
                "--json",
                "--no-cache",
            ],
        );
        let sessions = listed.lines().filter(|l| l.starts_with('{')).count();
        let (mut entries, mut skipped) = (0u64, 0u64);
        for f in walk(&root) {
            let c = json(&cli("check", &["--json", f.to_str().expect("utf-8")]));
            entries += c["entries"].as_u64().expect("entries");
            skipped += c["skipped"].as_array().expect("skipped").len() as u64;
        }
        assert_eq!(t[0], format!("{sessions}|{entries}|{skipped}"));
        assert_eq!(t[1], format!("{entries}|{entries}"), "every entry once");

        // Usage: to the token and the cent of `usage --json`.
        let u = json(&cli("usage", &[r, "--json", "--utc", "--no-cache"]));
        let tot = &u["totals"];
        let cents = (tot["totalCost"].as_f64().expect("cost") * 100.0).round() / 100.0;
        assert_eq!(
            t[2],
            format!(
                "{}|{}|{}|{}|{}|{}|{cents}",
                tot["records"],
                tot["inputTokens"],
                tot["outputTokens"],
                tot["cacheReadTokens"],
                tot["cacheCreationTokens"],
                tot["totalTokens"]
            )
        );
        assert_eq!(t[3], "0", "a dedup key names one record");
        let usage_rows: u64 = t[4].parse().expect("a count");
        assert!(
            usage_rows > tot["records"].as_u64().expect("records"),
            "the copy's records are rows too"
        );

        // Appends to two sessions and a new one: only those are read again, and the new
        // rows come in once.
        for f in &files[2..4] {
            cli(
                "append",
                &[f.to_str().expect("utf-8"), r#"{"role":"user","content":"one more"}"#],
            );
        }
        let new = files[5].with_file_name("2031-01-01T00-00-00-000Z_new.jsonl");
        cli(
            "gen",
            &["session", new.to_str().expect("utf-8"), "--size", "200K", "--seed", "9"],
        );
        let again = json(&cli("export-parquet", &[r, "--out", o, "--json"]));
        assert_eq!(
            (again["read"].as_u64(), again["unchanged"].as_u64()),
            (Some(3), Some(29))
        );
        let added = check_entries_of(&new);
        let t2 = tables(&out).expect("duckdb");
        assert_eq!(t2[1], format!("{0}|{0}", entries + 2 + added), "exactly the new rows");
        assert_eq!(again["entries"].as_u64(), Some(entries + 2 + added));

        // A session gone: its rows go.
        std::fs::remove_file(&files[0]).expect("rm");
        let third = json(&cli("export-parquet", &[r, "--out", o, "--json"]));
        assert_eq!(third["removed"], 1);
        let t3 = tables(&out).expect("duckdb");
        let gone = check_entries_of(&copy.join("2030-01-01T00-00-00-000Z_copy.jsonl"));
        assert_eq!(t3[1], format!("{0}|{0}", entries + 2 + added - gone));
    }

    /// An export carried on after changes of every kind holds the same rows as one made
    /// from scratch: appends on the branch (read only past the old end), an append that
    /// branches off (older rows leave the branch: read whole), a last line completed by
    /// an append, a file rewritten, a new file, one gone.
    #[test]
    fn an_incremental_export_equals_a_full_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("sessions");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let (r, oa, ob) = (
            root.to_str().expect("utf-8"),
            a.to_str().expect("utf-8"),
            b.to_str().expect("utf-8"),
        );
        cli(
            "gen",
            &[
                "tree",
                r,
                "--sessions",
                "12",
                "--folders",
                "2",
                "--size",
                "4M",
                "--seed",
                "7",
            ],
        );
        let mut files = walk(&root);
        files.sort();
        let f = |k: usize| files[k].to_str().expect("utf-8").to_string();
        // A last line without its end (pi reads it all the same).
        let text = std::fs::read(&files[3]).expect("read");
        std::fs::write(&files[3], &text[..text.len() - 1]).expect("write");
        cli("export-parquet", &[r, "--out", oa]);

        let msg = r#"{"role":"user","content":"one more"}"#;
        cli("append", &[&f(0), msg]);
        cli("append", &[&f(0), msg]);
        cli("append", &[&f(1), msg]);
        let first_id = {
            let text = std::fs::read_to_string(&files[2]).expect("read");
            let line = text.lines().nth(1).expect("an entry");
            json(line)["id"].as_str().expect("an id").to_string()
        };
        cli("append", &[&f(2), "--parent", &first_id, msg]);
        let mut end = std::fs::OpenOptions::new().append(true).open(&files[3]).expect("open");
        std::io::Write::write_all(&mut end, b"\n").expect("append");
        cli("append", &[&f(3), msg]);
        cli("gen", &["session", &f(4), "--size", "300K", "--seed", "99"]);
        std::fs::remove_file(&files[5]).expect("rm");
        // An append on the branch after which pi drops the file (a message entry without
        // its message): its older rows go too.
        let leaf = {
            let text = std::fs::read_to_string(&files[7]).expect("read");
            json(text.lines().last().expect("an entry"))["id"]
                .as_str()
                .expect("an id")
                .to_string()
        };
        let mut end = std::fs::OpenOptions::new().append(true).open(&files[7]).expect("open");
        let line =
            format!(r#"{{"type":"message","id":"zz","parentId":"{leaf}","timestamp":"2025-01-01T00:00:00.000Z"}}"#);
        std::io::Write::write_all(&mut end, format!("{line}\n").as_bytes()).expect("append");
        let new = files[6].with_file_name("2031-01-01T00-00-00-000Z_new.jsonl");
        cli(
            "gen",
            &["session", new.to_str().expect("utf-8"), "--size", "200K", "--seed", "9"],
        );

        let again = json(&cli("export-parquet", &[r, "--out", oa, "--json"]));
        assert_eq!(
            (
                again["read"].as_u64(),
                again["appended"].as_u64(),
                again["removed"].as_u64()
            ),
            (Some(7), Some(2), Some(1)),
            "{again}"
        );
        assert_eq!(again["skipped"][0]["path"].as_str(), Some(f(7).as_str()), "{again}");
        let full = json(&cli("export-parquet", &[r, "--out", ob, "--json"]));
        assert_eq!(again["entries"], full["entries"]);
        // Nothing changed since: nothing read, nothing written.
        let idle = json(&cli("export-parquet", &[r, "--out", ob, "--json"]));
        assert_eq!(
            (idle["read"].as_u64(), idle["filesWritten"].as_u64(), &idle["entries"]),
            (Some(0), Some(0), &full["entries"])
        );
        // (The file pi drops is still named, from the manifest, without a read.)
        assert_eq!(idle["skipped"][0]["path"].as_str(), Some(f(7).as_str()), "{idle}");
        for t in ["entries/*/*.parquet", "usage/*/*.parquet", "sessions/sessions.parquet"] {
            let (x, y) = (
                format!("read_parquet('{oa}/{t}', hive_partitioning=true)"),
                format!("read_parquet('{ob}/{t}', hive_partitioning=true)"),
            );
            let Some(n) = duckdb(&format!(
                "SELECT count(*) FROM ((SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y}) UNION ALL (SELECT * FROM {y} EXCEPT ALL SELECT * FROM {x}))"
            )) else {
                return;
            };
            assert_eq!(n, "0", "{t}: rows of one export that the other has not");
        }
    }

    /// A run killed before its commit leaves temporary files (deleted by the next run); one
    /// killed after it leaves renames to make (made by the next run). Neither doubles a row.
    #[test]
    fn a_killed_run_is_finished_or_forgotten() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("tables");
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo/sessions");
        let (d, o) = (demo.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
        let first = json(&cli("export-parquet", &[d, "--out", o, "--json"]));
        let day = out.join("entries/date=2025-01-01/data.parquet");
        let bytes = std::fs::read(&day).expect("a day file");
        // Killed before the commit: a temporary copy nobody names.
        let stray = out.join("entries/date=2025-01-01/data.parquet.tmp-1");
        std::fs::write(&stray, &bytes).expect("write");
        // Killed after the commit: the manifest lists a rename not made yet (the day's
        // file already moved aside as its temporary name).
        let pending = out.join("entries/date=2025-01-09/data.parquet.tmp-2");
        std::fs::rename(out.join("entries/date=2025-01-09/data.parquet"), &pending).expect("rename");
        let manifest = out.join("_manifest.json");
        let mut m = json(&std::fs::read_to_string(&manifest).expect("manifest"));
        m["renames"] = serde_json::json!([{"from": "entries/date=2025-01-09/data.parquet.tmp-2", "to": "entries/date=2025-01-09/data.parquet"}]);
        std::fs::write(&manifest, m.to_string()).expect("write");
        let again = json(&cli("export-parquet", &[d, "--out", o, "--json"]));
        assert!(!stray.exists() && !pending.exists());
        assert!(out.join("entries/date=2025-01-09/data.parquet").is_file());
        assert_eq!(
            (again["read"].as_u64(), again["entries"].clone()),
            (Some(0), first["entries"].clone())
        );
        if let Some(t) = tables(&out) {
            assert_eq!(t[1], format!("{0}|{0}", first["entries"]), "every entry once");
        }
    }

    /// docs/analytics.md's outputs are DuckDB's on the demo corpus, as they are now.
    #[test]
    fn the_outputs_in_docs_analytics_are_current() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("tables");
        let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
        cli(
            "export-parquet",
            &[
                "--agent-dir",
                demo.to_str().expect("utf-8"),
                "--out",
                out.to_str().expect("utf-8"),
            ],
        );
        if duckdb("SELECT 1").is_none() {
            return;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/analytics_outputs.py");
        let run = Command::new("python3")
            .arg(script)
            .arg(&out)
            .arg("--check")
            .output()
            .expect("python3");
        assert!(
            run.status.success(),
            "{} (run `python3 docs/analytics_outputs.py TABLES` to renew them)",
            String::from_utf8_lossy(&run.stderr)
        );
    }

    fn check_entries_of(f: &Path) -> u64 {
        json(&cli("check", &["--json", f.to_str().expect("utf-8")]))["entries"]
            .as_u64()
            .expect("entries")
    }

    fn walk(root: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for d in std::fs::read_dir(root).expect("root").flatten() {
            for f in std::fs::read_dir(d.path()).expect("folder").flatten() {
                if f.path().extension().is_some_and(|x| x == "jsonl") {
                    out.push(f.path());
                }
            }
        }
        out
    }
}
