//! Properties of the repository-maintenance job configuration (R5.4,
//! R5.8), each named by its invariant. The oracle of the merge is a
//! field-by-field restatement of R5.4, not the code under test.

use std::collections::BTreeMap;

use affinity_translate::maintenance::{
    GLOBAL_KEY, JobConfig, MaintenanceConfig, Resolution, ServerPodTemplate, load_maintenance_data,
    maintenance_job, resolve,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const KEY: &str = "ns-default-kopia";

/// A random entry as JSON: each field absent, or one of a few values
/// (including the "empty" ones Go treats as absent).
fn entry() -> impl Strategy<Value = Value> {
    let affinity = prop_oneof![
        Just(None),
        Just(Some(json!([]))),
        Just(Some(json!([null]))),
        (0usize..3, "[a-c]").prop_map(|(n, zone)| {
            let entries: Vec<Value> = (0..=n)
                .map(|i| json!({"nodeSelector": {"matchLabels": {"zone": format!("{zone}{i}")}}}))
                .collect();
            Some(Value::Array(entries))
        }),
    ];
    let resources = prop_oneof![
        Just(None),
        "[1-9]00m".prop_map(|cpu| Some(
            json!({"cpuRequest": cpu, "cpuLimit": "0", "memoryRequest": "0", "memoryLimit": "0"})
        )),
    ];
    let keep = prop_oneof![Just(None), (0i64..5).prop_map(Some)];
    let name = prop_oneof![
        Just(None),
        Just(Some(String::new())),
        "[a-c]{1,3}".prop_map(Some)
    ];
    let map = prop_oneof![
        Just(None),
        Just(Some(BTreeMap::new())),
        "[a-c]{1,3}".prop_map(|v| Some(BTreeMap::from([("k".to_owned(), v)]))),
    ];
    (affinity, resources, keep, name, map.clone(), map).prop_map(
        |(affinity, resources, keep, name, labels, annotations)| {
            let mut object = serde_json::Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    object.insert(k.to_owned(), v);
                }
            };
            put("loadAffinity", affinity);
            put("podResources", resources);
            put("keepLatestMaintenanceJobs", keep.map(Value::from));
            put("priorityClassName", name.map(Value::from));
            put("podLabels", labels.map(|m| json!(m)));
            put("podAnnotations", annotations.map(|m| json!(m)));
            Value::Object(object)
        },
    )
}

fn config_map(entries: &[(&str, &Value)]) -> MaintenanceConfig {
    let data: BTreeMap<String, String> = entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_string()))
        .collect();
    load_maintenance_data("velero/cm", Some(&data)).unwrap()
}

/// R5.4 restated on JSON values: "set" means present and, for lists, maps
/// and strings, non-empty.
fn oracle(own: Option<&Value>, global: Option<&Value>) -> Option<Value> {
    fn set(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => false,
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        }
    }
    if own.is_none() && global.is_none() {
        return None;
    }
    let mut out = own.cloned().unwrap_or_else(|| json!({}));
    let Some(global) = global else {
        return Some(out);
    };
    let object = out.as_object_mut().unwrap();
    for field in ["podResources", "keepLatestMaintenanceJobs"] {
        if object.get(field).is_none() && global.get(field).is_some() {
            object.insert(field.to_owned(), global[field].clone());
        }
    }
    if !set(object.get("loadAffinity")) {
        match global.get("loadAffinity") {
            Some(v) => object.insert("loadAffinity".to_owned(), v.clone()),
            None => object.remove("loadAffinity"),
        };
    }
    for field in ["priorityClassName", "podLabels", "podAnnotations"] {
        if set(global.get(field)) {
            object.insert(field.to_owned(), global[field].clone());
        }
    }
    Some(out)
}

fn as_json(resolution: &Resolution) -> Option<Value> {
    resolution
        .config()
        .map(|c| serde_json::to_value(c).unwrap())
}

proptest! {
    #[test]
    fn the_merge_with_global_is_velero_field_by_field(
        own in proptest::option::of(entry()),
        global in proptest::option::of(entry()),
    ) {
        let mut entries = Vec::new();
        if let Some(own) = &own { entries.push((KEY, own)); }
        if let Some(global) = &global { entries.push((GLOBAL_KEY, global)); }
        prop_assume!(!entries.is_empty());
        let cm = config_map(&entries);
        let got = as_json(&resolve(Some(&cm), KEY));
        prop_assert_eq!(got, oracle(own.as_ref(), global.as_ref()));
    }

    #[test]
    fn global_only_fields_come_from_global_whenever_it_sets_them(
        own in entry(),
        global in entry(),
    ) {
        let cm = config_map(&[(KEY, &own), (GLOBAL_KEY, &global)]);
        let resolution = resolve(Some(&cm), KEY);
        let config = resolution.config().unwrap();
        let global: JobConfig = serde_json::from_value(global).unwrap();
        if let Some(name) = global.priority_class() {
            prop_assert_eq!(config.priority_class(), Some(name));
        }
        if let Some(labels) = global.labels() {
            prop_assert_eq!(config.labels(), Some(labels));
        }
        if let Some(annotations) = global.annotations() {
            prop_assert_eq!(config.annotations(), Some(annotations));
        }
    }

    #[test]
    fn other_repositories_entries_never_change_a_resolution(
        own in entry(),
        global in entry(),
        other in entry(),
        broken in any::<bool>(),
    ) {
        let alone = config_map(&[(KEY, &own), (GLOBAL_KEY, &global)]);
        let other = if broken { Value::String("{".to_owned()) } else { other };
        let mut data: BTreeMap<String, String> = [(KEY, &own), (GLOBAL_KEY, &global)]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_string()))
            .collect();
        data.insert("other-default-kopia".to_owned(), match &other {
            Value::String(text) => text.clone(),
            value => value.to_string(),
        });
        let with_other = load_maintenance_data("velero/cm", Some(&data)).unwrap();
        prop_assert_eq!(resolve(Some(&alone), KEY), resolve(Some(&with_other), KEY));
    }

    #[test]
    fn only_the_first_load_affinity_entry_shapes_the_job(own in entry()) {
        let cm = config_map(&[(KEY, &own)]);
        let resolution = resolve(Some(&cm), KEY);
        let config = resolution.config().unwrap().clone();
        let mut first_only = config.clone();
        if let Some(entries) = first_only.load_affinity.as_mut() {
            entries.truncate(1);
        }
        let server = ServerPodTemplate::default();
        let job = maintenance_job(Some(&config), "r", &server);
        let truncated = maintenance_job(Some(&first_only), "r", &server);
        prop_assert_eq!(job.map(|j| j.affinity), truncated.map(|j| j.affinity));
    }

    #[test]
    fn building_a_job_twice_gives_the_same_job(own in entry()) {
        let cm = config_map(&[(KEY, &own)]);
        let resolution = resolve(Some(&cm), KEY);
        let server = ServerPodTemplate::default();
        prop_assert_eq!(
            maintenance_job(resolution.config(), "r", &server),
            maintenance_job(resolution.config(), "r", &server)
        );
    }
}
