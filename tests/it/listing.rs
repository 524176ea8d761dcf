//! Listing conformance: the corpus in corpus/listing/ against pi 1.6.0's own listing
//! (goldens made by corpus/listing/bless.sh with ../shared/oracle/list.mjs), plus
//! progress counts, cancellation and the command-line tool.
//!
//! git keeps neither mtimes nor (reliably) symlink targets' times, and pi sorts by mtime,
//! so every test copies the corpus to a temp dir and applies corpus/listing/mtimes.json.

use pi_session::Value;
use pi_session::dirs::{Env, Flavor};
use pi_session::dump::canonical::{CanonOptions, canonical_string};
use pi_session::listing::{self, CancelToken, ListOptions, Listing, ListingCache, Progress, SkipFileReason};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/listing")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read corpus") {
        let e = e.expect("entry");
        let t = e.file_type().expect("type");
        let dst = to.join(e.file_name());
        if t.is_symlink() {
            let target = std::fs::read_link(e.path()).expect("readlink");
            std::os::unix::fs::symlink(target, &dst).expect("symlink");
        } else if t.is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy");
        }
    }
}

/// A copy of the corpus with its mtimes applied.
fn corpus_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_corpus_into(tmp.path());
    tmp
}

/// `corpus/listing/{agent,linked-target,flat}` copied into `dst`, symlinks as symlinks,
/// with `mtimes.json` applied (also the README test's setup).
pub(crate) fn copy_corpus_into(dst: &Path) {
    for d in ["agent", "linked-target", "flat"] {
        copy_tree(&corpus().join(d), &dst.join(d));
    }
    let manifest = std::fs::read(corpus().join("mtimes.json")).expect("mtimes.json");
    let manifest = Value::parse(&manifest).expect("valid json");
    for (rel, ns) in manifest.as_object().expect("an object").iter() {
        let ns = match ns {
            Value::Number(n) => *n as u64,
            _ => panic!("mtime is a number"),
        };
        let t = UNIX_EPOCH + Duration::from_nanos(ns);
        let f = std::fs::File::open(dst.join(&*rel.to_str_lossy())).expect("open to set mtime");
        f.set_modified(t).expect("set mtime");
    }
}

