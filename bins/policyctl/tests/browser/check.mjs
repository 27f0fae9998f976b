// Drives Debian's chromium (through playwright-core) over a page written by
// `policyctl report -o html`. Run by tests/html_browser.rs; by hand:
//
//   node check.mjs check PAGE.html DOCUMENT.json   the example's page: every check
//   node check.mjs timing PAGE.html                 load time of a (large) page, as JSON
//   node check.mjs screenshots PAGE.html DIR        one PNG per view into DIR
//   node check.mjs command PAGE.html DOCUMENT.json  a page of schedule, diagnose or capacity
//
// Exits 1 with the failed check on standard error.
import { chromium } from "playwright-core";
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const CHROMIUM = process.env.POLICYCTL_CHROMIUM || "/usr/bin/chromium";
const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const VIEWS = ["hosts", "movers", "queue", "gate", "scheduling", "capacity"];
// The bundled example's drain (--concurrent-backups 1), worked out by hand
// from examples/cluster/backups.yaml.
// One slot: one backup per round, in queue order.
// Loads in preparation per step of the example's backlog (limit 4, 3 in
// preparation, 4 waiting): Velero's gate, then the exact gate.
const EXAMPLE_BACKLOG = [[7], [4, 3]];
const EXAMPLE_DRAIN = {
  rounds: 6,
  starts: {
    "velero/payments-adhoc": 0, "velero/pre-upgrade-full": 1, "velero/teams-config": 2,
    "velero/analytics-hourly-0108": 3, "velero/kube-system-etcd": 4, "velero/shop-orders-0109": 5,
  },
};

const [mode, pagePath, third, fourth] = process.argv.slice(2);
const url = pathToFileURL(resolve(pagePath)).href;

async function open(browser, scheme, viewport = { width: 1200, height: 800 }) {
  const context = await browser.newContext({ colorScheme: scheme, viewport });
  const page = await context.newPage();
  const problems = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  const started = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
  const wall = Date.now() - started;
  return { context, page, problems, requests, wall };
}

function keys(o) { return Object.keys(o || {}).sort(); }

async function attr(page, selector, name) {
  return page.$eval(selector, (e, n) => e.getAttribute(n), name);
}

async function showView(page, view) {
  await page.click(`#tab-${view}`);
  assert.equal(await page.isVisible(`#view-${view}`), true, `view ${view} shows after its tab is clicked`);
  for (const other of VIEWS.filter((v) => v !== view)) {
    assert.equal(await page.isVisible(`#view-${other}`), false, `view ${other} is hidden while ${view} shows`);
  }
}

// Layout invariants of the shown view: nothing wider than the window, every
// chart drawn with a size and a text alternative, the tabs above the view.
async function layout(page, view) {
  const facts = await page.evaluate((v) => {
    const panel = document.getElementById(`view-${v}`).getBoundingClientRect();
    const tabs = document.querySelector("[role=tablist]").getBoundingClientRect();
    const charts = Array.from(document.querySelectorAll(`#view-${v} svg`)).map((s) => {
      const r = s.getBoundingClientRect();
      return { w: r.width, h: r.height, alt: s.getAttribute("aria-label") || "", role: s.getAttribute("role") };
    });
    const boxes = Array.from(document.querySelectorAll(`#view-${v} .scroll`)).map((b) => b.getBoundingClientRect().right);
    return { boxes, scroll: document.documentElement.scrollWidth, width: window.innerWidth, panelTop: panel.top, tabsBottom: tabs.bottom, panelH: panel.height, charts };
  }, view);
  assert.ok(facts.scroll <= facts.width, `${view}: page is not wider than the window (${facts.scroll} > ${facts.width})`);
  for (const right of facts.boxes) assert.ok(right <= facts.width, `${view}: a table box ends inside the window (${right})`);
  assert.ok(facts.panelTop >= facts.tabsBottom, `${view}: the view starts below the tabs`);
  assert.ok(facts.panelH > 50, `${view}: the view has content`);
  for (const c of facts.charts) {
    assert.ok(c.w > 100 && c.h > 20, `${view}: chart drawn with a size (${c.w}×${c.h})`);
    assert.equal(c.role, "img", `${view}: chart has role img`);
    assert.ok(c.alt.length > 10, `${view}: chart has a text alternative`);
  }
  return facts;
}

