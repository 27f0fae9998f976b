//! Answers that must hold on real clusters: which loads a gate serves, the
//! values `report` computes with, the backup queue's order and Velero's
//! reading of `--concurrent-backups`.

mod common;

use common::{ok, run_with_stdin};
use policyctl::Exit;
use serde_json::{Value, json};

/// Runs `policyctl -f - ARGS -o json` over `input` and parses the output.
fn json_of(args: &[&str], input: &str) -> Value {
    let mut all = vec!["-f", "-"];
    all.extend(args);
    all.extend(["-o", "json"]);
    let run = run_with_stdin(&all, input);
    assert_eq!(run.exit, Exit::Success, "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

/// A prepare queue of two with nothing in preparation, and `New` loads of
/// Velero's built-in data mover (named and empty), of a third-party data
/// mover and a PodVolumeBackup, created in that order.
const MIXED_LOADS: &str = "
apiVersion: v1
kind: ConfigMap
metadata: {name: node-agent-config, namespace: velero}
data:
  config.json: '{\"loadConcurrency\": {\"prepareQueueLength\": 2}}'
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata: {name: acme-1, namespace: velero, creationTimestamp: '2026-05-20T10:00:00Z'}
spec: {datamover: acme}
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata: {name: builtin-named, namespace: velero, creationTimestamp: '2026-05-20T10:00:01Z'}
spec: {datamover: velero}
---
apiVersion: velero.io/v2alpha1
kind: DataDownload
metadata: {name: builtin-empty, namespace: velero, creationTimestamp: '2026-05-20T10:00:02Z'}
spec: {}
---
apiVersion: velero.io/v1
kind: PodVolumeBackup
metadata: {name: fs-1, namespace: velero, creationTimestamp: '2026-05-20T10:00:03Z'}
spec: {node: worker-1}
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata: {name: acme-2, namespace: velero, creationTimestamp: '2026-05-20T10:00:04Z'}
spec: {datamover: acme}
";

#[test]
fn soothe_gates_only_the_data_movers_it_serves() {
    // Velero's node-agent gate: the built-in data mover and the pod-volume
    // loads. The third-party loads are not its to admit, whatever the room.
    let built_in = json_of(&["soothe"], MIXED_LOADS);
    assert_eq!(built_in["dataMovers"], json!(["velero"]));
    assert_eq!(
        built_in["admit"],
        json!([
            "DataUpload/velero/builtin-named",
            "DataDownload/velero/builtin-empty"
        ])
    );
    assert_eq!(built_in["hold"], json!(["PodVolumeBackup/velero/fs-1"]));
    assert_eq!(
        built_in["notGatedHere"],
        json!(["DataUpload/velero/acme-1", "DataUpload/velero/acme-2"])
    );
    // load-soothe-controller --datamover acme: its loads only.
    let acme = json_of(&["soothe", "--datamover", "acme"], MIXED_LOADS);
    assert_eq!(acme["dataMovers"], json!(["acme"]));
    assert_eq!(
        acme["admit"],
        json!(["DataUpload/velero/acme-1", "DataUpload/velero/acme-2"])
    );
    assert_eq!(acme["hold"], json!([]));
    assert_eq!(
        acme["notGatedHere"],
        json!([
            "DataUpload/velero/builtin-named",
            "DataDownload/velero/builtin-empty",
            "PodVolumeBackup/velero/fs-1"
        ])
    );
    let run = run_with_stdin(&["-f", "-", "soothe", "--datamover", "acme"], MIXED_LOADS);
    insta::assert_snapshot!("soothe_third_party_table", run.stdout);
}

#[test]
fn the_built_in_data_mover_is_not_a_datamover_value() {
    for value in ["velero", ""] {
        let run = run_with_stdin(&["soothe", "--datamover", value], "");
        assert_eq!(run.exit, Exit::Usage, "{value:?}");
        assert!(
            run.stderr.contains(
                "is Velero's built-in data mover, which the gate serves without --datamover"
            ),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn report_takes_the_queue_and_gate_flags_and_says_which_values_it_used() {
    let run = ok(&["report"]);
    assert!(
        run.stdout.starts_with(
            "Report with --concurrent-backups 1, --soothe-mode optimistic,\nload admission gating Velero's built-in data mover and pod-volume loads (no --datamover)\n"
        ),
        "{}",
        run.stdout
    );
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "report",
            "--concurrent-backups",
            "-1",
            "--soothe-mode",
            "exact",
            "--datamover",
            "acme",
        ],
        MIXED_LOADS,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "Report with --concurrent-backups -1 (values below 1 mean 1, as in Velero: 1 concurrent backup), --soothe-mode exact,\nload admission gating --datamover acme\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Mode exact, gating --datamover acme:"),
        "{}",
        run.stdout
    );
    let document = json_of(
        &[
            "report",
            "--concurrent-backups",
            "3",
            "--soothe-mode",
            "exact",
            "--datamover",
            "acme",
        ],
        MIXED_LOADS,
    );
    assert_eq!(
        document["options"],
        json!({"concurrentBackups": 3, "sootheMode": "exact", "dataMovers": ["acme"]})
    );
    assert_eq!(
        document["soothe"]["admit"],
        json!(["DataUpload/velero/acme-1", "DataUpload/velero/acme-2"])
    );
}

#[test]
fn queue_rows_are_in_queue_order() {
    let run = ok(&["queue"]);
    // The BACKUP column, its cells joined across wrapped lines (a row
    // starts where the never-wrapped POSITION column has a value).
    // The table ends at the blank line before the drain.
    let mut lines = run.stdout.lines().skip(2).take_while(|l| !l.is_empty());
    let header = lines.next().expect("header");
    let width = header.find("PHASE").expect("PHASE column");
    let position = header.find("POSITION").expect("POSITION column");
    let mut backups: Vec<String> = Vec::new();
    for line in lines {
        let cell: String = line.chars().take(width).collect();
        let cell = cell.trim();
        let starts_row = line
            .get(position..position + "POSITION".len())
            .is_some_and(|c| !c.trim().is_empty());
        match backups.last_mut() {
            Some(last) if !starts_row => last.push_str(cell),
            _ => backups.push(cell.to_owned()),
        }
    }
    assert_eq!(
        backups,
        [
            // Runs after the plan (starts now).
            "velero/payments-adhoc",
            // Queued, by new position.
            "velero/pre-upgrade-full",
            "velero/teams-config",
            "velero/analytics-hourly-0108",
            "velero/kube-system-etcd",
            "velero/shop-orders-0109",
            // The rest, by name.
            "velero/nightly-apps-20260520",
            "velero/team-sync-20260520",
            "velero/weekly-full-20260517",
        ]
    );
}

#[test]
fn concurrent_backups_below_one_mean_one_in_header_and_reasons() {
    for value in ["-1", "0"] {
        let run = ok(&["queue", "--concurrent-backups", value]);
        let one = ok(&["queue", "--concurrent-backups", "1"]);
        let (header, rows) = run.stdout.split_once('\n').expect("header");
        assert_eq!(
            header,
            format!(
                "--concurrent-backups {value} (values below 1 mean 1, as in Velero: 1 concurrent backup): 1 started, 5 waiting, 6 status write(s)"
            )
        );
        // The reason, from the JSON: the table wraps it.
        let json = ok(&["queue", "--concurrent-backups", value, "-o", "json"]);
        assert!(
            json.stdout
                .contains("capacity full: all 1 concurrent backup slots are taken"),
            "{}",
            json.stdout
        );
        // Everything but the header is what --concurrent-backups 1 gives.
        assert_eq!(
            Some(rows),
            one.stdout.split_once('\n').map(|(_, rows)| rows)
        );
    }
}

/// A node-agent ConfigMap Velero's node-agent refuses (malformed JSON,
/// C1.7): it exits at start-up, so no answer built on it holds.
const REFUSED_CONFIG: &str = "
apiVersion: v1
kind: ConfigMap
metadata: {name: node-agent-config, namespace: velero}
data:
  config.json: '{\"loadConcurrency\": '
---
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/os: linux}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/csi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {storageClassName: fast}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers: [{name: web, image: web}]
";

#[test]
fn every_command_using_a_configuration_that_does_not_load_exits_1() {
    let commands: [&[&str]; 6] = [
        &["config", "check"],
        &["concurrency"],
        &["affinity", "--pvc", "shop/data"],
        &["soothe"],
        &["diagnose", "--pod", "shop/web"],
        &["report"],
    ];
    for command in commands {
        let mut args = vec!["-f", "-"];
        args.extend(command);
        let run = run_with_stdin(&args, REFUSED_CONFIG);
        assert_eq!(run.exit, Exit::Failure, "{command:?}: {}", run.stderr);
        if command[0] != "config" {
            assert!(
                run.stderr.contains(
                    "error: the node-agent configuration (ConfigMap velero/node-agent-config (-, document 1)) cannot be loaded: "
                ),
                "{command:?}: {}",
                run.stderr
            );
        }
    }
    // `config check` and `report` still print what they found.
    let report = run_with_stdin(&["-f", "-", "report"], REFUSED_CONFIG);
    assert!(
        report
            .stdout
            .contains("Velero's node-agent would refuse to start with this configuration."),
        "{}",
        report.stdout
    );
}

/// Two ConfigMaps named `node-agent-config`, in `velero` and in `backup`,
/// and another one, as `kubectl get cm -A -o yaml` prints them.
const CONFIG_MAP_LIST: &str = "
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: kube-root-ca.crt, namespace: velero}
  data: {ca.crt: x}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: node-agent-config, namespace: velero}
  data:
    config.json: '{\"loadConcurrency\": {\"globalConfig\": 3}}'
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: node-agent-config, namespace: backup}
  data:
    config.json: '{\"loadConcurrency\": {\"globalConfig\": 5}}'
