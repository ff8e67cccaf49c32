//! Small helpers shared by the integration tests.

use std::path::Path;

/// Whether `pid` names a live process (a zombie counts as dead: it runs nothing and only awaits reaping).
pub fn process_is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// Whether `pid` is gone within `limit`: a signal is delivered asynchronously, so a killed process may
/// still be listed for a moment on a loaded machine.
pub fn dies_within(pid: u32, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while process_is_alive(pid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// Writes `contents` to `root/relative`, creating parent directories.
pub fn write(root: &Path, relative: &str, contents: &str) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}

/// A fresh repository on `main` with one commit, and git isolated from the machine's configuration.
pub struct TestRepo {
    /// Holds the repository, worktrees and HOME; removed on drop.
    pub dir: tempfile::TempDir,
    /// The main work tree.
    pub repo: agency_exec::Repo,
}

impl TestRepo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let options = agency_exec::GitOptions {
            home: Some(home),
            ..Default::default()
        };
        let repo = agency_exec::Repo::init(&dir.path().join("repo"), "main", options).unwrap();
        write(repo.root(), "shared.txt", "one\ntwo\nthree\n");
        write(repo.root(), "README.md", "# demo\n");
        repo.commit_all("initial").unwrap();
        Self { dir, repo }
    }

    /// A path for a new worktree, outside the main work tree.
    pub fn worktree_path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join("worktrees").join(name)
    }
}
