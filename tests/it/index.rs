//! `pi-session index`: the caches of the real sessions filled, said, dropped and built
//! again, each number checked against what was done (docs/cli.md, "index").

use serde_json::Value as J;
use std::process::Output;

fn index(cache: &std::path::Path, args: &[&str]) -> Output {
    let mut all = vec!["--cache-dir", cache.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    crate::common::run_cli("index", &all)
}

fn json(o: &Output) -> J {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// (kind, current, stale, missing) of each cache.
fn kinds(j: &J) -> Vec<(String, u64, u64, u64)> {
    j["stores"]
        .as_array()
        .expect("stores")
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().expect("count");
            (
                s["kind"].as_str().expect("kind").to_string(),
                n("current"),
                n("stale"),
                n("missing"),
            )
        })
        .collect()
}

#[test]
fn the_caches_of_real_sessions_are_filled_said_and_rebuilt() {
    let Some(real) = crate::common::real_sessions() else {
        return;
    };
    let folder = real[0].parent().expect("folder").to_str().expect("utf-8").to_string();
    let n = real.len() as u64;
    let tmp = tempfile::tempdir().expect("tempdir");
    let cache = tmp.path().join("cache");
    let before: Vec<Vec<u8>> = real.iter().map(|p| std::fs::read(p).expect("read")).collect();

    // Nothing yet: every session missing from every cache, and nothing written.
    let stats = json(&index(&cache, &["--stats", "--json", &folder]));
    assert_eq!(stats["sessions"].as_u64(), Some(n));
    assert!(stats["refreshed"].is_null());
    let none: Vec<_> = ["listing", "search", "usage"]
        .iter()
        .map(|k| (k.to_string(), 0, 0, n))
        .collect();
    assert_eq!(kinds(&stats), none);
    assert!(!cache.exists());

    // Filled: every session current, each read once.
    let filled = json(&index(&cache, &["--json", &folder]));
    let all: Vec<_> = ["listing", "search", "usage"]
        .iter()
        .map(|k| (k.to_string(), n, 0, 0))
        .collect();
    assert_eq!(kinds(&filled), all);
    assert_eq!(filled["refreshed"]["mapsBuilt"].as_u64(), Some(n));
    assert_eq!(filled["refreshed"]["usageRead"].as_u64(), Some(n));
    for s in filled["stores"].as_array().expect("stores") {
        assert!(s["files"].as_u64() > Some(0) && s["bytes"].as_u64() > Some(0), "{s}");
        assert!(s["newest"].as_str().is_some_and(|t| t.ends_with('Z')), "{s}");
    }

    // Again: nothing to read.
    let again = json(&index(&cache, &["--json", &folder]));
    assert_eq!(again["refreshed"]["listingRead"].as_u64(), Some(0));
    assert_eq!(again["refreshed"]["mapsBuilt"].as_u64(), Some(0));
    assert_eq!(again["refreshed"]["usageRead"].as_u64(), Some(0));

    // Rebuilt: the files removed, then every session read again.
    let rebuilt = json(&index(&cache, &["--rebuild", "--json", &folder]));
    assert!(rebuilt["removed"].as_u64() >= Some(3), "{rebuilt}");
    assert_eq!(rebuilt["refreshed"]["mapsBuilt"].as_u64(), Some(n));
    assert_eq!(kinds(&rebuilt), all);

    // The table, for people.
    let text = index(&cache, &["--stats", &folder]);
    assert!(text.status.success());
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("Cache folder: ") && t.contains(&format!("Sessions: {n} (")),
        "{t}"
    );
    for k in ["listing", "search", "usage"] {
        assert!(
            t.lines().any(|l| l.starts_with(k) && l.contains(&format!(" {n} "))),
            "{t}"
        );
    }

    // The sessions were only read.
    let after: Vec<Vec<u8>> = real.iter().map(|p| std::fs::read(p).expect("read")).collect();
    assert!(before == after, "a session changed");

    // No cache to fill: an error, said once.
    let no = crate::common::run_cli("index", &["--no-cache", &folder]);
    assert_eq!(no.status.code(), Some(2));
    let err = String::from_utf8_lossy(&no.stderr);
    assert!(
        err.contains("no cache to index into") && err.lines().count() == 1,
        "{err}"
    );
}
