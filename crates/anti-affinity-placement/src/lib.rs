//! Hardware-aware anti-affinity.
//!
//! Two parts, one per module:
//! - [`hosts`]: virtual machines spread over physical hosts with soft or hard
//!   anti-affinity, rebalancing and scale-down advice (spec §A);
//! - [`labels`]: Node labels naming the physical host, and their audit
//!   (spec §B).
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod hosts;
pub mod labels;

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
