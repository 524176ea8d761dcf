//! `pi-session search` (issue #16) from the command line: exit codes as ripgrep's, the
//! `--json` shape (docs/cli.md), ripgrep's flags, the filters, the order of sessions,
//! output that is safe on a terminal, and hits checked against an independent decode of
//! the demo corpus and the real sessions.

use crate::common::{real_sessions, terminal_safe};
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    crate::common::run_cli("search", args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8")
}

fn json_lines(o: &Output) -> Vec<J> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn demo() -> String {
    root().join("corpus/demo").display().to_string()
}

fn branches() -> String {
    root().join("corpus/valid/branches.jsonl").display().to_string()
}

#[test]
fn exit_codes_are_ripgreps() {
    assert_eq!(run(&["parser", &branches()]).status.code(), Some(0));
    assert_eq!(run(&["no such words anywhere", &branches()]).status.code(), Some(1));
    let bad = run(&["(unclosed", &branches()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("pi-session: bad pattern: "));
    let bad = run(&["--json", "(unclosed", &branches()]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(json_lines(&bad)[0]["error"]["kind"], "usage");
    let missing = run(&["x", "/nonexistent/nowhere.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));
    // A named file that is no session is an error; the others are still searched.
    let not = root().join("corpus/malformed/header-type-not-session.jsonl");
    {
        let o = run(&["parser", &branches(), &not.display().to_string()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stdout(&o).contains("Write a parser"));
    }
    // A line break needs -U, as in ripgrep: a real one, or written as `\n` (#36: that
    // matched nothing, exit 1, without a word).
    assert_eq!(run(&["-F", "a\nb", &branches()]).status.code(), Some(2));
    let o = run(&[r#"she said "ship it\nthen"#, &branches()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("add -U"), "{o:?}");
    assert_ne!(run(&["-U", r"parser\nthen", &branches()]).status.code(), Some(2));
    // -q: nothing printed, 0 at the first match, 1 without one (#36).
    let o = run(&["-q", "parser", &branches()]);
    assert_eq!((o.status.code(), o.stdout.len(), o.stderr.len()), (Some(0), 0, 0));
    let o = run(&["-q", "--json", "parser", &branches()]);
    assert_eq!((o.status.code(), o.stdout.len()), (Some(0), 0));
    let o = run(&["-q", "no such words anywhere", &branches()]);
    assert_eq!((o.status.code(), o.stdout.len()), (Some(1), 0));
    // -L: the sessions without a match, 0 when one was printed (ripgrep's).
    let both = [
        branches(),
        root().join("corpus/valid/all-entry-types.jsonl").display().to_string(),
    ];
    let o = run(&["-L", "-F", "parser", &both[0], &both[1]]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), format!("{}\n", both[1]));
    let o = run(&["-L", "-F", "parser", &both[0]]);
    assert_eq!((o.status.code(), o.stdout.len()), (Some(1), 0));
    // An error and a match: still 0, the error on stderr (ripgrep's -q).
    let o = run(&["-q", "parser", &branches(), &not.display().to_string()]);
    assert_eq!((o.status.code(), o.stdout.len()), (Some(0), 0));
    assert!(!o.stderr.is_empty());
    assert_eq!(run(&["--role", "robot", "x", &branches()]).status.code(), Some(2));
}

#[test]
fn json_lines_say_where_each_match_is() {
    let o = run(&["--json", "parser", &branches()]);
    assert_eq!(o.status.code(), Some(0));
    let lines = json_lines(&o);
    let (summary, matches) = lines.split_last().expect("lines");
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["sessionsSearched"], 1);
    assert_eq!(summary["sessionsWithMatches"], 1);
    assert_eq!(summary["matchingLines"].as_u64(), Some(matches.len() as u64));
    let file = std::fs::read(branches()).unwrap();
    for m in matches {
        assert_eq!(m["type"], "match");
        assert_eq!(m["session"], "01952b60-2954-716b-8618-62924ed42174");
        assert!(m["path"].as_str().unwrap().ends_with("branches.jsonl"));
        // The offset is the start of the entry's line, which holds the entry's id.
        let off = m["offset"].as_u64().unwrap() as usize;
        assert!(off == 0 || file[off - 1] == b'\n');
        let line_end = off + file[off..].iter().position(|&b| b == b'\n').unwrap();
        let id = m["entry"].as_str().unwrap();
        assert!(String::from_utf8_lossy(&file[off..line_end]).contains(&format!("\"id\":\"{id}\"")));
        // The match offsets are in the decoded text; the line starts at textOffset.
        let text = m["text"].as_str().unwrap();
        let base = m["textOffset"].as_u64().unwrap() as usize;
        for r in m["matches"].as_array().unwrap() {
            let (s, e) = (
                r["start"].as_u64().unwrap() as usize - base,
                r["end"].as_u64().unwrap() as usize - base,
            );
            assert_eq!(&text[s..e], "parser");
        }
        for k in ["role", "field", "timestamp", "onBranch", "line", "block"] {
            assert!(m.get(k).is_some(), "{k}");
        }
    }
    // Hits of the branch summary and of every branch, the current one marked.
    assert!(
        matches
            .iter()
            .any(|m| m["role"] == "branchSummary" && m["field"] == "summary")
    );
    assert!(matches.iter().any(|m| m["onBranch"] == true) && matches.iter().any(|m| m["onBranch"] == false));
    let on = json_lines(&run(&["--json", "--branch", "parser", &branches()]));
    assert!(on[..on.len() - 1].iter().all(|m| m["onBranch"] == true));
    assert!(on.len() < lines.len());
}

/// A session whose strings hide words behind every kind of escape, and put them where
/// no search must look.
fn hostile_file(dir: &Path) -> String {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"needle-session","timestamp":"2025-03-01T00:00:00.000Z","cwd":"/work/app"}"#,
        "\n",
        r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2025-03-01T00:00:01.000Z","message":{"role":"user","content":"she said \"caf\u00e9 time\"\nthen left \u001b[31mred\u001b[0m"}}"#,
        "\n",
        r#"{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2025-03-02T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"the needle is here","thinkingSignature":"needle"},{"type":"toolCall","id":"needle","name":"bash","arguments":{"command":"grep needle src/"}},{"type":"text","text":"one\ntwo needle\nthree\nfour"}]}}"#,
        "\n",
        r#"{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2025-03-03T00:00:01.000Z","message":{"role":"toolResult","toolCallId":"needle","content":[{"type":"text","text":"src/a.rs: needle"},{"type":"image","data":"bmVlZGxlneedle","mimeType":"image/png"}]}}"#,
        "\n",
        r#"{"type":"custom","id":"aaaa0004","parentId":"aaaa0003","timestamp":"2025-03-04T00:00:01.000Z","customType":"needle","data":{"needle":"needle"}}"#,
        "\n",
        r#"{"type":"session_info","id":"aaaa0005","parentId":"aaaa0004","timestamp":"2025-03-05T00:00:01.000Z","name":"Needle \u0068unt"}"#,
        "\n",
    );
    let p = dir.join("hostile.jsonl");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn escaped_phrases_are_found_and_noise_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let f = hostile_file(dir.path());
    let j = |args: &[&str]| {
        let mut a: Vec<&str> = vec!["--json"];
        a.extend_from_slice(args);
        a.push(&f);
        let lines = json_lines(&run(&a));
        lines[..lines.len() - 1].to_vec()
    };
    // A quote, a \u escape and a newline (-U).
    let m = j(&["-U", "-F", "said \"café time\"\nthen"]);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0]["text"], "she said \"café time\"\nthen left \u{1b}[31mred\u{1b}[0m");
    // By default only the text: keys, ids, signatures, extension state and image data never.
    let m = j(&["needle"]);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0]["entry"], "aaaa0002");
    assert_eq!(m[1]["role"], "name");
    assert_eq!(m[1]["text"], "Needle hunt");
    // Opt-in fields.
    let fields: Vec<String> = j(&["--thinking", "--tool-calls", "--tool-results", "needle"])
        .iter()
        .map(|m| m["field"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["thinking", "toolCall", "text", "toolResult", "name"]);
    // Smart case, -s, -i, -w, -e, -F.
    assert_eq!(j(&["-s", "needle"]).len(), 1);
    assert_eq!(j(&["Needle"]).len(), 1);
    assert_eq!(j(&["-i", "NEEDLE"]).len(), 2);
    assert_eq!(j(&["-w", "needl"]).len(), 0);
    assert_eq!(j(&["-e", "café", "-e", "hunt"]).len(), 2);
    assert_eq!(j(&["-F", "t.me"]).len(), 0);
    assert_eq!(j(&["t.me"]).len(), 1);
    // Filters: role, dates (entry time, in the zone), -m, context.
    assert_eq!(j(&["--role", "name", "needle"]).len(), 1);
    assert_eq!(j(&["--since", "2025-03-03", "--utc", "needle"]).len(), 1);
    // (Both lines of the first message: the other entries are of later days.)
    assert_eq!(j(&["--until", "2025-03-01", "--utc", "e"]).len(), 2);
    assert_eq!(j(&["-m", "1", "needle"]).len(), 1);
    let c = j(&["-C", "1", "needle", "--role", "assistant"]);
    let kinds: Vec<&str> = c.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["context", "match", "context"]);
    assert_eq!(c[0]["text"], "one");
    assert_eq!(c[2]["text"], "three");
    // -l and -c.
    let l = j(&["-l", "needle"]);
    assert_eq!(
        (l[0]["type"].as_str(), l[0]["matchingLines"].as_u64()),
        (Some("session"), Some(2))
    );
    let c = j(&["-c", "needle"]);
    assert_eq!(c[0]["count"], 2);
    // --cwd: the header's cwd, or a folder above it.
    let d = dir.path().display().to_string();
    assert_eq!(run(&["--cwd", "/work", "needle", &d]).status.code(), Some(0));
    assert_eq!(run(&["--cwd", "/work/other", "needle", &d]).status.code(), Some(1));
}

