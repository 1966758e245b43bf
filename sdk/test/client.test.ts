// The SDK against a Prism mock of generated/openapi.yaml: what a team running contract tests
// against our mock sees. Typed results come from the contract's examples.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startPrismMock, type Prism } from "../../test/support/prism.ts";
import { createClient, createSearchClient, type HighlightRange, SiftApiError, SiftError } from "../src/index.ts";

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
