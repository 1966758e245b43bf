// The HTTP server around the app, as main.ts runs it and as the end-to-end tests run it, so both
// have the same timeouts and connection limits (docs/api.md, Limits) and answer even the requests
// the app never sees with a problem document.
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener, type ServerType } from "@hono/node-server";
import type { Hono } from "hono";
import type { Config } from "../config.ts";
import type { AppEnv } from "./env.ts";
import { HttpProblem, type ProblemStatus, problemResponse } from "./problem.ts";

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
  const listener = getRequestListener(app.fetch, {
    hostname: config.host,
    // The adapter could not make a web Request of it (a Host header that makes no URL): the app
    // never ran. Its own answer is a 400 with no body. Errors inside the app are app.onError's.
    errorHandler: () =>
      problemResponse(new HttpProblem(400, "the request's Host header or target does not make a URL")),
  });
  // Node's default (300 s) cut off uploads slower than that.
  const server = createServer({ requestTimeout: config.requestTimeoutMs }, listener);
  server.on("clientError", onClientError);
  server.listen(config.port, config.host, () => {
    const info = server.address();
    if (info && typeof info === "object") onListening({ address: info.address, port: info.port });
  });
  // A socket that moves no bytes for this long is destroyed, whatever its request is doing.
  server.setTimeout(config.idleTimeoutMs);
  limitConnections(server, config);
  return server;
}

const REASONS: Partial<Record<ProblemStatus, string>> = {
  400: "Bad Request",
  408: "Request Timeout",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  503: "Service Unavailable",
};

/**
 * A problem written straight to a socket, for answers given before (or instead of) parsing a
 * request, then the connection closes. An answer to HEAD has no body: a client reading one would
 * take it for the next response.
 */
function writeProblem(
  socket: Socket,
  status: ProblemStatus,
  detail: string,
  options: { head?: boolean; retryAfter?: number } = {},
): void {
  const body = JSON.stringify(new HttpProblem(status, detail).toProblem());
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\ncontent-type: application/problem+json\r\n` +
      (options.retryAfter === undefined ? "" : `retry-after: ${options.retryAfter}\r\n`) +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${options.head ? "" : body}`,
  );
}

/**
 * What Node's parser refuses (a malformed request line, headers past its size limit, a request
 * not received in time) is answered here; Node's default answers these with an empty body.
 */
function onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // Written only while nothing of a response is on the socket, as Node's default does.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code !== "ECONNRESET" && socket.writable && !inFlight?.headersSent) {
    const [status, detail]: [ProblemStatus, string] =
      error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "the request's headers are too large (the request line and headers together, at most 16 KB)"]
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, "the request was not received in time"]
          : [400, "this is not a valid HTTP request"];
    const head =
      (error as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString() === "HEAD ";
    writeProblem(socket, status, detail, { head });
  }
  socket.destroy(error);
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
      return refuse(socket, 503, `the server holds its limit of ${config.maxConnections} connections`);
    }
    if (perClient && mine >= config.maxConnectionsPerClient) {
      return refuse(
        socket,
        429,
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

function refuse(socket: Socket, status: 429 | 503, detail: string): void {
  // The request is never parsed: the answer goes out at once, then whatever the client still
  // sends is read and dropped (closing with unread bytes would reset the answer away).
  writeProblem(socket, status, detail, { retryAfter: 1 });
  socket.on("data", () => {});
  socket.on("error", () => {});
  setTimeout(() => socket.destroy(), 1_000).unref();
}
