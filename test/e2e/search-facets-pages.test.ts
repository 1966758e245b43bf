// Issue 16 over HTTP, as an integrator builds a results page: hits, the total, facet counts for
// three fields and the next page from one response; string, IN and EXISTS filters; sorting; several
// searches in one request; and the 400s for what is out of range (docs/api.md, Search).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { expectContract, ok } from "../support/contract.ts";
import { Http, type Reply } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
const index = "shoes";

// Every title starts with the query word "shoe", so ranking leaves them tied up to the sort
// field; the socks and the hat match the filters below but not the query.
const records: Record<string, { title: string; data: Record<string, unknown> }> = {
  s01: { title: "Shoe Runner", data: { brand: "Acme", color: ["red", "white"], price: 50, country: "FR" } },
  s02: { title: "Shoe Trail", data: { brand: "Acme", color: "red", price: 80, country: "DE" } },
  s03: { title: "Shoe Court", data: { brand: "ACME", color: "blue", price: 65, country: "FR" } },
  s04: { title: "Shoe Walker", data: { brand: "Bolt", color: ["blue", "black"], price: 120, country: "US" } },
  s05: { title: "Shoe Sprint", data: { brand: "Bolt", color: "green", price: 95 } },
  s06: { title: "Shoe Hiker", data: { brand: "Crest", color: ["black"], price: 140, country: "US" } },
  s07: { title: "Shoe Loafer", data: { brand: "Crest", price: 70, country: "IT" } },
  s08: { title: "Shoe Sandal", data: { brand: "Dune", color: "white", price: 30, country: "IT" } },
  s09: { title: "Shoe Slipper", data: { color: "red", price: 20 } },
  s10: { title: "Shoe Boot", data: { brand: "Acme", color: [], price: "unknown", country: "FR" } },
  s11: { title: "Shoe Clog", data: { brand: "Dune", color: null, country: "NL" } },
  s12: { title: "Shoe Derby", data: { brand: "Bolt", color: "Red", price: 110, country: "DE" } },
  s13: { title: "Shoe Mule", data: { brand: "Acme", color: ["red", "red"], price: 45, country: "FR" } },
  s14: { title: "Shoe Oxford", data: { brand: "Crest", color: "brown", price: 150, country: "GB" } },
  k01: { title: "Sock Wool", data: { brand: "Acme", color: "red", price: 10 } },
  k02: { title: "Sock Cotton", data: { brand: "Bolt", color: "blue", price: 8 } },
  k03: { title: "Hat Felt", data: { brand: "Acme", price: 25 } },
};
const shoes = Object.keys(records).filter((id) => id.startsWith("s"));

beforeAll(async () => {
  world = await startWorld();
  const s = world.a.session;
  expect(
    (await s.post("/v1/indexes", { name: index, serviceName: world.a.service, visibility: "PUBLIC" })).status,
  ).toBe(201);
  for (const [id, body] of Object.entries(records))
    expect((await s.put(`/v1/indexes/${index}/records/${id}`, body)).status).toBe(200);
});
afterAll(() => world?.stop());

type Params = Record<string, string | number | boolean>;
const get = (params: Params): Promise<Reply> => {
  const q = new URLSearchParams({
    indexName: index,
    serviceName: world.a.service,
    query: "shoe",
    limit: "20",
    ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
  });
  return world.http.get(`/v1/search?${q}`);
};
const search = async (params: Params) => ok(await get(params));
const ids = async (params: Params) => (await search(params)).suggestions.map((s: { id: string }) => s.id);
const sorted = (list: string[]) => [...list].sort();

