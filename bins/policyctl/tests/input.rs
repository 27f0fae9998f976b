//! Reading input the way real clusters produce it: empty files from a failed
//! `kubectl get`, dumps of large clusters, alias bombs, directories, endless
//! streams, and error messages that name the file and say what to do.

mod common;

use std::io::Read;

use clap::Parser;
use common::{example, ok, run, run_with_stdin};
use policyctl::{Cli, Exit};

/// Runs policyctl with any reader as standard input.
fn run_with_reader(args: &[&str], stdin: &mut dyn Read) -> common::Run {
    let cli = Cli::try_parse_from(std::iter::once("policyctl").chain(args.iter().copied()))
        .expect("valid command line");
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let exit = policyctl::run(cli, stdin, &mut stdout, &mut stderr);
    common::Run {
        exit,
        stdout: String::from_utf8(stdout).expect("UTF-8"),
        stderr: String::from_utf8(stderr).expect("UTF-8"),
    }
}

/// A scratch directory under the target directory, fresh for each test.
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("policyctl-input-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn empty_input_is_an_error_naming_the_file() {
    for text in [
        "",
        "\n\n",
        "# only a comment\n",
        "---\n",
        "---\n# c\n---\n...\n",
    ] {
        let run = run_with_stdin(&["-f", "-", "report"], text);
        assert_eq!(run.exit, Exit::Failure, "{text:?}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("error: no objects were read from -: it is empty"),
            "{text:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{text:?}: {}", run.stdout);
    }
    let dir = scratch("empty-file");
    let file = dir.join("cluster.yaml");
    std::fs::write(&file, "").expect("write");
    let file = file.display().to_string();
    let run = run(&["-f", &file, "concurrency"]);
    assert_eq!(run.exit, Exit::Failure);
    insta::assert_snapshot!("empty_file", run.stderr.replace(&file, "cluster.yaml"));
}

