//! Kubernetes API rules, pure and dependency-light: names, labels, label
//! selectors, node selectors, tolerations, quantities, `apiVersion` and the
//! namespace default.
//!
//! The rules and the wording of the messages are apimachinery's and
//! component-helpers' (`k8s.io/apimachinery/pkg/util/validation`,
//! `pkg/labels.NewRequirement` and `Parse`, `metav1.LabelSelectorAsSelector`,
//! `resource.ParseQuantity`, `k8s.io/component-helpers/scheduling/corev1`),
//! so that a user who has seen the API server's complaint recognises ours.
//! Selectors have two sets of messages, as in Kubernetes: the API server's
//! validation of an object ([`validate_label_selector`],
//! [`validate_node_selector_requirement`]) and the run-time parse that
//! controllers and kube-scheduler log ([`label_selector_as_selector`],
//! [`node_selector_requirement`], [`Requirement`], [`parse_label_selector`]
//! for the text of a `labelSelector=` query). Every function is pure and
//! allocation is limited to parsing and to the messages of invalid input;
//! matching an already parsed selector allocates nothing.
//!
//! | rule | where |
//! |---|---|
//! | label keys, values, DNS names | [`validate_qualified_name`], [`validate_label_value`], … |
//! | label selectors: validate, parse, match | [`validate_label_selector`], [`label_selector_as_selector`], [`LabelSelectorMatcher`], [`parse_label_selector`], [`set_selector_matches`] |
//! | node selectors: `nodeSelector`, required and preferred node affinity | [`node_selector`] |
//! | taints, tolerations, cordons | [`taints`] |
//! | quantities | [`Quantity`] |
//! | `apiVersion` | [`parse_group_version`] |
//! | the namespace of an object without one | [`namespace_or_default`] |
//!
//! The one home of these rules in the workspace: the policy crates,
//! `kube-scheduler-sim`, `kube-adapters` and `kube-fake-api` call them and
//! never re-implement them.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod group_version;
mod label_matcher;
mod label_text;
mod names;
mod namespace;
pub mod node_selector;
mod quantity;
mod requirement;
mod selector;
pub mod taints;

pub use group_version::{GroupVersion, GroupVersionError, parse_group_version};
pub use label_matcher::{LabelSelectorMatcher, set_selector_matches, set_selector_misses};
pub use label_text::parse_label_selector;
pub use names::{
    DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH, LABEL_VALUE_MAX_LENGTH,
    QUALIFIED_NAME_MAX_LENGTH, is_dns1123_label, is_dns1123_subdomain, is_label_value,
    is_namespace_name, is_qualified_name, validate_dns1123_label, validate_dns1123_subdomain,
    validate_label_value, validate_namespace_name, validate_qualified_name,
};
pub use namespace::{DEFAULT_NAMESPACE, namespace_or_default};
pub use quantity::{Quantity, QuantityError};
pub use requirement::{
    FieldError, FieldRequirement, Operator, ParseError, Requirement, format_label_selector,
    go_quote, label_selector_as_selector, node_selector_field_requirement,
    node_selector_requirement,
};
pub use selector::{
    LabelSelectorOperator, NodeSelectorOperator, SelectorError, Violation,
    unparsable_node_selector_requirement, validate_label_selector,
    validate_node_selector_requirement,
};

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
