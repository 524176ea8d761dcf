//! pi's `SessionManager.list` and `listAll` over the library's parallel listing and its
//! cache: sessions cross to JavaScript as pi's `SessionInfo`, their long texts when read.

use crate::js::Js;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use pi_session::Value;

use napi::Task;
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use pi_session::listing::{self, ListOptions, Progress};
use pi_session::{CancelToken, SessionInfo};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What the progress callback gets: `loaded`, `total`, the sessions not handed over
/// before (or `null`), and pi's partial list as their numbers in the order of hand-over
/// (or `null` where pi publishes none). Each session crosses once.
type ProgressArgs = FnArgs<(u32, u32, Option<Vec<Info>>, Option<Vec<u32>>)>;
type ProgressFn = ThreadsafeFunction<ProgressArgs, (), ProgressArgs, Status, false>;

/// One session of a listing, as `index.js` makes pi's `SessionInfo` of it: strings as
/// strings (made straight from Rust's), `id` and `parentSessionPath` as the JSON values
/// they are (missing: absent), times as Unix ms (NaN: an invalid date). A text that
/// is no valid UTF-8 (a lone surrogate from a `\ud800` escape) is in `exact` instead, a
/// JSON object of such fields.
#[napi(object, object_from_js = false)]
pub struct Info {
    pub path: String,
    pub id: Option<Js<'static>>,
    pub cwd: String,
    pub name: Option<String>,
    pub parent_session_path: Option<Js<'static>>,
    pub created: f64,
    pub modified: f64,
    pub message_count: f64,
    pub first_message: String,
    /// The text, or empty when it is left in the listing cache: then `text_slot` is its
    /// number for [`ListJob::text`].
    pub all_messages_text: String,
    pub text_slot: Option<u32>,
    pub exact: Option<Js<'static>>,
}

/// Sessions whose `allMessagesText` a listing left in the listing cache's text log, by
/// slot: read when JavaScript first asks for one.
type Texts = Arc<std::sync::Mutex<Vec<SessionInfo>>>;

fn info(s: &SessionInfo, texts: &Texts) -> Info {
    let mut exact = pi_session::Object::new();
    let mut text = |key: &'static str, t: &pi_session::JsStr<'_>| -> String {
        match t.as_str() {
            Some(t) => t.to_string(),
            None => {
                exact.set(pi_session::JsStr::from_str(key), Value::String(t.clone().into_owned()));
                String::new()
            }
        }
    };
    let cwd = text("cwd", &s.cwd);
    let name = s.name.as_ref().map(|n| text("name", n));
    let first_message = text("firstMessage", &s.first_message);
    let all_messages_text = text("allMessagesText", &s.all_messages_text);
    let text_slot = s.text_ref.as_ref().map(|_| {
        let mut t = texts.lock().expect("texts lock is not poisoned");
        t.push(s.clone());
        (t.len() - 1) as u32
    });
    Info {
        path: s.path.to_string_lossy().into_owned(),
        id: s.id.clone().map(Js),
        cwd,
        name,
        parent_session_path: s.parent_session_path.clone().map(Js),
        created: s.created,
        modified: s.modified,
        message_count: s.message_count as f64,
        first_message,
        all_messages_text,
        text_slot,
        exact: (!exact.is_empty()).then(|| Js(Value::Object(exact))),
    }
}

/// The listing cache `pi-session ls` keeps (`$PI_SESSION_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/pi-session`, else `~/.cache/pi-session`): an unchanged file is listed
/// from it without being read, and an appended one from its new bytes; the listing is the
/// same with it or without. `PI_SESSION_NO_CACHE=1` reads every file and writes nothing.
fn listing_cache() -> Option<listing::ListingCache> {
    if std::env::var_os("PI_SESSION_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
        return None;
    }
    listing::ListingCache::default_dir().map(listing::ListingCache::at)
}

/// Which listing: pi's `listAll()` (every project folder under a sessions root),
/// `listAll(dir)` (one flat folder), or `list(cwd, sessionDir)`.
enum Which {
    Root(PathBuf),
    Dir(PathBuf),
    Project { cwd: PathBuf, session_dir: Option<PathBuf> },
}

pub struct ListTask {
    which: Which,
    progress: Option<ProgressFn>,
    cancel: CancelToken,
    texts: Texts,
}

/// A finished listing: the sessions (`null` when cancelled), and how
/// many progress calls were made (`index.js` waits for them all before resolving, as
/// pi's progress calls all come before its promise resolves).
#[napi(object, object_from_js = false)]
pub struct Listed {
    pub sessions: Option<Vec<Info>>,
    pub calls: u32,
}

impl Task for ListTask {
    type Output = Listed;
    type JsValue = Listed;

