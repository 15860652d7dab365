// Bounds on the text the in-browser analyzer writes into its page, shared by the worker
// (analyzer-worker.js, which bounds what it hands the page) and the page (analyzer.js, which
// bounds what it composes from names). A name of megabytes, shown whole, freezes the page while
// it is laid out (and an SVG holding it while it is decoded): every text node, attribute and
// line is cut at MAX_CHARS, saying how long it was. Python's renderers bound names before this;
// this holds whatever comes.

// Far above any real kernel name (templated ones reach a few thousand characters), far below
// what slows a page.
export const MAX_CHARS = 10000;

// `text`, cut at `max` characters (a surrogate pair kept whole), saying how long it was.
export function clip(text, max = MAX_CHARS) {
  text = String(text);
  if (text.length <= max) return text;
  return `${cutAt(text, max)}… [cut: ${text.length.toLocaleString("en")} characters]`;
}

function cutAt(text, max) {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

// Each line of `text` clipped.
export function clipLines(text) {
  if (text.length <= MAX_CHARS) return text;
  return text.split("\n").map((line) => clip(line)).join("\n");
}

// One line (a message): white space collapsed, clipped shorter than a text node.
export function oneLine(text) {
  return clip(String(text).slice(0, 4000).replace(/\s+/g, " ").trim(), 1000);
}

// Markup from the Python renderers (HTML or SVG, escaped by scripts/tracefacts/pictures/markup.py:
// no raw <, > or " in a text or an attribute value) with every text and attribute value clipped,
// no entity cut in two. In the worker: a scan for the runs between those characters, not a parse,
// so nothing long is ever laid out or decoded (and no regular expression backtracks over megabytes).
export function clipMarkup(markup) {
  if (typeof markup !== "string" || markup.length <= MAX_CHARS) return markup;
  const pieces = [];
  let kept = 0; // markup[0, kept) is in pieces
  let start = 0; // where the run now scanned starts
  for (const { index } of markup.matchAll(/[<>"]/g)) {
    if (index - start > MAX_CHARS) {
      pieces.push(markup.slice(kept, start), clipEscaped(markup.slice(start, index)));
      kept = index;
    }
    start = index + 1;
  }
  if (markup.length - start > MAX_CHARS) {
    pieces.push(markup.slice(kept, start), clipEscaped(markup.slice(start)));
    kept = markup.length;
  }
  if (!kept) return markup;
  pieces.push(markup.slice(kept));
  return pieces.join("");
}

function clipEscaped(text) {
  const length = text.replace(/&[#a-zA-Z0-9]+;/g, "_").length; // as shown, entities as one
  if (length <= MAX_CHARS) return text;
  const cut = cutAt(text, MAX_CHARS).replace(/&[#a-zA-Z0-9]*$/, "");
  return `${cut}… [cut: ${length.toLocaleString("en")} characters]`;
}
