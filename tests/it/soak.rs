//! The soak test of issue #35: readers loop while a writer changes the store in every way
//! pi and other processes do, and every answer is the answer of a fresh run without caches
//! on the same bytes, or a clean "changed" error, only when the bytes did change; nothing
//! hangs or crashes.
//!
//! - Readers (threads, each running the CLI in a loop, with one shared cache folder): `ls
//!   --all --json`, `search --json`, `usage --json`, and on one session file `show`,
//!   `tree`, `context`, `check --json`.
//! - The writer, one change at a time, a pause after each: whole appends, torn appends
//!   (the first part, a pause, the rest), `touch`, same-length rewrites in place, truncation
//!   at a line end, replacement by rename, a FIFO and symlinks (to a session, dangling)
//!   made and removed. After each change it copies the store to a snapshot of that version.
//! - The versions are a seqlock: odd while a change is under way. A run that started and
//!   ended at the same even version saw one state: its output must be the reference run's
//!   (the same command with `--no-cache` on that version's snapshot, paths mapped back).
//!   A run that overlapped changes must give the output of one of the versions it
//!   overlapped, per file for the listing and the search (files are read at different
//!   moments), or a clean error that says the file changed. `usage` counts a record once
//!   across files (a symlink here), so its overlapped runs are only held to succeed.
//!
//! `PI_SESSION_SOAK_SECS` sets how long the writer runs (default 3 s); the counts are
//! printed (`cargo test --profile ci --test it soak -- --nocapture`).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
}

const FOLDER: &str = "agent/sessions/--p--";

fn header(id: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n"
    )
}

/// Entry `k` of a session: a user message holding `needle` every third entry, else an
/// assistant message with usage (for `usage`).
fn entry(k: u64, parent: Option<u64>) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"e{p:07}\""));
    let ts = format!(
        "2025-01-{:02}T{:02}:{:02}:00.000Z",
        1 + (k / 1440) % 28,
        (k / 60) % 24,
        k % 60
    );
    if k.is_multiple_of(2) {
        let word = if k.is_multiple_of(3) { "needle" } else { "hay" };
        format!(
            "{{\"type\":\"message\",\"id\":\"e{k:07}\",\"parentId\":{parent},\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"user\",\"content\":\"question {k} with {word} and some more words to make it longer\",\"timestamp\":{k}}}}}\n"
        )
    } else {
        format!(
            "{{\"type\":\"message\",\"id\":\"e{k:07}\",\"parentId\":{parent},\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"answer {k} about the {k} needle\"}}],\"provider\":\"p\",\"model\":\"m\",\"api\":\"a\",\"usage\":{{\"input\":{k},\"output\":2,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":{},\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0.001}}}},\"stopReason\":\"stop\",\"timestamp\":{k}}}}}\n",
            k + 2
        )
    }
}

fn session(id: &str, from: u64, n: u64) -> String {
    let mut s = header(id);
    for k in from..from + n {
        s.push_str(&entry(k, (k > from).then(|| k - 1)));
    }
    s
}

/// The store's state: what the writer keeps in mind to make its next change.
struct Store {
    live: PathBuf,
    next: u64,
    /// The id of each session's last entry (the parent of the next append).
    last: HashMap<&'static str, u64>,
    fifo: bool,
    link: bool,
}

impl Store {
    fn folder(&self) -> PathBuf {
        self.live.join(FOLDER)
    }

