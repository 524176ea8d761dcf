//! pi's `loadEntriesFromFile(path)`: a file's entries as `JSON.parse` gives them, before
//! any migration, and the one repair pi makes when it reads them (a line break after a
//! last line that has none).

use crate::error::{Error, ErrorKind, Result};
use crate::json::value::{self, Value};
use crate::session::line_of;
use crate::source::{ReadMode, Source};
use std::io::Write as _;
use std::path::Path;

/// pi's `loadEntriesFromFile(path)`: every line `JSON.parse` takes, in order (blank lines,
/// malformed ones and falsy values left out, as pi leaves them out), not migrated; `[]`
/// when the file does not exist, holds no entry, or its first entry is no session header
/// (an object of type `session` with a string `id`). When it is a session whose last line
/// has no line break, one is appended, as pi appends it (only ever to a regular file:
/// anything else is refused before it is read).
///
/// # Errors
/// The file cannot be read, or is no regular file; the line break cannot be written.
pub fn load_entries_from_file(path: &Path) -> Result<Vec<Value<'static>>> {
    let src = match Source::open(path, ReadMode::default()) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::from(e).with_path(path)),
    };
    let bytes = src.bytes();
    let index = crate::index::build(bytes);
    let mut entries = Vec::with_capacity(index.len());
    for e in index.iter(bytes) {
        let v = value::parse(line_of(bytes, &e)).map_err(|_| {
            Error::from(ErrorKind::FileChanged {
                path: Some(path.to_path_buf()),
            })
        })?;
        entries.push(v.into_owned());
    }
    let Some(header) = entries.first() else {
        return Ok(entries);
    };
    let is_header = header.get("type").and_then(Value::as_str) == Some("session")
        && matches!(header.get("id"), Some(Value::String(_)));
    if !is_header {
        return Ok(Vec::new());
    }
    if bytes.last() != Some(&b'\n') {
        end_with_line_break(path)?;
    }
    Ok(entries)
}

/// `appendFileSync(path, "\n")`, to a regular file only (checked on the open file: a name
/// swapped for a FIFO or a device since it was read is not written).
fn end_with_line_break(path: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e: std::io::Error| Error::from(e).with_path(path);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32 | rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
        .map_err(io)?;
    crate::source::regular(&f.metadata().map_err(io)?).map_err(io)?;
    f.write_all(b"\n").map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_gets_a_line_break_and_no_session_gets_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.jsonl");
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
        std::fs::write(&f, format!("{header}\n\nnot json\n0\n{{\"type\":\"x\"}}\n{{\"torn\":")).unwrap();
        let entries = load_entries_from_file(&f).unwrap();
        // The header and the one object; the blank, malformed and falsy lines left out.
        assert_eq!(entries.len(), 2);
        assert!(std::fs::read(&f).unwrap().ends_with(b"{\"torn\":\n"));
        // Read again: nothing more to append.
        let len = std::fs::metadata(&f).unwrap().len();
        assert_eq!(load_entries_from_file(&f).unwrap().len(), 2);
        assert_eq!(std::fs::metadata(&f).unwrap().len(), len);

        let g = dir.path().join("no-session.jsonl");
        std::fs::write(&g, "{\"type\":\"message\"}").unwrap();
        assert!(load_entries_from_file(&g).unwrap().is_empty());
        // Not a session: not repaired either.
        assert_eq!(std::fs::read(&g).unwrap(), b"{\"type\":\"message\"}");
        assert!(
            load_entries_from_file(&dir.path().join("missing.jsonl"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_fifo_is_refused_not_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.jsonl");
        use rustix::fs::{CWD, FileType, Mode, mknodat};
        mknodat(CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
        let e = load_entries_from_file(&fifo).unwrap_err();
        assert!(e.to_string().contains("f.jsonl"), "{e}");
    }
}
