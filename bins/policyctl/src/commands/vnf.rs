//! `vnf translate --vnfd FILE|DIR` and `vnf plan --vnfd FILE|DIR
//! [--base-hot FILE] [--hypervisors FILE] [--servers FILE] [-f NODES]`: a
//! Tacker VNFD's affinity rules as heat-translator translates them (or a
//! BaseHOT's server groups), and the plan of its VDUs over the compute
//! hosts (anti-affinity-placement's `tacker` module, E.1–E.7). These
//! commands read files, not cluster objects.

use std::io::{Read, Write};
use std::path::Path;

use anti_affinity_placement::tacker::base_hot::{BaseHot, read_base_hot};
use anti_affinity_placement::tacker::layers::{
    CnfPod, CnfWorkload, HostRule, LabelledNode, WorkloadLayer, join_layers,
};
use anti_affinity_placement::tacker::plan::{
    CIS_NODE_LABEL, ComputeHost, LabelState, NodeLabel, Plan, Server, plan,
};
use anti_affinity_placement::tacker::servers::{node_addresses, servers_from_listing};
use anti_affinity_placement::tacker::translate::{Translation, translate};
use anti_affinity_placement::tacker::vnfd::{LoadResult, Vnfd, read_vnfd};
use serde_json::{Value, json};

use crate::cli::{GlobalArgs, VnfAction, VnfPlanArgs, VnfdArgs};
use crate::commands::CommandError;
use crate::output::{Output, OutputFormat, fitted_table, or_dash};
use crate::{Exit, input, manifest};

fn input_error(message: String) -> CommandError {
    CommandError::Input(message)
}

/// Reads a file a VNFD imports or a BaseHOT instantiates: `None` when
/// there is no such file.
fn load_file(name: &str) -> LoadResult {
    match std::fs::read_to_string(name) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error.to_string()),
    }
}

/// Reads the VNFD of `--vnfd`: a file with its imports, or every YAML file
/// of a directory (each file once, imports included).
pub fn read(args: &VnfdArgs) -> Result<Vnfd, CommandError> {
    let path = &args.vnfd;
    let shown = path.display().to_string();
    let (entry, text) = if path.is_dir() {
        let mut files: Vec<String> = std::fs::read_dir(path)
            .map_err(|error| input_error(format!("--vnfd {shown}: {error}")))?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            .collect();
        files.sort();
        // A document importing every file of the directory.
        let imports: Vec<String> = files.iter().map(|f| format!("  - {f:?}\n")).collect();
        (
            format!("{}/", shown.trim_end_matches('/')),
            format!("imports:\n{}", imports.concat()),
        )
    } else {
        let text = std::fs::read_to_string(path)
            .map_err(|error| input_error(format!("--vnfd {shown}: {error}")))?;
        (shown.clone(), text)
    };
    read_vnfd(&entry, &text, &mut load_file, args.flavour.as_deref()).map_err(|error| {
        let hint = if matches!(
            error,
            anti_affinity_placement::tacker::vnfd::VnfdError::Flavours { .. }
        ) {
            " with --flavour"
        } else {
            ""
        };
        input_error(format!("{error}{hint}"))
    })
}

/// Reads the BaseHOT of `--base-hot`, its nested templates from disk.
fn read_base_hot_file(path: &Path) -> Result<BaseHot, CommandError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|error| input_error(format!("--base-hot {shown}: {error}")))?;
    read_base_hot(&shown, &text, &mut load_file).map_err(|error| input_error(error.to_string()))
}

fn base_hot_findings_table(hot: &BaseHot) -> String {
    fitted_table(
        &["resource", "finding", "ref", "what happens"],
        hot.findings.iter().map(|f| {
            [
                f.resource.clone(),
                f.code().to_owned(),
                "E.7".to_owned(),
                f.to_string(),
            ]
        }),
    )
}

fn base_hot_json(hot: &BaseHot) -> Value {
    json!({
        "file": hot.file,
        "scalingGroups": hot.scaling.iter().map(|g| json!({
            "resource": g.resource,
            "vdus": g.vdus,
            "min": g.min,
            "max": g.max,
            "desired": g.desired,
        })).collect::<Vec<_>>(),
        "findings": hot.findings.iter().map(|f| json!({
            "file": f.file,
            "path": f.path,
            "resource": f.resource,
            "finding": f.code(),
            "ref": "E.7",
            "message": f.to_string(),
        })).collect::<Vec<_>>(),
    })
}

