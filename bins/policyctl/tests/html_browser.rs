//! `report -o html` in a real browser: Debian's `chromium`, driven by
//! `playwright-core` from `tests/browser/` (`check.mjs`). The page of the
//! bundled example is checked view by view against the `-o json` document
//! (no console error, no request but the page, the numbers of each view
//! read from the DOM, switching views and expanding by keyboard and click,
//! layout in light and dark schemes). The size and load time of a large
//! page are a benchmark (`cargo bench -p policyctl --bench html_page`).
//!
//! Needs `chromium` and `npm ci --prefix bins/policyctl/tests/browser`
//! (`bash .ci/browser-deps.sh` installs both); without them the tests fail
//! and say so.

mod browser_support;

use browser_support::{node, policyctl, require_browser, scratch};

#[test]
fn the_example_page_shows_the_json_numbers_in_every_view_without_errors_or_requests() {
    require_browser();
    let dir = scratch("example");
    let page = dir.join("report.html");
    let json = dir.join("report.json");
    policyctl(&["report", "-o", "html"], &page);
    policyctl(&["report", "-o", "json"], &json);
    let out = node(&[
        "check",
        page.to_str().expect("UTF-8 path"),
        json.to_str().expect("UTF-8 path"),
    ]);
    assert!(out.contains("ok: the page passed every check"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the `-o html` page and the `-o json` document of `args` and
/// checks the page against it (`check.mjs command`).
fn check_command_page(name: &str, args: &[&str]) -> String {
    require_browser();
    let dir = scratch(&format!("{}-{name}", args[0]));
    let page = dir.join("page.html");
    let json = dir.join("page.json");
    policyctl(&[args, &["-o", "html"]].concat(), &page);
    policyctl(&[args, &["-o", "json"]].concat(), &json);
    let out = node(&[
        "command",
        page.to_str().expect("UTF-8 path"),
        json.to_str().expect("UTF-8 path"),
        name,
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn the_schedule_page_of_one_pod_shows_its_node_by_plugin_matrix() {
    let out = check_command_page("web", &["schedule", "--pod", "shop/web-7c9f8d6b5-r9t2x"]);
    assert!(
        out.contains("ok: the schedule page passed every check"),
        "{out}"
    );
}

#[test]
fn the_schedule_page_of_every_unbound_pod_shows_where_each_goes() {
    let out = check_command_page("all", &["schedule", "--all"]);
    assert!(
        out.contains("ok: the schedule page passed every check"),
        "{out}"
    );
}

#[test]
fn the_diagnose_page_shows_every_node_verdict() {
    let out = check_command_page("web", &["diagnose", "--pod", "shop/web-7c9f8d6b5-r9t2x"]);
    assert!(
        out.contains("ok: the diagnose page passed every check"),
        "{out}"
    );
}

#[test]
fn the_capacity_page_shows_the_copies_per_node() {
    let out = check_command_page("web", &["capacity", "--workload", "Deployment/shop/web"]);
    assert!(
        out.contains("ok: the capacity page passed every check"),
        "{out}"
    );
}
