//! The writer's file operations, each all-or-nothing: a whole new file ([`write_atomic`],
//! [`create_exclusive`]) goes through a temporary file beside it (`crate::files`, which
//! also names and sweeps temporary files), and one appended line goes through the journal
//! under the append lock ([`append_line`]).
//!
//! # The rule of every write
//! A session name that holds anything but a regular file once its links are followed (a
//! FIFO, a device, a socket, a folder; a link to `/dev/zero`) is refused before a byte is
//! written, with the readers' error (`PATH: not a regular file (a character device)`), and
//! is left as it was: never renamed over, truncated or unlinked (`crate::files`).
//!
//! # Rewrites keep the file what it was
//!
//! [`write_atomic`] writes through a symlink: the link is followed to the file it names,
//! the temporary file is made beside that file and renamed over it, so the link stays a
//! link and the file it names is the one rewritten. The new file gets the old one's owner,
//! group and mode (`fchown`, then `fchmod`, on the temporary file before the rename); when
//! the owner cannot be kept (a user who owns the file but cannot give the new one its
//! group, say), the rewrite fails with a message saying so and the old file stays as it
//! was: a rewrite never changes who owns a session.

use crate::error::{Error, Result};
use crate::files::{Whole, write_whole};
use crate::write::journal::{JournalUse, WriteOptions};
use std::path::Path;

/// An I/O error, with the path it concerns.
pub(super) fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).with_path(path)
}

/// Write `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// A crash at any point leaves either the old file or the new one (and perhaps a
/// temporary file that the next writer removes). A symlink is written through; the new
/// file keeps the old one's owner, group and mode (module docs); what is not a regular
/// file is refused.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole(path, Whole::SESSION, &[bytes]).map_err(io_at(path))
}

/// Append one line with one `O_APPEND` write under the append lock, journaled when it
/// could tear, so that a crash leaves the old file or the new one once recovered (see
/// [`crate::write::journal`]); on failure, our partial line is cut back.
pub(super) fn append_line(path: &Path, bytes: &[u8], opts: &WriteOptions) -> Result<JournalUse> {
    crate::write::journal::append(path, bytes, false, opts).map(|(_, j)| j)
}

/// Create `path` exclusively (pi's `wx`) with `bytes`, atomically: the bytes go to a
/// temporary file first (fsync), which is then hard-linked to `path` (failing, like `wx`,
/// when `path` exists, even as a dangling symlink) and removed. A crash leaves no
/// half-written session file.
pub(super) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::create_exclusive(path, bytes).map_err(io_at(path))
}
