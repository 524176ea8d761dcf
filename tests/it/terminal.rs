//! Output that cannot attack the terminal (issue #12 item 4; reliability review BUG 5 and
//! WEAK 15): a hostile session (escape sequences in ids, roles, text, labels, names, cwd,
//! model, thinking level; C1 controls and bidi overrides; a parent cycle through such an
//! id) under hostile file names (ESC/BEL, a bidi override, Latin-1), run through every
//! command of `pi-session --help`. Text output and stderr hold no control but `\n` and
//! `\t`, no DEL, no C1, no bidi override; file names print escaped by their exact bytes
//! and `ls --json` carries them exactly in `pathBytes`.

use pi_session::text::{escape_bytes, unescape};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The review's BUG 5 file, plus C1 controls, bidi overrides, DEL and `\r` where the text
/// commands print file content: model, thinking level, a second label.
const HOSTILE: &str = r#"{"type":"session","version":3,"id":"s\u001b[2J","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p\u001b]0;TITLE\u0007"}
{"type":"message","id":"m1\u001b[31m","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user\u001b[5m","content":"hello \u001b]52;c;cHduZWQ=\u0007 \u001b[2J\r\nFAKE LINE: all good \u200bzw\u200dj\ufeff\u2028\u200e\u200f\u061c\u00ad\u2060 \ud83d\udc68\u200d\ud83d\udc69","timestamp":1}}
{"type":"label","id":"l1","parentId":"m1\u001b[31m","timestamp":"2025-01-01T00:00:02.000Z","targetId":"m1\u001b[31m","label":"lab\u001b]0;LABEL\u0007"}
{"type":"model_change","id":"mc","parentId":"l1","timestamp":"2025-01-01T00:00:02.500Z","provider":"p\u009b2J","modelId":"m\u202etxt.exe"}
{"type":"thinking_level_change","id":"t\u2066","parentId":"mc","timestamp":"2025-01-01T00:00:02.700Z","thinkingLevel":"high\u007f\u0085\r"}
{"type":"message","id":"a\u009b1","parentId":"t\u2066","timestamp":"2025-01-01T00:00:02.800Z","message":{"role":"assistant","content":[{"type":"text","text":"\u202eevil\u202c \u0090P\u009c back\\slash"}],"provider":"p\u009b2J","model":"m\u202etxt.exe","timestamp":2}}
{"type":"label","id":"l2","parentId":"a\u009b1","timestamp":"2025-01-01T00:00:02.900Z","targetId":"a\u009b1","label":"\u2067x\u2069\u001b[8m"}
{"type":"session_info","id":"n1","parentId":"l2","timestamp":"2025-01-01T00:00:03.000Z","name":"name\u001b]0;NAME\u0007\u200b\u2029"}
"#;

/// A parent cycle through an id with a C1 control: `JSON.stringify` (the error's `id_json`)
/// leaves U+009B as it is.
const CYCLE: &str = r#"{"type":"session","version":3,"id":"c","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p\u001b]0;TITLE\u0007"}
{"type":"message","id":"x\u009b2J","parentId":"y\u202e","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"message","id":"y\u202e","parentId":"x\u009b2J","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":"yo","timestamp":2}}
"#;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
}

