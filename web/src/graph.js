// The live task graph: nodes and dependency edges laid out left to right by dagre, race groups
// drawn as clusters with the winner marked, each node's state changed as events arrive.
import dagre from "@dagrejs/dagre";
import { h, pretty, svg } from "./dom.js";
import { t } from "./i18n.js";

const NODE_W = 168;
const NODE_H = 50;
/** The smallest a graph is shrunk to fit a narrow panel (its text stays readable); wider ones scroll. */
const MIN_SCALE = 0.6;

export class TaskGraph {
  constructor(onApprove) {
    this.nodes = new Map();
    this.order = [];
    this.winners = new Map();
    this.selected = null;
    this.onApprove = onApprove;
    this.el = h("div", { class: "graph", "data-testid": "graph" });
    this.detail = h("div", { class: "node-detail", hidden: true });
    this.root = h("section", { class: "graph-panel" }, this.el, this.detail);
  }

  get empty() {
    return this.nodes.size === 0;
  }

  /** A node as the runtime describes it (Node.to_dict); unknown ones are added, known ones updated. */
  upsert(raw) {
    const id = String(raw.id);
    const node = this.nodes.get(id) || { id, status: "pending", attempts: 0 };
    Object.assign(node, {
      tool: raw.tool ?? node.tool,
      agent: raw.agent ?? node.agent,
      type: raw.type ?? node.type ?? "tool",
      params: raw.params ?? node.params,
      depends_on: (raw.depends_on ?? node.depends_on ?? []).map(String),
      race_group: raw.race_group ?? node.race_group ?? null,
    });
    if (raw.status) node.status = raw.status;
    if (!this.nodes.has(id)) this.order.push(id);
    this.nodes.set(id, node);
    return node;
  }

  handle(type, data) {
    switch (type) {
      case "graph_ready":
        for (const raw of data.nodes || []) this.upsert(raw);
        break;
      case "node_added":
        this.upsert(data.node || data);
        break;
      case "node_start": {
        const node = this.nodes.get(String(data.id)) || this.upsert({ id: data.id, tool: data.tool });
        node.status = "running";
        node.attempts = Math.max(node.attempts || 0, data.attempt || 1);
        break;
      }
      case "node_done": {
        const node = this.nodes.get(String(data.id)) || this.upsert({ id: data.id, tool: data.tool });
        node.status = data.status;
        node.duration_ms = data.duration_ms;
        if (data.attempts) node.attempts = data.attempts;
        if (data.error) node.error = data.error;
        break;
      }
      case "race_won":
        this.winners.set(String(data.race_group), String(data.winner));
        break;
      case "step":
        if (data.node_id && data.type === "observation" && this.nodes.has(String(data.node_id))) {
          this.nodes.get(String(data.node_id)).result = data.content;
        }
        break;
      case "approval_required": {
        const node = this.nodes.get(String(data.node_id));
        if (node) {
          node.status = "waiting";
          node.approval = data;
        }
        break;
      }
      case "approval_given": {
        const node = this.nodes.get(String(data.node_id));
        if (node) {
          node.approval = null;
          if (!data.approved) node.error = data.reason || "denied";
          if (node.status === "waiting") node.status = data.approved ? "pending" : "failed";
        }
        break;
      }
      case "done":
        for (const node of this.nodes.values()) {
          if (node.status === "running" || node.status === "pending" || node.status === "waiting") {
            if (data.interrupted) node.status = "cancelled";
          }
        }
        break;
      default:
        return false;
    }
    this.render();
    return true;
  }

  /** Fills results and errors from GET /api/tasks/{id} once the task has ended. */
  merge(task) {
    for (const raw of (task && task.nodes) || []) {
      const node = this.upsert(raw);
      for (const key of ["status", "result", "error", "attempts", "duration_ms"]) {
        if (raw[key] !== undefined && raw[key] !== null) node[key] = raw[key];
      }
    }
    this.render();
  }

  layout() {
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
    g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 46, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(() => ({}));
    const groups = new Map();
    for (const id of this.order) {
      const node = this.nodes.get(id);
      g.setNode(id, { width: NODE_W, height: NODE_H });
      if (node.race_group) {
        const gid = `race:${node.race_group}`;
        if (!groups.has(node.race_group)) {
          groups.set(node.race_group, []);
          g.setNode(gid, { label: node.race_group, paddingTop: 22, paddingLeft: 10, paddingRight: 10, paddingBottom: 10 });
        }
        groups.get(node.race_group).push(id);
        g.setParent(id, gid);
      }
    }
    for (const id of this.order) {
      for (const dep of this.nodes.get(id).depends_on || []) {
        const sources = this.nodes.has(dep) ? [dep] : groups.get(dep) || [];
        for (const src of sources) if (src !== id) g.setEdge(src, id);
      }
    }
    dagre.layout(g);
    return { g, groups };
  }

