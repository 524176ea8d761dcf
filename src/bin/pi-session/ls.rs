//! The `ls` and `find` commands.
//!
//! `ls --json` prints one session per line, a frozen format: an object with pi's
//! `SessionInfo` field names in pi's order (`path`, `id`, `cwd`, `name`,
//! `parentSessionPath`, `created`, `modified`, `messageCount`, `firstMessage`, and with
//! `--text` `allMessagesText`), written as `JSON.stringify` writes it; dates are
//! `toISOString()` strings (`null` for an invalid date), a missing `id`, `name` or
//! `parentSessionPath` is `null`. Newest first, in pi's order. A path that is not UTF-8
//! (pi's `path` is then lossy, U+FFFD for each bad sequence, naming no file) has one more
//! field after `path`: `pathBytes`, the exact bytes of the path as an array of numbers.
//!
//! The table (docs/cli.md, "`ls`: the sessions, as a table"): `ID` (8 characters of the
//! session id), `MODIFIED` in the local zone ([`crate::when`]), `AGE` as pi's picker,
//! `MSGS`, `SIZE`, `TITLE` (a name marked `* `), `CWD` (`~/…`), and with `--long` `PATH`;
//! a header on a terminal; title and cwd fitted to the terminal's width by display width
//! ([`width`]), nothing cut when piped. `--sort`, `--reverse`, `--tree` (pi's threaded
//! view), the filters and `--limit` apply to `--json` too.
//!
//! The table (and every message) prints strings from sessions and file names escaped
//! (`pi_session::text`): a file name by its exact bytes, `\xe9` for a byte that is not
//! UTF-8, which `printf '%b'` turns back into the name.

use crate::flags::{CacheArgs, PlaceArgs};
use anyhow::Result;
use clap::{Args, ValueEnum};
use pi_session::dirs::Env;
use pi_session::listing::{self, ListOptions, Listing, Place, Progress};
use pi_session::text::{escape, escape_path};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Where to look (shared by `ls` and `find`).
#[derive(Args)]
pub struct WhereArgs {
    /// The project's working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    place: PlaceArgs,
}

/// `ls --sort`: the order of the rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum SortKey {
    /// Latest activity, newest first (pi's order, the default).
    Modified,
    /// The header's time, newest first.
    Created,
    /// File size, largest first.
    Size,
    /// Message count, most first.
    Messages,
    /// Name or first message, A to Z (ignoring case).
    Name,
}

/// `pi-session ls`.
#[derive(Args)]
#[command(
    after_help = "Columns: ID (the session id's first 8 characters), MODIFIED (local time; --utc), AGE (as pi's /resume picker), MSGS, SIZE, TITLE (a name is marked `*`, else the first message), CWD; PATH with --long. On a terminal: a header row, and rows cut to its width by display width; piped: no header, and titles cut to 100 columns (--header, --width N, --wide).\n\nExamples:\n  pi-session ls --all --since 2d --sort size\n  pi-session ls --cwd ~/src/app --named --long\n  pi-session ls --all --tree --limit 20"
)]
pub struct LsArgs {
    #[command(flatten)]
    place: WhereArgs,
    #[command(flatten)]
    cache: CacheArgs,
    #[command(flatten)]
    quiet: crate::flags::QuietArgs,
    /// Every project's sessions (pi's listAll), not only the current project's.
    #[arg(short, long)]
    all: bool,
    /// One JSON object per line (pi's SessionInfo fields, toISOString dates; a path that
    /// is not UTF-8 adds `pathBytes`, its exact bytes as an array of numbers).
    #[arg(short, long)]
    json: bool,
    /// With --json: also `allMessagesText`.
    #[arg(long)]
    text: bool,
    /// Say on stderr what the listing cache did (files reused, appended, read).
    #[arg(long)]
    cache_stats: bool,
    /// At most N sessions (the first N after --sort and the filters).
    #[arg(short = 'n', long, value_name = "N")]
    limit: Option<usize>,
    /// Order: modified (pi's order, the default), created, size, messages, name.
    #[arg(long, value_enum, value_name = "KEY")]
    sort: Option<SortKey>,
    /// Reverse the order (oldest, smallest, fewest first; name Z to A).
    #[arg(short, long, conflicts_with = "tree")]
    reverse: bool,
    /// Threaded: a session forked or branched from another under it (by `parentSession`),
    /// as pi's picker shows them; each level ordered by its latest activity.
    #[arg(short, long, conflicts_with = "sort")]
    tree: bool,
    /// Only sessions active since DATE: a local date (2025-11-01), date and time
    /// (2025-11-01 14:00) or an age (3d, 2w, 4mo).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only sessions last active before the end of DATE (same forms as --since; a date
    /// includes that whole day).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only sessions that have a name.
    #[arg(long)]
    named: bool,
    /// Also the file of each session (absolute path), as the last column.
    #[arg(short, long)]
    long: bool,
    #[command(flatten)]
    zone: crate::flags::ZoneArgs,
    /// Fit rows into N columns (default, on a terminal: $COLUMNS, else its width; piped:
    /// only titles are cut, to 100 columns). 0: never cut.
    #[arg(short, long, value_name = "N")]
    width: Option<usize>,
    /// Never cut a title, even piped (where titles are cut to 100 columns): the same as
    /// --width 0.
    #[arg(long, conflicts_with = "width")]
    wide: bool,
    /// Print the header row even when stdout is no terminal.
    #[arg(long, overrides_with = "no_header")]
    header: bool,
    /// No header row, even on a terminal.
    #[arg(long, overrides_with = "header")]
    no_header: bool,
    #[command(flatten)]
    color: crate::flags::ColorArgs,
    /// Also list the files that were skipped, and why, on stderr.
    #[arg(long)]
    show_skipped: bool,
}

