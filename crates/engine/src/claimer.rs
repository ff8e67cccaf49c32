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
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{}{host}-{}", self.prefix(), std::process::id())
    }

    /// The role a claim holder's name says, if it says one.
    pub fn of(holder: &str) -> Option<Role> {
        [Role::Driver, Role::Worker]
            .into_iter()
            .find(|role| holder.starts_with(role.prefix()))
    }
}

#[cfg(test)]
mod tests {
    use super::Role;

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
