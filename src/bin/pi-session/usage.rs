//! `pi-session usage [daily|weekly|monthly|session|model|blocks|statusline] [SESSION|DIR ...]`: tokens and cost
//! of every usage record (`pi_session::usage`), each counted once, as a table that fits
//! the terminal or as JSON in the shape ccusage prints (docs/cli.md, "usage").

use crate::show::{Kind, Printable};
use anyhow::Result;
use clap::Args;
use pi_session::text::{escape, escape_path};
use pi_session::usage::{self, Bound, Breakdown, CollectOptions, Filter, Period, Report, Row, Source, Sums};
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use unicode_width::UnicodeWidthStr;

/// `pi-session usage`.
#[derive(Args)]
#[command(
    after_help = "Counted: the usage of assistant messages, tool results (work a tool did with an LLM), compactions and branch summaries, and `usage` entries, as pi's /session sums them. A record copied into several files (forks, branched sessions, copies) is counted once, for the file with the oldest header timestamp (ties: the smaller path); --no-dedup counts every copy. Cost is the one pi recorded.\n\nExit status: 0 a report was printed (also an empty one), 1 --strict and a record had no time of its own, 2 an error.\n\nExamples:\n  pi-session usage\n  pi-session usage monthly --breakdown\n  pi-session usage session --since 20251101 --json\n  pi-session usage daily --timezone Pacific/Auckland --source assistant,tool\n  pi-session usage weekly --start-of-week monday\n  pi-session usage blocks --active\n  pi-session usage statusline"
)]
pub struct UsageArgs {
    /// The report (daily, weekly, monthly, session, model, blocks: five-hour billing
    /// blocks, or statusline: one line with the cost of the session, of today and of the
    /// active block; default daily), then sessions
    /// (files, or ids or unique prefixes of ids) and folders; default: every session of
    /// the agent dir (or the custom session dir).
    #[arg(value_name = "REPORT|SESSION|DIR")]
    args: Vec<String>,
    /// Only records since DATE: a day (2025-11-01 or 20251101, in the report's zone), a
    /// date and time (2025-11-01 14:00) or an age (3d, 2w, 4mo), as `ls` and `search`
    /// take it.
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only records until the end of DATE (same forms; a day includes all of it).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Days and months in this zone.
    #[command(flatten)]
    zone: crate::flags::ZoneArgs,
    /// Only sessions started in DIR or a folder below it (their header's cwd).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Only records from these sources (comma-separated or repeated): assistant, tool,
    /// summary, entry.
    #[arg(long, value_delimiter = ',', value_name = "SOURCE")]
    source: Vec<String>,
    /// A row per model under each row.
    #[arg(short = 'b', long)]
    breakdown: bool,
    /// The first day of a week in the `weekly` report.
    #[arg(long, value_enum, value_name = "DAY", default_value_t = WeekStart::Sunday)]
    start_of_week: WeekStart,
    /// Only the active block (`blocks`): the one whose last record is less than five
    /// hours old and whose five hours are not over.
    #[arg(long)]
    active: bool,
    /// Count a record once per file that holds it (the naive sum).
    #[arg(long)]
    no_dedup: bool,
    /// Fail (exit 1) when a record had no valid time of its own and was placed at its
    /// entry's or session's time, or left out.
    #[arg(long)]
    strict: bool,
    /// Newest rows first.
    #[arg(long, value_enum, default_value_t = Order::Asc)]
    order: Order,
    /// JSON (docs/cli.md).
    #[arg(short, long)]
    pub json: bool,
    /// Draw the table again whenever a session changes (file events), and every
    /// --interval seconds, until Ctrl-C; on a terminal only.
    #[arg(long, conflicts_with = "json")]
    live: bool,
    /// Seconds between two drawings of --live when nothing changes (the active block's
    /// time left moves on).
    #[arg(long, value_name = "SECS", default_value_t = 5.0, requires = "live")]
    interval: f64,
    /// Cut the table to N columns (default: $COLUMNS, else the terminal's width; piped
    /// output is not cut). 0: never cut.
    #[arg(long, value_name = "N")]
    width: Option<usize>,
    #[command(flatten)]
    place: crate::flags::PlaceArgs,
    #[command(flatten)]
    cache: crate::flags::CacheArgs,
    #[command(flatten)]
    quiet: crate::flags::QuietArgs,
}

