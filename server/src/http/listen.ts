// The HTTP server around the app, as main.ts runs it and as the end-to-end tests run it, so both
// have the same timeouts and connection limits (docs/api.md, Limits).
import type { Socket } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import type { Hono } from "hono";
import type { Config } from "../config.ts";
import type { AppEnv } from "./env.ts";
import { HttpProblem } from "./problem.ts";

type ListenConfig = Pick<
  Config,
  | "host"
  | "port"
  | "requestTimeoutMs"
  | "idleTimeoutMs"
  | "maxConnections"
  | "maxConnectionsPerClient"
  | "trustedProxyHops"
>;

export function listen(
  app: Hono<AppEnv>,
  config: ListenConfig,
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
  limitConnections(server, config);
  return server;
}

/**
 * Two clients once held 20,000 sockets (the process's file limit) and every other client was
 * reset. Connections past the server-wide limit answer 503, past one address's limit 429, both
 * as problem+json and then closed, so the refused client learns why. Behind trusted proxies every
 * connection comes from a proxy, so only the server-wide limit applies there.
 */
function limitConnections(server: ServerType, config: ListenConfig): void {
  const perAddress = new Map<string, number>();
  let open = 0;
  const perClient = config.trustedProxyHops === 0;
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "unknown";
    const mine = perAddress.get(address) ?? 0;
    if (open >= config.maxConnections) {
      return refuse(
        socket,
        503,
        "Service Unavailable",
        `the server holds its limit of ${config.maxConnections} connections`,
      );
    }
    if (perClient && mine >= config.maxConnectionsPerClient) {
      return refuse(
        socket,
        429,
        "Too Many Requests",
        `this address holds its limit of ${config.maxConnectionsPerClient} open connections; reuse or close some`,
      );
    }
    open++;
    perAddress.set(address, mine + 1);
    socket.once("close", () => {
      open--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
}

function refuse(socket: Socket, status: 429 | 503, reason: string, detail: string): void {
  const body = JSON.stringify(new HttpProblem(status, detail).toProblem());
  // The request is never parsed: the answer goes out at once, then whatever the client still
  // sends is read and dropped (closing with unread bytes would reset the answer away).
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\n` +
      `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.on("data", () => {});
  socket.on("error", () => {});
  setTimeout(() => socket.destroy(), 1_000).unref();
}
