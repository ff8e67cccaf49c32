//! The OS sandbox every agent process and verify command runs in: bubblewrap (`bwrap`) wrapped around the
//! [`CommandSpec`], so nothing at a call site changes but the spec it starts.
//!
//! Why bubblewrap: Claude Code's sandbox runtime and Codex's Linux sandbox both build on it, it needs no
//! privileges where unprivileged user namespaces are on, and one invocation gives all three things an
//! agent must not have. A **mount namespace** whose root is the host's, read-only, with the blackboard,
//! the main checkout's `.agency/`, other agents' worktrees and the user's credentials covered by empty
//! mounts, and only the agent's own worktree (plus its private git directory and the object store) bound
//! writable. A **PID namespace**, so `/proc` holds the sandbox's processes only: the runner's
//! `/proc/<pid>/environ`, provider keys included, is not there to read. And, with `network: none`, a
//! **network namespace** with nothing in it. Landlock alone (codex-rs's older pipeline) restricts paths
//! but leaves `/proc/$PPID` to be denied rule by rule and needs kernel 5.13.
//!
//! Every capability is dropped inside (`--cap-drop ALL`): run as root, bwrap otherwise keeps them, and a
//! process with `CAP_SYS_ADMIN` simply remounts `/` read-write; a root runner's sandbox is a user namespace
//! too, in which the process is not root. `--new-session` keeps a sandboxed process from pushing keystrokes
//! into the runner's terminal (TIOCSTI). The repository's `.git` pointer file and its shared `config`,
//! `hooks` and refs stay read-only: a hook or `core.fsmonitor` planted there would run outside the sandbox
//! the next time the runner runs git. The user's credentials are covered last, so no path made readable
//! or writable uncovers them. `bwrap` itself is hidden: Claude Code and Codex start a sandbox of their own
//! when they find it, and theirs cannot nest in this one.
//!
//! Fail closed: [`SandboxPolicy::confine`] probes bwrap once per program and network setting (a trivial
//! sandbox that must start) and returns [`SandboxError::Unavailable`] rather than the spec unwrapped; the
//! message says why and how to opt out (`sandbox: {mode: off}`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agency_core::config::{SandboxConfig, SandboxMode, SandboxNetwork};

use crate::credentials::credential_paths;
use crate::process::{self, CommandSpec, ProcessError};

/// The bubblewrap program looked up on PATH unless team.yaml names another.
pub const DEFAULT_PROGRAM: &str = "bwrap";

/// The user and group id a root runner's sandboxed processes have inside (see `namespace_args`).
const SANDBOX_ID: &str = "1000";

/// What a sandboxed process may reach over the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// The host's network (agents install packages).
    Full,
    /// A network namespace of its own with only a loopback device that is down.
    None,
}

/// Whether the processes of an agent or a verify command are sandboxed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandboxing {
    /// Not sandboxed: team.yaml says `sandbox: {mode: off}` (the run's log says so), or the process needs
    /// none (the built-in agent's read-only tools start no process; a runtime test).
    Off,
    /// Sandboxed under this policy, the working directory made writable at [`Sandboxing::confine`].
    On(SandboxPolicy),
}

impl Sandboxing {
    /// `spec` as it must be started to work in `workdir`: unchanged when off, wrapped in the sandbox
    /// otherwise, with `workdir` (and its git directory) writable besides what the policy says.
    pub fn confine(&self, spec: CommandSpec, workdir: &Path) -> Result<CommandSpec, SandboxError> {
        self.confine_with(spec, workdir, &[], &[])
    }

    /// [`Sandboxing::confine`] with more paths the process needs: `writable` (an agent's private HOME, say)
    /// and `readable` (a configuration file under a hidden directory).
    pub fn confine_with(
        &self,
        spec: CommandSpec,
        workdir: &Path,
        writable: &[PathBuf],
        readable: &[PathBuf],
    ) -> Result<CommandSpec, SandboxError> {
        match self {
            Sandboxing::Off => Ok(spec),
            Sandboxing::On(policy) => {
                let mut policy = policy.clone();
                policy.writable.extend(writable.iter().cloned());
                policy.readable.extend(readable.iter().cloned());
                policy.confine(spec, workdir)
            }
        }
    }

