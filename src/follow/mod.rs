//! Following a session while pi writes it: the entries as they are appended, and what
//! happens to the file (rewritten, deleted, created again, a newer session started).
//!
//! A [`Follower`] holds the session open and brings it up to date with
//! [`Session::refresh`] whenever the file's folder changes: file events (inotify and its
//! kin, through `notify`) wake it at once; a poll stands in for events a file system does
//! not send (every 2 s without events, every 10 s as a safety net with them). Between
//! changes it sleeps: an idle follower uses no CPU. An entry is handed out once its line
//! is complete (its `\n` written): a line torn in two writes waits for its second half.
//!
//! ```no_run
//! use pi_session::follow::{Event, Follower, Target};
//! let mut f = Follower::new(Target::File("s.jsonl".into()), Default::default());
//! for event in &mut f {
//!     match event? {
//!         Event::Start { path, .. } => println!("reading {}", path.display()),
//!         Event::Entries(new) => println!("{} new entries", new.len()),
//!         Event::Gone { .. } => println!("the file is gone; waiting for it"),
//!     }
//! }
//! # Ok::<(), pi_session::Error>(())
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::index::EntryPos;
use crate::listing::{Place, find_most_recent};
use crate::session::{OpenOptions, Session};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// What to follow.
#[derive(Clone, Debug)]
pub enum Target {
    /// One session file.
    File(PathBuf),
    /// The newest session of a project (pi's `--continue`): followed until a newer one
    /// appears in the project's folder, then that one.
    Latest(Place),
}

/// Why the session is read from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Following begins.
    First,
    /// The file was rewritten in place (pi's migration, a `recover`) or replaced (a rename
    /// over it): what was handed out before may no longer be in it.
    Rewritten,
    /// The file came back after it was gone.
    Recreated,
    /// [`Target::Latest`]: a newer session of the project appeared.
    Switched,
}

/// What a [`Follower`] saw.
#[derive(Debug)]
pub enum Event {
    /// The session is read from its start ([`Follower::session`]); its complete entries
    /// come next as one [`Event::Entries`].
    Start {
        /// The file.
        path: PathBuf,
        /// Why.
        why: Why,
    },
    /// Entries whose lines were completed since the last event, in file order (positions
    /// in [`Follower::session`]).
    Entries(Vec<EntryPos>),
    /// The file is gone (deleted or renamed away); following waits for it to come back.
    Gone {
        /// The file.
        path: PathBuf,
    },
}

/// How often the file is looked at when no event came: a file system that sends none
/// (then the poll is all there is), and as a safety net when events come.
const POLL: Duration = Duration::from_secs(2);
const POLL_WITH_EVENTS: Duration = Duration::from_secs(10);

/// Follows a session: [`Follower::next_event`], or iterate (blocking).
pub struct Follower {
    target: Target,
    opts: OpenOptions,
    path: Option<PathBuf>,
    session: Option<Session>,
    /// Entries handed out (a prefix of the session's entries in file order).
    handed: usize,
    /// The file was gone when last looked at.
    gone: bool,
    started: bool,
    /// The file's length and time when it was last opened (a session pi migrated in
    /// memory cannot be refreshed: it is opened again only when these change).
    opened_as: Option<(u64, std::time::SystemTime)>,
    queue: std::collections::VecDeque<Event>,
    wake: mpsc::Receiver<()>,
    watcher: Option<notify::RecommendedWatcher>,
    watched: Option<PathBuf>,
    sender: mpsc::Sender<()>,
    /// Set by a [`Waker`]: the wait in [`Follower::next_event`] ends.
    woken: Arc<AtomicBool>,
}

/// Ends a [`Follower`]'s wait from another thread ([`Follower::waker`]): the
/// [`Follower::next_event`] waiting now, or else the next one, returns `Ok(None)` at once.
/// A follower run on a thread of its own is stopped with it.
#[derive(Clone, Debug)]
pub struct Waker {
    sender: mpsc::Sender<()>,
    woken: Arc<AtomicBool>,
}

impl Waker {
    /// Wake the follower.
    pub fn wake(&self) {
        self.woken.store(true, Ordering::SeqCst);
        let _ = self.sender.send(());
    }
}

impl Follower {
    /// Start following (nothing is read until the first [`Follower::next_event`]; a file
    /// that is not there yet is waited for).
    pub fn new(target: Target, opts: OpenOptions) -> Follower {
        let (sender, wake) = mpsc::channel();
        Follower {
            target,
            opts,
            path: None,
            session: None,
            handed: 0,
            gone: false,
            started: false,
            opened_as: None,
            queue: Default::default(),
            wake,
            watcher: None,
            watched: None,
            sender,
            woken: Arc::default(),
        }
    }

    /// A handle that ends this follower's wait from another thread.
    pub fn waker(&self) -> Waker {
        Waker {
            sender: self.sender.clone(),
            woken: Arc::clone(&self.woken),
        }
    }

    /// The session as last read, if the file is there.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The file followed now.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Skip what is in the file now: the next events are only what is appended later.
    ///
    /// # Errors
    /// As [`Follower::next_event`].
    pub fn skip_existing(&mut self) -> Result<()> {
        self.look()?;
        self.queue.retain(|e| matches!(e, Event::Gone { .. }));
        Ok(())
    }

