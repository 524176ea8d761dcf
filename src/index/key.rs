//! Entry ids and parent ids as pi's `Map` keys ([`Key`], [`KeyRef`]): what two ids being
//! "the same" means to pi.

use smallvec::SmallVec;
use std::fmt;

static UNDEFINED: Key = Key::Undefined;
static NULL: Key = Key::Null;

/// An entry `id` or `parentId` as a JavaScript `Map` key / `===` operand.
///
/// pi keys its `byId` map by whatever JSON value `id` holds, so a faithful index must too:
/// a missing id is `undefined`, objects and arrays are unique (never equal to anything
/// but themselves), numbers compare by value with `-0 == 0`.
#[derive(Clone, PartialEq, Eq)]
pub enum Key {
    /// The key is missing (`undefined`).
    Undefined,
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, by its bits (with `-0` folded into `0`).
    Num(u64),
    /// A string (WTF-8 bytes).
    Str(SmallVec<[u8; 8]>),
    /// An object or array, unique per occurrence.
    Unique(u64),
}

impl Key {
    /// A string key.
    pub fn str(s: &str) -> Key {
        Key::Str(SmallVec::from_slice(s.as_bytes()))
    }
    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        KeyRef::from(self).truthy()
    }
    /// The string, if this key is one without lone surrogates.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Key::Str(s) => std::str::from_utf8(s).ok(),
            _ => None,
        }
    }
    /// True for `undefined`.
    pub fn is_undefined(&self) -> bool {
        matches!(self, Key::Undefined)
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        KeyRef::from(self).hash(h);
    }
}

/// A key as the index hands it out: the bytes of a plain string id in the file (no
/// escapes, ASCII: the bytes are the string), or a [`Key`] the index holds.
///
/// Equal keys are equal and hash alike whichever way they are held.
#[derive(Clone, Copy)]
pub struct KeyRef<'a>(pub(super) KeyRepr<'a>);

#[derive(Clone, Copy)]
pub(super) enum KeyRepr<'a> {
    Str(&'a [u8]),
    Key(&'a Key),
}

impl<'a> From<&'a Key> for KeyRef<'a> {
    fn from(k: &'a Key) -> KeyRef<'a> {
        KeyRef(KeyRepr::Key(k))
    }
}

impl<'a> KeyRef<'a> {
    /// `undefined`
    pub const UNDEFINED: KeyRef<'static> = KeyRef(KeyRepr::Key(&UNDEFINED));
    /// `null`
    pub const NULL: KeyRef<'static> = KeyRef(KeyRepr::Key(&NULL));

    /// The string's bytes (WTF-8), when the key is a string.
    pub fn str_bytes(self) -> Option<&'a [u8]> {
        match self.0 {
            KeyRepr::Str(b) => Some(b),
            KeyRepr::Key(Key::Str(s)) => Some(s),
            KeyRepr::Key(_) => None,
        }
    }
    /// The string, if this key is one without lone surrogates.
    pub fn as_str(self) -> Option<&'a str> {
        self.str_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }
    /// The key itself, when it is not a string (`None` for strings: see [`KeyRef::str_bytes`]).
    pub fn non_string(self) -> Option<&'a Key> {
        match self.0 {
            KeyRepr::Key(k) if !matches!(k, Key::Str(_)) => Some(k),
            _ => None,
        }
    }
    /// An owned copy.
    pub fn to_key(self) -> Key {
        match self.0 {
            KeyRepr::Str(b) => Key::Str(SmallVec::from_slice(b)),
            KeyRepr::Key(k) => k.clone(),
        }
    }
    /// JavaScript truthiness.
    pub fn truthy(self) -> bool {
        match self.0 {
            KeyRepr::Str(b) => !b.is_empty(),
            KeyRepr::Key(k) => match k {
                Key::Undefined | Key::Null | Key::Bool(false) => false,
                Key::Num(bits) => {
                    let n = f64::from_bits(*bits);
                    n != 0.0 && !n.is_nan()
                }
                Key::Str(s) => !s.is_empty(),
                Key::Bool(true) | Key::Unique(_) => true,
            },
        }
    }
    /// True for `undefined`.
    pub fn is_undefined(self) -> bool {
        matches!(self.0, KeyRepr::Key(Key::Undefined))
    }
    /// True for `null`.
    pub fn is_null(self) -> bool {
        matches!(self.0, KeyRepr::Key(Key::Null))
    }
}

impl PartialEq for KeyRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self.str_bytes(), other.str_bytes()) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.non_string() == other.non_string(),
            _ => false,
        }
    }
}
impl Eq for KeyRef<'_> {}

impl PartialEq<Key> for KeyRef<'_> {
    fn eq(&self, other: &Key) -> bool {
        *self == KeyRef::from(other)
    }
}

impl PartialEq<KeyRef<'_>> for Key {
    fn eq(&self, other: &KeyRef<'_>) -> bool {
        KeyRef::from(self) == *other
    }
}

impl std::hash::Hash for KeyRef<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let key = match self.0 {
            KeyRepr::Str(b) => return hash_str(b, h),
            KeyRepr::Key(k) => k,
        };
        match key {
            Key::Str(b) => hash_str(b, h),
            Key::Undefined => h.write_u8(0),
            Key::Null => h.write_u8(1),
            Key::Bool(b) => h.write_u8(2 + u8::from(*b)),
            Key::Num(bits) => {
                h.write_u8(5);
                h.write_u64(*bits);
            }
            Key::Unique(n) => {
                h.write_u8(6);
                h.write_u64(*n);
            }
        }
    }
}

/// A string key's hash, however it is held.
fn hash_str<H: std::hash::Hasher>(b: &[u8], h: &mut H) {
    h.write_u8(4);
    h.write(b);
    h.write_u8(0xFF);
}

impl fmt::Debug for KeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            KeyRepr::Str(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            KeyRepr::Key(k) => k.fmt(f),
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Undefined => f.write_str("undefined"),
            Key::Null => f.write_str("null"),
            Key::Bool(b) => write!(f, "{b}"),
            Key::Num(bits) => write!(f, "{}", f64::from_bits(*bits)),
            Key::Str(s) => write!(f, "{:?}", String::from_utf8_lossy(s)),
            Key::Unique(n) => write!(f, "<object #{n}>"),
        }
    }
}
