//! `agency demo`: the README's first command, end to end, with its output pinned.

use crate::support::Repo;

/// Replaces what changes between runs (run ids, times, commit hashes, the temp dir) with placeholders.
pub(crate) fn normalise(text: &str, dir: &str) -> String {
    let text = text.replace(dir, "<dir>");
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        if line.starts_with('[') && line.len() > 20 {
            // "[3a620b97] 04:05:06  ..." → "[RUN] HH:MM:SS  ..."
            line = format!("[RUN] HH:MM:SS{}", &line[19..]);
        }
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let core = w.trim_matches(|c: char| !c.is_ascii_alphanumeric());
                let hexy = core.len() == 8
                    && core.chars().all(|c| c.is_ascii_hexdigit())
                    && core.chars().any(|c| c.is_ascii_digit());
                if hexy {
                    w.replace(core, "<id>")
                } else {
                    w.to_string()
                }
            })
            .collect();
        let line = words.join(" ");
        // Branch names carry the run id too.
        let line = regex_free_replace_run_in_branch(&line);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// [`normalise`], and as placeholders every clock time (`12:34:56`, with fractions, or `12:34`), date (`2026-11-27`),
/// full commit hash or brief id (40 or 32 hex digits) and measured duration (`0.0s`): what a snapshot of a
/// real run's output must not pin.
pub(crate) fn normalise_run(text: &str, dir: &str) -> String {
    let text = normalise(text, dir);
    let chars: Vec<char> = text.chars().collect();
    let digits = |at: usize, n: usize| (at..at + n).all(|i| chars.get(i).is_some_and(char::is_ascii_digit));
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if digits(i, 2)
            && chars.get(i + 2) == Some(&':')
            && digits(i + 3, 2)
            && chars.get(i + 5) == Some(&':')
            && digits(i + 6, 2)
        {
            out.push_str("HH:MM:SS");
            i += 8;
            while chars.get(i).is_some_and(|c| c.is_ascii_digit() || *c == '.') {
                i += 1;
            }
            continue;
        }
        if digits(i, 2) && chars.get(i + 2) == Some(&':') && digits(i + 3, 2) && !digits(i + 5, 1) {
            out.push_str("HH:MM");
            i += 5;
            continue;
        }
        if digits(i, 4)
            && chars.get(i + 4) == Some(&'-')
            && digits(i + 5, 2)
            && chars.get(i + 7) == Some(&'-')
            && digits(i + 8, 2)
        {
            out.push_str("YYYY-MM-DD");
            i += 10;
            continue;
        }
        let starts_word = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        if starts_word && chars[i].is_ascii_alphanumeric() {
            let end = (i..chars.len())
                .find(|&j| !chars[j].is_ascii_alphanumeric())
                .unwrap_or(chars.len());
            let word = &chars[i..end];
            if matches!(word.len(), 32 | 40) && word.iter().all(char::is_ascii_hexdigit) {
                out.push_str("<hash>");
                i = end;
                continue;
            }
            // A short id of letters only (`normalise` wants a digit, to spare words): 1 in 2,600 ids.
            if word.len() == 8 && word.iter().all(|c| matches!(c, 'a'..='f')) {
                out.push_str("<id>");
                i = end;
                continue;
            }
        }
        if starts_word && chars[i].is_ascii_digit() {
            let end = (i..chars.len())
                .find(|&j| !(chars[j].is_ascii_digit() || chars[j] == '.'))
                .unwrap_or(chars.len());
            if chars[i..end].contains(&'.') && chars.get(end) == Some(&'s') {
                out.push_str("N.Ns");
                i = end + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn regex_free_replace_run_in_branch(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("agency/") {
        out.push_str(&rest[..at + 7]);
        rest = &rest[at + 7..];
        if rest.len() >= 8 && rest[..8].chars().all(|c| c.is_ascii_hexdigit()) {
            out.push_str("<id>");
            rest = &rest[8..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn the_demo_runs_the_whole_pipeline_offline() {
    let repo = Repo::new();
    let dir = repo.path().join("demo");
    let out = repo.agency(&["demo", "--dir", dir.to_str().unwrap()]).success();
    let stdout = normalise(&out.stdout(), dir.to_str().unwrap());
    insta::assert_snapshot!(stdout, @r#"
    demo repository: <dir>
    goal: Fix the pagination bug: page 1 must start at the first item, and every test must pass.
    [RUN] HH:MM:SS  T1   PLAN_START    Assessing scope: "Fix the pagination bug: page 1 must start at the first item, and every test must pass."
    [RUN] HH:MM:SS  RUN  RUNTIMES      t1, t2, t3: builtin (configured); t4, t5: builtin (auto in a scripted run: a script cannot drive an external CLI)
    [RUN] HH:MM:SS  T1   PLAN_DONE     1 workstream — ws-fix-pagination (1 parallel)
    [RUN] HH:MM:SS  GATE APPROVAL      ⏸  Waiting on approval before T4 spawns — anomalies: ws-fix-pagination: shallower path — one expression in one file; a squad lead would add nothing
    [RUN] HH:MM:SS  GATE APPROVED      ✓  Approved — continuing (auto-approved (--auto-approve))
    [RUN] HH:MM:SS  T4   START         T4 fix-page-offset spawned for ws-fix-pagination
    [RUN] HH:MM:SS  T4   DONE          fix-page-offset ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `python3 -m unittest -q` passed on <id> (exit 0) — ws-fix-pagination/fix-page-offset
    [RUN] HH:MM:SS  T5   VERIFY_START  ws-fix-pagination: 1 verifier spawned
    [RUN] HH:MM:SS  T5   VERDICT       ✓  all pass — ws-fix-pagination: 1 slice(s) verified
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `python3 -m unittest -q` passed on <id> (exit 0) — ws-fix-pagination on the integration branch
    [RUN] HH:MM:SS  T5   VERDICT       ✓  workstream ws-fix-pagination merged into agency/<id>/integration
    [RUN] HH:MM:SS  T1   ACCEPT_START  Every workstream merged — validating against the goal anchor
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `python3 -m unittest -q` passed on <id> (exit 0) — accept/ws-fix-pagination
    [RUN] HH:MM:SS  T1   SIGNED_OFF    accept ✓ accepted
    [RUN] HH:MM:SS  T1   ACCEPTED      ✓  page() counts pages from 1 and every test passes — review and merge branch agency/<id>/integration
    [RUN] HH:MM:SS  RUN  STATUS        succeeded
    done: branch agency/<id>/integration in <dir>
    see it with: git -C <dir> log --oneline --graph agency/<id>/integration
    "#);
    // The branch exists, holds the fix, and the fix passes the tests.
    let branch = stdout
        .lines()
        .find_map(|l| l.strip_prefix("done: branch "))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(branch.starts_with("agency/") && branch.ends_with("/integration"));
    // The slice scores 7, so an auditor reviewed it beside the judge, without its report, and agreed.
    let store = agency_store::SqliteBlackboard::open(dir.join(".agency").join("agency.db")).unwrap();
    let audits: Vec<_> = agency_store::Blackboard::events_after(&store, None, 0, 10_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.typed() {
            Ok(agency_core::event::EventPayload::SignoffAudit(audit)) => Some(audit),
            _ => None,
        })
        .collect();
    assert_eq!(audits.len(), 1, "{audits:?}");
    let audit = &audits[0];
    assert_eq!(audit.subject, "ws-fix-pagination/fix-page-offset");
    assert_eq!(
        (audit.judge.as_str(), audit.verdict.as_str(), audit.agrees),
        ("accept", "accept", true)
    );
}

#[test]
fn a_missing_prerequisite_stops_the_demo_before_it_lays_anything_out() {
    let repo = Repo::new();
    let dir = repo.path().join("demo");
    // A PATH with git but no python3.
    let bin = repo.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let git = String::from_utf8(git.stdout).unwrap();
    std::os::unix::fs::symlink(git.trim(), bin.join("git")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`python3` is not on PATH"), "{err}");
    assert!(!err.contains("`git` is not on PATH"), "{err}");
    assert!(
        !dir.exists(),
        "the demo laid out {} before refusing",
        dir.display()
    );
}
