//! Publishing a succeeded run for review: push the integration branch and open a GitHub pull request.
//!
//! The seed's `vcs/` adapter. It acts only when the `forge` section's token variable is set and the
//! configured remote (`origin`) points at the forge's host (`github.com`); otherwise the run ends with the
//! branch alone and a verbose log line says why no pull request was opened. The pull request's base is the
//! branch the run started from (recorded at start by [`remember_base`]); its body is T1's accept summary,
//! the verify result of every workstream merged into the integration branch, and the run id. Nothing is
//! ever merged here: a human merges the pull request.
//!
//! Publishing happens once per run: its outcome is a `log` event carrying a `forge` key, which a resumed
//! runner finds and reuses.

use agency_core::Tier;
use agency_core::event::payload::{ForgeNote, LogLine, SignoffVerify};
use agency_core::event::{EventKind, EventPayload, NewEvent};
use agency_exec::process;
use agency_store::Run;
use serde_json::json;

use std::ops::ControlFlow;
use std::sync::Arc;

use agency_core::config::ForgeConfig;
use agency_exec::git::Repo;
use agency_store::Blackboard;
use agency_store::walk::walk_events_of_kinds_in_pages;

use crate::http::{HttpError, post_json};

/// What publishing a run needs from the runner — the blackboard, the repository, team.yaml's `forge`
/// section and the run's integration branch — and nothing else of it.
#[derive(Clone)]
pub(crate) struct Publisher {
    /// Where the run's records are read and the outcome written.
    pub store: Arc<dyn Blackboard>,
    /// The repository pushed from.
    pub repo: Repo,
    /// team.yaml's `forge` section.
    pub forge: ForgeConfig,
    /// The branch published: the run's integration branch.
    pub integration: String,
}

/// What publishing found or did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Published {
    /// The pull request, when one was opened.
    pub url: Option<String>,
    /// T1's accept summary.
    pub accept_summary: Option<String>,
}

/// Records the branch checked out when the run starts: the pull request's base.
pub(crate) fn remember_base(store: &dyn Blackboard, repo: &Repo, run: &Run) -> crate::Result<()> {
    let Some(branch) = repo.current_branch()? else {
        return Ok(());
    };
    let payload = EventPayload::Log(LogLine {
        base_branch: Some(branch.clone()),
        ..LogLine::new(
            "verbose",
            Some("BASE"),
            format!("the run starts from branch {branch}"),
        )
    });
    store.append_event(NewEvent::typed(run.id, payload))?;
    Ok(())
}

/// What the blackboard says about the run's result.
#[derive(Debug, Default)]
struct RunFacts {
    accept_summary: Option<String>,
    base: Option<String>,
    verifies: Vec<SignoffVerify>,
    published: Option<ForgeNote>,
    /// Events of the kinds read here that do not read.
    unreadable: Vec<String>,
}

/// How many events one read of the blackboard pages through.
const PAGE: usize = 1000;

/// How many of the run's first log lines are looked at for the base branch: [`remember_base`] logs it right
/// after the run's record, before anything else logs, so it is the first (a margin for lines added there).
const BASE_WITHIN: usize = 20;

/// What the pull request cites, from the run's records. The log is not read whole: of its lines (about five
/// a brief) only the first few (the base branch, [`remember_base`]) and those after T1's acceptance (a pull
/// request already opened, which only follows the run's success) can hold what is wanted.
fn facts(store: &dyn Blackboard, run: &Run) -> RunFacts {
    let mut facts = RunFacts::default();
    let mut accepted_at = None;
    read_kinds(
        store,
        run,
        &[EventKind::SignoffAccepted, EventKind::SignoffVerify],
        (0, PAGE),
        &mut facts,
        |facts, event, payload| {
            match payload {
                EventPayload::SignoffAccepted(accepted) if event.tier == Some(Tier::T1) => {
                    facts.accept_summary = accepted.summary;
                    accepted_at = Some(event.seq);
                }
                // Only the re-verification after each merge into the integration branch names a workstream.
                EventPayload::SignoffVerify(verify) if verify.workstream.is_some() => {
                    facts.verifies.push(verify)
                }
                _ => {}
            }
            true
        },
    );
    let mut looked = 0;
    read_kinds(
        store,
        run,
        &[EventKind::Log],
        (0, BASE_WITHIN),
        &mut facts,
        |facts, _, payload| {
            looked += 1;
            if let EventPayload::Log(line) = payload
                && line.base_branch.is_some()
            {
                facts.base = line.base_branch;
                return false;
            }
            looked < BASE_WITHIN
        },
    );
    // Without T1's acceptance on record (a run made to succeed otherwise), the whole log is read.
    read_kinds(
        store,
        run,
        &[EventKind::Log],
        (accepted_at.unwrap_or(0), PAGE),
        &mut facts,
        |facts, _, payload| {
            if let EventPayload::Log(line) = payload
                && line.forge.is_some()
            {
                facts.published = line.forge;
            }
            true
        },
    );
    facts
}

