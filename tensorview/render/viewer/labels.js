/* tensorview viewer, part 4: label text of drawn nodes (render/labels.py, without the
 * annotation lines, which the details panel shows). */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var TENSOR = TV.TENSOR, MODULE = TV.MODULE;
  var MAX_SHAPES = 4;

  function span(paths) {
    var first = paths[0], last = paths[paths.length - 1];
    var i = first.lastIndexOf("."), j = last.lastIndexOf(".");
    var head = first.slice(0, Math.max(i, 0)), a = first.slice(i + 1);
    var head2 = last.slice(0, Math.max(j, 0)), b = last.slice(j + 1);
    if (head === head2 && /^[0-9]+$/.test(a) && /^[0-9]+$/.test(b)) return head ? head + "." + a + "–" + b : a + "–" + b;
    return first + "–" + last;
  }

  function tensorTexts(g, ids) {
    var texts = ids.slice(0, MAX_SHAPES).map(function (t) { return g.tensorText(t); });
    if (ids.length > MAX_SHAPES) texts.push("…+" + (ids.length - MAX_SHAPES));
    return texts.length ? texts.join(", ") : "()";
  }

  function folded(v) { return v.members ? Math.floor(v.members.length / v.period) || 1 : 1; }

  function moduleTitle(g, v) {
    var cls = g.what(v.id);
    if (v.members) {
      var paths = v.members.map(function (m) { return g.path(m); });
      if (v.period > 1) cls = v.members.slice(0, v.period).map(function (m) { return g.what(m); }).join(", ");
      return span(paths) + ": " + cls + " ×" + folded(v);
    }
    return g.path(v.id) ? g.path(v.id) + ": " + cls : cls;
  }

  function labelLines(g, v, shapes) {
    var i = v.id, lines;
    if (v.kind === MODULE) {
      lines = [moduleTitle(g, v)];
      if (v.calls > 1) lines.push("×" + v.calls + " calls");
      if (shapes) {
        var last = v.members ? v.members[v.members.length - 1] : i;
        lines.push(tensorTexts(g, g.inputTensors(i)) + " → " + tensorTexts(g, g.outputTensors(last)));
      }
    } else if (v.group) {
      var texts = new Set(v.group.map(function (t) { return g.tensorText(t); }));
      lines = [v.group.length + (v.isOutput ? " outputs" : v.isInput ? " inputs" : " tensors")];
      if (shapes) lines.push(texts.size === 1 ? Array.from(texts)[0] + " each" : texts.size + " shapes");
    } else if (v.kind === TENSOR) {
      lines = [g.sourceName(i) || g.name(i)];
      if (g.isParam(i)) {
        var size = g.shape(i).reduce(function (x, y) { return x * y; }, 1);
        lines.push(g.shapeText(i) + " " + g.dtype(i), size.toLocaleString("en-US") + " elements");
      } else if (shapes) lines.push(g.tensorText(i));
    } else {
      lines = [g.what(i)];
      if (v.calls > 1) lines.push("×" + v.calls + " calls");
      if (shapes) lines.push("→ " + tensorTexts(g, g.outputTensors(i)));
    }
    return lines;
  }

  TV.labels = { labelLines: labelLines, moduleTitle: moduleTitle, span: span, folded: folded };
  Object.assign(TV.view, TV.labels);
})();
