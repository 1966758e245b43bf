// Read your writes and the routing of regions that are behind, with a fake fetch standing in for
// three regions: what a client sees when one region has not applied its write yet.
import { expect, test } from "vitest";
import { createClient, createSearchClient, isSearchProblem, SiftUnreachableError } from "../src/index.ts";

type Handler = (url: URL, request: Request) => Response | Promise<Response>;

const searchAnswer = (region: string, indexVersion = "1") =>
  Response.json({ suggestions: [{ id: region, title: region }], indexVersion });

/** 503 problem+json as a region sends it when it has not applied `minVersion` in time. */
const behind = (version: string, retryAfter: string | undefined = "1") =>
  new Response(
    JSON.stringify({
      type: "about:blank",
      title: "Service Unavailable",
      status: 503,
      detail: `this region has not applied version ${version} of the index yet; try again or ask another region`,
    }),
    {
      status: 503,
      headers: { "content-type": "application/problem+json", ...(retryAfter ? { "retry-after": retryAfter } : {}) },
    },
  );

/** Regions `a`, `b`, `c` at https://<id>.sift.test, `a` the closest; every request but /healthz is recorded. */
function fakeRegions(handlers: Record<string, Handler>) {
  const latency: Record<string, number> = { a: 0, b: 15, c: 30 };
  const calls: { region: string; url: URL; body: unknown }[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const region = url.hostname.split(".")[0]!;
    await new Promise((r) => setTimeout(r, latency[region] ?? 0));
    if (url.pathname === "/healthz") return Response.json({ status: "ok" });
    const text = await request.clone().text();
    const body = text ? JSON.parse(text) : undefined;
    calls.push({ region, url, body });
    const handler = handlers[region] ?? handlers["*"];
    if (!handler) throw new TypeError("fetch failed");
    return handler(url, request);
  };
  const regions = Object.keys(latency).map((id) => ({ id, url: `https://${id}.sift.test` }));
  return { fetch, calls, regions };
}

const query = { query: "gar", indexName: "products", serviceName: "shop" };

test("after a write, searches and record reads of that index pass its version as minVersion", async () => {
  let version = 0;
  const fake = fakeRegions({
    "*": (url, request) => {
      if (request.method === "PUT")
        return Response.json({ resultCode: "SUCCESS", message: "OK", indexVersion: `3.${++version}` });
      if (url.pathname.startsWith("/v1/indexes/products/records/"))
        return Response.json({ id: "hose-1", title: "Hose" });
      if (url.pathname === "/v1/search/multi") return Response.json({ results: [] });
      return searchAnswer("a");
    },
  });
  const sift = createClient({ baseUrl: "https://a.sift.test", fetch: fake.fetch });
  await sift.search(query);
  await sift.records.put("products", "hose-1", { title: "Garden hose" });
  await sift.records.put("products", "hose-2", { title: "Garden hose, long" });
  await sift.search(query);
  await sift.records.get("products", "hose-1");
  await sift.search({ ...query, indexName: "categories" });
  await sift.multiSearch([query, { ...query, indexName: "categories" }]);
  const sent = fake.calls;
  const minVersions = sent
    .filter((c) => c.url.pathname !== "/v1/search/multi" && !c.body)
    .map((c) => c.url.searchParams.get("minVersion"));
  // Before any write: none; after the two writes: the second one's version; another index: none.
  expect(minVersions).toEqual([null, "3.2", "3.2", null]);
  const multi = sent.find((c) => c.url.pathname === "/v1/search/multi")!.body as { searches: unknown[] };
  expect(multi.searches).toEqual([
    { ...query, minVersion: "3.2" },
    { ...query, indexName: "categories" },
  ]);
  expect(sift.writtenVersion("products")).toBe("3.2");
});