    /// Whether processes are sandboxed.
    pub fn is_on(&self) -> bool {
        matches!(self, Sandboxing::On(_))
    }
}

/// What a sandboxed process may see and change, besides its working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The bubblewrap program: a name looked up on PATH, or a path.
    pub program: PathBuf,
    /// The network it gets.
    pub network: Network,
    /// Paths it may write (everything else is read-only). Each must exist.
    pub writable: Vec<PathBuf>,
    /// Paths under a hidden one it may read again. Each must exist.
    pub readable: Vec<PathBuf>,
    /// Paths it cannot read: a directory shows empty, a file shows empty. Those that do not exist are
    /// skipped (there is nothing to hide). A writable or readable path under one shows again.
    pub hidden: Vec<PathBuf>,
    /// Paths hidden whatever else is bound (the user's credentials): covered last, so not even a
    /// readable or writable path that contains one shows it.
    pub secret: Vec<PathBuf>,
}

/// What the probe found for each program and network setting: `Err` holds why the sandbox cannot run.
type ProbeAnswers = HashMap<(PathBuf, Network), Result<(), String>>;

/// Why a process could not be sandboxed; it is then not started at all.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Bubblewrap is missing or cannot make namespaces here.
    #[error(
        "the sandbox cannot be set up: {reason}. Agents that run commands, and verify commands, are not \
         started without it. Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`) on a kernel \
         that allows user namespaces, point `sandbox.program` in team.yaml at it, or opt out with \
         `sandbox:\\n  mode: off` in team.yaml (agents can then read and change everything the runner can)"
    )]
    Unavailable {
        /// What went wrong, from the probe.
        reason: String,
    },
    /// The program to sandbox was not found.
    #[error(transparent)]
    Program(#[from] ProcessError),
    /// A path the policy names cannot be used.
    #[error("sandbox: {path}: {problem}")]
    Path {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl SandboxPolicy {
    /// A policy with nothing writable or hidden yet.
    pub fn new(program: impl Into<PathBuf>, network: Network) -> Self {
        SandboxPolicy {
            program: program.into(),
            network,
            writable: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            secret: Vec::new(),
        }
    }

    /// Hides the user's credentials under `home`: `.ssh`, `.aws`, `.config/gh`, every `.claude*`, `.codex`
    /// and the other usual stores of keys and tokens.
    pub fn hiding_credentials_in(mut self, home: &Path) -> Self {
        self.secret.extend(credential_paths(home));
        self
    }

    /// Wraps `spec` so it runs in the sandbox with `workdir` writable; fails closed when the sandbox cannot
    /// be set up (see [`SandboxPolicy::probe`]).
    pub fn confine(&self, spec: CommandSpec, workdir: &Path) -> Result<CommandSpec, SandboxError> {
        self.probe()?;
        let argv = self.argv(&spec, workdir)?;
        let mut wrapped = spec;
        wrapped.args = argv;
        wrapped.program = self.program.clone().into_os_string();
        Ok(wrapped)
    }

    /// Whether a sandbox of this program and network setting can be started here: tried once per process
    /// (a sandbox that runs `true`), the answer remembered.
    pub fn probe(&self) -> Result<(), SandboxError> {
        static PROBED: OnceLock<Mutex<ProbeAnswers>> = OnceLock::new();
        let key = (self.program.clone(), self.network);
        let probed = PROBED.get_or_init(Mutex::default);
        if let Some(known) = probed.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return known
                .clone()
                .map_err(|reason| SandboxError::Unavailable { reason });
        }
        let answer = self.try_sandbox();
        probed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, answer.clone());
        answer.map_err(|reason| SandboxError::Unavailable { reason })
    }

    fn try_sandbox(&self) -> Result<(), String> {
        let mut spec = CommandSpec::new(&self.program)
            .inherit_env("PATH")
            .timeout(Duration::from_secs(10));
        spec.args = self.namespace_args();
        spec.args.extend(
            [
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--",
                "true",
            ]
            .map(OsString::from),
        );
        let program = self.program.display();
        match process::run(&spec) {
            Ok(output) if output.success() => Ok(()),
            Ok(output) => Err(format!(
                "`{program} … true` failed ({}): {}",
                output.describe(),
                output.stderr.text().trim()
            )),
            Err(ProcessError::ProgramNotFound { .. }) => Err(format!("`{program}` was not found")),
            Err(err) => Err(format!("`{program}` could not be run: {err}")),
        }
    }

    /// The namespaces and privileges every sandbox gets.
    fn namespace_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--cap-drop",
            "ALL",
        ]
        .map(OsString::from)
        .to_vec();
        if self.network == Network::None {
            args.push("--unshare-net".into());
        }
        if rustix::process::geteuid().is_root() {
            // A user namespace in which the process is not root. Without one, a root runner's sandbox is
            // root without capabilities, and since Linux 5.12 such a process cannot map root into a user
            // namespace of its own (that takes CAP_SETFCAP): every sandbox an agent starts itself (Codex's
            // own) fails. Inside, files the real root owns show as the sandbox user's.
            args.extend(["--unshare-user", "--uid", SANDBOX_ID, "--gid", SANDBOX_ID].map(OsString::from));
        }
        args
    }

    /// bwrap's arguments for `spec` in `workdir`: namespaces, then the mounts in the order they must be
    /// made (each later one lies over the earlier ones), then the program, resolved here on the child's
    /// PATH so a missing one is reported as such.
    fn argv(&self, spec: &CommandSpec, workdir: &Path) -> Result<Vec<OsString>, SandboxError> {
        let program = resolve(spec)?;
        let workdir = existing(workdir)?;
        let git = GitPaths::of(&workdir)?;
        let all_existing = |paths: Vec<&PathBuf>| -> Result<Vec<PathBuf>, SandboxError> {
            paths.into_iter().map(|p| existing(p)).collect()
        };
        let readable = all_existing(self.readable.iter().chain(&git.readable).collect())?;
        let writable = all_existing(
            std::iter::once(&workdir)
                .chain(&self.writable)
                .chain(&git.writable)
                .collect(),
        )?;
        let cwd = match &spec.cwd {
            Some(cwd) => existing(cwd)?,
            None => workdir.clone(),
        };

        let mut args = self.namespace_args();
        bind(&mut args, "--ro-bind", Path::new("/"));
        args.extend(["--dev", "/dev", "--proc", "/proc"].map(OsString::from));
        // A private /tmp: the runner's (and other agents') temporary files are not there.
        args.extend(["--tmpfs", "/tmp"].map(OsString::from));
        hide(&mut args, &self.hidden)?;
        for path in &readable {
            bind(&mut args, "--ro-bind", path);
        }
        for path in &writable {
            bind(&mut args, "--bind", path);
        }
        for path in &git.protected {
            bind(&mut args, "--ro-bind", path);
        }
        hide(&mut args, &self.secret)?;
        // Bubblewrap itself is not there to run. Claude Code and Codex start a sandbox of their own when
        // they find it, and theirs cannot be set up inside this one (it must create mount points in the
        // read-only git directory); without it they work as where it is not installed.
        let parent_path = std::env::var_os("PATH");
        if let Ok(bwrap) = process::find_program(self.program.as_os_str(), None, parent_path.as_deref()) {
            hide(&mut args, &[bwrap])?;
        }
        private_home(&mut args, spec, &writable);
        args.extend([OsString::from("--chdir"), cwd.into_os_string()]);
        // The private /tmp, unless the process was given a temporary directory it can write.
        let tmpdir = env_var(spec, "TMPDIR").and_then(|dir| std::fs::canonicalize(dir).ok());
        if !tmpdir.is_some_and(|dir| writable.iter().any(|w| dir.starts_with(w))) {
            args.extend(["--setenv", "TMPDIR", "/tmp"].map(OsString::from));
        }
        args.push("--".into());
        args.push(program.into_os_string());
        args.extend(spec.args.iter().cloned());
        Ok(args)
    }
}

