/* tensorview viewer, part 8: what the user clicks and reads: the events, the details
 * panel, the breadcrumb, selection of a node's producers and consumers, SVG export and
 * the keyboard (search.js has the search).  Model text enters the page through
 * textContent only.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var V = TV.view, S = TV.search, TENSOR = TV.TENSOR, FUNCTION = TV.FUNCTION, MODULE = TV.MODULE;
  var KINDS = S.KINDS, describe = S.describe, search = S.search, jump = S.jump, mark = S.mark;

  var h = S.h; // the one DOM helper (search.js): text only, never HTML

  /** Annotation values as render/labels.fmt_value writes them. */
  function fmtValue(v) {
    if (v === null || v === undefined) return "None";
    if (typeof v === "boolean") return v ? "True" : "False";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : Number(v.toPrecision(4)).toString();
    if (Array.isArray(v)) return v.map(fmtValue).join(", ");
    if (typeof v === "object") return Object.keys(v).map(function (k) { return k + "=" + fmtValue(v[k]); }).join(" ");
    return String(v);
  }

  // -- events ------------------------------------------------------------------------------
  function wire(vw) {
    var root = vw.root, timer = null;
    vw.stage.addEventListener("click", function (ev) {
      TV.active = vw;
      if (vw.canvas.justPanned) {
        vw.canvas.justPanned = false;
        return;
      }
      var t = ev.target.closest("[data-step],[data-toggle],[data-id]");
      if (!t) return;
      if (t.hasAttribute("data-step")) return vw.step(Number(t.getAttribute("data-fold")), Number(t.getAttribute("data-step")));
      if (t.hasAttribute("data-toggle")) return vw.close(Number(t.getAttribute("data-toggle")));
      var id = Number(t.getAttribute("data-id"));
      var v = vw.view.byId.get(id);
      select(vw, id, false);
      if (vw.g.kind[id] === MODULE) vw.open(id);
      else if (v && v.group) vw.ungroup(id);
    });
    // the keyboard: Enter or Space on a focused node, header or repeat button acts as a click
    vw.stage.addEventListener("keydown", function (ev) {
      if ((ev.key === "Enter" || ev.key === " ") && ev.target.closest && ev.target.closest("[role=button]")) {
        ev.preventDefault();
        ev.target.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      }
    });
    vw.stage.addEventListener("focusin", function (ev) {
      var t = ev.target.closest && ev.target.closest("[data-id]");
      if (t) details(vw, Number(t.getAttribute("data-id")));
    });
    vw.stage.addEventListener("mouseover", function (ev) {
      var t = ev.target.closest("[data-id]");
      if (t) details(vw, Number(t.getAttribute("data-id")));
    });
    vw.stage.addEventListener("mouseleave", function () { details(vw, vw.selected); });
    root.querySelector(".tv-toolbar").addEventListener("click", function (ev) {
      var b = ev.target.closest("[data-action]");
      if (!b) return;
      var a = b.getAttribute("data-action");
      if (a === "fit") vw.canvas.fit();
      else if (a === "in") vw.canvas.zoom(1.25);
      else if (a === "out") vw.canvas.zoom(0.8);
      else if (a === "svg") download(vw);
      else if (a === "cancel") vw.cancel();
    });
    root.querySelector(".tv-toolbar").addEventListener("change", function (ev) {
      var name = ev.target.getAttribute("data-toggle-option");
      if (name) vw.setOption(name, ev.target.checked);
    });
    vw.searchBox.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { search(vw, vw.searchBox.value); }, 120);
    });
    vw.searchBox.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") {
        clearTimeout(timer);
        if (vw.query !== vw.searchBox.value) search(vw, vw.searchBox.value);
        jump(vw, ev.shiftKey ? -1 : 1);
      } else if (ev.key === "Escape") {
        vw.searchBox.value = "";
        search(vw, "");
        vw.searchBox.blur();
      }
    });
    vw.results.addEventListener("click", function (ev) {
      var r = ev.target.closest("[data-result]");
      if (r) {
        vw.results.hidden = true;
        vw.reveal(Number(r.getAttribute("data-result")));
      }
    });
    vw.crumbs.addEventListener("click", function (ev) {
      var c = ev.target.closest("[data-crumb]");
      if (c) select(vw, Number(c.getAttribute("data-crumb")), true);
    });
    root.addEventListener("pointerdown", function (ev) {
      TV.active = vw;
      if (!/^(INPUT|BUTTON|SELECT|TEXTAREA)$/.test(ev.target.tagName)) root.focus({ preventScroll: true });
    });
    // in a notebook the wheel scrolls the notebook until the viewer is clicked (or with Ctrl)
    vw.canvas.wheelZooms = function (ev) {
      return !vw.config.inline || ev.ctrlKey || ev.metaKey || root.contains(document.activeElement);
    };
    if (!TV._keys) {
      TV._keys = true;
      document.addEventListener("keydown", keys);
    }
  }

  function keys(ev) {
    var vw = TV.active;
    if (!vw || !document.body.contains(vw.root)) return;
    var typing = /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName) || ev.target.isContentEditable;
    // a page of its own: the keys are the viewer's; in a notebook only while it has the focus
    var ours = !vw.config.inline || vw.root.contains(ev.target);
    if (!ours) return;
    if (ev.key === "/" && !typing) {
      ev.preventDefault();
      vw.searchBox.focus();
      vw.searchBox.select();
    } else if (ev.key === "Escape") {
      vw.results.hidden = true;
      select(vw, -1, false);
    } else if (ev.key === "f" && !typing && vw.root.contains(ev.target)) {
      vw.canvas.fit();
    }
  }

  // -- selection, details, breadcrumb --------------------------------------------------------
  function select(vw, id, center) {
    vw.selected = id;
    highlight(vw);
    details(vw, id, true);
    crumbs(vw, id);
    vw.emit("select", id);
    if (center && id >= 0) {
      var b = vw.pos && (vw.pos.nodes.get(id) || vw.pos.clusters.get(id));
      if (b) vw.canvas.centerOn(b);
    }
  }

  // the selected node, its producers (edges into it) and consumers (edges out of it)
  function highlight(vw) {
    var c = vw.canvas, id = vw.selected;
    vw.root.querySelectorAll(".tv-selected,.tv-producer,.tv-consumer,.tv-edge-in,.tv-edge-out").forEach(function (e) {
      e.classList.remove("tv-selected", "tv-producer", "tv-consumer", "tv-edge-in", "tv-edge-out");
    });
    if (id < 0) return;
    var el = c.items.get(id) || c.boxes.get(id);
    if (!el) return;
    el.classList.add("tv-selected");
    c.edgeEls.forEach(function (p) {
      var s = Number(p.getAttribute("data-src")), d = Number(p.getAttribute("data-dst"));
      if (d === id && c.items.get(s)) {
        p.classList.add("tv-edge-in");
        c.items.get(s).classList.add("tv-producer");
      }
      if (s === id && c.items.get(d)) {
        p.classList.add("tv-edge-out");
        c.items.get(d).classList.add("tv-consumer");
      }
    });
  }

  function row(dl, key, value) {
    if (value === null || value === undefined || value === "") return;
    h("dt", "", dl, key);
    h("dd", "", dl, String(value));
  }

  // the details panel of node ``id`` (kept as it is when it shows ``id`` already, unless
  // ``redraw``: a hover that leaves must not reset what the user typed into it)
  function details(vw, id, redraw) {
    var d = vw.details, g = vw.g;
    if (!redraw && vw.detailsOf === id) return;
    vw.detailsOf = id;
    while (d.firstChild) d.removeChild(d.firstChild);
    if (id < 0 || id >= g.n) {
      d.hidden = true;
      return;
    }
    d.hidden = false;
    var close = h("button", "tv-details-close", d, "×");
    close.type = "button";
    close.title = "Close (Esc)";
    close.addEventListener("click", function () { select(vw, -1, false); });
    var v = vw.view && vw.view.byId.get(id);
    var k = g.kind[id];
    h("div", "tv-details-title", d, v ? vw.lines(v)[0] : describe(g, id));
    var dl = h("dl", "", d);
    row(dl, "kind", KINDS[k] === "op" ? "function" : KINDS[k]);
    row(dl, "name", g.name(id));
    row(dl, "path", g.path(id) || "(root)");
    if (k === MODULE) {
      row(dl, "class", g.what(id));
      row(dl, "class module", g.clsModule(id));
    } else if (k === FUNCTION) row(dl, "op", g.what(id));
    if (k === TENSOR) {
      row(dl, "shape", g.shapeText(id));
      row(dl, "dtype", g.dtype(id));
      row(dl, "device", g.device(id));
      row(dl, "role", g.role(id));
      row(dl, "parameter", g.sourceName(id));
    } else {
      var last = v && v.members ? v.members[v.members.length - 1] : id;
      var ins = g.inputTensors(id), outs = g.outputTensors(last);
      row(dl, "inputs", ins.map(function (t) { return g.tensorText(t); }).join(", ") || "()");
      row(dl, "outputs", outs.map(function (t) { return g.tensorText(t); }).join(", ") || "()");
      var dtypes = new Set(ins.concat(outs).map(function (t) { return g.dtype(t); }));
      row(dl, "dtypes", Array.from(dtypes).sort().join(", "));
    }
    if (v && v.calls > 1) row(dl, "calls", v.calls);
    if (g.failed(id) && k !== TENSOR) row(dl, "failed", "yes");
    g.notesOf(id).forEach(function (note) { row(dl, note[0], fmtValue(note[1])); });
    if (v && v.members) foldChooser(vw, d, v.id, v.members, v.period, 0);
    var fold = vw._fold(id);
    if (fold) foldChooser(vw, d, fold.head, fold.members, fold.period, fold.shown);
    if (v && v.group) {
      row(dl, "group", v.group.length + " tensors (click to draw them one by one)");
      v.group.slice(0, 24).forEach(function (t) { row(dl, g.sourceName(t) || g.name(t), g.tensorText(t)); });
      if (v.group.length > 24) row(dl, "…", v.group.length - 24 + " more");
    }
  }

  // "show repeat [k] of N" for a folded box or an opened fold
  function foldChooser(vw, d, head, members, period, shown) {
    var count = Math.floor(members.length / period) || 1, form = h("div", "tv-fold-chooser", d);
    h("span", "", form, "show repeat ");
    var input = h("input", "", form);
    input.type = "number";
    input.min = "1";
    input.max = String(count);
    input.value = String(shown + 1);
    h("span", "", form, " of " + count + " ");
    var go = h("button", "", form, "open");
    go.type = "button";
    go.addEventListener("click", function () {
      vw.openFold(head, Math.max(1, Math.min(count, Number(input.value) || 1)) - 1);
    });
  }

  function crumbs(vw, id) {
    var c = vw.crumbs, g = vw.g, chain = [];
    while (c.firstChild) c.removeChild(c.firstChild);
    for (var p = id >= 0 && id < g.n ? (g.kind[id] === MODULE ? id : g.parent[id]) : g.root; p >= 0; p = g.parent[p]) chain.unshift(p);
    chain.forEach(function (m, k) {
      if (k) h("span", "tv-crumb-sep", c, "›");
      var b = h("button", "tv-crumb", c, k === 0 ? vw.config.name || g.what(m) : g.path(m));
      b.type = "button";
      b.setAttribute("data-crumb", String(m));
    });
  }

  function afterDraw(vw) {
    if (vw.found && vw.found.length) mark(vw);
    if (vw.selected >= 0 && !vw.canvas.items.get(vw.selected) && !vw.canvas.boxes.get(vw.selected)) {
      vw.selected = vw.drawnFor(vw.selected);
    }
    highlight(vw);
    details(vw, vw.selected, true);
    crumbs(vw, vw.selected);
  }

  // -- export ------------------------------------------------------------------------------
  /** The current view as standalone SVG text (styles inlined, drawing bounds as viewBox). */
  function exportSVG(vw) {
    var svg = vw.canvas.svg.cloneNode(true), w = Math.ceil(vw.canvas.width), hh = Math.ceil(vw.canvas.height);
    svg.setAttribute("viewBox", "0 0 " + w + " " + hh);
    svg.setAttribute("width", String(w));
    svg.setAttribute("height", String(hh));
    svg.querySelector(".tv-world").removeAttribute("transform");
    var cs = getComputedStyle(vw.root), vars = [];
    ["tensor", "function", "module", "parameter", "failed", "text", "line", "edge", "background"].forEach(function (k) {
      vars.push("--tv-" + k + ":" + cs.getPropertyValue("--tv-" + k).trim() + ";");
    });
    var style = document.createElementNS("http://www.w3.org/2000/svg", "style");
    style.textContent = "svg{" + vars.join("") + "font:" + TV.layout.FONT + ";background:var(--tv-background)}\n" + (TV.cssText || "");
    svg.insertBefore(style, svg.firstChild);
    return new XMLSerializer().serializeToString(svg);
  }

  function download(vw) {
    var blob = new Blob([exportSVG(vw)], { type: "image/svg+xml" });
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = (vw.config.name || "model").replace(/[^A-Za-z0-9_.-]+/g, "_") + ".svg";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () {
      URL.revokeObjectURL(a.href);
      a.remove();
    }, 0);
  }

  TV.panel = { wire: wire, afterDraw: afterDraw, select: select, search: search, jump: jump, exportSVG: exportSVG, fmtValue: fmtValue };
})();
