// Servers: each llama-server entry, reachable or not and since when, its
// model, slots and context size, whether its chat template can call tools
// (when it cannot: that its agents call them constrained, and what that
// costs, or a warning that the tools are dropped), the last question's
// timings, the agents that
// ask it first or fall back to it; at /servers/<entry id>, *Wake* when a MAC
// address is set.
import { formatTime, modelFile } from "./api.js";
import { fill, h } from "./dom.js";
import { Split, View } from "./layout.js";

export class ServersView extends View {
  constructor(panel) {
    super(panel);
    this.servers = [];
    this.list = h("ul", { class: "list", "data-list": "servers" });
    this.split = new Split(panel, "servers", "server", panel.t("servers.hint"));
    fill(this.split.list, h("div", { class: "card" }, this.list));
    this.element = h("div", {}, this.error, this.split.element);
  }

  async show(entryId) {
    this.shown = entryId;
    this.servers = (await this.call({ type: "servers/list" })).servers;
    fill(
      this.list,
      this.servers.length
        ? this.servers.map((server) =>
            h(
              "li",
              {
                "data-server": server.entry_id,
                class: server.entry_id === entryId ? "selected" : "",
                onclick: () => this.panel.go("servers", server.entry_id),
              },
              h("div", {}, h("strong", {}, server.title), " ", this.reachable(server), this.noToolCalls(server)),
              server.url === server.title ? null : h("div", { class: "meta", "data-field": "url" }, server.url),
              server.model ? h("div", { class: "meta one-line", "data-field": "model", title: server.model }, modelFile(server.model)) : null,
            ),
          )
        : h("li", { class: "empty" }, this.t("servers.none")),
    );
    if (entryId === null) this.split.close();
    else this.open(entryId);
  }

  reachable(server) {
    const since = server.since ? this.t("servers.since", { when: formatTime(server.since, this.panel.language) }) : "";
    if (server.reachable === true) return h("span", { class: "badge ok", "data-field": "reachable", "data-reachable": "yes" }, this.t("servers.reachable"), since ? [" ", since] : null);
    if (server.reachable === false) return h("span", { class: "badge error", "data-field": "reachable", "data-reachable": "no" }, this.t("servers.unreachable"), since ? [" ", since] : null);
    return h("span", { class: "badge", "data-field": "reachable", "data-reachable": "unknown" }, this.t("servers.unknown"));
  }

  // A badge in the list for a server whose template cannot call tools: its
  // agents' calls are constrained, or the tools are dropped.
  noToolCalls(server) {
    if (server.tool_calls !== false) return null;
    if (server.constrained_agents.length) return [" ", h("span", { class: "badge", "data-field": "tool-calls", "data-tool-calls": "constrained" }, this.t("servers.constrained_tool_calls"))];
    return [" ", h("span", { class: "badge warning", "data-field": "tool-calls", "data-tool-calls": "no" }, this.t("servers.no_tool_calls"))];
  }

  // What the detail says of a template that cannot call tools.
  toolCallsWarning(server) {
    if (server.tool_calls !== false) return null;
    if (server.constrained_agents.length) return h("div", { class: "meta", "data-warning": "constrained-tool-calls" }, this.t("servers.constrained_tool_calls_warning", { agents: server.constrained_agents.join(", ") }));
    return h("div", { class: "meta problem", "data-warning": "no-tool-calls" }, this.t("servers.no_tool_calls_warning"));
  }

  toolCallsFact(server) {
    if (server.tool_calls === null) return null;
    if (server.tool_calls) return this.t("servers.tool_calls_yes");
    return this.t(server.constrained_agents.length ? "servers.tool_calls_constrained" : "servers.tool_calls_no");
  }

  open(entryId) {
    const server = this.servers.find((each) => each.entry_id === entryId);
    if (!server) {
      this.split.open(h("p", { class: "empty" }, this.t("servers.gone")));
      return;
    }
    const t = (key, values) => this.t(key, values);
    const result = h("div");
    const fact = (label, value) => [h("dt", {}, t(label)), h("dd", {}, value ?? "—")];
    const timings = server.timings;
    this.split.open(
      h(
        "div",
        { class: "toolbar" },
        h("h2", { style: "flex: 1; margin: 0" }, server.title),
        server.can_wake ? h("button", { class: "action", "data-action": "wake", onclick: () => this.wake(server, result) }, t("servers.wake")) : null,
      ),
      result,
      h("div", {}, this.reachable(server)),
      server.error ? h("div", { class: "meta problem" }, server.error) : null,
      this.toolCallsWarning(server),
      h(
        "dl",
        { class: "facts" },
        fact("servers.url", server.url),
        fact("servers.model", server.model && this.model(server.model)),
        fact("servers.slots", server.slots),
        fact("servers.context", server.context),
        fact("servers.tool_calls", this.toolCallsFact(server)),
        fact("servers.vision", server.vision === null ? null : t(server.vision ? "servers.vision_yes" : "servers.vision_no")),
        fact(
          "servers.last_question",
          timings ? t("servers.timings", { prompt: timings.prompt_n ?? "—", cached: timings.cache_n ?? "—", speed: Math.round((timings.predicted_per_second ?? 0) * 10) / 10 }) : null,
        ),
      ),
      h("h4", {}, t("servers.agents")),
      server.agents.length
        ? h(
            "ul",
            { class: "params", "data-list": "agents" },
            server.agents.map((agent) => h("li", { "data-agent": agent.entity_id || agent.name }, agent.name, " ", h("span", { class: "badge" }, t(`servers.role.${agent.role}`)))),
          )
        : h("div", { class: "meta" }, t("servers.no_agents")),
    );
  }

  // The model's file name, and on a line of its own the path it was loaded from.
  model(model) {
    const file = modelFile(model);
    return [
      h("span", { "data-field": "model", title: model }, file),
      file === model ? null : h("div", { class: "meta", "data-field": "model-path" }, model),
    ];
  }

  async wake(server, result) {
    try {
      await this.panel.api.call({ type: "servers/wake", entry_id: server.entry_id });
    } catch (error) {
      fill(result, h("div", { class: "error-bar", role: "alert" }, this.panel.api.errorSentence(error)));
      return;
    }
    fill(result, h("div", { class: "notice-bar", "data-notice": "woken" }, this.t("servers.woken")));
  }
}
