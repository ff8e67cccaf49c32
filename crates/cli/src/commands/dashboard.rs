//! `agency dashboard`: serves the web dashboard over this repository's blackboard — runs, briefs, gates and
//! the live log in a browser, and gate decisions for whoever holds the token. It listens on loopback unless
//! told otherwise, and prints the one URL that carries the token.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use agency_store::Blackboard;
use agency_web::{Dashboard, Token};

use crate::commands::Context;
use crate::error::{CommandError, CommandResult};

/// The variable that sets the dashboard's token (otherwise a fresh one is made at each start).
pub const ENV_TOKEN: &str = "AGENCY_DASHBOARD_TOKEN";

/// `agency dashboard [--listen ADDR]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to listen. The default is loopback only; any other address is reachable from the network
    /// (every action still needs the token).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR")]
    pub listen: SocketAddr,
}

/// Runs `agency dashboard` until it is stopped.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let store: Arc<dyn Blackboard> = ctx.open_store()?;
    let token = match std::env::var(ENV_TOKEN) {
        Ok(text) if !text.is_empty() => {
            Token::parse(&text).map_err(|e| CommandError::input(format!("{ENV_TOKEN}: {e}")))?
        }
        _ => Token::generate(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::internal(format!("cannot start the dashboard: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| CommandError::input(format!("--listen {}: {e}", args.listen)))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: the dashboard listens on {addr}, reachable from the network over plain HTTP; \
                 anyone who sees the token can approve gates"
            );
        }
        // Written once, and a closed stdout (`agency dashboard | head -1`) must not stop the server.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dashboard: http://{addr}/#token={}", token.reveal());
        let _ = writeln!(
            out,
            "open it in a browser; every action needs the token in that URL (Ctrl-C stops it)"
        );
        let _ = out.flush();
        drop(out);
        // A runner waiting on a gate decided here is woken at once, as `agency approve` wakes it.
        let agency_dir = ctx
            .workspace()
            .ok()
            .map(|ws| ws.root.join(crate::workspace::AGENCY_DIR));
        let dashboard = Dashboard::new(store, token);
        let dashboard = match agency_dir {
            Some(dir) => dashboard.with_runners_in(dir),
            None => dashboard,
        };
        dashboard
            .serve(listener, std::future::pending())
            .await
            .map_err(|e| CommandError::internal(format!("the dashboard stopped: {e}")))
    })
}
