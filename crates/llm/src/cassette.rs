//! Record and replay of a run's model calls (`agency run --record`, `agency run --replay <run>`).
//!
//! A cassette is a directory, `.agency/cassettes/<run>/`: a `cassette.json` manifest (the run, its goal, the
//! repository root it ran in) and one JSON file per model call, under a directory per brief:
//! `<brief-slug>-<hash>/a<attempt>-<role>-t<turn>.json` (`-r<n>` added for the n-th repeat of the same
//! key, such as a second teachback review of one brief). A file holds the key, the request as the provider
//! got it (model, system, messages, tools, limits), and the assembled answer with its usage, or the error
//! the call ended with. Everything is redacted before it is written (known key values, secret-looking
//! environment values, token shapes), and written to a temporary file then renamed, so a crash leaves the
//! old file or the new one, never half of one.
//!
//! Files, not the blackboard: a cassette is meant to be read, diffed and committed next to a test, and
//! replayed in a repository that has no copy of the run's blackboard.
//!
//! A key is what stays the same when the same run happens again: the brief's stable label
//! (`workstream/tier/title`), its attempt (the brief's own, from [`CallMeta::attempt`]; a retry is the next
//! one), the role speaking and the turn.
//!
//! Replay answers each request from the cassette by its key, and first compares the request with the
//! recorded one. Before comparing, both are normalised: the repository roots of the two runs become
//! `<root>`, the two runs' ids (whole and short) `<run>`, any other UUID `<uuid>`, 40-hex object ids
//! `<sha>` (commits differ because their timestamps do), RFC 3339 timestamps `<time>`, durations in
//! seconds or milliseconds (`1.0s`, `250ms`: how long a command took) `<duration>`, and the live request is
//! redacted like the recorded one. The first request that still differs, or that the recording never
//! made, stops the replay ([`Replayer::divergence`]) with its key and a short diff.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agency_core::redact::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{Block, CallMeta, Message, Request, Response, StreamEvent, ToolChoice, ToolSpec};
use crate::provider::{BoxFuture, EventSink, Provider};
use crate::usage::Price;

/// The manifest's file name inside a cassette directory.
pub const MANIFEST: &str = "cassette.json";

/// The cassette format this build writes and reads.
pub const FORMAT: u32 = 1;

/// What a cassette says about the run it recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The cassette format ([`FORMAT`]).
    pub format: u32,
    /// The recorded run's id.
    pub run: String,
    /// Its goal, verbatim: a replay without a goal of its own uses it.
    pub goal: String,
    /// The repository root it ran in; normalised to `<root>` when requests are compared.
    pub root: String,
    /// Whether it ran with `--auto-approve`: a replay does too, so the same reviews are asked for.
    pub auto_approve: bool,
}

impl Manifest {
    /// Writes the manifest into `dir` (created if needed), crash-safely.
    pub fn write(&self, dir: &Path) -> Result<(), LlmError> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| LlmError::Cassette(format!("cannot encode the cassette manifest: {e}")))?;
        write_atomically(&dir.join(MANIFEST), &json)
    }

    /// Reads the manifest of the cassette in `dir`.
    pub fn read(dir: &Path) -> Result<Self, LlmError> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            LlmError::Cassette(format!(
                "cannot read {} ({e}): is {} a cassette written by `agency run --record`?",
                path.display(),
                dir.display()
            ))
        })?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            LlmError::Cassette(format!(
                "{}: not a cassette manifest ({e}); expected format, run, goal, root, auto_approve",
                path.display()
            ))
        })?;
        if manifest.format != FORMAT {
            return Err(LlmError::Cassette(format!(
                "{}: cassette format {} is not the one this agency reads ({FORMAT})",
                path.display(),
                manifest.format
            )));
        }
        Ok(manifest)
    }
}

/// Which call of a run a recording answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallKey {
    /// The brief's stable label (`workstream/tier/title`).
    pub brief: String,
    /// Its attempt, from 0.
    pub attempt: u32,
    /// Who spoke (`planner`, `implementer`, `teachback-reviewer`, `judge`, ...).
    pub role: String,
    /// The turn of the conversation, from 1.
    pub turn: u32,
    /// How many earlier calls had the same brief, attempt, role and turn (0 for the first).
    #[serde(default)]
    pub repeat: u32,
}

