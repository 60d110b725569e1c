// Tools: every tool an agent of the integration can call, by where it comes
// from (tool files, memory and recall, Assist, each other API such as an MCP
// server), the tool files that failed to load with their problems, and per
// tool file (at /tools/<name>) its parameters, announcements, *Try it* and
// its last runs. *Reload tools* and *Install the example tools* are here.
import { formatSeconds, formatTime } from "./api.js";
import { fill, h } from "./dom.js";
import { Split, View, field, outcomeBadge, runsTable } from "./layout.js";

// The input for one parameter of a tool file, by its type.
function parameterInput(param) {
  if (param.type === "boolean") return h("input", { type: "checkbox", "data-param": param.name });
  const type = param.type === "string" ? "text" : "number";
  return h("input", { type, step: param.type === "integer" ? "1" : "any", "data-param": param.name });
}

export class ToolsView extends View {
  constructor(panel) {
    super(panel);
    this.listed = null;
    const t = (key) => panel.t(key);
    this.notice = h("div");
    this.list = h("div", { "data-list": "tools" });
    this.split = new Split(panel, "tools", "tool", t("tools.hint"));
    fill(this.split.list, this.list);
    this.element = h(
      "div",
      {},
      this.error,
      this.notice,
      h(
        "div",
        { class: "toolbar" },
        h("span", { style: "flex: 1" }, t("tools.about")),
        h("button", { class: "action", "data-action": "reload-tools", onclick: () => this.reload() }, t("tools.reload")),
        h("button", { class: "action", "data-action": "install-examples", onclick: () => this.install() }, t("tools.install")),
      ),
      this.split.element,
    );
  }

  async show(name) {
    await this.refresh();
    if (name === null) this.split.close();
    else await this.open(name);
  }

  async refresh() {
    this.listed = await this.call({ type: "tools/list" });
    this.renderList();
  }

  renderList() {
    const { files, broken, memory, apis } = this.listed;
    const group = (title, source, tools, extra = [], empty = "tools.none_here") =>
      h(
        "div",
        { class: "card group", "data-group": source },
        h("h3", {}, title),
        tools.length || extra.length ? null : h("div", { class: "empty", "data-empty": source }, this.t(empty)),
        h("ul", { class: "list" }, tools.map((tool) => this.item(tool)), extra),
      );
    fill(
      this.list,
      group(
        this.t("tools.files"),
        "files",
        files,
        broken.map((file) =>
          h(
            "li",
            { "data-broken": file.file },
            h("div", {}, h("span", { class: "badge error" }, this.t("tools.broken")), file.file),
            file.problems.map((problem) => h("div", { class: "problem meta" }, problem)),
          ),
        ),
        "tools.files_none",
      ),
      group(this.t("tools.memory"), "memory", memory),
      apis.map((api) => group(api.source === "assist" ? this.t("tools.assist") : api.name, api.source, api.tools)),
    );
  }

  item(tool) {
    return h(
      "li",
      { "data-tool": tool.name, class: tool.name === this.shown ? "selected" : "", onclick: () => this.panel.go("tools", tool.name) },
      h("div", {}, tool.name, " ", tool.changes ? h("span", { class: "badge warning", "data-mark": "changes" }, this.t("tools.changes")) : null),
      h("div", { class: "meta" }, tool.description),
    );
  }

  find(name) {
    const { files, memory, apis } = this.listed;
    const file = files.find((tool) => tool.name === name);
    if (file) return [file, true];
    const other = [...memory, ...apis.flatMap((api) => api.tools)].find((tool) => tool.name === name);
    return [other, false];
  }

  async open(name) {
    this.shown = name;
    this.renderList();
    const [tool, isFile] = this.find(name);
    if (!tool) {
      this.split.open(h("p", { class: "empty" }, this.t("tools.gone", { name })));
      return;
    }
    const runs = isFile ? (await this.call({ type: "tools/runs", tool: name })).runs : null;
    this.split.open(
      h("h2", { style: "margin-top: 0", "data-field": "tool-name" }, tool.name),
      h("p", {}, tool.description),
      tool.changes ? h("div", { class: "warning-bar" }, this.t("tools.changes_long")) : null,
      this.parameters(tool),
      isFile ? this.announcements(tool) : null,
      isFile ? this.tryIt(tool) : null,
      isFile ? this.history(runs) : null,
    );
  }

