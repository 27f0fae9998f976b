//! The stand-in against the real kube-apiserver of the test bed
//! (`bash testbed/build.sh`): each case sends the same requests to both,
//! in a namespace of the same name, and compares what matters of each
//! answer. Where the two are known to differ, the case asserts each side's
//! answer, and the difference is described in docs/kube-fake-api.md under
//! "Differences from kube-apiserver" (`differences_are_documented` checks
//! the headings), so a change on either side fails here.
//!
//! A step's *digest* is what is compared: the status code, the `reason`
//! and `message` of an error, and the JSON pointers the step names (`*`
//! maps over a list). Only what must differ is normalised: resourceVersions
//! and uids become labels in order of first appearance (`rv#0`, `rv#1`, ...),
//! so their changes are compared, not their values; a list's own
//! resourceVersion (the store's latest, which the other cases move on the
//! real server) gets a new label `list-rv#<n>` per list, and the pages of
//! a `continue` chain must have their first page's; timestamps become `<time>`;
//! continue tokens `<continue>`; the random suffix of a generated name
//! `*`s; and the `kube-root-ca.crt` ConfigMap, which
//! kube-controller-manager publishes into every namespace, is left out of
//! lists.
//!
//! Every case has a fresh stand-in and a fresh namespace of the one bed the
//! file shares. The case that compacts etcd runs alone (`COMPACTION`).
//! `KUBE_TESTBED_SKIP=1` skips the cases (and says so).

use std::collections::BTreeMap;
use std::time::Duration;

use http::Method;
use http_body_util::BodyExt;
use kube_fake_api::FakeApi;
use kube_testbed::Testbed;
use serde_json::{Map, Value, json};

/// The User-Agent of every request (its first segment is the default
/// field manager on both servers).
const USER_AGENT: &str = "differential/1.0";

/// Held for reading by every case and for writing by the one that
/// compacts etcd: a compaction expires the continue tokens and watch
/// positions of cases running beside it.
static COMPACTION: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// The bed's CRDs are installed once per process.
static BED_CRDS: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// docs/kube-fake-api.md, whose "Differences from kube-apiserver" section
/// has a heading for each difference below.
const DOCS: &str = include_str!("../../../docs/kube-fake-api.md");

const NAMESPACES: &str = "Namespaces need not exist";
const CEL: &str = "CEL validation rules are not evaluated";
const APPLY_LISTS: &str = "Server-side apply owns and replaces lists whole";
const COMPACTION_ALL: &str = "Compaction expires all history at once";
const STRATEGIC_LISTS: &str = "Strategic merge patches merge ObjectMeta's lists only";
const BUILT_IN_TYPES: &str = "Built-in types are neither defaulted nor validated";
const GARBAGE_COLLECTION: &str = "No garbage collection";
const DIFFERENCES: &[&str] = &[
    NAMESPACES,
    CEL,
    APPLY_LISTS,
    COMPACTION_ALL,
    STRATEGIC_LISTS,
    BUILT_IN_TYPES,
    GARBAGE_COLLECTION,
];

