use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use agency_exec::process::DEFAULT_OUTPUT_CAP;
use agency_exec::{CancelToken, CommandSpec, ProcessError, run, run_cancellable, spawn};

use crate::support::dies_within;

fn sh(script: &str) -> CommandSpec {
    CommandSpec::new("sh").arg("-c").arg(script).inherit_env("PATH")
}

#[test]
fn a_hung_command_is_killed_with_its_grandchild_at_the_timeout() {
    let started = Instant::now();
    let output = run(&sh("sleep 100 & echo $!; sleep 100")
        .timeout(Duration::from_millis(500))
        .kill_grace(Duration::from_millis(300)))
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(output.timed_out);
    assert!(!output.success());
    assert_eq!(output.exit_code, None);
    assert_eq!(
        output.signal,
        Some(15),
        "sh dies of the SIGTERM sent to its group"
    );
    assert!(!output.pipes_held_open);
    let grandchild: u32 = output.stdout.text().trim().parse().unwrap();
    assert!(
        dies_within(grandchild, Duration::from_secs(5)),
        "grandchild {grandchild} survived the timeout"
    );
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace_period() {
    let output = run(&sh("trap '' TERM; echo ready; while :; do sleep 0.05; done")
        .timeout(Duration::from_millis(300))
        .kill_grace(Duration::from_millis(200)))
    .unwrap();
    assert!(output.timed_out);
    assert_eq!(output.signal, Some(9));
    assert_eq!(output.stdout.text(), "ready\n");
}

#[test]
fn background_processes_do_not_outlive_a_normal_exit() {
    let output = run(&sh("sleep 100 & echo $!").timeout(Duration::from_secs(20))).unwrap();
    assert!(output.success(), "{}", output.describe());
    assert!(!output.pipes_held_open);
    let background: u32 = output.stdout.text().trim().parse().unwrap();
    assert!(
        dies_within(background, Duration::from_secs(5)),
        "{background} outlived its parent"
    );
}

#[test]
fn cancel_terminates_the_group() {
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            token.cancel();
        })
    };
    let started = Instant::now();
    let output = run_cancellable(
        &sh("sleep 100 & sleep 100").timeout(Duration::from_secs(60)),
        &token,
    )
    .unwrap();
    canceller.join().unwrap();
    assert!(output.cancelled && !output.timed_out);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(output.describe(), "signal 15 (cancelled)");
}

#[test]
fn exit_codes_and_signals_are_reported() {
    let output = run(&sh("echo out; echo err >&2; exit 3")).unwrap();
    assert_eq!((output.exit_code, output.signal), (Some(3), None));
    assert_eq!(output.stdout.text(), "out\n");
    assert_eq!(output.stderr.text(), "err\n");
    assert_eq!(output.describe(), "exit 3");

    let output = run(&sh("kill -KILL $$")).unwrap();
    assert_eq!((output.exit_code, output.signal), (None, Some(9)));
    assert!(!output.timed_out);

    assert!(
        run(&CommandSpec::new("true").inherit_env("PATH"))
            .unwrap()
            .success()
    );
}

#[test]
fn output_keeps_the_tail_within_the_cap() {
    // 200 000 bytes on each stream, far beyond a pipe buffer: the child must never block on us.
    let output = run(&sh("i=0; while [ $i -lt 2000 ]; do \
                printf '%099d\\n' $i; printf '%099d\\n' $i >&2; i=$((i+1)); done; echo END")
    .output_cap(1000))
    .unwrap();
    assert!(output.success(), "{}", output.describe());
    assert_eq!(output.stdout.tail.len(), 1000);
    assert_eq!(output.stdout.total_bytes(), 200_004);
    assert_eq!(output.stdout.truncated_bytes, 199_004);
    assert!(output.stdout.text().ends_with(&format!("{:099}\nEND\n", 1999)));
    assert_eq!(output.stderr.total_bytes(), 200_000);
    assert!(output.stderr.text().ends_with(&format!("{:099}\n", 1999)));
    assert_eq!(DEFAULT_OUTPUT_CAP, CommandSpec::new("x").output_cap);
}

#[test]
fn stdin_bytes_reach_the_child() {
    let big = "line\n".repeat(100_000);
    let output = run(&CommandSpec::new("wc").arg("-l").inherit_env("PATH").stdin(big)).unwrap();
    assert_eq!(output.stdout.text().trim(), "100000");
    // No stdin given: the child reads end of file at once instead of hanging.
    let output = run(&CommandSpec::new("cat")
        .inherit_env("PATH")
        .timeout(Duration::from_secs(20)))
    .unwrap();
    assert!(output.success() && output.stdout.tail.is_empty());
}

