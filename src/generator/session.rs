//! The session simulator: its state, the agent loop (turns, branches, compactions) and
//! the exact-size fillers that close the file.

use std::collections::HashSet;
use std::io::{self, Write};

use super::Flavor;
use super::corpus::{code_pool, prose_pool};
use super::json::*;
use super::params::*;
use super::pools::TextPool;
use super::rng::{Rng, weighted};
use super::{GenStats, KindStats, Mix, SessionSpec};

#[derive(Default)]
pub(super) struct Extra {
    pub(super) session_id: Option<String>,
    pub(super) parent_session: Option<String>,
    /// Chance that the session gets a name early on (default 0.6).
    pub(super) name_chance: Option<f64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Role {
    User,
    Assistant,
    ToolResult,
    CustomMsg,
    Bash,
    System,
    Other,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub(super) id: u32,
    pub(super) role: Role,
    /// Path index where the model context starts at this node (a
    /// compaction's first kept entry), 0 without compaction.
    pub(super) ctx_start: u32,
    /// Approximate tokens along the path up to and including this node.
    pub(super) cum: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Header,
    User,
    UserImage,
    Assistant,
    ToolResult,
    ToolResultBig,
    ToolResultImage,
    Bash,
    System,
    ModelChange,
    ThinkingChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    ContextEdit,
    Usage,
}

const KIND_NAMES: [&str; 19] = [
    "session",
    "message/user",
    "message/user+image",
    "message/assistant",
    "message/toolResult",
    "message/toolResult(big)",
    "message/toolResult+image",
    "message/bashExecution",
    "message/system",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
    "usage",
];

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Tool {
    Read,
    Bash,
    Edit,
    Write,
    Grep,
    Find,
}

impl Tool {
    pub(super) fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Bash => "bash",
            Tool::Edit => "edit",
            Tool::Write => "write",
            Tool::Grep => "grep",
            Tool::Find => "find",
        }
    }
}

pub(super) struct Pending {
    pub(super) call_id: Vec<u8>,
    pub(super) tool: Tool,
    pub(super) path: String,
    /// Bytes written by a `write` call.
    pub(super) written: usize,
    pub(super) image: bool,
}

pub(super) struct Gen<W: Write> {
    pub(super) out: W,
    pub(super) buf: Vec<u8>,
    scratch: Vec<u8>,
    flushed: u64,
    pub(super) target: u64,
    pub(super) reserve: i64,
    pub(super) small: bool,
    /// PiG's content blocks instead of pi's.
    pub(super) pig: bool,
    /// In a side trip: no images or big tool outputs.
    pub(super) side: bool,
    pub(super) p: &'static Params,
    pub(super) rng: Rng,
    pub(super) code: &'static TextPool,
    pub(super) prose: &'static TextPool,
    pub(super) cwd: String,
    pub(super) clock: i64,
    ids: HashSet<u32, IdHash>,
    pub(super) path: Vec<Node>,
    pub(super) pending: Vec<Pending>,
    pub(super) model: usize,
    pub(super) level: usize,
    pub(super) turns: u64,
    next_compact: u64,
    named: bool,
    pub(super) name_chance: f64,
    pub(super) stats: GenStats,
    kinds: [(u64, u64); 19],
    pub(super) tmp: String,
}

const FLUSH_AT: usize = 1 << 20;

