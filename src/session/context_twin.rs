//! The slow twin of the context builder: pi's `buildSessionContext` as the obvious code,
//! every entry it looks at decoded whole into a [`Value`] and every message built as a
//! value (what `context.rs` did before contexts became handles). The tests below, and the
//! fuzz target `context_twin`, hold the handles built by [`Session::context_with`] and
//! decoded by `project.rs` (one by one, all at once, and written as JSON) against it.

use crate::error::{ErrorKind, Result};
use crate::flavor::Flavor;
use crate::index::{EntryPos, EntryType, Key, Role};
use crate::js::string::JsStr;
use crate::json::stringify::stringify;
use crate::json::value::{Object, Value, js_date_time};
use crate::session::context::{RetainedTail, model_object, put, take};
use crate::session::{Session, key_from_value};
use ahash::AHashMap;

/// The twin's context: messages, their entries, thinking level and model.
pub struct EagerContext<'a> {
    /// The messages, decoded.
    pub messages: Vec<Value<'a>>,
    /// The entry each came from.
    pub sources: Vec<EntryPos>,
    /// The thinking level.
    pub thinking_level: Option<Value<'a>>,
    /// The model.
    pub model: Option<Object<'a>>,
}

impl Session {
    /// The slow twin of [`Session::context_with`] + [`Session::context_values`].
    ///
    /// # Errors
    /// As [`Session::context_with`].
    pub fn context_eager(&self, leaf: &Key, tail: RetainedTail) -> Result<EagerContext<'_>> {
        self.context_eager_as(leaf, tail, Flavor::Pi)
    }

    /// The slow twin of [`Session::context_as`] (and with [`Flavor::Pi`], of
    /// [`Session::context_with`]).
    ///
    /// # Errors
    /// As [`Session::context_with`].
    pub fn context_eager_as(&self, leaf: &Key, tail: RetainedTail, flavor: Flavor) -> Result<EagerContext<'_>> {
        let mut messages = Vec::new();
        let mut sources = Vec::new();
        let (thinking_level, model) = self.eager_visit(leaf, tail, flavor, &mut |p, m| {
            sources.push(p);
            messages.push(m);
            Ok(())
        })?;
        self.check()?;
        Ok(EagerContext {
            messages,
            sources,
            thinking_level,
            model,
        })
    }

    /// The context entries, and the `retainedTail` messages that replace the kept range
    /// when `tail` is [`RetainedTail::Honor`] and the latest compaction has one.
    fn eager_entries(&self, leaf: &Key, tail: RetainedTail) -> Result<(Vec<EntryPos>, Option<EntryPos>)> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        let Some(&compaction) = path.iter().rev().find(|&&p| self.record(p).ty == EntryType::Compaction) else {
            return Ok((path, None));
        };
        let cid = &self.record(compaction).id;
        let Some(cidx) = path.iter().position(|&p| self.record(p).id == *cid) else {
            return Ok((path, None));
        };
        let cval = self.value_in(bytes, compaction)?;
        let mut out = vec![compaction];
        let retained = tail == RetainedTail::Honor && matches!(cval.get("retainedTail"), Some(Value::Array(_)));
        if !retained {
            let first_kept = key_from_value(cval.get("firstKeptEntryId"));
            let mut found = false;
            for &p in &path[..cidx] {
                if self.record(p).id == first_kept {
                    found = true;
                }
                if found {
                    let is_system = self.record(p).ty == EntryType::Message && self.message_role(p)? == Role::System;
                    if !is_system {
                        out.push(p);
                    }
                }
            }
        }
        out.extend_from_slice(&path[cidx + 1..]);
        Ok((out, retained.then_some(compaction)))
    }

    #[allow(clippy::type_complexity)]
    fn eager_visit<'a>(
        &'a self,
        leaf: &Key,
        tail: RetainedTail,
        flavor: Flavor,
        visit: &mut dyn FnMut(EntryPos, Value<'a>) -> Result<()>,
    ) -> Result<(Option<Value<'a>>, Option<Object<'a>>)> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        // Settings over the whole path: the last thinking level and the last model source
        // win, and pi reads `message.role` of every message entry (throwing where there is
        // no message), all of which the index answers without decoding.
        let mut last_thinking = None;
        let mut last_model = None;
        for &p in &path {
            match self.record(p).ty {
                EntryType::ThinkingLevelChange => last_thinking = Some(p),
                EntryType::ModelChange => last_model = Some(p),
                EntryType::Message if self.message_role(p)? == Role::Assistant => {
                    last_model = Some(p);
                }
                _ => {}
            }
        }
        let thinking_level = match last_thinking {
            None => Some(Value::str("off")),
            Some(p) => take(&mut self.value_in(bytes, p)?, "thinkingLevel"),
        };
        let model = match last_model {
            None => None,
            Some(p) if self.record(p).ty == EntryType::ModelChange => {
                let mut v = self.value_in(bytes, p)?;
                Some(model_object(take(&mut v, "provider"), take(&mut v, "modelId")))
            }
            Some(p) => {
                let mut f = self.message_fields(bytes, p, &["provider", "model"])?;
                let m = f.pop().flatten();
                let pr = f.pop().flatten();
                Some(model_object(pr, m))
            }
        };
        let (entries, retained_from) = self.eager_entries(leaf, tail)?;
        // The latest edit per target among the context entries (PiG applies none).
        let mut edits: AHashMap<Key, EntryPos> = AHashMap::new();
        for &p in &entries {
            if flavor == Flavor::Pi && self.record(p).ty == EntryType::ContextEdit {
                let v = self.value_in(bytes, p)?;
                edits.insert(key_from_value(v.get("targetId")), p);
            }
        }
        for (i, &p) in entries.iter().enumerate() {
            let rec = self.record(p);
            if rec.ty == EntryType::Compaction && i > 0 {
                continue;
            }
            let mut msgs = self.eager_messages(bytes, p)?;
            // PiG leaves out a bash execution marked `excludeFromContext`.
            let excluded = |m: &Value<'_>| {
                m.get("role").and_then(Value::as_str) == Some("bashExecution")
                    && m.get("excludeFromContext").is_some_and(Value::truthy)
            };
            if flavor == Flavor::Pig && rec.ty == EntryType::Message && msgs.iter().any(excluded) {
                msgs.clear();
            }
            if let Some(&edit) = edits.get(&rec.id.to_key()) {
                msgs = self.eager_edit(bytes, edit, msgs)?;
            }
            if i == 0 && retained_from == Some(p) {
                // seed: the retained tail stands in for the kept range, after the summary.
                let mut c = self.value_in(bytes, p)?;
                if let Some(Value::Array(tail)) = take(&mut c, "retainedTail").as_mut() {
                    msgs.append(tail);
                }
            }
            for m in msgs {
                visit(p, m)?;
            }
        }
        Ok((thinking_level, model))
    }

    /// pi's `sessionEntryToContextMessages(entry)`.
    fn eager_messages<'a>(&'a self, bytes: &'a [u8], p: EntryPos) -> Result<Vec<Value<'a>>> {
        let rec = self.record(p);
        Ok(match rec.ty {
            EntryType::Message => {
                let Some(mut m) = self.message_in(bytes, p)? else {
                    return Err(self.no_message_error(p, "undefined"));
                };
                if let Value::Object(o) = &mut m {
                    let role = o.get("role").and_then(Value::as_str).map(str::to_owned);
                    let content_nullish = matches!(o.get("content"), None | Some(Value::Null));
                    match role.as_deref() {
                        Some("system") if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::str(""));
                        }
                        Some("user" | "assistant" | "toolResult") if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::Array(Vec::new()));
                        }
                        _ => {}
                    }
                } else if matches!(m, Value::Null) {
                    return Err(self.no_message_error(p, "null"));
                }
                vec![m]
            }
            EntryType::CustomMessage => {
                let mut v = self.value_in(bytes, p)?;
                let content = match take(&mut v, "content") {
                    None | Some(Value::Null) => Value::Array(Vec::new()),
                    Some(c) => c,
                };
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("custom"));
                put(&mut o, "customType", take(&mut v, "customType"));
                o.set(JsStr::from_str("content"), content);
                put(&mut o, "display", take(&mut v, "display"));
                put(&mut o, "details", take(&mut v, "details"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                vec![Value::Object(o)]
            }
            EntryType::BranchSummary => {
                let mut v = self.value_in(bytes, p)?;
                if !v.get("summary").is_some_and(Value::truthy) {
                    return Ok(Vec::new());
                }
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("branchSummary"));
                put(&mut o, "summary", take(&mut v, "summary"));
                put(&mut o, "fromId", take(&mut v, "fromId"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                vec![Value::Object(o)]
            }
            EntryType::Compaction => {
                let mut v = self.value_in(bytes, p)?;
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("compactionSummary"));
                put(&mut o, "summary", take(&mut v, "summary"));
                put(&mut o, "tokensBefore", take(&mut v, "tokensBefore"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                match take(&mut v, "systemMessage") {
                    Some(sm) if sm.truthy() => vec![sm, Value::Object(o)],
                    _ => vec![Value::Object(o)],
                }
            }
            _ => Vec::new(),
        })
    }

    /// pi's `projectContextEntry(entry, edit)` for the messages of one entry.
    fn eager_edit<'a>(&'a self, bytes: &'a [u8], edit: EntryPos, msgs: Vec<Value<'a>>) -> Result<Vec<Value<'a>>> {
        let mut ev = self.value_in(bytes, edit)?;
        let replacement = take(&mut ev, "replacement");
        if matches!(replacement, Some(Value::Null)) {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(msgs.len());
        for mut m in msgs {
            let role = m.get("role").and_then(Value::as_str).map(str::to_owned);
            let Some(role @ ("user" | "assistant" | "toolResult" | "custom")) = role.as_deref() else {
                out.push(m);
                continue;
            };
            let Some(rep) = &replacement else {
                return Err(ErrorKind::PiThrows {
                    line: self.record(edit).line,
                    what: "context_edit without `replacement`".into(),
                    pi_message: "TypeError: Cannot read properties of undefined (reading 'content')".into(),
                }
                .into());
            };
            let content = match rep.get("content") {
                Some(Value::String(s)) if matches!(role, "assistant" | "toolResult") => {
                    let mut block = Object::new();
                    block.set(JsStr::from_str("type"), Value::str("text"));
                    block.set(JsStr::from_str("text"), Value::String(s.clone()));
                    Some(Value::Array(vec![Value::Object(block)]))
                }
                c => c.cloned(),
            };
            if let Value::Object(o) = &mut m {
                match content {
                    Some(c) => o.set(JsStr::from_str("content"), c),
                    None => {
                        o.remove("content");
                    }
                }
            }
            out.push(m);
        }
        Ok(out)
    }
}

