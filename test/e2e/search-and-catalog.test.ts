// GET /v1/search as an integrator sees it (docs/ranking.md), and the services/indexes CRUD,
// through the contract-validating proxy.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ok } from "../support/contract.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
const index = "shop";

const records: Record<string, object> = {
  "1": { title: "York", weight: 10, latitude: "53.959", longitude: "-1.0815" },
  "2": { title: "New York", weight: 100, latitude: "40.7128", longitude: "-74.006" },
  "3": { title: "Yorkshire Pudding", weight: 500, data: { price: 4.5, inStock: true } },
  "4": { title: "Yorktown", weight: 10, latitude: "37.2388", longitude: "-76.5097" },
  "5": { title: "Zürich", weight: 40, data: { price: 30, inStock: true, description: "A lakeside city" } },
  "6": {
    title: "Red apple",
    data: { price: 0.5, inStock: false, description: "Crisp fruit from the orchard", tags: ["fresh"] },
  },
  "7": { title: "Green apple", data: { price: 0.6, inStock: true, nested: { note: "orchard picked" } } },
  "8": { title: "Old York Road", weight: 10, latitude: "40.1", longitude: "-75.1" },
};

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

type Ranges = [number, number][];

async function search(params: Record<string, string | number | boolean>): Promise<
  {
    id: string;
    title: string;
    distanceMeters?: number;
    highlight?: { title?: Ranges; data?: Record<string, Ranges> };
  }[]
> {
  const q = new URLSearchParams({
    indexName: index,
    serviceName: world.a.service,
    ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
  });
  return ok(await world.http.get(`/v1/search?${q}`)).suggestions;
}
const ids = async (params: Record<string, string | number | boolean>) => (await search(params)).map((r) => r.id);

describe("ranking", () => {
  test("a match at the title's start comes first; then the exact title, the shorter title", async () => {
    // Starting the title: York (the whole title), then the prefixes by length (Yorktown is one
    // word, Yorkshire Pudding two); "york" later in the title after them, shorter title first.
    expect(await ids({ query: "york" })).toEqual(["1", "4", "3", "2", "8"]);
  });

  test("weight orders matches that start alike; the exact title breaks what weight leaves tied", async () => {
    // Yorkshire Pudding (500) leads the titles starting with "york"; York and Yorktown weigh 10
    // each and York equals the query. New York (100) before Old York Road (10), both later.
    expect(await ids({ query: "york", weighted: true })).toEqual(["3", "1", "4", "2", "8"]);
    // Typing on: every match is a prefix, York is shorter than Yorktown.
    expect(await ids({ query: "yo", weighted: true })).toEqual(["3", "1", "4", "2", "8"]);
  });

  test("distance breaks what weight leaves tied, and is reported", async () => {
    // York (UK) and Yorktown (VA) both weigh 10; near Williamsburg, VA, Yorktown comes first.
    const near = await search({ query: "yor", weighted: true, latitude: 37.27, longitude: -76.7 });
    expect(near.map((r) => r.id)).toEqual(["3", "4", "1", "2", "8"]);
    const yorktown = near.find((r) => r.id === "4")!.distanceMeters!;
    expect(yorktown).toBeGreaterThan(10_000);
    expect(yorktown).toBeLessThan(20_000);
    expect(near.find((r) => r.id === "3")!.distanceMeters).toBeUndefined(); // no coordinates
    const farAway = await search({ query: "yor", weighted: true, latitude: 53.9, longitude: -1.1 });
    expect(farAway.map((r) => r.id)).toEqual(["3", "1", "4", "2", "8"]);
  });

  test("case and diacritics are folded", async () => {
    expect(await ids({ query: "ZURICH" })).toEqual(["5"]);
    expect(await ids({ query: "zür" })).toEqual(["5"]);
  });

  test("every token must match: all but the last as whole tokens, the last as a prefix", async () => {
    expect(await ids({ query: "new yo" })).toEqual(["2"]);
    expect(await ids({ query: "ne york" })).toEqual([]);
  });

  test("scope=all matches whole tokens in title and in data text, at any depth", async () => {
    expect(await ids({ query: "orchard" })).toEqual([]);
    expect((await ids({ query: "orchard", scope: "all" })).sort()).toEqual(["6", "7"]);
    expect(await ids({ query: "fresh", scope: "all" })).toEqual(["6"]);
    expect(await ids({ query: "orch", scope: "all" })).toEqual([]);
  });

  test("filter over numeric and boolean data fields, and limit", async () => {
    expect((await ids({ query: "apple", filter: "data.price<1 && data.inStock=true" })).sort()).toEqual(["7"]);
    expect((await ids({ query: "apple", filter: "data.price<1" })).sort()).toEqual(["6", "7"]);
    expect(await ids({ query: "y", filter: "data.inStock=true" })).toEqual(["3"]);
    expect(await ids({ query: "yor", limit: 2 })).toHaveLength(2);
  });
});