fn name(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

/// Hostile file names: escape sequences, a right-to-left override, Latin-1.
const NAMES: [&[u8]; 4] = [
    b"e.jsonl",
    b"x\x1b]0;FILE\x07\x1b[2J.jsonl",
    b"\xe2\x80\xaelmsj.txt.jsonl",
    b"caf\xe9.jsonl",
];

struct Corpus {
    _dir: tempfile::TempDir,
    agent: PathBuf,
    /// The project folder, holding `HOSTILE` under every name of `NAMES`.
    folder: PathBuf,
    cycle: PathBuf,
}

fn corpus() -> Corpus {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = dir.path().join("agent");
    let folder = agent.join("sessions").join("--p--");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for n in NAMES {
        std::fs::write(folder.join(name(n)), HOSTILE).expect("write");
    }
    let cycle = dir.path().join("cy\x1b[2Jcle.jsonl");
    std::fs::write(&cycle, CYCLE).expect("write");
    Corpus {
        agent,
        folder,
        cycle,
        _dir: dir,
    }
}

/// Where `out` holds something a terminal acts on: a control but `\n` and `\t`, DEL, a C1
/// control, a bidi override, or bytes that are not UTF-8 (a lone 0x9b is CSI to an 8-bit
/// terminal).
fn attack(out: &[u8]) -> Option<String> {
    let s = match std::str::from_utf8(out) {
        Ok(s) => s,
        Err(e) => return Some(format!("not UTF-8 at byte {}", e.valid_up_to())),
    };
    s.char_indices()
        .find(|&(i, c)| {
            (c < ' ' && c != '\n' && c != '\t')
                || c == '\u{7f}'
                || ('\u{80}'..='\u{9f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
                // Invisible and direction characters (#35): the joiner is allowed only in
                // the one emoji sequence the session holds.
                || matches!(c, '\u{200b}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{61c}' | '\u{ad}' | '\u{2060}')
                || (c == '\u{200d}' && !s[..i].ends_with('\u{1f468}'))
        })
        .map(|(i, c)| format!("{c:?} at byte {i}"))
}

/// Runs the command and asserts its text output (unless `json_stdout`) and stderr are
/// inert; returns the output.
fn run_inert(mut cmd: Command, stdin: &[u8], json_stdout: bool) -> Output {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("runs");
    {
        use std::io::Write;
        let mut i = child.stdin.take().expect("stdin");
        i.write_all(stdin).expect("stdin written");
    }
    let out = child.wait_with_output().expect("runs");
    // (The failure itself is printed escaped, for the terminal of whoever runs the test.)
    if !json_stdout && let Some(a) = attack(&out.stdout) {
        panic!("{what}: stdout: {a}:\n{}", escape_bytes(&out.stdout));
    }
    if let Some(a) = attack(&out.stderr) {
        panic!("{what}: stderr: {a}:\n{}", escape_bytes(&out.stderr));
    }
    out
}

fn text(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8")
}

fn err(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("UTF-8")
}

/// The reading commands and the listing, on every hostile name (and a missing one, and
/// not-a-session, for the error paths).
#[test]
fn reading_and_listing_print_nothing_a_terminal_acts_on() {
    let c = corpus();
    let mut files: Vec<PathBuf> = NAMES.iter().map(|n| c.folder.join(name(n))).collect();
    files.push(c.cycle.clone());
    let not_a_session = c.folder.join(name(b"n\x1b[2J\xe9.jsonl"));
    std::fs::write(&not_a_session, "{\"hello\":\"\\u001b[2J\"}\n").expect("write");
    files.push(not_a_session);
    files.push(c.folder.join(name(b"missing\x1b[2J\xe9.jsonl")));
    for f in &files {
        for args in [
            &["tree"][..],
            &["context"],
            &["check"],
            &["context", "--leaf", "m1\x1b[31m"],
            &["context", "--leaf", "no\x1b[2Jsuch\u{9b}"],
            &["context", "--json"],
            &["check", "--json"],
            &["dump"],
            &["recover", "--json"],
        ] {
            let mut cmd = bin();
            cmd.args(args).arg(f);
            let json = args.contains(&"--json") || args[0] == "dump";
            run_inert(cmd, b"", json);
        }
    }
    let mut ls_runs: Vec<Vec<&OsStr>> = vec![
        vec!["ls".as_ref(), "--all".as_ref()],
        vec!["ls".as_ref(), "--all".as_ref(), "--show-skipped".as_ref()],
        vec!["ls".as_ref(), "--cwd".as_ref(), "/p\x1b]0;TITLE\x07".as_ref()],
        vec!["ls".as_ref(), "--cwd".as_ref(), "/q\x1b[2J".as_ref()],
        vec!["find".as_ref(), "s\x1b[2J".as_ref()],
        vec!["find".as_ref(), "no\x1b[2J\u{202e}".as_ref()],
    ];
    for a in &mut ls_runs {
        a.extend(["--agent-dir".as_ref(), c.agent.as_os_str()]);
        let mut cmd = bin();
        cmd.args(&*a);
        run_inert(cmd, b"", false);
    }
    let mut cmd = bin();
    cmd.args(["ls", "--all", "--session-dir"])
        .arg(c.cycle.parent().expect("dir"));
    run_inert(cmd, b"", false);

    // What the hostile strings look like.
    let e = &files[0];
    let tree = text(&run_inert(bin_with(&["tree"], e), b"", false));
    assert!(
        tree.starts_with("m1\\x1b[31m * [lab\\x1b]0;LABEL\\x07] [user\\x1b[5m]\n"),
        "{tree}"
    );
    assert!(
        tree.contains("n1       @ [title: name\\x1b]0;NAME\\x07\\u200b]\n"),
        "{tree}"
    );
    assert!(
        tree.contains(
            "a\\u009b1 * [\\u2067x\\u2069\\x1b[8m] assistant: \\u202eevil\\u202c \\u0090P\\u009c back\\\\slash\n"
        ),
        "{tree}"
    );
    let context = text(&run_inert(bin_with(&["context"], e), b"", false));
    assert!(
        context
            .starts_with("leaf n1 · 2 messages · thinking high\\x7f\\u0085\\x0d · model p\\u009b2J/m\\u202etxt.exe\n"),
        "{context}"
    );
    assert!(
        context.contains("line 2  hello \\x1b]52;c;cHduZWQ=\\x07 \\x1b[2J\n"),
        "{context}"
    );
    assert!(
        context.contains("\\u202eevil\\u202c \\u0090P\\u009c back\\\\slash\n"),
        "{context}"
    );
    assert!(
        !context.contains("FAKE LINE"),
        "the preview is the first line: {context}"
    );
    // A journal pi-session did not write: `check` and `dump` report it with the file name.
    let journal = c.folder.join(name(&[b".", NAMES[1], b".append"].concat()));
    std::fs::write(&journal, b"\x1b]0;JOURNAL\x07").expect("journal");
    assert!(
        pi_session::pending_recovery(&files[1]).expect("looks").is_some(),
        "the journal is seen"
    );
    let check = text(&run_inert(bin_with(&["check"], &files[1]), b"", false));
    assert!(
        check.contains("session name:      name\\x1b]0;NAME\\x07\\u200b\n"),
        "{check}"
    );
    assert!(check.contains("/x\\x1b]0;FILE\\x07\\x1b[2J.jsonl\n"), "{check}");
    assert!(check.contains("append journal:    a stale journal"), "{check}");
    let cycle = text(&run_inert(bin_with(&["check"], &c.cycle), b"", false));
    assert!(cycle.contains("through entry \"y\\u202e\" (getBranch"), "{cycle}");
    let dump = run_inert(bin_with(&["dump"], &files[1]), b"", true);
    assert!(
        err(&dump).starts_with(&format!(
            "pi-session: {}/x\\x1b]0;FILE\\x07\\x1b[2J.jsonl: append journal: a stale journal",
            c.folder.display()
        )),
        "{}",
        err(&dump)
    );
    let missing = run_inert(bin_with(&["tree"], &files[files.len() - 1]), b"", false);
    assert_eq!(
        err(&missing),
        format!(
            "pi-session: cannot open {}/missing\\x1b[2J\\xe9.jsonl: No such file or directory\n",
            c.folder.display()
        )
    );
    let unknown = run_inert(bin_with(&["context", "--leaf", "no\x1b[2Jsuch\u{9b}"], e), b"", false);
    assert!(
        err(&unknown).ends_with(": entry no\\x1b[2Jsuch\\u009b not found\n"),
        "{}",
        err(&unknown)
    );
}

fn bin_with(args: &[&str], file: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(args).arg(file);
    cmd
}

/// Every printed file name gives the file back: `ls` (table), `find`, `check`'s `file:`
/// line, unescaped, are the exact bytes; `ls --json` keeps pi's lossy `path` and adds
/// `pathBytes` for the name that is not UTF-8 only.
#[test]
fn printed_file_names_give_the_exact_bytes_back() {
    let c = corpus();
    let want: std::collections::BTreeSet<Vec<u8>> = NAMES
        .iter()
        .map(|n| c.folder.join(name(n)).as_os_str().as_bytes().to_vec())
        .collect();
    let ls = run_inert(
        {
            let mut cmd = bin();
            cmd.args(["ls", "--all", "--long", "--agent-dir"]).arg(&c.agent);
            cmd
        },
        b"",
        false,
    );
    let from_table: std::collections::BTreeSet<Vec<u8>> = text(&ls)
        .lines()
        .map(|l| unescape(l.rsplit("  ").next().expect("a path column")).expect("the escaped form"))
        .collect();
    assert_eq!(from_table, want);
    for f in &want {
        let path = Path::new(name(f));
        let check = text(&run_inert(bin_with(&["check"], path), b"", false));
        let shown = check
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("file:"))
            .expect("file line");
        assert_eq!(&unescape(shown.trim_start()).expect("the escaped form"), f);
    }
    let json = {
        let mut cmd = bin();
        cmd.args(["ls", "--all", "--json", "--agent-dir"]).arg(&c.agent);
        run_inert(cmd, b"", true)
    };
    let mut from_json = std::collections::BTreeSet::new();
    for line in json.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).expect("JSON");
        let path = v["path"].as_str().expect("path").to_owned();
        let raw = std::str::from_utf8(line).expect("UTF-8");
        let exact = match v.get("pathBytes") {
            Some(b) => {
                // Right after `path`: `{"path":"…","pathBytes":[…]`.
                let (head, _) = raw.split_once(",\"pathBytes\":[").expect("pathBytes");
                let first: String = serde_json::from_str(head.strip_prefix("{\"path\":").expect("path first"))
                    .expect("one string before pathBytes");
                assert_eq!(first, path);
                let bytes: Vec<u8> = b
                    .as_array()
                    .expect("an array")
                    .iter()
                    .map(|n| u8::try_from(n.as_u64().expect("a number")).expect("a byte"))
                    .collect();
                assert!(
                    std::str::from_utf8(&bytes).is_err(),
                    "pathBytes only for a name that is not UTF-8"
                );
                assert_eq!(String::from_utf8_lossy(&bytes), path, "path is pi's lossy form");
                bytes
            }
            None => {
                assert!(!raw.contains("\"pathBytes\""), "{raw}");
                path.into_bytes()
            }
        };
        assert!(Path::new(name(&exact)).is_file(), "{exact:?} names the file");
        from_json.insert(exact);
    }
    assert_eq!(from_json, want);
    let mut cmd = bin();
    cmd.args(["find", "s\x1b[2J", "--agent-dir"]).arg(&c.agent);
    let find = text(&run_inert(cmd, b"", false));
    assert!(want.contains(&unescape(find.trim_end()).expect("escaped")), "{find}");
}

