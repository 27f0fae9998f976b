//! Capacity: the simulator's answer ([`ClusterState::capacity`], the one
//! `policyctl capacity` gives) against the number of copies of one pod the
//! real kube-scheduler binds before the first copy stays pending.
//!
//! The template is one of the seed's pending pods (one with required pod
//! anti-affinity or a `DoNotSchedule` spread constraint when there is one)
//! with a required anti-affinity term on the hostname key against its own
//! `app` added, so that the count is at most the number of nodes. Copies
//! are created one at a time, named as the simulator names them
//! (`<name>-copy-<i>`), each after the previous one's decision.
//!
//! Every copy's decision is also checked as in the main test, on a
//! simulator state that follows the real placements: when kube-scheduler
//! broke a tie between nodes another way than the simulator (which takes
//! the first node name among equal totals), the counts may differ without
//! any decision differing; that is counted apart, not as a mismatch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube_scheduler_sim::{ClusterState, ScheduleResult};
use serde_json::{Value, json};

use super::{Expected, Real, agrees, decision, delete_pod, expected};

/// Counts over a run.
#[derive(Debug, Default)]
pub struct CapacityTally {
    /// Seeds whose capacity was compared.
    pub checks: u64,
    /// Copies the real scheduler bound, over all seeds.
    pub copies: u64,
    /// Seeds where the simulator's count equals the real one.
    pub equal: u64,
    /// Seeds where the counts differ only because a tie between nodes was
    /// broken another way (every real decision agreed with the simulator).
    pub tie_order: u64,
}

/// The template: a pending pod that has required anti-affinity or a hard
/// spread constraint if one fits somewhere (else the first that fits, else
/// the first), with a required anti-affinity term on the hostname against
/// its own `app` added.
pub fn template(base: &ClusterState, pending: &[Pod]) -> Option<Pod> {
    let fits = |pod: &Pod| {
        base.evaluate(pod, &super::options())
            .is_ok_and(|r| !r.feasible.is_empty())
    };
    let constrained = |pod: &Pod| {
        let value = serde_json::to_value(pod).unwrap_or_default();
        let spec = &value["spec"];
        spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            .is_array()
            || spec["topologySpreadConstraints"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["whenUnsatisfiable"] == "DoNotSchedule"))
    };
    let chosen = pending
        .iter()
        .find(|p| constrained(p) && fits(p))
        .or_else(|| pending.iter().find(|p| fits(p)))
        .or_else(|| pending.first())?;
    let mut value = serde_json::to_value(chosen).ok()?;
    let app = value["metadata"]["labels"]["app"].clone();
    let term = json!({
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": super::generate::HOSTNAME,
    });
    let spec = value["spec"].as_object_mut()?;
    let affinity = spec.entry("affinity").or_insert_with(|| json!({}));
    let anti = affinity
        .as_object_mut()?
        .entry("podAntiAffinity")
        .or_insert_with(|| json!({}));
    let required = anti
        .as_object_mut()?
        .entry("requiredDuringSchedulingIgnoredDuringExecution")
        .or_insert_with(|| Value::Array(Vec::new()));
    required.as_array_mut()?.push(term);
    serde_json::from_value(value).ok()
}

fn named(pod: &Pod, name: &str) -> Pod {
    let mut copy = pod.clone();
    copy.metadata.name = Some(name.to_owned());
    copy
}

