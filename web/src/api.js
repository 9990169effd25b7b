// The server's HTTP API: JSON requests with the signed-in key, and SSE streams read with fetch
// (the chat stream is a POST, which EventSource cannot send) through eventsource-parser.
import { createParser } from "eventsource-parser";

const KEY = "saber.apiKey";

export function apiKey() {
  return localStorage.getItem(KEY) || "";
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY, key);
  else localStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const out = { ...extra };
  const key = apiKey();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function failure(response) {
  let code = `http_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    /* not JSON: keep the status text */
  }
  return new ApiError(response.status, code, message);
}

export async function request(method, path, body) {
  const init = { method, headers: headers() };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/** POSTs (or GETs) and calls onEvent(type, data, id) for each SSE event until the stream ends. */
export async function stream(method, path, body, onEvent, signal) {
  const init = { method, headers: headers({ Accept: "text/event-stream" }), signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  const parser = createParser({
    onEvent(event) {
      let data = event.data;
      try {
        data = JSON.parse(event.data);
      } catch {
        /* keep the raw text */
      }
      onEvent(event.event || "message", data, event.id);
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
}

/** Uploads one file with progress (fetch cannot report upload progress; XMLHttpRequest can). */
export function upload(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/documents");
    const key = apiKey();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else {
        const err = body && body.error ? body.error : { code: `http_${xhr.status}`, message: xhr.statusText || `HTTP ${xhr.status}` };
        reject(new ApiError(xhr.status, err.code, err.message));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, "network", "network error"));
    const form = new FormData();
    form.append("files", file, file.name);
    xhr.send(form);
  });
}

export function listOf(body, key) {
  if (Array.isArray(body)) return body;
  if (body && Array.isArray(body[key])) return body[key];
  if (body && Array.isArray(body.items)) return body.items;
  return [];
}
