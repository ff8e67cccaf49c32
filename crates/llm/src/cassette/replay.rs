//! Replaying: a provider that answers from a cassette, offline, after comparing each request with the
//! recorded one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agency_core::redact::Redactor;

use super::compare::{first_difference, normalise};
use super::{CallKey, KeyCounter, Manifest, Outcome, RecordedCall, SentRequest, load_calls, lock};
use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{Block, Request, Response, StreamEvent};
use crate::provider::{BoxFuture, EventSink, Provider};

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
        let mut live = SentRequest::of(model, request).to_json()?;
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
