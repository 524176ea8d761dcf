//! `pi-session index [--stats | --rebuild] [DIR ...]`: the caches of a run's sessions (the
//! listing, the search maps, the usage records; `pi_session::caches`) brought up to date,
//! or built again from nothing, and what each holds of the sessions, its size and its age
//! (docs/cli.md, "index").

use crate::show::Printable;
use anyhow::Result;
use clap::Args;
use pi_session::caches::{self, Stats};
use pi_session::text::escape_path;
use std::io::Write;
use std::path::PathBuf;

/// `pi-session index`.
#[derive(Args)]
#[command(
    after_help = "Every command that reads sessions keeps what it read in these caches and checks each entry against its file's stat before it trusts it, so they are never needed for a right answer; `index` fills them ahead of time (after pi wrote, in a cron job or a pi extension), so that the next ls, search and usage answer from them.\n\nExit status: 0 done, 2 an error.\n\nExamples:\n  pi-session index\n  pi-session index --stats --json\n  pi-session index --rebuild"
)]
pub struct IndexArgs {
    /// Sessions folders (default: every session of the agent dir, or the custom session
    /// dir).
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Only say what the caches hold; write nothing.
    #[arg(long, conflicts_with = "rebuild")]
    stats: bool,
    /// Remove the caches of these sessions first, then build them from nothing.
    #[arg(long)]
    rebuild: bool,
    /// JSON (docs/cli.md).
    #[arg(short, long)]
    pub json: bool,
    #[command(flatten)]
    place: crate::flags::PlaceArgs,
    #[command(flatten)]
    cache: crate::flags::CacheArgs,
    #[command(flatten)]
    quiet: crate::flags::QuietArgs,
}

/// Run `pi-session index`.
///
/// # Errors
/// No cache (`--no-cache`, or no home folder); a folder that cannot be read; a cache file
/// that cannot be removed.
pub fn run(a: &IndexArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    let Some(cache) = a.cache.cache() else {
        anyhow::bail!(Printable::kind(
            "no cache to index into: --no-cache was given, or there is no home folder (give --cache-dir)".into(),
            crate::show::Kind::Usage,
        ));
    };
    let roots = a.place.roots(&a.dirs)?;
    let mut removed = Vec::new();
    if a.rebuild {
        removed = caches::drop_files(&roots, &cache).map_err(|e| {
            anyhow::anyhow!(Printable::kind(
                format!("cannot remove a cache file: {e}"),
                crate::show::Kind::Io
            ))
        })?;
    }
    let mut refreshed = None;
    if !a.stats {
        let say = !a.quiet.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
        let r = caches::refresh(&roots, &cache, read_mode, None, |step| {
            if say {
                eprint!("\r\x1b[Kindexing: {step}");
            }
        })
        .map_err(|_| anyhow::anyhow!("cancelled"))?;
        if say {
            eprint!("\r\x1b[K");
        }
        for w in &r.warnings {
            eprintln!("pi-session: warning: {w}");
        }
        refreshed = Some(r);
    }
    let stats = caches::stats(&roots, &cache);
    if a.json {
        writeln!(out, "{}", json(&stats, refreshed.as_ref(), removed.len()))?;
    } else {
        text(out, &stats, refreshed.as_ref(), removed.len())?;
    }
    Ok(0)
}

fn iso(ms: Option<f64>) -> String {
    ms.and_then(|m| jiff::Timestamp::from_millisecond(m as i64).ok())
        .map_or_else(|| "null".into(), |t| format!("\"{t}\""))
}

fn json(s: &Stats, r: Option<&caches::Refreshed>, removed: usize) -> String {
    let stores: Vec<String> = s
        .stores
        .iter()
        .map(|x| {
            format!(
                "{{\"kind\":\"{}\",\"files\":{},\"bytes\":{},\"unusable\":{},\"current\":{},\"stale\":{},\"missing\":{},\"oldest\":{},\"newest\":{}}}",
                x.kind,
                x.files,
                x.bytes,
                x.unusable,
                x.current,
                x.stale,
                x.missing,
                iso(x.oldest_ms),
                iso(x.newest_ms)
            )
        })
        .collect();
    let refreshed = r.map_or_else(
        || "null".to_string(),
        |r| {
            format!(
                "{{\"listed\":{},\"listingRead\":{},\"mapsBuilt\":{},\"usageRead\":{}}}",
                r.listed, r.listing_read, r.maps_built, r.usage_read
            )
        },
    );
    format!(
        "{{\"cacheDir\":{},\"sessions\":{},\"sessionBytes\":{},\"recent\":{},\"removed\":{removed},\"refreshed\":{refreshed},\"stores\":[{}]}}",
        pi_session::Value::str(&s.dir.to_string_lossy()).stringify(),
        s.sessions,
        s.session_bytes,
        s.recent,
        stores.join(",")
    )
}

fn text(out: &mut impl Write, s: &Stats, r: Option<&caches::Refreshed>, removed: usize) -> Result<()> {
    if removed > 0 {
        writeln!(out, "Removed {removed} cache files.")?;
    }
    if let Some(r) = r {
        writeln!(
            out,
            "Read {} of {} sessions for the listing, mapped {} for search, read {} for usage.",
            r.listing_read, s.sessions, r.maps_built, r.usage_read
        )?;
    }
    writeln!(out, "Cache folder: {}", escape_path(&s.dir))?;
    writeln!(
        out,
        "Sessions: {} ({})",
        s.sessions,
        crate::term::human_size(s.session_bytes)
    )?;
    if s.recent > 0 {
        writeln!(
            out,
            "{} changed less than two seconds ago: read by every run until they are still, then kept.",
            if s.recent == 1 {
                "1 session".to_string()
            } else {
                format!("{} sessions", s.recent)
            }
        )?;
    }
    writeln!(
        out,
        "{:<8} {:>6} {:>7} {:>8} {:>6} {:>8}  last written",
        "cache", "files", "size", "current", "stale", "missing"
    )?;
    for x in &s.stores {
        let when = x
            .newest_ms
            .and_then(|m| jiff::Timestamp::from_millisecond(m as i64).ok())
            .map_or_else(|| "-".into(), |t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string());
        let unusable = if x.unusable > 0 {
            format!(" ({} damaged or of another version)", x.unusable)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{:<8} {:>6} {:>7} {:>8} {:>6} {:>8}  {when}{unusable}",
            x.kind,
            x.files,
            crate::term::human_size(x.bytes),
            x.current,
            x.stale,
            x.missing
        )?;
    }
    Ok(())
}