impl CallKey {
    /// The file, relative to the cassette directory, that records this call.
    pub fn file(&self) -> PathBuf {
        let repeat = match self.repeat {
            0 => String::new(),
            n => format!("-r{n}"),
        };
        PathBuf::from(brief_dir(&self.brief)).join(format!(
            "a{}-{}-t{:03}{repeat}.json",
            self.attempt,
            slug(&self.role),
            self.turn
        ))
    }
}

impl std::fmt::Display for CallKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "brief {}, attempt {}, role {}, turn {}",
            self.brief, self.attempt, self.role, self.turn
        )?;
        if self.repeat > 0 {
            write!(f, " (repeat {})", self.repeat)?;
        }
        Ok(())
    }
}

/// A brief's directory: its label made a file name, and a hash of the label so that two labels that slug
/// alike do not share one.
fn brief_dir(label: &str) -> String {
    format!("{}-{:08x}", slug(label), fnv1a(label.as_bytes()) as u32)
}

fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    let out: String = out.chars().take(60).collect();
    if out.is_empty() { "call".into() } else { out }
}

/// FNV-1a, 64 bits: stable across builds and platforms, which a std hasher is not promised to be.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A request as the provider got it: [`Request`] without its never-sent metadata, with the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireRequest {
    /// The model asked.
    pub model: String,
    /// System prompt blocks.
    pub system: Vec<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Output cap.
    pub max_tokens: u32,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Tool choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl WireRequest {
    fn of(model: &str, request: &Request) -> Self {
        Self {
            model: model.to_owned(),
            system: request.system.clone(),
            messages: request.messages.clone(),
            tools: request.tools.clone(),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop: request.stop.clone(),
            tool_choice: request.tool_choice.clone(),
        }
    }
}

/// One recorded call: one file of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// Which call it was.
    pub key: CallKey,
    /// The provider family that answered.
    pub provider: String,
    /// The request, redacted.
    pub request: Value,
    /// How it ended, redacted.
    pub outcome: Outcome,
}

/// How a recorded call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The assembled answer (a streamed one as it was assembled) with its usage.
    Response(Response),
    /// The error it failed with, after the provider's own retries.
    Error(RecordedError),
}

/// An [`LlmError`] as a cassette keeps it, so a replay fails the call the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    /// The variant: `rate_limited`, `overloaded`, `server`, `bad_request`, `auth`, `timeout`, `connection`,
    /// `stream_dropped`, `protocol`, `config`, `script`, `cassette`, `missing_key`.
    pub kind: String,
    /// Its message.
    pub message: String,
    /// The HTTP status, for the variants that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The `retry-after` in seconds, when the provider sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<f64>,
}

impl RecordedError {
    /// The recordable form of `error`; `None` for a cancelled call or a budget refusal, which are the
    /// runner's doing, not the model's, and happen again by themselves.
    fn of(error: &LlmError) -> Option<Self> {
        let plain = |kind: &str, message: &str| RecordedError {
            kind: kind.into(),
            message: message.into(),
            status: None,
            retry_after_secs: None,
        };
        let secs = |d: &Option<Duration>| d.map(|d| d.as_secs_f64());
        Some(match error {
            LlmError::RateLimited { retry_after, message } => RecordedError {
                retry_after_secs: secs(retry_after),
                ..plain("rate_limited", message)
            },
            LlmError::Overloaded { retry_after, message } => RecordedError {
                retry_after_secs: secs(retry_after),
                ..plain("overloaded", message)
            },
            LlmError::Server {
                status,
                message,
                retry_after,
            } => RecordedError {
                status: Some(*status),
                retry_after_secs: secs(retry_after),
                ..plain("server", message)
            },
            LlmError::BadRequest { status, message } => RecordedError {
                status: Some(*status),
                ..plain("bad_request", message)
            },
            LlmError::Auth { status, message } => RecordedError {
                status: Some(*status),
                ..plain("auth", message)
            },
            LlmError::Timeout(m) => plain("timeout", m),
            LlmError::Connection(m) => plain("connection", m),
            LlmError::StreamDropped(m) => plain("stream_dropped", m),
            LlmError::Protocol(m) => plain("protocol", m),
            LlmError::Config(m) => plain("config", m),
            LlmError::Script(m) => plain("script", m),
            LlmError::Cassette(m) => plain("cassette", m),
            LlmError::MissingKey { var } => plain("missing_key", var),
            LlmError::Cancelled | LlmError::Budget(_) => return None,
        })
    }

