//! Shell-free child processes with a deadline, a whole-group kill and a bounded output tail.
//!
//! Everything agency starts (git, verify commands, external coding agents) goes through [`run`]. The child
//! gets an argv (never `sh -c` with interpolated text), an allow-listed environment (the parent's is cleared;
//! only named variables and explicit pairs are passed) and its own process group. When the deadline passes or
//! the run is cancelled through a [`CancelToken`], the whole group gets SIGTERM, then SIGKILL after a short
//! grace period, so grandchildren a hung command started die with it. Processes a command leaves behind in
//! its group after a normal exit are killed too: nothing a command starts outlives it unless it escapes the
//! group on purpose.
//!
//! Output from both pipes is read concurrently on helper threads into ring buffers that keep only the last
//! `output_cap` bytes, so a chatty child can neither block on a full pipe nor exhaust memory; the number of
//! bytes dropped from the front is reported.

mod cancel;
mod capture;
mod spec;

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

pub use cancel::CancelToken;
pub use capture::Captured;
pub use spec::{CommandSpec, DEFAULT_KILL_GRACE, DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, EnvPolicy};

use capture::{Streams, start_helpers};

/// How a child ended and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code, when the child exited rather than died of a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the child, when one did.
    pub signal: Option<i32>,
    /// The deadline passed and the group was terminated.
    pub timed_out: bool,
    /// The run was cancelled and the group was terminated.
    pub cancelled: bool,
    /// From spawn until the child was reaped.
    pub duration: Duration,
    /// The child's stdout tail.
    pub stdout: Captured,
    /// The child's stderr tail.
    pub stderr: Captured,
    /// A process outside the child's group (one that called `setsid`, say) still held the output pipes after
    /// the group was gone, so capture stopped early.
    pub pipes_held_open: bool,
}

impl Output {
    /// Exited with code 0 on its own, within its deadline.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// A one-line account for logs and error messages: `exit 2`, `signal 9 (timed out)`…
    pub fn describe(&self) -> String {
        let ending = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "unknown status".to_owned(),
        };
        if self.timed_out {
            format!("{ending} (timed out after {:.1}s)", self.duration.as_secs_f64())
        } else if self.cancelled {
            format!("{ending} (cancelled)")
        } else {
            ending
        }
    }
}

/// Why a child could not be run to completion.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program is not on the search path (or the given path does not exist).
    #[error("program `{program}` not found{}", searched_note(.searched))]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// The `PATH` that was searched, when it was a bare name.
        searched: Option<String>,
    },
    /// The working directory is missing.
    #[error("working directory {} does not exist or is not a directory", .cwd.display())]
    MissingCwd {
        /// The directory as given.
        cwd: PathBuf,
    },
    /// The operating system refused to start the child.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The error from the operating system.
        source: io::Error,
    },
    /// A helper thread could not be started, or waiting for the child failed.
    #[error("supervising `{program}` failed: {source}")]
    Supervise {
        /// The program as given.
        program: String,
        /// The underlying error.
        source: io::Error,
    },
}

fn searched_note(searched: &Option<String>) -> String {
    match searched {
        Some(path) if path.is_empty() => " (PATH is empty)".to_owned(),
        Some(path) => format!(" on PATH {path}"),
        None => String::new(),
    }
}

/// What wakes the supervising thread.
#[derive(Debug)]
enum Wake {
    Exited,
    WaitFailed(io::Error),
    Cancelled,
}

/// Runs `spec` to completion (or to its deadline) and reports how it ended.
pub fn run(spec: &CommandSpec) -> Result<Output, ProcessError> {
    run_cancellable(spec, &CancelToken::new())
}

/// Like [`run`], but [`CancelToken::cancel`] terminates the child's group early.
pub fn run_cancellable(spec: &CommandSpec, cancel: &CancelToken) -> Result<Output, ProcessError> {
    run_with_parent_env(spec, cancel, &|name| std::env::var_os(name))
}

