// The chat view: the composer, the tool picker, and each answer with its route, live task graph,
// step trace and citations. The page names each task and asks the server to keep it running when
// the connection drops ("detach"); a stream that ends before its ``done`` event is followed again
// from the last event received (``Last-Event-ID``), a few times with a growing pause, and an answer
// whose stream could not be followed to the end says so. Leaving the page cancels a running task.
import { ApiError, StreamDropped, cancelOnUnload, listOf, newTaskId, request, stream } from "./api.js";
import { h, pretty } from "./dom.js";
import { TaskGraph } from "./graph.js";
import { t } from "./i18n.js";
import { plainTitle, renderMarkdown } from "./markdown.js";

const KEPT_EVENTS = new Set(["start", "route", "graph_ready", "node_added", "node_start", "node_done", "race_won", "replan",
  "step", "rag_result", "tool_call", "error", "approval_required", "approval_given", "plan"]);

/** The pauses before each attempt to follow a task again after its stream ended early. */
export const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000];

/** Screens this narrow (phones) get the compact layout (style.css has the same width). */
const NARROW = "(max-width: 700px)";

function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new DOMException("stopped", "AbortError"));
    }, { once: true });
  });
}

/** Whether following the task again may help after ``err`` (the network, or a proxy in front of a
 * server that is away); a refusal from the server itself ends the attempts. */
function worthRetrying(err) {
  return err instanceof StreamDropped || (err instanceof ApiError && [502, 503, 504].includes(err.status));
}

