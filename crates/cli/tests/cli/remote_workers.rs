//! One run across several "machines" on this one: a bare repository stands in for the git remote, the
//! driver (`agency run --remote origin`) and two `agency worker --repo` processes each work in a
//! repository of their own, and one PostgreSQL blackboard is all they share. A worker is killed while its
//! agent works; its brief is taken back and finished by another runner, and the run ends with the same
//! change on its integration branch as a run on one machine. A remote that refuses a slice's push fails
//! its brief with git's reason.
//!
//! PostgreSQL comes from `AGENCY_TEST_POSTGRES_URL` as in [`crate::postgres`]: without it the test prints a
//! loud notice and passes, unless `AGENCY_REQUIRE_E2E=1`.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::gate::GateStatus;
use agency_core::{BriefStatus, Tier};
use agency_store::{Blackboard, RunStatus};
use agency_testkit::git::{bare_remote, pre_receive_hook};

use crate::postgres::{Database, SCRIPT, calculator, no_database, spawn};
use crate::support::{CALCULATOR_GOAL, Repo, Running, finish, started_run, wait_for};

/// The medium script with a third slice (fix-neg) and every implementer working for `seconds` before it
/// edits (fix-add after its teachback, which must come first), so a worker can be killed mid-brief and the
/// others are busy meanwhile. Three slices for three runners of one agent each: the driver runs one at a
/// time, so while it works on one the workers take the other two, and the worker that is not killed
/// surely makes one (with two slices the driver could take the killed worker's brief back and leave no
/// slice made on a worker).
fn slow_script(seconds: u32) -> String {
    let sleep = format!("        - {{name: run_command, input: {{argv: [sleep, \"{seconds}\"]}}}}\n");
    let fix_neg_task = "                - title: fix-neg
                  instructions: \"Make neg.sh negate.\"
                  variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }
                  contract: { done_when: \"sh test_neg.sh passes\", verify: \"sh test_neg.sh\" }
";
    let fix_neg = format!(
        "  - role: implementer
    brief: ws-arith/t4/fix-neg
    reply:
      tool_calls:
{sleep}        - name: edit_file
          input: {{ path: neg.sh, old_string: \"echo $((0 + $1))\", new_string: \"echo $((0 - $1))\" }}
        - name: report_result
          input: {{ status: done, summary: \"neg.sh negates.\", evidence: [{{ path: neg.sh }}] }}

"
    );
    let script = SCRIPT
        .replace(
            "                - title: fix-mul\n",
            &format!("{fix_neg_task}                - title: fix-mul\n"),
        )
        .replace(
            "        - name: edit_file\n          input: { path: add.sh",
            &format!("{sleep}        - name: edit_file\n          input: {{ path: add.sh"),
        )
        .replace(
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n",
            &format!("    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n{sleep}"),
        )
        .replace(
            "  - role: judge\n    reply:\n",
            &format!("{fix_neg}  - role: judge\n    reply:\n"),
        );
    assert_eq!(script.matches("sleep").count(), 3, "the script changed shape");
    assert_eq!(script.matches("fix-neg").count(), 2, "the script changed shape");
    script
}

/// git in `dir` with a fixed environment; its stdout.
fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A bare repository `<name>.git` in `machines` standing in for a shared git remote, added to `repo` as
/// remote `name` with its `main` pushed there.
fn shared_remote(repo: &Repo, machines: &Path, name: &str) -> PathBuf {
    let bare = bare_remote(machines.join(format!("{name}.git"))).unwrap();
    repo.git(&["remote", "add", name, bare.to_str().unwrap()]);
    repo.git(&["push", "--quiet", name, "HEAD:refs/heads/main"]);
    bare
}

/// What a run changed: the diff from its base to its integration branch, in `git_dir`.
fn change_of(git_dir: &Path, base: &str, run8: &str) -> String {
    git_in(
        git_dir,
        &[
            "diff",
            base,
            &format!("refs/heads/agency/{run8}/integration"),
            "--",
            "add.sh",
            "mul.sh",
        ],
    )
}

#[test]
fn workers_with_their_own_clones_finish_a_run_through_a_git_remote_one_killed_mid_brief() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let script = slow_script(3);
    let driver_repo = calculator(&db, &script);
    driver_repo.edit_team(&[("  concurrency: 4 ", "  concurrency: 1 ")]);
    driver_repo.commit("team");
    let script_path = driver_repo.path().join(".agency").join("script.yaml");
    let script_arg = script_path.to_str().unwrap();

    // The remote: a bare repository the driver pushes its base to.
    let machines = tempfile::tempdir().unwrap();
    let remote = shared_remote(&driver_repo, machines.path(), "origin");

    // A remote the repository does not have is refused before anything starts.
    let refused = driver_repo.agency(&[
        "--db",
        &db.url,
        "run",
        CALCULATOR_GOAL,
        "--script",
        script_arg,
        "--remote",
        "nowhere",
    ]);
    assert_ne!(refused.code(), Some(0));
    assert!(
        refused.stderr().contains("no git remote named nowhere"),
        "{}",
        refused.stderr()
    );
    let store = db.store();
    assert!(
        store.list_runs().unwrap().is_empty(),
        "a run started with a missing remote"
    );

    let mut driver = spawn(
        &driver_repo,
        &db,
        &[
            "run",
            CALCULATOR_GOAL,
            "--script",
            script_arg,
            "--remote",
            "origin",
        ],
    );
    let run = started_run(&store);
    let run8 = run.short();
    wait_for(
        || (!store.pending_gates(Some(run)).unwrap().is_empty()).then_some(()),
        "the plan gate",
    );
    // The driver pushed the integration branch at start.
    assert!(
        git_in(
            &remote,
            &["branch", "--list", &format!("agency/{run8}/integration")]
        )
        .contains(&run8),
        "the integration branch is not on the remote"
    );

    // Two workers, each in a directory of its own with its own clone (made on first start).
    let url = remote.to_str().unwrap();
    let mut workers: HashMap<String, Running> = HashMap::new();
    for n in 1..=2 {
        let dir = machines.path().join(format!("machine-{n}"));
        std::fs::create_dir(&dir).unwrap();
        let mut worker = spawn_in(
            &dir,
            &db,
            &[
                "worker",
                &run8,
                "--repo",
                url,
                "--dir",
                "clone",
                "--concurrency",
                "1",
                "--script",
                script_arg,
            ],
        );
        let mut reader = BufReader::new(worker.stdout.take().unwrap());
        let mut name = None;
        for _ in 0..3 {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.contains("works on run") {
                name = line.split_whitespace().next().map(str::to_string);
                break;
            }
            if !line.starts_with("cloning ") {
                let (_, out) = finish(worker, Duration::ZERO);
                panic!("worker {n} said {line:?}; {out}");
            }
        }
        let name = name.expect("the worker did not say it works on the run");
        assert!(dir.join("clone/.git").exists(), "no clone in {}", dir.display());
        // Its output is drained from here on, so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        workers.insert(name, worker);
    }

    // Gates are approved from another process; the first implementer a worker runs is killed once its
    // agent has started.
    let mut killed: Option<(String, agency_core::BriefId)> = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !store.get_run(run).unwrap().status.is_terminal() {
        // A driver that stopped leaves a run nobody ends: said at once, not at the deadline.
        if driver.try_wait().unwrap().is_some() {
            let (code, driver_out) = finish(driver, Duration::ZERO);
            panic!("the driver stopped ({code:?}) before the run ended\n{driver_out}");
        }
        if Instant::now() > deadline {
            let (_, driver_out) = finish(driver, Duration::ZERO);
            let log = driver_repo.agency(&["--db", &db.url, "watch", &run8, "--verbose"]);
            panic!(
                "the run did not end within 120s\ndriver: {driver_out}\nlog:\n{}",
                log.stdout()
            );
        }
        if store
            .pending_gates(Some(run))
            .unwrap()
            .iter()
            .any(|g| g.status == GateStatus::Pending)
        {
            driver_repo.agency(&["--db", &db.url, "approve", &run8]).success();
        }
        if killed.is_none() {
            let events = store.events_after(Some(run), 0, 100_000).unwrap();
            for brief in store.list_briefs_by_status(run, BriefStatus::Running).unwrap() {
                let Some(holder) = brief.claimed_by.clone() else {
                    continue;
                };
                let started = events
                    .iter()
                    .any(|e| e.kind == EventKind::Spawned && e.brief == Some(brief.id));
                if brief.tier == Tier::T4 && started && workers.contains_key(&holder) {
                    let mut worker = workers.remove(&holder).unwrap();
                    worker.kill().unwrap();
                    worker.wait().unwrap();
                    killed = Some((holder, brief.id));
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (driver_code, driver_out) = finish(driver, Duration::from_secs(30));
    assert_eq!(driver_code, Some(0), "driver: {driver_out}");
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    for (name, worker) in workers {
        let (code, out) = finish(worker, Duration::from_secs(30));
        assert_eq!(code, Some(0), "{name}: {out}");
    }

    // The killed worker's brief went back to the run and another runner finished it.
    let (dead, brief) = killed.expect("no worker ever ran an implementer; nothing was killed");
    let events = store.events_after(Some(run), 0, 100_000).unwrap();
    let holders: Vec<&str> = events
        .iter()
        .filter(|e| {
            e.brief == Some(brief) && e.kind == EventKind::BriefStatus && e.payload["to"] == "running"
        })
        .filter_map(|e| e.payload["claimed_by"].as_str())
        .collect();
    assert_eq!(holders.first(), Some(&dead.as_str()), "{holders:?}");
    let last = *holders.last().unwrap();
    assert_ne!(
        last, dead,
        "the killed worker's brief was not taken over: {holders:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.brief == Some(brief) && e.payload["tag"] == "RECLAIMED"),
        "no RECLAIMED line for the killed worker's brief"
    );
    assert_eq!(
        store.get_brief(brief).unwrap().status,
        BriefStatus::Done,
        "the killed worker's brief: {:#?}",
        events
            .iter()
            .filter(|e| e.brief == Some(brief))
            .map(|e| (e.seq, e.kind, e.payload.to_string()))
            .collect::<Vec<_>>()
    );

    // The implementers' agents ran on more than one runner.
    let implementer_runners: BTreeSet<&str> = events
        .iter()
        .filter(|e| {
            e.kind == EventKind::BriefStatus && e.tier == Some(Tier::T4) && e.payload["to"] == "running"
        })
        .filter_map(|e| e.payload["claimed_by"].as_str())
        .collect();
    assert!(implementer_runners.len() >= 2, "{implementer_runners:?}");

    // A slice a worker made was verified there, in its clone, before it was reported (`completed`); the
    // driver took that result instead of running the tests again. With three slices the worker that was
    // not killed makes one (see `slow_script`).
    let mut verified_on_workers = 0;
    for brief in store.list_briefs_by_status(run, BriefStatus::Done).unwrap() {
        if brief.tier != Tier::T4 {
            continue;
        }
        let of_brief = |kind: EventKind| {
            events
                .iter()
                .filter(move |e| e.brief == Some(brief.id) && e.kind == kind)
        };
        let made_by = of_brief(EventKind::BriefStatus)
            .filter(|e| e.payload["to"] == "running")
            .filter_map(|e| e.payload["claimed_by"].as_str())
            .next_back()
            .unwrap();
        let verifies: Vec<i64> = of_brief(EventKind::SignoffVerify).map(|e| e.seq).collect();
        let reported = of_brief(EventKind::Completed).map(|e| e.seq).next_back().unwrap();
        assert_eq!(verifies.len(), 1, "{}: one stage-1 verify, not two", brief.title);
        if made_by.starts_with("worker-") {
            verified_on_workers += 1;
            assert!(
                verifies[0] < reported,
                "{} was not verified on {made_by}",
                brief.title
            );
        } else {
            assert!(
                verifies[0] > reported,
                "{}: the driver verifies its own",
                brief.title
            );
        }
    }
    assert!(verified_on_workers >= 1, "no slice was made on a worker");

    // `agency inspect --brief` says which runners ran it.
    let shown = driver_repo
        .agency(&["--db", &db.url, "inspect", &run8, "--brief", &brief.short()])
        .success();
    assert!(
        shown.stdout().contains(&format!("ran on: {dead}, then {last}")),
        "{}",
        shown.stdout()
    );

    // The remote holds the run's integration branch with the same change a run on one machine makes.
    let base = store.get_run(run).unwrap().base_rev.unwrap();
    let shared = change_of(&remote, &base, &run8);
    assert!(shared.contains("+echo $(($1 * $2))"), "{shared}");
    let (alone, alone_script) = Repo::calculator(SCRIPT);
    let single = alone
        .agency(&[
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            alone_script.to_str().unwrap(),
        ])
        .success();
    let single_run = single.run_id();
    let alone_store = agency_store::SqliteBlackboard::open(alone.db()).unwrap();
    let alone_base = alone_store
        .get_run(alone_store.resolve_run(&single_run).unwrap())
        .unwrap()
        .base_rev
        .unwrap();
    assert_eq!(shared, change_of(alone.path(), &alone_base, &single_run[..8]));
}

/// `agency` with `args` in the background in `dir` (a worker's machine), the blackboard in its environment.
fn spawn_in(dir: &Path, db: &Database, args: &[&str]) -> Running {
    crate::support::spawn_in(dir, args, &[("AGENCY_DB", &db.url)])
}

#[test]
fn a_slice_the_remote_refuses_fails_its_brief_with_gits_reason() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let driver_repo = calculator(&db, SCRIPT);
    let script_path = driver_repo.path().join(".agency").join("script.yaml");
    let script_arg = script_path.to_str().unwrap();
    let machines = tempfile::tempdir().unwrap();
    let remote = shared_remote(&driver_repo, machines.path(), "origin");
    // The remote takes the driver's branches and refuses every slice branch, as a protected remote would.
    pre_receive_hook(
        &remote,
        "#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in\n    refs/heads/main|*/integration|*/work) ;;\n    \
         *) echo \"slice branches are not accepted here: $ref\" >&2; exit 1 ;;\n  esac\ndone\n",
    )
    .unwrap();

    let driver = spawn(
        &driver_repo,
        &db,
        &[
            "run",
            CALCULATOR_GOAL,
            "--script",
            script_arg,
            "--remote",
            "origin",
            "--auto-approve",
        ],
    );
    let store = db.store();
    let run = started_run(&store);
    let refused = wait_for(
        || {
            store
                .events_after(Some(run), 0, 100_000)
                .unwrap()
                .into_iter()
                .find(|e| e.payload.to_string().contains("could not be shared"))
        },
        "a slice's push to be refused",
    );
    let said = refused.payload.to_string();
    assert!(said.contains("slice branches are not accepted here"), "{said}");
    assert!(said.contains("through git remote origin"), "{said}");
    // The brief failed: it never reached its verifier.
    let brief = store
        .get_brief(refused.brief.expect("the refusal names its brief"))
        .unwrap();
    assert_ne!(brief.status, BriefStatus::Done, "{brief:?}");
    driver_repo
        .agency(&["--db", &db.url, "cancel", &run.short(), "--reason", "test over"])
        .success();
    finish(driver, Duration::from_secs(30));
}

/// The first line a worker prints, `NAME works on run …; it offers …`: its name. Its output is drained
/// from then on, so it never blocks on a full pipe.
fn worker_name(worker: &mut Running) -> String {
    let mut reader = BufReader::new(worker.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(first.contains("works on run"), "{first}");
    std::thread::spawn(move || for _ in reader.lines() {});
    first.split_whitespace().next().unwrap().to_string()
}

#[test]
fn briefs_go_only_to_workers_that_offer_what_they_need_and_an_unplaced_one_is_an_alert() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, SCRIPT);
    // ws-arith's briefs need a `gpu` runner; nobody offers one at first.
    repo.edit_team(&[
        (
            "  workstream_labels: {} ",
            "  workstream_labels: {ws-arith: [gpu]} ",
        ),
        ("  unplaced_alert_seconds: 120 ", "  unplaced_alert_seconds: 1 "),
    ]);
    repo.commit("team");
    let script = ".agency/script.yaml";

    // Bad offers are refused before the worker starts.
    for (flags, said) in [
        (&["--tiers", "t9"][..], "--tiers \"t9\""),
        (&["--runtime", "emacs"][..], "--runtime \"emacs\""),
        (&["--label", "has space"][..], "--label \"has space\""),
    ] {
        // Read before the run is looked for: no run is needed to learn the flags are wrong.
        let mut args = vec!["--db", &db.url, "worker", "no-such-run"];
        args.extend_from_slice(flags);
        let refused = repo.agency(&args);
        assert_eq!(refused.code(), Some(2), "{flags:?}: {}", refused.stderr());
        assert!(refused.stderr().contains(said), "{flags:?}: {}", refused.stderr());
    }

    let driver = spawn(
        &repo,
        &db,
        &["run", CALCULATOR_GOAL, "--script", script, "--auto-approve"],
    );
    let store = db.store();
    let run = started_run(&store);
    let run8 = run.short();
    // A scripted run's agents all run on the built-in runtime: a worker for claude-code has nothing to take.
    let idle = repo.agency(&[
        "--db",
        &db.url,
        "worker",
        &run8,
        "--script",
        script,
        "--runtime",
        "claude-code",
    ]);
    assert_eq!(idle.code(), Some(2), "{}", idle.stderr());
    assert!(idle.stderr().contains("no tier to take"), "{}", idle.stderr());
    assert!(idle.stderr().contains("t4: builtin"), "{}", idle.stderr());
    // Workers of several kinds, none with the label: one for every tier, one for T5 with other labels.
    let mut plain = spawn(&repo, &db, &["worker", &run8, "--script", script]);
    let plain_name = worker_name(&mut plain);
    let mut other = spawn(
        &repo,
        &db,
        &[
            "worker",
            &run8,
            "--script",
            script,
            "--tiers",
            "t5",
            "--label",
            "big-tests,linux",
        ],
    );
    let other_name = worker_name(&mut other);

    // T3's brief of ws-arith waits, and after a second the driver says why: what it needs, what is offered.
    let alert = wait_for(
        || {
            store
                .events_after(Some(run), 0, 100_000)
                .unwrap()
                .into_iter()
                .find(|e| e.payload["tag"] == "UNPLACED")
        },
        "an UNPLACED line for ws-arith's T3 brief",
    );
    let said = alert.payload["message"].as_str().unwrap().to_string();
    assert!(said.contains("needs tier t3, labels gpu"), "{said}");
    assert!(
        said.contains(&format!("{plain_name} offers every tier; no labels")),
        "{said}"
    );
    assert!(
        said.contains(&format!("{other_name} offers tiers t5; labels big-tests, linux")),
        "{said}"
    );
    assert!(
        said.contains("runner-"),
        "the driver's own offer is not named: {said}"
    );
    // The ALERT event follows the line.
    wait_for(
        || {
            store
                .events_after(Some(run), 0, 100_000)
                .unwrap()
                .into_iter()
                .find(|e| e.kind == EventKind::Alert && e.payload["source"] == "placement")
        },
        "the ALERT event beside the UNPLACED line",
    );
    // The live log shows it.
    let log = repo.agency(&["--db", &db.url, "watch", &run8]).success();
    assert!(log.stdout().contains("UNPLACED"), "{}", log.stdout());

    // A gpu worker for T3 joins and takes it; the T4s then wait for a gpu worker of their tier, which joins.
    let mut gpu_t3 = spawn(
        &repo,
        &db,
        &[
            "worker", &run8, "--script", script, "--tiers", "t3", "--label", "gpu",
        ],
    );
    let gpu_t3_name = worker_name(&mut gpu_t3);
    wait_for(
        || {
            store
                .events_after(Some(run), 0, 100_000)
                .unwrap()
                .into_iter()
                .find(|e| e.payload["tag"] == "UNPLACED" && e.tier == Some(Tier::T4))
        },
        "an UNPLACED line for a T4 brief",
    );
    let mut gpu_t45 = spawn(
        &repo,
        &db,
        &[
            "worker",
            &run8,
            "--script",
            script,
            "--tiers",
            "t4",
            "--tiers",
            "t5",
            "--runtime",
            "builtin",
            "--label",
            "gpu",
        ],
    );
    let gpu_t45_name = worker_name(&mut gpu_t45);

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut driver = driver;
    while !store.get_run(run).unwrap().status.is_terminal() {
        if driver.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let (_, out) = finish(driver, Duration::ZERO);
            let log = repo.agency(&["--db", &db.url, "watch", &run8, "--verbose"]);
            panic!("the run did not end\ndriver: {out}\nlog:\n{}", log.stdout());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, out) = finish(driver, Duration::from_secs(30));
    assert_eq!(code, Some(0), "driver: {out}");
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    for worker in [plain, other, gpu_t3, gpu_t45] {
        let (code, out) = finish(worker, Duration::from_secs(30));
        assert_eq!(code, Some(0), "{out}");
    }

    // Every ws-arith brief ran on a gpu worker of its tier; nothing else of the run needed a label.
    let events = store.events_after(Some(run), 0, 100_000).unwrap();
    let mut arith = 0;
    for e in events
        .iter()
        .filter(|e| e.kind == EventKind::BriefStatus && e.payload["to"] == "running")
    {
        let brief = store.get_brief(e.brief.unwrap()).unwrap();
        let holder = e.payload["claimed_by"].as_str().unwrap();
        if brief.workstream == "ws-arith" {
            arith += 1;
            let expected = if brief.tier == Tier::T3 {
                &gpu_t3_name
            } else {
                &gpu_t45_name
            };
            assert_eq!(holder, expected, "{} {}", brief.tier, brief.title);
        }
    }
    assert!(arith >= 5, "T3, two T4s and their T5s: {arith} claims");
}

/// The first line `running` prints.
fn first_line(running: &mut Running) -> String {
    let mut line = String::new();
    BufReader::new(running.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

#[test]
fn a_resumed_run_shares_its_branches_through_the_remote_it_started_with() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, SCRIPT);
    let script = ".agency/script.yaml";
    let machines = tempfile::tempdir().unwrap();
    for name in ["origin", "mirror"] {
        shared_remote(&repo, machines.path(), name);
    }
    let store = db.store();
    // Started with --remote origin, the driver waits at the plan gate and is killed there.
    let mut driver = spawn(
        &repo,
        &db,
        &["run", CALCULATOR_GOAL, "--script", script, "--remote", "origin"],
    );
    let run = started_run(&store);
    let run8 = run.short();
    wait_for(
        || (!store.pending_gates(Some(run)).unwrap().is_empty()).then_some(()),
        "the plan gate",
    );
    driver.kill().unwrap();
    driver.wait().unwrap();
    // The resume hint names the remote.
    let shown = repo.agency(&["--db", &db.url, "inspect", &run8]).success();
    assert!(shown.stdout().contains("--remote origin"), "{}", shown.stdout());

    // A --remote that differs from the recorded one wins, and says so.
    let mut other = spawn(
        &repo,
        &db,
        &["run", "--resume", &run8, "--script", script, "--remote", "mirror"],
    );
    let said = first_line(&mut other);
    assert!(
        said.contains("--remote mirror: the run was started with --remote origin"),
        "{said}"
    );
    other.kill().unwrap();
    other.wait().unwrap();

    // Without the flag, the recorded remote is used: the run ends with its branches on origin.
    let mut resumed = spawn(
        &repo,
        &db,
        &["run", "--resume", &run8, "--script", script, "--auto-approve"],
    );
    let said = first_line(&mut resumed);
    assert!(
        said.contains("sharing the run's branches through git remote origin, as when it started"),
        "{said}"
    );
    let (code, out) = finish(resumed, Duration::from_secs(90));
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    let base = store.get_run(run).unwrap().base_rev.unwrap();
    let shared = change_of(&machines.path().join("origin.git"), &base, &run8);
    assert!(shared.contains("+echo $(($1 * $2))"), "{shared}");
}
