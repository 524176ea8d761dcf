//! Exact replicas of the JavaScript (V8, Node 20) semantics that pi's
//! TypeScript `SessionManager` depends on, so that this crate computes
//! bit-for-bit the same results. Nothing here imports from the rest of the crate.
//!
//! * `number`: `String(number)`, `JSON.stringify` of numbers, `Number(string)`
//!   and `JSON.parse` of number tokens;
//! * `date`: `Date.parse` / `new Date(string).getTime()` (time zone UTC) and
//!   TimeClip; `time`: `toISOString()` and the clock;
//! * `sort`: the exact permutation produced by V8's `Array.prototype.sort`
//!   with a (possibly inconsistent) comparator;
//! * `string`: JavaScript strings as WTF-8 ([`JsStr`](string::JsStr)), UTF-16 order, `trim()`;
//! * `collate`: `localeCompare` as ICU orders ASCII text.

pub(crate) mod collate;
pub(crate) mod date;
pub(crate) mod number;
pub(crate) mod sort;
pub(crate) mod string;
pub(crate) mod time;
