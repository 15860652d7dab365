// "Open in Perfetto": hand the trace file to ui.perfetto.dev through postMessage.
//
// Protocol (Perfetto's documented way to open a trace from another page): open the UI in a new
// window from the click handler, send "PING" until it answers "PONG" (the channel is not
// buffered), then post {perfetto: {buffer, title, fileName, url}}. Nothing is uploaded: the
// trace goes from this page to the Perfetto tab in the browser. It works from any http(s) origin,
// `mkdocs serve` on localhost included, but not from file://.
//
// Two kinds of buttons: `button.perfetto-open` opens the whole trace; `button.perfetto-at` (made
// by scripts/tracefacts/pictures/perfetto_links.py beside a finding) opens the UI at its
// data-perfetto-url, whose route arguments zoom to the finding and select its event once the
// trace is loaded. The trace comes from data-trace (a URL, fetched) or, with data-source, from
// the page's memory: window.perfettoTraceSources[source]() gives {buffer, url?} (the in-browser
// analyzer registers the file dropped on it).
//
// Fail fast, then help: when Perfetto has not answered within FAST_MS (offline, or the network
// blocks it), say so at once and offer what works without it: the trace's download, and the
// viewer's address to drop it on (the finding's own link: Perfetto applies its zoom to the first
// trace it is given). It keeps trying until PING_TIMEOUT_MS, and delivers if Perfetto answers late.
// The same help comes when the browser blocks the new tab twice.
//
// One request at a time per button: it is disabled from the click until the trace is delivered
// or has failed, so a double click opens one tab. The download gives up after 30 s (a button's
// data-timeout-ms sets another limit), with a message beside the button.
(function () {
  "use strict";

  const PERFETTO_ORIGIN = "https://ui.perfetto.dev";
  const PING_INTERVAL_MS = 50;
  const FAST_MS = 3000;
  const PING_TIMEOUT_MS = 20000;
  const FETCH_TIMEOUT_MS = 30000;
  const BUTTONS = "button.perfetto-open, button.perfetto-at";

  window.perfettoTraceSources = window.perfettoTraceSources || {};

  function statusOf(button) {
    let status = button.parentElement.querySelector(".perfetto-status");
    if (!status) {
      status = document.createElement("span");
      status.className = "perfetto-status";
      status.setAttribute("role", "status");
      button.parentElement.appendChild(status);
    }
    return status;
  }

  function setStatus(button, text) {
    statusOf(button).textContent = text;
  }

  function link(href, text, attrs) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    for (const [key, value] of Object.entries(attrs || {})) a.setAttribute(key, value);
    return a;
  }

  // The address to open: the finding's deep link where the button has one of Perfetto's own.
  function perfettoUrl(button) {
    const url = button.dataset.perfettoUrl || "";
    return url.startsWith(PERFETTO_ORIGIN + "/") ? url : PERFETTO_ORIGIN;
  }

  // `lead`, then what works without this page talking to Perfetto: download the trace (or, for a
  // trace the reader dropped here, take their own file) and drop it on the viewer's address.
  function setHelp(button, lead) {
    const status = statusOf(button);
    status.textContent = `${lead} Instead, `;
    if (button.dataset.trace) {
      status.append(link(new URL(button.dataset.trace, window.location.href).href, "download the trace",
        { download: button.dataset.file || "", class: "perfetto-download" }), " and drop it");
    } else {
      status.append(`drop your file ${button.dataset.file || ""}`.trimEnd());
    }
    status.append(" on ", link(perfettoUrl(button), "ui.perfetto.dev",
      { target: "_blank", rel: "noopener", class: "perfetto-address" }));
    status.append(button.classList.contains("perfetto-at")
      ? " (that link opens it at the finding)." : ".");
    status.dataset.help = "true";
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
    const source = button.dataset.source;
    if (!button.dataset.trace && source) {
      const load = window.perfettoTraceSources[source];
      if (!load) return Promise.reject(new Error("the trace is no longer on this page"));
      return Promise.resolve().then(load);
    }
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

  // Resolves once the Perfetto window answers PONG; `slow()` is called once it has not within
  // FAST_MS (the ping goes on). `stop()` on the returned promise ends the wait (its trace failed).
  function waitForPong(win, slow) {
    let cleanup = () => {};
    const waiting = new Promise((resolve, reject) => {
      const started = Date.now();
      let warned = false;
      const onMessage = (event) => {
        if (event.source === win && event.data === "PONG") {
          cleanup();
          resolve();
        }
      };
      const timer = setInterval(() => {
        const waited = Date.now() - started;
        if (win.closed || waited > PING_TIMEOUT_MS) {
          cleanup();
          reject(win.closed ? new Error("the Perfetto tab was closed") : Object.assign(
            new Error("Perfetto did not answer"), { unanswered: true }));
          return;
        }
        if (!warned && waited > FAST_MS) {
          warned = true;
          slow();
        }
        try {
          win.postMessage("PING", PERFETTO_ORIGIN);
        } catch (error) {
          // The tab shows another origin's page (an error page): not Perfetto yet.
        }
      }, PING_INTERVAL_MS);
      cleanup = () => {
        clearInterval(timer);
        window.removeEventListener("message", onMessage);
      };
      window.addEventListener("message", onMessage);
    });
    waiting.stop = () => cleanup();
    waiting.catch(() => {}); // its failure is reported where it is awaited
    return waiting;
  }

  const UNANSWERED = "Perfetto did not answer (offline, or blocked by the network?).";
  const SLOW = "Perfetto has not answered yet (offline, or blocked by the network?).";

  // Ping the Perfetto window from now on, and post the trace once both are there.
  function deliver(win, button, tracePromise) {
    const pong = waitForPong(win, () => setHelp(button, navigator.onLine === false ? OFFLINE : SLOW));
    return Promise.all([tracePromise, pong])
      .then(([trace]) => {
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
      })
      .catch((error) => {
        pong.stop();
        throw error;
      });
  }

  const OFFLINE = "This browser is offline, so Perfetto cannot load.";
  const NO_DOWNLOAD = "The trace did not download (is this browser offline?).";

  // A download that never reached the server (a TypeError from fetch: no network) gets the help
  // too; an answer from it (HTTP 404, a time limit) says what it was.
  function failed(button) {
    return (error) => {
      if (error.unanswered) setHelp(button, navigator.onLine === false ? OFFLINE : UNANSWERED);
      else if (error instanceof TypeError && button.dataset.trace) setHelp(button, NO_DOWNLOAD);
      else setStatus(button, `Could not open the trace: ${error.message}`);
    };
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
    statusOf(button).appendChild(retry);
    retry.addEventListener("click", () => {
      if (retry.disabled) return;
      retry.disabled = true;
      const win = window.open(perfettoUrl(button));
      if (!win) {
        setHelp(button, "Still blocked: allow pop-ups for this site.");
        return;
      }
      retry.remove();
      deliver(win, button, tracePromise).catch(failed(button));
    });
  }

  function open(button) {
    if (button.disabled || button.getAttribute("aria-busy")) return; // one request at a time
    if (window.location.protocol === "file:") {
      setStatus(button, "Serve the site over http (e.g. mkdocs serve) to open traces in Perfetto.");
      return;
    }
    // window.open must run first, inside the click, before any await spends the activation.
    const win = window.open(perfettoUrl(button));
    setBusy(button, true);
    const tracePromise = fetchTrace(button);
    setStatus(button, "Opening Perfetto…");
    if (!win) {
      // The second button carries on; this one is free again once the download is over.
      offerSecondClick(button, tracePromise);
      tracePromise.catch(failed(button)).finally(() => setBusy(button, false));
      return;
    }
    deliver(win, button, tracePromise)
      .catch(failed(button))
      .finally(() => setBusy(button, false));
  }

  // Delegated, so it also works after Material's instant navigation swaps the page, and for
  // buttons put in later (the in-browser analyzer's facts).
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest(BUTTONS);
    if (button) {
      event.preventDefault();
      open(button);
    }
  });
})();