/// The HOME of a sandboxed process not given one of its own: an empty directory in the sandbox's private
/// `/tmp`, gone when the process ends.
pub const PRIVATE_HOME: &str = "/tmp/home";

/// Toolchains commonly installed under the user's HOME, found through a variable that defaults to a
/// directory there: with a private HOME the variable names the user's directory (read-only, as before),
/// so `cargo` through rustup or a pyenv `python3` still run.
const TOOLCHAIN_HOMES: [(&str, &str); 3] = [
    ("RUSTUP_HOME", ".rustup"),
    ("CARGO_HOME", ".cargo"),
    ("PYENV_ROOT", ".pyenv"),
];

/// Gives the process [`PRIVATE_HOME`] unless its HOME is one it may write (Claude Code's, Codex's and pi's
/// own homes are): the user's dotfiles, tool configuration and whatever else lives in the runner's HOME
/// are then not where its programs look, and it has a HOME it can write. The credentials under the
/// runner's HOME stay hidden at their own paths either way.
fn private_home(args: &mut Vec<OsString>, spec: &CommandSpec, writable: &[PathBuf]) {
    let home = env_var(spec, "HOME");
    let own = home
        .as_ref()
        .and_then(|h| std::fs::canonicalize(h).ok())
        .is_some_and(|h| writable.iter().any(|w| h.starts_with(w)));
    if own {
        return;
    }
    args.extend(["--dir", PRIVATE_HOME, "--setenv", "HOME", PRIVATE_HOME].map(OsString::from));
    let Some(home) = home.map(PathBuf::from) else {
        return;
    };
    for (variable, dir) in TOOLCHAIN_HOMES {
        let path = home.join(dir);
        if env_var(spec, variable).is_none() && path.is_dir() {
            args.extend([OsString::from("--setenv"), variable.into(), path.into_os_string()]);
        }
    }
}

