//! `-o html`: one self-contained page over a command's `-o json` document.
//!
//! `report` gets every view; `schedule` and `diagnose` the scheduling view,
//! `capacity` the capacity view ([`Page`]), each drawn from that command's
//! own document.
//!
//! The page embeds the document itself, byte for byte as `serde_json`
//! writes it compactly (with every `<` written `\u003c`, so that no string
//! in it can end the `<script>` element), in
//! `<script type="application/json" id="data">`. A small inline script
//! (`page.js`) draws every view from that element alone — tables and
//! inline SVG charts — so the page and `-o json` cannot disagree. The
//! skeleton written here carries what does not depend on the input: the
//! view switcher, each view's heading, legend and the behaviour rules its
//! verdicts follow, linked to `docs/behaviour/`.
//!
//! The page loads nothing: no fonts, no images, no scripts or styles from
//! elsewhere; a Content-Security-Policy forbids every other request.

use serde_json::Value;

/// The page's style sheet (light and dark schemes by
/// `prefers-color-scheme`).
const STYLE: &str = include_str!("page.css");

/// The page's script: reads the embedded document and draws the views.
const SCRIPT: &str = include_str!("page.js");

/// A view of the report page: its element id, title, legend and the rules
/// behind its verdicts.
struct View {
    id: &'static str,
    title: &'static str,
    legend: &'static str,
    rules: &'static [Rule],
}

/// A behaviour rule: its identifier and the file of `docs/behaviour/`
/// that holds its heading.
struct Rule {
    id: &'static str,
    file: &'static str,
}

const VELERO: &str = "velero.md";
const SCHEDULER: &str = "kube-scheduler.md";
const CLUSTER_API: &str = "cluster-api.md";

const fn rule(id: &'static str, file: &'static str) -> Rule {
    Rule { id, file }
}

/// The views of `report -o html`, in the order of the switcher.
const REPORT_VIEWS: &[View] = &[
    View {
        id: "hosts",
        title: "Hosts",
        legend: "Physical hosts with the Nodes (VMs) on them and the pods each Node runs, by owning workload. \
                 Red: replicas of one workload share a host against a required host anti-affinity rule. \
                 Amber: a Node without a host label (its replicas are not kept apart). \
                 Select a Node to list its workloads.",
        rules: &[
            rule("C.13", SCHEDULER),
            rule("A.15", CLUSTER_API),
            rule("D.1", CLUSTER_API),
        ],
    },
    View {
        id: "movers",
        title: "Data movers",
        legend: "For each storage class of a pending DataUpload or DataDownload, the Nodes its data-mover pod may use \
                 (load affinity, OS and volume topology together), each Node's data-path concurrency, \
                 and the Nodes no pending load can reach.",
        rules: &[
            rule("A2.2", VELERO),
            rule("A2.15", VELERO),
            rule("A2.16", VELERO),
            rule("A2.26", VELERO),
            rule("L3.1", VELERO),
            rule("L3.2", VELERO),
        ],
    },
    View {
        id: "queue",
        title: "Backup queue",
        legend: "Backups in the order the queue runs them: the concurrency slots first, then each queued backup at its \
                 position, with the reason it waits (a namespace it shares with an earlier backup, or every slot taken). \
                 The timeline drains the queue over time in rounds (the input gives no durations): in each round every running \
                 backup ends and the queue starts the next ones; dark: the round a backup runs in, light: the rounds it waits.",
        rules: &[
            rule("Q4.1", VELERO),
            rule("Q4.11", VELERO),
            rule("Q4.12", VELERO),
            rule("Q4.13", VELERO),
            rule("Q4.14", VELERO),
        ],
    },
    View {
        id: "gate",
        title: "Prepare-queue gate",
        legend: "Loads in preparation against the prepare-queue limit: those already preparing, those the gate admits now, \
                 and those it holds back, for the gate mode the report used. Below, the same backlog drains over time in steps \
                 (the input gives no durations: a load prepares for one step): Velero's gate, where every node-agent decides one \
                 load per kind per step on its own count and can go above the limit, beside the exact gate, which never does.",
        rules: &[
            rule("L3.8", VELERO),
            rule("L3.10", VELERO),
            rule("L3.13", VELERO),
            rule("L3.14", VELERO),
        ],
    },
    View {
        id: "scheduling",
        title: "Scheduling",
        legend: "For each pending pod, kube-scheduler's verdict on every Node: the first filter that rejects it, \
                 or each score plugin's normalised score and the weighted total; the chosen Node, or the FitError. \
                 Expand a pod to see its Node × plugin matrix.",
        rules: &[
            rule("C.31", SCHEDULER),
            rule("C.21", SCHEDULER),
            rule("C.22", SCHEDULER),
        ],
    },
    View {
        id: "capacity",
        title: "Capacity",
        legend: "Spare replicas of each Deployment with required host or zone anti-affinity: how many more copies fit, \
                 where they would go, and what blocks the next one.",
        rules: &[rule("C.40", SCHEDULER), rule("C.13", SCHEDULER)],
    },
];

