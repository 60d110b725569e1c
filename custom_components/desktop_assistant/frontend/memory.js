// Memory: the profile pinned on top with its budget, the other pages, a page
// rendered safely with its links and backlinks, editing that warns when the
// page changed meanwhile, history with diffs, rename, delete and restore.
import { confirmDialog, errorSentence, fill, formatTime, h, renderDiff, renderMarkdown } from "./dom.js";

const TYPES = ["person", "place", "project", "thing", "other"];

export class MemoryView {
  constructor(panel) {
    this.panel = panel;
    this.pages = [];
    this.deleted = [];
    this.current = null;
    this.error = h("div");
    this.query = h("input", {
      type: "search",
      "data-field": "page-query",
      placeholder: "Find a page",
      oninput: () => this.renderList(),
    });
    this.newButton = h("button", { class: "action", "data-action": "new-page", onclick: () => this.editNew("") }, "New page");
    this.profile = h("div", { "data-profile": "" });
    this.list = h("ul", { class: "list", "data-list": "pages" });
    this.deletedList = h("div", { "data-list": "deleted" });
    this.detail = h("div", { class: "card", "data-detail": "page" });
    this.element = h(
      "div",
      {},
      this.error,
      h("div", { class: "toolbar" }, this.query, this.newButton),
      h(
        "div",
        { class: "split" },
        h("div", {}, h("div", { class: "card" }, this.profile, this.list), this.deletedList),
        this.detail,
      ),
    );
  }

  async call(message) {
    fill(this.error);
    try {
      return await this.hass.callWS(message);
    } catch (error) {
      this.showError(error);
      throw error;
    }
  }

  showError(error) {
    fill(this.error, h("div", { class: "error-bar", role: "alert" }, errorSentence(error)));
  }

  async refresh() {
    const answer = await this.call({ type: "desktop_assistant/memory/pages/list" });
    this.pages = answer.pages;
    this.deleted = answer.deleted;
    this.usage = answer.profile;
    this.renderList();
  }

  renderList() {
    const profile = this.pages.find((page) => page.type === "profile");
    const over = this.usage && this.usage.over_budget;
    fill(this.profile, 
      profile
        ? h(
            "div",
            { class: "list" },
            h(
              "li",
              { "data-page": profile.name, onclick: () => this.open(profile.page_id) },
              h("strong", {}, "Profile"),
              h(
                "div",
                { class: "meta", "data-field": "budget" },
                h("span", { class: over ? "badge warning" : "badge" }, over ? "over budget" : "within budget"),
                `${this.usage.used_tokens} of ${this.usage.budget_tokens} tokens`,
              ),
            ),
          )
        : null,
    );
    const words = this.query.value.trim().toLowerCase();
    const shown = this.pages.filter(
      (page) =>
        page.type !== "profile" &&
        (!words || [page.name, ...page.aliases, page.hint || ""].some((text) => text.toLowerCase().includes(words))),
    );
    fill(this.list, 
      ...(shown.length
        ? shown.map((page) =>
            h(
              "li",
              {
                class: this.current && this.current.page_id === page.page_id ? "selected" : "",
                "data-page": page.name,
                onclick: () => this.open(page.page_id),
              },
              h("div", {}, page.name),
              h(
                "div",
                { class: "meta" },
                h("span", { class: "badge" }, page.type),
                page.aliases.length ? `also: ${page.aliases.join(", ")}` : "",
              ),
            ),
          )
        : [h("li", { class: "empty" }, "No pages.")]),
    );
    fill(this.deletedList, 
      this.deleted.length
        ? h(
            "div",
            { class: "card" },
            h("h3", {}, "Recently deleted"),
            h(
              "ul",
              { class: "list" },
              this.deleted.map((page) =>
                h(
                  "li",
                  { "data-deleted": page.name },
                  h("span", {}, page.name, " "),
                  h("button", { class: "action", "data-action": "restore", onclick: () => this.restore(page) }, "Restore"),
                  " ",
                  h(
                    "button",
                    { class: "action danger", "data-action": "delete-forever", onclick: () => this.deleteForever(page) },
                    "Delete forever",
                  ),
                ),
              ),
            ),
          )
        : null,
    );
  }

  async open(pageId) {
    this.current = await this.call({ type: "desktop_assistant/memory/pages/get", page_id: pageId });
    this.renderList();
    this.renderPage();
  }

