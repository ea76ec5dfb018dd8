/* tensorview viewer, part 2: which calls are drawn as boxes, which are opened, and
 * what rolls (ports of tensorview/transform/scope.py and roll.py), with the viewer's
 * state on top of the user's ViewOptions:
 *   open:   module id -> true/false, the calls the user opened or closed by clicking;
 *   foldAt: first call of a folded run -> which repeat to show inside the opened fold
 *           (the repeats before and after it stay folded in two boxes, and closed).
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var FUNCTION = TV.FUNCTION, MODULE = TV.MODULE;

  // -- which calls are boxes, opened, or hidden (transform/scope.py) -------------------------
  function scope(g, st, fold) {
    var n = g.n, opts = st.opts, hasCalls = g.hasCalls();
    var s = {
      boxOf: new Int32Array(n).fill(-1),
      opened: new Uint8Array(n),
      region: new Int32Array(n).fill(-1),
      home: new Int32Array(n).fill(-1),
      members: new Map(),
      period: new Map(),
      runOf: new Map(), // head of a folded box -> first call of the whole run
      folds: [], // opened folds
      visible: 0,
    };
    var boxOf = s.boxOf, region = s.region, headOf = new Map(), place = new Map();
    var rest = new Set(); // calls of opened folds besides the repeat shown: closed unless opened

    function isBox(m, root) {
      if (g.end[m] === m + 1 || g.opaque(m)) return true; // nothing inside to show
      var o = st.open.get(m);
      if (o !== undefined) return !o;
      if (root) return opts.depth === 0;
      if (rest.has(m)) return true;
      return g.depth[m] >= opts.depth || (opts.hide_module_functions && g.isBuiltin(m) && !hasCalls[m]);
    }

    function setFold(ids, period, runHead) {
      s.members.set(ids[0], ids);
      s.period.set(ids[0], period);
      s.runOf.set(ids[0], runHead);
      for (var k = 1; k < ids.length; k++) headOf.set(ids[k], ids[0]);
    }

    function foldChildren(m) {
      if (!fold) return;
      g.runs(m).forEach(function (r) {
        var run = r[0], period = r[1], head = run[0], at = st.foldAt.get(head);
        if (at === undefined) return setFold(run, period, head);
        var groups = run.length / period;
        at = Math.max(0, Math.min(groups - 1, at));
        var f = { id: n + head, head: head, run: run, period: period, at: at, parent: g.parent[m] >= 0 ? m : -1 };
        s.folds.push(f);
        run.forEach(function (x) { place.set(x, f.id); });
        var before = run.slice(0, at * period), after = run.slice((at + 1) * period);
        before.concat(after).forEach(function (x) { rest.add(x); });
        if (before.length >= 2 * period) setFold(before, period, head);
        if (after.length >= 2 * period) setFold(after, period, head);
      });
    }

    for (var i = 0; i < n; i++) {
      var k = g.kind[i], p = g.parent[i];
      if (p < 0) {
        if (k !== MODULE) continue;
        if (isBox(i, true)) {
          boxOf[i] = i;
          s.visible++;
        } else {
          s.opened[i] = 1;
          foldChildren(i);
        }
        continue;
      }
      var b = boxOf[p];
      if (b >= 0) {
        boxOf[i] = b;
        if (k === MODULE) region[i] = region[p];
        continue;
      }
      if (k === FUNCTION) {
        s.visible++;
      } else if (k === MODULE) {
        var where = place.has(i) ? place.get(i) : g.parent[p] >= 0 ? p : -1;
        region[i] = s.home[i] = where;
        var head = headOf.get(i);
        if (head !== undefined) {
          boxOf[i] = head;
        } else if (s.members.has(i) || isBox(i, false)) {
          boxOf[i] = i;
          s.visible++;
        } else {
          s.opened[i] = 1;
          region[i] = i;
          foldChildren(i);
        }
      }
    }
    return s;
  }

  // -- roll: repeated calls of one path drawn as the first (transform/roll.py) -----------------
  function canonical(g, s) {
    var n = g.n, canon = new Int32Array(n), first = new Map();
    for (var i = 0; i < n; i++) canon[i] = i;
    for (i = 0; i < n; i++) {
      if (g.kind[i] !== MODULE) continue;
      var key = g.pathS[i];
      if (!first.has(key)) first.set(key, i);
      var f = first.get(key);
      if (f === i) continue;
      if (s.boxOf[i] === i && s.boxOf[f] === f && !s.members.has(i) && !s.members.has(f)) {
        canon[i] = canon[f];
      } else if (s.opened[i] && s.opened[f] && g.sameCall(f, i)) {
        var off = i - f, end = g.end[i];
        for (var j = i; j < end; j++) canon[j] = canon[j - off];
      }
    }
    return canon;
  }

  TV.scope = { scope: scope, canonical: canonical };
})();
