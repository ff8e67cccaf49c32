//! Confinement: every path the built-in agent names is resolved — `..`, absolute paths and symlinks
//! included — and refused unless it lands inside the brief's worktree. Reads resolve the whole path; writes
//! resolve the deepest existing ancestor and refuse `..` or symlinks in the part that does not exist yet, so
//! a new file cannot be created through a link that points out of the worktree.
//!
//! The worktree's `.git` entry is refused too: in a linked worktree it is a file naming the repository's
//! git directory, and rewriting it would point the brief's commits somewhere else.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The worktree an agent is confined to, canonicalized once.
#[derive(Debug, Clone)]
pub struct Confinement {
    root: PathBuf,
}

/// Why a path was refused; the text goes back to the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Confinement {
    /// Confines to `worktree`, which must exist.
    pub fn new(worktree: &Path) -> io::Result<Self> {
        Ok(Self {
            root: worktree.canonicalize()?,
        })
    }

    /// The canonical worktree root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` (relative to the worktree, or absolute) resolved to an existing file or directory inside it.
    pub fn existing(&self, path: &str) -> Result<PathBuf, Refused> {
        let joined = self.join(path)?;
        let resolved = joined.canonicalize().map_err(|e| {
            if joined.symlink_metadata().is_ok() {
                Refused(format!("`{path}` is a symbolic link whose target does not exist"))
            } else if e.kind() == io::ErrorKind::NotFound {
                Refused(format!("`{path}` does not exist in the worktree"))
            } else {
                Refused(format!("`{path}`: {e}"))
            }
        })?;
        self.inside(path, resolved)
    }

    /// `path` resolved for writing: an existing file inside the worktree, or a new one whose deepest
    /// existing ancestor is inside it and whose remaining components are plain names.
    pub fn writable(&self, path: &str) -> Result<PathBuf, Refused> {
        let joined = self.join(path)?;
        if let Ok(meta) = joined.symlink_metadata() {
            if meta.is_dir() {
                return Err(Refused(format!("`{path}` is a directory")));
            }
            // An existing entry (a symlink included) is judged by where it really leads; a dangling link
            // would create its target wherever it points, so it is refused like an outside path.
            let resolved = joined.canonicalize().map_err(|_| {
                Refused(format!(
                    "`{path}` is a symbolic link whose target does not exist; writing through it is refused"
                ))
            })?;
            return self.inside(path, resolved);
        }
        let mut existing = joined.as_path();
        let mut tail = Vec::new();
        while existing.symlink_metadata().is_err() {
            let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                return Err(Refused(format!("`{path}` has no existing parent directory")));
            };
            tail.push(name.to_owned());
            existing = parent;
        }
        let base = existing
            .canonicalize()
            .map_err(|e| Refused(format!("`{path}`: {e}")))?;
        let mut resolved = self.inside(path, base)?;
        for name in tail.iter().rev() {
            resolved.push(name);
        }
        Ok(resolved)
    }

    /// `absolute` as a worktree-relative path for messages and records.
    pub fn relative(&self, absolute: &Path) -> String {
        match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => absolute.display().to_string(),
        }
    }

    /// The path as written, joined to the root and normalised lexically (`.` dropped, `..` applied), so
    /// that `../x` is caught even before anything exists on disk.
    fn join(&self, path: &str) -> Result<PathBuf, Refused> {
        if path.trim().is_empty() {
            return Err(Refused("the path is empty".to_owned()));
        }
        let given = Path::new(path);
        let start = if given.is_absolute() {
            PathBuf::new()
        } else {
            self.root.clone()
        };
        let mut out = start;
        for component in given.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(name) => out.push(name),
            }
        }
        if given.is_absolute() {
            // Judged once resolved: the worktree may be named through a symlink (`/home` → `/data/home`),
            // so an absolute path inside it need not start with the canonical root.
            return Ok(out);
        }
        self.inside(path, out)
    }

    fn inside(&self, given: &str, resolved: PathBuf) -> Result<PathBuf, Refused> {
        let Ok(rel) = resolved.strip_prefix(&self.root) else {
            return Err(Refused(format!(
                "`{given}` resolves to {}, which is outside the worktree {}; only files inside the \
                 worktree can be read or changed",
                resolved.display(),
                self.root.display()
            )));
        };
        if rel.components().next() == Some(Component::Normal(".git".as_ref())) {
            return Err(Refused(format!(
                "`{given}` is inside the worktree's .git, which the agent may not touch"
            )));
        }
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wt");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nothing"), root.join("dangling")).unwrap();
        let confinement = Confinement::new(&root).unwrap();
        (dir, confinement)
    }

    #[test]
    fn inside_paths_resolve() {
        let (_dir, c) = setup();
        let a = c.existing("src/a.txt").unwrap();
        assert_eq!(c.relative(&a), "src/a.txt");
        assert_eq!(c.existing("./src/../src/a.txt").unwrap(), a);
        assert_eq!(c.relative(&c.writable("new/dir/b.txt").unwrap()), "new/dir/b.txt");
        assert_eq!(c.existing(&a.display().to_string()).unwrap(), a);
    }

    #[test]
    fn escapes_are_refused_for_reading_and_writing() {
        let (_dir, c) = setup();
        for path in [
            "../outside.txt",
            "escape/outside.txt",
            "/etc/passwd",
            "src/../../outside.txt",
        ] {
            let read = c.existing(path).unwrap_err();
            assert!(read.0.contains("outside the worktree"), "{path}: {read}");
            let write = c.writable(path).unwrap_err();
            assert!(write.0.contains("outside the worktree"), "{path}: {write}");
        }
        assert!(c.writable("escape/new.txt").unwrap_err().0.contains("outside"));
        assert!(c.writable("dangling").unwrap_err().0.contains("does not exist"));
        assert!(c.writable(".git/config").unwrap_err().0.contains(".git"));
        assert!(c.writable("").is_err());
    }

    #[test]
    fn absolute_paths_through_a_symlinked_root_are_inside() {
        let (dir, _) = setup();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(dir.path().join("wt"), &alias).unwrap();
        let c = Confinement::new(&alias).unwrap();
        let via_alias = alias.join("src/a.txt").display().to_string();
        assert_eq!(c.relative(&c.existing(&via_alias).unwrap()), "src/a.txt");
        let new = alias.join("src/new.txt").display().to_string();
        assert_eq!(c.relative(&c.writable(&new).unwrap()), "src/new.txt");
        let out = alias.join("../outside.txt").display().to_string();
        assert!(c.existing(&out).unwrap_err().0.contains("outside the worktree"));
    }
}
