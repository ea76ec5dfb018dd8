/* tensorview viewer, part 9: one viewer (state, actions, redraws).
 *
 * ``tensorview.mount(host, data, config)`` builds a viewer in ``host`` for the compact
 * graph ``data``; ``config`` holds the user's view options (``options``), the flow
 * direction (``graph_dir``), the drawing's name and colours.  The viewer keeps what the
 * user opened; every change recomputes the view (view.js) and lays out only what is
 * drawn (layout.js).  Its root element carries ``data-state="ready"`` after each drawing
 * (``busy`` while laying out) and ``data-nodes``, the number of drawn nodes.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var V = TV.view, MODULE = TV.MODULE, TENSOR = TV.TENSOR;
  // a view with more drawn nodes waits for the user to ask for its (slow, minutes) layout
  var LAYOUT_LIMIT = 1500;

  function h(tag, attrs, parent, content) {
    var e = document.createElement(tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
    if (content !== undefined) e.textContent = content;
    if (parent) parent.appendChild(e);
    return e;
  }

  // a promise resolved in a later task: long work is cut into tasks the page can answer between
  function later() {
    return new Promise(function (resolve) { setTimeout(resolve, 0); });
  }

  /** Whether the page around ``el`` is dark: JupyterLab's theme attribute, VS Code's body
   * class, else the system's ``prefers-color-scheme``. */
  function isDark() {
    var b = document.body;
    if (b) {
      var jp = b.getAttribute("data-jp-theme-light");
      if (jp === "false") return true;
      if (jp === "true") return false;
      if (b.classList.contains("vscode-dark") || b.classList.contains("vscode-high-contrast") && !b.classList.contains("vscode-high-contrast-light")) return true;
      if (b.classList.contains("vscode-light") || b.classList.contains("vscode-high-contrast-light")) return false;
    }
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  /** Keep ``root``'s ``tv-dark`` class in step with the page's theme while it is in the page. */
  function followTheme(root) {
    var apply = function () {
      if (!root.isConnected && observer) return stop();
      root.classList.toggle("tv-dark", isDark());
    };
    var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
    var observer = window.MutationObserver ? new MutationObserver(apply) : null;
    function stop() {
      if (observer) observer.disconnect();
      if (media && media.removeEventListener) media.removeEventListener("change", apply);
    }
    if (observer && document.body) observer.observe(document.body, { attributes: true, attributeFilter: ["class", "data-jp-theme-light"] });
    if (media && media.addEventListener) media.addEventListener("change", apply);
    apply();
  }

  function Viewer(host, data, config) {
    config = config || {};
    var opts = Object.assign(
      { depth: 3, hide_inner_tensors: true, hide_module_functions: true, roll: false, show_shapes: true, show_params: false, fold: "auto" },
      config.options || {}
    );
    this.g = new TV.Graph(data);
    this.config = config;
    this.dir = config.graph_dir || "TB";
    // open_folds: every fold drawn opened on this repeat (null: closed boxes)
    var repeat = opts.open_folds === true ? 0 : opts.open_folds === false || opts.open_folds == null ? null : opts.open_folds;
    this.state = { opts: opts, open: new Map(), foldAt: new Map(), fold: "none", repeat: repeat, group: true, ungroup: new Set() };
    this.state.fold = this.initialFold = V.initialFold(this.g, this.state);
    this.selected = -1;
    this.hits = [];
    this.hitAt = -1;
    this.view = null;
    this.pos = null;
    this.layoutMs = 0;
    this._running = null; // the layout under way (a promise)
    this._next = null; // the redraw asked for while one runs
    this._build(host);
    TV.active = this;
    var self = this;
    this.ready = later().then(function () { return self.refresh(null); });
  }

  Viewer.prototype._build = function (host) {
    var self = this, root = (this.root = h("div", { class: "tv-viewer", "data-state": "busy", tabindex: "-1", role: "region", "aria-label": "tensorview viewer: " + (this.config.name || "model") }, host));
    followTheme(root);
    var colors = this.config.colors || {};
    Object.keys(colors).forEach(function (k) {
      var c = String(colors[k]);
      // a styler's colour, used only where the browser parses it as one (never as markup)
      if (/^[a-z]+$/.test(k) && window.CSS && CSS.supports("color", c)) root.style.setProperty("--tv-" + k, c);
    });
    var bar = h("div", { class: "tv-toolbar" }, root);
    h("span", { class: "tv-name" }, bar, this.config.name || "model");
    this.searchBox = h("input", { class: "tv-search", type: "search", placeholder: "Search path, class or op  ( / )", spellcheck: "false", "aria-label": "Search module paths, classes and ops" }, bar);
    this.searchCount = h("span", { class: "tv-search-count" }, bar);
    var buttons = [["fit", "Fit", "Fit to screen (f)"], ["in", "+", "Zoom in"], ["out", "−", "Zoom out"], ["svg", "SVG", "Export the current view as SVG"]];
    buttons.forEach(function (b) { h("button", { type: "button", "data-action": b[0], title: b[2], "aria-label": b[2] }, bar, b[1]); });
    this.toggles = {};
    [["fold", "fold repeats"], ["tensors", "inner tensors"], ["params", "parameters"], ["shapes", "shapes"]].forEach(function (t) {
      var label = h("label", { class: "tv-toggle" }, bar);
      self.toggles[t[0]] = h("input", { type: "checkbox", "data-toggle-option": t[0] }, label);
      label.appendChild(document.createTextNode(" " + t[1]));
    });
    if (this.g.error) h("span", { class: "tv-error", title: this.g.error }, bar, "forward raised: " + this.g.error);
    var warned = this.g.warnings;  // where the recording knows the graph may be incomplete
    if (warned.length) h("span", { class: "tv-warning", title: warned.join("\n") }, bar, "⚠ " + (warned.length > 1 ? warned.length + " warnings: " : "") + warned[0]);
    this.status = h("span", { class: "tv-status", role: "status", "aria-live": "polite" }, bar);
    this.cancelButton = h("button", { type: "button", "data-action": "cancel", title: "Stop laying out; the drawing before stays", "aria-label": "Cancel the layout", hidden: "" }, bar, "Cancel");
    this.results = h("div", { class: "tv-results", hidden: "" }, root);
    this.crumbs = h("div", { class: "tv-breadcrumb" }, root);
    var main = h("div", { class: "tv-main" }, root);
    this.stage = h("div", { class: "tv-canvas" }, main);
    this.details = h("div", { class: "tv-details", hidden: "" }, main);
    this.canvas = new TV.Canvas(this.stage);
    this._syncToggles();
    TV.panel.wire(this);
  };

  Viewer.prototype._syncToggles = function () {
    var o = this.state.opts;
    this.toggles.fold.checked = this.state.fold !== "none";
    this.toggles.tensors.checked = !o.hide_inner_tensors;
    this.toggles.params.checked = o.show_params;
    this.toggles.shapes.checked = o.show_shapes;
  };

  Viewer.prototype.setOption = function (name, on) {
    var o = this.state.opts;
    if (name === "fold") this.state.fold = on ? (this.initialFold === "none" ? "all" : this.initialFold) : "none";
    else if (name === "tensors") o.hide_inner_tensors = !on;
    else if (name === "params") o.show_params = on;
    else if (name === "shapes") o.show_shapes = on;
    this._syncToggles();
    return this.refresh(null);
  };

  // -- labels ------------------------------------------------------------------------------
  Viewer.prototype.lines = function (v) { return V.labelLines(this.g, v, this.state.opts.show_shapes); };

  Viewer.prototype.header = function (c) {
    var g = this.g;
    if (c.fold) {
      var f = c.fold, count = Math.floor(f.members.length / f.period);
      var paths = f.members.slice(f.shown * f.period, (f.shown + 1) * f.period).map(function (m) { return g.path(m); });
      return V.foldTitle(g, f.members, f.period) + " — showing " + (f.shown + 1) + "/" + count + ": " + (paths.length > 1 ? V.span(paths) : paths[0]);
    }
    return g.path(c.id) ? g.callName(c.id) + ": " + g.what(c.id) : g.what(c.id);
  };

  // -- drawing -----------------------------------------------------------------------------
  /** Recompute the view and lay it out; ``anchor`` (a node or cluster id) stays where it
   * was on screen, else the drawing is fitted.  Resolves when drawn.  Calls made while
   * a layout runs are merged into one redraw after it. */
  Viewer.prototype.refresh = function (anchor) {
    var self = this;
    if (this._next) {
      this._next.anchor = anchor;
      return this._next.promise;
    }
    var job = { anchor: anchor };
    if (!this._running) return this._run(job);
    this._next = job;
    job.promise = this._running.then(function () {
      self._next = null;
      return self._run(job);
    });
    return job.promise;
  };

  Viewer.prototype._run = function (job) {
    var self = this, anchor = job.anchor;
    Array.prototype.forEach.call(this.stage.querySelectorAll(".tv-too-big"), function (e) { e.remove(); });
    this.root.setAttribute("data-state", "busy");
    var before = anchor !== null && anchor !== undefined ? this._screenOf(anchor) : null;
    var t0 = performance.now();
    var previous = this.view, view = (this.view = V.build(this.g, this.state));
    if (view.nodes.length > LAYOUT_LIMIT && !job.force) {
      this._tooBig(view, anchor);
      this.root.setAttribute("data-state", "ready");
      return Promise.resolve();
    }
    var ticker = this._progress(view.nodes.length, t0);
    var running = later()
      .then(function () {
        // the layout's input is made in a task of its own (the view took this one)
        return TV.layout.layout(view, self.lines.bind(self), self.header.bind(self), self.dir, self);
      })
      .then(function (pos) {
        self.pos = pos;
        self.canvas.draw(view, pos, {
          lines: self.lines.bind(self),
          header: self.header.bind(self),
          nodeClass: self._nodeClass.bind(self),
        });
        self.layoutMs = performance.now() - t0;
        if (self.readyAt === undefined) self.readyAt = performance.now(); // ms since the page started loading
        var after = before ? self._boxOf(anchor) : null;
        if (before && after) self.canvas.keep(after, before);
        else self.canvas.fit();
        TV.panel.afterDraw(self);
        self.emit("drawn", -1);
        self.status.textContent = view.nodes.length + " nodes · " + view.edges.length + " edges · " + Math.round(self.layoutMs) + " ms";
        self.root.setAttribute("data-nodes", String(view.nodes.length));
      })
      .catch(function (err) {
        if (err && err.cancelled) {
          self.view = previous;
          self.status.textContent = "layout cancelled: the drawing is the one before";
          return;
        }
        self.status.textContent = "layout failed: " + (err && err.message ? err.message : String(err));
        if (window.console) console.warn("tensorview: layout failed", err);
      })
      .then(function () {
        clearInterval(ticker);
        self.cancelButton.hidden = true;
        if (self._running === running) self._running = null;
        if (!self._next && !self._running) self.root.setAttribute("data-state", "ready");
      });
    this._running = running;
    return running;
  };

  // "laying out N nodes… 3 s" while the worker runs, with the cancel button shown
  Viewer.prototype._progress = function (count, t0) {
    var self = this, say = function () {
      var s = Math.round((performance.now() - t0) / 1000);
      self.status.textContent = "laying out " + count + " nodes…" + (s >= 1 ? " " + s + " s" : "");
    };
    say();
    this.cancelButton.hidden = false;
    return setInterval(say, 500);
  };

  /** Stop the layout under way (the drawing before it stays); whether one ran. */
  Viewer.prototype.cancel = function () {
    return TV.worker.cancel(this);
  };

  // a view too big to lay out at once: say so, and lay it out only when asked
  Viewer.prototype._tooBig = function (view, anchor) {
    var self = this, note = h("div", { class: "tv-too-big" }, this.stage);
    this.pos = { nodes: new Map(), clusters: new Map(), edges: [], width: 0, height: 0 };
    this.canvas.draw({ nodes: [], edges: [], clusters: [] }, this.pos, {});
    h("p", {}, note, "This view has " + view.nodes.length + " nodes (more than " + LAYOUT_LIMIT + "): laying it out takes about 5 s per 1,000 nodes or more (in the background: Cancel stops it). Close modules or fold repeats, or");
    var go = h("button", { type: "button" }, note, "lay it out anyway");
    go.addEventListener("click", function () {
      note.remove();
      self._run({ anchor: anchor, force: true });
    });
    this.status.textContent = view.nodes.length + " nodes: not laid out";
  };

  Viewer.prototype._nodeClass = function (v) {
    var cls = [];
    if (v.kind === TENSOR && this.g.isParam(v.id)) cls.push("tv-param");
    if (v.isInput || v.isOutput) cls.push("tv-io");
    if (this.g.failed(v.id) && v.kind !== TENSOR) cls.push("tv-failed");
    if (v.kind === MODULE && (v.members || this._openable(v.id))) cls.push("tv-openable");
    return cls.join(" ");
  };

  Viewer.prototype._openable = function (m) { return !(this.g.end[m] === m + 1 || this.g.opaque(m)); };

  // where node or cluster ``id`` is drawn; for a fold's first call, also its fold's box
  Viewer.prototype._boxOf = function (id) {
    if (!this.pos) return null;
    var b = this.pos.nodes.get(id) || this.pos.clusters.get(id);
    if (b || !this.view) return b || null;
    var c = this.view.clusters.find(function (x) { return x.fold && x.fold.head === id; });
    return c ? this.pos.clusters.get(c.id) || null : null;
  };

  Viewer.prototype._screenOf = function (id) {
    var b = this._boxOf(id);
    return b ? this.canvas.screenOf(b) : null;
  };

  // -- actions -----------------------------------------------------------------------------
  /** Open a closed module box (a folded box opens on its first repeat). */
  Viewer.prototype.open = function (id) {
    var v = this.view && this.view.byId.get(id);
    if (v && v.members) return this.openFold(id, 0);
    if (this.g.kind[id] !== MODULE || !this._openable(id)) return Promise.resolve();
    this.state.open.set(id, true);
    this.emit("open", id);
    return this.refresh(id);
  };

  /** Draw the tensors of group node ``id`` one by one. */
  Viewer.prototype.ungroup = function (id) {
    this.state.ungroup.add(id);
    return this.refresh(id);
  };

  // the opened fold whose box is cluster ``id`` (null for an opened call)
  Viewer.prototype._fold = function (id) {
    var c = this.view && this.view.clusters.find(function (x) { return x.id === id; });
    return c && c.fold ? c.fold : null;
  };

  /** Close an opened call or an opened fold (a cluster id). */
  Viewer.prototype.close = function (id) {
    var fold = this._fold(id);
    if (fold) {
      this.state.foldAt.set(fold.head, null);
      return this.refresh(fold.head);
    }
    this.state.open.set(id, false);
    this.emit("close", id);
    return this.refresh(id);
  };

  /** Open module call ``id`` and every call around it (what ``open`` does to a box not
   * drawn yet); resolves when drawn.  No event: pages call it to follow another viewer. */
  Viewer.prototype.openPath = function (id) {
    for (var p = id; p >= 0; p = this.g.parent[p]) if (this.g.kind[p] === MODULE && this._openable(p)) this.state.open.set(p, true);
    return this.refresh(id);
  };

  /** Tell the page what happened: a bubbling ``tensorview:TYPE`` event on the viewer's root
   * with ``detail`` ``{viewer, id}``: ``open`` and ``close`` (a module box, by the user or
   * ``open``/``close``), ``select`` (a node, -1 for none) and ``drawn`` (after each drawing).
   * compare/live.py keeps two viewers in step through them. */
  Viewer.prototype.emit = function (type, id) {
    this.root.dispatchEvent(new CustomEvent("tensorview:" + type, { bubbles: true, detail: { viewer: this, id: id } }));
  };

  /** Draw repeat ``at`` (0-based) of the fold whose first call is ``head``, opened. */
  Viewer.prototype.openFold = function (head, at) {
    this.state.foldAt.set(head, Math.max(0, at | 0));
    return this.refresh(head);
  };

  /** The next (``delta`` 1) or previous (-1) repeat of an opened fold. */
  Viewer.prototype.step = function (head, delta) {
    var c = this.view.clusters.find(function (x) { return x.fold && x.fold.head === head; });
    if (!c) return Promise.resolve();
    var count = Math.floor(c.fold.members.length / c.fold.period);
    return this.openFold(head, Math.max(0, Math.min(count - 1, c.fold.shown + delta)));
  };

  /** Open every call around IR node ``id`` (and the repeats of folds it is in). */
  Viewer.prototype.reveal = function (id) {
    var g = this.g, st = this.state, chain = [];
    for (var p = g.kind[id] === MODULE ? id : g.parent[id]; p >= 0; p = g.parent[p]) chain.unshift(p);
    chain.forEach(function (m, k) {
      var parent = g.parent[m];
      if (st.fold !== "none" && parent >= 0) {
        g.runs(parent).forEach(function (r) {
          var i = r[0].indexOf(m);
          if (i >= 0 && TV.scope.selects(g, st.fold, r[0], r[1])) st.foldAt.set(r[0][0], Math.floor(i / r[1]));
        });
      }
      if (k < chain.length - 1 || g.kind[id] !== MODULE) st.open.set(m, true);
    });
    var self = this;
    return this.refresh(null).then(function () {
      var shown = self.drawnFor(id);
      if (shown >= 0) self.select(shown, true);
    });
  };

  /** The drawn node standing for IR node ``id`` (-1 when none). */
  Viewer.prototype.drawnFor = function (id) {
    var v = this.view;
    if (!v) return -1;
    if (v.byId.has(id)) return id;
    var k = this.g.kind[id] === TENSOR ? v.target[id] : v.vn[id];
    if (v.groupOf.has(k)) k = v.groupOf.get(k);
    return k >= 0 && v.byId.has(k) ? k : -1;
  };

  Viewer.prototype.select = function (id, center) { TV.panel.select(this, id, center); };

  /** What the tests and scripts read: the drawn node ids and edges. */
  Viewer.prototype.snapshot = function () {
    var v = this.view;
    return {
      nodes: v.nodes.map(function (n) { return [n.id, n.calls, n.members ? n.members.slice() : [], n.isInput, n.isOutput]; }),
      edges: v.edges.map(function (e) { return [e.src, e.dst, e.count]; }),
      clusters: v.clusters.map(function (c) { return [c.id, c.parent]; }),
      folded: v.folded,
    };
  };

  /** The viewer's style sheet, once per document (an output in an iframe has its own). */
  TV.addStyle = function (host) {
    var doc = host.ownerDocument;
    if (doc.querySelector("style[data-tensorview]")) return;
    var style = doc.createElement("style");
    style.setAttribute("data-tensorview", "");
    style.textContent = TV.cssText;
    (doc.head || doc.documentElement).appendChild(style);
  };

  TV.isDark = isDark;
  TV.Viewer = Viewer;
  TV.viewers = TV.viewers || [];
  TV.mount = function (host, data, config) {
    // viewers whose output left the page (a re-run cell) are let go
    TV.viewers = TV.viewers.filter(function (v) { return v.root.isConnected; });
    var viewer = new Viewer(host, data, config);
    TV.viewers.push(viewer);
    TV.pictures.watch(host.ownerDocument); // wide pictures of the page: a click shows the full size
    return viewer;
  };
})();