/// `pi-session find`.
#[derive(Args)]
pub struct FindArgs {
    /// The session id, or a unique prefix of one (four characters or more).
    id: String,
    #[command(flatten)]
    place: WhereArgs,
}

impl LsArgs {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }
}

fn resolve(w: &WhereArgs) -> Result<Place> {
    w.place.resolve(w.cwd.as_deref())
}

/// Run `pi-session ls`; returns the exit code.
///
/// # Errors
/// Output errors; a `--since`/`--until` value that is no date (a usage error).
pub fn run_ls(a: &LsArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    let r = resolve(&a.place)?;
    let zone = a.zone.zone()?;
    let now = crate::when::now_ms();
    let (since, until) = zone.range(a.since.as_deref(), a.until.as_deref(), now)?;
    let (since, until) = (since.and_then(|w| zone.start_ms(w)), until.and_then(|w| zone.end_ms(w)));
    let bar = crate::term::Bar::sessions(a.quiet.quiet);
    let mut cb = |p: &Progress<'_>| bar.set(p.loaded, Some(p.total));
    let mut opts = ListOptions {
        on_progress: bar.active().then_some(&mut cb as &mut listing::ProgressFn<'_>),
        read_mode,
        skip_text: !(a.json && a.text),
        cache: a.cache.cache(),
        ..ListOptions::default()
    };
    let (what, listing) = if a.all {
        match &r.custom {
            Some(dir) => (dir.clone(), listing::list_dir(dir, &mut opts)),
            None => {
                let root = pi_session::dirs::sessions_root(&r.agent_dir);
                (root.clone(), listing::list_all(&root, &mut opts))
            }
        }
    } else {
        let (dir, _) = r.project();
        let l = listing::list_project(&r.env, &r.cwd, r.custom.as_deref(), &r.agent_dir, &mut opts);
        (dir, l)
    };
    bar.clear();
    let listing: Listing = listing?;
    if let Some(c) = &listing.cache {
        if let Some(w) = &c.warning {
            eprintln!("pi-session: warning: {}", escape(w));
        }
        if a.cache_stats {
            eprintln!("{}", cache_stats(c));
        }
    } else if a.cache_stats {
        eprintln!("cache: not used");
    }
    for p in &listing.problems {
        eprintln!("pi-session: {}: {}", escape_path(&p.path), escape(&p.what));
    }
    if listing.sessions.is_empty() && listing.problems.is_empty() {
        eprintln!("pi-session: no sessions in {}", escape_path(&what));
    }
    if listing.sessions.is_empty() && !a.all {
        // pi's picker: "No sessions in current folder. Press Tab to view all."
        eprintln!("pi-session: `pi-session ls --all` lists the sessions of every project");
    }
    // Skipped files are listed with --show-skipped; a file rewritten while it was read
    // always is (it is not listed, and never silently).
    let mut unshown = 0;
    for s in &listing.skipped {
        if a.show_skipped || matches!(s.reason, listing::SkipFileReason::Changed) {
            eprintln!("skipped {}: {}", escape_path(&s.path), escape(&s.reason.to_string()));
        } else {
            unshown += 1;
        }
    }
    if unshown > 0 && std::io::stderr().is_terminal() {
        eprintln!("pi-session: {unshown} file(s) skipped (--show-skipped lists them)");
    }
    let found = listing.sessions.len();
    let mut sessions: Vec<&listing::SessionInfo> = listing
        .sessions
        .iter()
        .filter(|s| !a.named || s.name.is_some())
        .filter(|s| since.is_none_or(|t| s.modified >= t) && until.is_none_or(|t| s.modified < t))
        .collect();
    let mut rows: Vec<Listed<'_>> = sessions.drain(..).map(|s| (s, s.bytes, String::new())).collect();
    sort_rows(&mut rows, a.sort, a.reverse);
    if a.tree {
        rows = thread(rows);
    }
    rows.truncate(a.limit.unwrap_or(usize::MAX));
    if rows.is_empty() && found > 0 {
        eprintln!("pi-session: none of the {found} session(s) matches");
    }
    if a.json {
        // Blocks of 1,024 rows, each formatted in parallel pieces into buffers that are
        // reused, and written in order: all the output at once would be megabytes of
        // fresh pages, which cost more than the formatting.
        use rayon::prelude::*;
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for block in rows.chunks(1024) {
            let pieces = block.chunks(128);
            bufs.resize_with(pieces.len(), Vec::new);
            pieces.zip(bufs.iter_mut()).par_bridge().for_each(|(piece, buf)| {
                buf.clear();
                for (s, _, _) in piece {
                    s.write_json_line(a.text, buf);
                }
            });
            for b in &bufs[..block.len().div_ceil(128)] {
                out.write_all(b)?;
            }
        }
    } else if !rows.is_empty() {
        let stdout_tty = std::io::stdout().is_terminal();
        let look = table::Look {
            width: crate::term::width(a.width),
            header: if a.header {
                true
            } else if a.no_header {
                false
            } else {
                stdout_tty
            },
            long: a.long,
            color: a.color.on_stdout(),
            title_cap: (!a.wide && a.width != Some(0)).then_some(table::PIPED_TITLE),
        };
        let home = (r.env.home.as_os_str().len() > 1).then_some(r.env.home.as_path());
        table::write(&rows, &zone, now, home, &look, out)?;
    }
    // As `grep`: nothing listed is the answer no.
    let code = if rows.is_empty() { 1 } else { 0 };
    // The process ends soon: freeing 10,000 sessions' strings one by one took 5% of a
    // warm listing's time.
    drop(rows);
    std::mem::forget(listing);
    Ok(code)
}

/// A row: the session, its file's size (as read), its `--tree` prefix (`│  ├─ `).
type Listed<'a> = (&'a listing::SessionInfo, u64, String);

