//! The check that a message is one pi could have written (`pi-session append`, and any
//! face that appends a message a person gives it): a known `role` and the
//! fields pi's types give that role (`pi-ai`'s `Message`, `pi-coding-agent`'s custom
//! messages, 1.6.0), content blocks of the right kinds. Optional fields are not checked
//! beyond being absent or of their type where pi reads them; unknown fields are kept, as
//! pi keeps them.

use crate::js::string::JsStr;
use crate::json::Value;

/// The kinds of a field's value that pi's types allow.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Num,
    Bool,
    Obj,
    /// A string or `null`.
    StrOrNull,
    /// A number, or absent (`exitCode: number | undefined`).
    OptNum,
}

fn has(v: Option<&Value<'_>>, ty: Ty) -> bool {
    matches!(
        (ty, v),
        (Ty::Str | Ty::StrOrNull, Some(Value::String(_)))
            | (Ty::StrOrNull, Some(Value::Null))
            | (Ty::Num | Ty::OptNum, Some(Value::Number(_)))
            | (Ty::OptNum, None)
            | (Ty::Bool, Some(Value::Bool(_)))
            | (Ty::Obj, Some(Value::Object(_)))
    )
}

fn ty_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Str => "a string",
        Ty::Num => "a number",
        Ty::Bool => "true or false",
        Ty::Obj => "an object",
        Ty::StrOrNull => "a string or null",
        Ty::OptNum => "a number or absent",
    }
}

fn fields(m: &Value<'_>, role: &str, want: &[(&str, Ty)]) -> Result<(), String> {
    for &(k, ty) in want {
        if !has(m.get(k), ty) {
            return Err(match m.get(k) {
                None => format!("a {role} message needs `{k}` ({})", ty_name(ty)),
                Some(_) => format!("`{k}` of a {role} message must be {}", ty_name(ty)),
            });
        }
    }
    Ok(())
}

/// Content: a string (when `string_ok`) or an array of blocks whose `type` is in `blocks`,
/// each with its fields.
fn content(m: &Value<'_>, role: &str, string_ok: bool, blocks: &[&str]) -> Result<(), String> {
    let shape = || {
        let list = blocks.join(", ");
        if string_ok {
            format!("`content` of a {role} message must be a string or an array of {list} blocks")
        } else {
            format!("`content` of a {role} message must be an array of {list} blocks")
        }
    };
    match m.get("content") {
        Some(Value::String(_)) if string_ok => Ok(()),
        Some(Value::Array(items)) => {
            for (i, b) in items.iter().enumerate() {
                let ty = b.get("type").and_then(Value::as_str);
                let Some(ty) = ty.filter(|t| blocks.contains(t)) else {
                    return Err(format!("{} (block {i} is not one)", shape()));
                };
                let want: &[(&str, Ty)] = match ty {
                    "text" => &[("text", Ty::Str)],
                    "image" => &[("data", Ty::Str), ("mimeType", Ty::Str)],
                    "thinking" => &[("thinking", Ty::Str)],
                    "toolCall" => &[("id", Ty::Str), ("name", Ty::Str), ("arguments", Ty::Obj)],
                    _ => &[],
                };
                fields(b, &format!("{ty} block in a {role}"), want)?;
            }
            Ok(())
        }
        None => Err(format!("a {role} message needs `content`")),
        Some(_) => Err(shape()),
    }
}

/// The roles pi writes.
pub const ROLES: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "system",
];

