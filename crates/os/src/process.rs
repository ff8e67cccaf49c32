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
//! Output from both pipes is drained into ring buffers that keep only the last `output_cap` bytes, so a
//! chatty child can neither block on a full pipe for long nor exhaust memory; the number of bytes dropped
//! from the front is reported. For its first 100 ms a child's output is left in the pipes and read when it
//! exits (most of what a runner starts is done by then, and waking once costs less than waking per write;
//! a child that fills a pipe sooner waits for the rest of the 100 ms); after that it is drained as it
//! comes. [`run`] does all of that on the caller's thread with one `poll` (see `watch`); [`spawn`] does it
//! on one supervising thread.
//!
//! A process that dies without a word (SIGKILL) cannot stop its children: [`ProcessIdentity`] records who a
//! child is so that whoever takes over can stop what is left of it ([`stop_leftover`]).

mod capture;
pub mod cost;
mod leftover;
mod spec;
mod watch;

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

pub use agency_cancel::CancelToken;
pub use capture::Captured;
pub use leftover::{Leftover, ProcessIdentity, stop_leftover};
pub use spec::{CommandSpec, DEFAULT_KILL_GRACE, DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, EnvPolicy};

use capture::{Drain, Feed};
use watch::{Goal, Reached, Watch};

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
    /// The supervising thread could not be started, or watching the child failed.
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

/// Children started by this process so far (for benchmarks: a count that does not move with the load).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// How many children [`run`] and [`spawn`] have started in this process.
pub fn started_count() -> u64 {
    STARTED.load(Ordering::Relaxed)
}

/// Runs `spec` to completion (or to its deadline) and reports how it ended.
pub fn run(spec: &CommandSpec) -> Result<Output, ProcessError> {
    run_with_parent_env(spec, None, &|name| std::env::var_os(name))
}

/// Like [`run`], but [`CancelToken::cancel`] terminates the child's group early.
pub fn run_cancellable(spec: &CommandSpec, cancel: &CancelToken) -> Result<Output, ProcessError> {
    run_with_parent_env(spec, Some(cancel), &|name| std::env::var_os(name))
}

