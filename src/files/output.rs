//! [`OutputFile`]: a file the user names for output (`export -o TARGET`), written as the
//! shell's `>` would write it, without ever replacing what is not a regular file.

use super::{Pending, Whole};
use rustix::fs::{FileType, OFlags};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An output file the user named, open for writing.
///
/// What `TARGET` is decides how it is written (links followed, as the shell's `>` follows
/// them; a link stays a link):
///
/// | `TARGET` | written |
/// | --- | --- |
/// | no file, or a regular file | all or nothing: a temporary file beside it, renamed over it by [`OutputFile::finish`] (an existing file's mode is kept); dropped unfinished, nothing changes |
/// | a FIFO or a character device (`/dev/null`, a terminal, a pipe) | streamed into, as `cat > TARGET` does; a FIFO with no reader waits for one, as `cat` does |
/// | `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N` | the process's own descriptor: 1 and 2 are written as they are (a file opened with `>>` is appended to); another `N` is opened as `cat > /dev/fd/N` opens it |
/// | a folder, a socket, a block device | refused, nothing written |
///
/// A dangling link creates the file it names, as `>` does.
#[derive(Debug)]
pub struct OutputFile {
    to: To,
}

#[derive(Debug)]
enum To {
    Stream { file: File, terminal: bool },
    Whole(Box<PendingDebug>),
}

/// [`Pending`], which has no `Debug` of its own.
struct PendingDebug(Pending);

impl std::fmt::Debug for PendingDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pending").field(&self.0.target()).finish()
    }
}

