//! The dashboard in a real browser: headless Chromium, driven over its DevTools protocol, opens a scripted run
//! waiting at its plan gate, reads the plan's verify command on the page, approves the gate with the page's
//! button, sees the run finish with its branch, T1's summary, the timeline's marks, the cost table and chart
//! and a T2 record, and reviews a slice: its diff beside the verify run, the judge's verdict and transcript,
//! and its teachback with its review. Screenshots of the three are kept
//! under `target/tmp/dashboard-screenshots/` and checked to be far from blank. A second test measures how long
//! an event written to the blackboard takes to show on the page.
//!
//! Chromium is found as `$AGENCY_CHROMIUM`, or `chromium` / `chromium-browser` on `PATH` (`.ci/run` installs
//! Debian's). Without it both tests print a loud SKIPPED notice and pass, unless `AGENCY_REQUIRE_E2E=1`.
//!
//! The DevTools client is a small WebSocket client of its own (text frames, masked as a client must), so the
//! test needs no browser-automation dependency.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agency_core::event::{EventKind, NewEvent};
use agency_store::{Blackboard, NewRun, SqliteBlackboard};
use serde_json::{Value, json};

use crate::support::{Dashboard, Repo, finish};

/// The Chromium to drive, or `None` (after a loud notice) when there is none and CI does not require it.
fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("AGENCY_CHROMIUM").map(PathBuf::from);
    let on_path = || {
        let paths = std::env::var_os("PATH")?;
        std::env::split_paths(&paths)
            .flat_map(|dir| [dir.join("chromium"), dir.join("chromium-browser")])
            .find(|p| p.is_file())
    };
    if let Some(found) = named.filter(|p| p.is_file()).or_else(on_path) {
        return Some(found);
    }
    assert!(
        std::env::var("AGENCY_REQUIRE_E2E").as_deref() != Ok("1"),
        "AGENCY_REQUIRE_E2E=1 but Chromium is not installed: `apt-get install chromium` (see .ci/run) or set \
         AGENCY_CHROMIUM to its path"
    );
    // Written to the stderr handle, not through `eprintln!`, which the test harness captures and hides for a
    // test that passes: a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED: Chromium is not installed (no $AGENCY_CHROMIUM, no `chromium` on PATH), so the dashboard's \
         browser test did not run. `apt-get install chromium` (see .ci/run), or set AGENCY_REQUIRE_E2E=1 to make \
         this a failure. ***\n"
    );
    None
}

/// Headless Chromium; killed when the test ends, however it ends.
struct Browser {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    fn launch(program: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--window-size=1280,1400",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let port = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.kill();
                panic!("Chromium ended before it listened:\n{seen}");
            }
            seen.push_str(&line);
            if let Some(rest) = line.trim().strip_prefix("DevTools listening on ws://127.0.0.1:") {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        // Keep draining its stderr so a chatty browser never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Browser {
            child,
            port,
            _profile: profile,
        }
    }

    /// The DevTools connection to the browser's first page.
    fn page(&self) -> Page {
        let addr = format!("127.0.0.1:{}", self.port);
        let body = devtools_get(&addr, "/json/list");
        let targets: Vec<Value> = serde_json::from_str(&body).unwrap();
        let page = targets
            .iter()
            .find(|t| t["type"] == "page")
            .unwrap_or_else(|| panic!("no page target in {body}"));
        let url = page["webSocketDebuggerUrl"].as_str().unwrap();
        let path = url.split_once(&addr).unwrap().1;
        Page::connect(&addr, path)
    }
}

