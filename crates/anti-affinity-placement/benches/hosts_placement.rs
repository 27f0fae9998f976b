//! Soft placement of 10,000 VMs over 1,000 hosts (target: ≤ 100 ms, see docs/performance.md),
//! against a naive O(VMs × hosts) greedy measured in the same run.
//!
//! `cargo bench -p anti-affinity-placement --bench hosts_placement -- --warm-up-time 1 --measurement-time 3`

#[path = "../tests/support/naive.rs"]
mod naive;

use std::hint::black_box;

use anti_affinity_placement::hosts::{
    Amount, CheckedInventory, Group, Host, HostInventory, Policy, Vm,
};
use criterion::{Criterion, criterion_group, criterion_main};

fn amounts(cpu: u64, mem: u64) -> std::collections::BTreeMap<String, Amount> {
    [
        ("cpu".to_owned(), Amount::from(cpu)),
        ("memoryMiB".to_owned(), Amount::from(mem)),
    ]
    .into_iter()
    .collect()
}

/// `hosts` hosts (every 50th in maintenance, capacities vary), `vms` VMs in
/// `groups` soft groups (every 10th group in a shared set), requests vary.
fn inventory(hosts: usize, vms: usize, groups: usize) -> HostInventory {
    HostInventory {
        hosts: (0..hosts)
            .map(|i| Host {
                name: format!("esx{i:04}"),
                capacity: amounts(64 + (i as u64 % 4) * 16, 262_144 + (i as u64 % 3) * 65_536),
                maintenance: i % 50 == 49,
            })
            .collect(),
        groups: (0..groups)
            .map(|g| Group {
                name: format!("md-{g}"),
                policy: Policy::SoftAntiAffinity,
                max_per_host: None,
                anti_affinity_set: (g % 10 == 0 && groups > 1).then(|| "pool".to_owned()),
            })
            .collect(),
        vms: (0..vms)
            .map(|i| Vm {
                name: format!("vm-{i:05}"),
                group: format!("md-{}", i % groups),
                requests: amounts(2 + (i as u64 % 3), 8_192 + (i as u64 % 2) * 8_192),
                host: None,
            })
            .collect(),
        ..HostInventory::new()
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("soft_placement_10000_vms_1000_hosts");
    group.sample_size(10);
    for (label, groups) in [("one_group", 1), ("500_groups", 500)] {
        let inv = inventory(1_000, 10_000, groups);
        // Same answer as the baseline, checked once outside the timing.
        let checked = CheckedInventory::new(&inv).expect("valid");
        assert_eq!(checked.plan().assignments, naive::naive_plan(&inv));
        group.bench_function(format!("{label}/indexed_plan"), |b| {
            b.iter(|| black_box(checked.plan()))
        });
        group.bench_function(format!("{label}/validate_and_plan"), |b| {
            b.iter(|| {
                black_box(
                    CheckedInventory::new(black_box(&inv))
                        .expect("valid")
                        .plan(),
                )
            })
        });
        group.bench_function(format!("{label}/naive_baseline"), |b| {
            b.iter(|| black_box(naive::naive_plan(black_box(&inv))))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