/// The first day of a week.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WeekStart {
    Sunday,
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
}

impl WeekStart {
    fn weekday(self) -> jiff::civil::Weekday {
        use jiff::civil::Weekday as W;
        match self {
            WeekStart::Sunday => W::Sunday,
            WeekStart::Monday => W::Monday,
            WeekStart::Tuesday => W::Tuesday,
            WeekStart::Wednesday => W::Wednesday,
            WeekStart::Thursday => W::Thursday,
            WeekStart::Friday => W::Friday,
            WeekStart::Saturday => W::Saturday,
        }
    }
}

/// Row order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Order {
    /// Oldest (daily, monthly, session) or most expensive (model) first.
    Asc,
    /// The other way round.
    Desc,
}

fn usage_error(text: String) -> anyhow::Error {
    anyhow::anyhow!(Printable::kind(text, Kind::Usage))
}

/// Whether `word` reads as a report's name rather than a session id or a path: letters
/// only, one of them beyond `f` (a session id is hexadecimal digits and dashes).
fn looks_like_a_report(word: &str) -> bool {
    !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_alphabetic())
        && word.bytes().any(|b| b.to_ascii_lowercase() > b'f')
}

/// What `usage` is asked for: a report (a table or its JSON), or the status line.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    Report(Period),
    Statusline,
}

impl UsageArgs {
    /// The report kind and the sessions and folders named.
    ///
    /// # Errors
    /// A first word that is no report and names no file (`usage blocks`): a usage error
    /// that lists the reports, not a lookup of a session id.
    fn split(&self) -> Result<(Want, Vec<PathBuf>)> {
        let mut args = self.args.as_slice();
        let report = |p| Some(Want::Report(p));
        let want = match args.first().map(String::as_str) {
            Some("daily") => report(Period::Daily),
            Some("weekly") => report(Period::Weekly(self.start_of_week.weekday())),
            Some("monthly") => report(Period::Monthly),
            Some("session") => report(Period::Session),
            Some("model") => report(Period::Model),
            Some("blocks") => report(Period::Blocks),
            Some("statusline") => Some(Want::Statusline),
            _ => None,
        };
        if want.is_some() {
            args = &args[1..];
        } else if let Some(first) = args.first()
            && looks_like_a_report(first)
            && std::fs::symlink_metadata(first).is_err()
        {
            return Err(usage_error(format!(
                "no report {} (the reports: daily, weekly, monthly, session, model, blocks, statusline)",
                escape(first)
            )));
        }
        Ok((
            want.unwrap_or(Want::Report(Period::Daily)),
            args.iter().map(PathBuf::from).collect(),
        ))
    }

    fn filter(&self, period: Period) -> Result<(Filter, String)> {
        let (tz, zone_name) = self.zone.tz()?;
        let mut sources = Vec::new();
        for s in &self.source {
            match Source::parse(s) {
                Some(x) => sources.push(x),
                None => {
                    return Err(usage_error(format!(
                        "--source {}: no such source (one of assistant, tool, summary, entry)",
                        escape(s)
                    )));
                }
            }
        }
        let cwd = self
            .cwd
            .as_ref()
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()));
        let zone = crate::when::Zone::with(tz.clone());
        let (since, until) = zone.range(self.since.as_deref(), self.until.as_deref(), crate::when::now_ms())?;
        let bound = |w: crate::when::When| match w {
            crate::when::When::Day(d) => Bound::Day(d),
            crate::when::When::At(ms) => Bound::At(ms),
        };
        let f = Filter {
            period,
            tz,
            since: since.map(bound),
            until: until.map(bound),
            cwd,
            sources,
            dedup: !self.no_dedup,
            session: None,
        };
        Ok((f, zone_name))
    }
}

