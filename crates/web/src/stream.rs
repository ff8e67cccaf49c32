//! `GET /api/runs/{run}/stream?after=N`: a run's events as server-sent events, as they are written. Each
//! event is one `event: agency` message whose id is its sequence number (so a client that reconnects with
//! `Last-Event-ID` or `?after=` misses nothing) and whose data is the same JSON as `/events` returns. When
//! the run has ended and every event was sent, one `event: end` closes the stream.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agency_core::RunId;
use agency_store::Blackboard;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream;

use crate::Dashboard;
use crate::api::{EventRow, Page, blocking};
use crate::auth::Authorized;
use crate::error::ApiError;

/// Events read per blackboard call.
const BATCH: usize = 200;

/// Where one client's tail stands.
struct Tail {
    store: Arc<dyn Blackboard>,
    run: RunId,
    after: i64,
    poll: Duration,
    ready: VecDeque<SseEvent>,
    finished: bool,
}

/// What one look at the blackboard found.
enum Found {
    Events(Vec<agency_core::Event>),
    Nothing { ended: bool },
}

impl Tail {
    async fn look(&self) -> Result<Found, ApiError> {
        let (store, run, after) = (self.store.clone(), self.run, self.after);
        blocking(move || {
            // The status is read before the events: a run that ended after this read still gets its last
            // events sent on the next look.
            let ended = store.get_run(run)?.status.is_terminal();
            let events = store.events_after(Some(run), after, BATCH)?;
            Ok(if events.is_empty() {
                Found::Nothing { ended }
            } else {
                Found::Events(events)
            })
        })
        .await
    }

    /// The next message, waiting for one when there is none yet; `None` ends the stream.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(ready) = self.ready.pop_front() {
                return Some(ready);
            }
            if self.finished {
                return None;
            }
            match self.look().await {
                Ok(Found::Events(events)) => {
                    for event in events {
                        self.after = event.seq;
                        let id = event.seq.to_string();
                        let row = EventRow::of(event);
                        let data = serde_json::to_string(&row).unwrap_or_default();
                        self.ready
                            .push_back(SseEvent::default().event("agency").id(id).data(data));
                    }
                }
                Ok(Found::Nothing { ended: true }) => {
                    self.finished = true;
                    return Some(SseEvent::default().event("end").data("the run has ended"));
                }
                Ok(Found::Nothing { ended: false }) => tokio::time::sleep(self.poll).await,
                Err(err) => {
                    self.finished = true;
                    return Some(SseEvent::default().event("error").data(err.message()));
                }
            }
        }
    }
}

/// The live log of one run.
pub async fn live(
    State(d): State<Dashboard>,
    _: Authorized,
    Path(run): Path<String>,
    Query(page): Query<Page>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let store = d.store.clone();
    let id = blocking(move || Ok(store.resolve_run(&run)?)).await?;
    // A reconnecting EventSource says where it stopped; that wins over the query it was opened with.
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(page.after);
    let tail = Tail {
        store: d.store.clone(),
        run: id,
        after,
        poll: d.poll,
        ready: VecDeque::new(),
        finished: false,
    };
    let events = stream::unfold(tail, |mut tail| async move {
        let next = tail.next().await?;
        Some((Ok(next), tail))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
