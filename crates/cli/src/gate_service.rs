//! The gate service: in a run, the only way from an agent to the blackboard. The runner (`agency run`,
//! `agency run --resume`, `agency worker`) listens on a unix socket in its private directory
//! (`.agency/gate/<pid>.sock`, out of every sandbox; bound into each hook-gated agent's sandbox on its own
//! path). It answers the agents' PreToolUse hooks with the very decision code `agency hook` runs in a
//! plain session ([`agency_toolgate::answer_event`]), receives their teachback submissions, serves them the
//! review of their own brief, and takes pokes: a human decision made outside (`agency approve`, ...) wakes
//! the waiting runner at once instead of at its next poll.
//!
//! Capabilities: every agent it admits gets a random token (32 bytes from the OS RNG, `/dev/urandom`) valid
//! for its own brief only, revoked when the agent ends. A request naming a brief whose token it does not
//! hold is refused, and the refusal is recorded as an ALERT on that brief's run (without the token). A
//! poke carries no authority (it only makes the runner look at the blackboard sooner), so it needs no
//! token.
//!
//! The record: every PreToolUse answer the service gives goes into the [`DecisionRecord`] of the capability
//! it was asked under (tool, call id, input, allow or deny), in the runner's memory. The runtime audits the
//! agent's event stream against that record when the agent ends (`agency_exec::runtime::coverage`): a call
//! the service never answered fails the brief, whatever the agent wrote anywhere.
//!
//! The wire: one JSON object per line each way, one request per connection ([`Request`]; the answer is an
//! object, `{"error": ...}` when refused), served by a few threads that take connections in turn (see
//! [`IDLE_WORKERS`]) rather than a thread started per connection.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agency_core::config::RolloutMode;
use agency_core::event::{EventPayload, payload};
use agency_core::teachback::{TeachbackAction, TeachbackState, transition};
use agency_core::{BriefId, NewEvent, Teachback};
use agency_exec::gate::{DecisionRecord, GateCapability, GateIssuer};
use agency_exec::runtime::coverage::GateDecision;
use agency_store::Blackboard;
use serde_json::{Value, json};

use agency_toolgate::{Answer, HookEnv};

/// The directory under `.agency/` holding the runners' sockets (and pointers to them); and the poke that
/// reaches them all, which the dashboard sends too.
pub use agency_toolgate::wire::{SOCKET_DIR, poke_runners};
/// The longest socket path bound in place; a longer one (a deep repository) goes to a private directory
/// under the temporary directory, with a pointer file (`<pid>.at`) in [`SOCKET_DIR`].
const MAX_SOCKET_PATH: usize = 100;
/// How long one connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub use agency_toolgate::wire::{Request, request};

/// What the service needs to decide.
#[derive(Debug, Clone)]
pub struct GateSetup {
    /// The run's blackboard, for submissions, reviews and refusals.
    pub store: Arc<dyn Blackboard>,
    /// Its SQLite file, which the hook's decision code reads; `None` on PostgreSQL, where no hook-gated
    /// agent runs, and hook requests are refused.
    pub db: Option<PathBuf>,
    /// team.yaml, when there is one.
    pub config: Option<PathBuf>,
    /// The rollout mode the runner resolved.
    pub rollout: RolloutMode,
}

#[derive(Debug)]
struct Inner {
    setup: GateSetup,
    /// Each admitted agent's capability by brief.
    tokens: Mutex<HashMap<BriefId, Vec<Held>>>,
    next: AtomicU64,
    wake: Arc<tokio::sync::Notify>,
    stopping: AtomicBool,
    workers: Workers,
}

/// One capability the service holds: the id its revocation names, its token, and the record of what the
/// service decided under it.
#[derive(Debug)]
struct Held {
    id: u64,
    token: String,
    record: DecisionRecord,
}

/// The running service. Dropping it stops listening and removes the socket.
#[derive(Debug)]
pub struct GateService {
    inner: Arc<Inner>,
    socket: PathBuf,
    /// The pointer file naming the socket, when it is not in [`SOCKET_DIR`] itself.
    pointer: Option<PathBuf>,
    /// The private directory holding a socket whose path in place would be too long.
    private: Option<PathBuf>,
}

