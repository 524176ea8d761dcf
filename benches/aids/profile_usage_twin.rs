//! The usage report against its slow twin over a whole sessions root: `usage::collect`
//! (one pass per file, no cache) and `usage::twin::report` (every entry of every file
//! decoded, keys as text) for the daily, monthly, session and model reports in the zones
//! given, row by row: tokens and record counts exactly, costs to the cent.
//!
//!   cargo run --release --features aids --example profile_usage_twin -- ROOT [ZONE ...]
//!
//! Prints the totals, the time each side took, and every difference (exit 1 if any).

use pi_session::usage::{self, Filter, Period, twin};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().expect("usage: profile_usage_twin ROOT [ZONE ...]"));
    let mut zones: Vec<String> = args.collect();
    if zones.is_empty() {
        zones = vec!["UTC".into(), "America/New_York".into(), "Pacific/Tongatapu".into()];
    }
    // The files the report reads: ROOT's own *.jsonl and those of each folder in it.
    let mut paths = Vec::new();
    let mut folders = vec![root.clone()];
    for e in std::fs::read_dir(&root).expect("ROOT is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            folders.push(p);
        }
    }
    for f in folders {
        for e in std::fs::read_dir(&f).expect("folder is readable") {
            let p = e.expect("entry").path();
            if p.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
                paths.push(p);
            }
        }
    }
    let mut differences = 0;
    for zone in &zones {
        let tz = jiff::tz::TimeZone::get(zone).expect("a time zone");
        for period in [Period::Daily, Period::Monthly, Period::Session, Period::Model] {
            let f = Filter {
                period,
                tz: tz.clone(),
                ..Filter::default()
            };
            let t = Instant::now();
            let fast = usage::collect(std::slice::from_ref(&root), &f, &mut Default::default()).expect("not cancelled");
            let fast_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let (rows, totals) = twin::report(&paths, &f);
            let twin_s = t.elapsed().as_secs_f64();
            let mut got: Vec<_> = fast.rows.iter().collect();
            got.sort_by(|a, b| a.key.cmp(&b.key));
            let mut d = 0;
            if got.len() != rows.len() {
                println!("  {zone} {period:?}: {} rows, twin {}", got.len(), rows.len());
                d += 1;
            }
            for (a, b) in got.iter().zip(&rows) {
                if a.key != b.key
                    || a.sums.tokens != b.tokens
                    || a.sums.records != b.records
                    || (a.sums.cost() - b.cost).abs() >= 0.005
                {
                    println!(
                        "  {zone} {period:?} {}: {:?} ${:.4} ({}) vs twin {:?} ${:.4} ({})",
                        a.key,
                        a.sums.tokens,
                        a.sums.cost(),
                        a.sums.records,
                        b.tokens,
                        b.cost,
                        b.records
                    );
                    d += 1;
                }
            }
            if fast.totals.sums.tokens != totals.tokens
                || fast.totals.sums.records != totals.records
                || (fast.totals.sums.cost() - totals.cost).abs() >= 0.005
            {
                println!("  {zone} {period:?} totals differ");
                d += 1;
            }
            println!(
                "{zone} {period:?}: {} rows, {} records ({} duplicates), {} tokens, ${:.2}; fast {fast_s:.2} s, twin {twin_s:.2} s; differences: {d}",
                rows.len(),
                totals.records,
                fast.duplicates,
                totals.tokens.total(),
                totals.cost
            );
            differences += d;
        }
    }
    std::process::exit(i32::from(differences > 0));
}
