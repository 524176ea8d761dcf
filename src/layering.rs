//! The house rule, checked on every `cargo test`: folders follow the data flow from bytes
//! to answers, and each imports only from the folders below it; inside a folder, no two
//! files import each other, directly or round a circle. Test modules are left out.
//!
//! Every `crate::` and `super::` path is read (use-trees expanded). One thing is allowed
//! on purpose: a folder's `mod.rs` is its facade and declares its files with `mod x;` and
//! re-exports with `pub use x::Y;` (relative paths, not read here), while those files use
//! the types the facade defines (`super::SyntaxError`); that is how Rust folders work, and
//! it is no circle between files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first. Folders of one rank (`dump`, `listing`) must not import each other.
const LAYERS: &[(&str, u32)] = &[
    ("flavor", 0),
    ("generator", 1),
    ("js", 0),
    ("json", 1),
    ("source", 2),
    ("index", 3),
    ("files", 3),
    ("error", 4),
    // The stores' codec and folder store, under every cache (listing, search, usage).
    ("store", 4),
    ("session", 5),
    ("dump", 6),
    ("listing", 6),
    ("write", 7),
    ("search", 7),
    // Following a session as it is written (file events, the newest of a project).
    ("follow", 7),
    ("usage", 8),
    ("analytics", 9),
    // Every cache at once: what each holds, refreshing and dropping them.
    ("caches", 9),
    // What a person sees: pi's view rules, over everything that reads; under the faces.
    ("view", 10),
    ("internals", 11),
    ("lib", 12),
];

fn rank(top: &str) -> u32 {
    LAYERS
        .iter()
        .find(|l| l.0 == top)
        .unwrap_or_else(|| panic!("folder `{top}` has no layer in LAYERS"))
        .1
}

/// Module path of a file under `src/` (`json/walk.rs` is `json::walk`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_string());
    }
    if parts.is_empty() {
        parts.push("lib".into());
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "bin") {
                files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its test modules and comments: a `#[cfg(test)] mod x { .. }`
/// block is left out up to its closing brace, a `#[cfg(test)] mod x;` line alone.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        let t = l.trim_start();
        if t.starts_with("#[cfg(test)]") && lines.peek().is_some_and(|n| n.trim_start().starts_with("mod ")) {
            let decl = lines.next().unwrap_or_default();
            if !decl.contains('{') {
                continue; // `mod props;`: its file is read on its own
            }
            let mut depth = brace_balance(decl);
            while depth > 0 {
                let Some(l) = lines.next() else { break };
                depth += brace_balance(l);
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(l.split(" //").next().unwrap_or(l));
        out.push('\n');
    }
    out
}

/// Opening minus closing braces of a line, outside string and char literals (roughly:
/// enough for test modules, whose braces balance per line in practice).
fn brace_balance(line: &str) -> i64 {
    let mut depth = 0;
    let mut in_str = false;
    let mut prev = ' ';
    for c in line.chars() {
        match c {
            '"' if prev != '\\' => in_str = !in_str,
            '{' if !in_str && prev != '\'' => depth += 1,
            '}' if !in_str && prev != '\'' => depth -= 1,
            _ => {}
        }
        prev = c;
    }
    depth
}

/// Every module path a file names through `crate::` or `super::`, resolved; use-trees
/// (`crate::{a::X, b::{Y, Z}}`, `super::super::x`) are expanded.
fn imports(module: &[String], code: &str) -> BTreeSet<Vec<String>> {
    let b = code.as_bytes();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        let base = if boundary && b[i..].starts_with(b"crate::") {
            Some(Vec::new())
        } else if boundary && b[i..].starts_with(b"super::") {
            // `super` of `json::walk` is `json`; of `json` (json/mod.rs) it is the root.
            let mut m = module.to_vec();
            m.pop();
            Some(m)
        } else {
            None
        };
        match base {
            Some(base) => i = use_tree(b, i + 7, base, &mut found),
            None => i += 1,
        }
    }
    found
}

