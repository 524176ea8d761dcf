//! `pi-session search PATTERN [SESSION|DIR ...]` (alias `grep`): what was said, found in
//! the decoded text of every session (`pi_session::search`), with ripgrep's pattern
//! flags and exit codes (0 found, 1 not found, 2 error).
//!
//! Text output: a heading per session (path, short id, name), then a line per matching
//! line: entry id (8 characters), `*` when the entry is on the current branch, role, local
//! time, the field when it is not the role's plain text, `:` (`-` for a context line), and
//! the line, cut to the terminal around its first match and highlighted on a terminal.
//! Everything from a session is escaped (`pi_session::text`).
//!
//! `--json`: one object per line (docs/cli.md, "search"): `match` and `context` lines,
//! `session` lines with `-l`, `count` lines with `-c`, and a closing `summary`.

use crate::flags::{CacheArgs, PlaceArgs};
use crate::show::{Kind, Printable};
use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;
use clap::Args;
use pi_session::listing::{self, SessionInfo};
use pi_session::search::{self, Case, FieldKind, Fields, Hit, HitLine, Pattern, Query, SearchOptions};
use pi_session::text::{escape, escape_path};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use unicode_width::UnicodeWidthChar;

/// `pi-session search`.
#[derive(Args)]
#[command(
    after_help = "Searched: user and assistant text, compaction and branch summaries, custom messages, bash commands, session names and labels; --thinking, --tool-calls and --tool-results add the rest. Never JSON keys, ids, signatures, extension state or image data. A phrase with a quote, a newline (-U and \\n) or any character a file writes as a JSON escape is found as it reads.\n\nOutput: a heading per session (newest first), then ENTRY * ROLE TIME[ FIELD]: LINE, `*` marking entries on the current branch; `-` instead of `:` for context lines. --no-heading: each line begins with PATH: instead; -n: with the session file's LINE: of its entry; -o: each match alone after its head. -v is not taken (-L lists the sessions without a match); ripgrep's file selection (-g, -t, --hidden, ...) has no meaning here.\n\nExit status: 0 a match was found, 1 none, 2 an error (a bad pattern, a file that could not be read).\n\nExamples:\n  pi-session search 'rustfmt'\n  pi-session search -F 'say \"hi\"' --role user --since 2w\n  pi-session search -U 'first line\\nsecond' --json\n  pi-session search -l --tool-results 'panicked at' ~/.pi/agent/sessions"
)]
pub struct SearchArgs {
    /// The pattern (a regex, as the regex crate reads it; -F: a literal string).
    #[arg(value_name = "PATTERN", required_unless_present = "regexp")]
    pattern: Option<String>,
    /// Sessions (files, or ids or unique prefixes of ids) and folders (every session in
    /// them) to search; default: every session of the agent dir (or the custom session dir).
    #[arg(value_name = "SESSION|DIR")]
    paths: Vec<PathBuf>,
    /// A pattern; may be given several times (a line matches when any matches). Then every
    /// positional argument is a session or folder.
    #[arg(short = 'e', long = "regexp", value_name = "PATTERN")]
    regexp: Vec<String>,
    /// Take patterns as literal strings.
    #[arg(short = 'F', long)]
    fixed_strings: bool,
    /// Ignore case.
    #[arg(short = 'i', long, overrides_with_all = ["case_sensitive", "smart_case"])]
    ignore_case: bool,
    /// Match case exactly.
    #[arg(short = 's', long, overrides_with_all = ["ignore_case", "smart_case"])]
    case_sensitive: bool,
    /// Ignore case unless the pattern has an upper-case letter (the default).
    #[arg(short = 'S', long, overrides_with_all = ["ignore_case", "case_sensitive"])]
    smart_case: bool,
    /// Only whole words (the match between word boundaries, \b).
    #[arg(short = 'w', long)]
    word_regexp: bool,
    /// Let a match span lines of one text (`\n` in the pattern matches a line break).
    #[arg(short = 'U', long)]
    multiline: bool,
    /// Print only the sessions that have a match.
    #[arg(short = 'l', long, conflicts_with = "count")]
    files_with_matches: bool,
    /// Print only the sessions that have no match (ripgrep's -L); exit 0 when one was
    /// printed.
    #[arg(short = 'L', long, conflicts_with_all = ["files_with_matches", "count", "quiet"])]
    files_without_match: bool,
    /// Print nothing (no progress bar either), stop at the first match, and exit 0 when
    /// there was one, even after errors (ripgrep's -q).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Print the number of matching lines of each session that has one.
    #[arg(short = 'c', long)]
    count: bool,
    /// At most N matching lines per session.
    #[arg(short = 'm', long, value_name = "N")]
    max_count: Option<usize>,
    /// N lines of context before and after each matching line (within its message).
    #[arg(short = 'C', long, value_name = "N", default_value_t = 0)]
    context: usize,
    /// N lines of context after each matching line (overrides -C after).
    #[arg(short = 'A', long, value_name = "N")]
    after_context: Option<usize>,
    /// N lines of context before each matching line (overrides -C before).
    #[arg(short = 'B', long, value_name = "N")]
    before_context: Option<usize>,
    /// Begin each line with the line of the session file its entry is on (`:` for a
    /// match, `-` for context).
    #[arg(short = 'n', long)]
    line_number: bool,
    /// No heading per session: each line begins with its session's path instead.
    #[arg(long)]
    no_heading: bool,
    /// Print each match alone on a line of its own (no context lines).
    #[arg(short = 'o', long)]
    only_matching: bool,
    /// Not taken: a message has no lines worth printing for not matching (-L lists the
    /// sessions without a match).
    #[arg(short = 'v', long, hide = true)]
    invert_match: bool,
    /// Also search assistants' thinking.
    #[arg(long)]
    thinking: bool,
    /// Also search the arguments of tool calls.
    #[arg(long)]
    tool_calls: bool,
    /// Also search tool results and bash output.
    #[arg(long)]
    tool_results: bool,
    /// Only these roles (comma-separated or repeated): user, assistant, toolResult,
    /// bashExecution, custom, branchSummary, compactionSummary, name, label.
    #[arg(long, value_delimiter = ',', value_name = "ROLE")]
    role: Vec<String>,
    /// Only entries written since DATE: a local date (2025-11-01), date and time
    /// (2025-11-01 14:00) or an age (3d, 2w, 4mo).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only entries written before the end of DATE (same forms as --since).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only sessions started in DIR or a folder below it (their header's cwd).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Only entries on each session's current branch (by default every entry; those on
    /// it are marked `*`).
    #[arg(long)]
    branch: bool,
    /// One JSON object per line (docs/cli.md).
    #[arg(short, long)]
    pub json: bool,
    #[command(flatten)]
    color: crate::flags::ColorArgs,
    #[command(flatten)]
    zone: crate::flags::ZoneArgs,
    /// Cut lines to N columns (default: $COLUMNS, else the terminal's width; piped output
    /// is not cut). 0: never cut.
    #[arg(long, value_name = "N")]
    width: Option<usize>,
    #[command(flatten)]
    place: PlaceArgs,
    #[command(flatten)]
    cache: CacheArgs,
}