/// The write commands and `gen`, on copies under hostile names: what they print is inert
/// too (file names, ids, recovery notes).
#[test]
fn write_commands_print_nothing_a_terminal_acts_on() {
    let c = corpus();
    let out_dir = tempfile::tempdir().expect("tempdir");
    for n in NAMES {
        let f = c.folder.join(name(n));
        let run = |args: &[&OsStr], stdin: &[u8]| {
            let mut cmd = bin();
            cmd.arg(args[0]).arg(&f).args(&args[1..]);
            run_inert(cmd, stdin, false)
        };
        let a = |s: &'static str| -> &'static OsStr { OsStr::new(s) };
        run(&[a("recover")], b"");
        run(&[a("label"), a("m1\x1b[31m"), a("new\x1b]0;L\x07")], b"");
        run(&[a("label"), a("no\x1b[2J"), a("x")], b"");
        run(&[a("name"), a("again\x1b]0;N\x07\u{202e}")], b"");
        run(
            &[a("append")],
            br#"{"role":"user","content":"more \u001b[2J","timestamp":3}"#,
        );
        run(&[a("append")], b"not json \x1b[2J");
        run(&[a("branch"), a("m1\x1b[31m")], b"");
        run(&[a("branch"), a("no\x1b[2J")], b"");
        let branched = run(&[a("branch"), a("l1")], b"");
        assert!(
            String::from_utf8_lossy(&branched.stderr).contains("the path to l1 holds no"),
            "{}",
            String::from_utf8_lossy(&branched.stderr)
        );
        run(
            &[
                a("fork"),
                a("--cwd"),
                a("/f\x1b]0;T\x07"),
                a("--session-dir"),
                out_dir.path().as_os_str(),
            ],
            b"",
        );
        run(&[a("migrate")], b"");
        // A torn append's journal, to be reported by the next write with the file name.
        let journal = c.folder.join(name(&[b".", n, b".append"].concat()));
        std::fs::write(journal, b"\x1b[2J").expect("journal");
        let noted = run(&[a("name"), a("x")], b"");
        assert!(!noted.stderr.is_empty(), "the stale journal is reported");
    }
    for n in [&b"g\x1b]0;G\x07\xe9.jsonl"[..], b"m\x1b[2J.jsonl"] {
        let mut cmd = bin();
        cmd.args(["gen", "session"])
            .arg(out_dir.path().join(name(n)))
            .args(["--size", "8K"]);
        let out = run_inert(cmd, b"", false);
        let shown = text(&out);
        let path = shown.split(": ").next().expect("the path");
        assert_eq!(
            unescape(path).expect("escaped"),
            out_dir.path().join(name(n)).as_os_str().as_bytes()
        );
    }
    let mut cmd = bin();
    cmd.args(["gen", "tree"]).arg(out_dir.path().join("t\x1b[2J")).args([
        "--sessions",
        "2",
        "--folders",
        "1",
        "--size",
        "8K",
    ]);
    run_inert(cmd, b"", false);
}

