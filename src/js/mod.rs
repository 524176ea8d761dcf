//! Exact replicas of the JavaScript (V8, Node 20) semantics that pi's
//! TypeScript `SessionManager` depends on, so that this crate computes
//! bit-for-bit the same results:
//!
//! * [`number`]: `String(number)`, `JSON.stringify` of numbers, `Number(string)`
//!   and `JSON.parse` of number tokens;
//! * [`date`]: `Date.parse` / `new Date(string).getTime()` (time zone UTC) and
//!   TimeClip;
//! * [`sort`]: the exact permutation produced by V8's `Array.prototype.sort`
//!   with a (possibly inconsistent) comparator.

pub mod date;
pub mod number;
pub mod sort;
