/* tensorview viewer, part 2: which calls are drawn as boxes, which are opened, which
 * fold, and what rolls (ports of tensorview/transform/scope.py and roll.py), with the
 * viewer's state on top of the user's ViewOptions (``st.opts``):
 *   st.open:   module id -> true/false, the calls the user opened or closed by clicking;
 *   st.fold:   which runs of repeated sibling calls fold: "none", "auto" (3 or more
 *              repeats of different paths) or "all";
 *   st.foldAt: first call of a run -> the repeat to draw opened inside the fold's box
 *              (null: closed), else ``open_folds`` decides (``st.repeat``, null: closed).
 * An opened fold draws one repeat; the others are ghosts, never drawn, their nodes mapped
 * onto the drawn repeat's (foldCanon).
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var FUNCTION = TV.FUNCTION, MODULE = TV.MODULE;
  var FOLD_AUTO_REPEATS = 3;

  /** Whether a run ``(calls, period)`` folds under ``mode``. */
  function selects(g, mode, run, period) {
    if (mode === "all") return true;
    if (mode !== "auto" || Math.floor(run.length / period) < FOLD_AUTO_REPEATS) return false;
    var paths = new Set(run.map(function (m) { return g.pathS[m]; }));
    return paths.size === run.length; // one module called again and again is a loop: roll draws it
  }

  function scope(g, st, mode) {
    var n = g.n, opts = st.opts, hasCalls = g.hasCalls();
    var s = {
      boxOf: new Int32Array(n).fill(-1),
      opened: new Uint8Array(n),
      region: new Int32Array(n).fill(-1),
      fregion: new Int32Array(n).fill(-1),
      ghost: new Uint8Array(n),
      ghostTop: new Int32Array(n).fill(-1),
      members: new Map(), // fold head -> its calls
      period: new Map(), // fold head -> calls per repeat
      open: new Map(), // opened fold's cluster (first call of the repeat drawn) -> head
      shadow: new Map(), // ghost call -> the drawn call it maps onto
      span: new Map(), // ghost call -> [first id, end, parent call] of its fold
      visible: 0,
    };
    var boxOf = s.boxOf, region = s.region, fregion = s.fregion, ghost = s.ghost, ghostTop = s.ghostTop;
    var headOf = new Map(), shown = new Map(), heads = new Map();

    // a ghost repeat's call is decided as its counterpart in the repeat drawn
    function shownAs(i) {
      var top = ghostTop[i];
      return top < 0 ? i : i - (top - s.shadow.get(top));
    }

    function leaf(m) {
      return g.opaque(m) || g.end[m] === m + 1 || (opts.hide_module_functions && g.isBuiltin(m) && !hasCalls[m]);
    }

    function find(m) {
      if (mode === "none") return;
      g.runs(m).forEach(function (r) {
        var run = r[0], period = r[1], head = run[0];
        if (!selects(g, mode, run, period)) return;
        s.members.set(head, run);
        s.period.set(head, period);
        var k = st.foldAt.has(head) ? st.foldAt.get(head) : st.repeat;
        if (k === null || k === undefined) {
          for (var j = 1; j < run.length; j++) headOf.set(run[j], head);
          return;
        }
        var count = Math.floor(run.length / period);
        k = (((Math.min(Math.max(k, -count), count - 1)) % count) + count) % count;
        var drawn = run.slice(k * period, (k + 1) * period);
        s.open.set(drawn[0], head);
        var span = [head, g.end[run[run.length - 1]], m];
        run.forEach(function (call, j) {
          heads.set(call, head);
          if (k * period <= j && j < (k + 1) * period) shown.set(call, drawn[0]);
          else {
            s.shadow.set(call, drawn[j % period]);
            s.span.set(call, span);
          }
        });
      });
    }

    for (var i = 0; i < n; i++) {
      var kind = g.kind[i], p = g.parent[i];
      if (p < 0) {
        if (kind !== MODULE) continue;
        var o = st.open.get(i);
        var closed = g.end[i] === i + 1 || g.opaque(i) || (o !== undefined ? !o : opts.depth === 0);
        if (closed) {
          boxOf[i] = i;
          s.visible++;
        } else {
          s.opened[i] = 1;
          find(i);
        }
        continue;
      }
      ghost[i] = ghost[p];
      ghostTop[i] = ghostTop[p];
      var b = boxOf[p];
      if (b >= 0) {
        boxOf[i] = b;
        if (kind === MODULE) {
          region[i] = region[p];
          fregion[i] = fregion[p];
        }
        continue;
      }
      if (kind === FUNCTION) {
        s.visible += ghost[i] ? 0 : 1;
      } else if (kind === MODULE) {
        region[i] = g.parent[p] >= 0 ? p : -1;
        fregion[i] = fregion[p];
        var head = headOf.get(i);
        if (head !== undefined) {
          boxOf[i] = head;
          continue;
        }
        var cluster = -1, isBox;
        if (heads.has(i)) { // a call of an opened fold: opened whatever the depth
          if (s.shadow.has(i)) {
            ghost[i] = 1;
            if (ghostTop[i] < 0) ghostTop[i] = i;
          } else {
            cluster = fregion[i] = shown.get(i);
          }
          isBox = leaf(i);
        } else if (g.opaque(i) || g.end[i] === i + 1) {
          isBox = true; // nothing inside to show
        } else if (st.open.has(shownAs(i)) && !s.members.has(i)) {
          isBox = !st.open.get(shownAs(i)); // the user opened or closed it (or its drawn counterpart)
        } else {
          isBox = s.members.has(i) || g.depth[i] >= opts.depth || leaf(i);
        }
        if (isBox) {
          boxOf[i] = i;
          s.visible += ghost[i] ? 0 : 1;
          if (cluster >= 0) region[i] = cluster;
        } else {
          s.opened[i] = 1;
          region[i] = i;
          find(i);
        }
      }
    }
    return s;
  }

  // -- what a node is drawn as (transform/roll.py) ----------------------------------------
  /** Ghost repeats map onto the repeat drawn, inner folds first. */
  function foldCanon(g, s) {
    var n = g.n, canon = new Int32Array(n);
    for (var i = 0; i < n; i++) canon[i] = i;
    var ghosts = Array.from(s.shadow.keys());
    ghosts.sort(function (a, b) { return g.depth[b] - g.depth[a] || a - b; });
    ghosts.forEach(function (m) {
      var off = m - s.shadow.get(m), end = g.end[m];
      for (var j = m; j < end; j++) canon[j] = canon[j - off];
    });
    return canon;
  }

  /** Roll: repeated calls of one path drawn as the first. */
  function canonical(g, s, canon) {
    var first = new Map(), outputs = new Set(g.outputs);
    for (var i = 0; i < g.n; i++) {
      if (g.kind[i] !== MODULE) continue;
      var key = g.pathS[i] + ":" + g.methodS[i]; // repeated calls of one path and method
      if (!first.has(key)) first.set(key, i);
      var f = first.get(key);
      if (f === i) continue;
      if (s.boxOf[i] === i && s.boxOf[f] === f && !s.members.has(i) && !s.members.has(f)) {
        canon[i] = canon[f];
      } else if (s.opened[i] && s.opened[f]) {
        var pairs = g.counterparts(f, i) || [];
        for (var k = 0; k < pairs.length; k++) {
          // an output of the model is drawn as itself, named as returned
          if (!outputs.has(pairs[k][0])) canon[pairs[k][0]] = canon[pairs[k][1]];
        }
      }
    }
    return canon;
  }

  TV.scope = { scope: scope, selects: selects, foldCanon: foldCanon, canonical: canonical, FOLD_AUTO_REPEATS: FOLD_AUTO_REPEATS };
})();
