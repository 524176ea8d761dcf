//! `pi-session show`: a session read as a transcript. A hostile fixture against its
//! expected output (checked in), the flags that change it, and the real sessions of
//! `../shared/corpus/real` (skipped when absent): one header per message on the branch,
//! nothing from the session that a terminal would act on, no image data.

use crate::common::{strip_sgr, terminal_safe};
use pi_session::{EntryType, Session};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn show(file: &Path, args: &[&str]) -> String {
    show_in(file, args, "UTC")
}

/// [`show`] with the time zone `tz`.
fn show_in(file: &Path, args: &[&str], tz: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg("show")
        .arg(file)
        .args(args)
        .env("TZ", tz)
        .output()
        .expect("run pi-session");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn a_hostile_session_reads_as_its_expected_transcript() {
    let file = root().join("corpus/show/hostile.jsonl");
    let got = show(&file, &[]);
    let want = std::fs::read_to_string(root().join("corpus/golden/show/hostile.txt")).expect("golden");
    assert_eq!(got, want);
    assert!(terminal_safe(&got));
    // The 1.2 MB image is its type and size; thinking and the rest of the tool output
    // wait for their flags.
    assert!(got.contains("[image/png 1.2 MB]") && !got.contains("AAAAAAAA"));
    assert!(got.contains("[thinking: 3 lines hidden, --thinking]") && got.contains("(14 more lines, --full)"));
    // pi's structured system prompt shows its sections' text.
    let typed = show(&root().join("corpus/valid/all-entry-types.jsonl"), &[]);
    assert!(
        typed.contains("── system") && typed.contains("You are an expert coding assistant."),
        "{typed}"
    );
    assert!(
        typed.contains("· thinking level: medium") && typed.contains("label: checkpoint-1"),
        "{typed}"
    );
    let full = show(&file, &["--full", "--thinking"]);
    assert!(terminal_safe(&full));
    assert!(full.contains("line 20") && full.contains("The user wants") && !full.contains("more lines"));
    // Colour adds SGR sequences and nothing else: stripped, the plain transcript.
    let colored = show(&file, &["--color", "always"]);
    assert_ne!(colored, got);
    assert_eq!(strip_sgr(&colored), got);
    // Another branch: up to the first assistant message.
    let early = show(&file, &["--leaf", "a0000003"]);
    assert!(early.contains("a0000003") && !early.contains("a0000004"));
    // A piped run never starts the pager: the output above is the transcript itself.
    let missing = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["show", "--leaf", "nope"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(1), "an unknown --leaf is a no");
    // A short id names the one entry it begins; one that begins several is refused with
    // them listed.
    let ambiguous = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["show", "--leaf", "a00000"])
        .arg(&file)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&ambiguous.stderr);
    assert_eq!(ambiguous.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ambiguous") && err.contains("a0000002") && err.contains("a0000008"),
        "{err}"
    );
}

#[test]
fn real_sessions_read_as_transcripts() {
    let Some(files) = crate::common::real_sessions() else {
        return;
    };
    for f in &files {
        let got = show(f, &[]);
        assert!(terminal_safe(&got), "{}", f.display());
        let s = Session::open(f).expect("opens");
        let branch = s.branch_path(None).expect("branch");
        let headed = branch
            .iter()
            .filter(|&&p| {
                matches!(
                    s.record(p).ty,
                    EntryType::Message | EntryType::Compaction | EntryType::BranchSummary | EntryType::CustomMessage
                )
            })
            .count();
        let headers = got.lines().filter(|l| l.starts_with("── ")).count();
        assert_eq!(headers, headed, "{}: a header per message", f.display());
        assert!(headed > 10, "{}: a real conversation", f.display());
        // No line carries an image's base64 or a whole file: long outputs are cut.
        assert!(got.lines().all(|l| l.len() < 20_000), "{}", f.display());
    }
}

/// Message times are in the local zone (TZ), named by its abbreviation; `--utc` prints UTC.
#[test]
fn times_are_local_unless_utc() {
    let f = root().join("corpus/valid/branches.jsonl");
    let header = |t: &str| t.lines().find(|l| l.starts_with("── user")).map(str::to_owned);
    assert_eq!(
        header(&show_in(&f, &[], "Asia/Tokyo")).as_deref(),
        Some("── user · 2025-03-14 18:00:07 JST · dd48b9ed")
    );
    assert_eq!(
        header(&show_in(&f, &[], "America/New_York")).as_deref(),
        Some("── user · 2025-03-14 05:00:07 EDT · dd48b9ed")
    );
    assert_eq!(
        header(&show_in(&f, &["--utc"], "Asia/Tokyo")).as_deref(),
        Some("── user · 2025-03-14 09:00:07 UTC · dd48b9ed")
    );
}