/// A GET of Chromium's DevTools HTTP endpoint, which keeps the connection open: the body is read by its
/// `Content-Length`.
fn devtools_get(addr: &str, path: &str) -> String {
    let mut stream = BufReader::new(TcpStream::connect(addr).unwrap());
    write!(stream.get_mut(), "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut length = 0;
    let mut status = String::new();
    stream.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "GET {path}: {status}");
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

/// One DevTools session over a WebSocket.
struct Page {
    socket: TcpStream,
    next_id: u64,
}

impl Page {
    fn connect(addr: &str, path: &str) -> Page {
        let mut socket = TcpStream::connect(addr).unwrap();
        write!(
            socket,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            socket.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        socket.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Page { socket, next_id: 0 }
    }

    fn send(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x5a, 0x17, 0xc3, 0x8e];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.socket.write_all(&frame).unwrap();
    }

    /// The next whole text message (continuation frames joined; pings answered).
    fn receive(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.socket.read_exact(&mut head).unwrap();
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
            let len = match head[1] & 0x7f {
                126 => {
                    let mut n = [0u8; 2];
                    self.socket.read_exact(&mut n).unwrap();
                    u64::from(u16::from_be_bytes(n))
                }
                127 => {
                    let mut n = [0u8; 8];
                    self.socket.read_exact(&mut n).unwrap();
                    u64::from_be_bytes(n)
                }
                n => u64::from(n),
            };
            let mut payload = vec![0u8; usize::try_from(len).unwrap()];
            self.socket.read_exact(&mut payload).unwrap();
            match opcode {
                0x8 => panic!("Chromium closed the DevTools connection"),
                0x9 => {
                    // A pong must be masked like every client frame.
                    let mut pong = vec![0x8a, 0x80 | payload.len() as u8, 0, 0, 0, 0];
                    pong.extend_from_slice(&payload);
                    self.socket.write_all(&pong).unwrap();
                }
                0xa => {}
                _ => {
                    message.extend_from_slice(&payload);
                    if fin {
                        return String::from_utf8(message).unwrap();
                    }
                }
            }
        }
    }

    /// Calls `method` and returns its result, skipping the events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "id": id, "method": method, "params": params }).to_string());
        loop {
            let reply: Value = serde_json::from_str(&self.receive()).unwrap();
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression on the page (promises awaited).
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {result}");
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it gives something other than null, false or ""; fails after `limit`. An
    /// expression that throws counts as "not yet": the page may still be loading (no element to read).
    fn wait_for(&mut self, expression: &str, what: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let result = self.call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            );
            let value = if result.get("exceptionDetails").is_some() {
                Value::Null
            } else {
                result["result"]["value"].clone()
            };
            if !matches!(&value, Value::Null | Value::Bool(false)) && value != "" {
                return value;
            }
            if Instant::now() > deadline {
                let status = self.eval("document.getElementById('status').textContent");
                panic!("waited {limit:?} for {what}; the page's status line: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A PNG of the page as it is drawn, whole (not only the window), or of the element `clip` selects,
    /// saved to `path`; returns its size.
    fn screenshot(&mut self, path: &Path, clip: Option<&str>) -> usize {
        let mut params = json!({ "format": "png", "captureBeyondViewport": true });
        if let Some(selector) = clip {
            let rect = self.eval(&format!(
                "(() => {{ const r = document.querySelector({}).getBoundingClientRect(); \
                 return {{ x: r.left + scrollX - 8, y: r.top + scrollY - 8, width: r.width + 16, height: r.height + 16, scale: 1 }}; }})()",
                json!(selector)
            ));
            params["clip"] = rect;
        }
        let shot = self.call("Page.captureScreenshot", params);
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        std::fs::write(path, &png).unwrap();
        png.len()
    }
}

/// Standard base64 (the DevTools protocol's binary encoding).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= value(*c) << (18 - 6 * i);
        }
        let produced = chunk.len() * 6 / 8;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + produced]);
    }
    out
}

fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_reviewer_reads_the_plan_approves_it_in_the_browser_and_sees_the_branch() {
    let Some(program) = chromium() else { return };
    let (repo, runner, store, run) = crate::show::run_waiting_at_the_plan_gate();
    let dashboard = Dashboard::serve(&repo, &[]);
    let (addr, token) = (dashboard.addr.clone(), dashboard.token.clone());
    let browser = Browser::launch(&program);
    let mut page = browser.page();
    let dir = screenshot_dir();

    // A blank page's screenshot, the yardstick for "not blank".
    page.call("Page.enable", json!({}));
    let blank = page.screenshot(&dir.join("blank.png"), None);

    page.call(
        "Page.navigate",
        json!({ "url": format!("http://{addr}/#token={token}&run={}", run) }),
    );
    // The plan, rendered in the gate card: the workstream's verify command and failure mode, as text.
    let verify = page.wait_for(
        "(document.querySelector('.gate .verify-command') || {}).textContent",
        "the plan in the gate card",
        Duration::from_secs(30),
    );
    assert_eq!(verify, "sh test_arith.sh");
    let card = page.eval("document.querySelector('.gate').textContent");
    let card = card.as_str().unwrap();
    for expected in [
        "ws-arith — arithmetic  [backend, group A]",
        "t3 → t4 → t5",
        "8 (novelty 2, scope 2, uncertainty 2, risk 2) → orchestrate",
        "sh test_add.sh and sh test_mul.sh pass",
        "a debug marker left in mul.sh",
        "test_arith.sh",
    ] {
        assert!(
            card.contains(expected),
            "no `{expected}` in the gate card:\n{card}"
        );
    }
    // The token left the address bar as soon as the page took it.
    let href = page.eval("location.href");
    assert!(!href.as_str().unwrap().contains(&token), "{href}");
    let plan_gate = page.screenshot(&dir.join("plan-gate.png"), Some(".gate"));

    // Approve with the page's button: this gate and any the run opens after it, until the runner ends.
    let mut runner = runner;
    let deadline = Instant::now() + Duration::from_secs(120);
    while runner.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run did not finish");
        page.eval(
            "(() => { const b = document.querySelector('.gate .approve'); if (b) b.click(); return true; })()",
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, output) = finish(runner, Duration::from_secs(10));
    assert_eq!(code, Some(0), "{output}");
    let decided = store.list_gates(run).unwrap();
    assert!(
        decided
            .iter()
            .any(|g| g.decided_by.as_deref() == Some("dashboard")),
        "the page decided the gate: {decided:?}"
    );

    let status = page.eval("document.getElementById('status').textContent");
    assert!(
        !status.as_str().unwrap().contains("Could not"),
        "the page reported a failed decision: {status}"
    );

    // The finished run: its branch, T1's summary, the live log to its end.
    let branch = page.wait_for(
        "(() => { const b = document.getElementById('outcome-branch').textContent; \
         return !document.getElementById('outcome').hidden && b.startsWith('agency/') && b; })()",
        "the branch to merge",
        Duration::from_secs(30),
    );
    assert_eq!(branch, format!("agency/{}/integration", run.short()));
    page.wait_for(
        "document.querySelector('#log .end') !== null",
        "the live log's end",
        Duration::from_secs(30),
    );
    let log_at_end = page.eval(
        "(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight < 40; })()",
    );
    assert_eq!(log_at_end, true, "the live log box shows its end");
    let teachbacks = page.eval(
        "[...document.querySelectorAll('#briefs tbody tr')].map(r => r.children[0].textContent + ' ' + r.children[4].textContent).join('\\n')",
    );
    let teachbacks = teachbacks.as_str().unwrap();
    assert!(
        teachbacks.contains("t1 not needed (reads only)") && !teachbacks.contains("t1 pending"),
        "{teachbacks}"
    );
    let timeline_bars = page.eval("document.querySelectorAll('#timeline .bar').length");
    assert!(timeline_bars.as_u64().unwrap() >= 4, "{timeline_bars}");
    // The retry and the judge's rejection are marked on the timeline.
    let marks = page.eval("[...document.querySelectorAll('#timeline .mark')].map(m => m.title).join('\\n')");
    assert!(marks.as_str().unwrap().contains("failed"), "{marks}");
    // T1's summary and what to do with the branch (no forge in this repository).
    let summary = page.eval("document.getElementById('outcome-summary').textContent");
    let summary = summary.as_str().unwrap();
    assert!(
        !summary.is_empty() && summary != "(T1 recorded no summary)",
        "{summary}"
    );
    let pr = page.eval("document.getElementById('outcome-pr').textContent");
    assert!(pr.as_str().unwrap().starts_with("none opened"), "{pr}");
    // Cost per tier and per brief, with its chart: a bar per tier.
    let cost = page.eval("document.querySelector('#cost table').textContent");
    let cost = cost.as_str().unwrap();
    for expected in ["t1", "t4", "total", "fix-mul"] {
        assert!(
            cost.contains(expected),
            "no `{expected}` in the cost table:\n{cost}"
        );
    }
    let bars = page.eval("document.querySelectorAll('#cost svg.chart rect').length");
    assert!(bars.as_u64().unwrap() >= 2, "{bars}");
    // No T2 in this plan: no design records, and no empty section for them. Once one is recorded (written
    // here as T2 writes it), the page shows it as `agency show <run> architecture ws-arith` prints it, markup
    // and all as text.
    assert_eq!(page.eval("document.getElementById('views-panel').hidden"), true);
    let architecture = "# Arithmetic\nOne script per operator. <img src=x onerror=alert(1)>";
    store
        .put_artifact(agency_store::NewArtifact::new(
            run,
            "architecture/ws-arith",
            "text/markdown",
            architecture.as_bytes().to_vec(),
        ))
        .unwrap();
    page.eval("loadRun().then(() => true)");
    let views = page.eval("document.getElementById('views').textContent");
    let expected = agency_review::views::render(
        agency_review::views::View::Architecture,
        "ws-arith",
        Some(architecture),
    );
    assert_eq!(
        views.as_str().unwrap(),
        format!("ws-arith [view canonical architecture]{expected}")
    );
    assert_eq!(page.eval("document.querySelectorAll('#views img').length"), 0);
    let finished = page.screenshot(&dir.join("finished-run.png"), None);

    // A slice for review: fix-mul's first attempt, rejected by its judge. This script's slices are below
    // the teachback threshold, so its teachback and review are written here as a runner's own agent and
    // its reviewer write them: the document alone, no text.
    let first_mul = store
        .list_briefs(run)
        .unwrap()
        .into_iter()
        .find(|b| b.title == "fix-mul" && b.attempt == 0)
        .unwrap();
    for (kind, payload) in [
        (
            EventKind::TeachbackSubmitted,
            json!({ "teachback": { "understanding": "mul.sh must multiply its two arguments" },
                    "from": "pending", "to": "submitted", "via": "runner" }),
        ),
        (
            EventKind::TeachbackApproved,
            json!({ "reviewer": "t3", "note": "matches the contract", "from": "submitted", "to": "active" }),
        ),
    ] {
        store
            .append_event(NewEvent::new(run, kind, payload).brief(first_mul.id))
            .unwrap();
    }
    let opened = page.eval(
        "(() => { const row = [...document.querySelectorAll('#briefs tbody tr')].find(r => \
         r.children[2].textContent === 'fix-mul' && r.children[5].textContent === '0'); \
         if (!row) return false; row.querySelector('a').click(); return true; })()",
    );
    assert_eq!(opened, true);
    page.wait_for(
        "document.querySelector('#review .patch') !== null",
        "the slice's diff",
        Duration::from_secs(30),
    );
    let review = page.eval("document.getElementById('review').textContent");
    let review = review.as_str().unwrap();
    for expected in [
        "M mul.sh",
        "✓ `sh test_mul.sh` passed",
        "✗ rejected by judge",
        "LEFTOVER-DEBUG",
    ] {
        assert!(
            review.contains(expected),
            "no `{expected}` in the review:\n{review}"
        );
    }
    // The judge's transcript beside the diff, and the teachback with its review history.
    let transcript = page.eval(
        "[...document.querySelectorAll('#review .judgement details summary')].map(s => s.textContent).join(',')",
    );
    assert!(
        transcript.as_str().unwrap().contains("Transcript"),
        "{transcript}"
    );
    let teachback = page.eval("document.querySelector('#review .teachback').textContent");
    let teachback = teachback.as_str().unwrap();
    assert!(
        teachback.contains("mul.sh must multiply its two arguments")
            && teachback.contains("Approved by t3")
            && teachback.contains("matches the contract"),
        "the teachback and its review:\n{teachback}"
    );
    let coloured = page.eval("document.querySelectorAll('#review .patch .add').length");
    assert!(coloured.as_u64().unwrap() >= 1, "{coloured}");
    let diff_review = page.screenshot(&dir.join("diff-review.png"), Some("#review"));

    // Far from blank: a page of text and colour compresses to many times a blank page's PNG.
    for (name, size) in [
        ("plan-gate", plan_gate),
        ("finished-run", finished),
        ("diff-review", diff_review),
    ] {
        assert!(
            size > blank * 4,
            "{name}.png is {size} bytes, a blank page {blank}: is it blank? ({})",
            dir.display()
        );
    }
    eprintln!("screenshots in {}", dir.display());
}

