// The knowledge base page: upload (drag and drop, several files, progress, per-file errors, and
// what the server did with each: added, a new version, unchanged), list, open and delete documents. An upload is keyword-searchable at once; its vectors are filled
// in the background, so while any document's are pending (and the page is shown) the list is
// asked again every POLL_MS and each such document shows how far its vectors are. When the server
// says the fill is failing (doc.vectors.state "failing": the embedder or the store keeps failing),
// the row says why and whether it is retried, and the list is asked again less often (POLL_FAILING_MS).
import { listOf, request, upload } from "./api.js";
import { h } from "./dom.js";
import { currentLang, t } from "./i18n.js";

const POLL_MS = 2000;
const POLL_FAILING_MS = 10000;
const POLL_MAX_MS = 30000;

/** {done, total} of a document whose vectors are still being filled; null when there is no bar
 * to show (done, not indexed, no chunks, or counts the page cannot make sense of). */
export function vectorProgress(doc) {
  const total = Number(doc && doc.chunks);
  if (!doc || doc.search !== "keyword" || !Number.isFinite(total) || total <= 0) return null;
  const embedded = Number(doc.embedded_chunks);
  const done = Math.min(Math.max(Number.isFinite(embedded) ? Math.floor(embedded) : 0, 0), total);
  return done < total ? { done, total } : null;
}

/** {error, retrying} when the server says the vector fill of ``doc`` is failing; else null. */
export function vectorFailure(doc) {
  const fill = doc && doc.vectors;
  if (!fill || typeof fill !== "object" || fill.state !== "failing") return null;
  const error = typeof fill.error === "string" && fill.error.trim() ? fill.error.trim() : "";
  return { error, retrying: Number.isFinite(fill.retry_in_s) };
}

function count(n) {
  return new Intl.NumberFormat(currentLang() === "zh" ? "zh-CN" : "en-US").format(n);
}

export class KnowledgeView {
  constructor(onError) {
    this.onError = onError;
    this.root = h("div", { class: "knowledge-view" });
    this.rows = new Map();
    this.timer = null;
    this.seq = 0;
    this.pending = false;
    this.failing = false;
    this.failures = 0;
    document.addEventListener("visibilitychange", () => {
      if (this.pending && this.timer === null && this.shown()) this.poll();
    });
  }

  /** The page is on screen: the view is in the document and the tab is not hidden. */
  shown() {
    return this.root.isConnected && document.visibilityState !== "hidden";
  }

  async render(openId) {
    const input = h("input", { type: "file", multiple: true, hidden: true, "data-testid": "file-input",
      onchange: (ev) => {
        const files = [...ev.target.files];
        ev.target.value = "";  // choosing the same file again is a change too
        this.uploadAll(files);
      } });
    this.progress = h("ul", { class: "uploads", "data-testid": "uploads" });
    const drop = h("div", {
      class: "dropzone", tabindex: 0, role: "button", "data-testid": "dropzone",
      onclick: () => input.click(),
      onkeydown: (ev) => (ev.key === "Enter" || ev.key === " ") && (ev.preventDefault(), input.click()),
      ondragover: (ev) => { ev.preventDefault(); drop.classList.add("over"); },
      ondragleave: () => drop.classList.remove("over"),
      ondrop: (ev) => { ev.preventDefault(); drop.classList.remove("over"); this.uploadAll([...ev.dataTransfer.files]); },
    }, t("upload"));
    this.list = h("table", { class: "documents", "data-testid": "documents", "data-polling": "false", "data-poll-ms": "" });
    this.rows = new Map();
    this.viewer = h("article", { class: "doc-viewer", hidden: true, "data-testid": "doc-viewer" });
    this.root.replaceChildren(h("h2", {}, t("knowledge")), drop, input, this.progress, h("h3", {}, t("documents")), this.list, this.viewer);
    await this.refresh();
    if (openId) await this.open(openId);
  }

  async uploadAll(files) {
    await Promise.all(files.map(async (file) => {
      const bar = h("progress", { max: 1, value: 0 });
      const status = h("span", { class: "status" }, t("uploading"));
      const row = h("li", { "data-file": file.name }, h("span", { class: "name" }, file.name), bar, status);
      this.progress.append(row);
      try {
        const body = await upload(file, (fraction) => { bar.value = fraction; });
        bar.value = 1;
        const said = body?.files?.[0]?.status;  // added, updated or unchanged (a failed file is an error answer)
        status.textContent = said ? t(`upload_${said}`).replace(/^upload_/, "") : t("uploaded");
        row.dataset.state = "done";
        row.dataset.status = said || "";
      } catch (err) {
        status.textContent = `${t("failed")}: ${err.message}`;
        row.dataset.state = "failed";
        row.classList.add("failed");
      }
    }));
    await this.refresh();
  }

  async refresh({ polled = false } = {}) {
    const seq = ++this.seq;
    let docs;
    try {
      docs = listOf(await request("GET", "/api/documents"), "documents");
    } catch (err) {
      if (seq !== this.seq) return;
      this.failures += 1;
      if (!polled || this.failures === 1) this.onError(err);
      if (polled) this.schedule(this.pending);  // keep what is shown; ask again, less often
      else this.show([]);
      return;
    }
    if (seq !== this.seq) return;  // a newer refresh started meanwhile: its answer is the one to show
    this.failures = 0;
    this.show(docs);
  }

