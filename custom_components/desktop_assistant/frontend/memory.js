// Memory: the profile pinned on top with its budget, the other pages, a page
// (at /memory/<page id>) rendered safely with its links and backlinks,
// editing that warns when the page changed meanwhile, history with diffs,
// rename, delete and restore. Page kinds come from the websocket API.
import { formatTime } from "./api.js";
import { confirmDialog, fill, h, renderDiff, renderMarkdown } from "./dom.js";
import { Split, View, chips, field } from "./layout.js";

export class MemoryView extends View {
  constructor(panel) {
    super(panel);
    this.pages = [];
    this.deleted = [];
    this.current = null;
    this.owner = "";
    const t = (key) => panel.t(key);
    this.query = h("input", {
      type: "search",
      "data-field": "page-query",
      placeholder: t("memory.find"),
      "aria-label": t("memory.find"),
      oninput: () => this.renderList(),
    });
    this.newButton = h("button", { class: "action", "data-action": "new-page", onclick: () => this.editNew("") }, t("memory.new_page"));
    this.profile = h("div", { "data-profile": "" });
    this.filters = h("div", { class: "toolbar" });
    this.list = h("ul", { class: "list", "data-list": "pages" });
    this.deletedList = h("div", { "data-list": "deleted" });
    this.split = new Split(panel, "memory", "page", t("memory.hint"));
    this.detail = this.split.detail;
    fill(this.split.list, h("div", { class: "card" }, this.profile, this.list), this.deletedList);
    this.element = h("div", {}, this.error, h("div", { class: "toolbar" }, this.query, this.newButton), this.filters, this.split.element);
  }

  showError(error) {
    fill(this.error, h("div", { class: "error-bar", role: "alert" }, this.panel.api.errorSentence(error)));
  }

  async show(pageId) {
    // Nothing is selected until the page the URL names has been read.
    this.current = null;
    await this.refresh();
    if (pageId === null) this.split.close();
    else await this.open(pageId);
  }

  async refresh() {
    const answer = await this.call({ type: "memory/pages/list" });
    this.pages = answer.pages;
    this.deleted = answer.deleted;
    this.usage = answer.profile;
    this.renderList();
  }

  // Whether the page is the owner filter's: everyone's, the household's, a member's.
  ownedAsFiltered(page) {
    if (!this.owner) return true;
    return this.owner === "household" ? page.user_id === null : page.user_id === this.owner;
  }

  renderList() {
    fill(
      this.filters,
      chips("owner", this.panel.api.ownerChoices(), this.owner, (value) => {
        this.owner = value;
        this.renderList();
      }),
    );
    const profile = this.pages.find((page) => page.type === "profile" && page.user_id === null);
    fill(this.profile, profile ? this.profileItem(profile) : this.noProfile());
    const words = this.query.value.trim().toLowerCase();
    const shown = this.pages.filter(
      (page) =>
        page !== profile &&
        this.ownedAsFiltered(page) &&
        (!words || [page.name, ...page.aliases, page.hint || ""].some((text) => text.toLowerCase().includes(words))),
    );
    fill(
      this.list,
      shown.length
        ? shown.map((page) =>
            h(
              "li",
              {
                class: this.current && this.current.page_id === page.page_id ? "selected" : "",
                "data-page": page.name,
                onclick: () => this.panel.go("memory", page.page_id),
              },
              h("div", {}, page.name),
              h(
                "div",
                { class: "meta" },
                h("span", { class: "badge" }, this.panel.api.label("kinds", page.type)),
                h("span", { class: "badge", "data-field": "owner" }, this.panel.api.ownerName(page.user_id)),
                page.aliases.length ? this.t("memory.also", { names: page.aliases.join(", ") }) : "",
              ),
            ),
          )
        : h(
            "li",
            { class: "empty" },
            h("p", {}, this.t(words ? "memory.no_match" : "memory.no_pages")),
            words ? null : h("p", {}, this.t("memory.what_is_memory")),
          ),
    );
    fill(this.deletedList, this.deleted.length ? this.deletedCard() : null);
  }