/// Hasher for the set of entry ids: they are random already, one multiply
/// spreads them enough.
#[derive(Default, Clone, Copy)]
struct IdHash;

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) fn generate<W: Write>(spec: &SessionSpec, extra: &Extra, out: W) -> io::Result<GenStats> {
    let small = matches!(spec.mix, Mix::SmallEntries);
    let p: &'static Params = match spec.mix {
        Mix::Realistic => &REALISTIC,
        Mix::SmallEntries => &SMALL,
        Mix::ImageHeavy => &IMAGE_HEAVY,
    };
    let mut rng = Rng::new(spec.seed);
    let session_id = extra
        .session_id
        .clone()
        .unwrap_or_else(|| uuid_v7(spec.start_ms, &mut rng));
    let model = weighted(&mut rng, &MODEL_WEIGHTS);
    let level = rng.pick(&[0usize, 0, 1, 2, 3, 3, 4]);
    let next_compact = rng.range(p.compact_at.0, p.compact_at.1);
    let mut g = Gen {
        out,
        buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
        scratch: Vec::with_capacity(4096),
        flushed: 0,
        pig: spec.flavor == Flavor::Pig,
        target: spec.target_bytes,
        reserve: (spec.target_bytes as i64 / 40).clamp(p.reserve.0, p.reserve.1),
        small,
        side: false,
        p,
        rng,
        code: code_pool(),
        prose: prose_pool(),
        cwd: spec.cwd.clone(),
        clock: spec.start_ms,
        ids: HashSet::default(),
        path: Vec::new(),
        pending: Vec::new(),
        model,
        level,
        turns: 0,
        next_compact,
        named: false,
        name_chance: extra.name_chance.unwrap_or(0.6),
        stats: GenStats {
            bytes: 0,
            lines: 0,
            entries: 0,
            messages: 0,
            branches: 0,
            compactions: 0,
            leaf_id: String::new(),
            session_id: session_id.clone(),
            session_name: None,
            images: 0,
            image_bytes: 0,
            max_line_bytes: 0,
            first_ms: spec.start_ms,
            last_ms: spec.start_ms,
            by_kind: Vec::new(),
        },
        kinds: [(0, 0); 19],
        tmp: String::new(),
    };
    g.header(&session_id, extra.parent_session.as_deref())?;
    g.run()?;
    g.finish_file()
}

impl<W: Write> Gen<W> {
    // ----- bookkeeping -----

