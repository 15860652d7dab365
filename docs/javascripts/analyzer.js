// The in-browser analyzer's page side (docs/guide/analyze-in-browser.md): a drop zone, a progress
// line, and the places where the results go. The work is done by the worker
// (analyzer-worker.js), started on the first drop or click, never on page load: Pyodide is about
// 13 MB. Nothing is uploaded. What comes back is markup built by the Python renderers, which escape
// every name from the trace; the file's name and the messages are set as text, never as markup.
// Whatever the page writes is bounded (analyzer-text.js): the worker cuts long names out of what it
// hands over, the page those it composes (file names, GPU names). A Stop button ends a long
// analysis: the worker is ended, and the next drop starts a fresh one.
//
// The facts box's "in Perfetto" links open the trace on the page at a finding: perfetto.js asks
// window.perfettoTraceSources.analyzer for its bytes, which come from the file the reader chose,
// still in this page's memory (read again from the File object): nothing is uploaded.
//
// Before and after: once a trace is shown, a second one (dropped on the second zone, chosen there,
// or given with the first, two at once) is compared with it, as `analyze.py BEFORE AFTER --diff`
// compares them; the first one's results stay on the page whatever becomes of the second.

import { clip, oneLine } from "./analyzer-text.js";

const root = document.querySelector(".trace-analyzer");

const STAGES = {
  loading: () => "Loading Python into this page (Pyodide, about 13 MB, once per visit)…",
  decompressing: (name) => `Measuring ${name} once decompressed…`,
  reading: (name, done) => `Reading ${name}: ${Math.round(100 * done)}%`,
  computing: () => "Computing the facts…",
  comparing: () => "Comparing the two traces…",
  drawing: () => "Drawing the timeline…",
};

// Why the worker failed, in words.
function failure(data) {
  return data.memory
    ? "this browser tab ran out of memory analyzing it: use the command line (analyze.py)"
    : `the analyzer failed (${data.message})`;
}