fn usage(text: String) -> anyhow::Error {
    anyhow::anyhow!(Printable::kind(text, Kind::Usage))
}

impl SearchArgs {
    fn pattern(&self) -> (Pattern, Vec<PathBuf>) {
        let mut paths = self.paths.clone();
        let patterns = if self.regexp.is_empty() {
            vec![self.pattern.clone().unwrap_or_default()]
        } else {
            // With -e, the first positional is a path too.
            if let Some(p) = &self.pattern {
                paths.insert(0, PathBuf::from(p));
            }
            self.regexp.clone()
        };
        let case = if self.ignore_case {
            Case::Insensitive
        } else if self.case_sensitive {
            Case::Sensitive
        } else {
            Case::Smart
        };
        let p = Pattern {
            patterns,
            fixed: self.fixed_strings,
            case,
            word: self.word_regexp,
            multiline: self.multiline,
        };
        (p, paths)
    }

    fn query(&self, p: &Pattern, zone: &crate::when::Zone) -> Result<Query> {
        let matcher = p
            .compile()
            .map_err(|e| usage(format!("bad pattern: {}", escape(&e.to_string()))))?;
        let mut q = Query::new(matcher);
        q.fields = Fields {
            thinking: self.thinking,
            tool_calls: self.tool_calls,
            tool_results: self.tool_results,
        };
        if !self.role.is_empty() {
            for r in &self.role {
                if !search::ROLES.contains(&r.as_str()) {
                    return Err(usage(format!(
                        "--role {}: no such role (one of {})",
                        escape(r),
                        search::ROLES.join(", ")
                    )));
                }
            }
            q.roles = Some(self.role.clone());
        }
        let now = crate::when::now_ms();
        let (since, until) = zone.range(self.since.as_deref(), self.until.as_deref(), now)?;
        q.since = since.and_then(|w| zone.start_ms(w));
        q.until = until.and_then(|w| zone.end_ms(w));
        q.branch_only = self.branch;
        q.max_per_session = self.max_count;
        q.before = self.before_context.unwrap_or(self.context);
        q.after = self.after_context.unwrap_or(self.context);
        Ok(q)
    }
}