describe("a results page from one response", () => {
  test("hits, the exact total, facets of three fields over every match, and the next pages by offset", async () => {
    const first = await search({ limit: 5, facets: "data.brand, data.color,data.price" });
    expect(first.suggestions).toHaveLength(5);
    expect(first).toMatchObject({ totalHits: 14, totalHitsExact: true });
    // Keyed as the request spelled the paths (trimmed); count descending, then the value
    // (numbers before strings; strings by code unit, so "ACME" and "Red" come before lower case).
    expect(first.facets).toEqual({
      "data.brand": [
        { value: "Acme", count: 4 },
        { value: "Bolt", count: 3 },
        { value: "Crest", count: 3 },
        { value: "Dune", count: 2 },
        { value: "ACME", count: 1 },
      ],
      // s13's two "red" count once; the empty array and null count nothing.
      "data.color": [
        { value: "red", count: 4 },
        { value: "black", count: 2 },
        { value: "blue", count: 2 },
        { value: "white", count: 2 },
        { value: "Red", count: 1 },
        { value: "brown", count: 1 },
        { value: "green", count: 1 },
      ],
      // Top 10 by default: twelve numbers and one string, all counted once.
      "data.price": [20, 30, 45, 50, 65, 70, 80, 95, 110, 120].map((value) => ({ value, count: 1 })),
    });
    expect(first.facetStats).toEqual({ "data.price": { min: 20, max: 150 } });

    // The next pages, from the version the first page named: together every match, once.
    const seen: string[] = first.suggestions.map((s: { id: string }) => s.id);
    for (const offset of [5, 10]) {
      const page = await search({ limit: 5, offset, version: first.indexVersion });
      expect(page).toMatchObject({ totalHits: 14, indexVersion: first.indexVersion });
      seen.push(...page.suggestions.map((s: { id: string }) => s.id));
    }
    expect(seen).toHaveLength(14);
    expect(sorted(seen)).toEqual(sorted(shoes));
    // One ranked list: the pages are its slices.
    expect(seen).toEqual(await ids({ limit: 14 }));
    const past = await search({ offset: 1000 });
    expect(past).toMatchObject({ suggestions: [], totalHits: 14 });
  });

  test("a pinned version keeps pages stable while the index changes", async () => {
    const first = await search({ limit: 7 });
    const put = await world.a.session.put(`/v1/indexes/${index}/records/s15`, {
      title: "Shoe Aardvark",
      data: { brand: "Acme", price: 1 },
    });
    expect(put.status).toBe(200);
    try {
      const pinned = await search({ limit: 7, offset: 7, version: first.indexVersion });
      expect(pinned.totalHits).toBe(14);
      expect(sorted([...first.suggestions, ...pinned.suggestions].map((s: { id: string }) => s.id))).toEqual(
        sorted(shoes),
      );
      expect((await search({ limit: 1 })).totalHits).toBe(15);
    } finally {
      expect((await world.a.session.delete(`/v1/indexes/${index}/records/s15`)).status).toBe(200);
    }
  });

  test("facets count the records the filter keeps, not the page; maxFacetValues cuts each list", async () => {
    const cheap = await search({ limit: 1, filter: "data.price < 50", facets: "data.brand,data.nothing" });
    expect(cheap.totalHits).toBe(3);
    expect(cheap.facets).toEqual({
      "data.brand": [
        { value: "Acme", count: 1 },
        { value: "Dune", count: 1 },
      ],
      "data.nothing": [],
    });
    expect(cheap.facetStats).toEqual({});
    const top = await search({ limit: 1, facets: "data.color", maxFacetValues: 2 });
    expect(top.facets).toEqual({
      "data.color": [
        { value: "red", count: 4 },
        { value: "black", count: 2 },
      ],
    });
    // Without facets there are none in the response, but the total always is.
    const plain = await search({ limit: 1 });
    expect(plain).not.toHaveProperty("facets");
    expect(plain).not.toHaveProperty("facetStats");
    expect(plain.totalHits).toBe(14);
  });
});

