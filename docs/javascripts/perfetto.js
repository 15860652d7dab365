// "Open in Perfetto": hand the trace file to ui.perfetto.dev through postMessage.
//
// Protocol (Perfetto's documented way to open a trace from another page): open the UI in a new
// window from the click handler, send "PING" until it answers "PONG" (the channel is not
// buffered), then post {perfetto: {buffer, title, fileName, url}}. Nothing is uploaded: the
// trace goes from this page to the Perfetto tab in the browser. It works from any http(s) origin,
// `mkdocs serve` on localhost included, but not from file://.
//
// One request at a time per button: it is disabled from the click until the trace is delivered
// or has failed, so a double click opens one tab. The download gives up after 30 s (a button's
// data-timeout-ms sets another limit), with a message beside the button.
(function () {
  "use strict";

  const PERFETTO_ORIGIN = "https://ui.perfetto.dev";
  const PING_INTERVAL_MS = 50;
  const PING_TIMEOUT_MS = 20000;
  const FETCH_TIMEOUT_MS = 30000;

  function setStatus(button, text) {
    let status = button.parentElement.querySelector(".perfetto-status");
    if (!status) {
      status = document.createElement("span");
      status.className = "perfetto-status";
      status.setAttribute("role", "status");
      button.parentElement.appendChild(status);
    }
    status.textContent = text;
  }

  function setBusy(button, busy) {
    button.disabled = busy;
    if (busy) button.setAttribute("aria-busy", "true");
    else button.removeAttribute("aria-busy");
  }

  function duration(ms) {
    return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
  }

  // The trace's bytes, or an error once the download (headers and body) outlasts the limit.
  function fetchTrace(button) {
    const url = new URL(button.dataset.trace, window.location.href).href;
    const limit = Number(button.dataset.timeoutMs) > 0 ? Number(button.dataset.timeoutMs) : FETCH_TIMEOUT_MS;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), limit);
    return fetch(url, { signal: controller.signal })
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
        return response.arrayBuffer().then((buffer) => ({ buffer, url }));
      })
      .catch((error) => {
        if (error.name !== "AbortError") throw error;
        throw new Error(`the download took longer than ${duration(limit)}; try again, or download the trace`);
      })
      .finally(() => clearTimeout(timer));
  }

  // Resolves once the Perfetto window answers PONG.
  function waitForPong(win) {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const onMessage = (event) => {
        if (event.source === win && event.data === "PONG") {
          cleanup();
          resolve();
        }
      };
      const timer = setInterval(() => {
        if (win.closed || Date.now() - started > PING_TIMEOUT_MS) {
          cleanup();
          reject(new Error(win.closed ? "the Perfetto tab was closed" : "Perfetto did not answer"));
          return;
        }
        win.postMessage("PING", PERFETTO_ORIGIN);
      }, PING_INTERVAL_MS);
      function cleanup() {
        clearInterval(timer);
        window.removeEventListener("message", onMessage);
      }
      window.addEventListener("message", onMessage);
    });
  }

  function send(win, button, trace) {
    return waitForPong(win).then(() => {
      win.postMessage(
        {
          perfetto: {
            buffer: trace.buffer,
            title: button.dataset.title || button.dataset.file,
            fileName: button.dataset.file,
            url: trace.url,
          },
        },
        PERFETTO_ORIGIN
      );
      setStatus(button, "Opened in Perfetto.");
    });
  }

  // The popup was blocked (some browsers block window.open once the click's user activation is
  // spent): keep the trace in memory and offer a second button whose click opens the window
  // at once.
  function offerSecondClick(button, tracePromise) {
    setStatus(button, "Your browser blocked the new tab. ");
    const retry = document.createElement("button");
    retry.type = "button";
    retry.className = "md-button perfetto-retry";
    retry.textContent = "Click again to open the trace";
    button.parentElement.querySelector(".perfetto-status").appendChild(retry);
    retry.addEventListener("click", () => {
      if (retry.disabled) return;
      retry.disabled = true;
      const win = window.open(PERFETTO_ORIGIN);
      if (!win) {
        setStatus(button, "Still blocked: allow pop-ups for this site, or download the trace and open it at ui.perfetto.dev.");
        return;
      }
      retry.remove();
      tracePromise.then((trace) => send(win, button, trace)).catch((error) => setStatus(button, `Could not open the trace: ${error.message}`));
    });
  }

  function open(button) {
    if (button.disabled || button.getAttribute("aria-busy")) return; // one request at a time
    if (window.location.protocol === "file:") {
      setStatus(button, "Serve the site over http (e.g. mkdocs serve) to open traces in Perfetto.");
      return;
    }
    // window.open must run first, inside the click, before any await spends the activation.
    const win = window.open(PERFETTO_ORIGIN);
    setBusy(button, true);
    const tracePromise = fetchTrace(button);
    const failed = (error) => setStatus(button, `Could not open the trace: ${error.message}`);
    setStatus(button, "Opening Perfetto…");
    if (!win) {
      // The second button carries on; this one is free again once the download is over.
      offerSecondClick(button, tracePromise);
      tracePromise.catch(failed).finally(() => setBusy(button, false));
      return;
    }
    tracePromise
      .then((trace) => send(win, button, trace))
      .catch(failed)
      .finally(() => setBusy(button, false));
  }

  // Delegated, so it also works after Material's instant navigation swaps the page.
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button.perfetto-open");
    if (button) {
      event.preventDefault();
      open(button);
    }
  });
})();
