//! Unit tests of the manifest reader.

use super::*;

fn error_text(name: &str, text: &str) -> String {
    match read_str(name, text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn yaml_documents_lists_and_json_are_all_read() {
    let yaml = "\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {a: b}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2}
---
";
    let inventory = read_str("a.yaml", yaml).expect("valid");
    assert_eq!(inventory.namespaces.len(), 1);
    assert_eq!(
        inventory
            .nodes
            .keys()
            .map(|k| k.name.as_str())
            .collect::<Vec<_>>(),
        ["n1", "n2"]
    );
    let origin = &inventory.nodes[&ObjectKey::cluster("n2")].origin;
    assert_eq!(origin.to_string(), "a.yaml, document 2, items[1]");

    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c"}]}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[]}}"#;
    let inventory = read_str("b.json", json).expect("valid JSON stream");
    assert_eq!(
        inventory
            .pods
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["default/q", "ns/p"]
    );
}

#[test]
fn typed_lists_give_their_items_a_kind() {
    let yaml = "\
apiVersion: v1
kind: PodList
items:
- metadata: {name: p, namespace: ns}
  spec: {containers: [{name: c}]}
";
    let inventory = read_str("pods.yaml", yaml).expect("valid");
    assert!(
        inventory
            .pods
            .contains_key(&ObjectKey::namespaced("ns", "p"))
    );
}

#[test]
fn other_kinds_are_counted_not_rejected() {
    let yaml = "\
apiVersion: batch/v1
kind: Job
metadata: {name: web, namespace: shop}
---
apiVersion: batch/v1
kind: Job
metadata: {name: api, namespace: shop}
---
apiVersion: velero.io/v1
kind: DataUpload
metadata: {name: wrong-version, namespace: velero}
";
    let inventory = read_str("w.yaml", yaml).expect("valid");
    assert_eq!(
        inventory.ignored_notes(),
        [
            "note: ignored 2 objects of kind batch/v1 Job (first in w.yaml, document 1): policyctl does not use this kind",
            "note: ignored 1 object of kind velero.io/v1 DataUpload (first in w.yaml, document 3): policyctl does not use this kind",
        ]
    );
}

#[test]
fn field_errors_name_file_document_path_and_value() {
    let yaml = "\
apiVersion: v1
kind: Namespace
metadata: {name: ok}
---
apiVersion: velero.io/v1
kind: Backup
metadata: {name: b1, namespace: velero}
spec:
  includedNamespaces: shop
";
    assert_eq!(
        error_text("backups.yaml", yaml),
        "backups.yaml, document 2: Backup velero/b1: field `spec.includedNamespaces`: \
         invalid type: string \"shop\", expected a sequence (offending value: \"shop\")"
    );
}

#[test]
fn errors_inside_lists_name_the_item() {
    let yaml = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {zone: [a, b]}}
";
    assert_eq!(
        error_text("nodes.yaml", yaml),
        "nodes.yaml, document 1, items[0]: Node n1: field `metadata.labels.zone`: \
         invalid type: sequence, expected a string (offending value: [\"a\",\"b\"])"
    );
}

#[test]
fn json_lists_read_item_by_item_give_the_same_objects_and_messages_as_yaml() {
    let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": ["a", "b"]}}}
    ]}"#;
    assert_eq!(
        error_text("nodes.json", json),
        "nodes.json, document 1, items[0]: Node n1: field `metadata.labels.zone`: \
         invalid type: sequence, expected a string (offending value: [\"a\",\"b\"])"
    );
    // A key given twice: a struct refuses it, JSON keeps the last one (as
    // the tree path and Go's encoding/json do); managedFields are dropped.
    let json = r#"{"apiVersion": "v1", "kind": "NodeList", "items": [
        {"metadata": {"name": "n1", "labels": {"zone": "a"}, "labels": {"zone": "b"},
                      "managedFields": [{"manager": "kubelet"}]}},
        {"metadata": {"name": "n2", "managedFields": [{"manager": "kubelet"}]}}
    ]}"#;
    let inventory = read_str("nodes.json", json).expect("valid list");
    let n1 = &inventory.nodes[&ObjectKey::cluster("n1".to_owned())].object;
    let labels = n1.metadata.labels.as_ref().expect("labels");
    assert_eq!(labels["zone"], "b");
    for node in inventory.nodes.values() {
        assert_eq!(node.object.metadata.managed_fields, None);
    }
}

