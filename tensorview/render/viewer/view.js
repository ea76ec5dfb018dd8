/* tensorview viewer, part 3: views, computed in the browser from the whole recording.
 *
 * A port of tensorview/transform (scope -> roll -> tensors -> edges; scope.js has the
 * first two).  With no viewer state the result is the view that
 * tensorview.transform.build_view draws (the browser tests check that node for node);
 * every opened call and opened fold becomes a cluster (a box around its contents).
 * Closed calls cost nothing beyond one pass over the recording.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var TENSOR = TV.TENSOR, FUNCTION = TV.FUNCTION, MODULE = TV.MODULE;
  var scope = TV.scope.scope, canonical = TV.scope.canonical;
  var NONE = 0, CONTRACTED = 1, DRAWN = 2;
  var FOLD_AUTO_THRESHOLD = 300;
  // this many tensors or more that hang off one node alone are drawn as one group
  var GROUP_MIN = 8;

  // -- which tensors are drawn (transform/tensors.py) ----------------------------------------
  function nodeMap(g, s, canon) {
    var vn = new Int32Array(g.n).fill(-1);
    for (var i = 0; i < g.n; i++) {
      if (g.kind[i] === TENSOR) continue;
      var b = s.boxOf[i], v = b >= 0 ? b : g.kind[i] === FUNCTION ? i : -1;
      vn[i] = v >= 0 ? canon[v] : -1;
    }
    return vn;
  }

  function tensors(g, opts, s, canon, vn) {
    var n = g.n, r = {
      target: new Int32Array(n),
      state: new Uint8Array(n),
      home: new Int32Array(n).fill(-1),
      merged: new Uint8Array(n),
    };
    var target = r.target, state = r.state, boxOf = s.boxOf, i, k;
    for (i = 0; i < n; i++) target[i] = i;
    var inputs = new Set(g.inputs), io = new Set(g.inputs.concat(g.outputs));
    for (i = 0; i < n; i++) {
      if (g.kind[i] !== TENSOR) continue;
      var role = g.role(i), isParam = role === "parameter" || role === "buffer";
      if (isParam && !opts.show_params && !io.has(i)) continue;
      var p = g.parent[i], b = p >= 0 ? boxOf[p] : -1;
      var h = b >= 0 && !isParam && !inputs.has(i) ? b : -1;
      r.home[i] = h;
      var pred = g.pred, succ = g.succ, anyMade = false, allOpened = true;
      for (k = pred.start[i]; k < pred.start[i + 1]; k++) {
        if (vn[pred.items[k]] >= 0) {
          anyMade = true;
          allOpened = false;
        }
      }
      var hasPred = pred.start[i + 1] > pred.start[i];
      var c = g.copyOf[i];
      if (c >= 0 && hasPred && allOpened) {
        var tc = target[c]; // an alias returned by an opened call: the tensor it copies
        target[i] = tc;
        r.merged[i] = 1;
        if (io.has(i)) state[tc] = DRAWN;
        continue;
      }
      var used = false;
      for (k = succ.start[i]; k < succ.start[i + 1]; k++) {
        var d = succ.items[k];
        if (vn[d] >= 0 && (h < 0 || boxOf[d] !== h)) {
          used = true;
          break;
        }
      }
      var st;
      if (io.has(i)) st = DRAWN;
      else if (isParam || role === "created" || role === "constant") st = used ? DRAWN : NONE;
      else if (used || (h < 0 && anyMade)) st = opts.hide_inner_tensors ? CONTRACTED : DRAWN;
      else st = NONE;
      if (canon[i] !== i) target[i] = target[canon[i]];
      var tgt = target[i];
      if (st > state[tgt]) state[tgt] = st;
    }
    return r;
  }

  // -- edges between drawn nodes (transform/edges.py) ---------------------------------------
  function edges(g, s, vn, tv, keepLoops) {
    var n = g.n, boxOf = s.boxOf, target = tv.target, state = tv.state, home = tv.home, merged = tv.merged;
    var explicit = new Map(), implicit = new Map();
    var top = new Uint8Array(n), i, e;
    for (i = 0; i < n; i++) {
      if (g.kind[i] === TENSOR) continue;
      var p = g.parent[i];
      top[i] = p < 0 || boxOf[p] < 0 ? 1 : 0;
    }
    for (e = 0; e < g.src.length; e++) {
      var a = g.src[e], b = g.dst[e], x, y, isExplicit, v;
      if (g.kind[a] === TENSOR) {
        var t = target[a];
        if (state[t] === NONE) continue;
        v = vn[b];
        var h = home[a];
        if (v < 0 || (h >= 0 && boxOf[b] === h)) continue;
        x = t;
        y = v;
        isExplicit = top[b];
      } else {
        v = vn[a];
        var t2 = target[b];
        if (v < 0 || merged[b] || state[t2] === NONE) continue;
        x = v;
        y = t2;
        isExplicit = top[a];
      }
      var key = x * n + y;
      if (isExplicit) {
        var got = explicit.get(key);
        if (got === undefined) explicit.set(key, [1, e, x, y]);
        else got[0]++;
      } else if (!implicit.has(key)) {
        implicit.set(key, [1, e, x, y]);
      }
    }
    implicit.forEach(function (val, key) {
      if (!explicit.has(key)) explicit.set(key, val);
    });
    return contract(n, explicit, state, keepLoops);
  }

  function contract(n, pairs, state, keepLoops) {
    var out = new Map(), ins = new Map(), outs = new Map();
    function add(a, b, count, order) {
      if (a === b && !keepLoops) return;
      var key = a * n + b, e = out.get(key);
      if (e === undefined) out.set(key, { src: a, dst: b, count: count, order: order });
      else {
        e.count += count;
        if (order < e.order) e.order = order;
      }
    }
    pairs.forEach(function (val) {
      var count = val[0], order = val[1], a = val[2], b = val[3];
      if (state[a] === CONTRACTED) {
        if (!outs.has(a)) outs.set(a, []);
        outs.get(a).push([b, count, order]);
      } else if (state[b] === CONTRACTED) {
        if (!ins.has(b)) ins.set(b, []);
        ins.get(b).push(a);
      } else add(a, b, count, order);
    });
    outs.forEach(function (consumers, t) {
      (ins.get(t) || []).forEach(function (a) {
        consumers.forEach(function (c) { add(a, c[0], c[1], c[2]); });
      });
    });
    var result = Array.from(out.values());
    result.sort(function (p, q) { return p.order - q.order || p.src - q.src || p.dst - q.dst; });
    return result;
  }

  // -- the view ----------------------------------------------------------------------------
  /** Whether fold applies at the start: the user's ``fold``, ``"auto"`` meaning "when
   * more than 300 functions and boxes would be drawn". */
  function initialFold(g, st) {
    var f = st.opts.fold;
    if (f === true || f === false) return f;
    return scope(g, st, false).visible > FOLD_AUTO_THRESHOLD;
  }

  function build(g, st) {
    var n = g.n, opts = st.opts;
    if (n === 0) return { nodes: [], edges: [], clusters: [], byId: new Map(), folded: false, groupOf: new Map() };
    var s = scope(g, st, st.fold);
    var canon = opts.roll ? canonical(g, s) : null;
    if (canon === null) {
      canon = new Int32Array(n);
      for (var i = 0; i < n; i++) canon[i] = i;
    }
    var vn = nodeMap(g, s, canon);
    var tv = tensors(g, opts, s, canon, vn);
    var nodes = drawnNodes(g, s, canon, vn, tv.state);
    var byId = new Map();
    nodes.forEach(function (v, k) {
      v.index = k;
      byId.set(v.id, v);
    });
    g.inputs.forEach(function (t) { if (byId.has(tv.target[t])) byId.get(tv.target[t]).isInput = true; });
    g.outputs.forEach(function (t) { if (byId.has(tv.target[t])) byId.get(tv.target[t]).isOutput = true; });
    var es = edges(g, s, vn, tv, opts.roll), groupOf = new Map();
    if (st.group) {
      var grouped = groupLeaves(nodes, es, st.ungroup || new Set());
      nodes = grouped.nodes;
      es = grouped.edges;
      groupOf = grouped.groupOf;
      byId = new Map();
      nodes.forEach(function (v, k) {
        v.index = k;
        byId.set(v.id, v);
      });
    }
    return {
      nodes: nodes,
      edges: es,
      clusters: clusters(g, s, canon, nodes),
      byId: byId,
      folded: s.members.size > 0 || s.folds.length > 0,
      scope: s,
      target: tv.target,
      groupOf: groupOf, // a tensor drawn inside a group node -> that node
      vn: vn,
    };
  }

  function drawnNodes(g, s, canon, vn, state) {
    var out = [], at = new Map(), n = g.n;
    function cl(c) { return c < 0 ? -1 : c < n ? canon[c] : c; }
    for (var i = 0; i < n; i++) {
      var k = g.kind[i], c;
      if (k === TENSOR) {
        if (state[i] !== DRAWN || canon[i] !== i) continue;
        c = g.parent[i] >= 0 ? s.region[g.parent[i]] : -1;
      } else if (vn[i] === i) {
        c = k === FUNCTION ? (g.parent[i] >= 0 ? s.region[g.parent[i]] : -1) : s.region[i];
      } else {
        if (canon[i] !== i && (s.boxOf[i] === i || s.boxOf[i] === -1) && at.has(vn[i])) at.get(vn[i]).calls++;
        continue;
      }
      var v = { id: i, kind: k, cluster: cl(c), calls: 1, members: null, period: 1, runHead: -1, isInput: false, isOutput: false };
      if (k === MODULE && s.members.has(i)) {
        v.members = s.members.get(i);
        v.period = s.period.get(i);
        v.runHead = s.runOf.get(i);
      }
      at.set(i, v);
      out.push(v);
    }
    return out;
  }

  /** Many tensors that hang off one node alone (the 160 key/value caches a Llama returns,
   * a box's parameters) become one group node, the first tensor's id standing for all;
   * ``ungroup`` holds the groups the user expanded.  Only the viewer does this. */
  function groupLeaves(nodes, es, ungroup) {
    var ins = new Map(), outs = new Map(), buckets = new Map();
    es.forEach(function (e) {
      outs.set(e.src, (outs.get(e.src) || 0) + 1);
      ins.set(e.dst, (ins.get(e.dst) || 0) + 1);
    });
    var edgeOf = new Map();
    es.forEach(function (e) {
      edgeOf.set(e.dst, e);
      if (!edgeOf.has(-1 - e.src)) edgeOf.set(-1 - e.src, e);
    });
    nodes.forEach(function (v) {
      if (v.kind !== TENSOR) return;
      var i = ins.get(v.id) || 0, o = outs.get(v.id) || 0, key = null;
      if (i === 1 && o === 0) key = "o" + edgeOf.get(v.id).src + "/" + v.cluster;
      else if (i === 0 && o === 1) key = "i" + edgeOf.get(-1 - v.id).dst + "/" + v.cluster;
      if (key === null) return;
      if (!buckets.has(key)) buckets.set(key, []);
      buckets.get(key).push(v);
    });
    var gone = new Map(); // grouped tensor -> the group's node
    buckets.forEach(function (vs) {
      if (vs.length < GROUP_MIN || ungroup.has(vs[0].id)) return;
      vs[0].group = vs.map(function (v) { return v.id; });
      for (var k = 1; k < vs.length; k++) {
        gone.set(vs[k].id, vs[0].id);
        vs[0].isInput = vs[0].isInput || vs[k].isInput;
        vs[0].isOutput = vs[0].isOutput || vs[k].isOutput;
      }
    });
    if (!gone.size) return { nodes: nodes, edges: es, groupOf: gone };
    var kept = [], merged = new Map();
    es.forEach(function (e) {
      var src = gone.has(e.src) ? gone.get(e.src) : e.src, dst = gone.has(e.dst) ? gone.get(e.dst) : e.dst;
      var key = src + ">" + dst, m = merged.get(key);
      if (m) m.count += e.count;
      else {
        m = { src: src, dst: dst, count: e.count, order: e.order };
        merged.set(key, m);
        kept.push(m);
      }
    });
    return { nodes: nodes.filter(function (v) { return !gone.has(v.id); }), edges: kept, groupOf: gone };
  }

  /** Opened calls and opened folds that contain a drawn node, with their enclosing ones. */
  function clusters(g, s, canon, nodes) {
    var n = g.n, used = new Map(), folds = new Map();
    s.folds.forEach(function (f) { folds.set(f.id, f); });
    var todo = nodes.filter(function (v) { return v.cluster >= 0; }).map(function (v) { return v.cluster; });
    while (todo.length) {
      var c = todo.pop();
      if (used.has(c)) continue;
      var parent;
      if (c >= n) parent = folds.get(c).parent;
      else parent = s.home[c];
      if (parent >= 0 && parent < n) parent = canon[parent];
      used.set(c, parent);
      if (parent >= 0) todo.push(parent);
    }
    var out = [];
    used.forEach(function (parent, c) {
      out.push({ id: c, parent: parent, fold: c >= n ? folds.get(c) : null, module: c >= n ? -1 : c });
    });
    out.sort(function (a, b) { return order(a, n) - order(b, n); });
    return out;
  }

  function order(c, n) { return c.fold ? c.fold.head - 0.5 : c.id; }

  TV.view = { build: build, initialFold: initialFold, FOLD_AUTO_THRESHOLD: FOLD_AUTO_THRESHOLD };
})();
