// Model output and document text are untrusted: Markdown is rendered, then sanitised by DOMPurify
// (no script, no event handlers, no javascript: links) before it touches the page.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import { Marked } from "marked";

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const language = lang && hljs.getLanguage(lang) ? lang : null;
      const html = language ? hljs.highlight(text, { language }).value : hljs.highlightAuto(text).value;
      return `<pre><code class="hljs${language ? " language-" + language : ""}">${html}</code></pre>`;
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

export function renderMarkdown(text) {
  const html = marked.parse(text || "", { async: false });
  return DOMPurify.sanitize(html, { FORBID_TAGS: ["style", "form", "input"], ALLOWED_URI_REGEXP: /^(?:https?|mailto|#|\/)/i });
}

/** What a reader sees of `text` on one line, at most `limit` characters: a title for a conversation
 * whose first question was "Research **Oslo**" reads "Research Oslo", not its Markdown. */
export function plainTitle(text, limit = 40) {
  const html = renderMarkdown(text);
  const plain = (new DOMParser().parseFromString(html, "text/html").body.textContent || "").replace(/\s+/g, " ").trim();
  const title = plain || (text || "").replace(/\s+/g, " ").trim();
  return title.length > limit ? `${title.slice(0, limit)}…` : title;
}