test("a version or minVersion the caller gives is sent as given, and readYourWrites: false sends none", async () => {
  const fake = fakeRegions({
    "*": (url, request) =>
      request.method === "PUT"
        ? Response.json({ resultCode: "SUCCESS", message: "OK", indexVersion: "7.3" })
        : url.pathname.includes("/records/")
          ? Response.json({ id: "r", title: "R" })
          : searchAnswer("a", "7.3"),
  });
  const sift = createClient({ baseUrl: "https://a.sift.test", fetch: fake.fetch });
  await sift.records.put("products", "r", { title: "R" });
  await sift.search({ ...query, version: "6" });
  await sift.search({ ...query, minVersion: "7.1" });
  await sift.records.get("products", "r", "6");
  await sift.records.get("products", "r", { minVersion: "7.2" });
  const off = createClient({ baseUrl: "https://a.sift.test", fetch: fake.fetch, readYourWrites: false });
  await off.records.put("products", "r", { title: "R" });
  await off.search(query);
  const reads = fake.calls.filter((c) => !c.body);
  expect(reads.map((c) => [c.url.searchParams.get("version"), c.url.searchParams.get("minVersion")])).toEqual([
    ["6", null],
    [null, "7.1"],
    ["6", null],
    [null, "7.2"],
    [null, null],
  ]);
});

test("of concurrent writes the later version is kept, whichever answers last; deleting the index forgets it", async () => {
  const answers: Record<string, { version: string; delayMs: number }> = {
    first: { version: "3.9", delayMs: 0 },
    second: { version: "3.10", delayMs: 0 },
    slow: { version: "3.8", delayMs: 40 },
  };
  const fake = fakeRegions({
    "*": async (url, request) => {
      const id = url.pathname.split("/").at(-1)!;
      if (request.method === "DELETE" && url.pathname === "/v1/indexes/products")
        return new Response(null, { status: 204 });
      if (request.method !== "PUT") return searchAnswer("a");
      await new Promise((r) => setTimeout(r, answers[id]!.delayMs));
      return Response.json({ resultCode: "SUCCESS", message: "OK", indexVersion: answers[id]!.version });
    },
  });
  const sift = createClient({ baseUrl: "https://a.sift.test", fetch: fake.fetch });
  // 3.10 is later than 3.9 (numbers, not strings), and 3.8 answering last does not win.
  await Promise.all(["slow", "first", "second"].map((id) => sift.records.put("products", id, { title: id })));
  expect(sift.writtenVersion("products")).toBe("3.10");
  await sift.indexes.delete("products");
  await sift.search(query);
  expect(sift.writtenVersion("products")).toBeUndefined();
  expect(fake.calls.at(-1)!.url.searchParams.get("minVersion")).toBeNull();
});

test("delete, purge, activate and a finished ingest are writes too", async () => {
  const fake = fakeRegions({
    "*": (url, request) => {
      const ok = (indexVersion: string) => Response.json({ resultCode: "SUCCESS", message: "OK", indexVersion });
      if (request.method === "DELETE") return ok("2.1");
      if (url.pathname.endsWith("/purge")) return ok("2.2");
      if (url.pathname.endsWith("/activate")) return ok("1");
      if (url.pathname.startsWith("/v1/uploads/"))
        return Response.json({ indexVersion: "5", state: "succeeded", recordsIngested: 3, errors: [] });
      return searchAnswer("a");
    },
  });
  const sift = createClient({ baseUrl: "https://a.sift.test", fetch: fake.fetch });
  const seen: (string | undefined)[] = [];
  await sift.records.delete("products", "r");
  seen.push(sift.writtenVersion("products"));
  await sift.records.purge("products", "r");
  seen.push(sift.writtenVersion("products"));
  await sift.waitForIngest("products", "5");
  seen.push(sift.writtenVersion("products"));
  // A rollback answers an older version; the newest stays the bar: a region that has it has the
  // rollback too once it has caught up with the log (the server waits for that).
  await sift.versions.activate("other", "1");
  seen.push(sift.writtenVersion("other"));
  expect(seen).toEqual(["2.1", "2.2", "5", "1"]);
});