    fn append(&mut self, name: &'static str, torn: Option<&Versions>) {
        let k = self.next;
        self.next += 1;
        let line = entry(k, self.last.get(name).copied());
        self.last.insert(name, k);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.folder().join(name))
            .expect("append");
        match torn {
            None => f.write_all(line.as_bytes()).expect("append"),
            Some(v) => {
                // The first part, seen by readers as a version of its own.
                let (a, b) = line.split_at(line.len() / 2);
                f.write_all(a.as_bytes()).expect("append");
                v.stable(self);
                v.begin();
                std::thread::sleep(Duration::from_millis(5));
                f.write_all(b.as_bytes()).expect("append");
            }
        }
    }

    /// Rewrite, in place and at the same length, the text of a message near the middle.
    fn same_length_edit(&mut self, name: &str) {
        let path = self.folder().join(name);
        let bytes = std::fs::read(&path).expect("read");
        let Some(at) = find(&bytes[bytes.len() / 2..], b"question ").map(|i| i + bytes.len() / 2) else {
            return;
        };
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"QUESTION ", at as u64).expect("edit");
        f.flush().expect("flush");
    }

    /// Cut the session back to its first `keep` lines (pi never does; another tool may).
    fn truncate(&mut self, name: &'static str, keep: usize) {
        let path = self.folder().join(name);
        let bytes = std::fs::read(&path).expect("read");
        let mut end = 0;
        for (i, l) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
            if i == keep || !l.ends_with(b"\n") {
                break;
            }
            end += l.len();
        }
        // The last kept entry is the next append's parent.
        let last_line = bytes[..end].split(|&b| b == b'\n').rev().nth(1).unwrap_or_default();
        let id = find(last_line, b"\"id\":\"e").map(|i| &last_line[i + 7..i + 14]);
        match id
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse().ok())
        {
            Some(k) => self.last.insert(name, k),
            None => self.last.remove(name),
        };
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open")
            .set_len(end as u64)
            .expect("truncate");
    }

    /// Replace the session by a new file renamed over it.
    fn replace(&mut self, name: &'static str) {
        let k = self.next;
        self.next += 20;
        let tmp = self.live.join("replacement.tmp");
        std::fs::write(&tmp, session(&format!("r{k}"), k, 20)).expect("write");
        std::fs::rename(&tmp, self.folder().join(name)).expect("rename");
        self.last.insert(name, k + 19);
    }

    fn touch(&self, name: &str) {
        let f = std::fs::File::options()
            .append(true)
            .open(self.folder().join(name))
            .expect("open");
        f.set_modified(std::time::SystemTime::now()).expect("touch");
    }

    fn toggle_fifo(&mut self) {
        let p = self.folder().join("f.jsonl");
        if self.fifo {
            std::fs::remove_file(&p).expect("rm fifo");
        } else {
            crate::common::mkfifo(&p);
        }
        self.fifo = !self.fifo;
    }

    fn toggle_links(&mut self) {
        let (l, d) = (self.folder().join("link.jsonl"), self.folder().join("dangling.jsonl"));
        if self.link {
            std::fs::remove_file(&l).expect("rm link");
            std::fs::remove_file(&d).expect("rm link");
        } else {
            std::os::unix::fs::symlink("s1.jsonl", &l).expect("link");
            std::os::unix::fs::symlink("missing.jsonl", &d).expect("link");
        }
        self.link = !self.link;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Copy the live store to `to`: files' bytes, links as links, FIFOs as FIFOs.
fn snapshot(live: &Path, to: &Path) {
    let dst = to.join(FOLDER);
    std::fs::create_dir_all(&dst).expect("mkdir");
    for e in std::fs::read_dir(live.join(FOLDER)).expect("read_dir") {
        let e = e.expect("entry");
        let t = e.file_type().expect("type");
        let target = dst.join(e.file_name());
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).expect("link"), target).expect("link");
        } else if t.is_file() {
            std::fs::copy(e.path(), target).expect("copy");
        } else {
            crate::common::mkfifo(&target);
        }
    }
}

/// The version seqlock, and the snapshots of the stable versions.
struct Versions {
    seq: AtomicU64,
    snaps: PathBuf,
}

impl Versions {
    fn begin(&self) {
        self.seq.fetch_add(1, Ordering::SeqCst);
    }

    /// The change is complete: snapshot it, then publish its version.
    fn stable(&self, store: &Store) {
        let v = self.seq.load(Ordering::SeqCst) + 1;
        snapshot(&store.live, &self.snaps.join(format!("v{}", v / 2)));
        self.seq.store(v, Ordering::SeqCst);
    }

