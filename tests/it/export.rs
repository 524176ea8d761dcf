//! `pi-session export`: Markdown and HTML of fixtures against their expected output
//! (corpus/golden/export/*.md, *.html, made by corpus/export/bless.sh), the HTML of a
//! hostile session in headless Chromium (no script runs, every payload visible as text),
//! jsonl against pi's own jsonl export and what pi reads back from it (goldens made by
//! corpus/export/bless.mjs with pi 1.6.0, so no Node is needed here), the writing of `-o`
//! (atomic, never over the session), and the real sessions of `../shared/corpus/real`.

use pi_session::{EntryType, Session};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg("export")
        .args(args)
        .env("TZ", "UTC")
        .output()
        .expect("run pi-session")
}

/// `pi-session export FILE ARGS` to standard output (a pipe), which must succeed.
fn export(file: &Path, args: &[&str]) -> String {
    let mut all: Vec<&std::ffi::OsStr> = vec![file.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    let out = run(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(root().join("corpus/golden/export").join(name)).expect("golden")
}

/// The entries of `branch` that the transcript heads (one section each).
fn messages(s: &Session, branch: &[pi_session::EntryPos]) -> Vec<String> {
    branch
        .iter()
        .filter(|&&p| {
            let rec = s.record(p);
            match rec.ty {
                EntryType::Message => s.value(p).is_ok_and(|v| v.get("message").is_some()),
                EntryType::Compaction | EntryType::BranchSummary | EntryType::CustomMessage => true,
                _ => false,
            }
        })
        .map(|&p| {
            let v = s.value(p).expect("decodes");
            v.get("id").and_then(|i| i.as_str()).unwrap_or_default().to_owned()
        })
        .collect()
}

/// Every `<` of the page opens or closes one of the elements the exporter writes: no
/// string of the session became markup.
fn only_own_markup(html: &str) {
    const TAGS: &[&str] = &[
        "!DOCTYPE html",
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "main",
        "header",
        "h1",
        "dl",
        "dt",
        "dd",
        "p",
        "code",
        "section",
        "h2",
        "span",
        "div",
        "pre",
        "details",
        "summary",
        "img",
        "footer",
    ];
    for (i, _) in html.match_indices('<') {
        let rest = &html[i + 1..];
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let ok = TAGS
            .iter()
            .any(|t| rest.starts_with(t) && rest[t.len()..].starts_with(['>', ' ', '\n']));
        assert!(ok, "foreign markup at byte {i}: {}", &html[i..(i + 80).min(html.len())]);
    }
    assert!(!html.to_ascii_lowercase().contains("<script"));
    // No reference out of the page: the head (the style sheet) names nothing, and the
    // only attribute values with a quote are the exporter's (a session's `"` is `&quot;`).
    let head = &html[..html.find("</head>").expect("a head")];
    for bad in ["url(", "@import", "http:", "https:", "//"] {
        assert!(!head.contains(bad), "{bad}");
    }
    assert!(!html.contains("href=\""));
    for (i, _) in html.match_indices("src=\"") {
        let v = &html[i + 5..];
        assert!(
            [
                "data:image/png;base64,",
                "data:image/jpeg;base64,",
                "data:image/gif;base64,",
                "data:image/webp;base64,"
            ]
            .iter()
            .any(|p| v.starts_with(p)),
            "src at {i}: {}",
            &html[i..(i + 60).min(html.len())]
        );
    }
}

#[test]
fn markdown_and_html_are_their_expected_files() {
    for (fixture, name) in [
        ("corpus/export/hostile.jsonl", "hostile"),
        ("corpus/valid/all-entry-types.jsonl", "all-entry-types"),
        ("corpus/valid/branches.jsonl", "branches"),
    ] {
        let file = root().join(fixture);
        let md = export(&file, &[]);
        assert_eq!(md, golden(&format!("{name}.md")), "{name}.md");
        let html = export(&file, &["--format", "html"]);
        assert_eq!(html, golden(&format!("{name}.html")), "{name}.html");
        only_own_markup(&html);
        // One section per message of the branch, in order.
        let s = Session::open(&file).expect("opens");
        let ids = messages(&s, &s.branch_path(None).expect("branch"));
        assert_eq!(html.matches("<section class=").count(), ids.len(), "{name}");
        let mut at = 0;
        for id in &ids {
            let head = format!(" · {id}");
            let found = md[at..].find("\n## ").and_then(|h| {
                let line_end = md[at + h + 1..].find('\n')? + at + h + 1;
                md[at + h + 1..line_end].contains(&head).then_some(line_end)
            });
            at = found.unwrap_or_else(|| panic!("{name}: no section for {id} after byte {at}"));
        }
    }
    let thinking = export(&root().join("corpus/export/hostile.jsonl"), &["--thinking"]);
    assert_eq!(thinking, golden("hostile-thinking.md"));
}

#[test]
fn hostile_markdown_keeps_content_inside_its_blocks() {
    let md = export(&root().join("corpus/export/hostile.jsonl"), &[]);
    // The skipped line is said at the top.
    assert!(md.contains("> **Note:** 1 line of the file could not be read and is left out"));
    // Five backticks in a tool result: its fence has six.
    assert!(md.contains("``````\n<img src=x onerror="), "{md}");
    // Metadata makes no markup: the name and the label are escaped.
    assert!(md.starts_with("# \\<img src=x onerror="));
    assert!(md.contains("label: \\<b onmouseover="));
    // Images are placeholders; no base64 in the file.
    assert!(md.contains("*\\[image/png 1.2 MB\\]*") && !md.contains("AAAAAAAAAAAA"));
    assert!(md.contains("*(thinking: 3 lines hidden)*"));
}

#[test]
fn html_images_embed_only_checked_types() {
    let html = export(
        &root().join("corpus/export/hostile.jsonl"),
        &["--format", "html", "--images", "--thinking"],
    );
    only_own_markup(&html);
    assert!(html.contains("<img src=\"data:image/png;base64,iVBORw0KGgo"));
    assert_eq!(
        html.matches("<img ").count(),
        2,
        "the 1x1 PNG and the 1.2 MB one of show's fixture"
    );
    assert!(html.contains("[text/html 81 B] (not embedded"));
    assert!(html.contains("[image/svg+xml 198 B] (not embedded"));
    assert!(html.contains("<details><summary>thinking (1 line)</summary>"));
    assert!(!html.contains("image/svg+xml;base64") && !html.contains("text/html;base64"));
}

// ----- a real browser -----------------------------------------------------------------

const CHROMIUM: &str = "/usr/bin/chromium";

/// The DOM of `page` after Chromium loaded it (scripts, if any, have run).
fn dump_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(page)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 DOM")
}

/// A string as Chromium serialises it in a text node.
fn as_dom_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\u{a0}', "&nbsp;")
}

