# Functions shared by testbed/build.sh and testbed/build-releases.sh;
# sourced, not run. Expects $here (testbed/), $cache (the build cache) and
# CGO_ENABLED/GOFLAGS set by the caller.

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
	kubernetes | kubernetes-1.*)
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

# build PRODUCT BIN: go build every `tool` of the wrapper module, once per
# key in the cache, and link the binaries into the directory BIN.
build() {
	local product="$1" bin="$2" key dir start
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
		ln -sfn "$binary" "$bin/$(basename "$binary")"
	done
}

