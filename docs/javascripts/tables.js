// The profiler tables' switch (scripts/tracefacts/pictures/profiler_table.py): the page holds each table's short view, and
// its full view (every column, the profiler's own names) waits in a <template> until asked for,
// so that a long post's document holds only what shows. The switch swaps the two; the one not
// shown goes back into the template. Without this script the switch stays hidden.
(function () {
  function swap(box) {
    const scroll = box.querySelector(".prof-scroll");
    const stored = box.querySelector("template.prof-other");
    const shown = scroll && scroll.querySelector("table");
    const other = stored && stored.content.querySelector("table");
    if (!shown || !other) return;
    stored.content.replaceChildren(shown);
    scroll.replaceChildren(document.importNode(other, true));
  }
  function ready() {
    for (const label of document.querySelectorAll(".prof-table .prof-switch")) {
      label.classList.add("prof-ready");
      // a page restored from history may come back with the box ticked
      if (label.querySelector("input").checked) swap(label.closest(".prof-table"));
    }
  }
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.matches(".prof-switch input.prof-all")) return;
    const box = input.closest(".prof-table");
    const full = !!box.querySelector(".prof-scroll table.prof-full-view");
    if (input.checked !== full) swap(box);
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready, { once: true });
  else ready();
})();
