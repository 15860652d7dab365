// The in-browser analyzer's worker: Pyodide (CPython compiled to WebAssembly, served by this site)
// running the command line's own Python code (scripts/tracefacts/entry/browser.py) on a dropped trace. A worker, so
// that the page stays responsive and shows progress while Python works; one trace at a time, and
// one more to compare with it (before and after).
//
// Messages in:  {type: "start", pyodide, python, modules}  (absolute URLs, module names)
//               {type: "read", name, buffer, guide}       (the file's bytes, transferred)
//               {type: "compare", name, buffer, guide}    (the trace after, compared with the one read)
// Messages out: {type: "progress", stage, done}  stage: decompressing / reading / computing /
//               comparing / drawing; done: 0..1, or null when unknown
//               {type: "ready", seconds} · {type: "facts", result, seconds} ·
//               {type: "timeline", result, seconds} · {type: "diff", result, seconds} ·
//               {type: "diff-timelines", result, seconds} ·
//               {type: "failed", message, memory: whether it ran out of memory}
// Nothing leaves the machine: the trace is read from the file the reader chose, and the only
// requests are for this site's own Pyodide and Python files. What it hands the page is bounded
// (analyzer-text.js) but for the --json objects, data the page only takes numbers and GPU names from.

import { clip, clipLines, clipMarkup, oneLine } from "./analyzer-text.js";

const UPLOAD = "/tmp/trace"; // where the dropped file is written, in Pyodide's in-memory file system
const PACKAGE = "/lib/analyzer"; // holds tracefacts/<stage>/<module>.py, the analyzer package alone

let browser = null;

function post(message) {
  self.postMessage(message);
}

function seconds(since) {
  return (performance.now() - since) / 1000;
}

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  return response.text();
}

// Pyodide waits forever when one of its files fails to load (it only logs a warning): so the
// worker watches its downloads, which go through fetch, and fails on the first that does; and its
// start has a limit (generous: 13 MB on a slow line).
const START_LIMIT_MS = 300000;

function watchDownloads() {
  let fail;
  const failed = new Promise((_, reject) => {
    fail = reject;
  });
  failed.catch(() => {}); // only ever awaited in the race below
  const plainFetch = self.fetch.bind(self);
  self.fetch = async (resource, ...rest) => {
    const name = String(resource.url || resource).split("/").pop();
    try {
      const response = await plainFetch(resource, ...rest);
      if (!response.ok) fail(new Error(`HTTP ${response.status} for ${name}`));
      return response;
    } catch (error) {
      fail(new Error(`cannot download ${name} (${error.message})`));
      throw error;
    }
  };
  return { failed, stop: () => { self.fetch = plainFetch; } };
}

// A promise that fails after `ms`, and the function that cancels it.
function timeLimit(ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return { late, cancel: () => clearTimeout(timer) };
}

async function start({ pyodide, python, modules }) {
  const began = performance.now();
  const downloads = watchDownloads();
  const limit = timeLimit(START_LIMIT_MS, "starting Python");
  let py;
  try {
    const { loadPyodide } = await import(new URL("pyodide.mjs", pyodide).href);
    // Standard output goes nowhere: the results come back as return values.
    const loading = loadPyodide({ indexURL: pyodide, stdout: () => {}, stderr: () => {} });
    loading.catch(() => {}); // a failure after another one has been reported is not news
    py = await Promise.race([loading, downloads.failed, limit.late]);
  } finally {
    downloads.stop();
    limit.cancel();
  }
  const sources = await Promise.all(
    modules.map((name) => fetchText(new URL(`${name}.py`, python).href)),
  );
  modules.forEach((name, i) => {
    py.FS.mkdirTree(`${PACKAGE}/${name.slice(0, name.lastIndexOf("/"))}`);
    py.FS.writeFile(`${PACKAGE}/${name}.py`, sources[i]);
  });
  py.runPython(`import sys; sys.path.insert(0, "${PACKAGE}")`);
  browser = py.pyimport("tracefacts.entry.browser");
  py.pyimport("tracefacts.pictures.timeline.draw"); // compiled now, not while the reader waits for the picture
  self.pyodide = py;
  post({ type: "ready", seconds: seconds(began) });
}

// Python reads the dropped file at UPLOAD, which holds `buffer` itself (not a copy), and is deleted
// once read: the page keeps the trace's events, not its bytes, and a refused file leaves nothing.
function withUpload(buffer, call) {
  self.pyodide.FS.writeFile(UPLOAD, new Uint8Array(buffer), { canOwn: true });
  try {
    return JSON.parse(call());
  } finally {
    self.pyodide.FS.unlink(UPLOAD);
  }
}

// `result` with its markup, text and labels bounded, as the page will show them (here, off the
// page's thread: a long name is cut before it is copied to the page, laid out or decoded).
function bounded(result) {
  for (const key of ["facts_box", "steps_table", "table", "svg"]) {
    if (typeof result[key] === "string") result[key] = clipMarkup(result[key]);
  }
  if (typeof result.summary === "string") result.summary = clipLines(result.summary);
  if (typeof result.window === "string") result.window = clip(result.window);
  if (typeof result.error === "string") result.error = oneLine(result.error);
  for (const role of ["before", "after"]) {
    if (result[role] && typeof result[role].svg === "string") bounded(result[role]);
  }
  return result;
}

function read({ name, buffer, guide }) {
  const began = performance.now();
  const progress = (stage, done) => post({ type: "progress", stage, done: done ?? null });
  const result = bounded(withUpload(buffer, () => browser.read_json(UPLOAD, name, guide, progress)));
  post({ type: "facts", result, seconds: seconds(began) });
  if (result.error) return;
  const drawing = performance.now();
  post({ type: "progress", stage: "drawing", done: null });
  post({ type: "timeline", result: bounded(JSON.parse(browser.timeline_json())), seconds: seconds(drawing) });
}

function compare({ name, buffer, guide }) {
  const began = performance.now();
  const progress = (stage, done) => post({ type: "progress", stage, done: done ?? null });
  const result = bounded(withUpload(buffer, () => browser.compare_json(UPLOAD, name, guide, progress)));
  post({ type: "diff", result, seconds: seconds(began) });
  if (result.error) return;
  const drawing = performance.now();
  post({ type: "progress", stage: "drawing", done: null });
  post({ type: "diff-timelines", result: bounded(JSON.parse(browser.compare_timelines_json())), seconds: seconds(drawing) });
}

self.onmessage = async ({ data }) => {
  try {
    if (data.type === "start") await start(data);
    else if (data.type === "read") read(data);
    else if (data.type === "compare") compare(data);
  } catch (error) {
    // Not a problem with the trace (read_json says those): Pyodide could not start, or Python or
    // the answer's way to the page failed (out of memory). The page starts a new worker next time.
    post({ type: "failed", message: reason(error), memory: outOfMemory(error) });
  }
};

// An exception's one line: a Python one's type and message (its traceback and notes dropped).
function reason(error) {
  const lines = String((error && error.message) || error).trim().split("\n");
  const type = error && error.type; // a PythonError's exception class
  const line = (type && lines.findLast((l) => l.startsWith(`${type}:`) || l === type)) ||
    (lines[0].startsWith("Traceback") ? lines[lines.length - 1] : lines[0]);
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

// WebAssembly's, JavaScript's and Python's ways of saying that memory ran out.
function outOfMemory(error) {
  return (error && error.type === "MemoryError") ||
    /out of memory|MemoryError|Cannot enlarge memory|allocation failed|Invalid (string|array|typed array) length/i
      .test(String((error && error.message) || error));
}
