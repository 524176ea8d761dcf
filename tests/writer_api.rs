//! The Writer's session life cycle as pi's SessionManager has it.

use pi_session::dirs::{Env, Flavor};
use pi_session::{Entropy, ErrorKind, Value, Writer};

fn msg(role: &str, text: &str) -> Value<'static> {
    pi_session::value::parse(format!(r#"{{"role":"{role}","content":"{text}"}}"#).as_bytes())
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
    assert!(matches!(e.kind(), ErrorKind::InvalidInput { .. }), "{e}");
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