/// pi's threaded view of the rows ([`pi_session::view::sessions::thread`]).
fn thread(rows: Vec<Listed<'_>>) -> Vec<Listed<'_>> {
    let infos: Vec<&listing::SessionInfo> = rows.iter().map(|r| r.0).collect();
    let order = pi_session::view::sessions::thread(&infos);
    let mut rows: Vec<Option<Listed<'_>>> = rows.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(n, prefix)| rows[n].take().map(|(s, size, _)| (s, size, prefix)))
        .collect()
}

/// The rows in the order `--sort` (stable: ties keep pi's order) and `--reverse` ask for.
fn sort_rows(rows: &mut [Listed<'_>], key: Option<SortKey>, reverse: bool) {
    // Newest (largest) first; an invalid date (NaN) last.
    let desc = |x: f64, y: f64| y.partial_cmp(&x).unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()));
    match key {
        None => {}
        Some(SortKey::Modified) => rows.sort_by(|a, b| desc(a.0.modified, b.0.modified)),
        Some(SortKey::Created) => rows.sort_by(|a, b| desc(a.0.created, b.0.created)),
        Some(SortKey::Size) => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
        Some(SortKey::Messages) => rows.sort_by_key(|r| std::cmp::Reverse(r.0.message_count)),
        Some(SortKey::Name) => rows.sort_by_cached_key(|r| table::title_of(r.0).0.to_lowercase()),
    }
    if reverse {
        rows.reverse();
    }
}

