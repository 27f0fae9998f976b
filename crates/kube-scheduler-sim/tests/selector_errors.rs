//! Label selector parse errors in apimachinery's field-error form, as
//! kube-scheduler's own tables expect them: an invalid value in a required
//! pod affinity term (interpodaffinity/filtering_test.go "PodAffinity fails
//! PreFilter with an invalid affinity label syntax"), an invalid key in a
//! preferred node affinity term (nodeaffinity/node_affinity_test.go
//! TestNodeAffinityPriority, the PreScore error), and an invalid value in a
//! topology spread constraint's selector (podtopologyspread PreFilter,
//! `filterTopologySpreadConstraints`).

mod oracle;
mod support;

use kube_scheduler_sim::Options;
use serde_json::json;
use support::*;

const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const KEY_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn affinity_in(key: &str, topology: &str, values: &[&str]) -> serde_json::Value {
    json!({"labelSelector": sel_in(key, values), "topologyKey": topology})
}

#[test]
fn an_invalid_affinity_label_value_fails_prefilter_with_apimachinery_text() {
    for (first, second) in [
        (vec!["{{.bad-value.}}"], vec!["antivirusscan", "value2"]),
        (vec!["foo"], vec!["{{.bad-value.}}"]),
    ] {
        let incoming = pod(
            "default",
            "p",
            &[("service", "securityscan")],
            None,
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                affinity_in("service", "region", &first),
                affinity_in("service", "node", &second),
            ]}}}),
        );
        let r = eval(
            &[node("node1", &[("region", "r1"), ("zone", "z11")])],
            &[],
            &[],
            &incoming,
            &Options::default(),
        );
        assert_eq!(
            r.unschedulable["node1"].message,
            format!(
                "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: \"{{{{.bad-value.}}}}\": {VALUE_RULE}"
            )
        );
    }
}

#[test]
fn an_invalid_preferred_node_affinity_key_fails_prescore_with_apimachinery_text() {
    let incoming = pod(
        "default",
        "p",
        &[],
        None,
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "preference": {"matchExpressions": [
                {"key": "invalid key", "operator": "In", "values": ["bar"]}]}}
        ]}}}),
    );
    let r = eval(
        &[node("node1", &[("foo", "bar")]), node("node2", &[])],
        &[],
        &[],
        &incoming,
        &Options::default(),
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            format!(
                "running PreScore plugin \"NodeAffinity\": [0].matchExpressions[0].key: Invalid value: \"invalid key\": {KEY_RULE}"
            )
            .as_str()
        )
    );
}

#[test]
fn an_invalid_spread_selector_value_fails_prefilter_with_apimachinery_text() {
    let incoming = pod(
        "default",
        "p",
        &[],
        None,
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel_in("foo", &["-bad"])}]}),
    );
    let r = eval(
        &[node("node1", &[("zone", "a")])],
        &[],
        &[],
        &incoming,
        &Options::default(),
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            format!(
                "obtaining pod's hard topology spread constraints: values[0][foo]: Invalid value: \"-bad\": {VALUE_RULE}"
            )
            .as_str()
        )
    );
}