/// Run `pi-session search`; returns the exit code.
///
/// # Errors
/// A bad pattern or option (usage), a named session or folder that cannot be read.
pub fn run(a: &SearchArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    if a.invert_match {
        return Err(usage(
            "-v (--invert-match): the lines of a message that do not match are not printed; -L lists the sessions without a match".into(),
        ));
    }
    let zone = a.zone.zone()?;
    let (pattern, named) = a.pattern();
    let q = a.query(&pattern, &zone)?;
    let roots = a.place.roots(&named)?;
    let cache = a.cache.cache();
    let found = search::sessions_in(&roots, cache.clone(), read_mode, None)?;
    for p in &found.problems {
        eprintln!("pi-session: {}: {}", escape_path(&p.path), escape(&p.what));
    }
    let mut errors = 0usize;
    // A file named on the command line that is no session is an error; one found in a
    // folder is passed over, as `ls` passes over it.
    for s in &found.skipped {
        if !named.is_empty() && roots.contains(&s.path) {
            eprintln!(
                "pi-session: {}: {}",
                escape_path(&s.path),
                escape(&s.reason.to_string())
            );
            errors += 1;
        }
    }
    // A session pi's listing drops but pi opens is searched; a note says so, for a file
    // named here at once, for one found in a folder with its matches.
    let unlisted_note = |s: &pi_session::listing::SkippedFile| {
        let why = s.reason.to_string();
        format!(
            "pi-session: {}: searched, though pi's /resume does not list it ({})",
            escape_path(&s.path),
            escape(why.strip_prefix("pi drops it: ").unwrap_or(&why))
        )
    };
    let mut unlisted: std::collections::HashMap<PathBuf, String> = std::collections::HashMap::new();
    for s in &found.unlisted {
        if roots.contains(&s.path) {
            eprintln!("{}", unlisted_note(s));
        } else {
            unlisted.insert(s.path.clone(), unlisted_note(s));
        }
    }
    let mut sessions = found.sessions;
    if let Some(dir) = &a.cwd {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        sessions.retain(|s| search::cwd_within(s, &dir));
    }
    let paths: Vec<PathBuf> = sessions.iter().map(|s| s.path.clone()).collect();

    let printer = Printer {
        color: a.color.on_stdout(),
        width: crate::term::width(a.width),
        zone,
        json: a.json,
        line_number: a.line_number,
        heading: !a.no_heading,
        only_matching: a.only_matching,
        mode: if a.files_with_matches {
            Mode::Files
        } else if a.files_without_match {
            Mode::Without
        } else if a.count {
            Mode::Count
        } else {
            Mode::Lines
        },
    };
    let bar = crate::term::Bar::sessions(a.quiet || paths.len() < 2);
    let mut progress = |done: usize, total: usize| bar.set(done, Some(total));
    let mut opts = SearchOptions {
        on_progress: Some(&mut progress),
        read_mode,
        cache,
        ..SearchOptions::default()
    };
    let mut totals = Totals::default();
    let mut failure: Option<std::io::Error> = None;
    let mut first = true;
    let report = search::search_paths(&paths, &q, &mut opts, |f| {
        let info = &sessions[f.index];
        totals.searched += 1;
        match f.result {
            // Gone since it was listed (removed or renamed away): a listing now would not
            // have it either.
            Err(e) if matches!(e.kind(), pi_session::ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound) => {
                ControlFlow::Continue(())
            }
            Err(e) => {
                // (The error names the file itself, mostly: once.)
                let text = crate::show::error_line(&anyhow::Error::new(e));
                let path = escape_path(&f.path);
                let msg = if text.starts_with(&format!("{path}: ")) {
                    format!("pi-session: {text}")
                } else {
                    format!("pi-session: {path}: {text}")
                };
                bar.suspend(|| eprintln!("{msg}"));
                totals.errors += 1;
                ControlFlow::Continue(())
            }
            Ok(hits) if hits.is_empty() && printer.mode == Mode::Without => {
                totals.without += 1;
                let mut buf = Vec::new();
                printer.session(info, &[], first, &mut buf);
                first = false;
                bar.before_output();
                match bar.suspend(|| out.write_all(&buf).and_then(|()| out.flush())) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failure = Some(e);
                        ControlFlow::Break(())
                    }
                }
            }
            Ok(hits) if hits.is_empty() => ControlFlow::Continue(()),
            Ok(hits) if printer.mode == Mode::Without => {
                totals.sessions += 1;
                totals.lines += hits.iter().map(Hit::match_count).sum::<usize>();
                ControlFlow::Continue(())
            }
            Ok(_) if a.quiet => {
                totals.sessions += 1;
                ControlFlow::Break(())
            }
            Ok(hits) => {
                if let Some(note) = unlisted.get(&f.path) {
                    bar.suspend(|| eprintln!("{note}"));
                }
                totals.sessions += 1;
                totals.lines += hits.iter().map(Hit::match_count).sum::<usize>();
                // The file was replaced by another session since it was listed: the hits
                // are that session's, so are the id and name shown.
                let replaced;
                let info = if f.session_id.is_some() && f.session_id != session_id(info) {
                    replaced = fresh_info(info, f.session_id.as_deref(), read_mode);
                    &replaced
                } else {
                    info
                };
                let mut buf = Vec::new();
                printer.session(info, &hits, first, &mut buf);
                first = false;
                bar.before_output();
                let r = bar.suspend(|| out.write_all(&buf).and_then(|()| out.flush()));
                match r {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failure = Some(e);
                        ControlFlow::Break(())
                    }
                }
            }
        }
    })
    .map_err(anyhow::Error::new)?;
    bar.clear();
    for w in &report.cache_warnings {
        eprintln!("pi-session: warning: {}", escape(w));
    }
    if let Some(e) = failure {
        return Err(e.into());
    }
    errors += totals.errors;
    if a.quiet {
        return Ok(if totals.sessions > 0 {
            0
        } else if errors > 0 {
            2
        } else {
            1
        });
    }
    if a.json {
        let _ = writeln!(
            out,
            "{{\"type\":\"summary\",\"sessionsSearched\":{},\"sessionsWithMatches\":{},\"matchingLines\":{},\"errors\":{}}}",
            totals.searched, totals.sessions, totals.lines, errors
        );
    }
    Ok(if errors > 0 {
        2
    } else if printer.mode == Mode::Without {
        if totals.without > 0 { 0 } else { 1 }
    } else if totals.sessions > 0 {
        0
    } else {
        1
    })
}

