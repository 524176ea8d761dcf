//! `follow()` and `followLatest()`: the library's [`Follower`] on a thread of its own,
//! handing each event to JavaScript through a thread-safe function. `index.js` makes the
//! events an `EventEmitter`'s and an async iterator's.
//!
//! The thread sleeps between changes (file events, else the library's slow poll), so an
//! idle follower costs no CPU and holds none of libuv's pool; `close()` wakes it and it
//! ends, releasing the function (the process may then exit).

use crate::js_error;
use crate::module::{env_of, path_text};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use pi_session::follow::{Event, Follower, Target, Waker, Why};
use pi_session::listing::Place;
use pi_session::listing::dirs::Flavor;
use pi_session::{EntryPos, Session};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One event of a follower, as it crosses to JavaScript: `kind` is `start` (then `file`,
/// `why` and the `header` line), `entries` (`file` and the `lines` completed since, each
/// exactly as written), `gone` (`file`) or `error` (`error`, pi's text or Node's; the
/// follower has stopped).
#[napi(object, object_from_js = false)]
pub struct FollowEvent {
    pub kind: String,
    pub file: Option<String>,
    pub why: Option<String>,
    pub header: Option<String>,
    pub lines: Option<Vec<String>>,
    pub error: Option<String>,
}

impl FollowEvent {
    fn new(kind: &str) -> FollowEvent {
        FollowEvent {
            kind: kind.to_string(),
            file: None,
            why: None,
            header: None,
            lines: None,
            error: None,
        }
    }
}

/// Where `followLatest` looks: pi's folders, as `SessionManager.continueRecent` finds the
/// newest session (`sessionDir`, `agentDir`: as pi's; `flavor`: `pi` or `pig`, whose
/// folders and variables are PiG's).
#[napi(object)]
pub struct LatestOf {
    pub cwd: Option<String>,
    pub session_dir: Option<String>,
    pub agent_dir: Option<String>,
    pub flavor: Option<String>,
}

type OnEvent = ThreadsafeFunction<FollowEvent, Unknown<'static>, FollowEvent, Status, false>;

/// A follower running on its thread.
#[napi]
pub struct NativeFollower {
    waker: Waker,
    stopped: Arc<AtomicBool>,
}

#[napi]
impl NativeFollower {
    /// Follow `file`, or with `latest` the newest session of a project; `onlyNew`: skip
    /// what is there now. `onEvent` is called with each [`FollowEvent`].
    #[napi(constructor)]
    pub fn new(
        file: Option<String>,
        latest: Option<LatestOf>,
        only_new: bool,
        #[napi(ts_arg_type = "(event: FollowEvent) => void")] on_event: OnEvent,
    ) -> Result<Self> {
        let target = match (file, latest) {
            (Some(file), None) => Target::File(PathBuf::from(file)),
            (None, Some(l)) => {
                let flavor = match l.flavor.as_deref() {
                    None | Some("pi") => Flavor::Pi,
                    Some("pig") => Flavor::Pig,
                    Some(other) => {
                        return Err(napi::Error::from_reason(format!(
                            "TypeError: flavor must be \"pi\" or \"pig\", not {other:?}"
                        )));
                    }
                };
                Target::Latest(Place::new(
                    env_of(flavor)?,
                    l.cwd.as_deref().map(Path::new),
                    l.agent_dir.as_deref().map(Path::new),
                    l.session_dir.as_deref().map(Path::new),
                ))
            }
            _ => return Err(napi::Error::from_reason("TypeError: a file or latest, not both")),
        };
        let mut follower = Follower::new(target, Default::default());
        let waker = follower.waker();
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopped);
        std::thread::Builder::new()
            .name("pi-session follow".into())
            .spawn(move || run(&mut follower, only_new, &stop, &on_event))
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(NativeFollower { waker, stopped })
    }

    /// Stop: no event is delivered after this returns, and the thread ends.
    #[napi]
    pub fn close(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.waker.wake();
    }
}

/// The follower's thread: each event to JavaScript until closed or an error.
fn run(f: &mut Follower, only_new: bool, stopped: &AtomicBool, on_event: &OnEvent) {
    let send = |e: FollowEvent| {
        !stopped.load(Ordering::SeqCst) && on_event.call(e, ThreadsafeFunctionCallMode::Blocking) == Status::Ok
    };
    if only_new && let Err(e) = f.skip_existing() {
        send(error_event(e));
        return;
    }
    while !stopped.load(Ordering::SeqCst) {
        let event = match f.next_event(None) {
            Ok(Some(e)) => e,
            Ok(None) => continue, // woken: stopped, or looked again
            Err(e) => {
                send(error_event(e));
                return;
            }
        };
        let out = match event {
            Event::Start { path, why } => {
                let mut out = FollowEvent::new("start");
                out.why = Some(why_text(why).to_string());
                out.header = f.session().map(|s| lossy(s.raw(EntryPos(0))));
                out.file = Some(path_text(&path));
                out
            }
            Event::Entries(new) => {
                let Some(s) = f.session() else { continue };
                let lines = new.iter().map(|&p| lossy(s.raw(p))).collect();
                // The bytes were the file's only if it was not rewritten meanwhile; if it
                // was, the next event starts it over.
                if verified(s).is_err() {
                    continue;
                }
                let mut out = FollowEvent::new("entries");
                out.lines = Some(lines);
                out.file = f.path().map(path_text);
                out
            }
            Event::Gone { path } => {
                let mut out = FollowEvent::new("gone");
                out.file = Some(path_text(&path));
                out
            }
        };
        if !send(out) {
            return;
        }
    }
}

fn verified(s: &Session) -> Result<()> {
    s.verify().map_err(js_error)
}

fn error_event(e: pi_session::Error) -> FollowEvent {
    let mut out = FollowEvent::new("error");
    out.error = Some(js_error(e).reason);
    out
}

fn why_text(why: Why) -> &'static str {
    match why {
        Why::First => "first",
        Why::Rewritten => "rewritten",
        Why::Recreated => "recreated",
        Why::Switched => "switched",
    }
}

/// A line as Node reads a file (`utf8`: an invalid sequence is U+FFFD, as pi reads it).
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
