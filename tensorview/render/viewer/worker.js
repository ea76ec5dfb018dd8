/* tensorview viewer, part 4: layout off the page's thread.
 *
 * The layout engine (``tensorview.engineSource``, kept by boot.js: elkjs, or dagre with
 * its adapter dagre.js) runs in a Web Worker made from a ``blob:`` URL of its own text, so
 * a page opened from ``file://``, a notebook output and a sandboxed iframe all get one
 * without fetching anything.  Both engines answer elkjs's worker messages (``register``,
 * ``layout``) with ELK's result form; one worker per engine serves every viewer of the
 * page that asks for it (``config.engine``; the page's first engine where its own is not
 * loaded).
 * ``cancel(owner)`` ends a viewer's layouts: the worker is stopped and a new one takes the
 * other viewers' layouts.  Where no worker can be made (a Content-Security-Policy without
 * ``worker-src blob:``), the engine runs in the page.
 */
(function () {
  "use strict";
  var TV = (window.tensorview = window.tensorview || {});
  var ALGORITHMS = ["layered"];
  var pools = {}, next = 1;

  /** The layouts of one engine: its worker (or the page), its jobs. */
  function pool(name) {
    if (!pools[name]) pools[name] = { name: name, worker: null, url: null, inPage: false, elk: null, jobs: new Map() };
    return pools[name];
  }

  function source(p) {
    return (TV.engines && TV.engines[p.name]) || TV.engineSource;
  }

  function received(p, ev) {
    var d = ev.data, job = p.jobs.get(d.id);
    if (!job) return;
    p.jobs.delete(d.id);
    if (d.error) job.reject(new Error(d.error.message || d.error.g || String(d.error)));
    else job.resolve(d.data);
  }

  function start(p) {
    // elkjs answers messages once made; dagre.js sets its own handler
    var tail = p.name === "dagre" ? "\n" : "\n;new self.ELK();\n";
    if (!p.url) p.url = URL.createObjectURL(new Blob([source(p), tail], { type: "text/javascript" }));
    var w = new Worker(p.url);
    w.onmessage = function (ev) { received(p, ev); };
    w.onerror = function (ev) {
      // the worker could not start or broke: its layouts run in the page instead
      if (ev && ev.preventDefault) ev.preventDefault();
      if (p.worker === w) stop(p);
      p.inPage = true;
      var left = Array.from(p.jobs.values());
      p.jobs.clear();
      left.forEach(function (job) { runInPage(job); });
    };
    w.postMessage({ cmd: "register", algorithms: ALGORITHMS, id: 0 });
    return w;
  }

  function stop(p) {
    if (p.worker) p.worker.terminate();
    p.worker = null;
  }

  function runInPage(job) {
    var p = job.pool, dagre = p.name === "dagre";
    try {
      if (dagre ? !window.tvDagreLayout : !window.ELK) {
        var s = document.createElement("script");
        // a UMD header must not see RequireJS (the classic notebook): elkjs then sets
        // window.ELK, dagre.js window.tvDagreLayout
        s.text = "(function (define, module, exports) {\n" + source(p) + "\n}).call(window);";
        (document.head || document.documentElement).appendChild(s);
        s.remove();
      }
      if (dagre) {
        Promise.resolve(job.graph).then(window.tvDagreLayout).then(job.resolve, job.reject);
        return;
      }
      if (p.elk === null) p.elk = new window.ELK();
      p.elk.layout(job.graph).then(job.resolve, job.reject);
    } catch (err) {
      job.reject(err);
    }
  }

  function post(job) {
    var p = job.pool;
    if (!p.inPage && !p.worker) {
      try {
        p.worker = start(p);
      } catch (err) {
        p.inPage = true; // no worker here (CSP, an old browser)
      }
    }
    if (p.inPage) return runInPage(job);
    p.jobs.set(job.id, job);
    p.worker.postMessage({ cmd: "layout", graph: job.graph, layoutOptions: {}, options: {}, id: job.id });
  }

  /** The engine that lays out ``owner``'s views: its own where the page has it loaded. */
  function engineOf(owner) {
    var want = owner && owner.config && owner.config.engine;
    return want && TV.engines && TV.engines[want] ? want : TV.engine || (window.tvDagreLayout ? "dagre" : "elk");
  }

  /** Lay out the ELK graph ``graph`` for ``owner`` (a viewer); resolves to ELK's result form. */
  function layout(graph, owner) {
    return new Promise(function (resolve, reject) {
      if (!TV.engineSource && !window.ELK && !window.tvDagreLayout) return reject(new Error("the layout library is not loaded"));
      var p = pool(engineOf(owner));
      if (!source(p)) p.inPage = true;
      post({ id: next++, graph: graph, owner: owner, pool: p, resolve: resolve, reject: reject });
    });
  }

  /** Stop the layouts of ``owner``; the others go on in a new worker.  Returns whether
   * one was running. */
  function cancel(owner) {
    var any = false;
    Object.keys(pools).forEach(function (name) {
      var p = pools[name];
      var mine = Array.from(p.jobs.values()).filter(function (j) { return j.owner === owner; });
      if (!mine.length) return;
      any = true;
      var others = Array.from(p.jobs.values()).filter(function (j) { return j.owner !== owner; });
      stop(p);
      p.jobs.clear();
      mine.forEach(function (job) {
        var err = new Error("layout cancelled");
        err.cancelled = true;
        job.reject(err);
      });
      others.forEach(post);
    });
    return any;
  }

  TV.worker = {
    layout: layout,
    cancel: cancel,
    /** Where layouts run: "worker", "page" or "none" yet (of every engine used). */
    where: function () {
      var all = Object.keys(pools).map(function (k) { return pools[k]; });
      if (all.some(function (p) { return p.inPage; })) return "page";
      return all.some(function (p) { return p.worker; }) ? "worker" : "none";
    },
    /** The engine that lays out ``owner``'s views. */
    engineOf: engineOf,
  };
})();