#[derive(Default)]
struct Totals {
    searched: usize,
    sessions: usize,
    lines: usize,
    errors: usize,
    /// Sessions printed by -L (no match).
    without: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lines,
    Files,
    /// -L: the sessions without a match.
    Without,
    Count,
}

struct Printer {
    color: bool,
    width: Option<usize>,
    zone: crate::when::Zone,
    json: bool,
    /// -n: the session file's line of each entry first.
    line_number: bool,
    /// A heading per session (else each line begins with the path: --no-heading).
    heading: bool,
    /// -o: each match alone.
    only_matching: bool,
    mode: Mode,
}

/// The id a hit is shown at: the labelled entry's for a hit on a label, else its own.
fn shown_id(h: &Hit) -> Option<&str> {
    h.target_id.as_deref().or(h.entry_id.as_deref())
}

fn js(s: &str) -> String {
    pi_session::Value::str(s).stringify()
}

/// The listing's answer for the file of `listed` read again now, when its header's id is
/// `id` (the session searched); else the listed answer with that id and no name (the file
/// was replaced again since).
fn fresh_info(listed: &SessionInfo, id: Option<&str>, read_mode: pi_session::ReadMode) -> SessionInfo {
    let mut scratch = listing::Scratch::default();
    scratch.set_collect_text(false);
    match listing::read_session_info(&listed.path, read_mode, &mut scratch) {
        Ok(i) if session_id(&i).as_deref() == id => i,
        _ => {
            let mut i = listed.clone();
            i.id = id.map(|s| pi_session::Value::string(s.to_owned()));
            i.name = None;
            i
        }
    }
}

