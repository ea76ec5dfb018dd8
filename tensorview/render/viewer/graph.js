/* tensorview viewer, part 1: the recorded graph.
 *
 * Decodes the page's compact JSON (tensorview/render/compact.py) into typed columns and
 * adjacency lists, and finds repeated sibling calls as tensorview/transform/fold.py does
 * (same class, same inner sequence of kinds/ops/classes/shapes, each fed by the previous
 * one).  Nothing here touches the page.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var TENSOR = 0, FUNCTION = 1, MODULE = 2;
  var KIND = { t: TENSOR, f: FUNCTION, m: MODULE };
  var FAILED = 1, OPAQUE = 2;
  var MAX_PERIOD = 4;

  function Graph(data) {
    var S = data.strings;
    var n = data.kind.length;
    var i, k;
    this.data = data;
    this.n = n;
    this.strings = S;
    this.kind = new Uint8Array(n);
    this.parent = new Int32Array(n);
    this.depth = new Int32Array(n);
    this.end = new Int32Array(n); // modules: first id after the call
    this.flags = new Uint8Array(n);
    this.pathS = new Int32Array(n); // module path (a module's own, else its parent's)
    this.clsModS = new Int32Array(n).fill(-1);
    this.tkind = new Int32Array(n).fill(-1);
    this.copyOf = new Int32Array(n).fill(-1);
    this.sourceNameS = new Int32Array(n).fill(-1);
    this.methodS = new Int32Array(n).fill(-1); // a module call through another method than forward
    this.fieldS = new Int32Array(n).fill(-1); // outputs: the field of the returned value
    this.nameS = data.name_s;
    this.whatS = data.what_s;
    this.tensorKinds = data.tensor_kinds;
    this.roles = data.roles;
    this.root = data.root === null ? -1 : data.root;
    this.inputs = data.inputs;
    this.outputs = data.outputs;
    this.error = data.error;
    this.warnings = data.warnings || [];
    var mi = 0, ti = 0, mods = data.modules;
    for (i = 0; i < n; i++) {
      k = KIND[data.kind[i]];
      this.kind[i] = k;
      var up = data.up[i];
      var p = up === 0 ? -1 : i - up;
      this.parent[i] = p;
      this.depth[i] = p < 0 ? 0 : this.depth[p] + 1;
      if (k === MODULE) {
        this.pathS[i] = mods[4 * mi];
        this.clsModS[i] = mods[4 * mi + 1];
        this.end[i] = mods[4 * mi + 2] ? i + mods[4 * mi + 2] : n;
        this.flags[i] = mods[4 * mi + 3];
        mi++;
      } else {
        this.pathS[i] = p >= 0 ? this.pathS[p] : -1;
        if (k === TENSOR) this.tkind[i] = data.tensors[ti++];
      }
    }
    for (i = 0; i < data.failed.length; i++) this.flags[data.failed[i]] |= FAILED;
    for (i = 0; i < data.copy_of.length; i += 2) this.copyOf[data.copy_of[i]] = data.copy_of[i + 1];
    for (i = 0; i < data.source_name_s.length; i += 2) this.sourceNameS[data.source_name_s[i]] = data.source_name_s[i + 1];
    for (i = 0; i < data.field_s.length; i += 2) this.fieldS[data.field_s[i]] = data.field_s[i + 1];
    var methods = data.method_s || [];
    for (i = 0; i < methods.length; i += 2) this.methodS[methods[i]] = methods[i + 1];
    this._edges(data.edges);
    this._notes(data.notes);
    this._kids = null;
    this._shapes = {};
  }

  Graph.prototype._edges = function (flat) {
    var m = flat.length / 2, n = this.n;
    var src = new Int32Array(m), dst = new Int32Array(m);
    var b = 0, e;
    for (e = 0; e < m; e++) {
      b += flat[2 * e];
      dst[e] = b;
      src[e] = b - flat[2 * e + 1];
    }
    this.src = src;
    this.dst = dst;
    this.succ = csr(n, src, dst);
    this.pred = csr(n, dst, src);
  };

  // adjacency in edge order: list of node i is items[start[i] .. start[i + 1])
  function csr(n, from, to) {
    var start = new Int32Array(n + 1), items = new Int32Array(from.length), fill, e;
    for (e = 0; e < from.length; e++) start[from[e] + 1]++;
    for (e = 0; e < n; e++) start[e + 1] += start[e];
    fill = start.slice(0, n);
    for (e = 0; e < from.length; e++) items[fill[from[e]]++] = to[e];
    return { start: start, items: items };
  }

  function list(adj, i) {
    return Array.prototype.slice.call(adj.items, adj.start[i], adj.start[i + 1]);
  }

  Graph.prototype._notes = function (layers) {
    this.notes = layers.map(function (layer) {
      var values = new Map(), at = 0;
      for (var k = 0; k < layer.ids.length; k++) {
        at += layer.ids[k];
        values.set(at, layer.table[layer.values[k]]);
      }
      return { name: layer.name, values: values };
    });
  };

  // -- node facts ------------------------------------------------------------------------
  Graph.prototype.name = function (i) { return this.strings[this.nameS[i]]; };
  Graph.prototype.path = function (i) { return this.pathS[i] >= 0 ? this.strings[this.pathS[i]] : ""; };
  Graph.prototype.what = function (i) { return this.strings[this.whatS[i]]; };
  Graph.prototype.clsModule = function (i) { return this.clsModS[i] >= 0 ? this.strings[this.clsModS[i]] : ""; };
  Graph.prototype.failed = function (i) { return (this.flags[i] & FAILED) !== 0; };
  Graph.prototype.opaque = function (i) { return (this.flags[i] & OPAQUE) !== 0; };
  Graph.prototype.isBuiltin = function (m) { return this.clsModule(m).indexOf("torch.nn.") === 0; };
  Graph.prototype.dtype = function (t) { return this.tensorKinds[this.tkind[t]][0]; };
  Graph.prototype.device = function (t) { return this.tensorKinds[this.tkind[t]][1]; };
  Graph.prototype.role = function (t) { return this.tensorKinds[this.tkind[t]][2]; };
  Graph.prototype.isParam = function (t) { var r = this.role(t); return r === "parameter" || r === "buffer"; };
  Graph.prototype.method = function (i) { return this.methodS[i] >= 0 ? this.strings[this.methodS[i]] : null; };
  /** ``enc.embed`` for a call of ``enc``'s method ``embed``, else the path (Python's call_name). */
  Graph.prototype.callName = function (i) { var m = this.method(i); return m === null ? this.path(i) : this.path(i) + "." + m; };
  Graph.prototype.sourceName = function (t) { return this.sourceNameS[t] >= 0 ? this.strings[this.sourceNameS[t]] : null; };
  Graph.prototype.field = function (t) { return this.fieldS[t] >= 0 ? this.strings[this.fieldS[t]] : null; };
  Graph.prototype.callEnd = function (m) { return this.end[m]; };
  Graph.prototype.successors = function (i) { return list(this.succ, i); };
  Graph.prototype.predecessors = function (i) { return list(this.pred, i); };

  Graph.prototype.shape = function (t) {
    var s = this.whatS[t], cached = this._shapes[s];
    if (cached === undefined) {
      var text = this.strings[s];
      cached = this._shapes[s] = text === "" ? [] : text.split(",").map(Number);
    }
    return cached;
  };

  Graph.prototype.shapeText = function (t) { return "(" + this.shape(t).join(", ") + ")"; };

  /** ``(1, 3, 224, 224)``, with the dtype when it is not float32 (labels.tensor_text). */
  Graph.prototype.tensorText = function (t) {
    var text = this.shapeText(t), dt = this.dtype(t);
    return dt === "float32" ? text : text + " " + dt;
  };

  Graph.prototype.inputTensors = function (i) {
    var self = this;
    return this.predecessors(i).filter(function (p) { return self.kind[p] === TENSOR; });
  };

  Graph.prototype.outputTensors = function (i) {
    var self = this;
    return this.successors(i).filter(function (s) { return self.kind[s] === TENSOR; });
  };

  /** ``{layer: value}`` of one node, in layer order. */
  Graph.prototype.notesOf = function (i) {
    var out = [];
    this.notes.forEach(function (layer) {
      if (layer.values.has(i)) out.push([layer.name, layer.values.get(i)]);
    });
    return out;
  };

  /** Direct function/module children of every module call, in execution order. */
  Graph.prototype.kids = function (m) {
    if (this._kids === null) {
      var kids = new Map(), i, p;
      for (i = 0; i < this.n; i++) {
        p = this.parent[i];
        if (p < 0 || this.kind[i] === TENSOR) continue;
        if (!kids.has(p)) kids.set(p, []);
        kids.get(p).push(i);
      }
      this._kids = kids;
    }
    return this._kids.get(m) || [];
  };

  /** 1 for module calls that call a submodule. */
  Graph.prototype.hasCalls = function () {
    if (!this._hasCalls) {
      var h = new Uint8Array(this.n);
      for (var i = 0; i < this.n; i++) if (this.kind[i] === MODULE && this.parent[i] >= 0) h[this.parent[i]] = 1;
      this._hasCalls = h;
    }
    return this._hasCalls;
  };

  // -- folds (transform/fold.py) ---------------------------------------------------------
  function shapeKeys(g, ids) {
    var out = [];
    for (var k = 0; k < ids.length; k++) if (g.kind[ids[k]] === TENSOR) out.push(g.whatS[ids[k]]);
    return out.join(" ");
  }

  /** Whether calls ``a`` and ``b`` did the same computation, node by node. */
  Graph.prototype.sameCall = function (a, b) {
    if (this.whatS[a] !== this.whatS[b] || this.clsModS[a] !== this.clsModS[b]) return false;
    if (this.methodS[a] !== this.methodS[b]) return false;
    if (this.failed(a) || this.failed(b)) return false;
    var ea = this.end[a], eb = this.end[b];
    if (ea - a !== eb - b || this.opaque(a) !== this.opaque(b)) return false;
    if (shapeKeys(this, this.predecessors(a)) !== shapeKeys(this, this.predecessors(b))) return false;
    if (shapeKeys(this, this.successors(a)) !== shapeKeys(this, this.successors(b))) return false;
    var off = b - a, kind = this.kind, parent = this.parent;
    for (var x = a + 1; x < ea; x++) {
      var y = x + off;
      if (kind[x] !== kind[y]) return false;
      if (Math.max(parent[x], 0) - a !== Math.max(parent[y], 0) - b) return false;
      if (kind[x] === TENSOR) {
        if (this.whatS[x] !== this.whatS[y] || this.dtype(x) !== this.dtype(y)) return false;
      } else if (this.whatS[x] !== this.whatS[y] || this.methodS[x] !== this.methodS[y]) {
        return false; // op of a function, class (and method) of a module
      }
    }
    return true;
  };

  /** For two calls of one module (``b`` after ``a``) that did the same computation: pairs
   * ``[id in b, its counterpart in a]`` (``b`` itself first), parameters and buffers left
   * out (only the first call made nodes for them); else null (transform/fold.py). */
  Graph.prototype.counterparts = function (a, b) {
    if (this.whatS[a] !== this.whatS[b] || this.clsModS[a] !== this.clsModS[b]) return null;
    if (this.methodS[a] !== this.methodS[b] || this.failed(a) || this.failed(b)) return null;
    if (this.opaque(a) !== this.opaque(b)) return null;
    if (shapeKeys(this, this.predecessors(a)) !== shapeKeys(this, this.predecessors(b))) return null;
    if (shapeKeys(this, this.successors(a)) !== shapeKeys(this, this.successors(b))) return null;
    var self = this, kind = this.kind, parent = this.parent;
    function inner(m) {
      var ids = [];
      for (var i = m + 1; i < self.end[m]; i++) if (!(kind[i] === TENSOR && self.isParam(i))) ids.push(i);
      return ids;
    }
    var xs = inner(a), ys = inner(b);
    if (xs.length !== ys.length) return null;
    var pairs = new Map([[a, b]]), out = [[b, a]];
    for (var k = 0; k < xs.length; k++) {
      var x = xs[k], y = ys[k];
      if (kind[x] !== kind[y] || pairs.get(Math.max(parent[x], 0)) !== parent[y]) return null;
      if (kind[x] === TENSOR) {
        if (this.whatS[x] !== this.whatS[y] || this.dtype(x) !== this.dtype(y)) return null;
      } else if (this.whatS[x] !== this.whatS[y] || this.methodS[x] !== this.methodS[y]) {
        return null;
      }
      pairs.set(x, y);
      out.push([y, x]);
    }
    return out;
  };

  /** Whether ``cur`` takes a tensor that ``prev`` produced (or returned). */
  Graph.prototype.fedBy = function (prev, cur) {
    var end = this.end[prev], ins = this.predecessors(cur);
    for (var k = 0; k < ins.length; k++) {
      var t = ins[k];
      if (prev < t && t < end) return true;
      if (this.predecessors(t).indexOf(prev) >= 0) return true;
    }
    return false;
  };

  /** Foldable runs among one module's children: ``[[calls...], period]`` pairs. */
  Graph.prototype.runs = function (m) {
    if (!this._runs) this._runs = new Map();
    var cached = this._runs.get(m);
    if (cached) return cached;
    var out = [], segment = [], kids = this.kids(m).concat([-1]);
    for (var q = 0; q < kids.length; q++) {
      var id = kids[q];
      if (id >= 0 && this.kind[id] === MODULE) {
        segment.push(id);
        continue;
      }
      var i = 0;
      while (i < segment.length) {
        var best = 0, bestLen = 0;
        for (var p = 1; p <= MAX_PERIOD; p++) {
          var j = i + p;
          while (j < segment.length && this.sameCall(segment[j - p], segment[j]) && this.fedBy(segment[j - 1], segment[j])) j++;
          var covered = Math.floor((j - i) / p) * p;
          if (covered >= 2 * p && covered > bestLen) {
            best = p;
            bestLen = covered;
          }
        }
        if (best) {
          out.push([segment.slice(i, i + bestLen), best]);
          i += bestLen;
        } else {
          i += 1;
        }
      }
      segment = [];
    }
    this._runs.set(m, out);
    return out;
  };

  TV.Graph = Graph;
  TV.TENSOR = TENSOR;
  TV.FUNCTION = FUNCTION;
  TV.MODULE = MODULE;
})();
