/* tensorview viewer, part 4: layout off the page's thread.
 *
 * elkjs lays out in a Web Worker made from a ``blob:`` URL of its own text
 * (``tensorview.elkSource``, kept by boot.js), so a page opened from ``file://``, a
 * notebook output and a sandboxed iframe all get one without fetching anything.  elkjs,
 * run in a worker, answers elkjs's own messages (``register``, ``layout``); one worker
 * serves every viewer of the page.  ``cancel(owner)`` ends a viewer's layouts: the worker
 * is stopped and a new one takes the other viewers' layouts.  Where no worker can be made
 * (a Content-Security-Policy without ``worker-src blob:``), elkjs runs in the page.
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
    if (!url) url = URL.createObjectURL(new Blob([TV.elkSource, "\n;new self.ELK();\n"], { type: "text/javascript" }));
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
      if (!window.ELK) {
        var s = document.createElement("script");
        // elkjs's UMD header must not see RequireJS (the classic notebook): it then sets window.ELK
        s.text = "(function (define, module, exports) {\n" + TV.elkSource + "\n}).call(window);";
        (document.head || document.documentElement).appendChild(s);
        s.remove();
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

  /** Lay out the ELK graph ``graph`` for ``owner`` (a viewer); resolves to ELK's result. */
  function layout(graph, owner) {
    return new Promise(function (resolve, reject) {
      if (!TV.elkSource && !window.ELK) return reject(new Error("the layout library is not loaded"));
      if (!TV.elkSource) inPage = true;
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
