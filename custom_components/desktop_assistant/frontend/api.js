// The one way the panel talks to Home Assistant: websocket commands, their
// error sentences, and the panel's text in the person's language.
//
// What the Python side owns is not repeated here: the page kinds and the
// error codes come from `desktop_assistant/panel/describe`. The text comes
// from `translations/<language>.json` beside this module (not from the
// integration's translations, whose sections Home Assistant's hassfest
// checks), in the language of the person's profile (`hass.language`), with
// English for what a language lacks.
import { fill, h } from "./dom.js";

const DOMAIN = "desktop_assistant";
const LANGUAGES = ["en", "it", "nl", "de", "fr", "es"];

// {"a": {"b": "text"}} as {"a.b": "text"}.
function flatten(tree, prefix = "", into = {}) {
  for (const [key, value] of Object.entries(tree)) {
    if (value && typeof value === "object") flatten(value, `${prefix}${key}.`, into);
    else into[prefix + key] = value;
  }
  return into;
}

async function translations(code) {
  const response = await fetch(new URL(`./translations/${code}.json`, import.meta.url));
  if (!response.ok) throw new Error(`translations/${code}.json: HTTP ${response.status}`);
  return flatten(await response.json());
}

// "it-IT" and "it_IT" are "it"; a language the panel does not speak is English.
function languageCode(language) {
  const code = String(language || "en").replace("_", "-").split("-")[0].toLowerCase();
  return LANGUAGES.includes(code) ? code : "en";
}

// The text of the language (a profile's `hass.language`), English where it lacks a key.
export async function loadStrings(language) {
  const code = languageCode(language);
  const [english, spoken] = await Promise.all([translations("en"), code === "en" ? {} : translations(code)]);
  return { ...english, ...spoken };
}

export class Api {
  constructor() {
    this.strings = {};
    this.pageKinds = [];
    this.errorCodes = new Set();
    this.members = [];
    this.language = null;
  }

  // Loads what the panel needs before it draws; again when the language changes.
  async load(hass) {
    this.hass = hass;
    if (this.language === hass.language) return false;
    this.language = hass.language;
    const [strings, described] = await Promise.all([
      loadStrings(hass.language),
      hass.callWS({ type: `${DOMAIN}/panel/describe` }),
    ]);
    this.strings = strings;
    this.pageKinds = described.page_kinds;
    this.errorCodes = new Set(described.error_codes);
    this.members = described.members;
    return true;
  }

  // Whose a conversation or page is: the household's (no user), a member's
  // by name, or a former member's (a user id no member has any more).
  ownerName(userId) {
    if (userId === null || userId === undefined) return this.t("owners.household");
    const member = this.members.find((each) => each.user_id === userId);
    return member ? member.name : this.t("owners.former");
  }

  // The owner filter's choices: everyone, the household, each member.
  ownerChoices() {
    return [
      ["", this.t("owners.everyone")],
      ["household", this.t("owners.household")],
      ...this.members.map((member) => [member.user_id, member.name]),
    ];
  }

  // A text of the panel, `{name}`s filled in; the key itself if it is missing.
  t(key, values = {}) {
    const text = this.strings[key];
    if (text === undefined) return key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  }

  // The word for one of a set of values (a trigger, a page kind): the value
  // itself when the translations have none for it.
  label(group, value) {
    const key = `${group}.${value}`;
    return key in this.strings ? this.t(key) : String(value);
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
      if (errorBox) this.showError(errorBox, error);
      throw error;
    }
  }

  // Shows a failure in `errorBox` as the sentence a person reads.
  showError(errorBox, error) {
    fill(errorBox, h("div", { class: "error-bar", role: "alert", "data-error": error.code || "" }, this.errorSentence(error)));
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

// A model's file name: llama-server names a model by the path it loaded.
export function modelFile(model) {
  return String(model).split(/[\\/]/).pop() || String(model);
}