/// [`run_cancellable`] with the parent environment injected, so the allow-list is testable without mutating
/// the test process's own environment. Without a token nothing can cancel the run, so nothing listens for
/// one (a runner starts git thousands of times this way).
pub(crate) fn run_with_parent_env(
    spec: &CommandSpec,
    cancel: Option<&CancelToken>,
    parent_env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Output, ProcessError> {
    let _meter = cost::Meter::start();
    let interaction = Interaction::None {
        cancellable: cancel.is_some(),
    };
    let started = start(spec, parent_env, interaction)?;
    // The caller's thread is free while the child runs, so it supervises.
    supervise(started, cancel, spec)
}

/// A child started by [`spawn`] whose stdin and stdout the caller talks to while it runs (an agent speaking
/// JSON lines, say). The deadline, cancellation and group kill are enforced on a supervising thread
/// whatever the caller does; dropping this without [`RunningChild::wait`] still ends and reaps the child at
/// its deadline.
///
/// Its standard streams are connected sockets, not pipes: whatever the child starts in turn may open
/// `/proc/<child>/fd/1` and write into a pipe behind the child's back (a forged line in an agent's event
/// stream, which the runner reads as the agent's own), while a socket cannot be opened that way (`ENXIO`).
#[derive(Debug)]
pub struct RunningChild {
    /// The child's stdin; `None` when the spec had stdin bytes (they are fed, then the socket is closed).
    pub stdin: Option<UnixStream>,
    /// The child's stdout, uncaptured: [`Output::stdout`] stays empty. Read it promptly, or the child blocks
    /// on a full socket (until its deadline).
    pub stdout: Option<UnixStream>,
    id: u32,
    identity: io::Result<ProcessIdentity>,
    program: String,
    supervisor: JoinHandle<Result<Output, ProcessError>>,
}

impl RunningChild {
    /// The child's process id, which is also its process group id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Who the child is in terms that outlive this process (see [`stop_leftover`]), read as it started;
    /// the error says why it could not be read (no `/proc`, say).
    pub fn identity(&self) -> Result<&ProcessIdentity, &io::Error> {
        self.identity.as_ref()
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
    let _meter = cost::Meter::start();
    let mut started = start(spec, &|name| std::env::var_os(name), Interaction::Pipes)?;
    let (stdin, stdout) = started
        .talk
        .take()
        .map_or((None, None), |talk| (talk.stdin, Some(talk.stdout)));
    let id = started.child.id();
    // Read before the supervisor may reap it, while the pid is certainly still the child's.
    let identity = ProcessIdentity::of(id);
    let (cancel, spec_for_thread) = (cancel.clone(), spec.clone());
    let supervisor = thread::Builder::new()
        .name("agency-exec-supervise".into())
        .spawn(move || {
            let _meter = cost::Meter::start();
            supervise(started, Some(&cancel), &spec_for_thread)
        });
    match supervisor {
        Ok(supervisor) => Ok(RunningChild {
            stdin,
            stdout,
            id,
            identity,
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
    /// Stdin is fed from the spec (or `/dev/null`), stdout captured; `cancellable` when a token may cancel
    /// the run.
    None { cancellable: bool },
    /// Stdin (unless fed from the spec) and stdout are left on the child for the caller to take; always
    /// cancellable.
    Pipes,
}

/// A spawned child and what watches it.
struct Started {
    child: Child,
    pid: Pid,
    start: Instant,
    watch: Watch,
    /// With [`Interaction::Pipes`]: the ends the caller talks to the child through.
    talk: Option<Talk>,
}

/// Our ends of an interactive child's stdin and stdout.
struct Talk {
    /// `None` when its stdin is fed from the spec.
    stdin: Option<UnixStream>,
    stdout: UnixStream,
}

/// Our ends of the socket pairs an interactive child's standard streams are ([`Interaction::Pipes`]).
struct Sockets {
    stdin: UnixStream,
    stdout: UnixStream,
    stderr: UnixStream,
}

fn start(
    spec: &CommandSpec,
    parent_env: &dyn Fn(&str) -> Option<OsString>,
    interaction: Interaction,
) -> Result<Started, ProcessError> {
    // Named only in errors: a start that succeeds never writes it out.
    let supervise_err = |source| ProcessError::Supervise {
        program: spec.program_name(),
        source,
    };

    let env = spec.env.resolve(parent_env);
    let search_path: Option<Cow<'_, OsStr>> = env
        .iter()
        .find(|(name, _)| *name == "PATH")
        .map(|(_, v)| Cow::Borrowed(v.as_ref()))
        .or_else(|| parent_env("PATH").map(Cow::Owned));
    let missing_cwd = || match &spec.cwd {
        Some(cwd) if !cwd.is_dir() => Some(ProcessError::MissingCwd { cwd: cwd.clone() }),
        _ => None,
    };
    let resolve = || {
        resolve_program(&spec.program, spec.cwd.as_deref(), search_path.as_deref())
            // A relative program is looked for in the working directory: say which of the two is missing.
            .map_err(|err| missing_cwd().unwrap_or(err))
    };
    let program = resolve()?;

    let start = Instant::now();
    let mut spawned = spawn_unless_busy(spec, &env, &program.path, interaction);
    if program.remembered
        && spawned
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
    {
        // It has gone from where it was found before: look along the search path again.
        forget_program(&spec.program, search_path.as_deref());
        spawned = spawn_unless_busy(spec, &env, &resolve()?.path, interaction);
    }
    let (mut child, sockets) = spawned.map_err(|source| {
        // Whether the working directory exists is asked only now: a run that starts never pays for it.
        if let Some(missing) = missing_cwd() {
            return missing;
        }
        match source.kind() {
            io::ErrorKind::NotFound => ProcessError::ProgramNotFound {
                program: spec.program_name(),
                searched: None,
            },
            _ => ProcessError::Spawn {
                program: spec.program_name(),
                source,
            },
        }
    })?;
    STARTED.fetch_add(1, Ordering::Relaxed);
    let pid = Pid::from_child(&child);

    let (mut sockets_stdin, talk_stdout, sockets_stderr) = match sockets {
        Some(s) => (Some(s.stdin), Some(s.stdout), Some(s.stderr)),
        None => (None, None, None),
    };
    let fed_stdin = match &spec.stdin {
        Some(bytes) => child
            .stdin
            .take()
            .map(OwnedFd::from)
            .or_else(|| sockets_stdin.take().map(OwnedFd::from))
            .map(|pipe| (pipe, bytes.clone())),
        None => None,
    };
    let (captured_stdout, cancellable) = match interaction {
        Interaction::None { cancellable } => (child.stdout.take().map(OwnedFd::from), cancellable),
        Interaction::Pipes => (None, true),
    };
    let captured_stderr = child
        .stderr
        .take()
        .map(OwnedFd::from)
        .or_else(|| sockets_stderr.map(OwnedFd::from));
    let talk = talk_stdout.map(|stdout| Talk {
        stdin: sockets_stdin,
        stdout,
    });
    let pipes = Pipes {
        fed_stdin,
        stdout: captured_stdout,
        stderr: captured_stderr,
    };
    match watch_child(pid, pipes, spec.output_cap, cancellable) {
        Ok(watch) => Ok(Started {
            child,
            pid,
            start,
            watch,
            talk,
        }),
        Err(err) => {
            kill_and_reap(&mut child, pid);
            Err(supervise_err(err))
        }
    }
}

/// Makes a watch's eventfd readable, waking its `poll`. It cannot fail short of the counter overflowing,
/// which one ring per run never approaches; a failure would leave the run to its deadline, so there is
/// nothing better to do.
fn ring(waker: &OwnedFd) {
    let _ = rustix::io::write(waker, &1u64.to_ne_bytes());
}

/// How long to wait before each new try at starting a program the kernel calls busy (see
/// [`spawn_unless_busy`]): about 0.1 s in all.
const BUSY_RETRIES: [Duration; 4] = [
    Duration::from_millis(1),
    Duration::from_millis(4),
    Duration::from_millis(16),
    Duration::from_millis(64),
];

/// [`spawn_child`], tried again a few times while the program is "busy" (`ETXTBSY`). A script written just
/// before it is run is busy for as long as any process holds it open for writing, and a child that another
/// thread of this process starts at that moment holds every open file until its own `exec`: an agent writing
/// a script in process while the runner starts git for another brief, or a test writing a fake program while
/// other tests start theirs. That lasts well under a millisecond; a program held open for writing for longer
/// still fails, as before.
fn spawn_unless_busy(
    spec: &CommandSpec,
    env: &[(&str, Cow<'_, OsStr>)],
    program: &Path,
    interaction: Interaction,
) -> io::Result<(Child, Option<Sockets>)> {
    let busy = |result: &io::Result<(Child, Option<Sockets>)>| {
        result
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::ExecutableFileBusy)
    };
    let mut spawned = spawn_child(spec, env, program, interaction);
    for pause in BUSY_RETRIES {
        if !busy(&spawned) {
            break;
        }
        thread::sleep(pause);
        spawned = spawn_child(spec, env, program, interaction);
    }
    spawned
}

/// Starts `program` as `spec` says, with the environment `env`, in a process group of its own. An
/// interactive child's standard streams are socket pairs (see [`RunningChild`]), whose other ends come back
/// with it; the others get pipes.
fn spawn_child(
    spec: &CommandSpec,
    env: &[(&str, Cow<'_, OsStr>)],
    program: &Path,
    interaction: Interaction,
) -> io::Result<(Child, Option<Sockets>)> {
    let mut command = Command::new(program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, &**v)))
        // Its own group, so the whole tree it starts can be signalled at once.
        .process_group(0);
    let sockets = if interaction == Interaction::Pipes {
        let (stdin, child_stdin) = UnixStream::pair()?;
        let (stdout, child_stdout) = UnixStream::pair()?;
        let (stderr, child_stderr) = UnixStream::pair()?;
        // The child's ends are closed here once it has them (`Command` drops them after the spawn).
        command
            .stdin(OwnedFd::from(child_stdin))
            .stdout(OwnedFd::from(child_stdout))
            .stderr(OwnedFd::from(child_stderr));
        Some(Sockets {
            stdin,
            stdout,
            stderr,
        })
    } else {
        let stdin = if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            dev_null()?
        };
        command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    command.spawn().map(|child| (child, sockets))
}

/// The pipes of a child just started that its watch handles.
struct Pipes {
    /// Stdin and the bytes to feed it.
    fed_stdin: Option<(OwnedFd, Vec<u8>)>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

/// What watches a child just started: its stdin fed, its output pipes drained into tails of `cap` bytes,
/// and (when `cancellable`) an eventfd for a cancel token to ring.
fn watch_child(pid: Pid, pipes: Pipes, cap: usize, cancellable: bool) -> io::Result<Watch> {
    let (pipe, bytes) = pipes.fed_stdin.unzip();
    let feed = Feed::new(pipe, bytes.unwrap_or_default())?;
    let (stdout, stderr) = (Drain::new(pipes.stdout, cap), Drain::new(pipes.stderr, cap));
    Watch::new(pid, feed, stdout, stderr, cancellable)
}

/// A `/dev/null` for a child's stdin: one descriptor opened once per process and duplicated for each
/// child, instead of a path looked up each time.
fn dev_null() -> io::Result<Stdio> {
    static DEV_NULL: OnceLock<OwnedFd> = OnceLock::new();
    let fd = match DEV_NULL.get() {
        Some(fd) => fd,
        None => {
            // Said as what it is, not as a missing program (a start failing with "not found" reads so).
            let opened = std::fs::File::open("/dev/null")
                .map_err(|e| io::Error::other(format!("opening /dev/null for the child's stdin: {e}")))?;
            let opened = OwnedFd::from(opened);
            // Two threads may open it at once; the one that loses closes its own.
            DEV_NULL.get_or_init(|| opened)
        }
    };
    Ok(Stdio::from(fd.try_clone()?))
}

/// Waits for the child's exit, its deadline or a cancel, draining its pipes meanwhile; on a deadline or
/// cancel terminates, then kills, its group; reaps it and collects the output.
fn supervise(
    started: Started,
    cancel: Option<&CancelToken>,
    spec: &CommandSpec,
) -> Result<Output, ProcessError> {
    // An interactive child's own ends were handed to the caller by [`spawn`]; `run` has none.
    let Started {
        mut child,
        pid,
        start,
        mut watch,
        talk: _,
    } = started;
    let supervise_err = |source| ProcessError::Supervise {
        program: spec.program_name(),
        source,
    };
    let _registration = cancel
        .zip(watch.cancel_waker())
        .map(|(token, waker)| token.on_cancel(move || ring(&waker)));

    let first = watch.until(Goal::ExitOrCancel, Some(start + spec.timeout));
    let (timed_out, cancelled) = match first {
        Ok(Reached::Goal) => (false, false),
        Ok(Reached::Cancelled) => (false, true),
        Ok(Reached::Deadline) => (true, false),
        Err(err) => {
            kill_and_reap(&mut child, pid);
            return Err(supervise_err(err));
        }
    };
    if !watch.exited() {
        signal_group(pid, Signal::TERM);
        let grace = Instant::now() + spec.kill_grace;
        if let Err(err) = watch.until(Goal::Exit, Some(grace)) {
            kill_and_reap(&mut child, pid);
            return Err(supervise_err(err));
        }
    }
    // The leader is still unreaped here (a zombie at worst), so the group id cannot have been recycled: this
    // only reaches what the command started.
    signal_group(pid, Signal::KILL);
    if !watch.exited()
        && let Err(err) = watch.until(Goal::Exit, None)
    {
        kill_and_reap(&mut child, pid);
        return Err(supervise_err(err));
    }
    let status = child.wait().map_err(supervise_err)?;
    let duration = start.elapsed();

    // What the group wrote before it died is still in the pipes; a process that left the group (`setsid`)
    // may hold them open, so this is bounded.
    let drain_limit = Instant::now() + spec.kill_grace.max(Duration::from_millis(200));
    let pipes_held_open = match watch.until(Goal::PipesClosed, Some(drain_limit)) {
        Ok(reached) => reached != Reached::Goal,
        Err(err) => return Err(supervise_err(err)),
    };
    let (stdout, stderr) = watch.captured();
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

/// The executable a child started as `program` would run, looked for as [`run`] looks: a path with a
/// directory is taken as it is (relative to `cwd`), a bare name along `path`. For a wrapper (the sandbox)
/// that must name the real program in its own argv.
pub fn find_program(
    program: &OsStr,
    cwd: Option<&Path>,
    path: Option<&OsStr>,
) -> Result<PathBuf, ProcessError> {
    resolve_program(program, cwd, path).map(|found| found.path)
}

/// An executable found for a program name.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) path: PathBuf,
    /// Found earlier on the same search path and not looked at again (see [`FoundProgram`]).
    remembered: bool,
}

/// Finds the executable the child will run, so a missing program is reported by name instead of as an
/// ambiguous spawn error (a missing working directory also reads as "not found" from the OS).
pub(crate) fn resolve_program(
    program: &OsStr,
    cwd: Option<&Path>,
    path: Option<&OsStr>,
) -> Result<Resolved, ProcessError> {
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
            Ok(Resolved {
                path: full,
                remembered: false,
            })
        } else {
            Err(ProcessError::ProgramNotFound {
                program: name(),
                searched: None,
            })
        };
    }
    let path = path.unwrap_or_default();
    if let Some(found) = found_before(program, path) {
        return Ok(Resolved {
            path: found,
            remembered: true,
        });
    }
    // Empty PATH entries mean "the current directory" to a shell; we do not search it implicitly.
    let found = std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(as_path))
        .find(|candidate| is_executable_file(candidate))
        .ok_or_else(|| ProcessError::ProgramNotFound {
            program: name(),
            searched: Some(path.to_string_lossy().into_owned()),
        })?;
    found_programs().push(FoundProgram {
        name: program.to_os_string(),
        search_path: path.to_os_string(),
        found: found.clone(),
    });
    Ok(Resolved {
        path: found,
        remembered: false,
    })
}

/// Where a bare program name was found on a search path. A runner starts git thousands of times: where it
/// was found is remembered, instead of a failed `statx` per earlier PATH entry and one more for the hit
/// each time. A program that has gone from there since fails to start, and is then forgotten
/// ([`forget_program`]) and looked for again at once.
struct FoundProgram {
    name: OsString,
    search_path: OsString,
    found: PathBuf,
}

/// The names found so far (a handful: git, the agents' CLIs, verify commands).
fn found_programs() -> std::sync::MutexGuard<'static, Vec<FoundProgram>> {
    static FOUND: Mutex<Vec<FoundProgram>> = Mutex::new(Vec::new());
    FOUND.lock().unwrap_or_else(PoisonError::into_inner)
}

fn found_before(program: &OsStr, path: &OsStr) -> Option<PathBuf> {
    found_programs()
        .iter()
        .find(|f| f.name == program && f.search_path == path)
        .map(|f| f.found.clone())
}

/// Forgets where `program` was found on `path` (it failed to start from there).
fn forget_program(program: &OsStr, path: Option<&OsStr>) {
    let path = path.unwrap_or_default();
    found_programs().retain(|f| !(f.name == program && f.search_path == path));
}

fn is_executable_file(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
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
        let output = run_with_parent_env(&spec, None, &parent).unwrap();
        let text = output.stdout.text();
        assert!(text.starts_with("PATH=") && !text.contains("hunter2"), "{text}");
        let with_secret = spec.inherit_env("SECRET_TOKEN");
        let output = run_with_parent_env(&with_secret, None, &parent).unwrap();
        assert!(output.stdout.text().contains("SECRET_TOKEN=hunter2"));
    }

    #[test]
    fn relative_program_paths_resolve_against_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/verify.sh"), "#!/bin/sh\n").unwrap();
        let resolved = resolve_program(OsStr::new("scripts/verify.sh"), Some(dir.path()), None).unwrap();
        assert_eq!(resolved.path, dir.path().join("scripts/verify.sh"));
    }

    #[test]
    fn bare_names_ignore_relative_path_entries() {
        let err = resolve_program(OsStr::new("sh"), None, Some(OsStr::new(".:relative"))).unwrap_err();
        assert!(matches!(err, ProcessError::ProgramNotFound { .. }), "{err}");
    }
}
