//! The accept patch. (Load objects become gate input through
//! `kube_adapters::velero::load`.)
//!
//! # How a load is accepted
//!
//! The same fields Velero's node-agent writes when it accepts a DataUpload
//! or DataDownload (L3.11, L3.13; field names from `velero-api`):
//! `status.phase: Accepted`, `status.acceptedByNode` (this instance's
//! `--node`), `status.acceptedTimestamp` (now), and the label
//! `velero.io/expose-on-going: "true"`, in **one JSON merge patch on the
//! main resource** that carries `metadata.resourceVersion` (added by the
//! runtime's writer; a precondition:
//! `409 Conflict` if the load changed since it was read, so two replicas
//! racing for one load cannot both accept it).
//!
//! Not confirmed from the spec: whether Velero's CRDs enable the `/status`
//! subresource. Velero's controllers write phase and label in one update of
//! the whole object (L3.11 says both change "in the same update"), which is
//! only possible without it, so the patch goes to the main resource.

use velero_api::labels::EXPOSE_ON_GOING;

/// The accept patch (see the module docs). The runtime's writer adds the
/// load's resourceVersion as the precondition; loads without a known
/// resourceVersion are never accepted.
pub fn accept_patch(node: &str, now: jiff::Timestamp) -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "labels": { EXPOSE_ON_GOING: "true" },
        },
        "status": {
            "phase": "Accepted",
            "acceptedByNode": node,
            "acceptedTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_patch_sets_velero_accept_fields() {
        let patch = accept_patch("node-a", "2026-11-22T03:00:01.5Z".parse().unwrap());
        insta::assert_json_snapshot!(patch, @r#"
        {
          "metadata": {
            "labels": {
              "velero.io/expose-on-going": "true"
            }
          },
          "status": {
            "acceptedByNode": "node-a",
            "acceptedTimestamp": "2026-11-22T03:00:01Z",
            "phase": "Accepted"
          }
        }
        "#);
    }
}
