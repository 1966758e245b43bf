// The search service between the route and the engine: it passes typoTolerance on, and highlights
// the hits the engine ranked, from their records alone, so every engine adapter highlights alike.
import { describe, expect, test } from "vitest";
import { deepFreeze } from "../../src/engine/embedded/store/record-store.ts";
import { InvalidArgumentError } from "../../src/domain/errors.ts";
import type { SearchEngine, SearchHit, SearchPage, SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import type { CatalogService, IndexRef } from "../../src/services/catalog.ts";
import { SearchService } from "../../src/services/search.ts";
import type { VersionService } from "../../src/services/versions.ts";

const ref = { id: "idx_1", activeVersion: "4", regions: ["frankfurt"] } as IndexRef;

function service(hits: SearchHit[]) {
  const requests: SearchRequest[] = [];
  const engine = {
    search: async (_key: string, _version: string, request: SearchRequest) => {
      requests.push(request);
      return { hits, totalHits: hits.length, totalHitsExact: true };
    },
  } as unknown as SearchEngine;
  const versions = { resolve: async () => "4" } as unknown as VersionService;
  const search = new SearchService({ catalog: {} as CatalogService, versions, engine, region: "frankfurt" });
  return { search, requests };
}

const record = (id: string, title: string, data?: Record<string, unknown>): SearchRecord =>
  deepFreeze({ id, title, ...(data ? { data } : {}) });

describe("SearchService.searchIndex", () => {
  test("typoTolerance reaches the engine, on unless turned off", async () => {
    const { search, requests } = service([]);
    await search.searchIndex(ref, { query: "paris" });
    await search.searchIndex(ref, { query: "paris", typoTolerance: false });
    await search.searchIndex(ref, { query: "paris", typoTolerance: true });
    expect(requests.map((r) => r.typoTolerance)).toEqual([true, false, true]);
  });

  test("without highlight=true the hits are the engine's, untouched", async () => {
    const hits = [{ record: record("1", "Paris") }];
    const { search } = service(hits);
    const found = await search.searchIndex(ref, { query: "par" });
    expect(found.hits).toBe(hits);
    expect(found.hits[0]).not.toHaveProperty("highlight");
  });

  test("with highlight=true every hit served carries the ranges of its own record, in the engine's order", async () => {
    const hits: SearchHit[] = [
      { record: record("2", "Parma") },
      { record: record("1", "Paris Texas"), distanceMeters: 10 },
      { record: record("3", "Eiffel Tower", { city: "Paris", note: "tall" }) },
    ];
    const { search } = service(hits);
    const found = await search.searchIndex(ref, { query: "par", highlight: true });
    expect(found.hits.map((h) => [h.record.id, h.highlight])).toEqual([
      ["2", { title: [[0, 3]] }],
      ["1", { title: [[0, 3]] }],
      ["3", {}],
    ]);
    // The engine's records are shared and frozen: the hit is new, the record the same object.
    expect(found.hits[1]!.record).toBe(hits[1]!.record);
    expect(found.hits[1]!.distanceMeters).toBe(10);
    expect(hits[0]).not.toHaveProperty("highlight");
  });

  test("the highlight follows the request's scope and typoTolerance", async () => {
    const hits: SearchHit[] = [{ record: record("3", "Eiffel Towr", { city: "Paris" }) }];
    const { search } = service(hits);
    const all = await search.searchIndex(ref, { query: "paris tower", scope: "all", highlight: true });
    expect(all.hits[0]!.highlight).toEqual({ title: [[7, 11]], data: { city: [[0, 5]] } });
    const exact = await search.searchIndex(ref, {
      query: "paris tower",
      scope: "all",
      highlight: true,
      typoTolerance: false,
    });
    expect(exact.hits[0]!.highlight).toEqual({ data: { city: [[0, 5]] } });
  });
});

describe("SearchService pages, facets and sort", () => {
  const principal = { kind: "anonymous" } as const;
  const publicIndex = { ...ref, tenantId: "t1", visibility: "PUBLIC", serviceName: "demo" } as unknown as IndexRef;

  function serviceWith(page: SearchPage) {
    const requests: SearchRequest[] = [];
    const engine = {
      search: async (_key: string, _version: string, request: SearchRequest) => {
        requests.push(request);
        return page;
      },
    } as unknown as SearchEngine;
    const versions = { resolve: async () => "4" } as unknown as VersionService;
    const catalog = {
      byServiceAndName: async (_s: string, name: string) => (name === "cities" ? publicIndex : undefined),
      servedHere: <T>(r: T) => r,
    } as unknown as CatalogService;
    return { search: new SearchService({ catalog, versions, engine, region: "frankfurt" }), requests };
  }
  const params = { query: "par", indexName: "cities", serviceName: "demo" };

  test("offset, facets (with the default of 10 values) and sort reach the engine parsed", async () => {
    const { search, requests } = serviceWith({ hits: [], totalHits: 0, totalHitsExact: true, facets: [] });
    await search.search(principal, {
      ...params,
      offset: 20,
      facets: 'data.brand, data."x y"',
      sort: "data.price:desc",
    });
    await search.search(principal, { ...params, facets: "data.brand", maxFacetValues: 3 });
    expect(requests[0]).toMatchObject({
      offset: 20,
      facets: [
        { path: ["brand"], maxValues: 10 },
        { path: ["x y"], maxValues: 10 },
      ],
      sort: { path: ["price"], direction: "desc" },
    });
    expect(requests[1]!.facets).toEqual([{ path: ["brand"], maxValues: 3 }]);
    expect(requests[1]).not.toHaveProperty("sort");
  });

  test("the totals are the engine's and facets are keyed by the request's spelling, stats only where numeric", async () => {
    const { search } = serviceWith({
      hits: [{ record: record("1", "Paris") }],
      totalHits: 42,
      totalHitsExact: true,
      facets: [
        { path: ["brand"], values: [{ value: "Acme", count: 30 }] },
        { path: ["price"], values: [{ value: 5, count: 2 }], stats: { min: 1, max: 99 } },
      ],
    });
    const found = await search.search(principal, { ...params, facets: ' data.brand ,data."price"' });
    expect(found).toMatchObject({ totalHits: 42, totalHitsExact: true, region: "frankfurt" });
    expect(found.facets).toEqual({
      "data.brand": [{ value: "Acme", count: 30 }],
      'data."price"': [{ value: 5, count: 2 }],
    });
    expect(found.facetStats).toEqual({ 'data."price"': { min: 1, max: 99 } });
    const plain = await search.search(principal, params);
    expect(plain).not.toHaveProperty("facets");
    expect(plain).not.toHaveProperty("facetStats");
  });

  test("bad facets or sort are refused before the engine is asked", async () => {
    const { search, requests } = serviceWith({ hits: [], totalHits: 0, totalHitsExact: true });
    await expect(search.search(principal, { ...params, facets: "brand" })).rejects.toMatchObject({
      fields: [{ field: "facets" }],
    });
    await expect(search.search(principal, { ...params, sort: "data.price" })).rejects.toMatchObject({
      fields: [{ field: "sort" }],
    });
    expect(requests).toEqual([]);
  });

  test("a filter error names filter once and keeps its character position", async () => {
    const { search } = serviceWith({ hits: [], totalHits: 0, totalHitsExact: true });
    const error = await search.search(principal, { ...params, filter: "data.price <" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ message: expect.stringMatching(/^filter: at character 13: /) });
    expect((error as Error).message).not.toContain("filter: filter:");
  });

  test("a multi-search answers in order, a failing search alone failing", async () => {
    const { search } = serviceWith({ hits: [], totalHits: 7, totalHitsExact: true });
    const invalid = new InvalidArgumentError("invalid search: offset must be <= 1000");
    const items = await search.multiSearch(
      principal,
      [params, { ...params, indexName: "nowhere" }, params, { ...params, sort: "oops" }],
      [undefined, undefined, invalid],
    );
    expect(items.map((i) => i.ok)).toEqual([true, false, false, false]);
    expect(items[0]).toMatchObject({ ok: true, outcome: { totalHits: 7, region: "frankfurt" } });
    expect(items[1]).toMatchObject({ ok: false, error: { name: "UnauthenticatedError" } });
    expect(items[2]).toEqual({ ok: false, error: invalid });
    expect(items[3]).toMatchObject({ ok: false, error: { fields: [{ field: "sort" }] } });
  });
});

describe("SearchService and regionId (D-384)", () => {
  const principal = { kind: "anonymous" } as const;
  const placed = {
    ...ref,
    tenantId: "t1",
    visibility: "PUBLIC",
    serviceName: "demo",
    regions: ["frankfurt", "london", "tokyo"],
  } as unknown as IndexRef;
  const params = { query: "par", indexName: "cities", serviceName: "demo" };

  function at(regionUrls: Record<string, string>) {
    const engine = {
      search: async () => ({ hits: [], totalHits: 0, totalHitsExact: true }),
    } as unknown as SearchEngine;
    const versions = { resolve: async () => "4" } as unknown as VersionService;
    const catalog = { byServiceAndName: async () => placed, servedHere: <T>(r: T) => r } as unknown as CatalogService;
    return new SearchService({ catalog, versions, engine, region: "frankfurt", regionUrls });
  }

  test("a region with an endpoint of its own is not answered for by another region's server", async () => {
    const search = at({ frankfurt: "https://fra.example", london: "https://lon.example" });
    expect((await search.search(principal, { ...params, regionId: "frankfurt" })).region).toBe("frankfurt");
    const error = await search.search(principal, { ...params, regionId: "london" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({
      fields: [{ field: "regionId", message: "this is frankfurt's endpoint; london answers at https://lon.example" }],
    });
    // Tokyo has no endpoint of its own: this server is the one that answers for it.
    expect((await search.search(principal, { ...params, regionId: "tokyo" })).region).toBe("tokyo");
  });

  test("regions that share this server's endpoint are answered here", async () => {
    const search = at({ frankfurt: "https://api.example", london: "https://api.example" });
    expect((await search.search(principal, { ...params, regionId: "london" })).region).toBe("london");
    expect((await at({}).search(principal, { ...params, regionId: "london" })).region).toBe("london");
  });
});
