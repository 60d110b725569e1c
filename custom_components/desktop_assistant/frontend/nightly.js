// Nightly: the recent runs of the nightly pass; a run (at /nightly/run-<id>,
// the jobs registry's id of it) shows what it changed (a diff per page, the
// lines it dropped and why, the conversations it read) with a revert per
// page. A link from before, /nightly/<memory's old id>, is sent on to it.
import { formatSeconds, formatTime } from "./api.js";
import { fill, h, renderDiff } from "./dom.js";
import { Split, View, outcomeBadge } from "./layout.js";

// A run's item in the URL, and the id it names (null: not a run's item).
const RUN_ITEM = /^run-(\d+)$/;
const runItem = (id) => `run-${id}`;

// The summary's counts, in the order they are read out.
const SUMMARY = ["conversations", "notes", "rewritten", "created", "merged", "dropped"];

// A run's summary in words, the same on the Nightly and the Jobs pages.
export function nightlySummary(panel, summary) {
  return SUMMARY.map((key) => panel.t(`nightly.summary.${key}`, { count: summary[key] ?? 0 })).join(" · ");
}

export class NightlyView extends View {
  constructor(panel) {
    super(panel);
    this.reverted = new Set();
    this.notice = h("div");
    this.runNow = h("button", { class: "action primary", "data-action": "run-now", onclick: () => this.start() }, panel.t("jobs.run_now"));
    this.list = h("ul", { class: "list", "data-list": "runs" });
    this.split = new Split(panel, "nightly", "run", panel.t("nightly.hint"));
    fill(this.split.list, h("div", { class: "card" }, this.list));
    this.element = h(
      "div",
      {},
      this.error,
      this.notice,
      h("div", { class: "toolbar" }, h("span", { style: "flex: 1" }, panel.t("nightly.about")), this.runNow),
      this.split.element,
    );
  }

  async show(item) {
    await this.refresh();
    if (item === null) this.split.close();
    else if (RUN_ITEM.test(item)) await this.open(Number(RUN_ITEM.exec(item)[1]));
    else await this.redirect(item);
  }

  // A link by a run's id from before the jobs registry named runs.
  async redirect(item) {
    const { run_id } = await this.split.fetch(() => this.call({ type: "memory/runs/moved", old_run_id: this.itemId(item) }));
    this.panel.go("nightly", runItem(run_id), { replace: true });
  }

  async refresh() {
    const { runs, running } = await this.call({ type: "memory/runs/list", limit: 50 });
    this.runNow.disabled = running;
    fill(
      this.list,
      runs.length
        ? runs.map((run) =>
            h(
              "li",
              { "data-run": run.id, onclick: () => this.panel.go("nightly", runItem(run.id)) },
              h(
                "div",
                {},
                formatTime(run.started_at, this.panel.language),
                " ",
                outcomeBadge(this.panel, run.outcome, run.outcome_detail),
                h("span", { class: "badge" }, this.panel.api.label("triggers", run.trigger)),
              ),
              h("div", { class: "meta", "data-field": "summary" }, nightlySummary(this.panel, run.summary)),
            ),
          )
        : h("li", { class: "empty" }, this.t("nightly.none")),
    );
  }

  async start() {
    this.runNow.disabled = true;
    fill(this.notice, h("div", { class: "notice-bar" }, this.t("nightly.running")));
    try {
      await this.call({ type: "jobs/run_now", job: "nightly" });
    } finally {
      this.runNow.disabled = false;
      fill(this.notice);
    }
    await this.refresh();
  }

  async open(runId) {
    const run = await this.split.fetch(() => this.call({ type: "memory/runs/get", run_id: runId }));
    this.split.open(
      h("h2", { style: "margin-top: 0" }, formatTime(run.started_at, this.panel.language)),
      h("div", { class: "meta" }, `${this.panel.api.label("triggers", run.trigger)} · `, outcomeBadge(this.panel, run.outcome, run.outcome_detail), ` · ${formatSeconds(run.duration)}`),
      run.pages.length ? null : h("p", { class: "empty" }, this.t("nightly.no_change")),
      run.pages.map((page) => this.renderPage(run, page)),
    );
  }

  renderPage(run, page) {
    const result = h("div");
    return h(
      "div",
      { class: "card", "data-run-page": page.name },
      h(
        "div",
        { class: "toolbar" },
        h("strong", { style: "flex: 1" }, page.name, " ", h("span", { class: "badge" }, this.panel.api.label("nightly.actions", page.action))),
        this.reverted.has(`${run.run_id}/${page.page_id}`)
          ? h("span", { class: "badge" }, this.t("nightly.reverted"))
          : h("button", { class: "action", "data-action": "revert", onclick: () => this.revert(run, page, result) }, this.t("nightly.revert")),
      ),
      result,
      renderDiff(page.before, page.after),
      page.dropped.length
        ? h(
            "div",
            { "data-field": "dropped" },
            h("h4", {}, this.t("nightly.dropped")),
            h("ul", {}, page.dropped.map((drop) => h("li", {}, h("code", {}, drop.line), " — ", drop.reason))),
          )
        : null,
      page.sources.length ? this.sources(page) : null,
    );
  }

  sources(page) {
    return h(
      "div",
      { "data-field": "sources" },
      h("h4", {}, this.t("nightly.sources")),
      page.sources.map((source) =>
        source.gone
          ? h("span", { class: "badge", "data-source": source.conversation_id }, this.t("nightly.gone"))
          : h(
              "button",
              { class: "link", "data-source": source.conversation_id, onclick: () => this.panel.go("conversations", source.conversation_id) },
              source.conversation_id,
            ),
      ),
    );
  }

  async revert(run, page, result) {
    try {
      await this.panel.api.call({ type: "memory/runs/revert", run_id: run.run_id, page_id: page.page_id });
    } catch (error) {
      // The page was edited after the run: it is left alone, and said so here.
      fill(result, h("div", { class: "warning-bar", role: "alert", "data-warning": error.code }, this.panel.api.errorSentence(error)));
      return;
    }
    this.reverted.add(`${run.run_id}/${page.page_id}`);
    await this.open(run.run_id);
  }
}
