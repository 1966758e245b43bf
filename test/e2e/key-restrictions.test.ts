// API key restrictions (docs/api-keys.md, Restrictions) over HTTP: an expiry, an index list and,
// for srh keys, a list of web origins, on REST, MCP and uploads.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ok } from "../support/contract.ts";
import type { Http, Reply } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let owner: Http;
/** PUBLIC indexes of tenant a: `dev_*` matches the first, not the second. */
const dev = "dev_catalog";
const prod = "prod_catalog";

beforeAll(async () => {
  world = await startWorld();
  owner = world.a.session;
  for (const name of [dev, prod]) {
    ok(await owner.post("/v1/indexes", { name, serviceName: world.a.service, visibility: "PUBLIC" }), 201);
    ok(await owner.put(`/v1/indexes/${name}/records/r1`, { title: "Amsterdam", weight: 5 }), 200);
  }
});
afterAll(() => world?.stop());

async function makeKey(body: Record<string, unknown>): Promise<{ id: string; key: string } & Record<string, unknown>> {
  return ok(await owner.post("/v1/api-keys", { name: "restricted", ...body }), 200);
}

const search = (indexName: string, key: string, headers: Record<string, string> = {}, serviceName = world.a.service) =>
  world.http.get(`/v1/search?${new URLSearchParams({ query: "ams", indexName, serviceName })}`, { key, headers });

/** 403 problem+json whose detail matches `detail`. */
function forbidden(reply: Reply, detail: RegExp): void {
  ok(reply, 403);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
  expect(reply.body).toMatchObject({ status: 403, resultCode: "FORBIDDEN" });
  expect(reply.body.detail).toMatch(detail);
}

const mcpSearch = (key: string, indexName: string, headers: Record<string, string> = {}) =>
  world.http.request("POST", "/mcp", {
    key,
    headers,
    json: {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "search", arguments: { indexName, phrase: "ams" } },
    },
  });

describe("creating and listing restricted keys", () => {
  test("the create answer and the list show expiresAt, indexes and referrers; null when unrestricted", async () => {
    const expiresAt = Date.now() + 3_600_000;
    const restricted = await makeKey({
      type: "srh",
      expiresAt,
      indexes: [dev, "shop_*"],
      referrers: ["https://Shop.Example.com", "https://*.example.org"],
    });
    expect(restricted).toMatchObject({
      expiresAt,
      indexes: [dev, "shop_*"],
      referrers: ["https://shop.example.com", "https://*.example.org"],
    });
    const plain = await makeKey({ type: "svc" });
    expect(plain).toMatchObject({ expiresAt: null, indexes: null, referrers: null });

    const list = ok(await owner.get("/v1/api-keys"));
    expect(list.find((k: { id: string }) => k.id === restricted.id)).toMatchObject({
      expiresAt,
      indexes: [dev, "shop_*"],
      referrers: ["https://shop.example.com", "https://*.example.org"],
    });
    expect(list.find((k: { id: string }) => k.id === plain.id)).toMatchObject({
      expiresAt: null,
      indexes: null,
      referrers: null,
    });
  });

  test.each([
    [{ type: "adm", expiresAt: 1_000 }, "expiresAt", /future/],
    [{ type: "adm", indexes: [] }, "indexes", /./],
    [{ type: "adm", indexes: ["has space"] }, "indexes[0]", /./],
    [{ type: "svc", referrers: ["https://shop.example.com"] }, "referrers", /only srh keys/],
    [{ type: "srh", referrers: [] }, "referrers", /./],
    [{ type: "srh", referrers: ["shop.example.com"] }, "referrers[0]", /origin/],
    [{ type: "srh", referrers: ["https://shop.example.com/search"] }, "referrers[0]", /without a path/],
    [{ type: "srh", referrers: ["https://ok.example", "ftp://files.example"] }, "referrers[1]", /origin/],
  ])("%j is refused with 400 naming %s", async (body, field, message) => {
    const reply = await owner.post("/v1/api-keys", { name: "bad", ...body });
    ok(reply, 400);
    expect(reply.headers.get("content-type")).toBe("application/problem+json");
    expect(reply.body.errors).toEqual([{ field, message: expect.stringMatching(message) }]);
  });
});

