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
//! The parts: `record` writes a cassette ([`Recorder`]), `replay` answers from one ([`Replayer`]), `compare`
//! normalises and diffs two requests, `error` keeps an [`LlmError`] in a file ([`RecordedError`]). A request
//! is written through a borrowed view of the [`Request`] (`SentRequest`), not a copy of it.
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

mod compare;
mod error;
mod record;
mod replay;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LlmError;
use crate::message::{CallMeta, Message, Request, Response, ToolChoice, ToolSpec};

pub use error::RecordedError;
pub use record::Recorder;
pub use replay::Replayer;

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

/// A request as the provider got it, borrowed: the model asked and the [`Request`] fields the model reads.
/// Its never-sent `meta` and its cache hint (`shared_system_blocks`) are left out. The JSON is the same as
/// format 1 has always written.
#[derive(Serialize)]
pub(crate) struct SentRequest<'a> {
    model: &'a str,
    system: &'a [String],
    messages: &'a [Message],
    tools: &'a [ToolSpec],
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a ToolChoice>,
}

impl<'a> SentRequest<'a> {
    pub(crate) fn of(model: &'a str, request: &'a Request) -> Self {
        Self {
            model,
            system: &request.system,
            messages: &request.messages,
            tools: &request.tools,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop: &request.stop,
            tool_choice: request.tool_choice.as_ref(),
        }
    }

    /// The request as JSON, to be redacted and compared or written.
    pub(crate) fn to_json(&self) -> Result<Value, LlmError> {
        serde_json::to_value(self)
            .map_err(|e| LlmError::Cassette(format!("cannot encode a request for the cassette: {e}")))
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
