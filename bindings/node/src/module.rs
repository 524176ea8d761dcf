//! The functions of pi's session-manager module and of its paths (utils/paths.js), each the
//! library's rule: folders, paths and `file://` URLs, session ids, the migration of entries
//! held in memory, the most recent session and a session by id.

use crate::js::Js;
use crate::js_error;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use pi_session::listing;
use pi_session::{Entropy, Value};
use std::path::{Path, PathBuf};

/// The process's environment (home, variables, current folder) as `flavor` reads it.
pub(crate) fn env_of(flavor: listing::dirs::Flavor) -> Result<listing::dirs::Env> {
    listing::dirs::Env::from_process(flavor).map_err(|e| napi::Error::from_reason(e.to_string()))
}

fn pi_env() -> Result<listing::dirs::Env> {
    env_of(listing::dirs::Flavor::Pi)
}

/// A path as JavaScript gets it.
pub(crate) fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// pi's `normalizePath(input)`: `~` and `~/...` expanded, a `file://` URL made a path (node's
/// `fileURLToPath`, whose error it throws: `TypeError [ERR_INVALID_FILE_URL_HOST]: ...`).
#[napi]
pub fn normalize_path(input: String) -> Result<String> {
    let env = pi_env()?;
    env.try_normalize_path(Path::new(&input))
        .map(|p| path_text(&p))
        .map_err(napi::Error::from_reason)
}

/// pi's `resolvePath(input, baseDir = process.cwd())`: normalized, then absolute against
/// the normalized `baseDir`.
#[napi]
pub fn resolve_path(input: String, base_dir: Option<String>) -> Result<String> {
    let mut env = pi_env()?;
    if let Some(base) = base_dir {
        let base = env
            .try_normalize_path(Path::new(&base))
            .map_err(napi::Error::from_reason)?;
        env.cwd = env.resolve_path(&base);
    }
    let n = env
        .try_normalize_path(Path::new(&input))
        .map_err(napi::Error::from_reason)?;
    Ok(path_text(&env.resolve_path(&n)))
}

/// pi's `pathsEqual(a, b)`.
#[napi]
pub fn paths_equal(a: String, b: String) -> Result<bool> {
    Ok(pi_env()?.paths_equal(Path::new(&a), Path::new(&b)))
}

/// pi's `getAgentDir()`: `PI_CODING_AGENT_DIR` (normalized), else `~/.pi/agent`.
#[napi]
pub fn agent_dir() -> Result<String> {
    Ok(path_text(&pi_env()?.agent_dir(None)))
}

/// pi's `getDefaultSessionDirPath(cwd, agentDir = getAgentDir())`: the project's folder of
/// sessions, `<agent>/sessions/--<cwd with - for / \ :>--` (not created).
#[napi]
pub fn default_session_dir_path(cwd: String, agent_dir: Option<String>) -> Result<String> {
    let env = pi_env()?;
    let agent = match agent_dir {
        Some(a) => PathBuf::from(a),
        None => env.agent_dir(None),
    };
    Ok(path_text(&env.default_session_dir(Path::new(&cwd), &agent)))
}

/// pi's `findMostRecentSession(dir, cwd?)` over a folder `index.js` resolved: the newest
/// `.jsonl` file with a session header (of `cwd`, when given), or `null`.
/// One change of pi's migration to an entry held in memory (see `migrate_entries`): the
/// member at `path` of entry `at` is set to `value` (none: `undefined`), or deleted
/// (`remove`).
#[napi(object, object_from_js = false)]
pub struct Edit {
    pub at: u32,
    pub path: Vec<String>,
    #[napi(ts_type = "unknown")]
    pub value: Option<Js<'static>>,
    pub remove: bool,
}

/// pi's `migrateSessionEntries` of the entries whose `JSON.stringify` is `entries_json`: the
/// changes it makes to them, whether it ran, and the error it throws after them, if any
/// (pi's text).
#[napi(object, object_from_js = false)]
pub struct Migration {
    pub edits: Vec<Edit>,
    pub ran: bool,
    pub thrown: Option<String>,
}

#[napi]
pub fn migration_edits(entries_json: String) -> Result<Migration> {
    let entries =
        match &mut Value::parse(entries_json.as_bytes()).map_err(|e| napi::Error::from_reason(e.to_string()))? {
            Value::Array(a) => std::mem::take(a),
            _ => return Err(napi::Error::from_reason("Error: the entries must be an array")),
        };
    let mut entropy = Entropy::default();
    let m = pi_session::migrate_entries(&entries, &mut *entropy.uuid4);
    let edits = m
        .edits
        .into_iter()
        .map(|e| {
            let (value, remove) = match e.change {
                pi_session::Change::Set(v) => (Some(Js(v)), false),
                pi_session::Change::SetUndefined => (None, false),
                pi_session::Change::Delete => (None, true),
            };
            Edit {
                at: e.at as u32,
                path: e.path.iter().map(|p| (*p).to_string()).collect(),
                value,
                remove,
            }
        })
        .collect();
    Ok(Migration {
        edits,
        ran: m.ran,
        thrown: m.thrown.map(|e| js_error(e).reason),
    })
}

/// pi's `assertValidSessionId(id)` (of `String(id)`), with pi's error.
#[napi]
pub fn assert_valid_session_id(id: String) -> Result<()> {
    if pi_session::valid_session_id(&id) {
        return Ok(());
    }
    Err(js_error(pi_session::InvalidInput::SessionId { id }.into()))
}

#[napi]
pub fn find_most_recent_session(dir: String, cwd: Option<String>) -> Result<Option<String>> {
    let env = pi_env()?;
    let found = listing::find_most_recent(&env, Path::new(&dir), cwd.as_deref().map(Path::new));
    Ok(found.map(|p| p.to_string_lossy().into_owned()))
}

/// pi's `findById` in one folder: the first `.jsonl` file (in name order) whose header
/// has this id (and this cwd, when given), or `null`.
#[napi]
pub fn find_session_by_id(dir: String, id: String, cwd: Option<String>) -> Result<Option<String>> {
    let env = pi_env()?;
    let found = listing::find_by_id_in(&env, Path::new(&dir), &id, cwd.as_deref().map(Path::new));
    Ok(found.map(|p| p.to_string_lossy().into_owned()))
}
