// Nightly: the recent runs of the nightly pass, what each changed (a diff
// per page, the lines it dropped and why, the conversations it read) and a
// revert per page.
import { errorSentence, fill, formatTime, h, renderDiff } from "./dom.js";

const SUMMARY = [
  ["conversations", "conversations read"],
  ["notes", "notes added"],
  ["rewritten", "pages rewritten"],
  ["created", "pages created"],
  ["merged", "merges"],
  ["dropped", "lines dropped"],
];

export class NightlyView {
  constructor(panel) {
    this.panel = panel;
    this.error = h("div");
    this.notice = h("div");
    this.runNow = h("button", { class: "action primary", "data-action": "run-now", onclick: () => this.start() }, "Run now");
    this.list = h("ul", { class: "list", "data-list": "runs" });
    this.detail = h("div", { class: "card", "data-detail": "run" });
    this.element = h(
      "div",
      {},
      this.error,
      this.notice,
      h("div", { class: "toolbar" }, h("span", { style: "flex: 1" }, "The nightly pass reads quiet conversations and tidies memory."), this.runNow),
      h("div", { class: "split" }, h("div", { class: "card" }, this.list), this.detail),
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

  async refresh() {
    const { runs, running } = await this.call({ type: "desktop_assistant/memory/runs/list", limit: 50 });
    this.runNow.disabled = running;
    this.runs = runs;
    fill(this.list, 
      ...(runs.length
        ? runs.map((run) =>
            h(
              "li",
              { "data-run": run.run_id, onclick: () => this.open(run.run_id) },
              h("div", {}, formatTime(run.started_at), " ", h("span", { class: "badge" }, run.outcome), h("span", { class: "badge" }, run.trigger)),
              h(
                "div",
                { class: "meta", "data-field": "summary" },
                SUMMARY.map(([key, label]) => `${run.summary[key] ?? 0} ${label}`).join(" · "),
              ),
            ),
          )
        : [h("li", { class: "empty" }, "No runs yet.")]),
    );
  }

  async start() {
    this.runNow.disabled = true;
    fill(this.notice, h("div", { class: "warning-bar" }, "Running the nightly pass…"));
    try {
      await this.call({ type: "desktop_assistant/memory/runs/run_now" });
    } finally {
      this.runNow.disabled = false;
      fill(this.notice);
    }
    await this.refresh();
  }

  async open(runId) {
    const run = await this.call({ type: "desktop_assistant/memory/runs/get", run_id: runId });
    this.reverted = this.reverted || new Set();
    fill(this.detail, 
      h("h2", { style: "margin-top: 0" }, formatTime(run.started_at)),
      h("div", { class: "meta" }, `${run.trigger} · ${run.outcome} · ${Math.round((run.duration || 0) * 10) / 10} s`),
      run.pages.length ? null : h("p", { class: "empty" }, "This run changed no page."),
      run.pages.map((page) => this.renderPage(run, page)),
    );
    // On a phone the detail sits below the list.
    this.detail.scrollIntoView({ block: "nearest" });
  }

  renderPage(run, page) {
    const result = h("div");
    return h(
      "div",
      { class: "card", "data-run-page": page.name },
      h(
        "div",
        { class: "toolbar" },
        h("strong", { style: "flex: 1" }, page.name, " ", h("span", { class: "badge" }, page.action)),
        this.reverted.has(`${run.run_id}/${page.page_id}`)
          ? h("span", { class: "badge" }, "reverted")
          : h("button", { class: "action", "data-action": "revert", onclick: () => this.revert(run, page, result) }, "Revert"),
      ),
      result,
      renderDiff(page.before, page.after),
      page.dropped.length
        ? h(
            "div",
            { "data-field": "dropped" },
            h("h4", {}, "Lines dropped"),
            h("ul", {}, page.dropped.map((drop) => h("li", {}, h("code", {}, drop.line), " — ", drop.reason))),
          )
        : null,
      page.sources.length
        ? h(
            "div",
            { "data-field": "sources" },
            h("h4", {}, "From conversations"),
            page.sources.map((source) =>
              source.gone
                ? h("span", { class: "badge", "data-source": source.conversation_id }, "gone")
                : h(
                    "button",
                    {
                      class: "link",
                      "data-source": source.conversation_id,
                      onclick: () => this.panel.navigate("conversations", source.conversation_id),
                    },
                    source.conversation_id,
                  ),
            ),
          )
        : null,
    );
  }

  async revert(run, page, result) {
    try {
      await this.hass.callWS({ type: "desktop_assistant/memory/runs/revert", run_id: run.run_id, page_id: page.page_id });
    } catch (error) {
      // The page was edited after the run: it is left alone, and said so here.
      fill(result, h("div", { class: "warning-bar", role: "alert", "data-warning": error.code }, errorSentence(error)));
      return;
    }
    this.reverted.add(`${run.run_id}/${page.page_id}`);
    await this.open(run.run_id);
  }
}