fn findings_table(translation: &Translation) -> String {
    fitted_table(
        &[
            "rule",
            "target",
            "finding",
            "ref",
            "what heat-translator does",
        ],
        translation.findings.iter().map(|f| {
            [
                f.rule.clone(),
                or_dash(f.target.as_ref()),
                f.code().to_owned(),
                f.rule_id().to_owned(),
                f.to_string(),
            ]
        }),
    )
}

fn findings_json(translation: &Translation) -> Value {
    Value::Array(
        translation
            .findings
            .iter()
            .map(|f| {
                json!({
                    "file": f.file,
                    "path": f.path,
                    "rule": f.rule,
                    "target": f.target,
                    "finding": f.code(),
                    "ref": f.rule_id(),
                    "message": f.to_string(),
                })
            })
            .collect(),
    )
}

/// Runs a `vnf` command and writes its output.
pub fn run(
    action: &VnfAction,
    global: &GlobalArgs,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Exit, CommandError> {
    match action {
        VnfAction::Translate(args) => {
            let vnfd = read(args)?;
            let translation = translate(&vnfd);
            let text = match global.output {
                OutputFormat::Table => {
                    let mut text = format!(
                        "VNFD {}: {} server group(s), {} finding(s)\n\n",
                        vnfd.file,
                        translation.groups.len(),
                        translation.findings.len()
                    );
                    if !translation.findings.is_empty() {
                        text.push_str(&findings_table(&translation));
                        text.push('\n');
                    }
                    text.push_str("The server-group part of heat-translator's Heat template:\n\n");
                    text.push_str(&translation.hot_yaml());
                    text
                }
                format => {
                    for finding in &translation.findings {
                        let _ = writeln!(
                            stderr,
                            "warning: {}: {}: {} ({})",
                            finding.file,
                            finding.path,
                            finding,
                            finding.rule_id()
                        );
                    }
                    if format == OutputFormat::Json {
                        let document = serde_json::to_string_pretty(&translation.hot_document())
                            .map_err(|error| input_error(error.to_string()))?;
                        document + "\n"
                    } else {
                        translation.hot_yaml()
                    }
                }
            };
            write(stdout, &text)?;
            Ok(Exit::Success)
        }
        VnfAction::Plan(args) => {
            let inventory = if global.filenames.is_empty() {
                None
            } else {
                let sources = input::read_all(
                    &global.filenames,
                    input::ReadOptions {
                        recursive: global.recursive,
                        max_input_bytes: global.max_input_bytes.0,
                    },
                    stdin,
                )?;
                Some(manifest::read_sources(&sources)?)
            };
            let output = plan_with(args, inventory.as_ref())?;
            crate::output::write(global.output, &output, stdout).map_err(CommandError::Output)?;
            Ok(Exit::Success)
        }
    }
}

/// `vnf plan`'s output for `args`, with the Nodes and the CNF of
/// `inventory` when there is one (also the `vnf` section of `report`).
pub fn plan_with(
    args: &VnfPlanArgs,
    inventory: Option<&manifest::Inventory>,
) -> Result<Output, CommandError> {
    let vnfd = read(&args.vnfd)?;
    let base_hot = args
        .base_hot
        .as_deref()
        .map(read_base_hot_file)
        .transpose()?;
    let translation = match &base_hot {
        Some(hot) => hot.translation.clone(),
        None => translate(&vnfd),
    };
    let servers = match &args.servers {
        Some(path) => read_servers(path)?,
        None => Vec::new(),
    };
    let hosts = match &args.hypervisors {
        Some(path) => read_hypervisors(path)?,
        None => {
            let mut hosts: Vec<String> = servers.iter().filter_map(|s| s.host.clone()).collect();
            hosts.sort();
            hosts.dedup();
            hosts
                .into_iter()
                .map(|name| ComputeHost { name, usable: true })
                .collect()
        }
    };
    if hosts.is_empty() {
        return Err(CommandError::Usage(
            "vnf plan needs the compute hosts: give --hypervisors (openstack hypervisor list -f json) or --servers (openstack server list --long -f json)".to_owned(),
        ));
    }
    let labelled = inventory.map(labelled_nodes);
    let nodes = labelled.as_ref().map(|labelled| {
        labelled
            .iter()
            .map(|n| NodeLabel {
                name: n.name.clone(),
                host: n.host_label.clone(),
            })
            .collect::<Vec<_>>()
    });
    let plan = plan(&vnfd, &translation, &hosts, &servers, nodes.as_deref())
        .map_err(|error| input_error(error.to_string()))?;
    let layers = match (inventory, &labelled) {
        (Some(inventory), Some(labelled)) => cnf_layers(inventory, &plan, &servers, labelled),
        _ => Vec::new(),
    };
    plan_output(&vnfd, &translation, base_hot.as_ref(), &plan, &layers)
}

fn write(stdout: &mut dyn Write, text: &str) -> Result<(), CommandError> {
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CommandError::Output),
    }
}

