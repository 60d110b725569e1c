// One chat thread: its turns as the record keeps them, the running turn as it
// streams (answer text, reasoning dimmed, each tool call as it starts and
// settles), a box to type in and Stop. Answers are markdown built as text
// nodes: raw HTML in an answer or a tool result is shown, never run.
import { formatTime, modelFile } from "./api.js";
import { fill, h, renderMarkdown } from "./dom.js";

const DOMAIN = "desktop_assistant";

// `[[...]]` is the panel's page link; in a chat it is only text.
const asText = (target, label) => (target === label ? `[[${target}]]` : `[[${target}|${label}]]`);

export class ChatThread {
  constructor(chat) {
    this.chat = chat;
    this.threadId = null;
    this.unsubscribe = null;
    this.live = null;
  }

  t(key, values) {
    return this.chat.t(key, values);
  }

  // Reads the thread and hears its turns; a turn running now streams in.
  async show(threadId) {
    this.close();
    this.threadId = threadId;
    const thread = await this.chat.split.fetch(() => this.chat.call({ type: "chat/get", thread_id: threadId }));
    if (this.threadId !== threadId) return;
    this.thread = thread;
    this.entries = h("div", { "data-entries": "" });
    this.stop = h("button", { class: "action danger", "data-action": "stop", hidden: true, onclick: () => this.stopTurn() }, this.t("chat.stop"));
    const own = thread.own;
    this.form = own ? this.composer((text, errorBox) => this.send(text, errorBox)) : h("div", { class: "hint" }, this.t("chat.read_only"));
    this.chat.split.open(
      h("div", { class: "toolbar" }, h("strong", { style: "flex: 1", "data-field": "title" }, thread.title || ""), this.stop),
      h("div", { class: "meta" }, h("span", { class: "badge" }, this.chat.agentName(thread.agent_id))),
      this.entries,
      this.form,
    );
    this.render(thread.entries);
    this.unsubscribe = await this.chat._hass.connection.subscribeMessage((event) => this.hear(event), {
      type: `${DOMAIN}/chat/subscribe`,
      thread_id: threadId,
    });
  }

  close() {
    if (this.unsubscribe) this.unsubscribe().catch(() => {});
    this.unsubscribe = null;
    this.threadId = null;
    this.live = null;
  }

  // The input box and its Send button; `send(text, errorBox)` sends.
  composer(send) {
    const errorBox = h("div", {});
    const input = h("textarea", { class: "message", "data-field": "message", rows: 3, "aria-label": this.t("chat.message"), placeholder: this.t("chat.message") });
    const button = h("button", { class: "action primary", "data-action": "send" }, this.t("chat.send"));
    const submit = async () => {
      button.disabled = true;
      try {
        await send(input.value, errorBox);
        input.value = "";
      } finally {
        button.disabled = false;
      }
    };
    button.addEventListener("click", () => submit().catch(() => {}));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        submit().catch(() => {});
      }
    });
    return h("div", { class: "composer" }, errorBox, input, h("div", { class: "toolbar" }, button));
  }

  async send(text, errorBox) {
    await this.chat.api.call({ type: "chat/send", thread_id: this.threadId, text, language: this.chat.language }, errorBox);
  }

  async stopTurn() {
    await this.chat.call({ type: "chat/stop", thread_id: this.threadId });
  }

  render(entries) {
    fill(this.entries, entries.map((entry) => this.entry(entry)));
    this.stop.hidden = !this.thread.in_progress || !this.thread.own;
  }

  entry(entry) {
    const at = h("span", { class: "meta" }, formatTime(entry.at, this.chat.language));
    switch (entry.kind) {
      case "user":
        return h("div", { class: "entry user", "data-entry": "user" }, entry.text, " ", at);
      case "assistant":
        return h(
          "div",
          { class: "entry assistant chat-answer", "data-entry": "assistant" },
          renderMarkdown(entry.text, asText),
          entry.interrupted ? h("span", { class: "badge warning", "data-mark": "interrupted" }, this.t("chat.interrupted")) : null,
          at,
          entry.server
            ? h("div", { class: "meta", "data-field": "served-by", title: entry.model }, this.t("chat.served_by", { server: entry.server, model: modelFile(entry.model || "—") }))
            : null,
        );
      case "tool_call":
        return this.toolCall(entry.tool_name, entry.arguments, entry.result ?? "", entry.error);
      default:
        return h("div", { class: "entry fault", "data-entry": "fault" }, entry.text || this.t("chat.fault", { fault: entry.fault }), " ", at);
    }
  }

  // A tool call, collapsed: its name (and how it went), then arguments and result.
  toolCall(name, args, result, error) {
    const state = result === null ? "running" : error ? "error" : "done";
    const details = h(
      "details",
      { class: "entry tool_call", "data-entry": "tool_call", "data-state": state },
      h("summary", {}, h("strong", {}, name), " ", h("span", { class: `badge ${state === "error" ? "error" : state === "running" ? "warning" : ""}`.trim(), "data-field": "state" }, this.t(`chat.tool_${state}`))),
      h("pre", { "data-field": "arguments" }, JSON.stringify(args, null, 2)),
      h("pre", { "data-field": "result" }, result ?? ""),
    );
    return details;
  }

  // One event of the running turn.
  hear(event) {
    if (event.type === "start") {
      this.live = { answer: null, text: "", thinking: null, calls: {} };
      this.stop.hidden = !this.thread.own;
      this.entries.append(h("div", { class: "entry user", "data-entry": "user" }, event.text));
    } else if (event.type === "end") {
      this.stop.hidden = true;
      this.live = null;
      this.refresh().catch(() => {});
    } else if (event.type === "idle") {
      // The turn read as running ended before the page listened.
      if (this.thread.in_progress) this.refresh().catch(() => {});
    } else if (this.live) {
      this.hearDelta(event);
    }
  }

  hearDelta(event) {
    const live = this.live;
    if (event.type === "tool_result") {
      const call = live.calls[event.tool_call_id];
      const settled = this.toolCall(event.tool_name, call ? call.arguments : {}, event.result, event.error);
      if (call) call.element.replaceWith(settled);
      else this.entries.append(settled);
      return;
    }
    if (event.start) live.answer = null;
    if (event.thinking) {
      if (!live.thinking) {
        live.thinking = h("div", { class: "entry thinking", "data-entry": "thinking" });
        this.entries.append(live.thinking);
      }
      live.thinking.append(event.thinking);
    }
    if (event.content) {
      if (!live.answer) {
        live.text = "";
        live.answer = h("div", { class: "entry assistant chat-answer", "data-entry": "assistant", "data-live": "" });
        this.entries.append(live.answer);
      }
      live.text += event.content;
      fill(live.answer, renderMarkdown(live.text, asText));
    }
    for (const call of event.tool_calls || []) {
      const element = this.toolCall(call.tool_name, call.arguments, null, false);
      live.calls[call.id] = { arguments: call.arguments, element };
      this.entries.append(element);
    }
  }

  // The finished turn as the record keeps it.
  async refresh() {
    const threadId = this.threadId;
    const thread = await this.chat.call({ type: "chat/get", thread_id: threadId });
    if (threadId !== this.threadId || this.live) return;
    this.thread = thread;
    this.render(thread.entries);
    this.chat.loadThreads().catch(() => {});
  }
}
