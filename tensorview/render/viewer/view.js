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
  var S = TV.scope;
  var NONE = 0, CONTRACTED = 1, DRAWN = 2;
  var FOLD_AUTO_THRESHOLD = 300;
  // this many tensors or more that hang off one node alone are drawn as one group (viewer only)
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

  /** The graph's outputs per field of the returned value, for fields with several. */
  function outputGroups(g, ungroup) {
    var fields = new Map();
    g.outputs.forEach(function (i) {
      if (g.kind[i] !== TENSOR || g.fieldS[i] < 0 || g.copyOf[i] >= 0) return;
      if (!fields.has(g.fieldS[i])) fields.set(g.fieldS[i], []);
      fields.get(g.fieldS[i]).push(i);
    });
    return Array.from(fields.values()).filter(function (ids) { return ids.length > 1 && !ungroup.has(ids[0]); });
  }

  function tensors(g, st, s, canon, vn) {
    var n = g.n, opts = st.opts, r = {
      target: new Int32Array(n),
      state: new Uint8Array(n),
      home: new Int32Array(n).fill(-1),
      merged: new Uint8Array(n),
      group: new Map(), // grouped output -> the output drawn for its group
      groups: new Map(), // that one -> the group
      kept: new Set(), // outputs made in a ghost repeat, drawn as themselves
    };
    var target = r.target, state = r.state, boxOf = s.boxOf, i, k;
    for (i = 0; i < n; i++) target[i] = i;
    var inputs = new Set(g.inputs), io = new Set(g.inputs.concat(g.outputs));
    outputGroups(g, st.ungroup || new Set()).forEach(function (ids) {
      r.groups.set(ids[0], ids);
      ids.forEach(function (t) { r.group.set(t, ids[0]); });
    });
    var pred = g.pred, succ = g.succ;
    for (i = 0; i < n; i++) {
      if (g.kind[i] !== TENSOR) continue;
      var role = g.role(i), isParam = role === "parameter" || role === "buffer";
      if (isParam && !opts.show_params && !io.has(i)) continue;
      var p = g.parent[i], b = p >= 0 ? boxOf[p] : -1;
      var h = b >= 0 && !isParam && !inputs.has(i) ? b : -1;
      r.home[i] = h;
      if (r.group.has(i)) {
        state[i] = r.group.get(i) === i ? DRAWN : CONTRACTED;
        continue;
      }
      if (s.ghost[i] && io.has(i)) { // the last layer's result: itself, not the first layer's tensor
        state[i] = DRAWN;
        r.kept.add(i);
        continue;
      }
      var anyMade = false, allOpened = true;
      for (k = pred.start[i]; k < pred.start[i + 1]; k++) {
        if (vn[pred.items[k]] >= 0) {
          anyMade = true;
          allOpened = false;
        }
      }
      var c = g.copyOf[i];
      if (c >= 0 && pred.start[i + 1] > pred.start[i] && allOpened) {
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
      var st2;
      if (io.has(i)) st2 = DRAWN;
      else if (isParam || role === "created" || role === "constant") st2 = used ? DRAWN : NONE;
      else if (used || (h < 0 && anyMade)) st2 = opts.hide_inner_tensors ? CONTRACTED : DRAWN;
      else st2 = NONE;
      if (canon[i] !== i) target[i] = target[canon[i]];
      var tgt = target[i];
      if (st2 > state[tgt]) state[tgt] = st2;
    }
    return r;
  }

  // -- edges between drawn nodes (transform/edges.py) ---------------------------------------
  function inFold(g, span, i) {
    return span[0] <= i && i < span[1] && (g.kind[i] !== TENSOR || g.parent[i] !== span[2]);
  }

  // an edge inside a ghost repeat, or between two repeats of one opened fold, is not drawn
  function hidden(g, s, a, b, tv) {
    if (tv.group.has(b) || tv.kept.has(b)) return false;
    var ga = s.ghostTop[a], gb = s.ghostTop[b];
    if (ga === gb) return true;
    return (ga >= 0 && inFold(g, s.span.get(ga), b)) || (gb >= 0 && inFold(g, s.span.get(gb), a));
  }

  function edges(g, s, vn, tv, keepLoops) {
    var n = g.n, boxOf = s.boxOf, target = tv.target, state = tv.state, home = tv.home, merged = tv.merged;
    var ghosts = s.shadow.size > 0, explicit = new Map(), implicit = new Map();
    var top = new Uint8Array(n), i, e;
    for (i = 0; i < n; i++) {
      if (g.kind[i] === TENSOR) continue;
      var p = g.parent[i];
      top[i] = p < 0 || boxOf[p] < 0 ? 1 : 0;
    }
    for (e = 0; e < g.src.length; e++) {
      var a = g.src[e], b = g.dst[e], x, y, isExplicit, v;
      if (ghosts && (s.ghostTop[a] >= 0 || s.ghostTop[b] >= 0) && hidden(g, s, a, b, tv)) continue;
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
    return contract(n, explicit, state, keepLoops, tv.group);
  }

  function contract(n, pairs, state, keepLoops, group) {
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
      if (state[a] === CONTRACTED || group.has(a)) {
        if (!outs.has(a)) outs.set(a, []);
        outs.get(a).push([b, count, order]);
      } else if (state[b] === CONTRACTED || group.has(b)) {
        if (!ins.has(b)) ins.set(b, []);
        ins.get(b).push(a);
        if (group.has(b)) add(a, group.get(b), count, order);
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
  /** Which runs fold at the start: the user's ``fold`` ("auto": runs of 3 or more
   * repeats, and every run when more than 300 functions and boxes would still be drawn). */
  function initialFold(g, st) {
    var f = st.opts.fold;
    if (f === true) return "all";
    if (f === false) return "none";
    return S.scope(g, st, "auto").visible > FOLD_AUTO_THRESHOLD ? "all" : "auto";
  }

  function build(g, st) {
    var n = g.n, opts = st.opts;
    if (n === 0) return { nodes: [], edges: [], clusters: [], byId: new Map(), folded: false, groupOf: new Map(), scope: null };
    var s = S.scope(g, st, st.fold);
    var canon = S.foldCanon(g, s);
    if (opts.roll) canon = S.canonical(g, s, canon);
    var vn = nodeMap(g, s, canon);
    var tv = tensors(g, st, s, canon, vn);
    var nodes = drawnNodes(g, s, canon, vn, tv);
    var byId = new Map();
    nodes.forEach(function (v) { byId.set(v.id, v); });
    tv.groups.forEach(function (ids, head) {
      var v = byId.get(head);
      if (!v) return;
      v.group = ids;
      v.cluster = -1; // it stands for tensors from everywhere: top level
    });
    g.inputs.forEach(function (t) { if (byId.has(tv.target[t])) byId.get(tv.target[t]).isInput = true; });
    g.outputs.forEach(function (t) {
      var d = tv.group.has(t) ? tv.group.get(t) : tv.target[t];
      if (byId.has(d)) byId.get(d).isOutput = true;
    });
    var es = edges(g, s, vn, tv, opts.roll), groupOf = new Map(tv.group);
    if (st.group) {
      var grouped = groupLeaves(nodes, es, st.ungroup || new Set());
      nodes = grouped.nodes;
      es = grouped.edges;
      grouped.groupOf.forEach(function (head, t) { groupOf.set(t, head); });
    }
    byId = new Map();
    nodes.forEach(function (v, k) {
      v.index = k;
      byId.set(v.id, v);
    });
    return {
      nodes: nodes,
      edges: es,
      clusters: clusters(g, s, canon, nodes),
      byId: byId,
      folded: s.members.size > 0,
      scope: s,
      target: tv.target,
      groupOf: groupOf, // a tensor drawn inside a group node -> that node
      vn: vn,
    };
  }

  function drawnNodes(g, s, canon, vn, tv) {
    var out = [], at = new Map(), n = g.n, state = tv.state;
    for (var i = 0; i < n; i++) {
      var k = g.kind[i], c, p = g.parent[i];
      if (k === TENSOR) {
        if (state[i] !== DRAWN || (canon[i] !== i && !tv.groups.has(i) && !tv.kept.has(i))) continue;
        if (tv.kept.has(i)) p = s.span.get(s.ghostTop[i])[2]; // made in a ghost repeat: where the fold is
        c = p >= 0 ? s.region[p] : -1;
      } else if (vn[i] === i) {
        c = k === FUNCTION ? (p >= 0 ? s.region[p] : -1) : s.region[i];
      } else {
        if (canon[i] !== i && (s.boxOf[i] === i || s.boxOf[i] === -1) && vn[i] >= 0 && !s.ghost[i] && at.has(vn[i])) {
          at.get(vn[i]).calls++; // a rolled repeat of an earlier node
        }
        continue;
      }
      var v = { id: i, kind: k, cluster: c >= 0 ? canon[c] : -1, calls: 1, members: null, period: 1, group: null, isInput: false, isOutput: false };
      if (k === MODULE && s.members.has(i)) {
        v.members = s.members.get(i);
        v.period = s.period.get(i);
      }
      at.set(i, v);
      out.push(v);
    }
    return out;
  }

  /** Many tensors that hang off one node alone (a folded box's parameters) become one
   * group node, the first tensor's id standing for all; ``ungroup`` holds the groups the
   * user expanded.  Only the viewer does this (tensorview groups the outputs of one
   * returned field, as tensors() above). */
  function groupLeaves(nodes, es, ungroup) {
    var ins = new Map(), outs = new Map(), buckets = new Map(), edgeOf = new Map();
    es.forEach(function (e) {
      outs.set(e.src, (outs.get(e.src) || 0) + 1);
      ins.set(e.dst, (ins.get(e.dst) || 0) + 1);
      edgeOf.set(e.dst, e);
      if (!edgeOf.has(-1 - e.src)) edgeOf.set(-1 - e.src, e);
    });
    nodes.forEach(function (v) {
      if (v.kind !== TENSOR || v.group) return;
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
      vs[0].leaves = true;
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

  /** Opened calls and opened folds that contain a drawn node, with their enclosing ones;
   * an opened fold's cluster is the first call of the repeat drawn. */
  function clusters(g, s, canon, nodes) {
    var used = new Map(), fregion = s.fregion;
    var todo = nodes.filter(function (v) { return v.cluster >= 0; }).map(function (v) { return v.cluster; });
    while (todo.length) {
      var c = todo.pop();
      if (used.has(c)) continue;
      var p = g.parent[c], f = fregion[c], parent;
      if (f >= 0 && f !== c && (p < 0 || fregion[p] !== f)) parent = f; // a later call of the repeat drawn
      else parent = p >= 0 && s.region[p] >= 0 ? canon[s.region[p]] : -1;
      used.set(c, parent);
      if (parent >= 0) todo.push(parent);
    }
    var out = [];
    used.forEach(function (parent, c) {
      var head = s.open.get(c), fold = null;
      if (head !== undefined) {
        var members = s.members.get(head), period = s.period.get(head);
        fold = { head: head, members: members, period: period, shown: Math.floor(members.indexOf(c) / period) };
      }
      out.push({ id: c, parent: parent, fold: fold });
    });
    out.sort(function (a, b) { return a.id - b.id; });
    return out;
  }

  TV.view = { build: build, initialFold: initialFold, FOLD_AUTO_THRESHOLD: FOLD_AUTO_THRESHOLD };
})();