/// Hands each event of `kinds` after `after` to `each` with its payload, oldest first, `limit` a read,
/// until `each` says stop. A record that does not read is left out of the pull request's text (it never
/// decides anything here: the run already succeeded), and said in the run's log; a read that fails ends the
/// walk with what was read (the pull request is opened with the facts found).
fn read_kinds(
    store: &dyn Blackboard,
    run: &Run,
    kinds: &[EventKind],
    (after, limit): (i64, usize),
    facts: &mut RunFacts,
    mut each: impl FnMut(&mut RunFacts, &agency_core::event::Event, EventPayload) -> bool,
) {
    let _ = walk_events_of_kinds_in_pages::<agency_store::StoreError>(
        store,
        run.id,
        kinds,
        after,
        limit,
        |event| {
            Ok(match event.typed() {
                Ok(payload) => match each(facts, &event, payload) {
                    true => ControlFlow::Continue(()),
                    false => ControlFlow::Break(()),
                },
                Err(error) => {
                    facts.unreadable.push(format!("event {}: {error}", event.seq));
                    ControlFlow::Continue(())
                }
            })
        },
    );
}

/// Pushes the integration branch and opens the pull request, once per run. Never fails the run: whatever
/// goes wrong is logged and the branch stays for review.
pub(crate) async fn publish(publisher: &Publisher, run: &Run) -> Published {
    let facts = facts(publisher.store.as_ref(), run);
    if let Some(done) = &facts.published {
        return Published {
            url: done.url.clone(),
            accept_summary: facts.accept_summary,
        };
    }
    for what in &facts.unreadable {
        let line = LogLine::new(
            "normal",
            Some("UNREADABLE"),
            format!("a record the pull request would cite does not read, so it is left out: {what}"),
        );
        let _ = publisher
            .store
            .append_event(NewEvent::typed(run.id, EventPayload::Log(line)));
    }
    let branch = &publisher.integration;
    let (url, level, message) = match open_pull_request(publisher, run, &facts).await {
        Ok(url) => (Some(url.clone()), "normal", format!("pull request opened: {url}")),
        Err(Skip::NotConfigured(why)) => (
            None,
            "verbose",
            format!("no pull request: {why}; review branch {branch}"),
        ),
        Err(Skip::Failed(why)) => (
            None,
            "normal",
            format!("no pull request: {why}; review branch {branch}"),
        ),
    };
    let payload = EventPayload::Log(LogLine {
        forge: Some(ForgeNote { url: url.clone() }),
        ..LogLine::new(level, Some("PR"), message)
    });
    let mut event = NewEvent::typed(run.id, payload);
    event.tier = Some(Tier::T1);
    let _ = publisher.store.append_event(event);
    Published {
        url,
        accept_summary: facts.accept_summary,
    }
}

/// Why no pull request was opened.
#[derive(Debug)]
enum Skip {
    /// No forge is configured (no token, no GitHub remote): the expected case, logged quietly.
    NotConfigured(String),
    /// A forge is configured and publishing failed: the human should hear it.
    Failed(String),
}

async fn open_pull_request(publisher: &Publisher, run: &Run, facts: &RunFacts) -> Result<String, Skip> {
    let forge = &publisher.forge;
    let branch = publisher.integration.as_str();
    let token = std::env::var(&forge.token_env)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| Skip::NotConfigured(format!("${} is not set", forge.token_env)))?;
    let remote_url = publisher
        .repo
        .run_git(&["config", "--get", &format!("remote.{}.url", forge.remote)])
        .map(|o| o.stdout.text().trim().to_string())
        .map_err(|_| Skip::NotConfigured(format!("the repository has no remote named {}", forge.remote)))?;
    let (owner, name) = github_repo(&remote_url, &forge.host).ok_or_else(|| {
        Skip::NotConfigured(format!(
            "remote {} is not a {} repository",
            forge.remote, forge.host
        ))
    })?;
    let base = match &facts.base {
        Some(base) => base.clone(),
        None => publisher.repo.current_branch().ok().flatten().ok_or_else(|| {
            Skip::Failed("the branch the run started from is unknown (detached HEAD)".into())
        })?,
    };
    push(&publisher.repo, &forge.remote, branch, &remote_url, &token).await?;
    let api = format!(
        "{}/repos/{owner}/{name}/pulls",
        forge.api_url.trim_end_matches('/')
    );
    let body = json!({
        "title": pr_title(&run.goal),
        "head": branch,
        "base": base,
        "body": pr_body(run, facts),
        "maintainer_can_modify": true,
    });
    let headers = [
        ("authorization", format!("Bearer {token}")),
        ("accept", "application/vnd.github+json".to_string()),
        ("x-github-api-version", "2022-11-28".to_string()),
    ];
    let answer = post_json(&api, &headers, &body).await.map_err(|e| match e {
        HttpError::Status { status, body } => {
            Skip::Failed(format!("GitHub answered {status} to the pull request: {body}"))
        }
        other => Skip::Failed(format!("the pull request could not be created: {other}")),
    })?;
    answer["html_url"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Skip::Failed("GitHub's answer has no html_url".into()))
}

