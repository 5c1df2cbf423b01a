// The Retry storm tab of retrystorm's Locust web UI (see loadgen/storm_view.py).
//
// Locust draws the tab itself (an "extended tab"); while it is selected this script
// draws its content from GET /storm/series once a second: four charts in plain SVG
// (Locust's ECharts is sealed inside its bundle), each with the outages shaded, on one
// time axis in seconds since the run started. Attempts and logical requests are drawn
// as separate lines, never summed. Text is set with textContent only.
(() => {
  "use strict";

  const TAB_TITLE = "Retry storm";
  const PANEL_ID = "retrystorm-storm";
  const REFRESH_MS = 1000;
  const SVG = "http://www.w3.org/2000/svg";
  const WIDTH = 600;
  const HEIGHT = 230;
  const MARGIN = { left: 56, right: 14, top: 12, bottom: 34 };
  const CHARTS = [
    {
      key: "throughput",
      title: "Goodput against attempts sent",
      unit: "per second",
      series: [
        { key: "attempts", colour: "#ef6c00", width: 2 },
        { key: "requests_started", colour: "#1e88e5", width: 1.5, dash: "5 3" },
        { key: "goodput", colour: "#2e7d32", width: 2.5 },
        { key: "gave_up", colour: "#c62828", width: 1.5, dash: "2 2" },
      ],
    },
    {
      key: "backoff",
      title: "Users in backoff",
      unit: "users",
      series: [
        { key: "users_in_backoff", colour: "#8e24aa", width: 2 },
        { key: "active_users", colour: "#757575", width: 1.5, dash: "5 3" },
      ],
    },
    {
      key: "amplification",
      title: "Amplification: attempts sent per logical request started",
      unit: "attempts per request",
      note: "log scale · a gap: no logical request started in that second",
      reference: 1,
      log: true,
      series: [
        { key: "amplification", colour: "#ef6c00", width: 1.5, gap: "no request started" },
        { key: "amplification_total", colour: "#8d6e63", width: 2.5 },
      ],
    },
    {
      key: "in_flight",
      title: "In flight on the target",
      unit: "requests",
      note: "a gap: the target's /metrics did not answer (paused) or has no such gauge",
      series: [{ key: "in_flight", colour: "#c62828", width: 2 }],
    },
  ];
  const BANDS = {
    pause: { fill: "rgba(117,117,117,0.28)", name: "outage (paused)", short: "paused" },
    slow: { fill: "rgba(239,108,0,0.22)", name: "slowed", short: "slowed" },
    spike: { fill: "rgba(142,36,170,0.2)", name: "load spike", short: "spike" },
    errors: { fill: "rgba(198,40,40,0.2)", name: "error burst", short: "errors" },
  };
  let panel = null;
  let lastRefresh = 0;
  let refreshing = false;

  function element(tag, attributes = {}, text = "") {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  function svg(tag, attributes = {}, text = "") {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text) node.textContent = text;
    return node;
  }

  function stormTabSelected() {
    const selected = document.querySelector('[role="tab"][aria-selected="true"]');
    return selected !== null && selected.textContent.trim() === TAB_TITLE;
  }

  function niceStep(span, most) {
    const raw = span / Math.max(1, most);
    const power = 10 ** Math.floor(Math.log10(raw));
    for (const factor of [1, 2, 2.5, 5, 10]) if (factor * power >= raw) return factor * power;
    return 10 * power;
  }

  function timeStep(span) {
    for (const step of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600]) if (span / step <= 8) return step;
    return 900;
  }

  function formatNumber(value, gap = "no reading") {
    if (value === null || value === undefined) return gap;
    if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en");
    return String(Number(value.toPrecision(3))); // 3 significant digits, no trailing zeros
  }

  function latest(values) {
    return values.length ? values[values.length - 1] : null; // the last second's, a gap included
  }

  function linearScale(values, reference) {
    const top = Math.max(reference ? reference * 2 : 1, ...values) * 1.08;
    const step = niceStep(top, 5);
    const max = Math.ceil(top / step) * step;
    const ticks = [];
    for (let v = 0; v <= max + step / 2; v += step) ticks.push(v);
    return { ticks, at: (v) => v / max };
  }

  function logScale(values) {
    // decades of 1-2-5 from 0.5 up: a ratio of 1 (no retries) to hundreds reads on one chart
    const low = Math.min(0.5, ...values.filter((v) => v > 0));
    const top = Math.max(2, ...values);
    const ticks = [];
    for (let decade = 10 ** Math.floor(Math.log10(low)); ticks.length < 40; decade *= 10) {
      for (const factor of [1, 2, 5]) if (factor * decade >= low / 1.01) ticks.push(factor * decade);
      if (ticks[ticks.length - 1] >= top) break;
    }
    const min = ticks[0];
    const max = ticks[ticks.length - 1];
    return { ticks, at: (v) => Math.log(Math.max(v, min) / min) / Math.log(max / min) };
  }

  function linePath(times, values, x, y) {
    let d = "";
    let drawing = false;
    let points = 0;
    times.forEach((t, i) => {
      const value = values[i];
      if (value === null || value === undefined) {
        drawing = false; // a gap: no reading
        return;
      }
      d += `${drawing ? "L" : "M"}${x(t).toFixed(1)} ${y(value).toFixed(1)} `;
      if (!drawing) d += "l0 0 "; // a lone point still shows (round caps)
      drawing = true;
      points += 1;
    });
    return { d: d.trim(), points };
  }

  function drawChart(spec, data, domain) {
    const figure = element("figure", { "data-chart": spec.key });
    figure.style.cssText = "margin:0;padding:8px 12px;border:1px solid rgba(127,127,127,0.35);border-radius:6px";
    const caption = element("figcaption");
    const title = element("div", {}, spec.title);
    title.style.cssText = "font-weight:bold";
    const note = spec.note ? ` · ${spec.note}` : "";
    const unit = element("div", {}, `y: ${spec.unit} · x: seconds since the run started${note}`);
    unit.style.cssText = "font-size:0.8rem;opacity:0.7";
    caption.append(title, unit);
    const legend = element("ul");
    legend.style.cssText = "list-style:none;margin:6px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:0.85rem";
    const columns = spec.series.map((s) => ({ ...s, ...data.series[s.key] }));
    for (const column of columns) {
      const item = element("li", { "data-legend": column.key });
      const swatch = element("span");
      swatch.style.cssText = `display:inline-block;width:18px;height:0;border-top:3px ${column.dash ? "dashed" : "solid"} ${column.colour};vertical-align:middle;margin-right:6px`;
      const value = element("strong", { "data-latest": column.key }, formatNumber(latest(column.values), column.gap));
      value.style.marginLeft = "6px";
      item.append(swatch, element("span", {}, column.label), value);
      legend.append(item);
    }
    caption.append(legend);

    const plotW = WIDTH - MARGIN.left - MARGIN.right;
    const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
    const all = columns.flatMap((c) => c.values).filter((v) => v !== null);
    const scale = spec.log ? logScale(all) : linearScale(all, spec.reference);
    const x = (t) => MARGIN.left + ((t - domain[0]) / (domain[1] - domain[0])) * plotW;
    const y = (v) => MARGIN.top + plotH - scale.at(v) * plotH;
    const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": spec.title });
    chart.style.cssText = "width:100%;height:auto;display:block;margin-top:6px;font-size:11px";
    chart.append(svg("title", {}, `${spec.title} (${spec.unit}) against seconds since the run started`));
    for (const band of data.bands) {
      const start = Math.max(band.start_s, domain[0]);
      const end = Math.min(band.end_s === null ? domain[1] : band.end_s, domain[1]);
      if (end <= start) continue;
      const style = BANDS[band.kind] || BANDS.pause;
      const rect = svg("rect", {
        x: x(start).toFixed(1), y: MARGIN.top, width: Math.max(1, x(end) - x(start)).toFixed(1), height: plotH,
        fill: style.fill, "data-band": band.kind, "data-start-s": band.start_s,
        "data-end-s": band.end_s === null ? "" : band.end_s,
      });
      const until = band.end_s === null ? "now (still going)" : `${band.end_s.toFixed(1)} s`;
      rect.append(svg("title", {}, `${style.name}: ${band.labels.join(", ")} from ${band.start_s.toFixed(1)} s to ${until}`));
      const label = svg("text", { x: x(start) + 3, y: MARGIN.top + 11, fill: "currentColor", "fill-opacity": 0.75 }, style.short);
      chart.append(rect, label);
    }
    for (const v of scale.ticks) {
      const axis = v === scale.ticks[0];
      chart.append(svg("line", { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(v), y2: y(v), stroke: "currentColor", "stroke-opacity": axis ? 0.6 : 0.12 }));
      chart.append(svg("text", { x: MARGIN.left - 6, y: y(v) + 4, "text-anchor": "end", fill: "currentColor" }, formatNumber(v)));
    }
    const tStep = timeStep(domain[1] - domain[0]);
    for (let t = Math.ceil(domain[0] / tStep) * tStep; t <= domain[1]; t += tStep) {
      chart.append(svg("line", { x1: x(t), x2: x(t), y1: MARGIN.top + plotH, y2: MARGIN.top + plotH + 4, stroke: "currentColor", "stroke-opacity": 0.6 }));
      chart.append(svg("text", { x: x(t), y: HEIGHT - 16, "text-anchor": "middle", fill: "currentColor" }, `${t}`));
    }
    chart.append(svg("text", { x: WIDTH - MARGIN.right, y: HEIGHT - 2, "text-anchor": "end", fill: "currentColor", "fill-opacity": 0.7 }, "s since the run started"));
    if (spec.reference) {
      chart.append(svg("line", { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(spec.reference), y2: y(spec.reference), stroke: "currentColor", "stroke-opacity": 0.5, "stroke-dasharray": "2 4" }));
      chart.append(svg("text", { x: WIDTH - MARGIN.right - 4, y: y(spec.reference) - 4, "text-anchor": "end", fill: "currentColor", "fill-opacity": 0.7 }, "1 = no retries"));
    }
    for (const column of columns) {
      const { d, points } = linePath(data.t_s, column.values, x, y);
      const path = svg("path", {
        d, fill: "none", stroke: column.colour, "stroke-width": column.width, "stroke-linejoin": "round",
        "stroke-linecap": "round", "data-series": column.key, "data-points": points,
      });
      if (column.dash) path.setAttribute("stroke-dasharray", column.dash);
      chart.append(path);
    }
    figure.append(caption, chart);
    return figure;
  }

  function describeSources(data) {
    const lines = [];
    const run = data.run_started
      ? `Run started ${new Date(data.started_utc).toLocaleTimeString()}: ${data.t_s.length} readings, one a second, the last ${data.window_s / 60} minutes kept.`
      : "No run started yet: seconds since this view started.";
    lines.push(["run", run, false]);
    if (data.client) lines.push(["client", `Retried by ${data.client}.`, false]);
    const inFlight = data.sources.in_flight;
    lines.push(inFlight.error
      ? ["in_flight", `In flight: no reading now (${inFlight.error}).`, true]
      : ["in_flight", `In flight: ${inFlight.metric} from ${inFlight.url}.`, false]);
    const outages = data.sources.outages;
    if (!outages.enabled) lines.push(["outages", outages.error, false]);
    else if (outages.error) lines.push(["outages", `Outages: ${outages.error}`, true]);
    else lines.push(["outages", `Outages from the chaos API at ${outages.url}, shaded on every chart.`, false]);
    return lines;
  }

  function render(data) {
    const status = panel.querySelector("#storm-status");
    status.replaceChildren();
    for (const [key, text, isError] of describeSources(data)) {
      const line = element("div", { "data-source": key }, text);
      if (isError) line.style.color = "#d32f2f";
      status.append(line);
    }
    const first = data.t_s.length ? Math.floor(data.t_s[0]) : 0;
    const last = Math.max(data.now_s, first + 10);
    const charts = panel.querySelector("#storm-charts");
    charts.replaceChildren(...CHARTS.map((spec) => drawChart(spec, data, [first, last])));
  }

  async function refresh() {
    refreshing = true;
    try {
      const response = await fetch("/storm/series", { headers: { Accept: "application/json" } });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
      if (panel) {
        panel.querySelector("#storm-message").textContent = "";
        render(data);
      }
    } catch (error) {
      if (panel) panel.querySelector("#storm-message").textContent = `The view cannot read its data: ${error.message}`;
    } finally {
      refreshing = false;
      lastRefresh = Date.now();
    }
  }

  function build() {
    const node = element("div", { id: PANEL_ID });
    node.style.cssText = "padding:8px 0 24px;font-family:inherit";
    const status = element("div", { id: "storm-status" });
    status.style.cssText = "font-size:0.9rem;line-height:1.5;margin-bottom:10px";
    const message = element("div", { id: "storm-message", role: "alert" });
    message.style.cssText = "color:#d32f2f;min-height:1.2em";
    const charts = element("div", { id: "storm-charts" });
    charts.style.cssText = "display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:16px";
    node.append(status, message, charts);
    return node;
  }

  function sync() {
    if (!stormTabSelected()) {
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
    if (!refreshing && Date.now() - lastRefresh >= REFRESH_MS) refresh();
  }

  setInterval(sync, 250);
})();
