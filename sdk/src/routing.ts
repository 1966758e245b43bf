// Host selection in the manner of Algolia's retry strategy: requests go to the region with the
// lowest measured latency; a host that fails (network error, timeout, 502/503/504) is set aside
// for a while and the request moves to the next-closest one, transparently. A request naming a
// `regionId` goes to that region first.
import { SiftUnreachableError } from "./errors.ts";

export interface RegionEndpoint {
  id: string;
  url: string;
}

export interface HostState extends RegionEndpoint {
  /** Best measured round trip, once probed. */
  latencyMs: number | undefined;
  /** Set aside until this time after a failure. */
  downUntil: number;
}

export interface RouterOptions {
  baseUrl: string;
  /** Endpoints to route between; "discover" reads them from GET /v1/regions on first use. */
  regions?: RegionEndpoint[] | "discover" | undefined;
  fetch?: typeof fetch | undefined;
  /** Per attempt. */
  timeoutMs?: number | undefined;
  /** How long a failed host is avoided. */
  downForMs?: number | undefined;
}

export interface Router {
  fetch(request: Request): Promise<Response>;
  /** Hosts in the order the next request will try them. */
  hosts(): Promise<HostState[]>;
}

const RETRYABLE_STATUS = new Set([502, 503, 504]);

/** A socket closed or reset under a request, as opposed to a host that refuses or never answers. */
function isConnectionReset(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code === "ECONNRESET" || cause?.code === "UND_ERR_SOCKET" || cause?.code === "EPIPE";
}

export function createRouter(options: RouterOptions): Router {
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 15_000;
  const downForMs = options.downForMs ?? 120_000;
  const base = options.baseUrl.replace(/\/+$/, "");
  let ready: Promise<HostState[]> | undefined;

  const host = (id: string, url: string): HostState => ({
    id,
    url: url.replace(/\/+$/, ""),
    latencyMs: undefined,
    downUntil: 0,
  });

  async function probe(h: HostState): Promise<void> {
    for (let i = 0; i < 2; i++) {
      const started = performance.now();
      try {
        const r = await doFetch(`${h.url}/healthz`, { signal: AbortSignal.timeout(Math.min(timeoutMs, 3_000)) });
        if (!r.ok) throw new Error(String(r.status));
        const rtt = performance.now() - started;
        h.latencyMs = h.latencyMs === undefined ? rtt : Math.min(h.latencyMs, rtt);
      } catch {
        h.downUntil = Date.now() + downForMs;
        return;
      }
    }
  }

  async function load(): Promise<HostState[]> {
    if (options.regions === undefined) return [host("default", base)];
    let endpoints = options.regions;
    if (endpoints === "discover") {
      const r = await doFetch(`${base}/v1/regions`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!r.ok) throw new SiftUnreachableError([{ host: base, reason: `GET /v1/regions answered ${r.status}` }]);
      endpoints = ((await r.json()) as { regions: RegionEndpoint[] }).regions;
    }
    const hosts = endpoints.map((e) => host(e.id, e.url));
    await Promise.all(hosts.map(probe));
    return hosts;
  }

  function order(hosts: HostState[], preferred: string | null): HostState[] {
    const now = Date.now();
    return [...hosts].sort((a, b) => {
      const rank = (h: HostState) => (h.id === preferred ? 0 : 1) + (h.downUntil > now ? 2 : 0);
      return rank(a) - rank(b) || (a.latencyMs ?? Infinity) - (b.latencyMs ?? Infinity);
    });
  }

  return {
    async hosts() {
      ready ??= load();
      return order(await ready, null);
    },
    async fetch(request) {
      ready ??= load().catch((error) => {
        ready = undefined;
        throw error;
      });
      const url = new URL(request.url);
      const candidates = order(await ready, url.searchParams.get("regionId"));
      const rest = request.url.startsWith(base) ? request.url.slice(base.length) : url.pathname + url.search;
      // Read once so that every attempt can send it again.
      const body = request.body ? await request.arrayBuffer() : undefined;
      const causes: { host: string; reason: string }[] = [];
      for (const h of candidates) {
        // A connection the server closed as idle just as it was reused fails at once: that host is
        // not down, so it gets one more try before the request moves on.
        for (let attempt = 0; attempt < 2; attempt++) {
          const timeout = AbortSignal.timeout(timeoutMs);
          const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
          try {
            const response = await doFetch(h.url + rest, {
              method: request.method,
              headers: request.headers,
              body,
              signal,
            });
            if (!RETRYABLE_STATUS.has(response.status)) return response;
            causes.push({ host: h.url, reason: `HTTP ${response.status}` });
            break;
          } catch (error) {
            // The caller gave up (a newer keystroke, say): never retry that.
            if (request.signal?.aborted) throw error;
            causes.push({
              host: h.url,
              reason: timeout.aborted ? `no answer in ${timeoutMs} ms` : String((error as Error).message),
            });
            if (timeout.aborted || !isConnectionReset(error)) break;
          }
        }
        h.downUntil = Date.now() + downForMs;
      }
      throw new SiftUnreachableError(causes);
    },
  };
}