/// A CRD file of the bed's upstream sets, installed into each case's
/// stand-in (the bed has every set installed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crd {
    /// A file of Velero's current CRDs (`crds/velero-<VELERO_VERSION>`).
    Velero(&'static str),
    /// A file of Cluster API's CRDs (`crds/cluster-api-<CLUSTER_API_VERSION>`).
    ClusterApi(&'static str),
    /// The previous Velero release's `backups.velero.io`, under the group
    /// `v117.velero.io`: one API server cannot serve two definitions of
    /// one kind, and nothing but the group is changed.
    VeleroPreviousBackups,
}

/// The group the previous Velero release's Backup is served under here.
const PREVIOUS_VELERO_GROUP: &str = "v117.velero.io";

fn crd_text(bed: &Testbed, crd: Crd) -> String {
    let layout = bed.layout();
    let versions = bed.versions();
    let (dir, file) = match crd {
        Crd::Velero(file) => (layout.crds("velero", &versions.velero), file),
        Crd::ClusterApi(file) => (layout.crds("cluster-api", &versions.cluster_api), file),
        Crd::VeleroPreviousBackups => (
            layout.crds("velero-crds", &versions.velero_previous),
            "velero.io_backups.yaml",
        ),
    };
    let path = dir.expect("the bed's CRDs").join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    if crd == Crd::VeleroPreviousBackups {
        let renamed = text
            .replace(
                "\n  name: backups.velero.io\n",
                &format!("\n  name: backups.{PREVIOUS_VELERO_GROUP}\n"),
            )
            .replace(
                "\n  group: velero.io\n",
                &format!("\n  group: {PREVIOUS_VELERO_GROUP}\n"),
            );
        assert_ne!(renamed, text, "the previous Backup CRD was not renamed");
        return renamed;
    }
    text
}

/// The shared bed, with Velero's and Cluster API's CRDs and the previous
/// Velero Backup CRD installed; `None` when the tests are skipped.
async fn bed() -> Option<&'static Testbed> {
    if kube_testbed::skip_requested() {
        return None;
    }
    let bed = kube_testbed::shared();
    BED_CRDS
        .get_or_init(|| async {
            let versions = bed.versions();
            for (product, version) in [
                ("velero", &versions.velero),
                ("cluster-api", &versions.cluster_api),
            ] {
                let dir = bed.layout().crds(product, version).expect("the bed's CRDs");
                bed.install_crds(&dir)
                    .await
                    .unwrap_or_else(|e| panic!("cannot install {}: {e}", dir.display()));
            }
            let dir = std::env::temp_dir()
                .join(format!("kube-fake-api-differential-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a temporary directory");
            std::fs::write(
                dir.join("backups.yaml"),
                crd_text(bed, Crd::VeleroPreviousBackups),
            )
            .expect("the renamed CRD written");
            bed.install_crds(&dir)
                .await
                .expect("the previous Velero Backup CRD installed");
            let _ = std::fs::remove_dir_all(&dir);
        })
        .await;
    Some(bed)
}

/// What a step does.
#[derive(Debug, Clone)]
enum Action {
    /// One request.
    Request {
        method: Method,
        path: String,
        body: Option<Value>,
        content_type: Option<&'static str>,
    },
    /// A watch (`watch=1` is added): the events received until `events`
    /// came or `wait` passed.
    Watch {
        path: String,
        events: usize,
        wait: Duration,
    },
    /// Compacts the history: `FakeApi::compact` and `Testbed::compact_etcd`.
    Compact,
}

/// What a step expects of the two answers.
#[derive(Debug, Clone)]
enum Outcome {
    /// The digests are equal.
    Same,
    /// A documented difference: each digest has the given fields.
    Differs {
        difference: &'static str,
        fake: Value,
        real: Value,
    },
}

#[derive(Debug, Clone)]
struct Step {
    action: Action,
    /// The ServiceAccount of the case's namespace that sends it (`None`:
    /// the administrator).
    account: Option<&'static str>,
    fields: Vec<&'static str>,
    compare_message: bool,
    /// On the real server, retried while it answers 403 (RBAC objects take
    /// a moment to reach the authorizer).
    until_allowed: bool,
    outcome: Outcome,
}

fn request(
    method: Method,
    path: &str,
    body: Option<Value>,
    content_type: Option<&'static str>,
) -> Step {
    Step {
        action: Action::Request {
            method,
            path: path.to_owned(),
            body,
            content_type,
        },
        account: None,
        fields: Vec::new(),
        compare_message: true,
        until_allowed: false,
        outcome: Outcome::Same,
    }
}

fn get(path: &str) -> Step {
    request(Method::GET, path, None, None)
}

fn post(path: &str, body: Value) -> Step {
    request(Method::POST, path, Some(body), Some("application/json"))
}

fn put(path: &str, body: Value) -> Step {
    request(Method::PUT, path, Some(body), Some("application/json"))
}

fn delete(path: &str) -> Step {
    request(Method::DELETE, path, None, None)
}

fn delete_with(path: &str, options: Value) -> Step {
    request(
        Method::DELETE,
        path,
        Some(options),
        Some("application/json"),
    )
}

fn merge(path: &str, body: Value) -> Step {
    request(
        Method::PATCH,
        path,
        Some(body),
        Some("application/merge-patch+json"),
    )
}

fn json_patch(path: &str, body: Value) -> Step {
    request(
        Method::PATCH,
        path,
        Some(body),
        Some("application/json-patch+json"),
    )
}

fn strategic(path: &str, body: Value) -> Step {
    request(
        Method::PATCH,
        path,
        Some(body),
        Some("application/strategic-merge-patch+json"),
    )
}

fn apply(path: &str, body: Value) -> Step {
    request(
        Method::PATCH,
        path,
        Some(body),
        Some("application/apply-patch+yaml"),
    )
}

fn watch(path: &str, events: usize, wait_ms: u64) -> Step {
    Step {
        action: Action::Watch {
            path: path.to_owned(),
            events,
            wait: Duration::from_millis(wait_ms),
        },
        ..get(path)
    }
}

fn compact() -> Step {
    Step {
        action: Action::Compact,
        ..get("")
    }
}

impl Step {
    /// Compares these JSON pointers of the answers too.
    fn fields(mut self, fields: &[&'static str]) -> Self {
        self.fields.extend_from_slice(fields);
        self
    }

    /// Sent by the ServiceAccount `name` of the case's namespace.
    fn by(mut self, name: &'static str) -> Self {
        self.account = Some(name);
        self
    }

    /// Compares the code and reason of an error, not its message.
    fn any_message(mut self) -> Self {
        self.compare_message = false;
        self
    }

    fn until_allowed(mut self) -> Self {
        self.until_allowed = true;
        self
    }

    /// A documented difference: the stand-in's digest has the fields of
    /// `fake`, the real server's those of `real` (`$NS` is the namespace).
    fn differs(mut self, difference: &'static str, fake: Value, real: Value) -> Self {
        self.outcome = Outcome::Differs {
            difference,
            fake,
            real,
        };
        self
    }
}

/// A sequence of steps, sent to a fresh stand-in and to the bed in a fresh
/// namespace.
struct Case {
    name: &'static str,
    crds: Vec<Crd>,
    /// RBAC objects (and ServiceAccounts) of the case, `$NS` substituted:
    /// created on the real server, enforced by the stand-in.
    rbac: Option<&'static str>,
    setup: Option<fn(&FakeApi)>,
    /// Namespaces created beside the case's, as `$NS-<suffix>`.
    extra_namespaces: Vec<&'static str>,
    steps: Vec<Step>,
    compacts: bool,
}

impl Case {
    fn new(name: &'static str) -> Self {
        Case {
            name,
            crds: Vec::new(),
            rbac: None,
            setup: None,
            extra_namespaces: Vec::new(),
            steps: Vec::new(),
            compacts: false,
        }
    }

    fn crds(mut self, crds: &[Crd]) -> Self {
        self.crds.extend_from_slice(crds);
        self
    }

    fn rbac(mut self, yaml: &'static str) -> Self {
        self.rbac = Some(yaml);
        self
    }

    /// Configures the stand-in before the steps.
    fn setup(mut self, setup: fn(&FakeApi)) -> Self {
        self.setup = Some(setup);
        self
    }

    fn namespace(mut self, suffix: &'static str) -> Self {
        self.extra_namespaces.push(suffix);
        self
    }

    fn step(mut self, step: Step) -> Self {
        if matches!(step.action, Action::Compact) {
            self.compacts = true;
        }
        self.steps.push(step);
        self
    }

    async fn run(self) {
        let Some(bed) = bed().await else { return };
        let _turn = if self.compacts {
            Turn::Alone(COMPACTION.write().await)
        } else {
            Turn::Shared(COMPACTION.read().await)
        };
        let ns = bed
            .namespace(&format!("diff-{}", self.name))
            .await
            .expect("a namespace on the bed");
        let fake = FakeApi::new();
        for crd in &self.crds {
            fake.install_crds(&crd_text(bed, *crd))
                .unwrap_or_else(|e| panic!("{crd:?} on the stand-in: {e}"));
        }
        let mut namespaces = vec![ns.clone()];
        for suffix in &self.extra_namespaces {
            let extra = format!("{ns}-{suffix}");
            let namespace =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}});
            let (code, body) = send(
                &bed.client(),
                Method::POST,
                "/api/v1/namespaces",
                Some(&namespace),
                Some("application/json"),
            )
            .await;
            assert_eq!(code, 201, "namespace {extra} on the bed: {body}");
            namespaces.push(extra);
        }
        for name in &namespaces {
            fake.seed_value(
                &kube_fake_api::ResourceId::new("", "v1", "namespaces"),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .expect("a namespace on the stand-in");
        }
        let mut accounts: BTreeMap<&'static str, (kube::Client, kube::Client)> = BTreeMap::new();
        if let Some(yaml) = self.rbac {
            let yaml = yaml.replace("$NS", &ns);
            fake.enforce_rbac(&yaml).expect("RBAC on the stand-in");
            bed.apply_yaml(&yaml).await.expect("RBAC on the bed");
        }
        for step in &self.steps {
            if let Some(name) = step.account
                && !accounts.contains_key(name)
            {
                let kubeconfig = bed
                    .service_account_kubeconfig(&ns, name)
                    .await
                    .unwrap_or_else(|e| panic!("ServiceAccount {ns}/{name}: {e}"));
                let real = bed
                    .client_from_kubeconfig(&kubeconfig)
                    .await
                    .expect("a ServiceAccount client");
                accounts.insert(name, (fake.client_as(&ns, name), real));
            }
        }
        if let Some(setup) = self.setup {
            setup(&fake);
        }
        let admin = (fake.client(), bed.client());
        let mut sides = [Side::new(), Side::new()];
        let mut failures = Vec::new();
        for (index, step) in self.steps.iter().enumerate() {
            let (fake_client, real_client) = match step.account {
                Some(name) => &accounts[name],
                None => &admin,
            };
            if matches!(step.action, Action::Compact) {
                fake.compact();
                bed.compact_etcd().await.expect("etcd compacted");
            }
            // The two servers are independent: both sides at once.
            let [fake_side, real_side] = &mut sides;
            let (fake_digest, real_digest) = tokio::join!(
                fake_side.run(step, fake_client, &ns, false),
                real_side.run(step, real_client, &ns, true)
            );
            if matches!(step.action, Action::Compact) {
                continue;
            }
            let described = describe(&step.action);
            eprintln!(
                "{} step {index} {described}\n  stand-in:       {fake_digest}\n  kube-apiserver: {real_digest}",
                self.name
            );
            if std::env::var_os("DIFF_RAW").is_some() {
                eprintln!(
                    "  raw stand-in:       {}\n  raw kube-apiserver: {}",
                    sides[0].answers.last().unwrap_or(&Value::Null),
                    sides[1].answers.last().unwrap_or(&Value::Null)
                );
            }
            if !step.compare_message {
                let message = |side: &Side| side.answers.last().map(|a| a["message"].clone());
                eprintln!(
                    "  messages: {:?} / {:?}",
                    message(&sides[0]),
                    message(&sides[1])
                );
            }
            match &step.outcome {
                Outcome::Same => {
                    if fake_digest != real_digest {
                        failures.push(format!(
                            "step {index} ({described}): the answers differ\n  stand-in:       {fake_digest}\n  kube-apiserver: {real_digest}"
                        ));
                    }
                }
                Outcome::Differs {
                    difference,
                    fake: want_fake,
                    real: want_real,
                } => {
                    assert!(
                        documented(difference),
                        "\"{difference}\" is not a heading under \"Differences from kube-apiserver\" in docs/kube-fake-api.md"
                    );
                    for (side, want, got) in [
                        ("stand-in", want_fake, &fake_digest),
                        ("kube-apiserver", want_real, &real_digest),
                    ] {
                        let want = substitute_value(want, &ns, &[]);
                        if let Some(problem) = lacks(&want, got) {
                            failures.push(format!(
                                "step {index} ({described}): the documented difference \"{difference}\" changed on the {side}: {problem}\n  stand-in:       {fake_digest}\n  kube-apiserver: {real_digest}"
                            ));
                        }
                    }
                }
            }
        }
        assert!(
            failures.is_empty(),
            "case {} in namespace {ns}:\n{}",
            self.name,
            failures.join("\n")
        );
    }
}

