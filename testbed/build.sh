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

# pinned_version PRODUCT: the upstream version its wrapper module requires.
pinned_version() {
	sed -n 's|^// upstream: [^ ]* \(v[^ ]*\)$|\1|p' "$here/$1/go.mod"
}
# module_dir PRODUCT: where the Go module cache holds the upstream module.
module_dir() {
	local module
	module="$(sed -n 's|^// upstream: \([^ ]*\) v[^ ]*$|\1|p' "$here/$1/go.mod")"
	(cd "$here/$1" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
}
# ldflags PRODUCT: strip symbols, and stamp the version where upstream's
# own release build does (without it kube-apiserver's /version says
# v0.0.0-master and `velero version` says nothing).
ldflags() {
	local version flags='-s -w' package minor released
	version="$(pinned_version "$1")"
	case "$1" in
	kubernetes)
		minor="${version#v1.}"
		minor="${minor%%.*}"
		released="$(cd "$here/$1" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
		for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			flags+=" -X $package.gitVersion=$version -X $package.gitMajor=1 -X $package.gitMinor=$minor"
			flags+=" -X $package.gitTreeState=archive -X $package.buildDate=$released"
		done ;;
	velero) flags+=" -X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=$version" ;;
	esac
	echo "$flags"
}
# cache_key PRODUCT: <product>/<version>-<checksum of go.mod, go.sum and
# the build flags>.
cache_key() {
	local sum
	sum="$( (cat "$here/$1/go.mod" "$here/$1/go.sum"; echo "CGO_ENABLED=$CGO_ENABLED $(ldflags "$1")") | sha256sum | cut -c1-12)"
	echo "$1/$(pinned_version "$1")-$sum"
}

rm -rf "$out.new"
mkdir -p "$out.new/bin" "$out.new/crds" "$cache"

# build PRODUCT: go build every `tool` of the wrapper module, once per key.
build() {
	local product="$1" key dir start
	key="$(cache_key "$product")"
	dir="$cache/$key"
	if [ -f "$dir/.complete" ]; then
		echo "testbed: $product $(pinned_version "$product"): reused $dir"
	else
		echo "testbed: $product $(pinned_version "$product"): building (go build, $(nproc) cores) ..."
		start=$SECONDS
		rm -rf "$dir.partial"
		mkdir -p "$dir.partial"
		(cd "$here/$product" && go build -trimpath -ldflags="$(ldflags "$product")" -o "$dir.partial/" tool)
		# etcd's main package is the module root, so Go names the binary `server`.
		if [ -f "$dir.partial/server" ]; then mv "$dir.partial/server" "$dir.partial/etcd"; fi
		rm -rf "$dir"
		mv "$dir.partial" "$dir"
		touch "$dir/.complete"
		echo "testbed: $product $(pinned_version "$product"): built in $((SECONDS - start)) s: $(cd "$dir" && ls | tr '\n' ' ')"
	fi
	for binary in "$dir"/*; do
		ln -sfn "$binary" "$out.new/bin/$(basename "$binary")"
	done
}

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

build etcd
build kubernetes
build velero
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
