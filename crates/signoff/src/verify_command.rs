//! Stage 1: the contract's `verify` command, run by agency in the clean checkout, without a shell, with a
//! timeout and an allow-listed environment. Its exit code, duration and output tail are the record; a
//! non-zero exit (or a timeout) rejects the sign-off before any model is asked.

use std::path::Path;
use std::time::Duration;

use agency_exec::{CommandSpec, Sandboxing, run, split_command_line};
use serde::{Deserialize, Serialize};

use crate::SignoffError;

/// Bytes of each output stream kept in the stored record.
const OUTPUT_CAP: usize = 64 * 1024;
/// Bytes of output shown in rejections and given to the judge.
pub const TAIL_BYTES: usize = 4 * 1024;

/// Host variables the verify command sees; everything else is withheld.
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TERM"];

/// What the verify command did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyResult {
    /// The command as written in the contract.
    pub command: String,
    /// Its argv.
    pub argv: Vec<String>,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Whether it ran past its timeout and was killed.
    pub timed_out: bool,
    /// Wall-clock time in milliseconds.
    pub duration_ms: u64,
    /// The last bytes of stdout then stderr.
    pub tail: String,
    /// Exit 0 within the timeout.
    pub passed: bool,
}

impl VerifyResult {
    /// `exit 0 in 1.2s`, `exit 1 in 0.3s`, `signal 9 (timed out after 600.0s)`.
    pub fn describe(&self) -> String {
        let ending = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "did not run".to_string(),
        };
        let secs = self.duration_ms as f64 / 1000.0;
        if self.timed_out {
            format!("{ending} (timed out after {secs:.1}s)")
        } else {
            format!("{ending} in {secs:.1}s")
        }
    }
}

/// Splits the contract's verify command into an argv (refusing shell syntax, with the column).
pub fn verify_argv(command: &str) -> Result<Vec<String>, SignoffError> {
    split_command_line(command).map_err(|e| SignoffError::Input(format!("verify: {e}")))
}

/// Runs `argv` in `checkout` with `timeout`, inside `sandbox` (it runs the agent's code): a sandbox that
/// cannot be set up fails stage 1 with the reason, the command not run.
pub fn run_verify(
    command: &str,
    argv: &[String],
    checkout: &Path,
    timeout: Duration,
    sandbox: &Sandboxing,
) -> Result<VerifyResult, SignoffError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SignoffError::Input("verify: the command is empty".into()));
    };
    // A relative program path (`./verify.sh`, `scripts/check`) means the checkout's copy, not ours.
    let program = if program.contains('/') && !Path::new(program).is_absolute() {
        checkout.join(program).into_os_string()
    } else {
        program.into()
    };
    let mut spec = CommandSpec::new(program)
        .args(args)
        .cwd(checkout)
        .timeout(timeout)
        .output_cap(OUTPUT_CAP)
        .env("CI", "1");
    for name in INHERITED_ENV {
        spec = spec.inherit_env(*name);
    }
    let output = match sandbox
        .confine(spec, checkout)
        .map_err(|e| e.to_string())
        .and_then(|spec| run(&spec).map_err(|e| e.to_string()))
    {
        Ok(output) => output,
        // A command that cannot even start has failed stage 1; the agent gets the reason as the tail.
        Err(err) => {
            return Ok(VerifyResult {
                command: command.to_string(),
                argv: argv.to_vec(),
                exit_code: None,
                signal: None,
                timed_out: false,
                duration_ms: 0,
                tail: format!("verify could not be run: {err}"),
                passed: false,
            });
        }
    };
    let mut tail = String::new();
    tail.push_str(&output.stdout.text());
    let stderr = output.stderr.text();
    if !stderr.is_empty() {
        if !tail.is_empty() && !tail.ends_with('\n') {
            tail.push('\n');
        }
        tail.push_str(&stderr);
    }
    Ok(VerifyResult {
        command: command.to_string(),
        argv: argv.to_vec(),
        exit_code: output.exit_code,
        signal: output.signal,
        timed_out: output.timed_out,
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
        tail: last_bytes(&tail, TAIL_BYTES).to_string(),
        passed: output.success(),
    })
}

/// The last `max` bytes of `text`, cut at a character boundary.
pub fn last_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_command_is_recorded_with_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("check.sh"),
            "echo checking\necho broken >&2\nexit 3\n",
        )
        .unwrap();
        let argv = verify_argv("sh check.sh").unwrap();
        let result = run_verify(
            "sh check.sh",
            &argv,
            dir.path(),
            Duration::from_secs(10),
            &Sandboxing::Off,
        )
        .unwrap();
        assert_eq!(result.exit_code, Some(3));
        assert!(!result.passed);
        assert_eq!(result.tail, "checking\nbroken\n");
        assert!(result.describe().starts_with("exit 3 in "));
    }

    #[test]
    fn a_missing_program_fails_stage_one() {
        let dir = tempfile::tempdir().unwrap();
        let argv = verify_argv("no-such-program-xyz").unwrap();
        let result = run_verify(
            "no-such-program-xyz",
            &argv,
            dir.path(),
            Duration::from_secs(5),
            &Sandboxing::Off,
        )
        .unwrap();
        assert!(!result.passed);
        assert!(result.tail.contains("not found"), "{}", result.tail);
        assert_eq!(result.describe(), "did not run in 0.0s");
    }

    #[test]
    fn a_hung_command_times_out_and_fails() {
        let dir = tempfile::tempdir().unwrap();
        let argv = verify_argv("sleep 5").unwrap();
        let result = run_verify(
            "sleep 5",
            &argv,
            dir.path(),
            Duration::from_millis(200),
            &Sandboxing::Off,
        )
        .unwrap();
        assert!(result.timed_out);
        assert!(!result.passed);
    }

    #[test]
    fn shell_syntax_is_refused_before_anything_runs() {
        let err = verify_argv("pytest && echo ok").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("verify: `&&` at column 8 needs a shell"),
            "{err}"
        );
        assert_eq!(last_bytes("héllo", 4), "llo");
    }
}
