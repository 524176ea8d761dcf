//! How a list of sessions is shown, as pi's `/resume` picker shows it: a session's title,
//! a working directory shortened under the home folder, and the threaded view of forks
//! under the sessions they came from. Every face (the command line's `ls` and `usage
//! session`, and the faces to come) shows sessions by these rules.

use crate::json::Value;
use crate::listing::SessionInfo;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// A session's title as pi's picker shows it: its name (`named`), else its first message;
/// control characters as spaces, trimmed (white space, controls, a byte-order mark).
pub fn title(s: &SessionInfo) -> Title<'_> {
    let (text, named) = match &s.name {
        Some(n) => (n.to_str_lossy(), true),
        None => (s.first_message.to_str_lossy(), false),
    };
    let is_c0 = |c: char| c < ' ' || c == '\u{7f}';
    let inner = text.trim_matches(|c: char| c.is_whitespace() || is_c0(c) || c == '\u{feff}');
    let from = inner.as_ptr() as usize - text.as_ptr() as usize;
    let to = from + inner.len();
    let inner_has_c0 = text.as_bytes()[from..to].iter().any(|&b| b < b' ' || b == 0x7f);
    let text = match text {
        Cow::Borrowed(b) if !inner_has_c0 => Cow::Borrowed(&b[from..to]),
        other => Cow::Owned(
            other[from..to]
                .chars()
                .map(|c| if is_c0(c) { ' ' } else { c })
                .collect(),
        ),
    };
    Title { text, named }
}

/// [`title`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Title<'a> {
    /// The text (not escaped: escape it for a terminal).
    pub text: Cow<'a, str>,
    /// Whether it is the session's name (else its first message).
    pub named: bool,
}

/// pi's `shortenHomePath(path, home)` (utils/paths.js), which its session picker and its
/// `/tree` both use: an absolute `path` within `home` (both resolved: `.` and `..` folded)
/// as `~` or `~/…` relative to it; any other path (relative, elsewhere, no home) as it is.
pub fn shorten_home(p: &str, home: Option<&Path>) -> String {
    use crate::listing::dirs::lexical_normalize;
    let path = Path::new(p);
    let Some(home) = home.filter(|h| !h.as_os_str().is_empty() && h.is_absolute()) else {
        return p.to_owned();
    };
    if !path.is_absolute() {
        return p.to_owned();
    }
    match lexical_normalize(path).strip_prefix(lexical_normalize(home)) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".into(),
        Ok(rest) => format!("~/{}", rest.to_string_lossy()),
        Err(_) => p.to_owned(),
    }
}

