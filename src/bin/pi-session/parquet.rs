//! `pi-session export-parquet [SESSION|DIR ...] --out DIR` (feature `parquet`): the
//! sessions, entries and usage tables as Parquet files for DuckDB, DataFusion, polars and
//! Spark, brought up to date incrementally (`pi_session::analytics`, docs/analytics.md).

use anyhow::Result;
use clap::Args;
use pi_session::analytics::{ExportOptions, ExportReport, export};
use pi_session::text::escape_path;
use std::io::Write;
use std::path::PathBuf;

/// `pi-session export-parquet`.
#[derive(Args)]
#[command(
    after_help = "Writes DIR/sessions/sessions.parquet, DIR/entries/date=YYYY-MM-DD/*.parquet and DIR/usage/date=YYYY-MM-DD/*.parquet (zstd, dictionaries, statistics; Hive-style partitions by UTC day), and DIR/_manifest.json. A second run reads only the session files that changed or are new, and deletes the rows of sessions that are gone; --full reads every file again. Schemas and example queries: docs/analytics.md.\n\nExit status: 0 the folder is up to date (files that are no session are skipped and named on stderr), 2 an error.\n\nExamples:\n  pi-session export-parquet --out ~/pi-tables\n  duckdb -c \"SELECT model, sum(cost) FROM read_parquet('~/pi-tables/usage/*/*.parquet', hive_partitioning=true) GROUP BY ALL\""
)]
pub struct ExportParquetArgs {
    /// Sessions (files, or ids or unique prefixes of ids) and folders; default: every
    /// session of the agent dir (or the custom session dir).
    #[arg(value_name = "SESSION|DIR")]
    roots: Vec<PathBuf>,
    /// The folder the tables go to (made if missing).
    #[arg(short, long, value_name = "DIR")]
    out: PathBuf,
    /// Also write each entry's text (`entries.text`; images never).
    #[arg(long)]
    with_text: bool,
    /// Read every session file again, whatever the manifest says.
    #[arg(long)]
    full: bool,
    /// Print what was done as JSON.
    #[arg(short, long)]
    pub json: bool,
    #[command(flatten)]
    place: crate::flags::PlaceArgs,
    #[command(flatten)]
    quiet: crate::flags::QuietArgs,
}

/// Run it: the summary on stdout, skipped files on stderr.
pub fn run(a: &ExportParquetArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    let roots = a.place.roots(&a.roots)?;
    let bar = crate::term::Bar::sessions(a.quiet.quiet);
    let progress = |done: usize, total: usize| bar.set(done, Some(total));
    let opts = ExportOptions {
        with_text: a.with_text,
        full: a.full,
        read_mode,
        on_progress: Some(&progress),
    };
    let report = export(&roots, &a.out, &opts);
    bar.clear();
    let report = report.map_err(|e| anyhow::anyhow!("export-parquet: {e}"))?;
    let mut err = std::io::stderr().lock();
    for (p, why) in &report.skipped {
        writeln!(
            err,
            "pi-session: skipped {}: {}",
            escape_path(p),
            pi_session::text::escape(why)
        )?;
    }
    if a.json {
        writeln!(out, "{}", json(&report, &a.out))?;
    } else {
        writeln!(
            out,
            "{}: {} sessions, {} entries, {} usage records; this run read {} files ({} of them only past what the last run read; {} unchanged, {} removed), wrote {} entries and {} usage rows in {} files, deleted {} files",
            escape_path(&a.out),
            report.sessions,
            report.entry_rows,
            report.usage_rows,
            report.read,
            report.appended,
            report.unchanged,
            report.removed,
            report.entry_rows_written,
            report.usage_rows_written,
            report.files_written,
            report.files_deleted,
        )?;
    }
    Ok(0)
}

fn json(r: &ExportReport, dir: &std::path::Path) -> String {
    use pi_session::{JsStr, Value};
    let mut o = pi_session::Object::new();
    let n = |x: u64| Value::Number(x as f64);
    o.set(
        JsStr::from_str("out"),
        Value::string(dir.to_string_lossy().into_owned()),
    );
    for (k, v) in [
        ("files", r.files as u64),
        ("read", r.read as u64),
        ("appended", r.appended as u64),
        ("unchanged", r.unchanged as u64),
        ("removed", r.removed as u64),
        ("sessions", r.sessions),
        ("entries", r.entry_rows),
        ("usage", r.usage_rows),
        ("entriesWritten", r.entry_rows_written),
        ("usageWritten", r.usage_rows_written),
        ("filesWritten", r.files_written as u64),
        ("filesDeleted", r.files_deleted as u64),
    ] {
        o.set(JsStr::from_str(k), n(v));
    }
    let skipped = r
        .skipped
        .iter()
        .map(|(p, why)| {
            let mut s = pi_session::Object::new();
            s.set(JsStr::from_str("path"), Value::string(p.to_string_lossy().into_owned()));
            s.set(JsStr::from_str("reason"), Value::string(why.clone()));
            Value::Object(s)
        })
        .collect();
    o.set(JsStr::from_str("skipped"), Value::Array(skipped));
    Value::Object(o).stringify()
}