impl GateService {
    /// Listens in `dir` (`.agency/gate`, made private to the user).
    pub fn start(dir: &Path, setup: GateSetup) -> Result<Arc<GateService>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} private: {e}", dir.display()))?;
        let pid = std::process::id();
        let in_place = std::path::absolute(dir.join(format!("{pid}.sock")))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let (socket, pointer, private) = if in_place.as_os_str().len() <= MAX_SOCKET_PATH {
            (in_place, None, None)
        } else {
            let suffix = random_token()?;
            let private = std::env::temp_dir().join(format!("agency-gate-{}", &suffix[..16]));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&private)
                .map_err(|e| format!("cannot create {} for the gate's socket: {e}", private.display()))?;
            let socket = private.join("gate.sock");
            let pointer = dir.join(format!("{pid}.at"));
            std::fs::write(&pointer, socket.as_os_str().as_encoded_bytes())
                .map_err(|e| format!("cannot write {}: {e}", pointer.display()))?;
            (socket, Some(pointer), Some(private))
        };
        // A socket of an earlier process with this pid is stale: nobody listens on it.
        let _ = std::fs::remove_file(&socket);
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot make {} private: {e}", socket.display()))?;
        let inner = Arc::new(Inner {
            setup,
            tokens: Mutex::default(),
            next: AtomicU64::new(1),
            wake: Arc::new(tokio::sync::Notify::new()),
            stopping: AtomicBool::new(false),
            workers: Workers::default(),
        });
        let listener = Arc::new(listener);
        if !(0..IDLE_WORKERS).fold(false, |any, _| start_worker(&listener, &inner) || any) {
            return Err(format!("cannot start the gate service on {}", socket.display()));
        }
        Ok(Arc::new(GateService {
            inner,
            socket,
            pointer,
            private,
        }))
    }

    /// Where it listens.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What a poke notifies: the runner's drive loop waits on it besides its poll interval.
    pub fn waker(&self) -> Arc<tokio::sync::Notify> {
        self.inner.wake.clone()
    }
}

impl Drop for GateService {
    fn drop(&mut self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        // Wakes every thread waiting in `accept` so that it sees the flag (one connection each; a thread
        // busy serving sees it before it waits again).
        for _ in 0..self.inner.workers.running.load(Ordering::SeqCst) {
            let _ = UnixStream::connect(&self.socket);
        }
        let _ = std::fs::remove_file(&self.socket);
        if let Some(pointer) = &self.pointer {
            let _ = std::fs::remove_file(pointer);
        }
        if let Some(private) = &self.private {
            let _ = std::fs::remove_dir(private);
        }
    }
}

