/* tensorview viewer, part 5: layout, as an ELK graph (run in a worker by worker.js, with
 * elkjs, the vendored elk.bundled.js, in a saved page, or dagre through dagre.js in a
 * notebook output).
 *
 * Only the current view is laid out: drawn nodes as leaves, opened calls and opened
 * folds as compound nodes around their contents (ELK's layered algorithm with
 * hierarchyHandling INCLUDE_CHILDREN, so edges cross box borders), edges with a "×N"
 * label when a tensor is used N times.  Positions come back in page coordinates.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});

  var FONT = "12px system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
  var LINE = 16; // px per label line
  var PAD_X = 10, PAD_Y = 6;
  var HEADER = 26; // px above the contents of a box
  var MAX_CHARS = 80; // longer label lines are cut (the details panel has the full text)
  var DIRECTIONS = { TB: "DOWN", BT: "UP", LR: "RIGHT", RL: "LEFT" };

  var canvas = null, widths = new Map();
  /** Width in pixels of ``text`` in the label font (bold for titles). */
  function textWidth(text, bold) {
    var key = (bold ? "b" : "r") + text, w = widths.get(key);
    if (w === undefined) {
      if (canvas === null) canvas = document.createElement("canvas").getContext("2d");
      canvas.font = (bold ? "600 " : "") + FONT;
      w = Math.ceil(canvas.measureText(text).width);
      if (widths.size > 50000) widths.clear();
      widths.set(key, w);
    }
    return w;
  }

  function cut(text) { return text.length > MAX_CHARS ? text.slice(0, MAX_CHARS - 1) + "…" : text; }

  function boxSize(lines) {
    var w = 0;
    lines.forEach(function (l, k) { w = Math.max(w, textWidth(l, k === 0)); });
    return { width: w + 2 * PAD_X, height: lines.length * LINE + 2 * PAD_Y };
  }

  function layoutOptions(dir, big) {
    return {
      "elk.algorithm": "layered",
      "elk.direction": DIRECTIONS[dir] || "DOWN",
      "elk.hierarchyHandling": "INCLUDE_CHILDREN",
      "elk.json.shapeCoords": "ROOT",
      "elk.json.edgeCoords": "ROOT",
      "elk.spacing.nodeNode": "18",
      "elk.layered.spacing.nodeNodeBetweenLayers": "26",
      "elk.spacing.edgeNode": "12",
      "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
      "elk.layered.thoroughness": big ? "1" : "7",
      "elk.padding": "[top=12,left=12,bottom=12,right=12]",
    };
  }

  /** The ELK graph of ``view``; ``labels(v)`` gives a drawn node's label lines and
   * ``title(c)`` a cluster's header text. */
  function elkGraph(view, labels, title, dir) {
    var big = view.nodes.length > 600;
    var root = { id: "root", layoutOptions: layoutOptions(dir, big), children: [], edges: [] };
    var boxes = new Map();
    boxes.set(-1, root);
    view.clusters.forEach(function (c) {
      var head = cut(title(c));
      var box = {
        id: "c" + c.id,
        children: [],
        // the header as a node label inside the top: ELK makes the box wide enough for it
        labels: [{ text: head, width: textWidth("▾ " + head) + (c.fold ? 70 : 24), height: HEADER - 8 }],
        layoutOptions: {
          "elk.padding": "[top=" + (HEADER - 4) + ",left=10,bottom=10,right=10]",
          "elk.nodeLabels.placement": "[H_CENTER, V_TOP, INSIDE]",
          "elk.nodeSize.constraints": "[NODE_LABELS]",
        },
      };
      boxes.set(c.id, box);
    });
    view.clusters.forEach(function (c) {
      (boxes.get(c.parent) || root).children.push(boxes.get(c.id));
    });
    view.nodes.forEach(function (v) {
      var lines = labels(v).map(cut), size = boxSize(lines);
      (boxes.get(v.cluster) || root).children.push({ id: "n" + v.id, width: size.width, height: size.height });
    });
    view.edges.forEach(function (e, k) {
      var edge = { id: "e" + k, sources: ["n" + e.src], targets: ["n" + e.dst] };
      if (e.count > 1) {
        var text = "×" + e.count;
        edge.labels = [{ text: text, width: textWidth(text) + 4, height: LINE }];
      }
      root.edges.push(edge);
    });
    return root;
  }

  /** Flatten ELK's result: ``{nodes: Map id -> box, clusters: Map id -> box, edges: [...]}``. */
  function collect(result) {
    var out = { nodes: new Map(), clusters: new Map(), edges: [], width: result.width || 0, height: result.height || 0 };
    (function walk(node) {
      (node.children || []).forEach(function (c) {
        var box = { x: c.x, y: c.y, width: c.width, height: c.height };
        if (c.id.charAt(0) === "c") out.clusters.set(Number(c.id.slice(1)), box);
        else out.nodes.set(Number(c.id.slice(1)), box);
        walk(c);
      });
      (node.edges || []).forEach(function (e) {
        var points = [];
        (e.sections || []).forEach(function (s) {
          points.push(s.startPoint);
          (s.bendPoints || []).forEach(function (b) { points.push(b); });
          points.push(s.endPoint);
        });
        var label = e.labels && e.labels[0];
        out.edges.push({ index: Number(e.id.slice(1)), points: points, label: label ? { x: label.x, y: label.y, text: label.text } : null });
      });
    })(result);
    return out;
  }

  /** Lay ``view`` out for ``owner`` (a viewer: worker.js cancels by owner); resolves to
   * the flattened positions. */
  function layout(view, labels, title, dir, owner) {
    var graph = elkGraph(view, labels, title, dir);
    return TV.worker.layout(graph, owner).then(collect);
  }

  TV.layout = { layout: layout, elkGraph: elkGraph, collect: collect, LINE: LINE, PAD_X: PAD_X, PAD_Y: PAD_Y, HEADER: HEADER, cut: cut, FONT: FONT };
})();
