//! Git fixtures: a bare repository standing in for a shared remote (GitHub, a team's server), made the
//! same way by every test that pushes, optionally with a `pre-receive` hook that refuses or races pushes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes an empty bare repository at `path` whose default branch is `main`, as a remote for tests to
/// push to; returns `path`. The user's and the system's git configuration are not read, so a template
/// or hook of theirs cannot change it.
pub fn bare_remote(path: impl Into<PathBuf>) -> std::io::Result<PathBuf> {
    let path = path.into();
    let out = Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch", "main"])
        .arg(&path)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "git init --bare {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(path)
}

/// Installs `script` (a `#!/bin/sh` script reading `old new ref` lines) as `bare`'s `pre-receive` hook,
/// executable, so the remote can refuse or race pushes as a protected or busy server does.
pub fn pre_receive_hook(bare: &Path, script: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let hook = bare.join("hooks").join("pre-receive");
    std::fs::write(&hook, script)?;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_remote_takes_pushes_to_main_and_its_hook_refuses_others() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let bare = bare_remote(dir.join("remote.git")).unwrap();
        let head = std::fs::read_to_string(bare.join("HEAD")).unwrap();
        assert_eq!(head.trim(), "ref: refs/heads/main");
        pre_receive_hook(
            &bare,
            "#!/bin/sh\nwhile read old new ref; do\n  [ \"$ref\" = refs/heads/main ] || exit 1\ndone\n",
        )
        .unwrap();
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .unwrap()
                .status
                .success()
        };
        assert!(git(&["init", "--quiet", "--initial-branch", "main"]));
        assert!(git(&["commit", "--quiet", "--allow-empty", "-m", "base"]));
        let remote = bare.to_str().unwrap();
        assert!(git(&["push", "--quiet", remote, "HEAD:refs/heads/main"]));
        assert!(!git(&["push", "--quiet", remote, "HEAD:refs/heads/other"]));
    }

    #[test]
    fn a_remote_that_cannot_be_made_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let error = bare_remote(file.join("remote.git")).unwrap_err();
        assert!(error.to_string().contains("a-file/remote.git"), "{error}");
    }
}
