// The HTTP server around the app, as main.ts runs it and as the end-to-end tests run it, so both
// have the same timeouts (docs/api.md, Limits).
import { type ServerType, serve } from "@hono/node-server";
import type { Hono } from "hono";
import type { Config } from "../config.ts";
import type { AppEnv } from "./env.ts";

export function listen(
  app: Hono<AppEnv>,
  config: Pick<Config, "host" | "port" | "requestTimeoutMs" | "idleTimeoutMs">,
  onListening: (info: { address: string; port: number }) => void,
): ServerType {
  const server = serve(
    {
      fetch: app.fetch,
      hostname: config.host,
      port: config.port,
      // Node's default (300 s) cut off uploads slower than that.
      serverOptions: { requestTimeout: config.requestTimeoutMs },
    },
    onListening,
  );
  // A socket that moves no bytes for this long is destroyed, whatever its request is doing.
  server.setTimeout(config.idleTimeoutMs);
  return server;
}
