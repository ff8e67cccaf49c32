//! Finding and stopping a process group its parent left behind.
//!
//! Every child runs in its own process group, so a runner that dies without a word (SIGKILL, a crash)
//! leaves its agents running, parentless: nothing stops them and nothing ends them at their deadline. A
//! runner therefore records who each agent process is when it starts ([`ProcessIdentity`]: pid, group,
//! start time, boot) and the runner that takes its work over stops that group ([`stop_leftover`]) before
//! starting the same work again.
//!
//! A pid alone names a process only while that process lives: once it ends, the number is handed out
//! again. So the group is signalled only when the process with that pid is still the one recorded: the
//! same boot of the same kernel (`/proc/sys/kernel/random/boot_id`) and the same start time (field 22 of
//! `/proc/<pid>/stat`, clock ticks since boot). While that process exists (a zombie included) its pid is
//! taken, so its group id cannot name anyone else's group. What is left is a window of microseconds
//! between the check and the signal in which the process would have to end, every member of its group
//! too, and the pid be handed out again; pids are handed out in a cycle, so that does not happen in
//! practice.

use std::io;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};

/// How often the group is looked at while it is given time to end.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// How long members still there after SIGKILL are waited for (a process in uninterruptible sleep ends
/// only when its system call returns).
const AFTER_KILL: Duration = Duration::from_secs(1);

/// Who a started process is, in terms that still identify it after its parent died and its pid may have
/// been handed to another process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// Its process id.
    pub pid: u32,
    /// Its process group id (agency starts every child as the leader of its own group, so its pid).
    pub pgid: u32,
    /// When it started: field 22 of `/proc/<pid>/stat`, clock ticks since boot.
    pub start_ticks: u64,
    /// The kernel's boot id when it started: a start time means nothing across a reboot (or on another
    /// machine).
    pub boot_id: String,
}

impl ProcessIdentity {
    /// The identity of the live process `pid`, read from `/proc`.
    pub fn of(pid: u32) -> io::Result<Self> {
        let stat = Stat::read(pid)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("/proc/{pid}/stat: no such process"),
            )
        })?;
        Ok(ProcessIdentity {
            pid,
            pgid: stat.pgrp,
            start_ticks: stat.start_ticks,
            boot_id: boot_id()?,
        })
    }
}

/// What [`stop_leftover`] found, and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    /// No process has that pid any more, or it has ended and nothing is left in its group: nothing to do.
    Gone,
    /// The identity is from another boot (the machine restarted) or another machine: nothing here is that
    /// process, so nothing was signalled.
    OtherBoot {
        /// This machine's boot id now.
        boot_id: String,
    },
    /// The pid now belongs to another process (started at another time): it was left alone.
    Recycled {
        /// When the process that has the pid now started.
        start_ticks: u64,
    },
    /// The process was still there: its group was sent SIGTERM, and SIGKILL after the grace period if
    /// anything of it was left.
    Stopped {
        /// The group's live members when it was found, lowest pid first.
        members: Vec<u32>,
        /// SIGKILL was needed: something outlived SIGTERM and the grace period.
        killed: bool,
        /// Members still alive a second after SIGKILL (stuck in the kernel); normally empty.
        survivors: Vec<u32>,
    },
}

impl Leftover {
    /// A short account for a log line: `gone`, `stopped 2 processes (SIGTERM)`…
    pub fn describe(&self) -> String {
        match self {
            Leftover::Gone => "already gone".to_owned(),
            Leftover::OtherBoot { .. } => {
                "recorded on another boot or machine: nothing here to stop".to_owned()
            }
            Leftover::Recycled { .. } => {
                "its pid now belongs to another process, which was left alone".to_owned()
            }
            Leftover::Stopped {
                members,
                killed,
                survivors,
            } => {
                let how = if *killed {
                    "SIGTERM, then SIGKILL"
                } else {
                    "SIGTERM"
                };
                let mut text = format!(
                    "stopped {} process{} ({how})",
                    members.len(),
                    if members.len() == 1 { "" } else { "es" }
                );
                if !survivors.is_empty() {
                    text.push_str(&format!("; still there: {survivors:?}"));
                }
                text
            }
        }
    }
}

