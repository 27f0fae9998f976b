//! The manifests of the placement-policies controllers, generated from
//! what each binary declares: least-privilege RBAC [`Rule`]s declared once
//! (as `const` lists), and a [`ControllerManifest`] that turns them into
//! the ServiceAccount, the Role or ClusterRole with its binding, the
//! leader-election Role, further roles and the hardened workload, as
//! deterministic YAML.
//!
//! ```
//! use controller_manifests::{ControllerManifest, RbacVerb::*, Rule};
//! const RULES: &[Rule] = &[
//!     Rule::new("velero.io", &["backups"], &[Get, List, Watch, Patch]),
//!     Rule::new("", &["namespaces"], &[Get, List, Watch]),
//! ];
//! let m = ControllerManifest::new("backup-queue-controller", "velero", "example/bqc:1", RULES);
//! assert!(m.role_rules().len() >= 2);
//! assert!(m.to_yaml().unwrap().contains("kind: ServiceAccount"));
//! ```
//!
//! Generation is pure (no client, no I/O), apart from the controllers'
//! runtime in `controller-kit`: a binary's `manifests` subcommand and its
//! runtime share only the rule lists.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod error;
pub mod inputs;
pub mod manifest;
pub mod rules;

pub use error::Error;
pub use manifest::{
    ControllerManifest, ControllerService, ExtraRole, RenderedRole, Scope, ServedPort, Workload,
};
pub use rules::{EVENTS_RULE, LEASE_RULE, RbacVerb, Rule, normalize};
