/* tensorview viewer, part 6: drawing a laid-out view as SVG, with pan and zoom.
 *
 * Every text from the model (paths, classes, ops, names) goes into the page through
 * textContent or setAttribute only, never as markup.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var SVG = "http://www.w3.org/2000/svg";
  var L = TV.layout;
  var KIND_CLASS = ["tv-tensor", "tv-function", "tv-module"];
  var uid = 0;

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
    if (parent) parent.appendChild(e);
    return e;
  }

  function text(parent, x, y, content, cls) {
    var t = el("text", { x: x, y: y, class: cls || "" }, parent);
    t.textContent = content;
    return t;
  }

  /** The SVG canvas of one viewer: ``draw(view, positions, hooks)`` replaces its drawing. */
  function Canvas(host) {
    this.id = "tv" + ++uid;
    this.svg = el("svg", { class: "tv-svg", xmlns: SVG, role: "img" });
    var defs = el("defs", {}, this.svg);
    var marker = el("marker", { id: this.id + "-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "tv-arrow" }, marker);
    this.world = el("g", { class: "tv-world" }, this.svg);
    host.appendChild(this.svg);
    this.scale = 1;
    this.tx = 0;
    this.ty = 0;
    this.width = 0;
    this.height = 0;
    this.items = new Map(); // view node id -> <g>
    this.boxes = new Map(); // cluster id -> <g>
    this.edgeEls = [];
    this._panning(host);
  }

  Canvas.prototype.apply = function () {
    this.world.setAttribute("transform", "translate(" + this.tx + "," + this.ty + ") scale(" + this.scale + ")");
  };

  Canvas.prototype._panning = function (host) {
    var self = this, drag = null;
    host.addEventListener("wheel", function (ev) {
      if (self.wheelZooms && !self.wheelZooms(ev)) return; // let the page scroll
      ev.preventDefault();
      var r = self.svg.getBoundingClientRect();
      self.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * 0.0015));
    }, { passive: false });
    host.addEventListener("pointerdown", function (ev) {
      if (ev.button !== 0) return;
      self.justPanned = false;
      drag = { x: ev.clientX, y: ev.clientY, tx: self.tx, ty: self.ty, moved: false };
    });
    window.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      drag.moved = true;
      self.tx = drag.tx + dx;
      self.ty = drag.ty + dy;
      self.apply();
    });
    window.addEventListener("pointerup", function () {
      if (drag && drag.moved) self.justPanned = true;
      drag = null;
    });
  };

  Canvas.prototype.zoomAt = function (x, y, factor) {
    var s = Math.max(0.02, Math.min(8, this.scale * factor));
    factor = s / this.scale;
    this.tx = x - (x - this.tx) * factor;
    this.ty = y - (y - this.ty) * factor;
    this.scale = s;
    this.apply();
  };

  Canvas.prototype.zoom = function (factor) {
    var r = this.svg.getBoundingClientRect();
    this.zoomAt(r.width / 2, r.height / 2, factor);
  };

  /** Scale and move so the whole drawing fits the canvas (never above 100%). */
  Canvas.prototype.fit = function () {
    var r = this.svg.getBoundingClientRect();
    if (!this.width || !r.width) return;
    var s = Math.min(r.width / (this.width + 40), r.height / (this.height + 40), 1);
    this.scale = s;
    this.tx = (r.width - this.width * s) / 2;
    this.ty = Math.max(10, (r.height - this.height * s) / 2);
    this.apply();
  };

  /** Centre the box ``b`` (page coordinates) in the canvas, zooming in to at least 60%. */
  Canvas.prototype.centerOn = function (b) {
    var r = this.svg.getBoundingClientRect();
    this.scale = Math.max(this.scale, 0.6);
    this.tx = r.width / 2 - (b.x + b.width / 2) * this.scale;
    this.ty = r.height / 2 - (b.y + b.height / 2) * this.scale;
    this.apply();
  };

  /** Where the box ``b`` is on screen (canvas pixels). */
  Canvas.prototype.screenOf = function (b) {
    return { x: this.tx + (b.x + b.width / 2) * this.scale, y: this.ty + (b.y + b.height / 2) * this.scale };
  };

  /** Move so that box ``b`` lands at screen point ``p`` (keeps a clicked box in place). */
  Canvas.prototype.keep = function (b, p) {
    var now = this.screenOf(b);
    this.tx += p.x - now.x;
    this.ty += p.y - now.y;
    this.apply();
  };

  /**
   * Replace the drawing.  ``hooks``: ``lines(v)`` label lines of a node, ``header(c)``
   * header of a cluster, ``nodeClass(v)`` extra CSS classes, ``foldControls(c)`` whether a
   * cluster gets the previous/next repeat buttons.
   */
  Canvas.prototype.draw = function (view, pos, hooks) {
    var world = this.world, self = this;
    while (world.firstChild) world.removeChild(world.firstChild);
    this.items = new Map();
    this.boxes = new Map();
    this.edgeEls = [];
    this.width = pos.width;
    this.height = pos.height;
    var gc = el("g", { class: "tv-clusters" }, world);
    var ge = el("g", { class: "tv-edges" }, world);
    var gn = el("g", { class: "tv-nodes" }, world);
    view.clusters.forEach(function (c) {
      var b = pos.clusters.get(c.id);
      if (!b) return;
      var g = el("g", { class: "tv-cluster" + (c.fold ? " tv-fold-box" : ""), "data-cluster": c.id, transform: "translate(" + b.x + "," + b.y + ")" }, gc);
      el("rect", { width: b.width, height: b.height, rx: 6, class: "tv-cluster-rect" }, g);
      var title = hooks.header(c);
      var head = el("g", { class: "tv-cluster-head", "data-toggle": c.id, role: "button", tabindex: 0, "aria-label": "Close " + title }, g);
      el("rect", { width: b.width, height: L.HEADER - 4, class: "tv-cluster-hit" }, head);
      text(head, 8, 17, "▾ " + L.cut(title), "tv-cluster-title");
      if (c.fold) {
        var prev = el("g", { class: "tv-step", "data-step": -1, "data-fold": c.fold.head, role: "button", tabindex: 0, "aria-label": "Previous repeat", transform: "translate(" + (b.width - 44) + ",3)" }, g);
        el("rect", { width: 18, height: 18, rx: 3 }, prev);
        text(prev, 5, 14, "◀");
        var next = el("g", { class: "tv-step", "data-step": 1, "data-fold": c.fold.head, role: "button", tabindex: 0, "aria-label": "Next repeat", transform: "translate(" + (b.width - 22) + ",3)" }, g);
        el("rect", { width: 18, height: 18, rx: 3 }, next);
        text(next, 5, 14, "▶");
      }
      self.boxes.set(c.id, g);
    });
    view.edges.forEach(function (e, k) {
      var p = pos.edges[k];
      if (!p || !p.points.length) return;
      var d = "M" + p.points.map(function (q) { return q.x + "," + q.y; }).join(" L");
      var path = el("path", { d: d, class: "tv-edge", "marker-end": "url(#" + self.id + "-arrow)", "data-src": e.src, "data-dst": e.dst }, ge);
      self.edgeEls.push(path);
      if (p.label) text(ge, p.label.x + 2, p.label.y + 12, p.label.text, "tv-edge-label");
    });
    view.nodes.forEach(function (v) {
      var b = pos.nodes.get(v.id);
      if (!b) return;
      var cls = "tv-node " + KIND_CLASS[v.kind] + " " + hooks.nodeClass(v), lines = hooks.lines(v);
      // every node has a name and takes the focus (Tab); Enter opens what a click opens
      var g = el("g", { class: cls, "data-id": v.id, role: "button", tabindex: 0, "aria-label": lines.join(", "), transform: "translate(" + b.x + "," + b.y + ")" }, gn);
      el("rect", { width: b.width, height: b.height, rx: v.kind === TV.FUNCTION ? 8 : 2, class: "tv-node-rect" }, g);
      if (v.members || v.calls > 1) el("rect", { x: 3, y: 3, width: b.width - 6, height: b.height - 6, rx: 2, class: "tv-node-inner" }, g);
      lines.forEach(function (line, k) {
        text(g, L.PAD_X, L.PAD_Y + 12 + k * L.LINE, L.cut(line), k === 0 ? "tv-node-title" : "tv-node-sub");
      });
      self.items.set(v.id, g);
    });
  };

  TV.Canvas = Canvas;
  TV.svgEl = el;
})();
