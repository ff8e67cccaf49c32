//! Who holds a claim. A claim records its holder's name (`claimed_by`), and the name begins with what the
//! holder is to the run: `runner-` for the run's driver (`agency run`, `--resume`, `agency demo`),
//! `worker-` for a process that only runs agents beside it (`agency worker`). A driver resuming a run
//! reads it there: the claims of the driver it replaces are taken back at once (that driver is gone: only
//! one drives a run), while a worker's claims are left to the worker, which renews them while it lives;
//! a dead worker's lapse with their lease like any other.

/// What a runner is to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The run's one driver: tier handling, gates, merges, and agents of its own.
    Driver,
    /// A runner of agents beside the driver.
    Worker,
}

impl Role {
    /// How a holder's name with this role begins.
    fn prefix(self) -> &'static str {
        match self {
            Role::Driver => "runner-",
            Role::Worker => "worker-",
        }
    }

    /// This process's name in claims and logs with this role: `runner-HOST-PID`, `worker-HOST-PID`. The
    /// host keeps runners on several machines sharing one PostgreSQL blackboard apart (their process ids
    /// may well be equal).
    pub fn name_here(self) -> String {
        format!("{}{}-{}", self.prefix(), this_host(), std::process::id())
    }

    /// Whether `holder` names a runner of this host (`runner-HOST-PID`, `worker-HOST-PID`) whose process
    /// is gone: the host is this one and no process has that pid. `false` for any other name, another
    /// host, or a pid that runs (even if reused by another program: then the claim waits for its lease).
    pub fn is_gone_here(holder: &str) -> bool {
        let Some(rest) = [Role::Driver, Role::Worker]
            .into_iter()
            .find_map(|role| holder.strip_prefix(role.prefix()))
        else {
            return false;
        };
        let Some((host, pid)) = rest.rsplit_once('-') else {
            return false;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            return false;
        };
        host == this_host() && pid != 0 && !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    /// The role a claim holder's name says, if it says one.
    pub fn of(holder: &str) -> Option<Role> {
        [Role::Driver, Role::Worker]
            .into_iter()
            .find(|role| holder.starts_with(role.prefix()))
    }
}

/// This machine's host name, as claim holders' names carry it.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::{Role, this_host};

    #[test]
    fn a_holder_is_gone_only_when_its_pid_is_gone_on_this_host() {
        // A process that has ended and been waited for: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let host = this_host();
        assert!(Role::is_gone_here(&format!("worker-{host}-{gone}")));
        assert!(Role::is_gone_here(&format!("runner-{host}-{gone}")));
        // This process runs; another host's pids are not for this one to judge; other names say nothing.
        assert!(!Role::is_gone_here(&Role::Worker.name_here()));
        assert!(!Role::is_gone_here(&format!("worker-{host}.elsewhere-{gone}")));
        assert!(!Role::is_gone_here("doomed"));
        assert!(!Role::is_gone_here(&format!("worker-{host}-notapid")));
    }

    #[test]
    fn a_name_says_its_role() {
        for role in [Role::Driver, Role::Worker] {
            assert_eq!(Role::of(&role.name_here()), Some(role));
        }
        assert_eq!(Role::of("runner-db1-42"), Some(Role::Driver));
        assert_eq!(Role::of("worker-db1-42"), Some(Role::Worker));
        assert_eq!(Role::of("cli:alice"), None);
        assert_eq!(Role::of("test-runner"), None);
    }
}
