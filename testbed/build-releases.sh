#!/usr/bin/env bash
# Builds kube-apiserver and kube-scheduler of the older supported Kubernetes
# releases (the wrapper modules testbed/kubernetes-1.N, pinned with
# `testbed/pin.sh kubernetes-1.N vX.Y.Z`) into the build cache of
# testbed/build.sh, and lays out one bed directory per release:
#   target/testbed-releases/<version>/{bin,crds,versions.env}
# Each holds that release's kube-apiserver and kube-scheduler, and links
# the main bed's etcd, kubectl, kube-controller-manager, velero and CRDs
# (build the main bed first: bash testbed/build.sh). A test runs against
# one with KUBE_TESTBED_DIR=target/testbed-releases/<version>; see
# docs/kube-scheduler-sim.md for the per-release scheduler comparison.
#
# usage: testbed/build-releases.sh [1.34 1.35 ...]  (default: every testbed/kubernetes-1.N)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
cache="${PLACEMENT_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/placement-policies/testbed}"
target="${CARGO_TARGET_DIR:-$repo/target}"
main="$target/testbed"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
# shellcheck source=testbed/lib.sh
. "$here/lib.sh"

[ -f "$main/versions.env" ] || {
	echo "testbed/build-releases.sh: no main bed in $main; run bash testbed/build.sh first" >&2
	exit 1
}
if [ "$#" -gt 0 ]; then
	releases=("$@")
else
	releases=()
	for dir in "$here"/kubernetes-1.*; do releases+=("${dir##*/kubernetes-}"); done
fi

for release in "${releases[@]}"; do
	product="kubernetes-$release"
	[ -f "$here/$product/go.mod" ] || {
		echo "testbed/build-releases.sh: $release is not pinned; run testbed/pin.sh $product vX.Y.Z" >&2
		exit 1
	}
	version="$(pinned_version "$product")"
	out="$target/testbed-releases/$version"
	rm -rf "$out.new"
	mkdir -p "$out.new/bin" "$cache"
	for binary in etcd kubectl kube-controller-manager velero; do
		ln -sfn "$(readlink -f "$main/bin/$binary")" "$out.new/bin/$binary"
	done
	build "$product" "$out.new/bin"
	ln -sfn "$(readlink -f "$main/crds")" "$out.new/crds"
	sed "s/^KUBERNETES_VERSION=.*/KUBERNETES_VERSION=$version/" "$main/versions.env" > "$out.new/versions.env"
	rm -rf "$out"
	mv "$out.new" "$out"
	echo "testbed: Kubernetes $version ready in $out"
done
