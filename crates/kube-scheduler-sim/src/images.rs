//! Image names as `PodInfo` keeps them: the pod's container images,
//! normalised the way ImageLocality compares them with `status.images`.

use k8s_openapi::api::core::v1::Pod;

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