  show(docs) {
    this.pending = docs.some((doc) => vectorProgress(doc) !== null);
    this.failing = docs.some((doc) => vectorProgress(doc) !== null && vectorFailure(doc) !== null);
    if (!docs.length) {
      this.rows = new Map();
      this.list.replaceChildren(h("tr", {}, h("td", {}, t("empty"))));
    } else {
      const rows = new Map(docs.map((doc) => [doc.id, this.row(doc)]));
      const order = [...rows.values()].map((entry) => entry.tr);
      const kept = order.length === this.list.children.length && order.every((tr, i) => this.list.children[i] === tr);
      if (!kept) this.list.replaceChildren(...order);  // else rows were updated in place (focus and hover stay)
      this.rows = rows;
    }
    this.schedule(this.pending);
  }

  /** The row of ``doc``: the one already shown for it, updated, or a new one. */
  row(doc) {
    let entry = this.rows.get(doc.id);
    if (!entry) {
      entry = { doc };
      entry.link = h("a", { href: `#/docs/${encodeURIComponent(doc.id)}` });
      entry.vectors = h("div", { class: "vectors", "data-testid": "vectors" });
      entry.chunks = h("td", { class: "num" });
      entry.shared = h("span", { class: "badge shared", "data-testid": "shared", title: t("sharedHelp") }, t("shared"));
      entry.remove = h("button", { class: "danger small", "data-testid": "delete", onclick: () => this.remove(entry.doc) },
        t("delete"));
      entry.tr = h("tr", { "data-document-id": doc.id }, h("td", {}, entry.link, " ", entry.shared, entry.vectors),
        entry.chunks, h("td", {}, entry.remove));
    }
    entry.doc = doc;
    entry.link.textContent = doc.title || doc.id;
    // a shared document (saber ingest's) is searched for everyone; only an admin may delete it
    entry.shared.hidden = doc.shared !== true;
    entry.remove.hidden = doc.deletable === false;
    entry.tr.dataset.shared = String(doc.shared === true);
    entry.chunks.textContent = Number.isFinite(doc.chunks) ? `${count(doc.chunks)} ${t(doc.chunks === 1 ? "chunk" : "chunks")}` : "";
    entry.tr.dataset.search = doc.search || "none";
    const progress = vectorProgress(doc);
    const failure = progress === null ? null : vectorFailure(doc);
    entry.vectors.hidden = progress === null;
    entry.vectors.dataset.state = failure ? "failing" : progress ? "pending" : "";
    if (progress === null) entry.vectors.replaceChildren();
    else {
      const label = `${t("vectors")} ${count(progress.done)} / ${count(progress.total)}`;
      const bar = h("progress", { max: progress.total, value: progress.done, "aria-label": label });
      if (!failure) entry.vectors.replaceChildren(bar, h("span", {}, `${label} · ${t("keywordUntilDone")}`));
      else {
        const why = failure.error ? `${t("embeddingFailing")}: ${failure.error}` : t("embeddingFailing");
        entry.vectors.replaceChildren(bar, h("span", {}, `${label} · `,
          h("span", { class: "vector-error", "data-testid": "vector-error" }, why),
          failure.retrying ? ` · ${t("retrying")}` : ""));
      }
    }
    return entry;
  }

  /** Ask for the list again later while some document's vectors are pending and the page is shown. */
  schedule(pending) {
    clearTimeout(this.timer);
    this.timer = null;
    const polling = pending && this.shown();
    const delay = Math.min((this.failing ? POLL_FAILING_MS : POLL_MS) * 2 ** this.failures, POLL_MAX_MS);
    this.list.dataset.polling = String(polling);
    this.list.dataset.pollMs = polling ? String(delay) : "";
    if (polling) this.timer = setTimeout(() => this.poll(), delay);
  }

  poll() {
    this.timer = null;
    if (!this.shown()) {  // another page or a hidden tab: asked again when shown
      this.list.dataset.polling = "false";
      return;
    }
    this.refresh({ polled: true });
  }

  async open(id) {
    try {
      const doc = await request("GET", `/api/documents/${encodeURIComponent(id)}`);
      const text = doc.text ?? doc.content ?? "";
      this.viewer.hidden = false;
      this.viewer.replaceChildren(h("header", {}, h("h3", {}, doc.title || id),
        h("a", { href: "#/knowledge", class: "link" }, t("close"))), h("pre", { class: "doc-text" }, text));
      this.viewer.scrollIntoView({ block: "start" });
    } catch (err) {
      this.onError(err);
    }
  }

  async remove(doc) {
    if (!window.confirm(`${t("confirmDelete")}\n${doc.title || doc.id}`)) return;
    try {
      await request("DELETE", `/api/documents/${encodeURIComponent(doc.id)}`);
    } catch (err) {
      this.onError(err);
    }
    await this.refresh();
  }
}