  render() {
    this.el.replaceChildren();
    if (this.empty) return;
    const { g, groups } = this.layout();
    const box = g.graph();
    // Drawn at its own size where it fits, shrunk to the panel's width where not (a phone), down
    // to MIN_SCALE; past that the panel scrolls sideways (the page never does).
    const root = svg("svg", {
      viewBox: `0 0 ${Math.max(box.width, 10)} ${Math.max(box.height, 10)}`,
      width: box.width, height: box.height, role: "img", "aria-label": t("plan"),
      style: `min-width: ${Math.round(box.width * MIN_SCALE)}px`,
    });
    root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
    for (const [name, members] of groups) {
      const c = g.node(`race:${name}`);
      const winner = this.winners.get(name);
      root.append(svg("g", { class: "race-group", "data-race-group": name, "data-winner": winner || "" },
        svg("rect", { x: c.x - c.width / 2, y: c.y - c.height / 2, width: c.width, height: c.height, rx: 10 }),
        svg("text", { x: c.x - c.width / 2 + 8, y: c.y - c.height / 2 + 15, class: "race-label" },
          `race ${name}${winner ? ` · ${t("winner")}: ${winner}` : ` · ${members.length}`}`)));
    }
    for (const e of g.edges()) {
      const pts = g.edge(e).points || [];
      if (!pts.length) continue;
      const d = pts.map((p, i) => `${i ? "L" : "M"} ${p.x} ${p.y}`).join(" ");
      const done = this.nodes.get(e.v)?.status === "done";
      root.append(svg("path", { d, class: `edge${done ? " edge-done" : ""}`, "marker-end": "url(#arrow)", "data-from": e.v, "data-to": e.w }));
    }
    for (const id of this.order) {
      const n = this.nodes.get(id);
      const p = g.node(id);
      const isWinner = n.race_group && this.winners.get(n.race_group) === id;
      const label = n.type === "sub_agent" ? `@${n.agent || n.tool || "agent"}` : n.tool || "?";
      const meta = [n.status, n.attempts > 1 ? `${n.attempts} ${t("attempts")}` : "", n.duration_ms != null ? `${Math.round(n.duration_ms)} ms` : ""]
        .filter(Boolean).join(" · ");
      const el = svg("g", {
        class: `node status-${n.status}${isWinner ? " winner" : ""}${this.selected === id ? " selected" : ""}`,
        "data-node-id": id, "data-status": n.status, "data-winner": isWinner ? "true" : null,
        tabindex: 0, role: "button", "aria-label": `${id} ${label} ${n.status}`,
        transform: `translate(${p.x - NODE_W / 2}, ${p.y - NODE_H / 2})`,
        onclick: () => this.select(id),
        onkeydown: (ev) => (ev.key === "Enter" || ev.key === " ") && (ev.preventDefault(), this.select(id)),
      },
      svg("rect", { width: NODE_W, height: NODE_H, rx: 8 }),
      svg("text", { x: 10, y: 20, class: "node-title" }, `${id} · ${label}`.slice(0, 26)),
      svg("text", { x: 10, y: 38, class: "node-meta" }, (isWinner ? `★ ${meta}` : meta).slice(0, 30)));
      root.append(el);
    }
    this.el.append(root);
    if (this.selected) this.showDetail(this.selected);
  }

  select(id) {
    this.selected = this.selected === id ? null : id;
    this.render();
    if (!this.selected) this.detail.hidden = true;
  }

  showDetail(id) {
    const n = this.nodes.get(id);
    if (!n) return;
    const approval = n.approval
      ? h("div", { class: "approval" }, h("strong", {}, t("approvalNeeded")), n.approval.reason ? h("p", {}, n.approval.reason) : null,
        h("button", { class: "approve", onclick: () => this.onApprove(id, true) }, t("approve")),
        h("button", { class: "deny", onclick: () => this.onApprove(id, false) }, t("deny")))
      : null;
    this.detail.replaceChildren(...[
      h("header", {}, h("strong", {}, `${id} · ${n.tool || n.agent || ""}`), h("span", { class: `badge status-${n.status}` }, n.status),
        h("button", { class: "link", onclick: () => this.select(id), "aria-label": t("close") }, "×")),
      approval,
      h("h4", {}, t("params")), h("pre", {}, pretty(n.params ?? {})),
      n.error ? [h("h4", {}, t("error")), h("pre", { class: "error" }, pretty(n.error))] : null,
      n.result !== undefined && n.result !== null ? [h("h4", {}, t("result")), h("pre", {}, pretty(n.result))] : null,
    ].flat().filter(Boolean));
    this.detail.hidden = false;
  }
}
