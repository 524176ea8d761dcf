//! How pi-session puts bytes into files: the one place every writer goes through.
//!
//! # The rule
//! After links are resolved, **a target that exists and is not a regular file is never
//! replaced, renamed over, truncated or unlinked.** A FIFO, a character or block device, a
//! socket or a folder at a name pi-session would write is left exactly as it was:
//! - a file pi-session owns (a session, its append journal, a cache, a Parquet table, a
//!   manifest) is refused before anything is written, with the error readers give for
//!   such a file ([`crate::source`]: `PATH: not a regular file (a FIFO)`);
//! - an output the user names ([`OutputFile`], `export -o`) is written to as `cat >
//!   TARGET` writes: a FIFO or a character device is streamed into, so `-o /dev/null`,
//!   `-o /dev/stdout` and `-o >(gzip > x.gz)` work; a regular file (or no file yet) gets
//!   the all-or-nothing temporary file and rename; a folder, a socket and a block device
//!   are refused.
//!
//! # How a whole file is written ([`Pending`])
//! The path's symlinks are followed to the name they end at ([`resolve`]; a dangling link
//! names the file it would create, as the shell's `>` creates it), so a link stays a link
//! and the file it names is the one written. The folder of that name is opened once and
//! every later step is made relative to that descriptor (`statat`, `openat`, `renameat`,
//! `unlinkat`), so a folder renamed or replaced on the way cannot send a step elsewhere.
//! The name is checked with `lstat` (`AT_SYMLINK_NOFOLLOW`) when the write starts and again
//! just before the rename; the bytes go to a temporary file created with `O_CREAT |
//! O_EXCL | O_NOFOLLOW` (nothing planted at its name is followed or reused), which is
//! then renamed over the name. A temporary file that replaces a file is private (0600)
//! until complete and then gets the old file's mode; one that makes a new file is created
//! 0666, so that the kernel applies the umask and the folder's default ACL as for any file
//! the user makes.
//!
//! Links are followed by hand (a dangling one too), under the kernel's own
//! `protected_symlinks` rule: in a sticky folder anyone may write (`/tmp`), a link another
//! user made is not followed. A descriptor's link (`/proc/self/fd/N`, `/dev/fd/N`) is left
//! to the kernel's resolution.
//!
//! One window remains: between the last check and `renameat`, a process that can write
//! the folder could put a FIFO or a device node at the name, and the rename would then
//! replace that new name. It is harmless: only a name the racing process itself made a
//! moment before is replaced, in a folder it can already change at will (it could unlink
//! or rename that name itself); a device or FIFO that was there when the write started
//! is never touched, and the node's object (the device, the other end of the FIFO) is
//! never opened or written. Linux offers no rename that fails unless its target is a
//! regular file; `RENAME_EXCHANGE` would only move the window.
//!
//! # Temporary files
//! A temporary file is named `.pi-session-tmp-<pid>-<random>-<file name>.tmp`: it never
//! ends in `.jsonl`, so when a write is killed the leftover is matched neither by pi's
//! listing (every name that ends in `.jsonl`) nor by pi-session's. Leftovers are removed
//! by the next write in that folder ([`sweep_stale_temps`]): those whose process is gone
//! (a pid this pid namespace does not know) and those untouched for a minute (a
//! temporary file being written is touched by every write; its rename follows at once).
//! Only regular files are ever removed.

use crate::source::regular;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod output;

pub use output::OutputFile;

/// The start of every temporary file's name (the listing skips such names).
const TEMP_PREFIX_STR: &str = ".pi-session-tmp-";
pub(crate) const TEMP_PREFIX: &[u8] = TEMP_PREFIX_STR.as_bytes();

/// How long an untouched temporary file may stay before the next writer removes it.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// How many symlinks [`resolve`] follows before it says there is a loop (Linux's limit).
const MAX_LINKS: usize = 40;

