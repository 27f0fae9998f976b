//! The example cluster of `examples/cluster/`, bundled into the binary so
//! that `policyctl report` works with no input at all.

use crate::manifest::Source;

macro_rules! example {
    ($file:literal) => {
        (
            concat!("examples/cluster/", $file),
            include_str!(concat!("../../../examples/cluster/", $file)),
        )
    };
}

/// The files of the example cluster: (path relative to the repository root,
/// contents), in reading order.
pub const EXAMPLE_CLUSTER: &[(&str, &str)] = &[
    example!("namespaces.yaml"),
    example!("node-agent-config.yaml"),
    example!("nodes.yaml"),
    example!("storage.yaml"),
    example!("backups.yaml"),
    example!("data-movement.yaml"),
    example!("pods.yaml"),
    example!("machines.yaml"),
    example!("host-inventory.yaml"),
    example!("workloads.yaml"),
    example!("repo-maintenance.yaml"),
];

/// The example cluster as manifest sources.
pub fn example_sources() -> Vec<Source> {
    EXAMPLE_CLUSTER
        .iter()
        .map(|(name, text)| Source {
            name: (*name).to_owned(),
            text: (*text).to_owned(),
        })
        .collect()
}
