//! What the text pools hold: synthetic TypeScript, Rust, Python, JSON and Markdown
//! files, command output, search results and assistant prose.

use std::fmt::Write as _;

use super::json::{HEX, put_b64_random};
use super::pools::{Class, PoolBuilder, TextPool};
use super::rng::Rng;
use super::words::*;
use std::sync::OnceLock;

fn short_str(r: &mut Rng, s: &mut String) {
    match r.below(6) {
        0 => {
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(UNI));
        }
        1 => {
            s.push_str(r.pick(VERBS));
            s.push_str(": ");
            s.push_str(r.pick(WORDS));
        }
        2 => rel_path(r, s),
        _ => {
            s.push_str(r.pick(WORDS));
            s.push('-');
            s.push_str(r.pick(WORDS));
        }
    }
}

/// One tab per level (TypeScript, JSON and the code in prose).
fn tabs(s: &mut String, n: usize) {
    for _ in 0..n {
        s.push('\t');
    }
}

/// Four spaces per level, as Rust is indented.
fn spaces(s: &mut String, n: usize) {
    for _ in 0..n {
        s.push_str("    ");
    }
}

/// Closes the `depth` blocks still open, one `}` a line, indented by `pad`.
fn close_braces(p: &mut PoolBuilder, s: &mut String, depth: usize, pad: fn(&mut String, usize)) {
    for d in (0..depth).rev() {
        s.clear();
        pad(s, d);
        s.push('}');
        p.line(s);
    }
}

