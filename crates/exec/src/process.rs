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

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// The deadline a [`CommandSpec`] gets unless told otherwise: every child has one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a process group has between SIGTERM and SIGKILL by default.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// How many bytes of each of stdout and stderr are kept by default (the tail).
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// What to run and under which limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The program: a bare name looked up on the child's `PATH` (or, when the child gets none, the parent's),
    /// or a path, resolved against `cwd` when relative.
    pub program: OsString,
    /// Arguments after the program name, passed verbatim.
    pub args: Vec<OsString>,
    /// Working directory of the child; the parent's when `None`.
    pub cwd: Option<PathBuf>,
    /// The child's whole environment.
    pub env: EnvPolicy,
    /// Bytes written to the child's stdin, which is then closed; stdin is `/dev/null` when `None`.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit from spawn to exit.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL of the group on timeout or cancel.
    pub kill_grace: Duration,
    /// Bytes kept of each output stream (the last ones).
    pub output_cap: usize,
}

/// The environment a child sees: nothing from the parent except what is named here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Names of parent variables passed through when the parent has them.
    pub inherit: Vec<String>,
    /// Explicit variables; they win over inherited ones of the same name.
    pub set: Vec<(String, OsString)>,
}

impl EnvPolicy {
    /// The child's variables, given a lookup into the parent's environment.
    pub fn resolve(&self, parent: &dyn Fn(&str) -> Option<OsString>) -> Vec<(String, OsString)> {
        let mut vars: Vec<(String, OsString)> = Vec::new();
        let mut put = |name: &str, value: OsString| match vars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => vars.push((name.to_owned(), value)),
        };
        for name in &self.inherit {
            if let Some(value) = parent(name) {
                put(name, value);
            }
        }
        for (name, value) in &self.set {
            put(name, value.clone());
        }
        vars
    }
}

impl CommandSpec {
    /// A spec for `program` with no arguments, an empty environment and the default limits.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: EnvPolicy::default(),
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }

    /// A spec from an argv (program first), as produced by [`crate::split_command_line`].
    pub fn from_argv<I, S>(argv: I) -> Option<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut argv = argv.into_iter().map(Into::into);
        let program = argv.next()?;
        Some(Self::new(program).args(argv))
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Passes the parent's variable `name` through, if the parent has it.
    pub fn inherit_env(mut self, name: impl Into<String>) -> Self {
        self.env.inherit.push(name.into());
        self
    }

    /// Sets a variable for the child.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.set.push((name.into(), value.into()));
        self
    }

    /// Feeds these bytes to the child's stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Sets the deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the grace period between SIGTERM and SIGKILL.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Sets how many bytes of each output stream are kept.
    pub fn output_cap(mut self, cap: usize) -> Self {
        self.output_cap = cap;
        self
    }

    /// The program name as shown in errors and logs.
    pub fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }
}

/// The last bytes of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The tail: at most `output_cap` bytes, the most recent ones.
    pub tail: Vec<u8>,
    /// How many bytes were dropped from the front to respect the cap.
    pub truncated_bytes: u64,
}

impl Captured {
    /// The tail as text, invalid UTF-8 replaced.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.tail)
    }

    /// Everything the stream produced, kept or not.
    pub fn total_bytes(&self) -> u64 {
        self.truncated_bytes + self.tail.len() as u64
    }
}

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

/// Cancels runs from another thread: every run given this token (before or after the call) terminates its
/// process group as on a timeout.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Mutex<CancelState>>,
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: bool,
    next_id: u64,
    waiters: Vec<(u64, Sender<Wake>)>,
}

impl CancelToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run using this token, now and later.
    pub fn cancel(&self) {
        let mut state = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        state.cancelled = true;
        for (_, waiter) in state.waiters.drain(..) {
            // A run that already finished dropped its receiver; nothing to tell it.
            let _ = waiter.send(Wake::Cancelled);
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled
    }

    fn register(&self, waiter: Sender<Wake>) -> Registration<'_> {
        let mut state = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let id = state.next_id;
        state.next_id += 1;
        if state.cancelled {
            let _ = waiter.send(Wake::Cancelled);
        } else {
            state.waiters.push((id, waiter));
        }
        Registration { token: self, id }
    }
}

