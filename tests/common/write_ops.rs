//! One fixed, deterministic sequence of every write operation, shared by the write
//! conformance test and `examples/write_ops.rs` (which produces the files the goldens are
//! made from with pi's own dump).

use pi_session::{Entropy, Key, Value, Writer};
use std::path::{Path, PathBuf};

fn v(text: &str) -> Value<'static> {
    pi_session::Value::parse(text.as_bytes())
        .expect("literal JSON")
        .into_owned()
}

/// Files written for one corpus file: the appended-to copy, and (when possible) a branched
/// and a forked session.
pub struct Written {
    /// The corpus file's copy after every append.
    pub main: PathBuf,
    /// The file `create_branched_session` wrote.
    pub branched: Option<PathBuf>,
    /// The file `fork_from` wrote.
    pub forked: Option<PathBuf>,
}

/// Copy `src` into `dir` and run every write operation on it. `None` when pi would not
/// open it for writing (not a session).
pub fn run(src: &Path, dir: &Path, seed: u64) -> Option<Written> {
    let main = dir.join(src.file_name().expect("file name"));
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::copy(src, &main).expect("copy");
    let mut w = match Writer::open(&main, Some(dir), Entropy::seeded(seed, 1_767_225_600_000)) {
        Ok(w) => w,
        Err(_) => {
            let _ = std::fs::remove_file(&main);
            return None;
        }
    };
    let first = w
        .session()
        .entries()
        .iter()
        .find_map(|&p| w.session().record(p).id.as_str().map(str::to_owned));
    let user = w
        .append_message(v(
            r#"{"role":"user","content":"write test: hello \ud83d\ude00 \ud800","timestamp":1767225600000}"#,
        ))
        .expect("append user");
    let assistant = w
        .append_message(v(
            r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"anthropic","model":"claude-x","usage":{"input":1.5e3,"output":20},"stopReason":"stop","timestamp":1767225601000}"#,
        ))
        .expect("append assistant");
    w.append_thinking_level_change("high").expect("thinking");
    w.append_model_change("openai", "gpt-5").expect("model");
    if let Some(first) = &first {
        w.append_label_change(first, Some("first")).expect("label");
    }
    w.append_label_change(&user, Some("greeting")).expect("label");
    w.append_label_change(&assistant, Some("answer")).expect("label");
    w.append_label_change(&assistant, None).expect("clear label");
    w.append_session_info("Write\r\ntest  name ").expect("name");
    w.append_custom_entry("ext-state", Some(v(r#"{"k":1,"nested":[true,null]}"#)))
        .expect("custom");
    w.append_custom_message_entry("note", v(r#""a note for the model""#), true, Some(v(r#"{"d":1}"#)))
        .expect("custom message");
    w.append_context_edit(&assistant, Some(v(r#""edited answer""#)))
        .expect("edit assistant");
    w.append_context_edit(&user, Some(v(r#"[{"type":"text","text":"edited question"}]"#)))
        .expect("edit user");
    w.append_usage(
        "summary",
        "anthropic",
        "claude-x",
        v(r#"{"input":10,"output":2,"cost":{"total":0.0001}}"#),
        Some("n"),
    )
    .expect("usage");
    // pi's compaction needs a context it can build (pi throws where we refuse).
    let _ = w.append_compaction(
        "compacted so far",
        Some(&user),
        4321.0,
        Some(v(r#"{"files":[]}"#)),
        Some(false),
        None,
    );
    w.branch_with_summary(Some(&user), "abandoned the rest", None, Some(true), None)
        .expect("branch with summary");
    let last = w
        .append_message(v(
            r#"{"role":"user","content":"after the branch","timestamp":1767225609000}"#,
        ))
        .expect("append after branch");
    w.session_mut().branch(&assistant).expect("navigate");
    let tip = w
        .append_message(v(r#"{"role":"user","content":"on the old branch"}"#))
        .expect("append on old branch");
    let _ = (Key::Null, tip);
    drop(w);

    let mut b = Writer::open(&main, Some(dir), Entropy::seeded(seed + 1, 1_767_312_000_000)).expect("reopen");
    let branched = b.create_branched_session(&last).expect("branched session");
    let forked = Writer::fork_from(
        &main,
        "/tmp/forked-project",
        &dir.join("forked"),
        None,
        Entropy::seeded(seed + 2, 1_767_398_400_000),
    )
    .ok()
    .and_then(|f| f.file().map(Path::to_path_buf));
    Some(Written { main, branched, forked })
}
