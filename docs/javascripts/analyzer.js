// The in-browser analyzer's page side (docs/guide/analyze-in-browser.md): a drop zone, a progress
// line, and the places where the results go. The work is done by the worker
// (analyzer-worker.js), started on the first drop or click, never on page load: Pyodide is about
// 13 MB. Nothing is uploaded. What comes back is markup built by the Python renderers, which escape
// every name from the trace; the file's name and the messages are set as text, never as markup.

const root = document.querySelector(".trace-analyzer");

const STAGES = {
  loading: () => "Loading Python into this page (Pyodide, about 13 MB, once per visit)…",
  decompressing: (name) => `Decompressing ${name}…`,
  reading: (name, done) => `Reading ${name}: ${Math.round(100 * done)}%`,
  computing: () => "Computing the facts…",
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
  const absolute = (url) => new URL(url, window.location.href).href;

  let worker = null;
  let ready = null; // resolves when Python is loaded
  let job = null; // {name, resolve, reject, began}
  let timelineUrl = null;

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
    preload.disabled = busy || Boolean(root.dataset.loadSeconds);
    root.toggleAttribute("aria-busy", busy);
  }

  function stopWorker(message) {
    if (worker) worker.terminate();
    worker = null;
    ready = null;
    delete root.dataset.loadSeconds;
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
    }
  }

  function showFacts(name, result) {
    const f = result.facts;
    const steps = f.steps.length;
    $(".analyzer-title").textContent =
      `${name}: ${f.events.toLocaleString("en")} events, ` +
      `${steps} ProfilerStep${steps === 1 ? "" : "s"}` + (f.gpus.length ? `, ${f.gpus.join(", ")}` : "");
    $(".analyzer-facts").innerHTML = result.facts_box; // escaped by scripts/markup.py
    $(".analyzer-steps").innerHTML = result.steps_table || ""; // escaped by scripts/markup.py
    $(".analyzer-summary").textContent = result.summary;
    figure.hidden = true;
    output.hidden = false;
    root.analyzerFacts = f; // what --json prints, for whoever wants it (and the tests)
  }

  function showTimeline(name, result) {
    if (timelineUrl) URL.revokeObjectURL(timelineUrl);
    timelineUrl = null;
    const caption = figure.querySelector("figcaption");
    figure.hidden = false;
    if (result.error) {
      caption.textContent = result.error;
      return;
    }
    // An image, as on the posts: an SVG shown through <img> runs no script whatever it holds.
    timelineUrl = URL.createObjectURL(new Blob([result.svg], { type: "image/svg+xml" }));
    const img = document.createElement("img");
    img.alt = "Annotated timeline of the trace: CPU threads above, GPU streams below";
    img.src = timelineUrl;
    figure.prepend(img);
    caption.textContent = `The annotated timeline of ${result.window} in ${name}, as analyze.py --svg draws it. `;
    const download = document.createElement("a");
    download.href = timelineUrl;
    download.download = `${name.replace(/\.json(\.gz)?$/i, "") || "trace"}.svg`;
    download.textContent = "Download the SVG";
    caption.appendChild(download);
  }

  async function analyze(file) {
    if (!file || input.disabled) return;
    errorLine.hidden = true;
    output.hidden = true; // the last trace's results, until this one's replace them
    root.analyzerFacts = null;
    if (figure.querySelector("img")) figure.querySelector("img").remove();
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
    } catch (error) {
      fail(error.message);
    } finally {
      input.value = ""; // so that choosing the same file again reads it again
    }
  }

  input.addEventListener("change", () => analyze(input.files[0]));
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
    root.classList.add("analyzer-dragging");
  });
  document.addEventListener("dragleave", (event) => {
    if (!event.relatedTarget) root.classList.remove("analyzer-dragging");
  });
  document.addEventListener("drop", (event) => {
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    root.classList.remove("analyzer-dragging");
    analyze(event.dataTransfer.files[0]);
  });
}