enum Turn {
    Shared(#[allow(dead_code)] tokio::sync::RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] tokio::sync::RwLockWriteGuard<'static, ()>),
}

fn documented(difference: &str) -> bool {
    let Some((_, section)) = DOCS.split_once("\n## Differences from kube-apiserver\n") else {
        return false;
    };
    let section = section.split("\n## ").next().unwrap_or_default();
    section.lines().any(|line| {
        line.strip_prefix("### ")
            .is_some_and(|h| h.trim() == difference)
    })
}

/// `None` when every field of `want` is in `got` with that value.
fn lacks(want: &Value, got: &Value) -> Option<String> {
    let want = want.as_object()?;
    want.iter().find_map(|(key, value)| {
        let have = got.get(key).unwrap_or(&Value::Null);
        (have != value).then(|| format!("{key} is {have}, expected {value}"))
    })
}

fn describe(action: &Action) -> String {
    match action {
        Action::Request {
            method,
            path,
            content_type,
            ..
        } => match content_type {
            Some(ct) if *method == Method::PATCH => format!("PATCH ({ct}) {path}"),
            _ => format!("{method} {path}"),
        },
        Action::Watch { path, .. } => format!("WATCH {path}"),
        Action::Compact => "compaction".to_owned(),
    }
}

/// One server's answers so far and its labels for resourceVersions and uids.
struct Side {
    answers: Vec<Value>,
    labels: BTreeMap<&'static str, BTreeMap<String, usize>>,
    lists: usize,
}

impl Side {
    fn new() -> Self {
        Side {
            answers: Vec::new(),
            labels: BTreeMap::new(),
            lists: 0,
        }
    }

    fn label(&mut self, table: &'static str, value: &str) -> String {
        let table_map = self.labels.entry(table).or_default();
        let next = table_map.len();
        let n = *table_map.entry(value.to_owned()).or_insert(next);
        format!("{table}#{n}")
    }

