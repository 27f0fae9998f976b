//! Harness for stable instruction counts of the placement benchmark's
//! workload (criterion timings on a shared machine are noisy):
//!
//! ```text
//! cargo build --release -p anti-affinity-placement --example placement_profile
//! for m in build validate plan naive; do for g in 1 500; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$m.$g \
//!     target/release/examples/placement_profile $m $g 2>&1 | grep refs; done; done
//! ```
//!
//! `build` only builds the inventory (subtract it from the others); `validate`
//! adds `CheckedInventory::new`; `plan` adds `plan()`; `naive` runs the naive
//! baseline on the built inventory. Second argument: number of groups.
#[path = "../tests/support/naive.rs"]
mod naive;
use anti_affinity_placement::hosts::{
    Amount, CheckedInventory, Group, Host, HostInventory, Policy, Vm,
};
use std::hint::black_box;
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

fn main() {
    let mode = std::env::args()
        .nth(1)
        .expect("mode: build|validate|plan|naive");
    let groups: usize = std::env::args()
        .nth(2)
        .and_then(|g| g.parse().ok())
        .expect("number of groups");
    let inv = inventory(1_000, 10_000, groups);
    match mode.as_str() {
        "build" => {}
        "validate" => {
            black_box(CheckedInventory::new(&inv).unwrap());
        }
        "plan" => {
            let c = CheckedInventory::new(&inv).unwrap();
            black_box(c.plan());
        }
        "naive" => {
            black_box(naive::naive_plan(&inv));
        }
        other => panic!("unknown mode {other}"),
    }
}
