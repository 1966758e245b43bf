// The search service between the route and the engine: it passes typoTolerance on, and highlights
// the hits the engine ranked, from their records alone, so every engine adapter highlights alike.
import { describe, expect, test } from "vitest";
import { deepFreeze } from "../../src/engine/embedded/store/record-store.ts";
import type { SearchEngine, SearchHit, SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import type { CatalogService, IndexRef } from "../../src/services/catalog.ts";
import { SearchService } from "../../src/services/search.ts";
import type { VersionService } from "../../src/services/versions.ts";

const ref = { id: "idx_1", activeVersion: "4", regions: ["frankfurt"] } as IndexRef;

function service(hits: SearchHit[]) {
  const requests: SearchRequest[] = [];
  const engine = {
    search: async (_key: string, _version: string, request: SearchRequest) => {
      requests.push(request);
      return hits;
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
