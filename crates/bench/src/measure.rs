//! Reading the process's own cost: CPU time of this process (every thread, user + system; not its
//! children), CPU time of the children it waited for (git, verify commands), and peak resident memory.

use std::time::Duration;

/// One reading.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// This process's CPU time so far.
    pub cpu: Duration,
    /// CPU time of the child processes it has waited for.
    pub children_cpu: Duration,
    /// This process's CPU time in user mode and in the kernel (`utime`, `stime`; 10 ms resolution): the
    /// kernel's share is what moves with the machine's state (file and process creation), not the code.
    pub user: Duration,
    /// See `user`.
    pub system: Duration,
    /// The high-water mark of resident memory (`VmHWM`), in KiB.
    pub peak_rss_kb: u64,
}

impl Sample {
    /// Reads the counters now.
    pub fn now() -> Result<Sample, String> {
        let ticks = stat_ticks()?;
        Ok(Sample {
            cpu: to_duration(rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime)),
            children_cpu: ticks.children,
            user: ticks.user,
            system: ticks.system,
            peak_rss_kb: peak_rss_kb()?,
        })
    }
}

/// The calling thread's CPU time so far (the bench's agents run on the runner's thread).
pub use agency_exec::process::cost::thread_cpu;

fn to_duration(ts: rustix::time::Timespec) -> Duration {
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The CPU times `/proc/self/stat` keeps, in clock ticks of 1/100 s (the Linux `USER_HZ`).
struct StatTicks {
    user: Duration,
    system: Duration,
    /// `cutime + cstime`.
    children: Duration,
}

fn stat_ticks() -> Result<StatTicks, String> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|e| format!("/proc/self/stat: {e}"))?;
    // The command name may hold spaces; the fields after it are plain numbers.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or("/proc/self/stat: no command name")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is index 0: utime (14) and stime (15) are 11 and 12, cutime (16)
    // and cstime (17) 13 and 14.
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let millis = |n: u64| Duration::from_millis(n * 10);
    Ok(StatTicks {
        user: millis(ticks(11)),
        system: millis(ticks(12)),
        children: millis(ticks(13) + ticks(14)),
    })
}

fn peak_rss_kb() -> Result<u64, String> {
    let status =
        std::fs::read_to_string("/proc/self/status").map_err(|e| format!("/proc/self/status: {e}"))?;
    Ok(status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0))
}