fn ts_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..r.range(1, 6) {
        s.clear();
        s.push_str("import { ");
        for k in 0..r.range(1, 4) {
            if k > 0 {
                s.push_str(", ");
            }
            if r.chance(0.3) {
                s.push_str("type ");
            }
            camel(r, s, true);
        }
        let _ = write!(s, " }} from \"{}\";", r.pick(MODULES));
        p.line(s);
    }
    p.line("");
    let mut depth = 0usize;
    for _ in 0..n {
        s.clear();
        if depth == 0 {
            match r.below(4) {
                0 => {
                    s.push_str("export class ");
                    camel(r, s, true);
                    s.push_str(" {");
                }
                1 => {
                    s.push_str("export async function ");
                    camel(r, s, false);
                    s.push('(');
                    camel(r, s, false);
                    let _ = write!(s, ": {}, ", r.pick(TS_TYPES));
                    camel(r, s, false);
                    let _ = write!(s, ": {}): {} {{", r.pick(TS_TYPES), r.pick(TS_TYPES));
                }
                2 => {
                    s.push_str("const ");
                    camel(r, s, false);
                    s.push_str(" = (");
                    camel(r, s, false);
                    let _ = write!(s, ": {}) => {{", r.pick(TS_TYPES));
                }
                _ => {
                    s.push_str("/**\n * ");
                    s.push_str(r.pick(VERBS));
                    s.push_str(" the ");
                    s.push_str(r.pick(WORDS));
                    s.push_str(" for the current ");
                    s.push_str(r.pick(WORDS));
                    s.push_str(".\n */");
                    // A doc comment is several lines; split them.
                    for l in s.clone().split('\n') {
                        p.line(l);
                    }
                    continue;
                }
            }
            depth = 1;
            p.line(s);
            continue;
        }
        let k = r.below(100);
        if depth > 5 || (k < 12 && depth > 1) || k < 4 {
            tabs(s, depth - 1);
            s.push_str(r.pick(&["}", "}", "});", "};", "}"]));
            depth -= 1;
            p.line(s);
            if depth == 0 {
                p.line("");
            }
            continue;
        }
        tabs(s, depth);
        match k {
            16..=27 => {
                s.push_str("const ");
                camel(r, s, false);
                s.push_str(" = await this.");
                camel(r, s, false);
                s.push('(');
                camel(r, s, false);
                s.push_str(", \"");
                short_str(r, s);
                s.push_str("\");");
            }
            28..=35 => {
                s.push_str("if (!");
                camel(r, s, false);
                s.push_str(") {");
                depth += 1;
            }
            36..=41 => {
                s.push_str("for (const ");
                camel(r, s, false);
                s.push_str(" of this.");
                camel(r, s, false);
                s.push_str("s) {");
                depth += 1;
            }
            42..=47 => {
                s.push_str("throw new Error(`Failed to ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(": ${");
                camel(r, s, false);
                s.push_str("}`);");
            }
            48..=54 => {
                s.push_str("// ");
                s.push_str(r.pick(VERBS));
                s.push_str(" the ");
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
                s.push(' ');
                s.push_str(r.pick(WORDS));
            }
            55..=60 => {
                camel(r, s, false);
                s.push_str(".push(`${");
                camel(r, s, false);
                s.push_str("}\\t${");
                camel(r, s, false);
                s.push_str("}\\n`);");
            }
            61..=65 => {
                s.push_str("const re = /^([A-Za-z0-9_-]+)\\.(\\d+)\\s*\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\"$/;");
            }
            66..=72 => {
                s.push_str("return { type: \"");
                s.push_str(r.pick(WORDS));
                s.push_str("\", id: ");
                camel(r, s, false);
                s.push_str(".id, parentId: ");
                camel(r, s, false);
                s.push_str(" ?? null };");
            }
            73..=77 => {
                s.push_str("case \"");
                snake(r, s);
                s.push_str("\":");
            }
            78..=83 => {
                s.push_str("const lines = text.split(\"\\n\").map((l) => l.replace(/\\t/g, \"  \"));");
            }
            84..=88 => {
                s.push_str("this.");
                camel(r, s, false);
                s.push_str(" = JSON.parse(");
                camel(r, s, false);
                s.push_str(") as ");
                s.push_str(r.pick(TS_TYPES));
                s.push(';');
            }
            89..=93 => {
                s.push_str("console.log(chalk.dim(\"");
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
                s.push_str("\"), ");
                camel(r, s, false);
                s.push_str(");");
            }
            _ => {
                s.clear();
            }
        }
        p.line(s);
    }
    close_braces(p, s, depth, tabs);
}

fn rust_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    let mut depth = 0usize;
    for _ in 0..r.range(1, 4) {
        s.clear();
        s.push_str("use std::");
        s.push_str(r.pick(&[
            "io::{self, Write}",
            "collections::HashMap",
            "path::Path",
            "borrow::Cow",
            "fmt",
        ]));
        s.push(';');
        p.line(s);
    }
    p.line("");
    for _ in 0..n {
        s.clear();
        if depth == 0 {
            s.push_str("/// ");
            cap_first(s, r.pick(VERBS));
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" of a `");
            camel(r, s, true);
            s.push_str("`.");
            p.line(s);
            s.clear();
            s.push_str("pub fn ");
            snake(r, s);
            s.push_str("(&self, ");
            snake(r, s);
            let _ = write!(s, ": {}) -> {} {{", r.pick(RS_TYPES), r.pick(RS_TYPES));
            depth = 1;
            p.line(s);
            continue;
        }
        let k = r.below(100);
        if depth > 4 || k < 15 {
            spaces(s, depth - 1);
            s.push('}');
            depth -= 1;
            p.line(s);
            if depth == 0 {
                p.line("");
            }
            continue;
        }
        spaces(s, depth);
        match k {
            15..=30 => {
                s.push_str("let ");
                if r.chance(0.3) {
                    s.push_str("mut ");
                }
                snake(r, s);
                s.push_str(" = self.");
                snake(r, s);
                s.push('(');
                snake(r, s);
                s.push_str(")?;");
            }
            31..=40 => {
                s.push_str("if let Some(");
                snake(r, s);
                s.push_str(") = self.");
                snake(r, s);
                s.push_str(".get(&");
                snake(r, s);
                s.push_str(") {");
                depth += 1;
            }
            41..=48 => {
                s.push_str("match b {");
                depth += 1;
            }
            49..=56 => {
                s.push_str(r.pick(&["b'\"' => ", "b'\\\\' => ", "b'\\n' => ", "b'\\t' => ", "b'{' => "]));
                snake(r, s);
                s.push_str("(),");
            }
            57..=64 => {
                s.push_str("eprintln!(\"");
                s.push_str(r.pick(WORDS));
                s.push_str(": {:?} ");
                s.push_str(r.pick(UNI));
                s.push_str("\\n\", ");
                snake(r, s);
                s.push_str(");");
            }
            65..=72 => {
                s.push_str("// ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("s before the ");
                s.push_str(r.pick(WORDS));
            }
            73..=80 => {
                s.push_str("return Err(Error::new(\"");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("\"));");
            }
            81..=88 => {
                s.push_str("for ");
                snake(r, s);
                s.push_str(" in ");
                snake(r, s);
                s.push_str(".iter() {");
                depth += 1;
            }
            _ => {
                s.clear();
            }
        }
        p.line(s);
    }
    close_braces(p, s, depth, spaces);
}

