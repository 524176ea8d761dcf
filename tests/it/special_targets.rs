//! Issue #43: a write never replaces what is not a regular file. Every command that writes
//! a file, run against a FIFO, a socket, a folder and (as root) a private character device
//! `c 1 3`, each named directly and through a symlink: a session, a journal, a cache or a
//! Parquet table there is refused and left exactly as it was (file type, device number,
//! inode), with nothing left beside it; `export -o` and `gen session` stream into a FIFO
//! or a device as `cat >` would. Only nodes made inside the test's temporary folder are
//! touched, never the host's `/dev`. A FIFO case never hangs: every command runs under a
//! time limit, and a FIFO written to has a reader.
#![cfg(unix)]

use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pi-session")
}

const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"01900000-0000-7000-8000-000000000001\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";
const ENTRY: &str = "{\"type\":\"message\",\"id\":\"a1b2c3d4\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hello there\",\"timestamp\":1}}\n";

/// Run `pi-session ARGS` with `envs`, killed (and the test failed) after 20 s.
fn run(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("spawn");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("pi-session {args:?} hung (killed after 20 s)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Type, device number and inode of what is at `p` (not followed).
fn identity(p: &Path) -> (&'static str, u64, u64) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let t = m.file_type();
    let kind = if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "dir"
    } else if t.is_symlink() {
        "link"
    } else {
        "file"
    };
    (kind, m.rdev(), m.ino())
}

/// Every name under `d`, recursively, sorted.
fn tree(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![d.to_path_buf()];
    while let Some(x) = todo.pop() {
        for e in std::fs::read_dir(&x).expect("ls").flatten() {
            let p = e.path();
            if e.file_type().expect("type").is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The special files of a case, in their own folder, with what they were.
struct Specials {
    dir: PathBuf,
    /// (name, path) of each special file; `link-NAME` beside each names it.
    all: Vec<(String, PathBuf)>,
    before: Vec<(&'static str, u64, u64)>,
    _socket: std::os::unix::net::UnixListener,
}

impl Specials {
    fn new(dir: &Path) -> Specials {
        let dir = dir.join("specials");
        std::fs::create_dir(&dir).expect("mkdir");
        let mut all = Vec::new();
        let fifo = dir.join("fifo");
        assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
        all.push(("fifo".to_string(), fifo));
        let sock = dir.join("sock");
        let socket = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        all.push(("socket".to_string(), sock));
        let folder = dir.join("folder");
        std::fs::create_dir(&folder).expect("mkdir");
        all.push(("folder".to_string(), folder));
        let dev = dir.join("null");
        let made = Command::new("mknod")
            .args(["-m", "666"])
            .arg(&dev)
            .args(["c", "1", "3"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if made {
            all.push(("device".to_string(), dev));
        } else {
            eprintln!("special_targets: no character device case here (mknod c 1 3 needs root)");
        }
        for (name, p) in &all {
            std::os::unix::fs::symlink(p, dir.join(format!("link-{name}"))).expect("symlink");
        }
        let before = all.iter().map(|(_, p)| identity(p)).collect();
        Specials {
            dir,
            all,
            before,
            _socket: socket,
        }
    }

    fn link(&self, name: &str) -> PathBuf {
        self.dir.join(format!("link-{name}"))
    }

    /// Each special file is what it was, each link still a link, nothing else there.
    fn assert_intact(&self, case: &str) {
        let now: Vec<_> = self.all.iter().map(|(_, p)| identity(p)).collect();
        assert_eq!(now, self.before, "{case}: a special file was replaced");
        let mut want: Vec<PathBuf> = self.all.iter().flat_map(|(n, p)| [p.clone(), self.link(n)]).collect();
        want.sort();
        let mut have = tree(&self.dir);
        have.retain(|p| !p.starts_with(self.dir.join("folder")) || *p == self.dir.join("folder"));
        assert_eq!(have, want, "{case}: something was left beside them");
        assert!(
            tree(&self.dir.join("folder")).is_empty(),
            "{case}: written into the folder"
        );
        for (n, _) in &self.all {
            assert_eq!(identity(&self.link(n)).0, "link", "{case}: link-{n}");
        }
    }
}

/// Read the FIFO at `p` to its end in a thread; what it read, through the channel.
fn fifo_reader(p: &Path) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = p.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(p).expect("read fifo"));
    });
    rx
}

/// What a [`fifo_reader`] read; fails (instead of hanging) when nothing came in 20 s, as
/// when a writer replaced the FIFO instead of writing to it.
fn fifo_read(rx: &std::sync::mpsc::Receiver<Vec<u8>>, case: &str) -> Vec<u8> {
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{case}: nothing reached the FIFO's reader"))
}

/// A temporary folder with the special files and a session `s.jsonl` of one message.
fn setup() -> (tempfile::TempDir, Specials, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    let session = tmp.path().join("s.jsonl");
    std::fs::write(&session, format!("{HEADER}{ENTRY}")).expect("write");
    (tmp, sp, session)
}

/// Refused with the readers' words for it.
fn assert_refused(o: &Output, case: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{case}: {e}");
    assert!(
        e.contains("not a regular file") || e.contains("Is a directory") || e.contains("not a folder"),
        "{case}: {e}"
    );
}

#[test]
fn session_writes_refuse_what_is_not_a_regular_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    for (name, p) in sp.all.clone() {
        for target in [p.clone(), sp.link(&name)] {
            let t = target.to_str().expect("utf-8");
            for args in [
                vec!["append", t, r#"{"role":"user","content":"x"}"#],
                vec!["label", t, "a1b2c3d4", "x"],
                vec!["name", t, "x"],
                vec!["migrate", t],
                vec!["recover", t],
            ] {
                let case = format!("{} on {}", args[0], target.display());
                let o = run(&args, &[]);
                assert_refused(&o, &case);
                sp.assert_intact(&case);
            }
        }
    }
}

#[test]
fn new_sessions_never_land_on_a_special_file() {
    let (_tmp, sp, session) = setup();
    let s = session.to_str().expect("utf-8");
    // fork into a "folder" that is a link to each special file.
    for (name, _) in sp.all.clone() {
        if name == "folder" {
            continue;
        }
        let dir = sp.link(&name);
        let case = format!("fork --session-dir {}", dir.display());
        let o = run(
            &["fork", s, "--cwd", "/q", "--session-dir", dir.to_str().expect("utf-8")],
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
        sp.assert_intact(&case);
    }
    // The library's writer with a session folder that is each special file (or a link to
    // one): its first message cannot make the file, and nothing is replaced.
    for (name, p) in sp.all.clone() {
        if name == "folder" {
            continue;
        }
        for dir in [p.clone(), sp.link(&name)] {
            let case = format!("Writer::create in {}", dir.display());
            let m = pi_session::Value::parse(br#"{"role":"user","content":"hi"}"#).expect("json");
            let r = pi_session::Writer::create("/p", &dir, pi_session::Entropy::default())
                .and_then(|mut w| w.append_message(m).map(drop));
            assert!(r.is_err(), "{case}");
            sp.assert_intact(&case);
        }
    }
}

#[test]
fn export_streams_into_fifos_and_devices_and_refuses_the_rest() {
    let (tmp, sp, session) = setup();
    let s = session.to_str().expect("utf-8");
    let expected = run(&["export", s, "--format", "html"], &[]);
    assert!(expected.status.success());
    for (name, p) in sp.all.clone() {
        for target in [p.clone(), sp.link(&name)] {
            let case = format!("export -o {}", target.display());
            let reader = (name == "fifo").then(|| fifo_reader(&p));
            let o = run(
                &["export", s, "--format", "html", "-o", target.to_str().expect("utf-8")],
                &[],
            );
            match name.as_str() {
                "fifo" | "device" => {
                    assert!(o.status.success(), "{case}: {}", stderr(&o));
                    if let Some(r) = reader {
                        assert_eq!(fifo_read(&r, &case), expected.stdout, "{case}");
                    }
                }
                "socket" => {
                    assert_refused(&o, &case);
                    assert!(stderr(&o).contains("(a socket)"), "{case}: {}", stderr(&o));
                }
                _ => assert_refused(&o, &case),
            }
            sp.assert_intact(&case);
        }
    }
    // A symlink to a regular file: written through, the link stays.
    let real = tmp.path().join("real.html");
    std::fs::write(&real, "old").expect("write");
    let link = tmp.path().join("link.html");
    std::os::unix::fs::symlink("real.html", &link).expect("symlink");
    let o = run(&["export", s, "-o", link.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(identity(&link).0, "link");
    assert_eq!(std::fs::read(&real).expect("read"), expected.stdout);
    // A dangling link: the file it names is made, as the shell's `>` makes it.
    let dangling = tmp.path().join("dangling.md");
    std::os::unix::fs::symlink("made.md", &dangling).expect("symlink");
    let o = run(&["export", s, "-o", dangling.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("made.md").is_file());
    assert_eq!(identity(&dangling).0, "link");
}

/// `-o /dev/stdout` writes to standard output as it is (here a pipe), and `-o
/// /dev/fd/N` to the descriptor the shell opened (a process substitution's pipe).
#[test]
fn export_to_standard_output_and_a_descriptor() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let session = tmp.path().join("s.jsonl");
    std::fs::write(&session, format!("{HEADER}{ENTRY}")).expect("write");
    let s = session.to_str().expect("utf-8");
    let expected = run(&["export", s], &[]);
    let o = run(&["export", s, "-o", "/dev/stdout"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, expected.stdout);
    // stdout redirected with `>>`: appended to, not truncated.
    let log = tmp.path().join("log.md");
    std::fs::write(&log, "before\n").expect("write");
    let f = std::fs::OpenOptions::new().append(true).open(&log).expect("open");
    let st = Command::new(bin())
        .args(["export", s, "-o", "/dev/stdout"])
        .stdout(f)
        .status()
        .expect("run");
    assert!(st.success());
    assert_eq!(
        std::fs::read(&log).expect("read"),
        [b"before\n".as_slice(), &expected.stdout].concat()
    );
    // bash's `>(...)`, when there is a bash.
    if Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
    {
        let gz = tmp.path().join("x.txt");
        let script = format!("'{}' export '{s}' -o >(cat > '{}') && wait", bin(), gz.display());
        let st = Command::new("bash").arg("-c").arg(script).status().expect("bash");
        assert!(st.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read(&gz).map(|b| b.len()).unwrap_or(0) < expected.stdout.len() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(std::fs::read(&gz).expect("read"), expected.stdout);
    }
}

#[test]
fn gen_session_streams_into_a_fifo_and_refuses_a_socket() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    let fifo = sp.link("fifo");
    let reader = fifo_reader(&fifo);
    let o = run(&["gen", "session", "--size", "20K", fifo.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = fifo_read(&reader, "gen session");
    assert!(
        got.len() > 10_000 && got.starts_with(b"{\"type\":\"session\""),
        "{}",
        got.len()
    );
    let o = run(
        &[
            "gen",
            "session",
            "--size",
            "20K",
            sp.link("socket").to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    sp.assert_intact("gen session");
}

/// The listing, search and usage caches: a cache file replaced by a link to each special
/// file is refused (a warning), the answers are those without a cache, and it stays.
#[test]
fn caches_leave_special_files_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    let agent = tmp.path().join("agent");
    let folder = agent.join("sessions").join("--p--");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("s.jsonl"), format!("{HEADER}{ENTRY}")).expect("write");
    let cache = tmp.path().join("cache");
    let a = agent.to_str().expect("utf-8");
    let commands: [Vec<&str>; 3] = [
        vec!["ls", "--all", "--json", "--agent-dir", a],
        vec!["search", "hello", "--json", "--agent-dir", a],
        vec!["usage", "--json", "--agent-dir", a],
    ];
    let env = [("PI_SESSION_CACHE_DIR", cache.as_path())];
    let plain: Vec<Vec<u8>> = commands.iter().map(|c| run(c, &env).stdout).collect();
    let files: Vec<PathBuf> = tree(&cache).into_iter().filter(|p| p.is_file()).collect();
    assert!(files.len() >= 3, "caches made: {files:?}");
    for (name, _) in sp.all.clone() {
        for f in &files {
            let _ = std::fs::remove_file(f);
            std::os::unix::fs::symlink(sp.link(&name), f).expect("symlink");
        }
        for (c, want) in commands.iter().zip(&plain) {
            let case = format!("{} with its caches linked to the {name}", c[0]);
            let o = run(c, &env);
            assert!(o.status.success(), "{case}: {}", stderr(&o));
            assert_eq!(&o.stdout, want, "{case}");
            sp.assert_intact(&case);
            for f in &files {
                assert_eq!(identity(f).0, "link", "{case}: {}", f.display());
            }
        }
    }
}

/// `export-parquet --out` a special file (or a link to one) is refused; so is an export
/// folder where a table's file or the manifest was replaced by a link to one.
#[cfg(feature = "parquet")]
#[test]
fn parquet_export_leaves_special_files_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    let folder = tmp.path().join("sessions").join("--p--");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("s.jsonl"), format!("{HEADER}{ENTRY}")).expect("write");
    let root = tmp.path().join("sessions");
    let r = root.to_str().expect("utf-8");
    for (name, p) in sp.all.clone() {
        if name == "folder" {
            continue;
        }
        for target in [p.clone(), sp.link(&name)] {
            let case = format!("export-parquet --out {}", target.display());
            let o = run(&["export-parquet", r, "--out", target.to_str().expect("utf-8")], &[]);
            assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
            assert!(stderr(&o).contains("not a folder"), "{case}: {}", stderr(&o));
            sp.assert_intact(&case);
        }
    }
    let out = tmp.path().join("out");
    let o = run(&["export-parquet", r, "--out", out.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<PathBuf> = tree(&out).into_iter().filter(|p| p.is_file()).collect();
    assert!(files.len() >= 3, "{files:?}");
    // A folder of someone else's inside a partition is no business of the export's; a
    // killed run's manifest temporary file is swept (review of #43).
    let partition = files
        .iter()
        .find_map(|f| f.parent().filter(|d| *d != out))
        .expect("a partition")
        .to_path_buf();
    std::fs::create_dir(partition.join(".ipynb_checkpoints")).expect("mkdir");
    std::fs::write(out.join("_manifest.json.tmp-1"), "{").expect("write");
    std::fs::write(
        folder.join("t.jsonl"),
        format!("{HEADER}{ENTRY}").replace("0001\"", "0002\""),
    )
    .expect("write");
    let o = run(&["export-parquet", r, "--out", out.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.join("_manifest.json.tmp-1").exists());
    assert!(partition.join(".ipynb_checkpoints").is_dir());
    std::fs::remove_file(folder.join("t.jsonl")).expect("rm");
    let files: Vec<PathBuf> = tree(&out).into_iter().filter(|p| p.is_file()).collect();
    std::fs::write(
        folder.join("s.jsonl"),
        format!(
            "{HEADER}{ENTRY}{}",
            ENTRY.replace("a1b2c3d4\",\"parentId\":null", "b1b2c3d4\",\"parentId\":\"a1b2c3d4\"")
        ),
    )
    .expect("write");
    for f in &files {
        let saved = std::fs::read(f).expect("read");
        for (name, _) in sp.all.clone() {
            std::fs::remove_file(f).expect("rm");
            std::os::unix::fs::symlink(sp.link(&name), f).expect("symlink");
            let case = format!("export-parquet with {} linked to the {name}", f.display());
            let o = run(&["export-parquet", r, "--out", out.to_str().expect("utf-8")], &[]);
            assert_eq!(o.status.code(), Some(2), "{case}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("not a regular file (a symlink)"),
                "{case}: {}",
                stderr(&o)
            );
            assert_eq!(identity(f).0, "link", "{case}");
            sp.assert_intact(&case);
        }
        std::fs::remove_file(f).expect("rm");
        std::fs::write(f, saved).expect("restore");
    }
}

/// A FIFO (or a socket, a device) named `*.jsonl` beside a session: lookups by id, the
/// readers and the write verbs never block on it (review bug 2, #35); `ls`, `search` and
/// `usage` pass over it alike; named, it is refused with the readers' words.
#[test]
fn a_special_file_named_like_a_session_never_blocks_and_is_passed_over() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sp = Specials::new(tmp.path());
    let agent = tmp.path().join("agent");
    let folder = agent.join("sessions").join("--p--");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("s.jsonl"), format!("{HEADER}{ENTRY}")).expect("write");
    for (name, _) in sp.all.clone() {
        if name != "folder" {
            std::os::unix::fs::symlink(sp.link(&name), folder.join(format!("{name}.jsonl"))).expect("symlink");
        }
    }
    let fifo = tmp.path().join("f.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    std::fs::rename(&fifo, folder.join("zz-fifo.jsonl")).expect("rename");
    let env = [
        ("PI_CODING_AGENT_DIR", agent.as_path()),
        ("PI_SESSION_CACHE_DIR", tmp.path()),
    ];
    let a = agent.to_str().expect("utf-8");
    let o = run(&["find", "--agent-dir", a, "01900000"], &env);
    assert!(o.status.success(), "find: {}", stderr(&o));
    for args in [
        vec!["show", "--no-pager", "01900000"],
        vec!["check", "01900000"],
        vec!["tree", "01900000"],
        vec!["label", "01900000", "a1b2c3d4", "x"],
        vec!["ls", "--all", "--agent-dir", a],
        vec!["search", "hello", "--agent-dir", a],
        vec!["usage", "--agent-dir", a],
    ] {
        let o = run(&args, &env);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let named = folder.join("zz-fifo.jsonl");
    let n = named.to_str().expect("utf-8");
    for args in [
        vec!["usage", n],
        vec!["search", "x", n],
        vec!["show", "--no-pager", n],
        vec!["check", n],
    ] {
        let o = run(&args, &env);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(
            stderr(&o).contains("not a regular file (a FIFO)"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert_eq!(identity(&named).0, "fifo");
    sp.assert_intact("lookups");
}

/// What the review of #43 found: a link another user planted in a sticky folder is not
/// followed (the kernel's protected_symlinks rule); a new file gets the umask's mode; `-o
/// x/` is a folder; a long output name still fits its temporary name.
#[test]
fn outputs_follow_the_kernels_rules_for_links_modes_and_names() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().expect("tempdir");
    let session = tmp.path().join("s.jsonl");
    std::fs::write(&session, format!("{HEADER}{ENTRY}")).expect("write");
    let s = session.to_str().expect("utf-8");
    // A sticky, world-writable folder with a link owned by someone else (root only: chown).
    let sticky = tmp.path().join("sticky");
    std::fs::create_dir(&sticky).expect("mkdir");
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let victim = tmp.path().join("victim.conf");
    std::fs::write(&victim, "secret").expect("write");
    let link = sticky.join("report.md");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    if std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).is_ok() {
        let o = run(&["export", s, "-o", link.to_str().expect("utf-8")], &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("protected_symlinks"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "secret");
    } else {
        eprintln!("special_targets: no protected_symlinks case here (lchown needs root)");
    }
    // The umask decides a new file's mode, as for any file the user makes.
    let out = tmp.path().join("private.md");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 077 && exec '{}' export '{s}' -o '{}'",
            bin(),
            out.display()
        ))
        .status()
        .expect("sh");
    assert!(st.success());
    assert_eq!(
        std::fs::metadata(&out).expect("stat").permissions().mode() & 0o777,
        0o600
    );
    // `-o name/`: a folder, refused, nothing made.
    let slash = tmp.path().join("newname/");
    let o = run(&["export", s, "-o", slash.to_str().expect("utf-8")], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!tmp.path().join("newname").exists());
    // A 240-byte name: the temporary name is cut to fit.
    let long = tmp.path().join(format!("{}.md", "n".repeat(237)));
    let o = run(&["export", s, "-o", long.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(long.is_file());
}
