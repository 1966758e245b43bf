// The HTTP server around the app, as main.ts runs it and as the end-to-end tests run it, so both
// have the same timeouts (docs/api.md, Limits) and answer even the requests the app never sees
// with a problem document.
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener, type ServerType } from "@hono/node-server";
import type { Hono } from "hono";
import type { Config } from "../config.ts";
import type { AppEnv } from "./env.ts";
import { HttpProblem, type ProblemStatus } from "./problem.ts";

export function listen(
  app: Hono<AppEnv>,
  config: Pick<Config, "host" | "port" | "requestTimeoutMs" | "idleTimeoutMs">,
  onListening: (info: { address: string; port: number }) => void,
): ServerType {
  const listener = getRequestListener(app.fetch, {
    hostname: config.host,
    // The adapter could not make a web Request of it (a Host header that makes no URL): the app
    // never ran. Its own answer is a 400 with no body. Errors inside the app are app.onError's.
    errorHandler: () => problemResponse(400, "the request's Host header or target does not make a URL"),
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
  return server;
}

function problemResponse(status: ProblemStatus, detail: string): Response {
  return new Response(JSON.stringify(new HttpProblem(status, detail).toProblem()), {
    status,
    headers: { "content-type": "application/problem+json" },
  });
}

const REASONS: Partial<Record<ProblemStatus, string>> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
};

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
    const body = JSON.stringify(new HttpProblem(status, detail).toProblem());
    socket.end(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
