//! `agency-web`: the dashboard. It shows runs, their briefs and gates, and the live log as it happens, and lets
//! the people who hold the dashboard's token approve or reject gates — the same `gate_approved` /
//! `gate_rejected` records `agency approve | reject` write, so a live runner acts on them within its poll.
//!
//! Everything under `/api/` needs `Authorization: Bearer <token>`; the page itself (`/`, `/app.js`,
//! `/app.css`) holds no data and reads the token from the URL's fragment, which browsers never send to a
//! server. A header rather than a cookie means another site cannot make a browser act on the dashboard
//! (no cross-site request carries it), and no CORS headers are sent, so other origins cannot read it either.
//! Agents' text reaches the page only as text nodes, never as markup.
//!
//! The server reads the blackboard through [`Blackboard`], so it serves a SQLite run on one machine and a
//! PostgreSQL blackboard shared by several runners alike. Blackboard calls block; they run on tokio's
//! blocking pool, never on the event loop.

mod api;
mod auth;
mod error;
mod page;
mod review;
mod stream;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agency_store::Blackboard;
use axum::Router;
use axum::routing::{get, post};

pub use auth::{MIN_TOKEN_LEN, Token, TokenError};

/// The dashboard over one blackboard.
#[derive(Clone)]
pub struct Dashboard {
    store: Arc<dyn Blackboard>,
    token: Token,
    poll: Duration,
    /// The `.agency` directory whose runners are poked after a decision.
    runners_in: Option<PathBuf>,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("token", &self.token)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// A dashboard over `store` whose actions need `token`. Its live log shows an event as
    /// `agency watch --verbose` prints it (`agency_render::log`).
    pub fn new(store: Arc<dyn Blackboard>, token: Token) -> Self {
        Dashboard {
            store,
            token,
            // A look costs one indexed read; 50 ms keeps an event's way to the screen under the 100 ms target
            // (docs/performance.md) at about 20 reads a second per open page.
            poll: Duration::from_millis(50),
            runners_in: None,
        }
    }

    /// After every gate decision made through the dashboard, pokes the runners serving in `agency_dir`
    /// (`.agency/gate/`), so one waiting on the decision acts at once, as after `agency approve`, rather
    /// than at its next poll. Best effort: a runner not reached still sees the decision when it polls.
    pub fn with_runners_in(mut self, agency_dir: PathBuf) -> Self {
        self.runners_in = Some(agency_dir);
        self
    }

    /// How often a live log looks for new events (50 ms by default).
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// The routes: the page, and the token-guarded API.
    pub fn router(self) -> Router {
        Router::new()
            .route("/", get(page::index))
            .route("/app.js", get(page::script))
            .route("/app.css", get(page::style))
            .route("/api/runs", get(api::runs))
            .route("/api/runs/{run}", get(api::run))
            .route("/api/runs/{run}/events", get(api::events))
            .route("/api/runs/{run}/stream", get(stream::live))
            .route("/api/runs/{run}/review", get(review::run_review))
            .route("/api/runs/{run}/briefs/{brief}", get(review::brief_review))
            .route("/api/runs/{run}/diff/{target}", get(review::branch_diff))
            .route("/api/gates/{gate}/approve", post(api::approve))
            .route("/api/gates/{gate}/reject", post(api::reject))
            .fallback(api::not_found)
            .layer(axum::middleware::map_response(page::security_headers))
            .with_state(self)
    }

    /// Serves on `listener` until `shutdown` completes.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
    }
}
