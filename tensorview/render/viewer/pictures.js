/* tensorview viewer, part 10: a click shows a wide static picture at full size.
 *
 * A picture wider than the output is drawn at the output's width (render/formats.py
 * ``scaled_svg``).  Where it is drawn inline its own event attributes toggle its size;
 * where it is an ``<img>`` (JupyterLab, nbconvert) nothing inside it may run, so once a
 * viewer starts on a page, this script watches the page's clicks: a click on a scaled
 * tensorview picture shows it at its full width (``data-full-width`` in its SVG text), its
 * output scrolling sideways; a second click scales it back.  Where no script runs (an
 * untrusted notebook, GitHub, sanitised HTML) the picture stays scaled.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var widths = new WeakMap();

  /** The full width of ``img`` when it shows a wide tensorview picture, else "". */
  function fullWidth(img) {
    if (widths.has(img)) return widths.get(img);
    var src = img.getAttribute("src") || "", text = "", out = "";
    if (src.indexOf("data:image/svg+xml") === 0) {
      var comma = src.indexOf(","), head = src.slice(0, comma), body = src.slice(comma + 1);
      try {
        text = /;base64$/.test(head) ? atob(body.slice(0, 4096)) : decodeURIComponent(body.slice(0, 4096).replace(/%[0-9a-f]?$/i, ""));
      } catch (err) {
        text = "";
      }
      var m = /<svg\b[^>]*data-tensorview="picture"[^>]*data-full-width="(\d+px)"/.exec(text);
      if (m) out = m[1];
    }
    widths.set(img, out);
    return out;
  }

  function toggle(img, full) {
    var big = img.getAttribute("data-tv-full") !== "1";
    img.setAttribute("data-tv-full", big ? "1" : "0");
    img.style.width = big ? full : "";
    img.style.maxWidth = big ? "none" : "";
    img.style.cursor = big ? "zoom-out" : "zoom-in";
    if (img.parentNode) img.parentNode.style.overflowX = big ? "auto" : "";
  }

  function picture(ev) {
    var img = ev.target;
    return img && img.tagName === "IMG" && fullWidth(img) ? img : null;
  }

  /** Watch ``doc``'s clicks for wide pictures (once per document). */
  function watch(doc) {
    if (!doc || doc.__tensorviewPictures) return;
    doc.__tensorviewPictures = true;
    doc.addEventListener("click", function (ev) {
      var img = picture(ev);
      if (img) toggle(img, fullWidth(img));
    });
    doc.addEventListener("mouseover", function (ev) {
      var img = picture(ev);
      if (img && !img.style.cursor) img.style.cursor = "zoom-in";
    });
  }

  TV.pictures = { watch: watch, fullWidth: fullWidth };
})();