impl GateIssuer for GateService {
    fn issue(&self, brief: BriefId) -> Result<GateCapability, String> {
        let token = random_token()?;
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let record = DecisionRecord::default();
        lock(&self.inner.tokens).entry(brief).or_default().push(Held {
            id,
            token: token.clone(),
            record: record.clone(),
        });
        let inner = Arc::downgrade(&self.inner);
        Ok(GateCapability::new(
            self.socket.clone(),
            token,
            record,
            move || {
                if let Some(inner) = inner.upgrade() {
                    let mut tokens = lock(&inner.tokens);
                    if let Some(held) = tokens.get_mut(&brief) {
                        held.retain(|h| h.id != id);
                        if held.is_empty() {
                            tokens.remove(&brief);
                        }
                    }
                }
            },
        ))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// 32 bytes from the OS RNG, hex.
fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for a gate token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal without an early exit, so the time taken says nothing about how much of a token was right.
fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Threads kept waiting for a connection. Each decision used to start a thread of its own (about a tenth of
/// a millisecond, on the hot path of every tool call); now a few threads take connections in turn, each
/// calling `accept` on the shared socket, and one that takes the last idle slot starts another, so a slow
/// or stalled client (up to [`REQUEST_TIMEOUT`]) never holds the others' decisions up.
const IDLE_WORKERS: usize = 4;

/// Idle threads kept after a burst: more end. Above [`IDLE_WORKERS`], so that a run whose agents keep more
/// than that many calls in flight does not start and end threads on every call.
const MAX_IDLE: usize = 16;

/// How many threads serve at the very most; past it a connection waits for one to finish.
const MAX_WORKERS: usize = 256;

/// The serving threads, counted.
#[derive(Debug, Default)]
struct Workers {
    /// Threads started and not yet ended.
    running: AtomicUsize,
    /// Threads waiting in `accept`.
    idle: AtomicUsize,
}

/// Starts one more serving thread; false when it could not be started (it says why on stderr).
fn start_worker(listener: &Arc<UnixListener>, inner: &Arc<Inner>) -> bool {
    inner.workers.running.fetch_add(1, Ordering::SeqCst);
    inner.workers.idle.fetch_add(1, Ordering::SeqCst);
    let (listener, serving) = (listener.clone(), inner.clone());
    let started = std::thread::Builder::new()
        .name("agency-gate".into())
        .spawn(move || worker(&listener, &serving));
    if let Err(err) = started {
        inner.workers.running.fetch_sub(1, Ordering::SeqCst);
        inner.workers.idle.fetch_sub(1, Ordering::SeqCst);
        eprintln!("agency: the gate service could not start a thread: {err}");
        return false;
    }
    true
}

/// One serving thread: takes connections in turn with the others, answers each, and ends when the service
/// stops or [`MAX_IDLE`] others are idle.
fn worker(listener: &Arc<UnixListener>, inner: &Arc<Inner>) {
    let workers = &inner.workers;
    loop {
        let connection = listener.accept();
        if inner.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok((connection, _)) = connection else {
            // Out of descriptors, say: let the others finish rather than spin on the error.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        // The last idle thread is now busy: start another to take the next connection.
        if workers.idle.fetch_sub(1, Ordering::SeqCst) == 1
            && workers.running.load(Ordering::SeqCst) < MAX_WORKERS
        {
            start_worker(listener, inner);
        }
        serve(connection, inner);
        if workers.idle.load(Ordering::SeqCst) >= MAX_IDLE {
            workers.running.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        workers.idle.fetch_add(1, Ordering::SeqCst);
    }
    workers.idle.fetch_sub(1, Ordering::SeqCst);
    workers.running.fetch_sub(1, Ordering::SeqCst);
}

fn serve(connection: UnixStream, inner: &Inner) {
    let _ = connection.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = connection.set_write_timeout(Some(REQUEST_TIMEOUT));
    let mut line = Vec::new();
    let read = BufReader::new(&connection)
        .take(agency_toolgate::MAX_INPUT_BYTES as u64 + 4096)
        .read_until(b'\n', &mut line);
    let answer = match read {
        Err(err) => json!({"error": format!("cannot read the request: {err}")}),
        Ok(_) => match serde_json::from_slice::<Request>(&line) {
            Err(err) => {
                json!({"error": format!("not a gate request ({err}); expected one JSON object per line with \"op\"")})
            }
            Ok(request) => inner.answer(request),
        },
    };
    // One write: `Value`'s `Display` straight onto the socket would be a system call per piece.
    let mut bytes = answer.to_string().into_bytes();
    bytes.push(b'\n');
    let _ = (&connection).write_all(&bytes);
}

impl Inner {
    fn answer(&self, request: Request) -> Value {
        match request {
            Request::Poke => {
                // Every waiter now, and a permit for a runner between two waits.
                self.wake.notify_waiters();
                self.wake.notify_one();
                json!({"ok": true})
            }
            Request::Hook { brief, token, event } => match self.admit(&brief, &token, "hook") {
                Ok((id, record)) => self.hook(id, &record, &event),
                Err(refused) => json!({"error": refused}),
            },
            Request::Submit {
                brief,
                token,
                teachback,
            } => match self
                .admit(&brief, &token, "submit")
                .and_then(|(id, _)| self.submit(id, &teachback))
            {
                Ok(answer) => answer,
                Err(refused) => json!({"error": refused}),
            },
            Request::Amend {
                brief,
                token,
                reason,
                change,
            } => match self
                .admit(&brief, &token, "amend")
                .and_then(|(id, _)| self.amend(id, &reason, change))
            {
                Ok(answer) => answer,
                Err(refused) => json!({"error": refused}),
            },
            Request::Review { brief, token, after } => match self
                .admit(&brief, &token, "review")
                .and_then(|(id, _)| self.review(id, after))
            {
                Ok(answer) => answer,
                Err(refused) => json!({"error": refused}),
            },
        }
    }

    /// The brief `typed` names and the record of the capability `token` is, when it is one the service
    /// holds for that brief; a refusal otherwise, recorded.
    fn admit(&self, typed: &str, token: &str, op: &str) -> Result<(BriefId, DecisionRecord), String> {
        let Ok(id) = typed.parse::<BriefId>() else {
            return Err(format!("refused: {typed:?} is not a brief id"));
        };
        let record = lock(&self.tokens).get(&id).and_then(|held| {
            held.iter()
                .find(|h| same_token(&h.token, token))
                .map(|h| h.record.clone())
        });
        if let Some(record) = record {
            return Ok((id, record));
        }
        let reason = format!(
            "refused: this capability is not valid for brief {} (an agent may ask only about its own brief, while \
             it runs)",
            id.short()
        );
        self.record_refusal(id, op);
        Err(reason)
    }

    fn record_refusal(&self, id: BriefId, op: &str) {
        let store = &self.setup.store;
        let recorded = store.get_brief(id).and_then(|brief| {
            let message = format!(
                "GATE: a {op} request for brief {} \"{}\" was refused: its capability does not match (an agent \
                 asking about a brief not its own, or after it ended)",
                brief.id.short(),
                brief.title
            );
            store.append_event(
                NewEvent::typed(
                    brief.run,
                    EventPayload::Alert(payload::Signal {
                        level: Some("ALERT".into()),
                        message: Some(message),
                        source: Some("gate".into()),
                        op: Some(op.to_string()),
                        ..payload::Signal::default()
                    }),
                )
                .brief(brief.id),
            )
        });
        if let Err(err) = recorded {
            eprintln!(
                "agency: the gate service refused a {op} request for brief {} and could not record it: {err}",
                id.short()
            );
        }
    }

    /// The hook's answer to `event`, kept in `record` when it decides a tool call. The event is read once,
    /// from the request as parsed; the decision recorded is the answer's, not a re-reading of its output.
    fn hook(&self, id: BriefId, record: &DecisionRecord, event: &Value) -> Value {
        if self.setup.db.is_none() {
            return json!({"error": "this run's blackboard is not a SQLite file: no hook-gated agent can run on it"});
        }
        let env = || HookEnv {
            brief: Some(id.to_string()),
            db: self.setup.db.clone(),
            config: self.setup.config.clone(),
            rollout: Some(self.setup.rollout.as_str().to_owned()),
            cwd: None,
            gate: None,
        };
        let parsed = match agency_toolgate::event::from_value(event) {
            Ok(parsed) => parsed,
            Err(err) => {
                let (code, stdout, stderr) =
                    agency_toolgate::written(&agency_toolgate::unreadable(&env(), &err.to_string()));
                return json!({"code": code, "stdout": stdout, "stderr": stderr});
            }
        };
        // Most calls of a working agent are allowed by its brief's state alone: answered from the runner's
        // open blackboard, without the fresh SQLite handle (and, on a denial, team.yaml) the command hook's
        // path opens for every call. The same decision: anything it does not allow takes that path.
        let answer = agency_toolgate::open_gate_allows(self.setup.store.as_ref(), id, &parsed)
            .unwrap_or_else(|| agency_toolgate::answer_for(&parsed, &env()));
        if parsed.event_name == "PreToolUse" {
            let denied = matches!(answer, Answer::Deny(_) | Answer::Block(_));
            record.push(GateDecision {
                tool_name: parsed.tool_name.unwrap_or_default(),
                tool_use_id: parsed.tool_use_id,
                tool_input: parsed.tool_input,
                gate_decision: if denied { "deny" } else { "allow" }.to_owned(),
            });
        }
        let (code, stdout, stderr) = agency_toolgate::written(&answer);
        json!({"code": code, "stdout": stdout, "stderr": stderr})
    }

    fn submit(&self, id: BriefId, teachback: &Teachback) -> Result<Value, String> {
        teachback.validate().map_err(|e| {
            format!(
                "the teachback is incomplete: {} must not be empty",
                e.missing.join(", ")
            )
        })?;
        let store = self.redacting_store();
        let brief = store.get_brief(id).map_err(|e| e.to_string())?;
        let cursor = store.last_seq(Some(brief.run)).map_err(|e| e.to_string())?;
        let next = transition(brief.teachback, brief.teachback_mode(), &TeachbackAction::Submit)
            .map_err(|e| format!("brief {}: {e}", brief.id.short()))?;
        let payload = EventPayload::TeachbackSubmitted(payload::TeachbackSubmitted {
            // A plain struct of strings and lists: serialising it cannot fail.
            teachback: serde_json::to_value(teachback).unwrap_or_default(),
            text: Some(teachback.to_string()),
            via: Some("gate".into()),
            from: Some(brief.teachback),
            to: Some(next),
            ..payload::TeachbackSubmitted::default()
        });
        let event = NewEvent::typed(brief.run, payload).brief(brief.id);
        let after = store
            .set_teachback_state(brief.id, brief.teachback, next, event)
            .map_err(|e| e.to_string())?;
        Ok(
            json!({"state": after.teachback, "cursor": cursor, "title": brief.title, "short": brief.id.short()}),
        )
    }

    /// Records the agent's path amendment on its own brief's behalf, as the built-in agent's tool does.
    fn amend(
        &self,
        id: BriefId,
        reason: &str,
        mut change: agency_core::event::payload::PathChange,
    ) -> Result<Value, String> {
        let store = self.redacting_store();
        let brief = store.get_brief(id).map_err(|e| e.to_string())?;
        if change.workstream.trim().is_empty() {
            change.workstream = brief.workstream.clone();
        }
        let proposer = agency_engine::amendments::Proposer::agent(&brief);
        let recorded =
            agency_engine::amendments::propose(store.as_ref(), brief.run, &proposer, reason, change)?;
        Ok(json!({
            "seq": recorded.seq,
            "message": format!(
                "recorded as path amendment #{}: the tiers above are told and a human decides at the next gate",
                recorded.seq
            ),
        }))
    }

    fn review(&self, id: BriefId, after: i64) -> Result<Value, String> {
        let store = &self.setup.store;
        let brief = store.get_brief(id).map_err(|e| e.to_string())?;
        let mut cursor = after;
        let mut message = None;
        loop {
            let page = store
                .events_after(Some(brief.run), cursor, 500)
                .map_err(|e| e.to_string())?;
            let Some(last) = page.last() else { break };
            cursor = last.seq;
            for event in page.iter().filter(|e| e.brief == Some(brief.id)) {
                if let Ok(
                    EventPayload::TeachbackApproved(review) | EventPayload::TeachbackCorrected(review),
                ) = event.typed()
                {
                    message = review.message;
                }
            }
        }
        let waiting = brief.teachback == TeachbackState::UnderReview;
        Ok(json!({"state": brief.teachback, "message": message, "waiting": waiting}))
    }

    /// The blackboard with what the agent sends redacted (secrets in the runner's environment, token
    /// shapes), as everything recorded is.
    fn redacting_store(&self) -> Arc<dyn Blackboard> {
        let names = agency_core::config::TeamConfig::default().secret_env_names();
        let redactor = agency_core::redact::Redactor::from_process_env(&names);
        agency_store::RedactingBlackboard::wrap(self.setup.store.clone(), redactor)
    }
}

/// [`poke_runners`] of the workspace `ctx` works in; nothing when there is none.
pub fn poke_workspace(ctx: &crate::commands::Context) {
    if let Ok(ws) = ctx.workspace() {
        poke_runners(&ws.root.join(crate::workspace::AGENCY_DIR));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(dir: &Path) -> Arc<GateService> {
        let store = Arc::new(agency_store::SqliteBlackboard::open(dir.join("agency.db")).unwrap());
        GateService::start(
            &dir.join("gate"),
            GateSetup {
                store,
                db: Some(dir.join("agency.db")),
                config: None,
                rollout: RolloutMode::Enforce,
            },
        )
        .unwrap()
    }

    /// Clients that connect and never send (a hung or hostile agent's hook) hold one thread each until
    /// their request times out; the others' requests are still answered at once, since a thread that takes
    /// the last idle slot starts another.
    #[test]
    fn stalled_clients_do_not_hold_up_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let service = service(dir.path());
        let stalled: Vec<UnixStream> = (0..3 * IDLE_WORKERS)
            .map(|_| UnixStream::connect(service.socket()).unwrap())
            .collect();
        let started = std::time::Instant::now();
        let answers: Vec<_> = (0..24)
            .map(|_| {
                let socket = service.socket().to_path_buf();
                std::thread::spawn(move || request(&socket, &Request::Poke, Duration::from_secs(5)))
            })
            .collect();
        for answer in answers {
            assert_eq!(answer.join().unwrap().unwrap()["ok"], true);
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the stalled clients held the others up for {:?}",
            started.elapsed()
        );
        drop(stalled);
    }

    /// Dropping the service ends its threads: none is left waiting in `accept`.
    #[test]
    fn a_dropped_service_ends_its_threads() {
        let dir = tempfile::tempdir().unwrap();
        let service = service(dir.path());
        let inner = Arc::downgrade(&service.inner);
        drop(service);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while inner.strong_count() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "serving threads still hold the service"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn tokens_are_long_random_and_compared_whole() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same_token(&a, &a.clone()));
        assert!(!same_token(&a, &b));
        assert!(!same_token(&a, &a[..63]));
    }
}
