//! `Array.prototype.sort(comparefn)` as V8 (Node 20, V8 11.x) performs it.
//!
//! V8 sorts with TimSort (`third_party/v8/builtins/array-sort.tq`): the array
//! is split into natural runs (strictly descending runs are reversed), short
//! runs are extended to `minrun` with binary insertion sort, and runs are
//! merged with the usual `merge_collapse` / `merge_force_collapse` stack
//! discipline, using galloping (`min_gallop` starting at 7) in `merge_lo` /
//! `merge_hi`. (Later V8 versions send arrays shorter than 10 elements
//! straight to binary insertion sort; V8 11.3 in Node 20 does not, and neither
//! does this module.)
//!
//! When the comparator is a consistent total order, any stable sort gives the
//! same permutation. pi's comparators are not always consistent (they subtract
//! timestamps that can be `NaN`), and then the result depends on exactly which
//! pairs are compared, in which argument order, and which branch each result
//! takes. This module reproduces V8's sequence of comparator calls exactly:
//! same pairs, same argument order, same branches. As in V8 (step "If v is
//! NaN, return +0" of SortCompare), a `NaN` comparator result is treated as
//! `+0`, and every branch tests either `order < 0` or its negation.
//!
//! Not modelled: JavaScript-level details that do not arise for a Rust slice
//! of values, namely holes and `undefined` elements (which V8 moves to the end
//! without calling the comparator), exceptions thrown by the comparator, and
//! the comparator mutating the array being sorted.

/// V8's `kMinGallopWins`: initial galloping threshold.
const MIN_GALLOP_WINS: usize = 7;

/// Sorts `v` in place into exactly the order V8's `Array.prototype.sort`
/// produces when called with a comparator that behaves like `cmp`.
///
/// `cmp(a, b)` plays the role of the JavaScript `comparefn(a, b)`: a negative
/// result means `a` sorts before `b`. The comparator is called with the same
/// arguments, in the same order and the same number of times as V8 calls it,
/// so even inconsistent comparators (including ones returning `NaN`, which is
/// treated as `0`) yield V8's permutation.
pub fn v8_sort_by<T, F: FnMut(&T, &T) -> f64>(v: &mut Vec<T>, mut cmp: F) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let order = {
        let items: &[T] = v;
        let mut state = SortState {
            work: (0..n).collect(),
            temp: Vec::new(),
            runs: Vec::new(),
            min_gallop: MIN_GALLOP_WINS,
            cmp: |a: usize, b: usize| -> f64 {
                let r = cmp(&items[a], &items[b]);
                if r.is_nan() { 0.0 } else { r }
            },
        };
        state.timsort(n);
        state.work
    };
    apply_permutation(v, &order);
}

/// Rearranges `v` so that the new `v[i]` is the old `v[order[i]]`.
fn apply_permutation<T>(v: &mut Vec<T>, order: &[usize]) {
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(
        order
            .iter()
            .map(|&i| slots[i].take().expect("permutation index used twice")),
    );
}

/// The mutable state of one sort: the work array holds indices into the
/// caller's slice, and the comparator compares the elements they denote.
struct SortState<C: FnMut(usize, usize) -> f64> {
    work: Vec<usize>,
    temp: Vec<usize>,
    /// Pending runs as `(base, length)`.
    runs: Vec<(usize, usize)>,
    min_gallop: usize,
    cmp: C,
}

impl<C: FnMut(usize, usize) -> f64> SortState<C> {
    #[inline]
    fn less(&mut self, x: usize, y: usize) -> bool {
        (self.cmp)(x, y) < 0.0
    }

    /// Binary insertion sort of `work[low..high]`, `work[low..start]` being
    /// already sorted (`low < start`).
    fn binary_insertion_sort(&mut self, low: usize, start: usize, high: usize) {
        let mut start = start;
        while start < high {
            let pivot = self.work[start];
            let mut left = low;
            let mut right = start;
            while left < right {
                let mid = left + ((right - left) >> 1);
                if self.less(pivot, self.work[mid]) {
                    right = mid;
                } else {
                    left = mid + 1;
                }
            }
            self.work.copy_within(left..start, left + 1);
            self.work[left] = pivot;
            start += 1;
        }
    }

