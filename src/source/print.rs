//! A file's fingerprint: the XXH3-64 hash of each block of its bytes, to tell from the
//! bytes, not the timestamps, whether a file still holds what was read of it.
//!
//! Hashing runs at memory speed (XXH3, blocks side by side on the rayon threads), far
//! below indexing or listing the same bytes, so a file whose `fstat` moved is judged by
//! hashing its old length again: equal hashes mean the same bytes (an append since, or a
//! `touch`), different ones a rewrite. A print is taken *before* the bytes it stands for
//! are used where they can still change (a mapping): a write while they are used then
//! shows as a difference, except one undone before the check.

use rayon::prelude::*;
use std::fs::File;

/// Bytes a block; also the index's chunk, so that a session's index pass hashes each
/// chunk just before it indexes it (`crate::index::build_printed`).
pub(crate) const BLOCK: usize = 4 << 20;

/// Below this many bytes a print is taken on the calling thread.
const PARALLEL: usize = 2 * BLOCK;

/// The hashes of `len` bytes in blocks of `block` (the last one shorter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Print {
    block: usize,
    len: u64,
    hashes: Vec<u64>,
}

/// The hash of one block (what [`Print::from_hashes`] takes, one per block).
pub(crate) fn hash(b: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(b)
}

impl Print {
    /// The print of `bytes`, in blocks of [`BLOCK`].
    pub(crate) fn of(bytes: &[u8]) -> Print {
        Print::with_block(bytes, BLOCK)
    }

    /// The print of `bytes` in blocks of `block` bytes (at least 1).
    pub(crate) fn with_block(bytes: &[u8], block: usize) -> Print {
        let block = block.max(1);
        let hashes = if bytes.len() < PARALLEL {
            bytes.chunks(block).map(hash).collect()
        } else {
            bytes.par_chunks(block).map(hash).collect()
        };
        Print {
            block,
            len: bytes.len() as u64,
            hashes,
        }
    }

    /// A print made of hashes taken elsewhere (the index pass): `hashes[k]` is the hash of
    /// bytes `k * block .. min((k + 1) * block, len)`.
    pub(crate) fn from_hashes(block: usize, len: u64, hashes: Vec<u64>) -> Print {
        debug_assert_eq!(hashes.len() as u64, len.div_ceil(block.max(1) as u64));
        Print {
            block: block.max(1),
            len,
            hashes,
        }
    }

    /// How many bytes it stands for.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// One number for the whole print (what a cache keeps): the hash of the block hashes
    /// and the length. Prints of the same block size are equal exactly when their digests
    /// are (but for XXH3's collisions).
    pub(crate) fn digest(&self) -> u64 {
        if self.hashes.len() <= 1 && self.block == BLOCK {
            // One block: its own hash (the empty file's is the hash of nothing).
            return self.hashes.first().copied().unwrap_or_else(|| hash(&[]));
        }
        let mut b = Vec::with_capacity(8 * self.hashes.len() + 16);
        for h in &self.hashes {
            b.extend_from_slice(&h.to_le_bytes());
        }
        b.extend_from_slice(&self.len.to_le_bytes());
        b.extend_from_slice(&(self.block as u64).to_le_bytes());
        hash(&b)
    }

    /// Whether `bytes` starts with the bytes this print stands for.
    pub(crate) fn holds_in(&self, bytes: &[u8]) -> bool {
        let Ok(len) = usize::try_from(self.len) else {
            return false;
        };
        if bytes.len() < len {
            return false;
        }
        let bytes = &bytes[..len];
        if len < PARALLEL {
            bytes.chunks(self.block).map(hash).eq(self.hashes.iter().copied())
        } else {
            bytes
                .par_chunks(self.block)
                .zip(self.hashes.par_iter())
                .all(|(b, &h)| hash(b) == h)
        }
    }

    /// The print of `file`'s first `len` bytes as they are now, read with `pread` in
    /// blocks of [`BLOCK`] (side by side for a large file); `None` when it holds fewer.
    ///
    /// # Errors
    /// I/O errors of `pread`.
    pub(crate) fn of_file(file: &File, len: u64) -> std::io::Result<Option<Print>> {
        let hashes = file_hashes(file, 0, len, BLOCK)?;
        Ok(hashes.map(|hashes| Print::from_hashes(BLOCK, len, hashes)))
    }

