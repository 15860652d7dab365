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
    if (!element || document.body.classList.contains("md-landed")) {
      if (element) element.scrollIntoView();
      return;
    }
    // every deferred box and picture, table and code block laid out for real (the stylesheet's
    // .md-landed rule), as they all were before deferring: then the target's place is its own
    document.body.classList.add("md-landed");
    element.scrollIntoView();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", land);
  else land();
  addEventListener("hashchange", land);
})();