describe("expiry", () => {
  test("a key past its expiresAt is 401 saying it expired, even while its verification is cached", async () => {
    const expiresAt = Date.now() + 1_500;
    const { key } = await makeKey({ type: "adm", expiresAt });
    // Verified (and cached for 30 s) before the expiry...
    ok(await world.http.get("/v1/indexes", { key }), 200);
    await sleep(Math.max(0, expiresAt - Date.now()) + 100);
    // ...and refused after it, twice: from the cache, and from the store once evicted.
    for (let i = 0; i < 2; i++) {
      const reply = await world.http.get("/v1/indexes", { key });
      ok(reply, 401);
      expect(reply.headers.get("content-type")).toBe("application/problem+json");
      expect(reply.body.detail).toMatch(/^the API key expired at \d{4}-\d\d-\d\dT/);
    }
  });
});

describe("a key restricted to some indexes", () => {
  let key: string;
  beforeAll(async () => {
    key = (await makeKey({ type: "adm", indexes: ["dev_*"] })).key;
  });

  test("search reaches a listed index; another is 403 naming it, whether or not it exists", async () => {
    expect(ok(await search(dev, key)).suggestions.map((s: { id: string }) => s.id)).toEqual(["r1"]);
    forbidden(await search(prod, key), /index "prod_catalog" is not among them/);
    forbidden(await search("no-such-index", key), /index "no-such-index" is not among them/);
    // The same searches with an unrestricted key of the same type work.
    ok(await search(prod, world.a.keys.adm), 200);
  });

  test("record reads and writes and versions of another index are 403; of a listed one they work", async () => {
    ok(await world.http.get(`/v1/indexes/${dev}/records/r1`, { key }), 200);
    ok(await world.http.put(`/v1/indexes/${dev}/records/r2`, { title: "Rotterdam" }, { key }), 200);
    ok(await world.http.get(`/v1/indexes/${dev}/versions`, { key }), 200);
    const calls: [string, string, unknown?][] = [
      ["GET", `/v1/indexes/${prod}/records/r1`],
      ["PUT", `/v1/indexes/${prod}/records/r2`, { title: "Rotterdam" }],
      ["DELETE", `/v1/indexes/${prod}/records/r1`],
      ["GET", `/v1/indexes/${prod}/versions`],
      ["POST", `/v1/indexes/${prod}/versions/1/activate`],
      ["POST", `/v1/indexes/${prod}/coalesce`],
    ];
    for (const [method, path, json] of calls) {
      forbidden(await world.http.request(method, path, { key, json }), /index "prod_catalog" is not among them/);
    }
    // Nothing was written to the other index.
    ok(await world.http.get(`/v1/indexes/${prod}/records/r1`, { key: world.a.keys.adm }), 200);
  });

  test("uploads: start, complete and status of another index are 403; start on a listed one works", async () => {
    forbidden(
      await world.http.post("/v1/uploads/start", { indexName: prod }, { key }),
      /index "prod_catalog" is not among them/,
    );
    const started = ok(await world.http.post("/v1/uploads/start", { indexName: prod }, { key: world.a.keys.adm }));
    forbidden(
      await world.http.post("/v1/uploads/complete", { indexName: prod, indexVersion: started.indexVersion }, { key }),
      /prod_catalog/,
    );
    forbidden(await world.http.get(`/v1/uploads/${prod}/${started.indexVersion}`, { key }), /prod_catalog/);

    const mine = ok(await world.http.post("/v1/uploads/start", { indexName: dev }, { key }));
    const status = ok(await world.http.get(`/v1/uploads/${dev}/${mine.indexVersion}`, { key }));
    expect(status.state).toBe("awaiting_upload");
  });

  test("the index list shows only listed indexes; the catalog is scoped the same way", async () => {
    const names = ok(await world.http.get("/v1/indexes", { key })).indexes.map((i: { name: string }) => i.name);
    expect(names).toEqual([dev]);
    const all = ok(await world.http.get("/v1/indexes", { key: world.a.keys.adm })).indexes;
    expect(all.length).toBeGreaterThan(1);

    forbidden(await world.http.get(`/v1/indexes/${prod}`, { key }), /prod_catalog/);
    forbidden(await world.http.patch(`/v1/indexes/${prod}`, { visibility: "PRIVATE" }, { key }), /prod_catalog/);
    forbidden(await world.http.delete(`/v1/indexes/${prod}`, { key }), /prod_catalog/);
    forbidden(
      await world.http.post("/v1/indexes", { name: "prod_other", serviceName: world.a.service }, { key }),
      /index "prod_other" is not among them/,
    );
    ok(await world.http.get(`/v1/indexes/${prod}`, { key: world.a.keys.adm }), 200);

    // Indexes whose names match can be made and removed.
    ok(await world.http.post("/v1/indexes", { name: "dev_scratch", serviceName: world.a.service }, { key }), 201);
    ok(await world.http.delete("/v1/indexes/dev_scratch", { key }), 204);

    // Services hold indexes of any name: reading them is fine, changing them is not.
    ok(await world.http.get("/v1/services", { key }), 200);
    forbidden(await world.http.post("/v1/services", { name: `restricted-${process.pid}` }, { key }), /services/);
    forbidden(await world.http.delete(`/v1/services/${world.a.service}`, { key }), /services/);
  });

  test("MCP tools answer a tool error naming the other index; a listed one is searched", async () => {
    const other = ok(await mcpSearch(key, prod));
    expect(other.result.isError).toBe(true);
    expect(other.result.content[0].text).toMatch(/index "prod_catalog" is not among them/);
    const listed = ok(await mcpSearch(key, dev));
    expect(listed.result.isError).toBe(false);
    expect(JSON.parse(listed.result.content[0].text).indexName).toBe(dev);
  });

  test("an srh key with a list reaches only its own tenant's indexes, though anyone may search another's PUBLIC one", async () => {
    const srh = (await makeKey({ type: "srh", indexes: [world.a.publicIndex, world.b.publicIndex] })).key;
    ok(await search(world.a.publicIndex, srh), 200);
    forbidden(await search(world.b.publicIndex, srh, {}, world.b.service), /own tenant/);
    ok(await search(world.b.publicIndex, world.a.keys.srh, {}, world.b.service), 200);
  });
});

