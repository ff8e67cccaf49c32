//! Watching a running child on one thread, without helpers: a single `poll` over its output pipes, its
//! stdin while bytes are left to feed, a pidfd that becomes readable when it exits, and an eventfd that a
//! [`CancelToken`](super::CancelToken) rings.
//!
//! A thread per pipe and one to wait for the exit cost four thread starts per git call; a run makes about a
//! dozen git calls per brief, so that was most of the runner's own CPU (docs/performance.md). For the same
//! reason the output pipes are left alone for a moment after the start ([`QUIET_START`]): a child that
//! writes a few lines and exits then wakes the watching thread once, not three times.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions};

use super::capture::{Captured, Drain, Feed};

/// How often a child's exit is checked where the kernel has no pidfd (Linux before 5.3, or a seccomp
/// filter that refuses it).
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// How long after its start a child's output pipes are left to fill before they are drained. Most of what a
/// runner starts (git) writes a few lines and exits within milliseconds: waking when its output arrives, again
/// when its pipes close and again when it exits costs three sleeps and wake-ups of the watching thread per
/// process, where waiting for the exit alone costs one, the output being in the pipes by then. A child that
/// fills a pipe (64 KiB on Linux) before this passes waits for the rest of it, then is drained as it writes.
const QUIET_START: Duration = Duration::from_millis(100);

/// What a [`Watch::until`] call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Goal {
    /// The child's exit, or a cancel.
    ExitOrCancel,
    /// The child's exit; cancels are ignored (the group is already being terminated).
    Exit,
    /// End of file on both output pipes (everything holding them is gone).
    PipesClosed,
}

/// Why a [`Watch::until`] call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reached {
    /// The goal was reached: the child exited, or the pipes closed.
    Goal,
    /// The token was cancelled (only for [`Goal::ExitOrCancel`]).
    Cancelled,
    /// The deadline passed first.
    Deadline,
}

/// How the child's exit is noticed.
#[derive(Debug)]
enum ExitNotice {
    /// Readable once the child has exited (it stays a zombie until reaped).
    Pidfd(OwnedFd),
    /// `waitid(WNOHANG | WNOWAIT)` every [`EXIT_POLL_INTERVAL`].
    Polling,
}

/// One child's pipes and exit, watched from the calling thread.
#[derive(Debug)]
pub(super) struct Watch {
    pid: Pid,
    exit: ExitNotice,
    exited: bool,
    /// Rung by the cancel token; shared with its registration. `None` for a run no token can cancel
    /// ([`super::run`]), which then needs no eventfd to make, poll and close.
    cancel: Option<Arc<OwnedFd>>,
    cancelled: bool,
    feed: Feed,
    stdout: Drain,
    stderr: Drain,
    /// Until then the output pipes are not polled while waiting for the exit (see [`QUIET_START`]).
    quiet_until: Option<Instant>,
    /// How many times this watch has called `poll`.
    #[cfg(test)]
    polls: u32,
}

