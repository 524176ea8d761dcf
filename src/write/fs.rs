//! The writer's file operations, each all-or-nothing: a whole new file ([`write_atomic`],
//! [`create_exclusive`]) goes through a temporary file beside it ([`temp_beside`]), and one
//! appended line goes through the journal under the append lock ([`append_line`]).
//!
//! # Temporary files
//!
//! A temporary file is named `.pi-session-tmp-<pid>-<random>-<file name>.tmp`: it never
//! ends in `.jsonl`, so when a rewrite is killed (`kill -9`, the OOM killer, a power loss)
//! the leftover is matched neither by pi's listing (every name that `endsWith(".jsonl")`,
//! dot files included, which is what `pi --continue` picks from by mtime) nor by
//! pi-session's. It is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600 until it is
//! complete, so nothing planted at its name is followed or reused. Leftovers are removed
//! by the next rewrite or new file in that folder ([`sweep_stale_temps`]): those whose
//! process is gone (a pid this host's pid namespace does not know) and those untouched
//! for a minute (a temp being written is touched by every write; a rename follows its
//! fsync at once). A pid from another host or container sharing the folder may look gone:
//! its rewrite then fails at the rename and leaves the old file, never a damaged one.
//! Builds before this one named temps `.pi-session-tmp-<pid>-<uuid>-<name>.jsonl`; the
//! sweep removes those too, and `ls`/`find` skip them (pi itself would still list them).
//!
//! # Rewrites keep the file what it was
//!
//! [`write_atomic`] writes through a symlink: the path is resolved (`canonicalize`), the
//! temporary file is made beside the target and renamed over the target, so the link
//! stays a link and the file it names is the one rewritten. The new file gets the old
//! one's owner, group and mode (`fchown`, then `fchmod`, on the temporary file before the
//! rename); when the owner cannot be kept (a user who owns the file but cannot give the
//! new one its group, say), the rewrite fails with a message saying so and the old file
//! stays as it was: a rewrite never changes who owns a session.

use crate::error::{Error, Result};
use crate::write::journal::{JournalUse, WriteOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An I/O error, with the path it concerns.
pub(super) fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).with_path(path)
}

/// The start of every temporary file's name (shared with the listing, which skips them).
pub(crate) use crate::listing::dirs::TEMP_PREFIX;

/// How long an untouched temporary file may stay before the next writer removes it.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// A temporary file that holds the bytes of a file about to appear at its target.
struct Temp {
    /// The target's folder (synced once the target is in place).
    dir: PathBuf,
    /// `<dir>/.pi-session-tmp-<pid>-<random>-<file name>.tmp`.
    path: PathBuf,
}

/// The owner, group and mode a rewrite gives its new file (those of the old one).
#[derive(Clone, Copy, Debug)]
struct Keep {
    #[cfg(unix)]
    uid: u32,
    #[cfg(unix)]
    gid: u32,
    #[cfg(unix)]
    mode: u32,
    #[cfg(not(unix))]
    readonly: bool,
}

impl Keep {
    fn of(m: &std::fs::Metadata) -> Keep {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            Keep {
                uid: m.uid(),
                gid: m.gid(),
                mode: m.mode() & 0o7777,
            }
        }
        #[cfg(not(unix))]
        Keep {
            readonly: m.permissions().readonly(),
        }
    }

    /// Give `f` (the new file) this owner, group and mode: owner first (a `chown` clears
    /// set-id bits), then the mode.
    fn apply(&self, f: &std::fs::File) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            use rustix::fs::{Gid, Mode, Uid, fchmod, fchown};
            use std::os::unix::fs::MetadataExt as _;
            let now = f.metadata()?;
            if (now.uid(), now.gid()) != (self.uid, self.gid) {
                fchown(f, Some(Uid::from_raw(self.uid)), Some(Gid::from_raw(self.gid))).map_err(|e| {
                    std::io::Error::new(
                        std::io::Error::from(e).kind(),
                        format!(
                            "cannot give the rewritten file the old one's owner (uid {}, gid {}): {}; the file was left as it was",
                            self.uid,
                            self.gid,
                            std::io::Error::from(e)
                        ),
                    )
                })?;
            }
            fchmod(f, Mode::from_raw_mode(self.mode))?;
        }
        #[cfg(not(unix))]
        {
            let mut p = f.metadata()?.permissions();
            p.set_readonly(self.readonly);
            f.set_permissions(p)?;
        }
        Ok(())
    }
}

/// The folder of `path` (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A temporary name beside `path` that no `*.jsonl` glob matches.
fn temp_name(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(std::str::from_utf8(TEMP_PREFIX).unwrap_or(".pi-session-tmp-"));
    name.push(format!("{}-{}-", std::process::id(), uuid::Uuid::new_v4().simple()));
    name.push(path.file_name().unwrap_or_default());
    name.push(".tmp");
    folder_of(path).join(name)
}

/// Remove the temporary files a killed writer left in `dir` (see the module docs). Best
/// effort: a folder that cannot be read or a name that cannot be removed is passed over.
pub(crate) fn sweep_stale_temps(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(rest) = name.as_encoded_bytes().strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let pid: Option<u32> = rest
            .iter()
            .position(|&b| b == b'-')
            .and_then(|i| std::str::from_utf8(&rest[..i]).ok())
            .and_then(|p| p.parse().ok());
        // lstat: never follow what is there, and only ever remove plain files.
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !m.is_file() {
            continue;
        }
        let old = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a > STALE_AFTER);
        let gone = pid.is_some_and(|p| p != me && !process_alive(p));
        if old || gone {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether a process with this pid exists (in this pid namespace).
#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    !matches!(rustix::process::test_kill_process(p), Err(rustix::io::Errno::SRCH))
}

