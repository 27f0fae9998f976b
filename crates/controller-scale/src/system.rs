//! What `/proc` says about a process and the machine.

use serde::Serialize;

/// Resident memory of a process, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Peak resident set (`VmHWM`), KiB.
    pub peak_kib: u64,
    /// Resident set now (`VmRSS`), KiB.
    pub now_kib: u64,
}

/// The resident memory of process `pid`, or `None` if it has exited.
pub fn memory(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(parse_status(&status))
}

fn parse_status(status: &str) -> Memory {
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Memory {
        peak_kib: field("VmHWM:"),
        now_kib: field("VmRSS:"),
    }
}

/// The machine's load averages over 1, 5 and 15 minutes
/// (`/proc/loadavg`), as written there (`"3.10 4.25 5.02"`).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The number of online processors.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_and_current_resident_sets_are_read_in_kib() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    4242 kB\nVmRSS:\t    4000 kB\n";
        assert_eq!(
            parse_status(status),
            Memory {
                peak_kib: 4242,
                now_kib: 4000
            }
        );
    }

    #[test]
    fn this_process_has_a_resident_set() {
        let memory = memory(std::process::id()).unwrap();
        assert!(memory.peak_kib >= memory.now_kib && memory.now_kib > 0);
        assert_eq!(loadavg().split(' ').count(), 3);
    }
}
