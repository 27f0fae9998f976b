//! The `Containerfile` builds images that run the way each controller's
//! generated manifests expect: the image name is the stage and binary name,
//! the user is the manifests' `runAsUser:runAsGroup`, the exposed ports are
//! the container ports of every variant of its manifests, and the entry point is the binary (the manifests
//! give only `args`).

use std::collections::BTreeSet;

use repository_checks::containerfile::{self, Containerfile, exec_form};
use repository_checks::repository_root;
use serde_json::Value;

const REGISTRY: &str = "ghcr.io/placement-policies";

fn containerfile() -> Containerfile {
    let text = std::fs::read_to_string(repository_root().join("Containerfile"))
        .expect("Containerfile at the repository root");
    containerfile::parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// Every generated manifest variant: (what, YAML).
fn generated_manifests() -> Vec<(String, String)> {
    use backup_queue_controller::manifests::{self as bq, ManifestScope};
    use load_soothe_controller::{Admission, GateMode, manifests as ls};
    let mut out = Vec::new();
    for scope in [ManifestScope::Cluster, ManifestScope::Namespaced] {
        out.push((
            format!("backup-queue-controller manifests --scope {scope:?}"),
            bq::render(scope, "velero", bq::DEFAULT_IMAGE).unwrap(),
        ));
    }
    for admission in [Admission::Accept, Admission::PodGates] {
        for mode in [GateMode::Exact, GateMode::Optimistic] {
            out.push((
                format!(
                    "load-soothe-controller manifests --mode {mode:?} --admission {}",
                    admission.as_str()
                ),
                ls::manifest(mode, admission).to_yaml().unwrap(),
            ));
        }
    }
    out.push((
        "host-label-controller manifests".to_owned(),
        host_label_controller::manifests::render(
            "placement-policies",
            host_label_controller::manifests::DEFAULT_IMAGE,
        )
        .unwrap(),
    ));
    out
}

/// The pod templates of the Deployments and DaemonSets of a manifest.
fn pod_specs(yaml: &str) -> Vec<Value> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
    documents
        .into_iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("Deployment" | "DaemonSet")))
        .map(|d| d["spec"]["template"]["spec"].clone())
        .collect()
}

/// What a controller image must provide, read from one workload.
#[derive(Debug)]
struct Expected {
    name: String,
    version: String,
    user: String,
    ports: Vec<u16>,
}

fn expected(what: &str, pod: &Value) -> Expected {
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "{what}: one container");
    let container = &containers[0];
    let image = container["image"].as_str().expect("image");
    let (repository, version) = image.rsplit_once(':').expect("image with a tag");
    let name = repository
        .strip_prefix(&format!("{REGISTRY}/"))
        .unwrap_or_else(|| panic!("{what}: image {image} is not under {REGISTRY}"));
    assert!(
        container.get("command").is_none(),
        "{what}: a command would replace the image's ENTRYPOINT"
    );
    assert_eq!(
        container["securityContext"]["readOnlyRootFilesystem"], true,
        "{what}: the image is built to run with a read-only root file system"
    );
    let security = &pod["securityContext"];
    assert_eq!(security["runAsNonRoot"], true, "{what}");
    let user = format!(
        "{}:{}",
        security["runAsUser"].as_i64().expect("runAsUser"),
        security["runAsGroup"].as_i64().expect("runAsGroup")
    );
    let mut ports: Vec<u16> = container["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            p["containerPort"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .expect("port")
        })
        .collect();
    ports.sort_unstable();
    Expected {
        name: name.to_owned(),
        version: version.to_owned(),
        user,
        ports,
    }
}

