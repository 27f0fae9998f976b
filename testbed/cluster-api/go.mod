// The test bed's cluster-api, written by testbed/pin.sh; re-run it to change
// the version. testbed/build.sh reads the next line.
// upstream: sigs.k8s.io/cluster-api v1.14.2
module placement-policies.test/testbed/cluster-api

go 1.26.0

require sigs.k8s.io/cluster-api v1.14.2

