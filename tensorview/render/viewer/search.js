/* tensorview viewer, part 7: search by module path, class or op, with highlight and jump.
 * Every IR node is searched (also those inside closed boxes); drawn matches are marked
 * ``tv-hit``, the boxes holding hidden ones ``tv-hit-inside``. */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var FUNCTION = TV.FUNCTION, MODULE = TV.MODULE;
  var KINDS = ["tensor", "op", "module"];
  var MAX_RESULTS = 40;

  function h(tag, cls, parent, content) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined) e.textContent = content;
    if (parent) parent.appendChild(e);
    return e;
  }

  /** IR nodes matching ``q``: modules by path or class, ops by op or name, tensors by name. */
  function matches(g, q) {
    var out = [], exact = [];
    for (var i = 0; i < g.n; i++) {
      var k = g.kind[i], hit;
      if (k === MODULE) hit = g.path(i).toLowerCase().indexOf(q) >= 0 || g.what(i).toLowerCase().indexOf(q) >= 0;
      else if (k === FUNCTION) hit = g.what(i).toLowerCase().indexOf(q) >= 0 || g.name(i).toLowerCase().indexOf(q) >= 0;
      else hit = g.name(i).toLowerCase().indexOf(q) >= 0 || (g.sourceName(i) || "").toLowerCase().indexOf(q) >= 0;
      if (!hit) continue;
      if (k === MODULE && g.path(i).toLowerCase() === q) exact.push(i);
      else out.push(i);
    }
    return exact.concat(out);
  }

  function search(vw, text) {
    var q = text.trim().toLowerCase();
    vw.query = text;
    vw.found = q ? matches(vw.g, q) : [];
    vw.hitAt = -1;
    mark(vw);
    listResults(vw, q);
  }

  // highlight drawn matches (tv-hit) and the closed boxes holding matches (tv-hit-inside)
  function mark(vw) {
    var canvas = vw.canvas, direct = [], inside = [], seen = new Set();
    vw.root.querySelectorAll(".tv-hit,.tv-hit-inside").forEach(function (e) { e.classList.remove("tv-hit", "tv-hit-inside"); });
    (vw.found || []).forEach(function (id) {
      var el = canvas.boxes.get(id);
      if (el) {
        el.classList.add("tv-hit");
        if (!seen.has(id)) direct.push(id);
        seen.add(id);
        return;
      }
      var d = vw.drawnFor(id);
      if (d < 0 || seen.has(d) && d !== id) return;
      var item = canvas.items.get(d);
      if (!item) return;
      item.classList.add(d === id ? "tv-hit" : "tv-hit-inside");
      if (!seen.has(d)) (d === id ? direct : inside).push(d);
      seen.add(d);
    });
    vw.hits = direct.concat(inside);
    var n = (vw.found || []).length;
    vw.searchCount.textContent = vw.query && vw.query.trim() ? n + " found · " + direct.length + " drawn · " + inside.length + " boxes hold more" : "";
  }

  function listResults(vw, q) {
    var box = vw.results;
    while (box.firstChild) box.removeChild(box.firstChild);
    if (!q || !vw.found.length) {
      box.hidden = true;
      return;
    }
    var g = vw.g;
    vw.found.slice(0, MAX_RESULTS).forEach(function (id) {
      var row = h("div", "tv-result", box);
      row.setAttribute("data-result", String(id));
      h("span", "tv-result-kind", row, KINDS[g.kind[id]]);
      h("span", "tv-result-text", row, describe(g, id));
    });
    if (vw.found.length > MAX_RESULTS) h("div", "tv-result-more", box, "… " + (vw.found.length - MAX_RESULTS) + " more");
    box.hidden = false;
  }

  function describe(g, id) {
    var k = g.kind[id], where = g.path(id) || "(root)";
    if (k === MODULE) return (g.path(id) ? g.path(id) + ": " : "") + g.what(id);
    if (k === FUNCTION) return g.what(id) + " (" + g.name(id) + ") in " + where;
    return (g.sourceName(id) || g.name(id)) + " " + g.tensorText(id) + " in " + where;
  }

  /** Centre the next (``dir`` 1) or previous (-1) drawn match. */
  function jump(vw, dir) {
    if (!vw.hits.length) return;
    vw.results.hidden = true;
    vw.hitAt = (vw.hitAt + dir + vw.hits.length) % vw.hits.length;
    TV.panel.select(vw, vw.hits[vw.hitAt], true);
  }

  TV.search = { search: search, jump: jump, mark: mark, describe: describe, KINDS: KINDS, h: h };
})();
