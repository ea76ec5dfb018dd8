// The interactive memory timeline of report.save("mem.html") (memhtml.py): reads the
// report's events from #tv-mem-data and draws them into #tv-mem-plot; hover shows one
// event, a drag (brush) zooms to a stretch of time, double-click or Reset shows all.
// Text from the report (module names) is only ever set with textContent.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var d = JSON.parse(document.getElementById("tv-mem-data").textContent);
  var svg = document.getElementById("tv-mem-plot");
  var tip = document.getElementById("tv-mem-tip");
  var W = 1000, H = 440, L = 80, R = 170, T = 40, B = 110, PW = W - L - R, PH = H - T - B;
  var n = d.bytes.length, C = d.categories.length;
  var byCat = [], acc = [], c, i;
  for (c = 0; c < C; c++) { byCat.push(new Float64Array(n)); acc.push(0); }
  for (i = 0; i < n; i++) {
    acc[d.category[i]] += d.bytes[i];
    for (c = 0; c < C; c++) byCat[c][i] = acc[c];
  }
  var view = { start: 0, end: Math.max(n - 1, 0) };
  var cursor = null, brush = null, dragFrom = null;

  function three(x) { return x < 9.995 ? x.toFixed(2) : x < 99.95 ? x.toFixed(1) : x.toFixed(0); }
  function fmtBytes(b) {  // as tensorview.cost.fmt_bytes
    if (b < 0) return "-" + fmtBytes(-b);
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], u = 0, x = b;
    if (b < 1024 && Math.round(b) === b) return b + " B";
    while (x >= 1024 && u < units.length - 1) { x /= 1024; u++; }
    var t = x >= 1 ? three(x) : x.toPrecision(3);
    if (parseFloat(t) >= 1024 && u < units.length - 1) { u++; t = three(parseFloat(t) / 1024); }
    return t + " " + units[u];
  }
  function exact(b) { return (b < 0 ? "-" : "") + Math.abs(b).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",") + " B"; }
  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function titled(e, text) { e.appendChild(el("title", {}, text)); return e; }
  function top(k, j) { var s = 0; for (var q = 0; q <= k; q++) s += byCat[q][j]; return s; }
  function moduleName(j) { var m = d.modules[d.module[j]]; return m === null ? "(outside the model)" : m; }

  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var a = view.start, z = view.end, span = Math.max(z - a, 1);
    svg.setAttribute("data-start", a);
    svg.setAttribute("data-end", z);
    document.getElementById("tv-mem-range").textContent =
      " events " + a + "\u2013" + z + " of " + n + (a > 0 || z < n - 1 ? " (zoomed: double-click or Reset to see all)" : "");
    var cols = [], per = Math.max(1, Math.ceil((z - a + 1) / PW)), best = -1, hi = 1, j;
    for (j = a; j <= z; j++) {  // one column per pixel: the event of its largest total, so no peak is lost
      if (best < 0 || d.live[j] > d.live[best]) best = j;
      if ((j - a + 1) % per === 0 || j === z) { cols.push(best); hi = Math.max(hi, d.live[best]); best = -1; }
    }
    function x(j) { return L + PW * (j - a) / span; }
    function y(b) { return T + PH * (1 - b / hi); }
    var start = a;  // the phases as bands
    for (j = a; j <= z; j++) {
      if (j === z || d.phase[j + 1] !== d.phase[j]) {
        var name = d.phases[d.phase[j]], x0 = x(start), x1 = x(j);
        svg.appendChild(titled(el("rect", { x: x0.toFixed(1), y: T, width: Math.max(x1 - x0, 0.5).toFixed(1), height: PH,
          fill: d.phaseFill[d.phase[j]], "class": "tv-mem-phase", "data-phase": name }), name));
        if (x1 - x0 >= 40) svg.appendChild(el("text", { x: ((x0 + x1) / 2).toFixed(1), y: T - 8, "text-anchor": "middle" }, name));
        start = j + 1;
      }
    }
    for (c = 0; c < C; c++) {  // the categories, stacked
      var up = [], low = [], any = false;
      for (var q = 0; q < cols.length; q++) {
        var t1 = top(c, cols[q]), t0 = c ? top(c - 1, cols[q]) : 0;
        if (t1 !== t0) any = true;
        up.push(x(cols[q]).toFixed(1) + "," + y(t1).toFixed(1));
        low.unshift(x(cols[q]).toFixed(1) + "," + y(t0).toFixed(1));
      }
      if (!any) continue;
      svg.appendChild(titled(el("polygon", { points: up.concat(low).join(" "), fill: d.colors[c], stroke: "none",
        "class": "tv-mem-area", "data-category": d.categories[c] }), d.categories[c]));
    }
    if (d.peakIndex >= a && d.peakIndex <= z) {
      var py = y(d.peak).toFixed(1);
      svg.appendChild(titled(el("line", { x1: L, y1: py, x2: L + PW, y2: py, stroke: "#333", "stroke-dasharray": "4 3",
        "class": "tv-mem-peak" }), "peak " + exact(d.peak)));
      svg.appendChild(el("text", { x: L + PW + 6, y: (+py + 4).toFixed(1) }, "peak " + fmtBytes(d.peak)));
    }
    svg.appendChild(el("line", { x1: L, y1: T, x2: L, y2: T + PH, stroke: "#333" }));
    svg.appendChild(el("line", { x1: L, y1: T + PH, x2: L + PW, y2: T + PH, stroke: "#333" }));
    for (var k = 0; k <= 4; k++) {
      svg.appendChild(el("text", { x: L - 6, y: (y(hi * k / 4) + 4).toFixed(1), "text-anchor": "end", "class": "tv-mem-tick" },
        fmtBytes(hi * k / 4)));
    }
    var last = null, lastX = -1e9;  // the module running, where it changes, as many as fit
    for (j = a; j <= z; j++) {
      var m = d.modules[d.module[j]];
      var cut = m === null ? null : m.split(".").slice(0, 3).join(".");
      if (cut === null || cut === last) { last = cut; continue; }
      last = cut;
      var xx = x(j);
      if (xx - lastX < 12) continue;
      lastX = xx;
      svg.appendChild(el("text", { x: xx.toFixed(1), y: T + PH + 12, fill: "#555", "class": "tv-mem-module",
        transform: "rotate(45 " + xx.toFixed(1) + " " + (T + PH + 12) + ")" }, cut));
    }
    for (c = 0; c < C; c++) {
      var ly = T + 30 + 16 * c;
      svg.appendChild(el("rect", { x: W - R + 16, y: ly, width: 12, height: 12, fill: d.colors[c] }));
      svg.appendChild(el("text", { x: W - R + 34, y: ly + 10, "class": "tv-mem-legend" }, d.categories[c]));
    }
    cursor = el("line", { x1: L, y1: T, x2: L, y2: T + PH, stroke: "#000", visibility: "hidden", "class": "tv-mem-cursor" });
    brush = el("rect", { x: L, y: T, width: 0, height: PH, fill: "#4e79a7", "fill-opacity": 0.15, visibility: "hidden",
      "class": "tv-mem-brush" });
    svg.appendChild(cursor);
    svg.appendChild(brush);
  }

  function local(ev) {
    var r = svg.getBoundingClientRect();
    return ev.clientX - r.left;
  }
  function indexAt(px) {
    var f = Math.min(Math.max((px - L) / PW, 0), 1);
    return Math.round(view.start + f * (view.end - view.start));
  }
  function describe(j) {
    var lines = [
      "event " + j + ": " + d.kinds[d.kind[j]] + " " + (d.bytes[j] >= 0 ? "+" : "") + fmtBytes(d.bytes[j]) + " (" + exact(d.bytes[j]) + ")",
      "live after: " + fmtBytes(d.live[j]) + " (" + exact(d.live[j]) + ")",
      "phase: " + d.phases[d.phase[j]] + ", step " + d.step[j],
      "module: " + moduleName(j),
      "category: " + d.categories[d.category[j]]
    ];
    for (c = 0; c < C; c++) if (byCat[c][j]) lines.push("  " + d.categories[c] + ": " + fmtBytes(byCat[c][j]));
    return lines.join("\n");
  }
  svg.addEventListener("mousemove", function (ev) {
    var px = local(ev);
    if (n === 0 || px < L || px > L + PW) { tip.style.display = "none"; cursor.setAttribute("visibility", "hidden"); return; }
    var j = indexAt(px);
    tip.textContent = describe(j);
    tip.setAttribute("data-index", j);
    tip.style.display = "block";
    tip.style.left = (ev.clientX + 14) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
    var cx = (L + PW * (j - view.start) / Math.max(view.end - view.start, 1)).toFixed(1);
    cursor.setAttribute("x1", cx); cursor.setAttribute("x2", cx); cursor.setAttribute("visibility", "visible");
    if (dragFrom !== null) {
      var lo = Math.max(Math.min(dragFrom, px), L), w = Math.min(Math.max(dragFrom, px), L + PW) - lo;
      brush.setAttribute("x", lo.toFixed(1)); brush.setAttribute("width", Math.max(w, 0).toFixed(1));
      brush.setAttribute("visibility", "visible");
    }
  });
  svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  svg.addEventListener("mousedown", function (ev) { dragFrom = local(ev); ev.preventDefault(); });
  window.addEventListener("mouseup", function (ev) {
    if (dragFrom === null) return;
    var px = local(ev), from = dragFrom;
    dragFrom = null;
    if (Math.abs(px - from) < 3) { brush.setAttribute("visibility", "hidden"); return; }
    var a = indexAt(Math.min(px, from)), z = indexAt(Math.max(px, from));
    if (z - a >= 1) { view = { start: a, end: z }; }
    draw();
  });
  function reset() { view = { start: 0, end: Math.max(n - 1, 0) }; draw(); }
  svg.addEventListener("dblclick", reset);
  document.getElementById("tv-mem-reset").addEventListener("click", reset);
  document.getElementById("tv-mem-title").textContent = d.title;
  document.getElementById("tv-mem-summary").textContent =
    "Peak " + fmtBytes(d.peak) + " (" + exact(d.peak) + ") at event " + d.peakIndex + ", in " +
    (d.peakIndex >= 0 ? d.phases[d.phase[d.peakIndex]] + ", module " + moduleName(d.peakIndex) : "no event") +
    ". Hover for an event; drag across the plot to zoom.";
  draw();
  svg.setAttribute("data-ready", "1");
})();
