//! A run's branches shared through a git remote, for runners on several machines (`agency worker --repo`):
//! a clone of the remote, one fetch of every branch under a prefix, local branches set from what was
//! fetched, and pushes that are never forced.
//!
//! These calls reach the network, so besides agency's fixed git environment they see the variables git
//! needs for the user's own credentials over SSH (`SSH_AUTH_SOCK`, `GIT_SSH_COMMAND`); over HTTPS git uses
//! the credential helper of the user's global config. Nothing prompts. Every message they return has the
//! user and password of any URL in it replaced ([`redact_url_credentials`]): a remote URL may carry a
//! token, and these messages end up in the run's log.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;

use super::{GitError, GitOptions, Repo, check_name, join_args};
use crate::process::{self, Output};

/// The variables a fetch, push or clone inherits beyond agency's fixed git environment.
const NETWORK_ENV: [&str; 2] = ["SSH_AUTH_SOCK", "GIT_SSH_COMMAND"];

impl Repo {
    /// Clones `url` into `dir` (absent or empty) and opens the clone. `access` is configuration for this
    /// call alone ([`RemoteAccess`]).
    pub fn clone_from(
        url: &str,
        dir: &Path,
        options: GitOptions,
        access: &RemoteAccess,
    ) -> Result<Repo, GitError> {
        check_name("remote URL", url)?;
        std::fs::create_dir_all(dir).map_err(|source| GitError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let probe = Repo::probe(dir, options.clone());
        // Run in `dir`, into `.`: a relative `dir` means the same directory to git as to the caller.
        probe.network(&["clone", "--quiet", "--", url, "."], access)?;
        Repo::open(dir, options)
    }

    /// The URL configured for remote `name`, or `None` when there is no such remote.
    pub fn remote_url(&self, name: &str) -> Result<Option<String>, GitError> {
        check_name("remote", name)?;
        let key = format!("remote.{name}.url");
        let output = self.run(&["config", "--get", &key])?;
        // `git config --get` exits 1 when the key is unset.
        if output.exit_code == Some(1) {
            return Ok(None);
        }
        if !output.success() {
            return Err(super::failed(&["config", "--get", &key], &output));
        }
        Ok(Some(output.stdout.text().trim().to_owned()))
    }

    /// Fetches every branch under `refs/heads/<prefix>/` of `remote` into `refs/remotes/<remote>/<prefix>/`,
    /// pruning the ones the remote no longer has; local branches are left alone. One git process.
    pub fn fetch_under(&self, remote: &str, prefix: &str, access: &RemoteAccess) -> Result<(), GitError> {
        check_name("remote", remote)?;
        check_name("branch prefix", prefix)?;
        let refspec = format!(
            "+refs/heads/{prefix}/*:{}",
            tracking_ref(remote, &format!("{prefix}/*"))
        );
        self.network(
            &["fetch", "--quiet", "--no-tags", "--prune", "--", remote, &refspec],
            access,
        )?;
        Ok(())
    }

    /// The commit ids of the branches under `prefix/`, by branch name: those of this repository, and those
    /// of `remote` as last fetched ([`Repo::fetch_under`]). One git process.
    pub fn tips_under(&self, remote: &str, prefix: &str) -> Result<BranchTips, GitError> {
        check_name("remote", remote)?;
        check_name("branch prefix", prefix)?;
        let local = format!("refs/heads/{prefix}/");
        let fetched = format!("{}/", tracking_ref(remote, prefix));
        let text = self.git_text(&[
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            &local,
            &fetched,
        ])?;
        let mut tips = BranchTips::default();
        for line in text.lines() {
            let Some((id, name)) = line.split_once(' ') else {
                continue;
            };
            if let Some(branch) = name.strip_prefix("refs/heads/") {
                tips.local.insert(branch.to_owned(), id.to_owned());
            } else if let Some(branch) = name.strip_prefix(&format!("refs/remotes/{remote}/")) {
                tips.fetched.insert(branch.to_owned(), id.to_owned());
            }
        }
        Ok(tips)
    }

    /// Points each local branch of `updates` (branch, commit id) at its commit, creating it if need be: one
    /// git process (`update-ref --stdin`), all or nothing.
    pub fn set_branches(&self, updates: &[(String, String)]) -> Result<(), GitError> {
        if updates.is_empty() {
            return Ok(());
        }
        let mut input = String::new();
        for (branch, id) in updates {
            check_name("branch", branch)?;
            check_name("revision", id)?;
            input.push_str(&format!("update refs/heads/{branch} {id}\n"));
        }
        self.git_text_with_input(&["update-ref", "--stdin"], input.into_bytes())?;
        Ok(())
    }

    /// Pushes the local `branches` to the same names on `remote`, never forced: a branch the remote holds at
    /// a commit this one does not build on is refused, and the error carries git's reason. One git process.
    pub fn push_branches(
        &self,
        remote: &str,
        branches: &[&str],
        access: &RemoteAccess,
    ) -> Result<(), GitError> {
        check_name("remote", remote)?;
        if branches.is_empty() {
            return Ok(());
        }
        let mut args = vec![
            "push".to_owned(),
            "--quiet".to_owned(),
            "--".to_owned(),
            remote.to_owned(),
        ];
        for branch in branches {
            check_name("branch", branch)?;
            args.push(format!("refs/heads/{branch}:refs/heads/{branch}"));
        }
        self.network(&args, access)?;
        Ok(())
    }

    /// Runs a git command that reaches a remote: agency's environment plus [`NETWORK_ENV`]; a failure's
    /// message has any URL's credentials replaced.
    fn network<S: AsRef<OsStr>>(&self, args: &[S], access: &RemoteAccess) -> Result<Output, GitError> {
        let config: Vec<(&str, &str)> = access
            .config
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        let spec = NETWORK_ENV
            .iter()
            .fold(self.git_spec_with_config(args, &config), |spec, name| {
                spec.inherit_env(*name)
            });
        let output = self
            .in_time(args, process::run(&spec)?)
            .map_err(|err| match err {
                GitError::TimedOut { args, timeout } => GitError::TimedOut {
                    args: redact_url_credentials(&args),
                    timeout,
                },
                other => other,
            })?;
        if output.success() {
            return Ok(output);
        }
        Err(GitError::Failed {
            args: redact_url_credentials(&join_args(args)),
            status: output.describe(),
            stderr: redact_url_credentials(output.stderr.text().trim()),
        })
    }
}

/// Configuration a clone, fetch or push gets for that call alone, in its environment (never on its
/// command line, nor in the repository's `.git/config`, which agents working in its worktrees can read):
/// how a URL with credentials reaches git without being written down ([`RemoteAccess::for_url`]).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RemoteAccess {
    config: Vec<(String, String)>,
}