fn shell_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    let style = [0, 0, 0, 0, 1, 1, 2, 3, 3, 4][r.below(10) as usize];
    for i in 0..n {
        s.clear();
        match style {
            0 => {
                // Test runner with ANSI colours.
                if r.chance(0.85) {
                    let _ = write!(
                        s,
                        " \u{1b}[32m✓\u{1b}[39m {} \u{1b}[2m({} tests)\u{1b}[22m \u{1b}[33m{}ms\u{1b}[39m",
                        {
                            let mut t = String::new();
                            rel_path(r, &mut t);
                            t
                        },
                        r.range(1, 80),
                        r.range(1, 3000)
                    );
                } else {
                    let _ = write!(
                        s,
                        " \u{1b}[31m✗\u{1b}[39m {} {} \u{1b}[2m>\u{1b}[22m expected \"{}\" to equal \"{}\"",
                        r.pick(VERBS),
                        r.pick(WORDS),
                        r.pick(WORDS),
                        r.pick(WORDS)
                    );
                }
            }
            1 => {
                // Compiler errors.
                match i % 5 {
                    0 => {
                        let _ = write!(s, "error[E0{}]: mismatched types", r.range(200, 799));
                    }
                    1 => {
                        s.push_str("  --> ");
                        rel_path(r, s);
                        let _ = write!(s, ":{}:{}", r.range(1, 2000), r.range(1, 80));
                    }
                    2 => s.push_str("   |"),
                    3 => {
                        let _ = write!(s, "{} |     let ", r.range(10, 999));
                        snake(r, s);
                        let _ = write!(s, ": {} = ", r.pick(RS_TYPES));
                        snake(r, s);
                        s.push_str("(&buf[..n]);");
                    }
                    _ => {
                        let _ = write!(
                            s,
                            "   |              ^^^^ expected `{}`, found `{}`",
                            r.pick(RS_TYPES),
                            r.pick(RS_TYPES)
                        );
                    }
                }
            }
            2 => {
                let _ = write!(
                    s,
                    "-rw-r--r--  1 user  staff  {:>7} Nov {:>2} {:02}:{:02} ",
                    r.range(0, 400_000),
                    r.range(1, 30),
                    r.range(0, 23),
                    r.range(0, 59)
                );
                let color = r.chance(0.6);
                if color {
                    s.push_str("\u{1b}[01;34m");
                }
                s.push_str(r.pick(WORDS));
                s.push('.');
                s.push_str(r.pick(EXTS));
                if color {
                    s.push_str("\u{1b}[0m");
                }
            }
            3 => {
                s.push_str("\u{1b}[33m");
                for _ in 0..7 {
                    s.push(HEX[r.below(16) as usize] as char);
                }
                s.push_str("\u{1b}[m");
                s.push(' ');
                cap_first(s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(" handling in ");
                rel_path(r, s);
                if r.chance(0.2) {
                    s.push(' ');
                    s.push_str(r.pick(UNI));
                }
            }
            _ => {
                s.push_str(r.pick(&["npm warn ", "warning: ", "info: ", "\u{1b}[1m\u{1b}[33mwarn\u{1b}[0m "]));
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str(" \"");
                rel_path(r, s);
                s.push('"');
                if r.chance(0.05) {
                    s.push('\r');
                }
                if r.chance(0.02) {
                    s.push_str("\u{7}\u{8}\u{c}\u{0}");
                }
            }
        }
        p.line(s);
    }
}

fn grep_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        rel_path(r, s);
        let _ = write!(s, ":{}:", r.range(1, 3000));
        tabs(s, r.range(0, 3) as usize);
        match r.below(3) {
            0 => {
                s.push_str("const ");
                camel(r, s, false);
                s.push_str(" = \"");
                short_str(r, s);
                s.push_str("\";");
            }
            1 => {
                s.push_str("if (entry.type === \"");
                snake(r, s);
                s.push_str("\") {");
            }
            _ => {
                camel(r, s, false);
                s.push_str("(\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\\n\");");
            }
        }
        p.line(s);
    }
}

