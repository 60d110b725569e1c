// The Assistant panel: conversations, memory and nightly runs.
class DesktopAssistantPanel extends HTMLElement {
  set hass(hass) {
    this._hass = hass;
    if (!this.shadowRoot) {
      this.attachShadow({ mode: "open" });
      this.shadowRoot.innerHTML = "<h1>Assistant</h1>";
    }
  }
}
customElements.define("desktop-assistant-panel", DesktopAssistantPanel);