/// Run `pi-session find ID`: pi's `findById` in the project's folder, then every folder
/// of the sessions root (or the custom dir); prints the path.
///
/// # Errors
/// Output errors.
pub fn run_find(a: &FindArgs, out: &mut impl Write) -> Result<i32> {
    let r = resolve(&a.place)?;
    // pi's findById (the project's folder, then every project) for a whole id; else the
    // one session whose id begins with it, as every SESSION argument takes.
    let exact =
        listing::find_by_id(&r.env, &r.cwd, &a.id, r.custom.as_deref(), &r.agent_dir).or_else(|| match &r.custom {
            Some(dir) => listing::find_by_id_in(&r.env, dir, &a.id, None),
            None => find_anywhere(&r.env, &pi_session::dirs::sessions_root(&r.agent_dir), &a.id),
        });
    let path = match exact {
        Some(p) => p,
        None => crate::locate::by_id(&r, &a.id)?,
    };
    writeln!(out, "{}", escape_path(&path))?;
    Ok(0)
}

/// `ls --cache-stats`: what the cache did, in one line.
fn cache_stats(c: &listing::CacheReport) -> String {
    format!(
        "cache: {} reused, {} appended ({} bytes read), {} read whole ({} bytes), {}",
        c.reused,
        c.appended,
        c.appended_bytes,
        c.read,
        c.read_bytes,
        if c.written { "written" } else { "unchanged" }
    )
}

/// The first session with this whole id in any project folder, in name order.
fn find_anywhere(env: &Env, root: &Path, id: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.iter().find_map(|d| listing::find_by_id_in(env, d, id, None))
}

/// The `ls` table: columns fitted to a width by display width.
pub(crate) mod table {
    use crate::term::{Cell, fit, measure};
    use crate::when::{Zone, age};
    use pi_session::listing::SessionInfo;
    use pi_session::text::{escape, escape_path};
    use std::borrow::Cow;
    use std::io::Write;
    use std::path::Path;
    use unicode_width::UnicodeWidthStr;

    /// How the table looks.
    pub struct Look {
        /// The width to fit rows into; `None`: nothing is cut.
        pub width: Option<usize>,
        /// A header row first.
        pub header: bool,
        /// The path column.
        pub long: bool,
        /// Names in colour, the header in bold.
        pub color: bool,
        /// Without a width: the widest a title is printed (`None`: whole).
        pub title_cap: Option<usize>,
    }

    /// A title column without a known width is padded to at most this many columns (a
    /// longer title pushes the rest of its row to the right, and is printed whole).
    const UNCUT_TITLE: usize = 60;

    /// Piped, a title is cut to this many columns (`--wide`: never), so that a session
    /// is one line of a reasonable length (a first message may be thousands of characters).
    pub const PIPED_TITLE: usize = 100;
    /// The narrowest a title is cut to.
    const MIN_TITLE: usize = 10;
    /// Between two columns.
    const GAP: &str = "  ";

    /// The session's title (`true`: its name), as pi's picker shows it.
    pub fn title_of(s: &SessionInfo) -> (Cow<'_, str>, bool) {
        let t = pi_session::view::sessions::title(s);
        (t.text, t.named)
    }

    /// The short id: the first 8 characters of a string id, a JSON value as JSON, `-`
    /// for none.
    fn short_id(s: &SessionInfo) -> String {
        match &s.id {
            Some(pi_session::Value::String(id)) => {
                let id = id.to_str_lossy();
                let end = id.char_indices().nth(8).map_or(id.len(), |(i, _)| i);
                escape(&id[..end]).into_owned()
            }
            Some(v) => {
                let j = v.stringify();
                let end = j.char_indices().nth(8).map_or(j.len(), |(i, _)| i);
                escape(&j[..end]).into_owned()
            }
            None => "-".into(),
        }
    }