    /// The error again.
    fn to_error(&self) -> LlmError {
        let message = self.message.clone();
        let retry_after = self
            .retry_after_secs
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let status = self.status.unwrap_or(0);
        match self.kind.as_str() {
            "rate_limited" => LlmError::RateLimited { retry_after, message },
            "overloaded" => LlmError::Overloaded { retry_after, message },
            "server" => LlmError::Server {
                status,
                message,
                retry_after,
            },
            "bad_request" => LlmError::BadRequest { status, message },
            "auth" => LlmError::Auth { status, message },
            "timeout" => LlmError::Timeout(message),
            "connection" => LlmError::Connection(message),
            "stream_dropped" => LlmError::StreamDropped(message),
            "protocol" => LlmError::Protocol(message),
            "config" => LlmError::Config(message),
            "script" => LlmError::Script(message),
            "missing_key" => LlmError::MissingKey { var: message },
            _ => LlmError::Cassette(message),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a reader (or a
/// crash) sees the old file or the new one whole.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), LlmError> {
    let fail = |what: &str, e: std::io::Error| {
        LlmError::Cassette(format!("cannot {what} {} for the cassette: {e}", path.display()))
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("call");
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file =
        std::fs::File::create(&temporary).map_err(|e| fail("create a temporary file beside", e))?;
    file.write_all(bytes).map_err(|e| fail("write", e))?;
    file.sync_data().map_err(|e| fail("flush", e))?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(|e| fail("rename the temporary file to", e))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters and maps stay consistent whatever panicked while holding them.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Turns calls into keys: the attempt is the brief's own; repeats are counted per key.
#[derive(Debug, Default)]
struct KeyCounter {
    /// Per key without its repeat, how many calls had it.
    repeats: HashMap<CallKey, u32>,
}

impl KeyCounter {
    fn key(&mut self, meta: &CallMeta, turn: u32) -> CallKey {
        let mut key = CallKey {
            brief: meta.brief.clone().unwrap_or_else(|| "run".into()),
            attempt: meta.attempt,
            role: meta.role.clone().unwrap_or_else(|| "model".into()),
            turn,
            repeat: 0,
        };
        let seen = self.repeats.entry(key.clone()).or_insert(0);
        key.repeat = *seen;
        *seen = seen.saturating_add(1);
        key
    }
}

/// Every recorded call of the cassette in `dir`, with the file it came from; an unreadable or malformed file
/// is an error naming it.
pub fn load_calls(dir: &Path) -> Result<Vec<(PathBuf, RecordedCall)>, LlmError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| LlmError::Cassette(format!("cannot read the cassette {}: {e}", dir.display())))?;
    for entry in entries {
        let entry = entry
            .map_err(|e| LlmError::Cassette(format!("cannot read the cassette {}: {e}", dir.display())))?;
        let brief_dir = entry.path();
        if !brief_dir.is_dir() {
            continue;
        }
        let files = std::fs::read_dir(&brief_dir)
            .map_err(|e| LlmError::Cassette(format!("cannot read {}: {e}", brief_dir.display())))?;
        for file in files {
            let path = file
                .map_err(|e| LlmError::Cassette(format!("cannot read {}: {e}", brief_dir.display())))?
                .path();
            let hidden = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| n.starts_with('.'));
            if hidden || path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .map_err(|e| LlmError::Cassette(format!("cannot read {}: {e}", path.display())))?;
            let call: RecordedCall = serde_json::from_str(&text).map_err(|e| {
                LlmError::Cassette(format!(
                    "{}: not a recorded call ({e}); expected key, provider, request and outcome",
                    path.display()
                ))
            })?;
            out.push((path, call));
        }
    }
    out.sort_by(|a, b| a.1.key.cmp(&b.1.key));
    Ok(out)
}

/// Records every call of the providers it wraps into `<root>/<run>/`.
#[derive(Debug)]
pub struct Recorder {
    root: PathBuf,
    redactor: Redactor,
    runs: Mutex<HashMap<String, KeyCounter>>,
}

impl Recorder {
    /// Records under `root` (`.agency/cassettes`), redacting with `redactor`.
    pub fn new(root: impl Into<PathBuf>, redactor: Redactor) -> Arc<Self> {
        Arc::new(Self {
            root: root.into(),
            redactor,
            runs: Mutex::default(),
        })
    }

    /// The cassette directory of `run`.
    pub fn dir_of(&self, run: &str) -> PathBuf {
        self.root.join(run)
    }

    /// Starts the cassette of `manifest.run` (unless a recording of it already has one: a resumed run),
    /// its goal redacted like every call. Returns the cassette directory.
    pub fn start(&self, manifest: &Manifest) -> Result<PathBuf, LlmError> {
        let dir = self.dir_of(&manifest.run);
        if !dir.join(MANIFEST).is_file() {
            let mut manifest = manifest.clone();
            manifest.goal = self.redactor.redact(&manifest.goal).into_owned();
            manifest.write(&dir)?;
        }
        Ok(dir)
    }

    /// `inner`, with every call recorded.
    pub fn wrap(self: &Arc<Self>, inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Recording {
            inner,
            recorder: self.clone(),
        })
    }

    fn key(&self, meta: &CallMeta, turn: u32) -> (String, CallKey) {
        let run = meta.run.map(|r| r.to_string()).unwrap_or_else(|| "no-run".into());
        let key = lock(&self.runs).entry(run.clone()).or_default().key(meta, turn);
        (run, key)
    }

    fn write(&self, run: &str, call: &RecordedCall) -> Result<(), LlmError> {
        let json = serde_json::to_vec_pretty(call)
            .map_err(|e| LlmError::Cassette(format!("cannot encode the call {}: {e}", call.key)))?;
        write_atomically(&self.dir_of(run).join(call.key.file()), &json)
    }

    fn redacted<T: Serialize>(&self, value: &T) -> Result<Value, LlmError> {
        let mut json = serde_json::to_value(value)
            .map_err(|e| LlmError::Cassette(format!("cannot encode a call for the cassette: {e}")))?;
        self.redactor.redact_json(&mut json);
        Ok(json)
    }
}

/// A provider whose calls a [`Recorder`] writes down.
#[derive(Debug)]
struct Recording {
    inner: Arc<dyn Provider>,
    recorder: Arc<Recorder>,
}

impl Recording {
    async fn call(
        &self,
        request: &Request,
        sink: EventSink<'_>,
        cancel: &CancelToken,
    ) -> Result<Response, LlmError> {
        let result = self.inner.complete(request, sink, cancel).await;
        let outcome = match &result {
            Ok(response) => Outcome::Response(response.clone()),
            Err(error) => match RecordedError::of(error) {
                Some(recorded) => Outcome::Error(recorded),
                None => return result,
            },
        };
        // Keyed after the call: a cancelled call is not recorded and does not use up its key.
        let (run, key) = self.recorder.key(&request.meta, request.turn());
        let recorder = self.recorder.clone();
        let wire = WireRequest::of(self.inner.model(), request);
        let provider = self.inner.kind().to_owned();
        // Redacting and writing (with its fsync) take milliseconds for a long conversation: off the runner's
        // thread, so other agents go on meanwhile; awaited, so an answer is used only once it is recorded.
        let write = move || {
            let outcome: Outcome = serde_json::from_value(recorder.redacted(&outcome)?)
                .map_err(|e| LlmError::Cassette(format!("cannot encode the call {key}: {e}")))?;
            let call = RecordedCall {
                key,
                provider,
                request: recorder.redacted(&wire)?,
                outcome,
            };
            recorder.write(&run, &call)
        };
        tokio::task::spawn_blocking(write)
            .await
            .map_err(|e| LlmError::Cassette(format!("the cassette writer stopped: {e}")))??;
        result
    }
}

impl Provider for Recording {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn price(&self) -> Option<Price> {
        self.inner.price()
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.call(request, sink, cancel))
    }
}

