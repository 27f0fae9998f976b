//! `host-label-controller` (Machines source, the default) with Cluster API
//! v1.14's Machine CRD.
//!
//! At size N there are N Nodes, created without the host label, and N
//! Machines in namespace `capi`, 20 per ESXi host, each naming its Node in
//! `status.nodeRef.name` and its host in the label
//! `node.cluster.x-k8s.io/esxi-host` (as CAPV writes it). The Machines are
//! created as `v1beta2`, the CRD's storage version: the bed runs no
//! conversion webhook, and the CRD as the module ships it declares no
//! conversion, so the API server serves the stored objects as `v1beta1`
//! too (only `apiVersion` changes), which is what the controller reads.
//!
//! Event: a Machine moves to another host (vMotion: its label changes);
//! the controller relabels its Node (one merge patch).

use std::collections::HashMap;

use anyhow::Context as _;
use kube::api::{Api, DynamicObject};
use kube_testbed::Testbed;
use serde_json::json;

use super::{EventKind, Mirror, Target, Workload};
use crate::Controller;

const MACHINES_NAMESPACE: &str = "capi";
const CONTROLLER_NAMESPACE: &str = "host-label-controller";
const HOST_LABEL: &str = "node.cluster.x-k8s.io/esxi-host";
const VMS_PER_HOST: usize = 20;
const MACHINE: (&str, &str, &str, &str) = ("cluster.x-k8s.io", "v1beta2", "Machine", "machines");

fn summarize(object: &DynamicObject) -> Option<String> {
    object
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(HOST_LABEL).cloned())
}

pub(crate) struct HostLabel {
    machines: Option<Api<DynamicObject>>,
    nodes: Option<Api<DynamicObject>>,
    mirror: Option<Mirror<Option<String>>>,
    /// Node → the host its Machine names.
    expected: HashMap<String, String>,
    events: usize,
}

impl HostLabel {
    pub(crate) fn new() -> Self {
        HostLabel {
            machines: None,
            nodes: None,
            mirror: None,
            expected: HashMap::new(),
            events: 0,
        }
    }

    fn with<R>(&self, read: impl FnOnce(&HashMap<String, Option<String>>) -> R) -> R {
        match &self.mirror {
            Some(mirror) => mirror.with(read),
            None => read(&HashMap::new()),
        }
    }
}

fn host(n: usize) -> String {
    format!("esx-{n:04}")
}

impl Workload for HostLabel {
    fn controller(&self) -> Controller {
        Controller::HostLabel
    }

    fn manifest_args(&self) -> Vec<String> {
        ["--namespace", CONTROLLER_NAMESPACE]
            .map(str::to_owned)
            .to_vec()
    }

    fn describe(&self, size: usize) -> String {
        format!(
            "{size} Machines and {size} Nodes on {} hosts",
            size.div_ceil(VMS_PER_HOST)
        )
    }

    async fn setup(&mut self, bed: &Testbed) -> anyhow::Result<()> {
        let crd = bed
            .layout()
            .crds("cluster-api", &bed.versions().cluster_api)?
            .join("cluster.x-k8s.io_machines.yaml");
        bed.install_crd_files(&[crd]).await?;
        let client = bed.client();
        super::ensure_namespace(&client, MACHINES_NAMESPACE).await?;
        super::ensure_namespace(&client, CONTROLLER_NAMESPACE).await?;
        let nodes = super::dynamic_api(&client, ("", "v1", "Node", "nodes"), None);
        self.mirror = Some(Mirror::start(nodes.clone(), summarize, None));
        self.nodes = Some(nodes);
        self.machines = Some(super::dynamic_api(
            &client,
            MACHINE,
            Some(MACHINES_NAMESPACE),
        ));
        Ok(())
    }

    async fn populate(
        &mut self,
        from: usize,
        to: usize,
        concurrency: usize,
    ) -> anyhow::Result<usize> {
        let nodes = self.nodes.clone().context("setup has not run")?;
        let machines = self.machines.clone().context("setup has not run")?;
        super::create_all(
            &nodes,
            (from..to).map(|i| {
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {
                    "name": format!("node-{i:05}"),
                    "labels": {"kubernetes.io/hostname": format!("node-{i:05}")},
                }})
            }),
            concurrency,
        )
        .await?;
        super::create_all(
            &machines,
            (from..to).map(|i| {
                json!({
                    "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                    "metadata": {"name": format!("machine-{i:05}"), "namespace": MACHINES_NAMESPACE,
                        "labels": {"cluster.x-k8s.io/cluster-name": "prod", HOST_LABEL: host(i / VMS_PER_HOST)}},
                    "spec": {
                        "clusterName": "prod",
                        "bootstrap": {"dataSecretName": format!("machine-{i:05}-bootstrap")},
                        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "VSphereMachine", "name": format!("machine-{i:05}")},
                    },
                })
            }),
            concurrency,
        )
        .await?;
        // status.nodeRef goes through the status subresource.
        let patches = (from..to).map(|i| {
            let machines = machines.clone();
            async move {
                super::patch(
                    &machines,
                    &format!("machine-{i:05}"),
                    &json!({"status": {"nodeRef": {"name": format!("node-{i:05}")}}}),
                    true,
                )
                .await
            }
        });
        futures::TryStreamExt::try_collect::<()>(futures::StreamExt::buffer_unordered(
            futures::stream::iter(patches),
            concurrency.max(1),
        ))
        .await?;
        for i in from..to {
            self.expected
                .insert(format!("node-{i:05}"), host(i / VMS_PER_HOST));
        }
        Ok(to - from)
    }

    fn mirrored(&self) -> bool {
        self.with(|state| state.len()) >= self.expected.len()
    }

    fn event_kinds(&self) -> Vec<EventKind> {
        vec![EventKind {
            name: "a Machine moves to another host (its Node is relabelled)",
            paced: true,
        }]
    }

    async fn event(&mut self, kind: usize, _i: usize) -> anyhow::Result<Option<Target>> {
        let machines = self.machines.clone().context("setup has not run")?;
        let size = self.expected.len();
        if size == 0 {
            return Ok(None);
        }
        self.events += 1;
        // Spread over the Machines (7919 is prime).
        let i = (self.events * 7919) % size;
        let hosts = size.div_ceil(VMS_PER_HOST).max(2);
        let to = host((i / VMS_PER_HOST + 1 + self.events) % hosts);
        let node = format!("node-{i:05}");
        let to = if self.expected.get(&node) == Some(&to) {
            format!("esx-moved-{}", self.events)
        } else {
            to
        };
        super::patch(
            &machines,
            &format!("machine-{i:05}"),
            &json!({"metadata": {"labels": {HOST_LABEL: to}}}),
            false,
        )
        .await?;
        self.expected.insert(node.clone(), to);
        Ok(Some(Target {
            resource: "nodes",
            name: node,
            kind,
        }))
    }

    fn handled(&self, target: &Target) -> bool {
        let expected = self.expected.get(&target.name);
        self.with(|state| {
            state
                .get(&target.name)
                .is_some_and(|host| host.as_ref() == expected)
        })
    }

    fn converged(&self) -> Result<(), String> {
        self.with(|state| {
            let wrong = self
                .expected
                .iter()
                .filter(|(node, host)| {
                    state
                        .get(*node)
                        .is_none_or(|label| label.as_ref() != Some(*host))
                })
                .count();
            if wrong == 0 {
                Ok(())
            } else {
                Err(format!("{wrong} Nodes without their Machine's host"))
            }
        })
    }
}
