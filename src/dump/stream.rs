//! The canonical form written as it is produced: containers opened and closed by hand,
//! values written where they stand, the output passed on every 1 MiB. What it writes is
//! byte for byte what [`super::canonical::write_canonical`] writes for the whole value
//! (the caller writes object members in sorted key order), so `dump` needs no document
//! in memory: a container is `[]` / `{}` when nothing was put in it, else one item a line.
//!
//! ```
//! use pi_session::dump::canonical::{CanonOptions, canonical_string};
//! use pi_session::dump::stream::Stream;
//! use pi_session::Value;
//! let opts = CanonOptions { indent: 2, digest_over: None };
//! let mut out = Vec::new();
//! let mut s = Stream::new(&mut out, opts);
//! s.open(b'{').unwrap();
//! s.key("a").unwrap();
//! s.open(b'[').unwrap();
//! s.close(b']').unwrap();
//! s.key("b").unwrap();
//! s.value(&Value::Number(1.0)).unwrap();
//! s.close(b'}').unwrap();
//! s.finish().unwrap();
//! let whole = Value::parse(br#"{"b":1,"a":[]}"#).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), canonical_string(&whole, opts));
//! ```

use crate::dump::canonical::{CanonOptions, canonical_into};
use crate::json::Value;
use crate::json::stringify::push_json_string;
use std::io::{self, Write};

/// Output is handed on once this much is buffered.
const SPILL: usize = 1 << 20;

/// A canonical JSON writer over `W`.
pub struct Stream<'w, W: Write> {
    w: &'w mut W,
    buf: Vec<u8>,
    opts: CanonOptions,
    /// For each open container: whether it has an item yet.
    open: Vec<bool>,
}

impl<'w, W: Write> Stream<'w, W> {
    /// A writer with these options.
    pub fn new(w: &'w mut W, opts: CanonOptions) -> Self {
        Stream {
            w,
            // Spilled past 1 MiB: room for what one step adds before the check.
            buf: Vec::with_capacity(SPILL + (1 << 18)),
            opts,
            open: Vec::new(),
        }
    }

    /// How many containers are open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() > SPILL {
            self.w.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn newline(&mut self, depth: usize) {
        if self.opts.indent > 0 {
            self.buf.push(b'\n');
            self.buf.resize(self.buf.len() + self.opts.indent * depth, b' ');
        }
    }

    /// Start an item of the innermost container (a separator and a new line).
    fn item(&mut self) -> io::Result<()> {
        self.spill()?;
        if let Some(has) = self.open.last_mut() {
            if *has {
                self.buf.push(b',');
            }
            *has = true;
            let d = self.open.len();
            self.newline(d);
        }
        Ok(())
    }

    /// Open `[` or `{` (as an array item, or after [`Stream::key`]).
    ///
    /// # Errors
    /// The writer's.
    pub fn open(&mut self, c: u8) -> io::Result<()> {
        self.buf.push(c);
        self.open.push(false);
        Ok(())
    }

    /// Start an array item that is a container: the separator, then [`Stream::open`].
    ///
    /// # Errors
    /// The writer's.
    pub fn open_item(&mut self, c: u8) -> io::Result<()> {
        self.item()?;
        self.open(c)
    }

    /// Close the innermost container with `]` or `}`.
    ///
    /// # Errors
    /// The writer's.
    pub fn close(&mut self, c: u8) -> io::Result<()> {
        if self.open.pop() == Some(true) {
            let d = self.open.len();
            self.newline(d);
        }
        self.buf.push(c);
        self.spill()
    }

    /// An object member's key; its value follows.
    ///
    /// # Errors
    /// The writer's.
    pub fn key(&mut self, k: &str) -> io::Result<()> {
        self.item()?;
        push_json_string(&mut self.buf, k.as_bytes());
        self.buf
            .extend_from_slice(if self.opts.indent > 0 { b": " } else { b":" });
        Ok(())
    }

    /// A whole value, after a key.
    ///
    /// # Errors
    /// The writer's.
    pub fn value(&mut self, v: &Value<'_>) -> io::Result<()> {
        let d = self.open.len();
        canonical_into(&mut self.buf, self.w, v, self.opts, d)?;
        self.spill()
    }

    /// A whole value as an array item.
    ///
    /// # Errors
    /// The writer's.
    pub fn value_item(&mut self, v: &Value<'_>) -> io::Result<()> {
        self.item()?;
        self.value(v)
    }

    /// A member: key and value.
    ///
    /// # Errors
    /// The writer's.
    pub fn member(&mut self, k: &str, v: &Value<'_>) -> io::Result<()> {
        self.key(k)?;
        self.value(v)
    }

    /// Hand the rest to the writer.
    ///
    /// # Errors
    /// The writer's.
    pub fn finish(mut self) -> io::Result<()> {
        self.w.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}
