import { connect, createServer } from "node:net";

/** Ports this process has handed out: the OS may offer a port again once it was closed. */
const given = new Set<number>();

/**
 * Ports are drawn below Linux's ephemeral range (32768 to 60999 by default), from which the OS
 * takes the local port of every outgoing connection: a port the OS itself offered as free could
 * be taken by such a connection before the process it was meant for listened on it (a NATS
 * server then answered its health check on its monitoring port and exited on its client port).
 */
const LOWEST = 20_000;
const ABOVE = 32_768;

/**
 * A loopback port free right now, never one handed out before in this process: a NATS server
 * was once given the same port for its clients and its cluster routes.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = LOWEST + Math.floor(Math.random() * (ABOVE - LOWEST));
    if (given.has(port) || !(await bindable(port))) continue;
    given.add(port);
    return port;
  }
}

/** Whether nothing listens on `port` of the loopback address (nor of every address). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
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

/** Resolves once a TCP connection to `port` on loopback opens, or rejects once `gone()` says its process ended. */
export async function waitForTcp(port: number, gone: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (gone()) throw new Error(`port ${port}: its process ended before it listened`);
    if (Date.now() > deadline) throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