#[test]
fn hostile_html_runs_nothing_in_chromium() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set and {CHROMIUM} is missing (.ci/run installs it)"
        );
        eprintln!("skipped: no {CHROMIUM} (apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = root().join("corpus/export/hostile.jsonl");
    let html = export(&file, &["--format", "html", "--images", "--thinking"]);
    // With the Content-Security-Policy, and without it: the escaping alone must hold.
    let csp = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n";
    assert!(html.contains(csp));
    let pages = [
        ("with-csp.html", html.clone()),
        ("without-csp.html", html.replace(csp, "")),
    ];
    // A control: the same payload unescaped does run, so the test can see a script run.
    let control = "<!DOCTYPE html><html><body><img src=x onerror=\"document.documentElement.setAttribute('data-xss','control')\"></body></html>";
    std::fs::write(dir.path().join("control.html"), control).expect("write");
    let dom = dump_dom(&dir.path().join("control.html"));
    assert!(
        dom.contains("data-xss=\"control\""),
        "the control page ran its script: {dom}"
    );

    let raw = std::fs::read_to_string(&file).expect("fixture");
    let s = Session::open(&file).expect("opens");
    let name = s
        .session_name()
        .expect("name")
        .expect("named")
        .to_str_lossy()
        .into_owned();
    for (page, text) in pages {
        let path = dir.path().join(page);
        std::fs::write(&path, &text).expect("write page");
        let dom = dump_dom(&path);
        assert!(!dom.contains("data-xss="), "{page}: a payload ran");
        assert!(dom.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head>"), "{page}");
        assert!(
            !dom.to_ascii_lowercase().contains("<script"),
            "{page}: a script element"
        );
        assert!(
            !dom.contains("<iframe") && !dom.contains("<textarea") && !dom.contains("<a "),
            "{page}"
        );
        // The title is the session's name as text.
        assert!(
            dom.contains(&format!("<title>{}</title>", as_dom_text(&name))),
            "{page}"
        );
        // Every hostile string is in the DOM as text.
        for line in raw.lines().filter(|l| l.contains("data-xss")) {
            let v: serde_json::Value = serde_json::from_str(line).expect("fixture JSON");
            let mut strings = Vec::new();
            collect_strings(&v, &mut strings);
            for t in strings.iter().filter(|t| t.contains("data-xss")) {
                if line.contains("\"type\":\"image\"") && t.starts_with("AAAA\"") {
                    continue; // an image's data: shown as its placeholder
                }
                for part in t.lines() {
                    assert!(dom.contains(&as_dom_text(part)), "{page}: not visible: {part}");
                }
            }
        }
    }
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

// ----- jsonl ----------------------------------------------------------------------------

/// The text of `--format jsonl` with its header's time replaced by `time`.
fn with_time(text: &str, time: &str) -> (String, String) {
    let (head, rest) = text.split_once('\n').expect("a header line");
    let mut h: serde_json::Map<String, serde_json::Value> = serde_json::from_str(head).expect("header JSON");
    let was = h
        .get("timestamp")
        .and_then(|t| t.as_str())
        .expect("a timestamp")
        .to_owned();
    h.insert("timestamp".into(), time.into());
    // serde_json keeps insertion order with preserve_order only: rebuild by hand.
    let fields: Vec<String> = ["type", "version", "id", "timestamp", "cwd"]
        .iter()
        .filter_map(|k| h.get(*k).map(|v| format!("\"{k}\":{v}")))
        .collect();
    (format!("{{{}}}\n{rest}", fields.join(",")), was)
}

#[test]
fn jsonl_is_pis_own_export_and_pi_reads_the_branch_back() {
    let dir = root().join("corpus/golden/export");
    let mut cases = 0;
    for e in std::fs::read_dir(&dir).expect("goldens") {
        let path = e.expect("entry").path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl.json"))
        else {
            continue;
        };
        cases += 1;
        let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        let source = root().join(g["source"].as_str().expect("source"));
        let mut args = vec!["--format", "jsonl"];
        if let Some(leaf) = g["leaf"].as_str() {
            args.extend(["--leaf", leaf]);
        }
        let ours = export(&source, &args);
        let pis = g["text"].as_str().expect("text");
        let pi_time = g["header"]["timestamp"].as_str().expect("pi's time");
        let (ours_at_pis_time, our_time) = with_time(&ours, pi_time);
        assert_eq!(ours_at_pis_time, pis, "{name}: pi's bytes");
        assert!(
            our_time.len() == 24 && our_time.ends_with('Z') && our_time.as_bytes()[10] == b'T',
            "{name}: the time of the export: {our_time}"
        );
        // Opened again, by pi (the golden) and by us: the original branch, entry by entry.
        let orig = Session::open(&source).expect("opens");
        let leaf = g["leaf"].as_str().map(pi_session::Key::str);
        let orig_branch = orig.branch_path(leaf.as_ref()).expect("branch");
        let back = Session::from_bytes(ours.into_bytes()).expect("reopens");
        let back_branch = back.branch_path(None).expect("branch");
        let pi_branch = g["branch"].as_array().expect("pi's branch");
        assert_eq!(back_branch.len(), orig_branch.len(), "{name}");
        assert_eq!(pi_branch.len(), orig_branch.len(), "{name}");
        for (k, (&a, &b)) in orig_branch.iter().zip(&back_branch).enumerate() {
            let a = orig.value(a).expect("decodes");
            let b = back.value(b).expect("decodes");
            let want = if k == 0 {
                // The first entry's parent is cut (pi: `parentId: null`).
                let mut first = a.clone();
                if let pi_session::Value::Object(o) = &mut first {
                    o.set(pi_session::JsStr::from_str("parentId"), pi_session::Value::Null);
                }
                first.stringify()
            } else {
                a.stringify()
            };
            assert_eq!(b.stringify(), want, "{name}: entry {k}");
            if let Ok(ours) = serde_json::from_str::<serde_json::Value>(&b.stringify()) {
                assert_eq!(ours, pi_branch[k], "{name}: entry {k} as pi reads it");
            }
        }
    }
    assert!(cases >= 5, "the goldens of corpus/export/bless.mjs");
}

// ----- writing ----------------------------------------------------------------------------

#[test]
fn output_files_are_written_whole_and_never_over_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = dir.path().join("s.jsonl");
    std::fs::copy(root().join("corpus/export/hostile.jsonl"), &session).expect("copy");
    let before = std::fs::read(&session).expect("read");
    let os = |s: &str| std::ffi::OsString::from(s);
    // The format follows -o's extension; -o - is standard output.
    for (out, start) in [
        ("t.md", "# "),
        ("t.html", "<!DOCTYPE html>"),
        ("t.jsonl", "{\"type\":\"session\""),
    ] {
        let target = dir.path().join(out);
        std::fs::write(&target, "old").expect("write");
        let r = run(&[session.as_os_str(), &os("-o"), target.as_os_str()]);
        assert!(
            r.status.success() && r.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert!(
            std::fs::read_to_string(&target).expect("read").starts_with(start),
            "{out}"
        );
    }
    let dash = run(&[session.as_os_str(), &os("-o"), &os("-"), &os("-f"), &os("html")]);
    assert!(dash.stdout.starts_with(b"<!DOCTYPE html>"));
    // The session itself, by its name or another, is refused and left as it was.
    let link = dir.path().join("link.md");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&session, &link).expect("symlink");
    for target in [&session, &link] {
        if !target.exists() {
            continue;
        }
        let r = run(&[session.as_os_str(), &os("-o"), target.as_os_str()]);
        assert_eq!(r.status.code(), Some(2), "{}", String::from_utf8_lossy(&r.stderr));
        assert!(String::from_utf8_lossy(&r.stderr).contains("refusing to write over it"));
        assert_eq!(std::fs::read(&session).expect("read"), before);
    }
    // A write that fails half way (the file size limit) leaves the old file and no
    // temporary file.
    #[cfg(unix)]
    {
        let target = dir.path().join("big.html");
        std::fs::write(&target, "old").expect("write");
        let r = Command::new("sh")
            .arg("-c")
            .arg("ulimit -f 64; exec \"$0\" export \"$1\" --images -o \"$2\"")
            .arg(env!("CARGO_BIN_EXE_pi-session"))
            .arg(&session)
            .arg(&target)
            .output()
            .expect("run");
        assert_eq!(r.status.code(), Some(2), "{}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "old");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .filter(|n| n.to_string_lossy().starts_with(".pi-session-tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
    // An unknown --leaf is a no, and nothing is written.
    let target = dir.path().join("none.md");
    let r = run(&[
        session.as_os_str(),
        &os("--leaf"),
        &os("nope"),
        &os("-o"),
        target.as_os_str(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(!target.exists());
    // A short id names its entry, as `show --leaf` takes it.
    let early = export(&session, &["--leaf", "a0000003"]);
    assert!(early.contains("· a0000003") && !early.contains("· a0000004"));
    // jsonl says on stderr what it left out.
    let r = run(&[session.as_os_str(), &os("-f"), &os("jsonl")]);
    assert!(String::from_utf8_lossy(&r.stderr).contains("1 line could not be read and is left out"));
}

// ----- the real sessions --------------------------------------------------------------------

#[test]
fn real_sessions_export_in_every_format() {
    let Some(files) = crate::common::real_sessions() else {
        return;
    };
    for f in &files {
        let s = Session::open(f).expect("opens");
        let branch = s.branch_path(None).expect("branch");
        let n = messages(&s, &branch).len();
        assert!(n > 10, "{}: a real conversation", f.display());
        let md = export(f, &[]);
        // A message's heading: `## TITLE · 2025-11-30 10:00:00 UTC · ID` (the ids of an
        // old-format file change from run to run; the text of a message may hold
        // headings of its own, without this time).
        let headings = md
            .lines()
            .filter(|l| {
                l.starts_with("## ")
                    && l.find(" UTC · ").is_some_and(|i| {
                        i >= 19
                            && l.as_bytes()[i - 19..i]
                                .iter()
                                .all(|b| b.is_ascii_digit() || b" -:".contains(b))
                    })
            })
            .count();
        assert_eq!(headings, n, "{}: a section per message", f.display());
        let html = export(f, &["--format", "html"]);
        assert_eq!(html.matches("<section class=").count(), n, "{}", f.display());
        only_own_markup(&html);
        // jsonl: the same branch, entry by entry (the ids of an old-format file are the
        // ones this process gave it: compare within one open).
        let jsonl = export(f, &["--format", "jsonl"]);
        let back = Session::from_bytes(jsonl.into_bytes()).expect("reopens");
        let back_branch = back.branch_path(None).expect("branch");
        assert_eq!(back_branch.len(), branch.len(), "{}", f.display());
        for (&b, &o) in back_branch.iter().zip(&branch) {
            let (bv, ov) = (back.value(b).expect("decodes"), s.value(o).expect("decodes"));
            assert_eq!(
                bv.get("type").map(|t| t.stringify()),
                ov.get("type").map(|t| t.stringify())
            );
            assert_eq!(
                bv.get("message").map(|m| m.stringify()),
                ov.get("message").map(|m| m.stringify())
            );
        }
    }
}

/// A full disk names what could not be written (issue #35, the review's weakness 12:
/// `pi-session: I/O error: No space left on device`): `/dev/full` fails every write
/// with ENOSPC, as the output file and as standard output.
#[test]
fn a_full_disk_names_the_output_it_could_not_write() {
    let s = root().join("corpus/valid/branches.jsonl");
    for format in ["md", "html", "jsonl"] {
        let o = run(&[
            s.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
            "-o".as_ref(),
            "/dev/full".as_ref(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{format}: {err}");
        assert_eq!(
            err, "pi-session: cannot write /dev/full: No space left on device\n",
            "{format}"
        );
        let o = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(["export".as_ref(), s.as_os_str(), "--format".as_ref(), format.as_ref()])
            .stdout(std::fs::File::create("/dev/full").expect("/dev/full"))
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{format}: {err}");
        assert_eq!(
            err, "pi-session: cannot write to standard output: No space left on device\n",
            "{format}"
        );
    }
}

/// `-o out.pdf` wrote Markdown into `out.pdf` (#36): an extension of no format pi-session
/// writes is refused (exit 2, nothing written) unless `--format` says what to write.
#[test]
fn an_output_file_of_an_unknown_kind_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/branches.jsonl");
    let pdf = dir.path().join("out.pdf");
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .arg("export")
            .arg(&session)
            .arg("-o")
            .arg(&pdf)
            .args(extra)
            .output()
            .expect("runs")
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write .pdf files"));
    assert!(!pdf.exists(), "nothing written");
    let o = run(&["--format", "md"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&pdf).expect("written").starts_with("# "));
}

/// In a build without the `parquet` feature, `export-parquet` says how to get it (#36: it
/// was "unrecognized subcommand").
#[cfg(not(feature = "parquet"))]
#[test]
fn export_parquet_without_the_feature_says_how_to_get_it() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["export-parquet", "--out", "/nonexistent/x"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--features parquet"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
