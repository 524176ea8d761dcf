//! Builders of the entries around the conversation: model and thinking-level changes,
//! system messages, session names, labels, custom entries and messages, usage entries,
//! context edits, compactions, branch summaries and `!` bash executions.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::json::*;
use super::params::*;
use super::pools::Class;
use super::rng::weighted;
use super::session::{Gen, Kind, Role};
use super::words::{bash_command, rel_path, session_name};

impl<W: Write> Gen<W> {
    pub(super) fn branch_summary(&mut self, from: u32) -> io::Result<()> {
        let ts = self.tick(2_000, 40_000);
        let (start, id) = self.head("branch_summary", ts);
        put(&mut self.buf, ",\"fromId\":\"");
        put_id(&mut self.buf, from);
        put(&mut self.buf, "\",\"summary\":\"");
        let len = self.mix_len((40, 200), (1200.0, 0.7, 200, 6000));
        let len = len.min(self.avail());
        self.prose.put(&mut self.buf, &mut self.rng, len);
        self.buf.push(b'"');
        if !self.small && self.rng.chance(0.6) {
            put(&mut self.buf, ",\"details\":");
            self.file_lists();
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::BranchSummary, Role::Other, 0)
    }

    /// `{"readFiles":[..],"modifiedFiles":[..]}`
    fn file_lists(&mut self) {
        put(&mut self.buf, "{\"readFiles\":[");
        let n = self.rng.range(0, 8);
        self.put_paths(n);
        put(&mut self.buf, "],\"modifiedFiles\":[");
        let n = self.rng.range(0, 5);
        self.put_paths(n);
        put(&mut self.buf, "]}");
    }

    /// `n` random relative paths as JSON strings, comma-separated.
    fn put_paths(&mut self, n: u64) {
        for i in 0..n {
            if i > 0 {
                self.buf.push(b',');
            }
            self.tmp.clear();
            rel_path(&mut self.rng, &mut self.tmp);
            put_str(&mut self.buf, &self.tmp);
        }
    }

    pub(super) fn model_change(&mut self) -> io::Result<()> {
        let mut m = weighted(&mut self.rng, &MODEL_WEIGHTS);
        if m == self.model {
            m = (m + 1) % MODELS.len();
        }
        self.model = m;
        self.tick(1_000, 60_000);
        self.model_change_to(MODELS[m].provider, MODELS[m].id)
    }

    pub(super) fn model_change_to(&mut self, provider: &str, model: &str) -> io::Result<()> {
        let ts = self.clock;
        let (start, id) = self.head("model_change", ts);
        put(&mut self.buf, ",\"provider\":");
        put_str(&mut self.buf, provider);
        put(&mut self.buf, ",\"modelId\":");
        put_str(&mut self.buf, model);
        self.buf.push(b'}');
        self.finish(start, id, Kind::ModelChange, Role::Other, 0)
    }

    pub(super) fn thinking_change(&mut self) -> io::Result<()> {
        let mut l = self.rng.below(LEVELS.len() as u64) as usize;
        if l == self.level {
            l = (l + 1) % LEVELS.len();
        }
        self.level = l;
        self.tick(1_000, 60_000);
        self.thinking_change_to(l)
    }

    pub(super) fn thinking_change_to(&mut self, level: usize) -> io::Result<()> {
        let ts = self.clock;
        let (start, id) = self.head("thinking_level_change", ts);
        put(&mut self.buf, ",\"thinkingLevel\":\"");
        put(&mut self.buf, LEVELS[level]);
        put(&mut self.buf, "\"}");
        self.finish(start, id, Kind::ThinkingChange, Role::Other, 0)
    }

