//! The CLI's one error type. Library crates return typed errors; here each becomes a `CommandError` with a
//! kind (which decides the exit code), a message, and hints that tell the user what to do next.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

/// What went wrong, as far as the exit code is concerned. Codes are documented in docs/cli.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Something broke that the user did not cause (I/O, database). Exit 1.
    Internal,
    /// The command line itself is wrong. Exit 2 (clap uses 2 as well).
    Usage,
    /// Input was read but is invalid: team.yaml, a plan, a dimension. Exit 3.
    Input,
    /// A run, brief or gate named by the user does not exist or is ambiguous. Exit 4.
    NotFound,
    /// The command had nothing to act on (no pending gate, nothing paused). Exit 5.
    NothingToDo,
    /// No agency workspace here (`agency init` not run). Exit 6.
    NoWorkspace,
    /// A run ended without succeeding (failed, halted, cancelled). Exit 7.
    RunFailed,
    /// Ctrl-C or SIGTERM stopped the command; a run it drove can be resumed. Exit 130.
    Interrupted,
}

impl ErrorKind {
    /// The process exit code for this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Internal => 1,
            ErrorKind::Usage => 2,
            ErrorKind::Input => 3,
            ErrorKind::NotFound => 4,
            ErrorKind::NothingToDo => 5,
            ErrorKind::NoWorkspace => 6,
            ErrorKind::RunFailed => 7,
            ErrorKind::Interrupted => crate::interrupt::INTERRUPTED_EXIT,
        }
    }
}

/// An error on its way to the user.
#[derive(Debug)]
pub struct CommandError {
    /// Decides the exit code.
    pub kind: ErrorKind,
    /// One line (or a few) saying what is wrong.
    pub message: String,
    /// What to do about it.
    pub hints: Vec<String>,
    /// The kind of the I/O error this came from, if any: a closed stdout ends the command quietly.
    pub io_kind: Option<std::io::ErrorKind>,
}

impl CommandError {
    /// An error of `kind` with a message and no hints.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CommandError {
            kind,
            message: message.into(),
            hints: Vec::new(),
            io_kind: None,
        }
    }

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// Invalid input.
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Input, message)
    }

    /// Something unexpected.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Whether the command failed because the reader of its output went away (`agency watch | head -1`):
    /// not an error to report, as ripgrep and other Unix tools treat it.
    pub fn is_closed_pipe(&self) -> bool {
        self.io_kind == Some(std::io::ErrorKind::BrokenPipe)
    }

    /// Prints the error to stderr and returns its exit code.
    pub fn report(&self) -> ExitCode {
        // At best: with stderr gone (its reader closed the pipe) the exit status still says what happened.
        // A detached runner's stderr is its log file: a secret in a message (a provider echoing a key) is
        // redacted here as it is on the blackboard.
        let redactor = agency_core::redact::Redactor::from_process_env(&[]);
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "error: {}", redactor.redact(&self.message));
        for hint in &self.hints {
            let _ = writeln!(stderr, "hint: {}", redactor.redact(hint));
        }
        ExitCode::from(self.kind.exit_code())
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandError {}

impl From<std::io::Error> for CommandError {
    fn from(err: std::io::Error) -> Self {
        let mut error = CommandError::internal(err.to_string());
        error.io_kind = Some(err.kind());
        error
    }
}

impl From<agency_exec::GitError> for CommandError {
    /// A git command that failed where the user's input was already checked: the machine's problem.
    fn from(err: agency_exec::GitError) -> Self {
        CommandError::internal(err.to_string())
    }
}

impl From<serde_json::Error> for CommandError {
    /// Serialising agency's own values for `--json` output: it cannot fail on valid data, so it is internal.
    /// Parsing the user's JSON maps its error explicitly, naming the file.
    fn from(err: serde_json::Error) -> Self {
        CommandError::internal(err.to_string())
    }
}

impl From<agency_store::StoreError> for CommandError {
    /// Keeps the store's message; a run or brief that is not there (or ambiguous) is [`ErrorKind::NotFound`]
    /// with a hint, a gate already decided is [`ErrorKind::NothingToDo`].
    fn from(err: agency_store::StoreError) -> Self {
        use agency_store::StoreError;
        let kind = match &err {
            StoreError::NotFound { .. } | StoreError::AmbiguousId { .. } => ErrorKind::NotFound,
            StoreError::NoPendingGate { .. } | StoreError::GateAlreadyDecided { .. } => {
                ErrorKind::NothingToDo
            }
            StoreError::InvalidId { .. } => ErrorKind::Input,
            _ => ErrorKind::Internal,
        };
        let mut error = CommandError::new(kind, err.to_string());
        if let StoreError::AmbiguousId { .. } = err {
            error =
                error.hint("type more characters of the id; `agency runs` and `agency inspect` show them");
        }
        if let StoreError::NotFound { .. } = err {
            error = error.hint("`agency runs` lists the runs on this blackboard");
        }
        error
    }
}

impl From<agency_engine::EngineError> for CommandError {
    /// A store error as the store's; a configuration the engine refuses is the user's input.
    fn from(err: agency_engine::EngineError) -> Self {
        match err {
            agency_engine::EngineError::Store(e) => e.into(),
            agency_engine::EngineError::Config(m) => CommandError::input(m),
            other => CommandError::internal(other.to_string()),
        }
    }
}

impl From<agency_engine::assembly::AssemblyError> for CommandError {
    /// The refusal's message and hint; the machine's failures (a gate service that did not start) are
    /// internal.
    fn from(err: agency_engine::assembly::AssemblyError) -> Self {
        use agency_engine::assembly::AssemblyError;
        if let AssemblyError::Engine(err) = err {
            return err.into();
        }
        let hint = err.hint();
        let mut error = if err.is_input() {
            CommandError::input(err.to_string())
        } else {
            CommandError::internal(err.to_string())
        };
        if let Some(hint) = hint {
            error = error.hint(hint);
        }
        error
    }
}

impl From<agency_engine::teachback_review::ReviewError> for CommandError {
    /// An empty correction is bad input; any other refused action is one the teachback's state does not
    /// allow, with where to see that state.
    fn from(err: agency_engine::teachback_review::ReviewError) -> Self {
        use agency_core::teachback::TeachbackError;
        use agency_engine::teachback_review::ReviewError;
        match err {
            ReviewError::Store(err) => err.into(),
            ReviewError::Transition {
                ref brief,
                ref source,
            } => {
                let kind = match source {
                    TeachbackError::EmptyCorrections => ErrorKind::Input,
                    TeachbackError::Illegal { .. } => ErrorKind::NothingToDo,
                };
                let hint = format!("`agency teachback show {brief}` shows where it stands");
                CommandError::new(kind, err.to_string()).hint(hint)
            }
        }
    }
}

/// The result type of every command.
pub type CommandResult<T = ()> = Result<T, CommandError>;
