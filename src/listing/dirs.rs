//! Where sessions live: agent dir, sessions root, per-project folders, custom session dir.
//!
//! Everything here is a pure function of an explicit [`Env`] (home dir, process cwd and the
//! environment variables of the chosen [`Flavor`]); nothing reads globals except
//! [`Env::from_process`], which the command-line tool calls once.
//!
//! Rules (pi 1.6.0 `config.js`, `utils/paths.js`, `main.js`; PiG renames the variables):
//! - agent dir: `--agent-dir`, else `$PI_CODING_AGENT_DIR` (PiG: `$PIG_CODING_AGENT_DIR`)
//!   when non-empty, `~` expanded, else `~/.pi/agent` (PiG: `~/.pig/agent`);
//! - sessions root: `<agent dir>/sessions`; a project's folder is
//!   `<root>/--<resolved cwd, one leading / or \ removed, / \ : replaced by ->--`;
//! - custom session dir (one flat folder for every project): `--session-dir`, else
//!   `$PI_CODING_AGENT_SESSION_DIR` (PiG: `$PIG_CODING_AGENT_SESSION_DIR`) when non-empty,
//!   else a non-empty string `sessionDir` in `<agent dir>/settings.json`; `~` expanded.
//!
//! A path that starts with `file://` is a URL, made a path as node's `fileURLToPath` makes
//! it ([`file_url_to_path`]). Not covered: project-level `.pi/settings.json` overrides and
//! Windows drive paths (pi converts them; pi-session takes them literally).

use crate::files::TEMP_PREFIX;
pub use crate::flavor::Flavor;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Which program's conventions to follow.
impl Flavor {
    /// The environment variable naming the agent dir.
    pub fn agent_dir_var(self) -> &'static str {
        match self {
            Flavor::Pi => "PI_CODING_AGENT_DIR",
            Flavor::Pig => "PIG_CODING_AGENT_DIR",
        }
    }
    /// The environment variable naming a custom session dir.
    pub fn session_dir_var(self) -> &'static str {
        match self {
            Flavor::Pi => "PI_CODING_AGENT_SESSION_DIR",
            Flavor::Pig => "PIG_CODING_AGENT_SESSION_DIR",
        }
    }
    fn config_dir_name(self) -> &'static str {
        match self {
            Flavor::Pi => ".pi",
            Flavor::Pig => ".pig",
        }
    }
}

/// The inputs of directory resolution, made explicit.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Conventions to follow.
    pub flavor: Flavor,
    /// The home directory (`~`).
    pub home: PathBuf,
    /// The process's working directory (base of relative paths).
    pub cwd: PathBuf,
    /// Value of the agent-dir variable of `flavor`, if set.
    pub agent_dir_var: Option<OsString>,
    /// Value of the session-dir variable of `flavor`, if set.
    pub session_dir_var: Option<OsString>,
}

impl Env {
    /// Read home, cwd and the flavor's variables from this process.
    ///
    /// # Errors
    /// When the current directory cannot be read.
    pub fn from_process(flavor: Flavor) -> std::io::Result<Env> {
        let cwd = std::env::current_dir()?;
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        Ok(Env {
            flavor,
            home,
            cwd,
            agent_dir_var: std::env::var_os(flavor.agent_dir_var()),
            session_dir_var: std::env::var_os(flavor.session_dir_var()),
        })
    }

    /// pi's `normalizePath`: `~` and `~/…` expanded, a `file://` URL made a path; a URL
    /// that node's `fileURLToPath` refuses stays as it is (see [`Env::try_normalize_path`]).
    pub fn normalize_path(&self, p: &Path) -> PathBuf {
        self.try_normalize_path(p).unwrap_or_else(|_| p.to_path_buf())
    }

    /// pi's `normalizePath`, with the error node's `fileURLToPath` throws for a `file://`
    /// URL it refuses (`TypeError [ERR_INVALID_FILE_URL_HOST]: ...`).
    ///
    /// # Errors
    /// The URL's host is neither empty nor `localhost`, its path holds an encoded `/` or a
    /// `%` that starts no UTF-8 escape, or it is no URL; the text is node's.
    pub fn try_normalize_path(&self, p: &Path) -> Result<PathBuf, String> {
        let s = p.as_os_str().as_encoded_bytes();
        if s.starts_with(b"file://") {
            return file_url_to_path(&String::from_utf8_lossy(s));
        }
        if s == b"~" {
            return Ok(self.home.clone());
        }
        if let Some(rest) = s.strip_prefix(b"~/") {
            return Ok(join_resolved(&self.home, Path::new(&*String::from_utf8_lossy(rest))));
        }
        Ok(p.to_path_buf())
    }

