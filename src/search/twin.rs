//! The slow twin of the search: every entry decoded whole with the full decoder
//! (`Session::value`), its searched strings found by name in the decoded value, and the
//! regex run on every line of every one of them, one line at a time. No prefilter, no
//! structural walk, no skipping: the definition the fast path is held to (unit tests,
//! the property test in `tests/it/search.rs`, the `search` fuzz target).

use super::{FieldKind, Fields, Hit, HitLine, Matcher, Query, head, hit_of, strings_in};
use crate::error::Result;
use crate::index::{EntryType, Role};
use crate::json::Value;
use crate::session::Session;
use crate::source::Source;

/// The searched strings of a decoded entry, in the fixed order of `fields.rs`.
fn searched<'v, 'a>(
    v: &'v Value<'a>,
    ty: EntryType,
    role: Role,
    want: Fields,
) -> Vec<(FieldKind, Option<u32>, &'v Value<'a>)> {
    let mut out = Vec::new();
    let string = |v: Option<&'v Value<'a>>| v.filter(|v| matches!(v, Value::String(_)));
    let content = |c: Option<&'v Value<'a>>, field: FieldKind, assistant: bool, out: &mut Vec<_>| match c {
        Some(s @ Value::String(_)) => out.push((field, None, s)),
        Some(Value::Array(blocks)) => {
            for (k, b) in blocks.iter().enumerate() {
                let Some(o) = b.as_object() else { continue };
                let ty = o.get("type").and_then(Value::as_js_str).map(|s| s.as_bytes().to_vec());
                match ty.as_deref() {
                    Some(b"text") if string(o.get("text")).is_some() => {
                        out.push((field, Some(k as u32), o.get("text").expect("checked")));
                    }
                    Some(b"thinking") if assistant && want.thinking => {
                        if let Some(t) = string(o.get("thinking")) {
                            out.push((FieldKind::Thinking, Some(k as u32), t));
                        }
                    }
                    Some(b"toolCall") if assistant && want.tool_calls => {
                        if let Some(a) = o.get("arguments") {
                            out.push((FieldKind::ToolCall, Some(k as u32), a));
                        }
                    }
                    Some(b"tool_use") if assistant && want.tool_calls => {
                        if let Some(a) = o.get("input") {
                            out.push((FieldKind::ToolCall, Some(k as u32), a));
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    };
    match ty {
        EntryType::Message => {
            let Some(m) = v.get("message").filter(|m| m.as_object().is_some()) else {
                return out;
            };
            match role {
                Role::User | Role::Custom | Role::HookMessage => {
                    content(m.get("content"), FieldKind::Text, false, &mut out)
                }
                Role::Assistant => content(m.get("content"), FieldKind::Text, true, &mut out),
                Role::ToolResult if want.tool_results => {
                    content(m.get("content"), FieldKind::ToolResult, false, &mut out)
                }
                Role::BashExecution => {
                    if let Some(c) = string(m.get("command")) {
                        out.push((FieldKind::Command, None, c));
                    }
                    if want.tool_results
                        && let Some(o) = string(m.get("output"))
                    {
                        out.push((FieldKind::Output, None, o));
                    }
                }
                Role::BranchSummary | Role::CompactionSummary => {
                    if let Some(s) = string(m.get("summary")) {
                        out.push((FieldKind::Summary, None, s));
                    }
                }
                _ => {}
            }
        }
        EntryType::Compaction | EntryType::BranchSummary => {
            if let Some(s) = string(v.get("summary")) {
                out.push((FieldKind::Summary, None, s));
            }
        }
        EntryType::CustomMessage => content(v.get("content"), FieldKind::Text, false, &mut out),
        EntryType::SessionInfo => {
            if let Some(s) = string(v.get("name")) {
                out.push((FieldKind::Name, None, s));
            }
        }
        EntryType::Label => {
            if let Some(s) = string(v.get("label")) {
                out.push((FieldKind::Label, None, s));
            }
        }
        _ => {}
    }
    out
}

/// The matching lines of `text`, the obvious way: each line alone (with `-U`, each
/// match of the whole text with the lines it touches, overlapping ones merged), then
/// context lines around them.
fn naive_lines(m: &Matcher, text: &str, at_most: usize, (before, after): (usize, usize)) -> Vec<HitLine> {
    // Line spans as `split('\n')` gives them.
    let mut spans = Vec::new();
    let mut start = 0;
    for l in text.split('\n') {
        spans.push((start, start + l.len()));
        start += l.len() + 1;
    }
    let line_of = |at: usize| {
        spans
            .iter()
            .position(|&(s, e)| at >= s && at <= e)
            .expect("inside the text")
    };
    // (first line, last line, matches)
    type Group = (usize, usize, Vec<(usize, usize)>);
    let mut groups: Vec<Group> = Vec::new();
    if m.multiline {
        for x in m.re.find_iter(text) {
            let a = line_of(x.start());
            let last = if x.end() > x.start() { x.end() - 1 } else { x.start() };
            let b = line_of(last).max(a);
            match groups.last_mut() {
                Some(g) if a <= g.1 => {
                    g.1 = g.1.max(b);
                    g.2.push((x.start(), x.end()));
                }
                _ => groups.push((a, b, vec![(x.start(), x.end())])),
            }
        }
    } else {
        for (k, &(s, e)) in spans.iter().enumerate() {
            let ms: Vec<(usize, usize)> =
                m.re.find_iter(&text[s..e])
                    .map(|x| (s + x.start(), s + x.end()))
                    .collect();
            if !ms.is_empty() {
                groups.push((k, k, ms));
            }
        }
    }
    groups.truncate(at_most);
    let mut out = Vec::new();
    let mut shown = vec![false; spans.len()];
    let mut is_match = vec![None; spans.len()];
    for (g, (a, b, _)) in groups.iter().enumerate() {
        is_match[*a] = Some(g);
        shown[*a..=*b].fill(true);
    }
    let mut ctx = vec![false; spans.len()];
    for (a, b, _) in &groups {
        ctx[a.saturating_sub(before)..*a].fill(true);
        ctx[(b + 1).min(spans.len())..(b + 1 + after).min(spans.len())].fill(true);
    }
    let mut k = 0;
    while k < spans.len() {
        if let Some(g) = is_match[k] {
            let (a, b, ms) = &groups[g];
            let (s, e) = (spans[*a].0, spans[*b].1);
            out.push(HitLine {
                offset: s,
                text: text[s..e].to_owned(),
                matches: ms.iter().copied().take(super::MATCHES_KEPT).collect(),
                more_matches: ms.len() > super::MATCHES_KEPT,
            });
            k = b + 1;
        } else if ctx[k] && !shown[k] {
            let (s, e) = spans[k];
            out.push(HitLine {
                offset: s,
                text: text[s..e].to_owned(),
                matches: Vec::new(),
                more_matches: false,
            });
            k += 1;
        } else {
            k += 1;
        }
    }
    out
}

/// Search a session the slow, obvious way.
///
/// # Errors
/// As [`super::search_source`].
pub fn search_source_slow(source: Source, q: &Query) -> Result<Vec<Hit>> {
    let s = Session::from_source(source, super::open_options(super::FileOptions::default()))?;
    let branch = super::Branch::of(&s);
    let mut hits = Vec::new();
    let mut left = q.max_per_session.unwrap_or(usize::MAX);
    for k in 0..s.entries_len() {
        let pos = s.entry_at(k).expect("k < entries_len");
        let Some(h) = head(&s, q, &branch, pos) else { continue };
        let v = s.value(pos)?;
        let rec = s.record(pos);
        let Some(base) = hit_of(q, &h, v.get("timestamp")) else {
            continue;
        };
        for (field, block, value) in searched(&v, rec.ty, rec.role, q.fields) {
            let mut strs = Vec::new();
            strings_in(value, &mut strs);
            for t in strs {
                if left == 0 {
                    return Ok(hits);
                }
                let lines = naive_lines(&q.matcher, &t.to_str_lossy(), left, (q.before, q.after));
                if lines.is_empty() {
                    continue;
                }
                let hit = Hit {
                    field,
                    block,
                    target_id: (field == FieldKind::Label)
                        .then(|| {
                            v.get("targetId")
                                .and_then(Value::as_js_str)
                                .map(|s| s.to_str_lossy().into_owned())
                        })
                        .flatten(),
                    lines,
                    ..base.clone()
                };
                left -= hit.match_count();
                hits.push(hit);
            }
        }
    }
    Ok(hits)
}

/// Run the fast path and the twin on the same bytes and say how they differ (`Ok` when
/// they agree, errors included).
///
/// # Errors
/// A description of the first difference.
pub fn check_against_twin(bytes: &[u8], q: &Query) -> std::result::Result<(), String> {
    let fast = super::search_source(Source::from_bytes(bytes.to_vec()), q, super::FileOptions::default());
    let slow = search_source_slow(Source::from_bytes(bytes.to_vec()), q);
    // The search map (what a search with a cache runs): the same hits, or the same error.
    // The sketches let a file with hits be read: those a search of only the hit's field
    // reads, and those the query reads.
    if let (Ok(hits), Some(entry), Some(probe)) = (&slow, super::map::entry_of(bytes), &q.matcher.probe) {
        for h in hits {
            let alone = super::Fields {
                thinking: h.field == FieldKind::Thinking,
                tool_calls: h.field == FieldKind::ToolCall,
                tool_results: matches!(h.field, FieldKind::ToolResult | FieldKind::Output),
            };
            if probe.may_match(&entry, alone) != Some(true) || super::map::may_match(&entry, q) != Some(true) {
                return Err(format!("the sketch passes over a file with a hit: {h:?}"));
            }
        }
    }
    match (super::map::search_bytes_mapped(bytes, q), &slow) {
        (Ok(Some(m)), Ok(s)) => same("search map", &m, s)?,
        (Err(a), Err(b)) if a.kind().to_string() == b.kind().to_string() => {}
        (m, s) => return Err(format!("search map: {m:?}\ntwin: {s:?}")),
    }
    match (fast, slow) {
        (Ok(f), Ok(s)) => same("fast path", &f, &s),
        // A file that is no session: the fast path may say nothing without indexing it.
        (Ok(f), Err(_)) if f.is_empty() => Ok(()),
        (Err(a), Err(b)) if a.kind().to_string() == b.kind().to_string() => Ok(()),
        (f, s) => Err(format!("fast path: {f:?}\ntwin: {s:?}")),
    }
}

/// `Ok` when `name`'s hits `a` are the twin's `b`, else where they first differ.
fn same(name: &str, a: &[Hit], b: &[Hit]) -> std::result::Result<(), String> {
    if a == b {
        return Ok(());
    }
    let k = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    Err(format!(
        "{name}: {} hits, twin: {} hits; first difference at {k}:\n{name}: {:?}\ntwin: {:?}",
        a.len(),
        b.len(),
        a.get(k),
        b.get(k)
    ))
}

/// Sessions and patterns made to trip a raw-bytes search: strings written with every JSON
/// escape a writer may choose, the pattern's words inside keys, ids, signatures, image
/// data and extension state, invalid UTF-8, lone surrogates, line breaks and quotes.
pub mod hostile {
    use super::super::{Case, Fields, Pattern, Query};

    /// Fragments strings are made of.
    const FRAGMENTS: &[&str] = &[
        "hello",
        "Hello",
        "HELLO",
        "café",
        "cafe\u{301}",
        "say \"hi\"",
        "\"",
        "\\",
        "/",
        "\n",
        "\t",
        "\r",
        "\u{1}",
        "\u{7f}",
        "😀",
        "naïve",
        "word",
        "words",
        "sword",
        " ",
        "a",
        "b",
        "x y",
        "\u{fffd}",
        "end",
        "start",
        "K",
        "\u{212a}",
        "ß",
        "ẞ",
        "line\nbreak",
        "tab\there",
        "\u{2028}",
        "\u{85}",
        "path/to/x",
        "0123",
    ];

    /// Patterns (with flags) that cover what the prefilter has to get right.
    const PATTERNS: &[(&str, bool, bool, bool)] = &[
        // (pattern, fixed, word, multiline)
        ("hello", false, false, false),
        ("Hello", false, false, false),
        ("café", true, false, false),
        ("say \"hi\"", true, false, false),
        ("\"", true, false, false),
        ("\\", true, false, false),
        ("/", true, false, false),
        ("path/to", true, false, false),
        ("line\nbreak", true, false, true),
        ("a\\nb|x\\sy", false, false, true),
        ("word", false, true, false),
        ("h.llo", false, false, false),
        ("😀", true, false, false),
        ("^start", false, false, false),
        ("end$", false, false, false),
        ("\\Aword", false, false, false),
        ("[0-9]+", false, false, false),
        ("\u{fffd}", true, false, false),
        ("k", false, false, false),
        ("ss", false, false, false),
        ("tab\there", true, false, false),
        ("\u{1}", true, false, false),
        ("x", false, false, true),
        ("", true, false, false),
        ("(?s)hello.*word", false, false, true),
        ("e\u{301}", true, false, false),
    ];

    /// A byte source: the fuzzer's data, or a generator's.
    pub struct Bytes<'a> {
        data: &'a [u8],
        at: usize,
    }

    impl<'a> Bytes<'a> {
        /// Read from `data`; zeros once it runs out.
        pub fn new(data: &'a [u8]) -> Self {
            Bytes { data, at: 0 }
        }
        fn next(&mut self) -> u8 {
            let b = self.data.get(self.at).copied().unwrap_or(0);
            self.at += 1;
            b
        }
        fn pick<T: Copy>(&mut self, from: &[T]) -> T {
            from[usize::from(self.next()) % from.len()]
        }
        fn done(&self) -> bool {
            self.at >= self.data.len()
        }
    }

    /// A string of fragments, written as JSON with escapes chosen by the bytes: raw where
    /// allowed, short escapes, `\u` escapes (surrogate pairs too), and now and then a lone
    /// surrogate or a byte that is not UTF-8.
    fn json_string(b: &mut Bytes<'_>, out: &mut Vec<u8>) {
        out.push(b'"');
        let n = b.next() % 6;
        for _ in 0..n {
            let frag = b.pick(FRAGMENTS);
            for c in frag.chars() {
                let style = b.next() % 8;
                match c {
                    '"' => out.extend_from_slice(if style < 6 { b"\\\"" } else { b"\\u0022" }),
                    '\\' => out.extend_from_slice(if style < 6 { b"\\\\" } else { b"\\u005C" }),
                    '\n' => out.extend_from_slice(if style < 6 { b"\\n" } else { b"\\u000a" }),
                    '\t' => out.extend_from_slice(if style < 6 { b"\\t" } else { b"\\u0009" }),
                    '\r' => out.extend_from_slice(b"\\r"),
                    '/' if style == 0 => out.extend_from_slice(b"\\/"),
                    c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
                    c if style == 7 => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            out.extend_from_slice(format!("\\u{:04X}", u).as_bytes());
                        }
                    }
                    c => {
                        let mut tmp = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                    }
                }
            }
            match b.next() % 32 {
                0 => out.extend_from_slice(b"\\ud83d"),
                1 => out.push(0xff),
                2 => out.extend_from_slice(b"\\udc00x"),
                _ => {}
            }
        }
        out.push(b'"');
    }

    fn string(b: &mut Bytes<'_>) -> Vec<u8> {
        let mut v = Vec::new();
        json_string(b, &mut v);
        v
    }

    /// The pattern words where no search must find them: keys, ids, signatures, data.
    fn noise(b: &mut Bytes<'_>) -> String {
        let w = b
            .pick(FRAGMENTS)
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let w: String = w.chars().filter(|c| (*c as u32) >= 0x20).collect();
        w
    }

    /// A session file.
    pub fn session(b: &mut Bytes<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(
            b"{\"type\":\"session\",\"version\":3,\"id\":\"hello-word\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/hello\"}\n",
        );
        let mut parent = String::from("null");
        let mut k = 0u32;
        while !b.done() && k < 40 {
            k += 1;
            let id = format!("{:08x}", k.wrapping_mul(2_654_435_761));
            let par = if b.next().is_multiple_of(5) {
                "null".to_owned()
            } else {
                parent.clone()
            };
            let ts = format!("2025-01-{:02}T00:00:{:02}.000Z", 1 + k % 28, k % 60);
            let head = format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",");
            let mut line = Vec::new();
            let s1 = string(b);
            let s2 = string(b);
            let nz = noise(b);
            match b.next() % 12 {
                0 => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"message\":{\"role\":\"user\",\"content\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}}");
                }
                1 => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(
                        format!(
                            "}},{{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"{nz}{nz}\"}},{{\"type\":\"image\",\"media_type\":\"{nz}\",\"url\":\"{nz}\"}},{{\"text\":"
                        )
                        .as_bytes(),
                    );
                    line.extend_from_slice(&s2);
                    line.extend_from_slice(b",\"type\":\"text\"}]}}");
                }
                2 => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(
                        b"\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":",
                    );
                    line.extend_from_slice(&s1);
                    // pi's blocks, or PiG's (`signature`, `tool_use` with `input`), or a
                    // call whose arguments sit under the other program's name.
                    let (sig, call, args) = match b.next() % 4 {
                        0 | 1 => ("thinkingSignature", "toolCall", "arguments"),
                        2 => ("signature", "tool_use", "input"),
                        _ => ("signature", "tool_use", "arguments"),
                    };
                    line.extend_from_slice(format!(",\"{sig}\":\"{nz}\"}},{{\"type\":\"{call}\",\"id\":\"{nz}\",\"name\":\"{nz}\",\"{args}\":{{\"{nz}\":").as_bytes());
                    line.extend_from_slice(&s2);
                    line.extend_from_slice(b",\"n\":[1,{\"deep\":");
                    line.extend_from_slice(&string(b));
                    line.extend_from_slice(b"}]}},{\"type\":\"text\",\"text\":");
                    line.extend_from_slice(&string(b));
                    line.extend_from_slice(b"}],\"provider\":\"hello\",\"model\":\"word\"}}");
                }
                3 => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"x\",\"content\":[{\"type\":\"text\",\"text\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}],\"isError\":false}}");
                }
                4 => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"message\":{\"role\":\"bashExecution\",\"command\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b",\"output\":");
                    line.extend_from_slice(&s2);
                    line.extend_from_slice(b",\"command\":");
                    // A duplicate key: the last one wins.
                    line.extend_from_slice(&string(b));
                    line.extend_from_slice(b"}}");
                }
                5 => {
                    line.extend_from_slice(format!("{{\"type\":\"compaction\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",\"summary\":").as_bytes());
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(format!(",\"firstKeptEntryId\":\"{nz}\",\"tokensBefore\":1}}").as_bytes());
                }
                6 => {
                    line.extend_from_slice(format!("{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",\"customType\":\"{nz}\",\"data\":{{\"text\":").as_bytes());
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}}");
                }
                7 => {
                    line.extend_from_slice(format!("{{\"type\":\"custom_message\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",\"customType\":\"{nz}\",\"display\":true,\"content\":").as_bytes());
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}");
                }
                8 => {
                    line.extend_from_slice(format!("{{\"type\":\"session_info\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",\"name\":").as_bytes());
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}");
                }
                9 => {
                    line.extend_from_slice(format!("{{\"type\":\"label\",\"id\":\"{id}\",\"parentId\":{par},\"timestamp\":\"{ts}\",\"targetId\":\"{nz}\",\"label\":").as_bytes());
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}");
                }
                10 => {
                    // An escaped key, a system message, and a line that is no JSON.
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"m\\u0065ssage\":{\"role\":\"custom\",\"c\\u006fntent\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}}\n{\"type\":\"message\",\"message\":{\"role\":\"system\",\"content\":");
                    line.extend_from_slice(&s2);
                    line.extend_from_slice(b"}}\n{\"broken\":");
                    line.extend_from_slice(&string(b));
                }
                _ => {
                    line.extend_from_slice(head.as_bytes());
                    line.extend_from_slice(b"\"message\":{\"role\":\"branchSummary\",\"summary\":");
                    line.extend_from_slice(&s1);
                    line.extend_from_slice(b"}}");
                }
            }
            out.extend_from_slice(&line);
            out.push(b'\n');
            parent = format!("\"{id}\"");
        }
        out
    }

    /// A query: one of the tricky patterns, with flags and options chosen by the bytes.
    pub fn query(b: &mut Bytes<'_>) -> Query {
        let (p, fixed, word, multiline) = b.pick(PATTERNS);
        let flags = b.next();
        let mut pattern = Pattern::new(p);
        pattern.fixed = fixed;
        pattern.word = word || flags & 1 != 0 && !p.is_empty();
        pattern.multiline = multiline || flags & 2 != 0;
        pattern.case = match flags >> 2 & 3 {
            0 => Case::Smart,
            1 => Case::Sensitive,
            _ => Case::Insensitive,
        };
        if flags & 16 != 0 {
            pattern.patterns.push(b.pick(PATTERNS).0.to_owned());
        }
        let matcher = match pattern.compile() {
            Ok(m) => m,
            Err(_) => Pattern::new("hello").compile().expect("a valid pattern"),
        };
        let mut q = Query::new(matcher);
        let o = b.next();
        q.fields = Fields {
            thinking: o & 1 != 0,
            tool_calls: o & 2 != 0,
            tool_results: o & 4 != 0,
        };
        q.branch_only = o & 8 != 0;
        // Context before and after, 0 to 3 lines each, from one byte.
        let c = b.next();
        q.before = usize::from(c & 3);
        q.after = usize::from(c >> 2 & 3);
        if o & 64 != 0 {
            q.max_per_session = Some(usize::from(b.next() % 5));
        }
        if o & 128 != 0 {
            q.since = Some(1_735_689_600_000.0 + f64::from(b.next()) * 86_400_000.0 / 16.0);
        }
        q
    }
}
