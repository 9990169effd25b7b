// The chat view: the composer, the tool picker, and each answer with its route, live task graph,
// step trace and citations.
import { request, stream, listOf } from "./api.js";
import { h, pretty } from "./dom.js";
import { TaskGraph } from "./graph.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";

const KEPT_EVENTS = new Set(["start", "route", "graph_ready", "node_added", "node_start", "node_done", "race_won", "replan",
  "step", "rag_result", "tool_call", "error", "approval_required", "approval_given", "plan"]);

export class ChatView {
  constructor(conversations, onError) {
    this.conversations = conversations;
    this.onError = onError;
    this.tools = [];
    this.selected = new Set();
    this.running = null;
    this.views = new WeakMap();
    this.root = h("div", { class: "chat-view" });
  }

  async loadTools() {
    try {
      this.tools = listOf(await request("GET", "/api/tools"), "tools");
      this.selected = new Set(this.tools.map((tool) => tool.name));
    } catch (err) {
      this.onError(err);
    }
  }

  render() {
    const conv = this.conversations.current;
    this.messagesEl = h("div", { class: "messages", "data-testid": "messages" });
    for (const message of conv.messages) this.messagesEl.append(this.renderMessage(message));
    this.input = h("textarea", {
      rows: 2, placeholder: t("placeholder"), "aria-label": t("placeholder"), "data-testid": "composer",
      onkeydown: (ev) => {
        if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
          ev.preventDefault();
          this.send();
        }
      },
    });
    this.sendBtn = h("button", { class: "primary", "data-testid": "send", onclick: () => this.send() }, t("send"));
    this.stopBtn = h("button", { class: "danger", "data-testid": "stop", hidden: !this.running, onclick: () => this.stop() }, t("stop"));
    this.modeSel = h("select", { "aria-label": t("mode"), "data-testid": "mode" },
      ...["", "chat", "tool", "rag", "react"].map((m) => h("option", { value: m }, m || t("auto"))));
    this.ragBox = h("input", { type: "checkbox", checked: true, id: "use-rag", "data-testid": "use-rag" });
    const toolBoxes = this.tools.map((tool) => h("label", { class: "tool-choice", title: tool.description || "" },
      h("input", { type: "checkbox", checked: this.selected.has(tool.name), "data-tool": tool.name,
        onchange: (ev) => (ev.target.checked ? this.selected.add(tool.name) : this.selected.delete(tool.name)) }),
      tool.name));
    const options = h("div", { class: "options" },
      h("label", {}, `${t("mode")} `, this.modeSel),
      h("label", { for: "use-rag" }, this.ragBox, ` ${t("useRag")}`),
      h("details", { class: "tool-picker" }, h("summary", {}, `${t("tools")} (${this.tools.length})`), h("div", { class: "tool-list" }, toolBoxes)));
    const list = h("nav", { class: "conversations", "aria-label": t("conversations") },
      h("button", { class: "new-chat", onclick: () => { this.conversations.create(); this.render(); } }, `+ ${t("newChat")}`),
      ...this.conversations.items.map((c) => h("button", {
        class: `conv${c.id === conv.id ? " active" : ""}`, onclick: () => { this.conversations.select(c.id); this.render(); },
      }, c.title || t("newChat"))));
    this.root.replaceChildren(list, h("div", { class: "chat-main" }, this.messagesEl,
      h("div", { class: "composer" }, this.input, h("div", { class: "composer-actions" }, options, this.stopBtn, this.sendBtn))));
    this.scroll();
  }

  scroll() {
    requestAnimationFrame(() => { this.messagesEl.scrollTop = this.messagesEl.scrollHeight; });
  }

  renderMessage(message) {
    if (message.role === "user") return h("div", { class: "message user" }, h("div", { class: "bubble" }, message.content));
    const view = new AnswerView(message, (nodeId, approve) => this.approve(message, nodeId, approve));
    for (const [type, data] of message.events || []) view.handle(type, data, false);
    view.setAnswer(message.content, message.interrupted);
    this.views.set(message, view);
    return view.root;
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.running) return;
    const conv = this.conversations.current;
    if (!conv.title) conv.title = text.slice(0, 40);
    const user = { role: "user", content: text };
    const answer = { role: "assistant", content: "", events: [], task_id: null };
    conv.messages.push(user, answer);
    this.input.value = "";
    this.messagesEl.append(this.renderMessage(user), this.renderMessage(answer));
    const body = { message: text, use_rag: this.ragBox.checked };
    if (this.modeSel.value) body.mode = this.modeSel.value;
    if (this.selected.size !== this.tools.length) body.selected_tools = [...this.selected];
    const controller = new AbortController();
    this.running = { answer, controller };
    this.stopBtn.hidden = false;
    this.sendBtn.disabled = true;
    let tokens = "";
    try {
      await stream("POST", "/api/chat/stream", body, (type, data) => {
        if (type === "start") answer.task_id = data.task_id;
        if (type === "token") {
          tokens += data.content || "";
          this.views.get(answer).setAnswer(tokens, false, true);
          this.scroll();
          return;
        }
        if (type === "done") {
          answer.content = data.answer ?? tokens;
          answer.mode = data.mode;
          answer.interrupted = !!data.interrupted;
          answer.task_id = data.task_id || answer.task_id;
          this.views.get(answer).setAnswer(answer.content, answer.interrupted);
          this.views.get(answer).finish(answer.task_id);
        }
        if (KEPT_EVENTS.has(type)) {
          answer.events.push([type, data]);
          this.views.get(answer).handle(type, data, true);
        }
        this.scroll();
      }, controller.signal);
    } catch (err) {
      if (err.name !== "AbortError") {
        this.views.get(answer).showError(err.message);
        this.onError(err);
      }
    } finally {
      this.running = null;
      this.stopBtn.hidden = true;
      this.sendBtn.disabled = false;
      this.conversations.save();
    }
  }

  async stop() {
    const running = this.running;
    if (!running) return;
    if (running.answer.task_id) {
      try {
        await request("POST", `/api/tasks/${encodeURIComponent(running.answer.task_id)}/cancel`);
        return; // the stream ends with done (interrupted) by itself
      } catch (err) {
        this.onError(err);
      }
    }
    running.controller.abort();
  }

  async approve(message, nodeId, approve) {
    try {
      await request("POST", `/api/tasks/${encodeURIComponent(message.task_id)}/approvals/${encodeURIComponent(nodeId)}`, { approve });
    } catch (err) {
      this.onError(err);
    }
  }
}

