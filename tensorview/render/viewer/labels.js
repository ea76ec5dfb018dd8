/* tensorview viewer, part 4: label text of drawn nodes (render/labels.py, without the
 * annotation lines, which the details panel shows). */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var TENSOR = TV.TENSOR, MODULE = TV.MODULE;
  var MAX_SHAPES = 4;
  var MAX_OP_INPUTS = 2; // input shapes shown on an op
  var OP_LINE = 48; // an op's "in → out" line longer than this is split in two

  /** ``layers.0–79`` for ``layers.0`` ... ``layers.79``; ``a–b`` otherwise. */
  function span(paths) {
    var first = paths[0], last = paths[paths.length - 1];
    var i = first.lastIndexOf("."), j = last.lastIndexOf(".");
    var head = first.slice(0, Math.max(i, 0)), a = first.slice(i + 1);
    var head2 = last.slice(0, Math.max(j, 0)), b = last.slice(j + 1);
    if (head === head2 && /^[0-9]+$/.test(a) && /^[0-9]+$/.test(b)) return head ? head + "." + a + "–" + b : a + "–" + b;
    return first + "–" + last;
  }

  /** ``layers.0–79: LlamaDecoderLayer ×80`` (``0–11: Linear, ReLU ×6`` for a group). */
  function foldTitle(g, members, period) {
    var paths = members.map(function (m) { return g.path(m); });
    var cls = members.slice(0, period).map(function (m) { return g.what(m); }).join(", ");
    return span(paths) + ": " + cls + " ×" + (Math.floor(members.length / period) || 1);
  }

  function tensorTexts(g, ids) {
    var texts = ids.slice(0, MAX_SHAPES).map(function (t) { return g.tensorText(t); });
    if (ids.length > MAX_SHAPES) texts.push("…+" + (ids.length - MAX_SHAPES));
    return texts.length ? texts.join(", ") : "()";
  }

  function distinctTexts(g, ids) {
    var texts = Array.from(new Set(ids.map(function (t) { return g.tensorText(t); })));
    var more = texts.length > MAX_SHAPES ? ", …+" + (texts.length - MAX_SHAPES) : "";
    return texts.slice(0, MAX_SHAPES).join(", ") + more;
  }

  /** ``past_key_values (80 × 2 tensors)``: the field and how its tensors are arranged. */
  function groupTitle(g, ids) {
    var first = ids[0], field = g.field(first) || g.sourceName(first) || g.name(first);
    var paths = ids.map(function (t) {
      var name = g.sourceName(t) || "", rest = name.indexOf(field) === 0 ? name.slice(field.length) : name;
      return (rest.match(/\.([^.[]*)|\[([^\]]*)\]/g) || []);
    });
    var count = String(ids.length);
    var lengths = new Set(paths.map(function (p) { return p.length; }));
    if (lengths.size === 1) {
      var sizes = [];
      for (var k = 0; k < paths[0].length; k++) {
        var distinct = new Set(paths.map(function (p) { return p[k]; })).size;
        if (distinct > 1) sizes.push(distinct);
      }
      var product = sizes.reduce(function (x, y) { return x * y; }, 1);
      if (sizes.length > 1 && product === ids.length) count = sizes.join(" × ");
    }
    return field + " (" + count + " tensors)";
  }

  /** ``→ out``, or ``in → out`` when the op's tensor arguments (parameters left out) differ
   * from its results; at most two input shapes, on their own line when one is too long. */
  function opShapes(g, id) {
    var outs = g.outputTensors(id), out = "→ " + tensorTexts(g, outs);
    var ins = g.inputTensors(id).filter(function (t) { return !g.isParam(t); });
    var text = function (t) { return g.tensorText(t); };
    var a = new Set(ins.map(text)), b = new Set(outs.map(text));
    var same = a.size === b.size && Array.from(a).every(function (x) { return b.has(x); });
    if (!ins.length || same) return [out];
    var texts = ins.slice(0, MAX_OP_INPUTS).map(text);
    if (ins.length > MAX_OP_INPUTS) texts.push("…+" + (ins.length - MAX_OP_INPUTS));
    var line = texts.join(", ");
    return line.length + out.length < OP_LINE ? [line + " " + out] : [line, out];
  }

  function folded(v) { return v.members ? Math.floor(v.members.length / v.period) || 1 : 1; }

  function moduleTitle(g, v) {
    if (v.members) return foldTitle(g, v.members, v.period);
    return g.path(v.id) ? g.callName(v.id) + ": " + g.what(v.id) : g.what(v.id);
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
    } else if (v.group && v.leaves) { // the viewer's own groups (view.groupLeaves)
      lines = [v.group.length + (v.isOutput ? " outputs" : v.isInput ? " inputs" : " tensors")];
      if (shapes) lines.push(distinctTexts(g, v.group));
    } else if (v.group) {
      lines = [groupTitle(g, v.group)];
      if (shapes) lines.push(distinctTexts(g, v.group));
    } else if (v.kind === TENSOR) {
      lines = [g.sourceName(i) || g.name(i)];
      if (g.isParam(i)) {
        var size = g.shape(i).reduce(function (x, y) { return x * y; }, 1);
        lines.push(g.shapeText(i) + " " + g.dtype(i), size.toLocaleString("en-US") + " elements");
      } else if (shapes) lines.push(g.tensorText(i));
    } else {
      lines = [g.what(i)];
      if (v.calls > 1) lines.push("×" + v.calls + " calls");
      if (shapes) lines = lines.concat(opShapes(g, i));
    }
    return lines;
  }

  TV.labels = { labelLines: labelLines, moduleTitle: moduleTitle, foldTitle: foldTitle, span: span, folded: folded };
  Object.assign(TV.view, TV.labels);
})();
