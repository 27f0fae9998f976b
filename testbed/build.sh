#!/usr/bin/env bash
# Builds the test bed: the real upstream programs the tests run, each from
# its own Go module pinned in testbed/<product>/go.mod (checksums in go.sum,
# verified; nothing is vendored), and the CRDs taken from upstream modules.
#
# Builds land in a cache keyed by product, version and the wrapper module's
# checksum, so a second run (or another clone on the same machine) reuses
# them; the workspace's target/testbed/ then links to them:
#   target/testbed/bin/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,velero}
#   target/testbed/crds/<product>-<version>/*.yaml
#   target/testbed/versions.env
#
# usage: testbed/build.sh
# env:   PLACEMENT_TESTBED_CACHE  the cache (default: ~/.cache/placement-policies/testbed)
#        CARGO_TARGET_DIR         where target/ is, as for cargo
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
cache="${PLACEMENT_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/placement-policies/testbed}"
out="${CARGO_TARGET_DIR:-$repo/target}/testbed"

command -v go >/dev/null || {
	echo "testbed/build.sh: no 'go' on PATH; the test bed is built with Go $(sed -n 's/^go //p' "$here/kubernetes/go.mod") or newer" >&2
	exit 1
}
# Static binaries, as upstream ships them; go.sum is only read, never written.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"

# shellcheck source=testbed/lib.sh
. "$here/lib.sh"

rm -rf "$out.new"
mkdir -p "$out.new/bin" "$out.new/crds" "$cache"

# crds PRODUCT GLOB...: copy the CRD manifests the module ships.
crds() {
	local product="$1" dir target count=0
	shift
	dir="$(module_dir "$product")"
	target="$out.new/crds/$product-$(pinned_version "$product")"
	mkdir -p "$target"
	for pattern in "$@"; do
		for file in "$dir"/$pattern; do
			[ -f "$file" ] || continue
			install -m 0644 "$file" "$target/"
			count=$((count + 1))
		done
	done
	[ "$count" -gt 0 ] || { echo "testbed: no CRDs matched $* in $dir" >&2; exit 1; }
	echo "testbed: $product $(pinned_version "$product"): $count CRDs"
}

build etcd "$out.new/bin"
build kubernetes "$out.new/bin"
build velero "$out.new/bin"
crds velero 'config/crd/v1/bases/*.yaml' 'config/crd/v2alpha1/bases/*.yaml'
crds velero-crds 'config/crd/v1/bases/*.yaml' 'config/crd/v2alpha1/bases/*.yaml'
# Cluster API's core CRDs and those of its kubeadm bootstrap and control
# plane providers (KubeadmConfig, KubeadmControlPlane), which live in their
# own directories of the module and which `clusterctl init` installs with
# the core ones.
crds cluster-api 'core/config/crd/bases/*.yaml' 'config/crd/bases/*.yaml' \
	'bootstrap/kubeadm/config/crd/bases/*.yaml' 'controlplane/kubeadm/config/crd/bases/*.yaml'
crds capv 'config/default/crd/bases/*.yaml'

{
	echo "# Written by testbed/build.sh: the versions in this test bed."
	echo "ETCD_VERSION=$(pinned_version etcd)"
	echo "KUBERNETES_VERSION=$(pinned_version kubernetes)"
	echo "VELERO_VERSION=$(pinned_version velero)"
	echo "VELERO_PREVIOUS_VERSION=$(pinned_version velero-crds)"
	echo "CLUSTER_API_VERSION=$(pinned_version cluster-api)"
	echo "CAPV_VERSION=$(pinned_version capv)"
} > "$out.new/versions.env"
rm -rf "$out"
mv "$out.new" "$out"
echo "testbed: ready in $out"
