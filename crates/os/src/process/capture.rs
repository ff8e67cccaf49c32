//! A child's pipes, handled without helper threads: the tail of stdout and stderr kept in ring buffers (so a
//! chatty child neither blocks on a full pipe nor exhausts memory) and stdin fed from bytes, all driven by
//! the supervisor's `poll`. The output pipes stay blocking and are read only when `poll` says so (one read
//! per readiness, or to the end once every writer is gone), which spares two `ioctl`s and a read that
//! would only say "again" per process; stdin is non-blocking, since `poll` promises room for only part of
//! what is left to feed.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;

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

/// Our end of a pipe the child writes to, read into a tail buffer until end of file.
#[derive(Debug)]
pub(super) struct Drain {
    /// `None` once the child's side is closed (end of file) or reading failed.
    pipe: Option<OwnedFd>,
    tail: TailBuffer,
}

impl Drain {
    /// Takes `pipe` keeping the last `cap` bytes; no pipe is a drain that is done.
    pub(super) fn new(pipe: Option<OwnedFd>, cap: usize) -> Self {
        Self {
            pipe,
            tail: TailBuffer::new(cap),
        }
    }

    /// The pipe to wait on, while it is open.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(AsFd::as_fd)
    }

    /// Every writer has closed its end (or the pipe failed): nothing more will come.
    pub(super) fn is_done(&self) -> bool {
        self.pipe.is_none()
    }

    /// Reads the pipe `poll` found ready: once (which cannot block, something is there), or to its end when
    /// `hung_up` says every writer is gone (nothing can block then either).
    pub(super) fn read_ready(&mut self, hung_up: bool) {
        let Some(pipe) = &self.pipe else { return };
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match rustix::io::read(pipe, &mut chunk) {
                Ok(0) => break self.pipe = None,
                Ok(n) => self.tail.push(&chunk[..n]),
                Err(Errno::INTR) => continue,
                // Only a pipe someone else made non-blocking says this; poll again.
                Err(Errno::AGAIN) => break,
                // Nothing more can be read from a broken pipe; what was read is kept.
                Err(_) => break self.pipe = None,
            }
            if !hung_up {
                break;
            }
        }
    }

    pub(super) fn captured(&self) -> Captured {
        self.tail.captured()
    }
}

/// Our end of the child's stdin, fed from bytes without blocking and closed once they are all written.
#[derive(Debug)]
pub(super) struct Feed {
    /// `None` once everything is written, or the child closed its end.
    pipe: Option<OwnedFd>,
    bytes: Vec<u8>,
    written: usize,
}

impl Feed {
    /// Feeds `bytes` into `pipe` (made non-blocking); no pipe is a feed that is done.
    pub(super) fn new(pipe: Option<OwnedFd>, bytes: Vec<u8>) -> io::Result<Self> {
        if let Some(pipe) = &pipe {
            rustix::io::ioctl_fionbio(pipe, true)?;
        }
        let mut feed = Self {
            pipe,
            bytes,
            written: 0,
        };
        feed.close_if_fed();
        Ok(feed)
    }

    /// The pipe to wait on, while bytes are left.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(AsFd::as_fd)
    }

    /// Writes what the pipe takes now.
    pub(super) fn write_available(&mut self) {
        let Some(pipe) = &self.pipe else { return };
        loop {
            match rustix::io::write(pipe, &self.bytes[self.written..]) {
                Ok(n) => {
                    self.written += n;
                    if self.written == self.bytes.len() {
                        break;
                    }
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return,
                // A child that exits (or closes stdin) without reading its input: that is its business.
                Err(_) => break self.pipe = None,
            }
        }
        self.close_if_fed();
    }

    /// Stops feeding (the child is gone): closes our end.
    pub(super) fn close(&mut self) {
        self.pipe = None;
    }

    fn close_if_fed(&mut self) {
        if self.written == self.bytes.len() {
            // Closing is how the child learns its input ended.
            self.pipe = None;
        }
    }
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
            // Grown as output comes: most commands print a line or nothing, and two 64 KiB buffers per
            // process were a tenth of the runner's cost of starting one.
            bytes: VecDeque::new(),
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
