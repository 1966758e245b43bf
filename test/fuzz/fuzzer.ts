// The contract fuzzer (issue 15): requests generated from generated/openapi.json for every route,
// sent to a running server, every answer checked (check.ts). Shared by the bounded run in
// `npm test` (test/e2e/fuzz.test.ts) and the long one of the benchmark (bench/fuzz.ts).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Checker, checker, type Finding } from "./check.ts";
import { describeRequest, type FuzzRequest, type Route, routes } from "./requests.ts";
import type { Schema } from "./schema.ts";
import { type RawRequest, type RawResponse, type Sender, sender } from "./send.ts";
import { type FuzzWorld, setUpWorld, TARGETS } from "./world.ts";

export { describeRequest, type FuzzRequest, type Route } from "./requests.ts";
export { FUZZ_SERVER_ENV } from "./world.ts";

/** The seed of `npm test`'s run: fixed, so that a failure there fails the same way again. */
export const DEFAULT_SEED = 15;

export function loadDocument(): Schema {
  return JSON.parse(
    readFileSync(createRequire(import.meta.url).resolve("@sift/contract/openapi.json"), "utf8"),
  ) as Schema;
}

/** Every route with its request generator; the same list whatever the server, so seeds reproduce. */
export function fuzzRoutes(document: Schema, maxBodyBytes: number): Route[] {
  return routes(document, TARGETS, maxBodyBytes);
}

export interface Outcome {
  request: RawRequest;
  response: RawResponse | undefined;
  findings: Finding[];
}

export interface Fuzzer {
  /** Sends one generated request and checks the answer; puts back what it deleted. */
  send(route: Route, request: FuzzRequest): Promise<Outcome>;
  /** The request as sent, with the world's tokens filled in, and the answer: for a report. */
  explain(request: FuzzRequest, outcome: Outcome): string;
  close(): void;
}

/**
 * `nodes`: more nodes of the same deployment (replication): requests go to `baseUrl` and each of
 * them in turn, while the tenant is set up and put back through `baseUrl`.
 */
export async function startFuzzer(baseUrl: string, document: Schema, nodes: string[] = []): Promise<Fuzzer> {
  const world: FuzzWorld = await setUpWorld(baseUrl);
  const clients: Sender[] = [baseUrl, ...nodes].map((url) => sender(url, { timeoutMs: 60_000 }));
  let turn = 0;
  const client: Pick<Sender, "send"> = { send: (request) => clients[turn++ % clients.length]!.send(request) };
  const check: Checker = checker(document);
  const raw = (r: FuzzRequest): RawRequest => {
    const headers: Record<string, string> = { ...r.headers };
    if (r.credential === "garbage") headers.authorization = r.garbage ?? "";
    else if (r.credential === "garbage-cookie") headers.cookie = r.garbage ?? "";
    else if (r.credential === "session") headers.cookie = world.cookie();
    else if (r.credential === "session+adm") {
      headers.cookie = world.cookie();
      headers.authorization = world.authorization("adm");
    } else if (r.credential !== "none") headers.authorization = world.authorization(r.credential);
    return {
      method: r.method,
      target: world.resolve(r.path) + (r.query ? `?${world.resolve(r.query)}` : ""),
      headers,
      body: r.body === undefined ? undefined : world.resolve(r.body),
    };
  };
  return {
    async send(route, r) {
      const request = raw(r);
      let response: RawResponse | undefined;
      try {
        response = await client.send(request);
      } catch (error) {
        // A reset or a hang is worse than a 500: the server failed without even answering.
        return { request, response, findings: [{ kind: "no answer", message: (error as Error).message }] };
      }
      const findings = check.check(route.operation, r.method, response);
      if (response.status >= 200 && response.status < 300) {
        const fault = await world.repair(r.route, r.credential);
        if (fault) findings.push({ kind: "5xx", message: `putting the tenant back after ${r.route}: ${fault}` });
      }
      return { request, response, findings };
    },
    explain(r, outcome) {
      const answer = outcome.response
        ? `${outcome.response.status} ${String(outcome.response.headers["content-type"] ?? "")} ${outcome.response.body.toString("utf8").slice(0, 400)}`
        : "no answer";
      return [
        ...outcome.findings.map((f) => `${f.kind}: ${f.message}`),
        "request:",
        describeRequest(r, world.resolve),
        `answer: ${answer}`,
      ].join("\n");
    },
    close() {
      for (const c of clients) c.close();
      world.close();
    },
  };
}
