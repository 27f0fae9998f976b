//! Generated `kubectl get nodes,pods -A -o json|yaml` dumps of a large
//! cluster, shaped like the real thing: every object carries the fields
//! `kubectl` prints and no policy reads (managedFields, probes, environment,
//! container statuses, conditions, node images), so that readers are
//! measured on realistic bytes. The same seed always gives the same bytes.
//!
//! `cargo run --release -p testkit --example cluster_dump -- json 10000 500 > pods.json`

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::SplitMix64;

/// How big a dump to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpShape {
    /// Pods, spread over the nodes and over 50 namespaces.
    pub pods: usize,
    /// Nodes (`node-0000` …), in three zones.
    pub nodes: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl DumpShape {
    /// `pods` pods on `nodes` nodes with the default seed.
    pub fn new(pods: usize, nodes: usize) -> Self {
        DumpShape {
            pods,
            nodes,
            seed: 0x00c1_u64 << 32 | 0x5eed,
        }
    }
}

/// The output syntax, as `kubectl -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// `-o json`: one `kind: List`, indented by four spaces.
    Json,
    /// `-o yaml`: one `kind: List`, block style, two-space indentation.
    Yaml,
}

/// Writes the dump: one `v1 List` with the nodes, then the pods.
pub fn write_dump(shape: DumpShape, format: DumpFormat, out: &mut impl Write) -> io::Result<()> {
    let mut rng = SplitMix64::new(shape.seed);
    let nodes = shape.nodes.max(1);
    match format {
        DumpFormat::Json => out.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [")?,
        DumpFormat::Yaml => out.write_all(b"apiVersion: v1\nitems:\n")?,
    }
    let mut first = true;
    let mut item = |value: Value, out: &mut dyn Write| -> io::Result<()> {
        match format {
            DumpFormat::Json => {
                out.write_all(if first { b"\n" } else { b",\n" })?;
                first = false;
                write_json(&value, 2, out)
            }
            DumpFormat::Yaml => write_yaml_item(&value, out),
        }
    };
    for n in 0..nodes {
        item(node(n, &mut rng), out)?;
    }
    for p in 0..shape.pods {
        item(pod(p, nodes, &mut rng), out)?;
    }
    match format {
        DumpFormat::Json => out.write_all(
            b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
        ),
        DumpFormat::Yaml => out.write_all(b"kind: List\nmetadata:\n  resourceVersion: \"\"\n"),
    }
}

/// The dump in memory.
pub fn dump(shape: DumpShape, format: DumpFormat) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_dump(shape, format, &mut out);
    out
}

fn timestamp(rng: &mut SplitMix64) -> String {
    format!(
        "2026-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        rng.range(1, 10),
        rng.range(1, 28),
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    )
}

