// Host selection in the manner of Algolia's retry strategy: requests go to the region with the
// lowest measured latency; a host that fails (network error, timeout, 502/503/504) is set aside
// for a while and the request moves to the next-closest one, transparently. A 503 with
// Retry-After (a region that has not applied a read's `minVersion` yet, or is briefly busy) sets
// the host aside only for that long: it is healthy, just behind. A request naming a `regionId`
// goes to that region only, when the router knows its endpoint.
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
  /**
   * Sets aside, for `ms`, the host that answered `response` (one this router returned), so the
   * next request goes elsewhere; answers whether there is another host to go to.
   */
  setAside(response: Response, ms: number): boolean;
}

/** Longest Retry-After honoured as "briefly": a longer one is treated as an outright failure. */
const MAX_BRIEF_MS = 30_000;

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined when absent or unreadable. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1_000 : Date.parse(value) - Date.now();
  return Number.isNaN(ms) ? undefined : Math.max(0, ms);
}

/** What a failing answer said, for SiftUnreachableError: its status and the problem's detail. */
async function describe(response: Response, aside: number | undefined): Promise<string> {
  let detail = "";
  // biome-ignore lint/plugin: a body that is not a problem document leaves just the status.
  try {
    const problem = JSON.parse(await response.text()) as { detail?: unknown; title?: unknown };
    const text = problem.detail ?? problem.title;
    if (typeof text === "string") detail = `: ${text}`;
  } catch {}
  return `HTTP ${response.status}${detail}${aside === undefined ? "" : ` (retry after ${aside / 1_000} s)`}`;
}

const RETRYABLE_STATUS = new Set([502, 503, 504]);

/**
 * What a request's placement is known by: a search's service (its indexes share their regions), a
 * record or version request's or an upload's status's index (of the client's tenant). Undefined
 * for the rest.
 */
function scopeOf(url: URL): string | undefined {
  const service = url.searchParams.get("serviceName");
  if (url.pathname.endsWith("/v1/search") && service !== null) return `service:${service}`;
  const index =
    /\/v1\/indexes\/([^/]+)\/(records|versions)\b/.exec(url.pathname)?.[1] ??
    /\/v1\/uploads\/([^/]+)\/[^/]+$/.exec(url.pathname)?.[1];
  return index === undefined ? undefined : `index:${index}`;
}

