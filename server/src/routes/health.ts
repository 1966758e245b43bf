import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { AppEnv } from "../http/env.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { SearchEngine } from "../ports/engine.ts";
import { REGIONS } from "../regions.ts";
import type { Store } from "../store/open.ts";

/** The URL clients use for this server: the configured public URL, else the request's origin. */
export const baseUrlOf = (c: Context<AppEnv>, config: Pick<Config, "publicUrl">) =>
  config.publicUrl ?? new URL(c.req.url).origin;

export function healthHandlers(deps: { config: Config; store: Store; engine: SearchEngine }): Handlers {
  return {
    Health_live: (c) => c.json({ status: "ok" } satisfies ResponseBody<"Health_live", 200>),
    Health_ready: async (c) => {
      // An engine that fails its ping is simply not ready: that is what this endpoint reports.
      const [store, engine] = await Promise.all([deps.store.ping(), deps.engine.ping().catch(() => false)]);
      const ok = store && engine;
      const body = { status: ok ? "ok" : "unavailable", checks: { store, engine } } as const;
      return ok
        ? c.json(body satisfies ResponseBody<"Health_ready", 200>)
        : c.json(body satisfies ResponseBody<"Health_ready", 503>, 503);
    },
    Health_regions: (c) => {
      const base = baseUrlOf(c, deps.config);
      const regions = REGIONS.map((r) => ({ ...r, url: deps.config.regionUrls[r.id] ?? base }));
      return c.json({ regions } satisfies ResponseBody<"Health_regions", 200>);
    },
  };
}
