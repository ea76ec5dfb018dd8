/* tensorview viewer, part 4: layout off the page's thread.
 *
 * The layout engine (``tensorview.engineSource``, kept by boot.js: elkjs, or dagre with
 * its adapter dagre.js) runs in a Web Worker made from a ``blob:`` URL of its own text, so
 * a page opened from ``file://``, a notebook output and a sandboxed iframe all get one
 * without fetching anything.  Both engines answer elkjs's worker messages (``register``,
 * ``layout``) with ELK's result form; one worker serves every viewer of the page.
 * ``cancel(owner)`` ends a viewer's layouts: the worker is stopped and a new one takes the
 * other viewers' layouts.  Where no worker can be made (a Content-Security-Policy without
 * ``worker-src blob:``), the engine runs in the page.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var ALGORITHMS = ["layered"];
  var worker = null, url = null, next = 1, jobs = new Map(), inPage = false, elk = null;

  function received(ev) {
    var d = ev.data, job = jobs.get(d.id);
    if (!job) return;
    jobs.delete(d.id);
    if (d.error) job.reject(new Error(d.error.message || d.error.g || String(d.error)));
    else job.resolve(d.data);
  }

  function start() {
    // elkjs answers messages once made; dagre.js sets its own handler
    var tail = TV.engine === "dagre" ? "\n" : "\n;new self.ELK();\n";
    if (!url) url = URL.createObjectURL(new Blob([TV.engineSource, tail], { type: "text/javascript" }));
    var w = new Worker(url);
    w.onmessage = received;
    w.onerror = function (ev) {
      // the worker could not start or broke: its layouts run in the page instead
      if (ev && ev.preventDefault) ev.preventDefault();
      if (worker === w) stop();
      inPage = true;
      var left = Array.from(jobs.values());
      jobs.clear();
      left.forEach(function (job) { runInPage(job); });
    };
    w.postMessage({ cmd: "register", algorithms: ALGORITHMS, id: 0 });
    return w;
  }

  function stop() {
    if (worker) worker.terminate();
    worker = null;
  }

  function runInPage(job) {
    try {
      if (!window.ELK && !window.tvDagreLayout) {
        var s = document.createElement("script");
        // a UMD header must not see RequireJS (the classic notebook): elkjs then sets
        // window.ELK, dagre.js window.tvDagreLayout
        s.text = "(function (define, module, exports) {\n" + TV.engineSource + "\n}).call(window);";
        (document.head || document.documentElement).appendChild(s);
        s.remove();
      }
      if (window.tvDagreLayout) {
        Promise.resolve(job.graph).then(window.tvDagreLayout).then(job.resolve, job.reject);
        return;
      }
      if (elk === null) elk = new window.ELK();
      elk.layout(job.graph).then(job.resolve, job.reject);
    } catch (err) {
      job.reject(err);
    }
  }

  function post(job) {
    if (!inPage && !worker) {
      try {
        worker = start();
      } catch (err) {
        inPage = true; // no worker here (CSP, an old browser)
      }
    }
    if (inPage) return runInPage(job);
    jobs.set(job.id, job);
    worker.postMessage({ cmd: "layout", graph: job.graph, layoutOptions: {}, options: {}, id: job.id });
  }

  /** Lay out the ELK graph ``graph`` for ``owner`` (a viewer); resolves to ELK's result form. */
  function layout(graph, owner) {
    return new Promise(function (resolve, reject) {
      if (!TV.engineSource && !window.ELK && !window.tvDagreLayout) return reject(new Error("the layout library is not loaded"));
      if (!TV.engineSource) inPage = true;
      post({ id: next++, graph: graph, owner: owner, resolve: resolve, reject: reject });
    });
  }

  /** Stop the layouts of ``owner``; the others go on in a new worker.  Returns whether
   * one was running. */
  function cancel(owner) {
    var mine = Array.from(jobs.values()).filter(function (j) { return j.owner === owner; });
    if (!mine.length) return false;
    var others = Array.from(jobs.values()).filter(function (j) { return j.owner !== owner; });
    stop();
    jobs.clear();
    mine.forEach(function (job) {
      var err = new Error("layout cancelled");
      err.cancelled = true;
      job.reject(err);
    });
    others.forEach(post);
    return true;
  }

  TV.worker = {
    layout: layout,
    cancel: cancel,
    /** Where layouts run: "worker", "page" or "none" yet. */
    where: function () { return inPage ? "page" : worker ? "worker" : "none"; },
  };
})();
