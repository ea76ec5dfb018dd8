/* Layout engines compared on one view (bench/layouts.py runs this in headless Chromium).
 *
 * ``tvBench.run(elkGraph, engines, repeats)`` lays the ELK graph that the viewer made
 * (layout.js) out with each engine, in the page's thread, and measures each result in ELK's
 * form: milliseconds (least of ``repeats``), width and height, edge crossings (pairs of
 * segments of different edges that cross), edge segments through a node box other than
 * their ends, overlapping boxes (leaf nodes, and compound boxes of one parent), members
 * outside their compound's box, and the share of edge segments that run straight along an
 * axis (1.0: orthogonal routing).  Engines: ``elk`` (window.ELK), ``dagre``
 * (window.tvDagreLayout: what notebook outputs run), ``viz`` (Graphviz dot in WebAssembly,
 * @viz-js/viz: the ELK graph written as DOT with clusters, read back from its JSON).
 */
(function () {
  "use strict";

  function clone(x) { return JSON.parse(JSON.stringify(x)); }

  // -- viz: ELK graph -> DOT -> Graphviz JSON -> ELK result form --------------------------
  var DOT_DIRS = { DOWN: "TB", UP: "BT", RIGHT: "LR", LEFT: "RL" };

  function quote(s) { return '"' + String(s).replace(/["\\]/g, "\\$&") + '"'; }

  function toDot(graph) {
    var o = graph.layoutOptions || {}, out = [];
    out.push("digraph G {");
    out.push("rankdir=" + (DOT_DIRS[o["elk.direction"]] || "TB") + "; nodesep=0.25; ranksep=0.36; compound=true;");
    out.push("node [shape=box, fixedsize=true, label=\"\"]; edge [arrowhead=none];");
    (function walk(node, indent) {
      (node.children || []).forEach(function (c) {
        if (c.children) {
          var head = c.labels && c.labels[0];
          out.push(indent + "subgraph " + quote("cluster_" + c.id) + " {");
          // the header: a label of the header's size at the top
          if (head) out.push(indent + "  label=\"\"; margin=10; labeljust=c; labelloc=t; style=solid;");
          if (head) out.push(indent + "  " + quote("h:" + c.id) + " [width=" + head.width / 72 + ", height=" + head.height / 72 + "];");
          walk(c, indent + "  ");
          out.push(indent + "}");
        } else {
          out.push(indent + quote(c.id) + " [width=" + c.width / 72 + ", height=" + c.height / 72 + "];");
        }
      });
    })(graph, "  ");
    (graph.edges || []).forEach(function (e) {
      var label = e.labels && e.labels[0];
      var attrs = label ? " [label=\"\", xlabel=" + quote(label.text) + "]" : "";
      out.push("  " + quote(e.sources[0]) + " -> " + quote(e.targets[0]) + attrs + ";");
    });
    out.push("}");
    return out.join("\n");
  }

  function fromViz(graph, json) {
    var bb = json.bb.split(",").map(Number), H = bb[3];
    var byName = new Map();
    (json.objects || []).forEach(function (o) { byName.set(o.name, o); });
    function box(o) {
      if (o.bb) {
        var b = o.bb.split(",").map(Number);
        return { x: b[0], y: H - b[3], width: b[2] - b[0], height: b[3] - b[1] };
      }
      var p = o.pos.split(",").map(Number), w = Number(o.width) * 72, h = Number(o.height) * 72;
      return { x: p[0] - w / 2, y: H - p[1] - h / 2, width: w, height: h };
    }
    function place(node) {
      return (node.children || []).map(function (c) {
        var o = byName.get(c.children ? "cluster_" + c.id : c.id), out = box(o);
        out.id = c.id;
        if (c.children) out.children = place(c);
        return out;
      });
    }
    var names = (json.objects || []).map(function (o) { return o.name; });
    var edges = (json.edges || []).map(function (e, k) {
      var pts = [];
      String(e.pos || "").split(" ").forEach(function (t) {
        if (t.indexOf("e,") === 0 || t.indexOf("s,") === 0) return; // arrow ends
        var p = t.split(",").map(Number);
        if (p.length === 2) pts.push({ x: p[0], y: H - p[1] });
      });
      var src = graph.edges[k];
      return {
        id: src ? src.id : "e?" + names[e.tail],
        sections: pts.length >= 2 ? [{ startPoint: pts[0], bendPoints: pts.slice(1, -1), endPoint: pts[pts.length - 1] }] : [],
      };
    });
    return { width: bb[2], height: bb[3], children: place(graph), edges: edges };
  }

  var viz = null;
  function vizLayout(graph) {
    var dot = toDot(graph);
    return Promise.resolve(viz || window.Viz.instance()).then(function (v) {
      viz = v;
      return fromViz(graph, v.renderJSON(dot));
    });
  }

  var ENGINES = {
    elk: function (g) { return new window.ELK().layout(g); },
    dagre: function (g) { return Promise.resolve(window.tvDagreLayout(g)); },
    viz: vizLayout,
  };

  // -- measures ----------------------------------------------------------------------------
  function segments(result) {
    var out = [];
    (result.edges || []).forEach(function (e, k) {
      (e.sections || []).forEach(function (s) {
        var pts = [s.startPoint].concat(s.bendPoints || [], [s.endPoint]);
        for (var i = 1; i < pts.length; i += 1) out.push({ edge: k, a: pts[i - 1], b: pts[i], id: e.id });
      });
    });
    return out;
  }

  function orient(p, q, r) { return (q.x - p.x) * (r.y - p.y) - (q.y - p.y) * (r.x - p.x); }

  function cross(s, t) {
    var d1 = orient(s.a, s.b, t.a), d2 = orient(s.a, s.b, t.b), d3 = orient(t.a, t.b, s.a), d4 = orient(t.a, t.b, s.b);
    return ((d1 > 1e-6 && d2 < -1e-6) || (d1 < -1e-6 && d2 > 1e-6)) && ((d3 > 1e-6 && d4 < -1e-6) || (d3 < -1e-6 && d4 > 1e-6));
  }

  function inside(p, b, m) { return p.x > b.x + m && p.x < b.x + b.width - m && p.y > b.y + m && p.y < b.y + b.height - m; }

  function hitsBox(s, b) { // a segment through a box's inside (sampled: segments are short)
    for (var k = 1; k < 16; k += 1) {
      var f = k / 16;
      if (inside({ x: s.a.x + (s.b.x - s.a.x) * f, y: s.a.y + (s.b.y - s.a.y) * f }, b, 2)) return true;
    }
    return false;
  }

  function overlap(a, b) {
    return a.x + 1 < b.x + b.width && b.x + 1 < a.x + a.width && a.y + 1 < b.y + b.height && b.y + 1 < a.y + a.height;
  }

  function measure(graph, result) {
    var leaves = [], groups = [], outside = 0;
    (function walk(node, parentBox) {
      var kids = node.children || [];
      kids.forEach(function (c) {
        if (parentBox && !(c.x >= parentBox.x - 1 && c.y >= parentBox.y - 1 && c.x + c.width <= parentBox.x + parentBox.width + 1 && c.y + c.height <= parentBox.y + parentBox.height + 1)) outside += 1;
        if (c.children) walk(c, c);
        else leaves.push(c);
      });
      groups.push(kids);
    })(result, null);
    var boxOverlaps = 0;
    for (var i = 0; i < leaves.length; i += 1) for (var j = i + 1; j < leaves.length; j += 1) if (overlap(leaves[i], leaves[j])) boxOverlaps += 1;
    var clusterOverlaps = 0;
    groups.forEach(function (kids) {
      for (var i = 0; i < kids.length; i += 1) {
        for (var j = i + 1; j < kids.length; j += 1) {
          if ((kids[i].children || kids[j].children) && overlap(kids[i], kids[j])) clusterOverlaps += 1;
        }
      }
    });
    var segs = segments(result), crossings = 0, straight = 0;
    segs.forEach(function (s) { if (Math.abs(s.a.x - s.b.x) < 0.5 || Math.abs(s.a.y - s.b.y) < 0.5) straight += 1; });
    for (var a = 0; a < segs.length; a += 1) {
      for (var b = a + 1; b < segs.length; b += 1) if (segs[a].edge !== segs[b].edge && cross(segs[a], segs[b])) crossings += 1;
    }
    var ends = new Map();
    (graph.edges || []).forEach(function (e) { ends.set(e.id, [e.sources[0], e.targets[0]]); });
    var through = 0;
    segs.forEach(function (s) {
      var own = ends.get(s.id) || [];
      leaves.forEach(function (n) { if (own.indexOf(n.id) < 0 && hitsBox(s, n)) through += 1; });
    });
    return {
      width: Math.round(result.width), height: Math.round(result.height),
      crossings: crossings, through_nodes: through, node_overlaps: boxOverlaps,
      cluster_overlaps: clusterOverlaps, outside_parent: outside,
      orthogonal: segs.length ? straight / segs.length : 1, edges: (graph.edges || []).length,
      routed: (result.edges || []).filter(function (e) { return (e.sections || []).length; }).length,
    };
  }

  /** Lay ``graph`` out with each of ``engines``, ``repeats`` times; resolves to
   * ``{engine: {ms, ...measure} | {error}}``. */
  function run(graph, engines, repeats) {
    var out = {};
    return engines.reduce(function (chain, name) {
      return chain.then(function () {
        var times = [], last = null, k = 0;
        function once() {
          var t = performance.now();
          return Promise.resolve(graph).then(clone).then(ENGINES[name]).then(function (r) {
            times.push(performance.now() - t);
            last = r;
            k += 1;
            if (k < repeats) return once();
          });
        }
        return once()
          .then(function () { out[name] = Object.assign({ ms: Math.min.apply(null, times) }, measure(graph, last)); })
          .catch(function (err) { out[name] = { error: String(err && err.message ? err.message : err) }; });
      });
    }, Promise.resolve()).then(function () { return out; });
  }

  window.tvBench = { run: run, toDot: toDot, measure: measure };
})();
