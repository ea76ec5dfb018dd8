/* tensorview viewer, the small layout engine: an ELK graph laid out with dagre.
 *
 * Notebook outputs carry dagre (the vendored dagre.min.js, 17 kB as gzip) instead of
 * elkjs (0.48 MB as gzip), so that ten viewers stay under a few MB (bench/layouts.py
 * measures both).  This file runs after dagre.min.js in the same scope, in the layout
 * worker or, where no worker can be made, in the page (worker.js).  It reads the ELK
 * graph that layout.js makes and answers in ELK's form (boxes at their top-left corner in
 * root coordinates, edges as sections, label boxes), so the rest of the viewer does not
 * know which engine ran.  dagre leaves no room for a compound node's header (its first
 * label): the box grows after the layout, upwards and to the title's width, and where that
 * makes boxes overlap the view is laid out again with a node for each header (``layout``).
 * dagre walks paths recursively, so a view deeper than 300 levels is cut across into
 * bands, laid out one by one and stacked (``bands``, ``stack``).
 */
(function (scope) {
  "use strict";
  var DIRS = { DOWN: "TB", UP: "BT", RIGHT: "LR", LEFT: "RL" };

  function number(text, fallback) {
    var n = parseFloat(text);
    return isFinite(n) ? n : fallback;
  }

  /** Lay out ``graph`` (ELK JSON, as layout.js writes it); returns ELK's result form.
   * Boxes first grow after the layout to make room for their headers (upwards, and to the
   * right for a long title); where that makes two boxes of one parent overlap, and the
   * drawing runs top to bottom, it is laid out again with a node for each header. */
  function layout(graph) {
    var cuts = bands(graph);
    return cuts ? stack(graph, cuts) : single(graph);
  }

  function single(graph) {
    var rankdir = DIRS[(graph.layoutOptions || {})["elk.direction"]] || "TB";
    var out = attempt(graph, false);
    return rankdir === "TB" && overlapping(out) ? attempt(graph, true) : out;
  }

  // -- deep views in bands --------------------------------------------------------------
  // dagre walks paths recursively, and a worker's stack holds paths of about 700 nodes: a
  // deeper view is cut across, where only edges between neighbouring levels cross, into
  // bands of at most BAND levels, laid out one by one and stacked
  var BAND = 300, GAP = 40;

  /** The top-level members of ``graph``, their levels and the cuts between bands (level
   * indices where a band ends), or null when the view is shallow or cannot be cut. */
  function bands(graph) {
    var dir = DIRS[(graph.layoutOptions || {})["elk.direction"]] || "TB";
    var kids = graph.children || [], top = new Map(), edges = graph.edges || [];
    if (dir !== "TB" && dir !== "LR") return null;
    kids.forEach(function (c, k) {
      (function mark(n) {
        top.set(n.id, k);
        (n.children || []).forEach(mark);
      })(c);
    });
    if (top.size <= BAND) return null;
    var n = kids.length, indeg = new Array(n).fill(0), next = kids.map(function () { return []; });
    edges.forEach(function (e) {
      var a = top.get(e.sources[0]), b = top.get(e.targets[0]);
      if (a !== undefined && b !== undefined && a !== b) {
        next[a].push(b);
        indeg[b] += 1;
      }
    });
    var level = new Array(n).fill(0), queue = [], seen = 0, depth = 0;
    indeg.forEach(function (d, k) { if (!d) queue.push(k); });
    while (queue.length) {
      var a = queue.pop();
      seen += 1;
      depth = Math.max(depth, level[a] + 1);
      next[a].forEach(function (b) {
        level[b] = Math.max(level[b], level[a] + 1);
        indeg[b] -= 1;
        if (!indeg[b]) queue.push(b);
      });
    }
    if (seen < n || depth <= BAND) return null; // a cycle, or shallow enough
    // a cut after level c may only be crossed by edges from level c to level c + 1
    var blocked = new Array(depth + 1).fill(0);
    next.forEach(function (targets, a) {
      targets.forEach(function (b) {
        if (level[b] - level[a] > 1) {
          blocked[level[a]] += 1;
          blocked[level[b] - 1] -= 1;
        }
      });
    });
    for (var k = 1; k <= depth; k += 1) blocked[k] += blocked[k - 1];
    var cuts = [], start = 0;
    while (depth - start > BAND) {
      var c = Math.min(start + BAND - 1, depth - 2);
      while (c >= start && blocked[c]) c -= 1;
      if (c < start) return null; // no cut within reach: one layout, which may fail
      cuts.push(c);
      start = c + 1;
    }
    return { top: top, level: level, cuts: cuts };
  }

  function shift(result, dx, dy) {
    function move(p) { p.x += dx; p.y += dy; }
    (function walk(node) {
      (node.children || []).forEach(function (c) { move(c); walk(c); });
    })(result);
    result.edges.forEach(function (e) {
      e.sections.forEach(function (sec) { move(sec.startPoint); sec.bendPoints.forEach(move); move(sec.endPoint); });
      (e.labels || []).forEach(move);
    });
  }

  /** ``graph`` laid out band by band, the bands stacked along the direction of the layout
   * and the edges between them drawn straight across the gap. */
  function stack(graph, split) {
    var across = (DIRS[(graph.layoutOptions || {})["elk.direction"]] || "TB") === "TB";
    function band(k) {
      var b = 0;
      while (b < split.cuts.length && split.level[k] > split.cuts[b]) b += 1;
      return b;
    }
    var kids = graph.children || [], parts = split.cuts.map(function () { return []; }).concat([[]]);
    kids.forEach(function (c, k) { parts[band(k)].push(c); });
    var ofEdge = function (e) { return [band(split.top.get(e.sources[0])), band(split.top.get(e.targets[0]))]; };
    var results = parts.map(function (children, b) {
      var edges = (graph.edges || []).filter(function (e) { var t = ofEdge(e); return t[0] === b && t[1] === b; });
      return single({ id: graph.id, layoutOptions: graph.layoutOptions, children: children, edges: edges });
    });
    var breadth = Math.max.apply(null, results.map(function (r) { return across ? r.width : r.height; }));
    var at = 0, out = { id: graph.id, x: 0, y: 0, children: [], edges: [] };
    results.forEach(function (r) {
      var centre = (breadth - (across ? r.width : r.height)) / 2;
      if (across) shift(r, centre, at);
      else shift(r, at, centre);
      at += (across ? r.height : r.width) + GAP;
      out.children = out.children.concat(r.children);
      out.edges = out.edges.concat(r.edges);
    });
    var boxes = new Map();
    (function walk(node) {
      (node.children || []).forEach(function (c) { boxes.set(c.id, c); walk(c); });
    })(out);
    (graph.edges || []).forEach(function (e) {
      var t = ofEdge(e);
      if (t[0] === t[1]) return;
      var s = boxes.get(e.sources[0]), d = boxes.get(e.targets[0]), a, z, m1, m2;
      if (across) {
        a = { x: s.x + s.width / 2, y: s.y + s.height };
        z = { x: d.x + d.width / 2, y: d.y };
        m1 = { x: a.x, y: (a.y + z.y) / 2 };
        m2 = { x: z.x, y: m1.y };
      } else {
        a = { x: s.x + s.width, y: s.y + s.height / 2 };
        z = { x: d.x, y: d.y + d.height / 2 };
        m1 = { x: (a.x + z.x) / 2, y: a.y };
        m2 = { x: m1.x, y: z.y };
      }
      var edge = { id: e.id, sources: e.sources, targets: e.targets, sections: [{ startPoint: a, bendPoints: [m1, m2], endPoint: z }] };
      var label = e.labels && e.labels[0];
      if (label) edge.labels = [{ text: label.text, width: label.width, height: label.height, x: m2.x + 4, y: m2.y - label.height / 2 }];
      out.edges.push(edge);
    });
    return fit(out);
  }

  function overlap(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }

  /** Whether two members of one box (or of the root) overlap, one of them a box. */
  function overlapping(node) {
    var kids = node.children || [];
    for (var i = 0; i < kids.length; i += 1) {
      if (kids[i].children && overlapping(kids[i])) return true;
      for (var j = i + 1; j < kids.length; j += 1) {
        if ((kids[i].children || kids[j].children) && overlap(kids[i], kids[j])) return true;
      }
    }
    return false;
  }

  /** One layout; ``headers``: a node for each box's header, above its first members. */
  function attempt(graph, headers) {
    var opts = graph.layoutOptions || {}, rankdir = DIRS[opts["elk.direction"]] || "TB";
    var g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({
      rankdir: rankdir,
      nodesep: number(opts["elk.spacing.nodeNode"], 18),
      ranksep: number(opts["elk.layered.spacing.nodeNodeBetweenLayers"], 26),
      edgesep: number(opts["elk.spacing.edgeNode"], 12),
      marginx: 12,
      marginy: 12,
    });
    var parent = new Map(), compound = new Map(), leaves = [];
    (function walk(node, up) {
      (node.children || []).forEach(function (c) {
        parent.set(c.id, up);
        if (c.children) {
          compound.set(c.id, c);
          g.setNode(c.id, {});
          var head = (c.labels && c.labels[0]) || { width: 0, height: 0 };
          if (headers) {
            g.setNode("h:" + c.id, { width: head.width, height: head.height });
            g.setParent("h:" + c.id, c.id);
          }
          walk(c, c.id);
        } else {
          leaves.push(c);
          g.setNode(c.id, { width: c.width, height: c.height });
        }
        if (up !== null) g.setParent(c.id, up);
      });
    })(graph, null);

    function chain(id) { // id, its compound, theirs... up to the root (null)
      var out = [id];
      for (var p = parent.get(id); p !== undefined && p !== null; p = parent.get(p)) out.push(p);
      out.push(null);
      return out;
    }
    // a member of a compound with no edge into it from another member sits below the header
    var fed = new Set();
    (graph.edges || []).forEach(function (e) {
      var s = chain(e.sources[0]), t = chain(e.targets[0]);
      var common = new Set(s);
      for (var k = 1; k < t.length; k += 1) {
        if (common.has(t[k])) {
          fed.add(t[k - 1]);
          break;
        }
      }
    });
    parent.forEach(function (up, id) {
      if (headers && up !== null && !fed.has(id)) g.setEdge("h:" + up, compound.has(id) ? "h:" + id : id, { weight: 4 }, "h:" + id);
    });
    (graph.edges || []).forEach(function (e) {
      var label = e.labels && e.labels[0];
      var attrs = label ? { width: label.width, height: label.height, labelpos: "c" } : {};
      g.setEdge(e.sources[0], e.targets[0], attrs, e.id);
    });

    try {
      dagre.layout(g);
    } catch (err) {
      // dagre walks paths recursively: a path of about 700 nodes overflows a worker's stack
      // (``bands`` cuts deeper views where it can)
      if (!(err instanceof RangeError)) throw err;
      throw new Error("this view is too deep for the notebook's layout engine (dagre: " + err.message + "); " +
        "graph.save(\"model.html\") writes a page laid out with elkjs");
    }

    function box(id, into) {
      var n = g.node(id);
      into.x = n.x - n.width / 2;
      into.y = n.y - n.height / 2;
      into.width = n.width;
      into.height = n.height;
      return into;
    }
    // the room a box keeps above its members for its header (layout.js: its padding's top)
    function headRoom(c) {
      var m = /top=([\d.]+)/.exec((c.layoutOptions || {})["elk.padding"] || "");
      return m ? Number(m[1]) : 0;
    }
    function place(node) {
      return (node.children || []).map(function (c) {
        var out = box(c.id, { id: c.id });
        if (c.children) {
          out.children = place(c);
          out.labels = c.labels;
          // the box's top: the header node's top (top to bottom), and never less room than
          // the header needs above the highest member; bottom and sides only grow
          var top = Infinity, right = out.x + out.width, bottom = out.y + out.height, left = out.x;
          out.children.forEach(function (m) {
            top = Math.min(top, m.y);
            left = Math.min(left, m.x - 10);
            right = Math.max(right, m.x + m.width + 10);
            bottom = Math.max(bottom, m.y + m.height + 10);
          });
          var want = top === Infinity ? out.y : top - headRoom(c);
          if (headers) {
            var head = g.node("h:" + c.id);
            want = Math.min(want, head.y - head.height / 2 - 4);
          }
          var label = c.labels && c.labels[0];
          right = Math.max(right, left + (label ? label.width : 0));
          out.x = left;
          out.y = want;
          out.width = right - left;
          out.height = bottom - want;
        }
        return out;
      });
    }
    return fit({
      id: graph.id,
      x: 0,
      y: 0,
      children: place(graph),
      edges: (graph.edges || []).map(function (e) {
        var r = g.edge({ v: e.sources[0], w: e.targets[0], name: e.id }), pts = r.points || [];
        var out = { id: e.id, sources: e.sources, targets: e.targets, sections: [] };
        if (pts.length >= 2) {
          out.sections.push({ startPoint: pts[0], bendPoints: pts.slice(1, -1), endPoint: pts[pts.length - 1] });
        }
        var label = e.labels && e.labels[0];
        if (label && r.x !== undefined) {
          out.labels = [{ text: label.text, width: label.width, height: label.height, x: r.x - label.width / 2, y: r.y - label.height / 2 }];
        }
        return out;
      }),
    });
  }

  /** ``result`` moved so that every box (grown for its header) starts at the margin or
   * after it, and sized to hold them all. */
  function fit(result) {
    var minX = Infinity, minY = Infinity, maxX = 0, maxY = 0;
    (function walk(node) {
      (node.children || []).forEach(function (c) {
        minX = Math.min(minX, c.x);
        minY = Math.min(minY, c.y);
        maxX = Math.max(maxX, c.x + c.width);
        maxY = Math.max(maxY, c.y + c.height);
        walk(c);
      });
    })(result);
    var dx = minX < 12 ? 12 - minX : 0, dy = minY < 12 ? 12 - minY : 0;
    function move(p) { p.x += dx; p.y += dy; }
    if (dx || dy) {
      (function walk(node) {
        (node.children || []).forEach(function (c) { move(c); walk(c); });
      })(result);
      result.edges.forEach(function (e) {
        e.sections.forEach(function (sec) { move(sec.startPoint); sec.bendPoints.forEach(move); move(sec.endPoint); });
        (e.labels || []).forEach(move);
      });
    }
    result.width = (minX === Infinity ? 0 : maxX + dx) + 12;
    result.height = (minY === Infinity ? 0 : maxY + dy) + 12;
    return result;
  }

  scope.tvDagreLayout = layout;
  // in the layout worker: answer worker.js's messages as elkjs's worker does
  if (typeof WorkerGlobalScope !== "undefined" && scope instanceof WorkerGlobalScope) {
    scope.onmessage = function (ev) {
      var d = ev.data;
      if (d.cmd !== "layout") return;
      try {
        scope.postMessage({ id: d.id, data: layout(d.graph) });
      } catch (err) {
        scope.postMessage({ id: d.id, error: { message: err && err.message ? err.message : String(err) } });
      }
    };
  }
})(typeof self !== "undefined" ? self : this);
