//! What to run: program, argv, working directory, allow-listed environment, stdin and limits.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

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

    /// A spec from a configured command string (a goal's `verify`, say), split without a shell by
    /// [`crate::split_command_line`], which refuses pipes, `&&`, redirections and expansions.
    pub fn from_command_line(line: &str) -> Result<Self, crate::CommandLineError> {
        let argv = crate::split_command_line(line)?;
        Self::from_argv(argv).ok_or(crate::CommandLineError::Empty)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
