//! Builders of the conversation's messages: user prompts (with images), assistant
//! messages with thinking, text and tool calls, and the tool results answering them.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::corpus::b64_pool;
use super::json::*;
use super::params::*;
use super::pools::Class;
use super::session::{Gen, Kind, Pending, Role, Tool};
use super::words::{DIRS, EXTS, WORDS, bash_command, camel, rel_path, short_path};

impl<W: Write> Gen<W> {
    /// A base64 PNG of `len` bytes of data (a multiple of 4, at least 44).
    fn put_image(&mut self, len: usize) -> usize {
        let pool = b64_pool();
        let mut hdr = [0u8; 33];
        hdr[..8].copy_from_slice(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]);
        hdr[8..16].copy_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R']);
        let w = self.rng.range(400, 3840) as u32;
        let h = self.rng.range(300, 2400) as u32;
        hdr[16..20].copy_from_slice(&w.to_be_bytes());
        hdr[20..24].copy_from_slice(&h.to_be_bytes());
        hdr[24..29].copy_from_slice(&[8, 6, 0, 0, 0]);
        hdr[29..33].copy_from_slice(&(self.rng.next() as u32).to_be_bytes());
        if self.pig && self.rng.chance(0.25) {
            // PiG's image given by its address: a few bytes where the data would be.
            put(
                &mut self.buf,
                "{\"type\":\"image\",\"media_type\":\"image/jpeg\",\"url\":\"https://example.com/shots/",
            );
            put_hex(&mut self.buf, &mut self.rng, 16);
            put(&mut self.buf, ".jpg\"}");
            self.stats.images += 1;
            return 48;
        }
        put(&mut self.buf, "{\"type\":\"image\",\"data\":\"");
        b64_encode(&mut self.buf, &hdr);
        let mut left = (len.max(44) - 44) / 4 * 4;
        let data_len = 44 + left;
        while left > 0 {
            let take = left.min(pool.len() / 2);
            let off = self.rng.below(((pool.len() - take) / 4) as u64) as usize * 4;
            self.buf.extend_from_slice(&pool[off..off + take]);
            left -= take;
        }
        put(
            &mut self.buf,
            if self.pig {
                "\",\"media_type\":\"image/png\"}"
            } else {
                "\",\"mimeType\":\"image/png\"}"
            },
        );
        self.stats.images += 1;
        self.stats.image_bytes += data_len as u64;
        data_len
    }

    /// Size of a new image, if one fits.
    fn image_size(&mut self) -> Option<usize> {
        let avail = self.avail();
        if self.small || self.side || avail < 1_100_000 {
            return None;
        }
        let s = self.rng.log_uniform(1_000_000.0, 6_000_000.0) as usize;
        Some(s.min(avail - 50_000))
    }

    pub(super) fn user(&mut self) -> io::Result<()> {
        let ts = self.tick(4_000, 600_000);
        let ts = if self.rng.chance(0.01) {
            self.tick(3_600_000, 40_000_000)
        } else {
            ts
        };
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"user\",\"content\":");
        let img = if self.rng.chance(self.p.img_user) {
            self.image_size()
        } else {
            None
        };
        let len = self.mix_len((10, 250), (110.0, 1.1, 3, 12_000));
        let len = len.min(self.avail() - img.unwrap_or(0));
        let mut img_bytes = 0;
        if img.is_none() && self.rng.chance(0.2) {
            self.buf.push(b'"');
            self.user_text(len);
            self.buf.push(b'"');
        } else {
            put(&mut self.buf, "[{\"type\":\"text\",\"text\":\"");
            self.user_text(len);
            put(&mut self.buf, "\"}");
            if let Some(size) = img {
                self.buf.push(b',');
                img_bytes = self.put_image(size);
            }
            self.buf.push(b']');
        }
        put(&mut self.buf, ",\"timestamp\":");
        put_i64(&mut self.buf, ts - self.rng.range(2, 30) as i64);
        put(&mut self.buf, "}}");
        let kind = if img_bytes > 0 { Kind::UserImage } else { Kind::User };
        self.finish(start, id, kind, Role::User, img_bytes)
    }

    /// About `len` bytes of escaped user prompt: an opener, then prose.
    fn user_text(&mut self, len: usize) {
        const OPENERS: &[&str] = &[
            "can you",
            "please",
            "ok, now",
            "hmm, that didn't work.",
            "why does",
            "let's",
            "great. next:",
            "fix the failing test.",
            "look at this:",
            "what about",
            "no, revert that.",
            "nice!",
            "wait,",
            "read",
            "continue",
            "alright,",
            "this is still broken:",
            "ship it. then",
        ];
        let start = self.buf.len();
        let o = self.rng.pick(OPENERS);
        put(&mut self.buf, o);
        if o == "read" {
            put(&mut self.buf, " @");
            self.tmp.clear();
            if self.small {
                short_path(&mut self.rng, &mut self.tmp);
            } else {
                rel_path(&mut self.rng, &mut self.tmp);
            }
            put_esc(&mut self.buf, &self.tmp);
            put(&mut self.buf, " and");
        }
        self.buf.push(b' ');
        let used = self.buf.len() - start;
        self.prose.put(&mut self.buf, &mut self.rng, len.saturating_sub(used));
    }

    fn tool_call_id(&mut self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        match self.cur_model().sig {
            Sig::Anthropic => {
                put(&mut v, "toolu_01");
                put_alnum(&mut v, &mut self.rng, 22);
            }
            Sig::OpenAi => {
                put(&mut v, "call_");
                put_alnum(&mut v, &mut self.rng, 24);
                if !self.small {
                    put(&mut v, "|fc_");
                    put_hex(&mut v, &mut self.rng, 48);
                }
            }
            Sig::None => {
                put(&mut v, "call_");
                put_hex(&mut v, &mut self.rng, 16);
            }
        }
        v
    }

    /// An assistant message. A non-final one calls 1-3 tools (recorded in
    /// `pending`); returns true when the message ended the turn (an error or
    /// an abort).
    pub(super) fn assistant(&mut self, final_: bool) -> io::Result<bool> {
        let msg_ts = self.tick(1, 30);
        let dur = self.rng.lognormal(5_000.0, 0.9, 300, 400_000) as i64;
        self.clock += dur;
        let ts = self.clock;
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"assistant\",\"content\":[");
        let m = self.cur_model();
        let fail = self.rng.below(1000);
        let (aborted, errored) = (fail < 12, (12..16).contains(&fail));
        let mut budget = self.avail();
        let mut out_bytes = 0usize;
        let mut blocks = 0;
        self.pending.clear();
        if !errored {
            // Thinking.
            if !self.small && self.level > 0 && m.sig != Sig::None && self.rng.chance(0.35) {
                let len = self.rng.lognormal(400.0, 1.1, 30, 14_000).min(budget);
                budget -= len;
                out_bytes += len;
                put(&mut self.buf, "{\"type\":\"thinking\",\"thinking\":\"");
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(
                    &mut self.buf,
                    if self.pig {
                        "\",\"signature\":\""
                    } else {
                        "\",\"thinkingSignature\":\""
                    },
                );
                let sig = self.rng.lognormal(700.0, 0.8, 100, 12_000).min(budget);
                budget -= sig;
                if m.sig == Sig::Anthropic {
                    put_b64_random(&mut self.buf, &mut self.rng, sig);
                } else {
                    put(&mut self.buf, "{\\\"type\\\":\\\"reasoning\\\",\\\"id\\\":\\\"rs_");
                    put_hex(&mut self.buf, &mut self.rng, 48);
                    put(&mut self.buf, "\\\",\\\"encrypted_content\\\":\\\"gAAAAAB");
                    put_b64_random(&mut self.buf, &mut self.rng, sig);
                    put(&mut self.buf, "\\\",\\\"summary\\\":[]}");
                }
                put(&mut self.buf, "\"}");
                blocks += 1;
            }
            // Text.
            if final_ || (!self.small && self.rng.chance(0.45)) || (self.small && self.rng.chance(0.15)) {
                let big = if final_ {
                    (400.0, 1.1, 10, 24_000)
                } else {
                    (80.0, 1.2, 5, 6_000)
                };
                let len = self.mix_len((8, 90), big);
                let len = len.min(budget);
                budget -= len;
                out_bytes += len;
                if blocks > 0 {
                    self.buf.push(b',');
                }
                put(&mut self.buf, "{\"type\":\"text\",\"text\":\"");
                self.prose.put(&mut self.buf, &mut self.rng, len);
                put(&mut self.buf, "\"}");
                blocks += 1;
            }
            // Tool calls.
            if !(final_ || aborted || (self.small && blocks > 0)) {
                let k = if self.small {
                    1
                } else {
                    [1, 1, 1, 1, 1, 1, 1, 2, 2, 3][self.rng.below(10) as usize]
                };
                for _ in 0..k {
                    if blocks > 0 {
                        self.buf.push(b',');
                    }
                    let used = self.tool_call(budget);
                    budget = budget.saturating_sub(used);
                    out_bytes += used;
                    blocks += 1;
                }
            }
        }
        put(&mut self.buf, "],");
        self.put_model_ids();
        if !self.small && m.sig == Sig::Anthropic && self.rng.chance(0.7) {
            put(&mut self.buf, ",\"responseId\":\"msg_01");
            put_alnum(&mut self.buf, &mut self.rng, 22);
            put(&mut self.buf, "\"");
        }
        put(&mut self.buf, ",\"usage\":");
        if aborted || errored {
            self.put_usage(0, 0, 0, 0);
        } else {
            let ctx = self.ctx_tokens().min(195_000);
            let fresh = self.path.last().map_or(0, |n| {
                n.cum
                    .saturating_sub(self.path.get(self.path.len().saturating_sub(3)).map_or(0, |p| p.cum))
            });
            // Small lines keep their numbers short.
            let (fresh_cap, extra, out_extra) = if self.small {
                (9_999, 900, 60)
            } else {
                (60_000, 2_000, 300)
            };
            let (input, cr, cw) = if m.sig == Sig::Anthropic {
                (self.rng.range(1, 12), ctx.saturating_sub(fresh), fresh.min(fresh_cap))
            } else {
                (
                    fresh.min(fresh_cap) + self.rng.range(10, extra),
                    ctx.saturating_sub(fresh) / 2 * 2,
                    0,
                )
            };
            let out = (out_bytes / 4) as u64 + self.rng.range(5, out_extra);
            self.put_usage(input, out, cr, cw);
        }
        put(&mut self.buf, ",\"stopReason\":\"");
        let stop = if errored {
            "error"
        } else if aborted {
            "aborted"
        } else if self.pending.is_empty() {
            "stop"
        } else {
            "toolUse"
        };
        put(&mut self.buf, stop);
        put(&mut self.buf, "\",\"timestamp\":");
        put_i64(&mut self.buf, msg_ts);
        if aborted {
            put(&mut self.buf, ",\"errorMessage\":\"Request was aborted.\"");
        } else if errored {
            put(&mut self.buf, ",\"errorMessage\":");
            let e = self.rng.pick(&[
                "429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}",
                "Connection error.",
                "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
                "terminated",
            ]);
            let e = if self.small && e.len() > 40 {
                "Connection error."
            } else {
                e
            };
            put_str(&mut self.buf, e);
        }
        put(&mut self.buf, "}}");
        self.finish(start, id, Kind::Assistant, Role::Assistant, 0)?;
        Ok(errored || aborted || (self.pending.is_empty() && !final_))
    }

    /// A toolCall block (PiG: `tool_use`); returns the bytes of its variable parts.
    fn tool_call(&mut self, budget: usize) -> usize {
        let call_id = self.tool_call_id();
        let t = match self.rng.below(100) {
            0..=34 => Tool::Bash,
            35..=64 => Tool::Read,
            65..=88 => Tool::Edit,
            89..=92 => Tool::Write,
            93..=96 => Tool::Grep,
            _ => Tool::Find,
        };
        // Small lines have no room for edit/write arguments.
        let t = match t {
            Tool::Edit | Tool::Write if self.small => Tool::Read,
            t => t,
        };
        put(
            &mut self.buf,
            if self.pig {
                "{\"type\":\"tool_use\",\"id\":\""
            } else {
                "{\"type\":\"toolCall\",\"id\":\""
            },
        );
        self.buf.extend_from_slice(&call_id);
        put(&mut self.buf, "\",\"name\":\"");
        put(&mut self.buf, t.name());
        put(
            &mut self.buf,
            if self.pig {
                "\",\"input\":{"
            } else {
                "\",\"arguments\":{"
            },
        );
        let mut path = String::new();
        let mut image = false;
        if matches!(t, Tool::Read | Tool::Edit | Tool::Write) {
            if !self.small {
                path.push_str(&self.cwd);
                path.push('/');
            }
            if self.small {
                short_path(&mut self.rng, &mut path);
            } else {
                rel_path(&mut self.rng, &mut path);
            }
            if t == Tool::Read && self.rng.chance(self.p.img_tool) {
                path.truncate(path.rfind('.').unwrap_or(path.len()));
                path.push_str(".png");
                image = true;
            }
        }
        let mut used = 0;
        let mut written = 0;
        match t {
            Tool::Read => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                if !self.small && self.rng.chance(0.3) {
                    put(&mut self.buf, ",\"offset\":");
                    put_u64(&mut self.buf, self.rng.range(1, 3000));
                    put(&mut self.buf, ",\"limit\":");
                    put_u64(&mut self.buf, self.rng.range(20, 400));
                }
            }
            Tool::Bash => {
                self.tmp.clear();
                bash_command(&mut self.rng, &mut self.tmp, &self.cwd, self.small);
                put(&mut self.buf, "\"command\":");
                put_str(&mut self.buf, &self.tmp);
                if !self.small && self.rng.chance(0.2) {
                    put(&mut self.buf, ",\"timeout\":");
                    put_u64(&mut self.buf, self.rng.pick(&[30, 60, 120, 600]));
                }
            }
            Tool::Edit => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                let a = self.mix_len((5, 25), (180.0, 1.0, 5, 6_000));
                let b = self.mix_len((5, 25), (260.0, 1.0, 5, 8_000));
                let a = a.min(budget / 2);
                let b = b.min(budget / 2);
                put(&mut self.buf, ",\"oldText\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, a, Class::Code);
                put(&mut self.buf, "\",\"newText\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, b, Class::Code);
                self.buf.push(b'"');
            }
            Tool::Write => {
                put(&mut self.buf, "\"path\":");
                put_str(&mut self.buf, &path);
                let n = self.rng.lognormal(3_000.0, 1.0, 50, 40_000).min(budget);
                put(&mut self.buf, ",\"content\":\"");
                used += self.code.put_class(&mut self.buf, &mut self.rng, n, Class::Code);
                written = used;
                self.buf.push(b'"');
            }
            Tool::Grep => {
                put(&mut self.buf, "\"pattern\":");
                self.tmp.clear();
                if self.small {
                    self.tmp.push_str(self.rng.pick(WORDS));
                } else {
                    camel(&mut self.rng, &mut self.tmp, false);
                    if self.rng.chance(0.3) {
                        self.tmp.push_str("\\(");
                    }
                }
                put_str(&mut self.buf, &self.tmp);
                put(&mut self.buf, ",\"path\":\"");
                put(&mut self.buf, self.rng.pick(if self.small { &DIRS[..5] } else { DIRS }));
                put(&mut self.buf, "\"");
            }
            Tool::Find => {
                put(&mut self.buf, "\"pattern\":\"**/*.");
                put(&mut self.buf, self.rng.pick(EXTS));
                put(&mut self.buf, "\"");
            }
        }
        put(&mut self.buf, "}}");
        self.pending.push(Pending {
            call_id,
            tool: t,
            path,
            written,
            image,
        });
        used
    }

    pub(super) fn tool_result(&mut self) -> io::Result<()> {
        let call = self.pending.remove(0);
        let dur = match call.tool {
            Tool::Bash => self.rng.lognormal(900.0, 1.6, 5, 600_000),
            _ => self.rng.range(2, 80) as usize,
        };
        self.clock += dur as i64;
        let ts = self.clock;
        let (start, id) = self.head("message", ts);
        put(&mut self.buf, ",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"");
        self.buf.extend_from_slice(&call.call_id);
        put(&mut self.buf, "\",\"toolName\":\"");
        put(&mut self.buf, call.tool.name());
        put(&mut self.buf, "\",\"content\":[{\"type\":\"text\",\"text\":\"");
        let avail = self.avail();
        let mut kind = Kind::ToolResult;
        let mut img_bytes = 0;
        let mut is_error = false;
        let big = !self.small
            && !self.side
            && matches!(call.tool, Tool::Bash | Tool::Read | Tool::Grep)
            && self.rng.chance(self.p.big_tool)
            && avail > 100_000;
        if call.image {
            put(&mut self.buf, "Read image file [image/png]\"}");
            if let Some(size) = self.image_size() {
                self.buf.push(b',');
                img_bytes = self.put_image(size);
                kind = Kind::ToolResultImage;
            }
            put(&mut self.buf, "]");
        } else if big {
            let len = (self.rng.log_uniform(64_000.0, 2_500_000.0) as usize).min(avail - 50_000);
            let class = self.output_class(call.tool);
            self.code.put_class(&mut self.buf, &mut self.rng, len, class);
            put(&mut self.buf, "\"}]");
            kind = Kind::ToolResultBig;
        } else {
            match call.tool {
                Tool::Read | Tool::Grep | Tool::Find | Tool::Bash => {
                    let len = match (self.small, call.tool) {
                        (true, _) => self.rng.range(0, 160) as usize,
                        (false, Tool::Read) => self.rng.lognormal(1_100.0, 1.3, 40, 120_000),
                        (false, Tool::Bash) => self.rng.lognormal(400.0, 1.6, 0, 50_000),
                        (false, _) => self.rng.lognormal(800.0, 1.2, 20, 30_000),
                    };
                    let limit = 51_200;
                    let len = if len > limit {
                        len.min(avail / 2).max(limit.min(avail))
                    } else {
                        len.min(avail)
                    };
                    let len = if len > limit && avail < 2 * limit + 4_000 {
                        limit.min(avail)
                    } else {
                        len
                    };
                    let text_start = self.buf.len();
                    let class = self.output_class(call.tool);
                    let n = self.code.put_class(&mut self.buf, &mut self.rng, len.min(limit), class);
                    if call.tool == Tool::Read && len > limit {
                        // pi's read truncates at 50 KB and keeps a copy in details.
                        let total_lines = self.rng.range(1_800, 9_000);
                        let shown = self.rng.range(900, 1_700);
                        self.tmp.clear();
                        let _ = write!(
                            self.tmp,
                            "\\n\\n[Showing lines 1-{shown} of {total_lines} (50.0KB limit). Use offset={} to continue]",
                            shown + 1
                        );
                        put(&mut self.buf, &self.tmp);
                        put(&mut self.buf, "\"}],\"details\":{\"truncation\":{\"content\":\"");
                        self.buf.extend_from_within(text_start..text_start + n);
                        put(
                            &mut self.buf,
                            "\",\"truncated\":true,\"truncatedBy\":\"bytes\",\"totalLines\":",
                        );
                        put_u64(&mut self.buf, total_lines);
                        put(&mut self.buf, ",\"totalBytes\":");
                        put_u64(&mut self.buf, len as u64 + self.rng.range(0, 100_000));
                        put(&mut self.buf, ",\"outputLines\":");
                        put_u64(&mut self.buf, shown);
                        put(&mut self.buf, ",\"outputBytes\":");
                        put_u64(&mut self.buf, n as u64);
                        put(
                            &mut self.buf,
                            ",\"lastLinePartial\":false,\"firstLineExceedsLimit\":false}}",
                        );
                    } else {
                        if call.tool == Tool::Bash && self.rng.chance(0.08) {
                            is_error = true;
                            put(&mut self.buf, "\\n\\nCommand exited with code ");
                            put_u64(&mut self.buf, self.rng.range(1, 2));
                        }
                        put(&mut self.buf, "\"}]");
                        if !self.small && call.tool == Tool::Bash && self.rng.chance(0.1) {
                            put(&mut self.buf, ",\"details\":{}");
                        }
                    }
                }
                Tool::Edit => {
                    if self.rng.chance(0.05) {
                        is_error = true;
                        put(&mut self.buf, "Could not find the exact text in ");
                        put_esc(&mut self.buf, &call.path);
                        put(
                            &mut self.buf,
                            ". The old text must match exactly including all whitespace and newlines.\"}]",
                        );
                        put(&mut self.buf, ",\"details\":{}");
                    } else {
                        put(&mut self.buf, "Successfully replaced text in ");
                        put_esc(&mut self.buf, &call.path);
                        if !self.small {
                            put(&mut self.buf, ". Changed ");
                            put_u64(&mut self.buf, self.rng.range(5, 3000));
                            put(&mut self.buf, " characters to ");
                            put_u64(&mut self.buf, self.rng.range(5, 3000));
                            put(&mut self.buf, " characters.");
                        }
                        put(&mut self.buf, "\"}],\"details\":{\"diff\":\"");
                        let len = self.mix_len((10, 90), (900.0, 1.0, 40, 12_000));
                        let len = len.min(avail);
                        let lines = self.rng.range(3, 12);
                        let first = self.rng.range(1, 900);
                        let per = len / lines as usize;
                        for (i, ln) in (first..first + lines).enumerate() {
                            let mark = match i % 4 {
                                1 => "-",
                                2 => "+",
                                _ => " ",
                            };
                            put(&mut self.buf, mark);
                            put_u64(&mut self.buf, ln);
                            put(&mut self.buf, " ");
                            // One line of code: cut at its newline.
                            let s = self.buf.len();
                            self.code
                                .put_class(&mut self.buf, &mut self.rng, per.max(4), Class::Code);
                            let cut = self.buf[s..].windows(2).position(|w| w == b"\\n");
                            if let Some(p) = cut.filter(|&p| self.code_safe_cut(s, p)) {
                                self.buf.truncate(s + p);
                            }
                            put(&mut self.buf, "\\n");
                        }
                        put(&mut self.buf, "\"}");
                    }
                }
                Tool::Write => {
                    put(&mut self.buf, "Successfully wrote ");
                    put_u64(&mut self.buf, call.written as u64);
                    put(&mut self.buf, " bytes to ");
                    put_esc(&mut self.buf, &call.path);
                    put(&mut self.buf, "\"}]");
                }
            }
        }
        put(
            &mut self.buf,
            if is_error {
                ",\"isError\":true,\"timestamp\":"
            } else {
                ",\"isError\":false,\"timestamp\":"
            },
        );
        put_i64(&mut self.buf, ts - self.rng.range(1, 8) as i64);
        put(&mut self.buf, "}}");
        self.finish(start, id, kind, Role::ToolResult, img_bytes)
    }

    /// What a tool's output looks like: `bash` runs tests and builds, but
    /// also `cat`, `git diff` and `rg`.
    fn output_class(&mut self, tool: Tool) -> Class {
        match tool {
            Tool::Read => Class::Code,
            Tool::Grep => Class::Grep,
            Tool::Bash => [
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Shell,
                Class::Code,
                Class::Code,
                Class::Code,
                Class::Grep,
                Class::Grep,
            ][self.rng.below(10) as usize],
            _ => Class::Shell,
        }
    }

    /// Whether `\n` found at `buf[s + p..]` is a real newline escape (an even
    /// number of backslashes before it).
    fn code_safe_cut(&self, s: usize, p: usize) -> bool {
        let mut k = s + p;
        let mut n = 0;
        while k > s && self.buf[k - 1] == b'\\' {
            k -= 1;
            n += 1;
        }
        n % 2 == 0
    }
}