function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((x) => {
    const c = Number(x) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

async function colours(page) {
  return page.evaluate(() => {
    const s = getComputedStyle(document.body);
    return { fg: s.color, bg: s.backgroundColor };
  });
}

async function check(browser, documentPath) {
  const expected = JSON.parse(readFileSync(documentPath, "utf8"));
  const { context, page, problems, requests } = await open(browser, "light");
  // The page carries the `-o json` document itself.
  const embedded = await page.$eval("#data", (e) => JSON.parse(e.textContent));
  assert.deepEqual(embedded, expected, "the embedded document is the -o json document");

  // Hosts.
  await showView(page, "hosts");
  const placement = expected.placement;
  const audit = expected.hostLabels.audit;
  assert.equal(Number(await attr(page, "#hosts-summary", "data-nodes")), keys(placement.nodes).length);
  assert.equal(Number(await attr(page, "#hosts-summary", "data-nodes")), 7, "the example has 7 Nodes");
  assert.equal(Number(await attr(page, "#hosts-summary", "data-unlabelled")), audit.unlabelledNodes.length);
  assert.equal(Number(await attr(page, "#hosts-summary", "data-shared")), 1, "the example has one shared-host violation");
  assert.match(await attr(page, ".card[data-host='esx-04']", "class"), /\bbad\b/, "esx-04 is marked as a shared host");
  assert.match(await attr(page, ".node[data-node='worker-b3']", "class"), /\bwarn\b/, "worker-b3 is marked unlabelled");
  for (const n of keys(placement.nodes)) {
    assert.equal(Number(await attr(page, `.node[data-node='${n}']`, "data-pods")), placement.nodes[n].pods, `pods on ${n}`);
  }
  let perHost = {};
  for (const n of keys(placement.nodes)) {
    const h = placement.nodes[n].host || "(host unknown)";
    perHost[h] = (perHost[h] || 0) + placement.nodes[n].pods;
  }
  for (const h of keys(perHost)) {
    assert.equal(Number(await attr(page, `.card[data-host='${h}']`, "data-pods")), perHost[h], `pods on host ${h}`);
  }
  // Expanding a Node lists its workloads (by click, then by keyboard).
  const node = ".node[data-node='worker-b3']";
  assert.equal(await page.isVisible(`${node} + ul.details`), false);
  await page.click(node);
  assert.equal(await attr(page, node, "aria-expanded"), "true");
  const workloads = await page.$$eval(`${node} + ul.details li`, (ls) => ls.map((l) => l.getAttribute("data-workload")));
  assert.deepEqual(workloads, keys(placement.nodes["worker-b3"].workloads));
  await page.focus(node);
  await page.keyboard.press("Enter");
  assert.equal(await attr(page, node, "aria-expanded"), "false", "Enter closes the Node again");
  await layout(page, "hosts");

  // Data movers.
  await showView(page, "movers");
  const movers = expected.dataMovers;
  const classes = {};
  for (const name of keys(movers).filter((k) => k !== "notes")) {
    const l = movers[name];
    (classes[l.storageClass] = classes[l.storageClass] || new Set());
    for (const n of l.schedulableNodes || []) classes[l.storageClass].add(n);
  }
  for (const n of keys(expected.concurrency.nodes)) {
    assert.equal(await page.$eval(`#movers-matrix tr[data-node='${n}'] td.conc`, (e) => Number(e.textContent)), expected.concurrency.nodes[n], `concurrency of ${n}`);
    for (const c of keys(classes)) {
      const ok = await attr(page, `#movers-matrix tr[data-node='${n}'] td[data-class='${c}']`, "data-ok");
      assert.equal(ok, String(classes[c].has(n)), `${n} × ${c}`);
    }
  }
  assert.equal(await attr(page, "#movers-matrix tr[data-node='worker-a2'] td[data-class='local-nvme']", "data-ok"), "true");
  assert.equal(await attr(page, "#movers-matrix tr[data-node='cp-1'] td[data-class='ceph-rbd-snapshot']", "data-ok"), "false");
  assert.equal(await page.$eval("#movers-unreachable", (e) => e.textContent), "cp-1, win-1, worker-b2");
  await layout(page, "movers");

  // Backup queue.
  await showView(page, "queue");
  const q = expected.queue;
  assert.equal(Number(await attr(page, "#queue-summary", "data-started")), q.started.length);
  assert.equal(Number(await attr(page, "#queue-summary", "data-waiting")), keys(q.waiting).length);
  assert.equal(Number(await attr(page, "#queue-summary", "data-waiting")), 5, "five backups wait in the example");
  for (const b of keys(q.waiting)) {
    assert.equal(await page.$eval(`#queue-table tr[data-backup='${b}'] td.pos`, (e) => Number(e.textContent)), q.backups[b].queuePosition, `position of ${b}`);
    assert.equal(await page.$eval(`#queue-table tr[data-backup='${b}'] td.why`, (e) => e.textContent), q.waiting[b], `why ${b} waits`);
  }
  assert.equal(await page.$eval("#queue-table tr[data-backup='velero/payments-adhoc'] td.why", (e) => e.textContent), "starts now");
  // The drain: rounds, and each backup's round in the table and the timeline.
  const drain = q.drain;
  assert.equal(drain.unit, "round");
  assert.equal(Number(await attr(page, "#queue-summary", "data-rounds")), drain.rounds);
  for (const b of drain.order) {
    assert.equal(await page.$eval(`#queue-table tr[data-backup='${b}'] td.round`, (e) => Number(e.textContent)), drain.backups[b].start, `round of ${b}`);
    assert.equal(Number(await attr(page, `#queue-timeline rect.run[data-backup='${b}']`, "data-start")), drain.backups[b].start, `timeline round of ${b}`);
  }
  assert.equal(await page.$$eval("#queue-timeline rect.wait", (rs) => rs.length),
    drain.order.reduce((n, b) => n + drain.backups[b].waits.length, 0), "one light bar per stretch of waiting");
  assert.deepEqual(EXAMPLE_DRAIN.rounds, drain.rounds, "the example's queue drains in this many rounds");
  for (const [b, start] of Object.entries(EXAMPLE_DRAIN.starts)) assert.equal(drain.backups[b].start, start, `the example: ${b} runs in round ${start}`);
  await layout(page, "queue");

  // Prepare-queue gate.
  await showView(page, "gate");
  const s = expected.soothe;
  assert.equal(Number(await attr(page, "#gate-summary", "data-in-preparation")), s.inPreparation);
  assert.equal(Number(await attr(page, "#gate-summary", "data-limit")), s.prepareQueueLength);
  assert.equal(Number(await attr(page, "#gate-summary", "data-admit")), s.admit.length);
  assert.equal(Number(await attr(page, "#gate-summary", "data-hold")), s.hold.length);
  assert.deepEqual([s.inPreparation, s.prepareQueueLength, s.admit.length, s.hold.length], [3, 4, 1, 3], "the example's gate");
  // The backlog over time: the numbers of the summary, the chart and the table.
  const b = s.backlog;
  assert.equal(b.unit, "step");
  assert.equal(Number(await attr(page, "#gate-backlog-summary", "data-velero-peak")), b.velero.peak);
  assert.equal(Number(await attr(page, "#gate-backlog-summary", "data-velero-overshoot")), b.velero.overshoot);
  assert.equal(Number(await attr(page, "#gate-backlog-summary", "data-exact-peak")), b.exact.peak);
  assert.equal(Number(await attr(page, "#gate-backlog-summary", "data-node-agents")), b.nodeAgents);
  for (const [gate, steps] of [["velero", b.velero.steps], ["exact", b.exact.steps]]) {
    const drawn = await page.$$eval(`#gate-backlog-chart rect.${gate}`, (rs) => rs.map((r) => Number(r.getAttribute("data-value"))));
    assert.deepEqual(drawn, steps.slice(0, 60).map((x) => x.inPreparation), `${gate}: chart bars`);
    const cells = await page.$$eval(`#gate-backlog td.${gate}`, (cs) => cs.map((c) => Number(c.textContent)));
    assert.deepEqual(cells.slice(0, steps.length), steps.map((x) => x.inPreparation), `${gate}: table cells`);
  }
  assert.deepEqual([b.velero.steps.map((x) => x.inPreparation), b.exact.steps.map((x) => x.inPreparation)], EXAMPLE_BACKLOG,
    "the example's backlog: Velero's gate overshoots, the exact gate does not");
  assert.ok(b.exact.peak <= s.prepareQueueLength && b.velero.overshoot > 0);
  await layout(page, "gate");

  // Scheduling: expand a pod's Node × plugin matrix with the keyboard.
  await showView(page, "scheduling");
  const sched = expected.scheduling;
  assert.equal(Number(await attr(page, "#scheduling-summary", "data-pending")), sched.pendingPods);
  const pod = "shop/web-7c9f8d6b5-r9t2x";
  const button = `button.pod[data-pod='${pod}']`;
  await page.focus(button);
  await page.keyboard.press("Enter");
  assert.equal(await attr(page, button, "aria-expanded"), "true", "Enter expands the pod's matrix");
  const rows = await page.$$eval(`${button} + .matrix-panel tr[data-node]`, (rs) => rs.map((r) => ({
    node: r.getAttribute("data-node"), chosen: r.classList.contains("chosen"),
    verdict: r.querySelector("[data-verdict]").getAttribute("data-verdict"),
  })));
  const result = sched.pods[pod];
  assert.equal(rows.length, keys(expected.concurrency.nodes).length, "one row per Node");
  for (const r of rows) {
    assert.equal(r.verdict, result.unschedulable[r.node] ? "rejected" : "feasible", `verdict on ${r.node}`);
    assert.equal(r.chosen, r.node === result.selected);
  }
  assert.equal(result.selected, "worker-b3");
  assert.deepEqual(rows.filter((r) => r.chosen).map((r) => r.node), ["worker-b3"]);
  await layout(page, "scheduling");
  await page.click(button);
  assert.equal(await page.isVisible(`${button} + .matrix-panel`), false, "a click folds the matrix");

  // Capacity.
  await showView(page, "capacity");
  for (const w of keys(expected.spareReplicas)) {
    assert.equal(await page.$eval(`#capacity-table tr[data-workload='${w}'] td.spare`, (e) => parseInt(e.textContent, 10)), expected.spareReplicas[w].moreReplicasFit);
    assert.equal(await page.$eval(`#capacity-table tr[data-workload='${w}'] td.blocker`, (e) => e.textContent), expected.spareReplicas[w].reason || "-");
  }
  await layout(page, "capacity");

  // Tabs by keyboard: arrows move the selection and the focus.
  await page.focus("#tab-capacity");
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.evaluate(() => document.activeElement.id), "tab-hosts", "ArrowRight wraps to the first tab");
  assert.equal(await page.isVisible("#view-hosts"), true);
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.isVisible("#view-movers"), true);

  // Rule links point at behaviour headings.
  const links = await page.$$eval(".rules a", (as) => as.map((a) => a.href));
  assert.ok(links.length >= VIEWS.length);
  for (const l of links) assert.match(l, /\/docs\/behaviour\/[a-z-]+\.md#[a-z0-9-]+$/);

  const light = await colours(page);
  assert.deepEqual(problems, [], "no console error");
  assert.deepEqual(requests, [url], "no request but the page itself");
  await context.close();

  // Dark scheme: dark background, light text, and still no error.
  const dark = await open(browser, "dark");
  const darkColours = await colours(dark.page);
  assert.ok(luminance(light.bg) > 0.8 && luminance(light.fg) < 0.1, `light scheme: ${JSON.stringify(light)}`);
  assert.ok(luminance(darkColours.bg) < 0.05 && luminance(darkColours.fg) > 0.6, `dark scheme: ${JSON.stringify(darkColours)}`);
  for (const v of VIEWS) { await showView(dark.page, v); await layout(dark.page, v); }
  assert.deepEqual(dark.problems, [], "no console error in the dark scheme");
  assert.deepEqual(dark.requests, [url], "no request in the dark scheme");
  await dark.context.close();
  console.log("ok: the page passed every check");
}

// The page of `schedule`, `diagnose` or `capacity` (body[data-page]): one
// view, its numbers read from the DOM against the command's document, no
// console error, no request.
async function command(browser, documentPath, name) {
  const expected = JSON.parse(readFileSync(documentPath, "utf8"));
  const { context, page, problems, requests } = await open(browser, "light");
  const embedded = await page.$eval("#data", (e) => JSON.parse(e.textContent));
  assert.deepEqual(embedded, expected, "the embedded document is the -o json document");
  const kind = await page.$eval("body", (b) => b.getAttribute("data-page"));
  const views = await page.$$eval("[role=tabpanel]", (ps) => ps.map((p) => p.id));
  if (kind === "capacity") {
    assert.deepEqual(views, ["view-capacity"], "capacity has the capacity view only");
    assert.equal(Number(await attr(page, "#capacity-summary", "data-count")), expected.count);
    for (const n of keys(expected.nodes)) {
      assert.equal(await page.$eval(`#capacity-nodes tr[data-node='${n}'] td.copies`, (e) => Number(e.textContent)), expected.nodes[n], `copies on ${n}`);
    }
    assert.equal(await page.$eval("#capacity-blocker", (e) => e.textContent), "The next copy: " + (expected.reason || "-"));
    if (name === "web") assert.deepEqual([expected.count, expected.nodes], [108, { "worker-b3": 108 }], "the example's Deployment shop/web");
    await layout(page, "capacity");
  } else if (kind === "diagnose") {
    assert.deepEqual(views, ["view-scheduling"], "diagnose has the scheduling view only");
    assert.equal(Number(await attr(page, "#diagnose-summary", "data-schedulable")), expected.schedulable.length);
    for (const n of keys(expected.nodes)) {
      const row = `#diagnose-table tr[data-node='${n}']`;
      assert.equal(await attr(page, `${row} td.fits`, "data-fits"), String(expected.nodes[n].fits), `fits on ${n}`);
      assert.equal(Number(await attr(page, `${row} td.problems`, "data-count")), expected.nodes[n].problems.length, `problems on ${n}`);
    }
    if (name === "web") assert.deepEqual(expected.schedulable, ["worker-b3"], "the example's pod fits worker-b3 only");
    await layout(page, "scheduling");
  } else if (kind === "schedule" && expected.assignments) {
    assert.deepEqual(views, ["view-scheduling"], "schedule has the scheduling view only");
    const pods = keys(expected.assignments);
    assert.equal(Number(await attr(page, "#scheduling-summary", "data-pending")), pods.length);
    for (const p of pods) {
      assert.equal(await page.$eval(`#schedule-all tr[data-pod='${p}'] td.node-cell`, (e) => e.textContent), expected.assignments[p] === null ? "none" : expected.assignments[p], `node of ${p}`);
    }
    if (name === "all") assert.equal(expected.assignments["shop/web-7c9f8d6b5-r9t2x"], "worker-b3");
    await layout(page, "scheduling");
  } else if (kind === "schedule") {
    assert.deepEqual(views, ["view-scheduling"], "schedule has the scheduling view only");
    // The one pod's matrix is open.
    const rows = await page.$$eval(`button.pod[data-pod='${expected.pod}'] + .matrix-panel tr[data-node]`, (rs) => rs.map((r) => ({
      node: r.getAttribute("data-node"), chosen: r.classList.contains("chosen"),
      verdict: r.querySelector("[data-verdict]").getAttribute("data-verdict"),
    })));
    const nodes = keys(expected.unschedulable).concat(expected.feasible).sort();
    assert.deepEqual(rows.map((r) => r.node), nodes, "one row per Node");
    for (const r of rows) {
      assert.equal(r.verdict, expected.unschedulable[r.node] ? "rejected" : "feasible", `verdict on ${r.node}`);
      assert.equal(r.chosen, r.node === expected.selected);
    }
    if (name === "web") assert.equal(expected.selected, "worker-b3");
    await layout(page, "scheduling");
  } else {
    throw new Error(`unexpected page ${kind}`);
  }
  assert.deepEqual(problems, [], "no console error");
  assert.deepEqual(requests, [url], "no request but the page itself");
  await context.close();
  console.log(`ok: the ${kind} page passed every check`);
}

async function timing(browser) {
  const runs = [];
  let last;
  for (let i = 0; i < 5; i += 1) {
    last = await open(browser, "light");
    const ready = await last.page.evaluate(() => performance.now());
    const nodes = await last.page.evaluate(() => document.getElementsByTagName("*").length);
    runs.push({ wallMs: last.wall, readyMs: Math.round(ready), elements: nodes });
    assert.deepEqual(last.problems, [], "no console error");
    assert.deepEqual(last.requests, [url], "no request but the page itself");
    await last.context.close();
  }
  console.log(JSON.stringify({ bytes: statSync(pagePath).size, runs }));
}

async function screenshots(browser, dir) {
  for (const scheme of ["light", "dark"]) {
    const { context, page, problems } = await open(browser, scheme, { width: 880, height: 600 });
    for (const v of scheme === "light" ? VIEWS : ["hosts"]) {
      await showView(page, v);
      if (v === "scheduling") await page.click("button.pod[data-pod='shop/web-7c9f8d6b5-r9t2x']");
      if (v === "hosts") await page.click(".node[data-node='worker-b3']");
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: `${dir}/report-${v}${scheme === "dark" ? "-dark" : ""}.png`, type: "png" });
    }
    assert.deepEqual(problems, []);
    await context.close();
  }
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
try {
  if (mode === "check") await check(browser, third);
  else if (mode === "command") await command(browser, third, fourth);
  else if (mode === "timing") await timing(browser);
  else if (mode === "screenshots") await screenshots(browser, third);
  else throw new Error(`unknown mode ${mode}: check, timing or screenshots`);
} catch (e) {
  console.error(e.stack || String(e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
