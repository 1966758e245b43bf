// Raw HTTP for the fuzzer: node:http sends the path exactly as written (fetch would resolve dot
// segments and re-encode it), any method, and any body bytes.
import { Agent, request } from "node:http";

export interface RawRequest {
  method: string;
  /** Path and query string, percent-encoded already (or deliberately not). */
  target: string;
  headers: Record<string, string>;
  body?: string | Buffer | undefined;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface Sender {
  send(req: RawRequest): Promise<RawResponse>;
  close(): void;
}

/**
 * A keep-alive client for one server. `localAddress` picks the loopback address requests come
 * from: the login throttle counts failures per client address, and the fuzzer's own sign-ins
 * must not share a count with the wrong passwords it sends.
 */
export function sender(baseUrl: string, options: { localAddress?: string; timeoutMs?: number } = {}): Sender {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return {
    send: (req) =>
      new Promise<RawResponse>((resolve, reject) => {
        const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
        const headers: Record<string, string> = { ...req.headers };
        if (body !== undefined) headers["content-length"] ??= String(body.length);
        const r = request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method: req.method,
            path: req.target,
            headers,
            localAddress: options.localAddress,
            timeout: options.timeoutMs ?? 30_000,
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on("data", (c: Buffer) => chunks.push(c));
            response.on("end", () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
            );
            response.on("error", reject);
          },
        );
        r.on("timeout", () => r.destroy(new Error(`no answer within ${options.timeoutMs ?? 30_000} ms`)));
        r.on("error", reject);
        r.end(body);
      }),
    close: () => agent.destroy(),
  };
}

/** A JSON request through a sender, for setting up the tenant the fuzzer then attacks. */
export async function sendJson(
  s: Sender,
  method: string,
  target: string,
  json: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: RawResponse["headers"] }> {
  const response = await s.send({
    method,
    target,
    headers: json === undefined ? headers : { "content-type": "application/json", ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = response.body.toString("utf8");
  // A body that is not JSON is kept as its text, which the caller then reports.
  const body: unknown = /json/.test(String(response.headers["content-type"] ?? "")) && text ? JSON.parse(text) : text;
  return { status: response.status, body, headers: response.headers };
}
