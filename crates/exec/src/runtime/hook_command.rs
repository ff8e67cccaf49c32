//! The command line a client runs as its PreToolUse gate: `agency hook` wrapped in a few lines of POSIX
//! shell so that any failure of the hook **blocks** the call.
//!
//! Codex runs a hook command through `bash -c` and lets the tool run when the hook exits 1, crashes, is not
//! found, or prints something that is not a decision (harness/PROTOCOLS.md §7, seen with Codex 0.169);
//! Claude Code does the same outside its default permission mode (§6). Both block on exit 2 with a reason on
//! stderr. So the wrapper runs the hook, passes exit 2 and a well-formed JSON answer through, and turns
//! everything else into exit 2 with a message naming what went wrong: `agency` missing (127) or not
//! executable (126), killed by a signal (a segfault is 139), any other exit status, or output that is not
//! an answer `agency hook` writes.
//!
//! What the wrapper cannot see is a hook that hangs past the client's timeout (the client kills it and runs
//! the tool) or a program that prints a well-formed allow without deciding anything: the gate-coverage audit
//! ([`super::coverage`]) catches those after the fact, from the agent's event stream.
//!
//! Every wrapped command starts with [`MARK`], so `agency hook install` recognises its own entry (this form
//! and the bare `… agency hook` it wrote before) and replaces it instead of adding a second.

/// How every wrapped command starts: a no-op (`:`) that names it.
pub const MARK: &str = ": agency fail-closed gate;";

/// Which answers the wrapper lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Only a decision (`{"hookSpecificOutput":{…}}`): an agent started by a runner, whose hook always
    /// answers a PreToolUse call with one. No output at all is a failure too.
    Decision,
    /// A decision, a `{"systemMessage":…}` warning, or nothing (no opinion): a plain session, where the hook
    /// stays silent for a session bound to no brief.
    AnyAnswer,
}

/// `hook` (a shell command line, such as `/usr/bin/agency hook`) wrapped to fail closed.
pub fn fail_closed(hook: &str, expect: Expect) -> String {
    let answers = match expect {
        Expect::Decision => r#"'{"hookSpecificOutput":{'*'}}'"#,
        Expect::AnyAnswer => r#"''|'{"hookSpecificOutput":{'*'}}'|'{"systemMessage":'*'}'"#,
    };
    let blocked = "so the call is blocked (fail closed)";
    format!(
        "{MARK} out=$({hook}); rc=$?; \
         case $rc in 0) ;; 2) exit 2;; \
         126) echo \"agency hook: the gate could not be run (exit 126: not executable), {blocked}\" >&2; exit 2;; \
         127) echo \"agency hook: the gate was not found (exit 127), {blocked}\" >&2; exit 2;; \
         *) if [ \"$rc\" -gt 128 ]; then \
         echo \"agency hook: the gate was killed by signal $((rc - 128)), {blocked}\" >&2; \
         else echo \"agency hook: the gate failed (exit $rc), {blocked}\" >&2; fi; exit 2;; esac; \
         case $out in {answers}) [ -z \"$out\" ] || printf '%s\\n' \"$out\";; \
         *) echo \"agency hook: the gate's answer is not one agency writes, {blocked}\" >&2; exit 2;; esac"
    )
}

/// Whether `command` is a gate entry agency wrote: the wrapped form, or the bare `… agency hook` of
/// earlier versions.
pub fn is_agency_hook(command: &str) -> bool {
    command.starts_with(MARK) || command.ends_with("agency hook") || command.ends_with("agency' hook")
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use super::*;

    const ALLOW: &str =
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#;

    /// Runs `fail_closed(hook)` through `bash -c`, as Codex does, with `input` on stdin.
    fn run(hook: &str, expect: Expect) -> (Option<i32>, String, String) {
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(fail_closed(hook, expect))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"hook_event_name\":\"PreToolUse\"}")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn a_decision_passes_through_with_its_exit_status() {
        let hook = format!("cat >/dev/null; echo '{ALLOW}'");
        assert_eq!(
            run(&hook, Expect::Decision),
            (Some(0), format!("{ALLOW}\n"), String::new())
        );
        let (code, out, err) = run("cat >/dev/null; echo denied >&2; exit 2", Expect::Decision);
        assert_eq!((code, out.as_str(), err.as_str()), (Some(2), "", "denied\n"));
    }

    #[test]
    fn the_hook_reads_the_event_on_stdin() {
        let hook = r#"grep -q PreToolUse && echo '{"hookSpecificOutput":{}}'"#;
        assert_eq!(run(hook, Expect::Decision).0, Some(0));
    }

    #[test]
    fn every_failure_blocks_and_says_why() {
        let cases = [
            ("/nonexistent/agency hook", "not found (exit 127)"),
            ("cat >/dev/null; exit 1", "failed (exit 1)"),
            ("cat >/dev/null; exit 3", "failed (exit 3)"),
            ("cat >/dev/null; sh -c 'kill -SEGV $$'", "killed by signal 11"),
            ("cat >/dev/null; echo 'this is {garbage'", "not one agency writes"),
            ("cat >/dev/null; echo '{\"x\":1}'", "not one agency writes"),
            ("cat >/dev/null", "not one agency writes"),
        ];
        for (hook, why) in cases {
            let (code, out, err) = run(hook, Expect::Decision);
            assert_eq!(code, Some(2), "{hook}: {out} {err}");
            assert_eq!(out, "", "{hook}");
            assert!(
                err.contains(why) && err.contains("blocked (fail closed)"),
                "{hook}: {err}"
            );
        }
    }

    #[test]
    fn a_plain_session_also_takes_silence_and_a_warning() {
        assert_eq!(
            run("cat >/dev/null", Expect::AnyAnswer),
            (Some(0), String::new(), String::new())
        );
        let warn = r#"cat >/dev/null; echo '{"systemMessage":"gate open"}'"#;
        assert_eq!(run(warn, Expect::AnyAnswer).0, Some(0));
        assert_eq!(run("cat >/dev/null; echo garbage", Expect::AnyAnswer).0, Some(2));
        assert_eq!(run("cat >/dev/null; exit 1", Expect::AnyAnswer).0, Some(2));
    }

    #[test]
    fn a_quoted_program_path_survives() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("it's agency");
        std::fs::write(&program, format!("#!/bin/sh\ncat >/dev/null\necho '{ALLOW}'\n")).unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let hook = format!(
            "{} hook",
            super::super::external::shell_word(&program.to_string_lossy())
        );
        assert_eq!(run(&hook, Expect::Decision).0, Some(0));
    }

    #[test]
    fn its_own_entries_are_recognised_in_every_form() {
        assert!(is_agency_hook(&fail_closed(
            "/usr/bin/agency hook",
            Expect::Decision
        )));
        assert!(is_agency_hook("/usr/bin/agency hook"));
        assert!(is_agency_hook("'/opt/my tools/agency' hook"));
        assert!(!is_agency_hook("/usr/bin/other-hook"));
    }
}