  profileItem(profile) {
    const over = this.usage && this.usage.over_budget;
    return h(
      "ul",
      { class: "list" },
      h(
        "li",
        {
          class: this.current && this.current.page_id === profile.page_id ? "selected" : "",
          "data-page": profile.name,
          onclick: () => this.panel.go("memory", profile.page_id),
        },
        h("strong", {}, this.t("memory.profile")),
        h(
          "div",
          { class: "meta", "data-field": "budget" },
          h("span", { class: over ? "badge warning" : "badge" }, this.t(over ? "memory.over_budget" : "memory.within_budget")),
          this.t("memory.tokens", { used: this.usage.used_tokens, budget: this.usage.budget_tokens }),
        ),
      ),
    );
  }

  // No profile yet: what it is for, and a way to start it.
  noProfile() {
    return h(
      "div",
      { class: "hint", "data-field": "no-profile" },
      h("p", {}, this.t("memory.no_profile")),
      h(
        "button",
        {
          class: "action",
          "data-action": "create-profile",
          onclick: async () => {
            const { page_id } = await this.call({ type: "memory/profile/create" });
            this.panel.go("memory", page_id);
          },
        },
        this.t("memory.create_profile"),
      ),
    );
  }

  deletedCard() {
    return h(
      "div",
      { class: "card" },
      h("h3", {}, this.t("memory.recently_deleted")),
      h(
        "ul",
        { class: "list" },
        this.deleted.map((page) =>
          h(
            "li",
            { "data-deleted": page.name },
            h("span", {}, page.name, " "),
            h("button", { class: "action", "data-action": "restore", onclick: () => this.restore(page) }, this.t("memory.restore")),
            " ",
            h(
              "button",
              { class: "action danger", "data-action": "delete-forever", onclick: () => this.deleteForever(page) },
              this.t("memory.delete_forever"),
            ),
          ),
        ),
      ),
    );
  }