";

/// The global concurrency `concurrency` computes, or the error.
fn global_concurrency(args: &[&str], stdin: &str) -> Result<i64, String> {
    let mut all = args.to_vec();
    all.extend(["concurrency", "-o", "json"]);
    let run = run_with_stdin(&all, stdin);
    if run.exit != Exit::Success {
        return Err(run.stderr);
    }
    let value: Value = serde_json::from_str(&run.stdout).expect("JSON");
    value["global"].as_i64().ok_or(run.stdout)
}

#[test]
fn config_takes_a_list_and_picks_the_config_map() {
    let dir = std::env::temp_dir().join(format!("policyctl-config-list-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("cms.yaml");
    std::fs::write(&file, CONFIG_MAP_LIST).expect("write");
    let file = file.display().to_string();
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n";
    // Several ConfigMaps of the default name: the namespace decides.
    assert_eq!(
        global_concurrency(
            &[
                "-f",
                "-",
                "--config",
                &file,
                "--config-map",
                "backup/node-agent-config"
            ],
            node
        ),
        Ok(5)
    );
    assert_eq!(
        global_concurrency(
            &[
                "-f",
                "-",
                "--config",
                &file,
                "--config-map",
                "velero/node-agent-config"
            ],
            node
        ),
        Ok(3)
    );
    let error = global_concurrency(&["-f", "-", "--config", &file], node).expect_err("ambiguous");
    assert_eq!(
        error.replace(&file, "cms.yaml"),
        "error: --config cms.yaml: the file holds several ConfigMaps (backup/node-agent-config, velero/node-agent-config); choose one with --config-map [NAMESPACE/]NAME\n"
    );
    // A List holding one ConfigMap of the default name is used as is.
    let one = CONFIG_MAP_LIST.split("- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: node-agent-config, namespace: backup}").next().expect("prefix");
    std::fs::write(&file, one).expect("write");
    assert_eq!(
        global_concurrency(&["-f", "-", "--config", &file], node),
        Ok(3)
    );
    let error = global_concurrency(
        &["-f", "-", "--config", &file, "--config-map", "other"],
        node,
    )
    .expect_err("missing");
    assert_eq!(
        error.replace(&file, "cms.yaml"),
        "error: --config cms.yaml: no ConfigMap other in the file; ConfigMaps read: velero/kube-root-ca.crt, velero/node-agent-config\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn config_map_takes_namespace_and_name_and_must_exist() {
    assert_eq!(
        global_concurrency(
            &["-f", "-", "--config-map", "backup/node-agent-config"],
            CONFIG_MAP_LIST
        ),
        Ok(5)
    );
    let ambiguous = global_concurrency(&["-f", "-"], CONFIG_MAP_LIST).expect_err("two namespaces");
    assert_eq!(
        ambiguous,
        "error: ConfigMap node-agent-config is in several namespaces (backup, velero); choose one with --config-map NAMESPACE/node-agent-config\n"
    );
    // Named but missing: an error, as Velero's node-agent refuses to start
    // without the ConfigMap it is told to read (C1.3).
    for missing in ["velero/other", "other", "kube-system/node-agent-config"] {
        let error = global_concurrency(&["-f", "-", "--config-map", missing], CONFIG_MAP_LIST)
            .expect_err("missing");
        assert_eq!(
            error,
            format!(
                "error: --config-map {missing}: no such ConfigMap in the input (ConfigMaps read: backup/node-agent-config, velero/kube-root-ca.crt, velero/node-agent-config); add it with -f, or give the configuration with --config FILE\n"
            )
        );
    }
    // Not named and absent: Velero's defaults, with a note.
    let run = run_with_stdin(
        &["-f", "-", "concurrency"],
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
    );
    assert_eq!(run.exit, Exit::Success);
    assert!(
        run.stderr
            .contains("using Velero's default node-agent configuration"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run_with_stdin(&["--config-map", "a/b/c", "concurrency"], "").exit,
        Exit::Usage
    );
}

#[test]
fn sanitize_refuses_an_empty_host_name() {
    for value in ["", "  "] {
        let run = run_with_stdin(&["host-labels", "sanitize", value], "");
        assert_eq!(run.exit, Exit::Usage, "{value:?}");
        assert!(
            run.stderr
                .contains("a host name is required: an empty name identifies no host"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn host_label_keys_are_repeatable() {
    let keys = [
        "--key",
        "node.cluster.x-k8s.io/esxi-host",
        "--key",
        "node-restriction.kubernetes.io/esxi-host",
    ];
    let mut args = vec!["host-labels"];
    args.extend(keys);
    args.extend(["-o", "json"]);
    let run = ok(&args);
    let value: Value = serde_json::from_str(&run.stdout).expect("JSON");
    // worker-b3 has neither label: it gets both, with the same host.
    assert_eq!(
        value["nodes"]["worker-b3"]["set"],
        json!({
            "node-restriction.kubernetes.io/esxi-host": "esx-04",
            "node.cluster.x-k8s.io/esxi-host": "esx-04"
        })
    );
    // The comma form is the same, and every invalid key is named.
    let run = run_with_stdin(
        &[
            "host-labels",
            "--key",
            "node.cluster.x-k8s.io/esxi-host,node-restriction.kubernetes.io/esxi-host",
            "-o",
            "json",
        ],
        "",
    );
    assert_eq!(run.stdout, ok(&args).stdout);
    let run = run_with_stdin(&["host-labels", "--key=-bad,also bad"], "");
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.contains("-bad") && run.stderr.contains("also bad"),
        "{}",
        run.stderr
    );
}

/// A bound PVC of an Immediate class, and a restore target of the same
/// class; Nodes are added per case.
const VOLUMES: &str = "
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/csi
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-data}
spec:
  storageClassName: fast
  csi: {driver: example.com/csi, volumeHandle: h1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {storageClassName: fast, volumeName: pv-data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: restored, namespace: shop}
spec: {storageClassName: fast}
";

fn node(name: &str, os_label: Option<&str>) -> String {
    let labels = os_label.map_or_else(String::new, |os| {
        format!(", labels: {{kubernetes.io/os: {os:?}}}")
    });
    format!("---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}{labels}}}\n")
}

#[test]
fn affinity_exits_1_like_velero_when_no_node_has_the_data_movers_os() {
    let cases: [(&str, String, &[&str]); 4] = [
        ("no nodes at all", String::new(), &[]),
        ("windows only", node("win-1", Some("windows")), &[]),
        ("unlabelled only", node("n-1", None), &[]),
        (
            "linux only, windows asked",
            node("n-1", Some("linux")),
            &["--node-os", "windows"],
        ),
    ];
    let mut all = String::new();
    for (name, nodes, extra) in cases {
        for direction in [
            &["--pvc", "shop/data"][..],
            &["--pvc", "shop/restored", "--restore"],
        ] {
            let mut args = vec!["-f", "-", "affinity"];
            args.extend(direction);
            args.extend(extra);
            let run = run_with_stdin(&args, &format!("{VOLUMES}{nodes}"));
            assert_eq!(
                run.exit,
                Exit::Failure,
                "{name} {direction:?}: {}",
                run.stdout
            );
            assert!(run.stdout.is_empty());
            all.push_str(&format!("{name}, {direction:?}: {}", run.stderr));
        }
    }
    insta::assert_snapshot!("affinity_no_node_with_os", all);
    // Velero counts a label value it does not know as Linux.
    for os in ["linux", "freebsd", ""] {
        let input = format!("{VOLUMES}{}", node("n-1", Some(os)));
        let run = run_with_stdin(&["-f", "-", "affinity", "--pvc", "shop/data"], &input);
        assert_eq!(run.exit, Exit::Success, "{os:?}: {}", run.stderr);
    }
    let input = format!("{VOLUMES}{}", node("win-1", Some("windows")));
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "affinity",
            "--pvc",
            "shop/data",
            "--node-os",
            "windows",
        ],
        &input,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
}

#[test]
fn a_class_with_two_ranges_matches_both_ranges() {
    // `ns[a-z0-9]`: Velero's glob library cannot compile a class with two
    // ranges, so Velero resolves the backup to no namespace and lets it run
    // next to an overlapping backup. We read the class as written: it
    // matches `nsa` and `ns1`, so the backup waits (see compatibility.md).
    let input = "
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: nsa}}
- {apiVersion: v1, kind: Namespace, metadata: {name: ns1}}
- {apiVersion: v1, kind: Namespace, metadata: {name: ns-x}}
---
apiVersion: velero.io/v1
kind: Backup
metadata: {name: running, namespace: velero, creationTimestamp: '2026-05-20T10:00:00Z'}
spec: {includedNamespaces: [ns1]}
status: {phase: InProgress}
---
apiVersion: velero.io/v1
kind: Backup
metadata: {name: classes, namespace: velero, creationTimestamp: '2026-05-20T10:01:00Z'}
spec: {includedNamespaces: ['ns[a-z0-9]']}
";
    let run = run_with_stdin(
        &[
            "-f",
            "-",
            "queue",
            "--concurrent-backups",
            "2",
            "-o",
            "json",
        ],
        input,
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        !run.stderr.contains("invalid namespace filter"),
        "{}",
        run.stderr
    );
    let value: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(value["started"], json!([]));
    assert_eq!(
        value["waiting"]["velero/classes"],
        json!("overlaps InProgress backup running on namespaces [ns1]")
    );
    // Both ranges match: with `nsa` alone running, it waits too, and a
    // namespace outside the class does not block it.
    let nsa = input.replace("includedNamespaces: [ns1]", "includedNamespaces: [nsa]");
    let value = json_of(&["queue", "--concurrent-backups", "2"], &nsa);
    assert_eq!(
        value["waiting"]["velero/classes"],
        json!("overlaps InProgress backup running on namespaces [nsa]")
    );
    let other = input.replace("includedNamespaces: [ns1]", "includedNamespaces: [ns-x]");
    let value = json_of(&["queue", "--concurrent-backups", "2"], &other);
    assert_eq!(value["started"], json!(["velero/classes"]));
}

/// Two Nodes, one pod, and nothing that says which physical host runs what.
const NO_HOST_INFORMATION: &str = "
apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/os: linux}}
---
apiVersion: v1
kind: Node
metadata: {name: worker-2}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {nodeName: worker-1, containers: [{name: web, image: web}]}
";

#[test]
fn host_audit_without_any_host_information_says_so_once() {
    let line = "no host information: no Machines, no HostInventory and no Node with label node.cluster.x-k8s.io/esxi-host; nothing to audit";
    let labels = run_with_stdin(&["-f", "-", "host-labels"], NO_HOST_INFORMATION);
    assert_eq!(labels.exit, Exit::Success, "{}", labels.stderr);
    assert!(labels.stdout.contains(line), "{}", labels.stdout);
    assert!(
        !labels.stdout.contains("unlabelled node"),
        "{}",
        labels.stdout
    );
    let report = run_with_stdin(&["-f", "-", "report"], NO_HOST_INFORMATION);
    assert!(report.stdout.contains(line), "{}", report.stdout);
    assert!(
        !report.stdout.contains("unlabelled node"),
        "{}",
        report.stdout
    );

    let document = json_of(&["host-labels"], NO_HOST_INFORMATION);
    assert_eq!(document["audit"]["noHostInformation"], json!(line));
    assert_eq!(document["audit"]["unlabelledNodes"], json!([]));

    // One Node carrying the key is host information: the others are
    // unlabelled again.
    let one_labelled = NO_HOST_INFORMATION.replace(
        "labels: {kubernetes.io/os: linux}",
        "labels: {node.cluster.x-k8s.io/esxi-host: esx-1}",
    );
    let document = json_of(&["host-labels"], &one_labelled);
    assert_eq!(document["audit"]["noHostInformation"], Value::Null);
    assert_eq!(document["audit"]["unlabelledNodes"], json!(["worker-2"]));
}

/// A DataUpload of a PVC that is not in the input, its own snapshot
/// storage class selecting a load-affinity entry; one node in the entry's
/// pool, one outside it.
const UPLOAD_WITHOUT_ITS_PVC: &str = "
apiVersion: v1
kind: ConfigMap
metadata: {name: node-agent-config, namespace: velero}
data:
  config.json: '{\"loadAffinity\": [{\"nodeSelector\": {\"matchLabels\": {\"pool\": \"fast\"}}, \"storageClass\": \"fast\"}]}'
---
apiVersion: velero.io/v2alpha1
kind: DataUpload
metadata: {name: up-1, namespace: velero}
spec:
  snapshotType: CSI
  sourceNamespace: shop
  sourcePVC: gone
  csiSnapshot: {volumeSnapshot: snap-1, storageClass: fast}
---
apiVersion: v1
kind: Node
metadata: {name: n-fast, labels: {kubernetes.io/os: linux, pool: fast}}
---
apiVersion: v1
kind: Node
metadata: {name: n-slow, labels: {kubernetes.io/os: linux, pool: slow}}
---
apiVersion: v1
kind: Pod
metadata: {name: node-agent-a, namespace: velero, labels: {name: node-agent}}
spec: {nodeName: n-fast, containers: [{name: node-agent, image: velero}]}
status: {phase: Running, conditions: [{type: Ready, status: 'True'}]}
---
apiVersion: v1
kind: Pod
metadata: {name: node-agent-b, namespace: velero, labels: {name: node-agent}}
spec: {nodeName: n-slow, containers: [{name: node-agent, image: velero}]}
status: {phase: Running, conditions: [{type: Ready, status: 'True'}]}
";

#[test]
fn data_upload_without_its_pvc_is_placed_by_its_snapshot_storage_class() {
    let document = json_of(&["report"], UPLOAD_WITHOUT_ITS_PVC);
    let row = &document["dataMovers"]["DataUpload/velero/up-1"];
    assert_eq!(row["error"], Value::Null, "{row}");
    assert_eq!(row["pvc"], json!("shop/gone"));
    assert_eq!(row["storageClass"], json!("fast"));
    assert_eq!(
        row["storageClassFrom"],
        json!("spec.csiSnapshot.storageClass")
    );
    assert_eq!(row["selectedLoadAffinity"], json!(0));
    assert_eq!(row["schedulableNodes"], json!(["n-fast"]));
    let table = run_with_stdin(&["-f", "-", "report"], UPLOAD_WITHOUT_ITS_PVC);
    assert!(
        table.stdout.contains("shop/gone (not in the input)"),
        "{}",
        table.stdout
    );
    // Without the class, the missing PVC is still an error.
    let no_class = UPLOAD_WITHOUT_ITS_PVC.replace(", storageClass: fast}", "}");
    let document = json_of(&["report"], &no_class);
    let row = &document["dataMovers"]["DataUpload/velero/up-1"];
    assert_eq!(
        row["error"],
        json!("PersistentVolumeClaim shop/gone is not in the input")
    );
}

/// Node n-1 carries a second host key recorded as managed, which the
/// default configuration no longer writes: the plan removes it. Running
/// pods use that key as their topology key.
const REMOVED_TOPOLOGY_KEY: &str = "
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: m-1, namespace: default, labels: {node.cluster.x-k8s.io/esxi-host: esx-1}}
spec: {clusterName: c}
status: {nodeRef: {name: n-1}}
---
apiVersion: v1
kind: Node
metadata:
  name: n-1
  labels: {node.cluster.x-k8s.io/esxi-host: esx-1, topology.example.com/host: esx-1}
  annotations: {policyctl/managed-host-labels: 'node.cluster.x-k8s.io/esxi-host,topology.example.com/host'}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, labels: {app: db}}
