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

/// Where something sits in a session file: the byte its line starts at, the line, and the
/// entry (a kept line's place among kept lines), each when known. Errors
/// ([`crate::Error::position`]), skipped lines and entry records all say where they are
/// with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Position {
    /// Offset of the line's first byte.
    pub byte: Option<ByteOffset>,
    /// 1-based line number.
    pub line: Option<LineNo>,
    /// The kept line's position (the header is 0).
    pub entry: Option<EntryPos>,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(l) = self.line {
            write!(f, "line {l}")?;
            sep = ", ";
        }
        if let Some(b) = self.byte {
            write!(f, "{sep}byte {}", b.0)?;
            sep = ", ";
        }
        if let Some(e) = self.entry {
            write!(f, "{sep}entry {}", e.0)?;
        }
        Ok(())
    }
}
