//! The `check` and `context` commands.

use crate::open::{open, pi_throws_line, pi_throws_text};
use crate::show::key_text;
use anyhow::Result;
use pi_session::Value;
use pi_session::text::{escape, escape_path};
use pi_session::view::transcript::count;
use pi_session::{Block, Flavor, OpenOptions, Recovery, RetainedTail, Session};
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// `check --json`'s `piOpenThrows`: where and why pi's open throws, or `null`.
fn pi_throws_json(s: &Session) -> String {
    s.index().pi_open_throws.as_ref().map_or("null".into(), |o| {
        format!(
            "{{\"line\":{},\"offset\":{},\"length\":{},\"utf16Units\":{},\"piMessage\":{},\"reason\":{}}}",
            pi_throws_line(s, o),
            o.offset,
            o.len,
            o.units,
            json_str(pi_session::v8::PI_MESSAGE),
            json_str(&pi_throws_text(s, o))
        )
    })
}

/// What the next write would do about a pending append journal (see `pi_session::recover`),
/// escaped.
pub(crate) fn pending_text(r: &Recovery) -> String {
    match r {
        Recovery::Clean => "none".into(),
        Recovery::NotWritten => "an interrupted append wrote nothing; the next write removes the journal".into(),
        Recovery::Completed => "an interrupted append completed; the next write removes the journal".into(),
        Recovery::Truncated { len, removed } => format!(
            "a torn append: the next write (or `pi-session recover`) cuts its {removed} bytes, back to {len} bytes"
        ),
        Recovery::Stale { reason } => format!("a stale journal, the file will be left alone: {}", escape(reason)),
        Recovery::Busy => "another process is appending right now".into(),
        _ => escape(&r.to_string()).into_owned(),
    }
}

fn json_str(s: &str) -> String {
    Value::str(s).stringify()
}

/// A string as JSON, `null` for none.
fn opt_json(s: &Option<String>) -> String {
    s.as_deref().map_or("null".into(), json_str)
}

/// `check`'s options.
pub struct CheckFlags {
    /// `--json`.
    pub json: bool,
    /// `--strict`: exit 1 on problems.
    pub strict: bool,
    /// `--timings`.
    pub timings: bool,
}

/// `check --json`'s `migration`: pi's in-memory migration on open, `null` for none.
fn migration_json(m: pi_session::Migration) -> &'static str {
    match m {
        pi_session::Migration::None => "null",
        pi_session::Migration::FromV1 => "\"fromV1\"",
        pi_session::Migration::FromV2 => "\"fromV2\"",
        pi_session::Migration::RewriteOnly => "\"rewriteOnly\"",
    }
}

/// `check`'s text for the migration.
fn migration_text(m: pi_session::Migration) -> &'static str {
    match m {
        pi_session::Migration::None => "none",
        pi_session::Migration::FromV1 => {
            "to version 3, with new ids for every entry (the ids shown are derived from the file; `pi-session migrate` writes them)"
        }
        pi_session::Migration::FromV2 => "to version 3",
        pi_session::Migration::RewriteOnly => "a rewrite (the version is not a number)",
    }
}

