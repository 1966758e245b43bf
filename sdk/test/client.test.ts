// The SDK against a Prism mock of generated/openapi.yaml: what a team running contract tests
// against our mock sees. Typed results come from the contract's examples.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startPrismMock, type Prism } from "../../test/support/prism.ts";
import {
  createClient,
  createSearchClient,
  type FacetValue,
  type HighlightRange,
  isSearchProblem,
  SiftApiError,
  SiftError,
} from "../src/index.ts";

let mock: Prism;
beforeAll(async () => {
  mock = await startPrismMock();
});
afterAll(() => mock?.stop());

describe("against the Prism mock", () => {
  test("search returns the contract's example, typed", async () => {
    const sift = createClient({ baseUrl: mock.url, apiKey: `pk-sift-srh-${"a".repeat(40)}` });
    const result = await sift.search({ query: "par", indexName: "cities", serviceName: "demo", weighted: true });
    expect(result.suggestions[0]).toMatchObject({ id: "2988507", title: "Paris", weight: 2138551 });
    expect(result.indexVersion).toBe("1");
  });

  test("search asks for highlights and typo tolerance, and the highlight is typed", async () => {
    const sift = createClient({ baseUrl: mock.url });
    const result = await sift.search({
      query: "par",
      indexName: "cities",
      serviceName: "demo",
      highlight: true,
      typoTolerance: false,
    });
    const first = result.suggestions[0]!;
    const ranges: HighlightRange[] | undefined = first.highlight?.title;
    expect(ranges).toEqual([[0, 3]]);
    expect(first.title.slice(...ranges![0]!)).toBe("Par");
  });

  test("multiSearch answers each search in order: results with their region, or a problem", async () => {
    const sift = createClient({ baseUrl: mock.url });
    const results = await sift.multiSearch([
      { query: "par", indexName: "cities", serviceName: "demo", limit: 1 },
      { query: "par", indexName: "cities", serviceName: "demo", facets: ["data.country"] },
    ]);
    expect(results.map(isSearchProblem)).toEqual([false, true]);
    const [found, failed] = results;
    if (!found || isSearchProblem(found) || !failed || !isSearchProblem(failed)) throw new Error("unexpected shapes");
    expect(found).toMatchObject({ region: "frankfurt", totalHits: 2, totalHitsExact: true });
    expect(failed).toMatchObject({ status: 400, errors: [{ field: "offset" }] });
  });

  test("versions.changes sends the page it asks for and returns the contract's example, typed", async () => {
    const sift = createClient({ baseUrl: mock.url, apiKey: `sk-sift-svc-${"a".repeat(40)}` });
    const result = await sift.versions.changes("cities", "1.2", { after: "hose-0", limit: 50 });
    expect(result).toMatchObject({ version: "1.2", kind: "change", base: "1.1" });
    const updated: number = result.counts.updated;
    expect(updated).toBe(1);
    expect(result.changes).toEqual([{ id: "hose-1", change: "updated" }]);
    // A limit the contract refuses is a 400 problem, thrown as SiftApiError.
    await expect(sift.versions.changes("cities", "1.2", { limit: 0 })).rejects.toMatchObject({ status: 400 });
  });

  test("a record upsert returns a write result with the new version", async () => {
    const sift = createClient({ baseUrl: mock.url, apiKey: `sk-sift-svc-${"a".repeat(40)}` });
    const result = await sift.records.put("cities", "2988507", { title: "Paris", weight: 2138551 });
    expect(result).toEqual({ resultCode: "SUCCESS", message: "OK", indexVersion: "3.1" });
  });

  test("an error answer becomes a SiftApiError (a SiftError) carrying the problem document", async () => {
    const sift = createClient({ baseUrl: mock.url, headers: { prefer: "code=400" } });
    const error = await sift
      .search({ query: "par", indexName: "cities", serviceName: "demo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SiftError);
    expect(error).toBeInstanceOf(SiftApiError);
    expect(error).toMatchObject({ status: 400, problem: { resultCode: "INVALID_ARGUMENT" } });
    expect((error as SiftApiError).resultCode).toBe("INVALID_ARGUMENT");
    expect((error as SiftApiError).fieldErrors).toEqual([{ field: "indexName", message: "is required" }]);
  });

  test("the raw typed client reaches every operation", async () => {
    const sift = createClient({ baseUrl: mock.url });
    const { data, response } = await sift.api.GET("/v1/regions");
    expect(response.status).toBe(200);
    expect(Array.isArray(data!.regions)).toBe(true);
  });
});

test("search() sends typoTolerance and highlight as query parameters", async () => {
  const sent: URL[] = [];
  const sift = createSearchClient({
    baseUrl: "https://sift.test",
    fetch: async (input) => {
      sent.push(new URL(input instanceof Request ? input.url : String(input)));
      return Response.json({ suggestions: [], indexVersion: "1" });
    },
  });
  await sift.search({ query: "pari", indexName: "cities", serviceName: "demo", typoTolerance: false, highlight: true });
  await sift.search({ query: "pari", indexName: "cities", serviceName: "demo" });
  expect(sent.map((u) => [u.searchParams.get("typoTolerance"), u.searchParams.get("highlight")])).toEqual([
    ["false", "true"],
    [null, null],
  ]);
});

test("facets as a list are sent comma-separated and come back typed by path; offset and sort are sent", async () => {
  const sent: URL[] = [];
  const sift = createSearchClient({
    baseUrl: "https://sift.test",
    fetch: async (input) => {
      sent.push(new URL(input instanceof Request ? input.url : String(input)));
      return Response.json({
        suggestions: [],
        indexVersion: "4",
        totalHits: 31,
        totalHitsExact: true,
        facets: { "data.brand": [{ value: "Acme", count: 30 }], "data.price": [] },
        facetStats: { "data.price": { min: 1, max: 9 } },
      });
    },
  });
  const page = await sift.search({
    query: "shoe",
    indexName: "shop",
    serviceName: "demo",
    facets: ["data.brand", "data.price"],
    sort: "data.price:desc",
    offset: 20,
    version: "4",
  });
  // Typed by the requested paths: no optional chaining needed for a path that was asked for.
  const brands: FacetValue[] = page.facets["data.brand"];
  expect(brands).toEqual([{ value: "Acme", count: 30 }]);
  expect(page.facetStats["data.price"]).toEqual({ min: 1, max: 9 });
  expect(page.totalHits).toBe(31);
  const url = sent[0]!;
  expect([url.searchParams.get("facets"), url.searchParams.get("sort"), url.searchParams.get("offset")]).toEqual([
    "data.brand,data.price",
    "data.price:desc",
    "20",
  ]);
});

test("multiSearch posts the searches with their facets joined", async () => {
  const bodies: unknown[] = [];
  const sift = createSearchClient({
    baseUrl: "https://sift.test",
    fetch: async (input, init) => {
      const request = new Request(input, init);
      expect([request.method, new URL(request.url).pathname]).toEqual(["POST", "/v1/search/multi"]);
      bodies.push(await request.json());
      return Response.json({ results: [] });
    },
  });
  await sift.multiSearch([{ query: "a", indexName: "i", serviceName: "s", facets: ["data.x", "data.y"] }]);
  expect(bodies).toEqual([{ searches: [{ query: "a", indexName: "i", serviceName: "s", facets: "data.x,data.y" }] }]);
});