spec:
  nodeName: n-1
  containers: [{name: db, image: db}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: topology.example.com/host, labelSelector: {matchLabels: {app: db}}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.example.com/host, whenUnsatisfiable: DoNotSchedule}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: shop, labels: {app: db}}
spec:
  containers: [{name: db, image: db}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: topology.example.com/host, labelSelector: {matchLabels: {app: db}}}
status: {phase: Pending}
";

#[test]
fn host_labels_warns_when_a_removal_drops_a_topology_key_of_running_pods() {
    let warning = "removing label topology.example.com/host from node(s) n-1: running pod(s) use it as topologyKey: shop/db-0 (pod anti-affinity, topologySpreadConstraints); those nodes drop out of that topology domain";
    let run = run_with_stdin(&["-f", "-", "host-labels"], REMOVED_TOPOLOGY_KEY);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("warning: {warning}\n")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("db-1"), "{}", run.stderr);
    let document = json_of(&["host-labels"], REMOVED_TOPOLOGY_KEY);
    assert_eq!(document["warnings"], json!([warning]));
    assert_eq!(
        document["nodes"]["n-1"]["remove"],
        json!(["topology.example.com/host"])
    );
    // The JSON plan carries the bookkeeping annotation write the table shows.
    assert_eq!(
        document["nodes"]["n-1"]["annotations"],
        json!({"policyctl/managed-host-labels": "node.cluster.x-k8s.io/esxi-host"})
    );
    assert!(
        run.stdout
            .contains("annotate  policyctl/managed-host-labels=node.cluster.x-k8s.io/esxi-host"),
        "{}",
        run.stdout
    );
    // Keeping the key (it is asked for) warns about nothing.
    let kept = json_of(
        &[
            "host-labels",
            "--key",
            "node.cluster.x-k8s.io/esxi-host",
            "--key",
            "topology.example.com/host",
        ],
        REMOVED_TOPOLOGY_KEY,
    );
    assert_eq!(kept["warnings"], Value::Null);
}