#[test]
fn an_event_written_to_the_blackboard_reaches_the_screen_quickly() {
    let Some(program) = chromium() else { return };
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new(
            "Measure the live log",
            repo.path().display().to_string(),
        ))
        .unwrap();
    let dashboard = Dashboard::serve(&repo, &[]);
    let (addr, token) = (dashboard.addr.clone(), dashboard.token.clone());
    let browser = Browser::launch(&program);
    let mut page = browser.page();
    page.call(
        "Page.navigate",
        json!({ "url": format!("http://{addr}/#token={token}&run={}", run.id) }),
    );
    page.wait_for(
        "!document.getElementById('run-panel').hidden",
        "the run's panel",
        Duration::from_secs(30),
    );
    // The page notes when each probe's line is added to the live log, by the same wall clock as the writer.
    page.eval(
        "window.seen = {}; new MutationObserver((changes) => { for (const c of changes) for (const n of c.addedNodes) { \
         const m = /probe-(\\d+)/.exec(n.textContent || ''); if (m) window.seen[m[1]] = Date.now(); } }) \
         .observe(document.getElementById('log'), { childList: true }); true",
    );
    // `bench/screen/run.sh` asks for more samples than the test's 40.
    let samples: usize = std::env::var("AGENCY_SCREEN_SAMPLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n >= 10)
        .unwrap_or(40);
    let mut written = Vec::new();
    for i in 0..samples {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        store
            .append_event(NewEvent::new(
                run.id,
                EventKind::Log,
                json!({ "level": "info", "message": format!("probe-{i}") }),
            ))
            .unwrap();
        written.push(at);
        // Spread over the poll interval, so the figure covers events landing early and late in it.
        std::thread::sleep(Duration::from_millis(37));
    }
    let seen = page.wait_for(
        &format!("Object.keys(window.seen).length === {samples} && window.seen"),
        "every probe on the page",
        Duration::from_secs(30 + samples as u64 / 10),
    );
    let mut latencies: Vec<u128> = (0..samples)
        .map(|i| {
            let shown = seen[i.to_string()].as_u64().unwrap();
            u128::from(shown).saturating_sub(written[i])
        })
        .collect();
    latencies.sort_unstable();
    let (p50, p95, p99) = (
        latencies[samples / 2],
        latencies[samples * 95 / 100],
        latencies[samples * 99 / 100],
    );
    // Written past the harness's capture, so `bench/screen/run.sh` reads it from any test run.
    let _ = writeln!(
        std::io::stderr(),
        "event → screen: p50 {p50} ms, p95 {p95} ms, p99 {p99} ms, max {} ms over {samples} events",
        latencies[samples - 1]
    );
    // The target is p50 ≤ 100 ms (docs/performance.md); the bound asserted is looser so a loaded CI machine
    // does not fail it, while a regression to polling by the second still does.
    assert!(p50 <= 300, "p50 {p50} ms: {latencies:?}");
}