/// `pi-session check` (a file that is no session fails, and `main` prints `--json`'s
/// error object for it).
pub fn check(path: &Path, opts: OpenOptions, flags: CheckFlags, out: &mut impl Write) -> Result<i32> {
    let CheckFlags { json, strict, timings } = flags;
    let t0 = Instant::now();
    let s = open(path, opts)?.map_err(crate::show::at(path))?;
    let bytes = s.bytes().len();
    let idx = s.index();
    // The version the file stores (pi's open shows 3 after migrating).
    let header_version = s.stored_version().map(|v| v.stringify());
    // Who the session is: the header's id, cwd, start time and parent session (strings, or
    // absent when the header has none or another type).
    let field = |k: &str| crate::show::header_str(&s, k);
    let (session_id, cwd, created, parent) = (field("id"), field("cwd"), field("timestamp"), field("parentSession"));
    let leaf = s.leaf().clone();
    let mut step_errors: Vec<(&str, String)> = Vec::new();
    // The tree is independent of the branch and context walks: build it on the other
    // core meanwhile.
    let (walks, tree) = rayon::join(
        || {
            let branch = s.branch_path(None).map(|b| b.len());
            // The context as handles: nothing is decoded to count it.
            let context = s.context_with(&leaf, RetainedTail::Ignore).map(|c| {
                let mut seen = ahash::AHashSet::new();
                let src: u64 = c
                    .messages
                    .iter()
                    .filter(|m| seen.insert(m.entry))
                    .map(|m| s.record(m.entry).len)
                    .sum();
                (c.messages.len(), src)
            });
            (branch, context)
        },
        || s.tree_root_count(),
    );
    let (branch, context) = walks;
    let branch_len = branch.unwrap_or_else(|e| {
        step_errors.push(("branch", e.to_string()));
        0
    });
    let (ctx_messages, ctx_source_bytes) = context.unwrap_or_else(|e| {
        step_errors.push(("context", e.to_string()));
        (0, 0)
    });
    let roots = tree.unwrap_or_else(|e| {
        step_errors.push(("tree", e.to_string()));
        0
    });
    let name = match s.session_name() {
        Ok(n) => n.map(|n| n.to_str_lossy().into_owned()),
        Err(e) => {
            step_errors.push(("sessionName", e.to_string()));
            None
        }
    };
    let journal = pi_session::pending_recovery(path).ok().flatten();
    let elapsed = t0.elapsed();
    // What --strict fails on: the file is not as pi leaves it.
    let problems = !idx.skipped.is_empty()
        || !step_errors.is_empty()
        || idx.pi_open_throws.is_some()
        || s.file_change() != pi_session::FileChange::None
        || journal.as_ref().is_some_and(|r| !matches!(r, Recovery::Clean));
    let entries = s.entries_len();
    if json {
        let skipped: Vec<String> = idx
            .skipped
            .iter()
            .map(|k| {
                format!(
                    "{{\"line\":{},\"offset\":{},\"length\":{},\"reason\":{}}}",
                    k.line.0,
                    k.offset.0,
                    k.len,
                    json_str(&k.reason.to_string())
                )
            })
            .collect();
        let errors: Vec<String> = step_errors
            .iter()
            .map(|(k, v)| format!("{}:{}", json_str(k), json_str(v)))
            .collect();
        writeln!(
            out,
            "{{\"file\":{},\"session\":true,\"sessionId\":{},\"cwd\":{},\"created\":{},\"parentSession\":{},\"bytes\":{bytes},\"lines\":{},\"entries\":{entries},\"distinctIds\":{},\"headerVersion\":{},\"migration\":{},\"skipped\":[{}],\"leafId\":{},\"branchLength\":{branch_len},\"contextMessages\":{ctx_messages},\"contextSourceBytes\":{ctx_source_bytes},\"treeRoots\":{roots},\"sessionName\":{},\"fileChange\":{},\"appendJournal\":{},\"piOpenThrows\":{},\"errors\":{{{}}}{}}}",
            json_str(&path.display().to_string()),
            opt_json(&session_id),
            opt_json(&cwd),
            opt_json(&created),
            opt_json(&parent),
            idx.lines,
            s.entry_count(),
            header_version.unwrap_or_else(|| "null".into()),
            migration_json(s.migration()),
            skipped.join(","),
            leaf.as_str().map_or("null".into(), json_str),
            name.as_deref().map_or("null".into(), json_str),
            json_str(s.file_change().as_str()),
            journal.as_ref().map_or("null".into(), |r| json_str(r.as_str())),
            pi_throws_json(&s),
            errors.join(","),
            if timings {
                format!(",\"mmap\":{},\"seconds\":{:.6}", s.is_mapped(), elapsed.as_secs_f64())
            } else {
                String::new()
            },
        )?;
    } else {
        writeln!(out, "file:              {}", escape_path(path))?;
        let text = |v: &Option<String>| v.as_deref().map_or("(none)".into(), |t| escape(t).into_owned());
        writeln!(out, "session id:        {}", text(&session_id))?;
        writeln!(out, "cwd:               {}", text(&cwd))?;
        writeln!(out, "created:           {}", text(&created))?;
        if parent.is_some() {
            writeln!(out, "parent session:    {}", text(&parent))?;
        }
        writeln!(out, "size:              {bytes} bytes, {} lines", idx.lines)?;
        writeln!(out, "entries:           {entries} ({} distinct ids)", s.entry_count())?;
        let stored = match header_version.as_deref() {
            Some(v) => escape(v).into_owned(),
            None if bytes == 0 => "none (an empty file: pi writes a version 3 header into it)".into(),
            None => "absent, i.e. version 1".into(),
        };
        writeln!(out, "header version:    {stored}")?;
        writeln!(out, "migration on open: {}", migration_text(s.migration()))?;
        writeln!(out, "skipped lines:     {}", idx.skipped.len())?;
        for k in idx.skipped.iter().take(20) {
            writeln!(
                out,
                "  line {} (byte {}, {} bytes): {}",
                k.line,
                k.offset.0,
                k.len,
                escape(&k.reason.to_string())
            )?;
        }
        if idx.skipped.len() > 20 {
            writeln!(out, "  ... {} more (use --json for all)", idx.skipped.len() - 20)?;
        }
        writeln!(out, "leaf:              {}", key_text(&leaf))?;
        writeln!(out, "branch length:     {branch_len}")?;
        writeln!(
            out,
            "context:           {ctx_messages} messages from {ctx_source_bytes} bytes of entries"
        )?;
        writeln!(out, "tree roots:        {roots}")?;
        writeln!(
            out,
            "session name:      {}",
            name.as_deref().map_or("(none)".into(), escape)
        )?;
        writeln!(
            out,
            "pi's open would:   {}",
            match s.file_change() {
                pi_session::FileChange::None => "change nothing",
                pi_session::FileChange::AppendedNewline => "append a newline after the unterminated last line",
                pi_session::FileChange::Rewritten => "rewrite the file (format migration)",
            }
        )?;
        if let Some(r) = &journal {
            writeln!(out, "append journal:    {}", pending_text(r))?;
        }
        if let Some(o) = &idx.pi_open_throws {
            writeln!(out, "warning:           {}", pi_throws_text(&s, o))?;
        }
        for (step, e) in &step_errors {
            writeln!(out, "error in {step}:  {}", escape(e))?;
        }
        if timings {
            writeln!(out, "checked in:        {:.3} s", elapsed.as_secs_f64())?;
        }
    }
    Ok(if strict && problems { 1 } else { 0 })
}

