/* tensorview viewer, the small layout engine: an ELK graph laid out with dagre.
 *
 * Notebook outputs carry dagre (the vendored dagre.min.js, 17 kB as gzip) instead of
 * elkjs (0.48 MB as gzip), so that ten viewers stay under a few MB (bench/layouts.py
 * measures both).  This file runs after dagre.min.js in the same scope, in the layout
 * worker or, where no worker can be made, in the page (worker.js).  It reads the ELK
 * graph that layout.js makes and answers in ELK's form (boxes at their top-left corner in
 * root coordinates, edges as sections, label boxes), so the rest of the viewer does not
 * know which engine ran.  A compound node's header (its first label) gets a node of its
 * own above the compound's first members, which makes the box tall and wide enough for it.
 */
(function (scope) {
  "use strict";
  var DIRS = { DOWN: "TB", UP: "BT", RIGHT: "LR", LEFT: "RL" };

  function number(text, fallback) {
    var n = parseFloat(text);
    return isFinite(n) ? n : fallback;
  }

  /** Lay out ``graph`` (ELK JSON, as layout.js writes it); returns ELK's result form. */
  function layout(graph) {
    var opts = graph.layoutOptions || {};
    var g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({
      rankdir: DIRS[opts["elk.direction"]] || "TB",
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
          g.setNode("h:" + c.id, { width: head.width, height: head.height });
          g.setParent("h:" + c.id, c.id);
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
      if (up !== null && !fed.has(id)) g.setEdge("h:" + up, compound.has(id) ? "h:" + id : id, { weight: 4 }, "h:" + id);
    });
    (graph.edges || []).forEach(function (e) {
      var label = e.labels && e.labels[0];
      var attrs = label ? { width: label.width, height: label.height, labelpos: "c" } : {};
      g.setEdge(e.sources[0], e.targets[0], attrs, e.id);
    });

    try {
      dagre.layout(g);
    } catch (err) {
      // dagre walks paths recursively: a path of about 2,000 nodes overflows the stack
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
    function place(node) {
      return (node.children || []).map(function (c) {
        var out = box(c.id, { id: c.id });
        if (c.children) {
          // the box starts at its header: the header node's top, less the room above it
          var head = g.node("h:" + c.id), top = head.y - head.height / 2 - 4;
          if (top > out.y) {
            out.height -= top - out.y;
            out.y = top;
          }
          out.children = place(c);
          out.labels = c.labels;
        }
        return out;
      });
    }
    var size = g.graph();
    return {
      id: graph.id,
      x: 0,
      y: 0,
      width: size.width,
      height: size.height,
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
    };
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
