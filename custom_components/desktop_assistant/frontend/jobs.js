// Jobs: the scheduled work (the nightly pass, the record's retention), each
// with its schedule, next run, whether it runs now, its last outcome and,
// at /jobs/<job>, its last 50 runs and *Run now*.
import { formatSeconds, formatTime } from "./api.js";
import { fill, h } from "./dom.js";
import { Split, View, outcomeBadge, runsTable } from "./layout.js";
import { nightlySummary } from "./nightly.js";

export class JobsView extends View {
  constructor(panel) {
    super(panel);
    this.jobs = [];
    this.list = h("ul", { class: "list", "data-list": "jobs" });
    this.split = new Split(panel, "jobs", "job", panel.t("jobs.hint"));
    fill(this.split.list, h("div", { class: "card" }, this.list));
    this.element = h("div", {}, this.error, this.split.element);
  }

  async show(job) {
    this.shown = job;
    await this.refresh();
    if (job === null) this.split.close();
    else this.open(job);
  }

  async refresh() {
    this.jobs = (await this.call({ type: "jobs/list" })).jobs;
    fill(
      this.list,
      this.jobs.map((job) =>
        h(
          "li",
          { "data-job": job.job, class: job.job === this.shown ? "selected" : "", onclick: () => this.panel.go("jobs", job.job) },
          h("div", {}, h("strong", {}, this.t(`jobs.${job.job}.name`)), " ", this.lastOutcome(job)),
          h("div", { class: "meta", "data-field": "next-run" }, this.nextRun(job)),
        ),
      ),
    );
  }

  lastOutcome(job) {
    if (job.running) return h("span", { class: "badge warning", "data-field": "running" }, this.t("jobs.running_now"));
    const [last] = job.runs;
    if (!last) return null;
    const badge = outcomeBadge(this.panel, last.outcome, last.outcome_detail);
    badge.dataset.field = "last-outcome";
    return badge;
  }

  nextRun(job) {
    if (!job.next_run) return this.t("jobs.off");
    return this.t("jobs.next", { when: formatTime(job.next_run, this.panel.language) });
  }

  summary(job, run) {
    if (job.job === "retention") return this.t("jobs.retention.deleted", { count: run.summary.deleted ?? 0 });
    return nightlySummary(this.panel, run.summary);
  }

  open(name) {
    const job = this.jobs.find((each) => each.job === name);
    if (!job) {
      this.split.open(h("p", { class: "empty" }, this.t("jobs.unknown")));
      return;
    }
    const t = (key) => this.t(key);
    const runNow = h("button", { class: "action primary", "data-action": "run-job", disabled: job.running, onclick: () => this.runNow(job, runNow) }, t("jobs.run_now"));
    this.split.open(
      h("div", { class: "toolbar" }, h("h2", { style: "flex: 1; margin: 0" }, t(`jobs.${job.job}.name`)), runNow),
      h("p", {}, t(`jobs.${job.job}.about`)),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, t("jobs.schedule")),
        h("dd", { "data-field": "schedule" }, job.schedule ? this.t("jobs.daily_at", { time: job.schedule }) : t("jobs.off")),
        h("dt", {}, t("jobs.next_run")),
        h("dd", { "data-field": "next-run" }, job.next_run ? formatTime(job.next_run, this.panel.language) : "—"),
        h("dt", {}, t("jobs.running")),
        h("dd", {}, t(job.running ? "common.yes" : "common.no")),
      ),
      h("h4", {}, t("jobs.last_runs")),
      job.runs.length
        ? runsTable(
            "job-runs",
            [t("jobs.trigger"), t("jobs.when"), t("jobs.took"), t("jobs.outcome"), t("jobs.summary")],
            job.runs.map((run) => [
              this.panel.api.label("triggers", run.trigger),
              formatTime(run.started_at, this.panel.language),
              run.duration === null ? "…" : formatSeconds(run.duration),
              outcomeBadge(this.panel, run.outcome, run.outcome_detail),
              h("span", { "data-field": "summary" }, this.summary(job, run)),
            ]),
          )
        : h("div", { class: "meta" }, t("jobs.no_runs")),
    );
  }

  async runNow(job, button) {
    button.disabled = true;
    try {
      await this.call({ type: "jobs/run_now", job: job.job });
    } finally {
      button.disabled = false;
    }
    await this.refresh();
    this.open(job.job);
  }
}
