// The light/dark switch in the header, in place of Material's own (scripts/series/mkdocs_glue/hooks.py inlines
// this right after the header, removes Material's inline palette script and unhooks Material's
// palette component).
//
// Why: on every page load Material's component marks the page as switching colours, sets the
// body's colour attributes and reads the header's computed style, which recalculates the style of
// the whole page two or three times while it loads: about a quarter of a long post's main-thread
// work (the Lighthouse benchmark, tests/benchmarks/lighthouse.py). This script runs once the
// header is parsed, before anything below it is, so choosing the palette there costs nothing;
// the work of a switch is done only when the reader switches. Same choice as Material's:
// the reader's saved palette (same storage, `__palette`), else the first whose media query matches.
(function () {
  "use strict";
  // JavaScript runs: the header's buttons that need it (search, this switch) show from the first
  // paint. Material's script would reveal them only when it runs, moving this switch aside then.
  document.documentElement.classList.replace("no-js", "js");
  var form = document.querySelector("form[data-md-palette]");
  if (!form) return;
  var inputs = form.querySelectorAll("input");
  var current = -1;

  function colors(input) {
    var out = {};
    for (var key of ["media", "scheme", "primary", "accent"]) {
      out[key] = input.getAttribute("data-md-color-" + key);
    }
    return out;
  }

  function show(index) {
    var chosen = colors(inputs[index]);
    for (var key in chosen) document.body.setAttribute("data-md-color-" + key, chosen[key]);
    inputs[index].checked = true;
    // each input's label is the button shown while its palette is on (it points to the next one)
    for (var i = 0; i < inputs.length; i++) {
      var label = inputs[i].nextElementSibling;
      if (label instanceof HTMLElement) label.hidden = i !== index;
    }
    current = index;
  }

  // The browser's colours (scroll bars, the address bar on phones) follow the page's, as with
  // Material: read once the page is styled, not while it loads.
  function browserColors() {
    var header = document.querySelector("[data-md-component=header]");
    if (!header) return;
    var style = getComputedStyle(header);
    var rgb = (style.backgroundColor.match(/\d+/g) || []).slice(0, 3);
    meta("color-scheme", style.colorScheme);
    if (rgb.length === 3) {
      meta("theme-color", "#" + rgb.map(function (v) { return (+v).toString(16).padStart(2, "0"); }).join(""));
    }
  }

  function meta(name, content) {
    var tag = document.head.querySelector('meta[name="' + name + '"]');
    if (!tag) {
      tag = document.createElement("meta");
      tag.name = name;
      document.head.appendChild(tag);
    }
    tag.content = content;
  }

  var saved = null;
  try {
    saved = __md_get("__palette");
  } catch (error) {
    saved = null; // storage refused or unreadable: the media query decides
  }
  var index = saved && Number.isInteger(saved.index) && saved.index < inputs.length ? saved.index : -1;
  for (var i = 0; index < 0 && i < inputs.length; i++) {
    var media = inputs[i].getAttribute("data-md-color-media");
    if (media && matchMedia(media).matches) index = i;
  }
  show(Math.max(index, 0));

  form.addEventListener("change", function (event) {
    var index = Array.prototype.indexOf.call(inputs, event.target);
    if (index < 0) return;
    // no colour transitions while switching (Material's stylesheet reads this attribute)
    document.body.setAttribute("data-md-color-switching", "");
    show(index);
    __md_set("__palette", { index: index, color: colors(inputs[index]) });
    browserColors();
    setTimeout(function () { document.body.removeAttribute("data-md-color-switching"); });
  });
  // Enter on the focused switch moves to the next palette, as Material's does
  form.addEventListener("keydown", function (event) {
    if (event.key !== "Enter") return;
    event.preventDefault();
    var next = inputs[(current + 1) % inputs.length];
    next.click();
    next.focus();
  });
  addEventListener("load", function () {
    (window.requestIdleCallback || setTimeout)(browserColors);
  });
})();