fn session_id(info: &SessionInfo) -> Option<String> {
    info.id
        .as_ref()
        .and_then(|v| v.as_js_str())
        .map(|s| s.to_str_lossy().into_owned())
}

const MATCH: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Red))).bold();
const PATH: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Magenta))).bold();
const ID: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Yellow)));
const DIM: Style = Style::new().dimmed();
const LINE: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Green)));

impl Printer {
    fn paint(&self, s: &str, style: Style, out: &mut String) {
        if self.color {
            out.push_str(&format!("{style}{s}{style:#}"));
        } else {
            out.push_str(s);
        }
    }

    fn session(&self, info: &SessionInfo, hits: &[Hit], first: bool, buf: &mut Vec<u8>) {
        let path = info.path.to_string_lossy();
        let id = session_id(info);
        let lines: usize = hits.iter().map(Hit::match_count).sum();
        if self.json {
            let head = format!(
                "\"path\":{},\"session\":{}",
                js(&path),
                id.as_deref().map_or("null".into(), js)
            );
            match self.mode {
                Mode::Files | Mode::Without => {
                    let _ = writeln!(buf, "{{\"type\":\"session\",{head},\"matchingLines\":{lines}}}");
                }
                Mode::Count => {
                    let _ = writeln!(buf, "{{\"type\":\"count\",{head},\"count\":{lines}}}");
                }
                Mode::Lines => {
                    for h in hits {
                        for l in &h.lines {
                            self.json_line(&head, h, l, buf);
                        }
                    }
                }
            }
            return;
        }
        let mut s = String::new();
        match self.mode {
            Mode::Files | Mode::Without => {
                self.paint(&escape_path(&info.path), PATH, &mut s);
                s.push('\n');
            }
            Mode::Count => {
                self.paint(&escape_path(&info.path), PATH, &mut s);
                s.push_str(&format!(":{lines}\n"));
            }
            Mode::Lines => {
                // (--no-heading: the painted path, and the columns it takes.)
                let mut prefix = (String::new(), 0);
                if self.heading {
                    if !first {
                        s.push('\n');
                    }
                    self.paint(&escape_path(&info.path), PATH, &mut s);
                    s.push('\n');
                    let short: String = id.as_deref().unwrap_or("(no id)").chars().take(8).collect();
                    self.paint(&escape(&short), ID, &mut s);
                    if let Some(n) = &info.name {
                        s.push_str(" · ");
                        s.push_str(&escape(&n.to_str_lossy()));
                    }
                    s.push('\n');
                } else {
                    let plain = escape_path(&info.path);
                    prefix.1 = crate::term::measure(&plain, usize::MAX);
                    self.paint(&plain, PATH, &mut prefix.0);
                }
                for h in hits {
                    for l in &h.lines {
                        if self.only_matching {
                            if l.is_match() {
                                self.each_match((&prefix.0, prefix.1), h, l, &mut s);
                            }
                        } else {
                            self.text_line((&prefix.0, prefix.1), h, l, &mut s);
                        }
                    }
                }
            }
        }
        if buf.is_empty() {
            *buf = s.into_bytes();
        } else {
            buf.extend_from_slice(s.as_bytes());
        }
    }

