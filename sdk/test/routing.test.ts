// Region routing and failover against real local HTTP servers standing in for regions.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createRouter, createSearchClient, SiftUnreachableError } from "../src/index.ts";

interface Region {
  id: string;
  url: string;
  hits: string[];
  server: Server;
}

async function region(id: string, options: { delayMs?: number; status?: number } = {}): Promise<Region> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url!);
    setTimeout(() => {
      const status = req.url === "/healthz" ? 200 : (options.status ?? 200);
      res.writeHead(status, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          req.url === "/healthz" ? { status: "ok" } : { suggestions: [{ id, title: id }], indexVersion: "1" },
        ),
      );
    }, options.delayMs ?? 0);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { id, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, hits, server };
}

let near: Region, far: Region, broken: Region;
const dead = { id: "dead", url: "http://127.0.0.1:9" };

beforeAll(async () => {
  [near, far, broken] = await Promise.all([
    region("near"),
    region("far", { delayMs: 60 }),
    region("broken", { status: 503 }),
  ]);
});
afterAll(() => Promise.all([near, far, broken].map((r) => new Promise((done) => r.server.close(done)))));

const query = { query: "a", indexName: "i", serviceName: "s" };

test("requests go to the region with the lowest measured latency", async () => {
  const client = createSearchClient({ baseUrl: far.url, regions: [far, near] });
  const result = await client.search(query);
  expect(result.suggestions[0]!.id).toBe("near");
  expect((await client.router.hosts()).map((h) => h.id)).toEqual(["near", "far"]);
});

test("a region that is down or answers 503 is skipped transparently and set aside", async () => {
  const client = createSearchClient({ baseUrl: near.url, regions: [dead, broken, far] });
  // Probing already set the dead host aside; the 503 one is found on the first request.
  const result = await client.search(query);
  expect(result.suggestions[0]!.id).toBe("far");
  const hosts = await client.router.hosts();
  expect(hosts[0]!.id).toBe("far");
  expect(hosts.slice(1).every((h) => h.downUntil > Date.now())).toBe(true);
});

test("regionId forces a region: its endpoint answers, or the request fails", async () => {
  const client = createSearchClient({ baseUrl: near.url, regions: [near, far] });
  const result = await client.search({ ...query, regionId: "far" });
  expect(result.suggestions[0]!.id).toBe("far");
  // A forced region that does not answer is not replaced by another: that answer would not be its.
  const failing = createSearchClient({ baseUrl: near.url, regions: [near, dead], timeoutMs: 500 });
  const before = near.hits.filter((h) => h.startsWith("/v1/search")).length;
  const error = await failing.search({ ...query, regionId: "dead" }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SiftUnreachableError);
  expect((error as SiftUnreachableError).causes.map((c) => c.region)).toEqual(["dead"]);
  expect(near.hits.filter((h) => h.startsWith("/v1/search")).length).toBe(before);
  // A region the router has no endpoint for goes where any request goes; that server decides.
  expect((await client.search({ ...query, regionId: "tokyo" })).suggestions[0]!.id).toBe("near");
});

test("when every host fails the error names each one", async () => {
  const router = createRouter({ baseUrl: dead.url, timeoutMs: 500 });
  const error = await router.fetch(new Request(`${dead.url}/v1/search`)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SiftUnreachableError);
  expect((error as SiftUnreachableError).causes).toHaveLength(1);
});

test("an aborted request is not retried on another host", async () => {
  const client = createSearchClient({ baseUrl: far.url, regions: [far, near] });
  await client.router.hosts();
  const before = far.hits.length + near.hits.length;
  const controller = new AbortController();
  const pending = client.search({ ...query, regionId: "far" }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 10);
  await expect(pending).rejects.toThrow(/abort/i);
  await new Promise((r) => setTimeout(r, 100));
  expect(far.hits.length + near.hits.length - before).toBe(1);
});

test("a connection reset under a request is retried once on the same host before it is set aside", async () => {
  let calls = 0;
  const flaky = createServer((req, res) => {
    calls++;
    if (calls === 1) return req.socket.destroy(); // the server dropped the socket as the request arrived
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ suggestions: [{ id: "once-more", title: "x" }], indexVersion: "1" }));
  });
  await new Promise<void>((r) => flaky.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(flaky.address() as { port: number }).port}`;
  const client = createSearchClient({ baseUrl: url });
  expect((await client.search(query)).suggestions[0]!.id).toBe("once-more");
  expect(calls).toBe(2);
  expect((await client.router.hosts())[0]!.downUntil).toBe(0);
  await new Promise((done) => flaky.close(done));
});

test("a 421 sends the request to the regions that hold the index, and later ones straight there", async () => {
  const elsewhere = createServer((req, res) => {
    if (req.url === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ status: "ok" }));
    }
    res.writeHead(421, { "content-type": "application/problem+json" });
    res.end(
      JSON.stringify({
        type: "https://sift.dev/problems/misdirected",
        title: "Held in other regions",
        status: 421,
        detail: 'index "i" of service "s" is held in far, not in near',
        regions: [{ id: "far", url: far.url }],
      }),
    );
  });
  await new Promise<void>((r) => elsewhere.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
  // What the client asked of each region (fetch itself asks again once after a 421, on a new connection).
  const asked: string[] = [];
  const client = createSearchClient({
    baseUrl: url,
    regions: [{ id: "near", url }, far],
    fetch: (input, init) => {
      const target = String(input);
      if (!target.endsWith("/healthz")) asked.push(target.startsWith(url) ? "near" : "far");
      return globalThis.fetch(input, init);
    },
  });
  // The far region answers slowly: the one that does not hold the index is asked first.
  expect((await client.router.hosts()).map((h) => h.id)).toEqual(["near", "far"]);
  expect((await client.search(query)).suggestions[0]!.id).toBe("far");
  expect((await client.search(query)).suggestions[0]!.id).toBe("far");
  expect(asked).toEqual(["near", "far", "far"]);
  // The region that said 421 is not set aside: it serves other indexes, whose placement is not known yet.
  expect((await client.router.hosts()).find((h) => h.id === "near")!.downUntil).toBe(0);
  await client.search({ ...query, serviceName: "other" });
  expect(asked).toEqual(["near", "far", "far", "near", "far"]);
  await new Promise((done) => elsewhere.close(done));
});