/// Run `pi-session usage`; returns the exit code.
///
/// # Errors
/// A bad option (usage), a named session or folder that cannot be read.
pub fn run(a: &UsageArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    let (want, named) = a.split()?;
    match want {
        Want::Statusline if a.live => Err(usage_error(
            "--live draws the tables; statusline prints one line each time it runs".to_string(),
        )),
        Want::Statusline => run_statusline(a, &named, read_mode, out),
        Want::Report(period) if a.live => live(a, period, &named, read_mode, out),
        Want::Report(period) => once(a, period, &named, read_mode, out, !a.quiet.quiet),
    }
}

/// `--live`: the report drawn from the top of the screen, again after each change to a
/// session (file events on the folders read, through `notify`; without them, the
/// interval alone) and every `--interval` seconds.
fn live(
    a: &UsageArgs,
    period: Period,
    named: &[PathBuf],
    read_mode: pi_session::ReadMode,
    out: &mut impl Write,
) -> Result<i32> {
    use std::sync::mpsc;
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(usage_error(
            "--live draws on a terminal, and standard output is not one".to_string(),
        ));
    }
    if !(a.interval.is_finite() && a.interval >= 0.5) {
        return Err(usage_error(format!("--interval {}: at least 0.5 seconds", a.interval)));
    }
    let roots = a.place.roots(named)?;
    let (tx, rx) = mpsc::channel::<()>();
    let watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        // Reads (this process's own among them) change nothing.
        if !e.is_ok_and(|e| e.kind.is_access()) {
            let _ = tx.send(());
        }
    });
    let mut watched = false;
    let _watcher = watcher.ok().map(|mut w| {
        use notify::Watcher as _;
        for r in &roots {
            watched |= w.watch(r, notify::RecursiveMode::Recursive).is_ok();
        }
        w
    });
    let every = std::time::Duration::from_secs_f64(a.interval);
    let (tz, _) = a.zone.tz()?;
    let zone = crate::when::Zone::with(tz);
    loop {
        let mut page = Vec::new();
        once(a, period, named, read_mode, &mut page, false)?;
        let at = zone.local(crate::when::now_ms()).unwrap_or_default();
        // Home, erase the screen, the page.
        out.write_all(b"\x1b[H\x1b[2J")?;
        out.write_all(&page)?;
        writeln!(
            out,
            "(live: drawn {at}; again {}every {}s; Ctrl-C stops)",
            if watched { "on each change and " } else { "" },
            a.interval
        )?;
        out.flush()?;
        match rx.recv_timeout(every) {
            // A burst of events (an append is several) is one drawing.
            Ok(()) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
                while rx.try_recv().is_ok() {}
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(every),
        }
    }
}