/// [`run_cancellable`] with the parent environment injected, so the allow-list is testable without mutating
/// the test process's own environment.
pub(crate) fn run_with_parent_env(
    spec: &CommandSpec,
    cancel: &CancelToken,
    parent_env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Output, ProcessError> {
    let started = start(spec, parent_env, Interaction::None)?;
    // The caller's thread is free while the child runs, so it supervises.
    supervise(started, cancel, spec)
}

/// A child started by [`spawn`] whose stdin and stdout the caller talks to while it runs (an agent speaking
/// JSON lines, say). The deadline, cancellation and group kill are enforced on a supervising thread
/// whatever the caller does; dropping this without [`RunningChild::wait`] still ends and reaps the child at
/// its deadline.
#[derive(Debug)]
pub struct RunningChild {
    /// The child's stdin; `None` when the spec had stdin bytes (they are fed, then the pipe is closed).
    pub stdin: Option<ChildStdin>,
    /// The child's stdout, uncaptured: [`Output::stdout`] stays empty. Read it promptly, or the child blocks
    /// on a full pipe (until its deadline).
    pub stdout: Option<ChildStdout>,
    id: u32,
    program: String,
    supervisor: JoinHandle<Result<Output, ProcessError>>,
}

impl RunningChild {
    /// The child's process id, which is also its process group id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Waits until the child has ended (by itself, at its deadline or on cancel) and reports how. Drop
    /// [`RunningChild::stdin`] first if the child reads until end of input.
    pub fn wait(self) -> Result<Output, ProcessError> {
        drop(self.stdin);
        self.supervisor.join().unwrap_or_else(|_| {
            Err(ProcessError::Supervise {
                program: self.program,
                source: io::Error::other("the supervising thread panicked"),
            })
        })
    }
}

/// Starts `spec` and hands its stdin and stdout to the caller; stderr is captured as a tail as in [`run`].
pub fn spawn(spec: &CommandSpec, cancel: &CancelToken) -> Result<RunningChild, ProcessError> {
    let mut started = start(spec, &|name| std::env::var_os(name), Interaction::Pipes)?;
    let (stdin, stdout) = (started.child.stdin.take(), started.child.stdout.take());
    let id = started.child.id();
    let (cancel, spec_for_thread) = (cancel.clone(), spec.clone());
    let supervisor = thread::Builder::new()
        .name("agency-exec-supervise".into())
        .spawn(move || supervise(started, &cancel, &spec_for_thread));
    match supervisor {
        Ok(supervisor) => Ok(RunningChild {
            stdin,
            stdout,
            id,
            program: spec.program_name(),
            supervisor,
        }),
        Err(source) => {
            // The child was moved into the closure that failed to start; it is dropped unreaped, but its
            // group can still be killed by id.
            if let Some(pid) = Pid::from_raw(id as i32) {
                signal_group(pid, Signal::KILL);
            }
            Err(ProcessError::Supervise {
                program: spec.program_name(),
                source,
            })
        }
    }
}

/// Whether the caller talks to the child's stdin/stdout itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interaction {
    /// Stdin is fed from the spec (or `/dev/null`), stdout captured.
    None,
    /// Stdin (unless fed from the spec) and stdout are left on the child for the caller to take.
    Pipes,
}

/// A spawned child with its helper threads running.
struct Started {
    child: Child,
    pid: Pid,
    start: Instant,
    streams: Streams,
    wake_rx: Receiver<Wake>,
    wake_tx: Sender<Wake>,
}

