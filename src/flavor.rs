//! Which program's sessions: pi's, or PiG's (the Go port of pi).
//!
//! The two share the file format. They differ in where sessions live (see
//! [`crate::dirs`]), in the content blocks PiG adds (`tool_use`, `image` by `url`; see
//! [`crate::block`]: one reading serves both), in the model context (PiG applies no
//! `context_edit` entries; see [`crate::Session::context_as`]), and in what the generator
//! writes ([`crate::generator::SessionSpec::flavor`]).

/// pi or PiG.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// pi: `~/.pi/agent`, `PI_CODING_AGENT_DIR`, `PI_CODING_AGENT_SESSION_DIR`.
    #[default]
    Pi,
    /// PiG, the Go port: `~/.pig/agent`, `PIG_CODING_AGENT_DIR`, `PIG_CODING_AGENT_SESSION_DIR`.
    Pig,
}
