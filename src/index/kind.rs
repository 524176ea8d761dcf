//! The entry types and message roles pi knows ([`EntryType`], [`Role`]).

use super::build::{Changed, string_bytes};
use crate::json::{Field, Kind};

/// The entry types pi knows; everything else is [`EntryType::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryType {
    /// `session` (the header, or a later header-like line pi ignores)
    Session,
    /// `message`
    Message,
    /// `model_change`
    ModelChange,
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `compaction`
    Compaction,
    /// `branch_summary`
    BranchSummary,
    /// `custom`
    Custom,
    /// `custom_message`
    CustomMessage,
    /// `label`
    Label,
    /// `session_info`
    SessionInfo,
    /// `context_edit`
    ContextEdit,
    /// `usage`
    Usage,
    /// An object with another (or no, or a non-string) `type`.
    Other,
    /// A kept line that is not an object (`42`, `true`, `"x"`, `[1]`).
    NonObject,
}

impl EntryType {
    pub(crate) fn from_type_str(s: &[u8]) -> EntryType {
        match s {
            b"session" => EntryType::Session,
            b"message" => EntryType::Message,
            b"model_change" => EntryType::ModelChange,
            b"thinking_level_change" => EntryType::ThinkingLevelChange,
            b"compaction" => EntryType::Compaction,
            b"branch_summary" => EntryType::BranchSummary,
            b"custom" => EntryType::Custom,
            b"custom_message" => EntryType::CustomMessage,
            b"label" => EntryType::Label,
            b"session_info" => EntryType::SessionInfo,
            b"context_edit" => EntryType::ContextEdit,
            b"usage" => EntryType::Usage,
            _ => EntryType::Other,
        }
    }
    /// The `type` string, for the known types.
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            EntryType::Session => "session",
            EntryType::Message => "message",
            EntryType::ModelChange => "model_change",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::ContextEdit => "context_edit",
            EntryType::Usage => "usage",
            EntryType::Other | EntryType::NonObject => return None,
        })
    }
}

/// A message's `role`, classified while indexing (so walks need not decode messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// No `role` member, or the message is not an object.
    Missing,
    /// `role` is not a string.
    NotString,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `toolResult`
    ToolResult,
    /// `system`
    System,
    /// `custom`
    Custom,
    /// `bashExecution`
    BashExecution,
    /// `branchSummary`
    BranchSummary,
    /// `compactionSummary`
    CompactionSummary,
    /// `hookMessage` (format v2; migrated to `custom`)
    HookMessage,
    /// Any other string.
    Other,
}

impl Role {
    pub(super) fn classify(line: &[u8], f: Option<Field>) -> Result<Role, Changed> {
        let Some(f) = f else { return Ok(Role::Missing) };
        if !matches!(f.kind, Kind::String { .. }) {
            return Ok(Role::NotString);
        }
        Ok(Role::from_name(string_bytes(line, &f)?.as_bytes()))
    }

    /// The role a `role` string names.
    pub(crate) fn from_name(s: &[u8]) -> Role {
        match s {
            b"user" => Role::User,
            b"assistant" => Role::Assistant,
            b"toolResult" => Role::ToolResult,
            b"system" => Role::System,
            b"custom" => Role::Custom,
            b"bashExecution" => Role::BashExecution,
            b"branchSummary" => Role::BranchSummary,
            b"compactionSummary" => Role::CompactionSummary,
            b"hookMessage" => Role::HookMessage,
            _ => Role::Other,
        }
    }
}