    pub(super) fn written(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    fn remaining(&self) -> i64 {
        self.target as i64 - self.written() as i64
    }

    fn near_end(&self) -> bool {
        self.remaining() <= self.reserve
    }

    /// Bytes the variable parts of the next entry may use.
    pub(super) fn avail(&self) -> usize {
        (self.remaining() - self.reserve / 2).max(0) as usize
    }

    pub(super) fn new_id(&mut self) -> u32 {
        loop {
            let v = self.rng.next() as u32;
            if self.ids.insert(v) {
                return v;
            }
        }
    }

    pub(super) fn leaf(&self) -> Option<u32> {
        self.path.last().map(|n| n.id)
    }

    /// The length of a variable text: uniform in `small` (`lo..=hi`) for
    /// SmallEntries, log-normal for Realistic (`big` is median, sigma, lo,
    /// hi; see [`Rng::lognormal`]). Callers cap it to the room left.
    pub(super) fn mix_len(&mut self, small: (u64, u64), big: (f64, f64, usize, usize)) -> usize {
        if self.small {
            self.rng.range(small.0, small.1) as usize
        } else {
            self.rng.lognormal(big.0, big.1, big.2, big.3)
        }
    }

    /// Advances the clock by `lo..=hi` ms (log-uniform) and returns it.
    pub(super) fn tick(&mut self, lo: u64, hi: u64) -> i64 {
        let d = if hi > lo {
            self.rng.log_uniform(lo.max(1) as f64, hi as f64) as i64
        } else {
            lo as i64
        };
        self.clock += d.max(1);
        self.clock
    }

    /// `{"type":"<ty>","id":"..","parentId":..,"timestamp":".."` for a new
    /// entry; returns (line start, id).
    pub(super) fn head(&mut self, ty: &str, ts: i64) -> (usize, u32) {
        let start = self.buf.len();
        let id = self.new_id();
        put(&mut self.buf, "{\"type\":\"");
        put(&mut self.buf, ty);
        put(&mut self.buf, "\",");
        self.put_ids(id, ts);
        (start, id)
    }

    /// `{"type":"<ty>","customType":` for a new entry that, as pi writes
    /// `custom` and `custom_message` entries, names its id, parent and
    /// timestamp ([`Gen::put_ids`]) after its own fields; returns (line
    /// start, id).
    pub(super) fn late_head(&mut self, ty: &str) -> (usize, u32) {
        let start = self.buf.len();
        let id = self.new_id();
        put(&mut self.buf, "{\"type\":\"");
        put(&mut self.buf, ty);
        put(&mut self.buf, "\",\"customType\":");
        (start, id)
    }

    /// `"id":"..","parentId":..,"timestamp":".."`, the parent being the leaf.
    pub(super) fn put_ids(&mut self, id: u32, ts: i64) {
        let parent = self.leaf();
        let b = &mut self.buf;
        put(b, "\"id\":\"");
        put_id(b, id);
        put(b, "\",\"parentId\":");
        match parent {
            Some(p) => {
                b.push(b'"');
                put_id(b, p);
                b.push(b'"');
            }
            None => put(b, "null"),
        }
        put(b, ",\"timestamp\":\"");
        put_iso(b, ts);
        b.push(b'"');
    }

    /// Ends the line started at `start` (the caller wrote the closing
    /// brace), records it and appends the node to the path.
    pub(super) fn finish(&mut self, start: usize, id: u32, kind: Kind, role: Role, img_bytes: usize) -> io::Result<()> {
        self.buf.push(b'\n');
        let len = self.buf.len() - start;
        let k = &mut self.kinds[kind as usize];
        k.0 += 1;
        k.1 += len as u64;
        let st = &mut self.stats;
        st.lines += 1;
        st.entries += 1;
        st.max_line_bytes = st.max_line_bytes.max(len as u64);
        st.last_ms = self.clock;
        if matches!(
            role,
            Role::User | Role::Assistant | Role::ToolResult | Role::CustomMsg | Role::Bash | Role::System
        ) && kind != Kind::CustomMessage
        {
            st.messages += 1;
        }
        debug_assert!(
            !self.small || (101..=SMALL_MAX_LINE).contains(&len),
            "small line of {len} bytes"
        );
        let (ctx_start, cum) = match self.path.last() {
            Some(n) => (n.ctx_start, n.cum),
            None => (0, 0),
        };
        let tokens = ((len - img_bytes) / 4 + if img_bytes > 0 { 1600 } else { 0 }) as u64;
        self.path.push(Node {
            id,
            role,
            ctx_start,
            cum: cum + tokens,
        });
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn finish_file(mut self) -> io::Result<GenStats> {
        self.flush_buf()?;
        self.out.flush()?;
        let mut st = self.stats;
        st.bytes = self.flushed;
        st.leaf_id = self.path.last().map(|n| id_string(n.id)).unwrap_or_default();
        st.by_kind = KIND_NAMES
            .iter()
            .zip(self.kinds.iter())
            .filter(|(_, k)| k.0 > 0)
            .map(|(name, k)| KindStats {
                kind: name,
                lines: k.0,
                bytes: k.1,
            })
            .collect();
        Ok(st)
    }

    pub(super) fn cur_model(&self) -> &'static Model {
        &MODELS[self.model]
    }

    /// `"api":"..","provider":"..","model":".."` of an assistant message.
    pub(super) fn put_model_ids(&mut self) {
        let m = self.cur_model();
        let b = &mut self.buf;
        put(b, "\"api\":\"");
        put(b, m.api);
        put(b, "\",\"provider\":\"");
        put(b, m.provider);
        put(b, "\",\"model\":\"");
        put(b, m.id);
        b.push(b'"');
    }

    /// Tokens in the model context at the leaf (roughly).
    pub(super) fn ctx_tokens(&self) -> u64 {
        match self.path.last() {
            Some(n) => n.cum - self.path.get(n.ctx_start as usize).map_or(0, |s| s.cum),
            None => 0,
        }
    }

    // ----- the conversation -----

    pub(super) fn header(&mut self, id: &str, parent: Option<&str>) -> io::Result<()> {
        let b = &mut self.buf;
        put(b, "{\"type\":\"session\",\"version\":3,\"id\":");
        put_str(b, id);
        put(b, ",\"timestamp\":\"");
        put_iso(b, self.clock);
        put(b, "\",\"cwd\":");
        put_str(b, &self.cwd);
        if let Some(p) = parent {
            put(b, ",\"parentSession\":");
            put_str(b, p);
        }
        put(b, "}\n");
        let len = self.buf.len() as u64;
        self.kinds[Kind::Header as usize] = (1, len);
        self.stats.lines += 1;
        self.stats.max_line_bytes = len;
        Ok(())
    }

    pub(super) fn run(&mut self) -> io::Result<()> {
        // What pi writes when a session starts.
        if !self.near_end() {
            let (prov, id) = (self.cur_model().provider, self.cur_model().id);
            self.tick(20, 400);
            self.model_change_to(prov, id)?;
        }
        if !self.near_end() {
            self.tick(1, 5);
            self.thinking_change_to(self.level)?;
        }
        if !self.near_end() && self.rng.chance(0.85) {
            self.system_message(true)?;
        }
        while !self.near_end() {
            self.turn()?;
        }
        self.fill()
    }

    pub(super) fn turn(&mut self) -> io::Result<()> {
        self.turns += 1;
        let p = self.p;
        if self.turns > 2 && self.rng.chance(p.branch) {
            self.branch()?;
        }
        if p.side_trip > 0.0 && !self.side && self.turns > 2 && self.rng.chance(p.side_trip) {
            return self.side_trip();
        }
        type Step<W> = fn(&mut Gen<W>) -> io::Result<()>;
        let steps: [(f64, Step<W>); 8] = [
            (p.model_change, Self::model_change),
            (p.thinking_change, Self::thinking_change),
            (p.bash_exec, Self::bash_execution),
            (p.custom, Self::custom),
            (p.label, Self::label),
            (p.usage, Self::usage_entry),
            (p.context_edit, Self::context_edit),
            (p.system_update, Self::system_update),
        ];
        for (prob, step) in steps {
            if self.near_end() {
                return Ok(());
            }
            if self.rng.chance(prob) {
                step(self)?;
            }
        }
        let name_chance = if !self.named && self.turns >= 2 {
            self.named = true;
            self.name_chance
        } else {
            p.rename
        };
        if self.near_end() {
            return Ok(());
        }
        if self.rng.chance(name_chance) {
            self.session_info()?;
        }
        if self.near_end() {
            return Ok(());
        }
        if self.ctx_tokens() >= self.next_compact {
            self.compaction()?;
            self.next_compact = self.rng.range(p.compact_at.0, p.compact_at.1);
            if self.near_end() {
                return Ok(());
            }
        }
        if self.near_end() {
            return Ok(());
        }
        if self.rng.chance(p.custom_message) {
            self.custom_message()?;
            if self.near_end() {
                return Ok(());
            }
        }
        self.user()?;
        loop {
            if self.near_end() {
                return Ok(());
            }
            let stop = self.assistant(false)?;
            if stop {
                return Ok(());
            }
            while !self.pending.is_empty() {
                if self.near_end() {
                    return Ok(());
                }
                self.tool_result()?;
            }
            if self.rng.chance(p.stop) {
                break;
            }
        }
        if self.near_end() {
            return Ok(());
        }
        self.assistant(true)?;
        Ok(())
    }

    /// Goes back to an earlier point of the path: the parent of a recent
    /// (sometimes an old) user message; sometimes records a branch summary.
    pub(super) fn branch(&mut self) -> io::Result<()> {
        let n = self.path.len();
        if n < 4 {
            return Ok(());
        }
        let r = self.rng.below(1000);
        // Mostly a few entries back (a retried turn), sometimes further.
        let back = if r < 920 {
            self.rng.geometric(0.15) as usize
        } else if r < 997 {
            self.rng.below(100) as usize
        } else {
            self.rng.below(3_000) as usize
        };
        let mut i = n - 1 - back.min(n - 1);
        while i > 0 && self.path[i].role != Role::User {
            i -= 1;
        }
        if i == 0 {
            return Ok(());
        }
        let from = self.path[n - 1].id;
        self.path.truncate(i);
        self.pending.clear();
        self.stats.branches += 1;
        if self.rng.chance(self.p.branch_summary) {
            self.branch_summary(from)?;
        }
        Ok(())
    }

    /// Branches back, writes a few turns of small entries there, and returns to the tip it
    /// left: the next entry's parent is that tip again, as after pi's `/tree` back.
    fn side_trip(&mut self) -> io::Result<()> {
        let saved = self.path.clone();
        let branches = self.stats.branches;
        self.branch()?;
        if self.stats.branches == branches {
            return Ok(());
        }
        self.side = true;
        for _ in 0..self.rng.range(1, 10) {
            if self.near_end() {
                break;
            }
            self.turn()?;
        }
        self.side = false;
        self.pending.clear();
        self.path = saved;
        Ok(())
    }

    // ----- exact-size fillers at the end -----

    /// Fills the remaining bytes with user/assistant messages of exact
    /// sizes, ending on an assistant message when the room allows.
    fn fill(&mut self) -> io::Result<()> {
        let a_min = if self.small { 520 } else { 700 };
        let u_min = 200;
        let c_min = 150;
        let a_max = self.p.fill_assistant_max;
        let u_max = self.p.fill_user_max;
        let c_max = if self.small { 590 } else { 4_000 };
        // A session holds at least one user and one assistant message.
        let mut need_user = self.kinds[Kind::User as usize].0 + self.kinds[Kind::UserImage as usize].0 == 0;
        self.pending.clear();
        loop {
            let r = self.remaining();
            if r < c_min as i64 {
                break;
            }
            let r = r as usize;
            if need_user {
                let s = r.saturating_sub(a_min).min(u_max).max(u_min);
                self.fill_message(s, true)?;
                need_user = false;
                continue;
            }
            if (a_min..=a_max).contains(&r) {
                self.fill_message(r, false)?;
                break;
            }
            if r < a_min {
                self.fill_custom(r.min(c_max))?;
                break;
            }
            // r > a_max: a user or assistant message leaving at least a_min.
            let last_user = self.path.last().is_some_and(|n| n.role == Role::User);
            let room = r - a_min;
            if !last_user && room >= u_min {
                self.fill_message(room.min(u_max), true)?;
            } else if room >= a_min {
                self.fill_message(room.min(a_max), false)?;
            } else {
                self.fill_custom(room.min(c_max).max(c_min))?;
            }
        }
        Ok(())
    }

    /// A user or assistant message of exactly `size` bytes (or the smallest
    /// possible if `size` is below that).
    fn fill_message(&mut self, size: usize, user: bool) -> io::Result<()> {
        let msg_ts = self.tick(1, 20);
        let ts = if user {
            self.tick(3_000, 200_000)
        } else {
            self.tick(800, 20_000)
        };
        let (start, id) = self.head("message", ts);
        // Suffix first, to know how long the text must be.
        let mark;
        if user {
            put(
                &mut self.buf,
                ",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"",
            );
            mark = self.buf.len();
            put(&mut self.buf, "\"}],\"timestamp\":");
            put_i64(&mut self.buf, msg_ts);
            put(&mut self.buf, "}}\n");
        } else {
            put(
                &mut self.buf,
                ",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"",
            );
            mark = self.buf.len();
            put(&mut self.buf, "\"}],");
            self.put_model_ids();
            put(&mut self.buf, ",\"usage\":");
            let cr = self.ctx_tokens().min(150_000);
            let i = self.rng.range(1, 9);
            let o = self.rng.range(20, 900);
            let w = self.rng.range(0, 900);
            self.put_usage(i, o, cr, w);
            put(&mut self.buf, ",\"stopReason\":\"stop\",\"timestamp\":");
            put_i64(&mut self.buf, msg_ts);
            put(&mut self.buf, "}}\n");
        }
        self.exact_text(start, mark, size, 1);
        let role = if user { Role::User } else { Role::Assistant };
        let kind = if user { Kind::User } else { Kind::Assistant };
        self.finish(start, id, kind, role, 0)
    }

    /// A `custom` entry of exactly `size` bytes (at least ~140).
    fn fill_custom(&mut self, size: usize) -> io::Result<()> {
        let ts = self.tick(10, 2_000);
        let (start, id) = self.late_head("custom");
        put(&mut self.buf, "\"notes\",\"data\":{\"text\":\"");
        let mark = self.buf.len();
        put(&mut self.buf, "\"},");
        self.put_ids(id, ts);
        put(&mut self.buf, "}\n");
        self.exact_text(start, mark, size, 0);
        self.finish(start, id, Kind::Custom, Role::Other, 0)
    }

    /// Moves the line's end, written at `buf[mark..]` with its newline, behind
    /// prose text (at least `min` bytes) sized so that the line from `start`
    /// has `size` bytes; the newline is left to [`Gen::finish`].
    fn exact_text(&mut self, start: usize, mark: usize, size: usize, min: usize) {
        let mut suf = std::mem::take(&mut self.scratch);
        suf.clear();
        suf.extend_from_slice(&self.buf[mark..]);
        self.buf.truncate(mark);
        let used = mark - start + suf.len();
        let text = size.saturating_sub(used).max(min);
        self.prose.put_exact(&mut self.buf, &mut self.rng, text);
        self.buf.extend_from_slice(&suf[..suf.len() - 1]);
        self.scratch = suf;
    }
}
