// The list-and-detail layout every view shares: the detail shows a hint when
// nothing is open; on a phone it replaces the list and has a way back.
import { fill, h } from "./dom.js";
import { STYLE } from "./styles.js";

export class Split {
  // `tab` is the view's tab: Back goes to its list. `hint` is the text shown
  // while nothing is open (a string or nodes).
  constructor(panel, tab, name, hint) {
    this.panel = panel;
    this.hint = hint;
    // The list column: the view fills it (a card, and what goes below it).
    this.list = h("div", {});
    this.detail = h("div", { class: "card", "data-detail": name });
    this.element = h("div", { class: "split" }, this.list, this.detail);
    this.back = () =>
      h("button", { class: "action", "data-action": "back-to-list", onclick: () => panel.go(tab) }, panel.t("common.back"));
    this.close();
  }

  // Shows an item in the detail, with the way back to the list on a phone.
  open(...children) {
    this.element.classList.add("opened");
    fill(this.detail, h("div", { class: "toolbar back-bar" }, this.back()), children);
  }

  // What `read()` answers for the item to open; when it fails nothing stale
  // stays open beside the URL of another item.
  async fetch(read) {
    try {
      return await read();
    } catch (error) {
      this.close();
      throw error;
    }
  }

  // Nothing open: the hint, never an empty card.
  close() {
    this.element.classList.remove("opened");
    fill(this.detail, h("div", { class: "hint", "data-hint": "" }, this.hint));
  }
}

// Buttons that choose one value, in place of a native select: they wrap on a
// phone and take the theme's colours. `choices` is [[value, label], ...].
export function chips(name, choices, chosen, onChoose) {
  return h(
    "div",
    { class: "chips", role: "group", "data-filter": name },
    choices.map(([value, label]) =>
      h(
        "button",
        { "data-value": value, "aria-pressed": String(value === chosen), onclick: () => onChoose(value) },
        label,
      ),
    ),
  );
}

// How each outcome looks, in every view: a run that went well is green, one
// that failed is red, one still going is amber. A job's kinds are listed by
// `panel/describe` (`run_outcomes`, each with its word under `outcomes`);
// a tool run ends `ok` or `error`.
const OUTCOME_LOOKS = { ok: "ok", error: "error", failed: "error", running: "warning" };

// A run's outcome as a chip: the translated word of its kind, and its detail
// (a code of the Python side: why it failed) after it, as sent.
export function outcomeBadge(panel, kind, detail = null) {
  return h(
    "span",
    { class: `badge ${OUTCOME_LOOKS[kind] || ""}`.trim(), "data-outcome": kind },
    panel.api.label("outcomes", kind),
    detail ? `: ${detail}` : null,
  );
}

// The last runs of a job or a tool: a table whose words never break; on a
// screen too narrow for it, it scrolls sideways inside its own box.
// `rows` are lists of cells (text or nodes), one per title.
export function runsTable(name, titles, rows) {
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: "runs", "data-list": name },
      h("tr", {}, titles.map((title) => h("th", {}, title))),
      rows.map((cells) => h("tr", { "data-run": "" }, cells.map((cell) => h("td", {}, cell)))),
    ),
  );
}

// A labelled form field: the label stays when the field is filled.
export function field(label, control) {
  return h("label", { class: "field" }, label, control);
}

// A page of the sidebar, the Assistant panel or Chat: what Home Assistant
// hands it besides `hass`. `_main` is its drawn main element, `_menuButton`
// Home Assistant's sidebar toggle, and `_follow()` shows what the route says.
export class HomeAssistantPage extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
  }

  set narrow(narrow) {
    this._narrow = Boolean(narrow);
    if (this._main) this._main.classList.toggle("narrow", this._narrow);
    if (this._menuButton) this._menuButton.narrow = narrow;
  }

  set route(route) {
    this._route = route;
    if (this._main) this._follow();
  }

  t(key, values) {
    return this.api.t(key, values);
  }

  // Strings (and what else the page's Api reads) first; everything again in a
  // new language. Without strings the page can say only the error itself; a
  // reload of the page tries again.
  async _load() {
    try {
      if (!(await this.api.load(this._hass))) return;
    } catch (error) {
      fill(this.shadowRoot, h("style", {}, STYLE), h("main", {}, h("div", { class: "error-bar", role: "alert" }, error.message || String(error))));
      return;
    }
    this._forget();
    this._render();
  }
}

// What every view has: the panel, a place for error sentences, text and
// commands. A view extends it and builds its own element.
export class View {
  constructor(panel) {
    this.panel = panel;
    this.error = h("div");
  }

  t(key, values) {
    return this.panel.t(key, values);
  }

  call(message) {
    return this.panel.api.call(message, this.error);
  }

  // The id an item's URL names: a whole number, or else no item there is.
  itemId(item) {
    const id = Number(item);
    if (Number.isInteger(id)) return id;
    const error = { code: "not_found", message: `${item}: not found` };
    this.panel.api.showError(this.error, error);
    throw error;
  }
}
