//! The Writer's session life cycle as pi's SessionManager has it.

use pi_session::dirs::{Env, Flavor};
use pi_session::{Entropy, ErrorKind, Recovery, Value, Writer};

fn msg(role: &str, text: &str) -> Value<'static> {
    pi_session::Value::parse(format!(r#"{{"role":"{role}","content":"{text}"}}"#).as_bytes())
        .expect("json")
        .into_owned()
}

#[test]
fn a_new_session_is_written_only_with_its_first_conversation_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = Writer::create("/work/proj", dir.path(), Entropy::seeded(1, 1_767_225_600_000)).expect("create");
    let file = w.file().expect("a file name").to_path_buf();
    w.append_model_change("anthropic", "claude").expect("model");
    w.append_thinking_level_change("low").expect("thinking");
    assert!(!file.exists(), "setup entries alone must not create the file");
    w.append_message(msg("user", "hi")).expect("user");
    assert!(file.exists() && w.is_flushed());
    let s = pi_session::Session::open(&file).expect("opens");
    assert_eq!(s.entries().len(), 3);
    assert_eq!(s.file_change(), pi_session::FileChange::None);
    // Ids and names follow pi's rules.
    assert!(w.new_session(Some("-bad"), None).is_err());
    let next = w
        .new_session(Some("my.id_1"), Some("/x/parent.jsonl"))
        .expect("new")
        .expect("path");
    assert!(next.to_string_lossy().ends_with("_my.id_1.jsonl"));
}

#[test]
fn in_memory_sessions_never_touch_disk() {
    let mut w = Writer::in_memory("/w", Entropy::default());
    let a = w.append_message(msg("user", "q")).expect("append");
    let b = w.append_message(msg("assistant", "a")).expect("append");
    assert!(w.file().is_none());
    assert_eq!(
        w.session().context(w.session().leaf()).expect("context").messages.len(),
        2
    );
    w.branch(&a).expect("branch");
    let c = w.append_message(msg("user", "q2")).expect("append");
    let path = w.session().branch_path(None).expect("path");
    assert_eq!(path.len(), 2);
    assert!(w.session().find(&b).is_some() && w.session().find(&c).is_some());
    // pi's checks.
    assert!(matches!(
        w.append_label_change("nope", Some("x")).expect_err("missing").kind(),
        ErrorKind::EntryNotFound { .. }
    ));
    let e = w.append_context_edit(&b, None).expect_err("b is off the active branch");
    assert!(matches!(e.kind(), ErrorKind::InvalidInput(_)), "{e}");
    w.append_context_edit(&a, None).expect("a is on the branch");
}

#[test]
fn continue_recent_picks_the_newest_session_of_the_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut paths = Vec::new();
    for (i, seed) in [(0u64, 10u64), (1, 11)] {
        let mut w = Writer::create(
            "/p",
            dir.path(),
            Entropy::seeded(seed, 1_767_225_600_000 + i as i64 * 60_000),
        )
        .expect("create");
        w.append_message(msg("user", &format!("session {i}"))).expect("append");
        paths.push(w.file().expect("file").to_path_buf());
    }
    // Make the first one the most recently modified.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&paths[0])
        .expect("open")
        .set_modified(later)
        .expect("mtime");
    let env = Env::from_process(Flavor::Pi).expect("env");
    let w = Writer::continue_recent(&env, std::path::Path::new("/p"), Some(dir.path()), Entropy::default())
        .expect("continue");
    assert_eq!(w.file(), Some(paths[0].as_path()));
    let mut w = w;
    w.set_session_file(&paths[1]).expect("switch");
    assert_eq!(w.file(), Some(paths[1].as_path()));
}

/// A session file whose last append was torn by a kill, with the journal that append left:
/// returns (the file, its bytes before the append).
fn torn_session(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let mut w = Writer::create("/p", dir, Entropy::seeded(3, 1_767_225_600_000)).expect("create");
    w.append_message(msg("user", "before the crash")).expect("append");
    let created = w.file().expect("file").to_path_buf();
    let path = dir.join(name);
    std::fs::rename(&created, &path).expect("rename");
    let old = std::fs::read(&path).expect("read");
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"0badf00d\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:09.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
        "z".repeat(30_000)
    );
    let line = line.as_bytes();
    // The journal format of src/journal.rs: header line, then the line's first and last bytes.
    let (head, tail) = (&line[..2048], &line[line.len() - 64..]);
    let mut journal = format!(
        "pi-session append journal v1 old={} len={} head=2048 tail=64\n",
        old.len(),
        line.len()
    )
    .into_bytes();
    journal.extend_from_slice(head);
    journal.extend_from_slice(tail);
    std::fs::write(pi_session::journal_path(&path), journal).expect("journal");
    let torn = 8192 - old.len() % 4096;
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
    std::io::Write::write_all(&mut f, &line[..torn]).expect("write");
    (path, old)
}

