//! Deterministic benchmark workloads (shared by `benches/queue.rs` and
//! `examples/drain_writes.rs`).
#![allow(dead_code)]

use backup_queue::{BackupInput, NamespaceFilter, Phase, QueueInput};
use jiff::Timestamp;
use testkit::SplitMix64;

/// 250 teams × 20 apps = 5,000 namespaces `team-TTT-AA`.
pub const TEAMS: u32 = 250;
/// Apps per team.
pub const APPS: u32 = 20;
/// `--concurrent-backups` in every workload.
pub const CONCURRENCY: u32 = 8;

pub fn namespaces() -> Vec<String> {
    (0..TEAMS)
        .flat_map(|t| (0..APPS).map(move |a| format!("team-{t:03}-{a:02}")))
        .collect()
}

/// A namespace filter: mostly 1–3 literal namespaces, some team wildcards
/// (`team-042-*`, `team-042-0?`), some app-across-teams wildcards
/// (`*-07`), some with an exclude.
pub fn filter(rng: &mut SplitMix64) -> NamespaceFilter {
    let ns = |rng: &mut SplitMix64| format!("team-{:03}-{:02}", rng.below(TEAMS), rng.below(APPS));
    let roll = rng.below(100);
    let mut f = if roll < 70 {
        let n = 1 + rng.below(3);
        NamespaceFilter::including((0..n).map(|_| ns(rng)).collect::<Vec<_>>())
    } else if roll < 90 {
        NamespaceFilter::including([format!("team-{:03}-*", rng.below(TEAMS))])
    } else if roll < 96 {
        NamespaceFilter::including([format!("team-{:03}-0?", rng.below(TEAMS))])
    } else {
        NamespaceFilter::including([format!("*-{:02}", rng.below(APPS))])
    };
    if rng.below(20) == 0 {
        f.excluded = vec![format!("team-{:03}-1*", rng.below(TEAMS))];
    }
    f
}

fn at(sec: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + sec).unwrap()
}

/// `q` Queued backups (positions 1..=q) behind a running whole-cluster
/// backup: nothing can start, every queued backup is checked (Velero's
/// periodic pass).
pub fn blocked(q: usize) -> QueueInput {
    let mut rng = SplitMix64::new(q as u64);
    let mut backups = vec![BackupInput {
        name: "full-cluster".into(),
        resource_version: Some("1".into()),
        phase: Phase::InProgress,
        queue_position: 0,
        created: at(0),
        namespaces: NamespaceFilter::all(),
    }];
    for i in 0..q {
        backups.push(BackupInput {
            name: format!("backup-{i:05}"),
            resource_version: Some(format!("{}", 10 + i)),
            phase: Phase::Queued,
            queue_position: i as u32 + 1,
            created: at(i as i64 + 1),
            namespaces: filter(&mut rng),
        });
    }
    QueueInput {
        backups,
        cluster_namespaces: namespaces(),
        concurrent_backups: CONCURRENCY,
    }
}

/// [`blocked`] right after the whole-cluster backup completed.
pub fn after_completion(q: usize) -> QueueInput {
    let mut input = blocked(q);
    input.backups[0].phase = Phase::Other;
    input
}