impl Watch {
    /// Watches the child `pid` (which must not have been reaped) and the pipes given; `cancellable` makes the
    /// eventfd a [`CancelToken`](super::CancelToken) rings.
    pub(super) fn new(
        pid: Pid,
        feed: Feed,
        stdout: Drain,
        stderr: Drain,
        cancellable: bool,
    ) -> io::Result<Self> {
        let exit = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => ExitNotice::Pidfd(fd),
            Err(Errno::NOSYS | Errno::PERM | Errno::ACCESS) => ExitNotice::Polling,
            Err(errno) => return Err(errno.into()),
        };
        let cancel = if cancellable {
            let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
            Some(Arc::new(fd))
        } else {
            None
        };
        Ok(Self {
            pid,
            exit,
            exited: false,
            cancel,
            cancelled: false,
            feed,
            stdout,
            stderr,
            quiet_until: Some(Instant::now() + QUIET_START),
            #[cfg(test)]
            polls: 0,
        })
    }

    /// The eventfd a cancel token should ring, when the watch was made cancellable.
    pub(super) fn cancel_waker(&self) -> Option<Arc<OwnedFd>> {
        self.cancel.clone()
    }

    /// Whether the child has exited (and is waiting to be reaped).
    pub(super) fn exited(&self) -> bool {
        self.exited
    }

    /// The stdout and stderr tails so far.
    pub(super) fn captured(&self) -> (Captured, Captured) {
        (self.stdout.captured(), self.stderr.captured())
    }

    /// Feeds stdin and drains the output pipes until `goal` is reached, the token is cancelled (where the
    /// goal allows it) or `deadline` passes (`None`: no deadline).
    pub(super) fn until(&mut self, goal: Goal, deadline: Option<Instant>) -> io::Result<Reached> {
        loop {
            if let Some(reached) = self.reached(goal) {
                return Ok(reached);
            }
            let mut timeout = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Ok(Reached::Deadline),
                },
                None => None,
            };
            let polling_exit = matches!(self.exit, ExitNotice::Polling) && !self.exited;
            if polling_exit && goal != Goal::PipesClosed {
                timeout = Some(timeout.map_or(EXIT_POLL_INTERVAL, |t| t.min(EXIT_POLL_INTERVAL)));
            }
            let quiet = self.quiet_for(goal);
            if let Some(left) = quiet {
                timeout = Some(timeout.map_or(left, |t| t.min(left)));
            }
            self.wait_once(goal, timeout, quiet.is_none())?;
            if polling_exit {
                self.exited = has_exited(self.pid)?;
            }
        }
    }

    fn reached(&self, goal: Goal) -> Option<Reached> {
        match goal {
            Goal::ExitOrCancel if self.cancelled => Some(Reached::Cancelled),
            Goal::ExitOrCancel | Goal::Exit if self.exited => Some(Reached::Goal),
            Goal::PipesClosed if self.stdout.is_done() && self.stderr.is_done() => Some(Reached::Goal),
            _ => None,
        }
    }

    /// How much longer the output pipes are left alone while waiting for `goal`: `None` once they are drained
    /// as they fill (the quiet start is over, or the goal is the pipes themselves).
    fn quiet_for(&mut self, goal: Goal) -> Option<Duration> {
        if goal == Goal::PipesClosed {
            return None;
        }
        let left = self
            .quiet_until?
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero());
        if left.is_none() {
            self.quiet_until = None;
        }
        left
    }

    /// One `poll` and the work it found; the output pipes are polled only when `drain`.
    fn wait_once(&mut self, goal: Goal, timeout: Option<Duration>, drain: bool) -> io::Result<()> {
        let exit_fd = match &self.exit {
            ExitNotice::Pidfd(fd) if !self.exited => Some(fd.as_fd()),
            _ => None,
        };
        let cancel_fd = match &self.cancel {
            Some(fd) if goal == Goal::ExitOrCancel && !self.cancelled => Some(fd.as_fd()),
            _ => None,
        };
        let (stdout_fd, stderr_fd) = if drain {
            (self.stdout.fd(), self.stderr.fd())
        } else {
            (None, None)
        };
        let watched: [(Option<BorrowedFd<'_>>, PollFlags); 5] = [
            (stdout_fd, PollFlags::IN),
            (stderr_fd, PollFlags::IN),
            (self.feed.fd(), PollFlags::OUT),
            (exit_fd, PollFlags::IN),
            (cancel_fd, PollFlags::IN),
        ];
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(watched.len());
        let mut slots = [None; 5];
        for (slot, (fd, flags)) in watched.into_iter().enumerate() {
            if let Some(fd) = fd {
                slots[slot] = Some(fds.len());
                fds.push(PollFd::from_borrowed_fd(fd, flags));
            }
        }
        let timeout = timeout.map(to_timespec);
        #[cfg(test)]
        {
            self.polls += 1;
        }
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
        // Any event on a pipe (data, hang-up, error) is handled by reading or writing it: the call says which.
        let events: [PollFlags; 5] =
            std::array::from_fn(|slot| slots[slot].map_or(PollFlags::empty(), |i| fds[i].revents()));
        drop(fds);
        let ready: [bool; 5] = std::array::from_fn(|slot| !events[slot].is_empty());
        if ready[0] {
            self.stdout.read_ready(hung_up(events[0]));
        }
        if ready[1] {
            self.stderr.read_ready(hung_up(events[1]));
        }
        if ready[2] {
            self.feed.write_available();
        }
        if ready[3] {
            self.exited = true;
        }
        if ready[4] {
            self.cancelled = true;
        }
        if self.exited {
            // Nobody is left to read what was not fed yet.
            self.feed.close();
        }
        Ok(())
    }
}