/// What a command printed to a pseudo-terminal (standard input, output and error all on
/// it, 120 columns), and how it ended.
struct OnTty {
    out: Vec<u8>,
    code: Option<i32>,
}

/// Run `cmd` on a new pseudo-terminal, as a user at a terminal runs it: `TERM` set,
/// `NO_COLOR` only when `!color`, `PAGER=cat` (the pager sees what the command prints).
/// Output post-processing is off (`\n` stays `\n`). Killed after 60 s.
fn on_tty(mut cmd: Command, color: bool) -> OnTty {
    let (master, slave) = crate::common::pty();
    let fd = || Stdio::from(std::fs::File::from(slave.try_clone().expect("dup")));
    cmd.stdin(fd()).stdout(fd()).stderr(fd());
    cmd.env("TERM", "xterm-256color").env("PAGER", "cat").env("TZ", "UTC");
    if color {
        cmd.env_remove("NO_COLOR");
    } else {
        cmd.env("NO_COLOR", "1");
    }
    let what = format!("{cmd:?}");
    let mut child = cmd.spawn().expect("runs");
    // The terminal's other end must be closed here for the read to end with the child.
    drop(cmd);
    drop(slave);
    let pid = child.id();
    let (done, watchdog) = std::sync::mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        if watchdog.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid as i32).expect("pid"),
                rustix::process::Signal::KILL,
            );
        }
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 1 << 14];
    loop {
        match rustix::io::read(&master, &mut buf) {
            Ok(0) | Err(rustix::io::Errno::IO) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => panic!("{what}: reading the terminal: {e}"),
        }
    }
    let status = child.wait().expect("wait");
    let _ = done.send(());
    dog.join().expect("watchdog");
    assert!(
        status.code().is_some(),
        "{what}: killed ({status:?}), a hang?\n{}",
        escape_bytes(&out)
    );
    OnTty {
        out,
        code: status.code(),
    }
}

