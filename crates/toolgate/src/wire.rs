//! The gate service's protocol, as its clients speak it: one JSON object per line each way, one request per
//! connection over the runner's unix socket ([`Request`]; the answer is an object, `{"error": ...}` when
//! refused). The service itself is the runner's (`agency_cli::gate_service`); an agent's hook, `agency
//! teachback submit|wait` and `agency amendment propose` inside a run use [`request`].

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agency_core::Teachback;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::answer::{self, Answer};
use crate::locate::{GateEnv, HookEnv};

/// The directory under `.agency/` holding the runners' gate-service sockets (`<pid>.sock`), and pointers
/// (`<pid>.at`) to those bound elsewhere because the path was too long for a socket.
pub const SOCKET_DIR: &str = "gate";

/// One request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Look at the blackboard now (a human decided something).
    Poke,
    /// Answer a hook event: `{"code", "stdout", "stderr"}`, what `agency hook` writes.
    Hook {
        /// The brief the agent works on (its full id).
        brief: String,
        /// The agent's capability.
        token: String,
        /// The event as the client sent it.
        event: Value,
    },
    /// Submit a teachback: `{"state", "cursor", "title"}`.
    Submit {
        /// The brief (full id).
        brief: String,
        /// The agent's capability.
        token: String,
        /// The teachback.
        teachback: Teachback,
    },
    /// The brief's teachback state and the message of its latest review after event `after`:
    /// `{"state", "message"}` (`message` null when there is none).
    Review {
        /// The brief (full id).
        brief: String,
        /// The agent's capability.
        token: String,
        /// Only reviews recorded after this event sequence number.
        after: i64,
    },
    /// Propose a path amendment for the brief's own workstream (`agency amendment propose`):
    /// `{"seq", "message"}`; a refusal names what is wrong.
    Amend {
        /// The brief (full id).
        brief: String,
        /// The agent's capability.
        token: String,
        /// Why the path should change.
        reason: String,
        /// The change (its workstream empty for the brief's own).
        change: agency_core::event::payload::PathChange,
    },
}

/// Sends `request` to the service at `socket` and returns its answer; an `{"error": ...}` answer is an
/// error. `timeout` bounds the whole exchange.
pub fn request(socket: &Path, request: &Request, timeout: Duration) -> Result<Value, String> {
    let stream =
        UnixStream::connect(socket).map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut body = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    body.push(b'\n');
    (&stream)
        .write_all(&body)
        .map_err(|e| format!("cannot send to {}: {e}", socket.display()))?;
    let mut line = Vec::new();
    BufReader::new(&stream)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("no answer from {}: {e}", socket.display()))?;
    let answer: Value = serde_json::from_slice(&line)
        .map_err(|e| format!("the answer from {} is not JSON ({e})", socket.display()))?;
    match answer.get("error").and_then(Value::as_str) {
        Some(error) => Err(error.to_owned()),
        None => Ok(answer),
    }
}

/// How long the hook waits for the gate service: under the 30 s the runtimes give the hook.
const SERVICE_TIMEOUT: Duration = Duration::from_secs(25);

/// Forwards a hook's `input` to the runner's gate service, writes its answer on stdout and stderr, and
/// returns the exit code. Fails closed: when the service cannot be reached or answers nonsense, the call is
/// denied with a reason that says so.
pub fn ask_the_service(gate: &GateEnv, env: &HookEnv, input: &[u8]) -> u8 {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    let event: Value = match serde_json::from_slice(input) {
        Ok(event) => event,
        Err(e) => {
            let answer = crate::unreadable(env, &format!("hook input is not JSON ({e})"));
            return answer::write(&answer, &mut out, &mut err);
        }
    };
    let request = Request::Hook {
        brief: env.brief.clone().unwrap_or_default(),
        token: gate.token.clone(),
        event,
    };
    let answered = self::request(&gate.socket, &request, SERVICE_TIMEOUT).and_then(|a| {
        let code = a["code"].as_u64().and_then(|c| u8::try_from(c).ok());
        match (code, a["stdout"].as_str(), a["stderr"].as_str()) {
            (Some(code), Some(stdout), Some(stderr)) => Ok((code, stdout.to_owned(), stderr.to_owned())),
            _ => Err(format!("the gate service's answer is not a hook answer: {a}")),
        }
    });
    // The service keeps its answer as the record the runner audits the agent's calls against; nothing is
    // written here, inside the agent's sandbox.
    let code = match answered {
        Ok((code, stdout, stderr)) => {
            let _ = out.write_all(stdout.as_bytes());
            let _ = err.write_all(stderr.as_bytes());
            code
        }
        Err(problem) => answer::write(
            &Answer::Deny(format!(
                "agency hook: the runner's gate service ({}) did not answer: {problem}. This call is denied: in \
                 a run the gate fails closed when its service is down. Tell your lead.",
                gate.socket.display()
            )),
            &mut out,
            &mut err,
        ),
    };
    let _ = out.flush();
    code
}

/// Pokes every runner listening in `<agency dir>/gate`, so one waiting for the decision just written sees
/// it at once. Best effort and quiet: a runner not reached sees the decision at its next poll anyway. A
/// socket nobody listens on (its runner died) is removed.
pub fn poke_runners(agency_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(agency_dir.join(SOCKET_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let socket = match path.extension().and_then(|e| e.to_str()) {
            Some("sock") => path.clone(),
            Some("at") => match std::fs::read(&path) {
                Ok(bytes) => PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()),
                Err(_) => continue,
            },
            _ => continue,
        };
        match UnixStream::connect(&socket) {
            Ok(stream) => {
                let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
                let _ = (&stream).write_all(b"{\"op\":\"poke\"}\n");
            }
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
                let _ = std::fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
}
