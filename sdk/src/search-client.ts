// The search-only client: what a browser needs (the widget uses it), kept small.
import createFetchClient from "openapi-fetch";
import type { components, paths } from "@sift/contract";
import { SiftApiError, type Problem } from "./errors.ts";
import { createRouter, type RegionEndpoint, type Router } from "./routing.ts";

export type SearchParams = paths["/v1/search"]["get"]["parameters"]["query"];
export type SearchResponse = components["schemas"]["SearchResponse"];
export type SearchResult = components["schemas"]["SearchResult"];
/** The matched parts of a suggestion, when the search asked for `highlight: true`. */
export type SearchHighlight = components["schemas"]["SearchHighlight"];
/** `[start, end]` in UTF-16 code units of the stored text, end exclusive: `text.slice(start, end)`. */
export type HighlightRange = components["schemas"]["HighlightRange"];

export interface ClientOptions {
  /** Sift's base URL, e.g. `https://api.sift.dev` or `http://127.0.0.1:7700`. */
  baseUrl: string;
  /** A secret key (server side) or a public `pk-sift-srh-…` key (browsers). */
  apiKey?: string | undefined;
  /** Route between region endpoints by measured latency; "discover" asks GET /v1/regions. */
  regions?: RegionEndpoint[] | "discover" | undefined;
  /** Per attempt, before moving to the next host. */
  timeoutMs?: number | undefined;
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
}

export function createApi(options: ClientOptions) {
  const router: Router = createRouter(options);
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    fetch: (request: Request) => router.fetch(request),
    headers: { ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}), ...options.headers },
  });
  return { api, router };
}

/** Returns the data of a 2xx answer, or throws SiftApiError with the problem document. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw new SiftApiError(
      response.status,
      error as Problem | undefined,
      response.headers.get("x-request-id") ?? undefined,
    );
  }
  return data as T;
}

export function createSearchClient(options: ClientOptions) {
  const { api, router } = createApi(options);
  return {
    router,
    /** Ranked suggestions for `params.query`; pass `signal` to abort a stale request. */
    search: (params: SearchParams, init: { signal?: AbortSignal } = {}): Promise<SearchResponse> =>
      unwrap(api.GET("/v1/search", { params: { query: params }, ...(init.signal ? { signal: init.signal } : {}) })),
  };
}

export type SearchClient = ReturnType<typeof createSearchClient>;
