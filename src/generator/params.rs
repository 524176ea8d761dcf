//! The parameter tables: the models a session switches between, thinking levels, and the
//! probabilities and sizes of each [`Mix`](super::Mix).

pub(super) struct Model {
    pub(super) api: &'static str,
    pub(super) provider: &'static str,
    pub(super) id: &'static str,
    /// $ per million tokens: input, output, cache read, cache write.
    pub(super) price: [f64; 4],
    pub(super) sig: Sig,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Sig {
    Anthropic,
    OpenAi,
    None,
}

pub(super) const MODELS: &[Model] = &[
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-sonnet-4-5",
        price: [3.0, 15.0, 0.3, 3.75],
        sig: Sig::Anthropic,
    },
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-opus-4-5",
        price: [5.0, 25.0, 0.5, 6.25],
        sig: Sig::Anthropic,
    },
    Model {
        api: "openai-responses",
        provider: "openai",
        id: "gpt-5.1-codex",
        price: [1.25, 10.0, 0.125, 0.0],
        sig: Sig::OpenAi,
    },
    Model {
        api: "google-generative-ai",
        provider: "google",
        id: "gemini-2.5-pro",
        price: [1.25, 10.0, 0.31, 0.0],
        sig: Sig::None,
    },
    Model {
        api: "anthropic-messages",
        provider: "anthropic",
        id: "claude-haiku-4-5",
        price: [1.0, 5.0, 0.1, 1.25],
        sig: Sig::Anthropic,
    },
    Model {
        api: "openai-completions",
        provider: "openrouter",
        id: "z-ai/glm-4.6",
        price: [0.6, 2.2, 0.11, 0.0],
        sig: Sig::None,
    },
];
/// Model choice weights (index into MODELS).
pub(super) const MODEL_WEIGHTS: [u64; 6] = [40, 25, 15, 8, 7, 5];
pub(super) const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

/// Probabilities and sizes of one mix.
pub(super) struct Params {
    pub(super) branch: f64,
    pub(super) branch_summary: f64,
    pub(super) model_change: f64,
    pub(super) thinking_change: f64,
    pub(super) bash_exec: f64,
    pub(super) custom: f64,
    pub(super) custom_message: f64,
    pub(super) label: f64,
    pub(super) usage: f64,
    pub(super) context_edit: f64,
    pub(super) system_update: f64,
    pub(super) rename: f64,
    pub(super) img_user: f64,
    pub(super) img_tool: f64,
    pub(super) big_tool: f64,
    /// Chance per turn of a side trip: a branch back to an earlier user message, a few
    /// turns there without images or big outputs, then back to the tip it left (so the
    /// abandoned branches hold many small lines and few bytes).
    pub(super) side_trip: f64,
    /// Chance to stop the agent loop after each tool round.
    pub(super) stop: f64,
    /// Context size (tokens) that triggers a compaction, range.
    pub(super) compact_at: (u64, u64),
    /// Bytes kept free for the final fillers: target / 40 within these
    /// bounds.
    pub(super) reserve: (i64, i64),
    /// Largest filler lines.
    pub(super) fill_user_max: usize,
    pub(super) fill_assistant_max: usize,
}

/// [`Mix::Realistic`](super::Mix::Realistic).
pub(super) const REALISTIC: Params = Params {
    branch: 0.28,
    branch_summary: 0.4,
    model_change: 0.02,
    thinking_change: 0.03,
    bash_exec: 0.04,
    custom: 0.04,
    custom_message: 0.03,
    label: 0.03,
    usage: 0.02,
    context_edit: 0.05,
    system_update: 0.005,
    rename: 0.004,
    img_user: 0.007,
    img_tool: 0.0015,
    big_tool: 0.007,
    side_trip: 0.0,
    stop: 0.2,
    compact_at: (120_000, 180_000),
    reserve: (8_000, 40_000),
    fill_user_max: 3_000,
    fill_assistant_max: 8_000,
};

/// [`Mix::SmallEntries`](super::Mix::SmallEntries): the same entry mix as [`REALISTIC`],
/// without images or big tool outputs, with smaller contexts and fillers.
pub(super) const SMALL: Params = Params {
    img_user: 0.0,
    img_tool: 0.0,
    big_tool: 0.0,
    compact_at: (12_000, 24_000),
    reserve: (1_800, 1_800),
    fill_user_max: 560,
    fill_assistant_max: 590,
    ..REALISTIC
};

/// [`Mix::ImageHeavy`](super::Mix::ImageHeavy): the entry mix of [`REALISTIC`] with ten
/// times the images and big tool outputs, few and short branches, fewer context edits, and
/// a compaction threshold no session reaches (2^50 tokens).
pub(super) const IMAGE_HEAVY: Params = Params {
    branch: 0.03,
    context_edit: 0.01,
    img_user: 0.24,
    img_tool: 0.05,
    big_tool: 0.24,
    side_trip: 0.27,
    compact_at: (1 << 50, 1 << 51),
    ..REALISTIC
};

/// Lines of a SmallEntries file stay within these bounds.
pub(super) const SMALL_MAX_LINE: usize = 600;