fn read_json(path: &Path, what: &str) -> Result<Vec<serde_json::Map<String, Value>>, CommandError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|error| input_error(format!("--{what} {shown}: {error}")))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|error| input_error(format!("--{what} {shown}: not JSON: {error}")))?;
    match value {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(map),
                other => Err(input_error(format!(
                    "--{what} {shown}: [{i}]: expected an object, found {other}"
                ))),
            })
            .collect(),
        other => Err(input_error(format!(
            "--{what} {shown}: expected the JSON list `openstack ... -f json` writes, found {}",
            kind_of(&other)
        ))),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn text_field(
    map: &serde_json::Map<String, Value>,
    keys: &[&str],
    at: impl Fn(&str) -> String,
) -> Result<Option<String>, CommandError> {
    for key in keys {
        match map.get(*key) {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => return Ok(Some(text.clone())),
            Some(other) => {
                return Err(input_error(format!(
                    "{}: expected a string, found {other}",
                    at(key)
                )));
            }
        }
    }
    Ok(None)
}

/// `openstack hypervisor list -f json`: `Hypervisor Hostname` and `State`.
fn read_hypervisors(path: &Path) -> Result<Vec<ComputeHost>, CommandError> {
    let shown = path.display().to_string();
    let mut hosts = Vec::new();
    for (i, item) in read_json(path, "hypervisors")?.iter().enumerate() {
        let at = |key: &str| format!("--hypervisors {shown}: [{i}].{key:?}");
        let name = text_field(item, &["Hypervisor Hostname", "hypervisor_hostname"], at)?
            .ok_or_else(|| {
                input_error(format!(
                    "--hypervisors {shown}: [{i}]: no \"Hypervisor Hostname\""
                ))
            })?;
        let state = text_field(item, &["State", "state"], at)?;
        hosts.push(ComputeHost {
            name,
            usable: state.as_deref().is_none_or(|s| s == "up"),
        });
    }
    hosts.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(hosts)
}

/// `openstack server list --long -f json`: `Name`, `Host` (or
/// `OS-EXT-SRV-ATTR:host`) and `Networks` (`{"net": ["10.0.0.5"]}` or
/// `"net=10.0.0.5, …"`).
fn read_servers(path: &Path) -> Result<Vec<Server>, CommandError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|error| input_error(format!("--servers {shown}: {error}")))?;
    servers_from_listing(&text).map_err(|error| input_error(format!("--servers {shown}: {error}")))
}

/// The Nodes of `-f` with their `CIS-node` label and addresses.
fn labelled_nodes(inventory: &manifest::Inventory) -> Vec<LabelledNode> {
    inventory
        .nodes
        .values()
        .filter_map(|n| {
            Some(LabelledNode {
                name: n.object.metadata.name.clone()?,
                host_label: n
                    .object
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(CIS_NODE_LABEL))
                    .cloned(),
                addresses: node_addresses(&n.object),
            })
        })
        .collect()
}