/// node's `path.relative(from, to)` for absolute, normalized paths.
fn relative(from: &Path, to: &Path) -> String {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); f.len() - common];
    parts.extend(t[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

fn golden(name: &str) -> Value<'static> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("corpus/golden/listing/{name}.json"));
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Value::parse(&bytes).expect("golden parses").into_owned()
}

fn canon(v: &Value<'_>) -> String {
    canonical_string(v, CanonOptions::default())
}

struct Run {
    listing: Listing,
    progress: Vec<(usize, usize)>,
    partial_lens: Vec<(usize, usize)>,
}

fn run(f: impl FnOnce(&mut ListOptions<'_>) -> Result<Listing, listing::Cancelled>) -> Run {
    run_with(pi_session::ReadMode::Auto, f)
}

fn run_with(
    read_mode: pi_session::ReadMode,
    f: impl FnOnce(&mut ListOptions<'_>) -> Result<Listing, listing::Cancelled>,
) -> Run {
    run_cached(read_mode, None, f)
}

/// Check `list` against the golden `name` with no cache, then through a new cache twice:
/// once filling it (every file read) and once from it (every file it keeps reused), with
/// the joined text and without.
fn check_cached(name: &str, root: &Path, list: &dyn Fn(&mut ListOptions<'_>) -> Result<Listing, listing::Cancelled>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ListingCache::at(dir.path()).with_racy_window(Duration::ZERO);
    let cold = run_cached(pi_session::ReadMode::Auto, Some(cache.clone()), |o| list(o));
    check(name, root, &cold);
    let Some(report) = cold.listing.cache.clone() else {
        // A folder that cannot be read lists nothing, and has no cache.
        assert!(!cold.listing.problems.is_empty(), "{name}: a report");
        return;
    };
    assert_eq!(
        (report.reused, report.appended, report.warning),
        (0, 0, None),
        "{name}: cold"
    );
    let warm = run_cached(pi_session::ReadMode::Auto, Some(cache.clone()), |o| list(o));
    check(name, root, &warm);
    let report = warm.listing.cache.clone().expect("a report");
    assert_eq!(
        report.reused,
        cold.listing.cache.as_ref().map_or(0, |c| c.read) - unreadable(&cold.listing),
        "{name}: warm"
    );
    assert!(!report.written, "{name}: an unchanged tree writes nothing");
    // Filled without the text: asked for it, the cache reads the files again, then has it.
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ListingCache::at(dir.path()).with_racy_window(Duration::ZERO);
    let lean = |o: &mut ListOptions<'_>| {
        o.skip_text = true;
        list(o)
    };
    run_cached(pi_session::ReadMode::Auto, Some(cache.clone()), lean);
    let with_text = run_cached(pi_session::ReadMode::Auto, Some(cache.clone()), |o| list(o));
    check(name, root, &with_text);
    let lean_again = run_cached(pi_session::ReadMode::Auto, Some(cache), lean);
    let plain = run(lean);
    assert_eq!(
        format!("{:?}", lean_again.listing.sessions),
        format!("{:?}", plain.listing.sessions),
        "{name}: lean"
    );
}

/// Files skipped as unreadable (the cache keeps no entry for them).
fn unreadable(l: &Listing) -> usize {
    l.skipped
        .iter()
        .filter(|s| matches!(s.reason, SkipFileReason::Unreadable { .. }))
        .count()
}

fn run_cached(
    read_mode: pi_session::ReadMode,
    cache: Option<ListingCache>,
    f: impl FnOnce(&mut ListOptions<'_>) -> Result<Listing, listing::Cancelled>,
) -> Run {
    let mut progress = Vec::new();
    let mut partial_lens = Vec::new();
    let listing = {
        let mut cb = |p: &Progress<'_>| {
            progress.push((p.loaded, p.total));
            if let Some(part) = p.partial {
                assert!(
                    part.windows(2)
                        .all(|w| w[0].modified.partial_cmp(&w[1].modified) != Some(std::cmp::Ordering::Less)),
                    "partials are sorted newest first"
                );
                partial_lens.push((p.loaded, part.len()));
            }
        };
        let mut opts = ListOptions {
            on_progress: Some(&mut cb),
            partials: true,
            cancel: None,
            read_mode,
            skip_text: false,
            lazy_text: false,
            cache,
        };
        f(&mut opts).expect("not cancelled")
    };
    Run {
        listing,
        progress,
        partial_lens,
    }
}

/// Compare a run with a golden, field by field and in order.
fn check(name: &str, root: &Path, r: &Run) {
    let g = golden(name);
    let g_sessions = match g.get("sessions") {
        Some(Value::Array(a)) => a,
        _ => panic!("{name}: golden has sessions"),
    };
    assert_eq!(g.get("error"), Some(&Value::Null), "{name}: oracle error");
    let ours = &r.listing.sessions;
    let ids = |v: &dyn Fn(usize) -> String, n| (0..n).map(v).collect::<Vec<_>>();
    let our_paths = ids(&|i| relative(root, &ours[i].path), ours.len());
    let their_paths = ids(
        &|i| {
            g_sessions[i]
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        },
        g_sessions.len(),
    );
    assert_eq!(our_paths, their_paths, "{name}: sessions and their order");
    for (s, gs) in ours.iter().zip(g_sessions) {
        let v = s.to_value(&relative(root, &s.path), true);
        let go = gs.as_object().expect("session object");
        let vo = v.as_object().expect("session object");
        assert_eq!(go.len(), vo.len(), "{name}: field count");
        for (k, gv) in go.iter() {
            let key = k.to_str_lossy();
            let ov = vo.get(&key).unwrap_or_else(|| panic!("{name}: missing {key}"));
            assert_eq!(canon(ov), canon(gv), "{name}: {} field {key}", relative(root, &s.path));
        }
    }
    let count = match g.get("count") {
        Some(Value::Number(n)) => *n as usize,
        _ => panic!("count"),
    };
    assert_eq!(ours.len(), count, "{name}: count");
    let gp: Vec<(usize, usize)> = match g.get("progress") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|p| match p {
                Value::Array(x) => match (&x[0], &x[1]) {
                    (Value::Number(a), Value::Number(b)) => (*a as usize, *b as usize),
                    _ => panic!("progress pair"),
                },
                _ => panic!("progress pair"),
            })
            .collect(),
        _ => panic!("progress"),
    };
    assert_eq!(r.progress, gp, "{name}: progress calls");
    assert_eq!(r.listing.total, gp.last().map_or(0, |p| p.1), "{name}: total");
    // Every candidate is listed or skipped (or, with a cwd filter, filtered out).
    let accounted = r.listing.sessions.len() + r.listing.skipped.len();
    if name.starts_with("list-flat") {
        assert!(accounted <= r.listing.total, "{name}: candidates");
    } else {
        assert_eq!(
            accounted, r.listing.total,
            "{name}: every candidate is listed or skipped"
        );
    }
    if let Some(&(loaded, len)) = r.partial_lens.last() {
        assert_eq!(loaded, r.listing.total, "{name}: last partial at the end");
        assert_eq!(len, count, "{name}: last partial is the whole list");
    }
}

fn env_for(tmp: &Path) -> Env {
    Env {
        flavor: Flavor::Pi,
        home: tmp.join("home"),
        cwd: "/".into(),
        agent_dir_var: None,
        session_dir_var: None,
    }
}

#[test]
fn list_all_matches_pi() {
    let tmp = corpus_copy();
    let root = tmp.path().join("agent/sessions");
    let r = run(|o| listing::list_all(&root, o));
    check("listall", &root, &r);
    // Every file mapped (side by side in the per-thread arenas) or every file read: the
    // same listing.
    for mode in [pi_session::ReadMode::Mmap, pi_session::ReadMode::Read] {
        check("listall", &root, &run_with(mode, |o| listing::list_all(&root, o)));
    }
    check_cached("listall", &root, &|o| listing::list_all(&root, o));
    // Damaged files are reported, not fatal.
    let reasons = skip_reasons(&root, &r.listing);
    assert_eq!(r.listing.skipped.len(), 16, "{reasons:#?}");
    assert!(
        r.listing
            .skipped
            .iter()
            .any(|s| matches!(s.reason, SkipFileReason::Unreadable { .. }))
    );
    assert!(
        r.listing
            .skipped
            .iter()
            .any(|s| matches!(s.reason, SkipFileReason::PiThrows(_)))
    );
    assert!(r.listing.skipped.iter().any(|s| s.reason == SkipFileReason::NotSession));
    // The dangling and looping folder symlinks are problems, the file symlink is not.
    let probs: Vec<String> = r.listing.problems.iter().map(|p| relative(&root, &p.path)).collect();
    assert_eq!(probs, ["--dangling--", "--loop--"]);
    // Partials: published when candidate 0 is done, then every 100th and at the end.
    assert!(!r.partial_lens.is_empty());
    // Without the joined text (what `ls` asks for unless --text), every other field and
    // every skip decision stay the same.
    let lean = run(|o| {
        o.skip_text = true;
        listing::list_all(&root, o)
    });
    assert_eq!(lean.listing.sessions.len(), r.listing.sessions.len());
    for (a, b) in lean.listing.sessions.iter().zip(&r.listing.sessions) {
        let (va, vb) = (a.to_value("p", false), b.to_value("p", false));
        assert_eq!(canon(&va), canon(&vb), "{}", relative(&root, &b.path));
        assert!(a.all_messages_text.as_bytes().is_empty());
    }
    assert_eq!(skip_reasons(&root, &lean.listing), reasons);
}

/// Each skipped file, relative to `root`, with its reason.
fn skip_reasons(root: &Path, l: &Listing) -> Vec<String> {
    l.skipped
        .iter()
        .map(|s| format!("{} {}", relative(root, &s.path), s.reason))
        .collect()
}

#[test]
fn list_one_project_matches_pi() {
    let tmp = corpus_copy();
    let root = tmp.path().join("agent/sessions");
    let agent = tmp.path().join("agent");
    let env = env_for(tmp.path());
    for (name, dir, cwd) in [
        ("list-proj-a", root.join("--home-u-proj-a--"), "/home/u/proj-a"),
        ("list-proj-b", root.join("--home-u-proj-b--"), "/home/u/proj-b"),
        ("list-linked", root.join("--home-u-linked--"), "/home/u/linked"),
        ("list-missing", root.join("--home-u-nope--"), "/home/u/nope"),
        ("list-flat-proj-a", tmp.path().join("flat"), "/home/u/proj-a"),
        ("list-flat-proj-b", tmp.path().join("flat"), "/home/u/proj-b"),
    ] {
        let r = run(|o| listing::list_project(&env, Path::new(cwd), Some(&dir), &agent, o));
        check(name, &root, &r);
        check_cached(name, &root, &|o| {
            listing::list_project(&env, Path::new(cwd), Some(&dir), &agent, o)
        });
        // listSessionsFromDir publishes at the first file, every 10th and the last.
        let expect: Vec<usize> = (1..=r.listing.total)
            .filter(|&l| l == 1 || l % 10 == 0 || l == r.listing.total)
            .collect();
        let got: Vec<usize> = r.partial_lens.iter().map(|p| p.0).collect();
        assert_eq!(got, expect, "{name}: partial publication points");
    }
    let missing = run(|o| listing::list_project(&env, Path::new("/home/u/nope"), None, &agent, o));
    assert!(missing.listing.sessions.is_empty());
    assert_eq!(missing.listing.problems.len(), 1, "a missing folder is reported");
}

#[test]
fn list_flat_dir_matches_pi() {
    let tmp = corpus_copy();
    let flat = tmp.path().join("flat");
    let r = run(|o| listing::list_dir(&flat, o));
    check("flat-all", &flat, &r);
    check_cached("flat-all", &flat, &|o| listing::list_dir(&flat, o));
}

#[test]
fn cancellation() {
    let tmp = corpus_copy();
    let root = tmp.path().join("agent/sessions");
    let token = CancelToken::new();
    token.cancel();
    let mut opts = ListOptions {
        cancel: Some(token),
        ..ListOptions::default()
    };
    assert!(listing::list_all(&root, &mut opts).is_err());

    // Cancelled from the progress callback after the first file.
    let token = CancelToken::new();
    let t2 = token.clone();
    let mut calls = 0usize;
    let mut cb = |_: &Progress<'_>| {
        calls += 1;
        t2.cancel();
    };
    let mut opts = ListOptions {
        on_progress: Some(&mut cb),
        partials: false,
        cancel: Some(token),
        ..ListOptions::default()
    };
    assert_eq!(listing::list_all(&root, &mut opts).err(), Some(listing::Cancelled));
    drop(opts);
    assert!(calls >= 1);
}