    fn now(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Answer {
    code: Option<i32>,
    out: String,
    err: String,
}

/// Run `args` (with `{root}` standing for the store's root) on `root`, killed after 60 s.
fn run(args: &[String], root: &Path, cache: Option<&Path>) -> Answer {
    let root_s = root.to_str().expect("UTF-8 path");
    let node = args[0] == "node";
    let mut c = if node {
        let mut c = Command::new("node");
        c.arg("-e").arg(NODE_READER);
        c
    } else {
        let mut c = bin();
        c.arg(&args[0]);
        c
    };
    c.args(args[1..].iter().map(|a| a.replace("{root}", root_s)));
    match cache {
        _ if node => &mut c,
        Some(d) => c.env("PI_SESSION_CACHE_DIR", d),
        // (Only the listing, search and usage keep caches.)
        None if ["ls", "search", "usage"].contains(&args[0].as_str()) => {
            c.arg("--no-cache").env("PI_SESSION_CACHE_DIR", root.join("no-cache"))
        }
        None => c.env("PI_SESSION_CACHE_DIR", root.join("no-cache")),
    };
    c.env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().expect("runs");
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let dog = std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if d2.load(Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("pid"),
            rustix::process::Signal::KILL,
        );
        true
    });
    let o = child.wait_with_output().expect("wait");
    done.store(true, Ordering::SeqCst);
    assert!(!dog.join().expect("watchdog"), "{args:?} hung: killed after 60 s");
    assert!(o.status.code().is_some(), "{args:?} crashed: {:?}", o.status);
    // (How many files the cache answered is the one thing a cached run may say otherwise.)
    let out = String::from_utf8_lossy(&o.stdout);
    let out = match out.find(",\"cachedFiles\":") {
        Some(at) => {
            let end = out[at + 15..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(out.len(), |e| at + 15 + e);
            format!("{}{}", &out[..at], &out[end..])
        }
        None => out.into_owned(),
    };
    Answer {
        code: o.status.code(),
        out: out.replace(root_s, "{root}"),
        err: String::from_utf8_lossy(&o.stderr).replace(root_s, "{root}"),
    }
}

/// A JSON-lines answer split by file: each line that names a file (`path`, `sessionPath`),
/// under that file; other lines (a summary, a wrapper) left out. `None`: not JSON lines,
/// or a failed run.
fn units(a: &Answer) -> Option<HashMap<String, Vec<String>>> {
    if a.code != Some(0) {
        return None;
    }
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    for line in a.out.lines() {
        let v: serde_json::Value = match serde_json::from_str(line.trim_end_matches(',')) {
            Ok(v) => v,
            // (The wrapper of `usage --json`: `{"sessions":[`, `],`, `"totals":{…},`.)
            Err(_) if line.ends_with('[') || line.starts_with(']') || line.starts_with('"') => continue,
            Err(_) => return None,
        };
        if let Some(p) = v.get("path").or_else(|| v.get("sessionPath")).and_then(|p| p.as_str()) {
            m.entry(p.to_string())
                .or_default()
                .push(line.trim_end_matches(',').to_string());
        }
    }
    Some(m)
}

/// The Node binding's reader (`PI_SESSION_NODE_BINDING`: the binding's folder): pi's
/// `SessionManager.open` and what it answers.
const NODE_READER: &str = r#"
const { SessionManager } = require(process.env.PI_SESSION_NODE_BINDING);
const sm = SessionManager.open(process.argv[process.argv.length - 1]);
process.stdout.write(JSON.stringify({
  header: sm.getHeader(), entries: sm.getEntries(), leaf: sm.getLeafId(),
  branch: sm.getBranch().map((e) => e.id), context: sm.buildSessionContext(),
  name: sm.getSessionName(),
}) + "\n");
"#;

/// A clean error that says the file changed under the reader.
fn says_changed(a: &Answer) -> bool {
    // (2: the CLI's error; 1: Node's uncaught exception.)
    matches!(a.code, Some(1 | 2))
        && ["changed while", "rewrote it", "shrank", "truncated", "replaced"]
            .iter()
            .any(|w| a.err.contains(w))
}

/// The reference answers: each reader's answer with no cache on a version's snapshot,
/// made once for each set of bytes the reader reads.
struct References<'a> {
    readers: &'a [Vec<String>],
    snaps: &'a Path,
    /// (reader, version) → the key of the bytes it reads there.
    keys: Mutex<HashMap<(usize, u64), u64>>,
    answers: Mutex<HashMap<(usize, u64), Answer>>,
}

impl<'a> References<'a> {
    fn new(readers: &'a [Vec<String>], snaps: &'a Path) -> Self {
        References {
            readers,
            snaps,
            keys: Mutex::default(),
            answers: Mutex::default(),
        }
    }

    fn snap(&self, v: u64) -> PathBuf {
        self.snaps.join(format!("v{v}"))
    }

    /// What reader `r` reads in version `v`, hashed: the one file it names, else the
    /// whole folder (names, types, link targets, bytes).
    fn key(&self, r: usize, v: u64) -> u64 {
        use std::hash::{Hash, Hasher};
        if let Some(&k) = self.keys.lock().expect("lock").get(&(r, v)) {
            return k;
        }
        let folder = self.snap(v).join(FOLDER);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut add = |p: &Path| {
            p.file_name().hash(&mut h);
            match std::fs::symlink_metadata(p) {
                Err(_) => "missing".hash(&mut h),
                Ok(m) if m.file_type().is_symlink() => {
                    std::fs::read_link(p).expect("link").hash(&mut h);
                    std::fs::read(p).ok().hash(&mut h);
                }
                Ok(m) if m.is_file() => std::fs::read(p).expect("read").hash(&mut h),
                Ok(_) => "special".hash(&mut h),
            }
        };
        match self.readers[r].iter().find(|a| a.ends_with(".jsonl")) {
            Some(file) => add(&folder.join(Path::new(file).file_name().expect("name"))),
            None => {
                let mut names: Vec<PathBuf> = std::fs::read_dir(&folder)
                    .expect("read_dir")
                    .map(|e| e.expect("entry").path())
                    .collect();
                names.sort();
                names.iter().for_each(|p| add(p));
            }
        }
        let k = h.finish();
        self.keys.lock().expect("lock").insert((r, v), k);
        k
    }