#[test]
fn documents_must_be_objects_with_api_version_and_kind() {
    assert_eq!(
        error_text("x.yaml", "- a\n- b\n"),
        "x.yaml, document 1: expected a Kubernetes object (a mapping with apiVersion and kind), got a list"
    );
    assert_eq!(
        error_text("x.yaml", "kind: Pod\nmetadata: {name: p}\n"),
        "x.yaml, document 1: field `apiVersion` is missing: every object needs apiVersion and kind (offending value: <absent>)"
    );
    assert_eq!(
        error_text("x.yaml", "apiVersion: v1\nkind: 7\n"),
        "x.yaml, document 1: field `kind` must be a non-empty string, got a number (offending value: 7)"
    );
    assert_eq!(
        error_text("x.yaml", "apiVersion: v1\nkind: Node\nmetadata: {}\n"),
        "x.yaml, document 1: Node: field `metadata.name`: every object needs a name (offending value: <absent>)"
    );
}

#[test]
fn syntax_errors_name_the_file_document_line_and_format() {
    let yaml = error_text("bad.yaml", "apiVersion: v1\nkind: [Pod\n");
    assert!(
        yaml == "bad.yaml, document 1, line 2, column 7: not valid YAML: unclosed bracket '['",
        "{yaml}"
    );
    let json = error_text("bad.json", "{\"apiVersion\": \"v1\",");
    assert!(
        json.starts_with("bad.json, document 1, line 1, column 20: not valid JSON: "),
        "{json}"
    );
}

#[test]
fn duplicates_are_errors_naming_both_places() {
    let yaml = "\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
";
    assert_eq!(
        error_text("ns.yaml", yaml),
        "ns.yaml, document 2: Namespace shop is defined twice (first in ns.yaml, document 1); remove one of them"
    );
}

#[test]
fn input_without_documents_is_an_error_and_empty_documents_are_skipped() {
    for empty in ["", "---\n---\n", "# only a comment\n", "\u{feff}"] {
        assert_eq!(
            error_text("e.yaml", empty),
            "no objects were read from e.yaml: it is empty, or holds only comments and `---` separators; if it was written by `kubectl get ... > FILE`, that command failed: run it again and check its error",
            "{empty:?}"
        );
    }
    let inventory = read_str(
        "e.yaml",
        "---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n",
    )
    .expect("one object");
    // Documents keep their number in the file: the Node is the second.
    assert_eq!(
        inventory.nodes[&ObjectKey::cluster("n1")]
            .origin
            .to_string(),
        "e.yaml, document 2"
    );
}

#[test]
fn machines_of_both_versions_and_host_inventories_are_recognised() {
    let yaml = "\
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: m1, namespace: default, labels: {node.cluster.x-k8s.io/esxi-host: esx-01}}
status: {nodeRef: {apiVersion: v1, kind: Node, name: n1, uid: x}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {name: m2, namespace: default}
status: {nodeRef: {name: n2}}
---
apiVersion: policyctl/v1alpha1
kind: HostInventory
hosts: []
";
    let inventory = read_str("m.yaml", yaml).expect("valid");
    let nodes: Vec<_> = inventory
        .machines
        .values()
        .map(|m| m.object.node_name())
        .collect();
    assert_eq!(nodes, [Some("n1"), Some("n2")]);
    assert_eq!(inventory.host_inventories.len(), 1);
}

/// The fuzz target's seed corpus (and any crasher added to it) must read
/// without panicking, through the same entry point as the fuzz target.
#[test]
fn fuzz_corpus_replays_without_panics() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/manifest_reader");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "seed corpus is empty");
    for path in entries {
        let bytes = std::fs::read(&path).expect("readable corpus file");
        crate::manifest::fuzz_entry(&bytes);
    }
}

/// Reads `text` with both YAML readers: the fast one must read it and file
/// exactly what the tree reader files.
fn fast_reader_files_what_the_tree_reader_files(name: &str, text: &str) -> Inventory {
    let sources = [Source {
        name: name.to_owned(),
        text: text.to_owned(),
    }];
    let fast = read_fast(&sources).unwrap_or_else(|_| panic!("the fast reader gave up on {name}"));
    let tree = read_with_trees(&sources).expect("the tree reader reads it");
    assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "{name}");
    fast
}

#[test]
fn the_fast_yaml_reader_files_the_bundled_example_as_the_tree_reader() {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cluster");
    let mut files: Vec<_> = std::fs::read_dir(directory)
        .expect("examples/cluster")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        fast_reader_files_what_the_tree_reader_files(&path.display().to_string(), &text);
    }
}