    /// pi's `resolvePath`: [`Env::normalize_path`], then node's `path.resolve` against cwd.
    pub fn resolve_path(&self, p: &Path) -> PathBuf {
        let n = self.normalize_path(p);
        if n.is_absolute() {
            lexical_normalize(&n)
        } else {
            join_resolved(&self.cwd, &n)
        }
    }

    /// The agent dir: `explicit`, else the flavor's variable (non-empty), else `~/.pi/agent`.
    pub fn agent_dir(&self, explicit: Option<&Path>) -> PathBuf {
        if let Some(p) = explicit {
            return self.normalize_path(p);
        }
        match &self.agent_dir_var {
            Some(v) if !v.is_empty() => self.normalize_path(Path::new(v)),
            _ => self.home.join(self.flavor.config_dir_name()).join("agent"),
        }
    }

    /// The custom flat session dir, if one is configured: `explicit`, else the flavor's
    /// variable (non-empty), else `sessionDir` from `<agent_dir>/settings.json`.
    pub fn custom_session_dir(&self, explicit: Option<&Path>, agent_dir: &Path) -> Option<PathBuf> {
        if let Some(p) = explicit {
            return Some(self.normalize_path(p));
        }
        if let Some(v) = &self.session_dir_var
            && !v.is_empty()
        {
            return Some(self.normalize_path(Path::new(v)));
        }
        // (Never blocking on a FIFO there, never reading a device.)
        let bytes = {
            use std::io::Read as _;
            let mut f = crate::source::open_for_reading(&agent_dir.join("settings.json")).ok()?;
            crate::source::regular(&f.metadata().ok()?).ok()?;
            let mut b = Vec::new();
            f.read_to_end(&mut b).ok()?;
            b
        };
        let v = crate::json::value::parse(&bytes).ok()?;
        let s = v.get("sessionDir")?.as_js_str()?;
        if s.is_empty() {
            return None;
        }
        Some(self.normalize_path(Path::new(&*s.to_str_lossy())))
    }

    /// pi's `getDefaultSessionDirPath(cwd, agentDir)`: the project folder for `cwd`.
    pub fn default_session_dir(&self, cwd: &Path, agent_dir: &Path) -> PathBuf {
        let resolved = self.resolve_path(cwd);
        let agent = self.resolve_path(agent_dir);
        let s = resolved.to_string_lossy();
        let s = s.strip_prefix('/').or_else(|| s.strip_prefix('\\')).unwrap_or(&s);
        let safe: String = s
            .chars()
            .map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c })
            .collect();
        agent.join("sessions").join(format!("--{safe}--"))
    }

    /// pi's `pathsEqual` on POSIX: equal after node's `path.resolve`.
    pub fn paths_equal(&self, a: &Path, b: &Path) -> bool {
        let ra = if a.is_absolute() {
            lexical_normalize(a)
        } else {
            join_resolved(&self.cwd, a)
        };
        let rb = if b.is_absolute() {
            lexical_normalize(b)
        } else {
            join_resolved(&self.cwd, b)
        };
        ra == rb
    }
}

