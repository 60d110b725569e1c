// Chat, a sidebar page of its own for every household member (the Assistant
// panel is for administrators): the person's threads, newest first, with a
// search and a new thread; a thread opens at `/<chat path>/<thread id>`.
// It follows the URL as the panel does (README.md), and uses only the
// `desktop_assistant/chat/...` commands, which answer for the person's own
// threads.
import { Api, formatTime, loadStrings } from "./api.js";
import { fill, h } from "./dom.js";
import { HomeAssistantPage, Split, chips } from "./layout.js";
import { ChatThread } from "./chat_thread.js";
import { STYLE } from "./styles.js";

// Chat's text and error sentences are its `chat` section of the translations.
class ChatApi extends Api {
  async load(hass) {
    this.hass = hass;
    if (this.language === hass.language) return false;
    this.language = hass.language;
    this.strings = await loadStrings(hass.language);
    return true;
  }

  errorSentence(error) {
    const key = `chat.errors.${error && error.code}`;
    return key in this.strings ? this.t(key) : (error && error.message) || String(error);
  }
}

class DesktopAssistantChat extends HomeAssistantPage {
  constructor() {
    super();
    this.api = new ChatApi();
    this.threads = [];
    this.agents = [];
  }

  set hass(hass) {
    this._hass = hass;
    if (this._menuButton) this._menuButton.hass = hass;
    if (this.thread) this.thread.hass = hass;
    this._load();
  }

  get language() {
    return this._hass && this._hass.language;
  }

  // What was drawn in the old language.
  _forget() {
    this._shown = undefined;
  }

  _render() {
    const t = (key) => this.t(key);
    this._menuButton = document.createElement("ha-menu-button");
    this._menuButton.hass = this._hass;
    this._menuButton.narrow = this._narrow;
    this.error = h("div", { "data-error-box": "" });
    this.query = h("input", {
      type: "search",
      "data-field": "query",
      placeholder: t("chat.search"),
      "aria-label": t("chat.search"),
      onkeydown: (event) => event.key === "Enter" && this.loadThreads(),
      onsearch: () => this.loadThreads(),
    });
    this.list = h("ul", { class: "list", "data-list": "threads" });
    this.split = new Split(this, "", "thread", t("chat.hint"));
    const newThread = h("button", { class: "action primary", "data-action": "new-thread", onclick: () => this.go("", "new") }, t("chat.new_thread"));
    fill(this.split.list, h("div", { class: "card" }, h("div", { class: "toolbar" }, this.query, newThread), this.list));
    this._main = h("main", { class: this._narrow ? "narrow" : "" }, this.error, this.split.element);
    this.thread = new ChatThread(this);
    fill(
      this.shadowRoot,
      h("style", {}, STYLE),
      h("header", {}, this._menuButton, h("div", { class: "title" }, t("chat.title"))),
      this._main,
    );
    Promise.all([this.loadAgents(), this.loadThreads()])
      .then(() => this._follow())
      .catch(() => {}); // the error sentence is shown
  }

  call(message) {
    return this.api.call(message, this.error);
  }

  async loadAgents() {
    this.agents = (await this.call({ type: "chat/agents" })).agents;
  }

  async loadThreads() {
    const message = { type: "chat/list" };
    if (this.query.value.trim()) message.query = this.query.value.trim();
    this.threads = (await this.call(message)).threads;
    this.renderList();
  }

  agentName(agentId) {
    const agent = this.agents.find((each) => each.agent_id === agentId);
    return agent ? agent.name : agentId;
  }

  renderList() {
    if (!this.threads.length) {
      fill(this.list, h("li", { class: "empty" }, this.t("chat.none")));
      return;
    }
    fill(
      this.list,
      this.threads.map((thread) =>
        h(
          "li",
          {
            class: thread.thread_id === this.selected ? "selected" : "",
            "data-thread": thread.thread_id,
            onclick: () => this.go("", thread.thread_id),
          },
          h("div", { class: "one-line" }, thread.title),
          h(
            "div",
            { class: "meta" },
            h("span", { class: "badge" }, this.agentName(thread.agent_id)),
            thread.in_progress ? h("span", { class: "badge warning" }, this.t("chat.answering")) : null,
            formatTime(thread.updated_at, this.language),
          ),
        ),
      ),
    );
  }

  // The thread the URL names: `/<chat path>/<thread id>`; `new` a new thread.
  _item() {
    const path = (this._route && this._route.path) || "";
    const [item] = path.split("/").filter(Boolean);
    try {
      return item ? decodeURIComponent(item) : null;
    } catch {
      return null;
    }
  }

  _follow() {
    const item = this._item();
    if (item === this._shown) return;
    this._shown = item;
    this.selected = item;
    this.renderList();
    if (item === null) {
      this.thread.close();
      this.split.close();
    } else if (item === "new") {
      this.thread.close();
      this.split.open(this.newThreadForm());
    } else {
      this.thread.show(item).catch(() => {}); // the error sentence is shown
    }
  }

  newThreadForm() {
    let agentId = this.agents.length ? this.agents[0].agent_id : "";
    const choose = (value) => {
      agentId = value;
      fill(picker, chooser());
    };
    const chooser = () =>
      chips(
        "agent",
        this.agents.map((agent) => [agent.agent_id, agent.name]),
        agentId,
        choose,
      );
    const picker = h("div", {}, chooser());
    const form = this.thread.composer(async (text, errorBox) => {
      const answer = await this.api.call({ type: "chat/send", agent_id: agentId, text, language: this.language }, errorBox);
      await this.loadThreads();
      this.go("", answer.thread_id);
    });
    return [h("div", { class: "field" }, this.t("chat.agent"), picker), form];
  }

  // Goes to a thread (or the list) as a link would: a new history entry.
  go(_tab, item = null) {
    const prefix = (this._route && this._route.prefix) || "/desktop-assistant-chat";
    const path = item === null || item === undefined ? "" : `/${encodeURIComponent(item)}`;
    if (location.pathname !== prefix + path) {
      history.pushState(null, "", prefix + path);
      window.dispatchEvent(new CustomEvent("location-changed", { detail: { replace: false } }));
    }
    this._route = { prefix, path };
    this._follow();
  }
}

customElements.define("desktop-assistant-chat", DesktopAssistantChat);