class AnswerView {
  constructor(message, onApprove) {
    this.message = message;
    this.graph = new TaskGraph(onApprove);
    this.routeEl = h("div", { class: "route", "data-testid": "route" });
    this.trace = h("ol", { class: "trace" });
    this.traceBox = h("details", { class: "trace-box", hidden: true }, h("summary", {}, t("trace")), this.trace);
    this.answerEl = h("div", { class: "answer markdown", "data-testid": "answer" }, h("span", { class: "thinking" }, t("thinking")));
    this.citations = h("div", { class: "citations", hidden: true, "data-testid": "citations" });
    this.errors = h("div", { class: "errors" });
    this.graph.root.hidden = true;
    this.root = h("div", { class: "message assistant" }, this.routeEl, this.graph.root, this.traceBox, this.errors, this.answerEl, this.citations);
  }

  handle(type, data, live) {
    if (this.graph.handle(type, data)) this.graph.root.hidden = this.graph.empty;
    if (type === "route") {
      this.routeEl.replaceChildren(h("span", { class: "badge mode" }, data.mode), " ", h("span", { class: "rule" }, data.rule || ""),
        data.tools && data.tools.length ? h("span", { class: "route-tools" }, ` · ${data.tools.join(", ")}`) : null);
    } else if (type === "step") {
      this.traceBox.hidden = false;
      this.trace.append(h("li", { class: `step step-${data.type}` }, h("b", {}, data.type), " ",
        data.tool ? h("code", {}, data.tool) : null, " ", String(data.content || "").slice(0, 600)));
    } else if (type === "tool_call") {
      this.traceBox.hidden = false;
      this.trace.append(h("li", { class: "step" }, h("b", {}, "tool"), " ", h("code", {}, data.tool_name), " ", pretty(data.params)));
    } else if (type === "replan") {
      this.traceBox.hidden = false;
      this.trace.append(h("li", { class: "step" }, h("b", {}, "replan"), " ", data.reason || ""));
      if (live) this.finish(this.message.task_id); // the added nodes' definitions, drawn in place
    } else if (type === "error") {
      this.errors.append(h("div", { class: "error-line" }, `${t("error")} (${data.where}): ${data.message}`));
    } else if (type === "rag_result") {
      this.showCitations(data.hits || []);
    }
    if (live && type === "approval_required") this.graph.select(String(data.node_id));
  }

  showCitations(hits) {
    if (!hits.length) return;
    this.citations.hidden = false;
    this.citations.replaceChildren(h("h4", {}, t("citations")), ...hits.map((hit, i) => h("details", { class: "citation", "data-document-id": hit.document_id },
      h("summary", {}, `[${i + 1}] `, h("a", { href: `#/docs/${encodeURIComponent(hit.document_id)}` }, hit.title || hit.document_id),
        typeof hit.score === "number" ? h("span", { class: "score" }, ` ${t("score")} ${hit.score.toFixed(3)}`) : null),
      h("p", { class: "chunk" }, hit.chunk || ""))));
  }

  setAnswer(text, interrupted, streaming = false) {
    if (!text && streaming) return;
    this.answerEl.innerHTML = renderMarkdown(text || "");
    if (interrupted) this.answerEl.prepend(h("p", { class: "interrupted" }, t("interrupted")));
  }

  showError(message) {
    this.errors.append(h("div", { class: "error-line" }, message));
    this.answerEl.replaceChildren();
  }

  async finish(taskId) {
    if (this.graph.empty || !taskId) return;
    try {
      this.graph.merge(await request("GET", `/api/tasks/${encodeURIComponent(taskId)}`));
    } catch {
      /* the live events already drew the graph */
    }
  }
}