/// The folder of `path` (`.` for a bare name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The name `path` ends at once its symlinks are followed: `path` itself when it is no
/// link (or does not exist), else what the link names, followed again. A dangling link
/// gives the name it points to (where a write through it creates the file).
///
/// # Errors
/// `ELOOP` past 40 links; errors reading a link.
pub(crate) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        // `x/` names a folder, never a file to write (the shell says so too).
        return Err(std::io::Error::from_raw_os_error(
            rustix::io::Errno::ISDIR.raw_os_error(),
        ));
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                if p.starts_with("/proc") || p.starts_with("/dev/fd") {
                    // A descriptor's link names no path to follow by hand (`pipe:[..]`,
                    // `x (deleted)`): the kernel's own resolution, which fails for those.
                    return std::fs::canonicalize(&p);
                }
                // The kernel's `protected_symlinks` rule, which following by hand would
                // bypass: in a sticky folder anyone may write (/tmp), a link is followed
                // only when it is the follower's or the folder owner's.
                let dir = folder_of(&p);
                if let Ok(d) = std::fs::metadata(dir)
                    && d.mode() & 0o1002 == 0o1002
                    && m.uid() != rustix::process::geteuid().as_raw()
                    && m.uid() != d.uid()
                {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "a symlink another user made in a sticky, world-writable folder; not followed (the kernel's protected_symlinks rule)",
                    ));
                }
                let to = std::fs::read_link(&p)?;
                p = if to.is_absolute() { to } else { dir.join(to) };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::from_raw_os_error(
        rustix::io::Errno::LOOP.raw_os_error(),
    ))
}

/// A name in a folder, held by the folder's descriptor: the place a file is written.
pub(crate) struct Place {
    dir: OwnedFd,
    dir_path: PathBuf,
    name: OsString,
}

/// What a [`Place`] holds now.
pub(crate) enum Found {
    Nothing,
    /// A regular file, with its `lstat`.
    Regular(Box<Stat>),
}

impl Place {
    /// The place `path` names once its links are followed ([`resolve`]).
    ///
    /// # Errors
    /// The links cannot be followed, the folder cannot be opened (missing, not a folder,
    /// not searchable), or `path` names no file (it ends in `/`, `.` or `..`).
    pub(crate) fn of(path: &Path) -> std::io::Result<Place> {
        let target = resolve(path)?;
        let Some(name) = target.file_name().filter(|_| !target.ends_with("..")) else {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"));
        };
        let dir_path = folder_of(&target).to_path_buf();
        let dir = rustix::fs::open(&dir_path, dir_flags(), Mode::empty()).map_err(std::io::Error::from)?;
        Ok(Place {
            dir,
            dir_path,
            name: name.to_os_string(),
        })
    }

    /// The path of the file written (links followed).
    pub(crate) fn path(&self) -> PathBuf {
        self.dir_path.join(&self.name)
    }

