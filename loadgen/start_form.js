// The start form's retrystorm fields (see loadgen/start_form.py).
//
// Locust's React form draws the fields; this script only adds to them, and nothing it
// adds has a name, so the form sends what it sent before:
// - the help of each field in full on a line under it, and as its title;
// - the fields in the order of loadgen/options.py (the retry strategy first);
// - beside the strategy's free text, a list of the strategy families and client presets
//   that fills the field (and the same as suggestions while typing);
// - "Custom parameters" opened once each time the form appears.
// Text is set with textContent only.
(() => {
  "use strict";

  const data = (window.templateArgs || {}).retrystorm_form;
  if (!data) return;
  const LIST_ID = "retrystorm-strategy-list";
  const opened = new WeakSet(); // accordion headers this script has opened
  const GROUPS = [
    ["default", "Default"],
    ["family", "Strategy families (parameters at their defaults)"],
    ["preset", "Client library presets"],
  ];

  function element(tag, attributes = {}, text = "") {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  function setValue(input, value) {
    // the native setter, so React's change tracking sees the new value
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
    setter.call(input, value);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function helpLine(dest, text) {
    const line = element("p", { "data-retrystorm-help": dest }, text);
    line.style.cssText = "margin:4px 14px 0;font-size:0.8rem;line-height:1.4;opacity:0.75;white-space:normal";
    return line;
  }

  function choices(input) {
    const select = element("select", { "data-retrystorm-choices": "retry_strategy", "aria-label": "strategy choices" });
    select.style.cssText = "margin:8px 0 0;padding:6px;font:inherit;max-width:100%"; // native colours: its options stay readable in the dark theme
    select.append(element("option", { value: "" }, "Choose a family or a client preset…"));
    for (const [group, title] of GROUPS) {
      const entries = data.strategies.filter((choice) => choice.group === group);
      if (!entries.length) continue;
      const optgroup = element("optgroup", { label: title });
      for (const choice of entries) {
        const option = element("option", { value: choice.spec, title: choice.spec }, `${choice.name} — ${choice.summary}`);
        optgroup.append(option);
      }
      select.append(optgroup);
    }
    select.addEventListener("change", () => {
      if (select.value) setValue(input, select.value);
      input.focus();
    });
    if (!document.getElementById(LIST_ID)) {
      const list = element("datalist", { id: LIST_ID });
      for (const choice of data.strategies) list.append(element("option", { value: choice.spec }));
      document.body.append(list);
    }
    input.setAttribute("list", LIST_ID);
    return select;
  }

  function fieldOf(dest) {
    // Locust's form names its fields in camelCase (retryStrategy) and sends them in snake_case
    const camel = dest.replace(/_([a-z0-9])/g, (_, letter) => letter.toUpperCase());
    return document.querySelector(`form [name="${CSS.escape(camel)}"], form [name="${CSS.escape(dest)}"]`);
  }

  function decorate(dest, index, order) {
    const input = fieldOf(dest);
    if (!input) return;
    const root = input.closest(".MuiFormControl-root") || input.closest(".MuiFormControlLabel-root");
    if (!root) return;
    root.style.order = String(index - order.length); // before the fields not listed (order 0)
    const help = data.help[dest];
    if (help && !root.querySelector(`[data-retrystorm-help="${CSS.escape(dest)}"]`)) {
      const shown = root.querySelector('[role="combobox"]') || input;
      shown.title = help;
      if (dest === "retry_strategy") root.append(choices(input));
      root.append(helpLine(dest, help));
    }
  }

  function openCustomParameters() {
    for (const summary of document.querySelectorAll(".MuiAccordionSummary-root")) {
      if (summary.textContent.trim() !== "Custom parameters" || opened.has(summary)) continue;
      opened.add(summary);
      if (summary.getAttribute("aria-expanded") === "false") summary.click();
    }
  }

  function sync() {
    if (!document.querySelector("form")) return;
    const order = [...data.order, ...Object.keys(data.help).filter((dest) => !data.order.includes(dest))];
    order.forEach(decorate);
    openCustomParameters();
  }

  setInterval(sync, 250);
})();