#[test]
fn every_controller_image_agrees_with_its_generated_manifests() {
    let file = containerfile();
    let mut controllers = BTreeSet::new();
    // Per image: the container ports of every variant of its manifests.
    let mut ports: std::collections::BTreeMap<String, (BTreeSet<u16>, Vec<String>)> =
        std::collections::BTreeMap::new();
    for (what, yaml) in generated_manifests() {
        let pods = pod_specs(&yaml);
        assert!(!pods.is_empty(), "{what}: no Deployment or DaemonSet");
        for pod in pods {
            let want = expected(&what, &pod);
            controllers.insert(want.name.clone());
            assert_eq!(
                want.version,
                env!("CARGO_PKG_VERSION"),
                "{what}: the image tag is the workspace version"
            );
            let stage = file
                .stage(&want.name)
                .unwrap_or_else(|| panic!("{what}: no stage `{}` in the Containerfile", want.name));
            assert_eq!(
                stage.base, "runtime",
                "{what}: stage {} builds on the runtime stage",
                want.name
            );
            let entrypoint = file
                .effective(&want.name, "ENTRYPOINT")
                .unwrap_or_else(|| panic!("{what}: stage {} has no ENTRYPOINT", want.name));
            assert_eq!(
                exec_form(entrypoint).unwrap_or_else(|e| panic!("{e}")),
                [format!("/usr/local/bin/{}", want.name)],
                "{what}: the entry point is the binary alone (the manifests give its args)"
            );
            let user = file
                .effective(&want.name, "USER")
                .unwrap_or_else(|| panic!("{what}: no USER for stage {}", want.name));
            assert_eq!(
                user.arguments, want.user,
                "{what}: USER (line {})",
                user.line
            );
            let seen = ports.entry(want.name.clone()).or_default();
            seen.0.extend(want.ports.iter().copied());
            seen.1.push(what.clone());
            // The binary of that name exists: a [[bin]] of the package.
            let manifest = std::fs::read_to_string(
                repository_root()
                    .join("bins")
                    .join(&want.name)
                    .join("Cargo.toml"),
            )
            .unwrap_or_else(|e| panic!("{what}: bins/{}/Cargo.toml: {e}", want.name));
            assert!(
                manifest.contains(&format!("[[bin]]\nname = \"{}\"", want.name)),
                "{what}: bins/{}/Cargo.toml has no [[bin]] of that name",
                want.name
            );
        }
    }
    // An image exposes every port some variant of its manifests serves.
    for (name, (wanted, variants)) in &ports {
        assert_eq!(
            file.exposed_ports(name).unwrap_or_else(|e| panic!("{e}")),
            wanted.iter().copied().collect::<Vec<_>>(),
            "stage {name}: EXPOSE, the container ports of {variants:?}"
        );
    }
    // Exactly the controllers have a stage of their own.
    let stages: BTreeSet<String> = file
        .stages
        .iter()
        .filter_map(|s| s.name.clone())
        .filter(|n| n != "builder" && n != "runtime")
        .collect();
    assert_eq!(stages, controllers);
}

#[test]
fn the_build_argument_selects_the_controller_built_with_the_dist_profile() {
    let file = containerfile();
    assert!(
        file.global_args.iter().any(|a| a.arguments == "BINARY"),
        "ARG BINARY before the first FROM"
    );
    assert_eq!(
        file.stages
            .last()
            .map(|s| (s.base.as_str(), s.name.as_deref())),
        Some(("${BINARY}", None)),
        "the last stage is `FROM ${{BINARY}}`"
    );
    let builder = file.stage("builder").expect("a builder stage");
    let run = builder
        .instructions
        .iter()
        .find(|i| i.keyword == "RUN")
        .expect("the builder runs cargo");
    assert!(
        run.arguments
            .contains(r#"cargo build --profile dist --locked -p "${BINARY}""#),
        "{}",
        run.arguments
    );
    assert!(
        run.arguments
            .contains(r#"install -D -m 0755 "target/dist/${BINARY}" "/out/${BINARY}""#)
    );
    // The builder refuses any other BINARY, and names every controller.
    for name in [
        "backup-queue-controller",
        "load-soothe-controller",
        "host-label-controller",
    ] {
        assert!(
            run.arguments.contains(name),
            "the builder's check names {name}"
        );
        let stage = file.stage(name).expect("stage");
        assert!(
            stage
                .instructions
                .iter()
                .any(|i| i.keyword == "COPY"
                    && i.arguments == "--from=builder /out/ /usr/local/bin/"),
            "stage {name} copies the built binary"
        );
    }
    let workspace = std::fs::read_to_string(repository_root().join("Cargo.toml")).unwrap();
    assert!(workspace.contains("[profile.dist]\ninherits = \"release\""));
}

#[test]
fn the_builder_matches_the_toolchain_and_the_runtime_image() {
    let file = containerfile();
    let builder = file.stage("builder").expect("builder");
    let tag = builder
        .base
        .strip_prefix("docker.io/library/rust:")
        .unwrap_or_else(|| {
            panic!(
                "builder base {} is not the official rust image",
                builder.base
            )
        });
    let (version, distribution) = tag
        .split_once('-')
        .expect("rust:<version>-<debian release>");
    // Debian 12 is bookworm: the binary links against the runtime's glibc.
    assert_eq!(distribution, "bookworm");
    let runtime = file.stage("runtime").expect("runtime");
    assert_eq!(runtime.base, "gcr.io/distroless/cc-debian12:nonroot");
    // Not older than the workspace's rust-version (what kube 5 needs).
    let workspace = std::fs::read_to_string(repository_root().join("Cargo.toml")).unwrap();
    let msrv = workspace
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("workspace rust-version");
    let parse = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap()).collect() };
    assert!(
        parse(version) >= parse(msrv),
        "rust {version} is older than rust-version {msrv}"
    );
}
