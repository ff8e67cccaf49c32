//! Draining a child's stdout and stderr on helper threads into ring buffers that keep the tail, and
//! feeding its stdin, so the child never blocks on a full pipe and a chatty one cannot exhaust memory.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// The last bytes of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The tail: at most `output_cap` bytes, the most recent ones.
    pub tail: Vec<u8>,
    /// How many bytes were dropped from the front to respect the cap.
    pub truncated_bytes: u64,
}

impl Captured {
    /// The tail as text, invalid UTF-8 replaced.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.tail)
    }

    /// Everything the stream produced, kept or not.
    pub fn total_bytes(&self) -> u64 {
        self.truncated_bytes + self.tail.len() as u64
    }
}

/// The helper threads that feed stdin and drain stdout/stderr.
pub(super) struct Streams {
    stdout: Arc<Mutex<TailBuffer>>,
    stderr: Arc<Mutex<TailBuffer>>,
    done: Receiver<()>,
    readers: usize,
}

impl Streams {
    /// Waits up to `limit` for both readers to see end of file; false when a pipe is still held open.
    pub(super) fn finish(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        for _ in 0..self.readers {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            if self.done.recv_timeout(left).is_err() {
                return false;
            }
        }
        true
    }

    pub(super) fn snapshot(&self) -> (Captured, Captured) {
        let take = |buffer: &Arc<Mutex<TailBuffer>>| {
            buffer.lock().unwrap_or_else(PoisonError::into_inner).captured()
        };
        (take(&self.stdout), take(&self.stderr))
    }
}

pub(super) fn start_helpers(
    fed_stdin: Option<(ChildStdin, Vec<u8>)>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    cap: usize,
) -> io::Result<Streams> {
    if let Some((mut pipe, bytes)) = fed_stdin {
        thread::Builder::new()
            .name("agency-exec-stdin".into())
            .spawn(move || {
                // A child that exits without reading its input closes the pipe; that is its business.
                let _ = pipe.write_all(&bytes);
            })?;
    }
    let (done_tx, done) = mpsc::channel();
    let streams = Streams {
        stdout: Arc::new(Mutex::new(TailBuffer::new(cap))),
        stderr: Arc::new(Mutex::new(TailBuffer::new(cap))),
        done,
        readers: usize::from(stdout.is_some()) + usize::from(stderr.is_some()),
    };
    if let Some(pipe) = stdout {
        spawn_reader(
            pipe,
            Arc::clone(&streams.stdout),
            done_tx.clone(),
            "agency-exec-stdout",
        )?;
    }
    if let Some(pipe) = stderr {
        spawn_reader(pipe, Arc::clone(&streams.stderr), done_tx, "agency-exec-stderr")?;
    }
    Ok(streams)
}

fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    buffer: Arc<Mutex<TailBuffer>>,
    done: Sender<()>,
    name: &str,
) -> io::Result<()> {
    thread::Builder::new().name(name.into()).spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buffer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&chunk[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send(());
    })?;
    Ok(())
}

/// A byte ring buffer that keeps the last `cap` bytes pushed and counts the rest.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    cap: usize,
    bytes: VecDeque<u8>,
    dropped: u64,
}

impl TailBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            bytes: VecDeque::with_capacity(cap.min(64 * 1024)),
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.cap {
            self.dropped += (self.bytes.len() + chunk.len() - self.cap) as u64;
            self.bytes.clear();
            self.bytes.extend(&chunk[chunk.len() - self.cap..]);
            return;
        }
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.cap);
        self.bytes.drain(..overflow);
        self.dropped += overflow as u64;
        self.bytes.extend(chunk);
    }

    pub(crate) fn captured(&self) -> Captured {
        Captured {
            tail: self.bytes.iter().copied().collect(),
            truncated_bytes: self.dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tail_buffer_keeps_exactly_the_last_cap_bytes(
            cap in 0usize..64,
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..20),
        ) {
            let mut buffer = TailBuffer::new(cap);
            let mut all = Vec::new();
            for chunk in &chunks {
                buffer.push(chunk);
                all.extend_from_slice(chunk);
            }
            let captured = buffer.captured();
            let keep = all.len().min(cap);
            prop_assert_eq!(&captured.tail[..], &all[all.len() - keep..]);
            prop_assert_eq!(captured.truncated_bytes, (all.len() - keep) as u64);
            prop_assert_eq!(captured.total_bytes(), all.len() as u64);
        }
    }
}
