// Conversations: the record, newest first, filtered and searched; a
// transcript opens at /conversations/<id> and is deleted after a question.
import { formatTime, modelFile } from "./api.js";
import { confirmDialog, fill, h } from "./dom.js";
import { Split, View, chips } from "./layout.js";

const PAGE_SIZE = 25;
// Chat's own sidebar page (chat.js); a typed conversation opens there.
const CHAT_PATH = "/desktop-assistant-chat";

function openInChat(conversationId) {
  history.pushState(null, "", `${CHAT_PATH}/${encodeURIComponent(conversationId)}`);
  window.dispatchEvent(new CustomEvent("location-changed", { detail: { replace: false } }));
}

export class ConversationsView extends View {
  constructor(panel) {
    super(panel);
    this.conversations = [];
    this.next = null;
    this.selected = null;
    this.loaded = false;
    this.channel = "";
    this.device = "";
    this.owner = "";
    this.devices = [];
    const t = (key) => panel.t(key);
    this.query = h("input", {
      type: "search",
      "data-field": "query",
      placeholder: t("conversations.search"),
      "aria-label": t("conversations.search"),
      onkeydown: (event) => event.key === "Enter" && this.load(false),
      onsearch: () => this.load(false),
    });
    this.filters = h("div", { class: "toolbar" });
    this.list = h("ul", { class: "list", "data-list": "conversations" });
    this.more = h("button", { class: "action", "data-action": "more", onclick: () => this.load(true) }, t("conversations.older"));
    this.split = new Split(panel, "conversations", "conversation", t("conversations.hint"));
    fill(this.split.list, h("div", { class: "card" }, this.list, this.more));
    this.element = h("div", {}, this.error, h("div", { class: "toolbar" }, this.query), this.filters, this.split.element);
  }

  async show(conversationId) {
    if (!this.loaded) {
      // Loaded only once both answered: after a failure the next show tries again.
      await Promise.all([this.loadDevices(), this.load(false)]);
      this.loaded = true;
    }
    this.selected = conversationId;
    this.renderList();
    if (conversationId === null) this.split.close();
    else await this.open(conversationId);
  }

  renderFilters() {
    const t = (key) => this.panel.t(key);
    fill(
      this.filters,
      chips(
        "channel",
        [["", t("conversations.all_channels")], ["voice", t("conversations.voice")], ["text", t("conversations.text")]],
        this.channel,
        (value) => this.filter("channel", value),
      ),
      chips(
        "device",
        [["", t("conversations.all_devices")], ...this.devices.map((device) => [device.device_id, device.device_name || device.device_id])],
        this.device,
        (value) => this.filter("device", value),
      ),
      chips("owner", this.panel.api.ownerChoices(), this.owner, (value) => this.filter("owner", value)),
    );
  }

  filter(name, value) {
    this[name] = value;
    this.renderFilters();
    return this.load(false);
  }

  async loadDevices() {
    this.devices = (await this.call({ type: "conversations/devices" })).devices;
    this.renderFilters();
  }

  async load(older) {
    const message = { type: "conversations/list", limit: PAGE_SIZE };
    if (this.channel) message.channel = this.channel;
    if (this.device) message.device_id = this.device;
    if (this.owner) message.owner = this.owner;
    if (this.query.value.trim()) message.query = this.query.value.trim();
    if (older && this.next) message.before = this.next;
    const answer = await this.call(message);
    this.conversations = older ? [...this.conversations, ...answer.conversations] : answer.conversations;
    this.next = answer.next;
    this.renderList();
  }

  // Which agent answered, by the name a person gave it.
  agentName(agentId) {
    const state = this.hass && this.hass.states[agentId];
    return (state && state.attributes.friendly_name) || agentId;
  }