  parameters(tool) {
    return h(
      "div",
      { "data-field": "parameters" },
      h("h4", {}, this.t("tools.parameters")),
      tool.parameters.length
        ? h(
            "ul",
            { class: "params" },
            tool.parameters.map((param) => h("li", {}, h("code", {}, param.name), ` (${param.type}) `, param.description)),
          )
        : h("div", { class: "meta" }, this.t("tools.no_parameters")),
    );
  }

  announcements(tool) {
    const languages = Object.entries(tool.announce);
    return h(
      "div",
      { "data-field": "announcements" },
      h("h4", {}, this.t("tools.announcements")),
      languages.length
        ? h("ul", { class: "params" }, languages.map(([language, phrases]) => h("li", {}, h("code", {}, language), " ", phrases.join(" / "))))
        : h("div", { class: "meta" }, this.t("tools.silent")),
    );
  }

  // A form with a typed field per parameter. A changing tool asks first,
  // about the values typed at that moment: the yes runs exactly those, and
  // any change to the form withdraws the question.
  tryIt(tool) {
    const inputs = tool.parameters.map((param) => [param, parameterInput(param)]);
    const answer = h("div", { "data-field": "answer" });
    const values = () => {
      const found = {};
      for (const [param, input] of inputs) {
        if (param.type === "boolean") found[param.name] = input.checked;
        else if (input.value !== "") found[param.name] = param.type === "string" ? input.value : Number(input.value);
      }
      return found;
    };
    const withdraw = () => {
      if (answer.querySelector("[data-warning=confirm]")) fill(answer);
    };
    return h(
      "div",
      { class: "card", "data-field": "try", oninput: withdraw, onchange: withdraw },
      h("h4", { style: "margin-top: 0" }, this.t("tools.try")),
      inputs.length ? h("div", { class: "toolbar" }, inputs.map(([param, input]) => field(param.name, input))) : null,
      h("button", { class: "action primary", "data-action": "try", onclick: () => this.run(tool, values(), false, answer) }, this.t("tools.run")),
      answer,
    );
  }

  // Runs the tool with `values`; a changing tool's question, until confirmed.
  async run(tool, values, confirmed, answer) {
    fill(answer, h("div", { class: "meta" }, this.t("tools.running")));
    let result;
    try {
      result = await this.panel.api.call({ type: "tools/run", tool: tool.name, arguments: values, confirmed });
    } catch (error) {
      fill(answer, h("div", { class: "error-bar", role: "alert" }, this.panel.api.errorSentence(error)));
      return;
    }
    if ("confirm" in result) {
      fill(
        answer,
        h(
          "div",
          { class: "warning-bar", "data-warning": "confirm" },
          result.confirm || this.t("tools.confirm"),
          " ",
          h("button", { class: "action danger primary", "data-action": "confirm-run", onclick: () => this.run(tool, values, true, answer) }, this.t("tools.run_it")),
        ),
      );
      return;
    }
    fill(answer, h("pre", { class: "answer", "data-field": "result" }, result.result));
    const { runs } = await this.call({ type: "tools/runs", tool: tool.name });
    this.historyBox.replaceWith(this.history(runs));
  }

  history(runs) {
    const t = (key) => this.t(key);
    this.historyBox = h(
      "div",
      { "data-field": "history" },
      h("h4", {}, t("tools.last_runs")),
      runs.length
        ? runsTable(
            "tool-runs",
            [t("jobs.when"), t("jobs.took"), t("jobs.outcome"), t("tools.arguments"), t("tools.answer")],
            runs.map((run) => [
              formatTime(run.started_at, this.panel.language),
              formatSeconds(run.duration),
              outcomeBadge(this.panel, run.outcome),
              h("code", { "data-field": "arguments" }, run.arguments),
              h("span", { "data-field": "first-line" }, run.first_line),
            ]),
          )
        : h("div", { class: "meta" }, t("tools.no_runs")),
    );
    return this.historyBox;
  }

  async reload() {
    const { problems } = await this.call({ type: "tools/reload" });
    fill(this.notice, h("div", { class: problems ? "warning-bar" : "notice-bar", "data-notice": "reloaded" }, this.t("tools.reloaded", { problems })));
    await this.refresh();
  }

  async install() {
    const { installed, skipped } = await this.call({ type: "tools/install_examples" });
    fill(
      this.notice,
      h(
        "div",
        { class: "notice-bar", "data-notice": "installed" },
        // A tool is its TOML file; the other files are its scripts and notes.
        this.t("tools.installed", { tools: installed.filter((path) => path.startsWith("tools/") && path.endsWith(".toml")).length, installed: installed.length, skipped: skipped.length }),
      ),
    );
    await this.refresh();
  }
}
