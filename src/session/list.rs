//! pi's `getEntries()`: the positions of the kept lines that are not headers.
//!
//! In every session pi writes, the header is the first line and no other line is one: the
//! entries are then positions `1..n`, held as that range (a list of 2.5 million positions
//! was 10 MB of a 1 GiB small-entries session's index). Any other shape (a second header,
//! a header-like line in the middle) turns it into an explicit list, the obvious form,
//! which tests hold the range against.

use crate::index::EntryPos;

/// The positions, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EntryList {
    /// Positions `first..end`.
    Range { first: u32, end: u32 },
    /// Any positions.
    List(Vec<EntryPos>),
}

impl Default for EntryList {
    fn default() -> EntryList {
        EntryList::Range { first: 0, end: 0 }
    }
}

impl EntryList {
    pub(crate) fn len(&self) -> usize {
        match self {
            EntryList::Range { first, end } => (end - first) as usize,
            EntryList::List(v) => v.len(),
        }
    }

    /// The `k`th position (`k < len()`).
    #[inline]
    pub(crate) fn get(&self, k: usize) -> EntryPos {
        match self {
            EntryList::Range { first, .. } => EntryPos(first + k as u32),
            EntryList::List(v) => v[k],
        }
    }

    pub(crate) fn last(&self) -> Option<EntryPos> {
        self.len().checked_sub(1).map(|k| self.get(k))
    }

    /// How many positions are below `pos`.
    pub(crate) fn count_below(&self, pos: usize) -> usize {
        match self {
            EntryList::Range { first, end } => pos.clamp(*first as usize, *end as usize) - *first as usize,
            EntryList::List(v) => v.partition_point(|p| (p.0 as usize) < pos),
        }
    }

    /// The positions from the `from`th on.
    pub(crate) fn iter_from(&self, from: usize) -> impl DoubleEndedIterator<Item = EntryPos> + ExactSizeIterator + '_ {
        (from.min(self.len())..self.len()).map(|k| self.get(k))
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = EntryPos> + ExactSizeIterator + '_ {
        self.iter_from(0)
    }

    pub(crate) fn clear(&mut self) {
        *self = EntryList::default();
    }

    /// Add `p`, above every position held.
    pub(crate) fn push(&mut self, p: EntryPos) {
        match self {
            EntryList::Range { first, end } if first == end => {
                *first = p.0;
                *end = p.0 + 1;
            }
            EntryList::Range { end, .. } if *end == p.0 => *end += 1,
            EntryList::Range { .. } => {
                let mut v: Vec<EntryPos> = self.iter().collect();
                v.push(p);
                *self = EntryList::List(v);
            }
            EntryList::List(v) => v.push(p),
        }
    }

    /// Every position, as a list.
    pub(crate) fn to_vec(&self) -> Vec<EntryPos> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range form gives what a plain list of the same pushes gives.
    #[test]
    fn a_range_is_the_list_it_stands_for() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..500 {
            let mut list = EntryList::default();
            let mut want: Vec<EntryPos> = Vec::new();
            let mut p = (round % 3) as u32;
            for _ in 0..(round % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly the next position, sometimes a gap (a header in between).
                p += if x.is_multiple_of(9) {
                    2 + (x >> 8) as u32 % 3
                } else {
                    1
                };
                list.push(EntryPos(p));
                want.push(EntryPos(p));
            }
            assert_eq!(list.len(), want.len());
            assert_eq!(list.to_vec(), want);
            assert_eq!(list.last(), want.last().copied());
            for k in 0..want.len() {
                assert_eq!(list.get(k), want[k]);
                assert_eq!(list.iter_from(k).collect::<Vec<_>>(), want[k..].to_vec());
            }
            assert_eq!(
                list.iter().rev().collect::<Vec<_>>(),
                want.iter().rev().copied().collect::<Vec<_>>()
            );
            for pos in 0..(p as usize + 3) {
                assert_eq!(list.count_below(pos), want.partition_point(|q| (q.0 as usize) < pos));
            }
            list.clear();
            assert_eq!(list.len(), 0);
        }
    }
}
