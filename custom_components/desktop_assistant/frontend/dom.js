// Building blocks of the panel: elements made from data (text is always
// text, never HTML), a safe markdown renderer, a line diff and a modal question.

// An element with attributes, properties ("on..." are listeners) and children;
// strings become text nodes, so nothing given here is ever parsed as HTML.
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), settled(value));
    else if (name === "class") element.className = value;
    else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  append(element, children);
  return element;
}

// A listener whose command failed has shown the error sentence (`api.call`);
// its promise must not also be an unhandled rejection.
function settled(listener) {
  return (event) => {
    const result = listener(event);
    if (result instanceof Promise) result.catch((error) => console.debug(error));
  };
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

// A function that finds `needle` at or after a position, for positions that
// only grow: each part of the text is searched once, so a scan stays linear.
function finder(text, needle) {
  let at = -2;
  return (from) => {
    if (at !== -1 && at < from) at = text.indexOf(needle, from);
    return at;
  };
}

// Inline markdown as nodes: `[[Page]]` and `[[Page|label]]` links, **bold**,
// *italic* and `code`; the rest is text. One pass over the text, with no
// pattern that can backtrack: a page of 100 kB of `[[` renders in linear time.
function inline(text, renderLink) {
  const nodes = [];
  const closeLink = finder(text, "]]");
  const bracket = finder(text, "]");
  const star = finder(text, "*");
  const tick = finder(text, "`");
  let plain = 0;
  let i = 0;
  const mark = (node, next) => {
    if (i > plain) nodes.push(text.slice(plain, i));
    nodes.push(node);
    i = plain = next;
  };
  while (i < text.length) {
    const char = text[i];
    if (char === "[" && text[i + 1] === "[") {
      const close = closeLink(i + 2);
      // A link holds no `]`: the first one after `[[` must start its `]]`.
      if (close > i + 2 && bracket(i + 2) === close) {
        const body = text.slice(i + 2, close);
        const bar = body.indexOf("|");
        const target = bar === -1 ? body : body.slice(0, bar);
        const label = bar === -1 ? body : body.slice(bar + 1);
        if (target && label) {
          mark(renderLink(target.trim(), label.trim()), close + 2);
          continue;
        }
      }
    } else if (char === "*" && text[i + 1] === "*") {
      const end = star(i + 2);
      if (end > i + 2 && text[end + 1] === "*") {
        mark(h("strong", {}, text.slice(i + 2, end)), end + 2);
        continue;
      }
    } else if (char === "*") {
      const end = star(i + 1);
      if (end > i + 1) {
        mark(h("em", {}, text.slice(i + 1, end)), end + 1);
        continue;
      }
    } else if (char === "`") {
      const end = tick(i + 1);
      if (end > i + 1) {
        mark(h("code", {}, text.slice(i + 1, end)), end + 1);
        continue;
      }
    }
    i++;
  }
  if (plain < text.length) nodes.push(text.slice(plain));
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

// Differences beyond this many edits are shown as the old text removed and
// the new one added: the work of a diff is bounded by size, never quadratic.
export const MAX_EDITS = 1000;

// The lines of `after` against `before`: [{kind: "same"|"added"|"removed", line}].
// The common start and end are trimmed, the middle compared with Myers's
// algorithm (time and memory grow with the edits, not lines x lines).
export function lineDiff(before, after, maxEdits = MAX_EDITS) {
  const a = (before || "").split("\n");
  const b = (after || "").split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const oldMiddle = a.slice(start, endA);
  const newMiddle = b.slice(start, endB);
  const middle = myers(oldMiddle, newMiddle, maxEdits) || [
    ...oldMiddle.map((line) => ({ kind: "removed", line })),
    ...newMiddle.map((line) => ({ kind: "added", line })),
  ];
  return [
    ...a.slice(0, start).map((line) => ({ kind: "same", line })),
    ...middle,
    ...a.slice(endA).map((line) => ({ kind: "same", line })),
  ];
}

// The shortest edit script from `a` to `b`, or null past `maxEdits` edits.
function myers(a, b, maxEdits) {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      // Down (a line added) or right (a line removed): removals come first.
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
  }
  return null;
}

// Walks the recorded fronts back from the end: the edit script in order.
function backtrack(a, b, trace, edits) {
  const lines = [];
  let x = a.length;
  let y = b.length;
  for (let d = edits; d >= 0; d--) {
    // trace[d] holds the front before step d, for k from -d-1 to d+1.
    const front = (k) => trace[d][k + d + 1];
    const k = x - y;
    const down = k === -d || (k !== d && front(k - 1) < front(k + 1));
    const previousK = down ? k + 1 : k - 1;
    const previousX = d === 0 ? 0 : front(previousK);
    const previousY = d === 0 ? 0 : previousX - previousK;
    while (x > previousX && y > previousY) {
      x--;
      y--;
      lines.push({ kind: "same", line: a[x] });
    }
    if (d === 0) break;
    if (down) lines.push({ kind: "added", line: b[--y] });
    else lines.push({ kind: "removed", line: a[--x] });
  }
  return lines.reverse();
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

// A modal question in the panel; resolves true when confirmed (with
// `typedName`, the text typed, and the confirm button stays off until that
// exact text is typed).
export function confirmDialog(root, { title, text, confirmLabel, cancelLabel, danger = false, typedName }) {
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
          h("button", { class: "action", "data-action": "cancel", onclick: () => close(false) }, cancelLabel),
          confirm,
        ),
      ),
    );
    root.append(backdrop);
    (typed || confirm).focus();
  });
}