/// pi's threaded view (`buildSessionTree`, `flattenSessionTree`) of `infos` (in the order
/// given): a session whose `parentSession` names another listed session (the same file
/// after resolving symlinks) goes under it; roots and children by the latest activity of
/// their subtree, newest first (ties in the order given). A parent cycle, where pi
/// recurses without end, is cut: its first session becomes a root. Returns each session's
/// index in `infos`, in the threaded order, with its prefix (pi's: `│  ` or three spaces
/// for each ancestor below the top, then `├─ ` or `└─ `).
pub fn thread(infos: &[&SessionInfo]) -> Vec<(usize, String)> {
    use std::collections::HashMap;
    let key = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            crate::listing::dirs::lexical_normalize(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        })
    };
    let keys: Vec<PathBuf> = infos.iter().map(|s| key(&s.path)).collect();
    let mut by_key: HashMap<&Path, usize> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        by_key.insert(k, i);
    }
    let parent: Vec<Option<usize>> = infos
        .iter()
        .enumerate()
        .map(|(i, s)| match &s.parent_session_path {
            Some(Value::String(p)) if !p.is_empty() => {
                let p = PathBuf::from(&*p.to_str_lossy());
                by_key.get(key(&p).as_path()).copied().filter(|&j| j != i)
            }
            _ => None,
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); infos.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(j) => children[*j].push(i),
            None => roots.push(i),
        }
    }
    // Sessions on a parent cycle reach no root: the first of each becomes one.
    let mut seen = vec![false; infos.len()];
    fn mark(from: usize, children: &[Vec<usize>], seen: &mut [bool]) {
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if !std::mem::replace(&mut seen[n], true) {
                stack.extend(&children[n]);
            }
        }
    }
    for &r in &roots {
        mark(r, &children, &mut seen);
    }
    for i in 0..infos.len() {
        if !seen[i] {
            roots.push(i);
            if let Some(j) = parent[i] {
                children[j].retain(|&c| c != i);
            }
            mark(i, &children, &mut seen);
        }
    }
    // Latest activity of each subtree (an invalid date counts as none), children first.
    let mut latest: Vec<f64> = infos
        .iter()
        .map(|s| {
            if s.modified.is_nan() {
                f64::NEG_INFINITY
            } else {
                s.modified
            }
        })
        .collect();
    let mut order = Vec::with_capacity(infos.len());
    let mut stack: Vec<usize> = roots.clone();
    while let Some(n) = stack.pop() {
        order.push(n);
        stack.extend(&children[n]);
    }
    for &n in order.iter().rev() {
        for &c in &children[n] {
            latest[n] = latest[n].max(latest[c]);
        }
    }
    let by_latest =
        |v: &mut Vec<usize>| v.sort_by(|&x, &y| latest[y].partial_cmp(&latest[x]).unwrap_or(std::cmp::Ordering::Equal));
    by_latest(&mut roots);
    for c in &mut children {
        by_latest(c);
    }
    // Flattened with pi's prefixes: `│  ` or `   ` for each ancestor below the top,
    // then `├─ ` or `└─ `.
    let mut out_order: Vec<(usize, String)> = Vec::with_capacity(infos.len());
    let mut stack: Vec<(usize, usize, bool, String)> =
        roots.iter().rev().map(|&r| (r, 0, true, String::new())).collect();
    while let Some((n, depth, last, above)) = stack.pop() {
        let prefix = if depth == 0 {
            String::new()
        } else {
            format!("{above}{}", if last { "└─ " } else { "├─ " })
        };
        let below = if depth == 0 {
            String::new()
        } else {
            format!("{above}{}", if last { "   " } else { "│  " })
        };
        let kids = &children[n];
        for (k, &c) in kids.iter().enumerate().rev() {
            stack.push((c, depth + 1, k + 1 == kids.len(), below.clone()));
        }
        out_order.push((n, prefix));
    }
    out_order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::js::string::JsStr;

    fn info(path: &str, parent: Option<&str>, modified: f64, first: &str) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(path),
            id: None,
            cwd: JsStr::from_str("/p").into_owned(),
            name: None,
            parent_session_path: parent.map(|p| Value::string(p.to_owned())),
            created: 0.0,
            modified,
            message_count: 1,
            first_message: JsStr::owned(first.to_owned()),
            all_messages_text: JsStr::from_str("").into_owned(),
            bytes: 0,
            text_ref: None,
        }
    }

    #[test]
    fn forks_go_under_their_parents_newest_subtree_first() {
        let a = info("/s/a.jsonl", None, 10.0, "a");
        let b = info("/s/b.jsonl", Some("/s/a.jsonl"), 30.0, "b");
        let c = info("/s/c.jsonl", None, 20.0, "c");
        let d = info("/s/d.jsonl", Some("/s/a.jsonl"), 5.0, "d");
        // a's subtree is newest (b at 30): a first, its children by their activity.
        assert_eq!(
            thread(&[&a, &b, &c, &d]),
            [
                (0, String::new()),
                (1, "├─ ".into()),
                (3, "└─ ".into()),
                (2, String::new())
            ]
        );
        // A cycle is cut at its first session.
        let x = info("/s/x.jsonl", Some("/s/y.jsonl"), 1.0, "x");
        let y = info("/s/y.jsonl", Some("/s/x.jsonl"), 2.0, "y");
        assert_eq!(thread(&[&x, &y]), [(0, String::new()), (1, "└─ ".into())]);
    }

    #[test]
    fn titles_are_trimmed_with_controls_as_spaces() {
        let s = info("/s/a.jsonl", None, 0.0, "\u{feff}  fix\tthe\nbug \u{7f}");
        assert_eq!(
            title(&s),
            Title {
                text: "fix the bug".into(),
                named: false
            }
        );
        assert_eq!(shorten_home("/home/u/src", Some(Path::new("/home/u"))), "~/src");
        assert_eq!(shorten_home("/home/u", Some(Path::new("/home/u"))), "~");
        assert_eq!(shorten_home("/srv/x", Some(Path::new("/home/u"))), "/srv/x");
        // Resolved as pi resolves both; a sibling that shares the prefix is not inside.
        assert_eq!(shorten_home("/home/u/a/../b/", Some(Path::new("/home/u/"))), "~/b");
        assert_eq!(shorten_home("/home/user2", Some(Path::new("/home/u"))), "/home/user2");
        assert_eq!(shorten_home("rel/x", Some(Path::new("/home/u"))), "rel/x");
        assert_eq!(shorten_home("/usr/bin", Some(Path::new("/"))), "~/usr/bin");
    }
}