/// Mounts `path` on itself with `flag` (`--bind` writable, `--ro-bind` read-only).
fn bind(args: &mut Vec<OsString>, flag: &str, path: &Path) {
    args.extend([flag.into(), path.into(), path.into()]);
}

/// Covers each of `paths` that exists: a directory with an empty tmpfs, a file with `/dev/null`.
fn hide(args: &mut Vec<OsString>, paths: &[PathBuf]) -> Result<(), SandboxError> {
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let path = existing(path)?.into_os_string();
        if meta.is_dir() {
            args.extend(["--tmpfs".into(), path]);
        } else {
            args.extend(["--ro-bind".into(), "/dev/null".into(), path]);
        }
    }
    Ok(())
}

/// The sandbox team.yaml's `sandbox` section asks for: off, or on with `hidden` (the `.agency` directory,
/// the blackboard, the worktrees) and the credentials under `home` out of reach, and the section's extra
/// paths (`~/` meaning `home`) readable or writable.
pub fn configured(config: &SandboxConfig, hidden: &[PathBuf], home: Option<&Path>) -> Sandboxing {
    if config.mode == SandboxMode::Off {
        return Sandboxing::Off;
    }
    let network = match config.network {
        SandboxNetwork::Full => Network::Full,
        SandboxNetwork::None => Network::None,
    };
    let expand = |path: &String| match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    };
    let mut policy = SandboxPolicy::new(&config.program, network);
    policy.hidden.extend(hidden.iter().cloned());
    if let Some(home) = home {
        policy = policy.hiding_credentials_in(home);
    }
    policy.readable.extend(config.extra_readable.iter().map(expand));
    policy.writable.extend(config.extra_writable.iter().map(expand));
    Sandboxing::On(policy)
}