  link(name, label) {
    const target = this.current.links.find((link) => link.name === name);
    const dangling = !target || target.page_id === null;
    return h(
      "button",
      {
        class: dangling ? "link dangling" : "link",
        "data-link": name,
        title: dangling ? `No page "${name}" yet: create it` : name,
        onclick: () => (dangling ? this.editNew(name) : this.open(target.page_id)),
      },
      label,
    );
  }

  renderPage() {
    const page = this.current;
    const isProfile = page.type === "profile";
    fill(this.detail, 
      h(
        "div",
        { class: "toolbar" },
        h("h2", { style: "flex: 1; margin: 0", "data-field": "page-name" }, isProfile ? "Profile" : page.name),
        h("button", { class: "action", "data-action": "edit", onclick: () => this.edit() }, "Edit"),
        h("button", { class: "action", "data-action": "history", onclick: () => this.history() }, "History"),
        isProfile ? null : h("button", { class: "action", "data-action": "rename", onclick: () => this.rename() }, "Rename"),
        isProfile ? null : h("button", { class: "action danger", "data-action": "delete", onclick: () => this.remove() }, "Delete"),
      ),
      h(
        "div",
        { class: "meta" },
        h("span", { class: "badge" }, page.type),
        page.aliases.length ? `also: ${page.aliases.join(", ")} · ` : "",
        `updated ${formatTime(page.updated_at)}`,
      ),
      h("div", { "data-field": "page-text" }, renderMarkdown(page.text, (name, label) => this.link(name, label))),
      page.backlinks.length
        ? h(
            "div",
            { "data-field": "backlinks" },
            h("h4", {}, "Linked from"),
            page.backlinks.map((back) =>
              h("button", { class: "link", "data-backlink": back.name, onclick: () => this.open(back.page_id) }, back.name),
            ),
          )
        : null,
    );
    // On a phone the page sits below the list.
    this.detail.scrollIntoView({ block: "nearest" });
  }

  editor({ name, type, aliases, text, onSave, onCancel, nameEditable }) {
    const nameInput = h("input", { type: "text", "data-field": "name", value: name, disabled: !nameEditable });
    const typeSelect = h(
      "select",
      { "data-field": "type" },
      TYPES.map((each) => h("option", { value: each, selected: each === type }, each)),
    );
    const aliasInput = h("input", { type: "text", "data-field": "aliases", value: aliases.join(", "), placeholder: "Other names, separated by commas" });
    const textArea = h("textarea", { "data-field": "text" });
    textArea.value = text;
    const values = () => ({
      name: nameInput.value.trim(),
      type: typeSelect.value,
      aliases: aliasInput.value.split(",").map((alias) => alias.trim()).filter(Boolean),
      text: textArea.value,
    });
    const notice = h("div");
    fill(this.detail, 
      notice,
      h("div", { class: "toolbar" }, nameInput, type === "profile" ? null : typeSelect),
      type === "profile" ? null : h("div", { class: "toolbar" }, aliasInput),
      textArea,
      h(
        "div",
        { class: "toolbar" },
        h("button", { class: "action primary", "data-action": "save", onclick: () => onSave(values(), notice) }, "Save"),
        h("button", { class: "action", "data-action": "cancel", onclick: onCancel }, "Cancel"),
      ),
    );
    textArea.focus();
  }

  editNew(name) {
    this.editor({
      name,
      type: "thing",
      aliases: [],
      text: "",
      nameEditable: true,
      onCancel: () => (this.current ? this.renderPage() : fill(this.detail)),
      onSave: async (values) => {
        const created = await this.call({
          type: "desktop_assistant/memory/pages/create",
          name: values.name,
          page_type: values.type,
          aliases: values.aliases,
          text: values.text,
        });
        await this.refresh();
        await this.open(created.page_id);
      },
    });
  }

  edit() {
    const page = this.current;
    this.editor({
      name: page.name,
      type: page.type,
      aliases: page.aliases,
      text: page.text,
      nameEditable: false,
      onCancel: () => this.renderPage(),
      onSave: (values, notice) => this.save(page, values, notice, false),
    });
  }