impl RemoteAccess {
    /// For a remote given as `url`: the URL to record (its credentials taken out) and the access that puts
    /// them back for each call (`url.<with credentials>.insteadOf <without>`). A URL without credentials
    /// is recorded as it is, with no extra configuration.
    pub fn for_url(url: &str) -> (String, RemoteAccess) {
        let Some((scheme, rest)) = url.split_once("://") else {
            return (url.to_owned(), RemoteAccess::default());
        };
        let end = rest.find('/').unwrap_or(rest.len());
        let Some(at) = rest[..end].rfind('@') else {
            return (url.to_owned(), RemoteAccess::default());
        };
        let with = format!("{scheme}://{}", &rest[..end]);
        let without = format!("{scheme}://{}", &rest[at + 1..end]);
        let recorded = format!("{without}{}", &rest[end..]);
        let access = RemoteAccess {
            config: vec![(format!("url.{with}.insteadOf"), without)],
        };
        (recorded, access)
    }
}

impl std::fmt::Debug for RemoteAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAccess")
            .field("credentials", &!self.config.is_empty())
            .finish()
    }
}

/// Where branches stand here and on a remote ([`Repo::tips_under`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchTips {
    /// This repository's branches: name → commit id.
    pub local: HashMap<String, String>,
    /// The remote's, as last fetched: name → commit id.
    pub fetched: HashMap<String, String>,
}

/// `refs/remotes/<remote>/<branch>`.
fn tracking_ref(remote: &str, branch: &str) -> String {
    format!("refs/remotes/{remote}/{branch}")
}