fn start(
    spec: &CommandSpec,
    parent_env: &dyn Fn(&str) -> Option<OsString>,
    interaction: Interaction,
) -> Result<Started, ProcessError> {
    let program_name = spec.program_name();
    let supervise_err = |source| ProcessError::Supervise {
        program: program_name.clone(),
        source,
    };

    let env = spec.env.resolve(parent_env);
    if let Some(cwd) = &spec.cwd
        && !cwd.is_dir()
    {
        return Err(ProcessError::MissingCwd { cwd: cwd.clone() });
    }
    let search_path = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| parent_env("PATH"));
    let program = resolve_program(&spec.program, spec.cwd.as_deref(), search_path.as_deref())?;

    let stdin = if spec.stdin.is_some() || interaction == Interaction::Pipes {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut command = Command::new(&program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so the whole tree it starts can be signalled at once.
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }

    let start = Instant::now();
    let mut child = command.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => ProcessError::ProgramNotFound {
            program: program_name.clone(),
            searched: None,
        },
        _ => ProcessError::Spawn {
            program: program_name.clone(),
            source,
        },
    })?;
    let pid = Pid::from_child(&child);

    let fed_stdin = match &spec.stdin {
        Some(bytes) => child.stdin.take().map(|pipe| (pipe, bytes.clone())),
        None => None,
    };
    let captured_stdout = match interaction {
        Interaction::None => child.stdout.take(),
        Interaction::Pipes => None,
    };
    let streams = match start_helpers(fed_stdin, captured_stdout, child.stderr.take(), spec.output_cap) {
        Ok(streams) => streams,
        Err(err) => {
            kill_and_reap(&mut child, pid);
            return Err(supervise_err(err));
        }
    };

    let (wake_tx, wake_rx) = mpsc::channel();
    let waiter_tx = wake_tx.clone();
    let waiter = thread::Builder::new()
        .name("agency-exec-wait".into())
        .spawn(move || {
            let _ = waiter_tx.send(match wait_for_exit_keeping_zombie(pid) {
                Ok(()) => Wake::Exited,
                Err(err) => Wake::WaitFailed(err),
            });
        });
    if let Err(err) = waiter {
        kill_and_reap(&mut child, pid);
        return Err(supervise_err(err));
    }
    Ok(Started {
        child,
        pid,
        start,
        streams,
        wake_rx,
        wake_tx,
    })
}

/// Waits for the child's exit, its deadline or a cancel; on the latter two terminates, then kills, its
/// group; reaps it and collects the output.
fn supervise(started: Started, cancel: &CancelToken, spec: &CommandSpec) -> Result<Output, ProcessError> {
    let Started {
        mut child,
        pid,
        start,
        streams,
        wake_rx,
        wake_tx,
    } = started;
    let supervise_err = |source| ProcessError::Supervise {
        program: spec.program_name(),
        source,
    };
    let _registration = cancel.register(wake_tx);

    let left = (start + spec.timeout).saturating_duration_since(Instant::now());
    let (mut exited, timed_out, cancelled) = match wake_rx.recv_timeout(left) {
        Ok(Wake::Exited) => (true, false, false),
        Ok(Wake::Cancelled) => (false, false, true),
        Ok(Wake::WaitFailed(err)) => {
            kill_and_reap(&mut child, pid);
            return Err(supervise_err(err));
        }
        Err(RecvTimeoutError::Timeout) => (false, true, false),
        // The waiter thread holds a sender until it reports, so this cannot happen; treat it as an exit and
        // let the reap below tell the truth.
        Err(RecvTimeoutError::Disconnected) => (true, false, false),
    };

    if !exited {
        signal_group(pid, Signal::TERM);
        exited = wait_for_wake_exit(&wake_rx, Some(spec.kill_grace));
    }
    // The leader is still unreaped here (a zombie at worst), so the group id cannot have been recycled: this
    // only reaches what the command started.
    signal_group(pid, Signal::KILL);
    if !exited {
        wait_for_wake_exit(&wake_rx, None);
    }
    let status = child.wait().map_err(supervise_err)?;
    let duration = start.elapsed();

    let pipes_held_open = !streams.finish(spec.kill_grace.max(Duration::from_millis(200)));
    let (stdout, stderr) = streams.snapshot();
    Ok(Output {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        cancelled,
        duration,
        stdout,
        stderr,
        pipes_held_open,
    })
}

