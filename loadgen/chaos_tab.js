// The Chaos tab of retrystorm's Locust web UI (see loadgen/chaos_tab.py).
//
// Locust draws the tab itself (an "extended tab"); this script draws its content while
// the tab is selected: the chaos targets with their state, a duration, and Pause /
// Resume buttons. Everything goes through the web UI's own /chaos/... routes, which
// call the chaos API server-side. Text is set with textContent only.
(() => {
  "use strict";

  const PANEL_ID = "retrystorm-chaos";
  const REFRESH_MS = 1000;
  const COLOURS = { paused: "#ed6c02", running: "#2e7d32", gone: "#9e9e9e" };
  let panel = null;
  let lastRefresh = 0;
  let busy = false; // an action is under way
  let refreshing = false;
  let refreshFailed = false; // the message shown is the last refresh's error

  function element(tag, attributes = {}, text = "") {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  function chaosTabSelected() {
    const selected = document.querySelector('[role="tab"][aria-selected="true"]');
    return selected !== null && selected.textContent.trim() === "Chaos";
  }

  function say(text, isError) {
    const message = panel && panel.querySelector("#chaos-message");
    if (!message) return;
    message.textContent = text;
    message.dataset.kind = isError ? "error" : "info";
    message.style.color = isError ? "#d32f2f" : "inherit";
  }

  async function call(method, path, body) {
    const options = { method, headers: { Accept: "application/json" } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, options);
    } catch (error) {
      throw new Error(`the web UI did not answer: ${error.message}`);
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      throw new Error(`HTTP ${response.status} from ${path}`);
    }
    if (!response.ok) throw new Error((data && data.error) || `HTTP ${response.status}`);
    return data;
  }

  function button(label, action, row) {
    const node = element("button", { type: "button", "data-action": action }, label);
    node.style.cssText =
      "margin-right:8px;padding:4px 14px;border-radius:4px;border:1px solid currentColor;" +
      "background:transparent;color:inherit;cursor:pointer;font:inherit";
    node.addEventListener("click", () => act(action, row));
    return node;
  }

  function remaining(row) {
    return row.outages.map((o) => `${o.id}: ${Math.ceil(o.remaining_s)} s left of ${o.duration_s} s`).join(", ");
  }

  function render(data) {
    const table = panel.querySelector("#chaos-targets");
    const controls = panel.querySelector("#chaos-controls");
    controls.style.display = data.enabled ? "" : "none";
    panel.querySelector("#chaos-url").textContent = data.enabled ? `chaos API: ${data.url}` : "";
    if (!data.enabled) say(data.message, false);
    table.replaceChildren();
    if (!data.enabled) return;
    const head = element("tr");
    for (const title of ["Target", "Backend", "State", "Outage", ""]) head.append(element("th", {}, title));
    table.append(head);
    for (const row of data.targets) {
      const line = element("tr", { "data-chaos-target": row.target, "data-state": row.state });
      line.append(element("td", {}, row.target), element("td", {}, row.backend));
      const state = element("td", { "data-role": "state" }, row.state);
      state.style.color = COLOURS[row.state] || "inherit";
      state.style.fontWeight = "bold";
      line.append(state, element("td", {}, remaining(row)));
      const actions = element("td");
      actions.append(button("Pause", "pause", row), button("Resume", "resume", row));
      line.append(actions);
      table.append(line);
    }
    if (!data.targets.length) say("The chaos API offers no targets: start it with --target NAME=PID.", false);
    for (const cell of table.querySelectorAll("th, td")) cell.style.cssText += ";padding:6px 16px;text-align:left";
  }

  async function refresh() {
    refreshing = true;
    try {
      const data = await call("GET", "/chaos/targets");
      if (!panel) return;
      if (refreshFailed) say("", false);
      refreshFailed = false;
      render(data);
    } catch (error) {
      refreshFailed = true;
      say(error.message, true);
    } finally {
      refreshing = false;
      lastRefresh = Date.now();
    }
  }

  async function act(action, row) {
    if (busy) return;
    busy = true;
    const body = { target: row.target, backend: row.backend };
    if (action === "pause") body.duration = panel.querySelector("#chaos-duration").value;
    refreshFailed = false;
    try {
      const answer = await call("POST", `/chaos/${action}`, body);
      if (action === "pause") say(`paused ${row.target} for ${answer.outage.duration_s} s (outage ${answer.outage.id})`);
      else say(`resumed ${row.target}`);
    } catch (error) {
      say(error.message, true);
    } finally {
      busy = false;
      await refresh();
    }
  }

  function build() {
    const node = element("div", { id: PANEL_ID });
    node.style.cssText = "padding:8px 0;font-family:inherit";
    const controls = element("div", { id: "chaos-controls" });
    controls.style.cssText = "margin-bottom:12px";
    const label = element("label", { for: "chaos-duration" }, "Pause for ");
    const duration = element("input", { id: "chaos-duration", value: "30s", size: "8", "aria-label": "duration" });
    duration.style.cssText = "font:inherit;padding:4px;margin-right:16px";
    controls.append(label, duration, element("span", { id: "chaos-url" }));
    const message = element("div", { id: "chaos-message", role: "alert" });
    message.style.cssText = "min-height:1.5em;margin-bottom:8px";
    const table = element("table", { id: "chaos-targets" });
    table.style.cssText = "border-collapse:collapse";
    node.append(controls, message, table);
    return node;
  }

  function sync() {
    const shown = chaosTabSelected();
    if (!shown) {
      if (panel) panel.remove();
      panel = null;
      return;
    }
    const tabs = document.querySelector('[role="tablist"]');
    const container = (tabs && tabs.closest(".MuiContainer-root")) || document.getElementById("root");
    if (!panel) {
      panel = build();
      lastRefresh = 0;
    }
    if (panel.parentNode !== container || container.lastElementChild !== panel) container.append(panel);
    if (!busy && !refreshing && Date.now() - lastRefresh >= REFRESH_MS) refresh();
  }

  setInterval(sync, 250);
})();