#[test]
fn text_output_is_grouped_escaped_and_cut_to_the_width() {
    let dir = tempfile::tempdir().unwrap();
    let f = hostile_file(dir.path());
    let o = run(&["red", &f, "--utc"]);
    let text = stdout(&o);
    assert!(terminal_safe(&text), "{text:?}");
    assert!(text.contains("\\x1b[31mred"), "{text}");
    let mut lines = text.lines();
    assert!(lines.next().unwrap().ends_with("hostile.jsonl"));
    assert_eq!(lines.next(), Some("needle-s · Needle hunt"));
    assert_eq!(
        lines.next(),
        Some("aaaa0001 * user          2025-03-01 00:00: then left \\x1b[31mred\\x1b[0m")
    );
    // Forced colour highlights the match; a narrow width cuts around it.
    let o = run(&["--color", "always", "--width", "60", "-F", "four", &f, "--utc"]);
    let text = stdout(&o);
    assert!(
        text.contains("\u{1b}[1m\u{1b}[31mfour\u{1b}[0m") || text.contains("four\u{1b}[0m"),
        "{text:?}"
    );
    let long = dir.path().join("long.jsonl");
    let body = format!("{} needle {}", "x".repeat(300), "y".repeat(300));
    std::fs::write(
        &long,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-03-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n{{\"type\":\"message\",\"id\":\"b1\",\"parentId\":null,\"timestamp\":\"2025-03-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{body}\"}}}}\n"
        ),
    )
    .unwrap();
    // Touching matches are one highlighted run.
    let adj = dir.path().join("adj.jsonl");
    std::fs::write(
        &adj,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-03-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n{\"type\":\"message\",\"id\":\"b1\",\"parentId\":null,\"timestamp\":\"2025-03-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x ab \\u001b y b\"}}\n",
    )
    .unwrap();
    let o = run(&["--color", "always", "[ab]", &adj.display().to_string(), "--utc"]);
    let last = stdout(&o).lines().last().unwrap().to_owned();
    let hot = |t: &str| format!("\u{1b}[1m\u{1b}[31m{t}\u{1b}[0m");
    assert!(
        last.ends_with(&format!(": x {} \\x1b y {}", hot("ab"), hot("b"))),
        "{last:?}"
    );
    let o = run(&["--width", "80", "needle", &long.display().to_string()]);
    let last = stdout(&o).lines().last().unwrap().to_owned();
    assert!(last.contains("needle") && last.contains('…'), "{last}");
    assert!(last.chars().count() <= 80, "{} columns: {last}", last.chars().count());
}

#[test]
fn sessions_come_newest_first_as_ls_lists_them() {
    let o = run(&["-l", "--json", "--agent-dir", &demo(), "the"]);
    assert_eq!(o.status.code(), Some(0));
    let found: Vec<String> = json_lines(&o)
        .iter()
        .filter(|l| l["type"] == "session")
        .map(|l| l["path"].as_str().unwrap().to_owned())
        .collect();
    let ls = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["ls", "--all", "--json", "--no-cache", "--agent-dir", &demo()])
        .output()
        .unwrap();
    let listed: Vec<String> = String::from_utf8(ls.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<J>(l).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .filter(|p| found.contains(p))
        .collect();
    assert!(found.len() >= 3);
    assert_eq!(found, listed);
    // The same search twice gives the same bytes.
    let again = run(&["-l", "--json", "--agent-dir", &demo(), "the"]);
    assert_eq!(o.stdout, again.stdout);
}

/// Every hit of the CLI over the demo corpus and the real sessions, against a decode of
/// each file with serde_json: the entry holds the text at the offsets given.
#[test]
fn hits_are_in_the_decoded_text_of_their_entry() {
    let mut roots = vec![demo()];
    if let Some(real) = real_sessions() {
        roots.extend(real.iter().map(|p| p.display().to_string()));
    }
    for root in roots {
        let mut args = vec![
            "--json",
            "--thinking",
            "--tool-results",
            "--tool-calls",
            "-i",
            "the|error",
        ];
        if !root.ends_with(".jsonl") {
            args.push("--agent-dir");
        }
        args.push(root.as_str());
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{root}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut checked = 0;
        for m in json_lines(&o).iter().filter(|m| m["type"] == "match") {
            let file = std::fs::read(m["path"].as_str().unwrap()).unwrap();
            let off = m["offset"].as_u64().unwrap() as usize;
            let end = off + file[off..].iter().position(|&b| b == b'\n').unwrap_or(file.len() - off);
            let entry: J = serde_json::from_slice(&file[off..end]).expect("the entry's line");
            // The line of text is in one of the entry's strings, with a match in it.
            let text = m["text"].as_str().unwrap();
            let mut strings = Vec::new();
            let mut stack = vec![&entry];
            while let Some(v) = stack.pop() {
                match v {
                    J::String(s) => strings.push(s.as_str()),
                    J::Array(a) => stack.extend(a),
                    J::Object(o) => stack.extend(o.values()),
                    _ => {}
                }
            }
            assert!(
                strings.iter().any(|s| s.contains(text)),
                "{root}: {text:?} not in its entry"
            );
            let base = m["textOffset"].as_u64().unwrap() as usize;
            for r in m["matches"].as_array().unwrap() {
                let s = r["start"].as_u64().unwrap() as usize - base;
                let e = r["end"].as_u64().unwrap() as usize - base;
                let hit = text[s..e].to_lowercase();
                assert!(hit == "the" || hit == "error", "{hit:?}");
            }
            checked += 1;
        }
        assert!(checked > 0, "{root}: no hits to check");
    }
}

/// A file replaced by another session between the listing and the search (found by the
/// soak of issue #35: the hits of the new session were printed under the old one's id):
/// each file's result names the session its hits are in, with and without the cache.
#[test]
fn a_file_replaced_after_it_was_listed_names_the_session_searched() {
    use pi_session::listing::ListingCache;
    use pi_session::search::{Pattern, Query, SearchOptions, search_paths, sessions_in};
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("s.jsonl");
    let session = |id: &str| {
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n\
             {{\"type\":\"message\",\"id\":\"m\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"needle of {id}\",\"timestamp\":1}}}}\n"
        )
    };
    let q = Query::new(Pattern::new("needle").compile().expect("pattern"));
    for cache in [None, Some(ListingCache::at(dir.path().join("cache")))] {
        std::fs::write(&p, session("old")).expect("write");
        let listed = sessions_in(std::slice::from_ref(&p), cache.clone(), Default::default(), None).expect("listed");
        assert_eq!(listed.sessions[0].id, Some(pi_session::Value::string("old".to_owned())));
        // Replaced by rename, as a writer of whole files does.
        let tmp = dir.path().join("new.tmp");
        std::fs::write(&tmp, session("new")).expect("write");
        std::fs::rename(&tmp, &p).expect("rename");
        let mut found = Vec::new();
        let mut opts = SearchOptions {
            cache: cache.clone(),
            ..SearchOptions::default()
        };
        search_paths(std::slice::from_ref(&p), &q, &mut opts, |f| {
            found.push((
                f.session_id.clone(),
                f.result.expect("searched")[0].lines[0].text.clone(),
            ));
            std::ops::ControlFlow::Continue(())
        })
        .expect("searched");
        assert_eq!(
            found,
            vec![(Some("new".to_string()), "needle of new".to_string())],
            "cache: {}",
            cache.is_some()
        );
    }
}

/// A session pi's listing drops (a message whose content is `null` makes pi's
/// `buildSessionInfo` throw) is still a session pi opens: its other messages are searched,
/// and a note says pi's `/resume` does not list it (#36: the whole file was refused).
#[test]
fn a_session_pi_does_not_list_is_searched_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"session","version":3,"id":"nc1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"find the timeout here","timestamp":1}}"#,
            "\n",
            r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":null,"timestamp":2}}"#,
            "\n",
        ),
    )
    .unwrap();
    let note = "searched, though pi's /resume does not list it (message content is not a string or array)";
    for target in [&f, dir.path()] {
        let o = run(&["-F", "timeout", "--json", target.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let lines = json_lines(&o);
        assert_eq!(lines[0]["type"], "match", "{lines:?}");
        assert_eq!(lines[0]["entry"], "a1", "{lines:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches(note).count(), 1, "{err}");
    }
    // Found in a folder without a match: no note.
    let o = run(&["-F", "nothing like it", dir.path().to_str().unwrap()]);
    assert_eq!((o.status.code(), o.stderr.len()), (Some(1), 0));
    // `ls` still leaves it out, as pi does.
    let o = crate::common::run_cli(
        "ls",
        &["--session-dir", dir.path().to_str().unwrap(), "--all", "--json"],
    );
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
}

/// A match in a label is shown at the entry the label names (#36: it was the label
/// entry's own id, which nothing else shows), through the search maps as without them.
#[test]
fn a_match_in_a_label_is_shown_at_the_labelled_entry() {
    let f = root().join("corpus/valid/all-entry-types.jsonl");
    let cache = tempfile::tempdir().unwrap();
    for extra in [
        &["--no-cache"][..],
        &["--cache-dir", cache.path().to_str().unwrap()],
        &["--cache-dir", cache.path().to_str().unwrap()],
    ] {
        let mut args = vec!["--json", "-F", "checkpoint-1", f.to_str().unwrap()];
        args.extend(extra);
        let o = run(&args);
        let lines = json_lines(&o);
        assert_eq!(lines[0]["entry"], "8cecc1bf", "{extra:?}: {lines:?}");
        assert_eq!(lines[0]["labelEntry"], "6a1c6676", "{extra:?}: {lines:?}");
        let mut args = vec!["-F", "checkpoint-1", f.to_str().unwrap()];
        args.extend(extra);
        assert!(stdout(&run(&args)).contains("8cecc1bf * label"), "{extra:?}");
    }
}

/// ripgrep's -A, -B, -n, -o and --no-heading, as they apply to the lines of messages; -v
/// is refused with what to use instead.
#[test]
fn context_line_numbers_only_matching_and_no_heading_are_ripgreps() {
    let dir = tempfile::tempdir().unwrap();
    let f = hostile_file(dir.path());
    // The assistant's text is "one\ntwo needle\nthree\nfour", on line 3 of the file.
    let texts = |args: &[&str]| -> Vec<(String, String)> {
        let mut all = vec!["--json", "--role", "assistant"];
        all.extend_from_slice(args);
        all.extend(["needle", f.as_str()]);
        json_lines(&run(&all))
            .iter()
            .filter(|j| j["type"] != "summary")
            .map(|j| {
                (
                    j["type"].as_str().unwrap().to_owned(),
                    j["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let pair = |t: &str, x: &str| (t.to_owned(), x.to_owned());
    assert_eq!(
        texts(&["-B", "1", "-A", "2"]),
        [
            pair("context", "one"),
            pair("match", "two needle"),
            pair("context", "three"),
            pair("context", "four")
        ]
    );
    // -A and -B override -C on their side only.
    assert_eq!(
        texts(&["-C", "2", "-A", "0"]),
        [pair("context", "one"), pair("match", "two needle")]
    );
    assert_eq!(
        texts(&["-C", "1", "-B", "0"]),
        [pair("match", "two needle"), pair("context", "three")]
    );

    let o = run(&["--role", "assistant", "-n", "--no-heading", "-B", "1", "needle", &f]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with(&format!("{f}-3-aaaa0002 * assistant ")), "{out}");
    assert!(lines[0].ends_with("- one"), "{out}");
    assert!(lines[1].starts_with(&format!("{f}:3:aaaa0002 * assistant ")), "{out}");
    assert!(lines[1].ends_with(": two needle"), "{out}");

    // -o: the match alone, context left out.
    let o = run(&["--role", "assistant", "-o", "-C", "1", "ne+dle", &f]);
    let out = stdout(&o);
    let hits: Vec<&str> = out.lines().filter(|l| l.starts_with("aaaa0002")).collect();
    assert_eq!(hits.len(), 1, "{out}");
    assert!(hits[0].ends_with(": needle"), "{out}");

    let o = run(&["-v", "needle", &f]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("-L lists the sessions without a match"), "{err}");
    assert!(o.stdout.is_empty());
}

/// One time-zone flag group for every command that shows times: `--utc` or `-z ZONE`.
#[test]
fn every_command_that_shows_times_takes_a_zone() {
    let dir = tempfile::tempdir().unwrap();
    let f = hostile_file(dir.path());
    // The assistant's entry is at 2025-03-02T00:00:01Z: 09:00 in Tokyo.
    let o = run(&["-z", "Asia/Tokyo", "--role", "assistant", "two needle", &f]);
    assert!(stdout(&o).contains("2025-03-02 09:00: two needle"), "{}", stdout(&o));
    let o = run(&["--utc", "--role", "assistant", "two needle", &f]);
    assert!(stdout(&o).contains("2025-03-02 00:00: two needle"), "{}", stdout(&o));
    let show = crate::common::run_cli("show", &["-z", "Asia/Tokyo", "--no-pager", &f]);
    assert!(
        String::from_utf8_lossy(&show.stdout).contains("2025-03-02 09:00:01 JST"),
        "{}",
        String::from_utf8_lossy(&show.stdout)
    );
    for cmd in ["search", "ls", "show", "export", "usage"] {
        let args: Vec<&str> = match cmd {
            "search" => vec!["-z", "Mars/Olympus", "x", &f],
            "ls" => vec!["-z", "Mars/Olympus", "--agent-dir", "corpus/demo"],
            _ => vec!["-z", "Mars/Olympus", &f],
        };
        let o = crate::common::run_cli(cmd, &args);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--timezone Mars/Olympus: no such time zone"),
            "{cmd}: {err}"
        );
    }
}
