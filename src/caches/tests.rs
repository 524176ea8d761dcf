//! The caches' stats against what was done to the sessions and the caches: refreshed,
//! appended to, damaged, dropped.

use super::{StoreStats, drop_files, refresh, stats};
use crate::listing::ListingCache;
use crate::source::ReadMode;
use std::path::Path;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("ls").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

fn kinds(s: &super::Stats) -> Vec<(&'static str, usize, usize, usize)> {
    s.stores
        .iter()
        .map(|x| (x.kind, x.current, x.stale, x.missing))
        .collect()
}

fn store<'s>(s: &'s super::Stats, kind: &str) -> &'s StoreStats {
    s.stores.iter().find(|x| x.kind == kind).expect("kind")
}

#[test]
fn stats_follow_refreshes_appends_damage_and_drops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("sessions");
    copy_tree(Path::new("corpus/demo/sessions"), &root);
    // (No racy window: entries of files just written are kept.)
    let cache = ListingCache::at(dir.path().join("cache")).with_racy_window(std::time::Duration::ZERO);
    let roots = vec![root.clone()];
    let (paths, _) = crate::usage::session_files(&roots);
    let n = paths.len();
    assert!(n >= 6, "{n}");

    let before = stats(&roots, &cache);
    assert_eq!(before.sessions, n);
    assert!(before.session_bytes > 0);
    assert_eq!(
        kinds(&before),
        vec![("listing", 0, 0, n), ("search", 0, 0, n), ("usage", 0, 0, n)]
    );
    assert!(
        before
            .stores
            .iter()
            .all(|s| s.files == 0 && s.bytes == 0 && s.newest_ms.is_none())
    );

    let mut steps = Vec::new();
    let r = refresh(&roots, &cache, ReadMode::Auto, None, |s| steps.push(s.to_string())).expect("refresh");
    assert_eq!(steps, ["listing", "search", "usage"]);
    assert_eq!((r.listed, r.listing_read, r.maps_built, r.usage_read), (n, n, n, n));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let full = stats(&roots, &cache);
    assert_eq!(
        kinds(&full),
        vec![("listing", n, 0, 0), ("search", n, 0, 0), ("usage", n, 0, 0)]
    );
    for s in &full.stores {
        assert!(s.files > 0 && s.bytes > 0 && s.unusable == 0, "{s:?}");
        assert!(
            s.oldest_ms.is_some_and(|o| s.newest_ms.is_some_and(|n| o <= n)),
            "{s:?}"
        );
    }
    // Two folders: a search and a usage file each, and the usage summary of the tree.
    assert_eq!(store(&full, "search").files, 2);
    assert_eq!(store(&full, "usage").files, 3);

    // A refresh with nothing changed reads nothing.
    let again = refresh(&roots, &cache, ReadMode::Auto, None, |_| {}).expect("refresh");
    assert_eq!((again.listing_read, again.maps_built, again.usage_read), (0, 0, 0));

    // One session appended to: stale in every cache, then current after a refresh that
    // reads it alone.
    let grown = &paths[0];
    let mut f = std::fs::OpenOptions::new().append(true).open(grown).expect("open");
    std::io::Write::write_all(&mut f, b"{\"type\":\"label\",\"id\":\"zz000001\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:09.000Z\",\"targetId\":\"x\",\"label\":\"l\"}\n").expect("append");
    drop(f);
    let stale = stats(&roots, &cache);
    assert_eq!(
        kinds(&stale),
        vec![
            ("listing", n - 1, 1, 0),
            ("search", n - 1, 1, 0),
            ("usage", n - 1, 1, 0)
        ]
    );
    let r = refresh(&roots, &cache, ReadMode::Auto, None, |_| {}).expect("refresh");
    assert_eq!((r.listing_read, r.maps_built, r.usage_read), (1, 1, 1));
    assert_eq!(kinds(&stats(&roots, &cache))[1], ("search", n, 0, 0));

    // A usage file damaged: unusable, its sessions missing; the answer is still right.
    let usage_file = std::fs::read_dir(cache.dir())
        .expect("ls")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|x| x.to_string_lossy().starts_with("usage-")))
        .expect("a usage file");
    let mut b = std::fs::read(&usage_file).expect("read");
    let last = b.len() - 1;
    b[last] ^= 1;
    std::fs::write(&usage_file, &b).expect("write");
    let damaged = stats(&roots, &cache);
    let u = store(&damaged, "usage");
    assert_eq!(u.unusable, 1, "{u:?}");
    assert!(u.missing >= 1 && u.current + u.missing == n, "{u:?}");
    let filter = crate::usage::Filter::default();
    let with = crate::usage::collect(
        &roots,
        &filter,
        &mut crate::usage::CollectOptions {
            cache: Some(cache.clone()),
            ..Default::default()
        },
    )
    .expect("usage");
    let without = crate::usage::collect(&roots, &filter, &mut Default::default()).expect("usage");
    assert_eq!(with.rows, without.rows);
    assert_eq!(with.totals, without.totals);

    // Dropped: every file of the caches of these sessions is gone, none of the sessions.
    let gone = drop_files(&roots, &cache).expect("drop");
    assert!(gone.len() >= 5, "{gone:?}");
    assert!(gone.iter().all(|p| !p.exists()));
    let after = stats(&roots, &cache);
    assert_eq!(
        kinds(&after),
        vec![("listing", 0, 0, n), ("search", 0, 0, n), ("usage", 0, 0, n)]
    );
    let (still, _) = crate::usage::session_files(&roots);
    assert_eq!(still, paths);
}
