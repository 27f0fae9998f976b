"use strict";
// Draws every view of the page from the embedded `-o json` document
// (#data) alone. Large lists are paged, never emitted whole.
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
  // Which command's document this is: report, schedule, diagnose or capacity.
  var PAGE_KIND = document.body.getAttribute("data-page") || "report";
  var SVGNS = "http://www.w3.org/2000/svg";
  var PAGE = 50;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAll(node, attrs, children);
    return node;
  }
  function svgEl(tag, attrs, children) {
    var node = document.createElementNS(SVGNS, tag);
    setAll(node, attrs, children);
    return node;
  }
  function setAll(node, attrs, children) {
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] !== null && attrs[k] !== undefined) node.setAttribute(k, String(attrs[k]));
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    });
  }
  function keys(o) { return Object.keys(o || {}).sort(); }
  function body(id) { return document.querySelector("#view-" + id + " .body"); }
  function note(text) { return el("p", { "class": "note" }, [text]); }
  function cell(text, attrs) { return el("td", attrs || {}, [text]); }
  // A table in a box that scrolls sideways when the table is wider than
  // the window. A header is text, or [text, title].
  function table(id, headers, rows) {
    return el("div", { "class": "scroll" }, [el("table", id ? { id: id } : {}, [
      el("thead", {}, [el("tr", {}, headers.map(function (h) {
        return Array.isArray(h) ? el("th", { scope: "col", title: h[1] }, [h[0]]) : el("th", { scope: "col" }, [h]);
      }))]),
      el("tbody", {}, rows)
    ])]);
  }

  // A list drawn PAGE items at a time with Previous/Next buttons.
  function paged(container, items, draw, label) {
    var page = 0;
    var holder = el("div", {});
    var status = el("span", { "aria-live": "polite" });
    var prev = el("button", { type: "button" }, ["Previous"]);
    var next = el("button", { type: "button" }, ["Next"]);
    function show() {
      var start = page * PAGE, end = Math.min(items.length, start + PAGE);
      holder.textContent = "";
      holder.appendChild(draw(items.slice(start, end)));
      status.textContent = label + " " + (items.length ? start + 1 : 0) + "–" + end + " of " + items.length;
      prev.disabled = page === 0;
      next.disabled = end >= items.length;
    }
    prev.addEventListener("click", function () { page -= 1; show(); });
    next.addEventListener("click", function () { page += 1; show(); });
    container.appendChild(holder);
    if (items.length > PAGE) container.appendChild(el("div", { "class": "pager" }, [prev, status, next]));
    show();
  }

  // Horizontal bars: rows of {label, values: [n, ...]} stacked in classes
  // b1, b2, b3; `limit` draws a dashed line. `alt` is the text alternative.
  function bars(rows, alt, limit) {
    var width = 640, left = 220, rowH = 22, top = 8;
    var max = Math.max(1, limit || 0);
    rows.forEach(function (r) {
      max = Math.max(max, r.values.reduce(function (a, b) { return a + b; }, 0));
    });
    var scale = (width - left - 150) / max;
    var height = top * 2 + rows.length * rowH + 16;
    var svg = svgEl("svg", { viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": alt }, [
      svgEl("title", {}, [alt])
    ]);
    rows.forEach(function (r, i) {
      var y = top + i * rowH, x = left;
      svg.appendChild(svgEl("text", { x: left - 6, y: y + 15, "text-anchor": "end" }, [r.label]));
      r.values.forEach(function (v, j) {
        if (v > 0) svg.appendChild(svgEl("rect", { x: x, y: y + 3, width: v * scale, height: rowH - 6, "class": "b" + (j + 1) }));
        x += v * scale;
      });
      svg.appendChild(svgEl("text", { x: x + 4, y: y + 15 }, [r.text || r.values.join(" + ")]));
    });
    if (limit) {
      var lx = left + limit * scale;
      svg.appendChild(svgEl("line", { x1: lx, x2: lx, y1: 0, y2: height - 14, "class": "limit" }));
      svg.appendChild(svgEl("text", { x: lx + 3, y: height - 3 }, ["limit " + limit]));
    }
    return svg;
  }

  // ---- summary ----
  (function () {
    if (PAGE_KIND !== "report") {
      var subject = data.pod || (data.source && (data.source.workload || data.source.pod)) ||
        (data.assignments ? keys(data.assignments).length + " unbound pod(s)" : "-");
      document.getElementById("summary").textContent = "policyctl " + PAGE_KIND + " for " + subject +
        (data.kubernetesVersion ? ", as kube-scheduler " + data.kubernetesVersion + " decides" : "") + "." +
        (data.complete === false ? " The input is incomplete: the answer may be wrong (see the JSON's \"incomplete\")." : "");
      return;
    }
    var objects = data.objects || {};
    var parts = keys(objects).filter(function (k) { return objects[k] > 0; }).map(function (k) { return objects[k] + " " + k; });
    var options = data.options || {};
    var text = "Input: " + (parts.join(", ") || "no objects") + ".";
    if (options.concurrentBackups !== undefined) text += " Concurrent backups " + options.concurrentBackups + ", gate mode " + options.sootheMode + ".";
    if (data.complete === false) text += " The input is incomplete: some sections may be wrong (see the JSON's \"incomplete\").";
    document.getElementById("summary").textContent = text;
  })();

  // ---- Hosts ----
  function drawHosts(root) {
    var placement = data.placement;
    if (!placement) { root.appendChild(note("The document has no placement section.")); return; }
    var audit = (data.hostLabels || {}).audit || {};
    var unlabelled = {};
    (audit.unlabelledNodes || []).forEach(function (n) { unlabelled[n] = true; });
    var shared = {};
    (audit.sharedHosts || []).forEach(function (s) { (shared[s.host] = shared[s.host] || []).push(s); });
    var byHost = {};
    keys(placement.nodes).forEach(function (name) {
      var host = placement.nodes[name].host || "(host unknown)";
      (byHost[host] = byHost[host] || []).push(name);
    });
    var hosts = keys(byHost);
    var podsOf = function (h) { return byHost[h].reduce(function (a, n) { return a + placement.nodes[n].pods; }, 0); };
    var nodeCount = keys(placement.nodes).length;
    var sharedCount = (audit.sharedHosts || []).length;
    root.appendChild(el("p", {
      id: "hosts-summary", "data-hosts": hosts.length, "data-nodes": nodeCount,
      "data-unlabelled": (audit.unlabelledNodes || []).length, "data-shared": sharedCount
    }, [hosts.length + " host(s), " + nodeCount + " Node(s), " + (audit.unlabelledNodes || []).length +
      " unlabelled Node(s), " + sharedCount + " shared-host violation(s), " + placement.unboundPods + " unbound pod(s)."]));
    if (audit.noHostInformation) root.appendChild(note(audit.noHostInformation));
    if (sharedCount) {
      root.appendChild(el("h3", {}, ["Shared-host violations"]));
      root.appendChild(el("ul", { id: "hosts-shared" }, audit.sharedHosts.map(function (s) {
        return el("li", { "class": "bad", "data-host": s.host }, [s.host + ": " + s.pods.join(", ") + " (" + s.group + ", " + s.rule + " rule)"]);
      })));
    }
    var top = hosts.slice().sort(function (a, b) { return podsOf(b) - podsOf(a) || (a < b ? -1 : 1); }).slice(0, 20);
    root.appendChild(bars(top.map(function (h) { return { label: h, values: [podsOf(h)] }; }),
      "Pods per physical host" + (hosts.length > 20 ? " (the 20 busiest of " + hosts.length + ")" : "") + ": " +
      top.map(function (h) { return h + " " + podsOf(h); }).join(", ")));
    var cards = el("div", {});
    root.appendChild(cards);
    paged(cards, hosts, function (slice) {
      return el("div", { "class": "cards", id: "hosts-cards" }, slice.map(function (host) {
        var card = el("div", {
          "class": "card" + (shared[host] ? " bad" : ""), "data-host": host,
          "data-nodes": byHost[host].length, "data-pods": podsOf(host)
        }, [el("h3", {}, [host + " — " + byHost[host].length + " Node(s), " + podsOf(host) + " pod(s)"])]);
        if (shared[host]) card.appendChild(el("p", { "class": "bad" }, ["Replicas share this host against a required rule."]));
        var nodeList = el("div", {});
        card.appendChild(nodeList);
        var drawNode = function (name) {
          var node = placement.nodes[name];
          var label = name + (node.zone ? " · " + node.zone : "") + " · " + node.pods + " pod(s)" + (unlabelled[name] ? " · unlabelled" : "");
          var button = el("button", {
            type: "button", "class": "node" + (unlabelled[name] ? " warn" : ""), "data-node": name,
            "data-pods": node.pods, "aria-expanded": "false"
          }, [label]);
          // The workloads are drawn when the Node is first opened.
          var list = el("ul", { "class": "details", hidden: "" });
          button.addEventListener("click", function () {
            var open = button.getAttribute("aria-expanded") === "true";
            if (!open && !list.firstChild) keys(node.workloads).forEach(function (w) {
              list.appendChild(el("li", { "data-workload": w }, [w + ": " + node.workloads[w]]));
            });
            button.setAttribute("aria-expanded", String(!open));
            list.hidden = open;
          });
          nodeList.appendChild(button);
          nodeList.appendChild(list);
        };
        // A host with many Nodes shows PAGE of them until asked for all.
        byHost[host].slice(0, PAGE).forEach(drawNode);
        if (byHost[host].length > PAGE) {
          var more = el("button", { type: "button", "class": "expand more" }, ["Show the other " + (byHost[host].length - PAGE) + " Node(s)"]);
          more.addEventListener("click", function () {
            byHost[host].slice(PAGE).forEach(drawNode);
            more.remove();
          });
          card.appendChild(more);
        }
        return card;
      }));
    }, "hosts");
    var violations = (data.hosts || {}).violations;
    if (violations) {
      root.appendChild(el("h3", {}, ["VM groups over hosts (HostInventory plan)"]));
      root.appendChild(table("hosts-groups", ["group", "VMs beyond one per host"], keys(violations).map(function (g) {
        return el("tr", { "data-group": g }, [cell(g), cell(violations[g], { "class": "n" + (violations[g] ? " bad" : "") })]);
      })));
    }
    var modules = data.clusterModules;
    if (modules && modules.note) root.appendChild(note(modules.note));
    else if (modules) {
      root.appendChild(el("h3", {}, ["Cluster-module spread"]));
      var rows = [];
      keys(modules).forEach(function (cluster) {
        var auditOf = (modules[cluster] || {}).audit || {};
        keys(auditOf).forEach(function (group) {
          var spread = auditOf[group].hosts || {};
          rows.push(el("tr", { "data-module": group }, [cell(cluster), cell(group),
            cell(keys(spread).map(function (h) { return h + " ×" + spread[h].length; }).join(", ")),
            cell(auditOf[group].violations, { "class": "n" + (auditOf[group].violations ? " bad" : "") })]));
        });
      });
      root.appendChild(table("hosts-modules", ["VSphereCluster", "group", "VMs per host", "violations"], rows));
    }
  }

  // ---- Data movers ----
  function drawMovers(root) {
    var movers = data.dataMovers, concurrency = data.concurrency;
    if (!movers) { root.appendChild(note("Skipped: the node-agent configuration does not load (see the config section).")); return; }
    var loads = keys(movers).filter(function (k) { return k !== "notes"; });
    var nodes = keys((concurrency || {}).nodes);
    var classes = {}, reachable = {};
    loads.forEach(function (name) {
      var load = movers[name];
      var cls = load.storageClass || "(none)";
      var entry = classes[cls] = classes[cls] || { loads: [], nodes: {} };
      entry.loads.push(name);
      (load.schedulableNodes || []).forEach(function (n) { entry.nodes[n] = true; reachable[n] = true; });
    });
    var classNames = keys(classes);
    if (!loads.length) root.appendChild(note("No DataUpload or DataDownload is waiting for a data-mover pod."));
    root.appendChild(el("p", { id: "movers-summary", "data-loads": loads.length, "data-classes": classNames.length,
      "data-global": concurrency ? concurrency.global : "" },
      [loads.length + " pending load(s) over " + classNames.length + " storage class(es); global concurrency " + (concurrency ? concurrency.global : "-") + "."]));
    (movers.notes || []).forEach(function (n) { root.appendChild(note(n)); });
    if (classNames.length) root.appendChild(bars(classNames.map(function (c) {
      var may = keys(classes[c].nodes).length;
      return { label: c, values: [may, nodes.length - may], text: may + " of " + nodes.length + " Nodes" };
    }), "Nodes a data mover may use per storage class, of " + nodes.length + ": " + classNames.map(function (c) {
      return c + " " + keys(classes[c].nodes).length;
    }).join(", ")));
    var matrixHolder = el("div", {});
    root.appendChild(el("h3", {}, ["Node × storage class"]));
    root.appendChild(matrixHolder);
    paged(matrixHolder, nodes, function (slice) {
      return table("movers-matrix", ["Node", "concurrency"].concat(classNames), slice.map(function (n) {
        return el("tr", { "data-node": n }, [el("th", { scope: "row" }, [n]),
          cell(concurrency.nodes[n], { "class": "n conc" })].concat(classNames.map(function (c) {
          var ok = !!classes[c].nodes[n];
          return cell(ok ? "✓ may run" : "—", { "class": ok ? "ok" : "", "data-class": c, "data-ok": ok });
        })));
      }));
    }, "nodes");
    var unreachable = nodes.filter(function (n) { return !reachable[n]; });
    root.appendChild(el("h3", {}, ["Nodes no pending load can reach (" + unreachable.length + ")"]));
    root.appendChild(el("p", { id: "movers-unreachable", "data-count": unreachable.length }, [unreachable.join(", ") || "none"]));
    root.appendChild(el("h3", {}, ["Pending loads"]));
    var loadHolder = el("div", {});
    root.appendChild(loadHolder);
    paged(loadHolder, loads, function (slice) {
      return table("movers-loads", ["load", "phase", "PVC", "storage class", "entry", "Nodes", "why none"], slice.map(function (name) {
        var l = movers[name];
        var nodesText = l.schedulableNodes === null ? (l.note || "-") : (l.schedulableNodes.length ? l.schedulableNodes.join(", ") : "none");
        return el("tr", { "data-load": name }, [cell(name), cell(l.phase), cell(l.pvc || "-"), cell(l.storageClass || "-"),
          cell(l.selectedLoadAffinity === null || l.selectedLoadAffinity === undefined ? "none" : "loadAffinity[" + l.selectedLoadAffinity + "]"),
          cell(nodesText, { "class": l.schedulableNodes && !l.schedulableNodes.length ? "bad" : "" }),
          cell(l.error || l.cause || "")]);
      }));
    }, "loads");
  }

  // ---- Backup queue ----
  function drawQueue(root) {
    var q = data.queue;
    if (!q) { root.appendChild(note("The document has no queue section.")); return; }
    var slots = (data.options || {}).concurrentBackups || 1;
    var started = q.started || [], waiting = q.waiting || {};
    var queued = keys(q.backups).filter(function (b) { return q.backups[b].queuePosition > 0; })
      .sort(function (a, b) { return q.backups[a].queuePosition - q.backups[b].queuePosition; });
    var drainRounds = q.drain ? q.drain.rounds : 0;
    root.appendChild(el("p", { id: "queue-summary", "data-started": started.length, "data-waiting": keys(waiting).length,
      "data-slots": slots, "data-writes": q.writes, "data-rounds": drainRounds },
      [started.length + " started now, " + keys(waiting).length + " waiting, " + slots + " concurrent slot(s), " + q.writes + " status write(s); the queue drains in " + drainRounds + " round(s)."]));
    // Timeline of the drain: one column per round, one row per backup (in
    // the order they run); a dark bar in the round it runs, light bars in
    // the rounds it waits.
    var d = q.drain;
    if (d && d.order && d.order.length) {
      var shown = d.order.slice(0, PAGE);
      var rounds = Math.max(1, d.rounds);
      var width = 640, left = 220, rowH = 22, stepW = (width - left - 10) / rounds, height = 30 + shown.length * rowH;
      var byRound = [];
      d.order.forEach(function (b) { var r = d.backups[b].start; (byRound[r] = byRound[r] || []).push(b); });
      var alt = "Drain over " + d.rounds + " round(s)" + (shown.length < d.order.length ? " (the first " + shown.length + " of " + d.order.length + " backups drawn)" : "") + ": " +
        byRound.map(function (names, r) { return "round " + r + " runs " + names.join(", "); }).join("; ");
      var svg = svgEl("svg", { id: "queue-timeline", viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": alt }, [svgEl("title", {}, [alt])]);
      var every = Math.max(1, Math.ceil(rounds / 20));
      for (var s = 0; s < rounds; s += 1) {
        if (s % every === 0) svg.appendChild(svgEl("text", { x: left + s * stepW + 3, y: 12 }, [s === 0 ? "round 0" : String(s)]));
        svg.appendChild(svgEl("line", { x1: left + s * stepW, x2: left + s * stepW, y1: 16, y2: height, "class": "grid" }));
      }
      shown.forEach(function (b, i) {
        var e = d.backups[b], y = 18 + i * rowH;
        svg.appendChild(svgEl("text", { x: left - 6, y: y + 15, "text-anchor": "end" }, [b]));
        e.waits.forEach(function (w) {
          svg.appendChild(svgEl("rect", { x: left + w.from * stepW + 1, y: y + 6, width: (w.to - w.from + 1) * stepW - 2, height: rowH - 12, "class": "b2 wait", "data-kind": w.kind },
            [svgEl("title", {}, ["rounds " + w.from + "–" + w.to + ": " + w.reason])]));
        });
        svg.appendChild(svgEl("rect", { x: left + e.start * stepW + 1, y: y + 3, width: Math.max(2, stepW - 2), height: rowH - 6, "class": "b1 run", "data-backup": b, "data-start": e.start },
          [svgEl("title", {}, [b + " runs in round " + e.start])]));
      });
      root.appendChild(svg);
    }
    function waited(b) {
      var e = d && d.backups[b];
      if (!e || !e.waits.length) return e ? "-" : "";
      var parts = e.waits.map(function (w) {
        var when = w.from === w.to ? "round " + w.from : "rounds " + w.from + "–" + w.to;
        return when + ": " + (w.kind === "concurrencyLimit" ? "concurrency limit" : "namespace overlap with " + w.blocker);
      });
      if (e.waitsOmitted) parts.splice(parts.length - 1, 0, "… " + e.waitsOmitted + " more (see the JSON's waitsOmitted)");
      return parts.join("; ");
    }
    var holder = el("div", {});
    root.appendChild(holder);
    var all = started.concat(queued).concat(keys(q.backups).filter(function (b) {
      return started.indexOf(b) < 0 && queued.indexOf(b) < 0;
    }));
    paged(holder, all, function (slice) {
      return table("queue-table", ["backup", "phase", "position", "why it waits", ["runs in round", "the round of the drain it runs in"], "waited for"], slice.map(function (b) {
        var entry = q.backups[b];
        var e = d && d.backups[b];
        return el("tr", { "data-backup": b }, [cell(b), cell(entry.phase),
          cell(entry.queuePosition || "-", { "class": "n pos" }),
          cell(started.indexOf(b) >= 0 ? "starts now" : (waiting[b] || ""), { "class": "why" }),
          cell(e ? e.start : "-", { "class": "n round" }), cell(waited(b), { "class": "waited" })]);
      }));
    }, "backups");
  }

  // ---- Prepare-queue gate ----
  function drawGate(root) {
    var s = data.soothe;
    if (!s) { root.appendChild(note("Skipped: the node-agent configuration does not load.")); return; }
    var admit = s.admit || [], hold = s.hold || [];
    var limit = s.prepareQueueLength || 0;
    root.appendChild(el("p", { id: "gate-summary", "data-in-preparation": s.inPreparation, "data-limit": limit,
      "data-admit": admit.length, "data-hold": hold.length },
      [s.inPreparation + " load(s) in preparation, limit " + (limit || "none") + ": the gate admits " + admit.length +
        " and holds " + hold.length + " (gate mode " + ((data.options || {}).sootheMode || "-") + ")."]));
    if (!limit) root.appendChild(note("No prepare-queue limit: nothing is gated."));
    root.appendChild(bars([
      { label: "in preparation + admitted", values: [s.inPreparation, admit.length], text: s.inPreparation + " preparing + " + admit.length + " admitted" },
      { label: "held back", values: [0, 0, hold.length], text: hold.length + " held" }
    ], "Prepare queue: " + s.inPreparation + " in preparation and " + admit.length + " admitted against a limit of " + limit + "; " + hold.length + " held", limit));
    if (s.backlog) drawBacklog(root, s.backlog);
    var rows = admit.map(function (l) { return { load: l, verdict: "admit" }; })
      .concat(hold.map(function (l) { return { load: l, verdict: "hold" }; }))
      .concat((s.notGatedHere || []).map(function (l) { return { load: typeof l === "string" ? l : JSON.stringify(l), verdict: "not gated here" }; }));
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, rows, function (slice) {
      return table("gate-table", ["load", "verdict"], slice.map(function (r) {
        return el("tr", { "data-load": r.load }, [cell(r.load), cell(r.verdict, { "class": r.verdict === "hold" ? "warn" : "ok" })]);
      }));
    }, "loads");
  }

  // The backlog drained step by step: per step, loads in preparation under
  // Velero's gate (b3) beside the exact gate (b1), against the limit.
  function drawBacklog(root, b) {
    var v = b.velero.steps, x = b.exact.steps;
    var n = Math.max(v.length, x.length);
    // A gate whose backlog is empty has no step any more: "-" (no bar).
    var at = function (steps, i, f) { return i < steps.length ? steps[i][f] : "-"; };
    root.appendChild(el("h3", {}, ["Backlog over time: Velero's gate beside the exact gate"]));
    root.appendChild(el("p", { id: "gate-backlog-summary", "data-velero-peak": b.velero.peak, "data-velero-overshoot": b.velero.overshoot,
      "data-exact-peak": b.exact.peak, "data-exact-overshoot": b.exact.overshoot, "data-node-agents": b.nodeAgents,
      "data-velero-steps": v.length, "data-exact-steps": x.length },
      ["Velero's gate (" + b.nodeAgents + " node-agent(s), " + b.nodeAgentsFrom + ") peaks at " + b.velero.peak + " in preparation, " +
        b.velero.overshoot + " above the limit of " + b.limit + ", and drains in " + v.length + " step(s); the exact gate peaks at " +
        b.exact.peak + " and drains in " + x.length + " step(s)."]));
    var shown = Math.min(n, 60);
    var width = 640, left = 40, top = 10, plotH = 160, bottom = 34;
    var max = Math.max(b.limit, b.velero.peak, b.exact.peak, 1);
    var stepW = (width - left - 10) / shown, barW = Math.max(1, stepW / 2 - 1);
    var y = function (val) { return top + plotH - val * plotH / max; };
    var alt = "Loads in preparation per step (limit " + b.limit + "), Velero's gate / exact gate: " +
      Array.from({ length: shown }, function (_, i) { return "step " + i + ": " + at(v, i, "inPreparation") + " / " + at(x, i, "inPreparation"); }).join("; ") +
      " (-: that gate's backlog is already empty)" +
      (shown < n ? "; and " + (n - shown) + " more step(s)" : "");
    var svg = svgEl("svg", { id: "gate-backlog-chart", viewBox: "0 0 " + width + " " + (top + plotH + bottom), width: width, role: "img", "aria-label": alt }, [svgEl("title", {}, [alt])]);
    svg.appendChild(svgEl("line", { x1: left, x2: width - 10, y1: top + plotH, y2: top + plotH, "class": "grid" }));
    svg.appendChild(svgEl("text", { x: left - 4, y: top + plotH, "text-anchor": "end" }, ["0"]));
    svg.appendChild(svgEl("text", { x: left - 4, y: top + 10, "text-anchor": "end" }, [String(max)]));
    var every = Math.max(1, Math.ceil(shown / 20));
    for (var i = 0; i < shown; i += 1) {
      var x0 = left + i * stepW;
      var vv = at(v, i, "inPreparation"), xv = at(x, i, "inPreparation");
      if (i < v.length) svg.appendChild(svgEl("rect", { x: x0 + 1, y: y(vv), width: barW, height: top + plotH - y(vv), "class": "b3 velero", "data-step": i, "data-value": vv },
        [svgEl("title", {}, ["step " + i + ", Velero's gate: " + vv + " in preparation"])]));
      if (i < x.length) svg.appendChild(svgEl("rect", { x: x0 + 1 + barW, y: y(xv), width: barW, height: top + plotH - y(xv), "class": "b1 exact", "data-step": i, "data-value": xv },
        [svgEl("title", {}, ["step " + i + ", exact gate: " + xv + " in preparation"])]));
      if (i % every === 0) svg.appendChild(svgEl("text", { x: x0 + 2, y: top + plotH + 14 }, [String(i)]));
    }
    svg.appendChild(svgEl("line", { x1: left, x2: width - 10, y1: y(b.limit), y2: y(b.limit), "class": "limit" }));
    svg.appendChild(svgEl("text", { x: width - 12, y: y(b.limit) - 3, "text-anchor": "end" }, ["limit " + b.limit]));
    svg.appendChild(svgEl("rect", { x: left, y: top + plotH + 20, width: 10, height: 10, "class": "b3" }));
    svg.appendChild(svgEl("text", { x: left + 14, y: top + plotH + 30 }, ["Velero's gate"]));
    svg.appendChild(svgEl("rect", { x: left + 120, y: top + plotH + 20, width: 10, height: 10, "class": "b1" }));
    svg.appendChild(svgEl("text", { x: left + 134, y: top + plotH + 30 }, ["exact gate"]));
    root.appendChild(svg);
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, Array.from({ length: n }, function (_, i) { return i; }), function (slice) {
      return table("gate-backlog", ["step", "Velero: in preparation", "Velero: admitted", "exact: in preparation", "exact: admitted", "limit"], slice.map(function (i) {
        var over = i < v.length && v[i].inPreparation > b.limit;
        return el("tr", { "data-step": i }, [cell(i, { "class": "n" }),
          cell(at(v, i, "inPreparation"), { "class": "n velero" + (over ? " bad" : "") }), cell(at(v, i, "admitted"), { "class": "n" }),
          cell(at(x, i, "inPreparation"), { "class": "n exact" }), cell(at(x, i, "admitted"), { "class": "n" }), cell(b.limit, { "class": "n" })]);
      }));
    }, "steps");
  }

  // ---- Scheduling ----
  function drawScheduling(root) {
    if (PAGE_KIND === "diagnose") { drawDiagnosis(root); return; }
    if (PAGE_KIND === "schedule" && data.assignments) { drawAssignments(root); return; }
    var s = PAGE_KIND === "schedule" ? { pendingPods: 1, pods: {} } : data.scheduling;
    if (PAGE_KIND === "schedule") s.pods[data.pod || "the pod"] = data;
    if (!s) { root.appendChild(el("p", { id: "scheduling-summary", "data-pending": 0 }, ["No pod is pending."])); return; }
    var pods = keys(s.pods);
    root.appendChild(el("p", { id: "scheduling-summary", "data-pending": s.pendingPods, "data-shown": pods.length },
      [s.pendingPods + " pending pod(s)" + (pods.length < s.pendingPods ? ", the first " + pods.length + " shown" : "") + "."]));
    pods.forEach(function (pod) {
      var r = s.pods[pod];
      var verdict = r.error ? "error: " + r.error : r.skipped ? "not tried: " + r.skipped.message :
        r.selected ? "chosen Node " + r.selected : (r.summary || "no Node");
      var button = el("button", { type: "button", "class": "expand pod", "data-pod": pod, "aria-expanded": "false" }, [pod + " — " + verdict]);
      var panel = el("div", { hidden: "", "class": "matrix-panel" });
      var drawn = false;
      button.addEventListener("click", function () {
        var open = button.getAttribute("aria-expanded") === "true";
        if (!drawn && !open) { drawMatrix(panel, r); drawn = true; }
        button.setAttribute("aria-expanded", String(!open));
        panel.hidden = open;
      });
      root.appendChild(el("div", {}, [button, panel]));
      // A page for one pod opens its matrix.
      if (PAGE_KIND === "schedule") button.click();
    });
  }
  // `schedule --all`: where each unbound pod goes, in order.
  function drawAssignments(root) {
    var a = data.assignments, why = data.unschedulable || {};
    var pods = keys(a);
    var placed = pods.filter(function (p) { return a[p] !== null; });
    root.appendChild(el("p", { id: "scheduling-summary", "data-pending": pods.length, "data-placed": placed.length,
      "data-unplaced": pods.length - placed.length },
      [pods.length + " unbound pod(s): " + placed.length + " placed, " + (pods.length - placed.length) + " left unscheduled."]));
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, pods, function (slice) {
      return table("schedule-all", ["pod", "Node", "why not"], slice.map(function (p) {
        return el("tr", { "data-pod": p }, [cell(p), cell(a[p] === null ? "none" : a[p], { "class": "node-cell" + (a[p] === null ? " bad" : "") }),
          cell(why[p] || "")]);
      }));
    }, "pods");
  }
  // `diagnose`: Node by Node, whether the pod fits and why not.
  function drawDiagnosis(root) {
    var nodes = keys(data.nodes);
    var fits = nodes.filter(function (n) { return data.nodes[n].fits; });
    root.appendChild(el("p", { id: "diagnose-summary", "data-nodes": nodes.length, "data-schedulable": (data.schedulable || []).length },
      ["Pod " + data.pod + " (" + (data.phase || "-") + (data.nodeName ? ", on " + data.nodeName : "") + "): " + fits.length + " of " + nodes.length +
        " Node(s) fit" + (fits.length ? ": " + fits.join(", ") : "") + "."]));
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, nodes, function (slice) {
      return table("diagnose-table", ["Node", "fits", "first reason", "every problem"], slice.map(function (n) {
        var e = data.nodes[n];
        return el("tr", { "data-node": n }, [el("th", { scope: "row" }, [n]),
          cell(e.fits ? "yes" : "no", { "class": "fits " + (e.fits ? "ok" : "bad"), "data-fits": e.fits }),
          cell(e.reason || "-", { "class": "reason" }),
          el("td", { "class": "problems", "data-count": (e.problems || []).length }, [el("ul", {}, (e.problems || []).map(function (p) { return el("li", {}, [p]); }))])]);
      }));
    }, "nodes");
  }
  // The score plugins' column headers, as `schedule --pod` prints them.
  var SHORT = {
    imageLocality: "images", interPodAffinity: "pod aff.", nodeAffinity: "node aff.",
    nodeResourcesBalancedAllocation: "balanced", nodeResourcesFit: "least alloc.",
    podTopologySpread: "spread", taintToleration: "taints"
  };
  function drawMatrix(panel, r) {
    if (!r.scores) { panel.appendChild(note("No matrix: " + (r.error || (r.skipped && r.skipped.message) || "-"))); return; }
    var plugins = keys(r.scores);
    var nodes = keys(r.unschedulable).concat(r.feasible || []).sort();
    if (r.summary) panel.appendChild(el("p", { "class": "bad fit-error" }, [r.summary]));
    var headers = plugins.map(function (p) { return [SHORT[p] || p, p + " (normalised score, 0–100)"]; });
    panel.appendChild(table(null, ["Node", "filters"].concat(headers).concat([["total", "weighted total"]]), nodes.map(function (n) {
      var failed = r.unschedulable[n];
      var row = el("tr", { "data-node": n, "class": n === r.selected ? "chosen" : "" }, [
        el("th", { scope: "row" }, [n + (n === r.selected ? " (chosen)" : "")]),
        cell(failed || "passes", { "class": failed ? "bad" : "ok", "data-verdict": failed ? "rejected" : "feasible" })]);
      plugins.forEach(function (p) {
        var sc = r.scores[p];
        var v = sc.skipped || failed ? "-" : sc.normalized[n];
        row.appendChild(cell(v === undefined ? "-" : v, { "class": "n", "data-plugin": p }));
      });
      row.appendChild(cell(r.totals && r.totals[n] !== undefined ? r.totals[n] : "-", { "class": "n total" }));
      return row;
    })));
  }

  // ---- Capacity ----
  // `capacity`: copies of one pod placed until one fits nowhere.
  function drawCopies(root) {
    var nodes = keys(data.nodes);
    var missing = data.nodesMissingTopologyKey || {};
    var from = data.source ? (data.source.workload || data.source.pod) : "-";
    root.appendChild(el("p", { id: "capacity-summary", "data-count": data.count, "data-nodes": nodes.length,
      "data-not-kept-apart": data.copiesOnNodesMissingTopologyKey || 0 },
      [data.count + " more cop" + (data.count === 1 ? "y" : "ies") + " of " + from + " fit" + (data.limitReached ? " (the search stopped at --max " + data.max + ")" : "") +
        ", on " + nodes.length + " Node(s)" + (data.copiesOnNodesMissingTopologyKey ? "; " + data.copiesOnNodesMissingTopologyKey + " of them on Nodes without a topology key (not kept apart)" : "") + "."]));
    if (nodes.length) root.appendChild(bars(nodes.map(function (n) {
      return { label: n, values: missing[n] ? [0, 0, data.nodes[n]] : [data.nodes[n]], text: data.nodes[n] + (missing[n] ? " (not kept apart)" : "") };
    }), "Copies per Node: " + nodes.map(function (n) { return n + " " + data.nodes[n]; }).join(", ")));
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, nodes, function (slice) {
      return table("capacity-nodes", ["Node", "copies", "missing topology key"], slice.map(function (n) {
        return el("tr", { "data-node": n }, [el("th", { scope: "row" }, [n]), cell(data.nodes[n], { "class": "n copies" }),
          cell(missing[n] ? missing[n].join(", ") : "-", { "class": missing[n] ? "warn" : "" })]);
      }));
    }, "nodes");
    root.appendChild(el("p", { id: "capacity-blocker" }, ["The next copy: " + (data.reason || "-")]));
  }

  function drawCapacity(root) {
    if (PAGE_KIND === "capacity") { drawCopies(root); return; }
    var spare = data.spareReplicas;
    var names = keys(spare);
    root.appendChild(el("p", { id: "capacity-summary", "data-workloads": names.length },
      [names.length ? names.length + " workload(s) with required host or zone anti-affinity." : "No Deployment has required host or zone anti-affinity."]));
    if (!names.length) return;
    root.appendChild(bars(names.map(function (w) {
      return { label: w, values: [spare[w].replicas, spare[w].moreReplicasFit] };
    }), "Replicas and spare replicas: " + names.map(function (w) {
      return w + " " + spare[w].replicas + " running, " + spare[w].moreReplicasFit + " more fit";
    }).join("; ")));
    var holder = el("div", {});
    root.appendChild(holder);
    paged(holder, names, function (slice) {
      return table("capacity-table", ["workload", "replicas", "more fit", "where", "not counted", "first blocker"], slice.map(function (w) {
        var e = spare[w];
        var where = keys(e.nodes).map(function (n) { return n + " " + e.nodes[n]; }).join(", ") || "-";
        var nc = e.notCounted || {};
        return el("tr", { "data-workload": w }, [cell(w), cell(e.replicas, { "class": "n" }),
          cell(e.moreReplicasFit + (e.limitReached ? " (search limit)" : ""), { "class": "n spare" }), cell(where),
          cell(nc.copies ? nc.copies + ": " + (nc.reason || "") : "-", { "class": nc.copies ? "warn" : "" }),
          cell(e.reason || "-", { "class": "blocker" })]);
      }));
    }, "workloads");
  }

  var views = { hosts: drawHosts, movers: drawMovers, queue: drawQueue, gate: drawGate, scheduling: drawScheduling, capacity: drawCapacity };
  Object.keys(views).forEach(function (id) { var root = body(id); if (root) views[id](root); });

  // ---- view switcher (tabs, arrow keys move between them) ----
  var tabs = Array.prototype.slice.call(document.querySelectorAll("[role=tab]"));
  function select(tab, focus) {
    tabs.forEach(function (t) {
      var on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    });
    if (focus) tab.focus();
    try { history.replaceState(null, "", "#" + tab.id.replace(/^tab-/, "")); } catch (e) { /* data: URLs have no history */ }
  }
  tabs.forEach(function (tab, i) {
    tab.addEventListener("click", function () { select(tab, false); });
    tab.addEventListener("keydown", function (e) {
      var to = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 : e.key === "Home" ? 0 : e.key === "End" ? tabs.length - 1 : null;
      if (to === null) return;
      e.preventDefault();
      select(tabs[(to + tabs.length) % tabs.length], true);
    });
  });
  var wanted = document.getElementById("tab-" + location.hash.slice(1));
  if (wanted) select(wanted, false);
  document.body.setAttribute("data-ready", "true");
})();
