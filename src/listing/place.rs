//! Where a command looks for sessions, resolved once: [`Place`].
//!
//! Every face starts here (each command of the tool, the Node binding): the agent dir and
//! the custom session dir by pi's rules ([`super::dirs`]), the project's working directory,
//! and from them the folders a listing reads and where a session id is looked up.

use super::dirs::{Env, sessions_root};
use super::find::{IdMatch, find_by_id_prefix};
use super::run::project_dir;
use std::path::{Path, PathBuf};

/// The agent dir, custom session dir and project of a run, resolved from an [`Env`] and
/// what the caller names explicitly (`--agent-dir`, `--session-dir`, `--cwd`).
#[derive(Clone, Debug)]
pub struct Place {
    /// The environment it was resolved in.
    pub env: Env,
    /// The project's working directory (default: the process's).
    pub cwd: PathBuf,
    /// The agent dir.
    pub agent_dir: PathBuf,
    /// The custom flat session dir, when one is set (explicitly, by the flavor's variable
    /// or by `sessionDir` in the agent dir's `settings.json`).
    pub custom: Option<PathBuf>,
}

impl Place {
    /// Resolve: `agent_dir`, else the flavor's variable, else `~/.pi/agent`; `session_dir`,
    /// else the variable, else the agent dir's `settings.json`; `cwd`, else the process's.
    pub fn new(env: Env, cwd: Option<&Path>, agent_dir: Option<&Path>, session_dir: Option<&Path>) -> Place {
        let agent_dir = env.agent_dir(agent_dir);
        let custom = env.custom_session_dir(session_dir, &agent_dir);
        let cwd = cwd.map_or_else(|| env.cwd.clone(), Path::to_path_buf);
        Place {
            env,
            cwd,
            agent_dir,
            custom,
        }
    }

    /// The folder every session lives under: the custom session dir, else the agent dir's
    /// `sessions/` (whose project folders pi's `listAll` reads).
    pub fn root(&self) -> PathBuf {
        self.custom.clone().unwrap_or_else(|| sessions_root(&self.agent_dir))
    }

    /// The project's folder and, for a shared custom folder, the resolved cwd its sessions
    /// must have (pi's `list(cwd, sessionDir)`).
    pub fn project(&self) -> (PathBuf, Option<PathBuf>) {
        project_dir(&self.env, &self.cwd, self.custom.as_deref(), &self.agent_dir)
    }

    /// The sessions whose header id is `prefix` or begins with it: in the project's folder
    /// first, then in every project folder (or, with a custom session dir, only there).
    /// Several answers mean an ambiguous prefix; the caller decides (git refuses one).
    pub fn sessions_with_id_prefix(&self, prefix: &str) -> Vec<IdMatch> {
        if let Some(dir) = &self.custom {
            return find_by_id_prefix(&[self.env.normalize_path(dir)], prefix);
        }
        let (project, _) = self.project();
        let here = find_by_id_prefix(std::slice::from_ref(&project), prefix);
        if !here.is_empty() {
            return here;
        }
        find_by_id_prefix(&project_dirs(&sessions_root(&self.agent_dir)), prefix)
    }
}

/// The project folders of a sessions root, in name order; a symlink to a folder counts,
/// as in pi's `listAll`.
fn project_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::dirs::Flavor;

    fn env(home: &Path) -> Env {
        Env {
            flavor: Flavor::Pi,
            home: home.to_path_buf(),
            cwd: PathBuf::from("/w/app"),
            agent_dir_var: None,
            session_dir_var: None,
        }
    }

    #[test]
    fn an_id_is_looked_up_in_the_project_first_then_everywhere() {
        let t = tempfile::tempdir().expect("tmp");
        let agent = t.path().join("agent");
        let put = |folder: &str, name: &str, id: &str| {
            let d = agent.join("sessions").join(folder);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(
                d.join(name),
                format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n"),
            )
            .expect("write");
        };
        put("--w-app--", "a.jsonl", "abcd-1");
        put("--w-other--", "b.jsonl", "abcd-2");
        put("--w-other--", "c.jsonl", "efgh-1");
        let p = Place::new(env(t.path()), None, Some(&agent), None);
        assert_eq!(p.root(), agent.join("sessions"));
        let ids =
            |prefix: &str| -> Vec<String> { p.sessions_with_id_prefix(prefix).into_iter().map(|m| m.id).collect() };
        // The project's own session wins over the other project's.
        assert_eq!(ids("abcd"), ["abcd-1"]);
        assert_eq!(ids("efgh"), ["efgh-1"]);
        assert!(ids("zzzz").is_empty());
        let elsewhere = Place::new(env(t.path()), Some(Path::new("/w/none")), Some(&agent), None);
        let mut both: Vec<String> = elsewhere
            .sessions_with_id_prefix("abcd")
            .into_iter()
            .map(|m| m.id)
            .collect();
        both.sort();
        assert_eq!(both, ["abcd-1", "abcd-2"]);
    }
}