/// Whether pi could have written `m` as a message entry's `message`; why not.
pub fn check(m: &Value<'_>) -> Result<(), String> {
    let role = match m.get("role") {
        None => return Err(format!("no `role` (one of {})", ROLES.join(", "))),
        Some(r) => match r.as_str() {
            Some(r) if ROLES.contains(&r) => r,
            _ => {
                return Err(format!(
                    "unknown role {} (pi writes {})",
                    r.stringify(),
                    ROLES.join(", ")
                ));
            }
        },
    };
    if m.get("timestamp").is_some() && !has(m.get("timestamp"), Ty::Num) {
        return Err("`timestamp` must be a number (milliseconds since 1970)".into());
    }
    match role {
        "user" => content(m, role, true, &["text", "image"]),
        "assistant" => {
            content(m, role, false, &["text", "thinking", "toolCall"])?;
            fields(
                m,
                role,
                &[
                    ("api", Ty::Str),
                    ("provider", Ty::Str),
                    ("model", Ty::Str),
                    ("usage", Ty::Obj),
                    ("stopReason", Ty::Str),
                ],
            )
        }
        "toolResult" => {
            fields(
                m,
                role,
                &[("toolCallId", Ty::Str), ("toolName", Ty::Str), ("isError", Ty::Bool)],
            )?;
            content(m, role, false, &["text", "image"])
        }
        "bashExecution" => fields(
            m,
            role,
            &[
                ("command", Ty::Str),
                ("output", Ty::Str),
                ("exitCode", Ty::OptNum),
                ("cancelled", Ty::Bool),
                ("truncated", Ty::Bool),
            ],
        ),
        "custom" => {
            fields(m, role, &[("customType", Ty::Str), ("display", Ty::Bool)])?;
            content(m, role, true, &["text", "image"])
        }
        "branchSummary" => fields(m, role, &[("summary", Ty::Str), ("fromId", Ty::StrOrNull)]),
        "compactionSummary" => fields(m, role, &[("summary", Ty::Str), ("tokensBefore", Ty::Num)]),
        // "system": the instruction text.
        _ => content(m, role, true, &["text"]),
    }
}

/// pi's messages carry `timestamp` (`Date.now()`): add it, last, when it is missing.
pub fn fill_timestamp(m: &mut Value<'_>) {
    if let Value::Object(o) = m
        && o.get("timestamp").is_none()
    {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        o.set(JsStr::from_str("timestamp"), Value::Number(ms as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Result<(), String> {
        check(&Value::parse(text.as_bytes()).expect("json"))
    }

    #[test]
    fn what_pi_writes_passes() {
        for m in [
            r#"{"role":"user","content":"hi","timestamp":1}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","id":"c","name":"read","arguments":{}}],"api":"x","provider":"p","model":"m","usage":{},"stopReason":"stop","timestamp":2}"#,
            r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":3}"#,
            r#"{"role":"bashExecution","command":"ls","output":"","cancelled":false,"truncated":false,"timestamp":4}"#,
            r#"{"role":"custom","customType":"note","content":"x","display":true,"timestamp":5}"#,
            r#"{"role":"branchSummary","summary":"s","fromId":null,"timestamp":6}"#,
            r#"{"role":"compactionSummary","summary":"s","tokensBefore":10,"timestamp":7}"#,
            r#"{"role":"system","content":"be brief"}"#,
        ] {
            assert_eq!(ok(m), Ok(()), "{m}");
        }
    }

    #[test]
    fn what_pi_never_writes_fails() {
        for (m, why) in [
            ("{}", "no `role`"),
            (r#"{"role":"wizard"}"#, "unknown role \"wizard\""),
            (r#"{"role":7}"#, "unknown role 7"),
            (r#"{"role":"user"}"#, "needs `content`"),
            (r#"{"role":"user","content":7}"#, "must be a string or an array"),
            (
                r#"{"role":"user","content":[{"type":"toolCall"}]}"#,
                "block 0 is not one",
            ),
            (r#"{"role":"user","content":[{"type":"text"}]}"#, "needs `text`"),
            (
                r#"{"role":"user","content":"x","timestamp":"now"}"#,
                "`timestamp` must be a number",
            ),
            (r#"{"role":"assistant","content":"hi"}"#, "must be an array"),
            (r#"{"role":"assistant","content":[]}"#, "needs `api`"),
            (
                r#"{"role":"toolResult","toolCallId":"c","toolName":"t","isError":"no","content":[]}"#,
                "`isError`",
            ),
            (
                r#"{"role":"bashExecution","command":"ls","output":"","exitCode":"1","cancelled":false,"truncated":false}"#,
                "`exitCode`",
            ),
            (r#"{"role":"branchSummary","summary":"s"}"#, "`fromId`"),
        ] {
            let e = ok(m).expect_err(m);
            assert!(e.contains(why), "{m}: {e}");
        }
    }

    #[test]
    fn a_missing_timestamp_is_filled_in_last() {
        let mut v = Value::parse(br#"{"role":"user","content":"hi"}"#)
            .expect("json")
            .into_owned();
        fill_timestamp(&mut v);
        let s = v.stringify();
        assert!(s.starts_with(r#"{"role":"user","content":"hi","timestamp":1"#), "{s}");
        let mut kept = Value::parse(br#"{"role":"user","content":"hi","timestamp":5}"#).expect("json");
        fill_timestamp(&mut kept);
        assert_eq!(kept.stringify(), r#"{"role":"user","content":"hi","timestamp":5}"#);
    }
}