    /// What is at the name now, without following a link. Anything but nothing or a
    /// regular file is refused with the readers' error (`not a regular file (a FIFO)`; a
    /// link that appeared since the name was resolved is refused too).
    pub(crate) fn found(&self) -> std::io::Result<Found> {
        match rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let t = FileType::from_raw_mode(st.st_mode);
                if t == FileType::RegularFile {
                    Ok(Found::Regular(Box::new(st)))
                } else if t == FileType::Symlink {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a regular file (a symlink, which was not followed); nothing written",
                    ))
                } else if t == FileType::Directory {
                    Err(std::io::Error::from_raw_os_error(
                        rustix::io::Errno::ISDIR.raw_os_error(),
                    ))
                } else {
                    // The readers' words for what it is, from this very `lstat`.
                    let what = crate::source::kind_of(t);
                    Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("not a regular file ({what})"),
                    ))
                }
            }
            Err(rustix::io::Errno::NOENT) => Ok(Found::Nothing),
            Err(e) => Err(e.into()),
        }
    }

    /// Refuse unless the name holds nothing or a regular file.
    pub(crate) fn check(&self) -> std::io::Result<()> {
        self.found().map(drop)
    }

    /// Create a new temporary file in the folder (`O_EXCL | O_NOFOLLOW`, `mode`).
    fn temp(&self, mode: u32) -> std::io::Result<(OsString, File)> {
        loop {
            let mut name = OsString::from(TEMP_PREFIX_STR);
            let random = uuid::Uuid::new_v4().simple().to_string();
            name.push(format!("{}-{}-", std::process::id(), &random[..12]));
            // (The target's name, cut so that the whole fits a file name's 255 bytes: the
            // temporary name only needs to be unique and recognisable.)
            let room = 255usize.saturating_sub(name.len() + ".tmp".len());
            let own = self.name.as_encoded_bytes();
            name.push(std::os::unix::ffi::OsStrExt::from_bytes(&own[..own.len().min(room)]) as &OsStr);
            name.push(".tmp");
            match self.create_new(&name, mode) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                r => return r.map(|f| (name, f)),
            }
        }
    }

    /// Create `name` in the folder, failing when anything is there (even a dangling link).
    fn create_new(&self, name: &OsStr, mode: u32) -> std::io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(mode))
            .map(File::from)
            .map_err(std::io::Error::from)
    }

    /// Remove `name` from the folder (best effort).
    fn unlink(&self, name: &OsStr) {
        let _ = rustix::fs::unlinkat(&self.dir, name, AtFlags::empty());
    }

    /// Rename the temporary `from` over the name, after checking once more that the name
    /// holds nothing or a regular file.
    fn rename_over(&self, from: &OsStr) -> std::io::Result<()> {
        self.check()?;
        rustix::fs::renameat(&self.dir, from, &self.dir, &self.name).map_err(std::io::Error::from)
    }

    /// Sync the folder, so that a name made in it survives a crash (best effort).
    fn sync(&self) {
        if let Ok(d) = rustix::fs::openat(
            &self.dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = rustix::fs::fsync(&d);
        }
    }
}

/// How the folder is opened: only to name files relative to it (Linux's `O_PATH` needs no
/// read permission on the folder, as a path-based write needs none).
fn dir_flags() -> OFlags {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
}

/// The owner, group and mode a whole-file write gives its new file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// An existing file's owner, group and mode are kept, or the write fails (a session:
    /// a rewrite never changes who owns it); a new file is created `0666` (less the umask and the folder's default ACL).
    OwnerAndMode,
    /// An existing file's mode is kept (not its owner: the writer's file now); a new file
    /// is created `0666` (a user's output).
    Mode,
    /// Always this mode, whatever was there (a private cache: `0o600`).
    Fixed(u32),
}

/// How a whole file is written ([`Pending`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Whole {
    pub(crate) keep: Keep,
    /// fsync the file before the rename and the folder after it (sessions, outputs); a
    /// cache that a crash may lose goes without.
    pub(crate) durable: bool,
}

impl Whole {
    /// A session file (a rewrite or a new session).
    pub(crate) const SESSION: Whole = Whole {
        keep: Keep::OwnerAndMode,
        durable: true,
    };
    /// A file the user asked for (`export -o`).
    pub(crate) const OUTPUT: Whole = Whole {
        keep: Keep::Mode,
        durable: true,
    };
    /// A private cache file.
    pub(crate) const CACHE: Whole = Whole {
        keep: Keep::Fixed(0o600),
        durable: false,
    };
}

/// A whole file being written: a temporary file beside its target, renamed over it by
/// [`Pending::commit`]; dropped uncommitted, the temporary file goes and the target is as
/// it was.
pub(crate) struct Pending {
    place: Place,
    how: Whole,
    /// The mode (and, with [`Keep::OwnerAndMode`], owner) to give the file; no mode: the
    /// one it was created with (0666 less the umask and default ACL).
    owner: Option<(u32, u32)>,
    mode: Option<u32>,
    temp: OsString,
    file: Option<File>,
}

impl Pending {
    /// Start writing the file at `path` (links followed): refused, with nothing written,
    /// when the name holds anything but a regular file. Stale temporary files of the
    /// folder are swept first.
    ///
    /// # Errors
    /// As [`Place::of`] and [`Place::found`]; the temporary file cannot be created.
    pub(crate) fn new(path: &Path, how: Whole) -> std::io::Result<Pending> {
        Pending::at(Place::of(path)?, how)
    }

