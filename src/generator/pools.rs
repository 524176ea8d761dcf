//! Text pools: pre-escaped JSON string content (code, shell output, prose, base64), built
//! once per process from fixed seeds and cut at safe boundaries into the entries.

use super::json::put_esc;
use super::rng::Rng;

/// JSON-escaped text (the inside of a JSON string) with the offsets where a
/// line or sentence starts, and a bitmap of every offset where the text may
/// be cut (not inside an escape sequence or a UTF-8 character).
pub(super) struct TextPool {
    data: Vec<u8>,
    starts: Vec<u32>,
    safe: Vec<u64>,
    /// Per [`Class`]: segments of one kind of text, as (index of the first
    /// line in `starts`, number of lines).
    segs: [Vec<(u32, u32)>; 3],
}

/// Kinds of text in the code pool.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Class {
    /// Source files: TypeScript, Rust, Python, JSON, Markdown.
    Code = 0,
    /// Command output: test runners, compilers, `ls`, `git log`, warnings.
    Shell = 1,
    /// `path:line:text` search results.
    Grep = 2,
}

impl TextPool {
    #[inline]
    fn is_safe(&self, i: usize) -> bool {
        self.safe[i >> 6] >> (i & 63) & 1 == 1
    }

    /// Largest safe offset `<= i`.
    fn safe_floor(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_safe(i) {
            i -= 1;
        }
        i
    }

    /// Appends about `len` bytes (at most `len`, at least `len - 6` when
    /// `len` is not tiny) cut from random places of the pool, each piece
    /// starting at a line start.
    pub(super) fn put(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize) -> usize {
        let mut left = len;
        let total = self.data.len();
        while left > 0 {
            let take = left.min(total / 2);
            let mut start = self.starts[rng.below(self.starts.len() as u64) as usize] as usize;
            if start + take > total {
                // Too close to the end: pick among the starts at or before
                // `total - take`.
                let lim = self.starts.partition_point(|&s| s as usize <= total - take);
                start = self.starts[rng.below(lim.max(1) as u64) as usize] as usize;
            }
            let end = self.safe_floor(start + take);
            if end <= start {
                break;
            }
            b.extend_from_slice(&self.data[start..end]);
            left -= end - start;
            if end - start < take {
                break;
            }
        }
        len - left
    }

    /// Like [`TextPool::put`], but starting in a segment of the given class
    /// (at its top half of the time, like a file read from the start).
    pub(super) fn put_class(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize, class: Class) -> usize {
        let segs = &self.segs[class as usize];
        let total = self.data.len();
        if segs.is_empty() || len >= total / 2 {
            return self.put(b, rng, len);
        }
        let (first, n) = segs[rng.below(segs.len() as u64) as usize];
        let line = if rng.chance(0.5) {
            first
        } else {
            first + rng.below(u64::from(n)) as u32
        };
        let start = self.starts[line as usize] as usize;
        if start + len > total {
            return self.put(b, rng, len);
        }
        let end = self.safe_floor(start + len);
        b.extend_from_slice(&self.data[start..end]);
        end - start
    }

    /// Appends exactly `len` bytes: pool text padded with `.`.
    pub(super) fn put_exact(&self, b: &mut Vec<u8>, rng: &mut Rng, len: usize) {
        let n = self.put(b, rng, len);
        b.resize(b.len() + (len - n), b'.');
    }
}

pub(super) struct PoolBuilder {
    pub(super) data: Vec<u8>,
    pub(super) starts: Vec<u32>,
    safe: Vec<u64>,
    segs: [Vec<(u32, u32)>; 3],
}

impl PoolBuilder {
    pub(super) fn new(cap: usize) -> Self {
        let mut p = PoolBuilder {
            data: Vec::with_capacity(cap + 4096),
            starts: Vec::new(),
            safe: Vec::new(),
            segs: [Vec::new(), Vec::new(), Vec::new()],
        };
        p.mark();
        p
    }

    pub(super) fn mark(&mut self) {
        let i = self.data.len();
        if i >> 6 >= self.safe.len() {
            self.safe.resize((i >> 6) + 1, 0);
        }
        self.safe[i >> 6] |= 1 << (i & 63);
    }

    /// Appends `s` escaped, as one piece (a line or sentence start).
    pub(super) fn piece(&mut self, s: &str) {
        self.starts.push(self.data.len() as u32);
        let mut tmp = [0u8; 4];
        for ch in s.chars() {
            let c = ch as u32;
            if c < 0x80 {
                let one = [c as u8];
                put_esc(&mut self.data, std::str::from_utf8(&one).unwrap_or_default());
            } else {
                self.data.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
            }
            self.mark();
        }
    }

    /// Appends a line: `s` and a newline.
    pub(super) fn line(&mut self, s: &str) {
        self.piece(s);
        self.data.extend_from_slice(b"\\n");
        self.mark();
    }

    pub(super) fn len(&self) -> usize {
        self.data.len()
    }

    /// Records the pieces added since `first` (an index into `starts`) as
    /// one segment of `class`.
    pub(super) fn segment(&mut self, first: usize, class: Class) {
        let n = self.starts.len() - first;
        if n > 0 {
            self.segs[class as usize].push((first as u32, n as u32));
        }
    }

    pub(super) fn finish(self) -> TextPool {
        TextPool {
            data: self.data,
            starts: self.starts,
            safe: self.safe,
            segs: self.segs,
        }
    }
}