  async save(page, values, notice, overwrite) {
    const message = {
      type: "desktop_assistant/memory/pages/update",
      page_id: page.page_id,
      base_revision: page.revision,
      text: values.text,
      aliases: values.aliases,
      overwrite,
    };
    if (page.type !== "profile") message.page_type = values.type;
    try {
      await this.hass.callWS(message);
    } catch (error) {
      if (error.code !== "changed") {
        this.showError(error);
        return;
      }
      // Someone else saved meanwhile: the person's text stays in the editor.
      fill(notice, 
        h(
          "div",
          { class: "warning-bar", role: "alert", "data-warning": "changed" },
          "This page changed since you opened it. ",
          h("button", { class: "action", "data-action": "discard", onclick: () => this.open(page.page_id) }, "Discard mine"),
          " ",
          h(
            "button",
            { class: "action danger", "data-action": "overwrite", onclick: () => this.save(page, values, notice, true) },
            "Overwrite",
          ),
        ),
      );
      return;
    }
    await this.refresh();
    await this.open(page.page_id);
  }

  async history() {
    const page = this.current;
    const { revisions } = page;
    fill(this.detail, 
      h(
        "div",
        { class: "toolbar" },
        h("h2", { style: "flex: 1; margin: 0" }, `History of ${page.type === "profile" ? "Profile" : page.name}`),
        h("button", { class: "action", "data-action": "back", onclick: () => this.renderPage() }, "Back"),
      ),
      revisions.map((revision, index) =>
        h(
          "div",
          { class: "card", "data-revision": revision.revision },
          h(
            "div",
            { class: "toolbar" },
            h("strong", { style: "flex: 1" }, `${formatTime(revision.at)} · ${revision.author}`),
            index === 0
              ? h("span", { class: "badge" }, "current")
              : h(
                  "button",
                  { class: "action", "data-action": "restore-revision", onclick: () => this.restoreRevision(revision) },
                  "Restore this version",
                ),
          ),
          renderDiff(revisions[index + 1] ? revisions[index + 1].text : "", revision.text),
        ),
      ),
    );
  }

  async restoreRevision(revision) {
    await this.call({
      type: "desktop_assistant/memory/pages/restore_revision",
      page_id: this.current.page_id,
      revision: revision.revision,
    });
    await this.refresh();
    await this.open(this.current.page_id);
  }

  async rename() {
    const page = this.current;
    const input = h("input", { type: "text", "data-field": "new-name", value: page.name });
    const notice = h("div");
    fill(this.detail, 
      notice,
      h("p", {}, "The old name stays as an alias, so links to it keep working."),
      h(
        "div",
        { class: "toolbar" },
        input,
        h(
          "button",
          {
            class: "action primary",
            "data-action": "save-name",
            onclick: async () => {
              try {
                await this.hass.callWS({ type: "desktop_assistant/memory/pages/rename", page_id: page.page_id, name: input.value.trim() });
              } catch (error) {
                fill(notice, h("div", { class: "error-bar", role: "alert" }, errorSentence(error)));
                return;
              }
              await this.refresh();
              await this.open(page.page_id);
            },
          },
          "Rename",
        ),
        h("button", { class: "action", "data-action": "cancel", onclick: () => this.renderPage() }, "Cancel"),
      ),
    );
    input.focus();
  }

  async remove() {
    const page = this.current;
    const confirmed = await confirmDialog(this.panel.shadowRoot, {
      title: `Delete ${page.name}?`,
      text: "It moves to Recently deleted, where you can restore it.",
      confirmLabel: "Delete",
      danger: true,
    });
    if (!confirmed) return;
    await this.call({ type: "desktop_assistant/memory/pages/delete", page_id: page.page_id });
    this.current = null;
    fill(this.detail);
    await this.refresh();
  }

  async restore(page) {
    await this.call({ type: "desktop_assistant/memory/pages/restore", page_id: page.page_id });
    await this.refresh();
    await this.open(page.page_id);
  }

  async deleteForever(page) {
    const typed = await confirmDialog(this.panel.shadowRoot, {
      title: `Delete ${page.name} forever?`,
      text: `Its history goes too, links to it become plain text, and the assistant will never create a page of that name again. Type "${page.name}" to confirm.`,
      confirmLabel: "Delete forever",
      danger: true,
      typedName: page.name,
    });
    if (!typed) return;
    await this.call({ type: "desktop_assistant/memory/pages/delete_forever", page_id: page.page_id, confirm: typed });
    await this.refresh();
  }
}
