//! What a run measured, and its tables.

use std::collections::BTreeMap;

use comfy_table::{Table, presets};
use serde::Serialize;

use crate::Controller;
use crate::system::Memory;

/// One controller's figures at every size.
#[derive(Debug, Clone, Serialize)]
pub struct ControllerReport {
    /// Which controller.
    pub controller: Controller,
    /// The binary that ran.
    pub binary: String,
    /// The ServiceAccount user it ran as.
    pub user: String,
    /// One entry per size, ascending.
    pub sizes: Vec<SizeReport>,
}

/// The figures at one size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    /// Watched objects the workload is sized by (Backups, DataUploads,
    /// Machines).
    pub size: usize,
    /// What exists at this size, in words.
    pub objects: String,
    /// Seconds to create the objects up to this size.
    pub populate_seconds: f64,
    /// The first start at this size (with the new objects to handle).
    pub start: Convergence,
    /// Memory of the first process after its start and events.
    pub memory: Memory,
    /// Events by kind.
    pub events: Vec<EventReport>,
    /// The restart with changes made while it was down.
    pub restart: Convergence,
    /// Memory of the restarted process once converged.
    pub restart_memory: Memory,
    /// Lists after the first of each watch, over both processes' lives
    /// (key → how many more); empty when there were none.
    pub relists: BTreeMap<String, usize>,
    /// Watch requests over both processes' lives (re-watches after a
    /// server-side timeout are normal).
    pub watches: usize,
}

/// A start of the controller and how long it took to settle.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Convergence {
    /// Objects it had to act on (new, or changed while it was down).
    pub pending: usize,
    /// Seconds from the start of the process to `/readyz` answering 200.
    pub ready_seconds: f64,
    /// Seconds from the start of the process to the objects being as the
    /// controller should leave them.
    pub converged_seconds: f64,
    /// Seconds from the start of the process to its last write (Events
    /// and annotations trail behind the state), after which it wrote
    /// nothing for two seconds.
    pub last_write_seconds: f64,
    /// Writes (create, patch, update, delete) it made until then.
    pub writes: usize,
    /// The machine's load averages at the end.
    pub loadavg: String,
}

/// Events of one kind at one size.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventReport {
    /// What an event was.
    pub kind: String,
    /// How many were made.
    pub count: usize,
    /// Events per second they were made at (0: one at a time, each
    /// waiting for the previous one's writes).
    pub rate: f64,
    /// Events whose write was found in the audit log.
    pub matched: usize,
    /// Event to write, milliseconds: median.
    pub p50_ms: Option<f64>,
    /// Event to write, milliseconds: 99th percentile.
    pub p99_ms: Option<f64>,
    /// Event to write, milliseconds: the longest.
    pub max_ms: Option<f64>,
    /// Seconds from the first event to the controller's last write (after
    /// which it wrote nothing for two seconds).
    pub settled_seconds: f64,
    /// The controller's requests per event (`verb resource` → average),
    /// from the first event until settled.
    pub requests_per_event: BTreeMap<String, f64>,
    /// The machine's load averages at the end.
    pub loadavg: String,
}

impl EventReport {
    /// Writes per event (every resource but Leases).
    pub fn writes_per_event(&self) -> f64 {
        self.requests_per_event
            .iter()
            .filter(|(key, _)| {
                let verb = key.split(' ').next().unwrap_or_default();
                matches!(verb, "create" | "update" | "patch" | "delete")
                    && !key.ends_with(" leases")
            })
            .map(|(_, count)| count)
            .sum()
    }

    /// All requests per event.
    pub fn requests_total(&self) -> f64 {
        self.requests_per_event.values().sum()
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"))
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn convergence(c: &Convergence) -> String {
    format!(
        "{} / {:.1} / {:.1} / {:.1} / {}",
        thousands(c.pending),
        c.ready_seconds,
        c.converged_seconds,
        c.last_write_seconds,
        thousands(c.writes)
    )
}

fn markdown() -> Table {
    let mut table = Table::new();
    table.load_style(presets::ASCII_MARKDOWN);
    table
}

impl ControllerReport {
    /// The tables of this report, in Markdown: sizes, memory and starts;
    /// events; relists.
    pub fn markdown(&self) -> String {
        let mut out = format!("### `{}`\n\n", self.controller.binary());
        let mut sizes = markdown();
        sizes.set_header(vec![
            "watched objects",
            "peak RSS (VmHWM), MiB",
            "RSS after restart, MiB",
            "start: pending / ready / converged / last write (s) / writes",
            "restart: pending / ready / converged / last write (s) / writes",
            "LISTs after the initial ones",
            "load average",
        ]);
        for size in &self.sizes {
            let relists = if size.relists.is_empty() {
                "none".to_owned()
            } else {
                size.relists
                    .iter()
                    .map(|(key, n)| format!("{n}× {key}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            sizes.add_row(vec![
                size.objects.clone(),
                mib(size.memory.peak_kib),
                mib(size.restart_memory.peak_kib),
                convergence(&size.start),
                convergence(&size.restart),
                relists,
                size.start.loadavg.clone(),
            ]);
        }
        out.push_str(&sizes.to_string());
        out.push_str("\n\n");
        let mut events = markdown();
        events.set_header(vec![
            "size",
            "event",
            "events (rate/s)",
            "event → write p50 / p99 / max (ms)",
            "last write (s)",
            "writes / event",
            "requests / event (by verb)",
            "load average",
        ]);
        for size in &self.sizes {
            for event in &size.events {
                let rate = if event.rate > 0.0 {
                    format!("{} ({:.0}/s)", event.count, event.rate)
                } else {
                    format!("{} (one at a time)", event.count)
                };
                let by_verb = event
                    .requests_per_event
                    .iter()
                    .map(|(key, n)| format!("{key} {n:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                events.add_row(vec![
                    thousands(size.size),
                    event.kind.clone(),
                    rate,
                    format!(
                        "{} / {} / {}",
                        ms(event.p50_ms),
                        ms(event.p99_ms),
                        ms(event.max_ms)
                    ),
                    format!("{:.1}", event.settled_seconds),
                    format!("{:.2}", event.writes_per_event()),
                    format!("{:.2}: {by_verb}", event.requests_total()),
                    event.loadavg.clone(),
                ]);
            }
        }
        out.push_str(&events.to_string());
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(5), "5");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(20_000), "20,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn writes_per_event_leave_out_reads_and_leases() {
        let event = EventReport {
            requests_per_event: BTreeMap::from([
                ("patch backups".to_owned(), 1.0),
                ("create events".to_owned(), 1.0),
                ("patch leases".to_owned(), 0.5),
                ("get leases".to_owned(), 0.5),
                ("watch backups".to_owned(), 0.01),
            ]),
            ..EventReport::default()
        };
        assert_eq!(event.writes_per_event(), 2.0);
        assert_eq!(event.requests_total(), 3.01);
    }
}
