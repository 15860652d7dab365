// Links into a long page land where they point. The runs between headings are laid out only
// near the screen (scripts/offscreen.py, `content-visibility: auto`), so until then they have a
// placeholder's height, and a jump to a heading far down (a link with #anchor from another page
// or a search result, a footnote, the table of contents) could land where the placeholders put
// it. On such a jump the page is laid out for real, as it was before deferring, and the target
// is scrolled to again: only on a jump, never on a plain load.
(function () {
  "use strict";

  function target() {
    if (location.hash.length < 2) return null;
    try {
      return document.getElementById(decodeURIComponent(location.hash.slice(1)));
    } catch (error) {
      return null; // a malformed #fragment: nothing to land on
    }
  }

  function land() {
    var element = target();
    if (!element) return;
    // every deferred box and picture, table and code block laid out for real (the stylesheet's
    // .md-landed rule), as they all were before deferring: then the target's place is its own
    document.body.classList.add("md-landed");
    element.scrollIntoView();
  }

  // Once the page has loaded, the boxes are laid out one at a time while the browser is idle,
  // top to bottom: the load itself lays out only what shows, and no later step is a long task
  // (each box is its own frame's work), but in the end the page is whole, as if never deferred,
  // for the scroll bar, for tools that read positions (an accessibility checker) and for jumps.
  function layOutNext() {
    var box = document.querySelector(".md-defer:not(.md-laid-out)");
    if (!box) return;
    box.classList.add("md-laid-out");
    idle(layOutNext);
  }

  var idle = window.requestIdleCallback || function (run) { return setTimeout(run, 16); };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", land, { once: true });
  else land();
  addEventListener("hashchange", land);
  if (document.readyState === "complete") idle(layOutNext);
  else addEventListener("load", function () { idle(layOutNext); });
})();