/// Says on stderr where PiG's context differs from pi's (nothing when it does not).
fn note_pig_differences(path: &Path, s: &Session, leaf: &pi_session::Key) {
    let file = escape_path(path);
    match s.pig_differences(leaf) {
        Err(e) => eprintln!(
            "pi-session: {file}: PiG's context, which applies no context edit; pi's build fails here: {}",
            escape(&e.to_string())
        ),
        Ok(d) if d.is_empty() => {}
        Ok(d) => {
            let ids = |ps: &[pi_session::EntryPos]| {
                ps.iter()
                    .map(|&p| escape(&key_text(&s.record(p).id.to_key())).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut what = Vec::new();
            if !d.edits.is_empty() {
                what.push(format!(
                    "{} that pi applies not applied ({})",
                    count(d.edits.len(), "context edit"),
                    ids(&d.edits)
                ));
            }
            if !d.left_out.is_empty() {
                what.push(format!(
                    "{} marked excludeFromContext left out ({}; pi leaves them out only when it sends the context to the model)",
                    count(d.left_out.len(), "bash execution"),
                    ids(&d.left_out)
                ));
            }
            eprintln!(
                "pi-session: {file}: PiG's context differs from pi's: {}",
                what.join("; ")
            );
        }
    }
}

fn text_of(m: &Value<'_>) -> String {
    let text = match m.get("content") {
        Some(Value::String(s)) => s.to_str_lossy().into_owned(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .find_map(|b| match pi_session::block(b) {
                Block::Text(t) => t.map(Cow::into_owned),
                Block::Call { name, .. } => name.and_then(Value::as_str).map(|n| format!("[tool call {n}]")),
                Block::Image { .. } => Some("[image]".into()),
                Block::Thinking { .. } => Some("[thinking]".into()),
                Block::Other { .. } => None,
            })
            .unwrap_or_default(),
        // A bash execution: its command, as pi's context shows it (`$ cmd`).
        _ => match (
            m.get("role").and_then(Value::as_str),
            m.get("command").and_then(Value::as_str),
        ) {
            (Some("bashExecution"), Some(c)) => format!("$ {c}"),
            _ => m.get("summary").and_then(Value::as_str).unwrap_or("").to_owned(),
        },
    };
    let first = text.lines().next().unwrap_or("");
    let mut s = escape(&first.chars().take(100).collect::<String>()).into_owned();
    if first.chars().count() > 100 {
        s.push('…');
    }
    s
}

/// `--leaf`: an id, or a unique prefix of one (four characters or more), or `null`.
fn go_to_leaf(s: &mut Session, path: &Path, leaf: Option<&str>) -> Result<()> {
    match leaf {
        None => {}
        Some("null") => s.reset_leaf(),
        Some(l) => {
            let p = s.find_prefix(l).map_err(crate::show::at(path))?;
            let id = s.record(p).id.to_key();
            s.set_leaf_raw(id);
        }
    }
    Ok(())
}

/// PiG's reading views, as `dump` prints them.
#[derive(Clone, Copy)]
pub enum Reading {
    /// Every entry's line as written (`GetEntries`).
    Entries,
    /// The branch's entries flattened (`GetBranch`).
    Branch,
}

/// `pi-session dump --entries` and `--branch-view`: one JSON line per entry.
pub fn reading(path: &Path, opts: OpenOptions, leaf: Option<&str>, view: Reading, out: &mut impl Write) -> Result<i32> {
    let mut s = open(path, opts)?.map_err(crate::show::at(path))?;
    crate::show::note_old_format(path, &s);
    match view {
        Reading::Entries => {
            for &p in s.entries() {
                out.write_all(s.raw(p))?;
                out.write_all(b"\n")?;
            }
            // The bytes printed were the file's only if it did not change meanwhile.
            s.verify().map_err(crate::show::at(path))?;
        }
        Reading::Branch => {
            go_to_leaf(&mut s, path, leaf)?;
            for item in s.branch_items().map_err(crate::show::at(path))? {
                writeln!(out, "{}", item.to_json())?;
            }
        }
    }
    Ok(0)
}

/// What `pi-session context` is asked.
pub struct ContextFlags<'a> {
    /// `--leaf`.
    pub leaf: Option<&'a str>,
    /// `--json`.
    pub json: bool,
    /// `--retained-tail`.
    pub retained_tail: bool,
    /// Whose rules build it.
    pub flavor: Flavor,
}

/// `pi-session context`.
pub fn context(path: &Path, opts: OpenOptions, flags: ContextFlags<'_>, out: &mut impl Write) -> Result<i32> {
    let ContextFlags {
        leaf,
        json,
        retained_tail: retained,
        flavor,
    } = flags;
    if retained && flavor == Flavor::Pig {
        anyhow::bail!(crate::show::Printable::kind(
            "--retained-tail is a rule of pi's format documents; PiG's context has no retainedTail (drop --flavor pig or --retained-tail)".into(),
            crate::show::Kind::Usage
        ));
    }
    let mut s = open(path, opts)?.map_err(crate::show::at(path))?;
    crate::show::note_old_format(path, &s);
    go_to_leaf(&mut s, path, leaf)?;
    let tail = if retained {
        RetainedTail::Honor
    } else {
        RetainedTail::Ignore
    };
    let leaf = s.leaf().clone();
    let ctx = match flavor {
        Flavor::Pi => s.context_with(&leaf, tail),
        Flavor::Pig => {
            note_pig_differences(path, &s, &leaf);
            s.context_as(&leaf, Flavor::Pig)
        }
    }
    .map_err(crate::show::at(path))?;
    if json {
        s.write_context_json(&ctx, out).map_err(crate::show::at(path))?;
        writeln!(out)?;
        return Ok(0);
    }
    let model = ctx.model.as_ref().map(|m| {
        format!(
            "{}/{}",
            m.get("provider").map(Value::to_js_string).unwrap_or_default(),
            m.get("modelId").map(Value::to_js_string).unwrap_or_default()
        )
    });
    writeln!(
        out,
        "leaf {} · {} messages · thinking {} · model {}",
        key_text(&leaf),
        ctx.messages.len(),
        escape(
            &ctx.thinking_level
                .as_ref()
                .map_or("undefined".into(), Value::to_js_string)
        ),
        model.as_deref().map_or("none".into(), escape)
    )?;
    // (The line column as wide as its widest number: the text column stays aligned.)
    let line_w = ctx
        .messages
        .iter()
        .map(|h| s.line_of(h.entry).to_string().len())
        .max()
        .unwrap_or(1);
    for (i, h) in ctx.messages.iter().enumerate() {
        let (m, src) = (s.message(h).map_err(crate::show::at(path))?, h.entry);
        let m = &m;
        let role = m.get("role").map_or("?".into(), Value::to_js_string);
        let size = m.stringify().len();
        writeln!(
            out,
            "{:>5}  {:<17} {:>9} B  line {:<line_w$}  {}",
            i + 1,
            escape(&role),
            size,
            s.line_of(src).to_string(),
            text_of(m)
        )?;
    }
    Ok(0)
}