#[test]
fn a_child_echoing_its_input_is_fed_and_drained_at_once() {
    // `cat` writes while it reads: with 1 MiB each way both pipes fill many times over, so feeding must not
    // wait for draining or the other way round.
    let input: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    let output = run(&CommandSpec::new("cat")
        .inherit_env("PATH")
        .stdin(input.clone())
        .timeout(Duration::from_secs(30)))
    .unwrap();
    assert!(output.success(), "{}", output.describe());
    assert_eq!(output.stdout.total_bytes(), input.len() as u64);
    assert_eq!(output.stdout.tail, input[input.len() - DEFAULT_OUTPUT_CAP..]);
}

#[test]
fn the_environment_is_allow_listed() {
    // Some variable is always present in the test process (cargo sets several); none may leak.
    let (leaked_name, _) = std::env::vars().find(|(name, _)| name != "PATH").unwrap();
    let output = run(&CommandSpec::new("env")
        .inherit_env("PATH")
        .env("AGENCY_TEST", "visible"))
    .unwrap();
    let text = output.stdout.text();
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once('=').map(|(n, _)| n))
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["AGENCY_TEST", "PATH"], "{text}");
    assert!(!text.contains(&format!("{leaked_name}=")));
}

#[test]
fn a_missing_program_is_named_in_the_error() {
    let err = run(&CommandSpec::new("agency-no-such-program").inherit_env("PATH")).unwrap_err();
    assert!(matches!(err, ProcessError::ProgramNotFound { .. }));
    assert!(
        err.to_string()
            .contains("`agency-no-such-program` not found on PATH"),
        "{err}"
    );

    let err = run(&CommandSpec::new("./missing.sh").cwd("/")).unwrap_err();
    assert_eq!(err.to_string(), "program `./missing.sh` not found");

    let err = run(&CommandSpec::new("true").cwd("/no/such/dir")).unwrap_err();
    assert!(matches!(err, ProcessError::MissingCwd { .. }), "{err}");
}

#[test]
fn a_program_that_moved_along_path_is_found_where_it_is_now() {
    // Where a bare name was found on PATH is remembered (a runner starts git thousands of times); a program
    // that has gone from there since must be looked for again, and reported by name once it is nowhere.
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let install = |dir: &std::path::Path, says: &str| {
        let program = dir.join("agency-remembered-program");
        std::fs::write(&program, format!("#!/bin/sh\necho {says}\n")).unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        program
    };
    let path = std::env::join_paths([first.path(), second.path()]).unwrap();
    let spec = CommandSpec::new("agency-remembered-program").env("PATH", path);
    let in_first = install(first.path(), "first");
    assert_eq!(run(&spec).unwrap().stdout.text(), "first\n");
    std::fs::remove_file(&in_first).unwrap();
    let in_second = install(second.path(), "second");
    assert_eq!(run(&spec).unwrap().stdout.text(), "second\n");
    std::fs::remove_file(&in_second).unwrap();
    let err = run(&spec).unwrap_err();
    assert!(matches!(err, ProcessError::ProgramNotFound { .. }), "{err}");
    assert!(err.to_string().contains("not found on PATH"), "{err}");
}

#[test]
fn a_program_held_open_for_writing_a_moment_longer_still_starts() {
    // A script just written is "busy" while any process still holds it open for writing: here a holder that
    // keeps it open for 50 ms, as a child forked while the script was being written keeps it until its exec.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("just-written.sh");
    std::fs::write(&script, "#!/bin/sh\necho started\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hold = |seconds: &str| {
        let mut holder = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 3>>'{}'; echo holding; exec sleep {seconds}",
                script.display()
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "holding\n");
        holder
    };

    let mut holder = hold("0.05");
    let output = run(&CommandSpec::new(&script)).unwrap();
    assert_eq!(output.stdout.text(), "started\n");
    holder.wait().unwrap();

    // Held for longer than the retries wait, it fails, and says why.
    let mut holder = hold("2");
    let err = run(&CommandSpec::new(&script)).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }), "{err}");
    assert!(err.to_string().contains("busy"), "{err}");
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn the_cost_of_children_is_added_up_once_accounting_is_on() {
    // Benchmarks read what starting and reaping children cost the runner; the clock is only read once asked.
    agency_exec::process::cost::account(true);
    let before = agency_exec::process::cost::spent();
    for _ in 0..3 {
        assert!(
            run(&CommandSpec::new("true").inherit_env("PATH"))
                .unwrap()
                .success()
        );
    }
    let spent = agency_exec::process::cost::spent() - before;
    agency_exec::process::cost::account(false);
    // Creating a process alone takes the kernel well over a microsecond.
    assert!(spent > Duration::from_micros(3), "{spent:?}");
}

