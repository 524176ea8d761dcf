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
fn naive_lines(m: &Matcher, text: &str, at_most: usize, context: usize) -> Vec<HitLine> {
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
    let mut groups: Vec<(usize, usize, Vec<(usize, usize)>)> = Vec::new();
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
        for k in *a..=*b {
            shown[k] = true;
        }
    }
    let mut ctx = vec![false; spans.len()];
    for (a, b, _) in &groups {
        for k in a.saturating_sub(context)..*a {
            ctx[k] = true;
        }
        for k in b + 1..(b + 1 + context).min(spans.len()) {
            ctx[k] = true;
        }
    }
    let mut k = 0;
    while k < spans.len() {
        if let Some(g) = is_match[k] {
            let (a, b, ms) = &groups[g];
            let (s, e) = (spans[*a].0, spans[*b].1);
            out.push(HitLine {
                offset: s,
                text: text[s..e].to_owned(),
                matches: ms.clone(),
            });
            k = b + 1;
        } else if ctx[k] && !shown[k] {
            let (s, e) = spans[k];
            out.push(HitLine {
                offset: s,
                text: text[s..e].to_owned(),
                matches: Vec::new(),
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
        let Some(base) = hit_of(&s, q, &h, v.get("timestamp")) else {
            continue;
        };
        for (field, block, value) in searched(&v, rec.ty, rec.role, q.fields) {
            let mut strs = Vec::new();
            strings_in(value, &mut strs);
            for t in strs {
                if left == 0 {
                    return Ok(hits);
                }
                let lines = naive_lines(&q.matcher, &t.to_str_lossy(), left, q.context);
                if lines.is_empty() {
                    continue;
                }
                let hit = Hit {
                    field,
                    block,
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
