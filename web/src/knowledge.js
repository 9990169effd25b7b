// The knowledge base page: upload (drag and drop, several files, progress, per-file errors),
// list, open and delete documents.
import { listOf, request, upload } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";

export class KnowledgeView {
  constructor(onError) {
    this.onError = onError;
    this.root = h("div", { class: "knowledge-view" });
  }

  async render(openId) {
    const input = h("input", { type: "file", multiple: true, hidden: true, "data-testid": "file-input",
      onchange: (ev) => this.uploadAll([...ev.target.files]) });
    this.progress = h("ul", { class: "uploads", "data-testid": "uploads" });
    const drop = h("div", {
      class: "dropzone", tabindex: 0, role: "button", "data-testid": "dropzone",
      onclick: () => input.click(),
      onkeydown: (ev) => (ev.key === "Enter" || ev.key === " ") && (ev.preventDefault(), input.click()),
      ondragover: (ev) => { ev.preventDefault(); drop.classList.add("over"); },
      ondragleave: () => drop.classList.remove("over"),
      ondrop: (ev) => { ev.preventDefault(); drop.classList.remove("over"); this.uploadAll([...ev.dataTransfer.files]); },
    }, t("upload"));
    this.list = h("table", { class: "documents", "data-testid": "documents" });
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
        await upload(file, (fraction) => { bar.value = fraction; });
        bar.value = 1;
        status.textContent = t("uploaded");
        row.dataset.state = "done";
      } catch (err) {
        status.textContent = `${t("failed")}: ${err.message}`;
        row.dataset.state = "failed";
        row.classList.add("failed");
      }
    }));
    await this.refresh();
  }

  async refresh() {
    let docs = [];
    try {
      docs = listOf(await request("GET", "/api/documents"), "documents");
    } catch (err) {
      this.onError(err);
    }
    if (!docs.length) {
      this.list.replaceChildren(h("tr", {}, h("td", {}, t("empty"))));
      return;
    }
    this.list.replaceChildren(...docs.map((doc) => h("tr", { "data-document-id": doc.id },
      h("td", {}, h("a", { href: `#/docs/${encodeURIComponent(doc.id)}` }, doc.title || doc.id)),
      h("td", { class: "num" }, doc.chunks != null ? `${doc.chunks} ${t("chunks")}` : ""),
      h("td", {}, h("button", { class: "danger small", onclick: () => this.remove(doc) }, t("delete"))))));
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