    /// Length of the run starting at `low` (strictly descending runs are
    /// reversed in place).
    fn count_and_make_run(&mut self, low_arg: usize, high: usize) -> usize {
        let low = low_arg + 1;
        if low == high {
            return 1;
        }
        let mut run_length = 2;
        let element_low = self.work[low];
        let descending = self.less(element_low, self.work[low - 1]);
        let mut previous = element_low;
        for idx in low + 1..high {
            let current = self.work[idx];
            let is_less = self.less(current, previous);
            if descending {
                if !is_less {
                    break;
                }
            } else if is_less {
                break;
            }
            previous = current;
            run_length += 1;
        }
        if descending {
            self.work[low_arg..low_arg + run_length].reverse();
        }
        run_length
    }

    fn timsort(&mut self, length: usize) {
        let mut remaining = length;
        let mut low = 0;
        let min_run = compute_min_run_length(remaining);
        while remaining != 0 {
            let mut run = self.count_and_make_run(low, low + remaining);
            if run < min_run {
                let forced = min_run.min(remaining);
                self.binary_insertion_sort(low, low + run, low + forced);
                run = forced;
            }
            self.runs.push((low, run));
            self.merge_collapse();
            low += run;
            remaining -= run;
        }
        self.merge_force_collapse();
    }

    /// `runs[n - 2].len > runs[n - 1].len + runs[n].len` (true for `n < 2`).
    fn run_invariant_established(&self, n: isize) -> bool {
        if n < 2 {
            return true;
        }
        let n = n as usize;
        self.runs[n - 2].1 > self.runs[n - 1].1 + self.runs[n].1
    }