describe("string, IN and EXISTS filters", () => {
  test("= on a string is exact and case-sensitive; != needs a value of the type; ! keeps records without it", async () => {
    expect(sorted(await ids({ filter: 'data.brand = "Acme"' }))).toEqual(["s01", "s02", "s10", "s13"]);
    expect(sorted(await ids({ filter: 'data.brand != "Acme"' }))).toEqual([
      "s03",
      "s04",
      "s05",
      "s06",
      "s07",
      "s08",
      "s11",
      "s12",
      "s14",
    ]);
    expect(sorted(await ids({ filter: '!(data.brand = "Acme")' }))).toEqual([
      "s03",
      "s04",
      "s05",
      "s06",
      "s07",
      "s08",
      "s09",
      "s11",
      "s12",
      "s14",
    ]);
    // An array field: != excludes records holding the value anywhere.
    expect(sorted(await ids({ filter: 'data.color != "red"' }))).toEqual([
      "s03",
      "s04",
      "s05",
      "s06",
      "s08",
      "s12",
      "s14",
    ]);
    expect(await ids({ filter: 'data.price = "unknown"' })).toEqual(["s10"]);
  });

  test("IN matches a scalar or any array element; EXISTS is present and not null", async () => {
    expect(sorted(await ids({ filter: 'data.color IN ["red", "blue"]' }))).toEqual([
      "s01",
      "s02",
      "s03",
      "s04",
      "s09",
      "s13",
    ]);
    expect(sorted(await ids({ filter: "data.price in [20, 150, true]" }))).toEqual(["s09", "s14"]);
    expect(sorted(await ids({ filter: "EXISTS data.color" }))).toEqual(
      shoes.filter((id) => id !== "s07" && id !== "s11"),
    );
    expect(sorted(await ids({ filter: "!exists data.color" }))).toEqual(["s07", "s11"]);
  });

  test("string filters combine with numeric ones, && binding tighter than ||", async () => {
    expect(
      sorted(await ids({ filter: 'EXISTS data.country && data.country IN ["FR", "IT"] && data.price >= 45' })),
    ).toEqual(["s01", "s03", "s07", "s13"]);
    expect(sorted(await ids({ filter: 'data.brand = "Dune" || data.brand = "ACME" && data.price > 100' }))).toEqual([
      "s08",
      "s11",
    ]);
  });
});

describe("sort", () => {
  const byPrice = ["s09", "s08", "s13", "s01", "s03", "s07", "s02", "s05", "s12", "s04", "s06", "s14"];

  test("by a numeric field, both ways: numbers, then strings, then records without the field", async () => {
    expect(await ids({ sort: "data.price:asc" })).toEqual([...byPrice, "s10", "s11"]);
    expect(await ids({ sort: "data.price:desc" })).toEqual([...byPrice].reverse().concat("s10", "s11"));
  });

  test("by a string field, by code unit; pages of a sorted list are its slices", async () => {
    const all = await search({ sort: "data.brand:asc" });
    expect(all.suggestions.map((s: { data: { brand?: string } }) => s.data.brand)).toEqual([
      "ACME",
      ...Array(4).fill("Acme"),
      ...Array(3).fill("Bolt"),
      ...Array(3).fill("Crest"),
      ...Array(2).fill("Dune"),
      undefined,
    ]);
    const pages = [];
    for (const offset of [0, 4, 8, 12]) pages.push(...(await ids({ sort: "data.brand:asc", limit: 4, offset })));
    expect(pages).toEqual(all.suggestions.map((s: { id: string }) => s.id));
  });
});

