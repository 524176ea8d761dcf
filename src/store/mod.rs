//! The stores: how pi-session keeps what it learned of session files between runs, read
//! and written the same way by every cache (the listing's, the search maps, the usage
//! records; the content index to come).
//!
//! - `codec.rs`: the bytes of a cache file (integers, varints, byte strings, a [`Reader`]
//!   that reads a damaged file as damaged);
//! - `folder.rs`: a folder store (one cache file per folder of sessions, trusted per file
//!   by its `fstat` as the listing cache is), the atomic write of a cache file
//!   ([`write_atomically`], through `crate::files`), and the one wording of a cache's
//!   warning ([`cache_warning`]).
//!
//! Whether a file changed since it was read (its `fstat`, the digest of its bytes) is
//! `crate::source`'s rule, below this layer.

pub(crate) mod codec;
mod folder;

pub(crate) use codec::{Reader, put_bytes, put_u64, put_varint};
pub(crate) use folder::{FolderMaps, Kind, Outcome, by_folder, cache_warning, write_atomically};