    /// Whether `file` starts with the bytes this print stands for, read now with `pread`.
    ///
    /// # Errors
    /// I/O errors of `pread`.
    pub(crate) fn held_by(&self, file: &File) -> std::io::Result<bool> {
        let n = self.hashes.len();
        let check = |k: usize, buf: &mut Vec<u8>| -> std::io::Result<bool> {
            let at = k as u64 * self.block as u64;
            let want = (self.len - at).min(self.block as u64);
            buf.clear();
            let got = super::read_upto(file, at, want, buf)?;
            Ok(got == want && hash(buf) == self.hashes[k])
        };
        if self.len < PARALLEL as u64 {
            let mut buf = Vec::new();
            for k in 0..n {
                if !check(k, &mut buf)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        (0..n)
            .into_par_iter()
            .map_init(Vec::new, |buf, k| check(k, buf))
            .try_fold(|| true, |all, r| r.map(|ok| all && ok))
            .try_reduce(|| true, |a, b| Ok(a && b))
    }

    /// The print of `bytes`, which start with the bytes this print stands for (checked
    /// before): only the last, partial block and the new ones are hashed.
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        let (from, kept) = self.kept_blocks();
        self.hashes.truncate(kept);
        let more = Print::with_block(&bytes[from..], self.block);
        self.hashes.extend(more.hashes);
        self.len = bytes.len() as u64;
    }

    /// [`Print::extend`] to `file`'s first `len` bytes, read with `pread`; `false`, and
    /// the print as it was, when the file holds fewer.
    ///
    /// # Errors
    /// I/O errors of `pread`.
    pub(crate) fn extend_from_file(&mut self, file: &File, len: u64) -> std::io::Result<bool> {
        let (from, kept) = self.kept_blocks();
        let Some(more) = file_hashes(file, from as u64, len - from as u64, self.block)? else {
            return Ok(false);
        };
        self.hashes.truncate(kept);
        self.hashes.extend(more);
        self.len = len;
        Ok(true)
    }

    /// Where the blocks to hash again start (the last one when it is partial), and how
    /// many blocks stay.
    fn kept_blocks(&self) -> (usize, usize) {
        let full = (self.len / self.block as u64) as usize;
        (full * self.block, full)
    }
}

/// The hashes of `file`'s bytes `at .. at + len` in blocks of `block`; `None` when the
/// file ends sooner.
fn file_hashes(file: &File, at: u64, len: u64, block: usize) -> std::io::Result<Option<Vec<u64>>> {
    let n = usize::try_from(len.div_ceil(block as u64))
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    let one = |k: usize, buf: &mut Vec<u8>| -> std::io::Result<Option<u64>> {
        let off = k as u64 * block as u64;
        let want = (len - off).min(block as u64);
        buf.clear();
        let got = super::read_upto(file, at + off, want, buf)?;
        Ok((got == want).then(|| hash(buf)))
    };
    let hashes: std::io::Result<Vec<Option<u64>>> = if len < PARALLEL as u64 {
        let mut buf = Vec::new();
        (0..n).map(|k| one(k, &mut buf)).collect()
    } else {
        (0..n)
            .into_par_iter()
            .map_init(Vec::new, |buf, k| one(k, buf))
            .collect()
    };
    Ok(hashes?.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The slow twin: one hash per block, one block after another.
    fn twin(bytes: &[u8], block: usize) -> Vec<u64> {
        let mut v = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + block).min(bytes.len());
            v.push(hash(&bytes[at..end]));
            at = end;
        }
        v
    }

    fn file_of(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut f = tempfile::NamedTempFile::new().expect("temp");
        f.write_all(bytes).expect("write");
        let file = File::open(f.path()).expect("open");
        (f, file)
    }

    #[test]
    fn a_print_tells_a_prefix_from_an_edit() {
        for len in [0usize, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let p = Print::of(&bytes);
            assert_eq!(p.hashes, twin(&bytes, BLOCK));
            assert!(p.holds_in(&bytes));
            let mut longer = bytes.clone();
            longer.extend_from_slice(b"more\n");
            assert!(p.holds_in(&longer));
            let (_keep, file) = file_of(&longer);
            assert!(p.held_by(&file).expect("read"));
            assert_eq!(Print::of_file(&file, len as u64).expect("read"), Some(p.clone()));
            assert_eq!(Print::of_file(&file, longer.len() as u64 + 1).expect("read"), None);
            let mut grown = p.clone();
            grown.extend(&longer);
            assert_eq!(grown, Print::of(&longer));
            let mut grown2 = p.clone();
            assert!(grown2.extend_from_file(&file, longer.len() as u64).expect("read"));
            assert_eq!(grown2, grown);
            if len > 0 {
                for at in [0, len / 2, len - 1] {
                    let mut edited = longer.clone();
                    edited[at] ^= 1;
                    assert!(!p.holds_in(&edited), "an edit at {at} of {len}");
                    let (_keep, file) = file_of(&edited);
                    assert!(!p.held_by(&file).expect("read"));
                }
                assert!(!p.holds_in(&bytes[..len - 1]));
            }
        }
    }

    #[test]
    fn digests_differ_with_length_and_block() {
        let a = Print::with_block(b"abcdef", 2);
        assert_ne!(a.digest(), Print::with_block(b"abcdef", 3).digest());
        assert_ne!(Print::of(b"").digest(), Print::of(b"\n").digest());
        assert_eq!(Print::of(b"x\n").digest(), hash(b"x\n"));
    }

    proptest::proptest! {
        /// Against the twin, over block sizes and edits: a print holds in a file exactly
        /// when the file starts with its bytes.
        #[test]
        fn holds_exactly_when_the_prefix_is_the_same(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            block in 1usize..40,
            cut in 0usize..300,
            edit in proptest::option::of((0usize..300, 1u8..=255)),
            more in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..50),
        ) {
            let cut = cut.min(bytes.len());
            let p = Print::with_block(&bytes[..cut], block);
            proptest::prop_assert_eq!(&p.hashes, &twin(&bytes[..cut], block));
            let mut now = bytes.clone();
            now.extend_from_slice(&more);
            if let Some((at, x)) = edit && at < now.len() {
                now[at] ^= x;
            }
            let same = now.len() >= cut && now[..cut] == bytes[..cut];
            proptest::prop_assert_eq!(p.holds_in(&now), same);
            if same {
                let mut q = p.clone();
                q.extend(&now);
                proptest::prop_assert_eq!(q, Print::with_block(&now, block));
            }
        }
    }
}