#[test]
fn every_way_of_opening_a_file_for_writing_first_undoes_a_torn_append() {
    let undone = |path: &std::path::Path, old: &[u8]| {
        assert_eq!(std::fs::read(path).expect("read"), old, "{}", path.display());
        assert!(!pi_session::journal_path(path).exists());
    };
    let truncated = |r: &Recovery| matches!(r, Recovery::Truncated { .. });
    let env = Env::from_process(Flavor::Pi).expect("env");

    // Writer::open, and its recovery report.
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, old) = torn_session(dir.path(), "a.jsonl");
    assert!(truncated(
        &pi_session::pending_recovery(&path)
            .expect("pending")
            .expect("a journal")
    ));
    let w = Writer::open(&path, None, Entropy::default()).expect("open");
    assert!(truncated(w.recovery()), "{:?}", w.recovery());
    undone(&path, &old);
    assert_eq!(
        Writer::open(&path, None, Entropy::default()).expect("open").recovery(),
        &Recovery::Clean
    );

    // continue_recent (the only session of its folder).
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, old) = torn_session(dir.path(), "b.jsonl");
    let w = Writer::continue_recent(&env, std::path::Path::new("/p"), Some(dir.path()), Entropy::default())
        .expect("continue");
    assert_eq!(w.file(), Some(path.as_path()));
    undone(&path, &old);

    // set_session_file.
    let (path, old) = torn_session(dir.path(), "c.jsonl");
    let mut w = w;
    w.set_session_file(&path).expect("switch");
    assert!(truncated(w.recovery()));
    undone(&path, &old);

    // An append by a writer that opened the file before the crash.
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, old) = torn_session(dir.path(), "d.jsonl");
    let journal = std::fs::read(pi_session::journal_path(&path)).expect("journal");
    let torn = std::fs::read(&path).expect("read");
    std::fs::write(&path, &old).expect("write");
    std::fs::remove_file(pi_session::journal_path(&path)).expect("rm");
    let mut w = Writer::open(&path, None, Entropy::default()).expect("open");
    std::fs::write(&path, &torn).expect("write");
    std::fs::write(pi_session::journal_path(&path), journal).expect("journal");
    w.append_message(msg("user", "after the crash")).expect("append");
    let now = std::fs::read(&path).expect("read");
    assert!(now.starts_with(&old) && now.ends_with(b"\"content\":\"after the crash\"}}\n"));
    assert_eq!(now[old.len()..].iter().filter(|&&b| b == b'\n').count(), 1);

    // migrate_file and the CLI.
    let (path, old) = torn_session(dir.path(), "e.jsonl");
    assert_eq!(
        pi_session::migrate_file(&path).expect("migrate"),
        pi_session::FileChange::None
    );
    undone(&path, &old);
    let (path, old) = torn_session(dir.path(), "f.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["recover", "--json"])
        .arg(&path)
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"action\":\"truncated\""), "{text}");
    assert!(text.contains(&format!("\"length\":{}", old.len())), "{text}");
    undone(&path, &old);
}

/// Entries serialised elsewhere (a JavaScript host's `JSON.stringify`): the header and the
/// lines given go into the file byte for byte, with pi's lazy first write.
#[test]
fn a_host_can_give_the_header_and_the_entry_lines_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("host.jsonl");
    let mut w = Writer::create("/p", dir.path(), Entropy::default()).expect("create");
    let header = br#"{"type":"session","version":3,"id":"h1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    w.start_session(header, Some(file.clone())).expect("header");
    let setup = br#"{"type":"model_change","id":"aaaaaaaa","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","provider":"p","modelId":"m"}"#;
    w.append_line(setup).expect("setup line");
    assert!(!file.exists(), "no conversation yet: nothing written");
    let user = br#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    w.append_line(user).expect("user line");
    let mut want = Vec::new();
    for l in [&header[..], &setup[..], &user[..]] {
        want.extend_from_slice(l);
        want.push(b'\n');
    }
    assert_eq!(std::fs::read(&file).expect("written"), want);
    assert_eq!(w.session().leaf(), &pi_session::Key::str("bbbbbbbb"));
    // Anything but one JSON object on one line is refused, and nothing is written.
    for bad in [&b"[1]"[..], b"{\"a\":1}\n{\"b\":2}", b"{\"a\":", b"{\"a\":1}\r"] {
        let e = w.append_line(bad).expect_err("refused");
        assert!(matches!(e.kind(), ErrorKind::InvalidInput(_)), "{e}");
    }
    assert_eq!(std::fs::read(&file).expect("unchanged"), want);
    assert!(
        w.start_session(b"{\"type\":\"message\"}", None).is_err(),
        "a header must be a session line"
    );
}

/// pi's open of a zero-byte file writes the new header at once (`write_now`).
#[test]
fn write_now_writes_a_session_that_has_no_conversation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("empty.jsonl");
    std::fs::write(&file, b"").expect("empty");
    let mut w = Writer::create("/p", dir.path(), Entropy::default()).expect("create");
    let header = br#"{"type":"session","version":3,"id":"e1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    w.start_session(header, Some(file.clone())).expect("header");
    w.write_now().expect("written");
    assert!(w.is_flushed());
    assert_eq!(std::fs::read(&file).expect("read"), [&header[..], b"\n"].concat());
    assert!(
        Writer::in_memory("/p", Entropy::default()).write_now().is_err(),
        "no file to write"
    );
}

/// pi's `setSessionFile` on a session that does not persist: the file's session, migrated
/// and with its torn last line ended, in memory; appends never reach the file.
#[test]
fn an_in_memory_writer_of_a_file_never_writes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("v2.jsonl");
    let text = "{\"type\":\"session\",\"version\":2,\"id\":\"v2\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
        {\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"hookMessage\",\"content\":\"x\"}}";
    std::fs::write(&file, text).expect("write");
    let s = pi_session::Session::open(&file).expect("open");
    let mut w = Writer::in_memory_of("/p", &s, Entropy::default()).expect("in memory");
    let id = w.append_message(msg("user", "hi")).expect("append");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        text,
        "the file is untouched"
    );
    assert!(w.file().is_none());
    let path = w.session().branch_path(None).expect("branch");
    assert_eq!(path.len(), 2, "the new entry's parent is the file's last entry");
    assert_eq!(w.session().record(path[1]).id, pi_session::Key::str(&id));
    let first = w.session().value(path[0]).expect("value");
    assert_eq!(
        first.get("message").and_then(|m| m.get("role")).and_then(Value::as_str),
        Some("custom")
    );
}