    fn compute(&mut self) -> Result<Listed> {
        let env = crate::module::env_of(listing::dirs::Flavor::Pi)?;
        let mut sent: HashMap<usize, u32> = HashMap::new();
        let mut calls = 0u32;
        let progress = self.progress.as_ref();
        let mut on_progress = |p: &Progress<'_>| {
            let Some(f) = progress else { return };
            calls += 1;
            let mut fresh = Vec::new();
            let order = p.partial.map(|part| {
                part.iter()
                    .map(|s| {
                        let next = sent.len() as u32;
                        *sent.entry(Arc::as_ptr(s) as usize).or_insert_with(|| {
                            fresh.push(info(s, &self.texts));
                            next
                        })
                    })
                    .collect::<Vec<u32>>()
            });
            let fresh = (!fresh.is_empty()).then_some(fresh);
            f.call(
                (p.loaded as u32, p.total as u32, fresh, order).into(),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        };
        let mut opts = ListOptions {
            on_progress: Some(&mut on_progress),
            partials: progress.is_some(),
            cancel: Some(self.cancel.clone()),
            cache: listing_cache(),
            // Texts of unchanged files stay in the cache until JavaScript reads one.
            lazy_text: true,
            ..ListOptions::default()
        };
        let listed = match &self.which {
            Which::Root(root) => listing::list_all(root, &mut opts),
            Which::Dir(dir) => listing::list_dir(dir, &mut opts),
            Which::Project { cwd, session_dir } => {
                let agent = env.agent_dir(None);
                listing::list_project(&env, cwd, session_dir.as_deref(), &agent, &mut opts)
            }
        };
        drop(opts);
        let Ok(l) = listed else {
            // Cancelled: `index.js` rejects with the signal's reason.
            return Ok(Listed { sessions: None, calls });
        };
        Ok(Listed {
            sessions: Some(l.sessions.iter().map(|s| info(s, &self.texts)).collect()),
            calls,
        })
    }

    fn resolve(&mut self, _: Env, output: Listed) -> Result<Listed> {
        Ok(output)
    }
}

/// A listing run off the JavaScript thread, which `cancel()` stops between files.
#[napi]
pub struct ListJob {
    cancel: CancelToken,
    texts: Texts,
}

impl Default for ListJob {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl ListJob {
    #[napi(constructor)]
    pub fn new() -> Self {
        ListJob {
            cancel: CancelToken::new(),
            texts: Texts::default(),
        }
    }

    /// Stop the listing (its promise then gives no sessions).
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// pi's `listAll()` over `root` (a sessions root: `""` for pi's own,
    /// `<agent dir>/sessions`), or over one flat folder when `flat`.
    #[napi]
    pub fn list_all(&self, root: String, flat: bool, on_progress: Option<ProgressFn>) -> Result<AsyncTask<ListTask>> {
        let which = if flat {
            Which::Dir(PathBuf::from(root))
        } else if root.is_empty() {
            let env = crate::module::env_of(listing::dirs::Flavor::Pi)?;
            Which::Root(listing::dirs::sessions_root(&env.agent_dir(None)))
        } else {
            Which::Root(PathBuf::from(root))
        };
        Ok(AsyncTask::new(ListTask {
            which,
            progress: on_progress,
            cancel: self.cancel.clone(),
            texts: self.texts.clone(),
        }))
    }

    /// pi's `list(cwd, sessionDir)`.
    #[napi]
    pub fn list(
        &self,
        cwd: String,
        session_dir: Option<String>,
        on_progress: Option<ProgressFn>,
    ) -> AsyncTask<ListTask> {
        AsyncTask::new(ListTask {
            which: Which::Project {
                cwd: PathBuf::from(cwd),
                session_dir: session_dir.map(PathBuf::from),
            },
            progress: on_progress,
            cancel: self.cancel.clone(),
            texts: self.texts.clone(),
        })
    }

    /// The `allMessagesText` of a session the listing left in the cache (`Info::text_slot`),
    /// read from the cache's text log as the listing saw it; if the log no longer holds
    /// it, from the session file read again.
    #[napi]
    pub fn text(&self, slot: u32) -> Result<Js<'static>> {
        let s = self
            .texts
            .lock()
            .expect("texts lock is not poisoned")
            .get(slot as usize)
            .cloned()
            .ok_or_else(|| napi::Error::from_reason(format!("no text {slot}")))?;
        let text = match s.text() {
            Some(t) => t.into_owned(),
            None => {
                let mut scratch = listing::Scratch::new();
                listing::read_session_info(&s.path, pi_session::ReadMode::Read, &mut scratch)
                    .map_err(|e| napi::Error::from_reason(format!("{}: {e:?}", s.path.display())))?
                    .all_messages_text
            }
        };
        Ok(Js(Value::String(text)))
    }
}