    fn json_line(&self, head: &str, h: &Hit, l: &HitLine, buf: &mut Vec<u8>) {
        let ty = if l.is_match() { "match" } else { "context" };
        // Written straight into `buf`: a line may be hundreds of megabytes.
        let _ = write!(
            buf,
            "{{\"type\":\"{ty}\",{head},\"entry\":{},{}\"line\":{},\"offset\":{},\"role\":\"{}\",\"field\":\"{}\",\"block\":{},\"timestamp\":{},\"onBranch\":{},\"textOffset\":{},\"text\":",
            shown_id(h).map_or("null".into(), js),
            // A label's hit is shown at the entry it labels; the label entry's own id too.
            match &h.target_id {
                Some(_) => format!("\"labelEntry\":{},", h.entry_id.as_deref().map_or("null".into(), js)),
                None => String::new(),
            },
            h.line.0,
            h.offset.0,
            h.role,
            h.field.as_str(),
            h.block.map_or("null".into(), |b| b.to_string()),
            h.timestamp.as_deref().map_or("null".into(), js),
            h.on_branch,
            l.offset,
        );
        pi_session::Value::str(&l.text).stringify_into(buf);
        buf.extend_from_slice(b",\"matches\":[");
        for (k, (s, e)) in l.matches.iter().enumerate() {
            let _ = write!(buf, "{}{{\"start\":{s},\"end\":{e}}}", if k == 0 { "" } else { "," });
        }
        buf.extend_from_slice(if l.more_matches {
            b"],\"moreMatches\":true}\n"
        } else {
            b"]}\n"
        });
    }

    /// `-o`: each match of a matching line on a line of its own, after the line's head.
    fn each_match(&self, prefix: (&str, usize), h: &Hit, l: &HitLine, s: &mut String) {
        for &(a, b) in &l.matches {
            let (a, b) = (a.saturating_sub(l.offset), b.saturating_sub(l.offset));
            let Some(m) = l.text.get(a.min(l.text.len())..b.min(l.text.len())) else {
                continue;
            };
            let used = self.head(prefix, h, true, s);
            let room = self.width.map(|w| w.saturating_sub(used).max(20));
            self.fitted(m, 0, &[(0, m.len())], room, s);
            s.push('\n');
        }
    }

    /// The start of an output line: `PATH:` (--no-heading), `LINE:` (-n), the entry, its
    /// role, time and field, then `: ` (`-` for context, in each separator). Returns the
    /// columns it takes.
    fn head(&self, (prefix, prefix_cols): (&str, usize), h: &Hit, is_match: bool, s: &mut String) -> usize {
        let sep = if is_match { ':' } else { '-' };
        let mut used = 0;
        if !prefix.is_empty() {
            s.push_str(prefix);
            s.push(sep);
            used += prefix_cols + 1;
        }
        if self.line_number {
            let n = h.line.0.to_string();
            self.paint(&n, LINE, s);
            s.push(sep);
            used += n.len() + 1;
        }
        let id: String = shown_id(h).unwrap_or("(no id)").chars().take(8).collect();
        let id = escape(&id);
        self.paint(&format!("{id:<8}"), ID, s);
        s.push_str(if h.on_branch { " * " } else { "   " });
        s.push_str(&format!("{:<13} ", h.role));
        let time = self.zone.local(h.time_ms).unwrap_or_else(|| "-".repeat(16));
        self.paint(&time, DIM, s);
        let shown_field = matches!(
            h.field,
            FieldKind::Thinking | FieldKind::ToolCall | FieldKind::ToolResult | FieldKind::Output
        );
        if shown_field {
            s.push(' ');
            s.push_str(h.field.as_str());
        }
        s.push_str(if is_match { ": " } else { "- " });
        // Visible width so far (no escapes in it but the id's and colour codes).
        used + id.chars().count().max(8)
            + 3
            + h.role.len().max(9)
            + 1
            + time.chars().count()
            + if shown_field { 1 + h.field.as_str().len() } else { 0 }
            + 2
    }

