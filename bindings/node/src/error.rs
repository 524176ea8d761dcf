//! Errors as JavaScript sees them: pi's text where pi has one, a failed file operation as
//! Node words it.

/// An error with pi's text where pi has one (`Entry X not found`, `TypeError: ...`); a
/// failed file operation as Node words it (`EEXIST: file already exists, open '<file>'`),
/// which `index.js` makes an error with Node's `code`, `errno`, `syscall` and `path`.
pub(crate) fn js_error(e: pi_session::Error) -> napi::Error {
    if let pi_session::ErrorKind::Io {
        path: Some(path),
        source,
    } = e.kind()
        && let Some((code, text, syscall)) = source
            .raw_os_error()
            .or_else(|| match source.kind() {
                // (Errors the library makes itself, without an OS number.)
                std::io::ErrorKind::AlreadyExists => Some(libc_errno::EEXIST),
                std::io::ErrorKind::NotFound => Some(libc_errno::ENOENT),
                std::io::ErrorKind::PermissionDenied => Some(libc_errno::EACCES),
                _ => None,
            })
            .and_then(node_errno)
    {
        return napi::Error::from_reason(format!("{code}: {text}, {syscall} '{}'", path.display()));
    }
    // pi names the file in this one (`Session file is not a valid pi session: ${path}`,
    // the path as given, resolved); the library's pi text has a placeholder there, which
    // its oracle comparisons print for a temporary copy's path.
    if let pi_session::ErrorKind::NotASession { path: Some(path), .. } = e.kind() {
        return napi::Error::from_reason(format!(
            "Error: Session file is not a valid pi session: {}",
            path.to_string_lossy()
        ));
    }
    napi::Error::from_reason(e.pi_text())
}

/// libuv's name and text for the errors a session file's reads and writes meet, and the
/// call Node names for them (most fail at `open`; a full disk at `write`).
fn node_errno(errno: i32) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match errno {
        libc_errno::EPERM => ("EPERM", "operation not permitted", "open"),
        libc_errno::ENOENT => ("ENOENT", "no such file or directory", "open"),
        libc_errno::EACCES => ("EACCES", "permission denied", "open"),
        libc_errno::EEXIST => ("EEXIST", "file already exists", "open"),
        libc_errno::ENOTDIR => ("ENOTDIR", "not a directory", "open"),
        libc_errno::EISDIR => ("EISDIR", "illegal operation on a directory", "open"),
        libc_errno::EMFILE => ("EMFILE", "too many open files", "open"),
        libc_errno::EROFS => ("EROFS", "read-only file system", "open"),
        libc_errno::ENOSPC => ("ENOSPC", "no space left on device", "write"),
        _ => return None,
    })
}

/// The Linux / POSIX numbers of those errors (the same on the platforms napi builds for,
/// but for Windows, whose errors keep the library's text).
mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EACCES: i32 = 13;
    pub const EEXIST: i32 = 17;
    pub const ENOTDIR: i32 = 20;
    pub const EISDIR: i32 = 21;
    pub const EMFILE: i32 = 24;
    pub const EROFS: i32 = 30;
    pub const ENOSPC: i32 = 28;
}
