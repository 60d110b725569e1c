// The Assistant panel, for administrators, in Home Assistant's look. A shell
// that follows the URL: Home Assistant gives it `route` ({prefix, path});
// `/<tab>/<item>` under the panel's path shows a tab and opens an item, so
// back and forward work, a reload keeps the view and a link from Repairs
// or a notification opens it. The view contract is in README.md.
import { Api } from "./api.js";
import { ConversationsView } from "./conversations.js";
import { fill, h } from "./dom.js";
import { HomeAssistantPage } from "./layout.js";
import { JobsView } from "./jobs.js";
import { MemoryView } from "./memory.js";
import { NightlyView } from "./nightly.js";
import { ServersView } from "./servers.js";
import { STYLE } from "./styles.js";
import { ToolsView } from "./tools.js";

const VIEWS = {
  conversations: ConversationsView,
  memory: MemoryView,
  nightly: NightlyView,
  tools: ToolsView,
  jobs: JobsView,
  servers: ServersView,
};
const FIRST_TAB = "conversations";

class DesktopAssistantPanel extends HomeAssistantPage {
  constructor() {
    super();
    this.api = new Api();
    this._views = {};
    this._shown = null;
  }

  set hass(hass) {
    this._hass = hass;
    if (this._menuButton) this._menuButton.hass = hass;
    for (const view of Object.values(this._views)) view.hass = hass;
    this._load();
  }

  // What was drawn in the old language, and the views that drew it.
  _forget() {
    this._views = {};
    this._shown = null;
  }

  get language() {
    return this._hass && this._hass.language;
  }

  _render() {
    this._menuButton = document.createElement("ha-menu-button");
    this._menuButton.hass = this._hass;
    this._menuButton.narrow = this._narrow;
    this._tabs = h("nav", { class: "tabs", role: "tablist" });
    this._main = h("main", { class: this._narrow ? "narrow" : "" });
    fill(
      this.shadowRoot,
      h("style", {}, STYLE),
      h("header", {}, this._menuButton, h("div", { class: "title" }, this.t("title"))),
      this._tabs,
      this._main,
    );
    this._follow();
  }

  // The tab and item the URL names: `/memory/12` is page 12 of Memory.
  _location() {
    const path = (this._route && this._route.path) || "";
    const [tab, ...rest] = path.split("/").filter(Boolean);
    // Own keys only: `/constructor` names no view.
    if (!Object.hasOwn(VIEWS, tab)) return [FIRST_TAB, null];
    try {
      return [tab, rest.length ? decodeURIComponent(rest.join("/")) : null];
    } catch {
      // A malformed escape (`/memory/%E0`) names no item: the tab's list.
      return [tab, null];
    }
  }

  // `again`: a click on what is shown reads it afresh.
  _follow(again = false) {
    const [tab, item] = this._location();
    const key = `${tab}/${item}`;
    if (key === this._shown && !again) return;
    this._shown = key;
    fill(
      this._tabs,
      Object.keys(VIEWS).map((name) =>
        h(
          "button",
          { class: name === tab ? "active" : "", role: "tab", "data-tab": name, onclick: () => this.go(name) },
          this.t(`tabs.${name}`),
        ),
      ),
    );
    if (!this._views[tab]) this._views[tab] = new VIEWS[tab](this);
    const view = this._views[tab];
    view.hass = this._hass;
    if (this._main.firstChild !== view.element) fill(this._main, view.element);
    view.show(item).catch(() => {}); // the view has shown the error sentence
  }

  // Goes to a tab (and an item of it) as a link would: a new history entry,
  // or with `replace` in place of the one shown (a link sent on elsewhere).
  go(tab, item = null, { replace = false } = {}) {
    const prefix = (this._route && this._route.prefix) || "/desktop-assistant";
    const path = item === null || item === undefined ? `/${tab}` : `/${tab}/${encodeURIComponent(item)}`;
    if (location.pathname !== prefix + path) {
      if (replace) history.replaceState(null, "", prefix + path);
      else history.pushState(null, "", prefix + path);
      window.dispatchEvent(new CustomEvent("location-changed", { detail: { replace } }));
    }
    // Home Assistant answers with a new `route`; until then the URL is followed here.
    this._route = { prefix, path };
    this._follow(true);
  }
}

customElements.define("desktop-assistant-panel", DesktopAssistantPanel);
