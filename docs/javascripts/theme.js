// Material's script, run once the page's content has been painted, not while the page loads
// (scripts/series/mkdocs_glue/hooks.py inlines this in place of the <script> that loaded the bundle, whose
// address it keeps in `data-md-bundle`).
//
// Why: at the end of the page, Material's bundle ran inside the task that parsed the content, so
// the text could not be painted until the bundle had run and mounted its components, and on a
// phone the first paragraph showed that much later (tests/benchmarks/lighthouse.py: Largest
// Contentful Paint). Loaded after the first frame, the bundle does the same work, in tasks of
// its own, after the reader already sees the page. Without JavaScript nothing changes.
(function () {
  "use strict";
  var bundle = document.currentScript.getAttribute("data-md-bundle");
  // Links to the RSS feeds: the feed readers' way to find them, but Material's language switcher
  // takes every link rel=alternate for another language's site and fetches and parses a sitemap
  // for each (squidfunk/mkdocs-material#8576): two requests and two XML parses per page, for
  // nothing. They are out of the document only while Material looks for them.
  var FEEDS = 'link[rel="alternate"][type="application/rss+xml"]';

  function mount() {
    var feeds = Array.prototype.slice.call(document.querySelectorAll(FEEDS));
    var places = feeds.map(function (link) { return [link.parentNode, link.nextSibling]; });
    feeds.forEach(function (link) { link.remove(); });
    // Material mounts its components when the document is loaded (its DOMContentLoaded
    // listener, once); the event has passed, so it is told again. Our scripts listen once.
    document.dispatchEvent(new Event("DOMContentLoaded"));
    feeds.forEach(function (link, i) { places[i][0].insertBefore(link, places[i][1]); });
  }

  // While the bundle runs, Material asks for the search index (an XMLHttpRequest). A tool that
  // records where each request comes from (Lighthouse, DevTools: their network log) takes the
  // script's stack there, and V8 parses the bundle's outermost functions again for their line
  // numbers: 7-8 ms of the bundle's task (tests/benchmarks/bench_long_tasks.py). Sent in a task of
  // its own, the request's stack is one small function. Readers without such a tool pay neither.
  function sendLater() {
    var proto = XMLHttpRequest.prototype;
    var send = proto.send;
    proto.send = function () {
      var request = this, body = arguments;
      setTimeout(function () { send.apply(request, body); }, 0);
    };
    return function restore() { proto.send = send; };
  }

  function load() {
    var script = document.createElement("script");
    script.src = bundle;
    var restore = sendLater();
    // mounted in a task of its own, not in the one that ran the bundle: two shorter tasks
    script.onload = function () { restore(); setTimeout(mount, 0); };
    script.onerror = restore;
    document.body.appendChild(script);
  }

  // "Painted" as the browser reports it: its first-contentful-paint entry, which comes once the
  // frame is on screen (a frame's end, where requestAnimationFrame leaves us, is earlier by the
  // compositor's time: on a busy machine the bundle was requested before the paint it should
  // follow). A hidden tab paints nothing until shown: there, 3 s at most; and where the browser
  // reports no paints, the end of the first frame as before.
  var loaded = false;
  function loadOnce() {
    if (loaded) return;
    loaded = true;
    load();
  }

  function afterFirstFrame() {
    var types = window.PerformanceObserver && PerformanceObserver.supportedEntryTypes;
    if (!types || types.indexOf("paint") < 0) {
      requestAnimationFrame(function () { setTimeout(loadOnce, 0); });
      return;
    }
    var observer = new PerformanceObserver(function (list) {
      if (!list.getEntriesByName("first-contentful-paint").length) return;
      observer.disconnect();
      setTimeout(loadOnce, 0);
    });
    observer.observe({ type: "paint", buffered: true });
    setTimeout(loadOnce, 3000);
  }

  // The navigation drawer's icons are drawn from its first opening on (docs/stylesheets/extra.css)
  document.addEventListener("change", function (event) {
    if (event.target.id === "__drawer") document.documentElement.classList.add("md-drawer-opened");
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", afterFirstFrame, { once: true });
  } else {
    afterFirstFrame();
  }
})();