/// One report, printed to `out`; `progress`: the progress bar on stderr.
fn once(
    a: &UsageArgs,
    period: Period,
    named: &[PathBuf],
    read_mode: pi_session::ReadMode,
    out: &mut impl Write,
    progress: bool,
) -> Result<i32> {
    if a.active && period != Period::Blocks {
        return Err(usage_error("--active is for the blocks report".to_string()));
    }
    let (filter, zone_name) = a.filter(period)?;
    let roots = a.place.roots(named)?;
    let cache = a.cache.cache();
    let bar = crate::term::Bar::sessions(!progress);
    let mut progress = |done: usize, total: usize| bar.set(done, Some(total));
    let mut opts = CollectOptions {
        on_progress: Some(&mut progress),
        read_mode,
        cache,
        ..CollectOptions::default()
    };
    let mut report = usage::collect(&roots, &filter, &mut opts).map_err(anyhow::Error::new)?;
    bar.clear();
    for w in &report.cache_warnings {
        eprintln!("pi-session: warning: {}", escape(w));
    }
    let mut errors = 0;
    for s in &report.skipped {
        // A file named on the command line that is no session is an error; one found in a
        // folder is passed over (and counted in the report).
        if roots.contains(&s.path) {
            eprintln!(
                "pi-session: {}: {}",
                escape_path(&s.path),
                escape(&s.reason.to_string())
            );
            errors += 1;
        }
    }
    for (p, e) in &report.unreadable {
        // (The error names its file; a folder's does not.)
        if e.contains(&*p.to_string_lossy()) {
            eprintln!("pi-session: {}", escape(e));
        } else {
            eprintln!("pi-session: {}: {}", escape_path(p), escape(e));
        }
        errors += 1;
    }
    let now = crate::when::now_ms();
    if a.active {
        report.rows.retain(|r| r.block_state(now).is_some_and(|b| b.active));
        // The total is the active block's (or nothing).
        report.totals = report.rows.first().cloned().map_or_else(Row::default, |r| Row {
            key: String::new(),
            block: None,
            ..r
        });
    }
    if a.order == Order::Desc {
        report.rows.reverse();
    }
    if a.json {
        out.write_all(json(&report, &zone_name, now).as_bytes())?;
    } else {
        let width = crate::term::width(a.width);
        // A session row is named by its title: the listing's answers (through its cache),
        // which the usage records do not hold.
        if period == Period::Session {
            let listed = pi_session::search::sessions_in(&roots, a.cache.cache(), read_mode, None)?;
            let mut by_path: std::collections::HashMap<PathBuf, pi_session::SessionInfo> =
                listed.sessions.into_iter().map(|s| (s.path.clone(), s)).collect();
            for row in &mut report.rows {
                if let Some(s) = &mut row.session
                    && let Some(l) = by_path.remove(&s.path)
                {
                    s.name = l.name;
                    s.first_message = l.first_message;
                }
            }
        }
        out.write_all(table(&report, a.breakdown, width, &filter.tz, now).as_bytes())?;
        let untimed = report.time_from_entry + report.time_from_header;
        if untimed + report.undated > 0 {
            eprintln!(
                "pi-session: {untimed} records had no valid time of their own (placed at their entry's or session's), {} had none and were left out",
                report.undated
            );
        }
    }
    if errors > 0 {
        return Ok(2);
    }
    let untimed = report.time_from_entry + report.time_from_header + report.undated;
    if a.strict && untimed > 0 {
        eprintln!("pi-session: --strict: {untimed} records had no valid time of their own");
        return Ok(1);
    }
    Ok(0)
}

