//! `-o html` without a browser: the page embeds exactly the `-o json`
//! document, its skeleton (views, legends, rule links) is what people
//! read, and only `report`, `schedule`, `diagnose` and `capacity` offer
//! it. The pages in a real browser: `html_browser.rs`.

mod common;

use common::{ok, run};
use policyctl::Exit;

/// The embedded document of a page.
fn embedded(page: &str) -> serde_json::Value {
    let start_tag = "<script type=\"application/json\" id=\"data\">";
    let start = page.find(start_tag).expect("the page embeds a document") + start_tag.len();
    let end = start + page[start..].find("</script>").expect("the element ends");
    serde_json::from_str(&page[start..end]).expect("the embedded document is JSON")
}

#[test]
fn the_report_page_embeds_exactly_the_json_document() {
    let page = ok(&["report", "-o", "html"]).stdout;
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["report", "-o", "json"]).stdout).expect("JSON");
    assert_eq!(embedded(&page), json);
    for key in ["placement", "scheduling", "queue", "soothe", "dataMovers"] {
        assert!(json.get(key).is_some(), "the example's report has {key}");
    }
}

#[test]
fn the_report_page_is_the_same_for_the_same_input() {
    assert_eq!(
        ok(&["report", "-o", "html"]).stdout,
        ok(&["report", "-o", "html"]).stdout
    );
}

#[test]
fn the_page_skeleton_names_each_view_its_legend_and_rules() {
    let page = ok(&["report", "-o", "html"]).stdout;
    // The style, script and data are checked elsewhere; the rest is what
    // people read before the script runs.
    let mut skeleton = String::new();
    let mut rest = page.as_str();
    for (open, close) in [
        ("<style>", "</style>"),
        (
            "<script type=\"application/json\" id=\"data\">",
            "</script>",
        ),
        ("<script>", "</script>"),
    ] {
        let start = rest.find(open).expect("element") + open.len();
        let end = start + rest[start..].find(close).expect("end");
        skeleton.push_str(&rest[..start]);
        skeleton.push('…');
        rest = &rest[end..];
    }
    skeleton.push_str(rest);
    insta::assert_snapshot!(skeleton);
}

#[test]
fn a_placement_entry_counts_the_pods_of_each_node_by_workload() {
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["report", "-o", "json"]).stdout).expect("JSON");
    let nodes = json["placement"]["nodes"].as_object().expect("nodes");
    assert_eq!(nodes.len(), 7, "every Node of the example");
    for (node, entry) in nodes {
        let by_workload: u64 = entry["workloads"]
            .as_object()
            .expect("workloads")
            .values()
            .filter_map(serde_json::Value::as_u64)
            .sum();
        assert_eq!(Some(by_workload), entry["pods"].as_u64(), "{node}");
    }
    assert_eq!(json["placement"]["nodes"]["worker-b1"]["host"], "esx-04");
    assert_eq!(json["placement"]["nodes"]["worker-b3"]["host"], "esx-04");
    assert_eq!(
        json["scheduling"]["pods"]["shop/web-7c9f8d6b5-r9t2x"]["selected"],
        "worker-b3"
    );
}

#[test]
fn other_commands_refuse_html_with_a_usage_error() {
    for args in [["queue", "-o", "html"], ["concurrency", "-o", "html"]] {
        let run = run(&args);
        assert_eq!(run.exit, Exit::Usage, "{args:?}");
        assert!(run.stdout.is_empty(), "{args:?}");
        assert!(
            run.stderr.contains(
                "-o html is available for `report`, `schedule`, `diagnose` and `capacity` only"
            ),
            "{}",
            run.stderr
        );
    }
}

/// The views (tab panel ids) of a page.
fn views(page: &str) -> Vec<&str> {
    page.split("role=\"tabpanel\" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

#[test]
fn schedule_diagnose_and_capacity_pages_embed_their_json_document_with_their_view_only() {
    for (args, kind, view) in [
        (
            &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"][..],
            "schedule",
            "view-scheduling",
        ),
        (&["schedule", "--all"][..], "schedule", "view-scheduling"),
        (
            &["diagnose", "--pod", "shop/web-7c9f8d6b5-r9t2x"][..],
            "diagnose",
            "view-scheduling",
        ),
        (
            &["capacity", "--workload", "Deployment/shop/web"][..],
            "capacity",
            "view-capacity",
        ),
    ] {
        let page = ok(&[args, &["-o", "html"]].concat()).stdout;
        let json: serde_json::Value =
            serde_json::from_str(&ok(&[args, &["-o", "json"]].concat()).stdout).expect("JSON");
        assert_eq!(embedded(&page), json, "{args:?}");
        assert!(
            page.contains(&format!("<body data-page=\"{kind}\">")),
            "{args:?}"
        );
        assert!(
            page.contains(&format!("<title>policyctl {kind}</title>")),
            "{args:?}"
        );
        assert_eq!(views(&page), [view], "{args:?}");
    }
    assert_eq!(
        views(&ok(&["report", "-o", "html"]).stdout),
        [
            "view-hosts",
            "view-movers",
            "view-queue",
            "view-gate",
            "view-scheduling",
            "view-capacity"
        ]
    );
}