    fn at(place: Place, how: Whole) -> std::io::Result<Pending> {
        let old = match place.found()? {
            Found::Regular(st) => Some(st),
            Found::Nothing => None,
        };
        // A new file is created with 0666 and left so: the kernel applies the umask and
        // the folder's default ACL, as for any file the user makes (it is as readable
        // while written as it will be). A file that replaces another is private (0600)
        // until complete, then gets the old one's mode.
        let (owner, mode) = match (how.keep, &old) {
            (Keep::Fixed(m), _) => (None, Some(m)),
            (Keep::OwnerAndMode, Some(st)) => (Some((st.st_uid, st.st_gid)), Some(st.st_mode & 0o7777)),
            (Keep::Mode, Some(st)) => (None, Some(st.st_mode & 0o7777)),
            (_, None) => (None, None),
        };
        sweep_stale_temps(&place.dir_path);
        let (temp, file) = place.temp(if mode.is_some() { 0o600 } else { 0o666 })?;
        Ok(Pending {
            place,
            how,
            owner,
            mode,
            temp,
            file: Some(file),
        })
    }

    /// The path of the file that the commit writes (links followed).
    pub(crate) fn target(&self) -> PathBuf {
        self.place.path()
    }

    /// The temporary file, to write the bytes to.
    pub(crate) fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("a pending file is open until commit or drop")
    }

    /// Give the file its owner and mode, sync it (when durable) and rename it over the
    /// target, which must still hold nothing or a regular file.
    ///
    /// # Errors
    /// The owner cannot be kept (the target is left as it was, and the message says so),
    /// a sync or the rename fails, or the target became something else than a regular
    /// file.
    pub(crate) fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("a pending file is open until commit or drop");
        self.finish(&file)?;
        drop(file);
        self.place.rename_over(&self.temp)?;
        self.temp.clear();
        if self.how.durable {
            self.place.sync();
        }
        Ok(())
    }

    fn finish(&self, f: &File) -> std::io::Result<()> {
        use rustix::fs::{Gid, Uid, fchmod, fchown};
        if let Some((uid, gid)) = self.owner {
            let now = rustix::fs::fstat(f)?;
            if (now.st_uid, now.st_gid) != (uid, gid) {
                fchown(f, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid))).map_err(|e| {
                    let e = std::io::Error::from(e);
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "cannot give the rewritten file the old one's owner (uid {uid}, gid {gid}): {e}; the file was left as it was"
                        ),
                    )
                })?;
            }
        }
        // (After the chown, which clears set-id bits.)
        if let Some(mode) = self.mode {
            fchmod(f, Mode::from_raw_mode(mode))?;
        }
        if self.how.durable {
            f.sync_all()?;
        }
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.temp.is_empty() {
            self.file = None;
            self.place.unlink(&self.temp);
        }
    }
}

/// Write `pieces` as the whole file at `path` ([`Pending`]).
///
/// # Errors
/// As [`Pending::new`], writing, and [`Pending::commit`].
pub(crate) fn write_whole(path: &Path, how: Whole, pieces: &[&[u8]]) -> std::io::Result<()> {
    let mut p = Pending::new(path, how)?;
    for piece in pieces {
        p.file().write_all(piece)?;
    }
    p.commit()
}

/// Create the file at `path` with `bytes`, all or nothing, failing when the name holds
/// anything (even a dangling link; pi's `wx`): the bytes go to a temporary file first
/// (fsync), which is then hard-linked to the name and removed. The file gets `0666` less
/// the umask. `path` itself is not followed: it is the name created.
///
/// # Errors
/// `AlreadyExists`; the folder cannot be written.
pub(crate) fn create_exclusive(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"));
    };
    let dir_path = folder_of(path).to_path_buf();
    std::fs::create_dir_all(&dir_path)?;
    let dir = rustix::fs::open(&dir_path, dir_flags(), Mode::empty()).map_err(std::io::Error::from)?;
    let place = Place {
        dir,
        dir_path,
        name: name.to_os_string(),
    };
    if !matches!(
        rustix::fs::statat(&place.dir, &place.name, AtFlags::SYMLINK_NOFOLLOW),
        Err(rustix::io::Errno::NOENT)
    ) {
        return Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists));
    }
    let mut p = Pending::at(place, Whole::SESSION)?;
    p.file().write_all(bytes)?;
    let file = p.file.take().expect("open");
    p.finish(&file)?;
    drop(file);
    let linked = rustix::fs::linkat(&p.place.dir, &p.temp, &p.place.dir, &p.place.name, AtFlags::empty());
    if linked.is_ok() {
        p.place.sync();
    }
    // (Dropping `p` removes the temporary name; the file stays under its own.)
    linked.map_err(std::io::Error::from)
}

