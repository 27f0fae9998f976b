//! Hardware-aware anti-affinity.
//!
//! Four parts, one per module:
//! - [`hosts`]: virtual machines spread over physical hosts with soft or hard
//!   anti-affinity, rebalancing and scale-down advice (A.10–A.14, SA1–SA7);
//! - [`labels`]: Node labels naming the physical host, and their audit
//!   (B.1–B.8);
//! - [`cluster_modules`]: CAPV's vSphere cluster modules (version gate,
//!   module reconciliation, membership), their audit and the vMotions that
//!   spread what vSphere left stacked (A.1–A.5, A.15, A.16);
//! - [`tacker`]: an OpenStack Tacker VNFD's affinity rules as
//!   heat-translator makes them Nova server groups, and their plan over the
//!   compute hosts with the labels Tacker writes (E.1–E.6).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cluster_modules;
pub mod hosts;
pub mod labels;
pub mod tacker;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