    fn merge_collapse(&mut self) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() as isize - 2;
            if !self.run_invariant_established(n + 1) || !self.run_invariant_established(n) {
                // When an invariant fails, n >= 1 holds, so n - 1 is valid.
                let nu = n as usize;
                if self.runs[nu - 1].1 < self.runs[nu + 1].1 {
                    n -= 1;
                }
                self.merge_at(n as usize);
            } else if self.runs[n as usize].1 <= self.runs[n as usize + 1].1 {
                self.merge_at(n as usize);
            } else {
                break;
            }
        }
    }

    fn merge_force_collapse(&mut self) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() - 2;
            if n > 0 && self.runs[n - 1].1 < self.runs[n + 1].1 {
                n -= 1;
            }
            self.merge_at(n);
        }
    }

    /// Merges the runs at stack positions `i` and `i + 1`.
    fn merge_at(&mut self, i: usize) {
        let (mut base_a, mut length_a) = self.runs[i];
        let (base_b, mut length_b) = self.runs[i + 1];
        self.runs[i].1 = length_a + length_b;
        self.runs.remove(i + 1);

        let key_right = self.work[base_b];
        let k = self.gallop_right(false, key_right, base_a, length_a, 0);
        base_a += k;
        length_a -= k;
        if length_a == 0 {
            return;
        }
        let key_left = self.work[base_a + length_a - 1];
        length_b = self.gallop_left(false, key_left, base_b, length_b, length_b - 1);
        if length_b == 0 {
            return;
        }
        if length_a <= length_b {
            self.merge_low(base_a, length_a, base_b, length_b);
        } else {
            self.merge_high(base_a, length_a, base_b, length_b);
        }
    }

    #[inline]
    fn elem(&self, in_temp: bool, i: usize) -> usize {
        if in_temp { self.temp[i] } else { self.work[i] }
    }

    /// Position in the sorted `arr[base..base + length]` where `key` goes,
    /// left of any elements equal to it (`arr` is `temp` if `in_temp`).
    fn gallop_left(&mut self, in_temp: bool, key: usize, base: usize, length: usize, hint: usize) -> usize {
        let mut last_ofs: isize;
        let mut offset: isize;
        let hint_i = hint as isize;
        let first = self.elem(in_temp, base + hint);
        if self.less(first, key) {
            // Gallop right.
            let max_ofs = (length - hint) as isize;
            last_ofs = 0;
            offset = 1;
            while offset < max_ofs {
                let e = self.elem(in_temp, base + hint + offset as usize);
                if !self.less(e, key) {
                    break;
                }
                last_ofs = offset;
                offset = (offset << 1) + 1;
            }
            if offset > max_ofs {
                offset = max_ofs;
            }
            last_ofs += hint_i;
            offset += hint_i;
        } else {
            // Gallop left.
            let max_ofs = hint_i + 1;
            last_ofs = 0;
            offset = 1;
            while offset < max_ofs {
                let e = self.elem(in_temp, base + hint - offset as usize);
                if self.less(e, key) {
                    break;
                }
                last_ofs = offset;
                offset = (offset << 1) + 1;
            }
            if offset > max_ofs {
                offset = max_ofs;
            }
            let tmp = last_ofs;
            last_ofs = hint_i - offset;
            offset = hint_i - tmp;
        }
        last_ofs += 1;
        while last_ofs < offset {
            let m = last_ofs + ((offset - last_ofs) >> 1);
            let e = self.elem(in_temp, base + m as usize);
            if self.less(e, key) {
                last_ofs = m + 1;
            } else {
                offset = m;
            }
        }
        offset as usize
    }

    /// Like [`Self::gallop_left`] but right of any elements equal to `key`.
    fn gallop_right(&mut self, in_temp: bool, key: usize, base: usize, length: usize, hint: usize) -> usize {
        let mut last_ofs: isize;
        let mut offset: isize;
        let hint_i = hint as isize;
        let first = self.elem(in_temp, base + hint);
        if self.less(key, first) {
            // Gallop left.
            let max_ofs = hint_i + 1;
            last_ofs = 0;
            offset = 1;
            while offset < max_ofs {
                let e = self.elem(in_temp, base + hint - offset as usize);
                if !self.less(key, e) {
                    break;
                }
                last_ofs = offset;
                offset = (offset << 1) + 1;
            }
            if offset > max_ofs {
                offset = max_ofs;
            }
            let tmp = last_ofs;
            last_ofs = hint_i - offset;
            offset = hint_i - tmp;
        } else {
            // Gallop right.
            let max_ofs = (length - hint) as isize;
            last_ofs = 0;
            offset = 1;
            while offset < max_ofs {
                let e = self.elem(in_temp, base + hint + offset as usize);
                if self.less(key, e) {
                    break;
                }
                last_ofs = offset;
                offset = (offset << 1) + 1;
            }
            if offset > max_ofs {
                offset = max_ofs;
            }
            last_ofs += hint_i;
            offset += hint_i;
        }
        last_ofs += 1;
        while last_ofs < offset {
            let m = last_ofs + ((offset - last_ofs) >> 1);
            let e = self.elem(in_temp, base + m as usize);
            if self.less(key, e) {
                offset = m;
            } else {
                last_ofs = m + 1;
            }
        }
        offset as usize
    }

    /// Merges `work[base_a..base_a + length_a]` (copied to `temp`) with the
    /// following run, front to back. Requires `length_a <= length_b`.
    fn merge_low(&mut self, base_a: usize, length_a: usize, base_b: usize, length_b: usize) {
        let mut length_a = length_a;
        let mut length_b = length_b;
        self.temp.clear();
        self.temp.extend_from_slice(&self.work[base_a..base_a + length_a]);

        let mut dest = base_a;
        let mut cursor_temp = 0;
        let mut cursor_b = base_b;

        self.work[dest] = self.work[cursor_b];
        dest += 1;
        cursor_b += 1;

        // Outcome of the merge loop: `true` means "copy B then the last A".
        let copy_b = 'merge: {
            length_b -= 1;
            if length_b == 0 {
                break 'merge false;
            }
            if length_a == 1 {
                break 'merge true;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let mut wins_a = 0usize;
                let mut wins_b = 0usize;
                loop {
                    if self.less(self.work[cursor_b], self.temp[cursor_temp]) {
                        self.work[dest] = self.work[cursor_b];
                        dest += 1;
                        cursor_b += 1;
                        wins_b += 1;
                        length_b -= 1;
                        wins_a = 0;
                        if length_b == 0 {
                            break 'merge false;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    } else {
                        self.work[dest] = self.temp[cursor_temp];
                        dest += 1;
                        cursor_temp += 1;
                        wins_a += 1;
                        length_a -= 1;
                        wins_b = 0;
                        if length_a == 1 {
                            break 'merge true;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    }
                }

                min_gallop += 1;
                let mut first_iteration = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first_iteration {
                    first_iteration = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    let key = self.work[cursor_b];
                    wins_a = self.gallop_right(true, key, cursor_temp, length_a, 0);
                    if wins_a > 0 {
                        self.work[dest..dest + wins_a].copy_from_slice(&self.temp[cursor_temp..cursor_temp + wins_a]);
                        dest += wins_a;
                        cursor_temp += wins_a;
                        length_a -= wins_a;
                        if length_a == 1 {
                            break 'merge true;
                        }
                        if length_a == 0 {
                            break 'merge false;
                        }
                    }
                    self.work[dest] = self.work[cursor_b];
                    dest += 1;
                    cursor_b += 1;
                    length_b -= 1;
                    if length_b == 0 {
                        break 'merge false;
                    }

                    let key = self.temp[cursor_temp];
                    wins_b = self.gallop_left(false, key, cursor_b, length_b, 0);
                    if wins_b > 0 {
                        self.work.copy_within(cursor_b..cursor_b + wins_b, dest);
                        dest += wins_b;
                        cursor_b += wins_b;
                        length_b -= wins_b;
                        if length_b == 0 {
                            break 'merge false;
                        }
                    }
                    self.work[dest] = self.temp[cursor_temp];
                    dest += 1;
                    cursor_temp += 1;
                    length_a -= 1;
                    if length_a == 1 {
                        break 'merge true;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };

        if copy_b {
            self.work.copy_within(cursor_b..cursor_b + length_b, dest);
            self.work[dest + length_b] = self.temp[cursor_temp];
        } else if length_a > 0 {
            self.work[dest..dest + length_a].copy_from_slice(&self.temp[cursor_temp..cursor_temp + length_a]);
        }
    }

    /// Merges `work[base_a..base_a + length_a]` with the following run (copied
    /// to `temp`), back to front. Requires `length_a >= length_b`.
    fn merge_high(&mut self, base_a: usize, length_a: usize, base_b: usize, length_b: usize) {
        let mut length_a = length_a;
        let mut length_b = length_b;
        self.temp.clear();
        self.temp.extend_from_slice(&self.work[base_b..base_b + length_b]);

        // Cursors may step one below their range's start (to -1), hence isize.
        let mut dest = (base_b + length_b - 1) as isize;
        let mut cursor_temp = length_b as isize - 1;
        let mut cursor_a = (base_a + length_a - 1) as isize;

        self.work[dest as usize] = self.work[cursor_a as usize];
        dest -= 1;
        cursor_a -= 1;

        // Outcome of the merge loop: `true` means "copy A then the first B".
        let copy_a = 'merge: {
            length_a -= 1;
            if length_a == 0 {
                break 'merge false;
            }
            if length_b == 1 {
                break 'merge true;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let mut wins_a = 0usize;
                let mut wins_b = 0usize;
                loop {
                    if self.less(self.temp[cursor_temp as usize], self.work[cursor_a as usize]) {
                        self.work[dest as usize] = self.work[cursor_a as usize];
                        dest -= 1;
                        cursor_a -= 1;
                        wins_a += 1;
                        length_a -= 1;
                        wins_b = 0;
                        if length_a == 0 {
                            break 'merge false;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    } else {
                        self.work[dest as usize] = self.temp[cursor_temp as usize];
                        dest -= 1;
                        cursor_temp -= 1;
                        wins_b += 1;
                        length_b -= 1;
                        wins_a = 0;
                        if length_b == 1 {
                            break 'merge true;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    }
                }

                min_gallop += 1;
                let mut first_iteration = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first_iteration {
                    first_iteration = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    let key = self.temp[cursor_temp as usize];
                    let k = self.gallop_right(false, key, base_a, length_a, length_a - 1);
                    wins_a = length_a - k;
                    if wins_a > 0 {
                        dest -= wins_a as isize;
                        cursor_a -= wins_a as isize;
                        let from = (cursor_a + 1) as usize;
                        self.work.copy_within(from..from + wins_a, (dest + 1) as usize);
                        length_a -= wins_a;
                        if length_a == 0 {
                            break 'merge false;
                        }
                    }
                    self.work[dest as usize] = self.temp[cursor_temp as usize];
                    dest -= 1;
                    cursor_temp -= 1;
                    length_b -= 1;
                    if length_b == 1 {
                        break 'merge true;
                    }

                    let key = self.work[cursor_a as usize];
                    let k = self.gallop_left(true, key, 0, length_b, length_b - 1);
                    wins_b = length_b - k;
                    if wins_b > 0 {
                        dest -= wins_b as isize;
                        cursor_temp -= wins_b as isize;
                        let from = (cursor_temp + 1) as usize;
                        let to = (dest + 1) as usize;
                        self.work[to..to + wins_b].copy_from_slice(&self.temp[from..from + wins_b]);
                        length_b -= wins_b;
                        if length_b == 1 {
                            break 'merge true;
                        }
                        if length_b == 0 {
                            break 'merge false;
                        }
                    }
                    self.work[dest as usize] = self.work[cursor_a as usize];
                    dest -= 1;
                    cursor_a -= 1;
                    length_a -= 1;
                    if length_a == 0 {
                        break 'merge false;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };

        if copy_a {
            dest -= length_a as isize;
            cursor_a -= length_a as isize;
            let from = (cursor_a + 1) as usize;
            self.work.copy_within(from..from + length_a, (dest + 1) as usize);
            self.work[dest as usize] = self.temp[cursor_temp as usize];
        } else if length_b > 0 {
            let to = (dest - (length_b as isize - 1)) as usize;
            self.work[to..to + length_b].copy_from_slice(&self.temp[..length_b]);
        }
    }
}

/// TimSort's `minrun` for an array of `n` elements.
fn compute_min_run_length(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorts `keys` tagged with their positions using `(a, b) => a - b` and
    /// returns the resulting order of positions.
    fn perm(keys: &[f64]) -> Vec<usize> {
        let mut v: Vec<(f64, usize)> = keys.iter().copied().zip(0..).collect();
        v8_sort_by(&mut v, |a, b| a.0 - b.0);
        v.into_iter().map(|(_, i)| i).collect()
    }

    #[test]
    fn small_and_trivial() {
        let mut e: Vec<i32> = vec![];
        v8_sort_by(&mut e, |_, _| panic!("no comparisons for empty arrays"));
        let mut one = vec![1];
        v8_sort_by(&mut one, |_, _| panic!("no comparisons for single elements"));
        assert_eq!(perm(&[3.0, 1.0, 2.0]), [1, 2, 0]);
        // Stable for equal keys.
        assert_eq!(perm(&[1.0, 0.0, 1.0, 0.0]), [1, 3, 0, 2]);
    }

    /// Expected permutations obtained from Node 20 (`keys.map((k, i) => ({k, i}))
    /// .sort((a, b) => a.k - b.k).map(o => o.i)`), with NaN keys making the
    /// comparator inconsistent.
    #[test]
    fn matches_node_with_nans() {
        let n = f64::NAN;
        let cases: &[(&[f64], &[usize])] = &[
            (&[3.0, n, 1.0, 2.0], &[0, 1, 2, 3]),
            (&[5.0, 4.0, n, 3.0, 2.0, 1.0], &[5, 4, 3, 1, 0, 2]),
            (
                &[2.0, n, 1.0, n, 0.0, 5.0, 4.0, n, 3.0, 9.0, 8.0, 7.0],
                &[0, 1, 2, 3, 4, 8, 6, 5, 7, 11, 10, 9],
            ),
        ];
        for (keys, expected) in cases {
            assert_eq!(perm(keys), *expected, "keys {keys:?}");
        }
    }

    /// A 150-element TimSort case (several runs, merges and galloping):
    /// key(i) = NaN if i % 13 == 0, else i if i % 50 < 30, else 300 - 2i.
    #[test]
    fn matches_node_timsort() {
        let keys: Vec<f64> = (0..150)
            .map(|i| {
                if i % 13 == 0 {
                    f64::NAN
                } else if i % 50 < 30 {
                    i as f64
                } else {
                    300.0 - 2.0 * i as f64
                }
            })
            .collect();
        let expected: [usize; 150] = [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
            29, 38, 37, 36, 35, 34, 33, 32, 31, 39, 50, 51, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 66, 67, 68,
            69, 70, 71, 72, 73, 74, 75, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 30, 52, 65, 76, 77, 78, 79, 100, 101,
            99, 102, 103, 98, 105, 97, 106, 107, 96, 108, 109, 95, 110, 111, 94, 112, 113, 93, 92, 90, 89, 88, 87, 86,
            85, 84, 83, 82, 81, 80, 91, 104, 146, 142, 138, 134, 132, 114, 115, 116, 117, 149, 148, 147, 145, 144, 141,
            140, 139, 137, 136, 135, 133, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 143,
        ];
        assert_eq!(perm(&keys), expected);
    }
}
