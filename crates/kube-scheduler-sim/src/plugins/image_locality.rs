//! ImageLocality (C.45, `pkg/scheduler/framework/plugins/imagelocality`),
//! a score only: nodes that already hold the pod's images (from
//! `node.status.images`) score higher, in proportion to the images' sizes
//! and to how many nodes of the cluster hold them.

use crate::plugins::helper::MAX_NODE_SCORE;

use crate::profile::{Cycle, SchedulerPlugin, ScoreOutcome, per_node};
use crate::result::Plugin;

const MB: i64 = 1024 * 1024;
/// Below this many (spread-scaled) bytes a node scores 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above this many bytes a node scores 100.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub use crate::images::{normalized_image_name, pod_images};

/// `scaledImageScore`: the image's size times the fraction of the
/// cluster's nodes holding it, in floating point, truncated.
pub fn scaled_image_score(size: i64, nodes_with_image: usize, total_nodes: usize) -> i64 {
    let spread = nodes_with_image as f64 / total_nodes as f64;
    (size as f64 * spread) as i64
}

/// `calculatePriority`: the sum of scaled sizes clamped to
/// `[23 MiB, 1000 MiB × containers]`, mapped linearly onto 0–100 (integer
/// division).
pub fn calculate_priority(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD.saturating_mul(containers as i64);
    let clamped = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max {
        max
    } else {
        sum
    };
    MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

/// The plugin in a profile: Score only (C.45).
pub(crate) struct ImageLocality;

impl SchedulerPlugin for ImageLocality {
    fn name(&self) -> Plugin {
        Plugin::ImageLocality
    }

    fn score(&self, cycle: &Cycle<'_>, scored: &[u32]) -> ScoreOutcome {
        let (state, pod) = (cycle.state, cycle.pod);
        let total_nodes = state.nodes.len();
        let raw = per_node(state, scored, |e| {
            let sum = pod
                .images
                .iter()
                .filter(|name| e.images.contains(*name))
                .filter_map(|name| state.image_states.get(name))
                .map(|(size, nodes)| scaled_image_score(*size, *nodes as usize, total_nodes))
                .sum();
            calculate_priority(sum, pod.container_count)
        });
        Ok(Some((raw.clone(), raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_get_the_latest_tag_only_when_untagged() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(
            normalized_image_name("registry:5000/app"),
            "registry:5000/app:latest"
        );
        assert_eq!(
            normalized_image_name("registry:5000/app:v1"),
            "registry:5000/app:v1"
        );
        assert_eq!(normalized_image_name("app@sha256:abc"), "app@sha256:abc");
    }

    #[test]
    fn priority_is_clamped_and_scaled() {
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(MIN_THRESHOLD, 1), 0);
        assert_eq!(calculate_priority(MAX_CONTAINER_THRESHOLD, 1), 100);
        assert_eq!(calculate_priority(5 * MAX_CONTAINER_THRESHOLD, 2), 100);
        // 100 × (500 MiB − 23 MiB) / (1000 MiB − 23 MiB) = 48.8…
        assert_eq!(calculate_priority(500 * MB, 1), 48);
        // No container at all: the sum is clamped to the minimum.
        assert_eq!(calculate_priority(0, 0), 0);
    }
}