/** The region ids a 421 names as holding the index (none when its body says nothing readable). */
async function placedRegions(response: Response): Promise<string[]> {
  try {
    const problem = (await response.json()) as { regions?: { id?: unknown }[] };
    return (problem.regions ?? []).map((r) => r.id).filter((id): id is string => typeof id === "string");
  } catch {
    return [];
  }
}

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
  let loaded: HostState[] = [];
  // Which host answered each response handed out, for setAside (a multi-search's per-search 503).
  const answeredBy = new WeakMap<Response, HostState>();
  /** Every region served from that URL is set aside together: they are one server. */
  const setAsideUrl = (url: string, until: number) => {
    for (const o of loaded) if (o.url === url) o.downUntil = until;
  };

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
    if (options.regions === undefined) {
      loaded = [host("default", base)];
      return loaded;
    }
    let endpoints = options.regions;
    if (endpoints === "discover") {
      const r = await doFetch(`${base}/v1/regions`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!r.ok) throw new SiftUnreachableError([{ host: base, reason: `GET /v1/regions answered ${r.status}` }]);
      endpoints = ((await r.json()) as { regions: RegionEndpoint[] }).regions;
    }
    const hosts = endpoints.map((e) => host(e.id, e.url));
    // One probe per URL: regions without an endpoint of their own share the default one.
    const byUrl = new Map(hosts.map((h) => [h.url, h]));
    await Promise.all([...byUrl.values()].map(probe));
    for (const h of hosts)
      Object.assign(h, { latencyMs: byUrl.get(h.url)!.latencyMs, downUntil: byUrl.get(h.url)!.downUntil });
    loaded = hosts;
    return hosts;
  }

  /** The regions holding an index, by scopeOf, as a 421 named them. */
  const placed = new Map<string, string[]>();

  /** The hosts, loaded once; a failed discovery is tried again by the next call, not kept. */
  function loading(): Promise<HostState[]> {
    ready ??= load().catch((error) => {
      ready = undefined;
      throw error;
    });
    return ready;
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
      return order(await loading(), null);
    },
    async fetch(request) {
      const url = new URL(request.url);
      const forced = url.searchParams.get("regionId");
      const hosts = await loading();
      // A forced region is answered by its own endpoint or not at all: another region's server
      // would refuse it (400), and an answer from elsewhere is not that region's.
      const own = forced === null ? [] : hosts.filter((h) => h.id === forced);
      // An index held in some regions only (a 421 said which) is asked only there from then on.
      const scope = scopeOf(url);
      const held = scope === undefined ? undefined : placed.get(scope);
      const holding = held === undefined ? [] : hosts.filter((h) => held.includes(h.id));
      let candidates = own.length > 0 ? own : holding.length > 0 ? order(holding, forced) : order(hosts, forced);
      const rest = request.url.startsWith(base) ? request.url.slice(base.length) : url.pathname + url.search;
      // Read once so that every attempt can send it again.
      const body = request.body ? await request.arrayBuffer() : undefined;
      const causes: { host: string; region: string; reason: string }[] = [];
      // Regions without an endpoint of their own share one URL: ask each URL once per request.
      const tried = new Set<string>();
      let misdirected: Response | undefined;
      while (candidates.length > 0) {
        const h = candidates.shift()!;
        if (tried.has(h.url)) continue;
        tried.add(h.url);
        // How long this host is set aside: its Retry-After when it gave one, otherwise downForMs.
        let aside: number | undefined;
        // It answered 421: it serves other indexes, and is not set aside.
        let heldElsewhere = false;
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
            if (response.status === 421 && own.length === 0) {
              // This region does not hold the index: the ones that do are asked next, and no host
              // is set aside (it serves other indexes).
              const regions = await placedRegions(response.clone());
              const next = hosts.filter((o) => regions.includes(o.id) && !tried.has(o.url));
              if (scope !== undefined && regions.length > 0) placed.set(scope, regions);
              if (next.length > 0) {
                misdirected = response;
                candidates = order(next, forced);
                heldElsewhere = true;
                break;
              }
            }
            if (!RETRYABLE_STATUS.has(response.status)) {
              answeredBy.set(response, h);
              return response;
            }
            const brief = response.status === 503 ? retryAfterMs(response.headers.get("retry-after")) : undefined;
            aside = brief !== undefined && brief <= MAX_BRIEF_MS ? Math.max(brief, 1_000) : undefined;
            causes.push({ host: h.url, region: h.id, reason: await describe(response, aside) });
            break;
          } catch (error) {
            // The caller gave up (a newer keystroke, say): never retry that.
            if (request.signal?.aborted) throw error;
            causes.push({
              host: h.url,
              region: h.id,
              reason: timeout.aborted ? `no answer in ${timeoutMs} ms` : String((error as Error).message),
            });
            if (timeout.aborted || !isConnectionReset(error)) break;
          }
        }
        if (!heldElsewhere) setAsideUrl(h.url, Date.now() + (aside ?? downForMs));
      }
      // Every region that holds the index failed: the 421 says where it is held.
      if (misdirected !== undefined && causes.length === 0) return misdirected;
      throw new SiftUnreachableError(causes);
    },
    setAside(response, ms) {
      const h = answeredBy.get(response);
      if (!h) return false;
      setAsideUrl(h.url, Math.max(h.downUntil, Date.now() + ms));
      return loaded.some((o) => o.url !== h.url);
    },
  };
}