/// The CNF's workloads (Deployments and StatefulSets of `-f`) and their
/// pods, joined with the Nodes, the workers and the compute hosts (E.8).
fn cnf_layers(
    inventory: &manifest::Inventory,
    plan: &Plan,
    servers: &[Server],
    nodes: &[LabelledNode],
) -> Vec<WorkloadLayer> {
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kube::core::{Selector, SelectorExt};

    let rule_of = |spec: Option<&PodSpec>| -> Option<HostRule> {
        let anti = spec?.affinity.as_ref()?.pod_anti_affinity.as_ref()?;
        let required = anti
            .required_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .any(|t| t.topology_key == CIS_NODE_LABEL);
        let preferred = anti
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .any(|t| t.pod_affinity_term.topology_key == CIS_NODE_LABEL);
        if required {
            Some(HostRule::Required)
        } else {
            preferred.then_some(HostRule::Preferred)
        }
    };
    // (workload, namespace, selector) of each Deployment and StatefulSet.
    let mut workloads = Vec::new();
    let mut selectors: Vec<(String, String, Option<Selector>)> = Vec::new();
    let mut add = |kind: &str,
                   namespace: Option<&str>,
                   name: Option<&str>,
                   replicas: Option<i32>,
                   selector: Option<&LabelSelector>,
                   spec: Option<&PodSpec>| {
        let namespace = namespace.unwrap_or("default");
        let name = format!("{kind}/{namespace}/{}", name.unwrap_or_default());
        workloads.push(CnfWorkload {
            name: name.clone(),
            replicas: u32::try_from(replicas.unwrap_or(1)).unwrap_or(0),
            rule: rule_of(spec),
        });
        let selector = selector.and_then(|s| Selector::try_from(s.clone()).ok());
        selectors.push((name, namespace.to_owned(), selector));
    };
    for d in inventory.deployments.values() {
        let spec = d.object.spec.as_ref();
        add(
            "deployment",
            d.object.metadata.namespace.as_deref(),
            d.object.metadata.name.as_deref(),
            spec.and_then(|s| s.replicas),
            spec.map(|s| &s.selector),
            spec.and_then(|s| s.template.spec.as_ref()),
        );
    }
    for s in inventory.stateful_sets.values() {
        let spec = s.object.spec.as_ref();
        add(
            "statefulset",
            s.object.metadata.namespace.as_deref(),
            s.object.metadata.name.as_deref(),
            spec.and_then(|s| s.replicas),
            spec.map(|s| &s.selector),
            spec.and_then(|s| s.template.spec.as_ref()),
        );
    }
    let pods: Vec<CnfPod> = inventory
        .pods
        .values()
        .map(|p| {
            let meta = &p.object.metadata;
            let namespace = meta.namespace.as_deref().unwrap_or("default");
            let empty = Default::default();
            let labels = meta.labels.as_ref().unwrap_or(&empty);
            CnfPod {
                name: format!("{namespace}/{}", meta.name.as_deref().unwrap_or_default()),
                workload: selectors
                    .iter()
                    .find(|(_, ns, selector)| {
                        ns == namespace && selector.as_ref().is_some_and(|s| s.matches(labels))
                    })
                    .map(|(name, ..)| name.clone()),
                node: p.object.spec.as_ref().and_then(|s| s.node_name.clone()),
            }
        })
        .collect();
    join_layers(plan, servers, nodes, &workloads, &pods)
}

