//! Parent links: every entry's parent looked up in `byId` once, so that pi's walks
//! (`getBranch`, `buildSessionPath`) and its tree follow positions instead of hashing ids
//! at every step. Built from the index alone; the session keeps one, dropped whenever its
//! entries change.

use crate::index::idmap::IdMap;
use crate::index::{EntryPos, Ids};
use crate::session::list::EntryList;

/// No parent (in [`Links`]).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// Every entry's parent, looked up in `byId` once, by entry position. pi looks `parentId`
/// up at every step of a walk; these give the same answers, so walks and the tree chase
/// positions instead of hashing ids (and touching each entry's record) at every step.
///
/// Nearly every entry's parent is the entry before it: that is one bit an entry, and
/// only the other parents are stored, as pairs (an eighth of a byte an entry instead of
/// four on a session without branches).
#[derive(Debug)]
pub(crate) struct Links {
    /// Bit `p`: the walk parent of entry `p` is entry `p - 1`.
    prev: Vec<u64>,
    /// For `getBranch` and `buildSessionPath`: a truthy `parentId`, looked up, where that
    /// is not the entry before (by position, ascending). An entry neither here nor in
    /// `prev` has no parent.
    walk: Vec<(u32, u32)>,
    /// For `getTree`: a `parentId` that is not null and not the entry's own id, looked
    /// up, where that differs from the walk parent (a falsy `parentId` that is not
    /// `null`, or an entry its own parent: rare), by position, ascending.
    tree: Vec<(u32, u32)>,
    /// No two entries share an id: each entry is its own `byId` node.
    pub(crate) unique: bool,
}

impl Links {
    /// Resolve the parent of every entry of `list` (pi's `getEntries()`, positions into
    /// `entries`) through `by_id`, in parallel.
    pub(crate) fn build(entries: &Ids<'_>, list: &EntryList, by_id: &IdMap) -> Links {
        use rayon::prelude::*;
        let unique = by_id.len() == list.len();
        let resolve = |k: usize| {
            let p = list.get(k).0 as usize;
            // The indexer saw that the parent is the previous entry's id: with distinct
            // ids, that entry is the `byId` answer (and the parent is truthy and not the
            // entry's own id), found without reading a key.
            if unique && k > 0 && list.get(k - 1).0 as usize + 1 == p && entries.index.parent_is_prev(p) {
                return ((p - 1) as u32, (p - 1) as u32);
            }
            let (id, parent) = (entries.id(p), entries.parent(p));
            // Nearly every entry's parent is the entry before it: with distinct ids that
            // one is the `byId` answer, found without hashing.
            let raw = || {
                if unique && k > 0 && entries.id(list.get(k - 1).0 as usize) == parent {
                    Some(list.get(k - 1))
                } else {
                    by_id.get(entries, parent)
                }
            };
            let raw = if parent.is_null() { None } else { raw() };
            let pos = |r: Option<EntryPos>| r.map_or(NO_PARENT, |p| p.0);
            let walk = if parent.truthy() { pos(raw) } else { NO_PARENT };
            let tree = if parent == id { NO_PARENT } else { pos(raw) };
            (walk, tree)
        };
        let n = entries.len();
        let mut prev = vec![0u64; n.div_ceil(64)];
        // Blocks of positions, whole words of `prev` each, resolved in parallel.
        const WORDS: usize = 64;
        type Pairs = Vec<(u32, u32)>;
        let parts: Vec<(Pairs, Pairs)> = prev
            .par_chunks_mut(WORDS)
            .enumerate()
            .map(|(b, bits)| {
                let lo = b * WORDS * 64;
                let hi = lo + bits.len() * 64;
                let k0 = list.count_below(lo);
                let k1 = list.count_below(hi);
                let (mut walk, mut tree) = (Vec::new(), Vec::new());
                for k in k0..k1 {
                    let p = list.get(k).0;
                    let (a, t) = resolve(k);
                    if a != NO_PARENT && a.wrapping_add(1) == p {
                        let i = p as usize - lo;
                        bits[i / 64] |= 1 << (i % 64);
                    } else if a != NO_PARENT {
                        walk.push((p, a));
                    }
                    if a != t {
                        tree.push((p, t));
                    }
                }
                (walk, tree)
            })
            .collect();
        let (walk, tree): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        Links {
            prev,
            walk: walk.concat(),
            tree: tree.concat(),
            unique,
        }
    }

    /// The parent of `p` on pi's walks.
    #[inline]
    pub(crate) fn walk_parent(&self, p: EntryPos) -> Option<EntryPos> {
        let i = p.0 as usize;
        if self.prev.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0) {
            return Some(EntryPos(p.0 - 1));
        }
        Links::find(&self.walk, p).flatten()
    }

    /// The parent of `p` in pi's tree.
    #[inline]
    pub(crate) fn tree_parent(&self, p: EntryPos) -> Option<EntryPos> {
        match Links::find(&self.tree, p) {
            Some(q) => q,
            None => self.walk_parent(p),
        }
    }

    /// `p`'s entry in `pairs`: `Some(None)` for [`NO_PARENT`], `None` when absent.
    #[inline]
    fn find(pairs: &[(u32, u32)], p: EntryPos) -> Option<Option<EntryPos>> {
        if pairs.is_empty() {
            return None;
        }
        let i = pairs.binary_search_by_key(&p.0, |d| d.0).ok()?;
        let q = pairs[i].1;
        Some((q != NO_PARENT).then_some(EntryPos(q)))
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
        let tree = if e.parent.is_null() || e.parent == e.id {
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
            // The count check makes without the tree is the tree's.
            let roots = s.tree().map(|t| t.roots.len()).map_err(|e| e.to_string());
            assert_eq!(s.tree_root_count().map_err(|e| e.to_string()), roots, "round {round}");
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
