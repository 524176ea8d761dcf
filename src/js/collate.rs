//! JavaScript's `localeCompare` as node's default ICU collator orders ASCII text.

use std::cmp::Ordering;

/// Primary weight of an ASCII character in ICU's root collation (CLDR, punctuation not
/// ignorable), 0 for ignorable control characters. Letters share a weight per case pair.
fn ascii_primary(c: u8) -> u32 {
    const ORDER: &[u8] = b" _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789";
    if c.is_ascii_alphabetic() {
        return 100 + u32::from(c.to_ascii_lowercase() - b'a');
    }
    match ORDER.iter().position(|&o| o == c) {
        Some(p) => 1 + p as u32,
        None => 0,
    }
}

fn weights(s: &str) -> impl Iterator<Item = (u32, u8)> + '_ {
    s.chars().filter_map(|ch| {
        let cp = ch as u32;
        if cp < 0x80 {
            let c = cp as u8;
            let p = ascii_primary(c);
            (p != 0).then_some((p, u8::from(c.is_ascii_uppercase())))
        } else {
            Some((1000 + cp, 0))
        }
    })
}

/// JavaScript's `a.localeCompare(b)` (ICU root collation, as node's default `en-US`
/// collator applies it) for ASCII strings: primary order space < `_-,;:!?.'"()[]{}@*/\&#%`^+<=>|~$`
/// < digits < letters (case-insensitive), then lowercase before uppercase; control
/// characters are ignored. Non-ASCII characters are ordered after every ASCII character,
/// by code point (an approximation: pi's session file names are ASCII).
pub(crate) fn locale_compare(a: &str, b: &str) -> Ordering {
    let p = weights(a).map(|w| w.0).cmp(weights(b).map(|w| w.0));
    if p != Ordering::Equal {
        return p;
    }
    weights(a).map(|w| w.1).cmp(weights(b).map(|w| w.1))
}

pub(crate) fn locale_compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    locale_compare(&String::from_utf8_lossy(a), &String::from_utf8_lossy(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_compare_like_node() {
        // Checked with node 20 (ICU): "a".localeCompare("A") = -1, etc.
        assert_eq!(locale_compare("a", "A"), Ordering::Less);
        assert_eq!(locale_compare("a", "B"), Ordering::Less);
        assert_eq!(locale_compare("ab", "Aa"), Ordering::Greater);
        assert_eq!(locale_compare("a\x01b", "ab"), Ordering::Equal);
        assert_eq!(locale_compare("a-b", "ab"), Ordering::Less);
        assert_eq!(locale_compare("a_b", "a-b"), Ordering::Less);
        assert_eq!(locale_compare("a.jsonl", "a-1.jsonl"), Ordering::Greater);
        assert_eq!(locale_compare("Z", "a"), Ordering::Greater);
    }
}
