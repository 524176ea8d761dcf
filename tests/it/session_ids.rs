//! A SESSION argument may be a session id or a unique prefix of one, looked up with `ls`'s
//! directory rules: the current project first, then every project; an ambiguous prefix
//! exits 2 and lists the candidates; a path that exists is always the path.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A header and one user message, for a session with this id and cwd.
fn session_text(id: &str, cwd: &Path) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-11-25T19:00:55.440Z\",\"cwd\":\"{}\"}}\n\
         {{\"type\":\"message\",\"id\":\"aa000001\",\"parentId\":null,\"timestamp\":\"2025-11-25T19:00:56.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hello from {id}\",\"timestamp\":1}}}}\n",
        cwd.display()
    )
}

struct Place {
    _dir: tempfile::TempDir,
    agent: PathBuf,
    /// The current project's working directory.
    here: PathBuf,
}

/// An agent dir with sessions in two projects: `here` (the current directory of the runs)
/// and `elsewhere`.
fn place(here_ids: &[&str], elsewhere_ids: &[&str]) -> Place {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = dir.path().join("agent");
    let here = dir.path().join("here");
    let elsewhere = dir.path().join("elsewhere");
    for (cwd, ids) in [(&here, here_ids), (&elsewhere, elsewhere_ids)] {
        std::fs::create_dir_all(cwd).expect("mkdir");
        let env = pi_session::dirs::Env {
            cwd: cwd.clone(),
            ..Default::default()
        };
        let folder = env.default_session_dir(cwd, &agent);
        std::fs::create_dir_all(&folder).expect("mkdir");
        for id in ids {
            let f = folder.join(format!("2025-11-25T19-00-55-440Z_{id}.jsonl"));
            std::fs::write(f, session_text(id, cwd)).expect("write");
        }
    }
    Place { _dir: dir, agent, here }
}

fn run(p: &Place, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .current_dir(&p.here)
        .env("PI_CODING_AGENT_DIR", &p.agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .args(args)
        .output()
        .expect("run pi-session")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_session_is_named_by_its_id_or_a_unique_prefix() {
    let p = place(
        &["019abc63-0000-7000-8000-000000000001"],
        &[
            "019abd00-0000-7000-8000-000000000002",
            "019abd00-1111-7000-8000-000000000003",
        ],
    );
    // A prefix of a session in the current project.
    let out = run(&p, &["show", "019abc", "--no-pager"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("hello from 019abc63"),
        "{}",
        text(&out.stdout)
    );
    // In another project, found by the search of every project.
    let out = run(&p, &["context", "019abd00-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A whole id.
    let out = run(&p, &["check", "019abd00-0000-7000-8000-000000000002", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("019abd00-0000-7000-8000-000000000002.jsonl"));
    // Ambiguous: exit 2, both candidates named, nothing on stdout.
    let out = run(&p, &["check", "019abd"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("ambiguous")
            && err.contains("019abd00-0000-7000-8000-000000000002")
            && err.contains("019abd00-1111-7000-8000-000000000003"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Nothing begins with it: the answer is no.
    let out = run(&p, &["check", "ffff"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no session's id begins with it"));
    // `find` takes a prefix too, and prints the file.
    let out = run(&p, &["find", "019abd00-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .trim_end()
            .ends_with("_019abd00-1111-7000-8000-000000000003.jsonl")
    );
    let out = run(&p, &["find", "019abd"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // Too short to be taken as a prefix.
    let out = run(&p, &["check", "019"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn the_current_project_comes_first_and_a_file_is_always_the_file() {
    let p = place(&["4bd0aaaa-here"], &["4bd0bbbb-elsewhere"]);
    // `4bd0` begins one id here and one elsewhere: the project's own wins.
    let out = run(&p, &["context", "4bd0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&p, &["show", "4bd0", "--no-pager"]);
    assert!(
        text(&out.stdout).contains("hello from 4bd0aaaa-here"),
        "{}",
        text(&out.stdout)
    );
    // A file named like a prefix is that file.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/branches.jsonl"),
        p.here.join("4bd0"),
    )
    .expect("copy");
    let out = run(&p, &["check", "4bd0", "--json"]);
    assert!(
        text(&out.stdout).starts_with("{\"file\":\"4bd0\""),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn every_verb_that_takes_a_session_takes_the_folder_flags_of_ls() {
    // `ls --all --agent-dir D` then `show ID --agent-dir D`: the README's own flow (#36:
    // `show` refused `--agent-dir`). The environment names no agent dir here.
    let p = place(&["7a7a0000-0000-7000-8000-000000000001"], &[]);
    let agent = p.agent.to_str().expect("UTF-8");
    let id = "7a7a0000";
    let leaf = "aa000001";
    let cases: Vec<Vec<&str>> = vec![
        vec!["show", id, "--no-pager"],
        vec!["tree", id],
        vec!["export", id, "--format", "md"],
        vec!["context", id],
        vec!["check", id],
        vec!["dump", id, "--compact"],
        vec!["recover", id],
        vec!["label", id, leaf, "checked"],
        vec!["name", id, "the name"],
        vec!["append", id, r#"{"role":"user","content":"more"}"#],
        vec!["migrate", id],
        vec!["branch", id, leaf],
        vec!["fork", id, "--cwd", "/tmp/elsewhere"],
        vec!["find", id],
    ];
    for args in cases {
        let mut all = args.clone();
        all.extend(["--agent-dir", agent, "--flavor", "pi"]);
        let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .current_dir(&p.here)
            .env("PI_CODING_AGENT_DIR", "/nonexistent/agent")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .args(&all)
            .output()
            .expect("run pi-session");
        assert_eq!(out.status.code(), Some(0), "{all:?}: {}", text(&out.stderr));
    }
    // Without the flag the id names nothing (the environment's agent dir is empty).
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .current_dir(&p.here)
        .env("PI_CODING_AGENT_DIR", "/nonexistent/agent")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .args(["show", id])
        .output()
        .expect("run pi-session");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // `--session-dir` names a flat folder to look in.
    let folder = pi_session::dirs::Env::default().default_session_dir(&p.here, &p.agent);
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .current_dir(&p.here)
        .env("PI_CODING_AGENT_DIR", "/nonexistent/agent")
        .args(["context", id, "--session-dir", folder.to_str().expect("UTF-8")])
        .output()
        .expect("run pi-session");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `pi-session man --dir DIR` installs every page the main page names (#36: it referred to
/// `pi-session-ls(1)` and others that nothing installed).
#[test]
fn man_installs_every_page_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run pi-session");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let main = std::fs::read_to_string(dir.path().join("pi-session.1")).expect("the main page");
    let mut named = 0;
    for w in main.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '\\')) {
        // (roff writes the page names as pi\-session\-ls.)
        let w = w.replace("\\-", "-");
        if let Some(cmd) = w.strip_prefix("pi-session-")
            && !cmd.is_empty()
        {
            assert!(
                dir.path().join(format!("pi-session-{cmd}.1")).exists(),
                "pi-session-{cmd}(1) is named but not installed"
            );
            named += 1;
        }
    }
    assert!(named > 10, "the main page names the commands' pages: {named}");
    assert!(text(&out.stdout).lines().count() > 10);
}
