//! Kubernetes name, label, label-selector, quantity and `apiVersion`
//! validation, tolerations ([`taints`]), and the namespace of an object that
//! does not say one.
//!
//! The rules and the wording of the messages are apimachinery's
//! (`k8s.io/apimachinery/pkg/util/validation`, `pkg/labels.NewRequirement`,
//! `metav1.LabelSelectorAsSelector`, `resource.ParseQuantity`), so that a user who has seen the API
//! server's complaint recognises ours. Selectors have two sets of messages,
//! as in Kubernetes: the API server's validation of an object
//! ([`validate_label_selector`], [`validate_node_selector_requirement`]) and
//! the run-time parse that controllers and kube-scheduler log
//! ([`label_selector_as_selector`], [`node_selector_requirement`],
//! [`Requirement`]). Every function is pure and allocation
//! is limited to the messages of invalid input.
//!
//! Shared by the policy crates: a label key or value that the API server
//! would reject is reported the same way everywhere.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod group_version;
mod label_matcher;
mod names;
mod namespace;
pub mod node_selector;
mod quantity;
mod requirement;
mod selector;
pub mod taints;

pub use group_version::{GroupVersion, GroupVersionError, parse_group_version};
pub use label_matcher::LabelSelectorMatcher;
pub use names::{
    DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH, LABEL_VALUE_MAX_LENGTH,
    QUALIFIED_NAME_MAX_LENGTH, is_dns1123_label, is_dns1123_subdomain, is_label_value,
    is_namespace_name, is_qualified_name, validate_dns1123_label, validate_dns1123_subdomain,
    validate_label_value, validate_namespace_name, validate_qualified_name,
};
pub use namespace::{DEFAULT_NAMESPACE, namespace_or_default};
pub use quantity::{Quantity, QuantityError};
pub use requirement::{
    FieldError, FieldRequirement, Operator, ParseError, Requirement, go_quote,
    label_selector_as_selector, node_selector_field_requirement, node_selector_requirement,
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