/// Every writer of a pipe is gone (or it failed): reading it can no longer block.
fn hung_up(events: PollFlags) -> bool {
    events.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL)
}

/// Whether `pid` has exited, without reaping it.
fn has_exited(pid: Pid) -> io::Result<bool> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), options) {
            Ok(status) => return Ok(status.is_some()),
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
}

fn to_timespec(duration: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(duration.subsec_nanos()),
    }
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    /// Where the kernel refuses pidfds the exit is found by asking `waitid`; the rest works the same.
    #[test]
    fn without_a_pidfd_the_exit_is_still_noticed_and_the_pipes_drained() {
        let mut child = Command::new("sh")
            .args(["-c", "cat; echo err >&2; exit 3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = Pid::from_child(&child);
        let feed = Feed::new(child.stdin.take().map(OwnedFd::from), b"fed\n".to_vec()).unwrap();
        let stdout = Drain::new(child.stdout.take().map(OwnedFd::from), 1024);
        let stderr = Drain::new(child.stderr.take().map(OwnedFd::from), 1024);
        let mut watch = Watch::new(pid, feed, stdout, stderr, false).unwrap();
        watch.exit = ExitNotice::Polling;

        let deadline = Some(Instant::now() + Duration::from_secs(20));
        assert_eq!(watch.until(Goal::ExitOrCancel, deadline).unwrap(), Reached::Goal);
        assert_eq!(watch.until(Goal::PipesClosed, deadline).unwrap(), Reached::Goal);
        assert_eq!(child.wait().unwrap().code(), Some(3), "still unreaped until now");
        let (out, err) = watch.captured();
        assert_eq!((&*out.text(), &*err.text()), ("fed\n", "err\n"));
    }

    /// A child that writes a little and exits soon wakes its watcher once, at the exit (not when its output
    /// arrives, nor again when its pipes close), and its output is all there.
    #[test]
    fn a_quick_child_wakes_its_watcher_once_at_its_exit() {
        let started = Instant::now();
        let mut child = Command::new("sh")
            .args(["-c", "echo out; echo err >&2; sleep 0.02"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = Pid::from_child(&child);
        let stdout = Drain::new(child.stdout.take().map(OwnedFd::from), 1024);
        let stderr = Drain::new(child.stderr.take().map(OwnedFd::from), 1024);
        let mut watch = Watch::new(pid, Feed::new(None, Vec::new()).unwrap(), stdout, stderr, false).unwrap();

        let deadline = Some(Instant::now() + Duration::from_secs(20));
        assert_eq!(watch.until(Goal::ExitOrCancel, deadline).unwrap(), Reached::Goal);
        // On a machine so loaded that the child outlived the quiet start, its output woke the watcher too.
        if started.elapsed() < QUIET_START {
            assert_eq!(watch.polls, 1, "woken before the child exited");
        }
        assert_eq!(watch.until(Goal::PipesClosed, deadline).unwrap(), Reached::Goal);
        assert_eq!(child.wait().unwrap().code(), Some(0));
        let (out, err) = watch.captured();
        assert_eq!((&*out.text(), &*err.text()), ("out\n", "err\n"));
    }
}