/// Answers a run's calls from a cassette, offline, and stops at the first request that differs.
#[derive(Debug)]
pub struct Replayer {
    dir: PathBuf,
    manifest: Manifest,
    calls: HashMap<CallKey, (PathBuf, RecordedCall)>,
    used: Mutex<HashMap<CallKey, bool>>,
    live_root: String,
    redactor: Redactor,
    keys: Mutex<KeyCounter>,
    divergence: Mutex<Option<String>>,
    stop: CancelToken,
}

impl Replayer {
    /// Loads the cassette in `dir` to replay in the repository at `live_root`, redacting live requests with
    /// `redactor` (as the recording was) before they are compared.
    pub fn open(dir: &Path, live_root: &Path, redactor: Redactor) -> Result<Arc<Self>, LlmError> {
        let manifest = Manifest::read(dir)?;
        let mut calls = HashMap::new();
        for (path, call) in load_calls(dir)? {
            if let Some((first, _)) = calls.get(&call.key) {
                let first: &PathBuf = first;
                return Err(LlmError::Cassette(format!(
                    "{} and {} both record {}",
                    first.display(),
                    path.display(),
                    call.key
                )));
            }
            calls.insert(call.key.clone(), (path, call));
        }
        Ok(Arc::new(Self {
            dir: dir.to_path_buf(),
            manifest,
            used: Mutex::new(calls.keys().map(|k| (k.clone(), false)).collect()),
            calls,
            live_root: live_root.display().to_string(),
            redactor,
            keys: Mutex::default(),
            divergence: Mutex::default(),
            stop: CancelToken::new(),
        }))
    }

