//! Parent links: every entry's parent looked up in `byId` once, so that pi's walks
//! (`getBranch`, `buildSessionPath`) and its tree follow positions instead of hashing ids
//! at every step. Built from the index alone; the session keeps one, dropped whenever its
//! entries change.

use crate::index::idmap::IdMap;
use crate::index::{EntryPos, Index, Key};

/// No parent (in [`Links`]).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// Every entry's parent, looked up in `byId` once, by entry position ([`NO_PARENT`]: none).
/// pi looks `parentId` up at every step of a walk; these arrays give the same answers, so
/// walks and the tree chase positions instead of hashing ids (and touching each entry's
/// record) at every step.
#[derive(Debug)]
pub(crate) struct Links {
    /// For `getBranch` and `buildSessionPath`: a truthy `parentId`, looked up.
    walk: Vec<u32>,
    /// For `getTree`: a `parentId` that is not null and not the entry's own id, looked
    /// up, where that differs from `walk` (a falsy `parentId` that is not `null`, or an
    /// entry its own parent: rare), by position, ascending.
    tree: Vec<(u32, u32)>,
    /// No two entries share an id: each entry is its own `byId` node.
    pub(crate) unique: bool,
}

impl Links {
    /// Resolve the parent of every entry of `list` (pi's `getEntries()`, positions into
    /// `entries`) through `by_id`, in parallel.
    pub(crate) fn build(entries: &Index, list: &[EntryPos], by_id: &IdMap) -> Links {
        use rayon::prelude::*;
        let unique = by_id.len() == list.len();
        let resolve = |k: usize| {
            let p = list[k].0 as usize;
            let (id, parent) = (entries.id(p), entries.parent(p));
            // Nearly every entry's parent is the entry before it: with distinct ids that
            // one is the `byId` answer, found without hashing.
            let raw = || {
                if unique && k > 0 && entries.id(list[k - 1].0 as usize) == parent {
                    Some(list[k - 1])
                } else {
                    by_id.get(entries, parent)
                }
            };
            let raw = if *parent == Key::Null { None } else { raw() };
            let pos = |r: Option<EntryPos>| r.map_or(NO_PARENT, |p| p.0);
            let walk = if parent.truthy() { pos(raw) } else { NO_PARENT };
            let tree = if parent == id { NO_PARENT } else { pos(raw) };
            (walk, tree)
        };
        let n = entries.len();
        // Multi-MB arrays filled at once: huge pages spare a page fault per 4 KiB.
        let filled = |n: usize| {
            let mut v = Vec::with_capacity(n);
            crate::source::prefer_huge_pages(v.spare_capacity_mut());
            v.resize(n, NO_PARENT);
            v
        };
        let mut walk = filled(n);
        // Written in place, in parallel: `list` is ascending, so the entries of a run of
        // it are a run of the arrays (the header, not in `list`, keeps `NO_PARENT`).
        const RUN: usize = 4096;
        let mut w_rest: &mut [u32] = &mut walk;
        let mut done = 0usize;
        let mut jobs = Vec::new();
        for run in list.chunks(RUN).enumerate() {
            let (r, ps) = run;
            let (lo, hi) = (ps[0].0 as usize, ps[ps.len() - 1].0 as usize + 1);
            let (w, wr) = std::mem::take(&mut w_rest)[lo - done..].split_at_mut(hi - lo);
            (w_rest, done) = (wr, hi);
            jobs.push((r * RUN, lo, w));
        }
        let tree: Vec<Vec<(u32, u32)>> = jobs
            .into_par_iter()
            .map(|(k0, lo, w)| {
                let end = (k0 + RUN).min(list.len());
                let mut differ = Vec::new();
                for (k, p) in list.iter().enumerate().take(end).skip(k0) {
                    let (a, b) = resolve(k);
                    w[p.0 as usize - lo] = a;
                    if a != b {
                        differ.push((p.0, b));
                    }
                }
                differ
            })
            .collect();
        Links {
            walk,
            tree: tree.concat(),
            unique,
        }
    }

    /// The parent of `p` on pi's walks.
    #[inline]
    pub(crate) fn walk_parent(&self, p: EntryPos) -> Option<EntryPos> {
        Links::at(&self.walk, p)
    }

    /// The parent of `p` in pi's tree.
    #[inline]
    pub(crate) fn tree_parent(&self, p: EntryPos) -> Option<EntryPos> {
        if !self.tree.is_empty()
            && let Ok(i) = self.tree.binary_search_by_key(&p.0, |d| d.0)
        {
            let q = self.tree[i].1;
            return (q != NO_PARENT).then_some(EntryPos(q));
        }
        Links::at(&self.walk, p)
    }

    fn at(arr: &[u32], p: EntryPos) -> Option<EntryPos> {
        let q = arr[p.0 as usize];
        (q != NO_PARENT).then_some(EntryPos(q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    /// pi's lookup at each step, by hashing, for comparison with [`Links`].
    fn naive(s: &Session, p: EntryPos) -> (Option<EntryPos>, Option<EntryPos>) {
        let e = s.record(p);
        let walk = if e.parent.truthy() {
            s.entry_by_id(e.parent)
        } else {
            None
        };
        let tree = if *e.parent == Key::Null || e.parent == e.id {
            None
        } else {
            s.entry_by_id(e.parent)
        };
        (walk, tree)
    }

    #[test]
    fn links_give_the_lookups_pi_makes() {
        // Ids and parent ids from a small pool (duplicates, forward references, self
        // parents, falsy and non-string ids, missing members), the previous entry's id most
        // of the time.
        let pool = [
            r#""a""#, r#""b""#, r#""c""#, r#""""#, "0", "1", "null", "true", "false", "[]", "{}",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..400 {
            let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
            let mut prev: Option<String> = None;
            let n = 1 + next(30);
            for k in 0..n {
                let id = if round % 2 == 0 {
                    format!("\"e{k}\"")
                } else {
                    pool[next(pool.len() as u64) as usize].to_string()
                };
                let parent = match (next(6), &prev) {
                    (0..=2, Some(p)) => Some(p.clone()),
                    (3, _) => None,
                    _ => Some(pool[next(pool.len() as u64) as usize].to_string()),
                };
                let id_member = if next(10) == 0 {
                    String::new()
                } else {
                    format!(",\"id\":{id}")
                };
                let parent_member = parent.map_or(String::new(), |p| format!(",\"parentId\":{p}"));
                text.push_str(&format!("{{\"type\":\"custom\"{id_member}{parent_member}}}\n"));
                prev = Some(id);
            }
            let s = Session::from_bytes(text.into_bytes()).expect("opens");
            let links = s.links();
            for &p in s.entries() {
                let want = naive(&s, p);
                assert_eq!(
                    (links.walk_parent(p), links.tree_parent(p)),
                    want,
                    "round {round}, entry {p:?}"
                );
                if links.unique {
                    assert_eq!(s.entry_by_id(s.record(p).id), Some(p));
                }
            }
        }
    }
}