  renderList() {
    this.more.hidden = !this.next;
    if (!this.conversations.length) {
      fill(this.list, h("li", { class: "empty" }, this.panel.t("conversations.none")));
      return;
    }
    fill(
      this.list,
      this.conversations.map((conversation) =>
        h(
          "li",
          {
            class: conversation.conversation_id === this.selected ? "selected" : "",
            "data-conversation": conversation.conversation_id,
            onclick: () => this.panel.go("conversations", conversation.conversation_id),
          },
          h("div", {}, conversation.first_words || this.panel.t("conversations.nothing_said")),
          this.meta(conversation),
        ),
      ),
    );
  }

  meta(conversation) {
    return h(
      "div",
      { class: "meta" },
      h("span", { class: "badge" }, this.panel.api.label("conversations", conversation.channel)),
      h("span", { class: "badge", "data-field": "owner" }, this.panel.api.ownerName(conversation.user_id)),
      conversation.device_name ? h("span", { class: "badge" }, conversation.device_name) : null,
      conversation.agent_id
        ? h("span", { class: "badge", "data-field": "agent" }, this.panel.t("conversations.answered_by", { name: this.agentName(conversation.agent_id) }))
        : null,
      formatTime(conversation.started_at, this.panel.language),
    );
  }

  async open(conversationId) {
    const conversation = await this.split.fetch(() => this.call({ type: "conversations/get", conversation_id: conversationId }));
    this.split.open(
      h(
        "div",
        { class: "toolbar" },
        h("strong", { style: "flex: 1" }, formatTime(conversation.started_at, this.panel.language)),
        conversation.channel === "text"
          ? h("button", { class: "action", "data-action": "open-in-chat", onclick: () => openInChat(conversation.conversation_id) }, this.panel.t("conversations.open_in_chat"))
          : null,
        h("button", { class: "action danger", "data-action": "delete", onclick: () => this.remove(conversation) }, this.panel.t("common.delete")),
      ),
      this.meta(conversation),
      conversation.entries.map((entry) => this.renderEntry(entry)),
    );
  }

  async remove(conversation) {
    const t = (key) => this.panel.t(key);
    const confirmed = await confirmDialog(this.panel.shadowRoot, {
      title: t("conversations.delete_title"),
      text: t("conversations.delete_text"),
      confirmLabel: t("common.delete"),
      cancelLabel: t("common.cancel"),
      danger: true,
    });
    if (!confirmed) return;
    await this.call({ type: "conversations/delete", conversation_id: conversation.conversation_id });
    await this.load(false);
    this.panel.go("conversations");
  }

  // Which server and model wrote a reply: a fallback answering shows here.
  servedBy(entry) {
    return h(
      "div",
      { class: "meta", "data-field": "served-by", title: entry.model },
      this.panel.t("conversations.served_by", { server: entry.server, model: modelFile(entry.model || "—") }),
    );
  }

  renderEntry(entry) {
    const t = (key) => this.panel.t(key);
    const at = h("span", { class: "meta" }, " ", formatTime(entry.at, this.panel.language));
    switch (entry.kind) {
      case "user":
        return h(
          "div",
          { class: "entry user", "data-entry": "user" },
          h("span", { class: "badge" }, t(entry.source === "speech" ? "conversations.spoken" : "conversations.typed")),
          entry.text,
          at,
        );
      case "assistant":
        return h(
          "div",
          { class: "entry assistant", "data-entry": "assistant" },
          entry.text,
          entry.interrupted ? h("span", { class: "badge warning", "data-mark": "interrupted" }, t("conversations.interrupted")) : null,
          at,
          entry.server ? this.servedBy(entry) : null,
        );
      case "tool_call":
        return h(
          "div",
          { class: "entry tool_call", "data-entry": "tool_call" },
          h("strong", {}, entry.tool_name),
          entry.error ? h("span", { class: "badge warning" }, t("common.error")) : null,
          at,
          h("pre", { "data-field": "arguments" }, JSON.stringify(entry.arguments, null, 2)),
          h("pre", { "data-field": "result" }, entry.result ?? ""),
        );
      default:
        return h("div", { class: "entry fault", "data-entry": "fault" }, entry.text || entry.fault, at);
    }
  }
}
