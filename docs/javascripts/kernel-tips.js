// Kernel names that explain themselves (scripts/tracefacts/pictures/kernel_tips.py): each name on a
// table is a <button class="ktip"> whose aria-describedby names a hidden note, written once per
// table, of what the name says. A screen reader reads the note on focus; this script shows it
// beside the button: on tap or click (again, or elsewhere, to close), on keyboard focus, and while
// a mouse hovers; Escape closes it. One box for the whole page, a copy of the note, hidden from
// assistive technology (which has the note itself). Buttons added later (the in-browser
// analyzer's facts box) work too: every listener is on the document.
(function () {
  "use strict";

  var box = null; // the shown copy
  var owner = null; // the button it belongs to
  var pinned = false; // opened by a tap, a click or the keyboard: hovering away leaves it open

  function note(button) {
    var id = button.getAttribute("aria-describedby");
    return id ? document.getElementById(id) : null;
  }

  function place() {
    if (!owner) return;
    var at = owner.getBoundingClientRect();
    var gap = 6, margin = 8;
    box.style.left = "0px"; // measured where nothing narrows it
    box.style.top = "0px";
    var width = Math.min(box.offsetWidth, window.innerWidth - 2 * margin);
    var left = Math.max(margin, Math.min(at.left, window.innerWidth - width - margin));
    var height = box.offsetHeight;
    // below the name, or above it where there is no room below
    var top = at.bottom + gap;
    if (top + height > window.innerHeight - margin && at.top - gap - height >= margin) top = at.top - gap - height;
    box.style.left = left + "px";
    box.style.top = top + "px";
  }

  function show(button, pin) {
    var source = note(button);
    if (!source) return;
    if (!box) {
      box = document.createElement("div");
      box.className = "ktip-box";
      box.setAttribute("aria-hidden", "true");
      document.body.appendChild(box);
    }
    if (owner && owner !== button) owner.setAttribute("aria-expanded", "false");
    box.replaceChildren.apply(box, Array.prototype.map.call(source.childNodes, function (n) { return n.cloneNode(true); }));
    box.hidden = false;
    owner = button;
    pinned = pin;
    button.setAttribute("aria-expanded", "true");
    place();
  }

  function hide() {
    if (!owner) return;
    box.hidden = true;
    owner.setAttribute("aria-expanded", "false");
    owner = null;
    pinned = false;
  }

  function tipOf(target) {
    return target instanceof Element ? target.closest("button.ktip") : null;
  }

  document.addEventListener("click", function (event) {
    var button = tipOf(event.target);
    if (!button) return hide();
    if (owner === button && pinned) hide();
    else show(button, true);
  });
  // A touch elsewhere closes it (Safari sends no click, nor focus, for a tap on plain text).
  document.addEventListener("pointerdown", function (event) {
    if (owner && !tipOf(event.target)) hide();
  });
  document.addEventListener("focusin", function (event) {
    var button = tipOf(event.target);
    // a tap or a click also focuses the button: its click decides
    if (button && button.matches(":focus-visible")) show(button, true);
  });
  document.addEventListener("focusout", function (event) {
    if (owner && event.target === owner && !(event.relatedTarget && tipOf(event.relatedTarget) === owner)) hide();
  });
  document.addEventListener("pointerover", function (event) {
    var button = event.pointerType === "mouse" && tipOf(event.target);
    if (button && owner !== button && !pinned) show(button, false);
  });
  document.addEventListener("pointerout", function (event) {
    var button = event.pointerType === "mouse" && tipOf(event.target);
    if (button && owner === button && !pinned && !button.contains(event.relatedTarget)) hide();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && owner) {
      hide();
      event.stopPropagation();
    }
  }, true);
  // The name moves when the page or its table scrolls sideways: the box follows it.
  window.addEventListener("scroll", function () { if (owner) place(); }, { capture: true, passive: true });
  window.addEventListener("resize", function () { if (owner) place(); }, { passive: true });
})();