fn uid(rng: &mut SplitMix64) -> String {
    let a = rng.next_u64();
    let b = rng.next_u64();
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

fn node(n: usize, rng: &mut SplitMix64) -> Value {
    let name = format!("node-{n:04}");
    let zone = ["a", "b", "c"][n % 3];
    let images: Vec<Value> = (0..25)
        .map(|i| {
            json!({
                "names": [
                    format!("registry.example.com/team-{}/service-{i}@sha256:{:016x}{:016x}{:016x}{:016x}", i % 7, rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()),
                    format!("registry.example.com/team-{}/service-{i}:v1.{}.{}", i % 7, rng.range(0, 30), rng.range(0, 9)),
                ],
                "sizeBytes": rng.range(5_000_000, 900_000_000),
            })
        })
        .collect();
    let conditions: Vec<Value> = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    .iter()
    .map(|(kind, status, reason)| {
        json!({
            "lastHeartbeatTime": timestamp(rng),
            "lastTransitionTime": timestamp(rng),
            "message": format!("kubelet {}", reason.to_lowercase()),
            "reason": reason,
            "status": status,
            "type": kind,
        })
    })
    .collect();
    let mut taints = Vec::new();
    if n % 10 == 9 {
        taints.push(json!({"effect": "NoSchedule", "key": "dedicated", "value": "infra"}));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-{:017x}\"}}", rng.next_u64() >> 4),
            },
            "creationTimestamp": timestamp(rng),
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "m6i.4xlarge",
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "eu-west-1",
                "failure-domain.beta.kubernetes.io/zone": format!("eu-west-1{zone}"),
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.4xlarge",
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": format!("eu-west-1{zone}"),
            },
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:node.alpha.kubernetes.io/ttl": {}}, "f:labels": {"f:kubernetes.io/hostname": {}}}, "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, "v:\"10.0.0.0/24\"": {}}}},
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "time": timestamp(rng),
                },
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:allocatable": {"f:cpu": {}, "f:memory": {}}, "f:conditions": {"k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}}}, "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": timestamp(rng),
                },
            ],
            "name": name,
            "resourceVersion": rng.range(1_000_000, 99_999_999).to_string(),
            "uid": uid(rng),
        },
        "spec": {
            "podCIDR": format!("10.{}.{}.0/24", n / 250, n % 250),
            "providerID": format!("aws:///eu-west-1{zone}/i-{:017x}", rng.next_u64() >> 4),
            "taints": taints,
        },
        "status": {
            "addresses": [
                {"address": format!("10.20.{}.{}", n / 250, n % 250), "type": "InternalIP"},
                {"address": format!("ip-10-20-{}-{}.eu-west-1.compute.internal", n / 250, n % 250), "type": "Hostname"},
            ],
            "allocatable": {"cpu": "15890m", "ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "62193968Ki", "pods": "110"},
            "capacity": {"cpu": "16", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "64392496Ki", "pods": "110"},
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": uid(rng),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.132-147.221.amzn2023.x86_64",
                "kubeProxyVersion": "v1.33.1-eks-1234567",
                "kubeletVersion": "v1.33.1-eks-1234567",
                "machineID": format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64()),
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250512",
                "systemUUID": uid(rng),
            },
        },
    })
}

fn container_fields() -> Value {
    json!({
        "f:env": {".": {}, "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
        "f:image": {}, "f:imagePullPolicy": {},
        "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
        "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/data\"}": {".": {}, "f:mountPath": {}, "f:name": {}}},
    })
}

fn container(name: &str, image: &str, rng: &mut SplitMix64) -> Value {
    let env: Vec<Value> = (0..2)
        .map(|i| json!({"name": format!("SETTING_{i}"), "value": format!("value-{}", rng.range(0, 999))}))
        .chain(std::iter::once(json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})))
        .collect();
    // Drawn in this order so that the stream of the generator stays as it
    // was; a request is never above its limit, as kube-apiserver insists.
    let memory_limit = rng.range(1, 8) * 256;
    let cpu_request = rng.range(1, 20) * 50;
    let memory_request = (rng.range(1, 8) * 128).min(memory_limit);
    json!({
        "env": env,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {
            "limits": {"memory": format!("{memory_limit}Mi")},
            "requests": {"cpu": format!("{cpu_request}m"), "memory": format!("{memory_request}Mi")},
        },
        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {"mountPath": "/data", "name": "data"},
            {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": true},
        ],
    })
}

fn sidecar() -> Value {
    json!({
        "image": "registry.example.com/mesh/proxy:v1.24.3",
        "imagePullPolicy": "IfNotPresent",
        "name": "sidecar",
        "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "10m", "memory": "64Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    })
}