impl OutputFile {
    /// Open `path` for output (the table above).
    ///
    /// # Errors
    /// The path cannot be followed or opened; a folder (`IsADirectory`), a socket or a
    /// block device (`InvalidInput`, saying what it is); the temporary file cannot be
    /// created beside a regular file.
    pub fn create(path: &Path) -> std::io::Result<OutputFile> {
        if let Some(fd) = descriptor_of(path)? {
            // Our own standard output or error, as they are (their mode, their offset).
            use std::os::fd::AsFd as _;
            let owned = match fd {
                1 => std::io::stdout().as_fd().try_clone_to_owned(),
                _ => std::io::stderr().as_fd().try_clone_to_owned(),
            }?;
            return Ok(OutputFile::stream(File::from(owned)));
        }
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return OutputFile::whole(path),
            Err(e) => return Err(e),
        };
        let t = FileType::from_raw_mode(std::os::unix::fs::MetadataExt::mode(&meta));
        refuse(t)?;
        if t == FileType::RegularFile && !names_a_descriptor(path)? {
            return OutputFile::whole(path);
        }
        // A FIFO, a character device, or a descriptor of ours: opened as `cat >` opens it,
        // never created (it exists) and never truncated unless it is a regular file.
        let mut o = std::fs::OpenOptions::new();
        o.write(true);
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            o.custom_flags(OFlags::NOCTTY.bits() as i32);
        }
        let file = o.open(path).map_err(|e| crate::source::explain_open_error(path, e))?;
        // What was opened is what is checked: a name swapped since the `stat` above is
        // judged again on the descriptor.
        let t = FileType::from_raw_mode(rustix::fs::fstat(&file)?.st_mode);
        refuse(t)?;
        if t == FileType::RegularFile {
            if !names_a_descriptor(path)? {
                // It became a regular file in between: written all or nothing after all.
                drop(file);
                return OutputFile::whole(path);
            }
            // `/dev/fd/N` of a regular file: `>` truncates it.
            file.set_len(0)?;
        }
        Ok(OutputFile::stream(file))
    }

    fn stream(file: File) -> OutputFile {
        let terminal = super::is_terminal(&file);
        OutputFile {
            to: To::Stream { file, terminal },
        }
    }

    fn whole(path: &Path) -> std::io::Result<OutputFile> {
        Ok(OutputFile {
            to: To::Whole(Box::new(PendingDebug(Pending::new(path, Whole::OUTPUT)?))),
        })
    }

    /// Whether the output is written as it goes (a FIFO, a device, a descriptor), rather
    /// than all at once at [`OutputFile::finish`].
    pub fn is_streamed(&self) -> bool {
        matches!(self.to, To::Stream { .. })
    }

    /// Whether the output is a terminal (where a person reads it: escape what is shown).
    pub fn is_terminal(&self) -> bool {
        matches!(self.to, To::Stream { terminal: true, .. })
    }

    /// The file that [`OutputFile::finish`] puts in place (links followed); `None` when
    /// the output is streamed.
    pub fn target(&self) -> Option<PathBuf> {
        match &self.to {
            To::Whole(p) => Some(p.0.target()),
            To::Stream { .. } => None,
        }
    }

    /// Complete the output: a streamed one is flushed; a whole file is synced and renamed
    /// over its target (which must still be a regular file or nothing).
    ///
    /// # Errors
    /// The flush, sync or rename fails; the target became something other than a regular
    /// file (it is left as it is, and the temporary file goes).
    pub fn finish(self) -> std::io::Result<()> {
        match self.to {
            To::Stream { mut file, .. } => file.flush(),
            To::Whole(p) => p.0.commit(),
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.to {
            To::Stream { file, .. } => file.write(buf),
            To::Whole(p) => p.0.file().write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.to {
            To::Stream { file, .. } => file.write_all(buf),
            To::Whole(p) => p.0.file().write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.to {
            To::Stream { file, .. } => file.flush(),
            To::Whole(p) => p.0.file().flush(),
        }
    }
}

/// Refuse what an output can never be: a folder, a socket, a block device.
fn refuse(t: FileType) -> std::io::Result<()> {
    let why = match t {
        FileType::Directory => {
            return Err(std::io::Error::from_raw_os_error(
                rustix::io::Errno::ISDIR.raw_os_error(),
            ));
        }
        FileType::Socket => "not a regular file (a socket); nothing can be written to one by name",
        FileType::BlockDevice => {
            "not a regular file (a block device); pi-session writes no output onto a disk (the shell's `>` does, if that is meant)"
        }
        _ => return Ok(()),
    };
    Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
}

/// The descriptor `path` names when it is one of our standard output and error
/// (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/2`, ..., or a link to one).
fn descriptor_of(path: &Path) -> std::io::Result<Option<i32>> {
    Ok(descriptor_in_chain(path)?.filter(|fd| matches!(fd, 1 | 2)))
}

/// Whether `path` names one of our descriptors (see [`descriptor_in_chain`]).
fn names_a_descriptor(path: &Path) -> std::io::Result<bool> {
    Ok(descriptor_in_chain(path)?.is_some())
}

/// The descriptor of this process that `path` or a link on its way names: `/dev/stdout`
/// (1), `/dev/stderr` (2), `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`,
/// `/proc/<our pid>/fd/N`.
fn descriptor_in_chain(path: &Path) -> std::io::Result<Option<i32>> {
    let mut p = path.to_path_buf();
    for _ in 0..super::MAX_LINKS {
        if let Some(fd) = descriptor_named(&p) {
            return Ok(Some(fd));
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = if to.is_absolute() {
                    to
                } else {
                    super::folder_of(&p).join(to)
                };
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// The descriptor a path names by its spelling alone (see [`descriptor_in_chain`]).
pub(super) fn descriptor_named(p: &Path) -> Option<i32> {
    let s = p.to_str()?;
    match s {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let pid = std::process::id().to_string();
    let n = s
        .strip_prefix("/dev/fd/")
        .or_else(|| s.strip_prefix("/proc/self/fd/"))
        .or_else(|| s.strip_prefix("/proc/thread-self/fd/"))
        .or_else(|| {
            s.strip_prefix("/proc/")?
                .strip_prefix(pid.as_str())?
                .strip_prefix("/fd/")
        })?;
    n.parse().ok().filter(|n: &i32| *n >= 0)
}