/// Reads the path (or `{..}` group) at `i` below `base`; records each path; returns where
/// it ends.
fn use_tree(b: &[u8], mut i: usize, mut base: Vec<String>, found: &mut BTreeSet<Vec<String>>) -> usize {
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        if b.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_ws(i);
                match b.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(b',') => i += 1,
                    Some(_) => {
                        let end = use_tree(b, i, base.clone(), found);
                        // `X as Y` and the like: on to the next item.
                        i = end.max(i + 1);
                        while i < b.len() && !matches!(b[i], b',' | b'}') {
                            i += 1;
                        }
                    }
                }
            }
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let seg = std::str::from_utf8(&b[start..i]).unwrap_or_default();
        match seg {
            "" => {
                found.insert(base);
                return i;
            }
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => base.push(seg.to_string()),
        }
        if b[i..].starts_with(b"::") {
            i += 2;
        } else {
            found.insert(base);
            return i;
        }
    }
}

#[test]
fn the_reader_sees_groups_nested_paths_and_code_after_test_modules() {
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    let found = imports(
        &m("json::walk"),
        "use crate::{session::Session, index::{line::X, pos}};\nuse super::{dispatch, string::f as g};\nlet _ = super::super::write::W;",
    );
    for want in [
        "session::Session",
        "index::line::X",
        "index::pos",
        "json::dispatch",
        "json::string::f",
        "write::W",
    ] {
        assert!(found.contains(&m(want)), "{want} not found in {found:?}");
    }
    let text = "#[cfg(test)]\nmod props;\nuse crate::a::B;\n#[cfg(test)]\nmod tests {\n    use crate::c::D;\n    fn f() { let s = \"}\"; }\n}\nuse crate::e::F;\n";
    let c = code(text);
    assert!(
        c.contains("crate::a::B") && c.contains("crate::e::F") && !c.contains("crate::c::D"),
        "{c}"
    );
}

#[test]
fn folders_import_only_downwards_and_files_form_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    let mut modules: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for p in &paths {
        let rel = p.strip_prefix(&src).expect("under src");
        if rel == Path::new("layering.rs") || rel.ends_with("twins.rs") {
            continue; // tests only
        }
        let m = module_of(rel);
        let text = std::fs::read_to_string(p).expect("readable");
        modules.insert(m.clone(), imports(&m, &code(&text)));
    }
    // Resolve each import to the deepest module that is a file.
    let resolve = |path: &Vec<String>| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains_key(p))
    };
    let mut bad = Vec::new();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, imps) in &modules {
        let edges = graph.entry(m.clone()).or_default();
        for imp in imps {
            let Some(target) = resolve(imp) else {
                // `crate::Session` and the like: a name the root re-exports, which would
                // hide which folder it comes from. (`super::X` inside an inline module of
                // this file names this file's X.)
                let inline_super = resolve(&m.iter().chain(imp).cloned().collect());
                if !imp.is_empty() && inline_super.is_none_or(|t| &t != m) {
                    bad.push(format!(
                        "{} imports {} through the crate root",
                        m.join("::"),
                        imp.join("::")
                    ));
                }
                continue;
            };
            if &target == m || m == &vec!["lib".to_string()] || m[0] == "internals" {
                continue;
            }
            let (from, to) = (m[0].as_str(), target[0].as_str());
            if from != to && (rank(to) > rank(from) || rank(to) == rank(from)) {
                bad.push(format!(
                    "{} imports {} (a folder above or beside it)",
                    m.join("::"),
                    imp.join("::")
                ));
            }
            // A folder's mod.rs is its facade; files inside may use what it declares
            // (types, re-exports) as long as the facade does not import them back.
            edges.insert(target);
        }
    }
    // Circles between files: any strongly connected part larger than one file.
    for cycle in circles(&graph) {
        bad.push(format!(
            "circle: {}",
            cycle.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" -> ")
        ));
    }
    assert!(bad.is_empty(), "the house rule is broken:\n{}", bad.join("\n"));
    assert!(
        modules.len() > 30,
        "found only {} modules: is the walk right?",
        modules.len()
    );
}

/// Strongly connected parts of more than one node (Tarjan), each in some order.
fn circles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct T<'g> {
        g: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, (usize, usize)>,
        stack: Vec<&'g Vec<String>>,
        on: BTreeSet<&'g Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    impl<'g> T<'g> {
        fn visit(&mut self, v: &'g Vec<String>) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.g.get(v).into_iter().flatten() {
                let Some((w, _)) = self.g.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).expect("visited").1 = low;
                } else if self.on.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).expect("visited").1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    part.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    self.out.push(part);
                }
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}
