//! Flag groups that several commands share, each written once and pulled into a command
//! with `#[command(flatten)]` (as ripgrep keeps its flags apart from what runs them).
//!
//! - [`PlaceArgs`]: where sessions are (`--agent-dir`, `--session-dir`, `--flavor`), for
//!   every command that lists sessions or takes a SESSION id;
//! - [`CacheArgs`]: `--cache-dir`, `--no-cache`;
//! - [`SessionArg`]: a SESSION (a file, or an id or a unique prefix of one) and where to
//!   look it up;
//! - [`ColorArgs`]: `--color`; [`ZoneArgs`]: `--utc`, `-z ZONE`; [`QuietArgs`]: `--quiet`;
//!   [`WaitArgs`]: `--wait`.
//!
//! (`--json` is each command's own: its help says what the JSON is.)

use crate::show::{Kind, Printable};
use anyhow::Result;
use clap::{Args, ValueEnum};
use pi_session::dirs::{Env, Flavor};
use pi_session::listing::{self, Place};
use pi_session::text::escape_path;
use std::path::{Path, PathBuf};

/// pi, or PiG (its Go port).
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum FlavorArg {
    /// pi's (the default).
    #[default]
    Pi,
    /// PiG's (the Go port of pi).
    Pig,
}

impl From<FlavorArg> for Flavor {
    fn from(f: FlavorArg) -> Flavor {
        match f {
            FlavorArg::Pi => Flavor::Pi,
            FlavorArg::Pig => Flavor::Pig,
        }
    }
}

/// Where sessions are: the agent dir, a custom session dir, pi's or PiG's conventions.
#[derive(Args, Clone, Default)]
pub struct PlaceArgs {
    /// The agent dir, whose sessions/ holds a folder per project (default:
    /// $PI_CODING_AGENT_DIR, else ~/.pi/agent).
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
    /// A custom flat session dir (default: $PI_CODING_AGENT_SESSION_DIR, else `sessionDir`
    /// in the agent dir's settings.json).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Follow pi's conventions (the default), or PiG's: ~/.pig/agent,
    /// PIG_CODING_AGENT_DIR, PIG_CODING_AGENT_SESSION_DIR, and PiG's context rules.
    #[arg(long, value_enum, value_name = "pi|pig")]
    pub flavor: Option<FlavorArg>,
}

impl PlaceArgs {
    /// The place these flags name, for the project of `cwd` (default: the current
    /// directory).
    ///
    /// # Errors
    /// A folder named on the command line that cannot be read (exit 2, not an empty
    /// answer); a current directory that cannot be read.
    pub fn resolve(&self, cwd: Option<&Path>) -> Result<Place> {
        for d in [&self.agent_dir, &self.session_dir].into_iter().flatten() {
            if let Err(e) = std::fs::read_dir(d) {
                anyhow::bail!(Printable::io("cannot read", d, e));
            }
        }
        Ok(Place::new(
            self.env()?,
            cwd,
            self.agent_dir.as_deref(),
            self.session_dir.as_deref(),
        ))
    }

    /// The environment of this process, read with the flavor's variables.
    ///
    /// # Errors
    /// A current directory that cannot be read.
    pub fn env(&self) -> Result<Env> {
        Env::from_process(self.flavor.unwrap_or_default().into())
            .map_err(|e| anyhow::anyhow!(e).context("cannot read the current directory"))
    }

    /// What a run over sessions covers: the `named` sessions (ids looked up here) and
    /// folders, each checked, else the place's root (which must exist: a missing agent
    /// dir is an error, as in `ls`, not an empty answer).
    ///
    /// # Errors
    /// A named session or folder that cannot be read; no session folder at all.
    pub fn roots(&self, named: &[PathBuf]) -> Result<Vec<PathBuf>> {
        if named.is_empty() {
            let root = self.resolve(None)?.root();
            match std::fs::read_dir(&root) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(Printable::kind(
                    format!("{}: no such folder", escape_path(&root)),
                    Kind::NotFound
                )),
                Err(e) => anyhow::bail!(Printable::io("cannot read", &root, e)),
            }
            return Ok(vec![root]);
        }
        let mut v = Vec::with_capacity(named.len());
        for p in named {
            let p = crate::locate::session(p, || self.resolve(None))?;
            if let Err(e) = std::fs::metadata(&p) {
                anyhow::bail!(Printable::io("cannot open", &p, e));
            }
            v.push(p);
        }
        Ok(v)
    }
}

/// Where the caches are kept, or none.
#[derive(Args, Clone, Default)]
pub struct CacheArgs {
    /// Where pi-session keeps its caches: the listing, the search maps, the usage records
    /// (default: $PI_SESSION_CACHE_DIR, else $XDG_CACHE_HOME/pi-session, else
    /// ~/.cache/pi-session).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Read every session file whole; no cache is read or written.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The cache these flags ask for (`None`: `--no-cache`, or no home folder).
    pub fn cache(&self) -> Option<listing::ListingCache> {
        if self.no_cache {
            return None;
        }
        self.cache_dir
            .clone()
            .or_else(listing::ListingCache::default_dir)
            .map(listing::ListingCache::at)
    }
}

