/* tensorview viewer, part 0: the start of one viewer output (render/html.py writes it
 * into an HTML comment; a one-line script runs it).
 *
 * An output is a run of HTML comments and that script: ``tv:lib:`` (a layout engine,
 * elkjs or dagre, and the viewer, gzip + base64), ``tv:data:`` (the graph and the
 * configuration, gzip + base64) and ``tv:boot:`` (this code).  Comments are what sanitisers drop and what untrusted
 * notebooks never run, so where scripts cannot run the output shows nothing (its
 * picture is another output).  Where they can, this code puts a host element before
 * the script, unpacks the library once per page (or uses one another output unpacked)
 * and mounts the viewer.  Nothing here may contain two dashes in a row, which would
 * end a comment early in some parsers (checked in html.py).
 */
(function () {
  "use strict";
  var me = document.currentScript, script = me && me.previousSibling, parts = {};
  for (var n = script && script.previousSibling; n; n = n.previousSibling) {
    if (n.nodeType === 3 && !/\S/.test(n.data)) continue;
    if (n.nodeType !== 8) break;
    var m = /^tv:(\w+):/.exec(n.data);
    if (m && !(m[1] in parts)) parts[m[1]] = n.data.slice(m[0].length);
  }
  if (!script || !parts.data) return;
  var host = document.createElement("div");
  host.className = "tv-host";
  host.style.height = parts.height ? parts.height.trim() + "px" : "100%";
  script.parentNode.insertBefore(host, script);

  function say(text) {
    host.textContent = "tensorview: " + text;
  }

  function bytes(b64) {
    var bin = atob(b64.replace(/\s+/g, "")), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i += 1) out[i] = bin.charCodeAt(i);
    return out;
  }

  /** The text of gzip + base64 ``b64`` (the browser's DecompressionStream). */
  function gunzip(b64) {
    var stream = new Blob([bytes(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function run(code) {
    var s = document.createElement("script");
    s.text = code;
    (document.head || document.documentElement).appendChild(s);
    s.remove();
  }

  /** The viewer library of this page: unpacked by the first output that needs it, and
   * again by an output whose layout engine (``tv:engine:``) the page has not loaded. */
  function library() {
    var engine = parts.engine ? parts.engine.trim() : "", own = (window.__tensorview_engines = window.__tensorview_engines || {});
    if (engine && own[engine]) return own[engine];
    if (window.__tensorview_library && (!parts.lib || !engine)) return window.__tensorview_library;
    if (!parts.lib) return Promise.reject(new Error("this output does not carry the viewer library (library=False) and no other output on the page loaded it"));
    var loading = gunzip(parts.lib).then(function (text) {
      var cut = text.indexOf("\n/*tv:viewer*/\n");
      if (!(window.tensorview && window.tensorview.mount)) run(text.slice(cut));
      var TV = window.tensorview, m = /^\/\*tv:engine:(\w+)\*\//.exec(text), name = m ? m[1] : "elk";
      // the layout engines (html.py ENGINES), each answering in ELK's form: a viewer uses
      // its own (worker.js), else the page's first
      TV.engines = TV.engines || {};
      if (!TV.engines[name]) TV.engines[name] = text.slice(0, cut);
      if (!TV.engineSource) {
        TV.engine = name;
        TV.engineSource = TV.engines[name];
      }
      return TV;
    });
    if (!window.__tensorview_library) window.__tensorview_library = loading;
    if (engine) own[engine] = loading;
    loading.catch(function () {
      if (window.__tensorview_library === loading) window.__tensorview_library = null;
      if (own[engine] === loading) delete own[engine];
    });
    return loading;
  }

  // the picture output shown just before this one (notebook.py: ``tv:picture:``), when both
  // are in this document (JupyterLab, Notebook 7, nbconvert, the classic notebook)
  function hidePicture() {
    var area = parts.picture && host.closest(".jp-OutputArea-child, .output_area");
    var prev = area && area.previousElementSibling;
    var image = ".jp-RenderedSVG, .jp-RenderedImage, .output_svg, .output_png";
    if (prev && prev.matches(".jp-OutputArea-child, .output_area") && prev.querySelector(image)) prev.style.display = "none";
  }

  if (typeof DecompressionStream === "undefined") {
    say("this browser cannot unpack the viewer (it needs DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later).");
    return;
  }
  say("loading the interactive viewer…");
  // a task of its own for each step, so that none holds the page for long
  function later(value) {
    return new Promise(function (resolve) { setTimeout(function () { resolve(value); }, 0); });
  }

  Promise.all([library().then(later), gunzip(parts.data)])
    .then(function (got) {
      return later([got[0], JSON.parse(got[1])]);
    })
    .then(function (got) {
      var TV = got[0], payload = got[1];
      if (!host.isConnected) return; // the output was removed meanwhile
      host.textContent = "";
      TV.addStyle(host);
      TV.mount(host, payload.graph, payload.config);
      hidePicture();
    })
    .catch(function (err) {
      if (host.isConnected) say("the viewer could not start: " + (err && err.message ? err.message : String(err)));
    });
})();