/// Creates copies of `template` one at a time until one stays pending (or
/// `nodes + 2` are bound), compares the count with the simulator's
/// capacity over `base`, and deletes the copies again. Returns mismatch
/// reports.
pub async fn check(
    client: &kube::Client,
    seed: u64,
    base: &ClusterState,
    template: &Pod,
    nodes: usize,
    tally: &mut CapacityTally,
) -> Vec<String> {
    let namespace = template.metadata.namespace.as_deref().unwrap_or("default");
    let name = template.metadata.name.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let options = super::options();
    let mut mismatches = Vec::new();
    // The simulator following the real placements, for each decision.
    let mut follow = base.clone();
    let mut real_nodes: BTreeMap<String, usize> = BTreeMap::new();
    let mut created_names = Vec::new();
    let mut as_created: Option<Pod> = None;
    let mut last = None;
    for i in 1..=nodes + 2 {
        let copy_name = format!("{name}-copy-{i}");
        let created = match pods
            .create(&PostParams::default(), &named(template, &copy_name))
            .await
        {
            Ok(pod) => pod,
            Err(error) => panic!("seed {seed}: creating copy {copy_name}: {error}"),
        };
        created_names.push(copy_name.clone());
        as_created.get_or_insert_with(|| created.clone());
        let result: ScheduleResult = match follow.evaluate(&created, &options) {
            Ok(result) => result,
            Err(error) => panic!("seed {seed}: the simulator failed on {copy_name}: {error}"),
        };
        let want = expected(&result, &created);
        let real = decision(&pods, &copy_name).await;
        if !agrees(&want, &real) {
            mismatches.push(format!(
                "seed {seed}: capacity copy {namespace}/{copy_name}\n  simulator expects: {want:?}\n  real kube-scheduler: {real:?}\n"
            ));
        }
        match &real {
            Real::Bound(node) => {
                *real_nodes.entry(node.clone()).or_default() += 1;
                let mut bound = created.clone();
                if let Some(spec) = bound.spec.as_mut() {
                    spec.node_name = Some(node.clone());
                }
                if let Err(error) = follow.add_pod(&bound) {
                    panic!(
                        "seed {seed}: the simulator refused the bound copy {copy_name}: {error}"
                    );
                }
            }
            other => {
                last = Some((other.clone(), want));
                break;
            }
        }
    }
    let real_count: usize = real_nodes.values().sum();
    // The simulator's answer, from the pod as the API server returned it
    // (defaults and the matchLabelKeys merge), under the template's name.
    let sim_template = named(as_created.as_ref().unwrap_or(template), &name);
    let mut state = base.clone();
    let sim = match state.capacity(&sim_template, nodes + 2, &options) {
        Ok(capacity) => capacity,
        Err(error) => panic!("seed {seed}: the simulator's capacity failed: {error}"),
    };
    tally.checks += 1;
    tally.copies += real_count as u64;
    if sim.count == real_count {
        tally.equal += 1;
        println!(
            "seed {seed}: capacity of {namespace}/{name}: {real_count} copies on both sides {real_nodes:?}"
        );
        // The reason the next copy does not fit, as the real message.
        if let (Some((real, _)), Some(reason)) = (&last, &sim.reason) {
            let want = expected_reason(reason, template);
            if !agrees(&want, real) {
                mismatches.push(format!(
                    "seed {seed}: capacity of {namespace}/{name}: {} copies on both sides, but the next one\n  simulator: {want:?}\n  real kube-scheduler: {real:?}\n",
                    sim.count
                ));
            }
        }
    } else {
        let line = format!(
            "seed {seed}: capacity of {namespace}/{name}: simulator {} copies {:?}, real kube-scheduler {real_count} copies {real_nodes:?}",
            sim.count, sim.nodes
        );
        if mismatches.is_empty() {
            tally.tie_order += 1;
            println!("{line} (every decision agreed: a tie between nodes broken another way)");
        } else {
            mismatches.push(format!("{line}\n"));
        }
    }
    if last.is_none() {
        println!("seed {seed}: capacity of {namespace}/{name}: no copy stayed pending");
    }
    for copy in &created_names {
        delete_pod(&pods, copy).await;
    }
    mismatches
}

/// What kube-scheduler says about the copy that does not fit, from the
/// simulator's capacity reason (a FitError).
fn expected_reason(reason: &str, copy: &Pod) -> Expected {
    let result = ScheduleResult {
        summary: Some(reason.to_owned()),
        ..Default::default()
    };
    expected(&result, copy)
}
