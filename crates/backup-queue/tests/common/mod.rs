//! Shared test helpers: input builders, generators and an independent
//! oracle for namespace sets and overlap.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use backup_queue::{BackupInput, NamespaceFilter, Phase, QueueInput};
use jiff::Timestamp;
use proptest::prelude::*;

/// Namespaces that may exist in the generated clusters.
pub const CLUSTER_POOL: &[&str] = &[
    "app-a",
    "app-b",
    "app-c",
    "db-a",
    "db-b",
    "web",
    "kube-system",
    "logs",
];
/// Names that are never cluster namespaces ("not created yet").
pub const PHANTOM_POOL: &[&str] = &["app-z", "new-a", "web2"];
/// Wildcard patterns (all valid for Velero).
pub const WILDCARDS: &[&str] = &[
    "app-*", "db-?", "*-a", "[ad]*", "we?", "app-[ab]", "*s", "*",
];

pub fn ts(sec: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + sec).unwrap()
}

pub fn backup(name: &str, inc: &[&str], phase: Phase, position: u32, created: i64) -> BackupInput {
    BackupInput {
        name: name.to_owned(),
        resource_version: Some(format!("rv-{name}")),
        phase,
        queue_position: position,
        created: ts(created),
        namespaces: NamespaceFilter::including(inc.iter().copied()),
    }
}

pub fn input(backups: Vec<BackupInput>, cluster: &[&str], limit: u32) -> QueueInput {
    QueueInput {
        backups,
        cluster_namespaces: cluster.iter().map(|s| s.to_string()).collect(),
        concurrent_backups: limit,
    }
}

// ---------------------------------------------------------------- oracle

fn is_literal(p: &str) -> bool {
    !p.contains(['*', '?', '[', '\\'])
}