    async fn run(&mut self, step: &Step, client: &kube::Client, ns: &str, real: bool) -> Value {
        let (digest, answer) = match &step.action {
            Action::Compact => (Value::Null, Value::Null),
            Action::Request {
                method,
                path,
                body,
                content_type,
            } => {
                let path = substitute(path, ns, &self.answers, true);
                let body = body
                    .as_ref()
                    .map(|b| substitute_value(b, ns, &self.answers));
                let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
                let (code, mut answer) = loop {
                    let (code, answer) =
                        send(client, method.clone(), &path, body.as_ref(), *content_type).await;
                    if real
                        && step.until_allowed
                        && code == 403
                        && tokio::time::Instant::now() < deadline
                    {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    break (code, answer);
                };
                if let Some(items) = answer.get_mut("items").and_then(Value::as_array_mut) {
                    items.retain(|item| {
                        item.pointer("/metadata/name") != Some(&json!("kube-root-ca.crt"))
                    });
                }
                (self.digest(step, code, &answer), answer)
            }
            Action::Watch { path, events, wait } => {
                let path = substitute(path, ns, &self.answers, true);
                let separator = if path.contains('?') { '&' } else { '?' };
                let (code, received) =
                    watch_events(client, &format!("{path}{separator}watch=1"), *events, *wait)
                        .await;
                let mut digest = Map::new();
                digest.insert("code".to_owned(), json!(code));
                let mut seen = Vec::new();
                for event in &received {
                    let kind = event["type"].as_str().unwrap_or_default();
                    let object = &event["object"];
                    let described = match kind {
                        "ERROR" => {
                            json!({"type": kind, "code": object["code"], "reason": object["reason"]})
                        }
                        "BOOKMARK" => {
                            if object.pointer("/metadata/annotations/k8s.io~1initial-events-end")
                                == Some(&json!("true"))
                            {
                                json!({"type": kind, "initialEventsEnd": true})
                            } else {
                                continue;
                            }
                        }
                        _ => {
                            let rv = object
                                .pointer("/metadata/resourceVersion")
                                .and_then(Value::as_str)
                                .map(|rv| self.label("rv", rv));
                            json!({"type": kind, "name": object.pointer("/metadata/name"), "rv": rv})
                        }
                    };
                    seen.push(described);
                }
                if code != 200 {
                    digest.insert("answer".to_owned(), json!(received));
                }
                digest.insert("events".to_owned(), Value::Array(seen));
                (Value::Object(digest), json!({"events": received}))
            }
        };
        self.answers.push(answer);
        digest
    }

    /// The label of a list's resourceVersion: a new one for a fresh list,
    /// the first page's for a continued one.
    fn list_label(&mut self, value: &str, continued: bool) -> String {
        let table = self.labels.entry("list-rv").or_default();
        if continued {
            return match table.get(value) {
                Some(n) => format!("list-rv#{n}"),
                None => format!("list-rv (not a first page's: {value})"),
            };
        }
        let n = self.lists;
        self.lists += 1;
        table.insert(value.to_owned(), n);
        format!("list-rv#{n}")
    }

    fn digest(&mut self, step: &Step, code: u16, answer: &Value) -> Value {
        let mut digest = Map::new();
        digest.insert("code".to_owned(), json!(code));
        if answer["kind"] == "Status" && answer["status"] == "Failure" {
            digest.insert("reason".to_owned(), answer["reason"].clone());
            if step.compare_message {
                let mut message = answer["message"].as_str().unwrap_or_default().to_owned();
                for table in ["rv", "uid"] {
                    for (value, n) in self.labels.get(table).into_iter().flatten() {
                        message = message.replace(&format!("({value})"), &format!("({table}#{n})"));
                    }
                }
                digest.insert("message".to_owned(), json!(message));
            }
        }
        let is_list = answer["kind"].as_str().is_some_and(|k| k.ends_with("List"));
        let mut answer = answer.clone();
        if let (Some(prefix), Some(name)) = (
            answer
                .pointer("/metadata/generateName")
                .and_then(Value::as_str),
            answer.pointer("/metadata/name").and_then(Value::as_str),
        ) && name.starts_with(prefix)
        {
            let masked = format!("{prefix}{}", "*".repeat(name.len() - prefix.len()));
            answer["metadata"]["name"] = json!(masked);
        }
        for pointer in &step.fields {
            let value = extract(&answer, pointer);
            let context = pointer
                .rsplit('/')
                .find(|segment| *segment != "*")
                .unwrap_or_default();
            let value = match (&value, is_list && *pointer == "/metadata/resourceVersion") {
                (Value::String(rv), true) => {
                    let continued = matches!(&step.action, Action::Request { path, .. } if path.contains("continue="));
                    json!(self.list_label(rv, continued))
                }
                _ => self.normalize(value, context),
            };
            digest.insert((*pointer).to_owned(), value);
        }
        Value::Object(digest)
    }

    /// See the module documentation.
    fn normalize(&mut self, value: Value, key: &str) -> Value {
        match value {
            Value::String(text) => match key {
                "resourceVersion" if !text.is_empty() => json!(self.label("rv", &text)),
                "uid" => json!(self.label("uid", &text)),
                "continue" if !text.is_empty() => json!("<continue>"),
                k if k.ends_with("Timestamp") || k == "time" || k.ends_with("Time") => {
                    json!("<time>")
                }
                _ => Value::String(text),
            },
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| self.normalize(item, key))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let v = self.normalize(v, &k);
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// The value at `pointer` (`*` maps over a list); `null` when absent.
fn extract(value: &Value, pointer: &str) -> Value {
    fn walk(value: &Value, segments: &[&str]) -> Value {
        let Some((first, rest)) = segments.split_first() else {
            return value.clone();
        };
        match (*first, value) {
            ("*", Value::Array(items)) => {
                Value::Array(items.iter().map(|i| walk(i, rest)).collect())
            }
            (segment, Value::Object(map)) => {
                let key = segment.replace("~1", "/").replace("~0", "~");
                map.get(&key).map_or(Value::Null, |v| walk(v, rest))
            }
            (segment, Value::Array(items)) => segment
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i))
                .map_or(Value::Null, |v| walk(v, rest)),
            _ => Value::Null,
        }
    }
    let segments: Vec<&str> = pointer.split('/').skip(1).collect();
    walk(value, &segments)
}

/// Replaces `$NS` by the namespace and `$RV(i)`, `$UID(i)`, `$CONTINUE(i)`
/// by the resourceVersion, uid or continue token of answer `i` (percent-
/// encoded when `encode`).
fn substitute(text: &str, ns: &str, answers: &[Value], encode: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$NS") {
            out.push_str(ns);
            rest = after;
            continue;
        }
        let parsed = rest
            .find('(')
            .zip(rest.find(')'))
            .and_then(|(open, close)| {
                let index: usize = rest[open + 1..close].parse().ok()?;
                let pointer = match &rest[1..open] {
                    "RV" => "/metadata/resourceVersion",
                    "UID" => "/metadata/uid",
                    "CONTINUE" => "/metadata/continue",
                    _ => return None,
                };
                let value = answers.get(index)?.pointer(pointer)?.as_str()?.to_owned();
                Some((value, close))
            });
        match parsed {
            Some((value, close)) => {
                if encode {
                    for byte in value.bytes() {
                        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                            out.push(byte as char);
                        } else {
                            out.push_str(&format!("%{byte:02X}"));
                        }
                    }
                } else {
                    out.push_str(&value);
                }
                rest = &rest[close + 1..];
            }
            None => {
                out.push('$');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn substitute_value(value: &Value, ns: &str, answers: &[Value]) -> Value {
    match value {
        Value::String(text) => Value::String(substitute(text, ns, answers, false)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_value(v, ns, answers))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (
                        substitute(k, ns, answers, false),
                        substitute_value(v, ns, answers),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn http_request(
    method: Method,
    path: &str,
    body: Option<&Value>,
    content_type: Option<&str>,
) -> http::Request<kube::client::Body> {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::USER_AGENT, USER_AGENT);
    if let Some(content_type) = content_type {
        builder = builder.header(http::header::CONTENT_TYPE, content_type);
    }
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    builder
        .body(kube::client::Body::from(bytes))
        .expect("a valid request")
}

/// One request: the status code and the answer (JSON, or the text as a
/// JSON string).
async fn send(
    client: &kube::Client,
    method: Method,
    path: &str,
    body: Option<&Value>,
    content_type: Option<&str>,
) -> (u16, Value) {
    let response = client
        .send(http_request(method, path, body, content_type))
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let code = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let answer = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (code, answer)
}

/// The events of a watch until `events` came or `wait` passed (an error
/// answer comes back as one element).
async fn watch_events(
    client: &kube::Client,
    path: &str,
    events: usize,
    wait: Duration,
) -> (u16, Vec<Value>) {
    let response = client
        .send(http_request(Method::GET, path, None, None))
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let code = response.status().as_u16();
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    while received.len() < events {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            _ => break,
        };
        if let Ok(data) = frame.into_data() {
            buffer.extend_from_slice(&data);
        }
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if let Ok(event) = serde_json::from_slice::<Value>(&line) {
                received.push(event);
            }
        }
        if code != 200 {
            break;
        }
    }
    if !buffer.is_empty()
        && let Ok(event) = serde_json::from_slice::<Value>(&buffer)
    {
        received.push(event);
    }
    (code, received)
}

// ---------------------------------------------------------------------------
// The cases.

const CONFIGMAPS: &str = "/api/v1/namespaces/$NS/configmaps";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/$NS/leases";
const BACKUPS: &str = "/apis/velero.io/v1/namespaces/$NS/backups";
const MACHINES: &str = "/apis/cluster.x-k8s.io/v1beta2/namespaces/$NS/machines";

/// The fields of a written object that both servers fill the same way.
const OBJECT: &[&str] = &[
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/resourceVersion",
    "/metadata/uid",
    "/metadata/creationTimestamp",
    "/metadata/generation",
    "/metadata/labels",
    "/metadata/finalizers",
    "/metadata/deletionTimestamp",
    "/data",
];

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn path(collection: &str, name: &str) -> String {
    format!("{collection}/{name}")
}

#[tokio::test]
async fn create_get_already_exists_and_generate_name() {
    Case::new("create")
        .step(post(CONFIGMAPS, cm("a")).fields(OBJECT))
        .step(post(CONFIGMAPS, cm("a")))
        .step(
            post(
                CONFIGMAPS,
                json!({"metadata": {"generateName": "job-"}, "data": {"k": "v"}}),
            )
            .fields(&["/metadata/name", "/metadata/generateName"]),
        )
        .step(get(&path(CONFIGMAPS, "a")).fields(OBJECT))
        .step(get(&path(CONFIGMAPS, "missing")))
        .step(post(CONFIGMAPS, json!({"data": {"k": "v"}})))
        // A dump's server-set fields: the resourceVersion makes the
        // create fail; uid and creationTimestamp are replaced.
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "dumped", "resourceVersion": "12"}, "data": {"k": "v"}}),
        ))
        .step(
            post(
                CONFIGMAPS,
                json!({"metadata": {"name": "dumped", "resourceVersion": "0", "uid": "6f1d2b3a-0a41-4c1e-9a10-000000000001"}}),
            )
            .fields(&["/metadata/name"]),
        )
        .step(
            post(
                CONFIGMAPS,
                json!({"metadata": {"name": "b", "namespace": "elsewhere"}}),
            )
            .any_message(),
        )
        .run()
        .await;
}