/// node's `url.fileURLToPath(url)` on POSIX, for a `url` that starts with `file://`: the
/// WHATWG URL parse of a file URL (tabs and line breaks dropped, `\\` as `/`, `.` and `..`
/// segments folded, query and fragment cut off, a host of `localhost` dropped), then the
/// path percent-decoded as `decodeURIComponent` decodes it. Errors carry node's text.
///
/// ```
/// use pi_session::listing::dirs::file_url_to_path;
/// assert_eq!(file_url_to_path("file:///home/u/my%20notes/../a.jsonl?x#y").unwrap(), std::path::PathBuf::from("/home/u/a.jsonl"));
/// assert!(file_url_to_path("file://example.com/a").unwrap_err().contains("ERR_INVALID_FILE_URL_HOST"));
/// ```
///
/// # Errors
/// As [`Env::try_normalize_path`].
pub fn file_url_to_path(url: &str) -> Result<PathBuf, String> {
    let invalid = || "TypeError [ERR_INVALID_URL]: Invalid URL".to_string();
    let trimmed = url.trim_matches(|c: char| c <= ' ');
    let text: String = trimmed.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let rest = text.strip_prefix("file:").ok_or_else(invalid)?;
    // `file:` then two slashes (either way round): the host, up to the next slash, `?` or `#`.
    let rest = rest.trim_start_matches(['/', '\\']);
    let skipped = text.len() - "file:".len() - rest.len();
    let (host, path) = if skipped == 2 {
        let end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    } else {
        // `file:///x`: no host; more slashes are empty segments of the path.
        ("", &text["file:".len() + 2..])
    };
    let drive = |h: &str| {
        let b = h.as_bytes();
        b.len() == 2 && b[0].is_ascii_alphabetic() && matches!(b[1], b':' | b'|')
    };
    let mut segments_text = String::new();
    if drive(host) {
        // A Windows drive letter where the host would be is the path's first segment
        // (`C|` written `C:`).
        segments_text.push('/');
        segments_text.push_str(&host[..1]);
        segments_text.push(':');
    } else if !host.is_empty() {
        let decoded = percent_decode(host).ok_or_else(invalid)?;
        let host = String::from_utf8(decoded).map_err(|_| invalid())?.to_ascii_lowercase();
        let forbidden = |c: char| c <= ' ' || "#%/:<>?@[\\]^|\u{7f}".contains(c);
        // (An IPv6 address in brackets is a host, not localhost.)
        let ipv6 = host.starts_with('[') && host.ends_with(']');
        if !ipv6 && host.chars().any(forbidden) {
            return Err(invalid());
        }
        if host != "localhost" {
            return Err(format!(
                "TypeError [ERR_INVALID_FILE_URL_HOST]: File URL host must be \"localhost\" or empty on {}",
                std::env::consts::OS
            ));
        }
    }
    let path = path.split(['?', '#']).next().unwrap_or("");
    segments_text.push_str(path);
    let mut segments: Vec<&str> = Vec::new();
    let parts: Vec<&str> = segments_text.split(['/', '\\']).skip(1).collect();
    for (i, seg) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let lower = seg.to_ascii_lowercase();
        if matches!(lower.as_str(), "." | "%2e") {
            if last {
                segments.push("");
            }
        } else if matches!(lower.as_str(), ".." | ".%2e" | "%2e." | "%2e%2e") {
            segments.pop();
            if last {
                segments.push("");
            }
        } else {
            segments.push(seg);
        }
    }
    let pathname = format!("/{}", segments.join("/"));
    if pathname.to_ascii_lowercase().contains("%2f") {
        return Err(
            "TypeError [ERR_INVALID_FILE_URL_PATH]: File URL path must not include encoded / characters".into(),
        );
    }
    let malformed = || "URIError: URI malformed".to_string();
    let decoded = percent_decode(&pathname).ok_or_else(malformed)?;
    String::from_utf8(decoded).map(PathBuf::from).map_err(|_| malformed())
}

/// `%XX` escapes decoded; `None` when a `%` starts no escape.
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The sessions root of an agent dir: `<agent dir>/sessions`.
pub fn sessions_root(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions")
}

/// Whether a file name in a project folder names a session: pi's `endsWith(".jsonl")`,
/// less pi-session's own temporary files. Those are named `….tmp` now, but a rewrite
/// killed by a build before that left `.pi-session-tmp-<pid>-<uuid>-<name>.jsonl`, a
/// (perhaps partial) copy of a session; pi itself would list such a leftover (and `pi
/// --continue` could pick it, being newest), pi-session skips it, and the next pi-session
/// rewrite in the folder removes it.
pub(crate) fn is_session_name(name: &[u8]) -> bool {
    name.ends_with(b".jsonl") && !name.starts_with(TEMP_PREFIX)
}

fn join_resolved(base: &Path, rel: &Path) -> PathBuf {
    lexical_normalize(&base.join(rel))
}

/// node's `path.resolve` for an absolute path: `.` and `..` folded, repeated and trailing
/// separators dropped, no file system access.
pub fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            flavor: Flavor::Pi,
            home: "/home/u".into(),
            cwd: "/work/x".into(),
            agent_dir_var: None,
            session_dir_var: None,
        }
    }

    #[test]
    fn temporary_files_are_no_sessions() {
        assert!(is_session_name(b"2025-01-01T00-00-00-000Z_a.jsonl"));
        assert!(is_session_name(b".hidden.jsonl"));
        assert!(!is_session_name(b".pi-session-tmp-1-x-s.jsonl"));
        assert!(!is_session_name(b".pi-session-tmp-1-x-s.jsonl.tmp"));
        assert!(!is_session_name(b".s.jsonl.append"));
    }

    #[test]
    fn default_dir_like_pi() {
        let e = env();
        let a = e.agent_dir(None);
        assert_eq!(a, Path::new("/home/u/.pi/agent"));
        assert_eq!(
            e.default_session_dir(Path::new("/a/b:c/../d/"), &a),
            Path::new("/home/u/.pi/agent/sessions/--a-d--")
        );
        assert_eq!(
            e.default_session_dir(Path::new("rel"), Path::new("~/ag")),
            Path::new("/home/u/ag/sessions/--work-x-rel--")
        );
        let mut g = env();
        g.flavor = Flavor::Pig;
        g.agent_dir_var = Some("".into());
        assert_eq!(g.agent_dir(None), Path::new("/home/u/.pig/agent"));
        g.agent_dir_var = Some("~/pg".into());
        assert_eq!(g.agent_dir(None), Path::new("/home/u/pg"));
    }
}