describe("several searches in one request", () => {
  const one = (params: Params) => ({ indexName: index, serviceName: world.a.service, query: "shoe", ...params });

  test("answered in order; a failing search answers its own problem and the others succeed", async () => {
    const reply = await world.http.post("/v1/search/multi", {
      searches: [
        one({ limit: 2 }),
        one({ offset: 1001 }),
        one({ filter: "data.price < 40" }),
        one({ filter: "data.price <" }),
        one({ indexName: "no-such-index" }),
        one({ facets: "brand" }),
        one({ query: "sock", limit: 1 }),
      ],
    });
    const { results } = ok(reply);
    expect(results.map((r: { status?: number }) => r.status ?? 200)).toEqual([200, 400, 200, 400, 401, 400, 200]);
    expect(results[0].suggestions).toHaveLength(2);
    expect(results[0]).toMatchObject({ indexVersion: expect.any(String), region: expect.any(String) });
    expect(results[1]).toMatchObject({ errors: [{ field: "offset", message: expect.stringContaining("1000") }] });
    expect(sorted(results[2].suggestions.map((s: { id: string }) => s.id))).toEqual(["s08", "s09"]);
    expect(results[3]).toMatchObject({
      errors: [{ field: "filter", message: expect.stringContaining("at character 13") }],
    });
    expect(results[3].detail).not.toContain("filter: filter:");
    expect(results[4]).toMatchObject({ title: "Unauthorized", detail: expect.stringContaining("no-such-index") });
    expect(results[5]).toMatchObject({ errors: [{ field: "facets" }] });
    expect(results[6].suggestions.map((s: { id: string }) => s.id)).toHaveLength(1);
    for (const problem of [results[1], results[3], results[4], results[5]]) {
      expect(problem).toMatchObject({
        type: expect.any(String),
        title: expect.any(String),
        detail: expect.any(String),
      });
      expect(problem).not.toHaveProperty("suggestions");
    }
  });

  test("each search carries its own total, facets and sort", async () => {
    const { results } = ok(
      await world.http.post("/v1/search/multi", {
        searches: [
          one({ facets: "data.brand", limit: 2 }),
          one({ filter: 'data.brand = "Acme"' }),
          one({ sort: "data.price:asc", limit: 1 }),
        ],
      }),
    );
    expect(results[0]).toMatchObject({ totalHits: 14, totalHitsExact: true });
    expect(results[0].facets["data.brand"][0]).toEqual({ value: "Acme", count: 4 });
    expect(sorted(results[1].suggestions.map((s: { id: string }) => s.id))).toEqual(["s01", "s02", "s10", "s13"]);
    expect(results[1].totalHits).toBe(4);
    expect(results[2].suggestions.map((s: { id: string }) => s.id)).toEqual(["s09"]);
  });

  test("the body itself is checked: no searches, more than 10, not JSON", async () => {
    const none = await world.http.post("/v1/search/multi", { searches: [] });
    expect(none.status).toBe(400);
    const many = await world.http.post("/v1/search/multi", {
      searches: Array.from({ length: 11 }, () => ({ indexName: index, serviceName: world.a.service, query: "s" })),
    });
    expect(many.status).toBe(400);
    expect(many.body.errors).toEqual([{ field: "searches", message: expect.stringContaining("10") }]);
    // Straight to the server: Prism's proxy never answers a request whose JSON does not parse.
    const broken = await new Http(world.server.url).request("POST", "/v1/search/multi", {
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(broken.status).toBe(400);
  });

  test("a web page on another origin may send it: the preflight allows POST with a JSON body", async () => {
    const preflight = await fetch(`${world.server.url}/v1/search/multi`, {
      method: "OPTIONS",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization,content-type");
    const reply = await fetch(`${world.server.url}/v1/search/multi`, {
      method: "POST",
      headers: { origin: "https://shop.example", "content-type": "application/json" },
      body: JSON.stringify({ searches: [one({ limit: 1 })] }),
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("400s that say what is wrong", () => {
  const refused = async (params: Params, field: string) => {
    const reply = await get(params);
    expectContract(reply);
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    return reply.body as { detail: string; errors: { field: string; message: string }[] };
  };

  test("offset past 1,000 names offset and the maximum", async () => {
    const problem = await refused({ offset: 1001 }, "offset");
    expect(problem.errors[0]!.message).toContain("1000");
    await refused({ offset: -1 }, "offset");
  });

  test("facets: a path not under data, more than 10, a bad maxFacetValues", async () => {
    expect((await refused({ facets: "data.brand,brand" }, "facets")).detail).toContain("at character 12");
    await refused({ facets: Array.from({ length: 11 }, (_, i) => `data.f${i}`).join(",") }, "facets");
    await refused({ facets: "data.brand", maxFacetValues: 101 }, "maxFacetValues");
  });

  test("sort: no direction, another direction, not a data path", async () => {
    for (const sort of ["data.price", "data.price:up", "price:asc"]) await refused({ sort }, "sort");
  });

  test("filter errors keep their character position, prefixed by filter once", async () => {
    for (const [filter, at] of [
      ["data.price <", 13],
      ['data.brand < "Acme"', 14],
      ["data.price > 3 &&", 18],
    ] as const) {
      const problem = await refused({ filter }, "filter");
      expect(problem.detail).toMatch(new RegExp(`^filter: at character ${at}: `));
      expect(problem.detail).not.toContain("filter: filter:");
      expect(problem.errors[0]!.message).toMatch(new RegExp(`^at character ${at}: `));
    }
  });
});
