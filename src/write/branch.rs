//! New sessions made from old ones: pi's `forkFrom` (a copy of another file),
//! `branchWithSummary` (a summary entry where the leaf moves back) and
//! `createBranchedSession` (a new file holding one path of the tree).

use crate::error::{Error, ErrorKind, Result};
use crate::index::{EntryPos, EntryType, Key};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value};
use crate::json::verbatim::stringify_form_member;
use crate::session::{Migration, Session, key_to_value};
use crate::write::call::Append;
use crate::write::fs::{create_exclusive, io_at};
use crate::write::{Entropy, Writer, header_object, invalid_id, line_of, put, set, valid_session_id};
use std::path::{Path, PathBuf};

/// What [`Writer::create_branched_session_relinked`] made.
#[derive(Debug, Clone)]
pub struct Branched {
    /// The new file (`None` for an in-memory session).
    pub file: Option<PathBuf>,
    /// The entries kept, in order: the new session's entries before its labels.
    pub relinked: Vec<Relinked>,
}

/// One entry of the path that a branched session keeps, and what changed in it.
#[derive(Debug, Clone)]
pub struct Relinked {
    /// Its place in the path ([`Session::branch_path`] of the leaf, labels included).
    pub at: usize,
    /// Its new `parentId`: the entry kept before it (`null` for the first).
    pub parent_id: Value<'static>,
    /// For a compaction, its `firstKeptEntryId` now (a label it named is replaced by the
    /// entry the label was on; `None` inside: absent).
    pub first_kept_entry_id: Option<Option<Value<'static>>>,
}