#[tokio::test]
async fn updates_and_patches_are_conditional_on_the_resource_version() {
    let a = path(CONFIGMAPS, "a");
    Case::new("conflicts")
        .step(post(CONFIGMAPS, cm("a")).fields(OBJECT))
        .step(
            put(&a, json!({"metadata": {"name": "a", "resourceVersion": "$RV(0)"}, "data": {"k": "v2"}}))
                .fields(OBJECT),
        )
        .step(put(&a, json!({"metadata": {"name": "a", "resourceVersion": "$RV(0)"}, "data": {"k": "v3"}})))
        .step(merge(&a, json!({"metadata": {"resourceVersion": "$RV(0)"}, "data": {"k": "x"}})))
        .step(merge(&a, json!({"metadata": {"resourceVersion": "$RV(1)"}, "data": {"k": "x"}})).fields(OBJECT))
        .step(merge(&path(CONFIGMAPS, "zzz"), json!({"data": {"k": "x"}})))
        // Built-in kinds take updates without a resourceVersion.
        .step(put(&a, json!({"metadata": {"name": "a"}, "data": {"k": "y"}})).fields(OBJECT))
        .step(put(&a, json!({"metadata": {"name": "b"}, "data": {"k": "y"}})))
        .step(delete_with(&a, json!({"preconditions": {"resourceVersion": "$RV(0)"}})))
        .step(delete_with(&a, json!({"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})))
        .step(get(&a).fields(OBJECT))
        .run()
        .await;
}

#[tokio::test]
async fn merge_and_json_patches() {
    let a = path(CONFIGMAPS, "a");
    Case::new("patches")
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v", "m": "n"}})))
        .step(
            json_patch(&a, json!([{"op": "add", "path": "/data/j", "value": "1"}, {"op": "remove", "path": "/data/k"}]))
                .fields(OBJECT),
        )
        .step(json_patch(&a, json!([{"op": "test", "path": "/data/j", "value": "2"}])).any_message())
        .step(json_patch(&a, json!({"op": "add"})).any_message())
        .step(merge(&a, json!({"data": {"m": null}, "metadata": {"labels": {"y": "2"}}})).fields(OBJECT))
        .step(merge(&a, json!(["not", "an", "object"])).any_message())
        .step(request(Method::PATCH, &a, Some(json!({"data": {}})), Some("text/plain")).any_message())
        .run()
        .await;
}

#[tokio::test]
async fn strategic_merge_patches_on_a_config_map() {
    let a = path(CONFIGMAPS, "a");
    // The owners exist (the garbage collector deletes objects whose
    // owners do not); $UID(0) and $UID(1) are theirs.
    Case::new("strategic")
        .step(post(CONFIGMAPS, cm("o1")))
        .step(post(CONFIGMAPS, cm("o2")))
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["example.com/a"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "$UID(0)"}]},
                "data": {"k": "v"}}),
        ))
        .step(strategic(&a, json!({"metadata": {"labels": {"y": "2"}}, "data": {"j": "1"}})).fields(OBJECT))
        .step(
            strategic(&a, json!({"metadata": {"finalizers": ["example.com/b"]}}))
                .fields(&["/metadata/finalizers"]),
        )
        .step(
            strategic(
                &a,
                json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o2", "uid": "$UID(1)"}]}}),
            )
            .fields(&["/metadata/ownerReferences"]),
        )
        .step(
            strategic(&a, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}))
                .fields(&["/metadata/finalizers"]),
        )
        .step(
            strategic(&a, json!({"metadata": {"ownerReferences": [{"$patch": "replace"}]}}))
                .fields(&["/metadata/ownerReferences"]),
        )
        .step(merge(&a, json!({"metadata": {"finalizers": null}})).fields(&["/metadata/finalizers"]))
        .run()
        .await;
}

#[tokio::test]
async fn server_side_apply_owns_fields() {
    let s = path(CONFIGMAPS, "s");
    let applied = |owner: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"owner": owner}});
    let managed = &[
        "/data",
        "/metadata/resourceVersion",
        "/metadata/managedFields/*/manager",
        "/metadata/managedFields/*/operation",
        "/metadata/managedFields/*/fieldsV1",
    ];
    Case::new("apply")
        .step(apply(&format!("{s}?fieldManager=one"), applied("one")).fields(managed))
        .step(apply(&format!("{s}?fieldManager=two"), applied("two")))
        .step(apply(&format!("{s}?fieldManager=two&force=true"), applied("two")).fields(managed))
        .step(
            merge(
                &format!("{s}?fieldManager=queue"),
                json!({"data": {"position": "3"}}),
            )
            .fields(managed),
        )
        // The same apply again changes nothing.
        .step(apply(&format!("{s}?fieldManager=two"), applied("two")).fields(managed))
        .step(apply(&s, applied("two")))
        .step(apply(
            &format!("{s}?fieldManager=two"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
        ))
        .step(apply(
            &format!("{s}?fieldManager=two"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
        ))
        .step(apply(
            &format!("{s}?fieldManager=two"),
            json!({"metadata": {"name": "s"}, "data": {"x": "y"}}),
        ))
        .run()
        .await;
}

#[tokio::test]
async fn server_side_apply_removes_what_a_manager_stops_applying_and_shares_equal_values() {
    let s = path(CONFIGMAPS, "s");
    let managed = &[
        "/data",
        "/metadata/managedFields/*/manager",
        "/metadata/managedFields/*/operation",
        "/metadata/managedFields/*/fieldsV1",
    ];
    Case::new("apply-removal")
        .step(apply(
            &format!("{s}?fieldManager=one"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1", "b": "2"}}),
        ))
        .step(
            apply(
                &format!("{s}?fieldManager=one"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}}),
            )
            .fields(managed),
        )
        .step(
            apply(
                &format!("{s}?fieldManager=two"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}}),
            )
            .fields(managed),
        )
        .run()
        .await;
}

#[tokio::test]
async fn server_side_apply_merges_map_lists_by_key() {
    let m = path(MACHINES, "m1");
    let machine = |gate: &str| {
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m1"},
            "spec": {"clusterName": "c1", "bootstrap": {"dataSecretName": "s"},
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "VSphereMachine", "name": "m1"},
                "readinessGates": [{"conditionType": gate}]}})
    };
    Case::new("apply-list-map")
        .crds(&[Crd::ClusterApi("cluster.x-k8s.io_machines.yaml")])
        .step(apply(&format!("{m}?fieldManager=one"), machine("A")).fields(&["/spec/readinessGates"]))
        .step(
            apply(&format!("{m}?fieldManager=two"), machine("B"))
                .fields(&["/spec/readinessGates"])
                .differs(
                    APPLY_LISTS,
                    json!({"code": 409, "message": "Apply failed with 1 conflict: conflict with \"one\": .spec.readinessGates"}),
                    json!({"code": 200, "/spec/readinessGates": [{"conditionType": "A"}, {"conditionType": "B"}]}),
                ),
        )
        .run()
        .await;
}

#[tokio::test]
async fn the_status_subresource_splits_writes() {
    let m = path(MACHINES, "m1");
    let machine = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m1"},
        "spec": {"clusterName": "c1", "bootstrap": {"dataSecretName": "s"},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "VSphereMachine", "name": "m1"}},
        "status": {"phase": "Running"}});
    let fields = &[
        "/spec/clusterName",
        "/status",
        "/metadata/generation",
        "/metadata/resourceVersion",
    ];
    Case::new("status")
        .crds(&[Crd::ClusterApi("cluster.x-k8s.io_machines.yaml"), Crd::Velero("velero.io_backups.yaml")])
        .step(post(MACHINES, machine).fields(fields))
        .step(
            merge(&format!("{m}/status"), json!({"status": {"phase": "Provisioning"}, "spec": {"clusterName": "ignored"}}))
                .fields(fields),
        )
        .step(merge(&m, json!({"status": {"phase": "Failed"}, "spec": {"clusterName": "c2"}})).fields(fields))
        .step(get(&format!("{m}/status")).fields(fields))
        .step(
            put(&format!("{m}/status"), json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                "metadata": {"name": "m1", "resourceVersion": "$RV(2)"},
                "spec": {"clusterName": "c3", "bootstrap": {"dataSecretName": "s"},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "VSphereMachine", "name": "m1"}},
                "status": {"phase": "Running"}}))
            .fields(fields),
        )
        .step(merge(&path(CONFIGMAPS, "a/status"), json!({"status": {}})))
        .step(post(BACKUPS, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b1"}, "spec": {}, "status": {"phase": "New"}})).fields(&["/status"]))
        .step(merge(&path(BACKUPS, "b1/status"), json!({"status": {"phase": "InProgress"}})))
        .run()
        .await;
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let f = path(CONFIGMAPS, "f");
    let deletion = &[
        "/metadata/finalizers",
        "/metadata/deletionTimestamp",
        "/metadata/deletionGracePeriodSeconds",
        "/metadata/resourceVersion",
    ];
    Case::new("finalizers")
        .step(
            post(
                CONFIGMAPS,
                json!({"metadata": {"name": "f", "finalizers": ["example.com/keep"]}}),
            )
            .fields(deletion),
        )
        .step(delete(&f).fields(deletion))
        .step(get(&f).fields(deletion))
        .step(delete(&f).fields(deletion))
        .step(merge(
            &f,
            json!({"metadata": {"finalizers": ["example.com/keep", "example.com/new"]}}),
        ))
        .step(merge(&f, json!({"data": {"still": "writable"}})).fields(deletion))
        .step(merge(&f, json!({"metadata": {"finalizers": null}})).fields(deletion))
        .step(get(&f))
        .step(delete(&f))
        .run()
        .await;
}

#[tokio::test]
async fn delete_answers_and_delete_collection() {
    Case::new("delete")
        .crds(&[Crd::Velero("velero.io_backups.yaml")])
        .step(post(CONFIGMAPS, cm("g")))
        .step(delete(&path(CONFIGMAPS, "g")).fields(&["/kind", "/status", "/details/name", "/details/kind", "/metadata/name"]))
        .step(post(BACKUPS, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b1"}, "spec": {}})))
        .step(delete(&path(BACKUPS, "b1")).fields(&["/kind", "/status", "/metadata/name"]))
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "c1", "labels": {"sweep": "yes"}}})))
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "c2", "labels": {"sweep": "yes"}}})))
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "c3"}})))
        .step(
            delete(&format!("{CONFIGMAPS}?labelSelector=sweep%3Dyes"))
                .fields(&["/kind", "/status", "/items/*/metadata/name"]),
        )
        .step(get(CONFIGMAPS).fields(&["/items/*/metadata/name"]))
        .run()
        .await;
}

