// A TCP proxy in front of PostgreSQL that a test can cut and restore: closing it refuses every
// connection and drops the open ones, as a database that went away does.
import { createServer, type Server, type Socket, connect } from "node:net";
import { freePort } from "./ports.ts";

export interface PostgresProxy {
  port: number;
  /** `url` with its host replaced by the proxy's. */
  via(url: string): string;
  open(): Promise<void>;
  cut(): Promise<void>;
}

export async function postgresProxy(target: URL): Promise<PostgresProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const open = () =>
    new Promise<void>((resolve) => {
      if (server?.listening) return resolve();
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      }).listen(port, "127.0.0.1", () => resolve());
    });
  await open();
  return {
    port,
    via(url) {
      const proxied = new URL(url);
      proxied.host = `127.0.0.1:${port}`;
      return proxied.toString();
    },
    open,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (!server?.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}
