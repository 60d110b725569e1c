// The panel's one style sheet, in Home Assistant's look: its theme variables,
// so light and dark follow the person's theme. Views only use these classes.
export const STYLE = `
:host {
  display: block;
  min-height: 100vh;
  background: var(--primary-background-color);
  color: var(--primary-text-color);
  font-family: var(--ha-font-family-body, Roboto, sans-serif);
  font-size: 14px;
}
header {
  display: flex;
  align-items: center;
  gap: 8px;
  height: 56px;
  padding: 0 12px;
  background: var(--app-header-background-color, var(--primary-color));
  color: var(--app-header-text-color, var(--text-primary-color));
  border-bottom: 1px solid var(--app-header-border-bottom, transparent);
}
header .title { font-size: 20px; flex: 1; }
nav.tabs { display: flex; gap: 4px; padding: 0 12px; overflow-x: auto; scrollbar-width: none; border-bottom: 1px solid var(--divider-color); background: var(--app-header-background-color, var(--primary-color)); }
nav.tabs button {
  background: none; border: none; color: var(--app-header-text-color, var(--text-primary-color));
  opacity: 0.75; padding: 12px 16px; font: inherit; cursor: pointer; border-bottom: 2px solid transparent;
}
nav.tabs button { flex-shrink: 0; white-space: nowrap; }
/* On a phone the tabs are two even rows of three: none is cut off, hidden
   past an edge, or left alone on a row of its own. */
@media (max-width: 600px) { nav.tabs { display: grid; grid-template-columns: repeat(3, 1fr); gap: 0; padding: 0 4px; } nav.tabs button { padding: 10px 4px; text-align: center; } }
nav.tabs button.active { opacity: 1; border-bottom-color: currentColor; }
main { padding: 16px; max-width: 1200px; margin: 0 auto; box-sizing: border-box; }
.card {
  background: var(--card-background-color, var(--ha-card-background));
  border-radius: var(--ha-card-border-radius, 12px);
  box-shadow: var(--ha-card-box-shadow, none);
  border: 1px solid var(--ha-card-border-color, var(--divider-color));
  padding: 16px;
  margin-bottom: 16px;
  /* A name with no break point (a model's, an agent's) wraps inside the card. */
  overflow-wrap: break-word;
}
.toolbar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 12px; }
input, select, textarea {
  font: inherit; color: var(--primary-text-color);
  background: var(--input-fill-color, var(--secondary-background-color));
  border: 1px solid var(--divider-color); border-radius: 6px; padding: 8px;
}
textarea { width: 100%; box-sizing: border-box; min-height: 240px; font-family: var(--ha-font-family-code, monospace); }
input[type=search] { flex: 1; min-width: 160px; }
button.action {
  font: inherit; cursor: pointer; border-radius: 18px; padding: 6px 14px;
  border: 1px solid var(--primary-color); background: none; color: var(--primary-color);
}
button.action.primary { background: var(--primary-color); color: var(--text-primary-color); }
button.action.danger { border-color: var(--error-color); color: var(--error-color); }
button.action.danger.primary { background: var(--error-color); color: var(--text-primary-color); }
button.action:disabled { opacity: 0.5; cursor: default; }
button.link { background: none; border: none; padding: 0; font: inherit; color: var(--primary-color); cursor: pointer; text-decoration: underline; }
button.link.dangling { color: var(--error-color); text-decoration-style: dashed; }
.list { list-style: none; margin: 0; padding: 0; }
.list li { padding: 10px 8px; border-bottom: 1px solid var(--divider-color); cursor: pointer; overflow-wrap: anywhere; }
.list li:hover, .list li.selected { background: var(--secondary-background-color); }
.meta { color: var(--secondary-text-color); font-size: 12px; }
.one-line { overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; background: var(--secondary-background-color); color: var(--secondary-text-color); margin-right: 4px; overflow-wrap: normal; }
/* Dark text: white on amber is hard to read, in either theme. */
.badge.warning { background: var(--warning-color); color: rgba(0, 0, 0, 0.87); }
.split { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); gap: 16px; align-items: start; }
.narrow .split { grid-template-columns: minmax(0, 1fr); }
.error-bar { background: var(--error-color); color: var(--text-primary-color); padding: 8px 12px; border-radius: 6px; margin-bottom: 12px; }
.warning-bar { border: 1px solid var(--warning-color); padding: 8px 12px; border-radius: 6px; margin-bottom: 12px; }
.notice-bar { border: 1px solid var(--divider-color); border-left: 3px solid var(--success-color, #43a047); padding: 8px 12px; border-radius: 6px; margin-bottom: 12px; }
.entry { margin: 8px 0; padding: 8px 12px; border-radius: 8px; white-space: pre-wrap; overflow-wrap: anywhere; }
.entry.user { background: var(--secondary-background-color); }
.entry.assistant { border-left: 3px solid var(--primary-color); }
.entry.fault { border-left: 3px solid var(--error-color); color: var(--error-color); }
.entry.tool_call { border-left: 3px solid var(--secondary-text-color); font-size: 13px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; font-family: var(--ha-font-family-code, monospace); font-size: 12px; }
.markdown h3, .markdown h4, .markdown h5 { margin: 12px 0 4px; }
.diff { font-family: var(--ha-font-family-code, monospace); font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.diff-line.added { background: rgba(67, 160, 71, 0.18); }
.diff-line.removed { background: rgba(219, 68, 55, 0.18); }
.modal-backdrop { position: fixed; inset: 0; background: rgba(0,0,0,0.4); display: flex; align-items: center; justify-content: center; z-index: 10; }
.modal { background: var(--card-background-color); color: var(--primary-text-color); border-radius: 12px; padding: 20px; width: min(440px, 92vw); box-sizing: border-box; }
.modal .buttons { display: flex; justify-content: flex-end; gap: 8px; margin-top: 16px; }
.empty { color: var(--secondary-text-color); padding: 16px 0; }
.chips { display: flex; flex-wrap: wrap; gap: 4px; }
.chips button {
  font: inherit; cursor: pointer; border-radius: 16px; padding: 4px 12px;
  border: 1px solid var(--divider-color); background: none; color: var(--primary-text-color);
}
.chips button[aria-pressed=true] { background: var(--primary-color); border-color: var(--primary-color); color: var(--text-primary-color); }
.field { display: flex; flex-direction: column; gap: 2px; flex: 1; min-width: 160px; font-size: 12px; color: var(--secondary-text-color); }
.field input, .field select, .field textarea { font-size: 14px; }
.hint { color: var(--secondary-text-color); padding: 8px 0; }
.hint p { margin: 4px 0; }
.back-bar { display: none; }
.narrow .back-bar { display: flex; }
.narrow .split.opened > :first-child { display: none; }
.narrow .split:not(.opened) > [data-detail] { display: none; }
/* Words in a table never break: a table wider than the screen scrolls in its box. */
.table-scroll { overflow-x: auto; }
table.runs { width: 100%; border-collapse: collapse; font-size: 13px; }
table.runs th, table.runs td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--divider-color); vertical-align: top; overflow-wrap: normal; word-break: normal; }
table.runs th { color: var(--secondary-text-color); font-weight: 500; white-space: nowrap; }
.badge.ok { background: var(--success-color, #43a047); color: var(--text-primary-color); }
.badge.error { background: var(--error-color); color: var(--text-primary-color); }
.params { margin: 4px 0 8px; padding-left: 18px; }
.group h3 { margin: 0 0 8px; }
.problem { color: var(--error-color); }
.answer { border-left: 3px solid var(--primary-color); padding: 4px 8px; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 12px; margin: 8px 0; }
dl.facts dt { color: var(--secondary-text-color); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
/* Chat: reasoning is dimmed; answers are markdown, not pre-formatted text. */
.entry.thinking { opacity: 0.55; font-style: italic; font-size: 13px; }
.entry.chat-answer { white-space: normal; }
.entry.chat-answer .markdown p { margin: 4px 0; }
details.entry summary { cursor: pointer; }
.composer textarea.message { min-height: 0; font-family: inherit; resize: vertical; }
`;
