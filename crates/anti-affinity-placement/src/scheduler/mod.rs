//! kube-scheduler-exact pod placement (spec §C).