    /// The next event, waiting for it at most `timeout` (`None`: as long as it takes).
    /// `Ok(None)`: nothing happened in time, or a [`Waker`] woke the follower.
    ///
    /// # Errors
    /// A file that cannot be read for another reason than being gone, or that is no
    /// session; the folder cannot be watched nor read.
    pub fn next_event(&mut self, timeout: Option<Duration>) -> Result<Option<Event>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Ok(Some(e));
            }
            if self.woken.swap(false, Ordering::SeqCst) {
                return Ok(None);
            }
            self.look()?;
            if !self.queue.is_empty() {
                continue;
            }
            let poll = if self.watcher.is_some() { POLL_WITH_EVENTS } else { POLL };
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) => left.min(poll),
                    None => return Ok(None),
                },
                None => poll,
            };
            match self.wake.recv_timeout(wait) {
                // Several events for one write: one look serves them all.
                Ok(()) => while self.wake.try_recv().is_ok() {},
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
            }
        }
    }

    /// Look at the file (and, for [`Target::Latest`], the folder) once; queue what changed.
    fn look(&mut self) -> Result<()> {
        let latest = match &self.target {
            Target::File(p) => Some(p.clone()),
            Target::Latest(place) => {
                let (dir, cwd) = place.project();
                let newest = find_most_recent(&place.env, &dir, cwd.as_deref());
                self.watch(&dir);
                newest.or_else(|| self.path.clone())
            }
        };
        let Some(latest) = latest else {
            return Ok(()); // no session in the project yet
        };
        if self.path.as_ref() != Some(&latest) {
            let switched = self.path.is_some();
            self.path = Some(latest.clone());
            self.session = None;
            if switched {
                self.gone = false;
                self.started = false;
                return self.open(Why::Switched);
            }
        }
        if let Target::File(p) = &self.target
            && let Some(dir) = p
                .parent()
                .map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d })
        {
            let dir = dir.to_path_buf();
            self.watch(&dir);
        }
        if self.session.is_none() {
            let why = match (self.started, self.gone) {
                (false, _) => Why::First,
                (true, true) => Why::Recreated,
                (true, false) => Why::Rewritten,
            };
            return self.open(why);
        }
        let s = self.session.as_mut().expect("checked");
        match s.refresh() {
            Ok(r) if r.rebuilt => {
                self.handed = 0;
                self.queue.push_back(Event::Start {
                    path: latest,
                    why: Why::Rewritten,
                });
                self.hand_out();
                Ok(())
            }
            Ok(_) => {
                self.hand_out();
                Ok(())
            }
            Err(e) if is_gone(&e) => {
                self.session = None;
                self.gone_now(latest);
                Ok(())
            }
            // A session pi migrated in memory cannot take appends as such: read it again.
            Err(e) if matches!(e.kind(), ErrorKind::FileChanged { .. }) => {
                if self.opened_as == file_stamp(&latest) {
                    return Ok(()); // not changed since it was opened
                }
                self.session = None;
                self.open(Why::Rewritten)
            }
            Err(e) => Err(e),
        }
    }

    /// Open the file from scratch.
    fn open(&mut self, why: Why) -> Result<()> {
        let path = self.path.clone().expect("a file");
        // A file just created (or cut to nothing) is not a session yet: pi writes its
        // header next. Wait for it.
        let stamp = file_stamp(&path);
        if stamp.is_some_and(|(len, _)| len == 0) {
            return Ok(());
        }
        self.opened_as = stamp;
        match Session::open_with(&path, self.opts) {
            Ok(s) => {
                self.session = Some(s);
                self.handed = 0;
                self.gone = false;
                self.started = true;
                self.queue.push_back(Event::Start { path, why });
                self.hand_out();
                Ok(())
            }
            Err(e) if is_gone(&e) => {
                self.gone_now(path);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn gone_now(&mut self, path: PathBuf) {
        if !self.gone {
            self.gone = true;
            self.started = true;
            self.queue.push_back(Event::Gone { path });
        }
    }

    /// Queue the entries completed since the last hand-out.
    fn hand_out(&mut self) {
        let Some(s) = &self.session else { return };
        let bytes = s.bytes();
        // Lines up to the last `\n` are complete.
        let complete = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1) as u64;
        let entries = s.entries();
        let new: Vec<EntryPos> = entries[self.handed.min(entries.len())..]
            .iter()
            .copied()
            .take_while(|&p| s.record(p).offset.0 < complete)
            .collect();
        self.handed += new.len();
        if !new.is_empty() || self.queue.back().is_some_and(|e| matches!(e, Event::Start { .. })) {
            self.queue.push_back(Event::Entries(new));
        }
    }

    /// Watch `dir` (the file's folder: a file deleted and created again is a new inode
    /// that a watch on the file itself would miss), once.
    fn watch(&mut self, dir: &Path) {
        use notify::Watcher as _;
        if self.watched.as_deref() == Some(dir) {
            return;
        }
        let tx = self.sender.clone();
        let watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            // Reads (this process's own among them) change nothing.
            if !e.is_ok_and(|e| e.kind.is_access()) {
                let _ = tx.send(());
            }
        });
        // No events (no inotify, too many watches): the slow poll alone.
        if let Ok(mut w) = watcher
            && w.watch(dir, notify::RecursiveMode::NonRecursive).is_ok()
        {
            self.watcher = Some(w);
        }
        self.watched = Some(dir.to_path_buf());
    }
}

/// A file's length and modification time, when it can be read.
fn file_stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Whether an error says the file is not there (deleted, or its folder).
fn is_gone(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

impl Iterator for Follower {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event(None).transpose()
    }
}
