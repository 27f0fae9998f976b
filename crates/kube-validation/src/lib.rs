//! Kubernetes name, label, label-selector, quantity and `apiVersion`
//! validation.
//!
//! The rules and the wording of the messages are apimachinery's
//! (`k8s.io/apimachinery/pkg/util/validation`, `pkg/labels.NewRequirement`,
//! `metav1.LabelSelectorAsSelector`, `resource.ParseQuantity`), so that a user who has seen the API
//! server's complaint recognises ours. Every function is pure and allocation
//! is limited to the messages of invalid input.
//!
//! Shared by the policy crates: a label key or value that the API server
//! would reject is reported the same way everywhere.
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod group_version;
mod names;
mod quantity;
mod selector;

pub use group_version::{GroupVersion, GroupVersionError, parse_group_version};
pub use names::{
    DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH, LABEL_VALUE_MAX_LENGTH,
    QUALIFIED_NAME_MAX_LENGTH, is_dns1123_label, is_dns1123_subdomain, is_label_value,
    is_qualified_name, validate_dns1123_label, validate_dns1123_subdomain, validate_label_value,
    validate_qualified_name,
};
pub use quantity::{Quantity, QuantityError};
pub use selector::{
    LabelSelectorOperator, NodeSelectorOperator, SelectorError, Violation,
    label_selector_to_selector, unparsable_node_selector_requirement, validate_label_selector,
    validate_node_selector_requirement,
};

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
