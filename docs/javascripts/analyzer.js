// The in-browser analyzer's page side (docs/guide/analyze-in-browser.md): a drop zone, a progress
// line, and the places where the results go. The work is done by the worker
// (analyzer-worker.js), started on the first drop or click, never on page load: Pyodide is about
// 13 MB. Nothing is uploaded. What comes back is markup built by the Python renderers, which escape
// every name from the trace; the file's name and the messages are set as text, never as markup.
//
// The facts box's "in Perfetto" links open the trace on the page at a finding: perfetto.js asks
// window.perfettoTraceSources.analyzer for its bytes, which come from the file the reader chose,
// still in this page's memory (read again from the File object): nothing is uploaded.
//
// Before and after: once a trace is shown, a second one (dropped on the second zone, chosen there,
// or given with the first, two at once) is compared with it, as `analyze.py BEFORE AFTER --diff`
// compares them; the first one's results stay on the page whatever becomes of the second.

const root = document.querySelector(".trace-analyzer");

const STAGES = {
  loading: () => "Loading Python into this page (Pyodide, about 13 MB, once per visit)…",
  decompressing: (name) => `Decompressing ${name}…`,
  reading: (name, done) => `Reading ${name}: ${Math.round(100 * done)}%`,
  computing: () => "Computing the facts…",
  comparing: () => "Comparing the two traces…",
  drawing: () => "Drawing the timeline…",
};

if (root) {
  const $ = (selector) => root.querySelector(selector);
  const input = $(".analyzer-input");
  const preload = $(".analyzer-preload");
  const status = $(".analyzer-status");
  const bar = $(".analyzer-progress");
  const stage = $(".analyzer-stage");
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
  let job = null; // {name, resolve, reject, began}
  let before = null; // the name of the trace on the page, which a second one is compared with
  const pictures = new Map(); // figure → the blob URL of the picture it shows

  function showStage(key, name, done) {
    status.hidden = false;
    stage.textContent = STAGES[key] ? STAGES[key](name, done) : key;
    if (done === null || done === undefined) bar.removeAttribute("value");
    else bar.value = done;
  }

  function finish(text) {
    bar.value = 1;
    stage.textContent = text;
    setBusy(false);
  }

  function fail(message) {
    status.hidden = true;
    errorLine.textContent = message;
    errorLine.hidden = false;
    setBusy(false);
  }

  function setBusy(busy) {
    input.disabled = busy;
    inputAfter.disabled = busy;
    preload.disabled = busy || Boolean(root.dataset.loadSeconds);
    root.toggleAttribute("aria-busy", busy);
  }

  function stopWorker(message) {
    if (worker) worker.terminate();
    worker = null;
    ready = null;
    delete root.dataset.loadSeconds;
    showCompare(null); // Python, and the trace it held, are gone
    if (job) job.reject(new Error(message));
    job = null;
  }

  function startWorker() {
    if (ready) return ready;
    showStage("loading");
    worker = new Worker(absolute(root.dataset.worker), { type: "module" });
    ready = new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => {
        if (data.type === "ready") {
          root.dataset.loadSeconds = data.seconds.toFixed(2);
          resolve();
        } else if (data.type === "failed") {
          const message = `The analyzer stopped: ${data.message}. Reload the page to try again.`;
          reject(new Error(message));
          stopWorker(message);
        } else if (job) {
          onResult(data);
        }
      };
      worker.onerror = (event) => {
        event.preventDefault();
        const message = `The analyzer could not start (${event.message || "worker error"}).`;
        reject(new Error(message));
        stopWorker(message);
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
        job.reject(new Error(data.result.error));
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
        job.reject(new Error(data.result.error));
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
    $(".analyzer-title").textContent =
      `${name}: ${f.events.toLocaleString("en")} events, ` +
      `${steps} ProfilerStep${steps === 1 ? "" : "s"}` + (f.gpus.length ? `, ${f.gpus.join(", ")}` : "");
    $(".analyzer-facts").innerHTML = result.facts_box; // escaped by scripts/tracefacts/pictures/markup.py
    $(".analyzer-steps").innerHTML = result.steps_table || ""; // escaped by scripts/tracefacts/pictures/markup.py
    $(".analyzer-summary").textContent = result.summary;
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
    if (!svg) {
      caption.textContent = text;
      return;
    }
    // An image, as on the posts: an SVG shown through <img> runs no script whatever it holds.
    const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
    pictures.set(where, url);
    const img = document.createElement("img");
    img.alt = alt;
    img.src = url;
    where.prepend(img);
    caption.textContent = text;
    const download = document.createElement("a");
    download.href = url;
    download.download = file;
    download.textContent = "Download the SVG";
    caption.appendChild(download);
  }

  function clear(where) {
    if (where.querySelector("img")) where.querySelector("img").remove();
  }

  function showTimeline(name, result) {
    draw(figure, result.svg, "Annotated timeline of the trace: CPU threads above, GPU streams below",
      result.error || `The annotated timeline of ${result.window} in ${name}, as analyze.py --svg draws it. `,
      `${stem(name)}.svg`);
  }

  // The second drop zone, naming the trace a second one is compared with (null: none to compare).
  function showCompare(name) {
    before = name;
    compareZone.hidden = !name;
    $(".analyzer-before-name").textContent = name || "";
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
    $(".analyzer-diff-title").textContent =
      `Before and after: ${before} → ${name}, ${d.before.verdict.label} → ${d.after.verdict.label}`;
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
        `${role === "before" ? "Before" : "After"}: ${name}, ${result[role].window}, as ` +
        `analyze.py BEFORE AFTER --diff --svg OUT draws it. Both pictures share one time scale ` +
        `(${result.span} across). `,
        `${stem(name)}_${role}.svg`);
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
    try {
      await startWorker();
      const began = performance.now(); // from here: the trace's time, Python's start apart
      const buffer = await file.arrayBuffer();
      const done = new Promise((resolve, reject) => {
        job = { name: file.name, resolve, reject, began };
      });
      showStage("reading", file.name, 0);
      worker.postMessage({ type: "read", name: file.name, buffer, guide: root.dataset.guide }, [buffer]);
      await done;
      const took = ((performance.now() - began) / 1000).toFixed(1);
      const load = started ? "" : ` (and ${Number(root.dataset.loadSeconds).toFixed(1)} s to start Python)`;
      finish(`${file.name}: analyzed on this machine in ${took} s${load}; nothing was uploaded.`);
      showCompare(file.name);
      return true;
    } catch (error) {
      fail(error.message);
      return false;
    } finally {
      input.value = ""; // so that choosing the same file again reads it again
    }
  }

  // Compare the trace on the page (before) with `file` (after). A file that cannot be read says
  // so in one line; the trace on the page stays, to be compared with another.
  async function compare(file) {
    if (!file || inputAfter.disabled || !before) return;
    errorLine.hidden = true;
    hideDiff();
    setBusy(true);
    try {
      await startWorker();
      const began = performance.now();
      const buffer = await file.arrayBuffer();
      const done = new Promise((resolve, reject) => {
        job = { name: file.name, resolve, reject, began };
      });
      showStage("reading", file.name, 0);
      worker.postMessage({ type: "compare", name: file.name, buffer, guide: root.dataset.guide }, [buffer]);
      await done;
      const took = ((performance.now() - began) / 1000).toFixed(1);
      root.dataset.compareSeconds = took;
      finish(`${before} → ${file.name}: read and compared on this machine in ${took} s; nothing was uploaded.`);
    } catch (error) {
      fail(error.message);
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
      .catch((error) => fail(error.message));
  });
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
