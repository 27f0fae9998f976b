//! `tacker::plan` (E.4, E.6): the NoValidHost count under hard
//! anti-affinity against a simple oracle, affinity never failing,
//! and Tacker's node-name guess.

use anti_affinity_placement::tacker::plan::{ComputeHost, guessed_node_name, plan};
use anti_affinity_placement::tacker::translate::translate;
use anti_affinity_placement::tacker::vnfd::read_vnfd;
use proptest::prelude::*;

fn vnfd(workers: u32, rule: &str) -> String {
    format!(
        "topology_template:\n  node_templates:\n    worker:\n      type: tosca.nodes.nfv.Vdu.Compute\n      properties:\n        vdu_profile: {{min_number_of_instances: {workers}, max_number_of_instances: {workers}}}\n  policies:\n    - spread:\n        type: {rule}\n        targets: [worker]\n        properties: {{scope: nfvi_node}}\n"
    )
}

fn hosts(usable: &[bool]) -> Vec<ComputeHost> {
    usable
        .iter()
        .enumerate()
        .map(|(i, &usable)| ComputeHost {
            name: format!("compute-{i}"),
            usable,
        })
        .collect()
}

proptest! {
    #[test]
    fn hard_anti_affinity_leaves_exactly_the_workers_beyond_the_usable_hosts_without_a_host(
        workers in 0u32..12,
        usable in proptest::collection::vec(any::<bool>(), 0..8),
    ) {
        let vnfd = read_vnfd("v.yaml", &vnfd(workers, "tosca.policies.nfv.AntiAffinityRule"), &mut |_| Ok(None), None).unwrap();
        let translation = translate(&vnfd);
        let plan = plan(&vnfd, &translation, &hosts(&usable), &[], None).unwrap();
        let free = u32::try_from(usable.iter().filter(|u| **u).count()).unwrap();
        let group = &plan.steps[0].groups[0];
        prop_assert_eq!(group.no_valid_host, workers.saturating_sub(free));
        prop_assert_eq!(plan.steps[0].fits, workers <= free);
        prop_assert!(group.per_host.values().all(|n| *n == 1));
    }
}

#[test]
fn affinity_never_fails_and_keeps_every_server_on_one_host() {
    let text = vnfd(5, "tosca.policies.nfv.AffinityRule");
    let vnfd = read_vnfd("v.yaml", &text, &mut |_| Ok(None), None).unwrap();
    let translation = translate(&vnfd);
    let plan = plan(&vnfd, &translation, &hosts(&[true, true]), &[], None).unwrap();
    assert!(plan.steps[0].fits);
    let per_host = &plan.steps[0].groups[0].per_host;
    assert_eq!(per_host.len(), 1);
    assert_eq!(per_host.values().sum::<u32>(), 5);
    assert_eq!(plan.first_no_valid_host, None);
}

#[test]
fn tacker_guesses_worker_and_the_last_octet() {
    assert_eq!(guessed_node_name("10.10.0.46").as_deref(), Some("worker46"));
    assert_eq!(guessed_node_name("fd00::1"), None);
    assert_eq!(guessed_node_name("10.10.0.256"), None);
}
