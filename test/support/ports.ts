import { createServer } from "node:net";

/** Ports this process has handed out: the OS may offer a port again once it was closed. */
const given = new Set<number>();

/**
 * A loopback port free right now (the OS picks it), never one handed out before in this
 * process: a NATS server was once given the same port for its clients and its cluster routes.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    if (!given.has(port)) {
      given.add(port);
      return port;
    }
  }
}

/** Resolves once `url` answers any HTTP response, or rejects after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