/// Stops what is left of the process `identity` names: if it is still that process (same boot, same start
/// time), its whole group gets SIGTERM, then SIGKILL once `grace` has passed with members left. Never
/// signals a pid that now names another process, nor this process's own group.
pub fn stop_leftover(identity: &ProcessIdentity, grace: Duration) -> io::Result<Leftover> {
    let now = boot_id()?;
    if identity.boot_id != now {
        return Ok(Leftover::OtherBoot { boot_id: now });
    }
    let (Some(pid), Some(pgid)) = (to_pid(identity.pid), to_pid(identity.pgid)) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "process record: pid {} / group {}: expected ids above 1",
                identity.pid, identity.pgid
            ),
        ));
    };
    if pgid == rustix::process::getpgrp() || pid == rustix::process::getpid() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "process record: pid {} / group {} is this process or its own group",
                identity.pid, identity.pgid
            ),
        ));
    }
    let Some(stat) = Stat::read(identity.pid)? else {
        return Ok(Leftover::Gone);
    };
    if stat.start_ticks != identity.start_ticks {
        return Ok(Leftover::Recycled {
            start_ticks: stat.start_ticks,
        });
    }
    // It is the recorded process (a zombie at worst, which still holds the pid): the group id is its.
    let members = group_members(identity.pgid)?;
    if members.is_empty() {
        return Ok(Leftover::Gone);
    }
    signal_group(pgid, Signal::TERM);
    // A stopped member only sees SIGTERM once it runs again.
    signal_group(pgid, Signal::CONT);
    let mut left = wait_for_group(identity.pgid, Instant::now() + grace)?;
    let killed = !left.is_empty();
    if killed {
        // Members are alive, so the group id is still theirs.
        signal_group(pgid, Signal::KILL);
        left = wait_for_group(identity.pgid, Instant::now() + AFTER_KILL)?;
    }
    Ok(Leftover::Stopped {
        members,
        killed,
        survivors: left,
    })
}

/// Waits until group `pgid` has no live member or `deadline` passes; returns the members left.
fn wait_for_group(pgid: u32, deadline: Instant) -> io::Result<Vec<u32>> {
    loop {
        let left = group_members(pgid)?;
        if left.is_empty() || Instant::now() >= deadline {
            return Ok(left);
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

fn signal_group(pgid: Pid, signal: Signal) {
    // ESRCH: the group emptied meanwhile, which is what is wanted.
    let _ = rustix::process::kill_process_group(pgid, signal);
}

fn to_pid(id: u32) -> Option<Pid> {
    i32::try_from(id)
        .ok()
        .filter(|&id| id > 1)
        .and_then(Pid::from_raw)
}

/// The live (not zombie) processes in group `pgid`, lowest pid first.
fn group_members(pgid: u32) -> io::Result<Vec<u32>> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // A process that ended between the listing and the read is simply not a member.
        if let Ok(Some(stat)) = Stat::read(pid)
            && stat.pgrp == pgid
            && stat.is_live()
        {
            members.push(pid);
        }
    }
    members.sort_unstable();
    Ok(members)
}

/// This boot's id, read once.
fn boot_id() -> io::Result<String> {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = BOOT_ID.get() {
        return Ok(id.clone());
    }
    let path = Path::new("/proc/sys/kernel/random/boot_id");
    let id = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?
        .trim()
        .to_owned();
    if id.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: empty, expected the kernel's boot id", path.display()),
        ));
    }
    Ok(BOOT_ID.get_or_init(|| id).clone())
}

/// The fields of `/proc/<pid>/stat` this needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// Field 3: R, S, D, Z, T…
    state: char,
    /// Field 5.
    pgrp: u32,
    /// Field 22.
    start_ticks: u64,
}