#[test]
fn an_empty_list_is_an_answer_not_an_error() {
    // `kubectl get pods -o yaml` in an empty namespace.
    let run = run_with_stdin(
        &["-f", "-", "queue"],
        "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
}

/// One Pod as `kubectl get pods -A -o yaml` prints it, managedFields
/// included: about 650 YAML nodes.
fn pod_yaml(index: usize, out: &mut String) {
    use std::fmt::Write;
    let ns = format!("team-{}", index % 97);
    let name = format!("app-{index}-7c9f8d6b5-x{:04}", index % 10_000);
    let _ = write!(
        out,
        "- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      kubectl.kubernetes.io/restartedAt: \"2026-05-20T10:00:00Z\"
      prometheus.io/scrape: \"true\"
    creationTimestamp: \"2026-05-20T10:{m:02}:{s:02}Z\"
    generateName: app-{index}-7c9f8d6b5-
    labels:
      app.kubernetes.io/name: app-{index}
      pod-template-hash: 7c9f8d6b5
    managedFields:
",
        m = index / 60 % 60,
        s = index % 60
    );
    for manager in ["kube-controller-manager", "kubelet"] {
        let _ = write!(
            out,
            "    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {{}}
            f:kubectl.kubernetes.io/restartedAt: {{}}
            f:prometheus.io/scrape: {{}}
          f:generateName: {{}}
          f:labels:
            .: {{}}
            f:app.kubernetes.io/name: {{}}
            f:pod-template-hash: {{}}
          f:ownerReferences:
            .: {{}}
            k:{{\"uid\":\"5b0c1f9e-0000-4000-8000-{index:012}\"}}: {{}}
        f:spec:
          f:containers:
            k:{{\"name\":\"app\"}}:
              .: {{}}
              f:env:
                .: {{}}
                k:{{\"name\":\"LOG_LEVEL\"}}:
                  .: {{}}
                  f:name: {{}}
                  f:value: {{}}
                k:{{\"name\":\"POD_NAME\"}}:
                  .: {{}}
                  f:name: {{}}
                  f:valueFrom:
                    .: {{}}
                    f:fieldRef: {{}}
              f:image: {{}}
              f:imagePullPolicy: {{}}
              f:name: {{}}
              f:ports:
                .: {{}}
                k:{{\"containerPort\":8080,\"protocol\":\"TCP\"}}:
                  .: {{}}
                  f:containerPort: {{}}
                  f:name: {{}}
                  f:protocol: {{}}
              f:readinessProbe:
                .: {{}}
                f:failureThreshold: {{}}
                f:httpGet:
                  .: {{}}
                  f:path: {{}}
                  f:port: {{}}
                  f:scheme: {{}}
                f:periodSeconds: {{}}
              f:resources:
                .: {{}}
                f:limits:
                  .: {{}}
                  f:memory: {{}}
                f:requests:
                  .: {{}}
                  f:cpu: {{}}
                  f:memory: {{}}
              f:terminationMessagePath: {{}}
              f:terminationMessagePolicy: {{}}
              f:volumeMounts:
                .: {{}}
                k:{{\"mountPath\":\"/data\"}}:
                  .: {{}}
                  f:mountPath: {{}}
                  f:name: {{}}
          f:dnsPolicy: {{}}
          f:enableServiceLinks: {{}}
          f:restartPolicy: {{}}
          f:schedulerName: {{}}
          f:securityContext: {{}}
          f:terminationGracePeriodSeconds: {{}}
          f:volumes:
            .: {{}}
            k:{{\"name\":\"data\"}}:
              .: {{}}
              f:name: {{}}
              f:persistentVolumeClaim:
                .: {{}}
                f:claimName: {{}}
      manager: {manager}
      operation: Update
      time: \"2026-05-20T10:00:00Z\"
"
        );
    }
    let _ = write!(
        out,
        "    name: {name}
    namespace: {ns}
    ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: ReplicaSet
      name: app-{index}-7c9f8d6b5
      uid: 5b0c1f9e-0000-4000-8000-{index:012}
    resourceVersion: \"{rv}\"
    uid: 0e6c4f1a-0000-4000-8000-{index:012}
  spec:
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - podAffinityTerm:
            labelSelector:
              matchLabels:
                app.kubernetes.io/name: app-{index}
            topologyKey: kubernetes.io/hostname
          weight: 100
    containers:
    - env:
      - name: LOG_LEVEL
        value: info
      - name: POD_NAME
        valueFrom:
          fieldRef:
            apiVersion: v1
            fieldPath: metadata.name
      image: registry.example.com/app:1.10.3
      imagePullPolicy: IfNotPresent
      name: app
      ports:
      - containerPort: 8080
        name: http
        protocol: TCP
      readinessProbe:
        failureThreshold: 3
        httpGet:
          path: /healthz
          port: http
          scheme: HTTP
        periodSeconds: 10
        successThreshold: 1
        timeoutSeconds: 1
      resources:
        limits:
          memory: 512Mi
        requests:
          cpu: 250m
          memory: 256Mi
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
      volumeMounts:
      - mountPath: /data
        name: data
      - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
        name: kube-api-access-{index}
        readOnly: true
    dnsPolicy: ClusterFirst
    enableServiceLinks: true
    nodeName: worker-{node}
    preemptionPolicy: PreemptLowerPriority
    priority: 0
    restartPolicy: Always
    schedulerName: default-scheduler
    securityContext: {{}}
    serviceAccount: default
    serviceAccountName: default
    terminationGracePeriodSeconds: 30
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    - effect: NoExecute
      key: node.kubernetes.io/unreachable
      operator: Exists
      tolerationSeconds: 300
    volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data-{index}
    - name: kube-api-access-{index}
      projected:
        defaultMode: 420
        sources:
        - serviceAccountToken:
            expirationSeconds: 3607
            path: token
        - configMap:
            items:
            - key: ca.crt
              path: ca.crt
            name: kube-root-ca.crt
        - downwardAPI:
            items:
            - fieldRef:
                apiVersion: v1
                fieldPath: metadata.namespace
              path: namespace
  status:
    conditions:
    - lastProbeTime: null
      lastTransitionTime: \"2026-05-20T10:00:01Z\"
      status: \"True\"
      type: PodReadyToStartContainers
    - lastProbeTime: null
      lastTransitionTime: \"2026-05-20T10:00:00Z\"
      status: \"True\"
      type: Initialized
    - lastProbeTime: null
      lastTransitionTime: \"2026-05-20T10:00:05Z\"
      status: \"True\"
      type: Ready
    - lastProbeTime: null
      lastTransitionTime: \"2026-05-20T10:00:05Z\"
      status: \"True\"
      type: ContainersReady
    - lastProbeTime: null
      lastTransitionTime: \"2026-05-20T10:00:00Z\"
      status: \"True\"
      type: PodScheduled
    containerStatuses:
    - containerID: containerd://{index:064}
      image: registry.example.com/app:1.10.3
      imageID: registry.example.com/app@sha256:{index:064}
      lastState: {{}}
      name: app
      ready: true
      restartCount: 0
      started: true
      state:
        running:
          startedAt: \"2026-05-20T10:00:02Z\"
    hostIP: 10.0.{h}.{l}
    phase: Running
    podIP: 10.244.{h}.{l}
    podIPs:
    - ip: 10.244.{h}.{l}
    qosClass: Burstable
    startTime: \"2026-05-20T10:00:00Z\"
",
        rv = 1000 + index,
        node = index % 50,
        h = index / 250 % 250,
        l = index % 250 + 1,
    );
}

/// `kubectl get pods -A -o yaml` of `pods` pods.
fn pod_dump(pods: usize) -> String {
    let mut text = String::with_capacity(pods * 9_000);
    text.push_str("apiVersion: v1\nitems:\n");
    for index in 0..pods {
        pod_yaml(index, &mut text);
    }
    text.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    text
}

/// YAML nodes (scalars, mappings, sequences) of a text, as serde-saphyr's
/// budget counts them.
fn yaml_nodes(text: &str) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NODES: AtomicUsize = AtomicUsize::new(0);
    fn report(report: &serde_saphyr::budget::BudgetReport) {
        NODES.store(report.nodes, Ordering::SeqCst);
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: usize::MAX,
            max_events: usize::MAX,
            max_documents: usize::MAX,
            max_total_scalar_bytes: usize::MAX,
        },
        budget_report: Some(report),
    };
    let _: Vec<serde::de::IgnoredAny> =
        serde_saphyr::from_multiple_with_options(text, options).expect("valid YAML");
    NODES.load(Ordering::SeqCst)
}

#[test]
fn a_dump_of_ten_thousand_pods_with_managed_fields_reads() {
    const PODS: usize = 10_000;
    let one = pod_dump(1);
    let per_pod = yaml_nodes(&one);
    assert!(
        (600..=700).contains(&per_pod),
        "a generated pod has about 650 YAML nodes, got {per_pod}"
    );
    let dump = pod_dump(PODS);
    // Far beyond serde-saphyr's default budget of 250,000 nodes and
    // 1,000,000 events per input.
    assert!(per_pod * PODS > 6_000_000);
    let run = run_with_stdin(&["-f", "-", "report", "-o", "json"], &dump);
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(document["objects"]["Pod"], PODS);
}

#[test]
fn an_alias_bomb_is_refused_with_a_message_for_people() {
    let mut text = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a0: &a0 \"lol\"\n",
    );
    for level in 1..=9 {
        let previous = format!("*a{}", level - 1);
        let list = [previous.as_str(); 10].join(", ");
        text.push_str(&format!("  a{level}: &a{level} [{list}]\n"));
    }
    let run = run_with_stdin(&["-f", "-", "report"], &text);
    assert_eq!(run.exit, Exit::Failure);
    insta::assert_snapshot!("alias_bomb", run.stderr);
}

/// Runs `test` on a thread with the stack `main` gives policyctl.
fn with_policyctl_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(policyctl::STACK_BYTES)
        .spawn(test)
        .expect("thread")
        .join()
        .expect("test passed");
}

#[test]
fn nesting_is_limited_to_128_levels() {
    with_policyctl_stack(nesting_is_limited_to_128_levels_on_the_policyctl_stack);
}

fn nesting_is_limited_to_128_levels_on_the_policyctl_stack() {
    let deep = |levels: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n  annotations: {{}}\nx: {}1{}\n",
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let run = run_with_stdin(&["-f", "-", "report", "-o", "json"], &deep(127));
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    let run = run_with_stdin(&["-f", "-", "report"], &deep(128));
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.starts_with(
            "error: -, document 1, line 6, column 131: refused: mappings and lists nested more than 128 levels deep"
        ),
        "{}",
        run.stderr
    );
}

/// Standard input that never ends, repeating one line (whose length
/// divides the 1 MiB read size, so each read starts a line).
struct Endless {
    line: &'static [u8],
    read: u64,
}

impl Endless {
    fn repeating(line: &'static [u8]) -> Self {
        assert_eq!((1 << 20) % line.len(), 0, "{line:?}");
        Self { line, read: 0 }
    }
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        for (index, byte) in buf.iter_mut().enumerate() {
            *byte = self.line[index % self.line.len()];
        }
        self.read += buf.len() as u64;
        Ok(buf.len())
    }
}

#[test]
fn an_endless_stream_that_cannot_be_a_manifest_is_refused_after_one_read() {
    // `yes | policyctl -f -`: its first line is a plain scalar, never a
    // Kubernetes object, whatever follows.
    let mut yes = Endless::repeating(b"y\n");
    let run = run_with_reader(&["-f", "-", "report"], &mut yes);
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: -, line 1: expected a Kubernetes object (a mapping with apiVersion and kind), but the input begins with `y`, which cannot start one; stopped reading instead of waiting for the rest\n"
    );
    assert_eq!(
        yes.read,
        1 << 20,
        "one read of 1 MiB, not --max-input-bytes"
    );
    // One endless line with no key in it: refused once it is longer than
    // YAML allows a key to be.
    let mut one_line = Endless::repeating(b"yy");
    let run = run_with_reader(&["-f", "-", "report"], &mut one_line);
    assert!(
        run.stderr.contains("begins with `yyyyyyyy"),
        "{}",
        run.stderr
    );
    assert_eq!(one_line.read, 1 << 20);
}

/// Under an address-space limit, running out of memory while reading is an
/// error that says what to do, not an abort.
#[cfg(target_os = "linux")]
#[test]
fn running_out_of_memory_while_reading_is_an_error_not_an_abort() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let mut child = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 400000 && exec \"$0\" -f - report",
            env!("CARGO_BIN_EXE_policyctl"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        let block = b"a: b\n".repeat(1 << 16);
        // Ends with a broken pipe once policyctl gives up.
        while stdin.write_all(&block).is_ok() {}
    });
    let output = child.wait_with_output().expect("policyctl ends");
    writer.join().expect("writer");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: -: not enough memory to hold the input after "),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation of"));
}

#[test]
fn reading_stops_at_max_input_bytes() {
    let run = run_with_reader(
        &["-f", "-", "--max-input-bytes", "3Mi", "report"],
        &mut Endless::repeating(b"a: b\n\n\n\n"),
    );
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: -: the input is larger than --max-input-bytes (3145728 bytes for all files together); raise the limit with --max-input-bytes or POLICYCTL_MAX_INPUT_BYTES if this is the input you meant\n"
    );
    // A regular file is measured before it is read; the limit counts every
    // file together.
    let nodes = example("nodes.yaml");
    let size = std::fs::metadata(&nodes).expect("example").len();
    let limit = (size + 10).to_string();
    let run = common::run(&[
        "-f",
        &nodes,
        "-f",
        &example("namespaces.yaml"),
        "--max-input-bytes",
        &limit,
        "report",
    ]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.starts_with(&format!(
            "error: {}: the input is larger than --max-input-bytes ({limit} bytes",
            example("namespaces.yaml")
        )),
        "{}",
        run.stderr
    );
    assert!(
        "0".parse::<policyctl::byte_size::ByteSize>().is_err(),
        "a zero limit is refused"
    );
    assert_eq!(
        run_with_stdin(&["--max-input-bytes", "lots", "report"], "").exit,
        Exit::Usage
    );
}

#[cfg(unix)]
#[test]
fn dev_zero_stops_at_once() {
    let run = run(&["-f", "/dev/zero", "report"]);
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr,
        "error: /dev/zero: not a text file (a NUL byte at byte 0); policyctl reads YAML or JSON text\n"
    );
    // `--config` is read with the same bounds.
    let run = common::run(&["--config", "/dev/zero", "concurrency"]);
    assert_eq!(run.exit, Exit::Failure);
    assert!(
        run.stderr.ends_with(
            "\nerror: --config /dev/zero: not a text file (a NUL byte at byte 0); policyctl reads YAML or JSON text\n"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn utf16_from_powershell_is_read() {
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n";
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let run = run_with_reader(
        &["-f", "-", "concurrency", "-o", "json"],
        &mut bytes.as_slice(),
    );
    assert_eq!(run.exit, Exit::Success, "{}", run.stderr);
    assert!(run.stdout.contains("\"n1\": 1"), "{}", run.stdout);
}

#[test]
fn a_directory_is_read_in_name_order_and_recursively_with_r() {
    let dir = scratch("directory");
    std::fs::create_dir_all(dir.join("sub")).expect("sub");
    let node = |name: &str| format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n");
    std::fs::write(dir.join("b.yaml"), node("b")).expect("write");
    std::fs::write(
        dir.join("a.json"),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}"#,
    )
    .expect("write");
    std::fs::write(dir.join("c.yml"), node("c")).expect("write");
    std::fs::write(dir.join("notes.txt"), "not a manifest").expect("write");
    std::fs::write(dir.join("sub/d.yaml"), node("d")).expect("write");
    // The same Node twice: the error names the two files in reading order.
    std::fs::write(dir.join("sub/e.yaml"), node("a")).expect("write");
    let path = dir.display().to_string();
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&ok(args).stdout).expect("JSON")
    };
    let flat = json(&["-f", &path, "concurrency", "-o", "json"]);
    assert_eq!(
        flat["nodes"]
            .as_object()
            .map(|n| n.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
    );
    let run = run(&["-f", &path, "-R", "concurrency"]);
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr.replace(&path, "DIR"),
        "error: DIR/sub/e.yaml, document 1: Node a is defined twice (first in DIR/a.json, document 1); remove one of them\n"
    );
    std::fs::remove_file(dir.join("sub/e.yaml")).expect("remove");
    let deep = json(&["-f", &path, "--recursive", "concurrency", "-o", "json"]);
    assert_eq!(deep["nodes"].as_object().map(serde_json::Map::len), Some(4));

    let empty = scratch("empty-directory");
    std::fs::create_dir_all(empty.join("sub")).expect("sub");
    let path = empty.display().to_string();
    let run = common::run(&["-f", &path, "report"]);
    assert_eq!(run.exit, Exit::Failure);
    assert_eq!(
        run.stderr.replace(&path, "DIR"),
        "error: no objects were read from DIR: the directory holds no .yaml, .yml or .json file (-R/--recursive reads its subdirectories too)\n"
    );
}

#[test]
fn syntax_errors_name_file_document_line_and_column_without_parser_internals() {
    let cases = [
        (
            "duplicate_key",
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nkind: Node\nmetadata: {name: b}\n",
        ),
        (
            "tab_indentation",
            "apiVersion: v1\nkind: Node\nmetadata:\n\tname: a\n",
        ),
        (
            "unclosed_flow",
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: [}\n",
        ),
        (
            "unknown_alias",
            "apiVersion: v1\nkind: Node\nmetadata: {name: *x}\n",
        ),
        (
            "truncated_json",
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\",\n \"metadata\": {\"name\": \"a\"}\n",
        ),
        (
            "bool_name",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
        ),
        (
            "number_in_config_map_data",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: versions, namespace: velero}\ndata:\n  velero: 1.10\n",
        ),
        (
            "bool_in_config_map_data",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags, namespace: velero}\ndata:\n  enabled: yes\n",
        ),
    ];
    let mut all = String::new();
    for (name, text) in cases {
        let run = run_with_stdin(&["-f", "-", "report"], text);
        assert_eq!(run.exit, Exit::Failure, "{name}");
        for internal in [
            "budget",
            "Budget",
            "Nodes {",
            "DuplicateKeyPolicy",
            "-->",
            "<input>",
        ] {
            assert!(!run.stderr.contains(internal), "{name}: {}", run.stderr);
        }
        all.push_str(&format!("{name}: {}", run.stderr));
    }
    insta::assert_snapshot!("syntax_errors", all);
}

#[test]
fn every_new_input_flag_is_also_an_environment_variable() {
    use clap::CommandFactory;
    let command = Cli::command();
    let env = |id: &str| {
        command
            .get_arguments()
            .find(|arg| arg.get_id() == id)
            .and_then(|arg| arg.get_env())
            .and_then(|env| env.to_str())
            .map(str::to_owned)
    };
    assert_eq!(
        env("max_input_bytes").as_deref(),
        Some("POLICYCTL_MAX_INPUT_BYTES")
    );
    assert_eq!(env("recursive").as_deref(), Some("POLICYCTL_RECURSIVE"));
    assert_eq!(env("config_map").as_deref(), Some("POLICYCTL_CONFIG_MAP"));
}