fn pod(p: usize, nodes: usize, rng: &mut SplitMix64) -> Value {
    let namespace = format!("team-{:02}", p % 50);
    let app = format!("service-{}", (p / 50) % 40);
    let hash = format!("{:x}", rng.next_u64() >> 28);
    let name = format!("{app}-{hash}-{:05x}", rng.next_u64() >> 44);
    let node = format!(
        "node-{:04}",
        rng.below(u32::try_from(nodes).unwrap_or(u32::MAX))
    );
    let image = format!(
        "registry.example.com/team-{}/{app}:v1.{}.0",
        p % 7,
        rng.range(0, 30)
    );
    let created = timestamp(rng);
    let pod_ip = format!(
        "10.{}.{}.{}",
        64 + rng.below(64),
        rng.below(256),
        rng.below(256)
    );
    let statuses: Vec<Value> = ["app", "sidecar"]
        .iter()
        .map(|c| {
            json!({
                "containerID": format!("containerd://{:016x}{:016x}{:016x}{:016x}", rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()),
                "image": image,
                "imageID": format!("registry.example.com/team-{}/{app}@sha256:{:016x}{:016x}{:016x}{:016x}", p % 7, rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()),
                "lastState": {},
                "name": c,
                "ready": true,
                "restartCount": rng.below(3),
                "started": true,
                "state": {"running": {"startedAt": created}},
            })
        })
        .collect();
    let conditions: Vec<Value> = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .iter()
        .map(|kind| json!({"lastProbeTime": null, "lastTransitionTime": created, "status": "True", "type": kind}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": created,
                "prometheus.io/port": "8080",
                "prometheus.io/scrape": "true",
            },
            "creationTimestamp": created,
            "generateName": format!("{app}-{hash}-"),
            "labels": {
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": namespace,
                "pod-template-hash": hash,
                "tier": (["frontend", "backend", "worker"][p % 3]),
            },
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"00000000\"}": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": container_fields(), "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}}, "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}, "k:{\"name\":\"data\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}},
                    },
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "time": created,
                },
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}, "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}, "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": created,
                },
            ],
            "name": name,
            "namespace": namespace,
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true, "kind": "ReplicaSet", "name": format!("{app}-{hash}"), "uid": uid(rng)}],
            "resourceVersion": rng.range(1_000_000, 99_999_999).to_string(),
            "uid": uid(rng),
        },
        "spec": {
            "containers": [container("app", &image, rng), sidecar()],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "nodeName": node,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {"fsGroup": 2000, "runAsNonRoot": true},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
            ],
            "volumes": [
                {"emptyDir": {}, "name": "data"},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}},
                ]}},
            ],
        },
        "status": {
            "conditions": conditions,
            "containerStatuses": statuses,
            "hostIP": "10.20.0.1",
            "hostIPs": [{"ip": "10.20.0.1"}],
            "phase": "Running",
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "qosClass": "Burstable",
            "startTime": created,
        },
    })
}

/// JSON as `kubectl -o json` prints it (four spaces per level), starting at
/// `level`.
fn write_json(value: &Value, level: usize, out: &mut dyn Write) -> io::Result<()> {
    let indent = |out: &mut dyn Write, level: usize| out.write_all(&b" ".repeat(level * 4));
    indent(out, level)?;
    write_json_inline(value, level, out)
}

fn write_json_inline(value: &Value, level: usize, out: &mut dyn Write) -> io::Result<()> {
    let pad = |level: usize| " ".repeat(level * 4);
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.write_all(b"{\n")?;
            for (i, (key, item)) in map.iter().enumerate() {
                write!(out, "{}{}: ", pad(level + 1), Value::String(key.clone()))?;
                write_json_inline(item, level + 1, out)?;
                out.write_all(if i + 1 < map.len() { b",\n" } else { b"\n" })?;
            }
            write!(out, "{}}}", pad(level))
        }
        Value::Array(items) if !items.is_empty() => {
            out.write_all(b"[\n")?;
            for (i, item) in items.iter().enumerate() {
                out.write_all(pad(level + 1).as_bytes())?;
                write_json_inline(item, level + 1, out)?;
                out.write_all(if i + 1 < items.len() { b",\n" } else { b"\n" })?;
            }
            write!(out, "{}]", pad(level))
        }
        other => write!(out, "{other}"),
    }
}

/// One list item in `kubectl -o yaml` style (`- ` then the mapping).
fn write_yaml_item(value: &Value, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"- ")?;
    write_yaml_block(value, 1, true, out)
}