#[test]
fn headers_only_lookups() {
    let tmp = corpus_copy();
    let agent = tmp.path().join("agent");
    let env = env_for(tmp.path());
    let a = Path::new("/home/u/proj-a");
    let found = listing::find_by_id(&env, a, "a3", None, &agent).expect("a3 found");
    assert!(found.ends_with("--home-u-proj-a--/2025-10-01T12-00-00-000Z_a3.jsonl"));
    assert_eq!(listing::find_by_id(&env, a, "nope", None, &agent), None);
    // A custom dir filters on the header's cwd.
    let flat = tmp.path().join("flat");
    assert!(listing::find_by_id(&env, a, "f1", Some(&flat), &agent).is_some());
    assert_eq!(listing::find_by_id(&env, a, "f2", Some(&flat), &agent), None);
    // Most recent by mtime; the project folder holds a dangling symlink, which makes pi's
    // statSync throw, so pi (and pi-session) find nothing there.
    let dir_a = agent.join("sessions/--home-u-proj-a--");
    assert_eq!(listing::find_most_recent(&env, &dir_a, None), None);
    let newest = listing::find_most_recent(&env, &flat, Some(a)).expect("a flat session of proj-a");
    assert!(
        newest.ends_with("2025-10-05T07-00-00-000Z_f8.jsonl"),
        "{}",
        newest.display()
    );
    let b = agent.join("sessions/--home-u-proj-b--");
    assert!(listing::find_most_recent(&env, &b, None).is_some());
}

