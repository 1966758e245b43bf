// A TCP proxy in front of PostgreSQL that a test can cut and restore: closing it refuses every
// connection and drops the open ones, as a database that went away does. Or hang: connections
// stay open (new ones are accepted) and nothing passes either way, as a frozen database or a
// partition leaves them, until it resumes.
import { createServer, type Server, type Socket, connect } from "node:net";
import { freePort } from "./ports.ts";

export interface PostgresProxy {
  port: number;
  /** `url` with its host replaced by the proxy's. */
  via(url: string): string;
  open(): Promise<void>;
  cut(): Promise<void>;
  hang(): void;
  resume(): void;
}

export async function postgresProxy(target: URL): Promise<PostgresProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const pairs = new Set<[client: Socket, upstream: Socket]>();
  let hung = false;
  let server: Server | undefined;
  const join = ([client, upstream]: [Socket, Socket]) => {
    client.pipe(upstream).pipe(client);
    client.resume();
    upstream.resume();
  };
  const open = () =>
    new Promise<void>((resolve) => {
      if (server?.listening) return resolve();
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("error", () => s.destroy());
        }
        const pair: [Socket, Socket] = [client, upstream];
        pairs.add(pair);
        for (const s of pair) {
          s.on("close", () => {
            sockets.delete(s);
            pairs.delete(pair);
          });
        }
        if (!hung) join(pair);
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
    hang() {
      hung = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    resume() {
      hung = false;
      for (const pair of pairs) join(pair);
    },
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (!server?.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}