    /// The cassette's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// How many calls the cassette holds.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the cassette holds no call.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The recorded calls the replay has not asked for (yet), by key.
    pub fn unused(&self) -> Vec<CallKey> {
        let mut out: Vec<CallKey> = lock(&self.used)
            .iter()
            .filter(|(_, used)| !**used)
            .map(|(key, _)| key.clone())
            .collect();
        out.sort();
        out
    }

    /// Cancelled at the first divergence: drive the run with it (or a parent of it), so the run stops there.
    pub fn stop_token(&self) -> CancelToken {
        self.stop.clone()
    }

    /// The first request that differed from the recording, or that the recording never made, as a message.
    pub fn divergence(&self) -> Option<String> {
        lock(&self.divergence).clone()
    }

    /// A provider answering as `model` (the model the tier is configured with now) from this cassette.
    pub fn provider(self: &Arc<Self>, model: impl Into<String>) -> Arc<dyn Provider> {
        Arc::new(Replaying {
            replayer: self.clone(),
            model: model.into(),
        })
    }

    fn diverged(&self, message: String) -> LlmError {
        let mut slot = lock(&self.divergence);
        if slot.is_none() {
            *slot = Some(message.clone());
        }
        drop(slot);
        self.stop.cancel();
        LlmError::Cassette(message)
    }

    fn answer(&self, model: &str, request: &Request) -> Result<Response, LlmError> {
        let key = lock(&self.keys).key(&request.meta, request.turn());
        let Some((path, recorded)) = self.calls.get(&key) else {
            let same_brief = self.calls.keys().filter(|k| k.brief == key.brief).count();
            return Err(self.diverged(format!(
                "replay diverged: the recorded run made no call for {key} (it recorded {same_brief} calls for \
                 that brief, {} in all, in {})",
                self.calls.len(),
                self.dir.display()
            )));
        };
        lock(&self.used).insert(key.clone(), true);
        let mut live = serde_json::to_value(WireRequest::of(model, request))
            .map_err(|e| LlmError::Cassette(format!("cannot encode the request {key}: {e}")))?;
        self.redactor.redact_json(&mut live);
        let mut then = recorded.request.clone();
        let substitutions = self.substitutions(request);
        normalise(&mut live, &substitutions);
        normalise(&mut then, &substitutions);
        if let Some(diff) = first_difference("request", &then, &live) {
            return Err(self.diverged(format!(
                "replay diverged at {key}: the request differs from the recorded one ({}):\n{diff}",
                path.display()
            )));
        }
        match &recorded.outcome {
            Outcome::Response(response) => Ok(response.clone()),
            Outcome::Error(error) => Err(error.to_error()),
        }
    }

    /// Literal replacements made before comparing, longest first: both roots, both runs' ids.
    fn substitutions(&self, request: &Request) -> Vec<(String, &'static str)> {
        let mut out = vec![
            (self.manifest.root.clone(), "<root>"),
            (self.live_root.clone(), "<root>"),
        ];
        let mut runs = vec![self.manifest.run.clone()];
        if let Some(run) = request.meta.run {
            runs.push(run.to_string());
        }
        for run in runs {
            let simple: String = run.chars().filter(|c| *c != '-').collect();
            if simple.len() == 32 {
                out.push((simple[24..].to_string(), "<run>"));
                out.push((simple, "<run>"));
            }
            out.push((run, "<run>"));
        }
        out.retain(|(from, _)| !from.is_empty());
        out.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        out
    }
}