/// The sequences pi-session itself writes taken out of `out`: colours (SGR: bold, dim,
/// italic, underline, reverse, their resets, the 16 colours and the default) and the
/// progress bar's redraw (`\r` then erase-line); any other escape sequence is left for
/// [`attack`] to find. Also returns how many colour sequences were taken out.
fn without_own_colours(out: &[u8]) -> (Vec<u8>, usize) {
    let own = |params: &[u8]| {
        params.split(|&b| b == b';').all(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|p| if p.is_empty() { Some(0) } else { p.parse::<u32>().ok() })
                .is_some_and(|n| matches!(n, 0..=4 | 7 | 22..=24 | 27 | 30..=37 | 39 | 90..=97))
        })
    };
    let mut clean = Vec::with_capacity(out.len());
    let mut colours = 0;
    let mut i = 0;
    while i < out.len() {
        if out[i..].starts_with(b"\r\x1b[2K") {
            i += 5;
            continue;
        }
        if out[i..].starts_with(b"\x1b[") {
            let end = out[i + 2..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b';'))
                .map(|k| i + 2 + k);
            if let Some(e) = end
                && out[e] == b'm'
                && own(&out[i + 2..e])
            {
                i = e + 1;
                colours += 1;
                continue;
            }
        }
        clean.push(out[i]);
        i += 1;
    }
    (clean, colours)
}