/// The view of `schedule -o html`.
const SCHEDULE_VIEWS: &[View] = &[View {
    id: "scheduling",
    title: "Scheduling",
    legend: "kube-scheduler's verdict on every Node for the pod: the first filter that rejects it, or each score plugin's \
             normalised score and the weighted total; the chosen Node, or the FitError. With --all: where each unbound pod \
             goes, in order, or why it stays unscheduled.",
    rules: &[
        rule("C.31", SCHEDULER),
        rule("C.21", SCHEDULER),
        rule("C.22", SCHEDULER),
    ],
}];

/// The view of `diagnose -o html`.
const DIAGNOSE_VIEWS: &[View] = &[View {
    id: "scheduling",
    title: "Scheduling",
    legend: "Why the pod does or does not schedule, Node by Node: whether it fits, the first reason it does not, and \
             every problem found (data-mover placement rules, node-agent, volume topology, taints, kube-scheduler's filters).",
    rules: &[
        rule("A2.2", VELERO),
        rule("A2.26", VELERO),
        rule("C.31", SCHEDULER),
    ],
}];

/// The view of `capacity -o html`.
const CAPACITY_VIEWS: &[View] = &[View {
    id: "capacity",
    title: "Capacity",
    legend: "How many more copies of the pod fit, placed one by one with kube-scheduler's default profile until one fits \
             nowhere: the copies per Node, the Nodes whose copies are not kept apart (a topology key missing), and what \
             blocks the next copy.",
    rules: &[rule("C.40", SCHEDULER), rule("C.13", SCHEDULER)],
}];

/// Which command's document a page draws, and so which views it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    /// `report`: every view.
    Report,
    /// `schedule` (`--pod` or `--all`): the scheduling view.
    Schedule,
    /// `diagnose`: the scheduling view, Node by Node.
    Diagnose,
    /// `capacity`: the capacity view.
    Capacity,
}

impl Page {
    /// The command's name (the page's `data-page`).
    fn name(self) -> &'static str {
        match self {
            Page::Report => "report",
            Page::Schedule => "schedule",
            Page::Diagnose => "diagnose",
            Page::Capacity => "capacity",
        }
    }

    fn views(self) -> &'static [View] {
        match self {
            Page::Report => REPORT_VIEWS,
            Page::Schedule => SCHEDULE_VIEWS,
            Page::Diagnose => DIAGNOSE_VIEWS,
            Page::Capacity => CAPACITY_VIEWS,
        }
    }
}

/// The commands with an `-o html` page, for messages.
pub const PAGE_COMMANDS: &str = "`report`, `schedule`, `diagnose` and `capacity`";

/// The page of `kind` over its command's `-o json` document.
pub fn command_page(kind: Page, document: &Value) -> String {
    page(kind, document)
}

/// The rule's link: its heading in `docs/behaviour/` of the repository.
fn rule_link(rule: &Rule) -> String {
    format!(
        "{}/blob/main/docs/behaviour/{}#{}",
        env!("CARGO_PKG_REPOSITORY"),
        rule.file,
        crate::rules::rule_anchor(rule.id)
    )
}

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The document as the page embeds it: compact JSON with `<` written
/// `\u003c` (the same value; no `</script>` can appear in it).
pub fn embedded_json(document: &Value) -> String {
    // A `Value` always serialises; its keys are strings.
    let text = serde_json::to_string(document).unwrap_or_else(|_| "null".to_owned());
    text.replace('<', "\\u003c")
}