/// Normalises every string in `value`: `substitutions` first, then UUIDs, object ids and timestamps.
fn normalise(value: &mut Value, substitutions: &[(String, &'static str)]) {
    match value {
        Value::String(text) => {
            let mut out = text.clone();
            for (from, to) in substitutions {
                if out.contains(from.as_str()) {
                    out = out.replace(from.as_str(), to);
                }
            }
            *text = patterns().iter().fold(out, |acc, (pattern, to)| {
                pattern.replace_all(&acc, *to).into_owned()
            });
        }
        Value::Array(items) => items.iter_mut().for_each(|i| normalise(i, substitutions)),
        Value::Object(map) => map.values_mut().for_each(|v| normalise(v, substitutions)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn patterns() -> &'static [(regex::Regex, &'static str)] {
    static PATTERNS: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> = std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
                "<uuid>",
            ),
            (r"\b[0-9a-f]{40}\b", "<sha>"),
            (r"\b[0-9a-f]{32}\b", "<uuid>"),
            (
                r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\b",
                "<time>",
            ),
            // How long a command took, in the verify results a judge is shown.
            (r"\b\d+(\.\d+)?(ms|s)\b", "<duration>"),
        ]
        .into_iter()
        // The patterns are constants; one that did not compile would only normalise less.
        .filter_map(|(pattern, to)| regex::Regex::new(pattern).ok().map(|r| (r, to)))
        .collect()
    })
}

/// Where `then` (recorded) and `now` (live) first differ, as a short diff; `None` when they are equal.
fn first_difference(path: &str, then: &Value, now: &Value) -> Option<String> {
    match (then, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(&format!("{path}.{k}"), x, y),
                (x, y) => Some(format!(
                    "  {path}.{k}:\n  - recorded: {}\n  + now:      {}",
                    short_json(x),
                    short_json(y)
                )),
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            if let Some(diff) = a
                .iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
            {
                return Some(diff);
            }
            (a.len() != b.len()).then(|| {
                let extra = a.get(b.len()).or_else(|| b.get(a.len()));
                format!(
                    "  {path}: {} items recorded, {} now; the first unmatched: {}",
                    a.len(),
                    b.len(),
                    short_json(extra)
                )
            })
        }
        (Value::String(a), Value::String(b)) if a != b => Some(text_difference(path, a, b)),
        (a, b) if a != b => Some(format!(
            "  {path}:\n  - recorded: {}\n  + now:      {}",
            short_json(Some(a)),
            short_json(Some(b))
        )),
        _ => None,
    }
}

/// The first differing line of two texts, with the line before it.
fn text_difference(path: &str, then: &str, now: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (then.lines().collect(), now.lines().collect());
    let line = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let mut out = format!("  {path}, line {}:", line + 1);
    if let Some(before) = line.checked_sub(1).and_then(|i| a.get(i)) {
        out.push_str(&format!("\n    {}", clip(before)));
    }
    out.push_str(&format!(
        "\n  - recorded: {}\n  + now:      {}",
        a.get(line).map_or("(no such line)".into(), |l| clip(l)),
        b.get(line).map_or("(no such line)".into(), |l| clip(l)),
    ));
    out
}

fn clip(text: &str) -> String {
    const MAX: usize = 160;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

fn short_json(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(v) => clip(&v.to_string()),
    }
}

/// A provider answering from a [`Replayer`]'s cassette.
#[derive(Debug)]
struct Replaying {
    replayer: Arc<Replayer>,
    model: String,
}

impl Provider for Replaying {
    fn kind(&self) -> &'static str {
        "replay"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            let response = self.replayer.answer(&self.model, request)?;
            stream(&response, sink);
            Ok(response)
        })
    }
}