impl Writer {
    /// pi's `SessionManager.forkFrom(source, targetCwd, sessionDir)`: a new file in the
    /// target's session folder with a new header (`parentSession` = the source) and every
    /// entry of the source as pi parsed it (not migrated, as pi).
    ///
    /// # Errors
    /// [`ErrorKind::NotASession`] for an empty or invalid source, an invalid `id`, I/O.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: &Path,
        id: Option<&str>,
        mut entropy: Entropy,
    ) -> Result<Writer> {
        let src = Session::open(source)?;
        if src.index().is_empty() {
            return Err(ErrorKind::NotASession {
                path: Some(source.to_path_buf()),
                why: crate::error::NotASessionWhy::NO_JSON_LINE,
            }
            .into());
        }
        if let Some(id) = id
            && !valid_session_id(id)
        {
            return Err(invalid_id(id));
        }
        std::fs::create_dir_all(session_dir).map_err(io_at(session_dir))?;
        let new_id = id.map(str::to_owned).unwrap_or_else(|| (entropy.uuid7)());
        let ts = (entropy.now)();
        let path = session_dir.join(format!("{}_{new_id}.jsonl", ts.replace([':', '.'], "-")));
        // pi: `resolvePath(sourcePath)` (`..` folded, unlike `std::path::absolute`).
        let abs_source = crate::write::resolve_path(source);
        let h = header_object(
            new_id,
            ts,
            target_cwd.to_string(),
            Some(abs_source.display().to_string()),
        );
        let mut bytes = line_of(&Value::Object(h));
        for i in 0..src.index().len() {
            let p = EntryPos(i as u32);
            if src.record(p).ty == EntryType::Session {
                continue;
            }
            let v = value::parse(src.raw(p)).map_err(|_| Error::from(ErrorKind::FileChanged { path: None }))?;
            bytes.extend_from_slice(&line_of(&v));
        }
        create_exclusive(&path, &bytes)?;
        Writer::open(&path, Some(session_dir), entropy)
    }

    /// pi's `branchWithSummary(branchFromId, summary, details, fromHook, usage)`: move the
    /// leaf to `branch_from` (`None`: before the first entry) and record a summary of the
    /// abandoned branch there.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`]; I/O errors.
    pub fn branch_with_summary(
        &mut self,
        branch_from: Option<&str>,
        summary: &str,
        details: Option<Value<'_>>,
        from_hook: Option<bool>,
        usage: Option<Value<'_>>,
    ) -> Result<String> {
        self.call(
            Append::BranchSummary,
            [
                ("branchFromId", Some(branch_from.map_or(Value::Null, Value::str))),
                ("summary", Some(Value::str(summary))),
                ("details", details),
                ("fromHook", from_hook.map(Value::Bool)),
                ("usage", usage),
            ],
        )
    }

    /// pi's `createBranchedSession(leafId)`: a new session file holding only the path to
    /// `leaf`, labels removed from the path and re-chained, then re-added at the end;
    /// `parentSession` names the old file. Returns the new file (created now when the path
    /// has a conversation, else on the first message).
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] for an unknown leaf; I/O errors.
    pub fn create_branched_session(&mut self, leaf: &str) -> Result<Option<PathBuf>> {
        self.create_branched_session_relinked(leaf).map(|b| b.file)
    }

    /// [`Writer::create_branched_session`], saying too what became of each entry kept (for
    /// a host that keeps entries as objects of its own, as the Node binding does: it copies
    /// its object of the entry and sets the members that changed).
    ///
    /// # Errors
    /// As [`Writer::create_branched_session`].
    pub fn create_branched_session_relinked(&mut self, leaf: &str) -> Result<Branched> {
        let previous = self.file.clone();
        let path = self.session.branch_path(Some(&Key::str(leaf)))?;
        if path.is_empty() {
            return Err(ErrorKind::EntryNotFound { id: leaf.to_string() }.into());
        }
        let s = &self.session;
        let mut kept: Vec<Value<'static>> = Vec::new();
        // In path order (the last is the labels' parent), and as a set: the label loop
        // below asks it once per label, so `branch` stays linear in the labels.
        let mut kept_ids: Vec<Key> = Vec::new();
        let mut kept_set: ahash::AHashSet<Key> = ahash::AHashSet::new();
        let mut pending_labels: Vec<Key> = Vec::new();
        let mut replacement: ahash::AHashMap<Key, Key> = ahash::AHashMap::new();
        let mut parent: Option<Key> = None;
        let mut relinked = Vec::new();
        for (at, &p) in path.iter().enumerate() {
            let rec = s.record(p);
            if rec.ty == EntryType::Label {
                pending_labels.push(rec.id.to_key());
                continue;
            }
            for l in pending_labels.drain(..) {
                replacement.insert(l, rec.id.to_key());
            }
            let mut v = s.value(p)?.into_owned();
            let pv = parent.as_ref().map_or(Value::Null, key_to_value);
            let mut first_kept = None;
            if let Value::Object(o) = &mut v {
                o.set(JsStr::from_str("parentId"), pv.clone());
                if rec.ty == EntryType::Compaction {
                    let fk = crate::session::key_from_value(o.get("firstKeptEntryId"));
                    if fk != rec.id
                        && let Some(r) = replacement.get(&fk)
                    {
                        o.set(JsStr::from_str("firstKeptEntryId"), key_to_value(r));
                    }
                    first_kept = Some(o.get("firstKeptEntryId").cloned());
                }
            }
            relinked.push(Relinked {
                at,
                parent_id: pv,
                first_kept_entry_id: first_kept,
            });
            parent = Some(rec.id.to_key());
            kept_ids.push(rec.id.to_key());
            kept_set.insert(rec.id.to_key());
            kept.push(v);
        }
        // Labels of kept entries, in the order pi's label map holds them (first set).
        let mut labels: Vec<(Key, Value<'static>, Option<Value<'static>>)> = Vec::new();
        for (target, label_pos) in s.label_order() {
            if kept_set.contains(&target) {
                let mut lv = s.value(label_pos)?.into_owned();
                if let Value::Object(o) = &mut lv {
                    let label = o.remove("label").unwrap_or(Value::Null);
                    let ts = o.remove("timestamp");
                    labels.push((target, label, ts));
                }
            }
        }
        let new_id = (self.entropy.uuid7)();
        let ts = (self.entropy.now)();
        let file = self
            .session_dir
            .join(format!("{}_{new_id}.jsonl", ts.replace([':', '.'], "-")));
        let parent = if self.persist {
            previous.map(|p| p.display().to_string())
        } else {
            None
        };
        let h = header_object(new_id, ts, self.cwd.clone(), parent);
        let mut bytes = line_of(&Value::Object(h));
        for v in &kept {
            bytes.extend_from_slice(&line_of(v));
        }
        // pi's `generateId(new Set(pathEntryIds))`, with one set for all labels.
        let mut taken: ahash::AHashSet<String> =
            kept_ids.iter().filter_map(|k| k.as_str().map(str::to_owned)).collect();
        let mut label_parent = kept_ids.last().map_or(Value::Null, key_to_value);
        if !label_parent.truthy() {
            label_parent = Value::Null;
        }
        for (target, label, lts) in labels {
            let id = loop {
                let u = (self.entropy.uuid4)();
                let c = u[..8].to_string();
                if !taken.contains(&c) {
                    break c;
                }
            };
            taken.insert(id.clone());
            let mut o = Object::new();
            set(&mut o, "type", Value::str("label"));
            set(&mut o, "id", Value::string(id.clone()));
            set(&mut o, "parentId", label_parent);
            put(&mut o, "timestamp", lts);
            set(&mut o, "targetId", key_to_value(&target));
            set(&mut o, "label", label);
            bytes.extend_from_slice(&line_of(&Value::Object(o)));
            label_parent = Value::string(id);
        }
        let next = Session::from_bytes(bytes)?;
        if self.persist {
            if Writer::has_conversation(&next) {
                create_exclusive(&file, next.bytes())?;
                self.session = Session::open(&file)?;
                self.flushed = true;
            } else {
                self.session = next;
                self.flushed = false;
            }
            self.file = Some(file.clone());
            return Ok(Branched {
                file: Some(file),
                relinked,
            });
        }
        self.session = next;
        Ok(Branched { file: None, relinked })
    }
}