/// Removes a finished run's waiter so a long-lived token does not accumulate dead senders.
struct Registration<'a> {
    token: &'a CancelToken,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut state = self.token.inner.lock().unwrap_or_else(PoisonError::into_inner);
        state.waiters.retain(|(id, _)| *id != self.id);
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

    let mut command = Command::new(&program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
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

    let streams = match start_helpers(&mut child, spec) {
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
        // We hold a sender ourselves (through the registration), so this cannot happen; treat it as an exit
        // and let the reap below tell the truth.
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

/// The helper threads that feed stdin and drain stdout/stderr.
struct Streams {
    stdout: Arc<Mutex<TailBuffer>>,
    stderr: Arc<Mutex<TailBuffer>>,
    done: Receiver<()>,
    readers: usize,
}

impl Streams {
    /// Waits up to `limit` for both readers to see end of file; false when a pipe is still held open.
    fn finish(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        for _ in 0..self.readers {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            if self.done.recv_timeout(left).is_err() {
                return false;
            }
        }
        true
    }

    fn snapshot(&self) -> (Captured, Captured) {
        let take = |buffer: &Arc<Mutex<TailBuffer>>| {
            buffer.lock().unwrap_or_else(PoisonError::into_inner).captured()
        };
        (take(&self.stdout), take(&self.stderr))
    }
}

fn start_helpers(child: &mut Child, spec: &CommandSpec) -> io::Result<Streams> {
    if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), spec.stdin.clone()) {
        thread::Builder::new()
            .name("agency-exec-stdin".into())
            .spawn(move || {
                // A child that exits without reading its input closes the pipe; that is its business.
                let _ = pipe.write_all(&bytes);
            })?;
    }
    let (done_tx, done) = mpsc::channel();
    let stdout = Arc::new(Mutex::new(TailBuffer::new(spec.output_cap)));
    let stderr = Arc::new(Mutex::new(TailBuffer::new(spec.output_cap)));
    let mut readers = 0;
    if let Some(pipe) = child.stdout.take() {
        spawn_reader(pipe, Arc::clone(&stdout), done_tx.clone(), "agency-exec-stdout")?;
        readers += 1;
    }
    if let Some(pipe) = child.stderr.take() {
        spawn_reader(pipe, Arc::clone(&stderr), done_tx, "agency-exec-stderr")?;
        readers += 1;
    }
    Ok(Streams {
        stdout,
        stderr,
        done,
        readers,
    })
}

fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    buffer: Arc<Mutex<TailBuffer>>,
    done: Sender<()>,
    name: &str,
) -> io::Result<()> {
    thread::Builder::new().name(name.into()).spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buffer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&chunk[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send(());
    })?;
    Ok(())
}

/// A byte ring buffer that keeps the last `cap` bytes pushed and counts the rest.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    cap: usize,
    bytes: VecDeque<u8>,
    dropped: u64,
}

impl TailBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            bytes: VecDeque::with_capacity(cap.min(64 * 1024)),
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.cap {
            self.dropped += (self.bytes.len() + chunk.len() - self.cap) as u64;
            self.bytes.clear();
            self.bytes.extend(&chunk[chunk.len() - self.cap..]);
            return;
        }
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.cap);
        self.bytes.drain(..overflow);
        self.dropped += overflow as u64;
        self.bytes.extend(chunk);
    }

    pub(crate) fn captured(&self) -> Captured {
        Captured {
            tail: self.bytes.iter().copied().collect(),
            truncated_bytes: self.dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tail_buffer_keeps_exactly_the_last_cap_bytes(
            cap in 0usize..64,
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..20),
        ) {
            let mut buffer = TailBuffer::new(cap);
            let mut all = Vec::new();
            for chunk in &chunks {
                buffer.push(chunk);
                all.extend_from_slice(chunk);
            }
            let captured = buffer.captured();
            let keep = all.len().min(cap);
            prop_assert_eq!(&captured.tail[..], &all[all.len() - keep..]);
            prop_assert_eq!(captured.truncated_bytes, (all.len() - keep) as u64);
            prop_assert_eq!(captured.total_bytes(), all.len() as u64);
        }
    }

    #[test]
    fn explicit_env_wins_over_inherited_and_nothing_else_passes() {
        let policy = EnvPolicy {
            inherit: vec!["PATH".into(), "ABSENT".into()],
            set: vec![("PATH".into(), "/opt/bin".into()), ("LANG".into(), "C".into())],
        };
        let parent = |name: &str| match name {
            "PATH" => Some(OsString::from("/usr/bin")),
            "SECRET_TOKEN" => Some(OsString::from("hunter2")),
            _ => None,
        };
        assert_eq!(
            policy.resolve(&parent),
            vec![
                ("PATH".to_owned(), OsString::from("/opt/bin")),
                ("LANG".to_owned(), OsString::from("C"))
            ]
        );
    }

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