#[cfg(not(unix))]
fn process_alive(_: u32) -> bool {
    true
}

/// Write `bytes` to a new temporary file beside `path` (same folder, so that a rename or
/// link onto `path` stays within one file system), with the owner, group and mode of
/// `keep` when given, and fsync it. On failure the temporary file is removed. Stale
/// temporary files of the folder are swept first.
fn temp_beside(path: &Path, bytes: &[u8], keep: Option<Keep>) -> std::io::Result<Temp> {
    let dir = folder_of(path);
    sweep_stale_temps(dir);
    let tmp = temp_name(path);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Private until complete; a new session (no `keep`) gets pi's default mode.
        o.mode(if keep.is_some() { 0o600 } else { 0o666 })
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let mut f = o.open(&tmp)?;
    let result = (|| -> std::io::Result<()> {
        f.write_all(bytes)?;
        if let Some(k) = keep {
            k.apply(&f)?;
        }
        f.sync_all()
    })();
    drop(f);
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

/// The file a rewrite of `path` replaces: `path` itself, or the file its symlink names.
fn rewrite_target(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(io_at(path)),
        _ => Ok(path.to_path_buf()),
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// A crash at any point leaves either the old file or the new one (and perhaps a
/// temporary file that the next writer removes). A symlink is written through; the new
/// file keeps the old one's owner, group and mode (module docs).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = rewrite_target(path)?;
    let keep = std::fs::metadata(&target).ok().map(|m| Keep::of(&m));
    let tmp = temp_beside(&target, bytes, keep).map_err(io_at(path))?;
    let result = std::fs::rename(&tmp.path, &target);
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
pub(super) fn append_line(path: &Path, bytes: &[u8], opts: &WriteOptions) -> Result<JournalUse> {
    crate::write::journal::append(path, bytes, false, opts).map(|(_, j)| j)
}

/// Create `path` exclusively (pi's `wx`) with `bytes`, atomically: the bytes go to a
/// temporary file first (fsync), which is then hard-linked to `path` (failing, like `wx`,
/// when `path` exists, even as a dangling symlink) and removed. A crash leaves no
/// half-written session file.
pub(super) fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = folder_of(path);
    std::fs::create_dir_all(dir).map_err(io_at(path))?;
    if std::fs::symlink_metadata(path).is_ok() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_never_end_in_jsonl() {
        let t = temp_name(Path::new("/a/b/s.jsonl"));
        let name = t.file_name().expect("name").to_string_lossy().into_owned();
        assert!(name.starts_with(".pi-session-tmp-"), "{name}");
        assert!(name.ends_with("-s.jsonl.tmp"), "{name}");
        assert!(!name.ends_with(".jsonl"));
        assert_eq!(t.parent(), Some(Path::new("/a/b")));
        assert_eq!(temp_name(Path::new("s.jsonl")).parent(), Some(Path::new(".")));
    }

    #[cfg(unix)]
    #[test]
    fn the_sweep_removes_dead_writers_temps_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        // pid 0x7fff_fff0 exists nowhere (pid_max is at most 2^22).
        let dead_new = d.join(".pi-session-tmp-2147483632-abc-s.jsonl.tmp");
        let dead_old = d.join(".pi-session-tmp-2147483632-abc-s.jsonl");
        let mine = d.join(format!(".pi-session-tmp-{}-abc-s.jsonl.tmp", std::process::id()));
        let alive = d.join(".pi-session-tmp-1-abc-s.jsonl.tmp"); // init
        let session = d.join("s.jsonl");
        for p in [&dead_new, &dead_old, &mine, &alive, &session] {
            std::fs::write(p, b"x").expect("write");
        }
        let link = d.join(".pi-session-tmp-2147483632-link.tmp");
        std::os::unix::fs::symlink(&session, &link).expect("symlink");
        sweep_stale_temps(d);
        assert!(!dead_new.exists() && !dead_old.exists());
        assert!(mine.exists() && alive.exists() && session.exists());
        assert!(std::fs::symlink_metadata(&link).is_ok(), "only plain files are removed");
        // Untouched for over a minute: removed whatever the pid.
        let f = std::fs::File::options().write(true).open(&alive).expect("open");
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
            .expect("mtime");
        sweep_stale_temps(d);
        assert!(!alive.exists() && mine.exists());
    }

    #[cfg(unix)]
    #[test]
    fn rewrites_keep_the_mode_and_write_through_symlinks() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("dir");
        let target = real.join("t.jsonl");
        std::fs::write(&target, b"old\n").expect("write");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("t.jsonl");
        std::os::unix::fs::symlink("real/t.jsonl", &link).expect("symlink");
        write_atomic(&link, b"new\n").expect("write");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).expect("read"), b"new\n");
        assert_eq!(
            std::fs::metadata(&target).expect("stat").permissions().mode() & 0o7777,
            0o640
        );
        let left: Vec<_> = std::fs::read_dir(&real)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["t.jsonl"], "no temporary file stays");
    }
}