// ----- the comparison, for the tests below and the fuzz target ----------------------

/// Everything the handles give for one leaf, as text: messages (decoded one by one,
/// all at once, and as `context --json` writes them), sources, settings; or the error.
fn lazy(s: &Session, leaf: &Key, tail: RetainedTail, flavor: Flavor) -> std::result::Result<String, String> {
    let ctx = match flavor {
        Flavor::Pi => s.context_with(leaf, tail),
        Flavor::Pig => s.context_as(leaf, flavor),
    }
    .map_err(|e| e.to_string())?;
    let all = s.context_values(&ctx).map_err(|e| e.to_string())?;
    let one: Vec<Value<'_>> = ctx
        .messages
        .iter()
        .map(|m| s.message(m))
        .collect::<Result<_>>()
        .map_err(|e| e.to_string())?;
    let all: Vec<String> = all.iter().map(stringify).collect();
    let one: Vec<String> = one.iter().map(stringify).collect();
    assert_eq!(all, one, "decoded all at once and one by one");
    let mut streamed = Vec::new();
    s.for_each_message(&ctx, &mut |v| {
        streamed.push(stringify(&v));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    assert_eq!(all, streamed, "decoded all at once and window by window");
    let mut json = Vec::new();
    s.write_context_json(&ctx, &mut json).map_err(|e| e.to_string())?;
    let sources: Vec<EntryPos> = ctx.messages.iter().map(|m| m.entry).collect();
    Ok(render(
        all,
        sources,
        ctx.thinking_level.as_ref(),
        ctx.model.clone(),
        String::from_utf8(json).expect("UTF-8 JSON"),
    ))
}

fn eager(s: &Session, leaf: &Key, tail: RetainedTail, flavor: Flavor) -> std::result::Result<String, String> {
    let c = s.context_eager_as(leaf, tail, flavor).map_err(|e| e.to_string())?;
    let messages: Vec<String> = c.messages.iter().map(stringify).collect();
    // `context --json`: JSON.stringify({messages, thinkingLevel, model}).
    let mut o = Object::new();
    o.set(JsStr::from_str("messages"), Value::Array(c.messages.clone()));
    if let Some(t) = &c.thinking_level {
        o.set(JsStr::from_str("thinkingLevel"), t.clone());
    }
    o.set(
        JsStr::from_str("model"),
        c.model.clone().map_or(Value::Null, Value::Object),
    );
    let json = stringify(&Value::Object(o));
    Ok(render(messages, c.sources, c.thinking_level.as_ref(), c.model, json))
}

fn render(
    messages: Vec<String>,
    sources: Vec<EntryPos>,
    thinking: Option<&Value<'_>>,
    model: Option<Object<'_>>,
    json: String,
) -> String {
    format!(
        "{messages:?}\n{sources:?}\n{:?}\n{:?}\n{json}",
        thinking.map(stringify),
        model.map(|m| stringify(&Value::Object(m)))
    )
}

/// Hold the handles against the twin (panics where they differ) for the file's leaf, `null`, and (up to `most`)
/// every entry as leaf, with both `retainedTail` rules and PiG's. Returns the leaves compared.
pub fn compare_with_twin(s: &Session, name: &str, most: usize) -> usize {
    let mut leaves = vec![s.leaf().clone(), Key::Null, Key::Undefined];
    leaves.extend(s.entries().iter().take(most).map(|&p| s.record(p).id.to_key()));
    for leaf in &leaves {
        for (tail, flavor) in [
            (RetainedTail::Ignore, Flavor::Pi),
            (RetainedTail::Honor, Flavor::Pi),
            (RetainedTail::Ignore, Flavor::Pig),
        ] {
            assert_eq!(
                lazy(s, leaf, tail, flavor),
                eager(s, leaf, tail, flavor),
                "{name}: leaf {leaf:?}, {tail:?}, {flavor:?}"
            );
        }
    }
    leaves.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn compare(s: &Session, name: &str, most: usize) -> usize {
        compare_with_twin(s, name, most)
    }

    fn jsonl(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                jsonl(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }

    /// Every fixture of the bundled corpus (valid, damaged, migrations, edits, compactions
    /// with retained tails and system messages) and the real sessions in ../shared.
    #[test]
    fn handles_decode_to_the_eager_context_on_every_fixture() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        jsonl(&root.join("corpus"), &mut files);
        let bundled = files.len();
        jsonl(&root.join("../shared/corpus"), &mut files);
        assert!(bundled > 100, "the bundled corpus is missing");
        let (mut opened, mut leaves) = (0, 0);
        for f in &files {
            let Ok(s) = Session::open(f) else { continue };
            opened += 1;
            let most = if f.starts_with(root.join("corpus")) { 200 } else { 20 };
            leaves += compare(&s, &f.display().to_string(), most);
        }
        assert!(opened > 100 && leaves > 1000, "{opened} files, {leaves} leaves");
    }

    /// Generated sessions of every shape, seeds chosen at random by proptest.
    #[test]
    fn handles_decode_to_the_eager_context_on_generated_sessions() {
        use crate::generator::{Mix, SessionSpec, write_session};
        use proptest::prelude::*;
        let cases = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(12);
        proptest!(ProptestConfig::with_cases(cases), |(seed in 0u64..1 << 40, mix in 0..3usize, kb in 4u64..400)| {
            let mix = [Mix::Realistic, Mix::SmallEntries, Mix::ImageHeavy][mix];
            let mut text = Vec::new();
            write_session(&SessionSpec { mix, ..SessionSpec::new(seed, kb << 10) }, &mut text).expect("generate");
            let s = Session::from_bytes(text).expect("opens");
            compare(&s, &format!("seed {seed} {mix:?} {kb} KB"), 40);
        });
    }

    /// The twin and the handles agree on pi's errors, each where pi raises it.
    #[test]
    fn pi_throws_where_pi_throws() {
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n";
        let cases = [
            // A message entry without `message`.
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
            // A context_edit without `replacement` that applies to a user message.
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"context_edit\",\"id\":\"e\",\"parentId\":\"a\",\"targetId\":\"a\"}\n",
            // ... that applies to a system message only: no error.
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"system\",\"content\":\"x\"}}\n{\"type\":\"context_edit\",\"id\":\"e\",\"parentId\":\"a\",\"targetId\":\"a\"}\n",
            // A null replacement drops the target.
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"context_edit\",\"id\":\"e\",\"parentId\":\"a\",\"targetId\":\"a\",\"replacement\":null}\n",
            // A string replacement of an assistant message becomes a text block.
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"assistant\",\"content\":[]}}\n{\"type\":\"context_edit\",\"id\":\"e\",\"parentId\":\"a\",\"targetId\":\"a\",\"replacement\":{\"content\":\"y\"}}\n",
            // A branch summary whose summary is falsy yields nothing; 0 and "" both.
            "{\"type\":\"branch_summary\",\"id\":\"b\",\"parentId\":null,\"summary\":0}\n{\"type\":\"branch_summary\",\"id\":\"c\",\"parentId\":\"b\",\"summary\":\"\"}\n{\"type\":\"branch_summary\",\"id\":\"d\",\"parentId\":\"c\",\"summary\":\"\\u0000\"}\n",
            // A compaction with a system message, and duplicate keys (the last one wins).
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\"}}\n{\"type\":\"compaction\",\"id\":\"c\",\"parentId\":\"a\",\"summary\":\"s\",\"firstKeptEntryId\":\"x\",\"firstKeptEntryId\":\"a\",\"systemMessage\":0,\"systemMessage\":{\"role\":\"system\",\"content\":\"p\"},\"retainedTail\":[{\"role\":\"user\",\"content\":\"t\"},7]}\n",
        ];
        for (i, c) in cases.iter().enumerate() {
            let s = Session::from_bytes(format!("{head}{c}").into_bytes()).expect("opens");
            compare(&s, &format!("case {i}"), 10);
        }
        let s = Session::from_bytes(format!("{head}{}", cases[1]).into_bytes()).expect("opens");
        let e = s.context(s.leaf()).expect_err("pi throws");
        assert!(e.to_string().contains("context_edit without `replacement`"), "{e}");
    }
}