    /// Make the references of `wanted` not made yet, on a pool of threads.
    fn make(&self, wanted: impl Iterator<Item = (usize, u64)>) {
        let mut jobs: Vec<(usize, u64, u64)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (r, v) in wanted {
            let k = self.key(r, v);
            if queued.insert((r, k)) && !self.answers.lock().expect("lock").contains_key(&(r, k)) {
                jobs.push((r, v, k));
            }
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    while let Some(&(r, v, k)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let root = self.snap(v);
                        let mut a = run(&self.readers[r], &root, None);
                        a.out = a.out.replace(root.to_str().expect("UTF-8"), "{root}");
                        a.err = a.err.replace(root.to_str().expect("UTF-8"), "{root}");
                        self.answers.lock().expect("lock").insert((r, k), a);
                    }
                });
            }
        });
    }

    fn get(&self, r: usize, v: u64) -> Answer {
        let k = self.key(r, v);
        if let Some(a) = self.answers.lock().expect("lock").get(&(r, k)) {
            return a.clone();
        }
        self.make(std::iter::once((r, v)));
        self.answers.lock().expect("lock")[&(r, k)].clone()
    }
}

#[derive(Default, Debug)]
struct Counts {
    stable_equal: u64,
    overlapped_equal: u64,
    overlapped_changed_error: u64,
    overlapped_per_file_equal: u64,
    overlapped_totals_mixed: u64,
    changes: u64,
}

