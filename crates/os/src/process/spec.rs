//! What to run: program, argv, working directory, allow-listed environment, stdin and limits.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::Arc;
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
    /// The child's whole environment, shared between specs where it is the same (every git process of a
    /// repository has the same: building and copying it for each process was over a third of the
    /// allocations of starting one); the builder methods copy a shared one before changing it.
    pub env: Arc<EnvPolicy>,
    /// Bytes written to the child's stdin, which is then closed; stdin is `/dev/null` when `None`.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit from spawn to exit.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL of the group on timeout or cancel.
    pub kill_grace: Duration,
    /// Bytes kept of each output stream (the last ones).
    pub output_cap: usize,
}

/// The environment a child sees: nothing from the parent except what is named here. Its `Debug` names the
/// variables but not their values, which can be keys (an agent's model key is set here).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Names of parent variables passed through when the parent has them.
    pub inherit: Vec<String>,
    /// Explicit variables; they win over inherited ones of the same name.
    pub set: Vec<(String, OsString)>,
}

impl std::fmt::Debug for EnvPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set: Vec<String> = self.set.iter().map(|(name, _)| format!("{name}=…")).collect();
        f.debug_struct("EnvPolicy")
            .field("inherit", &self.inherit)
            .field("set", &set)
            .finish()
    }
}

impl EnvPolicy {
    /// Adds `name` to the parent's variables passed through.
    pub fn with_inherited(mut self, name: impl Into<String>) -> Self {
        self.inherit.push(name.into());
        self
    }

    /// Adds an explicit variable.
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.set.push((name.into(), value.into()));
        self
    }

    /// The child's variables, given a lookup into the parent's environment: inherited ones first, each
    /// explicit one replacing an inherited one of its name in place. Only what the parent lookup returns
    /// is owned; names and explicit values are borrowed from the policy (a runner starts git thousands of
    /// times with the same policy).
    pub fn resolve<'a>(
        &'a self,
        parent: &dyn Fn(&str) -> Option<OsString>,
    ) -> Vec<(&'a str, Cow<'a, OsStr>)> {
        let mut vars: Vec<(&str, Cow<'_, OsStr>)> = Vec::with_capacity(self.inherit.len() + self.set.len());
        let mut put = |name: &'a str, value: Cow<'a, OsStr>| match vars.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => vars.push((name, value)),
        };
        for name in &self.inherit {
            if let Some(value) = parent(name) {
                put(name, Cow::Owned(value));
            }
        }
        for (name, value) in &self.set {
            put(name, Cow::Borrowed(value));
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
            env: Arc::default(),
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
        Arc::make_mut(&mut self.env).inherit.push(name.into());
        self
    }

    /// Passes no variable `name` to the child, whether it was to be inherited or set.
    pub fn forget_env(mut self, name: &str) -> Self {
        let env = Arc::make_mut(&mut self.env);
        env.inherit.retain(|n| n != name);
        env.set.retain(|(n, _)| n != name);
        self
    }

    /// Sets a variable for the child.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        Arc::make_mut(&mut self.env).set.push((name.into(), value.into()));
        self
    }

    /// Replaces the whole environment policy with `env`, shared with whoever else holds it (variables
    /// added afterwards go to this spec's own copy).
    pub fn env_policy(mut self, env: Arc<EnvPolicy>) -> Self {
        self.env = env;
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
    fn a_spec_debug_printed_names_its_variables_but_not_their_values() {
        let spec = CommandSpec::new("claude")
            .env("ANTHROPIC_API_KEY", "sk-secret-value-0042")
            .inherit_env("PATH");
        let printed = format!("{spec:?}");
        assert!(printed.contains("ANTHROPIC_API_KEY=…"), "{printed}");
        assert!(printed.contains("PATH"), "{printed}");
        assert!(!printed.contains("sk-secret-value-0042"), "{printed}");
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
        let resolved = policy.resolve(&parent);
        let resolved: Vec<(&str, &OsStr)> = resolved.iter().map(|(n, v)| (*n, &**v)).collect();
        assert_eq!(
            resolved,
            vec![("PATH", OsStr::new("/opt/bin")), ("LANG", OsStr::new("C"))]
        );
    }

    #[test]
    fn a_forgotten_variable_is_neither_inherited_nor_set() {
        let spec = CommandSpec::new("claude")
            .inherit_env("ANTHROPIC_AUTH_TOKEN")
            .inherit_env("PATH")
            .env("ANTHROPIC_AUTH_TOKEN", "set-too")
            .forget_env("ANTHROPIC_AUTH_TOKEN");
        let parent = |name: &str| Some(OsString::from(format!("host-{name}")));
        let resolved = spec.env.resolve(&parent);
        let names: Vec<&str> = resolved.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["PATH"]);
    }

    #[test]
    fn a_shared_policy_is_copied_before_a_spec_adds_to_it() {
        let shared = Arc::new(
            EnvPolicy::default()
                .with_inherited("PATH")
                .with_var("LC_ALL", "C"),
        );
        let plain = CommandSpec::new("git").env_policy(shared.clone());
        assert!(
            Arc::ptr_eq(&plain.env, &shared),
            "an unchanged spec shares the policy"
        );
        let more = CommandSpec::new("git")
            .env_policy(shared.clone())
            .env("TOKEN", "x");
        assert_eq!(shared.set, vec![("LC_ALL".to_owned(), OsString::from("C"))]);
        assert_eq!(more.env.inherit, vec!["PATH".to_owned()]);
        assert_eq!(
            more.env.set,
            vec![
                ("LC_ALL".to_owned(), OsString::from("C")),
                ("TOKEN".to_owned(), OsString::from("x"))
            ]
        );
    }
}