#[test]
fn cli_ls_json_matches_library() {
    let tmp = corpus_copy();
    let agent = tmp.path().join("agent");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["ls", "--all", "--json", "--text", "--agent-dir"])
        .arg(&agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .expect("run pi-session");
    assert!(out.status.success());
    let g = golden("listall");
    let Some(Value::Array(gs)) = g.get("sessions") else {
        panic!("sessions")
    };
    let lines: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), gs.len());
    let root = agent.join("sessions");
    for (line, gv) in lines.iter().zip(gs) {
        let v = Value::parse(line).expect("json line");
        for (k, gf) in gv.as_object().expect("object").iter() {
            let key = k.to_str_lossy();
            let ov = v.get(&key).expect("field present");
            if key == "path" {
                assert_eq!(
                    relative(&root, Path::new(ov.as_str().expect("path"))),
                    gf.as_str().expect("path")
                );
            } else {
                assert_eq!(canon(ov), canon(gf), "field {key}");
            }
        }
    }
    // A missing agent dir named on the command line: empty output, a message, exit 2
    // (docs/cli.md).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["ls", "--all", "--agent-dir"])
        .arg(tmp.path().join("no-agent"))
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .expect("run pi-session");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
    // An agent dir without sessions/: nothing listed, the answer is no (exit 1).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["ls", "--all", "--agent-dir"])
        .arg(tmp.path())
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .expect("run pi-session");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such folder"));
    // find prints the path.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["find", "l2", "--cwd", "/nowhere", "--agent-dir"])
        .arg(&agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .expect("run pi-session");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).trim_end().ends_with("_l2.jsonl"));
}
