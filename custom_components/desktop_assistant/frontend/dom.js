// Building blocks of the panel: elements made from data (text is always
// text, never HTML), a safe markdown renderer and a line diff.

// An element with attributes, properties ("on..." are listeners) and children;
// strings become text nodes, so nothing given here is ever parsed as HTML.
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  append(element, children);
  return element;
}

// Replaces an element's children; arrays among them are spread.
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// A date and time (ISO text or seconds since the epoch) in the person's locale.
export function formatTime(time) {
  if (!time) return "";
  return new Date(typeof time === "number" ? time * 1000 : time).toLocaleString(undefined, {
    dateStyle: "medium",
    timeStyle: "short",
  });
}

// `[[Page]]` or `[[Page|label]]`.
const LINK = /\[\[([^\]|\n]+)(?:\|([^\]\n]+))?\]\]/;
const INLINE = new RegExp(
  [LINK.source, "\\*\\*([^*\\n]+)\\*\\*", "\\*([^*\\n]+)\\*", "`([^`\\n]+)`"].join("|"),
);

// Inline markdown as nodes: links, bold, italic and code; the rest is text.
function inline(text, renderLink) {
  const nodes = [];
  let rest = text;
  while (rest) {
    const match = INLINE.exec(rest);
    if (!match) {
      nodes.push(rest);
      break;
    }
    if (match.index) nodes.push(rest.slice(0, match.index));
    const [, target, label, bold, italic, code] = match;
    if (target !== undefined) nodes.push(renderLink(target.trim(), (label || target).trim()));
    else if (bold !== undefined) nodes.push(h("strong", {}, bold));
    else if (italic !== undefined) nodes.push(h("em", {}, italic));
    else nodes.push(h("code", {}, code));
    rest = rest.slice(match.index + match[0].length);
  }
  return nodes;
}

// Markdown as a tree of elements: headings, lists, paragraphs and inline
// marks. Raw HTML in the text is shown as text, never run.
export function renderMarkdown(text, renderLink) {
  const root = h("div", { class: "markdown" });
  let list = null;
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) root.append(h("p", {}, inline(paragraph.join(" "), renderLink)));
    paragraph = [];
  };
  for (const line of (text || "").split("\n")) {
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      list = null;
      root.append(h(`h${Math.min(6, heading[1].length + 2)}`, {}, inline(heading[2], renderLink)));
    } else if (item) {
      flush();
      if (!list) {
        list = h("ul");
        root.append(list);
      }
      list.append(h("li", {}, inline(item[1], renderLink)));
    } else if (!line.trim()) {
      flush();
      list = null;
    } else {
      list = null;
      paragraph.push(line.trim());
    }
  }
  flush();
  return root;
}

// The names `[[links]]` in a text point to.
export function linkTargets(text) {
  const global = new RegExp(LINK.source, "g");
  return [...(text || "").matchAll(global)].map((match) => match[1].trim());
}

// The lines of `after` against `before`: [{kind: "same"|"added"|"removed", line}].
export function lineDiff(before, after) {
  const a = (before || "").split("\n");
  const b = (after || "").split("\n");
  // Longest common subsequence table, from the ends.
  const lengths = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i][j] =
        a[i] === b[j] ? lengths[i + 1][j + 1] + 1 : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ kind: "same", line: a[i] });
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lengths[i][j + 1] > lengths[i + 1][j])) {
      // Where either order keeps the common lines, removals come first.
      lines.push({ kind: "added", line: b[j++] });
    } else {
      lines.push({ kind: "removed", line: a[i++] });
    }
  }
  return lines;
}

// A diff as a block of lines marked + and -.
export function renderDiff(before, after) {
  return h(
    "div",
    { class: "diff" },
    lineDiff(before, after).map(({ kind, line }) =>
      h(
        "div",
        { class: `diff-line ${kind}` },
        kind === "added" ? "+ " : kind === "removed" ? "- " : "  ",
        line,
      ),
    ),
  );
}

// What the person reads when a websocket command fails; nothing they typed
// is touched by showing it.
const ERROR_SENTENCES = {
  not_found: "It is no longer there: somebody may have deleted it meanwhile.",
  in_progress: "That is still going on. Try again when it has ended.",
  changed: "This page changed since you opened it.",
  name_taken: "Another page already has that name or alias.",
  tombstoned: "That name belongs to a page deleted forever; the assistant will not reuse it.",
  unavailable: "The assistant's database is not available right now.",
  confirmation: "The name you typed is not the page's name.",
  deleted: "That page is in Recently deleted: restore it first.",
  profile: "The profile cannot be renamed or deleted.",
  invalid_name: "That name cannot be used for a page.",
  edited_since: "This page was edited after the run, so it was left alone: restore it from its history instead.",
};

export function errorSentence(error) {
  const code = error && error.code;
  return ERROR_SENTENCES[code] || (error && error.message) || String(error);
}

// A modal question in the panel; resolves true when confirmed (with
// `typedName`, the text typed, and the confirm button stays off until that
// exact text is typed).
export function confirmDialog(root, { title, text, confirmLabel, danger = false, typedName }) {
  return new Promise((resolve) => {
    const close = (answer) => {
      backdrop.remove();
      resolve(answer);
    };
    const confirm = h(
      "button",
      {
        class: `action primary${danger ? " danger" : ""}`,
        "data-action": "confirm",
        disabled: typedName !== undefined,
        onclick: () => close(typed ? typed.value : true),
      },
      confirmLabel,
    );
    const typed =
      typedName === undefined
        ? null
        : h("input", {
            type: "text",
            "data-field": "confirm-name",
            placeholder: typedName,
            oninput: (event) => {
              confirm.disabled = event.target.value !== typedName;
            },
          });
    const backdrop = h(
      "div",
      { class: "modal-backdrop" },
      h(
        "div",
        { class: "modal", role: "dialog" },
        h("h3", {}, title),
        h("p", {}, text),
        typed,
        h(
          "div",
          { class: "buttons" },
          h("button", { class: "action", "data-action": "cancel", onclick: () => close(false) }, "Cancel"),
          confirm,
        ),
      ),
    );
    root.append(backdrop);
    (typed || confirm).focus();
  });
}
