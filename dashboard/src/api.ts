// The one client the dashboard talks to Sift through. Same origin, so the browser sends the
// HttpOnly session cookie by itself: no key is ever held in page memory or storage.
import { createClient, SiftApiError, SiftError } from "@sift/sdk";

export const sift = createClient({ baseUrl: location.origin });
export type Sift = typeof sift;

/** What a form shows for a failed call: a message, and a message per field the problem names. */
export interface Failure {
  message: string;
  fields: Record<string, string>;
  status?: number;
}

/** Dispatched on window when a call finds the session gone (expired, or signed out elsewhere). */
export const SESSION_ENDED = "sift-session-ended";

export function failureOf(error: unknown): Failure {
  if (error instanceof SiftApiError) {
    // The shell decides whether a 401 means anything: signed out, it is a wrong password.
    if (error.status === 401) dispatchEvent(new Event(SESSION_ENDED));
    const fields: Record<string, string> = {};
    for (const f of error.fieldErrors) {
      const key = f.field ?? "";
      fields[key] = fields[key] ? `${fields[key]}; ${f.message}` : f.message;
    }
    return { message: error.problem?.detail ?? error.message, fields, status: error.status };
  }
  if (error instanceof SiftError) return { message: error.message, fields: {} };
  return { message: error instanceof Error ? error.message : String(error), fields: {} };
}

export const isUnauthenticated = (error: unknown) => error instanceof SiftApiError && error.status === 401;

/**
 * A fetch for one upload: the PUT of the file goes through XMLHttpRequest, the one browser API
 * that reports upload progress over HTTP/1.1; every other request is plain fetch.
 */
export function progressFetch(onProgress: (sent: number, total: number) => void): typeof fetch {
  return (input, init) => {
    const body = init?.body;
    if (init?.method !== "PUT" || !(body instanceof Blob) || typeof input !== "string") return fetch(input, init);
    return new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", input);
      for (const [name, value] of new Headers(init.headers)) {
        // The browser sets Content-Length itself and refuses to be told.
        if (name !== "content-length") xhr.setRequestHeader(name, value);
      }
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : body.size);
      xhr.onload = () =>
        resolve(
          new Response(xhr.responseText, {
            status: xhr.status,
            headers: { "content-type": xhr.getResponseHeader("content-type") ?? "application/json" },
          }),
        );
      xhr.onerror = () => reject(new TypeError("the upload was interrupted"));
      init.signal?.addEventListener("abort", () => xhr.abort());
      xhr.send(body);
    });
  };
}

/** Names typed into one field (index patterns, origins), separated by commas or spaces. */
export const listOf = (text: string) => text.split(/[\s,]+/).filter(Boolean);

export const formatDate = (ms: number | null | undefined) =>
  ms ? new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : "never";

export const formatBytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1024 ** 2).toFixed(1)} MB`;
