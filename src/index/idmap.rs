//! pi's `byId`: entry id -> position of the last entry with that id.
//!
//! Open addressing in 256 shards (picked by the top byte of the key's hash), each a table
//! of 4-byte slots: an entry's position in the low bits, the rest of the slot a few bits
//! of the key's hash (a tag), so that keys are compared only when tags match. A shard is
//! at most four fifths full and sized to its count (no rounding to a power of two): about
//! 5.3 bytes an id, where a `HashMap<Key, EntryPos>` holds 40-byte buckets (the 2.5
//! million entries of a 1 GiB small-entries session: 13 MB instead of 100 MB). Keys are
//! not copied: a slot's position finds the key in the index (and the file's bytes).
//! A bulk insert hashes a batch of ids in parallel, groups them by shard (one counting
//! sort, order kept within a shard so the last entry with an id still wins), and fills
//! the shards in parallel, each from its own group: no thread shares a table.

use crate::index::{EntryPos, Ids, KeyRef};
use rayon::prelude::*;

const EMPTY: u32 = u32::MAX;
const SHARD_BITS: u32 = 8;
const SHARDS: usize = 1 << SHARD_BITS;
/// Ids hashed and grouped at a time by a bulk insert (bounds its scratch memory).
const BATCH: usize = 1 << 14;

#[derive(Clone, Debug, Default)]
struct Shard {
    /// [`EMPTY`] or `tag << pos_bits | position`.
    slots: Vec<u32>,
    /// Keys held.
    len: usize,
}

/// The map; every method that looks at keys takes the index they live in. `undefined`
/// and `null` (every line without an id shares the first) are kept beside the table, so
/// a file of id-less lines needs no table at all.
#[derive(Debug, Default)]
pub(crate) struct IdMap {
    /// Empty, or [`SHARDS`] shards.
    shards: Vec<Shard>,
    /// Distinct keys in the shards.
    in_table: usize,
    /// Bits of a slot that hold the position (the others hold the tag).
    pos_bits: u32,
    undefined: Option<u32>,
    null: Option<u32>,
    state: ahash::RandomState,
}

/// Where a key goes: its shard, where in the shard to start probing (as a 32-bit
/// fraction of the shard), and its tag bits.
#[derive(Clone, Copy)]
struct Hashed(u64);

impl Hashed {
    #[inline]
    fn shard(self) -> usize {
        (self.0 >> (64 - SHARD_BITS)) as usize
    }
    #[inline]
    fn home(self, len: usize) -> usize {
        ((((self.0 >> 16) & 0xFFFF_FFFF) * len as u64) >> 32) as usize
    }
    #[inline]
    fn slot(self, pos_bits: u32, pos: u32) -> u32 {
        if pos_bits >= 32 {
            pos
        } else {
            (self.0 as u32) << pos_bits | pos
        }
    }
}

impl Shard {
    /// The slot holding `key` (`true`), or the empty slot where it would go (`false`).
    /// The shard is never full (at most four fifths), so the probe ends.
    #[inline]
    fn probe(&self, entries: &Ids<'_>, pos_bits: u32, h: Hashed, key: KeyRef<'_>) -> (usize, bool) {
        let n = self.slots.len();
        let pos_mask = pos_mask(pos_bits);
        let want = h.slot(pos_bits, 0) & !pos_mask;
        let mut i = h.home(n);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return (i, false);
            }
            if s & !pos_mask == want && entries.id((s & pos_mask) as usize) == key {
                return (i, true);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    /// Move the keys into `cap` fresh slots (positions `old_bits` wide, then `pos_bits`).
    fn regrow(&mut self, entries: &Ids<'_>, old_bits: u32, pos_bits: u32, state: &ahash::RandomState, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        self.len = 0;
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            let pos = s & pos_mask(old_bits);
            self.insert(entries, pos_bits, Hashed(state.hash_one(entries.id(pos as usize))), pos);
        }
    }

    /// Room for `more` keys at most four fifths full (growing re-slots the keys held).
    fn make_room(&mut self, entries: &Ids<'_>, pos_bits: u32, state: &ahash::RandomState, more: usize) {
        let want = (self.len + more) + (self.len + more) / 4 + 1;
        if want > self.slots.len() {
            self.regrow(entries, pos_bits, pos_bits, state, want + want / 16);
        }
    }

