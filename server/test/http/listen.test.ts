// The HTTP server's timeouts: Node's own default cut off uploads after 300 s, and a stalled
// connection was held until then (issue 15, finding 8).
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { AppEnv } from "../../src/http/env.ts";
import { listen } from "../../src/http/listen.ts";

async function timeoutsOf(env: Record<string, string>) {
  const config = loadConfig({ SIFT_DATA_DIR: "/tmp/unused", PORT: "0", ...env });
  const server = await new Promise<ReturnType<typeof listen>>((resolve) => {
    const s = listen(new Hono<AppEnv>(), { ...config, host: "127.0.0.1" }, () => resolve(s));
  });
  const { requestTimeout, timeout } = server as unknown as { requestTimeout: number; timeout: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { requestTimeout, timeout };
}

describe("listen", () => {
  it("lets a request run 12 hours by default, and closes a connection idle for 5 minutes", async () => {
    expect(await timeoutsOf({})).toEqual({ requestTimeout: 12 * 3600 * 1000, timeout: 300 * 1000 });
  });

  it("takes both from the environment", async () => {
    expect(await timeoutsOf({ SIFT_REQUEST_TIMEOUT_SECONDS: "60", SIFT_IDLE_TIMEOUT_SECONDS: "5" })).toEqual({
      requestTimeout: 60_000,
      timeout: 5_000,
    });
  });
});