/// Create a new file at `path` (not followed: `O_CREAT | O_EXCL | O_NOFOLLOW`) with mode
/// `mode` less the umask, for a writer that manages its own temporary names (the Parquet
/// export's, listed in its manifest).
///
/// # Errors
/// `AlreadyExists` when anything is at the name; the folder cannot be written.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) fn create_new(path: &Path, mode: u32) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(mode).custom_flags(OFlags::NOFOLLOW.bits() as i32);
    }
    o.open(path)
}

/// Rename `from` over `to` (both names in their folders, not followed) when `to` holds
/// nothing or a regular file; refused otherwise, nothing renamed.
///
/// # Errors
/// The readers' error for what `to` holds; the rename's error.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) fn rename_over(from: &Path, to: &Path) -> std::io::Result<()> {
    let Some(name) = from.file_name() else {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"));
    };
    let (Some(to_name), true) = (to.file_name(), folder_of(from) == folder_of(to)) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a rename stays within one folder",
        ));
    };
    let dir_path = folder_of(to).to_path_buf();
    let dir = rustix::fs::open(&dir_path, dir_flags(), Mode::empty()).map_err(std::io::Error::from)?;
    let place = Place {
        dir,
        dir_path,
        name: to_name.to_os_string(),
    };
    place.rename_over(name)
}

/// Remove the regular file at `path` (not followed); `Ok(false)` when there is nothing.
/// Anything else at the name is refused and left.
///
/// # Errors
/// The readers' error for what `path` holds; the unlink's error.
pub(crate) fn remove(path: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
        Ok(m) if m.is_file() => match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        },
        Ok(m) if m.file_type().is_symlink() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a symlink, which pi-session did not make; left alone",
        )),
        Ok(m) => regular(&m).map(|()| false),
    }
}

/// Open the existing file at `path` (links followed) to read and append, without blocking
/// on a FIFO or taking a terminal, and refuse it unless it is a regular file: the check is
/// made on the opened descriptor (`fstat`), so what is checked is what is written.
/// `read_only_ok`: open it read-only when writing is not permitted.
///
/// # Errors
/// The open's error; the readers' error for what is not a regular file.
pub(crate) fn open_append(path: &Path, read_only_ok: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // What is not a regular file is refused before it is opened at all (an open wakes a
    // FIFO's reader, and a device's open may act); the descriptor is checked again below.
    regular(&std::fs::metadata(path).map_err(|e| crate::source::explain_open_error(path, e))?)?;
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .append(write)
            .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
            .open(path)
    };
    let file = match open(true) {
        Err(e)
            if read_only_ok
                && matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
        {
            open(false)
        }
        r => r,
    }
    .map_err(|e| crate::source::explain_open_error(path, e))?;
    regular(&file.metadata()?)?;
    // A regular file ignores O_NONBLOCK; cleared all the same, so the descriptor is plain.
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok(file)
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
            let _ = remove(&e.path());
        }
    }
}

/// Whether a process with this pid exists (in this pid namespace).
fn process_alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    !matches!(rustix::process::test_kill_process(p), Err(rustix::io::Errno::SRCH))
}

/// Whether `fd` is a terminal.
pub(crate) fn is_terminal(fd: impl AsFd) -> bool {
    rustix::termios::isatty(fd)
}

#[cfg(test)]
mod tests;