fn json_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    p.line("{");
    let mut depth = 1usize;
    for _ in 0..n {
        s.clear();
        tabs(s, depth);
        let k = r.below(10);
        if depth > 1 && k < 2 {
            s.pop();
            s.push_str("},");
            depth -= 1;
        } else if k < 3 && depth < 4 {
            s.push('"');
            camel(r, s, false);
            s.push_str("\": {");
            depth += 1;
        } else if k < 7 {
            s.push('"');
            camel(r, s, false);
            s.push_str("\": \"");
            short_str(r, s);
            s.push_str("\",");
        } else {
            s.push('"');
            camel(r, s, false);
            let _ = write!(s, "\": {},", r.range(0, 100_000));
        }
        p.line(s);
    }
    close_braces(p, s, depth, tabs);
}

fn python_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        match r.below(8) {
            0 => {
                s.push_str("def ");
                snake(r, s);
                s.push_str("(self, ");
                snake(r, s);
                s.push_str(": str) -> dict:");
            }
            1 => {
                s.push_str("    return f\"{");
                snake(r, s);
                s.push_str("!r} \\t {");
                snake(r, s);
                s.push_str("}\"");
            }
            2 => {
                s.push_str("        raise ValueError(\"invalid ");
                s.push_str(r.pick(WORDS));
                s.push_str(": %s\" % ");
                snake(r, s);
                s.push(')');
            }
            3 => {
                s.push_str("    ");
                snake(r, s);
                s.push_str(" = json.loads(line.rstrip(\"\\n\"))");
            }
            4 => {
                s.push_str("    # ");
                s.push_str(r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(UNI));
            }
            5 => {
                s.push_str("    for ");
                snake(r, s);
                s.push_str(" in self.");
                snake(r, s);
                s.push(':');
            }
            _ => {
                s.push_str("        ");
                snake(r, s);
                s.push_str("[\"");
                s.push_str(r.pick(WORDS));
                s.push_str("\"] = ");
                snake(r, s);
            }
        }
        p.line(s);
    }
}

