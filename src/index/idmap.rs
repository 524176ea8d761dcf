//! pi's `byId`: entry id -> position of the last entry with that id.
//!
//! An open-addressing table of (hash tag, position) pairs, 8 bytes a slot; the keys stay
//! in the index's records and are compared only when tags match. A `HashMap<Key,
//! EntryPos>` holds 40-byte buckets: for the 210,000 entries of a 1 GiB session that is
//! 10 MB of randomly touched memory, and filling it took ~40 ms (cache and TLB misses on a
//! virtual machine), a sixth of `pi-session check`. This table is 4 MB, and a bulk insert
//! first groups the new ids by the region of the table they land in (one counting-sort
//! pass over their hash tags, order kept within a group so the last entry with an id
//! still wins), so the table is filled region by region instead of at random.

use crate::index::{EntryPos, Index, Key};

const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// 32 bits of the key's hash; its top bits pick the first slot to probe.
    tag: u32,
    /// [`EMPTY`] or the entry's position.
    pos: u32,
}

/// The map; every method that looks at keys takes the index they live in. `undefined`
/// and `null` (every line without an id shares the first) are kept beside the table, so
/// a file of id-less lines needs no table at all.
#[derive(Debug, Default)]
pub(crate) struct IdMap {
    slots: Vec<Slot>,
    /// Distinct keys in `slots`.
    in_table: usize,
    undefined: Option<u32>,
    null: Option<u32>,
    state: ahash::RandomState,
}

impl IdMap {
    /// Distinct ids held.
    pub(crate) fn len(&self) -> usize {
        self.in_table + usize::from(self.undefined.is_some()) + usize::from(self.null.is_some())
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.in_table = 0;
        self.undefined = None;
        self.null = None;
    }

    fn tag(&self, key: &Key) -> u32 {
        (self.state.hash_one(key) >> 32) as u32
    }

    /// The first slot to probe for `tag` (the table has a power-of-two size of at least 16).
    fn home(&self, tag: u32) -> usize {
        ((u64::from(tag) * self.slots.len() as u64) >> 32) as usize
    }

    /// Room for `additional` more ids with the table at most half full.
    fn reserve(&mut self, additional: usize) {
        let want = ((self.in_table + additional) * 2).next_power_of_two().max(16);
        if want <= self.slots.len() {
            return;
        }
        let old = std::mem::replace(&mut self.slots, vec![Slot { tag: 0, pos: EMPTY }; want]);
        let mask = want - 1;
        for s in old.into_iter().filter(|s| s.pos != EMPTY) {
            let mut i = self.home(s.tag);
            while self.slots[i].pos != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// `byId.set(entries[p].id, p)`: the entry replaces an earlier one with the same id.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, entries: &Index, p: EntryPos) {
        self.extend(entries, &[p]);
    }

    /// `IdMap::insert` of each of `ps` in order, grouped by table region first.
    pub(crate) fn extend(&mut self, entries: &Index, ps: &[EntryPos]) {
        // `undefined` and `null` beside the table; the rest grouped by the top bits of the
        // tag (the region of the table), keeping order.
        let mut keyed = 0;
        for p in ps {
            match entries.id(p.0 as usize) {
                Key::Undefined => self.undefined = Some(p.0),
                Key::Null => self.null = Some(p.0),
                _ => keyed += 1,
            }
        }
        if keyed == 0 {
            return;
        }
        self.reserve(keyed);
        const BITS: u32 = 10;
        let mut counts = vec![0usize; (1 << BITS) + 1];
        let tagged: Vec<(u32, u32)> = ps
            .iter()
            .filter(|p| !matches!(entries.id(p.0 as usize), Key::Undefined | Key::Null))
            .map(|p| {
                let tag = self.tag(entries.id(p.0 as usize));
                counts[(tag >> (32 - BITS)) as usize + 1] += 1;
                (tag, p.0)
            })
            .collect();
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let mut grouped = vec![(0u32, 0u32); tagged.len()];
        for &(tag, p) in &tagged {
            let b = &mut counts[(tag >> (32 - BITS)) as usize];
            grouped[*b] = (tag, p);
            *b += 1;
        }
        for (tag, p) in grouped {
            self.insert_tagged(entries, tag, p);
        }
    }

    /// Insert with room reserved and the tag computed.
    #[inline]
    fn insert_tagged(&mut self, entries: &Index, tag: u32, p: u32) {
        let (i, found) = self.probe(entries, tag, entries.id(p as usize));
        if !found {
            self.slots[i].tag = tag;
            self.in_table += 1;
        }
        self.slots[i].pos = p;
    }

    /// `byId.get(key)`.
    pub(crate) fn get(&self, entries: &Index, key: &Key) -> Option<EntryPos> {
        match key {
            Key::Undefined => return self.undefined.map(EntryPos),
            Key::Null => return self.null.map(EntryPos),
            _ => {}
        }
        if self.slots.is_empty() {
            return None;
        }
        match self.probe(entries, self.tag(key), key) {
            (i, true) => Some(EntryPos(self.slots[i].pos)),
            (_, false) => None,
        }
    }

    /// The slot holding `key` (`true`), or the empty slot where it would go (`false`).
    /// The table is never full (at most half), so the probe ends.
    #[inline]
    fn probe(&self, entries: &Index, tag: u32, key: &Key) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(tag);
        loop {
            let s = self.slots[i];
            if s.pos == EMPTY {
                return (i, false);
            }
            if s.tag == tag && entries.id(s.pos as usize) == key {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_answers_as_a_hash_map() {
        // Few distinct keys (many replacements) and many (growth), of every kind.
        for distinct in [3u64, 50, 5_000] {
            let mut ids = Vec::new();
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ distinct;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = x % distinct;
                let id = match k % 5 {
                    0 => Key::str(&format!("id{k}")),
                    1 => Key::Num((k as f64).to_bits()),
                    2 => Key::Bool(k.is_multiple_of(2)),
                    3 if k.is_multiple_of(3) => Key::Null,
                    3 => Key::Undefined,
                    _ => Key::str(&format!("{k:08x}")),
                };
                ids.push(id);
            }
            let entries = Index::test_with_ids(&ids);
            let entries = &entries;
            let mut map = IdMap::default();
            let mut bulk = IdMap::default();
            let mut want: ahash::AHashMap<Key, EntryPos> = ahash::AHashMap::new();
            for p in 0..entries.len() as u32 {
                map.insert(entries, EntryPos(p));
                want.insert(entries.id(p as usize).clone(), EntryPos(p));
                assert_eq!(map.len(), want.len());
            }
            // Bulk inserts of growing runs (the table grows between them).
            let all: Vec<EntryPos> = (0..entries.len() as u32).map(EntryPos).collect();
            let mut at = 0;
            for run in (1..).map(|k| k * k) {
                let end = (at + run).min(all.len());
                bulk.extend(entries, &all[at..end]);
                at = end;
                if at == all.len() {
                    break;
                }
            }
            assert_eq!(bulk.len(), want.len());
            for e in entries.iter() {
                assert_eq!(bulk.get(entries, e.id), want.get(e.id).copied());
            }
            for e in entries.iter() {
                assert_eq!(map.get(entries, e.id), want.get(e.id).copied());
            }
            for missing in [Key::str("nope"), Key::Num(0.5f64.to_bits()), Key::Unique(7)] {
                assert_eq!(map.get(entries, &missing), want.get(&missing).copied());
            }
            map.clear();
            assert_eq!(map.len(), 0);
            assert_eq!(map.get(entries, entries.id(0)), None);
        }
    }
}