/// A SESSION argument, and where its id is looked up.
#[derive(Args, Clone)]
pub struct SessionArg {
    /// The session: its file, or its id or a unique prefix of one (looked up in the
    /// current project's folder first, then in every project).
    #[arg(value_name = "SESSION")]
    pub file: PathBuf,
    #[command(flatten)]
    pub place: PlaceArgs,
}

impl SessionArg {
    /// Replace an id (or a prefix of one) by its session's file ([`crate::locate`]).
    ///
    /// # Errors
    /// No session, or several, with that id.
    pub fn locate(&mut self) -> Result<()> {
        let place = &self.place;
        self.file = crate::locate::session(&self.file, || place.resolve(None))?;
        Ok(())
    }

    /// Whose rules read the session: `--flavor` when given, else PiG's for a file under
    /// PiG's sessions folder (`~/.pig/agent/sessions`, `$PIG_CODING_AGENT_DIR/sessions`,
    /// `$PIG_CODING_AGENT_SESSION_DIR`), else pi's.
    pub fn flavor(&self) -> Flavor {
        if let Some(f) = self.place.flavor {
            return f.into();
        }
        let Ok(env) = Env::from_process(Flavor::Pig) else {
            return Flavor::Pi;
        };
        let file = std::fs::canonicalize(&self.file).unwrap_or_else(|_| self.file.clone());
        let agent = env.agent_dir(None);
        let roots = [
            Some(pi_session::dirs::sessions_root(&agent)),
            env.custom_session_dir(None, &agent),
        ];
        let under = roots
            .into_iter()
            .flatten()
            .any(|r| file.starts_with(std::fs::canonicalize(&r).unwrap_or(r)));
        if under { Flavor::Pig } else { Flavor::Pi }
    }
}

/// `--wait`, for the commands that write.
#[derive(Args, Clone, Copy)]
pub struct WaitArgs {
    /// How long to wait for the append lock another process holds, then fail.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub wait: f64,
}

/// `--quiet`: no progress bar.
#[derive(Args, Clone, Copy, Default)]
pub struct QuietArgs {
    /// No progress bar (one shows on a terminal when a run takes over 0.3 s).
    #[arg(short, long)]
    pub quiet: bool,
}

/// When to colour output.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour, `tty` saying whether the output is a terminal: `auto` colours a
    /// terminal unless NO_COLOR is set (non-empty).
    pub fn enabled(self, tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

/// `--utc` and `-z ZONE`: the time zone times are shown in.
#[derive(Args, Clone, Default)]
pub struct ZoneArgs {
    /// Times in this time zone (an IANA name, such as Europe/Berlin; default: TZ, else
    /// the system's).
    #[arg(short = 'z', long, value_name = "ZONE", conflicts_with = "utc")]
    pub timezone: Option<String>,
    /// Times in UTC instead of the local time zone (TZ, else /etc/localtime).
    #[arg(long)]
    pub utc: bool,
}

impl ZoneArgs {
    /// The zone and its name (`UTC`, the name given, the system zone's IANA name or
    /// `local`); an unknown name is a usage error.
    pub fn tz(&self) -> Result<(jiff::tz::TimeZone, String)> {
        if self.utc {
            return Ok((jiff::tz::TimeZone::UTC, "UTC".into()));
        }
        if let Some(z) = &self.timezone {
            let tz = jiff::tz::TimeZone::get(z).map_err(|_| {
                anyhow::anyhow!(Printable::kind(
                    format!("--timezone {}: no such time zone", pi_session::text::escape(z)),
                    Kind::Usage
                ))
            })?;
            return Ok((tz, z.clone()));
        }
        let tz = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
        let name = tz.iana_name().unwrap_or("local").to_string();
        Ok((tz, name))
    }

    /// The zone as [`crate::when::Zone`] shows times in it.
    pub fn zone(&self) -> Result<crate::when::Zone> {
        Ok(crate::when::Zone::of(self.tz()?.0))
    }
}

/// `--color`.
#[derive(Args, Clone, Copy)]
pub struct ColorArgs {
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl ColorArgs {
    /// Whether to colour standard output.
    pub fn on_stdout(self) -> bool {
        self.color.enabled(std::io::IsTerminal::is_terminal(&std::io::stdout()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_folder_that_is_missing_is_an_error_not_an_empty_place() {
        let p = PlaceArgs {
            agent_dir: Some(PathBuf::from("/nonexistent/agent")),
            ..PlaceArgs::default()
        };
        let e = p.resolve(None).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/agent"), "{e}");
        assert!(p.roots(&[]).is_err());
    }
}