/// A value in block style at `indent` levels of two spaces; `inline` means
/// the first line continues after `- `.
fn write_yaml_block(
    value: &Value,
    indent: usize,
    inline: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (i, (key, item)) in map.iter().enumerate() {
                if !(inline && i == 0) {
                    out.write_all(pad.as_bytes())?;
                }
                write!(out, "{}:", yaml_scalar(key))?;
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        out.write_all(b"\n")?;
                        write_yaml_block(item, indent + 1, false, out)?;
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.write_all(b"\n")?;
                        // kubectl puts a mapping's list items at the key's
                        // indentation.
                        write_yaml_block(item, indent, false, out)?;
                    }
                    other => {
                        out.write_all(b" ")?;
                        write_yaml_flat(other, out)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
            Ok(())
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                write!(out, "{pad}- ")?;
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        write_yaml_block(item, indent + 1, true, out)?
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.write_all(b"\n")?;
                        write_yaml_block(item, indent + 1, false, out)?;
                    }
                    other => {
                        write_yaml_flat(other, out)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
            Ok(())
        }
        other => {
            write_yaml_flat(other, out)?;
            out.write_all(b"\n")
        }
    }
}

fn write_yaml_flat(value: &Value, out: &mut dyn Write) -> io::Result<()> {
    match value {
        Value::Object(_) => out.write_all(b"{}"),
        Value::Array(_) => out.write_all(b"[]"),
        Value::String(text) => out.write_all(yaml_scalar(text).as_bytes()),
        other => write!(out, "{other}"),
    }
}

/// A string as a plain YAML scalar when that reads back as the same string,
/// else single-quoted (as kubectl's YAML printer does).
fn yaml_scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_' | '@'))
        && !text.starts_with(['-', '.', '@'])
        && !matches!(
            text,
            "true"
                | "false"
                | "null"
                | "yes"
                | "no"
                | "on"
                | "off"
                | "y"
                | "n"
                | "True"
                | "False"
                | "Null"
                | "NULL"
                | "~"
        )
        && text.parse::<f64>().is_err()
        && !text.chars().all(|c| c.is_ascii_digit() || c == '_');
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_both_syntaxes_hold_the_same_objects() {
        let shape = DumpShape::new(30, 4);
        let json_bytes = dump(shape, DumpFormat::Json);
        assert_eq!(json_bytes, dump(shape, DumpFormat::Json));
        let parsed: Value = serde_json::from_slice(&json_bytes).unwrap();
        assert_eq!(parsed["kind"], "List");
        let items = parsed["items"].as_array().unwrap();
        assert_eq!(items.len(), 34);
        assert_eq!(items[0]["kind"], "Node");
        assert_eq!(items[4]["kind"], "Pod");
        assert!(items[4]["metadata"]["managedFields"].is_array());
        let yaml = String::from_utf8(dump(shape, DumpFormat::Yaml)).unwrap();
        assert!(yaml.starts_with("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n"));
        assert!(yaml.contains(
            "\n    tolerations:\n    - effect: NoExecute\n      key: node.kubernetes.io/not-ready\n"
        ));
    }

    #[test]
    fn no_container_requests_more_memory_than_its_limit() {
        let parsed: Value =
            serde_json::from_slice(&dump(DumpShape::new(2_000, 20), DumpFormat::Json)).unwrap();
        let mebibytes = |v: &Value| {
            v.as_str()
                .and_then(|t| t.strip_suffix("Mi"))
                .and_then(|n| n.parse::<u64>().ok())
        };
        let mut containers = 0;
        for pod in parsed["items"].as_array().unwrap() {
            for container in pod["spec"]["containers"].as_array().into_iter().flatten() {
                let resources = &container["resources"];
                if let (Some(request), Some(limit)) = (
                    mebibytes(&resources["requests"]["memory"]),
                    mebibytes(&resources["limits"]["memory"]),
                ) {
                    containers += 1;
                    assert!(request <= limit, "{container}");
                }
            }
        }
        assert!(containers >= 4_000);
    }

    #[test]
    fn plain_scalars_are_only_used_where_they_read_back_as_strings() {
        for (text, plain) in [
            ("Running", true),
            ("10.0.0.1", true),
            ("true", false),
            ("8080", false),
            ("", false),
            ("a b", false),
            ("it's", false),
        ] {
            assert_eq!(!yaml_scalar(text).starts_with('\''), plain, "{text}");
        }
    }
}