fn plan_output(
    vnfd: &Vnfd,
    translation: &Translation,
    base_hot: Option<&BaseHot>,
    plan: &Plan,
    layers: &[WorkloadLayer],
) -> Result<Output, CommandError> {
    let groups_from = match base_hot {
        Some(hot) => format!(", server groups of BaseHOT {}", hot.file),
        None => String::new(),
    };
    let mut text = format!(
        "VNFD {}{groups_from}: {} VDU(s) over {} compute host(s) ({})\n\n",
        vnfd.file,
        plan.vdus.len(),
        plan.hosts.len(),
        plan.hosts.join(", ")
    );
    text.push_str(&fitted_table(
        &[
            "vdu",
            "server group",
            "min",
            "max",
            "initial",
            "scaling",
            "levels",
        ],
        plan.vdus.iter().map(|v| {
            [
                v.name.clone(),
                match (&v.server_group, &v.policy, v.max_server_per_host) {
                    (Some(group), Some(policy), Some(k)) => {
                        format!("{group} ({policy}, max_server_per_host {k})")
                    }
                    (Some(group), Some(policy), None) => format!("{group} ({policy})"),
                    _ => "none: no host constraint".to_owned(),
                },
                or_dash(v.min),
                or_dash(v.max),
                or_dash(v.initial),
                match &v.aspect {
                    Some(aspect) => format!("{aspect}: {}", join(&v.deltas)),
                    None => "-".to_owned(),
                },
                join(&v.levels),
            ]
        }),
    ));
    text.push('\n');
    text.push_str(&fitted_table(
        &[
            "level",
            "server group",
            "servers",
            "no valid host",
            "sharing a host",
            "per host",
        ],
        plan.steps.iter().flat_map(|step| {
            step.groups
                .iter()
                .map(|g| {
                    [
                        step.label.clone(),
                        format!("{} ({})", g.server_group, g.policy),
                        g.servers.to_string(),
                        g.no_valid_host.to_string(),
                        g.sharing.to_string(),
                        join(&g.per_host),
                    ]
                })
                .collect::<Vec<_>>()
        }),
    ));
    text.push('\n');
    match &plan.first_no_valid_host {
        Some(level) => text.push_str(&format!(
            "First level that fails with NoValidHost: {level} (hard anti-affinity: at most one server of the group per compute host; E.4)\n"
        )),
        None => text.push_str("Every level fits the compute hosts.\n"),
    }
    if !plan.workers.is_empty() {
        text.push('\n');
        text.push_str(&fitted_table(
            &[
                "server",
                "vdu",
                "host",
                "labels tacker writes",
                "node name guessed",
                "node label",
            ],
            plan.workers.iter().map(|w| {
                [
                    w.server.clone(),
                    or_dash(w.vdu.as_ref()),
                    or_dash(w.host.as_ref()),
                    if w.labels.is_empty() {
                        "none (not in an anti-affinity server group)".to_owned()
                    } else {
                        join(&w.labels)
                    },
                    or_dash(w.guessed_node.as_ref()),
                    match &w.label {
                        None => "-".to_owned(),
                        Some(state @ LabelState::Current) => state.to_string(),
                        Some(state @ LabelState::Stale { .. }) => format!("{state} (D.2)"),
                        Some(state @ LabelState::Missing) => format!("{state} (B.6)"),
                        Some(state) => format!("{state} (E.6)"),
                    },
                ]
            }),
        ));
        for (host, vdu, servers) in &plan.shared_hosts {
            text.push_str(&format!(
                "\n{vdu}: {} share compute host {host} (E.5)",
                servers.join(", ")
            ));
        }
        if !plan.shared_hosts.is_empty() {
            text.push('\n');
        }
    }
    if !translation.findings.is_empty() {
        text.push_str("\nAffinity rules heat-translator drops:\n\n");
        text.push_str(&findings_table(translation));
    }
    if !layers.is_empty() {
        text.push_str(&format!(
            "\nThe CNF's pods over the compute hosts (anti-affinity on {CIS_NODE_LABEL}; E.8):\n\n"
        ));
        text.push_str(&fitted_table(
            &[
                "workload",
                "replicas",
                "rule on the host label",
                "labelled hosts",
                "pods per compute host",
            ],
            layers.iter().map(|l| {
                [
                    l.workload.clone(),
                    l.replicas.to_string(),
                    match l.rule {
                        Some(HostRule::Required) => "required".to_owned(),
                        Some(HostRule::Preferred) => "preferred".to_owned(),
                        None => "none".to_owned(),
                    },
                    l.labelled_hosts.to_string(),
                    l.pods_per_host
                        .iter()
                        .map(|(host, pods)| format!("{host}: {}", pods.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; "),
                ]
            }),
        ));
        for l in layers {
            if l.beyond_labelled_hosts > 0 {
                text.push_str(&format!(
                    "\n{}: {} replicas under required anti-affinity on {CIS_NODE_LABEL}, but the Nodes carry {} host label value(s): at most one replica per value, the other {} only on Nodes without the label, where nothing keeps them apart (C.13)",
                    l.workload, l.replicas, l.labelled_hosts, l.beyond_labelled_hosts
                ));
            }
            for host in &l.shared_hosts {
                text.push_str(&format!(
                    "\n{}: {} share compute host {host} despite the required rule (labels stale or missing; D.2, E.6)",
                    l.workload,
                    l.pods_per_host.get(host).map(|p| p.join(", ")).unwrap_or_default()
                ));
            }
        }
        text.push('\n');
    }
    if let Some(hot) = base_hot.filter(|hot| !hot.findings.is_empty()) {
        text.push_str("\nServer-group hints of the BaseHOT that place nothing:\n\n");
        text.push_str(&base_hot_findings_table(hot));
    }
    let mut document = json!({
        "vnfd": vnfd.file,
        "plan": serde_json::to_value(plan).map_err(|error| input_error(error.to_string()))?,
        "findings": findings_json(translation),
    });
    if let (Some(hot), Some(fields)) = (base_hot, document.as_object_mut()) {
        fields.insert("baseHot".to_owned(), base_hot_json(hot));
    }
    if let (false, Some(fields)) = (layers.is_empty(), document.as_object_mut()) {
        fields.insert(
            "cnf".to_owned(),
            serde_json::to_value(layers).map_err(|error| input_error(error.to_string()))?,
        );
    }
    Ok(Output {
        document,
        table: text,
    })
}

fn join<V: ToString>(map: &std::collections::BTreeMap<String, V>) -> String {
    if map.is_empty() {
        return "-".to_owned();
    }
    map.iter()
        .map(|(k, v)| format!("{k}={}", v.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}