/// Pushes `branch` to `remote` with the user's git credentials; over HTTPS the token is offered too, in the
/// environment (never on the command line, where other users could read it).
async fn push(repo: &Repo, remote: &str, branch: &str, remote_url: &str, token: &str) -> Result<(), Skip> {
    let refspec = format!("{branch}:refs/heads/{branch}");
    let args = ["push", "--quiet", remote, &refspec];
    let header = format!(
        "Authorization: Basic {}",
        base64(format!("x-access-token:{token}").as_bytes())
    );
    let config: &[(&str, &str)] = if remote_url.starts_with("https://") {
        &[("http.extraHeader", &header)]
    } else {
        &[]
    };
    let spec = repo
        .git_spec_with_config(&args, config)
        .inherit_env("SSH_AUTH_SOCK")
        .inherit_env("GIT_SSH_COMMAND");
    let output = tokio::task::spawn_blocking(move || process::run(&spec))
        .await
        .map_err(|e| Skip::Failed(format!("git push could not run: {e}")))?
        .map_err(|e| Skip::Failed(format!("git push could not run: {e}")))?;
    if output.success() {
        return Ok(());
    }
    Err(Skip::Failed(format!(
        "git push {remote} {branch} failed ({}): {}",
        output.describe(),
        output.stderr.text().trim()
    )))
}

/// `owner` and `repo` of a remote URL on `host`: `https://host/o/r(.git)`, `git@host:o/r(.git)`,
/// `ssh://git@host/o/r(.git)`.
pub fn github_repo(url: &str, host: &str) -> Option<(String, String)> {
    let path = url
        .strip_prefix(&format!("https://{host}/"))
        .or_else(|| url.strip_prefix(&format!("http://{host}/")))
        .or_else(|| url.strip_prefix(&format!("git@{host}:")))
        .or_else(|| url.strip_prefix(&format!("ssh://git@{host}/")))?;
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, name) = path.split_once('/')?;
    let valid = |s: &str| !s.is_empty() && !s.contains('/');
    (valid(owner) && valid(name)).then(|| (owner.to_string(), name.to_string()))
}

/// The goal's first line, cut to a readable title length.
fn pr_title(goal: &str) -> String {
    const MAX: usize = 72;
    let line = goal.lines().next().unwrap_or("").trim();
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let mut out: String = line.chars().take(MAX - 1).collect();
    out.push('…');
    out
}

fn pr_body(run: &Run, facts: &RunFacts) -> String {
    let mut body = String::new();
    body.push_str(
        facts
            .accept_summary
            .as_deref()
            .unwrap_or("T1 accepted the result."),
    );
    body.push_str("\n\n## Verification\n\n");
    if facts.verifies.is_empty() {
        body.push_str("No workstream had a verify command.\n");
    }
    for v in &facts.verifies {
        let verdict = if v.passed { "passed" } else { "failed" };
        let status = match (&v.status, v.exit_code, v.timed_out) {
            (Some(status), _, _) => status.clone(),
            (None, _, Some(true)) => "timed out".to_string(),
            (None, Some(code), _) => format!("exit {code}"),
            (None, None, _) => "?".to_string(),
        };
        let rev: String = v.rev.chars().take(12).collect();
        body.push_str(&format!(
            "- `{}`: `{}` {verdict} ({status}) at {}\n",
            v.workstream.as_deref().unwrap_or("?"),
            Some(v.command.as_str()).filter(|c| !c.is_empty()).unwrap_or("?"),
            Some(rev.as_str()).filter(|r| !r.is_empty()).unwrap_or("?"),
        ));
    }
    body.push_str(&format!(
        "\nagency run `{}`. Nothing is merged until a human merges this pull request.\n",
        run.id
    ));
    body
}

/// Standard base64 with padding (for the HTTP basic credentials git sends).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_remotes_in_every_form_give_owner_and_repo() {
        let want = Some(("acme".to_string(), "widget".to_string()));
        for url in [
            "https://github.com/acme/widget.git",
            "https://github.com/acme/widget",
            "git@github.com:acme/widget.git",
            "ssh://git@github.com/acme/widget.git",
        ] {
            assert_eq!(github_repo(url, "github.com"), want, "{url}");
        }
        assert_eq!(
            github_repo("https://gitlab.com/acme/widget.git", "github.com"),
            None
        );
        assert_eq!(github_repo("/srv/git/widget.git", "github.com"), None);
        assert_eq!(github_repo("https://github.com/acme", "github.com"), None);
    }

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"x-access-token:t"), "eC1hY2Nlc3MtdG9rZW46dA==");
    }

    #[test]
    fn titles_are_the_goals_first_line_cut_short() {
        assert_eq!(pr_title("Fix the bug\nmore detail"), "Fix the bug");
        assert_eq!(pr_title(&"x".repeat(100)).chars().count(), 72);
    }
}