    /// What a row shows, before it is fitted.
    struct Row<'a> {
        prefix: &'a str,
        id: String,
        modified: String,
        age: String,
        msgs: String,
        size: String,
        title: Cow<'a, str>,
        named: bool,
        cwd: String,
        path: String,
    }

    /// Writes the table of `rows` (session and file size).
    ///
    /// # Errors
    /// Output errors.
    pub fn write(
        rows: &[(&SessionInfo, u64, String)],
        zone: &Zone,
        now: f64,
        home: Option<&Path>,
        look: &Look,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        // The widest a title or cwd can be shown (or padded to): nothing is measured
        // beyond it.
        let cap = look.width.unwrap_or(2 + UNCUT_TITLE);
        let cells: Vec<Row<'_>> = rows
            .par_iter()
            .map(|(s, size, prefix)| {
                let (s, size) = (*s, *size);
                let (title, named) = title_of(s);
                Row {
                    prefix: prefix.as_str(),
                    id: short_id(s),
                    modified: zone.local(s.modified).unwrap_or_else(|| {
                        if s.modified.is_nan() {
                            "(invalid date)"
                        } else {
                            "(out of range)"
                        }
                        .into()
                    }),
                    age: age(s.modified, now),
                    msgs: s.message_count.to_string(),
                    size: crate::term::human_size(size),
                    title,
                    named,
                    cwd: pi_session::view::sessions::shorten_home(&s.cwd.to_str_lossy(), home),
                    path: if look.long {
                        escape_path(&std::path::absolute(&s.path).unwrap_or_else(|_| s.path.clone())).into_owned()
                    } else {
                        String::new()
                    },
                }
            })
            .collect();
        let modified_title = if look.header {
            // The zone once: its abbreviations over the rows shown (CET/CEST across a
            // change of summer time).
            let mut names: Vec<String> = Vec::new();
            for (s, _, _) in rows {
                if let Some(a) = zone.abbreviation(s.modified)
                    && !names.contains(&a)
                {
                    names.push(a);
                }
            }
            if names.is_empty() {
                names.push(zone.abbreviation(now).unwrap_or_else(|| "UTC".into()));
            }
            format!("MODIFIED ({})", names.join("/"))
        } else {
            String::new()
        };
        let head = |h: &str| if look.header { h.width() } else { 0 };
        let col = |h: &str, f: &dyn for<'r> Fn(&'r Row<'_>) -> &'r str| {
            cells.iter().map(|r| f(r).width()).max().unwrap_or(0).max(head(h))
        };
        let w_id = col("ID", &|r| &r.id);
        let w_mod = col(&modified_title, &|r| &r.modified);
        let w_age = col("AGE", &|r| &r.age);
        let w_msgs = col("MSGS", &|r| &r.msgs);
        let w_size = col("SIZE", &|r| &r.size);
        let w_path = if look.long { col("PATH", &|r| &r.path) } else { 0 };
        // A title is its 2-column marker (`* ` for a name) and its text.
        let nat_title = cells
            .par_iter()
            .map(|r| r.prefix.width() + 2 + measure(&r.title, cap))
            .max()
            .unwrap_or(0)
            .max(head("  TITLE"));
        let nat_cwd = cells
            .par_iter()
            .map(|r| measure(&r.cwd, look.width.unwrap_or(usize::MAX)))
            .max()
            .unwrap_or(0)
            .max(head("CWD"));
        let fixed = w_id + w_mod + w_age + w_msgs + w_size + 5 * GAP.len();
        let path_part = if look.long { GAP.len() + w_path } else { 0 };
        let (w_title, w_cwd) = match look.width {
            None => (nat_title.min(2 + UNCUT_TITLE), nat_cwd),
            Some(w) => {
                let rest = w.saturating_sub(fixed + GAP.len() + path_part);
                if nat_title + nat_cwd <= rest {
                    (nat_title, nat_cwd)
                } else {
                    // The cwd gets a third (at least 12 columns, no more than it needs),
                    // the title the rest (at least MIN_TITLE, no more than it needs),
                    // the cwd what the title leaves. Below about 60 columns the row is
                    // wider than `w`, and with --long by the path.
                    let c = nat_cwd.min((rest / 3).max(12));
                    let t = rest.saturating_sub(c).max(2 + MIN_TITLE).min(nat_title);
                    let c = nat_cwd.min(rest.saturating_sub(t));
                    (t, c)
                }
            }
        };
        let (bold, yellow) = if look.color {
            let b = anstyle::Style::new().bold();
            let y = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Yellow.into()));
            (Some(b), Some(y))
        } else {
            (None, None)
        };
        let mut text = String::new();
        if look.header {
            let mut line = String::new();
            push_left(&mut line, "ID", w_id);
            line.push_str(GAP);
            push_left(&mut line, &modified_title, w_mod);
            line.push_str(GAP);
            push_right(&mut line, "AGE", w_age);
            line.push_str(GAP);
            push_right(&mut line, "MSGS", w_msgs);
            line.push_str(GAP);
            push_right(&mut line, "SIZE", w_size);
            line.push_str(GAP);
            let last = !look.long;
            push_cell(&mut line, &fit("  TITLE", w_title, true), w_title, false);
            line.push_str(GAP);
            push_cell(&mut line, &fit("CWD", w_cwd, true), w_cwd, last);
            if look.long {
                line.push_str(GAP);
                line.push_str("PATH");
            }
            let line = line.trim_end();
            match bold {
                Some(b) => text.push_str(&format!("{b}{line}{b:#}\n")),
                None => {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        out.write_all(text.as_bytes())?;
        let cut = look.width.is_some();
        let pieces: Vec<String> = cells
            .par_chunks(256)
            .map(|chunk| {
                let bytes: usize = chunk.iter().map(|r| r.title.len() + r.cwd.len() + r.path.len()).sum();
                let mut buf = String::with_capacity(bytes + chunk.len() * 64);
                for r in chunk {
                    push_left(&mut buf, &r.id, w_id);
                    buf.push_str(GAP);
                    push_left(&mut buf, &r.modified, w_mod);
                    buf.push_str(GAP);
                    push_right(&mut buf, &r.age, w_age);
                    buf.push_str(GAP);
                    push_right(&mut buf, &r.msgs, w_msgs);
                    buf.push_str(GAP);
                    push_right(&mut buf, &r.size, w_size);
                    buf.push_str(GAP);
                    buf.push_str(r.prefix);
                    buf.push_str(if r.named { "* " } else { "  " });
                    let room = w_title.saturating_sub(2 + r.prefix.width());
                    let t = match look.title_cap {
                        Some(c) if !cut => fit(&r.title, c, true),
                        _ => fit(&r.title, room, cut),
                    };
                    match yellow {
                        Some(y) if r.named => {
                            buf.push_str(&format!("{y}{}{y:#}", t.text));
                            pad(&mut buf, room, t.width);
                        }
                        _ => push_cell(&mut buf, &t, room, false),
                    }
                    buf.push_str(GAP);
                    let c = crate::term::fit_left(&r.cwd, w_cwd, cut);
                    push_cell(&mut buf, &c, w_cwd, !look.long);
                    if look.long {
                        buf.push_str(GAP);
                        buf.push_str(&r.path);
                    }
                    let kept = buf.trim_end_matches(' ').len();
                    buf.truncate(kept);
                    buf.push('\n');
                }
                buf
            })
            .collect();
        for p in pieces {
            out.write_all(p.as_bytes())?;
        }
        Ok(())
    }

    fn pad(buf: &mut String, to: usize, have: usize) {
        for _ in have..to {
            buf.push(' ');
        }
    }

    /// Text already escaped (an id, a date, a number, a path) left-aligned in `w`.
    fn push_left(buf: &mut String, s: &str, w: usize) {
        buf.push_str(s);
        pad(buf, w, s.width());
    }

    /// Text already escaped, right-aligned in `w`.
    fn push_right(buf: &mut String, s: &str, w: usize) {
        pad(buf, w, s.width());
        buf.push_str(s);
    }

    /// A fitted cell, padded to `w` unless it is the last of its row.
    fn push_cell(buf: &mut String, c: &Cell, w: usize, last: bool) {
        buf.push_str(&c.text);
        if !last {
            pad(buf, w, c.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::term::human_size;

    #[test]
    fn sizes_as_people_read_them() {
        for (n, want) in [
            (0, "0B"),
            (1023, "1023B"),
            (1024, "1.0K"),
            (1260, "1.2K"),
            (10 * 1024 - 52, "9.9K"),
            (10 * 1024 - 10, "10K"),
            (1024 * 1024 - 1, "1.0M"),
            (1_258_291, "1.2M"),
            (300 << 20, "300M"),
            (3 << 30, "3.0G"),
        ] {
            assert_eq!(human_size(n), want, "{n:?}");
        }
    }
}