describe("highlight and typo tolerance", () => {
  // Exact words and prefixes only: these hold with and without typo matching in the engine.
  const highlights = async (params: Record<string, string | number | boolean>) =>
    Object.fromEntries((await search({ ...params, highlight: true })).map((s) => [s.id, s.highlight]));

  test("highlight=true marks the typed prefix and whole words in the stored title", async () => {
    expect(await highlights({ query: "new yo" })).toEqual({
      "2": {
        title: [
          [0, 3],
          [4, 6],
        ],
      },
    });
    // Folded "zur" is "Zür" in the stored title; an exact word is marked whole.
    expect(await highlights({ query: "zur" })).toEqual({ "5": { title: [[0, 3]] } });
    expect((await highlights({ query: "york", weighted: true }))["8"]).toEqual({ title: [[4, 8]] });
  });

  test("with scope=all, matched text fields of data are marked by path", async () => {
    expect(await highlights({ query: "orchard", scope: "all" })).toEqual({
      "6": { data: { description: [[21, 28]] } },
      "7": { data: { "nested.note": [[0, 7]] } },
    });
    expect(await highlights({ query: "fresh apple", scope: "all" })).toEqual({
      "6": { title: [[4, 9]], data: { "tags.0": [[0, 5]] } },
    });
  });

  test("without highlight=true no suggestion carries one; with it, distance still comes first", async () => {
    expect((await search({ query: "york" })).every((s) => !("highlight" in s))).toBe(true);
    const near = await search({ query: "yorkto", latitude: 37.27, longitude: -76.7, highlight: true });
    const yorktown = near.find((s) => s.id === "4")!;
    expect(Object.keys(yorktown).slice(-2)).toEqual(["distanceMeters", "highlight"]);
    expect(yorktown.highlight).toEqual({ title: [[0, 6]] });
  });

  test("typoTolerance=false is accepted and still finds exact words and prefixes", async () => {
    expect(await ids({ query: "new yo", typoTolerance: false })).toEqual(["2"]);
    expect(await ids({ query: "zür", typoTolerance: false })).toEqual(["5"]);
    expect(await highlights({ query: "zür", typoTolerance: false })).toEqual({ "5": { title: [[0, 3]] } });
  });
});

describe("services and indexes", () => {
  test("a service lists, reads, refuses deletion while it holds indexes, then deletes", async () => {
    const s = world.a.session;
    const name = `crud-${process.pid}`;
    ok(await s.post("/v1/services", { name, regions: ["tokyo", "sydney"], replicas: 2 }), 201);
    expect(ok(await s.get(`/v1/services/${name}`), 200)).toMatchObject({
      name,
      regions: ["tokyo", "sydney"],
      replicas: 2,
    });
    expect(ok(await s.get("/v1/services"), 200).services.map((x: { name: string }) => x.name)).toContain(name);
    ok(await world.b.session.get(`/v1/services/${name}`), 404);
    ok(await s.post("/v1/indexes", { name: "crud-index", serviceName: name }), 201);
    ok(await s.delete(`/v1/services/${name}`), 409);

    // A forced region must be one the service is deployed in.
    ok(await s.get(`/v1/search?query=a&indexName=crud-index&serviceName=${name}&regionId=london`), 400);
    const tokyo = await s.get(`/v1/search?query=a&indexName=crud-index&serviceName=${name}&regionId=tokyo`);
    expect(tokyo.headers.get("x-sift-region")).toBe("tokyo");

    ok(await s.delete("/v1/indexes/crud-index"), 204);
    ok(await s.get("/v1/indexes/crud-index"), 404);
    ok(await s.delete(`/v1/services/${name}`), 204);
    ok(await s.get(`/v1/services/${name}`), 404);
  });

  test("visibility can change: PRIVATE indexes need a key, PUBLIC ones do not", async () => {
    const s = world.a.session;
    ok(await s.post("/v1/indexes", { name: "flip", serviceName: world.a.service }), 201);
    const anonymous = () => world.http.fresh().get(`/v1/search?query=a&indexName=flip&serviceName=${world.a.service}`);
    expect((await anonymous()).status).toBe(401);
    expect(ok(await s.patch("/v1/indexes/flip", { visibility: "PUBLIC" }), 200).visibility).toBe("PUBLIC");
    expect((await anonymous()).status).toBe(200);
  });
});

describe("CORS on the open reads", () => {
  test("any origin may search and read the answer, errors included, and a preflight allows the key header", async () => {
    const base = world.server.url;
    const q = new URLSearchParams({ query: "york", indexName: index, serviceName: world.a.service });
    const found = await fetch(`${base}/v1/search?${q}`, { headers: { origin: "https://shop.example" } });
    expect(found.status).toBe(200);
    expect(found.headers.get("access-control-allow-origin")).toBe("*");
    expect(found.headers.get("access-control-expose-headers")).toContain("x-request-id");
    expect(found.headers.get("x-request-id")).toBeTruthy();
    expect(found.headers.get("access-control-allow-credentials")).toBeNull();

    const missing = await fetch(`${base}/v1/search?query=york&indexName=nope&serviceName=${world.a.service}`, {
      headers: { origin: "https://shop.example" },
    });
    expect(missing.status).toBe(401); // an anonymous caller learns nothing about indexes it cannot read
    expect(missing.headers.get("access-control-allow-origin")).toBe("*");

    const preflight = await fetch(`${base}/v1/search?${q}`, {
      method: "OPTIONS",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization");
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET");
  });
});