    /// `byId.set(key, pos)` with room reserved.
    #[inline]
    fn insert(&mut self, entries: &Ids<'_>, pos_bits: u32, h: Hashed, pos: u32) {
        let (i, found) = self.probe(entries, pos_bits, h, entries.id(pos as usize));
        self.len += usize::from(!found);
        self.slots[i] = h.slot(pos_bits, pos);
    }
}

#[inline]
fn pos_mask(pos_bits: u32) -> u32 {
    if pos_bits >= 32 { u32::MAX } else { (1 << pos_bits) - 1 }
}

impl IdMap {
    /// Distinct ids held.
    pub(crate) fn len(&self) -> usize {
        self.in_table + usize::from(self.undefined.is_some()) + usize::from(self.null.is_some())
    }

    pub(crate) fn clear(&mut self) {
        self.shards.clear();
        self.in_table = 0;
        self.pos_bits = 0;
        self.undefined = None;
        self.null = None;
    }

    #[inline]
    fn hash(&self, key: KeyRef<'_>) -> Hashed {
        Hashed(self.state.hash_one(key))
    }

    /// Make every shard able to take `extra[s]` more keys at most four fifths full, and the
    /// slots able to hold positions below `positions`.
    fn reserve(&mut self, entries: &Ids<'_>, positions: usize, extra: &[usize]) {
        // Positions below 2^bits - 1 (all ones is never a slot: EMPTY), with room to grow.
        let need = (usize::BITS - (positions.saturating_mul(2) + 2).leading_zeros()).min(32);
        let rehash_all = self.shards.is_empty() || need > self.pos_bits;
        if self.shards.is_empty() {
            self.shards = vec![Shard::default(); SHARDS];
        }
        let old_bits = self.pos_bits;
        if rehash_all {
            self.pos_bits = need;
        }
        let (pos_bits, state) = (self.pos_bits, &self.state);
        self.shards.par_iter_mut().zip(extra).for_each(|(sh, &more)| {
            // At most four fifths full: linear probing over 4-byte tagged slots stays short
            // (about 3 slots a hit, 13 a miss, contiguous), and `byId` costs 5 bytes an id.
            let want = (sh.len + more) + (sh.len + more) / 4 + 1;
            if want <= sh.slots.len() && !rehash_all {
                return;
            }
            // Grow with room to spare (a shard's share of later batches), re-slot.
            let cap = if want <= sh.slots.len() {
                sh.slots.len()
            } else {
                (want + want / 16).max(8)
            };
            sh.regrow(entries, old_bits, pos_bits, state, cap);
        });
    }

