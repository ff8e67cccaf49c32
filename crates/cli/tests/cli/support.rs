//! Helpers: a temporary git repository (empty, or holding the calculator the engine's scripted runs fix), a
//! command builder for the real `agency` binary, and waits for background processes and conditions.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

    /// Writes the calculator ([`CALCULATOR`]) into the repository and commits it.
    pub fn commit_calculator(&self) {
        for (name, text) in CALCULATOR {
            std::fs::write(self.path().join(name), text).unwrap();
        }
        self.git(&["add", "."]);
        self.git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "calculator",
        ]);
    }

    /// An initialised repository holding the calculator, committed, and `script` (a scripted provider's
    /// YAML) at `.agency/script.yaml`, whose path is returned.
    pub fn calculator(script: &str) -> (Repo, PathBuf) {
        let repo = Repo::initialised();
        repo.commit_calculator();
        let path = repo.path().join(".agency").join("script.yaml");
        std::fs::write(&path, script).unwrap();
        (repo, path)
    }

    /// Starts `agency` with `args` in the background in the repository's top level (the blackboard is
    /// the repository's unless `env` names another), stdout and stderr piped for [`finish`].
    pub fn spawn(&self, args: &[&str], env: &[(&str, &str)]) -> Child {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agency"));
        command
            .args(args)
            .current_dir(self.path())
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .env("USER", "tester")
            .env("NO_COLOR", "1");
        for (name, value) in env {
            command.env(name, value);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
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

/// The shell calculator the engine's scripted runs fix (`crates/engine/tests/scripts/medium.yaml`): two
/// scripts with the wrong operator and their checks.
pub const CALCULATOR: &[(&str, &str)] = &[
    ("add.sh", "# add A B: prints A + B\necho $(($1 - $2))\n"),
    ("mul.sh", "# mul A B: prints A * B\necho $(($1 + $2))\n"),
    (
        "test_add.sh",
        "out=$(sh add.sh 2 3)\n[ \"$out\" = 5 ] || { echo \"add 2 3 gave $out, expected 5\"; exit 1; }\n",
    ),
    (
        "test_mul.sh",
        "out=$(sh mul.sh 2 3)\n[ \"$out\" = 6 ] || { echo \"mul 2 3 gave $out, expected 6\"; exit 1; }\n",
    ),
    ("test_arith.sh", "sh test_add.sh && sh test_mul.sh\n"),
];

/// Waits for `child` to end (killing it after `limit`) and returns its exit code and output.
pub fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// Polls `probe` until it gives a value, failing the test after 60 s with `what`.
pub fn wait_for<T>(mut probe: impl FnMut() -> Option<T>, what: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "waited 60s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
