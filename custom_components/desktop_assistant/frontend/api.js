// The one way the panel talks to Home Assistant: websocket commands, their
// error sentences, and the panel's text in the person's language.
//
// What the Python side owns is not repeated here: the page kinds and the
// error codes come from `desktop_assistant/panel/describe`; the text comes
// from the `panel` section of the integration's translations, through Home
// Assistant's own translation API (`frontend/get_translations`), in the
// language of the person's profile (`hass.language`).
import { fill, h } from "./dom.js";

const DOMAIN = "desktop_assistant";
const PREFIX = `component.${DOMAIN}.panel.`;

export class Api {
  constructor() {
    this.strings = {};
    this.pageKinds = [];
    this.errorCodes = new Set();
    this.language = null;
  }

  // Loads what the panel needs before it draws; again when the language changes.
  async load(hass) {
    this.hass = hass;
    if (this.language === hass.language) return false;
    this.language = hass.language;
    const [translations, described] = await Promise.all([
      hass.callWS({ type: "frontend/get_translations", language: hass.language, category: "panel", integration: [DOMAIN] }),
      hass.callWS({ type: `${DOMAIN}/panel/describe` }),
    ]);
    this.strings = translations.resources;
    this.pageKinds = described.page_kinds;
    this.errorCodes = new Set(described.error_codes);
    return true;
  }

  // A text of the panel, `{name}`s filled in; the key itself if it is missing.
  t(key, values = {}) {
    const text = this.strings[PREFIX + key];
    if (text === undefined) return key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  }

  // The word for one of a set of values (a trigger, a page kind): the value
  // itself when the translations have none for it.
  label(group, value) {
    const key = `${group}.${value}`;
    return PREFIX + key in this.strings ? this.t(key) : String(value);
  }

  // The sentence a person reads for a failed command.
  errorSentence(error) {
    const code = error && error.code;
    if (this.errorCodes.has(code)) return this.t(`errors.${code}`);
    return (error && error.message) || String(error);
  }

  // Sends a command; a failure is shown as a sentence in `errorBox` (when
  // given) and thrown again, so the caller leaves what was typed alone.
  async call(message, errorBox) {
    if (errorBox) fill(errorBox);
    try {
      return await this.hass.callWS({ ...message, type: `${DOMAIN}/${message.type}` });
    } catch (error) {
      if (errorBox) fill(errorBox, h("div", { class: "error-bar", role: "alert", "data-error": error.code || "" }, this.errorSentence(error)));
      throw error;
    }
  }
}

// A date and time (ISO text or seconds since the epoch) in the person's locale.
export function formatTime(time, language) {
  if (!time) return "";
  return new Date(typeof time === "number" ? time * 1000 : time).toLocaleString(language || undefined, {
    dateStyle: "medium",
    timeStyle: "short",
  });
}

// Seconds as the page shows them: "0.4 s".
export function formatSeconds(seconds) {
  return `${Math.round((seconds || 0) * 10) / 10} s`;
}
