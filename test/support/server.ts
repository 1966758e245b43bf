// A real Sift server on a free loopback port, composed exactly as `npm start` composes it, on a
// fresh data dir (and a fresh PostgreSQL database when DATABASE_URL is set).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerType } from "@hono/node-server";
import { loadConfig } from "../../server/src/config.ts";
import { composeSift, type Sift } from "../../server/src/compose.ts";
import { listen } from "../../server/src/http/listen.ts";
import { createLogger } from "../../server/src/log.ts";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { RATE_LIMITS_OFF } from "./limits.ts";

export interface RunningSift {
  url: string;
  sift: Sift;
  dataDir: string;
  /** The server's own PostgreSQL database, when DATABASE_URL is set. */
  database: { url: string; drop: () => Promise<void> } | undefined;
  /** `keepData`: leave the data dir and database for a restart (`startSift(env, { restart })`). */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export interface StartOptions {
  /** Start again on the stopped server's data dir, database and port: a restart. */
  restart?: RunningSift;
}

export async function startSift(env: Record<string, string> = {}, options: StartOptions = {}): Promise<RunningSift> {
  const dataDir = options.restart?.dataDir ?? mkdtempSync(join(tmpdir(), "sift-e2e-"));
  const database =
    options.restart?.database ??
    (process.env.DATABASE_URL ? await createTempDatabase(process.env.DATABASE_URL) : undefined);
  const listenPort = options.restart ? Number(new URL(options.restart.url).port) : 0;
  const config = loadConfig({
    SIFT_DATA_DIR: dataDir,
    SIFT_DEMO: "false",
    SIFT_LOG_LEVEL: "silent",
    PORT: "0",
    ...RATE_LIMITS_OFF,
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...env,
  });
  const sift = await composeSift(config, createLogger(config.logLevel));
  const server: ServerType = await new Promise((resolve) => {
    const s = listen(sift.app, { ...config, host: "127.0.0.1", port: listenPort }, () => resolve(s));
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    sift,
    dataDir,
    database,
    async stop({ keepData = false } = {}) {
      await new Promise<void>((r) => {
        server.close(() => r());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await sift.close();
      if (keepData) return;
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