/// `pi-session usage statusline [SESSION]`: one line (or `--json`) with the cost of the
/// session (SESSION, else the newest session of the current folder, as `pi -c` picks it),
/// of today and of the active block with its time left and burn rate.
fn run_statusline(
    a: &UsageArgs,
    named: &[PathBuf],
    read_mode: pi_session::ReadMode,
    out: &mut impl Write,
) -> Result<i32> {
    if a.active || a.breakdown || a.since.is_some() || a.until.is_some() || a.cwd.is_some() || !a.source.is_empty() {
        return Err(usage_error(
            "statusline counts every record: --active, --breakdown, --since, --until, --cwd and --source are for the other reports".to_string(),
        ));
    }
    let session = match named {
        [] => {
            let (dir, cwd) = a.place.resolve(None)?.project();
            pi_session::listing::find_most_recent(&a.place.env()?, &dir, cwd.as_deref())
        }
        [one] => Some(crate::locate::session(one, || a.place.resolve(None))?),
        _ => return Err(usage_error("statusline takes one SESSION at most".to_string())),
    };
    let (tz, zone_name) = a.zone.tz()?;
    let mut roots = a.place.roots(&[])?;
    // (A session from elsewhere is read too; a record read twice still counts once.)
    roots.extend(session.clone());
    let mut opts = CollectOptions {
        read_mode,
        cache: a.cache.cache(),
        ..CollectOptions::default()
    };
    let mut g = usage::gather(&roots, &mut opts).map_err(anyhow::Error::new)?;
    let now = crate::when::now_ms();
    let mut s = g.statusline(session.as_deref(), &tz, now);
    if !g.intact() {
        // (The usage summary was cut short under us: counted again without the caches.)
        opts.cache = None;
        g = usage::gather(&roots, &mut opts).map_err(anyhow::Error::new)?;
        s = g.statusline(session.as_deref(), &tz, now);
    }
    for w in &g.cache_warnings {
        eprintln!("pi-session: warning: {}", escape(w));
    }
    if a.json {
        let mut o = String::new();
        let _ = write!(
            o,
            "{{\"now\":{},\"timeZone\":{},\"today\":{{\"date\":{},",
            iso(now),
            js(&zone_name),
            js(&s.today.to_string())
        );
        sums_json(&s.today_sums, "totalCost", &mut o);
        o.push_str("},\"session\":");
        match (&session, &s.session) {
            (Some(_), Some((p, sums))) => {
                let _ = write!(o, "{{\"sessionPath\":{},", js(&p.to_string_lossy()));
                sums_json(sums, "totalCost", &mut o);
                o.push('}');
            }
            _ => o.push_str("null"),
        }
        o.push_str(",\"block\":");
        match (
            &s.block,
            s.block.as_ref().and_then(|b| Some((b.block?, b.block_state(now)?))),
        ) {
            (Some(row), Some((b, st))) => {
                let _ = write!(o, "{{\"id\":{},", js(&row.key));
                block_json(row, b, st, &mut o);
                sums_json(&row.sums, "totalCost", &mut o);
                o.push('}');
            }
            _ => o.push_str("null"),
        }
        o.push_str("}\n");
        out.write_all(o.as_bytes())?;
        return Ok(0);
    }
    let mut parts = Vec::new();
    if let Some((_, sums)) = &s.session {
        parts.push(format!("{} session", money(sums.cost(), 2)));
    }
    parts.push(format!("{} today", money(s.today_sums.cost(), 2)));
    let mut line = parts.join(" / ");
    match s
        .block
        .as_ref()
        .and_then(|row| Some((row, row.block?, row.block_state(now)?)))
    {
        Some((row, b, st)) => {
            let _ = write!(
                line,
                " / {} block ({} left)",
                money(row.sums.cost(), 2),
                duration(b.end_ms - now)
            );
            if let Some(cph) = st.cost_per_hour {
                let _ = write!(line, " | {}/h", money(cph, 2));
            }
        }
        None => line.push_str(" / no active block"),
    }
    line.push('\n');
    out.write_all(line.as_bytes())?;
    Ok(0)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with `decimals` decimals.
fn money(c: f64, decimals: usize) -> String {
    format!("${c:.decimals$}")
}

/// One precision for every cost of a table: cents, unless a cost that is not 0 would
/// show as `$0.00`, then four decimals for all (`--json` has the exact figures).
fn cost_decimals(r: &Report, breakdown: bool) -> usize {
    let tiny = |s: &Sums| s.cost() != 0.0 && s.cost().abs() < 0.005;
    let any = r
        .rows
        .iter()
        .any(|row| tiny(&row.sums) || (breakdown && row.models.iter().any(|b| tiny(&b.sums))))
        || tiny(&r.totals.sums);
    if any { 4 } else { 2 }
}

fn model_name(b: &Breakdown) -> String {
    match (b.provider.as_str(), b.model.as_str()) {
        (_, "") => "(not recorded)".to_string(),
        (_, m) => m.to_string(),
    }
}

/// The widest a session's title is in the table (a first message may be thousands of
/// characters).
const TITLE_COLUMNS: usize = 50;

/// The label of a row in the first column; a session's is its id (8 characters), the day
/// of its last record (in `tz`) and its title (its name, else its first message, else its
/// working directory), as `ls` shows a session.
fn label(r: &Row, period: Period, tz: &jiff::tz::TimeZone, now: f64) -> String {
    match (period, &r.session) {
        (Period::Session, Some(s)) => {
            let id =
                s.id.as_ref()
                    .and_then(|v| v.as_js_str())
                    // (Escaped, as every string from a session is: an id may hold controls.)
                    .map(|x| escape(&x.to_str_lossy().chars().take(8).collect::<String>()).into_owned());
            let Some(id) = id.filter(|i| !i.is_empty()) else {
                return escape_path(&s.path).into_owned();
            };
            let day = jiff::Timestamp::from_millisecond(r.last_ms as i64)
                .map(|t| t.to_zoned_datetime(tz.clone()).date().to_string())
                .unwrap_or_else(|_| "?".into());
            let title = pi_session::view::sessions::title(s);
            let what = if title.text.is_empty() {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                pi_session::view::sessions::shorten_home(&s.cwd.to_str_lossy(), home.as_deref())
            } else {
                title.text.into_owned()
            };
            format!("{id}  {day}  {}", crate::term::fit(&what, TITLE_COLUMNS, true).text)
        }
        (Period::Model, _) if r.key.is_empty() => "(not recorded)".to_string(),
        (Period::Blocks, _) => match r.block {
            Some(b) => {
                let zone = crate::when::Zone::of(tz.clone());
                let start = zone.local(b.start_ms).unwrap_or_else(|| "?".into());
                if b.gap {
                    format!("{start}  (gap of {})", duration(b.end_ms - b.start_ms))
                } else if r.block_state(now).is_some_and(|s| s.active) {
                    format!("{start}  (active)")
                } else {
                    start
                }
            }
            None => escape(&r.key).into_owned(),
        },
        _ => escape(&r.key).into_owned(),
    }
}

/// A length of time in hours and minutes: `2h 13m`, `45m`, `3d 2h`.
fn duration(ms: f64) -> String {
    let mins = (ms / 60_000.0).floor().max(0.0) as u64;
    let (d, h, m) = (mins / 1440, mins / 60 % 24, mins % 60);
    match (d, h) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

fn numbers(s: &Sums, decimals: usize) -> [String; 6] {
    let t = &s.tokens;
    [
        thousands(t.input),
        thousands(t.output),
        thousands(t.cache_write),
        thousands(t.cache_read),
        thousands(t.total()),
        money(s.cost(), decimals),
    ]
}

/// The table: a row per period (session, model), a total row; with `breakdown`, a row
/// per model under each. The first two columns give way when `width` is short.
fn table(r: &Report, breakdown: bool, width: Option<usize>, tz: &jiff::tz::TimeZone, now: f64) -> String {
    let first = match r.period {
        Period::Daily => "Date",
        Period::Weekly(_) => "Week",
        Period::Monthly => "Month",
        Period::Session => "Session   Last Day    Title",
        Period::Model => "Model",
        Period::Blocks => "Block Start",
    };
    let heads = [
        "Input",
        "Output",
        "Cache Write",
        "Cache Read",
        "Total Tokens",
        "Cost (USD)",
    ];
    let with_models = r.period != Period::Model;
    let decimals = cost_decimals(r, breakdown && with_models);
    // Lines: (label, models, numbers, is a sub-row).
    let mut lines: Vec<(String, String, [String; 6])> = Vec::new();
    for row in &r.rows {
        let models: Vec<String> = row.models.iter().map(|b| escape(&model_name(b)).into_owned()).collect();
        // (A gap has no numbers: nothing was used in it.)
        let gap = row.block.is_some_and(|b| b.gap);
        lines.push((
            label(row, r.period, tz, now),
            models.join(", "),
            if gap {
                Default::default()
            } else {
                numbers(&row.sums, decimals)
            },
        ));
        if breakdown && with_models {
            for b in &row.models {
                lines.push((
                    format!("  └─ {}", escape(&model_name(b))),
                    String::new(),
                    numbers(&b.sums, decimals),
                ));
            }
        }
    }
    let total_label = "Total".to_string();
    let totals = numbers(&r.totals.sums, decimals);
    let mut num_w = heads.map(str::len);
    for (_, _, n) in
        lines
            .iter()
            .map(|l| (&l.0, &l.1, &l.2))
            .chain(std::iter::once((&total_label, &String::new(), &totals)))
    {
        for (w, x) in num_w.iter_mut().zip(n) {
            *w = (*w).max(x.len());
        }
    }
    let mut first_w = lines
        .iter()
        .map(|l| l.0.width())
        .max()
        .unwrap_or(0)
        .max(first.len())
        .max(5);
    let mut models_w = if with_models {
        lines.iter().map(|l| l.1.width()).max().unwrap_or(0).max("Models".len())
    } else {
        0
    };
    let fixed: usize = num_w.iter().map(|w| w + 2).sum();
    if let Some(w) = width {
        // The models column shrinks first (to 12), then the first one (to 12).
        let gap = if with_models { 2 } else { 0 };
        let room = w.saturating_sub(fixed + gap);
        if first_w + models_w > room {
            models_w = room.saturating_sub(first_w).max(if with_models { 12 } else { 0 });
            if first_w + models_w > room {
                first_w = room.saturating_sub(models_w).max(12);
            }
        }
    }
    let mut out = String::new();
    let put = |a: &str, m: &str, n: &[String; 6], out: &mut String| {
        let a = crate::term::cut(a, first_w);
        let _ = write!(out, "{a}{}", " ".repeat(first_w - a.width()));
        if with_models {
            let m = crate::term::cut(m, models_w);
            let _ = write!(out, "  {m}{}", " ".repeat(models_w - m.width()));
        }
        for (x, w) in n.iter().zip(num_w) {
            let _ = write!(out, "  {x:>w$}");
        }
        out.push('\n');
    };
    put(first, "Models", &heads.map(String::from), &mut out);
    let rule = first_w + if with_models { models_w + 2 } else { 0 } + fixed;
    out.push_str(&"─".repeat(rule));
    out.push('\n');
    for (a, m, n) in &lines {
        put(a, m, n, &mut out);
    }
    if r.rows.is_empty() {
        out.push_str("(no usage records)\n");
    }
    out.push_str(&"─".repeat(rule));
    out.push('\n');
    put(&total_label, "", &totals, &mut out);
    if let Some(line) = r.rows.iter().find_map(|row| active_line(row, now, decimals)) {
        out.push_str(&line);
    }
    out
}

/// What an active block tells: time left, burn rate, projection.
fn active_line(row: &Row, now: f64, decimals: usize) -> Option<String> {
    let st = row.block_state(now).filter(|s| s.active)?;
    let left = row.block.map_or(0.0, |b| b.end_ms - now);
    let mut line = format!("Active block: {} left", duration(left));
    if let (Some(tpm), Some(cph)) = (st.tokens_per_minute, st.cost_per_hour) {
        let _ = write!(
            line,
            ", {} tokens/min, {}/h",
            thousands(tpm.round() as u64),
            money(cph, 2)
        );
    }
    if let (Some(t), Some(c)) = (st.projected_tokens, st.projected_cost) {
        let _ = write!(
            line,
            "; at this rate {} tokens, {} by its end",
            thousands(t.round() as u64),
            money(c, decimals)
        );
    }
    line.push('\n');
    Some(line)
}

fn js(s: &str) -> String {
    pi_session::Value::str(s).stringify()
}

fn js_num(x: f64) -> String {
    pi_session::Value::Number(x).stringify()
}

fn iso(ms: f64) -> String {
    jiff::Timestamp::from_millisecond(ms as i64)
        .map(|t| js(&t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
        .unwrap_or_else(|_| "null".to_string())
}

/// The token fields and cost of sums, ccusage's names (`costKey` for the cost).
fn sums_json(s: &Sums, cost_key: &str, out: &mut String) {
    let t = &s.tokens;
    let _ = write!(
        out,
        "\"inputTokens\":{},\"outputTokens\":{},\"cacheCreationTokens\":{},\"cacheReadTokens\":{},\"totalTokens\":{},\"{cost_key}\":{},\"records\":{}",
        t.input,
        t.output,
        t.cache_write,
        t.cache_read,
        t.total(),
        js_num(s.cost()),
        s.records
    );
}

/// A block's own fields, ccusage's names: `startTime`, `endTime`, `actualEndTime` (its
/// last record), `isActive`, `isGap`, `burnRate` and `projection` (`null` when none).
fn block_json(row: &Row, b: pi_session::usage::BlockSpan, st: pi_session::usage::BlockState, out: &mut String) {
    let _ = write!(
        out,
        "\"startTime\":{},\"endTime\":{},\"actualEndTime\":{},\"isActive\":{},\"isGap\":{},",
        iso(b.start_ms),
        iso(b.end_ms),
        if b.gap { "null".to_string() } else { iso(row.last_ms) },
        st.active,
        b.gap
    );
    match (st.tokens_per_minute, st.cost_per_hour) {
        (Some(t), Some(c)) => {
            let _ = write!(
                out,
                "\"burnRate\":{{\"tokensPerMinute\":{},\"costPerHour\":{}}},",
                js_num(t),
                js_num(c)
            );
        }
        _ => out.push_str("\"burnRate\":null,"),
    }
    match (st.remaining_minutes, st.projected_tokens, st.projected_cost) {
        (Some(m), Some(t), Some(c)) => {
            let _ = write!(
                out,
                "\"projection\":{{\"totalTokens\":{},\"totalCost\":{},\"remainingMinutes\":{}}},",
                js_num(t.round()),
                js_num(c),
                js_num(m.round())
            );
        }
        _ => out.push_str("\"projection\":null,"),
    }
}

fn row_json(row: &Row, out: &mut String) {
    sums_json(&row.sums, "totalCost", out);
    let names: Vec<String> = row
        .models
        .iter()
        .filter(|b| !b.model.is_empty())
        .map(|b| js(&b.model))
        .collect();
    let _ = write!(out, ",\"modelsUsed\":[{}],\"modelBreakdowns\":[", names.join(","));
    for (k, b) in row.models.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"modelName\":{},\"provider\":{},",
            js(&b.model),
            js(&b.provider)
        );
        sums_json(&b.sums, "cost", out);
        out.push('}');
    }
    out.push_str("],\"sources\":{");
    for (k, s) in Source::ALL.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:{{", js(s.as_str()));
        sums_json(&row.sources[k], "cost", out);
        out.push('}');
    }
    out.push('}');
}

/// The JSON report (docs/cli.md): ccusage's shape (`daily`/`monthly`/`sessions` rows and
/// `totals`, its field names) plus `models` rows, `records`, `sources`, `provider` and a
/// `report` object saying what was counted.
fn json(r: &Report, zone: &str, now: f64) -> String {
    let (rows_key, key_name) = match r.period {
        Period::Daily => ("daily", "date"),
        Period::Weekly(_) => ("weekly", "week"),
        Period::Monthly => ("monthly", "month"),
        Period::Session => ("sessions", "sessionPath"),
        Period::Model => ("models", "modelName"),
        Period::Blocks => ("blocks", "id"),
    };
    let mut out = String::new();
    let _ = write!(out, "{{\"{rows_key}\":[");
    for (k, row) in r.rows.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "\n{{\"{key_name}\":{},", js(&row.key));
        if let Some(s) = &row.session {
            let id = s.id.as_ref().map_or_else(|| "null".to_string(), |v| v.stringify());
            let name = s
                .name
                .as_ref()
                .map_or_else(|| "null".to_string(), |n| js(&n.to_str_lossy()));
            let _ = write!(
                out,
                "\"sessionId\":{id},\"projectPath\":{},\"name\":{name},\"firstActivity\":{},\"lastActivity\":{},",
                js(&s.cwd.to_str_lossy()),
                iso(row.first_ms),
                iso(row.last_ms)
            );
        }
        if let (Some(b), Some(st)) = (row.block, row.block_state(now)) {
            block_json(row, b, st, &mut out);
        }
        row_json(row, &mut out);
        out.push('}');
    }
    out.push_str("\n],\n\"totals\":{");
    row_json(&r.totals, &mut out);
    let _ = write!(
        out,
        "}},\n\"report\":{{\"period\":{},\"timeZone\":{},\"sessions\":{},\"skippedFiles\":{},\"unreadableFiles\":{},\"records\":{},\"duplicates\":{},\"timeFromEntry\":{},\"timeFromHeader\":{},\"undated\":{},\"filtered\":{},\"cachedFiles\":{}}}}}\n",
        js(match r.period {
            Period::Daily => "daily",
            Period::Weekly(_) => "weekly",
            Period::Monthly => "monthly",
            Period::Session => "session",
            Period::Model => "model",
            Period::Blocks => "blocks",
        }),
        js(zone),
        r.sessions,
        r.skipped.len(),
        r.unreadable.len(),
        r.records,
        r.duplicates,
        r.time_from_entry,
        r.time_from_header,
        r.undated,
        r.filtered,
        r.cached
    );
    out
}