  async open(pageId) {
    this.current = await this.split.fetch(() => this.call({ type: "memory/pages/get", page_id: this.itemId(pageId) }));
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
        title: dangling ? this.t("memory.dangling", { name }) : name,
        onclick: () => (dangling ? this.editNew(name) : this.panel.go("memory", target.page_id)),
      },
      label,
    );
  }

  // Whose the page is, as a choice that moves it (a revision, revertible).
  ownerChoice(page) {
    const current = page.user_id === null ? "household" : page.user_id;
    const choices = this.panel.api.ownerChoices().filter(([value]) => value);
    if (!choices.some(([value]) => value === current)) choices.push([current, this.panel.api.ownerName(page.user_id)]);
    return h(
      "select",
      {
        "data-field": "owner",
        "aria-label": this.t("owners.whose"),
        onchange: async (event) => {
          try {
            this.current = await this.call({ type: "memory/pages/move", page_id: page.page_id, owner: event.target.value });
          } catch {
            // Refused (the error bar says why): the page is still whose it was.
            event.target.value = current;
            return;
          }
          await this.refresh();
          this.renderPage();
        },
      },
      choices.map(([value, label]) => h("option", { value, selected: value === current }, label)),
    );
  }

  pageName(page) {
    return page.type === "profile" ? this.t("memory.profile") : page.name;
  }

  renderPage() {
    const page = this.current;
    const isProfile = page.type === "profile";
    const button = (action, run, label, danger) =>
      h("button", { class: danger ? "action danger" : "action", "data-action": action, onclick: run }, this.t(label));
    this.split.open(
      h(
        "div",
        { class: "toolbar" },
        h("h2", { style: "flex: 1; margin: 0", "data-field": "page-name" }, this.pageName(page)),
        button("edit", () => this.edit(), "memory.edit"),
        button("history", () => this.history(), "memory.history"),
        isProfile ? null : button("rename", () => this.rename(), "memory.rename"),
        isProfile ? null : button("delete", () => this.remove(), "common.delete", true),
      ),
      h(
        "div",
        { class: "meta" },
        h("span", { class: "badge" }, this.panel.api.label("kinds", page.type)),
        isProfile ? h("span", { class: "badge", "data-field": "owner" }, this.panel.api.ownerName(page.user_id)) : this.ownerChoice(page),
        page.aliases.length ? [this.t("memory.also", { names: page.aliases.join(", ") }), " · "] : "",
        this.t("memory.updated", { when: formatTime(page.updated_at, this.panel.language) }),
      ),
      h("div", { "data-field": "page-text" }, renderMarkdown(page.text, (name, label) => this.link(name, label))),
      page.backlinks.length
        ? h(
            "div",
            { "data-field": "backlinks" },
            h("h4", {}, this.t("memory.linked_from")),
            page.backlinks.map((back) =>
              h("button", { class: "link", "data-backlink": back.name, onclick: () => this.panel.go("memory", back.page_id) }, back.name),
            ),
          )
        : null,
    );
  }

  editor({ name, type, aliases, text, onSave, onCancel, nameEditable }) {
    const isProfile = type === "profile";
    const nameInput = h("input", { type: "text", "data-field": "name", value: name, disabled: !nameEditable });
    let chosenType = type;
    const typeChoice = h("div", { "data-field": "type" });
    const drawTypes = () =>
      fill(
        typeChoice,
        chips("type", this.panel.api.pageKinds.map((each) => [each, this.panel.api.label("kinds", each)]), chosenType, (value) => {
          chosenType = value;
          drawTypes();
        }),
      );
    drawTypes();
    const aliasInput = h("input", { type: "text", "data-field": "aliases", value: aliases.join(", "), placeholder: this.t("memory.aliases_hint") });
    const textArea = h("textarea", { "data-field": "text" });
    textArea.value = text;
    const values = () => ({
      name: nameInput.value.trim(),
      type: chosenType,
      aliases: aliasInput.value.split(",").map((alias) => alias.trim()).filter(Boolean),
      text: textArea.value,
    });
    const notice = h("div");
    this.split.open(
      notice,
      isProfile
        ? null
        : h("div", { class: "toolbar" }, field(this.t("memory.name"), nameInput), h("div", { class: "field" }, this.t("memory.kind"), typeChoice)),
      isProfile ? null : h("div", { class: "toolbar" }, field(this.t("memory.aliases"), aliasInput)),
      field(this.t("memory.text"), textArea),
      h(
        "div",
        { class: "toolbar" },
        h("button", { class: "action primary", "data-action": "save", onclick: () => onSave(values(), notice) }, this.t("common.save")),
        h("button", { class: "action", "data-action": "cancel", onclick: onCancel }, this.t("common.cancel")),
      ),
    );
    // A new page starts at its name; a named one (a dangling link's) at its text.
    (nameEditable && !name ? nameInput : textArea).focus();
  }

  editNew(name) {
    this.editor({
      name,
      type: "thing",
      aliases: [],
      text: "",
      nameEditable: true,
      onCancel: () => (this.current ? this.renderPage() : this.split.close()),
      onSave: async (values) => {
        const created = await this.call({
          type: "memory/pages/create",
          name: values.name,
          page_type: values.type,
          aliases: values.aliases,
          text: values.text,
        });
        this.panel.go("memory", created.page_id);
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
      type: "memory/pages/update",
      page_id: page.page_id,
      base_revision: page.revision,
      text: values.text,
      aliases: values.aliases,
      overwrite,
    };
    if (page.type !== "profile") message.page_type = values.type;
    try {
      await this.panel.api.call(message);
    } catch (error) {
      if (error.code !== "changed") {
        this.showError(error);
        return;
      }
      // Someone else saved meanwhile: the person's text stays in the editor.
      fill(
        notice,
        h(
          "div",
          { class: "warning-bar", role: "alert", "data-warning": "changed" },
          this.panel.api.errorSentence(error),
          " ",
          h("button", { class: "action", "data-action": "discard", onclick: () => this.open(page.page_id) }, this.t("memory.discard")),
          " ",
          h(
            "button",
            { class: "action danger", "data-action": "overwrite", onclick: () => this.save(page, values, notice, true) },
            this.t("memory.overwrite"),
          ),
        ),
      );
      return;
    }
    await this.refresh();
    await this.open(page.page_id);
  }

  history() {
    const page = this.current;
    const { revisions } = page;
    this.split.open(
      h(
        "div",
        { class: "toolbar" },
        h("h2", { style: "flex: 1; margin: 0" }, this.t("memory.history_of", { name: this.pageName(page) })),
        h("button", { class: "action", "data-action": "back", onclick: () => this.renderPage() }, this.t("memory.back_to_page")),
      ),
      revisions.map((revision, index) =>
        h(
          "div",
          { class: "card", "data-revision": revision.revision },
          h(
            "div",
            { class: "toolbar" },
            h(
              "strong",
              { style: "flex: 1" },
              formatTime(revision.at, this.panel.language),
              " · ",
              h("span", { "data-field": "author" }, this.panel.api.label("authors", revision.author)),
            ),
            index === 0
              ? h("span", { class: "badge" }, this.t("memory.current"))
              : h(
                  "button",
                  { class: "action", "data-action": "restore-revision", onclick: () => this.restoreRevision(revision) },
                  this.t("memory.restore_version"),
                ),
          ),
          renderDiff(revisions[index + 1] ? revisions[index + 1].text : "", revision.text),
        ),
      ),
    );
  }

  async restoreRevision(revision) {
    await this.call({
      type: "memory/pages/restore_revision",
      page_id: this.current.page_id,
      revision: revision.revision,
    });
    await this.refresh();
    await this.open(this.current.page_id);
  }

  rename() {
    const page = this.current;
    const input = h("input", { type: "text", "data-field": "new-name", value: page.name });
    const notice = h("div");
    const save = async () => {
      try {
        await this.panel.api.call({ type: "memory/pages/rename", page_id: page.page_id, name: input.value.trim() });
      } catch (error) {
        fill(notice, h("div", { class: "error-bar", role: "alert" }, this.panel.api.errorSentence(error)));
        return;
      }
      await this.refresh();
      await this.open(page.page_id);
    };
    this.split.open(
      notice,
      h("p", {}, this.t("memory.rename_keeps_alias")),
      h(
        "div",
        { class: "toolbar" },
        field(this.t("memory.new_name"), input),
        h("button", { class: "action primary", "data-action": "save-name", onclick: save }, this.t("memory.rename")),
        h("button", { class: "action", "data-action": "cancel", onclick: () => this.renderPage() }, this.t("common.cancel")),
      ),
    );
    input.focus();
  }

  async remove() {
    const page = this.current;
    const confirmed = await confirmDialog(this.panel.shadowRoot, {
      title: this.t("memory.delete_title", { name: page.name }),
      text: this.t("memory.delete_text"),
      confirmLabel: this.t("common.delete"),
      cancelLabel: this.t("common.cancel"),
      danger: true,
    });
    if (!confirmed) return;
    await this.call({ type: "memory/pages/delete", page_id: page.page_id });
    this.current = null;
    await this.refresh();
    this.panel.go("memory");
  }

  async restore(page) {
    await this.call({ type: "memory/pages/restore", page_id: page.page_id });
    this.panel.go("memory", page.page_id);
    await this.refresh();
  }

  async deleteForever(page) {
    const typed = await confirmDialog(this.panel.shadowRoot, {
      title: this.t("memory.delete_forever_title", { name: page.name }),
      text: this.t("memory.delete_forever_text", { name: page.name }),
      confirmLabel: this.t("memory.delete_forever"),
      cancelLabel: this.t("common.cancel"),
      danger: true,
      typedName: page.name,
    });
    if (!typed) return;
    await this.call({ type: "memory/pages/delete_forever", page_id: page.page_id, confirm: typed });
    await this.refresh();
  }
}