#[test]
fn the_child_runs_in_the_given_directory() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&CommandSpec::new("pwd").inherit_env("PATH").cwd(dir.path())).unwrap();
    assert_eq!(
        output.stdout.text().trim(),
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn a_process_escaping_the_group_cannot_hold_the_run_open() {
    // `setsid` leaves our group (and its kill), but keeps our stdout; capture gives up after the grace.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("escaped");
    // Wait for the marker so the group is not killed before the escapee has left it.
    let script = "setsid sh -c 'touch \"$MARKER\"; exec sleep 3' & \
                  while [ ! -e \"$MARKER\" ]; do sleep 0.01; done; echo started";
    let started = Instant::now();
    let output = run(&sh(script)
        .env("MARKER", &marker)
        .kill_grace(Duration::from_millis(200)))
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(output.success());
    assert!(output.pipes_held_open);
    assert_eq!(output.stdout.text(), "started\n");
}

#[test]
fn a_configured_command_line_runs_without_a_shell() {
    let spec = CommandSpec::from_command_line("printf '%s|%s' 'a b' $x").unwrap_err();
    assert!(spec.to_string().contains("needs a shell"), "{spec}");
    let spec = CommandSpec::from_command_line("printf '%s|%s' 'a b' '$x' ")
        .unwrap()
        .inherit_env("PATH");
    let output = run(&spec).unwrap();
    assert_eq!(output.stdout.text(), "a b|$x");
}

#[test]
fn a_spawned_child_talks_over_its_pipes() {
    let mut child = spawn(&CommandSpec::new("cat").inherit_env("PATH"), &CancelToken::new()).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for message in ["{\"n\":1}", "{\"n\":2}"] {
        writeln!(stdin, "{message}").unwrap();
        let mut echoed = String::new();
        stdout.read_line(&mut echoed).unwrap();
        assert_eq!(
            echoed.trim_end(),
            message,
            "each line comes back before the next is sent"
        );
    }
    drop(stdin);
    let output = child.wait().unwrap();
    assert!(output.success(), "{}", output.describe());
    assert!(output.stdout.tail.is_empty(), "stdout belonged to the caller");
}

#[test]
fn what_a_spawned_child_starts_cannot_write_into_its_streams_through_proc() {
    // An agent's command trying to forge lines in the agent's event stream (or its stderr, or feed its
    // stdin): through a pipe that works, through the sockets `spawn` gives it the kernel refuses to open.
    // A subshell with its own stdin and stdout (redirected after its fork: the shell's own streams stay
    // put) opens the shell's through `/proc` and says which it could open on its stderr.
    let forge = "outer=$$; ( exec </dev/null >/dev/null; for fd in 0 1 2; do \
                 (echo FORGED > /proc/$outer/fd/$fd) 2>/dev/null && echo opened-$fd >&2; done )";
    let mut child = spawn(
        &sh(&format!("{forge}; echo own-line; echo own-err >&2")),
        &CancelToken::new(),
    )
    .unwrap();
    let mut text = String::new();
    child.stdout.as_mut().unwrap().read_to_string(&mut text).unwrap();
    let output = child.wait().unwrap();
    assert_eq!(text, "own-line\n");
    assert_eq!(output.stderr.text(), "own-err\n");
}

#[test]
fn a_spawned_childs_deadline_holds_while_the_caller_only_reads() {
    let mut child = spawn(
        &sh("echo hi; echo oops >&2; sleep 100 & sleep 100").timeout(Duration::from_millis(400)),
        &CancelToken::new(),
    )
    .unwrap();
    assert!(child.id() > 0);
    let mut text = String::new();
    // Blocks until the group is killed at the deadline and the pipe closes; nobody calls `wait` meanwhile.
    child.stdout.as_mut().unwrap().read_to_string(&mut text).unwrap();
    assert_eq!(text, "hi\n");
    let output = child.wait().unwrap();
    assert!(output.timed_out);
    assert_eq!(output.stderr.text(), "oops\n");
}

#[test]
fn a_spawned_child_is_cancelled_through_its_token() {
    let token = CancelToken::new();
    let child = spawn(&CommandSpec::new("sleep").arg("100").inherit_env("PATH"), &token).unwrap();
    token.cancel();
    let output = child.wait().unwrap();
    assert!(output.cancelled);
    assert_eq!(output.signal, Some(15));
}