test("a region behind on minVersion hands the search to the next region and is set aside only briefly", async () => {
  const fake = fakeRegions({
    a: (url) => (url.searchParams.get("minVersion") ? behind("3.4") : searchAnswer("a")),
    b: () => searchAnswer("b", "3.4"),
    c: () => searchAnswer("c", "3.4"),
  });
  const sift = createSearchClient({ baseUrl: "https://a.sift.test", regions: fake.regions, fetch: fake.fetch });
  expect((await sift.router.hosts())[0]!.id).toBe("a");
  const found = await sift.search({ ...query, minVersion: "3.4" });
  expect(found.suggestions[0]!.id).toBe("b");
  const hosts = await sift.router.hosts();
  expect(hosts.map((h) => h.id)).toEqual(["b", "c", "a"]);
  // Set aside for its Retry-After (1 s), not the two minutes of a failed host.
  const aside = hosts[2]!.downUntil - Date.now();
  expect(aside).toBeGreaterThan(0);
  expect(aside).toBeLessThanOrEqual(1_000);
  await new Promise((r) => setTimeout(r, aside + 20));
  expect((await sift.search(query)).suggestions[0]!.id).toBe("a");
});

test("a 503 without Retry-After, or a dead region, is set aside for the full time", async () => {
  const fake = fakeRegions({
    a: () => new Response("busy", { status: 503 }),
    b: () => {
      throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    },
    c: () => searchAnswer("c"),
  });
  // The probes see a healthy a and b; only searches fail there.
  const sift = createSearchClient({ baseUrl: "https://a.sift.test", regions: fake.regions, fetch: fake.fetch });
  expect((await sift.search(query)).suggestions[0]!.id).toBe("c");
  const hosts = await sift.router.hosts();
  for (const id of ["a", "b"]) expect(hosts.find((h) => h.id === id)!.downUntil - Date.now()).toBeGreaterThan(100_000);
});

test("when every region answers 503 the error names each region and what it said", async () => {
  const fake = fakeRegions({ "*": () => behind("3.4") });
  const sift = createSearchClient({ baseUrl: "https://a.sift.test", regions: fake.regions, fetch: fake.fetch });
  const error = await sift.search({ ...query, minVersion: "3.4" }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SiftUnreachableError);
  const { causes, message } = error as SiftUnreachableError;
  expect(causes.map((c) => c.region)).toEqual(["a", "b", "c"]);
  for (const cause of causes)
    expect(cause.reason).toMatch(/^HTTP 503: this region has not applied version 3\.4.*retry after 1 s/);
  expect(message).toContain("b https://b.sift.test (HTTP 503: this region has not applied version 3.4");
});

test("regions that share one URL are asked once per request", async () => {
  const fake = fakeRegions({ "*": () => behind("1") });
  const regions = [...fake.regions, { id: "d", url: "https://a.sift.test" }, { id: "e", url: "https://a.sift.test/" }];
  const sift = createSearchClient({ baseUrl: "https://a.sift.test", regions, fetch: fake.fetch });
  await expect(sift.search(query)).rejects.toBeInstanceOf(SiftUnreachableError);
  expect(fake.calls.map((c) => c.region).sort()).toEqual(["a", "b", "c"]);
});

test("a multi-search asks the next region again for the searches a region answered 503, only those", async () => {
  const answer = (region: string, searches: { indexName: string; minVersion?: string }[]) =>
    Response.json({
      results: searches.map((s) =>
        s.minVersion && region === "a"
          ? { type: "about:blank", title: "Service Unavailable", status: 503, detail: "not applied yet" }
          : { suggestions: [{ id: `${region}:${s.indexName}`, title: s.indexName }], indexVersion: "1", region },
      ),
    });
  const fake = fakeRegions({
    "*": async (url, request) => answer(url.hostname.split(".")[0]!, (await request.json()).searches),
  });
  const sift = createSearchClient({ baseUrl: "https://a.sift.test", regions: fake.regions, fetch: fake.fetch });
  const results = await sift.multiSearch([
    { ...query, indexName: "one" },
    { ...query, indexName: "two", minVersion: "2.1" },
    { ...query, indexName: "three" },
  ]);
  expect(results.map((r) => (isSearchProblem(r) ? r.status : r.suggestions[0]!.id))).toEqual([
    "a:one",
    "b:two",
    "a:three",
  ]);
  expect(fake.calls.map((c) => [c.region, (c.body as { searches: unknown[] }).searches.length])).toEqual([
    ["a", 3],
    ["b", 1],
  ]);
});