/// The value of `name` in the environment `spec` gives its child.
fn env_var(spec: &CommandSpec, name: &str) -> Option<OsString> {
    let parent = |name: &str| std::env::var_os(name);
    let env = spec.env.resolve(&parent);
    env.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.clone().into_owned())
}

/// The executable `spec` names, found as [`process::run`] would find it.
fn resolve(spec: &CommandSpec) -> Result<PathBuf, ProcessError> {
    let path = env_var(spec, "PATH").or_else(|| std::env::var_os("PATH"));
    let resolved = process::find_program(&spec.program, spec.cwd.as_deref(), path.as_deref())?;
    Ok(std::path::absolute(&resolved).unwrap_or(resolved))
}

/// `path` with symbolic links resolved (bwrap mounts on the real path), or an error naming it.
fn existing(path: &Path) -> Result<PathBuf, SandboxError> {
    std::fs::canonicalize(path).map_err(|e| SandboxError::Path {
        path: path.display().to_string(),
        problem: format!("cannot be used in the sandbox: {e}"),
    })
}

/// The parts of a worktree's git repository a sandboxed process needs, and those it must not change.
#[derive(Debug, Default)]
struct GitPaths {
    readable: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    protected: Vec<PathBuf>,
}

impl GitPaths {
    /// For a linked worktree (`.git` is a `gitdir:` file): the shared repository readable, the worktree's
    /// own git directory (index, HEAD) and the object store writable, so `git status`, `diff`, `add` and
    /// `stash` work; the refs stay read-only (the runner commits on the agent's behalf), and so does the
    /// pointer file, which would otherwise let the agent point the runner's next git command at a config
    /// it wrote. For a `.git` directory inside the working directory: its `config` and `hooks` read-only.
    fn of(workdir: &Path) -> Result<Self, SandboxError> {
        let dot_git = workdir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            return Ok(GitPaths::default());
        };
        let mut paths = GitPaths::default();
        if meta.is_dir() {
            for name in ["config", "hooks"] {
                let path = dot_git.join(name);
                if path.exists() {
                    paths.protected.push(path);
                }
            }
            return Ok(paths);
        }
        paths.protected.push(dot_git.clone());
        let text = std::fs::read_to_string(&dot_git).map_err(|e| SandboxError::Path {
            path: dot_git.display().to_string(),
            problem: format!("cannot be read: {e}"),
        })?;
        let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
            return Ok(paths);
        };
        let gitdir = workdir.join(gitdir);
        let common = match std::fs::read_to_string(gitdir.join("commondir")) {
            Ok(common) => gitdir.join(common.trim()),
            Err(_) => gitdir.clone(),
        };
        let common = existing(&common)?;
        paths.writable.push(gitdir);
        let objects = common.join("objects");
        if objects.is_dir() {
            paths.writable.push(objects);
        }
        paths.readable.push(common);
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_fails_closed_with_the_way_out() {
        let policy = SandboxPolicy::new("/nonexistent/bwrap", Network::Full);
        let err = policy
            .confine(CommandSpec::new("true"), Path::new("/"))
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, SandboxError::Unavailable { .. }), "{text}");
        assert!(text.contains("/nonexistent/bwrap` was not found"), "{text}");
        assert!(text.contains("mode: off"), "{text}");
    }

    /// Whether bubblewrap runs here; CI sets `AGENCY_REQUIRE_SANDBOX=1`, where it must.
    fn bwrap_runs() -> bool {
        match SandboxPolicy::new(DEFAULT_PROGRAM, Network::Full).probe() {
            Ok(()) => true,
            Err(err) if std::env::var_os("AGENCY_REQUIRE_SANDBOX").is_some() => {
                panic!("AGENCY_REQUIRE_SANDBOX is set but {err}")
            }
            Err(err) => {
                eprintln!("skipped: {err}");
                false
            }
        }
    }

    fn sh(script: &str) -> CommandSpec {
        CommandSpec::new("sh")
            .args(["-c", script])
            .inherit_env("PATH")
            .timeout(Duration::from_secs(20))
    }

    /// Runs `script` in `sandboxing` with `workdir` writable: exit code and stdout + stderr.
    fn run_in(sandboxing: &Sandboxing, workdir: &Path, script: &str) -> (Option<i32>, String) {
        let spec = sandboxing.confine(sh(script).cwd(workdir), workdir).unwrap();
        let output = process::run(&spec).unwrap();
        (
            output.exit_code,
            format!("{}{}", output.stdout.text(), output.stderr.text()),
        )
    }

    #[test]
    fn credentials_are_hidden_and_the_worktree_is_writable() {
        if !bwrap_runs() {
            return;
        }
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "KEY-CANARY").unwrap();
        std::fs::write(home.path().join(".claude.json"), "CLAUDE-CANARY").unwrap();
        std::fs::write(home.path().join("notes.txt"), "readable").unwrap();
        let work = tempfile::tempdir().unwrap();
        // Even with the whole HOME readable (a real one is not under the sandbox's empty /tmp, this one is),
        // the credentials in it stay hidden.
        let config = SandboxConfig {
            extra_readable: vec![home.path().display().to_string()],
            ..SandboxConfig::default()
        };
        let sandboxing = configured(&config, &[], Some(home.path()));
        let h = home.path().display();
        let (_, seen) = run_in(
            &sandboxing,
            work.path(),
            &format!("cat {h}/.ssh/id_ed25519 {h}/.claude.json {h}/notes.txt; echo made > here.txt"),
        );
        assert!(!seen.contains("CANARY"), "{seen}");
        assert!(seen.contains("readable"), "the rest of HOME is readable: {seen}");
        // Given the runner's HOME, the process gets a private one it can write instead: `~/.ssh` there is
        // not the runner's, and the runner's toolchains are still named.
        std::fs::create_dir_all(home.path().join(".rustup")).unwrap();
        let spec = sh("echo HOME=$HOME RUSTUP=$RUSTUP_HOME; cat ~/.ssh/id_ed25519; ls -A ~; echo mine > ~/own.txt && cat ~/own.txt")
            .env("HOME", home.path())
            .cwd(work.path());
        let output = process::run(&sandboxing.confine(spec, work.path()).unwrap()).unwrap();
        let seen = format!("{}{}", output.stdout.text(), output.stderr.text());
        assert!(
            seen.contains(&format!("HOME={PRIVATE_HOME} RUSTUP={h}/.rustup")),
            "{seen}"
        );
        assert!(!seen.contains("CANARY") && !seen.contains("notes.txt"), "{seen}");
        assert!(seen.contains("mine"), "{seen}");
        assert!(!home.path().join("own.txt").exists());
        // A HOME it may write (Claude Code's own) is kept.
        let own = tempfile::tempdir().unwrap();
        let spec = sh("echo HOME=$HOME").env("HOME", own.path()).cwd(work.path());
        let spec = sandboxing
            .confine_with(spec, work.path(), &[own.path().to_path_buf()], &[])
            .unwrap();
        let output = process::run(&spec).unwrap();
        let kept = std::fs::canonicalize(own.path()).unwrap();
        assert!(
            output
                .stdout
                .text()
                .contains(&format!("HOME={}", own.path().display()))
                || output.stdout.text().contains(&format!("HOME={}", kept.display())),
            "{}",
            output.stdout.text()
        );
        assert_eq!(
            std::fs::read_to_string(work.path().join("here.txt")).unwrap(),
            "made\n"
        );
    }

    #[test]
    fn no_privilege_survives_inside_even_for_root() {
        if !bwrap_runs() {
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let sandboxing = configured(&SandboxConfig::default(), &[], None);
        let (code, seen) = run_in(
            &sandboxing,
            work.path(),
            "mount -o remount,rw / 2>/dev/null && echo REMOUNTED; touch /usr/agency-sandbox-probe 2>/dev/null \
             && echo WROTE; grep CapEff /proc/self/status",
        );
        assert_eq!(code, Some(0), "{seen}");
        assert!(!seen.contains("REMOUNTED") && !seen.contains("WROTE"), "{seen}");
        assert!(seen.contains("CapEff:\t0000000000000000"), "{seen}");
    }

    #[test]
    fn an_agent_may_start_a_sandbox_of_its_own_inside() {
        if !bwrap_runs() {
            return;
        }
        // Codex confines its commands in a user namespace of its own.
        let work = tempfile::tempdir().unwrap();
        let sandboxing = configured(&SandboxConfig::default(), &[], None);
        let (code, seen) = run_in(&sandboxing, work.path(), "unshare --user --map-root-user true");
        assert_eq!(code, Some(0), "{seen}");
    }

    #[test]
    fn network_none_leaves_only_loopback() {
        if !bwrap_runs() {
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            network: SandboxNetwork::None,
            ..SandboxConfig::default()
        };
        let (_, seen) = run_in(
            &configured(&config, &[], None),
            work.path(),
            "tail -n +3 /proc/net/dev | cut -d: -f1",
        );
        assert_eq!(seen.split_whitespace().collect::<Vec<_>>(), ["lo"], "{seen}");
    }

    #[test]
    fn a_sandboxed_command_past_its_deadline_dies_with_everything_it_started() {
        if !bwrap_runs() {
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let sandboxing = configured(&SandboxConfig::default(), &[], None);
        let spec = sh("sleep 30 & sleep 30")
            .cwd(work.path())
            .timeout(Duration::from_millis(300))
            .kill_grace(Duration::from_millis(200));
        let spec = sandboxing.confine(spec, work.path()).unwrap();
        let started = std::time::Instant::now();
        let output = process::run(&spec).unwrap();
        assert!(output.timed_out, "{}", output.describe());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(!output.pipes_held_open, "nothing inside outlived the sandbox");
    }

    /// Whether a process whose command line is `argv` (NUL-separated in /proc) is alive on the host.
    fn running(argv: &str) -> bool {
        let wanted = argv.replace(' ', "\0");
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).trim_end_matches('\0') == wanted)
        })
    }

    #[test]
    fn stopping_a_leftover_sandbox_stops_everything_in_it() {
        if !bwrap_runs() {
            return;
        }
        // What a runner taking over does with an agent a killed runner left: stop the recorded process's
        // group. Inside the sandbox everything is in a session of its own, out of that group; it dies with
        // the sandbox's init when bwrap goes.
        let work = tempfile::tempdir().unwrap();
        let sandboxing = configured(&SandboxConfig::default(), &[], None);
        let marker = format!("sleep 31{}", std::process::id());
        let spec = sh(&format!("{marker} & {marker} & wait")).cwd(work.path());
        let spec = sandboxing.confine(spec, work.path()).unwrap();
        let cancel = process::CancelToken::new();
        let child = process::spawn(&spec, &cancel).unwrap();
        let identity = child.identity().unwrap().clone();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !running(&marker) {
            assert!(
                std::time::Instant::now() < deadline,
                "the sandboxed sleeps started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        process::stop_leftover(&identity, Duration::from_millis(500)).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while running(&marker) {
            assert!(
                std::time::Instant::now() < deadline,
                "nothing in the sandbox outlived it"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.wait();
    }

    #[test]
    fn a_missing_program_inside_is_reported_as_missing() {
        let work = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::new(DEFAULT_PROGRAM, Network::Full);
        if !bwrap_runs() {
            return;
        }
        let err = policy
            .confine(
                CommandSpec::new("no-such-program-xyz").inherit_env("PATH"),
                work.path(),
            )
            .unwrap_err();
        assert!(
            matches!(err, SandboxError::Program(ProcessError::ProgramNotFound { .. })),
            "{err}"
        );
    }
}
