//! ImageLocality (C.45, `pkg/scheduler/framework/plugins/imagelocality`),
//! a score only: nodes that already hold the pod's images (from
//! `node.status.images`) score higher, in proportion to the images' sizes
//! and to how many nodes of the cluster hold them.

use k8s_openapi::api::core::v1::Pod;

use crate::plugins::helper::MAX_NODE_SCORE;

const MB: i64 = 1024 * 1024;
/// Below this many (spread-scaled) bytes a node scores 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above this many bytes a node scores 100.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// `normalizedImageName`: a name without a tag (no `:` after the last
/// `/`) gets `:latest`. Nothing else is normalised: no default registry,
/// so `nginx` matches a node image named `nginx:latest` but not
/// `docker.io/library/nginx:latest`, as in kube-scheduler.
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_owned()
    }
}

/// The pod's images, normalised, init containers first, and the number of
/// containers (init and regular) that sets the upper threshold.
pub fn pod_images(pod: &Pod) -> (Vec<String>, usize) {
    let Some(spec) = pod.spec.as_ref() else {
        return (Vec::new(), 0);
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let mut count = 0;
    let mut images = Vec::new();
    for c in containers {
        count += 1;
        images.push(normalized_image_name(
            c.image.as_deref().unwrap_or_default(),
        ));
    }
    (images, count)
}

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
