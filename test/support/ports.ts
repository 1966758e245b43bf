import { createServer } from "node:net";

/** A loopback port free right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
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