    /// `byId.set(entries[p].id, p)`: the entry replaces an earlier one with the same id.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, entries: &Ids<'_>, p: EntryPos) {
        self.extend(entries, &[p]);
    }

    /// `IdMap::insert` of each of `ps` in order, grouped by shard.
    #[cfg(test)]
    pub(crate) fn extend(&mut self, entries: &Ids<'_>, ps: &[EntryPos]) {
        self.extend_with(entries, ps.len(), &|k| ps[k]);
    }

    /// `IdMap::insert` of `at(0)`, `at(1)`, ... `at(n - 1)` in order, grouped by shard.
    pub(crate) fn extend_with(&mut self, entries: &Ids<'_>, n: usize, at: &(dyn Fn(usize) -> EntryPos + Sync)) {
        // Room first, once, for each shard's share: keys hash evenly, so a shard gets
        // `n / 256` of them give or take a few square roots of that; one that gets more
        // grows when its batch arrives. (Counting each shard's share exactly took a pass
        // reading every id, a look into each line of the file.) Growing shard by shard as
        // batches arrived re-slotted their keys again and again.
        if n == 0 {
            return;
        }
        let batches = n.div_ceil(BATCH);
        let batch = |b: usize| b * BATCH..((b + 1) * BATCH).min(n);
        let max_pos = (0..n).map(|k| at(k).0 as usize).max().unwrap_or(0);
        let share = n / SHARDS;
        let share = share + 4 * share.isqrt() + 8;
        // Reserved by the first batch holding a key that goes into the table: a file of
        // lines without ids needs no table.
        let mut room = Some((entries.len().max(max_pos + 1), share));
        for b in 0..batches {
            self.extend_batch(entries, batch(b), at, &mut room);
        }
    }

    fn extend_batch(
        &mut self,
        entries: &Ids<'_>,
        ks: std::ops::Range<usize>,
        at: &(dyn Fn(usize) -> EntryPos + Sync),
        room: &mut Option<(usize, usize)>,
    ) {
        // `undefined` and `null` beside the table; the rest hashed in parallel.
        let state = &self.state;
        let hashed: Vec<(u64, u32)> = ks
            .clone()
            .into_par_iter()
            .with_min_len(4096)
            .filter_map(|k| {
                let p = at(k);
                let key = entries.id(p.0 as usize);
                (!key.is_undefined() && !key.is_null()).then(|| (state.hash_one(key), p.0))
            })
            .collect();
        for p in ks.map(at) {
            let key = entries.id(p.0 as usize);
            if key.is_undefined() {
                self.undefined = Some(p.0);
            } else if key.is_null() {
                self.null = Some(p.0);
            }
        }
        if hashed.is_empty() {
            return;
        }
        if let Some((positions, share)) = room.take() {
            self.reserve(entries, positions, &[share; SHARDS]);
        }
        let mut counts = vec![0usize; SHARDS + 1];
        for &(h, _) in &hashed {
            counts[Hashed(h).shard() + 1] += 1;
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let bounds = counts.clone();
        let mut grouped = vec![(0u64, 0u32); hashed.len()];
        for &(h, p) in &hashed {
            let b = &mut counts[Hashed(h).shard()];
            grouped[*b] = (h, p);
            *b += 1;
        }
        drop(hashed);
        let (pos_bits, state) = (self.pos_bits, &self.state);
        let added: usize = self
            .shards
            .par_iter_mut()
            .enumerate()
            .map(|(s, sh)| {
                let before = sh.len;
                let group = &grouped[bounds[s]..bounds[s + 1]];
                sh.make_room(entries, pos_bits, state, group.len());
                for &(h, p) in group {
                    sh.insert(entries, pos_bits, Hashed(h), p);
                }
                sh.len - before
            })
            .sum();
        self.in_table += added;
    }

    /// `byId.get(key)`.
    pub(crate) fn get(&self, entries: &Ids<'_>, key: KeyRef<'_>) -> Option<EntryPos> {
        if key.is_undefined() {
            return self.undefined.map(EntryPos);
        }
        if key.is_null() {
            return self.null.map(EntryPos);
        }
        if self.shards.is_empty() {
            return None;
        }
        let h = self.hash(key);
        let sh = &self.shards[h.shard()];
        if sh.slots.is_empty() {
            return None;
        }
        match sh.probe(entries, self.pos_bits, h, key) {
            (i, true) => Some(EntryPos(sh.slots[i] & pos_mask(self.pos_bits))),
            (_, false) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Index, Key};

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
            let index = Index::test_with_ids(&ids);
            let entries = &index.ids(&[]);
            let mut map = IdMap::default();
            let mut bulk = IdMap::default();
            let mut want: ahash::AHashMap<Key, EntryPos> = ahash::AHashMap::new();
            for p in 0..entries.len() as u32 {
                map.insert(entries, EntryPos(p));
                want.insert(entries.id(p as usize).to_key(), EntryPos(p));
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
            for e in index.iter(&[]) {
                assert_eq!(bulk.get(entries, e.id), want.get(&e.id.to_key()).copied());
            }
            for e in index.iter(&[]) {
                assert_eq!(map.get(entries, e.id), want.get(&e.id.to_key()).copied());
            }
            for missing in [Key::str("nope"), Key::Num(0.5f64.to_bits()), Key::Unique(7)] {
                assert_eq!(map.get(entries, (&missing).into()), want.get(&missing).copied());
            }
            map.clear();
            assert_eq!(map.len(), 0);
            assert_eq!(map.get(entries, entries.id(0)), None);
        }
    }
}
