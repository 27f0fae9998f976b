//! A wrapper around `kube::runtime::events::Recorder` that respects `--dry-run`.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder, Reporter};

use crate::error::Error;

/// Publishes Kubernetes Events on the objects a controller acts on; in
/// dry-run mode it only logs what it would publish.
#[derive(Clone)]
pub struct EventPublisher {
    recorder: Recorder,
    dry_run: bool,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher")
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

impl EventPublisher {
    /// A publisher reporting as `controller` (and `instance`, e.g. the pod name).
    pub fn new(
        client: kube::Client,
        controller: &str,
        instance: Option<String>,
        dry_run: bool,
    ) -> Self {
        let reporter = Reporter {
            controller: controller.to_owned(),
            instance,
        };
        Self {
            recorder: Recorder::new(client, reporter),
            dry_run,
        }
    }

    /// Whether publishing is suppressed.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Publishes `event` about `reference` (repeats become an event series).
    pub async fn publish(&self, event: &Event, reference: &ObjectReference) -> Result<(), Error> {
        if self.dry_run {
            tracing::info!(
                dry_run = true,
                reason = %event.reason,
                note = event.note.as_deref().unwrap_or_default(),
                object = reference.name.as_deref().unwrap_or_default(),
                namespace = reference.namespace.as_deref().unwrap_or_default(),
                "would publish event"
            );
            return Ok(());
        }
        self.recorder
            .publish(event, reference)
            .await
            .map_err(Error::Kube)
    }
}