impl Session {
    /// pi's `serializeSessionBranch`, what pi's `/export FILE.jsonl` writes: the path
    /// `branch` (from [`Session::branch_path`]) as a session of its own. A version-3
    /// header with this session's id, `timestamp` (pi: the time of the export) and the cwd
    /// as pi's open resolves it (`resolvePath(header.cwd)`, the working directory when the
    /// header has none), then every entry of the path as pi holds it (migrated), in order,
    /// each re-chained to the one before it (the first to `null`), labels where they are.
    /// Unlike [`Writer::create_branched_session`] the id stays and there is no
    /// `parentSession`: the export is the same session cut to one branch.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when the file changed under a mapping; I/O errors of `out`.
    ///
    /// ```
    /// let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
    ///     {\"type\":\"label\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\"}\n\
    ///     {\"type\":\"label\",\"id\":\"b1\",\"parentId\":\"a1\",\"timestamp\":\"2025-01-01T00:00:02.000Z\"}\n\
    ///     {\"type\":\"label\",\"id\":\"c1\",\"parentId\":\"a1\",\"timestamp\":\"2025-01-01T00:00:03.000Z\"}\n";
    /// let s = pi_session::Session::from_bytes(text.as_bytes().to_vec()).unwrap();
    /// let branch = s.branch_path(None).unwrap(); // a1, c1
    /// let env = pi_session::Env::from_process(pi_session::Flavor::Pi).unwrap();
    /// let mut out = Vec::new();
    /// s.write_branch_jsonl(&branch, "2026-01-01T00:00:00.000Z", &env, &mut out).unwrap();
    /// let lines: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
    /// assert_eq!(lines[0], "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}");
    /// assert_eq!(lines.len(), 3);
    /// assert!(lines[2].contains("\"id\":\"c1\",\"parentId\":\"a1\""));
    /// ```
    pub fn write_branch_jsonl(
        &self,
        branch: &[EntryPos],
        timestamp: &str,
        env: &crate::listing::dirs::Env,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        self.branch_jsonl(branch, timestamp, env, out, true)
    }

    /// [`Session::write_branch_jsonl`]; `verbatim`: copy a line that is what
    /// `JSON.stringify` writes for it and already names the entry before it as its
    /// parent (in a file pi wrote, nearly every line: the export then costs little more
    /// than a copy). `false` is its slow twin: every line decoded, re-chained and
    /// stringified, as pi does.
    pub(crate) fn branch_jsonl(
        &self,
        branch: &[EntryPos],
        timestamp: &str,
        env: &crate::listing::dirs::Env,
        out: &mut dyn std::io::Write,
        verbatim: bool,
    ) -> Result<()> {
        let header = self.header()?;
        let cwd = match header.get("cwd").and_then(Value::as_str) {
            Some(c) => env.resolve_path(Path::new(c)),
            None => env.resolve_path(&env.cwd),
        };
        let mut h = Object::new();
        set(&mut h, "type", Value::str("session"));
        set(&mut h, "version", Value::Number(3.0));
        put(&mut h, "id", header.get("id").cloned());
        set(&mut h, "timestamp", Value::str(timestamp));
        set(&mut h, "cwd", Value::string(cwd.display().to_string()));
        out.write_all(&line_of(&Value::Object(h)))?;
        // A migrated entry is not its line (ids, parents, fields are patched in).
        let as_stored = verbatim && matches!(self.migration(), Migration::None | Migration::RewriteOnly);
        let null = Key::Null;
        let mut line = Vec::new();
        for (k, &p) in branch.iter().enumerate() {
            let rec = self.record(p);
            let parent_is_kept = match k {
                0 => rec.parent == crate::index::KeyRef::from(&null),
                _ => rec.parent == self.record(branch[k - 1]).id,
            };
            let raw = self.raw(p);
            if as_stored && parent_is_kept && stringify_form_member(raw, b"parentId").is_some() {
                out.write_all(raw)?;
                out.write_all(b"\n")?;
                continue;
            }
            let mut v = self.value(p)?;
            if let Value::Object(o) = &mut v {
                let parent = match k {
                    0 => Value::Null,
                    _ => key_to_value(self.record(branch[k - 1]).id),
                };
                o.set(JsStr::from_str("parentId"), parent);
            }
            line.clear();
            crate::json::stringify::stringify_into(&mut line, &v);
            line.push(b'\n');
            out.write_all(&line)?;
        }
        // The copied lines were read from a mapping: they were the file's only if it
        // has not changed.
        self.verify()
    }
}

