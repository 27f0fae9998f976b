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
