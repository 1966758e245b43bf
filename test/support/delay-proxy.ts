// A TCP proxy that holds every byte for a while in each direction: the distance between two
// regions, on loopback. The machine's kernel has no netem, so the delay is made here. Bytes keep
// their order (timers of one duration fire in the order they were set), and a side that closes
// closes the other once its last bytes were passed on.
import { connect, createServer, type Socket } from "node:net";
import { freePort } from "./ports.ts";

export interface DelayProxy {
  port: number;
  close(): Promise<void>;
}

/** Listens on a free loopback port and forwards to `targetPort`, `oneWayMs` late each way. */
export async function delayProxy(targetPort: number, oneWayMs: number): Promise<DelayProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const late = (fn: () => void) => setTimeout(fn, oneWayMs).unref();
  const forward = (from: Socket, to: Socket) => {
    from.on("data", (chunk) => late(() => to.writable && to.write(chunk)));
    from.on("end", () => late(() => to.end()));
  };
  const server = createServer((client) => {
    // A server that is down (killed by the test) refuses the upstream: the client is dropped,
    // as a connection to it would be.
    const upstream = connect(targetPort, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on("close", () => {
        sockets.delete(socket);
        late(() => (socket === client ? upstream : client).destroy());
      });
      socket.on("error", () => socket.destroy());
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
