//! The writer's file operations, each all-or-nothing: a whole new file ([`write_atomic`],
//! [`create_exclusive`]) goes through a temporary file beside it ([`temp_beside`]), and one
//! appended line goes through the journal under the append lock ([`append_line`]).

use crate::error::{Error, Result};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// An I/O error, with the path it concerns.
pub(super) fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).with_path(path)
}

/// A temporary file that holds the bytes of a file about to appear at its target.
struct Temp {
    /// The target's folder (synced once the target is in place).
    dir: PathBuf,
    /// `<dir>/.pi-session-tmp-<pid>-<uuid>-<file name>`.
    path: PathBuf,
}

/// Write `bytes` to a new temporary file beside `path` (same folder, so that a rename or
/// link onto `path` stays within one file system), with `permissions` when given, and
/// fsync it. On failure the temporary file is removed.
fn temp_beside(path: &Path, bytes: &[u8], permissions: Option<std::fs::Permissions>) -> std::io::Result<Temp> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".pi-session-tmp-{}-{}-{name}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if let Some(p) = permissions {
            f.set_permissions(p)?;
        }
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(Temp {
            dir: dir.to_path_buf(),
            path: tmp,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Sync a folder so that a new name in it survives a crash (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// A crash at any point leaves either the old file or the new one (and perhaps a stray
/// `.pi-session-tmp-*` file). The new file keeps the old one's permissions.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    let tmp = temp_beside(path, bytes, permissions).map_err(io_at(path))?;
    let result = std::fs::rename(&tmp.path, path);
    match result {
        Ok(()) => sync_dir(&tmp.dir),
        Err(_) => {
            let _ = std::fs::remove_file(&tmp.path);
        }
    }
    result.map_err(io_at(path))
}

/// Append one line with one `O_APPEND` write under the append lock, journaled when it
/// could tear, so that a crash leaves the old file or the new one once recovered (see
/// [`crate::write::journal`]); on failure, our partial line is cut back.
pub(super) fn append_line(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::write::journal::append(path, bytes, false)
        .map(drop)
        .map_err(io_at(path))
}

/// pi's newline after an unterminated last line, unless the file has one by now (another
/// pi-session was finishing an append when the file was read).
pub(super) fn terminate_last_line(path: &Path) -> Result<()> {
    crate::write::journal::append(path, b"\n", true)
        .map(drop)
        .map_err(io_at(path))
}

/// Create `path` exclusively (pi's `wx`) with `bytes`, atomically: the bytes go to a
/// temporary file first (fsync), which is then hard-linked to `path` (failing, like `wx`,
/// when `path` exists) and removed. A crash leaves no half-written session file.
pub(super) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_at(path))?;
    if path.exists() {
        return Err(Error::from(std::io::Error::from(std::io::ErrorKind::AlreadyExists)).with_path(path));
    }
    let tmp = temp_beside(path, bytes, None).map_err(io_at(path))?;
    let result = std::fs::hard_link(&tmp.path, path);
    if result.is_ok() {
        sync_dir(&tmp.dir);
    }
    let _ = std::fs::remove_file(&tmp.path);
    result.map_err(io_at(path))
}
