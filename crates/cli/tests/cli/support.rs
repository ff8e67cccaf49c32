//! Helpers: a temporary git repository and a command builder for the real `agency` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A temporary git repository to run agency in.
pub struct Repo {
    dir: TempDir,
}

impl Repo {
    /// A fresh `git init`ed directory (no commits needed by the commands under test).
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .status()
            .expect("git init");
        assert!(status.success());
        Repo { dir }
    }

    /// A fresh repository with `agency init` already run.
    pub fn initialised() -> Repo {
        let repo = Repo::new();
        repo.agency(&["init"]).success();
        repo
    }

    /// Runs git in the repository and asserts it succeeded.
    pub fn git(&self, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.path())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?} failed");
    }

    /// The repository's top level.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The blackboard path `agency init` creates.
    pub fn db(&self) -> PathBuf {
        self.path().join(".agency").join("agency.db")
    }

    /// Runs `agency` with `args` in the repository's top level.
    pub fn agency(&self, args: &[&str]) -> Run {
        self.agency_in(self.path(), args)
    }

    /// Runs `agency` with `args` in `dir`.
    pub fn agency_in(&self, dir: &Path, args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_agency"))
            .args(args)
            .current_dir(dir)
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .env("USER", "tester")
            .env("NO_COLOR", "1")
            .output()
            .expect("run agency");
        Run {
            output,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// A finished `agency` invocation.
pub struct Run {
    output: Output,
    args: Vec<String>,
}

impl Run {
    /// Standard output as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Standard error as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The exit code (`None` when killed by a signal, which includes a panic abort).
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Asserts exit 0 and returns self.
    pub fn success(self) -> Run {
        assert_eq!(
            self.code(),
            Some(0),
            "agency {:?} failed:\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.stdout(),
            self.stderr()
        );
        self
    }

    /// Asserts the exit code, that nothing panicked, and returns self.
    pub fn fails_with(self, code: i32) -> Run {
        assert_eq!(
            self.code(),
            Some(code),
            "agency {:?}:\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.stdout(),
            self.stderr()
        );
        assert!(
            !self.stderr().contains("panicked"),
            "agency {:?} panicked:\n{}",
            self.args,
            self.stderr()
        );
        self
    }
}
