//! Where plan.md is and how it is read and written: parsed with the tolerant scanner, changed only by the
//! line-exact patches of `agency_core::goals`, written atomically (a temporary file renamed over it) so a
//! crash never leaves half a plan.

use std::path::{Path, PathBuf};

use agency_core::goals::{Goal, PatchError, PlanDoc};

use crate::error::{CommandError, CommandResult, ErrorKind};

/// The plan file name at the repository's top level.
pub const DEFAULT_PLAN: &str = "plan.md";

/// One plan file.
#[derive(Debug, Clone)]
pub struct PlanFile {
    /// The repository's top level (or the current directory outside git).
    pub root: PathBuf,
    /// The file.
    pub path: PathBuf,
}

impl PlanFile {
    /// `--plan` (relative to the current directory) or `plan.md` at the repository's top level.
    pub fn locate(cwd: &Path, plan: Option<&Path>) -> PlanFile {
        let root = crate::workspace::find_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
        let path = match plan {
            Some(plan) => cwd.join(plan),
            None => root.join(DEFAULT_PLAN),
        };
        PlanFile { root, path }
    }

    /// The path relative to the repository root, `/`-separated (how git and the records name it).
    pub fn relative(&self) -> String {
        self.path
            .strip_prefix(&self.root)
            .unwrap_or(&self.path)
            .to_string_lossy()
            .into_owned()
    }

    /// The parsed plan; a missing file is an error that says how to start one.
    pub fn read(&self) -> CommandResult<PlanDoc> {
        match self.read_or_empty()? {
            Some(doc) => Ok(doc),
            None => Err(CommandError::new(
                ErrorKind::NotFound,
                format!("no plan file at {}", self.path.display()),
            )
            .hint("add a goal with `agency goal add \"title\" --done-when \"...\"`, or pass --plan FILE")),
        }
    }

    /// The parsed plan, `None` when the file does not exist yet.
    pub fn read_or_empty(&self) -> CommandResult<Option<PlanDoc>> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => Ok(Some(PlanDoc::parse(&text))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(CommandError::internal(format!(
                "cannot read {}: {err}",
                self.path.display()
            ))),
        }
    }

    /// Replaces the file's content atomically.
    pub fn write(&self, text: &str) -> CommandResult {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_PLAN.to_string());
        let temp = dir.join(format!(".{name}.agency-tmp"));
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, &self.path)?;
        Ok(())
    }

    /// The one goal with `id`; an unknown id is an error listing the ids there are, and an id two goals share
    /// is refused as ambiguous (exit 4, like an ambiguous run id) naming the lines of both.
    pub fn goal<'d>(&self, doc: &'d PlanDoc, id: &str) -> CommandResult<&'d Goal> {
        match doc.unique_goal(id) {
            Ok(goal) => Ok(goal),
            Err(PatchError::UnknownGoal(_)) => {
                let ids: Vec<&str> = doc.goals().iter().filter_map(|g| g.id.as_deref()).collect();
                let known = if ids.is_empty() {
                    "it has no goals with ids".to_string()
                } else {
                    format!("its goals are {}", ids.join(", "))
                };
                Err(CommandError::new(
                    ErrorKind::NotFound,
                    format!("{}: no goal with id \"{id}\"; {known}", self.relative()),
                ))
            }
            Err(err) => Err(CommandError::new(
                ErrorKind::NotFound,
                format!("{}: {err}", self.relative()),
            )),
        }
    }

    /// A patch error, naming the file.
    pub fn patch_error(&self, err: PatchError) -> CommandError {
        CommandError::input(format!("{}: {err}", self.relative()))
    }
}