    fn text_line(&self, prefix: (&str, usize), h: &Hit, l: &HitLine, s: &mut String) {
        let used = self.head(prefix, h, l.is_match(), s);
        let room = self.width.map(|w| w.saturating_sub(used).max(20));
        self.fitted(&l.text, l.offset, &l.matches, room, s);
        s.push('\n');
    }

    /// The line, escaped, its matches highlighted, cut to `room` columns around the first
    /// match (`…` where cut).
    fn fitted(&self, text: &str, base: usize, matches: &[(usize, usize)], room: Option<usize>, s: &mut String) {
        // Match ranges relative to the line, clipped to it.
        let rel: Vec<(usize, usize)> = matches
            .iter()
            .map(|&(a, b)| {
                (
                    a.saturating_sub(base).min(text.len()),
                    b.saturating_sub(base).min(text.len()),
                )
            })
            .collect();
        let (from, to) = match room {
            None => (0, text.len()),
            Some(room) => window(text, rel.first().map_or(0, |m| m.0), room),
        };
        if from > 0 {
            s.push('…');
        }
        // Escaped a run at a time (escaping is per character: the same as one at a time),
        // the matches' runs highlighted; matches are in order and do not overlap (one
        // that starts inside what was shown is shown from there).
        let run = |a: usize, b: usize, hot: bool, s: &mut String| {
            if a < b {
                let e = escape(&text[a..b]);
                if hot { self.paint(&e, MATCH, s) } else { s.push_str(&e) }
            }
        };
        // Highlighted runs: the matches within [from, to), touching ones as one.
        let mut hot: Vec<(usize, usize)> = Vec::new();
        for &(a, b) in &rel {
            let a = a.clamp(hot.last().map_or(from, |h| h.1), to);
            let b = b.clamp(a, to);
            match hot.last_mut() {
                _ if a == b => {}
                Some(h) if h.1 == a => h.1 = b,
                _ => hot.push((a, b)),
            }
        }
        let mut at = from;
        for (a, b) in hot {
            run(at, a, false, s);
            run(a, b, true, s);
            at = b;
        }
        run(at, to, false, s);
        if to < text.len() {
            s.push('…');
        }
    }
}

/// The columns a character takes once escaped.
fn cols(c: char) -> usize {
    let mut tmp = [0u8; 4];
    let e = escape(c.encode_utf8(&mut tmp));
    e.chars().map(|x| x.width().unwrap_or(0)).sum()
}

/// The byte range of `text` to show in `room` columns: from up to a quarter of the room
/// before `at` (the first match) onwards.
fn window(text: &str, at: usize, room: usize) -> (usize, usize) {
    let mut total = 0usize;
    if text.chars().all(|c| {
        total += cols(c);
        total <= room
    }) {
        return (0, text.len());
    }
    let room = room.saturating_sub(2).max(1); // the two `…`
    let mut from = at.min(text.len());
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut used = 0;
    for (i, c) in text[..from].char_indices().rev() {
        let w = cols(c);
        if used + w > room / 4 {
            break;
        }
        used += w;
        from = i;
    }
    let mut to = from;
    for (i, c) in text[from..].char_indices() {
        let w = cols(c);
        if used + w > room {
            break;
        }
        used += w;
        to = from + i + c.len_utf8();
    }
    (from, to)
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn the_window_holds_the_match() {
        let t = format!("{}needle{}", "a".repeat(100), "b".repeat(100));
        let (f, to) = window(&t, 100, 40);
        assert!(f <= 100 && to >= 106, "{f}..{to}");
        assert!(to - f <= 40);
        assert_eq!(window("short", 0, 40), (0, 5));
    }
}
