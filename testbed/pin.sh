#!/usr/bin/env bash
# Pins one product of the test bed to a version: writes its wrapper module
# (testbed/<product>/go.mod), with the replace lines its upstream go.mod
# needs, and records the checksums in go.sum. Commit both files.
# testbed/<product>/overrides.mod, if present, is appended as it is: the
# place for a deliberate departure from upstream's graph, with its reason.
#
# usage: testbed/pin.sh PRODUCT VERSION
#   kubernetes   k8s.io/kubernetes               (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)
#   kubernetes-1.N  k8s.io/kubernetes at an older supported minor (kube-apiserver,
#                kube-scheduler: the per-release scheduler comparison,
#                testbed/build-releases.sh)
#   etcd         go.etcd.io/etcd/server/v3       (etcd)
#   velero       github.com/vmware-tanzu/velero  (velero: the server and its CRDs)
#   velero-crds  github.com/vmware-tanzu/velero  (an older release's CRDs only, nothing built)
#   cluster-api  sigs.k8s.io/cluster-api         (CRDs only)
#   capv         sigs.k8s.io/cluster-api-provider-vsphere (CRDs only)
set -euo pipefail
cd "$(dirname "$0")"
product="${1:?usage: $0 PRODUCT VERSION}"
version="${2:?usage: $0 PRODUCT VERSION}"

tools=()
case "$product" in
kubernetes)
	module=k8s.io/kubernetes
	tools=(cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubectl) ;;
kubernetes-1.*)
	module=k8s.io/kubernetes
	tools=(cmd/kube-apiserver cmd/kube-scheduler) ;;
etcd) module=go.etcd.io/etcd/server/v3; tools=(.) ;;
velero) module=github.com/vmware-tanzu/velero; tools=(cmd/velero) ;;
velero-crds) module=github.com/vmware-tanzu/velero ;;
cluster-api) module=sigs.k8s.io/cluster-api ;;
capv) module=sigs.k8s.io/cluster-api-provider-vsphere ;;
*) echo "pin.sh: unknown product '$product'" >&2; exit 2 ;;
esac

mkdir -p "$product"
{
	echo "// The test bed's $product, written by testbed/pin.sh; re-run it to change"
	echo "// the version. testbed/build.sh reads the next line."
	echo "// upstream: $module $version"
	echo "module placement-policies.test/testbed/$product"
	echo
	echo "go $(go env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/').0"
	if [ "${#tools[@]}" -gt 0 ]; then
		echo
		echo "tool ("
		for t in "${tools[@]}"; do
			if [ "$t" = . ]; then echo "	$module"; else echo "	$module/$t"; fi
		done
		echo ")"
	fi
	echo
	echo "require $module $version"
	echo
	./replaces.sh "$module" "$version"
	# Deliberate departures from upstream's graph, each with its reason.
	if [ -f "$product/overrides.mod" ]; then echo; cat "$product/overrides.mod"; fi
} > "$product/go.mod.new"
mv "$product/go.mod.new" "$product/go.mod"
rm -f "$product/go.sum"
cd "$product"
if [ "${#tools[@]}" -gt 0 ]; then
	GOFLAGS=-mod=mod go mod tidy
else
	# Nothing is imported, so `go mod tidy` would drop the requirement: record
	# the module's own checksums instead (its files are what we use).
	GOFLAGS=-mod=mod go mod download "$module"
fi
echo "pinned $product at $module $version"