describe("an srh key restricted to some web origins", () => {
  let key: string;
  beforeAll(async () => {
    key = (await makeKey({ type: "srh", referrers: ["https://shop.example.com", "https://*.example.org"] })).key;
  });

  test("only a listed origin may use the key, by Origin or, lacking it, by Referer; others are 403 naming it", async () => {
    ok(await search(dev, key, { origin: "https://shop.example.com" }), 200);
    ok(await search(dev, key, { origin: "https://a.b.example.org" }), 200);
    ok(await search(dev, key, { referer: "https://shop.example.com/products?q=shoes" }), 200);
    ok(await world.http.get(`/v1/indexes/${dev}/records/r1`, { key, headers: { origin: "https://shop.example.com" } }));

    // The wildcard covers subdomains, not the bare domain; the scheme must match too.
    forbidden(await search(dev, key, { origin: "https://evil.example" }), /origin https:\/\/evil\.example/);
    forbidden(await search(dev, key, { origin: "https://example.org" }), /origin https:\/\/example\.org/);
    forbidden(await search(dev, key, { origin: "http://shop.example.com" }), /origin http:\/\/shop\.example\.com/);
    forbidden(await search(dev, key, { referer: "https://evil.example/page" }), /origin https:\/\/evil\.example/);
  });

  test("a request with neither Origin nor Referer is 403 saying which header to send", async () => {
    forbidden(await search(dev, key), /send an Origin header/);
    // The same key without the restriction, and anonymous callers, are unaffected.
    ok(await search(dev, world.a.keys.srh), 200);
  });

  test("POST /mcp is checked the same way", async () => {
    const none = await mcpSearch(key, dev);
    forbidden(none, /send an Origin header/);
    forbidden(await mcpSearch(key, dev, { origin: "https://evil.example" }), /evil\.example/);
    const allowed = ok(await mcpSearch(key, dev, { origin: "https://shop.example.com" }));
    expect(allowed.result.isError).toBe(false);
  });
});