#[tokio::test]
async fn watches_see_real_changes_only() {
    let a = path(CONFIGMAPS, "a");
    Case::new("watch")
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "a", "labels": {"w": "1"}}, "data": {"k": "v"}})).fields(OBJECT))
        .step(merge(&format!("{a}?fieldManager=tester"), json!({"data": {"k": "v2"}})).fields(OBJECT))
        // The same patch again, and one that sets what is there: no-ops,
        // also by a manager that wrote nothing yet.
        .step(merge(&format!("{a}?fieldManager=tester"), json!({"data": {"k": "v2"}})).fields(OBJECT))
        .step(
            merge(&format!("{a}?fieldManager=newcomer"), json!({"data": {"k": "v2"}}))
                .fields(&["/metadata/resourceVersion", "/metadata/managedFields/*/manager"]),
        )
        .step(
            put(&format!("{a}?fieldManager=tester"), json!({"metadata": {"name": "a", "labels": {"w": "1"}}, "data": {"k": "v2"}}))
                .fields(OBJECT),
        )
        .step(
            apply(&format!("{a}?fieldManager=applier"), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}))
                .fields(OBJECT),
        )
        .step(
            apply(&format!("{a}?fieldManager=applier"), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}))
                .fields(OBJECT),
        )
        .step(delete(&a))
        .step(watch(&format!("{CONFIGMAPS}?labelSelector=w%3D1&resourceVersion=$RV(0)"), 4, 3000))
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "b", "labels": {"w": "1"}}})).fields(OBJECT))
        .step(watch(&format!("{CONFIGMAPS}?labelSelector=w%3D1"), 1, 3000))
        .step(watch(
            &format!("{CONFIGMAPS}?labelSelector=w%3D1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
            2,
            3000,
        ))
        .step(watch(&format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Db&resourceVersion=$RV(9)"), 1, 500))
        .run()
        .await;
}

#[tokio::test]
async fn compaction_expires_old_resource_versions() {
    const EVENTS: &str = "/api/v1/namespaces/$NS/events";
    let event = |name: &str| {
        json!({"metadata": {"name": name}, "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "$NS"},
            "reason": "Test", "message": "m", "type": "Normal"})
    };
    let lease = |name: &str| json!({"metadata": {"name": name, "labels": {"c": "1"}}});
    Case::new("compaction")
        .step(post(EVENTS, event("e1")).fields(&["/metadata/name"]))
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "a", "labels": {"w": "1"}}}),
        ))
        .step(post(LEASES, lease("l1")))
        .step(post(LEASES, lease("l2")))
        .step(
            get(&format!("{LEASES}?limit=1"))
                .fields(&["/items/*/metadata/name", "/metadata/continue"]),
        )
        .step(post(EVENTS, event("e2")))
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "b", "labels": {"w": "1"}}}),
        ))
        .step(compact())
        .step(post(EVENTS, event("e3")))
        // Events have no watch cache: a watch from before the compaction is 410.
        .step(watch(&format!("{EVENTS}?resourceVersion=$RV(0)"), 1, 3000))
        // The watch cache still has what etcd forgot: a continued list and
        // a watch of ConfigMaps from before the compaction are served.
        .step(
            get(&format!("{LEASES}?limit=1&continue=$CONTINUE(4)"))
                .any_message()
                .differs(
                    COMPACTION_ALL,
                    json!({"code": 410, "reason": "Expired"}),
                    json!({"code": 200}),
                ),
        )
        .step(
            watch(
                &format!("{CONFIGMAPS}?labelSelector=w%3D1&resourceVersion=$RV(1)"),
                1,
                3000,
            )
            .differs(
                COMPACTION_ALL,
                json!({"events": [{"type": "ERROR", "code": 410, "reason": "Expired"}]}),
                json!({"events": [{"type": "ADDED", "name": "b", "rv": "rv#0"}]}),
            ),
        )
        .run()
        .await;
}

#[tokio::test]
async fn label_and_field_selectors() {
    let names = &["/items/*/metadata/name"];
    let list = |query: &str| get(&format!("{CONFIGMAPS}?{query}")).fields(names);
    Case::new("selectors")
        .crds(&[Crd::Velero("velero.io_backups.yaml")])
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "a", "labels": {"app": "x", "tier": "web"}}}),
        ))
        .step(post(
            CONFIGMAPS,
            json!({"metadata": {"name": "b", "labels": {"app": "y"}}}),
        ))
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "c"}})))
        .step(list("labelSelector=app%3Dx"))
        .step(list("labelSelector=app%21%3Dx"))
        .step(list("labelSelector=app+in+%28x%2Cy%29"))
        .step(list("labelSelector=app+notin+%28x%29"))
        .step(list("labelSelector=tier"))
        .step(list("labelSelector=%21tier"))
        .step(list("labelSelector=app%3D%3Dx%2Ctier%3Dweb"))
        .step(list("fieldSelector=metadata.name%3Db"))
        .step(list("fieldSelector=metadata.name%21%3Db"))
        .step(list(
            "fieldSelector=metadata.namespace%3D$NS%2Cmetadata.name%3Da",
        ))
        .step(list("labelSelector=app+in+x").any_message())
        .step(list("fieldSelector=data.k%3Dv"))
        .step(get("/api/v1/namespaces/$NS/pods?fieldSelector=data.k%3Dv"))
        .step(get("/api/v1/namespaces/$NS/pods?fieldSelector=spec.nodeName%3Dn1").fields(names))
        .step(get(
            "/apis/velero.io/v1/namespaces/$NS/backups?fieldSelector=spec.ttl%3D1h",
        ))
        .step(watch(
            &format!("{CONFIGMAPS}?fieldSelector=data.k%3Dv"),
            1,
            1000,
        ))
        .step(get("/api/v1/configmaps?labelSelector=app%3Dy").fields(names))
        .run()
        .await;
}

