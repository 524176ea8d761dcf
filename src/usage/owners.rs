//! Who owns each usage record: the sessions a report counts (records read now or kept
//! in the usage summary, behind one trait), the owners' order, and which records repeat
//! a key met before (`mod.rs` says the rule).

use super::FileUsage;
use crate::listing::SessionInfo;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

/// The sessions a report counts, in path order: each one's header, the (provider,
/// model) pairs its records name (by [`super::Record::model`]) and its records in file
/// order. Records read now (`[(SessionInfo, FileUsage)]`) and records kept in the usage
/// summary (`summary.rs`) are counted by the same code.
pub(crate) trait Sessions: Sync {
    /// How many sessions.
    fn sessions(&self) -> usize;
    /// Session `k`'s header.
    fn info(&self, k: usize) -> &SessionInfo;
    /// Session `k`'s header `timestamp` (as [`SessionInfo::created`]).
    fn created(&self, k: usize) -> f64 {
        self.info(k).created
    }
    /// Session `k`'s path.
    fn path(&self, k: usize) -> &std::path::Path {
        &self.info(k).path
    }
    /// The (provider, model) pairs of session `k`, in the order its records number them.
    fn models(&self, k: usize) -> impl Iterator<Item = (&str, &str)> + '_;
    /// How many records session `k` has.
    fn len_of(&self, k: usize) -> usize;
    /// Session `k`'s records, in file order.
    fn records(&self, k: usize) -> impl Iterator<Item = super::Record> + '_;
    /// Record `j` of session `k`.
    fn record(&self, k: usize, j: usize) -> super::Record;
    /// The keys of session `k`'s records, in file order.
    fn keys(&self, k: usize) -> impl Iterator<Item = [u64; 2]> + '_ {
        self.records(k).map(|r| r.key)
    }
}

impl Sessions for [(SessionInfo, FileUsage)] {
    fn sessions(&self) -> usize {
        self.len()
    }
    fn info(&self, k: usize) -> &SessionInfo {
        &self[k].0
    }
    fn models(&self, k: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
        self[k].1.models.iter().map(|(p, m)| (p.as_str(), m.as_str()))
    }
    fn len_of(&self, k: usize) -> usize {
        self[k].1.records.len()
    }
    fn records(&self, k: usize) -> impl Iterator<Item = super::Record> + '_ {
        self[k].1.records.iter().copied()
    }
    fn record(&self, k: usize, j: usize) -> super::Record {
        self[k].1.records[j]
    }
}

/// Where each session's records start when all are numbered in path order (one more:
/// the count of all).
pub(crate) fn starts<S: Sessions + ?Sized>(files: &S) -> Vec<usize> {
    let mut at = Vec::with_capacity(files.sessions() + 1);
    let mut n = 0;
    for k in 0..files.sessions() {
        at.push(n);
        n += files.len_of(k);
    }
    at.push(n);
    at
}

/// The sessions in the owners' order: the oldest header first, files without a valid one
/// last, ties by path (`mod.rs`).
pub(crate) fn owners<S: Sessions + ?Sized>(files: &S) -> Vec<usize> {
    let created = |k: usize| {
        let c = files.created(k);
        if c.is_nan() { f64::INFINITY } else { c }
    };
    let mut order: Vec<usize> = (0..files.sessions()).collect();
    order.sort_by(|&a, &b| {
        created(a)
            .total_cmp(&created(b))
            .then_with(|| files.path(a).cmp(files.path(b)))
    });
    order
}

/// Which records hold a key that a record before them holds, "before" in the owners'
/// `order`, file by file; by record number in path order (`start`). The keys are spread
/// over 256 buckets by a byte of theirs in one pass in that order, then each bucket's keys
/// go through a set small enough for the CPU's caches: the same answer as one set of every
/// key (the slow twin's), whose random accesses missed the caches for most keys and were
/// most of a cached report's time (as were the bitmaps of keys met twice that stood in
/// front of it).
pub(crate) fn repeated<S: Sessions + ?Sized>(files: &S, order: &[usize], start: &[usize]) -> Vec<bool> {
    let n = start.last().copied().unwrap_or(0);
    let mut buckets: Vec<Vec<([u64; 2], u32)>> = (0..256).map(|_| Vec::with_capacity(n / 200 + 1)).collect();
    for &k in order {
        for (j, key) in files.keys(k).enumerate() {
            // (By the high half: the set hashes the low one, all of whose bits then vary
            // within a bucket.)
            buckets[(key[1] >> 56) as usize].push((key, (start[k] + j) as u32));
        }
    }
    let mut dup = vec![false; n];
    let mut seen: HashSet<[u64; 2], BuildHasherDefault<KeyHasher>> = HashSet::default();
    for b in &buckets {
        seen.clear();
        for (key, i) in b {
            if !seen.insert(*key) {
                dup[*i as usize] = true;
            }
        }
    }
    dup
}

/// Who owns each record of a list of sessions: the sessions in the owners' order, where
/// each one's records start in path order ([`starts`]) and which records repeat a key
/// met before ([`repeated`], or as the usage summary keeps it).
#[derive(Default)]
pub(crate) struct Owned {
    pub(crate) order: Vec<usize>,
    pub(crate) start: Vec<usize>,
    pub(crate) dup: Vec<bool>,
}

impl Owned {
    /// The owners of `files`' records, every key looked at.
    pub(crate) fn of<S: Sessions + ?Sized>(files: &S) -> Owned {
        let start = starts(files);
        let order = owners(files);
        let dup = repeated(files, &order, &start);
        Owned { order, start, dup }
    }
}

/// The hasher of record keys: they are XXH3-128 hashes, so their low 64 bits are one.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // A key hashes as its halves' bytes (`[u64; 2]`): the first eight, the low half,
        // are the hash. (Anything else is folded in.)
        match bytes.first_chunk::<8>() {
            Some(b) if self.0 == 0 => self.0 = u64::from_ne_bytes(*b),
            _ => {
                for &b in bytes {
                    self.0 = self.0.rotate_left(8) ^ u64::from(b);
                }
            }
        }
    }
    fn write_u64(&mut self, v: u64) {
        if self.0 == 0 {
            self.0 = v;
        }
    }
    fn write_usize(&mut self, _: usize) {
        // (The array's length, the same for every key.)
    }
}