fn markdown_block(r: &mut Rng, p: &mut PoolBuilder, n: usize, s: &mut String) {
    for _ in 0..n {
        s.clear();
        match r.below(7) {
            0 => {
                s.push_str("## ");
                cap_first(s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
            }
            1 | 2 => {
                s.push_str("- `");
                camel(r, s, false);
                s.push_str("()` — ");
                s.push_str(r.pick(VERBS));
                s.push_str("s the ");
                s.push_str(r.pick(WORDS));
            }
            3 => {
                s.push_str("| `");
                s.push_str(r.pick(WORDS));
                s.push_str("` | ");
                s.push_str(r.pick(VERBS));
                s.push_str(" | ");
                s.push_str(r.pick(UNI));
                s.push_str(" |");
            }
            _ => {
                cap_first(s, r.pick(WORDS));
                s.push_str(" entries go through `");
                s.push_str(r.pick(VERBS));
                s.push_str("()` when the \"");
                s.push_str(r.pick(WORDS));
                s.push_str("\" option is set.");
            }
        }
        p.line(s);
    }
}

pub(super) fn build_code_pool(size: usize) -> TextPool {
    let mut r = Rng::new(0xC0DE_C0DE_5EED);
    let mut p = PoolBuilder::new(size);
    let mut s = String::new();
    while p.len() < size {
        let n = r.range(15, 160) as usize;
        let first = p.starts.len();
        let class = match r.below(100) {
            0..=44 => {
                ts_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            45..=56 => {
                rust_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            57..=71 => {
                shell_block(&mut r, &mut p, n, &mut s);
                Class::Shell
            }
            72..=79 => {
                grep_block(&mut r, &mut p, n, &mut s);
                Class::Grep
            }
            80..=91 => {
                json_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            92..=95 => {
                python_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
            _ => {
                markdown_block(&mut r, &mut p, n, &mut s);
                Class::Code
            }
        };
        p.segment(first, class);
    }
    p.finish()
}

pub(super) fn sentence(r: &mut Rng, s: &mut String) {
    const OPENERS: &[&str] = &[
        "I'll",
        "Let me",
        "Now I'll",
        "The problem is that we",
        "It looks like we",
        "Looking at this, we",
        "We should",
        "This means we",
        "Next, I'll",
        "Finally, we",
        "Note that we",
        "Perfect! Now let me",
        "Good, now I'll",
        "Hmm, we still",
        "OK so we",
        "First I need to",
        "Then we",
    ];
    s.push_str(r.pick(OPENERS));
    s.push(' ');
    s.push_str(r.pick(VERBS));
    match r.below(6) {
        0 => {
            s.push_str(" the `");
            camel(r, s, false);
            s.push_str("` ");
            s.push_str(r.pick(WORDS));
        }
        1 => {
            s.push(' ');
            rel_path(r, s);
        }
        2 => {
            s.push_str(" the \"");
            s.push_str(r.pick(WORDS));
            s.push_str("\" ");
            s.push_str(r.pick(WORDS));
            s.push_str(" handling");
        }
        _ => {
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
        }
    }
    match r.below(6) {
        0 => {
            s.push_str(" so that `");
            camel(r, s, false);
            s.push_str("()` ");
            s.push_str(r.pick(VERBS));
            s.push_str("s the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" correctly");
        }
        1 => {
            s.push_str(" — ");
            s.push_str(r.pick(WORDS));
            s.push_str(" first, then ");
            s.push_str(r.pick(WORDS));
        }
        2 => {
            s.push_str(" → ");
            s.push_str(r.pick(UNI));
        }
        3 => {
            s.push_str(" before we ");
            s.push_str(r.pick(VERBS));
            s.push_str(" the ");
            s.push_str(r.pick(WORDS));
            s.push_str(" and the ");
            s.push_str(r.pick(WORDS));
        }
        _ => {}
    }
    s.push('.');
}

pub(super) fn build_prose_pool(size: usize) -> TextPool {
    let mut r = Rng::new(0x9405_E5EE_D000);
    let mut p = PoolBuilder::new(size);
    let mut s = String::new();
    let mut code = String::new();
    while p.len() < size {
        s.clear();
        match r.below(100) {
            0..=54 => {
                sentence(&mut r, &mut s);
                s.push_str(if r.chance(0.25) { "\n\n" } else { " " });
            }
            55..=61 => {
                s.push_str("## ");
                cap_first(&mut s, r.pick(VERBS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push(' ');
                s.push_str(r.pick(WORDS));
                s.push_str("\n\n");
            }
            62..=76 => {
                s.push_str("- **");
                cap_first(&mut s, r.pick(WORDS));
                s.push_str("**: ");
                sentence(&mut r, &mut s);
                s.push('\n');
            }
            77..=83 => {
                let _ = write!(s, "{}. ", r.range(1, 9));
                sentence(&mut r, &mut s);
                s.push('\n');
            }
            84..=90 => {
                let _ = writeln!(s, "```{}", r.pick(LANGS));
                for _ in 0..r.range(2, 8) {
                    code.clear();
                    tabs(&mut code, r.range(0, 2) as usize);
                    code.push_str("const ");
                    camel(&mut r, &mut code, false);
                    code.push_str(" = ");
                    camel(&mut r, &mut code, false);
                    code.push_str("(\"");
                    short_str(&mut r, &mut code);
                    code.push_str("\");\n");
                    s.push_str(&code);
                }
                s.push_str("```\n\n");
            }
            91..=95 => {
                let _ = writeln!(s, "| `{}` | {} | {} |", r.pick(WORDS), r.pick(VERBS), r.range(0, 9999));
            }
            _ => {
                s.push_str(r.pick(UNI));
                s.push(' ');
                sentence(&mut r, &mut s);
                s.push('\n');
            }
        }
        p.piece(&s);
    }
    p.finish()
}

// The pools, built on first use.

const CODE_POOL_BYTES: usize = 6 << 20;
const PROSE_POOL_BYTES: usize = 3 << 20;
const B64_POOL_BYTES: usize = 16 << 20;

pub(super) fn code_pool() -> &'static TextPool {
    static POOL: OnceLock<TextPool> = OnceLock::new();
    POOL.get_or_init(|| build_code_pool(CODE_POOL_BYTES))
}

pub(super) fn prose_pool() -> &'static TextPool {
    static POOL: OnceLock<TextPool> = OnceLock::new();
    POOL.get_or_init(|| build_prose_pool(PROSE_POOL_BYTES))
}

/// Random base64 (length a multiple of 4), built on first use.
pub(super) fn b64_pool() -> &'static [u8] {
    static POOL: OnceLock<Vec<u8>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut rng = Rng::new(0xB64_B64_B64);
        let mut v = Vec::with_capacity(B64_POOL_BYTES);
        put_b64_random(&mut v, &mut rng, B64_POOL_BYTES);
        v
    })
}