/// Finds the executable the child will run, so a missing program is reported by name instead of as an
/// ambiguous spawn error (a missing working directory also reads as "not found" from the OS).
fn resolve_program(
    program: &OsStr,
    cwd: Option<&Path>,
    path: Option<&OsStr>,
) -> Result<PathBuf, ProcessError> {
    let as_path = Path::new(program);
    let name = || program.to_string_lossy().into_owned();
    if program.is_empty() {
        return Err(ProcessError::ProgramNotFound {
            program: String::new(),
            searched: None,
        });
    }
    if as_path.components().count() > 1 || as_path.is_absolute() {
        let full = match cwd {
            Some(cwd) if as_path.is_relative() => cwd.join(as_path),
            _ => as_path.to_path_buf(),
        };
        return if full.is_file() {
            Ok(full)
        } else {
            Err(ProcessError::ProgramNotFound {
                program: name(),
                searched: None,
            })
        };
    }
    let path = path.unwrap_or_default();
    // Empty PATH entries mean "the current directory" to a shell; we do not search it implicitly.
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(as_path))
        .find(|candidate| is_executable_file(candidate))
        .ok_or_else(|| ProcessError::ProgramNotFound {
            program: name(),
            searched: Some(path.to_string_lossy().into_owned()),
        })
}

fn is_executable_file(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Blocks until the child has exited without reaping it (`WNOWAIT`).
fn wait_for_exit_keeping_zombie(pid: Pid) -> io::Result<()> {
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// Waits for the exit notice, ignoring further cancellations; `None` waits indefinitely.
fn wait_for_wake_exit(wake: &Receiver<Wake>, limit: Option<Duration>) -> bool {
    let deadline = limit.map(|limit| Instant::now() + limit);
    loop {
        let next = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) => wake
                    .recv_timeout(left)
                    .map_err(|err| matches!(err, RecvTimeoutError::Timeout)),
                None => return false,
            },
            None => wake.recv().map_err(|_| false),
        };
        match next {
            Ok(Wake::Exited | Wake::WaitFailed(_)) => return true,
            Ok(Wake::Cancelled) => continue,
            Err(true) => return false,
            // No sender left: the waiter thread is gone, so waiting longer cannot help.
            Err(false) => return true,
        }
    }
}

fn signal_group(pid: Pid, signal: Signal) {
    // ESRCH (the group is already empty) is the expected way for this to fail; there is nothing else to do
    // about any other error here either.
    let _ = rustix::process::kill_process_group(pid, signal);
}

fn kill_and_reap(child: &mut Child, pid: Pid) {
    signal_group(pid, Signal::KILL);
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_the_parent_environment_does_not_reach_the_child() {
        let parent = |name: &str| match name {
            "PATH" => std::env::var_os("PATH"),
            "SECRET_TOKEN" => Some(OsString::from("hunter2")),
            _ => None,
        };
        let spec = CommandSpec::new("env").inherit_env("PATH");
        let output = run_with_parent_env(&spec, &CancelToken::new(), &parent).unwrap();
        let text = output.stdout.text();
        assert!(text.starts_with("PATH=") && !text.contains("hunter2"), "{text}");
        let with_secret = spec.inherit_env("SECRET_TOKEN");
        let output = run_with_parent_env(&with_secret, &CancelToken::new(), &parent).unwrap();
        assert!(output.stdout.text().contains("SECRET_TOKEN=hunter2"));
    }

    #[test]
    fn relative_program_paths_resolve_against_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/verify.sh"), "#!/bin/sh\n").unwrap();
        let resolved = resolve_program(OsStr::new("scripts/verify.sh"), Some(dir.path()), None).unwrap();
        assert_eq!(resolved, dir.path().join("scripts/verify.sh"));
    }

    #[test]
    fn bare_names_ignore_relative_path_entries() {
        let err = resolve_program(OsStr::new("sh"), None, Some(OsStr::new(".:relative"))).unwrap_err();
        assert!(matches!(err, ProcessError::ProgramNotFound { .. }), "{err}");
    }
}
