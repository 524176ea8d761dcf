//! Typed positions in a session file: line numbers, byte offsets, entry positions, and the
//! [`Position`] that errors, skipped lines and records share.

use std::fmt;

/// A 1-based line number in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineNo(pub u64);

/// A byte offset from the start of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteOffset(pub u64);

/// The position of a kept line among all kept lines (pi's `fileEntries` index: the header
/// is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryPos(pub u32);

impl fmt::Display for LineNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