fn is_dns_label(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 63
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

/// The generators only produce `|` as an invalid pattern.
fn oracle_valid(f: &NamespaceFilter) -> bool {
    f.included
        .iter()
        .chain(&f.excluded)
        .all(|p| !p.contains('|'))
}

fn glob_match(p: &str, n: &str) -> bool {
    globset::Glob::new(p)
        .map(|g| g.compile_matcher().is_match(n))
        .unwrap_or(false)
}

fn oracle_matches(f: &NamespaceFilter, n: &str) -> bool {
    let included = f.included.is_empty()
        || f.included
            .iter()
            .any(|p| p == "*" || (p.as_str() == n) || (!is_literal(p) && glob_match(p, n)));
    let excluded = f
        .excluded
        .iter()
        .any(|p| p.as_str() == n || glob_match(p, n));
    included && !excluded
}

/// The documented overlap model, computed naively: the universe is the
/// cluster namespaces plus every valid namespace name that a queue-visible
/// backup includes literally (and does not exclude) unless it includes `*`;
/// a backup's set is the universe's names its filter matches (all of them
/// for an invalid filter).
pub fn oracle_sets(input: &QueueInput) -> BTreeMap<String, BTreeSet<String>> {
    let visible: Vec<&BackupInput> = input
        .backups
        .iter()
        .filter(|b| b.phase != Phase::Other)
        .collect();
    let mut universe: BTreeSet<String> = input.cluster_namespaces.iter().cloned().collect();
    for b in &visible {
        if !oracle_valid(&b.namespaces) || b.namespaces.included.iter().any(|p| p == "*") {
            continue;
        }
        for p in &b.namespaces.included {
            if p != "*" && is_literal(p) && is_dns_label(p) && oracle_matches(&b.namespaces, p) {
                universe.insert(p.clone());
            }
        }
    }
    visible
        .iter()
        .map(|b| {
            let set = if oracle_valid(&b.namespaces) {
                universe
                    .iter()
                    .filter(|n| oracle_matches(&b.namespaces, n))
                    .cloned()
                    .collect()
            } else {
                universe.clone()
            };
            (b.name.clone(), set)
        })
        .collect()
}

pub fn overlap(sets: &BTreeMap<String, BTreeSet<String>>, a: &str, b: &str) -> bool {
    !sets[a].is_disjoint(&sets[b])
}

/// Queue order of the waiting backups: Queued by (position, creation,
/// name), then New by (creation, name).
pub fn queue_order(input: &QueueInput) -> Vec<String> {
    let mut w: Vec<&BackupInput> = input
        .backups
        .iter()
        .filter(|b| b.phase == Phase::Queued || b.phase == Phase::New)
        .collect();
    w.sort_by_key(|b| {
        let new = b.phase == Phase::New;
        (
            new,
            if new { 0 } else { b.queue_position },
            b.created,
            b.name.clone(),
        )
    });
    w.into_iter().map(|b| b.name.clone()).collect()
}

pub fn active_names(input: &QueueInput) -> Vec<String> {
    input
        .backups
        .iter()
        .filter(|b| b.phase.is_active())
        .map(|b| b.name.clone())
        .collect()
}

// ------------------------------------------------------------ generators

pub fn pattern(with_phantoms: bool, with_invalid: bool) -> BoxedStrategy<String> {
    let mut literals: Vec<&'static str> = CLUSTER_POOL.to_vec();
    if with_phantoms {
        literals.extend_from_slice(PHANTOM_POOL);
    }
    let literal = proptest::sample::select(literals).prop_map(str::to_owned);
    let wildcard = proptest::sample::select(WILDCARDS.to_vec()).prop_map(str::to_owned);
    let invalid = Just("bad|x".to_owned());
    if with_invalid {
        prop_oneof![6 => literal, 3 => wildcard, 1 => invalid].boxed()
    } else {
        prop_oneof![6 => literal, 3 => wildcard].boxed()
    }
}

pub fn filter(with_phantoms: bool, with_invalid: bool) -> BoxedStrategy<NamespaceFilter> {
    (
        proptest::collection::vec(pattern(with_phantoms, with_invalid), 0..4),
        proptest::collection::vec(pattern(with_phantoms, false), 0..2),
        0..4u8,
    )
        .prop_map(|(inc, exc, k)| NamespaceFilter {
            // Mostly namespace-limited backups; some all-namespace ones.
            included: if k == 0 {
                Vec::new()
            } else if inc.is_empty() {
                vec!["web".into()]
            } else {
                inc
            },
            excluded: if k == 1 { exc } else { Vec::new() },
        })
        .boxed()
}

pub fn phase() -> BoxedStrategy<Phase> {
    prop_oneof![
        3 => Just(Phase::Queued),
        2 => Just(Phase::New),
        1 => Just(Phase::ReadyToStart),
        1 => Just(Phase::InProgress),
        1 => Just(Phase::Other),
    ]
    .boxed()
}

pub fn cluster() -> BoxedStrategy<Vec<String>> {
    proptest::sample::subsequence(CLUSTER_POOL.to_vec(), 1..=CLUSTER_POOL.len())
        .prop_map(|v| v.into_iter().map(str::to_owned).collect())
        .boxed()
}

/// Any queue: phantom and invalid patterns, equal and zero positions.
pub fn any_input() -> BoxedStrategy<QueueInput> {
    (
        proptest::collection::vec((filter(true, true), phase(), 0..5u32, 0..4i64), 0..10),
        cluster(),
        0..4u32,
    )
        .prop_map(|(bs, cluster, limit)| QueueInput {
            backups: bs
                .into_iter()
                .enumerate()
                .map(|(i, (f, phase, pos, created))| BackupInput {
                    name: format!("b{i}"),
                    resource_version: Some(format!("{i}")),
                    phase,
                    queue_position: if phase == Phase::Queued { pos } else { 0 },
                    created: ts(created),
                    namespaces: f,
                })
                .collect(),
            cluster_namespaces: cluster,
            concurrent_backups: limit,
        })
        .boxed()
}

/// Queues within the preconditions of Q4.22, where Velero is safe and
/// order-independent: distinct positive positions, valid patterns, literal
/// namespaces that exist.
pub fn velero_input() -> BoxedStrategy<QueueInput> {
    (1..10usize)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec((filter(false, false), phase(), 0..4i64), n),
                Just((1..=n as u32).collect::<Vec<_>>()).prop_shuffle(),
                cluster(),
                0..4u32,
            )
        })
        .prop_map(|(bs, positions, _cluster, limit)| QueueInput {
            backups: bs
                .into_iter()
                .zip(positions)
                .enumerate()
                .map(|(i, ((f, phase, created), pos))| BackupInput {
                    name: format!("b{i}"),
                    resource_version: None,
                    phase,
                    queue_position: if phase == Phase::Queued { pos * 2 } else { 0 },
                    created: ts(created),
                    namespaces: f,
                })
                .collect(),
            // Every literal exists: no namespace is "not created yet".
            cluster_namespaces: CLUSTER_POOL.iter().map(|s| s.to_string()).collect(),
            concurrent_backups: limit,
        })
        .boxed()
}