#[tokio::test]
async fn lists_page_with_limit_and_continue() {
    let page = &[
        "/items/*/metadata/name",
        "/items/*/metadata/namespace",
        "/metadata/continue",
        "/metadata/remainingItemCount",
        "/metadata/resourceVersion",
    ];
    let lease = |name: &str| json!({"metadata": {"name": name, "labels": {"paged": "yes"}}});
    let other_leases = "/apis/coordination.k8s.io/v1/namespaces/$NS-b/leases";
    Case::new("paging")
        .namespace("b")
        .step(post(LEASES, lease("a")))
        .step(post(LEASES, lease("b")))
        .step(post(LEASES, lease("c")))
        .step(post(LEASES, lease("d")))
        .step(post(LEASES, lease("e")))
        .step(get(&format!("{LEASES}?limit=2")).fields(page))
        .step(get(&format!("{LEASES}?limit=2&continue=$CONTINUE(5)")).fields(page))
        // Created between pages: not in this list's snapshot.
        .step(post(LEASES, lease("f")))
        .step(get(&format!("{LEASES}?limit=2&continue=$CONTINUE(6)")).fields(page))
        .step(get(&format!("{LEASES}?limit=10")).fields(page))
        // With a selector, no remainingItemCount.
        .step(get(&format!("{LEASES}?limit=2&labelSelector=paged%3Dyes")).fields(page))
        .step(get(&format!("{LEASES}?limit=1&continue=garbage")).any_message())
        .step(get(&format!("{LEASES}?limit=-1")).fields(&["/items/*/metadata/name"]))
        // Across namespaces, in the order of the keys ("<ns>/<name>").
        .step(post(other_leases, lease("a")))
        .step(get("/apis/coordination.k8s.io/v1/leases?labelSelector=paged%3Dyes&limit=3").fields(page))
        .step(get("/apis/coordination.k8s.io/v1/leases?labelSelector=paged%3Dyes&limit=3&continue=$CONTINUE(14)").fields(page))
        .run()
        .await;
}

#[tokio::test]
async fn resource_version_reads() {
    Case::new("rv-reads")
        .step(post(LEASES, json!({"metadata": {"name": "a"}})))
        .step(post(LEASES, json!({"metadata": {"name": "b"}})))
        .step(get(&format!("{}?resourceVersion=0", path(LEASES, "a"))).fields(OBJECT))
        .step(get(&format!("{LEASES}?resourceVersion=0")).fields(&["/items/*/metadata/name"]))
        .step(
            get(&format!("{LEASES}?resourceVersion=0&limit=1"))
                .fields(&["/items/*/metadata/name", "/metadata/continue"]),
        )
        .step(
            get(&format!(
                "{LEASES}?resourceVersion=$RV(0)&resourceVersionMatch=Exact"
            ))
            .fields(&["/items/*/metadata/name"]),
        )
        .step(get(&format!("{LEASES}?resourceVersionMatch=NotOlderThan")).any_message())
        .step(get(&format!("{}?resourceVersion=abc", path(LEASES, "a"))).any_message())
        .run()
        .await;
}

#[tokio::test]
async fn custom_resources_refuse_strategic_merge_and_unconditional_updates() {
    let b1 = path(BACKUPS, "b1");
    Case::new("cr-strictness")
        .crds(&[Crd::Velero("velero.io_backups.yaml")])
        .step(post(BACKUPS, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b1"}, "spec": {}})).fields(OBJECT))
        .step(strategic(&b1, json!({"metadata": {"labels": {"a": "b"}}})))
        .step(merge(&b1, json!({"metadata": {"labels": {"a": "b"}}})).fields(OBJECT))
        .step(put(&b1, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b1"}, "spec": {"ttl": "1h0m0s"}})))
        .step(
            put(&b1, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b1", "resourceVersion": "$RV(2)"}, "spec": {"ttl": "1h0m0s"}}))
                .fields(&["/spec", "/metadata/generation", "/metadata/resourceVersion"]),
        )
        .run()
        .await;
}

#[tokio::test]
async fn velero_schema_prunes_and_validates() {
    let b1 = path(BACKUPS, "b1");
    let backup = json!({"apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": "b1", "notObjectMeta": "x"},
        "spec": {"includedNamespaces": ["app"], "notInTheSchema": {"kept": false}},
        "status": {"phase": "New", "notInTheSchema": "x"}});
    Case::new("velero-schema")
        .crds(&[Crd::Velero("velero.io_backups.yaml"), Crd::Velero("velero.io_backupstoragelocations.yaml")])
        .step(post(BACKUPS, backup).fields(&["/metadata/notObjectMeta", "/spec", "/status"]))
        .step(merge(&b1, json!({"status": {"phase": "Queued", "queuePosition": 2}})).fields(&["/status"]))
        .step(merge(&b1, json!({"status": {"errors": "many"}})))
        .step(merge(&b1, json!({"status": {"progress": {"totalItems": "x"}}})))
        .step(merge(&b1, json!({"spec": {"ttl": 5}})))
        .step(merge(&b1, json!({"status": {"phase": "Sideways"}})))
        .step(merge(&b1, json!({"status": {"startTimestamp": "yesterday"}})))
        .step(merge(&b1, json!({"status": {"startTimestamp": "2025-01-02T03:04:05Z"}})).fields(&["/status/startTimestamp"]))
        .step(get(&b1).fields(&["/status"]))
        .step(post(BACKUPS, json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "Bad_Name"}, "spec": {}})))
        .step(
            post(
                "/apis/velero.io/v1/namespaces/$NS/backupstoragelocations",
                json!({"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation", "metadata": {"name": "l1"},
                    "spec": {"provider": "aws", "objectStorage": {"bucket": "b"}, "credential": {"key": "k"}}}),
            )
            .fields(&["/spec"]),
        )
        .run()
        .await;
}

#[tokio::test]
async fn the_previous_velero_release_refuses_the_queue_phase_and_prunes_the_position() {
    let backups = format!("/apis/{PREVIOUS_VELERO_GROUP}/v1/namespaces/$NS/backups");
    let b1 = format!("{backups}/b1");
    Case::new("velero-previous")
        .crds(&[Crd::VeleroPreviousBackups])
        .step(post(&backups, json!({"apiVersion": format!("{PREVIOUS_VELERO_GROUP}/v1"), "kind": "Backup", "metadata": {"name": "b1"}, "spec": {}, "status": {"phase": "New"}})).fields(&["/status"]))
        .step(merge(&b1, json!({"status": {"phase": "Queued", "queuePosition": 2}})))
        .step(merge(&b1, json!({"status": {"queuePosition": 2}})).fields(&["/status", "/metadata/resourceVersion"]))
        .run()
        .await;
}

#[tokio::test]
async fn cluster_api_schema_bounds_patterns_and_rules() {
    let machine = |name: &str, spec: Value| json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": name}, "spec": spec});
    let valid = json!({"clusterName": "c1", "bootstrap": {"dataSecretName": "s"},
        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "VSphereMachine", "name": "m1"}});
    let with = |field: &str, value: Value| {
        let mut spec = valid.clone();
        spec[field] = value;
        machine(field, spec)
    };
    Case::new("capi-schema")
        .crds(&[Crd::ClusterApi("cluster.x-k8s.io_machines.yaml"), Crd::ClusterApi("cluster.x-k8s.io_machinedrainrules.yaml")])
        .step(post(MACHINES, machine("m0", json!({"bootstrap": {}, "infrastructureRef": valid["infrastructureRef"]}))))
        .step(post(MACHINES, with("clusterName", json!(""))))
        .step(post(MACHINES, with("clusterName", json!("c".repeat(64)))))
        .step(post(MACHINES, with("failureDomain", json!("f".repeat(257)))))
        .step(post(MACHINES, with("infrastructureRef", json!({"apiGroup": "x.io", "kind": "9bad", "name": "m1"}))))
        .step(post(MACHINES, with("minReadySeconds", json!(-1))))
        .step(post(MACHINES, with("minReadySeconds", json!("5"))))
        .step(post(MACHINES, with("readinessGates", json!([]))))
        .step(post(MACHINES, with("readinessGates", json!([{"conditionType": "A"}, {"conditionType": "A"}]))))
        .step(post(MACHINES, with("deletion", json!({}))))
        .step(post(MACHINES, with("readinessGates", json!([{"conditionType": "A", "polarity": "Sideways"}]))))
        .step(post(MACHINES, machine("ok", valid.clone())).fields(&["/spec", "/metadata/generation"]))
        .step(post(MACHINES, machine("Bad_Name", valid.clone())))
        .step(
            post(
                "/apis/cluster.x-k8s.io/v1beta2/namespaces/$NS/machinedrainrules",
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDrainRule", "metadata": {"name": "r1"},
                    "spec": {"drain": {"behavior": "Skip"}, "machines": [{"selector": {}}, {"selector": {}}]}}),
            )
            .differs(
                CEL,
                json!({"code": 201}),
                json!({"code": 422, "message": "MachineDrainRule.cluster.x-k8s.io \"r1\" is invalid: spec.machines: Invalid value: entries in machines must be unique"}),
            ),
        )
        .run()
        .await;
}