/// `text` with the user information of every URL in it (`scheme://user:password@host`) replaced by `***`:
/// what is shown of a remote URL, which may carry a token.
pub fn redact_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the first `/`, whitespace or quote; user information ends at its last `@`.
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                out.push_str("***");
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commit(dir: &Path) -> Repo {
        let repo = Repo::init(dir, "main", GitOptions::default()).unwrap();
        repo.run_git(&["commit", "--quiet", "--allow-empty", "-m", "start"])
            .unwrap();
        repo
    }

    #[test]
    fn credentials_in_urls_are_replaced_wherever_they_are() {
        assert_eq!(
            redact_url_credentials("fatal: could not read from 'https://bob:s3cret@git.example/r.git'"),
            "fatal: could not read from 'https://***@git.example/r.git'"
        );
        assert_eq!(
            redact_url_credentials("push https://x-access-token:ghp_abc@github.com/o/r and ssh://git@h/r"),
            "push https://***@github.com/o/r and ssh://***@h/r"
        );
        // Nothing to hide: unchanged.
        for plain in [
            "https://git.example/r.git",
            "/srv/git/r.git",
            "git@host:o/r.git",
            "no url",
        ] {
            assert_eq!(redact_url_credentials(plain), plain);
        }
    }

    #[test]
    fn branches_go_through_a_bare_remote_and_a_push_that_would_lose_work_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("remote.git");
        Repo::probe(dir.path(), GitOptions::default())
            .run_git(&["init", "--quiet", "--bare", bare.to_str().unwrap()])
            .unwrap();
        let driver = repo_with_commit(&dir.path().join("driver"));
        driver
            .run_git(&["remote", "add", "origin", bare.to_str().unwrap()])
            .unwrap();
        driver.create_branch("agency/r1/integration", "main").unwrap();
        let none = RemoteAccess::default();
        driver
            .push_branches("origin", &["main", "agency/r1/integration"], &none)
            .unwrap();

        let worker = Repo::clone_from(
            bare.to_str().unwrap(),
            &dir.path().join("worker"),
            GitOptions::default(),
            &none,
        )
        .unwrap();
        assert_eq!(worker.remote_url("origin").unwrap().as_deref(), bare.to_str());
        assert_eq!(worker.remote_url("nowhere").unwrap(), None);
        worker.fetch_under("origin", "agency/r1", &none).unwrap();
        let tips = worker.tips_under("origin", "agency/r1").unwrap();
        let tip = tips.fetched["agency/r1/integration"].clone();
        assert_eq!(tip, driver.rev_parse("agency/r1/integration").unwrap());
        assert_eq!(tips.fetched.len(), 1, "{tips:?}");
        // The clone made no local branch of the run's.
        assert!(tips.local.is_empty(), "{tips:?}");
        worker
            .set_branches(&[("agency/r1/integration".into(), tip.clone())])
            .unwrap();
        assert_eq!(worker.rev_parse("agency/r1/integration").unwrap(), tip);

        // The worker's branch reaches the driver.
        worker
            .create_branch("agency/r1/ws/slice", "agency/r1/integration")
            .unwrap();
        worker
            .run_git(&["commit", "--quiet", "--allow-empty", "-m", "work"])
            .unwrap();
        worker
            .run_git(&["branch", "--force", "agency/r1/ws/slice", "HEAD"])
            .unwrap();
        worker
            .push_branches("origin", &["agency/r1/ws/slice"], &none)
            .unwrap();
        driver.fetch_under("origin", "agency/r1", &none).unwrap();
        assert_eq!(
            driver.tips_under("origin", "agency/r1").unwrap().fetched["agency/r1/ws/slice"],
            worker.rev_parse("agency/r1/ws/slice").unwrap()
        );

        // A push that would drop the remote's commit is refused, saying so.
        driver.create_branch("agency/r1/ws/slice", "main").unwrap();
        let refused = driver
            .push_branches("origin", &["agency/r1/ws/slice"], &none)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("rejected"), "{refused}");

        // A remote that is not there is an error, not a silent nothing.
        let gone = driver
            .run_git(&["remote", "add", "gone", "/nonexistent/remote.git"])
            .map(|_| driver.fetch_under("gone", "agency/r1", &none))
            .unwrap();
        assert!(gone.is_err());
    }

    #[test]
    fn a_clone_that_fails_does_not_show_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let err = Repo::clone_from(
            "http://someone:hunter2@127.0.0.1:9/none.git",
            &dir.path().join("c"),
            GitOptions::default(),
            &RemoteAccess::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("***@127.0.0.1"), "{err}");
    }

    #[test]
    fn credentials_in_a_remote_url_are_used_but_never_written_to_the_clone() {
        let (recorded, access) = RemoteAccess::for_url("https://bob:tok3n@git.example/acme/r.git");
        assert_eq!(recorded, "https://git.example/acme/r.git");
        assert!(!format!("{access:?}").contains("tok3n"));
        assert_eq!(
            RemoteAccess::for_url("/srv/git/r.git"),
            ("/srv/git/r.git".to_owned(), RemoteAccess::default())
        );
        assert_eq!(
            RemoteAccess::for_url("https://git.example/r.git").1,
            RemoteAccess::default()
        );

        // The rewrite reaches git: a URL that exists only through it clones, fetches and pushes.
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("remote.git");
        Repo::probe(dir.path(), GitOptions::default())
            .run_git(&["init", "--quiet", "--bare", bare.to_str().unwrap()])
            .unwrap();
        let seed = repo_with_commit(&dir.path().join("seed"));
        seed.run_git(&["remote", "add", "origin", bare.to_str().unwrap()])
            .unwrap();
        seed.push_branches("origin", &["main"], &RemoteAccess::default())
            .unwrap();
        let secret_base = format!("file://{}", dir.path().display());
        let access = RemoteAccess {
            config: vec![(
                format!("url.{secret_base}.insteadOf"),
                "https://nowhere.invalid".into(),
            )],
        };
        let clone = Repo::clone_from(
            "https://nowhere.invalid/remote.git",
            &dir.path().join("clone"),
            GitOptions::default(),
            &access,
        )
        .unwrap();
        assert_eq!(
            clone.remote_url("origin").unwrap().as_deref(),
            Some("https://nowhere.invalid/remote.git")
        );
        let config = std::fs::read_to_string(clone.common_dir().join("config")).unwrap();
        assert!(!config.contains("file://"), "{config}");
        clone.fetch_under("origin", "agency", &access).unwrap();
        assert!(
            clone
                .fetch_under("origin", "agency", &RemoteAccess::default())
                .is_err()
        );
    }
}
