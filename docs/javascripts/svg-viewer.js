// The pictures' viewer: a timeline or plot opens full-screen, and the reader zooms into a region
// (pinch, wheel, double-tap, + and -) and pans (drag, arrow keys) until its labels are legible.
//
// The SVG is put into the page itself, inside a shadow root (so its <style> and ids stay its own),
// and zoomed through its viewBox: text is drawn as text at every zoom, never as a scaled bitmap.
// It replaces the image lightbox, which could only scale a picture to the screen's width. Without
// JavaScript the figure's link opens the SVG file in the browser, which zooms it natively.
(function () {
  "use strict";

  const FIGURE_LINK = "figure.timeline > a.svg-zoom";
  const READING_PX = 12; // a double-tap zooms until the smallest text is this tall (its em)
  const MAX_TEXT_PX = 48; // no zooming past the smallest text at this size...
  const MAX_OVER_FIT = 4; // ...unless the picture is then still under 4 times its fitted size
  const TAP_MS = 300; // a press shorter than this, moving less than TAP_PX, is a tap
  const TAP_PX = 10;
  const DOUBLE_TAP_MS = 350; // two taps this close in time and in place are a double-tap
  const DOUBLE_TAP_PX = 30;
  const SVG_NS = "http://www.w3.org/2000/svg";

  let ui = null; // the one <dialog>, made on first use
  let view = null; // the picture being shown and where it is zoomed to
  let leaving = false; // our own history.back() is on its way: its popstate is not the reader's

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text) node.textContent = text;
    return node;
  }

  function build() {
    const dialog = el("dialog", { class: "svg-viewer", "aria-label": "Picture viewer" });
    const bar = el("div", { class: "svg-viewer__bar" });
    const title = el("p", { class: "svg-viewer__title" });
    const status = el("p", { class: "svg-viewer__status", role: "status" });
    const buttons = [
      el("button", { type: "button", "data-action": "out", "aria-label": "Zoom out", title: "Zoom out (-)" }, "\u2212"),
      el("button", { type: "button", "data-action": "in", "aria-label": "Zoom in", title: "Zoom in (+)" }, "+"),
      el("button", { type: "button", "data-action": "fit", "aria-label": "Fit to the screen", title: "Fit (0)" }, "Fit"),
      el("button", { type: "button", "data-action": "close", "aria-label": "Close", title: "Close (Esc)" }, "\u00d7"),
    ];
    bar.append(title, ...buttons);
    const stage = el("div", {
      class: "svg-viewer__stage", tabindex: "0", role: "application",
      "aria-roledescription": "zoomable picture",
      "aria-label": "Pinch, scroll or double-tap to zoom; drag or use the arrow keys to pan",
    });
    const host = el("div", { class: "svg-viewer__picture" });
    host.attachShadow({ mode: "open" });
    stage.append(host);
    const hint = el("p", { class: "svg-viewer__hint" }, "Pinch, scroll or double-tap to zoom \u00b7 drag to pan");
    dialog.append(bar, stage, hint, status);
    document.body.append(dialog);

    bar.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (!button) return;
      const action = button.dataset.action;
      if (action === "close") dialog.close();
      else if (action === "fit") fit();
      else zoomAtCenter(action === "in" ? 1.5 : 1 / 1.5);
    });
    stage.addEventListener("pointerdown", onPointerDown);
    stage.addEventListener("pointermove", onPointerMove);
    stage.addEventListener("pointerup", onPointerUp);
    stage.addEventListener("pointercancel", onPointerUp);
    stage.addEventListener("wheel", onWheel, { passive: false });
    dialog.addEventListener("keydown", onKey);
    dialog.addEventListener("close", onClosed);
    window.addEventListener("resize", () => view && dialog.open && resize());
    // The phone's back button closes the viewer instead of leaving the page.
    window.addEventListener("popstate", () => {
      if (leaving) leaving = false;
      else if (dialog.open) dialog.close();
    });
    return { dialog, title, status, stage, host, hint };
  }

  // --- loading ---------------------------------------------------------------------------------

  // Our own SVGs, from this site; still, nothing in them may run: no scripts, no handlers, no
  // links out of the picture.
  function sanitize(root) {
    root.querySelectorAll("script, foreignObject").forEach((node) => node.remove());
    for (const node of [root, ...root.querySelectorAll("*")]) {
      for (const attr of Array.from(node.attributes)) {
        const name = attr.name.toLowerCase();
        const href = name === "href" || name === "xlink:href";
        if (name.startsWith("on") || (href && !attr.value.startsWith("#"))) node.removeAttribute(attr.name);
      }
    }
  }

  function parse(text) {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const root = doc.documentElement;
    if (root.namespaceURI !== SVG_NS || root.localName !== "svg" || doc.querySelector("parsererror")) {
      throw new Error("not an SVG picture");
    }
    sanitize(root);
    return document.importNode(root, true);
  }

  function contentBox(svg) {
    const box = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
    if (box.length === 4 && box.every(Number.isFinite) && box[2] > 0 && box[3] > 0) return box;
    const width = parseFloat(svg.getAttribute("width")) || 900;
    const height = parseFloat(svg.getAttribute("height")) || 300;
    return [0, 0, width, height];
  }

  // The smallest text's em in the picture's own units (text may sit under transforms).
  function smallestText(svg) {
    let smallest = Infinity;
    const root = svg.getScreenCTM();
    const toRoot = root ? root.inverse() : null;
    for (const text of svg.querySelectorAll("text")) {
      if (!text.textContent.trim()) continue;
      const size = parseFloat(getComputedStyle(text).fontSize);
      const own = text.getScreenCTM();
      const m = toRoot && own ? toRoot.multiply(own) : null;
      const scale = m ? Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) : 1;
      if (size > 0 && scale > 0) smallest = Math.min(smallest, size * scale);
    }
    return Number.isFinite(smallest) ? smallest : 12;
  }

  function open(link) {
    if (!ui) ui = build();
    const image = link.querySelector("img");
    const label = (image && image.alt) || "Picture";
    ui.title.textContent = label;
    ui.dialog.setAttribute("aria-label", label);
    ui.status.textContent = "Loading\u2026";
    const shadow = ui.host.shadowRoot;
    shadow.replaceChildren();
    view = null;
    ui.dialog.showModal();
    document.documentElement.classList.add("svg-viewer-open");
    if (!leaving && !(history.state && history.state.svgViewer)) history.pushState({ svgViewer: true }, "");
    ui.stage.focus();
    const url = link.href;
    fetch(url)
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.text();
      })
      .then((text) => {
        if (!ui.dialog.open) return;
        const svg = parse(text);
        const [x0, y0, width, height] = contentBox(svg);
        svg.removeAttribute("width");
        svg.removeAttribute("height");
        svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
        const style = document.createElement("style");
        style.textContent = ":host{display:block;width:100%;height:100%}svg{display:block;width:100%;height:100%}";
        shadow.replaceChildren(style, svg);
        svg.setAttribute("viewBox", `${x0} ${y0} ${width} ${height}`); // measured at its own size
        view = { svg, x0, y0, width, height, minText: smallestText(svg), scale: 1, x: x0, y: y0, w: 1, h: 1 };
        ui.status.textContent = "";
        ui.dialog.dataset.ready = "true";
        resize(true);
      })
      .catch((error) => {
        ui.status.textContent = `Could not show the picture (${error.message}). `;
        const direct = el("a", { href: url }, "Open the SVG file");
        ui.status.append(direct);
      });
  }

  function onClosed() {
    delete ui.dialog.dataset.ready;
    ui.host.shadowRoot.replaceChildren();
    view = null;
    document.documentElement.classList.remove("svg-viewer-open");
    if (history.state && history.state.svgViewer) {
      leaving = true;
      history.back();
    }
  }

  // --- the view: `scale` CSS px per unit of the picture; (x, y) its point at the stage's top left

  function limits() {
    const fitScale = Math.min(view.w / view.width, view.h / view.height);
    const reading = READING_PX / view.minText;
    const max = Math.max(MAX_TEXT_PX / view.minText, fitScale * MAX_OVER_FIT);
    return { fitScale, reading, max };
  }

  function clampAxis(start, origin, size, visible) {
    if (visible >= size) return origin - (visible - size) / 2; // smaller than the stage: centred
    return Math.min(Math.max(start, origin), origin + size - visible);
  }

  function apply() {
    const { fitScale, max } = limits();
    view.scale = Math.min(Math.max(view.scale, fitScale), max);
    const visibleW = view.w / view.scale;
    const visibleH = view.h / view.scale;
    view.x = clampAxis(view.x, view.x0, view.width, visibleW);
    view.y = clampAxis(view.y, view.y0, view.height, visibleH);
    view.svg.setAttribute("viewBox", `${view.x} ${view.y} ${visibleW} ${visibleH}`);
    ui.dialog.dataset.scale = view.scale.toFixed(4);
    ui.dialog.dataset.zoomed = String(view.scale > fitScale * 1.001);
  }

  function resize(first) {
    const rect = ui.stage.getBoundingClientRect();
    const centre = first ? null : [view.x + view.w / view.scale / 2, view.y + view.h / view.scale / 2];
    view.w = Math.max(rect.width, 1);
    view.h = Math.max(rect.height, 1);
    if (first) {
      view.scale = limits().fitScale;
    } else {
      view.x = centre[0] - view.w / view.scale / 2;
      view.y = centre[1] - view.h / view.scale / 2;
    }
    apply();
  }

  function fit() {
    if (!view) return;
    view.scale = limits().fitScale;
    apply();
  }

  // Zoom by `factor`, keeping the picture's point under (px, py) of the stage where it is.
  function zoomAt(factor, px, py) {
    if (!view) return;
    const ux = view.x + px / view.scale;
    const uy = view.y + py / view.scale;
    const { fitScale, max } = limits();
    view.scale = Math.min(Math.max(view.scale * factor, fitScale), max);
    view.x = ux - px / view.scale;
    view.y = uy - py / view.scale;
    apply();
  }

  function zoomAtCenter(factor) {
    if (view) zoomAt(factor, view.w / 2, view.h / 2);
  }

  function panBy(dx, dy) {
    if (!view) return;
    view.x -= dx / view.scale;
    view.y -= dy / view.scale;
    apply();
  }

  // A double-tap zooms in to reading size (at least twice the fit) there; the next one zooms out.
  function toggleZoom(px, py) {
    const { fitScale, reading } = limits();
    if (view.scale > fitScale * 1.01) {
      fit();
    } else {
      zoomAt(Math.max(reading, fitScale * 2) / view.scale, px, py);
    }
  }

  // --- input -----------------------------------------------------------------------------------

  const pointers = new Map(); // pointerId -> {x, y} in stage coordinates
  let press = null; // the single press that may turn out to be a tap
  let lastTap = null;

  function local(event) {
    const rect = ui.stage.getBoundingClientRect();
    return { x: event.clientX - rect.left, y: event.clientY - rect.top };
  }

  function spread() {
    const [a, b] = Array.from(pointers.values());
    return { d: Math.hypot(a.x - b.x, a.y - b.y), x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  }

  function onPointerDown(event) {
    if (!view || (event.pointerType === "mouse" && event.button !== 0)) return;
    ui.stage.setPointerCapture(event.pointerId);
    pointers.set(event.pointerId, local(event));
    press = pointers.size === 1 ? { ...local(event), t: event.timeStamp, moved: false } : null;
    event.preventDefault();
  }

  function onPointerMove(event) {
    if (!view || !pointers.has(event.pointerId)) return;
    const point = local(event);
    if (pointers.size === 1) {
      const last = pointers.get(event.pointerId);
      pointers.set(event.pointerId, point);
      if (press && Math.hypot(point.x - press.x, point.y - press.y) > TAP_PX) press.moved = true;
      if (!press || press.moved) panBy(point.x - last.x, point.y - last.y);
    } else if (pointers.size === 2) {
      const before = spread();
      pointers.set(event.pointerId, point);
      const after = spread();
      if (before.d > 0) zoomAt(after.d / before.d, before.x, before.y);
      panBy(after.x - before.x, after.y - before.y);
    }
  }

  function onPointerUp(event) {
    if (!pointers.delete(event.pointerId)) return;
    if (event.type === "pointerup" && press && !press.moved && event.timeStamp - press.t < TAP_MS) {
      const tap = { x: press.x, y: press.y, t: event.timeStamp };
      if (lastTap && tap.t - lastTap.t < DOUBLE_TAP_MS && Math.hypot(tap.x - lastTap.x, tap.y - lastTap.y) < DOUBLE_TAP_PX) {
        toggleZoom(tap.x, tap.y);
        lastTap = null;
      } else {
        lastTap = tap;
      }
    }
    press = null;
  }

  function onWheel(event) {
    if (!view) return;
    event.preventDefault();
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? view.h : 1;
    // a trackpad's pinch arrives as a wheel with ctrlKey and small deltas
    const rate = event.ctrlKey ? 0.01 : 0.002;
    const point = local(event);
    zoomAt(Math.exp(-event.deltaY * unit * rate), point.x, point.y);
  }

  function onKey(event) {
    if (!view || event.target.closest(".svg-viewer__bar")) return;
    const step = 0.1 * Math.min(view.w, view.h);
    const actions = {
      "+": () => zoomAtCenter(1.5), "=": () => zoomAtCenter(1.5), "-": () => zoomAtCenter(1 / 1.5),
      "0": fit, ArrowLeft: () => panBy(step, 0), ArrowRight: () => panBy(-step, 0),
      ArrowUp: () => panBy(0, step), ArrowDown: () => panBy(0, -step),
    };
    if (actions[event.key]) {
      event.preventDefault();
      actions[event.key]();
    }
  }

  // Delegated: a figure's link opens the viewer (a new tab or window, with a modifier, opens the file).
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest(FIGURE_LINK);
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    open(link);
  });
})();
