// Saber's web page: a header (views, language, sign-in) and the chat or knowledge-base view.
import { ApiError, apiKey, request, setApiKey } from "./api.js";
import { ChatView } from "./chat.js";
import { Conversations } from "./conversations.js";
import { h } from "./dom.js";
import { t, toggleLang } from "./i18n.js";
import { KnowledgeView } from "./knowledge.js";

const app = document.getElementById("app");
const toast = h("div", { class: "toast", role: "alert", hidden: true, "data-testid": "toast" });
let chat = null;
let knowledge = null;

function showError(err) {
  if (err instanceof ApiError && err.status === 401) {
    signIn(apiKey() ? t("badKey") : t("keyNeeded"));
    return;
  }
  toast.textContent = err.message || String(err);
  toast.hidden = false;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => { toast.hidden = true; }, 6000);
}

function userTag() {
  const key = apiKey();
  if (!key) return "local";
  let hash = 0;
  for (const ch of key) hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  return `k${(hash >>> 0).toString(36)}`;
}

function header(active) {
  return h("header", { class: "top" },
    h("a", { class: "brand", href: "#/chat" }, "Saber"),
    h("nav", {}, h("a", { href: "#/chat", class: active === "chat" ? "active" : "" }, t("chat")),
      h("a", { href: "#/knowledge", class: active === "knowledge" ? "active" : "" }, t("knowledge"))),
    h("span", { class: "spacer" }),
    h("button", { class: "link", "data-testid": "lang", onclick: () => { toggleLang(); route(); } }, t("language")),
    apiKey() ? h("button", { class: "link", onclick: () => { setApiKey(""); chat = null; route(); } }, t("signOut")) : null);
}

function signIn(message) {
  const input = h("input", { type: "password", autocomplete: "off", "aria-label": t("apiKey"), placeholder: t("apiKey"), "data-testid": "api-key" });
  const form = h("form", { class: "sign-in", onsubmit: async (ev) => {
    ev.preventDefault();
    setApiKey(input.value.trim());
    chat = null;
    await route();
  } }, h("h2", {}, t("signIn")), h("p", {}, message), input, h("button", { class: "primary", type: "submit" }, t("signIn")));
  app.replaceChildren(header(""), form, toast);
  input.focus();
}

async function route() {
  try {
    await request("GET", "/api/status");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      signIn(apiKey() ? t("badKey") : t("keyNeeded"));
      return;
    }
  }
  const hash = location.hash || "#/chat";
  const docMatch = hash.match(/^#\/docs\/(.+)$/);
  if (hash.startsWith("#/knowledge") || docMatch) {
    knowledge = knowledge || new KnowledgeView(showError);
    app.replaceChildren(header("knowledge"), h("main", {}, knowledge.root), toast);
    await knowledge.render(docMatch ? decodeURIComponent(docMatch[1]) : null);
    return;
  }
  if (!chat) {
    chat = new ChatView(new Conversations(userTag()), showError);
    await chat.loadTools();
  }
  app.replaceChildren(header("chat"), h("main", {}, chat.root), toast);
  chat.render();
  chat.input.focus();
}

window.addEventListener("hashchange", route);
route();