const RBAC: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: patcher, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: stranger, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: $NS}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
  resourceNames: [allowed]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: patcher, namespace: $NS}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: patcher, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: patcher}
subjects:
- {kind: ServiceAccount, name: patcher, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: $NS-namespaces}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-namespaces}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $NS-namespaces}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: $NS}
"#;

#[tokio::test]
async fn a_service_account_gets_what_its_bindings_grant() {
    let allowed = path(CONFIGMAPS, "allowed");
    let cm_apply = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}});
    Case::new("rbac")
        .rbac(RBAC)
        .step(post(CONFIGMAPS, cm("allowed")))
        .step(post(CONFIGMAPS, cm("other")))
        .step(
            get(&allowed)
                .by("ctl")
                .until_allowed()
                .fields(&["/metadata/name"]),
        )
        .step(get(&path(CONFIGMAPS, "other")).by("ctl"))
        .step(
            get(&format!(
                "{CONFIGMAPS}?fieldSelector=metadata.name%3Dallowed"
            ))
            .by("ctl")
            .fields(&["/items/*/metadata/name"]),
        )
        .step(get(CONFIGMAPS).by("ctl"))
        .step(
            post(CONFIGMAPS, cm("new"))
                .by("ctl")
                .fields(&["/metadata/name"]),
        )
        .step(merge(&allowed, json!({"data": {"a": "b"}})).by("ctl"))
        .step(get("/api/v1/namespaces/default/configmaps/allowed").by("ctl"))
        .step(get("/api/v1/namespaces").by("ctl").until_allowed())
        .step(get("/api/v1/namespaces/$NS").by("ctl"))
        .step(get(&allowed).by("stranger"))
        .step(get(&path(CONFIGMAPS, "allowed/status")).by("ctl"))
        // Patch without create: an apply that would create the object needs create.
        .step(
            apply(&format!("{allowed}?fieldManager=p"), cm_apply("allowed"))
                .by("patcher")
                .until_allowed()
                .fields(&["/data"]),
        )
        .step(
            apply(
                &format!("{}?fieldManager=p", path(CONFIGMAPS, "fresh")),
                cm_apply("fresh"),
            )
            .by("patcher"),
        )
        .run()
        .await;
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let a = path(CONFIGMAPS, "a");
    Case::new("dry-run")
        .step(post(&format!("{CONFIGMAPS}?dryRun=All"), cm("a")).fields(OBJECT))
        .step(get(&a))
        .step(post(CONFIGMAPS, cm("a")).fields(OBJECT))
        .step(merge(&format!("{a}?dryRun=All"), json!({"data": {"k": "dry"}})).fields(OBJECT))
        .step(get(&a).fields(OBJECT))
        .step(
            request(Method::DELETE, &format!("{a}?dryRun=All"), None, None).fields(&[
                "/kind",
                "/status",
                "/metadata/name",
            ]),
        )
        .step(get(&a).fields(OBJECT))
        .step(
            apply(
                &format!("{}?fieldManager=x&dryRun=All", path(CONFIGMAPS, "new")),
                cm("new"),
            )
            .fields(&["/metadata/name", "/data", "/metadata/resourceVersion"]),
        )
        .step(get(&path(CONFIGMAPS, "new")))
        .step(post(&format!("{CONFIGMAPS}?dryRun=Bogus"), cm("b")).any_message())
        .run()
        .await;
}

#[tokio::test]
async fn writes_into_a_missing_namespace_by_default() {
    let missing = json!({"code": 404, "reason": "NotFound", "message": "namespaces \"$NS-missing\" not found"});
    Case::new("namespace")
        .step(
            post("/api/v1/namespaces/$NS-missing/configmaps", cm("a")).differs(
                NAMESPACES,
                json!({"code": 201}),
                missing.clone(),
            ),
        )
        .step(
            apply(
                "/api/v1/namespaces/$NS-missing/configmaps/b?fieldManager=x",
                cm("b"),
            )
            .differs(NAMESPACES, json!({"code": 201}), missing),
        )
        .step(get("/api/v1/namespaces/$NS-missing/configmaps/a").differs(
            NAMESPACES,
            json!({"code": 200}),
            json!({"code": 404, "message": "configmaps \"a\" not found"}),
        ))
        .run()
        .await;
}

#[tokio::test]
async fn built_in_types_and_their_lists() {
    const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/$NS/deployments";
    let containers = &[
        "/spec/template/spec/containers/*/name",
        "/spec/template/spec/containers/*/image",
    ];
    Case::new("built-in")
        .step(
            post(
                DEPLOYMENTS,
                json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "d"}},
                    "template": {"metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "s", "image": "j"}]}}}}),
            )
            .fields(&["/metadata/generation"])
            .fields(containers),
        )
        .step(get(&path(DEPLOYMENTS, "d")).fields(&["/spec/replicas"]).differs(
            BUILT_IN_TYPES,
            json!({"code": 200, "/spec/replicas": null}),
            json!({"code": 200, "/spec/replicas": 1}),
        ))
        .step(
            strategic(&path(DEPLOYMENTS, "d"), json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i2"}]}}}}))
                .fields(containers)
                .differs(
                    STRATEGIC_LISTS,
                    json!({"code": 200, "/spec/template/spec/containers/*/name": ["c"], "/spec/template/spec/containers/*/image": ["i2"]}),
                    json!({"code": 200, "/spec/template/spec/containers/*/name": ["c", "s"], "/spec/template/spec/containers/*/image": ["i2", "j"]}),
                ),
        )
        .step(post(CONFIGMAPS, json!({"metadata": {"name": "n"}, "data": {"k": 1}})).differs(
            BUILT_IN_TYPES,
            json!({"code": 201}),
            json!({"code": 400, "reason": "BadRequest"}),
        ))
        .run()
        .await;
}

#[tokio::test]
async fn dependents_of_a_missing_owner_stay() {
    Case::new("gc")
        .step(
            post(
                CONFIGMAPS,
                json!({"metadata": {"name": "orphan", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "11111111-1111-1111-1111-111111111111"}]}}),
            )
            .fields(OBJECT),
        )
        .step(
            watch(&format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Dorphan&resourceVersion=$RV(0)"), 1, 15_000).differs(
                GARBAGE_COLLECTION,
                json!({"events": []}),
                json!({"events": [{"type": "DELETED", "name": "orphan", "rv": "rv#1"}]}),
            ),
        )
        .run()
        .await;
}

#[tokio::test]
async fn writes_into_a_missing_namespace_when_namespaces_are_required() {
    Case::new("namespace-required")
        .setup(FakeApi::require_namespaces)
        .step(post("/api/v1/namespaces/$NS-missing/configmaps", cm("a")))
        .step(apply(
            "/api/v1/namespaces/$NS-missing/configmaps/b?fieldManager=x",
            cm("b"),
        ))
        .step(get("/api/v1/namespaces/$NS-missing/configmaps/a"))
        .step(post(CONFIGMAPS, cm("a")).fields(&["/metadata/name"]))
        .run()
        .await;
}

#[test]
fn differences_are_documented() {
    for difference in DIFFERENCES {
        assert!(
            documented(difference),
            "\"{difference}\" is not a heading under \"Differences from kube-apiserver\" in docs/kube-fake-api.md"
        );
    }
}