    /// A system message: the first one declares prompt sections and tools,
    /// later ones patch them.
    pub(super) fn system_message(&mut self, initial: bool) -> io::Result<()> {
        let ts = self.tick(5, 200);
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"system\",\"content\":");
        if self.small {
            if initial {
                put(
                    &mut self.buf,
                    "\"You are an expert coding assistant. Use the tools to read and edit files.\"",
                );
            } else {
                put(
                    &mut self.buf,
                    "\"\",\"sections\":{\"skills\":null},\"toolsRemoved\":[{\"name\":\"write\"}]",
                );
            }
        } else if initial {
            put(&mut self.buf, "\"\",\"sections\":{\"preamble\":\"");
            let n = self.rng.range(600, 2500) as usize;
            let n = n.min(self.avail());
            self.prose.put(&mut self.buf, &mut self.rng, n);
            put(&mut self.buf, "\",\"tools\":\"<tools>\\n");
            for t in ["read", "bash", "edit", "write", "grep", "find"] {
                put(&mut self.buf, "- ");
                put(&mut self.buf, t);
                put(&mut self.buf, ": ");
                let n = self.rng.range(60, 200) as usize;
                self.prose.put(&mut self.buf, &mut self.rng, n);
                put(&mut self.buf, "\\n");
            }
            put(&mut self.buf, "</tools>\",\"cwd\":");
            put_str(&mut self.buf, &self.cwd);
            put(&mut self.buf, "},\"toolsAdded\":[");
            self.tool_decls();
            put(&mut self.buf, "]");
        } else {
            put(&mut self.buf, "\"\",\"sections\":{\"skills\":\"<skills>\\n");
            let n = self.rng.range(200, 1500) as usize;
            let n = n.min(self.avail());
            self.prose.put(&mut self.buf, &mut self.rng, n);
            put(&mut self.buf, "\\n</skills>\"},\"toolsRemoved\":[{\"name\":\"write\"}]");
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - 1);
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::System, Role::System, 0)
    }

    pub(super) fn system_update(&mut self) -> io::Result<()> {
        self.system_message(false)
    }

    fn tool_decls(&mut self) {
        const DECLS: &[(&str, &str, &[&str])] = &[
            (
                "read",
                "Read the contents of a file. Supports text files and images (jpg, png, gif, webp).",
                &["path", "offset", "limit"],
            ),
            (
                "bash",
                "Execute a bash command in the current working directory. Returns stdout and stderr.",
                &["command", "timeout"],
            ),
            (
                "edit",
                "Edit a file by replacing exact text. The oldText must match exactly (including whitespace).",
                &["path", "oldText", "newText"],
            ),
            (
                "write",
                "Write content to a file. Creates the file if it doesn't exist, overwrites if it does.",
                &["path", "content"],
            ),
        ];
        for (i, (name, desc, params)) in DECLS.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            put(&mut self.buf, "{\"name\":\"");
            put(&mut self.buf, name);
            put(&mut self.buf, "\",\"description\":");
            put_str(&mut self.buf, desc);
            put(&mut self.buf, ",\"parameters\":{\"type\":\"object\",\"properties\":{");
            for (j, p) in params.iter().enumerate() {
                if j > 0 {
                    self.buf.push(b',');
                }
                put(&mut self.buf, "\"");
                put(&mut self.buf, p);
                let ty = if matches!(*p, "offset" | "limit" | "timeout") {
                    "number"
                } else {
                    "string"
                };
                put(&mut self.buf, "\":{\"type\":\"");
                put(&mut self.buf, ty);
                put(&mut self.buf, "\",\"description\":\"The ");
                put(&mut self.buf, p);
                put(&mut self.buf, " to use\"}");
            }
            put(&mut self.buf, "},\"required\":[\"");
            put(&mut self.buf, params[0]);
            put(&mut self.buf, "\"]}}");
        }
    }

    pub(super) fn session_info(&mut self) -> io::Result<()> {
        let ts = self.tick(500, 30_000);
        self.tmp.clear();
        session_name(&mut self.rng, &mut self.tmp);
        if self.rng.chance(0.02) {
            self.tmp.clear();
        }
        let name = std::mem::take(&mut self.tmp);
        let (start, id) = self.head("session_info", ts);
        put(&mut self.buf, ",\"name\":");
        put_str(&mut self.buf, &name);
        self.buf.push(b'}');
        self.stats.session_name = if name.trim().is_empty() {
            None
        } else {
            Some(name.trim().to_string())
        };
        self.tmp = name;
        self.finish(start, id, Kind::SessionInfo, Role::Other, 0)
    }

    pub(super) fn label(&mut self) -> io::Result<()> {
        let n = self.path.len();
        if n == 0 {
            return Ok(());
        }
        let target = self.path[n - 1 - (self.rng.geometric(0.1) as usize).min(n - 1)].id;
        let ts = self.tick(1_000, 30_000);
        let (start, id) = self.head("label", ts);
        put(&mut self.buf, ",\"targetId\":\"");
        put_id(&mut self.buf, target);
        self.buf.push(b'"');
        if self.rng.chance(0.9) {
            const LABELS: &[&str] = &[
                "checkpoint",
                "before-refactor",
                "good state",
                "bug repro",
                "tests green",
                "WIP",
                "try again here",
                "✅ works",
                "perf baseline",
                "review",
                "stable",
                "release-candidate",
            ];
            put(&mut self.buf, ",\"label\":");
            self.tmp.clear();
            self.tmp.push_str(self.rng.pick(LABELS));
            if self.rng.chance(0.5) {
                let _ = write!(self.tmp, "-{}", self.rng.range(1, 40));
            }
            put_str(&mut self.buf, &self.tmp);
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::Label, Role::Other, 0)
    }

    pub(super) fn custom(&mut self) -> io::Result<()> {
        let ts = self.tick(10, 5_000);
        let (start, id) = self.late_head("custom");
        match self.rng.below(4) {
            0 => {
                let m = &MODELS[self.model];
                put(&mut self.buf, "\"pi.virtual-model-state\",\"data\":{\"provider\":");
                put_str(&mut self.buf, m.provider);
                put(&mut self.buf, ",\"modelId\":");
                put_str(&mut self.buf, m.id);
                put(&mut self.buf, ",\"state\":{\"turn\":");
                put_u64(&mut self.buf, self.turns);
                put(&mut self.buf, ",\"route\":\"");
                put(&mut self.buf, self.rng.pick(&["primary", "fallback", "cheap"]));
                put(&mut self.buf, "\"}}");
            }
            1 => {
                put(&mut self.buf, "\"todo\",\"data\":{\"todos\":[");
                let k = if self.small { 1 } else { self.rng.range(1, 6) };
                for i in 0..k {
                    if i > 0 {
                        self.buf.push(b',');
                    }
                    put(&mut self.buf, "{\"id\":");
                    put_u64(&mut self.buf, i + 1);
                    put(&mut self.buf, ",\"text\":\"");
                    let n = self.rng.range(15, 70) as usize;
                    self.prose.put(&mut self.buf, &mut self.rng, n);
                    put(&mut self.buf, "\",\"done\":");
                    put(&mut self.buf, if self.rng.chance(0.5) { "true}" } else { "false}" });
                }
                put(&mut self.buf, "]}");
            }
            2 => {
                put(&mut self.buf, "\"git-checkpoint\",\"data\":{\"commit\":\"");
                put_hex(&mut self.buf, &mut self.rng, 40);
                put(&mut self.buf, "\",\"dirty\":");
                put(&mut self.buf, if self.rng.chance(0.3) { "true" } else { "false" });
                put(&mut self.buf, ",\"files\":");
                put_u64(&mut self.buf, self.rng.range(0, 30));
                self.buf.push(b'}');
            }
            _ => {
                put(
                    &mut self.buf,
                    "\"permission-gate\",\"data\":{\"tool\":\"bash\",\"decision\":\"",
                );
                put(&mut self.buf, self.rng.pick(&["allow", "allow-always", "deny"]));
                put(&mut self.buf, "\",\"pattern\":");
                self.tmp.clear();
                self.tmp.push_str(
                    self.rng
                        .pick(&["npm run *", "git *", "cargo test*", "rm -rf \"$TMP\"/*"]),
                );
                put_str(&mut self.buf, &self.tmp);
                self.buf.push(b'}');
            }
        }
        self.buf.push(b',');
        self.put_ids(id, ts);
        self.buf.push(b'}');
        self.finish(start, id, Kind::Custom, Role::Other, 0)
    }

    pub(super) fn custom_message(&mut self) -> io::Result<()> {
        let ts = self.tick(10, 5_000);
        let (start, id) = self.late_head("custom_message");
        self.buf.push(b'"');
        put(
            &mut self.buf,
            self.rng
                .pick(&["git-status", "plan-mode", "todo-reminder", "lsp-diagnostics"]),
        );
        put(&mut self.buf, "\",\"content\":");
        let len = self.mix_len((30, 220), (500.0, 1.0, 30, 20_000));
        let len = len.min(self.avail());
        let array = self.rng.chance(0.3);
        if array {
            put(&mut self.buf, "[{\"type\":\"text\",\"text\":\"");
        } else {
            self.buf.push(b'"');
        }
        if self.rng.chance(0.5) {
            self.code.put(&mut self.buf, &mut self.rng, len);
        } else {
            self.prose.put(&mut self.buf, &mut self.rng, len);
        }
        put(&mut self.buf, if array { "\"}]" } else { "\"" });
        put(&mut self.buf, ",\"display\":");
        put(&mut self.buf, if self.rng.chance(0.7) { "true" } else { "false" });
        if !self.small && self.rng.chance(0.4) {
            put(&mut self.buf, ",\"details\":{\"source\":\"extension\",\"count\":");
            put_u64(&mut self.buf, self.rng.range(1, 50));
            self.buf.push(b'}');
        }
        self.buf.push(b',');
        self.put_ids(id, ts);
        self.buf.push(b'}');
        self.finish(start, id, Kind::CustomMessage, Role::CustomMsg, 0)
    }

    /// A usage object; costs like pi computes them (price / 1e6 * tokens).
    pub(super) fn put_usage(&mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) {
        let m = self.cur_model();
        let round = self.small;
        let cost = |price: f64, n: u64| {
            let c = price / 1_000_000.0 * n as f64;
            if round { (c * 1e6).round() / 1e6 } else { c }
        };
        let ci = cost(m.price[0], input);
        let co = cost(m.price[1], output);
        let cr = cost(m.price[2], cache_read);
        let cw = cost(m.price[3], cache_write);
        let total = if round {
            ((ci + co + cr + cw) * 1e6).round() / 1e6
        } else {
            ci + co + cr + cw
        };
        let b = &mut self.buf;
        put(b, "{\"input\":");
        put_u64(b, input);
        put(b, ",\"output\":");
        put_u64(b, output);
        put(b, ",\"cacheRead\":");
        put_u64(b, cache_read);
        put(b, ",\"cacheWrite\":");
        put_u64(b, cache_write);
        put(b, ",\"totalTokens\":");
        put_u64(b, input + output + cache_read + cache_write);
        put(b, ",\"cost\":{\"input\":");
        put_f64(b, ci);
        put(b, ",\"output\":");
        put_f64(b, co);
        put(b, ",\"cacheRead\":");
        put_f64(b, cr);
        put(b, ",\"cacheWrite\":");
        put_f64(b, cw);
        put(b, ",\"total\":");
        put_f64(b, total);
        put(b, "}}");
    }

    pub(super) fn usage_entry(&mut self) -> io::Result<()> {
        let ts = self.tick(100, 10_000);
        let (start, id) = self.head("usage", ts);
        let m = self.cur_model();
        put(&mut self.buf, ",\"kind\":\"");
        put(
            &mut self.buf,
            self.rng
                .pick(&["cache_warm", "cache_warm", "title_generation", "embedding"]),
        );
        put(&mut self.buf, "\",\"provider\":");
        put_str(&mut self.buf, m.provider);
        put(&mut self.buf, ",\"model\":");
        put_str(&mut self.buf, m.id);
        put(&mut self.buf, ",\"usage\":");
        let cr = self.ctx_tokens().min(190_000);
        let out = self.rng.range(0, 40);
        let input = self.rng.range(0, 20);
        self.put_usage(input, out, cr, 0);
        self.buf.push(b'}');
        self.finish(start, id, Kind::Usage, Role::Other, 0)
    }

    pub(super) fn context_edit(&mut self) -> io::Result<()> {
        let n = self.path.len();
        let Some(last) = self.path.last() else {
            return Ok(());
        };
        let lo = (last.ctx_start as usize).max(n.saturating_sub(300));
        if lo >= n {
            return Ok(());
        }
        let mut target = None;
        for _ in 0..12 {
            let i = lo + self.rng.below((n - lo) as u64) as usize;
            let node = self.path[i];
            if matches!(
                node.role,
                Role::User | Role::Assistant | Role::ToolResult | Role::CustomMsg
            ) {
                target = Some(node);
                break;
            }
        }
        let Some(t) = target else { return Ok(()) };
        let ts = self.tick(500, 20_000);
        let (start, id) = self.head("context_edit", ts);
        put(&mut self.buf, ",\"targetId\":\"");
        put_id(&mut self.buf, t.id);
        put(&mut self.buf, "\",\"replacement\":");
        let r = self.rng.below(10);
        if r < 4 {
            put(&mut self.buf, "null");
        } else {
            let len = self.mix_len((10, 80), (120.0, 1.0, 10, 4000));
            let len = len.min(self.avail());
            match t.role {
                Role::Assistant | Role::ToolResult => {
                    put(&mut self.buf, "{\"content\":[{\"type\":\"text\",\"text\":\"");
                    if r < 8 {
                        put(&mut self.buf, "[output pruned: ");
                        put_u64(&mut self.buf, self.rng.range(100, 90_000));
                        put(&mut self.buf, " bytes] ");
                    }
                    self.prose.put(&mut self.buf, &mut self.rng, len);
                    put(&mut self.buf, "\"}]}");
                }
                _ => {
                    put(&mut self.buf, "{\"content\":\"");
                    self.prose.put(&mut self.buf, &mut self.rng, len);
                    put(&mut self.buf, "\"}");
                }
            }
        }
        self.buf.push(b'}');
        self.finish(start, id, Kind::ContextEdit, Role::Other, 0)
    }

    pub(super) fn compaction(&mut self) -> io::Result<()> {
        let n = self.path.len();
        let Some(last) = self.path.last().copied() else {
            return Ok(());
        };
        let tokens_before = self.ctx_tokens();
        // Keep the last ~15% of the context, cut at a user message.
        let keep = tokens_before * self.rng.range(5, 25) / 100;
        let cs = last.ctx_start as usize;
        let mut k = n - 1;
        while k > cs && last.cum - self.path[k].cum < keep {
            k -= 1;
        }
        while k > cs && self.path[k].role != Role::User {
            k -= 1;
        }
        let retain_none = k <= cs || self.path[k].role != Role::User || self.rng.chance(0.08);
        let ts = self.tick(10_000, 120_000);
        let (start, id) = self.head("compaction", ts);
        put(&mut self.buf, ",\"summary\":\"");
        if self.small {
            let len = self.rng.range(60, 180) as usize;
            self.prose.put(&mut self.buf, &mut self.rng, len);
        } else {
            put(&mut self.buf, "# Context Checkpoint\\n\\n## Goal\\n");
            let len = self.rng.lognormal(3500.0, 0.6, 500, 16_000).min(self.avail() / 2);
            self.prose.put(&mut self.buf, &mut self.rng, len);
        }
        put(&mut self.buf, "\",\"firstKeptEntryId\":\"");
        put_id(&mut self.buf, if retain_none { id } else { self.path[k].id });
        put(&mut self.buf, "\",\"tokensBefore\":");
        put_u64(&mut self.buf, tokens_before);
        if !self.small {
            put(&mut self.buf, ",\"details\":");
            self.file_lists();
            if self.rng.chance(0.5) {
                put(&mut self.buf, ",\"usage\":");
                let out = self.rng.range(800, 4000);
                let input = self.rng.range(1_000, 20_000);
                self.put_usage(input, out, tokens_before.min(190_000), 0);
            }
            if self.rng.chance(0.7) {
                put(&mut self.buf, ",\"systemMessage\":{\"role\":\"system\",\"content\":\"");
                let len = self.rng.range(600, 3000) as usize;
                let len = len.min(self.avail() / 2);
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(&mut self.buf, "\",\"toolsAdded\":[");
                self.tool_decls();
                put(&mut self.buf, "],\"timestamp\":");
                put_i64(&mut self.buf, ts);
                self.buf.push(b'}');
            }
        }
        self.buf.push(b'}');
        self.stats.compactions += 1;
        self.finish(start, id, Kind::Compaction, Role::Other, 0)?;
        let idx = self.path.len() - 1;
        let node = &mut self.path[idx];
        node.ctx_start = if retain_none { idx as u32 } else { k as u32 };
        Ok(())
    }

    pub(super) fn bash_execution(&mut self) -> io::Result<()> {
        let ts = self.tick(3_000, 120_000);
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"bashExecution\",\"command\":");
        self.tmp.clear();
        bash_command(&mut self.rng, &mut self.tmp, &self.cwd, self.small);
        put_str(&mut self.buf, &self.tmp);
        put(&mut self.buf, ",\"output\":\"");
        let len = self.mix_len((0, 150), (600.0, 1.5, 0, 40_000));
        let len = len.min(self.avail());
        self.code.put_class(&mut self.buf, &mut self.rng, len, Class::Shell);
        let cancelled = self.rng.chance(0.03);
        let truncated = !self.small && len > 20_000;
        put(&mut self.buf, "\"");
        if !cancelled {
            put(&mut self.buf, ",\"exitCode\":");
            put_u64(
                &mut self.buf,
                if self.rng.chance(0.85) { 0 } else { self.rng.range(1, 2) },
            );
        }
        put(
            &mut self.buf,
            if cancelled {
                ",\"cancelled\":true"
            } else {
                ",\"cancelled\":false"
            },
        );
        put(
            &mut self.buf,
            if truncated {
                ",\"truncated\":true"
            } else {
                ",\"truncated\":false"
            },
        );
        if truncated {
            put(&mut self.buf, ",\"fullOutputPath\":\"/tmp/pi-bash-");
            put_hex(&mut self.buf, &mut self.rng, 16);
            put(&mut self.buf, ".log\"");
        }
        if self.rng.chance(0.1) {
            put(&mut self.buf, ",\"excludeFromContext\":true");
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - self.rng.range(1, 3) as i64);
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::Bash, Role::Bash, 0)
    }
}
