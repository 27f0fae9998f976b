"use strict";
// Draws every view of the page from the embedded `-o json` document
// (#data) alone. Large lists are paged, never emitted whole.
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
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
    root.appendChild(el("p", { id: "queue-summary", "data-started": started.length, "data-waiting": keys(waiting).length,
      "data-slots": slots, "data-writes": q.writes },
      [started.length + " started now, " + keys(waiting).length + " waiting, " + slots + " concurrent slot(s), " + q.writes + " status write(s)."]));
    // Timeline: step 0 is what runs now; step k is queue position k.
    var rows = started.map(function (b) { return { name: b, step: 0, kind: "b1" }; })
      .concat(queued.map(function (b) { return { name: b, step: q.backups[b].queuePosition, kind: "b2" }; }));
    if (rows.length) {
      var steps = 1 + rows.reduce(function (m, r) { return Math.max(m, r.step); }, 0);
      var width = 640, left = 220, rowH = 22, stepW = (width - left - 10) / steps, height = 30 + rows.length * rowH;
      var alt = "Queue order: " + rows.map(function (r) { return r.name + (r.step ? " waits at position " + r.step : " runs now"); }).join("; ");
      var svg = svgEl("svg", { id: "queue-timeline", viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": alt }, [svgEl("title", {}, [alt])]);
      for (var s = 0; s < steps; s += 1) {
        svg.appendChild(svgEl("text", { x: left + s * stepW + 3, y: 12 }, [s === 0 ? "now" : "#" + s]));
        svg.appendChild(svgEl("line", { x1: left + s * stepW, x2: left + s * stepW, y1: 16, y2: height, "class": "grid" }));
      }
      rows.forEach(function (r, i) {
        var y = 18 + i * rowH;
        svg.appendChild(svgEl("text", { x: left - 6, y: y + 15, "text-anchor": "end" }, [r.name]));
        svg.appendChild(svgEl("rect", { x: left + r.step * stepW + 2, y: y + 3, width: stepW - 4, height: rowH - 6, "class": r.kind }));
      });
      root.appendChild(svg);
    }
    var holder = el("div", {});
    root.appendChild(holder);
    var all = started.concat(queued).concat(keys(q.backups).filter(function (b) {
      return started.indexOf(b) < 0 && queued.indexOf(b) < 0;
    }));
    paged(holder, all, function (slice) {
      return table("queue-table", ["backup", "phase", "position", "why it waits"], slice.map(function (b) {
        var entry = q.backups[b];
        return el("tr", { "data-backup": b }, [cell(b), cell(entry.phase),
          cell(entry.queuePosition || "-", { "class": "n pos" }),
          cell(started.indexOf(b) >= 0 ? "starts now" : (waiting[b] || ""), { "class": "why" })]);
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

  // ---- Scheduling ----
  function drawScheduling(root) {
    var s = data.scheduling;
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
    });
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
  function drawCapacity(root) {
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
