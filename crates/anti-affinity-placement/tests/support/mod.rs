//! Shared test helpers: inventory builders, random inventories, the naive
//! placement oracle.
#![allow(dead_code)]

pub mod naive;

use std::collections::BTreeMap;

use anti_affinity_placement::hosts::{Amount, Group, Host, HostInventory, Policy, Vm};
use proptest::prelude::*;

pub fn amounts(pairs: &[(&str, u64)]) -> BTreeMap<String, Amount> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Amount::from(*v)))
        .collect()
}

pub fn host(name: &str, cpu: u64, mem: u64, maintenance: bool) -> Host {
    Host {
        name: name.to_owned(),
        capacity: amounts(&[("cpu", cpu), ("mem", mem)]),
        maintenance,
    }
}

pub fn soft(name: &str, set: Option<&str>) -> Group {
    Group {
        name: name.to_owned(),
        policy: Policy::SoftAntiAffinity,
        max_per_host: None,
        anti_affinity_set: set.map(str::to_owned),
    }
}

pub fn hard(name: &str, k: u32, set: Option<&str>) -> Group {
    Group {
        name: name.to_owned(),
        policy: Policy::AntiAffinity,
        max_per_host: Some(k),
        anti_affinity_set: set.map(str::to_owned),
    }
}

pub fn vm(name: &str, group: &str, cpu: u64, mem: u64, host: Option<&str>) -> Vm {
    Vm {
        name: name.to_owned(),
        group: group.to_owned(),
        requests: amounts(&[("cpu", cpu), ("mem", mem)]),
        host: host.map(str::to_owned),
    }
}

pub fn inventory(hosts: Vec<Host>, groups: Vec<Group>, vms: Vec<Vm>) -> HostInventory {
    HostInventory {
        hosts,
        groups,
        vms,
        ..HostInventory::new()
    }
}

/// Per-host count of the VMs whose group maps to `unit` (set or group name).
pub fn unit_counts(inv: &HostInventory, unit: &str) -> BTreeMap<String, u32> {
    let unit_of = |g: &str| {
        let g = inv.groups.iter().find(|x| x.name == g).unwrap();
        g.anti_affinity_set
            .clone()
            .unwrap_or_else(|| g.name.clone())
    };
    let mut counts: BTreeMap<String, u32> = inv.hosts.iter().map(|h| (h.name.clone(), 0)).collect();
    for v in &inv.vms {
        if let Some(h) = &v.host
            && unit_of(&v.group) == unit
        {
            *counts.get_mut(h).unwrap() += 1;
        }
    }
    counts
}

/// Random valid inventory: up to `max_hosts` hosts (some in maintenance),
/// up to 4 groups (soft or hard, some in set "s"), VMs with small requests,
/// some already placed.
pub fn arb_inventory(max_hosts: usize, max_vms: usize) -> impl Strategy<Value = HostInventory> {
    let hosts = prop::collection::vec(
        (0u64..=16, 0u64..=64, prop::bool::weighted(0.2)),
        1..=max_hosts,
    );
    let groups = prop::collection::vec(
        (prop::bool::ANY, 1u32..=3, prop::bool::weighted(0.3)),
        1..=4,
    );
    (hosts, groups)
        .prop_flat_map(move |(hosts, groups)| {
            let nh = hosts.len();
            let ng = groups.len();
            let vms = prop::collection::vec(
                (
                    0..ng,
                    0u64..=6,
                    0u64..=16,
                    prop::option::weighted(0.3, 0..nh),
                ),
                0..=max_vms,
            );
            (Just(hosts), Just(groups), vms)
        })
        .prop_map(|(hosts, groups, vms)| {
            // A set must share policy: members of set "s" take the first member's policy.
            let first_in_set = groups.iter().find(|g| g.2).map(|g| (g.0, g.1));
            let groups: Vec<Group> = groups
                .iter()
                .enumerate()
                .map(|(i, &(is_hard, k, in_set))| {
                    let name = format!("g{i}");
                    let (is_hard, k) = if in_set {
                        first_in_set.unwrap()
                    } else {
                        (is_hard, k)
                    };
                    let set = in_set.then_some("s");
                    if is_hard {
                        hard(&name, k, set)
                    } else {
                        soft(&name, set)
                    }
                })
                .collect();
            let hosts: Vec<Host> = hosts
                .iter()
                .enumerate()
                .map(|(i, &(cpu, mem, m))| host(&format!("h{i:02}"), cpu, mem, m))
                .collect();
            let vms = vms
                .iter()
                .enumerate()
                .map(|(i, &(g, cpu, mem, h))| {
                    let host_name = h.map(|h| hosts[h].name.clone());
                    vm(
                        &format!("vm{i:02}"),
                        &groups[g].name,
                        cpu,
                        mem,
                        host_name.as_deref(),
                    )
                })
                .collect();
            inventory(hosts, groups, vms)
        })
}
