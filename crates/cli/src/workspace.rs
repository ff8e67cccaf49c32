//! Finding agency's files for the repository the user is in: the `.agency/` directory at the repository's
//! top level holds `team.yaml` and the SQLite blackboard `agency.db`. `--db`/`AGENCY_DB` and
//! `--config`/`AGENCY_CONFIG` override the locations.

use std::path::{Path, PathBuf};

use crate::error::{CommandError, CommandResult, ErrorKind};

/// The directory agency keeps its state in, inside a repository.
pub const AGENCY_DIR: &str = ".agency";
/// The configuration file name inside [`AGENCY_DIR`].
pub const CONFIG_FILE: &str = "team.yaml";
/// The blackboard file name inside [`AGENCY_DIR`].
pub const DB_FILE: &str = "agency.db";

/// Where this invocation's files live.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The repository's top level (the directory holding `.agency/`).
    pub root: PathBuf,
    /// The configuration file.
    pub config: PathBuf,
    /// The blackboard database.
    pub db: PathBuf,
}

/// Overrides from flags or the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--db` / `AGENCY_DB`.
    pub db: Option<PathBuf>,
    /// `--config` / `AGENCY_CONFIG`.
    pub config: Option<PathBuf>,
}

/// The nearest ancestor of `start` (itself included) that is a git work tree top level.
pub fn find_git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The nearest ancestor of `start` holding an `.agency/` directory.
fn find_agency_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(AGENCY_DIR).is_dir())
        .map(Path::to_path_buf)
}

impl Workspace {
    /// The workspace for a repository root, with overrides applied.
    pub fn at(root: PathBuf, overrides: &Overrides) -> Workspace {
        let dir = root.join(AGENCY_DIR);
        Workspace {
            config: overrides.config.clone().unwrap_or_else(|| dir.join(CONFIG_FILE)),
            db: overrides.db.clone().unwrap_or_else(|| dir.join(DB_FILE)),
            root,
        }
    }

    /// Finds an initialised workspace from `cwd`. With a `--db` override no `.agency/` is needed.
    pub fn discover(cwd: &Path, overrides: &Overrides) -> CommandResult<Workspace> {
        if let Some(root) = find_agency_root(cwd) {
            return Ok(Workspace::at(root, overrides));
        }
        if overrides.db.is_some() {
            let root = find_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
            return Ok(Workspace::at(root, overrides));
        }
        Err(CommandError::new(
            ErrorKind::NoWorkspace,
            format!("no agency workspace in {} or any parent directory", cwd.display()),
        )
        .hint("run `agency init` at the top of your git repository, or pass --db PATH"))
    }

    /// Whether the blackboard file exists yet.
    pub fn has_db(&self) -> bool {
        self.db.exists()
    }
}