if (root) {
  const $ = (selector) => root.querySelector(selector);
  const input = $(".analyzer-input");
  const preload = $(".analyzer-preload");
  const status = $(".analyzer-status");
  const bar = $(".analyzer-progress");
  const stage = $(".analyzer-stage");
  const stopButton = $(".analyzer-stop");
  const errorLine = $(".analyzer-error");
  const output = $(".analyzer-output");
  const figure = $(".analyzer-timeline");
  const compareZone = $(".analyzer-compare");
  const inputAfter = $(".analyzer-input-after");
  const compared = $(".analyzer-diff");
  const pair = { before: $(".analyzer-timeline-before"), after: $(".analyzer-timeline-after") };
  const absolute = (url) => new URL(url, window.location.href).href;

  let worker = null;
  let ready = null; // resolves when Python is loaded
  let notReady = null; // rejects it
  let job = null; // {name, resolve, reject, began}
  let stopping = null; // what the status line says if the work under way is stopped
  let before = null; // the name of the trace on the page, which a second one is compared with
  const pictures = new Map(); // figure → the blob URL of the picture it shows

  function showStage(key, name, done) {
    status.hidden = false;
    bar.hidden = false;
    stage.textContent = clip(STAGES[key] ? STAGES[key](clip(name, 300), done) : key);
    if (done === null || done === undefined) bar.removeAttribute("value");
    else bar.value = done;
  }

  function finish(text) {
    bar.value = 1;
    stage.textContent = clip(text);
    setBusy(false);
  }

  function fail(message) {
    status.hidden = true;
    errorLine.textContent = oneLine(message);
    errorLine.hidden = false;
    setBusy(false);
  }

  // After the Stop button: the status line says what was stopped.
  function stopped(message) {
    status.hidden = false;
    bar.hidden = true;
    stage.textContent = clip(message);
    setBusy(false);
  }

  // The end of a job that did not finish: stopped, or failed in one line naming its file.
  function ended(error) {
    if (error.stopped) stopped(error.message);
    else fail(error.message);
  }

  function setBusy(busy) {
    input.disabled = busy;
    inputAfter.disabled = busy;
    preload.disabled = busy || Boolean(root.dataset.loadSeconds);
    stopButton.hidden = !busy;
    root.toggleAttribute("aria-busy", busy);
  }

  // End the worker (Python and the traces it holds), failing what waits on it with `error`.
  function stopWorker(error) {
    if (worker) worker.terminate();
    worker = null;
    if (notReady) notReady(error);
    ready = notReady = null;
    delete root.dataset.loadSeconds;
    showCompare(null); // Python, and the trace it held, are gone
    if (job) job.reject(error);
    job = null;
  }

  // The Stop button: the worker is ended whatever it is doing (Python cannot be interrupted in
  // the middle of a call otherwise); the next drop starts a fresh one.
  function stop() {
    if (!root.hasAttribute("aria-busy")) return;
    const message = stopping || "Stopped loading the analyzer: drop or choose a trace to start it again.";
    stopWorker(Object.assign(new Error(message), { stopped: true }));
  }

  function startWorker() {
    if (ready) return ready;
    showStage("loading");
    worker = new Worker(absolute(root.dataset.worker), { type: "module" });
    ready = new Promise((resolve, reject) => {
      notReady = reject;
      worker.onmessage = ({ data }) => {
        if (data.type === "ready") {
          root.dataset.loadSeconds = data.seconds.toFixed(2);
          notReady = null;
          resolve();
        } else if (data.type === "failed") {
          // Python is gone with whatever it held: the next try starts a fresh worker. A job says
          // which file it was reading; without one, it is the start that failed.
          stopWorker(job
            ? Object.assign(new Error(`${clip(job.name, 300)}: ${failure(data)}; the next trace ` +
                "dropped starts the analyzer afresh."), { named: true })
            : new Error(`The analyzer stopped: ${data.message}. Reload the page to try again.`));
        } else if (job) {
          onResult(data);
        }
      };
      worker.onerror = (event) => {
        event.preventDefault();
        stopWorker(new Error(`The analyzer could not start (${event.message || "worker error"}).`));
      };
    });
    worker.postMessage({
      type: "start",
      pyodide: absolute(root.dataset.pyodide),
      python: absolute(root.dataset.python),
      modules: root.dataset.modules.split(" "),
    });
    return ready;
  }

  function onResult(data) {
    if (data.type === "progress") {
      showStage(data.stage, job.name, data.done);
    } else if (data.type === "facts") {
      if (data.result.error) {
        job.reject(Object.assign(new Error(data.result.error), { named: true })); // by Python
        job = null;
        return;
      }
      showFacts(job.name, data.result);
      root.dataset.readSeconds = ((performance.now() - job.began) / 1000).toFixed(2);
    } else if (data.type === "timeline") {
      showTimeline(job.name, data.result);
      job.resolve();
      job = null;
    } else if (data.type === "diff") {
      if (data.result.error) {
        job.reject(Object.assign(new Error(data.result.error), { named: true })); // by Python
        job = null;
        return;
      }
      showDiff(job.name, data.result);
    } else if (data.type === "diff-timelines") {
      showDiffTimelines(data.result);
      job.resolve();
      job = null;
    }
  }

  // The trace whose facts are shown, for the facts box's links to Perfetto (null: none).
  function keepForPerfetto(file) {
    const sources = (window.perfettoTraceSources = window.perfettoTraceSources || {});
    if (file) sources.analyzer = () => file.arrayBuffer().then((buffer) => ({ buffer }));
    else delete sources.analyzer;
  }

  function showFacts(name, result) {
    const f = result.facts;
    const steps = f.steps.length;
    $(".analyzer-title").textContent = clip(
      `${clip(name, 300)}: ${f.events.toLocaleString("en")} events, ` +
      `${steps} ProfilerStep${steps === 1 ? "" : "s"}` +
      (f.gpus.length ? `, ${f.gpus.map((gpu) => clip(gpu, 300)).join(", ")}` : ""), 2000);
    $(".analyzer-facts").innerHTML = result.facts_box; // escaped by scripts/tracefacts/pictures/markup.py
    $(".analyzer-steps").innerHTML = result.steps_table || ""; // escaped by scripts/tracefacts/pictures/markup.py
    $(".analyzer-summary").textContent = result.summary; // bounded by the worker
    figure.hidden = true;
    output.hidden = false;
    root.analyzerFacts = f; // what --json prints, for whoever wants it (and the tests)
  }

  const stem = (name) => name.replace(/\.json(\.gz)?$/i, "") || "trace";

  // Show `svg` in `where` (a figure) with `text` and a link to download it as `file`; or, with no
  // svg, `text` alone (why there is no picture).
  function draw(where, svg, alt, text, file) {
    if (pictures.has(where)) URL.revokeObjectURL(pictures.get(where));
    pictures.delete(where);
    const caption = where.querySelector("figcaption");
    where.hidden = false;
    text = clip(text);
    if (!svg) {
      caption.textContent = text;
      return;
    }
    // An image, as on the posts: an SVG shown through <img> runs no script whatever it holds.
    const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
    pictures.set(where, url);
    const img = document.createElement("img");
    img.alt = clip(alt);
    img.src = url;
    where.prepend(img);
    caption.textContent = text;
    const download = document.createElement("a");
    download.href = url;
    download.download = clip(file, 200);
    download.textContent = "Download the SVG";
    caption.appendChild(download);
  }

  function clear(where) {
    if (where.querySelector("img")) where.querySelector("img").remove();
  }

  function showTimeline(name, result) {
    draw(figure, result.svg, "Annotated timeline of the trace: CPU threads above, GPU streams below",
      result.error || `The annotated timeline of ${clip(result.window, 300)} in ${clip(name, 300)}, as analyze.py --svg draws it. `,
      `${stem(name)}.svg`);
  }

  // The second drop zone, naming the trace a second one is compared with (null: none to compare).
  function showCompare(name) {
    before = name;
    compareZone.hidden = !name;
    $(".analyzer-before-name").textContent = clip(name || "", 300);
  }

  function hideDiff() {
    compared.hidden = true;
    root.analyzerDiff = null;
    for (const where of Object.values(pair)) {
      clear(where);
      where.hidden = true;
    }
  }

  function showDiff(name, result) {
    const d = result.diff;
    $(".analyzer-diff-title").textContent = clip(
      `Before and after: ${clip(before, 300)} → ${clip(name, 300)}, ${d.before.verdict.label} → ${d.after.verdict.label}`);
    $(".analyzer-diff-table").innerHTML = result.table; // escaped by scripts/tracefacts/pictures/markup.py
    compared.hidden = false;
    root.analyzerDiff = d; // what analyze.py BEFORE AFTER --diff --json prints
  }

  function showDiffTimelines(result) {
    if (result.error) {
      draw(pair.before, null, "", result.error);
      return;
    }
    for (const [role, where] of Object.entries(pair)) {
      const name = role === "before" ? before : job.name;
      draw(where, result[role].svg,
        `Annotated timeline ${role} the change, on the same time scale as the other picture`,
        `${role === "before" ? "Before" : "After"}: ${clip(name, 300)}, ${clip(result[role].window, 300)}, as ` +
        `analyze.py BEFORE AFTER --diff --svg OUT draws it. Both pictures share one time scale ` +
        `(${result.span} across). `,
        `${stem(name)}_${role}.svg`);
    }
  }

  // Hand `file` to the worker as a `type` job ("read" or "compare"); resolves when its results are
  // shown. `stopped`: what the status line says if the reader stops it.
  async function run(type, file, stopped) {
    stopping = stopped;
    try {
      await startWorker();
      const mine = worker;
      const began = performance.now(); // from here: the trace's time, Python's start apart
      const buffer = await file.arrayBuffer();
      if (worker !== mine) throw Object.assign(new Error(stopped), { stopped: true }); // stopped meanwhile
      const done = new Promise((resolve, reject) => {
        job = { name: file.name, resolve, reject, began };
      });
      showStage("reading", file.name, 0);
      worker.postMessage({ type, name: file.name, buffer, guide: root.dataset.guide }, [buffer]);
      await done;
      return ((performance.now() - began) / 1000).toFixed(1);
    } finally {
      stopping = null;
    }
  }

  // Analyze one trace; true when its results are shown.
  async function analyze(file) {
    if (!file || input.disabled) return false;
    errorLine.hidden = true;
    output.hidden = true; // the last trace's results, until this one's replace them
    root.analyzerFacts = null;
    keepForPerfetto(file);
    clear(figure);
    showCompare(null);
    hideDiff();
    setBusy(true);
    const started = Boolean(root.dataset.loadSeconds);
    const name = clip(file.name, 300);
    try {
      const took = await run("read", file,
        `Stopped: ${name} was not analyzed. Drop or choose a trace to start again.`);
      const load = started ? "" : ` (and ${Number(root.dataset.loadSeconds).toFixed(1)} s to start Python)`;
      finish(`${name}: analyzed on this machine in ${took} s${load}; nothing was uploaded.`);
      showCompare(file.name);
      return true;
    } catch (error) {
      ended(named(error, name, "not analyzed"));
      return false;
    } finally {
      input.value = ""; // so that choosing the same file again reads it again
    }
  }

  // `error`, its message naming the file `name` (a failure to start Python names none).
  function named(error, name, what) {
    if (error.stopped || error.named) return error;
    const message = error.message.charAt(0).toLowerCase() + error.message.slice(1);
    return new Error(`${name}: ${what}: ${message}`);
  }

  // Compare the trace on the page (before) with `file` (after). A file that cannot be read says
  // so in one line; the trace on the page stays, to be compared with another.
  async function compare(file) {
    if (!file || inputAfter.disabled || !before) return;
    errorLine.hidden = true;
    hideDiff();
    setBusy(true);
    const name = clip(file.name, 300);
    try {
      const took = await run("compare", file,
        `Stopped: ${clip(before, 300)} → ${name} was not compared, and Python was ended with the ` +
        "trace it held: drop both traces to compare them.");
      root.dataset.compareSeconds = took;
      finish(`${clip(before, 300)} → ${name}: read and compared on this machine in ${took} s; nothing was uploaded.`);
    } catch (error) {
      ended(named(error, name, "not compared"));
    } finally {
      inputAfter.value = "";
    }
  }

  // One file: analyze it. Two: analyze the first and compare it with the second.
  async function open(files) {
    const [first, second] = Array.from(files);
    if ((await analyze(first)) && second) await compare(second);
  }

  input.addEventListener("change", () => open(input.files));
  inputAfter.addEventListener("change", () => compare(inputAfter.files[0]));
  preload.addEventListener("click", () => {
    setBusy(true);
    startWorker()
      .then(() => finish("The analyzer is ready: drop or choose a trace."))
      .catch(ended);
  });
  stopButton.addEventListener("click", stop);
  // A file dropped anywhere on the page is for the analyzer (instead of the browser opening it).
  document.addEventListener("dragover", (event) => {
    if (!event.dataTransfer || !Array.from(event.dataTransfer.types).includes("Files")) return;
    event.preventDefault();
    const second = !compareZone.hidden && compareZone.contains(event.target);
    root.classList.toggle("analyzer-dragging", !second);
    compareZone.classList.toggle("analyzer-dragging", second);
  });
  document.addEventListener("dragleave", (event) => {
    if (event.relatedTarget) return;
    root.classList.remove("analyzer-dragging");
    compareZone.classList.remove("analyzer-dragging");
  });
  // On the second zone: the trace after. Anywhere else: one trace, or two to compare.
  document.addEventListener("drop", (event) => {
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    root.classList.remove("analyzer-dragging");
    compareZone.classList.remove("analyzer-dragging");
    if (!compareZone.hidden && compareZone.contains(event.target)) compare(event.dataTransfer.files[0]);
    else open(event.dataTransfer.files);
  });
}
