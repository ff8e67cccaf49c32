//! Ctrl-C, SIGTERM and SIGHUP for a process that drives agents.
//!
//! Every agent runs in its own process group (so a timeout can end its whole tree), so the terminal's
//! SIGINT reaches only agency, and a runner that simply died would leave Claude Code, Codex or a command
//! agent running until a resumed runner stops it (`agency_engine::leftovers`). Instead the first signal
//! cancels the runner's token: it stops its agents, gives their briefs back, and returns, and the run stays
//! resumable. A second signal ends the process at once, leaving its agents to the resumed runner. SIGHUP
//! (the terminal closed, an ssh session dropped) is one of them: its default action would end the runner
//! on the spot, agents and all left running.

use std::io::Write;

use agency_llm::CancelToken;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The exit status of a command stopped by a signal it handled (128 + SIGINT, as shells report Ctrl-C).
pub const INTERRUPTED_EXIT: u8 = 130;

/// Cancels `cancel` on the first SIGINT, SIGTERM or SIGHUP and exits on the second. Call inside the runtime
/// that drives the run; the listener ends with it.
pub fn cancel_on_signal(cancel: CancelToken) -> std::io::Result<()> {
    let mut signals = Signals {
        interrupt: signal(SignalKind::interrupt())?,
        terminate: signal(SignalKind::terminate())?,
        hangup: signal(SignalKind::hangup())?,
    };
    tokio::spawn(async move {
        signals.next().await;
        cancel.cancel();
        // Said at best: a runner whose terminal or log reader is gone (a closed pipe, a dropped ssh session)
        // must stop all the same. `eprintln!` panics there, which ended this listener before it cancelled
        // the run and left the process deaf to every signal after.
        let _ = writeln!(
            std::io::stderr(),
            "stopping: the runner stops its agents and gives their briefs back (again to quit at once)"
        );
        signals.next().await;
        std::process::exit(i32::from(INTERRUPTED_EXIT));
    });
    Ok(())
}

/// The signals that stop a runner.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Waits for the next of them, whichever comes first.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}
