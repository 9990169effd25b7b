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

/** POSTs (or GETs) and calls onEvent(type, data, id) for each SSE event until the stream ends.
 * ``lastEventId`` asks the server to replay only the events after it. A connection that drops
 * mid-stream rejects with a StreamDropped; a stream the server closed returns normally (whether
 * its last event was ``done`` is for the caller to check). */
export async function stream(method, path, body, onEvent, signal, lastEventId) {
  const init = { method, headers: headers({ Accept: "text/event-stream" }), signal };
  if (lastEventId !== undefined && lastEventId !== null) init.headers["Last-Event-ID"] = String(lastEventId);
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw err.name === "AbortError" ? err : new StreamDropped(err.message);
  }
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
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw err.name === "AbortError" ? err : new StreamDropped(err.message);
    }
    if (chunk.done) break;
    parser.feed(chunk.value);
  }
}

/** The connection failed (no answer, or dropped mid-stream): the server may still be running the task. */
export class StreamDropped extends Error {
  constructor(message) {
    super(message || "network error");
    this.name = "StreamDropped";
  }
}

/** A new task id (the page names its tasks, so it can cancel or follow one before the server says). */
export function newTaskId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Cancels a task as the page goes away: a request the browser sends even while unloading. */
export function cancelOnUnload(taskId) {
  try {
    fetch(`/api/tasks/${encodeURIComponent(taskId)}/cancel`, { method: "POST", headers: headers(), keepalive: true }).catch(() => {});
  } catch {
    /* nothing more can be done while the page unloads */
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
