//! Plumbing for the fuzz targets, benches and property tests (feature `internals`): the
//! per-line scanner, index builders, every string and structural kernel by name, and the
//! slow twins they are held against. Not part of the stable API: names and signatures
//! follow the code.

pub use crate::index::line::{Fields, Line, scan_line, scan_object_line};
pub use crate::index::{build, build_with};
pub use crate::js::string::is_js_blank;
pub use crate::json::dispatch::Isa;
pub use crate::json::string::skip_string_naive;
pub use crate::json::walk::max_depth;
pub use crate::json::{Field, Kind};

use crate::json::ws;

/// A white-space flavour of the JSON walkers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhiteSpace {
    /// Space and tab (the listing's readline lines).
    Blank,
    /// Space, tab and `\r` (an index line).
    Line,
    /// Space, tab, `\r` and `\n` (`JSON.parse`).
    Json,
}

impl WhiteSpace {
    /// All three.
    pub const ALL: [WhiteSpace; 3] = [WhiteSpace::Blank, WhiteSpace::Line, WhiteSpace::Json];
}

/// Every mask kernel this CPU can run.
pub fn kernels() -> Vec<Isa> {
    crate::json::dispatch::kernels()
}

/// Skip the string whose quote is at `i` with kernel `isa`.
pub fn skip_string_kernel(isa: Isa, b: &[u8], i: usize) -> Result<(usize, bool), crate::json::SyntaxError> {
    crate::json::dispatch::skip_string_kernel(isa, b, i)
}

/// The structural walker over the container at `i`: the AVX-512 build for
/// [`Isa::Avx512`] (when the CPU has it), the portable classes otherwise. `None` when it
/// cannot vouch for the value.
pub fn skip_container_kernel(isa: Isa, w: WhiteSpace, b: &[u8], i: usize) -> Option<usize> {
    use crate::json::dispatch::skip_container_kernel as k;
    match w {
        WhiteSpace::Blank => k::<ws::Blank>(isa, b, i),
        WhiteSpace::Line => k::<ws::Line>(isa, b, i),
        WhiteSpace::Json => k::<ws::Json>(isa, b, i),
    }
}

/// The exact (descent) walk over the container at `i`, compiled as the index and listing
/// run it: the twin of [`skip_container_kernel`]. `None` for anything but a valid container.
pub fn skip_container_exact(w: WhiteSpace, b: &[u8], i: usize) -> Option<usize> {
    use crate::json::walk::skip_container_exact_ws as k;
    match w {
        WhiteSpace::Blank => k::<ws::Blank>(b, i),
        WhiteSpace::Line => k::<ws::Line>(b, i),
        WhiteSpace::Json => k::<ws::Json>(b, i),
    }
}

/// WTF-8 bytes as code points (surrogates included).
pub fn wtf8_code_points(b: &[u8]) -> Vec<u32> {
    crate::js::string::code_points(b).collect()
}
