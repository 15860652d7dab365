// Links into a long page land where they point. The runs between headings are laid out only
// near the screen (scripts/series/pages/offscreen.py, `content-visibility: auto`), so until then they have a
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

  // Material draws its icons as masks from data: URIs, and each icon is an SVG document made
  // the first time an element shows it (1-2 ms each). Laid out first inside a box, a box with
  // three new icons becomes one long step; so before the boxes, each kind of admonition and
  // collapsible block they hold is styled once, one per idle step, in a holder off screen.
  function warmIcons(then) {
    var seen = {}, samples = [];
    document.querySelectorAll(".md-defer .admonition, .md-defer details").forEach(function (block) {
      var key = block.tagName + " " + block.className;
      if (seen[key]) return;
      seen[key] = true;
      samples.push(block);
    });
    if (!samples.length) return then();
    var holder = document.createElement("div");
    holder.className = "md-typeset md-icon-warm";
    holder.setAttribute("aria-hidden", "true");
    holder.inert = true;
    document.body.appendChild(holder);
    (function next() {
      var block = samples.shift();
      if (!block) {
        holder.remove();
        return then();
      }
      var details = block.tagName === "DETAILS";
      var sample = document.createElement(details ? "details" : "div");
      sample.className = block.className;
      var title = document.createElement(details ? "summary" : "p");
      if (!details) title.className = "admonition-title";
      title.textContent = "\u00a0";
      sample.appendChild(title);
      holder.appendChild(sample);
      void holder.offsetHeight; // styled and laid out in this step, its icons made with it
      idle(next);
    })();
  }

  var idle = window.requestIdleCallback || function (run) { return setTimeout(run, 16); };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", land, { once: true });
  else land();
  addEventListener("hashchange", land);
  function start() { idle(function () { warmIcons(layOutNext); }); }
  if (document.readyState === "complete") start();
  else addEventListener("load", start);
})();
