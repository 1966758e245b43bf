import type { Context } from "hono";
import type { components } from "@sift/contract";
import type { Config } from "../config.ts";
import type { AppEnv } from "../http/env.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { SearchEngine } from "../ports/engine.ts";
import { authorize } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { REGIONS } from "../regions.ts";
import type { RegionLagService } from "../services/region-lag.ts";
import type { Store } from "../store/open.ts";

type Readiness = components["schemas"]["Readiness"];
type Region = components["schemas"]["Region"];
type ReplicationState = components["schemas"]["ReplicationState"];

/** What /readyz reports of replication (services of the replica it needs). */
export interface ReplicationStatus {
  /** `keepingUp`: ready, though perhaps an entry or two behind for a moment (not in the body). */
  status(): Promise<ReplicationState & { keepingUp: boolean }>;
}

/** The URL clients use for this server: the configured public URL, else the request's origin. */
export const baseUrlOf = (c: Context<AppEnv>, config: Pick<Config, "publicUrl">) =>
  config.publicUrl ?? new URL(c.req.url).origin;

/** A region as its readiness describes it: up, replaying the log, or not answering as it should. */
const regionStatus = (ready: Readiness): Region["status"] =>
  ready.status === "ok"
    ? "up"
    : ready.checks.store && ready.checks.engine && ready.checks.replication === false
      ? "catching-up"
      : "down";

/** How long a region's readiness, once asked, is reused by /v1/regions. */
const PROBE_TTL_MS = 2_000;
const PROBE_TIMEOUT_MS = 800;

export function healthHandlers(deps: {
  config: Config;
  store: Store;
  engine: SearchEngine;
  replication?: ReplicationStatus | undefined;
  lag: RegionLagService;
}): Handlers {
  const readiness = async (): Promise<Readiness> => {
    const [store, engine, replication, readReplica] = await Promise.all([
      deps.store.ping(),
      // An engine that fails its ping is simply not ready, which is what this reports.
      deps.engine.ping().catch(() => false),
      // biome-ignore lint/plugin: a log that cannot say how far behind it is reports as not caught up.
      deps.replication?.status().catch(() => undefined),
      deps.store.pingReplica?.(),
    ]);
    const checks: Readiness["checks"] = { store, engine };
    if (deps.replication) checks.replication = replication?.keepingUp ?? false;
    // Not part of readiness: lookups the replica does not answer go to the primary (D-275).
    if (readReplica !== undefined) checks.readReplica = readReplica;
    const ok = store && engine && (checks.replication ?? true);
    if (replication === undefined) return { status: ok ? "ok" : "unavailable", checks };
    const { keepingUp: _, ...state } = replication;
    return { status: ok ? "ok" : "unavailable", checks, replication: state };
  };

  // Other regions' endpoints, asked at most every PROBE_TTL_MS (the answer is public and cheap).
  const probes = new Map<string, { at: number; answer: Promise<Pick<Region, "status" | "replication">> }>();
  const probe = (url: string) => {
    const cached = probes.get(url);
    if (cached && Date.now() - cached.at < PROBE_TTL_MS) return cached.answer;
    const answer = fetch(`${url}/readyz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      .then(async (response): Promise<Pick<Region, "status" | "replication">> => {
        const body = (await response.json()) as Readiness;
        return { status: regionStatus(body), ...(body.replication ? { replication: body.replication } : {}) };
      })
      .catch(() => ({ status: "down" as const }));
    probes.set(url, { at: Date.now(), answer });
    return answer;
  };

  /** A caller who may read the catalog sees its indexes; anyone else sees none (the list is public). */
  const tenantOf = (p: Principal): string | undefined => {
    if (p.kind === "anonymous") return undefined;
    try {
      return authorize(p, "catalog.read") === "own" ? p.tenantId : undefined;
    } catch {
      // A key without catalog authority still gets the public list.
      return undefined;
    }
  };

  /** Another region's own entry, asked with the caller's credentials (each region is Sift too). */
  const askRegion = async (url: string, headers: Record<string, string>): Promise<Partial<Region>> => {
    try {
      const response = await fetch(`${url}/v1/regions?scope=self`, {
        headers,
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      if (!response.ok) return await probe(url);
      const [own] = ((await response.json()) as { regions: Region[] }).regions;
      return own ? { status: own.status, replication: own.replication, indexes: own.indexes } : await probe(url);
    } catch {
      // A region that does not answer is reported down, which is the point.
      return { status: "down" };
    }
  };

  return {
    Health_live: (c) => c.json({ status: "ok" } satisfies ResponseBody<"Health_live", 200>),
    Health_ready: async (c) => {
      const body = await readiness();
      return body.status === "ok"
        ? c.json(body satisfies ResponseBody<"Health_ready", 200>)
        : c.json(body satisfies ResponseBody<"Health_ready", 503>, 503);
    },
    Health_regions: async (c) => {
      const base = baseUrlOf(c, deps.config);
      const tenant = tenantOf(c.get("principal"));
      const credentials: Record<string, string> = {};
      for (const name of ["authorization", "cookie"]) {
        const value = c.req.header(name);
        if (value !== undefined) credentials[name] = value;
      }
      const self = c.req.query("scope") === "self";
      const regions = await Promise.all(
        REGIONS.filter((r) => !self || r.id === deps.config.region).map(async (r): Promise<Region> => {
          const url = deps.config.regionUrls[r.id] ?? base;
          const region: Region = { ...r, url };
          if (r.id === deps.config.region) {
            const own = await readiness();
            region.status = regionStatus(own);
            if (own.replication) region.replication = own.replication;
            if (tenant !== undefined) region.indexes = await deps.lag.forTenant(tenant);
          } else if (url !== base) {
            const answer = tenant === undefined ? await probe(url) : await askRegion(url, credentials);
            for (const [key, value] of Object.entries(answer))
              if (value !== undefined) Object.assign(region, { [key]: value });
          } else {
            region.status = "unknown";
          }
          return region;
        }),
      );
      return c.json({ regions } satisfies ResponseBody<"Health_regions", 200>);
    },
  };
}