/// The page of `report -o html` over the report's `-o json` document.
pub fn report_page(document: &Value) -> String {
    page(Page::Report, document)
}

fn page(kind: Page, document: &Value) -> String {
    let title = &format!("policyctl {}", kind.name());
    let views = kind.views();
    let mut html = String::with_capacity(64 * 1024);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    html.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    html.push_str(&format!("<title>{}</title>\n", escape(title)));
    html.push_str(&format!(
        "<style>\n{STYLE}</style>\n</head>\n<body data-page=\"{}\">\n",
        kind.name()
    ));
    html.push_str(&format!(
        "<header><h1>{}</h1><p id=\"summary\"></p></header>\n",
        escape(title)
    ));
    html.push_str("<nav><div role=\"tablist\" aria-label=\"Views\">\n");
    for (i, view) in views.iter().enumerate() {
        html.push_str(&format!(
            "<button role=\"tab\" id=\"tab-{id}\" aria-controls=\"view-{id}\" aria-selected=\"{selected}\" tabindex=\"{tabindex}\">{title}</button>\n",
            id = view.id,
            selected = i == 0,
            tabindex = if i == 0 { "0" } else { "-1" },
            title = escape(view.title),
        ));
    }
    html.push_str("</div></nav>\n<main>\n");
    html.push_str(
        "<noscript><p>The views are drawn by this page's inline script, which is off. \
         The data is the JSON document in the element with id \"data\" (view the page's source).</p></noscript>\n",
    );
    for (i, view) in views.iter().enumerate() {
        html.push_str(&format!(
            "<section role=\"tabpanel\" id=\"view-{id}\" aria-labelledby=\"tab-{id}\" tabindex=\"0\"{hidden}>\n<h2>{title}</h2>\n<p class=\"legend\">{legend}</p>\n",
            id = view.id,
            hidden = if i == 0 { "" } else { " hidden" },
            title = escape(view.title),
            legend = escape(view.legend),
        ));
        html.push_str("<p class=\"rules\">Rules: ");
        let links: Vec<String> = view
            .rules
            .iter()
            .map(|rule| {
                format!(
                    "<a href=\"{}\">{}</a>",
                    escape(&rule_link(rule)),
                    escape(rule.id)
                )
            })
            .collect();
        html.push_str(&links.join(", "));
        html.push_str("</p>\n<div class=\"body\"></div>\n</section>\n");
    }
    html.push_str("</main>\n");
    html.push_str(&format!(
        "<script type=\"application/json\" id=\"data\">{}</script>\n",
        embedded_json(document)
    ));
    html.push_str(&format!("<script>\n{SCRIPT}</script>\n</body>\n</html>\n"));
    html
}

#[cfg(test)]
mod tests {
    use super::{embedded_json, escape, report_page};
    use serde_json::json;

    #[test]
    fn embedded_json_parses_back_to_the_same_document_and_never_closes_the_script() {
        let document = json!({"a": "</script><!-- x", "b": [1, "<"]});
        let embedded = embedded_json(&document);
        assert!(!embedded.contains('<'), "{embedded}");
        let back: serde_json::Value = serde_json::from_str(&embedded).expect("valid JSON");
        assert_eq!(back, document);
    }

    #[test]
    fn the_page_holds_the_document_once_and_loads_nothing_from_elsewhere() {
        let document = json!({"options": {"concurrentBackups": 1}, "x": "</script>"});
        let page = report_page(&document);
        assert_eq!(page.matches("id=\"data\"").count(), 1);
        assert_eq!(page.matches("</script>").count(), 2, "data and script only");
        assert!(!page.contains(" src="), "no external script or image");
        assert!(!page.contains("<link"), "no external style sheet or font");
        assert!(!page.contains("@import"), "no imported style sheet");
        assert!(!page.contains("url("), "no fetched resource in the style");
    }

    #[test]
    fn every_rule_link_points_at_a_behaviour_heading() {
        let page = report_page(&json!({}));
        for href in page.split("href=\"").skip(1) {
            let href = &href[..href.find('"').unwrap_or(0)];
            assert!(
                href.contains("/blob/main/docs/behaviour/") && href.contains(".md#"),
                "{href}"
            );
        }
    }

    #[test]
    fn escape_covers_markup_characters() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
