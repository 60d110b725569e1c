// Conversations: the record, newest first, filtered and searched, each
// transcript in a side panel, deleted after a confirmation.
import { confirmDialog, errorSentence, fill, formatTime, h } from "./dom.js";

const PAGE_SIZE = 25;

export class ConversationsView {
  constructor(panel) {
    this.panel = panel;
    this.conversations = [];
    this.next = null;
    this.selected = null;
    this.channel = h(
      "select",
      { "data-field": "channel", onchange: () => this.refresh() },
      h("option", { value: "" }, "All channels"),
      h("option", { value: "voice" }, "Voice"),
      h("option", { value: "text" }, "Text"),
    );
    this.device = h("select", { "data-field": "device", onchange: () => this.refresh() });
    this.query = h("input", {
      type: "search",
      "data-field": "query",
      placeholder: "Search what was said",
      onkeydown: (event) => event.key === "Enter" && this.refresh(),
      onsearch: () => this.refresh(),
    });
    this.error = h("div");
    this.list = h("ul", { class: "list", "data-list": "conversations" });
    this.more = h("button", { class: "action", "data-action": "more", onclick: () => this.load(true) }, "Show older");
    this.detail = h("div", { class: "card", "data-detail": "conversation" });
    this.element = h(
      "div",
      {},
      this.error,
      h("div", { class: "toolbar" }, this.query, this.channel, this.device),
      h(
        "div",
        { class: "split" },
        h("div", { class: "card" }, this.list, this.more),
        this.detail,
      ),
    );
  }

  async call(message) {
    fill(this.error);
    try {
      return await this.hass.callWS(message);
    } catch (error) {
      fill(this.error, h("div", { class: "error-bar", role: "alert" }, errorSentence(error)));
      throw error;
    }
  }

  refresh() {
    this.loadDevices();
    return this.load(false);
  }

  async loadDevices() {
    const { devices } = await this.call({ type: "desktop_assistant/conversations/devices" });
    const chosen = this.device.value;
    fill(this.device, 
      h("option", { value: "" }, "All devices"),
      devices.map((device) =>
        h("option", { value: device.device_id, selected: device.device_id === chosen }, device.device_name || device.device_id),
      ),
    );
  }

  filters() {
    const message = { type: "desktop_assistant/conversations/list", limit: PAGE_SIZE };
    if (this.channel.value) message.channel = this.channel.value;
    if (this.device.value) message.device_id = this.device.value;
    if (this.query.value.trim()) message.query = this.query.value.trim();
    return message;
  }

  async load(older) {
    const message = this.filters();
    if (older && this.next) message.before = this.next;
    const answer = await this.call(message);
    this.conversations = older ? [...this.conversations, ...answer.conversations] : answer.conversations;
    this.next = answer.next;
    this.renderList();
  }

  renderList() {
    this.more.hidden = !this.next;
    if (!this.conversations.length) {
      fill(this.list, h("li", { class: "empty" }, "No conversations."));
      return;
    }
    fill(this.list, 
      ...this.conversations.map((conversation) =>
        h(
          "li",
          {
            class: conversation.conversation_id === this.selected ? "selected" : "",
            "data-conversation": conversation.conversation_id,
            onclick: () => this.open(conversation.conversation_id),
          },
          h("div", {}, conversation.first_words || "(nothing said)"),
          h(
            "div",
            { class: "meta" },
            h("span", { class: "badge" }, conversation.channel),
            conversation.device_name ? h("span", { class: "badge" }, conversation.device_name) : null,
            formatTime(conversation.started_at),
          ),
        ),
      ),
    );
  }

  async open(conversationId) {
    this.selected = conversationId;
    this.renderList();
    const conversation = await this.call({ type: "desktop_assistant/conversations/get", conversation_id: conversationId });
    fill(this.detail, 
      h(
        "div",
        { class: "toolbar" },
        h("strong", { style: "flex: 1" }, formatTime(conversation.started_at)),
        h(
          "button",
          { class: "action danger", "data-action": "delete", onclick: () => this.remove(conversation) },
          "Delete",
        ),
      ),
      h(
        "div",
        { class: "meta" },
        h("span", { class: "badge" }, conversation.channel),
        conversation.device_name ? h("span", { class: "badge" }, conversation.device_name) : null,
        conversation.agent_id,
      ),
      conversation.entries.map(renderEntry),
    );
    // On a phone the detail sits below the list.
    this.detail.scrollIntoView({ block: "nearest" });
  }

  async remove(conversation) {
    const confirmed = await confirmDialog(this.panel.shadowRoot, {
      title: "Delete this conversation?",
      text: "Its transcript is removed from the record and from search. This cannot be undone.",
      confirmLabel: "Delete",
      danger: true,
    });
    if (!confirmed) return;
    await this.call({ type: "desktop_assistant/conversations/delete", conversation_id: conversation.conversation_id });
    this.selected = null;
    fill(this.detail);
    await this.load(false);
  }
}

function renderEntry(entry) {
  const at = h("span", { class: "meta" }, " ", formatTime(entry.at));
  switch (entry.kind) {
    case "user":
      return h(
        "div",
        { class: "entry user", "data-entry": "user" },
        h("span", { class: "badge" }, entry.source === "speech" ? "spoken" : "typed"),
        entry.text,
        at,
      );
    case "assistant":
      return h(
        "div",
        { class: "entry assistant", "data-entry": "assistant" },
        entry.text,
        entry.interrupted ? h("span", { class: "badge warning", "data-mark": "interrupted" }, "interrupted") : null,
        at,
      );
    case "tool_call":
      return h(
        "div",
        { class: "entry tool_call", "data-entry": "tool_call" },
        h("strong", {}, entry.tool_name),
        entry.error ? h("span", { class: "badge warning" }, "error") : null,
        at,
        h("pre", { "data-field": "arguments" }, JSON.stringify(entry.arguments, null, 2)),
        h("pre", { "data-field": "result" }, entry.result ?? ""),
      );
    default:
      return h("div", { class: "entry fault", "data-entry": "fault" }, entry.text || entry.fault, at);
  }
}