export class ChatView {
  constructor(conversations, onError) {
    this.conversations = conversations;
    this.onError = onError;
    this.tools = [];
    this.selected = new Set();
    this.running = null;
    this.views = new WeakMap();
    this.root = h("div", { class: "chat-view" });
    window.addEventListener("pagehide", () => {
      if (this.running && this.running.answer.state === "streaming") cancelOnUnload(this.running.answer.task_id);
    });
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
    this.sendBtn = h("button", { class: "primary", "data-testid": "send", disabled: !!this.running, onclick: () => this.send() }, t("send"));
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
      h("label", { for: "use-rag", title: t("useRagHelp"), "data-testid": "use-rag-label" }, this.ragBox, ` ${t("useRag")}`),
      h("details", { class: "tool-picker" }, h("summary", {}, `${t("tools")} (${this.tools.length})`), h("div", { class: "tool-list" }, toolBoxes)));
    this.listEl = h("nav", { class: "conversations", "aria-label": t("conversations") });
    this.menuEl = h("select", { class: "conv-menu", "aria-label": t("conversations"), "data-testid": "conversation-menu",
      onchange: (ev) => this.open(ev.target.value) });
    const bar = h("div", { class: "conv-bar" },
      h("button", { class: "new-chat", "data-testid": "new-chat-compact", onclick: () => this.newChat() }, `+ ${t("newChat")}`),
      this.menuEl);
    this.renderList();
    this.root.replaceChildren(this.listEl, h("div", { class: "chat-main" }, bar, this.messagesEl,
      h("div", { class: "composer" }, this.input, h("div", { class: "composer-actions" }, options, this.stopBtn, this.sendBtn))));
    this.scroll();
  }

  /** The conversations: the sidebar (wide screens) and the compact menu (narrow ones). */
  renderList() {
    const current = this.conversations.current;
    this.listEl.replaceChildren(
      h("button", { class: "new-chat", "data-testid": "new-chat", onclick: () => this.newChat() }, `+ ${t("newChat")}`),
      ...this.conversations.items.map((c) => h("button", {
        class: `conv${c.id === current.id ? " active" : ""}`, "data-conversation": c.id, onclick: () => this.open(c.id),
      }, c.title || t("newChat"))));
    this.menuEl.replaceChildren(...this.conversations.items.map((c) => h("option", {
      value: c.id, selected: c.id === current.id || null }, c.title || t("newChat"))));
    this.menuEl.value = current.id;
  }

  newChat() {
    this.conversations.create();
    this.render();
    this.input.focus();
  }

  open(id) {
    this.conversations.select(id);
    this.render();
  }

  scroll() {
    requestAnimationFrame(() => { this.messagesEl.scrollTop = this.messagesEl.scrollHeight; });
  }

  renderMessage(message) {
    if (message.role === "user") return h("div", { class: "message user" }, h("div", { class: "bubble" }, message.content));
    const view = new AnswerView(message, (nodeId, approve) => this.approve(message, nodeId, approve));
    for (const [type, data] of message.events || []) view.handle(type, data, false);
    view.setAnswer(message.content, message.interrupted);
    if (message.error) view.showError(message.error);
    const following = this.running && this.running.answer === message;
    if (!following && (message.state === "streaming" || message.state === "lost")) {
      view.setConnection("lost", message.task_id ? () => this.follow(message) : null);  // not followed to its end
    }
    this.views.set(message, view);
    return view.root;
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.running) return;
    const conv = this.conversations.current;
    if (!conv.title) {
      conv.title = plainTitle(text);
      this.renderList();
    }
    const user = { role: "user", content: text };
    const answer = { role: "assistant", content: "", events: [], task_id: newTaskId(), last_event_id: null, state: "streaming" };
    conv.messages.push(user, answer);
    this.input.value = "";
    this.messagesEl.append(this.renderMessage(user), this.renderMessage(answer));
    // Unticked: never the knowledge base; ticked: the router decides (true would force rag mode).
    const body = { message: text, task_id: answer.task_id, detach: true };
    if (!this.ragBox.checked) body.use_rag = false;
    if (this.modeSel.value) body.mode = this.modeSel.value;
    if (this.selected.size !== this.tools.length) body.selected_tools = [...this.selected];
    this.conversations.save();
    await this.run(answer, (onEvent, signal) => stream("POST", "/api/chat/stream", body, onEvent, signal));
  }

  /** Follows an answer whose stream ended early again, from the last event it received. */
  async follow(answer) {
    if (this.running) return;
    await this.run(answer, null);
  }

  /** Streams ``answer``'s task: first through ``open`` (the chat request), then, while the stream
   * ends without ``done``, through the task's event log from the last event received. */
  async run(answer, open) {
    const controller = new AbortController();
    this.running = { answer, controller };
    this.stopBtn.hidden = false;
    this.sendBtn.disabled = true;
    answer.state = "streaming";
    const view = () => this.views.get(answer);
    view().setConnection(open ? "" : "reconnecting");
    let tokens = answer.content || "";
    let received = false;
    const onEvent = (type, data, id) => {
      received = true;
      if (id) answer.last_event_id = id;
      if (type === "start" && data.restarted) {
        // Another worker took the task over and writes the answer again: the tokens so far are void.
        tokens = "";
        view().setAnswer(tokens, false, true);
      }
      if (type === "token") {
        tokens += data.content || "";
        view().setAnswer(tokens, false, true);
        this.scroll();
        return;
      }
      if (type === "done") {
        answer.state = "done";
        answer.content = data.answer ?? tokens;
        answer.mode = data.mode;
        answer.interrupted = !!data.interrupted;
        answer.task_id = data.task_id || answer.task_id;
        view().setConnection("");
        view().setAnswer(answer.content, answer.interrupted);
        view().finish(answer.task_id);
      }
      if (KEPT_EVENTS.has(type)) {
        answer.events.push([type, data]);
        view().handle(type, data, true);
      }
      this.scroll();
    };
    const again = (onEvent, signal) => stream("GET", `/api/tasks/${encodeURIComponent(answer.task_id)}/events`, undefined,
      onEvent, signal, answer.last_event_id);
    let failed = null;
    let refused = false;  // the chat request itself was refused: the task never started
    try {
      let attempt = 0;
      let connect = open || again;
      for (;;) {
        received = false;
        try {
          await connect(onEvent, controller.signal);
        } catch (err) {
          if (answer.state === "done" || err.name === "AbortError") break;
          if (!worthRetrying(err)) {
            // The server no longer knows the task (restarted): nothing more to follow, nothing to add.
            const gone = connect !== open && err instanceof ApiError && err.status === 404;
            failed = gone ? null : err;
            refused = connect === open && err instanceof ApiError;
            break;
          }
        }
        if (answer.state === "done") break;
        if (received) attempt = 0;  // it got further: the pauses start again
        if (attempt >= RECONNECT_DELAYS_MS.length) break;
        view().setConnection("reconnecting");
        await pause(RECONNECT_DELAYS_MS[attempt++], controller.signal);
        connect = again;
      }
    } catch (err) {
      if (err.name !== "AbortError") failed = err;
    } finally {
      if (refused) this.refuse(answer, failed);
      else if (answer.state !== "done") this.lose(answer, tokens, failed);
      this.running = null;
      this.stopBtn.hidden = true;
      this.sendBtn.disabled = false;
      this.conversations.save();
    }
  }

  /** The stream of ``answer`` ended before its ``done`` and could not be followed again: keep what
   * arrived, and say that it may be incomplete (with ``err`` when the server refused). */
  lose(answer, tokens, err) {
    answer.state = "lost";
    answer.content = tokens;
    const view = this.views.get(answer);
    view.setAnswer(tokens, false, true);
    view.setConnection("lost", () => this.follow(answer));
    if (err && !(err instanceof StreamDropped)) {
      view.showError(err.message);
      this.onError(err);
    }
  }

  /** The server refused the chat request (``err``): there is no answer to wait for. */
  refuse(answer, err) {
    answer.state = "failed";
    answer.error = err.message;
    this.views.get(answer).showError(err.message);
    this.onError(err);
  }

  async stop() {
    const running = this.running;
    if (!running) return;
    const cancel = () => request("POST", `/api/tasks/${encodeURIComponent(running.answer.task_id)}/cancel`);
    try {
      await cancel();
      return; // the stream ends with done (interrupted) by itself
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) this.onError(err);
      // Not started yet, or out of reach: stop following. The request may still be on its way and,
      // detached, start the task after this: ask once more a little later.
      else setTimeout(() => cancel().catch(() => {}), 1000);
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
    this.connection = h("div", { class: "connection", role: "status", hidden: true, "data-testid": "connection" });
    // The graph folds to one line (its progress) that opens it: open on a wide screen, folded on a
    // phone, where it would push the answer out of sight; a step that waits for approval opens it.
    this.graphSummary = h("summary", { "data-testid": "graph-toggle" });
    this.graphFold = h("details", { class: "graph-fold", "data-testid": "graph-fold", hidden: true,
      open: !window.matchMedia(NARROW).matches }, this.graphSummary, this.graph.root);
    this.root = h("div", { class: "message assistant" }, this.routeEl, this.graphFold, this.traceBox, this.errors, this.connection, this.answerEl, this.citations);
  }

  /** The fold's line: "Task graph · 4 steps · 3 done · 1 skipped", the states as the nodes show them. */
  summarise() {
    const counts = new Map();
    for (const node of this.graph.nodes.values()) counts.set(node.status, (counts.get(node.status) || 0) + 1);
    const states = ["done", "running", "waiting", "failed", "skipped", "cancelled", "pending"].filter((s) => counts.has(s));
    this.graphSummary.replaceChildren(h("strong", {}, t("plan")), ` · ${this.graph.nodes.size} ${t("steps")}`,
      ...states.map((s) => h("span", { class: `fold-state status-${s}` }, ` · ${counts.get(s)} ${s}`)));
  }

  handle(type, data, live) {
    if (this.graph.handle(type, data)) {
      this.graphFold.hidden = this.graph.empty;
      this.summarise();
    }
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
    if (live && type === "approval_required") {
      this.graphFold.open = true;
      this.graph.select(String(data.node_id));
    }
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

  /** An error line above the answer; what was streamed of the answer stays. */
  showError(message) {
    this.errors.append(h("div", { class: "error-line" }, message));
    if (this.answerEl.querySelector(".thinking")) this.answerEl.replaceChildren();
  }

  /** The stream's state when it is not simply running: "reconnecting" (following the task again),
   * "lost" (it ended before the answer was done and could not be followed again; ``retry`` follows
   * it once more), or "" (nothing to say). */
  setConnection(state, retry = null) {
    this.root.dataset.connection = state;
    if (!state) {
      this.connection.hidden = true;
      this.connection.replaceChildren();
      return;
    }
    if (state === "lost" && this.answerEl.querySelector(".thinking")) this.answerEl.replaceChildren();
    const heard = this.message.last_event_id !== null && this.message.last_event_id !== undefined;
    const text = state === "reconnecting" ? t("reconnecting") : heard ? t("connectionLost") : t("unreachable");
    this.connection.hidden = false;
    this.connection.className = `connection ${state}`;
    const button = state === "lost" && retry ? [h("button", { class: "small", "data-testid": "reconnect", onclick: retry }, t("reconnect"))] : [];
    this.connection.replaceChildren(h("span", {}, text), ...button);
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