#[test]
fn readers_agree_with_a_fresh_run_while_the_store_changes_in_every_way() {
    let secs: u64 = std::env::var("PI_SESSION_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().expect("tempdir");
    let live = tmp.path().join("live");
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(live.join(FOLDER)).expect("mkdir");
    let mut store = Store {
        live: live.clone(),
        next: 1000,
        last: HashMap::new(),
        fifo: false,
        link: false,
    };
    for (name, id, from) in [("s1.jsonl", "s1", 0), ("s2.jsonl", "s2", 200), ("s3.jsonl", "s3", 400)] {
        std::fs::write(store.folder().join(name), session(id, from, 60)).expect("write");
        store.last.insert(name, from + 59);
    }
    for k in 0..20 {
        std::fs::write(
            store.folder().join(format!("o{k:02}.jsonl")),
            session(&format!("o{k}"), 600 + k * 10, 6),
        )
        .expect("write");
    }
    let versions = Versions {
        seq: AtomicU64::new(0),
        snaps: tmp.path().join("snaps"),
    };
    snapshot(&live, &versions.snaps.join("v0"));
    let s = |v: &str| v.to_string();
    let file = |n: &str| format!("{{root}}/{FOLDER}/{n}");
    let mut readers: Vec<Vec<String>> = vec![
        vec![s("ls"), s("--all"), s("--json"), s("--agent-dir"), s("{root}/agent")],
        vec![
            s("search"),
            s("--json"),
            s("-F"),
            s("needle"),
            s("{root}/agent/sessions"),
        ],
        vec![s("usage"), s("--json"), s("{root}/agent/sessions")],
        vec![s("usage"), s("session"), s("--json"), s("{root}/agent/sessions")],
        vec![s("show"), s("--no-pager"), file("s1.jsonl")],
        vec![s("tree"), file("s2.jsonl")],
        vec![s("context"), file("s3.jsonl")],
        vec![s("check"), s("--json"), file("s1.jsonl")],
        vec![s("tree"), file("link.jsonl")],
    ];
    // The Node binding reads too when it is built and named (`.ci/run` does), on the
    // session that gets no torn appends: pi's open completes a torn last line itself.
    if std::env::var_os("PI_SESSION_NODE_BINDING").is_some() {
        readers.push(vec![s("node"), file("s2.jsonl")]);
    }
    let stop = AtomicBool::new(false);
    // (reader, first version, last version, answer)
    let seen: Mutex<Vec<(usize, u64, u64, Answer)>> = Mutex::new(Vec::new());
    let mut counts = Counts::default();
    std::thread::scope(|sc| {
        for t in 0..4 {
            let (readers, versions, stop, seen, live, cache) = (&readers, &versions, &stop, &seen, &live, &cache);
            sc.spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::SeqCst) {
                    let r = i % readers.len();
                    i += 3;
                    let before = versions.now();
                    let a = run(&readers[r], live, Some(cache));
                    let after = versions.now();
                    seen.lock().expect("lock").push((r, before, after, a));
                }
            });
        }
        let until = Instant::now() + Duration::from_secs(secs);
        let mut k = 0u64;
        while Instant::now() < until {
            versions.begin();
            match k % 12 {
                0 | 6 => store.append("s1.jsonl", None),
                1 => store.append("s1.jsonl", Some(&versions)),
                2 => store.touch("s1.jsonl"),
                3 => store.same_length_edit("s1.jsonl"),
                4 => store.append("s2.jsonl", None),
                5 => store.truncate("s2.jsonl", 30 + (k as usize % 20)),
                7 => store.replace("s3.jsonl"),
                8 => store.toggle_fifo(),
                9 => store.toggle_links(),
                10 => store.append("s3.jsonl", Some(&versions)),
                _ => store.touch("s2.jsonl"),
            }
            versions.stable(&store);
            counts.changes += 1;
            k += 1;
            std::thread::sleep(Duration::from_millis(40));
        }
        stop.store(true, Ordering::SeqCst);
    });
    // Check every answer against the reference runs of the versions it may have seen. A
    // reference depends only on the bytes its reader reads, so versions that hold the same
    // bytes share one run, and the runs are made by a pool: first each answer's first
    // version (all a stable answer needs), then the rest for the answers that differ.
    let seen = seen.into_inner().expect("lock");
    assert!(seen.len() > 20, "the readers ran: {}", seen.len());
    let refs = References::new(&readers, &versions.snaps);
    refs.make(seen.iter().map(|(r, before, ..)| (*r, before / 2)));
    refs.make(seen.iter().flat_map(|(r, before, after, a)| {
        let (first, last) = (before / 2, after.div_ceil(2));
        let differs = refs.get(*r, first) != *a;
        (first + 1..=last).filter(move |_| differs).map(move |v| (*r, v))
    }));
    let reference = |r: usize, v: u64| refs.get(r, v);
    let mut runs = vec![0u64; readers.len()];
    for (r, ..) in &seen {
        runs[*r] += 1;
    }
    for (r, before, after, a) in seen {
        let (first, last) = (before / 2, after.div_ceil(2));
        if before == after && before % 2 == 0 {
            let want = reference(r, first);
            assert_eq!(a, want, "{:?} at the stable version {first}", readers[r]);
            counts.stable_equal += 1;
        } else if (first..=last).any(|v| reference(r, v) == a) {
            counts.overlapped_equal += 1;
        } else if says_changed(&a) {
            counts.overlapped_changed_error += 1;
        } else if readers[r][0] == "usage" && a.code == Some(0) {
            // Usage counts a record once across files (a symlink, a copy): files read at
            // different moments share their records out otherwise than any one version
            // does, per file too. Only runs that saw one version are compared.
            counts.overlapped_totals_mixed += 1;
        } else if let Some(got) = units(&a) {
            // Files read at different moments: each file's part is one version's.
            let wants: Vec<HashMap<String, Vec<String>>> = (first..=last)
                .map(|v| units(&reference(r, v)).expect("a reference of JSON lines"))
                .collect();
            for (key, lines) in &got {
                assert!(
                    wants.iter().any(|w| w.get(key) == Some(lines)),
                    "{:?} overlapped versions {first}..={last}: the part of {key} is none of theirs: {lines:?}",
                    readers[r]
                );
            }
            for key in wants[0].keys() {
                assert!(
                    got.contains_key(key) || wants.iter().any(|w| !w.contains_key(key)),
                    "{:?} overlapped versions {first}..={last} and dropped {key}",
                    readers[r]
                );
            }
            counts.overlapped_per_file_equal += 1;
        } else {
            panic!(
                "{:?} overlapped versions {first}..={last} and gave none of their answers: {a:?}\nfirst: {:?}",
                readers[r],
                reference(r, first)
            );
        }
    }
    eprintln!("soak ({secs} s): {counts:?}");
    eprintln!(
        "  {} reference runs for {} answers",
        refs.answers.lock().expect("lock").len(),
        runs.iter().sum::<u64>()
    );
    for (r, n) in readers.iter().zip(&runs) {
        eprintln!("  {n:>6} runs of {}", r.join(" "));
    }
    assert!(runs.iter().all(|&n| n > 0), "every reader ran: {runs:?}");
    assert!(counts.stable_equal > 0, "{counts:?}");
}
