// k8s.io/cli-runtime v0.33.12, which Velero v1.18.3 requires, is refused by
// the Go module proxy ("403 This module version is not available"), and so is
// v0.33.11. v0.33.10 is the nearest earlier patch it serves; patch releases
// of cli-runtime only follow their Kubernetes patch, and Velero uses it for
// its CLI's output printers, not for anything the server does.
replace k8s.io/cli-runtime => k8s.io/cli-runtime v0.33.10
