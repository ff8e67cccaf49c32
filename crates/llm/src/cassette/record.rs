//! Recording: a provider wrapper that writes every call, redacted, to the run's cassette.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agency_core::redact::Redactor;
use serde::Serialize;
use serde_json::Value;

use super::{
    CallKey, KeyCounter, MANIFEST, Manifest, Outcome, RecordedCall, RecordedError, SentRequest, lock,
    write_atomically,
};
use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{CallMeta, Request, Response};
use crate::price::Price;
use crate::provider::{BoxFuture, EventSink, Provider};

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
        // Encoded here, where the request is lent; redacted off the thread with the answer.
        let mut sent = SentRequest::of(self.inner.model(), request).to_json()?;
        let provider = self.inner.kind().to_owned();
        // Redacting and writing (with its fsync) take milliseconds for a long conversation: off the runner's
        // thread, so other agents go on meanwhile; awaited, so an answer is used only once it is recorded.
        let write = move || {
            let outcome: Outcome = serde_json::from_value(recorder.redacted(&outcome)?)
                .map_err(|e| LlmError::Cassette(format!("cannot encode the call {key}: {e}")))?;
            recorder.redactor.redact_json(&mut sent);
            let call = RecordedCall {
                key,
                provider,
                request: sent,
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
