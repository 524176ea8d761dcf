//! The listing cache's own checks, shared by the property tests (`twins.rs`) and the
//! `listing_cache` fuzz target (through `internals`): the carry held against a listing
//! of the whole file, and the cache file's decoder against its encoder.

use super::info::{InfoScratch, Resume, build_carried};
use super::store;
use std::path::Path;

/// A file listed when it ended at `cut` and then grown to `bytes`: the listing carried
/// on from the first listing's carry must be the listing of the whole (the cache's
/// append path), with the same carry. `Err` says how they differ.
pub(crate) fn carry_twin(bytes: &[u8], cut: usize, skip_text: bool) -> Result<(), String> {
    let path = Path::new("x.jsonl");
    let k = cut.min(bytes.len());
    let scratch = || InfoScratch {
        skip_text,
        ..InfoScratch::default()
    };
    let whole = build_carried(path, bytes, bytes, 5.0, &mut scratch(), None, true).ok_or("no resume, no None")?;
    let before =
        build_carried(path, &bytes[..k], &bytes[..k], 5.0, &mut scratch(), None, true).ok_or("no resume, no None")?;
    let carry = before.carry.ok_or("bytes that hold still keep a carry")?;
    if carry.offset as usize > k {
        return Err(format!("carry at {} past the end {k}", carry.offset));
    }
    let text: &[u8] = match &before.result {
        Ok(info) => info
            .all_messages_text
            .as_bytes()
            .get(..carry.text_len as usize)
            .ok_or("the carry's text is longer than the text")?,
        // The cache keeps no text for a dropped file: it reads such a file whole.
        Err(_) if carry.text_len > 0 => return Ok(()),
        Err(_) => &[],
    };
    let off = carry.offset as usize;
    let resume = Resume { carry: &carry, text };
    let resumed = build_carried(
        path,
        &bytes[off..],
        &bytes[off..],
        5.0,
        &mut scratch(),
        Some(resume),
        true,
    )
    .ok_or("the carry's header line no longer parses")?;
    // Debug text: a `created` of NaN is equal to itself there.
    let (a, b) = (format!("{:?}", resumed.result), format!("{:?}", whole.result));
    if a != b {
        return Err(format!("carried on from {off}: {a}\nwhole: {b}"));
    }
    if resumed.carry != whole.carry {
        return Err(format!("carries differ: {:?} / {:?}", resumed.carry, whole.carry));
    }
    if whole.result.is_ok() && resumed.header_line != whole.header_line {
        return Err("header lines differ".into());
    }
    Ok(())
}

/// Decode `bytes` as a cache file (never a panic); when they decode, their entries
/// encoded again decode to the same entries. `Ok(true)` when they decoded.
pub(crate) fn cache_file_roundtrip(bytes: &[u8]) -> Result<bool, String> {
    let Ok(s) = store::sections(bytes) else {
        return Ok(false);
    };
    let Some(entries) = store::entries(&bytes[s.meta.clone()], s.count) else {
        return Ok(false);
    };
    let again = store::encode(&s.key, s.text_gen, &entries);
    let s2 = store::sections(&again).map_err(|e| format!("re-encoded file refused: {e:?}"))?;
    let back = store::entries(&again[s2.meta.clone()], s2.count).ok_or("re-encoded entries refused")?;
    if back != entries || s2.key != s.key || s2.text_gen != s.text_gen {
        return Err("entries changed in a round trip".into());
    }
    Ok(true)
}