impl Stat {
    /// `None` when there is no such process.
    fn read(pid: u32) -> io::Result<Option<Stat>> {
        let path = format!("/proc/{pid}/stat");
        match std::fs::read_to_string(&path) {
            Ok(text) => Stat::parse(&text).map(Some).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, format!("{path}: unreadable: {text}"))
            }),
            // ESRCH: it ended while the file was read.
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(3) => Ok(None),
            Err(e) => Err(io::Error::new(e.kind(), format!("{path}: {e}"))),
        }
    }

    /// Parses a stat line. The command name (field 2) is in parentheses and may itself hold spaces and
    /// parentheses, so the fields are counted from the last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let (_, rest) = text.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] is field 3.
        Some(Stat {
            state: fields.first()?.chars().next()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start_ticks: fields.get(19)?.parse().ok()?,
        })
    }

    fn is_live(self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    use super::*;

    /// `sh` leading its own group with a `sleep` child, as an agent that started a tool.
    fn group_with_a_child() -> (Child, u32) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("child");
        let child = Command::new("sh")
            .args(["-c", "sleep 60 & echo $! > \"$1\"; wait", "sh"])
            .arg(&file)
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let grandchild = loop {
            if let Some(pid) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            {
                break pid;
            }
            assert!(Instant::now() < deadline, "the group did not start");
            std::thread::sleep(Duration::from_millis(10));
        };
        (child, grandchild)
    }

    fn live(pid: u32) -> bool {
        Stat::read(pid).unwrap().is_some_and(Stat::is_live)
    }

    #[test]
    fn a_pid_that_started_at_another_time_or_boot_is_not_signalled() {
        let (mut child, grandchild) = group_with_a_child();
        let identity = ProcessIdentity::of(child.id()).unwrap();
        assert_eq!(identity.pgid, child.id(), "its own group");

        let later = ProcessIdentity {
            start_ticks: identity.start_ticks + 1,
            ..identity.clone()
        };
        assert_eq!(
            stop_leftover(&later, Duration::from_secs(1)).unwrap(),
            Leftover::Recycled {
                start_ticks: identity.start_ticks
            }
        );
        let elsewhere = ProcessIdentity {
            boot_id: "00000000-0000-0000-0000-000000000000".into(),
            ..identity.clone()
        };
        assert!(matches!(
            stop_leftover(&elsewhere, Duration::from_secs(1)).unwrap(),
            Leftover::OtherBoot { .. }
        ));
        assert!(live(child.id()) && live(grandchild), "nothing was signalled");

        // The recorded process itself: its whole group goes.
        let stopped = stop_leftover(&identity, Duration::from_secs(5)).unwrap();
        let mut both = vec![child.id(), grandchild];
        both.sort_unstable();
        assert_eq!(
            stopped,
            Leftover::Stopped {
                members: both,
                killed: false,
                survivors: vec![]
            }
        );
        assert!(!live(grandchild));
        assert!(child.wait().unwrap().code().is_none(), "ended by a signal");
        assert_eq!(
            stop_leftover(&identity, Duration::from_secs(1)).unwrap(),
            Leftover::Gone
        );
    }

    #[test]
    fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
        let mut child = Command::new("sh")
            .args(["-c", "trap '' TERM; while :; do sleep 0.05; done"])
            .process_group(0)
            .spawn()
            .unwrap();
        // Give the trap time to be set.
        std::thread::sleep(Duration::from_millis(200));
        let identity = ProcessIdentity::of(child.id()).unwrap();
        let started = Instant::now();
        let Leftover::Stopped {
            killed, survivors, ..
        } = stop_leftover(&identity, Duration::from_millis(300)).unwrap()
        else {
            panic!("not found");
        };
        assert!(killed && survivors.is_empty());
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&child.wait().unwrap()),
            Some(9)
        );
    }

    #[test]
    fn this_process_and_its_group_are_never_signalled() {
        let mine = ProcessIdentity::of(std::process::id()).unwrap();
        assert!(stop_leftover(&mine, Duration::ZERO).is_err());
    }

    #[test]
    fn stat_lines_are_read_from_the_last_parenthesis() {
        let line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 123456 2 3 \
                    18446744073709551615\n";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                state: 'S',
                pgrp: 4242,
                start_ticks: 123456
            })
        );
        assert_eq!(Stat::parse("4242 (truncated"), None);
    }
}
