//! The search cache: the search maps (`map.rs`) of a folder's session files, kept in a
//! folder store (`crate::store`, [`SEARCH_MAPS`]) beside the listing cache, so that a
//! search of files that did not change reads neither their index nor most of their bytes,
//! and one of files whose sketch holds none of the pattern's pieces reads none of them.
//! (Format 2: each map starts with its file's sketch.)

pub(crate) use crate::store::{FolderMaps, Kind, Outcome, by_folder};

/// The search maps.
pub(crate) const SEARCH_MAPS: Kind = Kind {
    prefix: "smap",
    magic: b"pi-session-smap\n",
    format: 2,
    what: "search cache",
};