/// The events a live stream of `response` would have sent, for a caller that watches them.
fn stream(response: &Response, sink: EventSink<'_>) {
    for block in &response.content {
        match block {
            Block::Text { text } => sink(StreamEvent::TextDelta(text.clone())),
            Block::Thinking { thinking, .. } => sink(StreamEvent::ThinkingDelta(thinking.clone())),
            Block::ToolUse { id, name, input } => {
                sink(StreamEvent::ToolUseStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                sink(StreamEvent::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                });
            }
            Block::RedactedThinking { .. } | Block::ToolResult { .. } => {}
        }
    }
    sink(StreamEvent::Stop(response.stop_reason.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{StopReason, Usage};
    use crate::provider::complete;
    use crate::scripted::{Script, ScriptedProvider};
    use agency_core::{BriefId, RunId};

    const SCRIPT: &str = "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{name: read_file, input: {path: a.txt}}]\n      - text: done\n  - role: judge\n    reply: {error: {kind: overloaded, message: busy}}\n";

    fn request(run: RunId, brief: BriefId, role: &str, messages: Vec<Message>) -> Request {
        Request {
            system: vec!["You are careful.".into(), "Brief: fix a.txt".into()],
            messages,
            max_tokens: 1000,
            meta: CallMeta {
                run: Some(run),
                brief_id: Some(brief),
                brief: Some("ws-a/t4/Fix a".into()),
                role: Some(role.into()),
                ..CallMeta::default()
            },
            ..Request::default()
        }
    }

    fn recorded_run(root: &Path, secret: &str) -> (RunId, Vec<Request>) {
        let redactor = Redactor::new([("MY_TOKEN".to_string(), secret.to_string())]);
        let recorder = Recorder::new(root.join("cassettes"), redactor);
        let provider = recorder.wrap(Arc::new(ScriptedProvider::new(
            Script::from_yaml(SCRIPT).unwrap(),
        )));
        let (run, brief) = (RunId::new(), BriefId::new());
        let first = request(
            run,
            brief,
            "implementer",
            vec![Message::user(format!(
                "start; the token is {secret}; at {}",
                root.display()
            ))],
        );
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let answer = rt.block_on(complete(provider.as_ref(), &first)).unwrap();
        let mut second = first.clone();
        second.messages.push(Message::assistant(answer.content.clone()));
        second
            .messages
            .push(Message::tool_results(vec![Block::tool_result("t1", "a", false)]));
        rt.block_on(complete(provider.as_ref(), &second)).unwrap();
        let judge = request(run, brief, "judge", vec![Message::user("judge it")]);
        let err = rt.block_on(complete(provider.as_ref(), &judge)).unwrap_err();
        assert!(matches!(err, LlmError::Overloaded { .. }), "{err}");
        Manifest {
            format: FORMAT,
            run: run.to_string(),
            goal: "fix a".into(),
            root: root.display().to_string(),
            auto_approve: true,
        }
        .write(&root.join("cassettes").join(run.to_string()))
        .unwrap();
        (run, vec![first, second, judge])
    }

    #[test]
    fn a_recording_is_one_redacted_file_per_call_keyed_by_brief_attempt_role_and_turn() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-value-of-the-token";
        let (run, _) = recorded_run(dir.path(), secret);
        let cassette = dir.path().join("cassettes").join(run.to_string());
        let calls = load_calls(&cassette).unwrap();
        let keys: Vec<String> = calls.iter().map(|(_, c)| c.key.to_string()).collect();
        assert_eq!(
            keys,
            [
                "brief ws-a/t4/Fix a, attempt 0, role implementer, turn 1",
                "brief ws-a/t4/Fix a, attempt 0, role implementer, turn 2",
                "brief ws-a/t4/Fix a, attempt 0, role judge, turn 1",
            ]
        );
        let file = calls[0].0.strip_prefix(&cassette).unwrap().to_path_buf();
        assert_eq!(
            file,
            PathBuf::from(brief_dir("ws-a/t4/Fix a")).join("a0-implementer-t001.json")
        );
        assert!(file.to_str().unwrap().starts_with("ws-a-t4-fix-a-"));
        for (path, _) in &calls {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(!text.contains(secret), "{text}");
        }
        assert!(
            std::fs::read_to_string(&calls[0].0)
                .unwrap()
                .contains("[redacted:MY_TOKEN]")
        );
        assert!(matches!(calls[2].1.outcome, Outcome::Error(ref e) if e.kind == "overloaded"));
    }

    #[test]
    fn a_replay_answers_from_the_cassette_and_reports_the_first_difference() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-value-of-the-token";
        let (run, requests) = recorded_run(dir.path(), secret);
        let cassette = dir.path().join("cassettes").join(run.to_string());
        let redactor = || Redactor::new([("MY_TOKEN".to_string(), secret.to_string())]);
        // Another run in another place: ids and roots differ, which the comparison ignores.
        let other_root = dir.path().join("elsewhere");
        let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
        assert_eq!(replayer.len(), 3);
        let provider = replayer.provider("scripted");
        let (run2, brief2) = (RunId::new(), BriefId::new());
        let relocate = |r: &Request| {
            let mut r = r.clone();
            r.meta.run = Some(run2);
            r.meta.brief_id = Some(brief2);
            for m in &mut r.messages {
                for b in &mut m.content {
                    if let Block::Text { text } = b {
                        *text = text.replace(
                            &dir.path().display().to_string(),
                            &other_root.display().to_string(),
                        );
                    }
                }
            }
            r
        };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let first = rt
            .block_on(complete(provider.as_ref(), &relocate(&requests[0])))
            .unwrap();
        assert_eq!(first.tool_calls().next().map(|c| c.1), Some("read_file"));
        let second = rt
            .block_on(complete(provider.as_ref(), &relocate(&requests[1])))
            .unwrap();
        assert_eq!(second.text(), "done");
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        assert_ne!(second.usage, Usage::default());
        let err = rt
            .block_on(complete(provider.as_ref(), &relocate(&requests[2])))
            .unwrap_err();
        assert!(matches!(err, LlmError::Overloaded { .. }), "{err}");
        assert!(replayer.divergence().is_none());
        assert!(replayer.unused().is_empty());

        // A changed system prompt: the replay stops there and says where and what.
        let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
        let provider = replayer.provider("scripted");
        let mut changed = relocate(&requests[0]);
        changed.system[1] = "Brief: fix b.txt".into();
        let err = rt.block_on(complete(provider.as_ref(), &changed)).unwrap_err();
        let message = replayer.divergence().unwrap();
        assert_eq!(err, LlmError::Cassette(message.clone()));
        assert!(
            message
                .starts_with("replay diverged at brief ws-a/t4/Fix a, attempt 0, role implementer, turn 1"),
            "{message}"
        );
        assert!(message.contains("request.system[1], line 1:"), "{message}");
        assert!(message.contains("- recorded: Brief: fix a.txt"), "{message}");
        assert!(message.contains("+ now:      Brief: fix b.txt"), "{message}");
        assert!(replayer.stop_token().is_cancelled());

        // A call the recording never made.
        let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
        let provider = replayer.provider("scripted");
        let mut unknown = relocate(&requests[0]);
        unknown.meta.role = Some("planner".into());
        rt.block_on(complete(provider.as_ref(), &unknown)).unwrap_err();
        let message = replayer.divergence().unwrap();
        assert!(
            message.contains("made no call for brief ws-a/t4/Fix a, attempt 0, role planner, turn 1"),
            "{message}"
        );
    }

    #[test]
    fn a_retry_is_the_next_attempt_and_a_second_review_a_repeat() {
        let mut counter = KeyCounter::default();
        let meta = |attempt: u32| CallMeta {
            brief_id: Some(BriefId::new()),
            brief: Some("ws/t4/x".into()),
            role: Some("teachback-reviewer".into()),
            attempt,
            ..CallMeta::default()
        };
        assert_eq!(counter.key(&meta(0), 1).attempt, 0);
        let again = counter.key(&meta(0), 1);
        assert_eq!((again.attempt, again.repeat), (0, 1));
        assert!(
            again
                .file()
                .to_str()
                .unwrap()
                .ends_with("a0-teachback-reviewer-t001-r1.json")
        );
        // The attempt is the brief's word, not a count of the brief ids seen: a retry recorded after a
        // resume keys on its own attempt.
        let retried = counter.key(&meta(2), 1);
        assert_eq!((retried.attempt, retried.repeat), (2, 0));
        assert!(retried.to_string().contains("attempt 2"), "{retried}");
        let unnamed = counter.key(&CallMeta::default(), 1);
        assert_eq!((unnamed.brief.as_str(), unnamed.attempt), ("run", 0));
    }

    #[test]
    fn normalising_ignores_ids_hashes_and_times_only() {
        let subs = vec![("/tmp/work".to_string(), "<root>")];
        let mut value = serde_json::json!([
            "at /tmp/work/src, commit 0123456789abcdef0123456789abcdef01234567",
            "brief 4a7e1c52-0a4b-4c7e-9d3e-1f2a3b4c5d6e at 2026-11-26T23:18:00Z",
            "keep 1234 and deadbeef",
            "exit 0 in 1.0s (250ms)",
        ]);
        normalise(&mut value, &subs);
        assert_eq!(
            value,
            serde_json::json!([
                "at <root>/src, commit <sha>",
                "brief <uuid> at <time>",
                "keep 1234 and deadbeef",
                "exit 0 in <duration> (<duration>)",
            ])
        );
    }

    #[test]
    fn a_malformed_cassette_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = Replayer::open(dir.path(), dir.path(), Redactor::shapes_only()).unwrap_err();
        assert!(err.to_string().contains("cassette.json"), "{err}");
        Manifest {
            format: FORMAT,
            run: "r".into(),
            goal: "g".into(),
            root: "/".into(),
            auto_approve: false,
        }
        .write(dir.path())
        .unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b/a0-x-t001.json"), "{\"key\": 1}").unwrap();
        let err = Replayer::open(dir.path(), dir.path(), Redactor::shapes_only()).unwrap_err();
        let err = err.to_string();
        assert!(err.contains("a0-x-t001.json: not a recorded call"), "{err}");
    }
}