#[test]
fn the_fast_yaml_reader_files_a_kubectl_dump_as_the_tree_reader() {
    use testkit::cluster_dump::{DumpFormat, DumpShape, dump};
    let text = String::from_utf8(dump(DumpShape::new(40, 5), DumpFormat::Yaml)).expect("UTF-8");
    let inventory = fast_reader_files_what_the_tree_reader_files("dump.yaml", &text);
    assert_eq!(inventory.pods.len(), 40);
    assert_eq!(inventory.nodes.len(), 5);
    assert!(
        inventory
            .pods
            .values()
            .all(|pod| pod.object.metadata.managed_fields.is_none())
    );
}

#[test]
fn the_fast_yaml_reader_agrees_on_awkward_but_valid_documents() {
    // Items without a kind (a typed list names it after them), a list whose
    // kind comes before its items, CRLF line ends, comments, empty
    // documents, flow and block style, escapes, block scalars, numbers where
    // quantities are read, a Node in a list among ignored kinds.
    let cases = [
        "apiVersion: v1\nitems:\n- metadata: {name: a, namespace: x}\n  spec: {containers: []}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n  spec: {containers: []}\nkind: PodList\nmetadata: {}\n",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {a: \"b\\tc\", z: 'it''s'}}}\n- {apiVersion: apps/v1, kind: Unknown, metadata: {name: d}}\n- {apiVersion: apps/v1, kind: Unknown, metadata: {name: e}}\n",
        "# leading comment\r\n---\r\napiVersion: v1\r\nkind: Namespace\r\nmetadata:\r\n  name: shop\r\n  labels: {n: \"n\", v: \"1.10\"}\r\n---\r\n---\r\n",
        "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: velero}, data: {k: \"\\u00e9\\n\"}}\n--- \napiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: velero}\ndata:\n  x: |\n    line one\n    ---\n  y: >-\n    folded\n    text\n",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n2\n  managedFields:\n  - manager: kubelet\n    fieldsV1: {f:metadata: {}}\nstatus:\n  allocatable: {cpu: 4, memory: 8Gi, pods: \"110\"}\n  capacity: {cpu: 4.5e0, hugepages-2Mi: 0}\n",
        "apiVersion: v1\nkind: List\nitems: []\n",
        "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - {apiVersion: v1, kind: Namespace, metadata: {name: nested}}\nkind: List\n",
    ];
    for (index, text) in cases.into_iter().enumerate() {
        fast_reader_files_what_the_tree_reader_files(&format!("case-{index}.yaml"), text);
    }
}

#[test]
fn the_fast_yaml_reader_gives_up_and_the_tree_reader_answers() {
    // Each is read (or refused) by the tree reader alone, with its usual
    // answer.
    let fast_gives_up = [
        // An alias.
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: &n a, labels: {x: *n}}\n",
        // A directive.
        "%YAML 1.2\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
        // An object with items that is no list.
        "apiVersion: example.com/v1\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: a}}]\nkind: Thing\nmetadata: {name: t}\n",
        // Items that are no list.
        "apiVersion: v1\nkind: List\nitems:\n",
        "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
        // A name that is a boolean: the tree reader explains it.
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: n}}\n",
    ];
    for text in fast_gives_up {
        let sources = [Source {
            name: "x.yaml".to_owned(),
            text: text.to_owned(),
        }];
        assert!(read_fast(&sources).is_err(), "{text}");
        let tree = read_with_trees(&sources).map(|inventory| format!("{inventory:?}"));
        let read = read_sources(&sources).map(|inventory| format!("{inventory:?}"));
        match (tree, read) {
            (Ok(tree), Ok(read)) => assert_eq!(tree, read),
            (Err(tree), Err(read)) => assert_eq!(tree.to_string(), read.to_string()),
            (tree, read) => panic!("{text}: {tree:?} vs {read:?}"),
        }
    }
    let message = error_text(
        "x.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: n}}\n",
    );
    assert!(message.contains("quote the value"), "{message}");
}

#[test]
fn the_type_is_read_from_the_first_bytes_only_in_kubectls_order() {
    use super::leading_type;
    assert_eq!(
        leading_type(
            "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Pod\",\n    \"metadata\": {}}"
        ),
        Some(("v1", "Pod"))
    );
    assert_eq!(
        leading_type(r#"{"apiVersion":"apps/v1","kind":"ReplicaSet"}"#),
        Some(("apps/v1", "ReplicaSet"))
    );
    // Any other order, an escape or a missing key: the header is parsed.
    for text in [
        r#"{"kind":"Pod","apiVersion":"v1"}"#,
        r#"{"apiVersion":"v\u0031","kind":"Pod"}"#,
        r#"{"apiVersion":"v1"}"#,
        r#"{"metadata":{},"apiVersion":"v1","kind":"Pod"}"#,
        r#"[]"#,
    ] {
        assert_eq!(leading_type(text), None, "{text}");
    }
}