/// Every command, reading and writing, on the hostile session under hostile names, run on
/// a pseudo-terminal with colours and without (issue #35 item 5): nothing reaches the
/// terminal that it would act on (no control but `\n` and `\t`, no C1, no invisible or
/// direction character, no escape sequence but pi-session's own colours, which
/// `NO_COLOR` turns off too), and every run ends.
#[test]
fn every_command_on_a_terminal_prints_nothing_the_terminal_acts_on() {
    let c = corpus();
    let out_dir = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("cache");
    let sessions = c.agent.join("sessions");
    let o = |s: &str| std::ffi::OsString::from(s);
    let mut runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec![o("ls"), o("--all")],
        vec![o("ls"), o("--all"), o("--long"), o("--show-skipped")],
        vec![o("ls"), o("--all"), o("--tree")],
        vec![o("find"), o("s\x1b[2J")],
        vec![o("search"), o("hello"), sessions.clone().into()],
        vec![o("search"), o("-C"), o("2"), o("FAKE"), sessions.clone().into()],
        vec![
            o("search"),
            o("-i"),
            o("evil"),
            o("--thinking"),
            sessions.clone().into(),
        ],
        vec![o("search"), o("-c"), o("l"), sessions.clone().into()],
        vec![o("search"), o("-l"), o("name"), sessions.clone().into()],
        vec![o("search"), o("--json"), o("hello"), sessions.clone().into()],
        vec![o("usage"), sessions.clone().into()],
        vec![o("usage"), o("session"), sessions.clone().into()],
        vec![o("usage"), o("model"), sessions.clone().into()],
        vec![o("usage"), o("monthly"), o("--json"), sessions.clone().into()],
    ];
    for a in &mut runs {
        if a[0] == "ls" || a[0] == "find" {
            a.extend([o("--agent-dir"), c.agent.clone().into()]);
        }
    }
    let files: Vec<PathBuf> = NAMES[..3]
        .iter()
        .map(|n| c.folder.join(name(n)))
        .chain([c.cycle.clone()])
        .collect();
    for f in &files {
        let with = |args: &[&str]| -> Vec<std::ffi::OsString> {
            let mut v = vec![o(args[0]), f.clone().into()];
            v.extend(args[1..].iter().map(|a| o(a)));
            v
        };
        runs.extend([
            with(&["tree"]),
            with(&["tree", "--json"]),
            with(&["context"]),
            with(&["check"]),
            with(&["check", "--json"]),
            with(&["show"]),
            with(&["show", "--no-pager", "--thinking"]),
            with(&["export", "--format", "md"]),
            with(&["export", "--format", "html"]),
            with(&["export", "--format", "jsonl"]),
            with(&["dump"]),
            with(&["recover"]),
            with(&["label", "m1\x1b[31m", "new\x1b]0;L\x07\u{202e}"]),
            with(&["label", "no\x1b[2J", "x"]),
            with(&["name", "again\x1b]0;N\x07\u{200b}"]),
            with(&[
                "append",
                r#"{"role":"user","content":"more \u001b[2J \u200b","timestamp":3}"#,
            ]),
            with(&["append", "not json \x1b[2J"]),
            with(&["branch", "m1\x1b[31m"]),
            with(&["migrate"]),
        ]);
        let mut fork = with(&["fork", "--cwd", "/f\x1b]0;T\x07"]);
        fork.extend([o("--session-dir"), out_dir.path().into()]);
        runs.push(fork);
    }
    runs.push(vec![
        o("gen"),
        o("session"),
        out_dir.path().join(name(b"g\x1b]0;G\x07\xe2\x80\xae.jsonl")).into(),
        o("--size"),
        o("8K"),
    ]);
    let mut seen_colour = false;
    for args in &runs {
        for color in [true, false] {
            let mut cmd = bin();
            cmd.args(args).env("PI_SESSION_CACHE_DIR", cache.path());
            let t = on_tty(cmd, color);
            let what = format!("{args:?} (colour {color}, exit {:?})", t.code);
            let (clean, colours) = without_own_colours(&t.out);
            seen_colour |= color && colours > 0;
            assert!(
                color || colours == 0,
                "{what}: colours with NO_COLOR:\n{}",
                escape_bytes(&t.out)
            );
            if let Some(a) = attack(&clean) {
                panic!("{what}: {a}:\n{}", escape_bytes(&t.out));
            }
        }
    }
    assert!(
        seen_colour,
        "colours were drawn on the terminal (the check above sees them)"
    );
}

/// A run over a few sessions is over before a progress bar would help: none is drawn on
/// the terminal (#36: a bar flashed for 6 files, and `search` drew it again under its
/// results).
#[test]
fn a_quick_run_draws_no_progress_bar() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let cache = tempfile::tempdir().expect("cache");
    let sessions = demo.join("sessions");
    let runs: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec![
            "ls".as_ref(),
            "--all".as_ref(),
            "--agent-dir".as_ref(),
            demo.as_os_str(),
        ],
        vec!["search".as_ref(), "the".as_ref(), sessions.as_os_str()],
        vec!["usage".as_ref(), sessions.as_os_str()],
    ];
    for args in runs {
        let mut cmd = bin();
        cmd.args(&args).env("PI_SESSION_CACHE_DIR", cache.path());
        let t = on_tty(cmd, false);
        assert_eq!(t.code, Some(0), "{args:?}");
        let out = String::from_utf8_lossy(&t.out);
        assert!(
            !out.contains("\x1b[2K") && !out.contains(" sessions ") && !out.contains('█'),
            "{args:?} drew a bar: {}",
            escape_bytes(&t.out)
        );
    }
}