#[cfg(test)]
mod tests {
    //! The jsonl export's copy of stored lines against its slow twin (every line decoded,
    //! re-chained and stringified): the same bytes for every branch of generated sessions
    //! whose lines are in stringify form or not, chained, re-chained or rooted oddly.
    use super::*;
    use proptest::prelude::*;

    fn env() -> crate::listing::dirs::Env {
        crate::listing::dirs::Env::from_process(crate::listing::dirs::Flavor::Pi).expect("env")
    }

    /// Every leaf's branch exported both ways; how many lines the fast way copied.
    pub(crate) fn both_ways(bytes: &[u8]) -> usize {
        let Ok(s) = Session::from_bytes(bytes.to_vec()) else {
            return 0;
        };
        let mut copied = 0;
        for i in 0..s.entries_len().min(64) {
            let Some(p) = s.entry_at(i) else { continue };
            let Ok(branch) = s.branch_path(Some(&s.record(p).id.to_key())) else {
                continue;
            };
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            s.branch_jsonl(&branch, "T", &env(), &mut fast, true).expect("fast");
            s.branch_jsonl(&branch, "T", &env(), &mut slow, false).expect("slow");
            assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&slow));
            // The fast way's lines are the stored ones where it copied.
            copied += fast
                .split(|&b| b == b'\n')
                .skip(1)
                .zip(&branch)
                .filter(|(l, q)| *l == s.raw(**q))
                .count();
        }
        copied
    }

    /// A line of an entry: stringify form or not (spaces, `1.0`, `\/`, a duplicate key), its
    /// parent by id, `null`, missing, or an id that is not there.
    fn line(i: usize) -> impl Strategy<Value = String> {
        let parent = prop_oneof![
            (0..8usize).prop_map(|p| format!("\"parentId\":\"e{p}\"")),
            Just("\"parentId\":null".to_string()),
            Just(String::new()),
            Just("\"parentId\":\"gone\"".to_string()),
        ];
        let odd = prop_oneof![
            Just(""),
            Just(",\"n\":1.0"),
            Just(",\"s\":\"a\\/b\""),
            Just(",\"x\":1,\"x\":2"),
            Just(", \"sp\":true"),
            Just(",\"u\":\"\\u00e9\\n\""),
        ];
        let ty = prop_oneof![Just("message"), Just("label"), Just("custom")];
        (parent, odd, ty, any::<bool>()).prop_map(move |(parent, odd, ty, parent_first)| {
            let id = format!("\"id\":\"e{i}\"");
            let head = match (parent.is_empty(), parent_first) {
                (true, _) => id,
                (false, true) => format!("{parent},{id}"),
                (false, false) => format!("{id},{parent}"),
            };
            let body = if ty == "message" {
                ",\"message\":{\"role\":\"user\",\"content\":\"hi\"}"
            } else {
                ""
            };
            format!("{{\"type\":\"{ty}\",{head},\"timestamp\":\"2025-01-01T00:00:00.000Z\"{odd}{body}}}\n")
        })
    }

    fn session() -> impl Strategy<Value = Vec<u8>> {
        (1..8usize).prop_flat_map(|n| {
            (0..n).map(line).collect::<Vec<_>>().prop_map(|lines| {
                let mut out =
                    b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n"
                        .to_vec();
                for l in lines {
                    out.extend_from_slice(l.as_bytes());
                }
                out
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        #[test]
        fn copying_stored_lines_writes_what_decoding_writes(bytes in session()) {
            both_ways(&bytes);
        }
    }

    #[test]
    fn the_fast_way_copies_lines_and_corpus_files_agree() {
        let chain = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
            {\"type\":\"label\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n\
            {\"type\":\"label\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n";
        assert!(both_ways(chain) >= 3, "not a vacuous twin: stored lines are copied");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for dir in ["valid", "malformed"] {
            for e in std::fs::read_dir(root.join(dir)).expect("corpus") {
                let p = e.expect("entry").path();
                // The small files (some malformed ones are deep chains of many MB).
                if p.extension().is_some_and(|x| x == "jsonl") && p.metadata().is_ok_and(|m| m.len() < 256 << 10) {
                    both_ways(&std::fs::read(&p).expect("read"));
                }
            }
        }
    }
}
