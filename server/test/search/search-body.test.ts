import { describe, expect, it } from "vitest";
import { deepFreeze } from "../../src/engine/embedded/store/record-store.ts";
import { searchBody } from "../../src/routes/search.ts";
import type { SearchHit } from "../../src/ports/engine.ts";
import { type SearchPageOutcome, type ServedHit, suggestionOf } from "../../src/services/search.ts";

const plain = (hits: ServedHit[], version: string) =>
  JSON.stringify({ suggestions: hits.map(suggestionOf), indexVersion: version, totalHits: 9, totalHitsExact: true });
/** An outcome around `hits`: the totals are the engine's, not the page's length. */
const page = (hits: ServedHit[], indexVersion: string): SearchPageOutcome => ({
  hits,
  indexVersion,
  totalHits: 9,
  totalHitsExact: true,
});

describe("searchBody", () => {
  const paris = {
    id: "p",
    title: "Paris",
    weight: 2,
    images: ["a.png"],
    latitude: "48.85",
    longitude: "2.35",
    data: { country: "FR", 'quo"te': [1, true] },
  };
  const hits: SearchHit[] = [
    { record: deepFreeze(structuredClone(paris)) },
    { record: deepFreeze(structuredClone(paris)), distanceMeters: 1234.56 },
    { record: { ...paris, id: "unfrozen" }, distanceMeters: 0.4 },
    { record: { ...paris, id: "plain" } },
  ];

  it("writes the same JSON as serialising the suggestions, with and without distance", () => {
    expect(searchBody(page(hits, "3.14"))).toBe(plain(hits, "3.14"));
    expect(JSON.parse(searchBody(page(hits, "3.14"))).suggestions[1].distanceMeters).toBe(1235);
    expect(searchBody(page([], "1"))).toBe('{"suggestions":[],"indexVersion":"1","totalHits":9,"totalHitsExact":true}');
  });

  it("serves a record's remembered JSON again, and a record that may change afresh", () => {
    const frozen = hits[1]!;
    expect(searchBody(page([frozen], "1"))).toBe(searchBody(page([frozen], "1")));
    const mutable: SearchHit = { record: { ...paris } };
    const before = searchBody(page([mutable], "1"));
    mutable.record.title = "Lutetia";
    expect(searchBody(page([mutable], "1"))).not.toBe(before);
    expect(JSON.parse(searchBody(page([mutable], "1"))).suggestions[0].title).toBe("Lutetia");
  });

  it("handles a frozen record without fields", () => {
    const empty = { record: Object.freeze({}) as SearchHit["record"], distanceMeters: 5 };
    expect(searchBody(page([empty], "1"))).toBe(plain([empty], "1"));
  });

  it("appends highlight after distanceMeters, byte for byte as JSON.stringify, and leaves frozen records alone", () => {
    const frozen = deepFreeze(structuredClone(paris));
    const before = JSON.stringify(frozen);
    const highlighted: ServedHit[] = [
      { record: frozen, highlight: { title: [[0, 3]] } },
      { record: frozen, distanceMeters: 12.5, highlight: { title: [[0, 5]], data: { country: [[0, 2]] } } },
      { record: frozen, highlight: {} },
      { record: { ...paris, id: "unfrozen" }, distanceMeters: 3, highlight: { data: { '"quo\\"te"': [[0, 1]] } } },
      { record: Object.freeze({}) as SearchHit["record"], highlight: { title: [] } },
      { record: frozen },
    ];
    const body = searchBody(page(highlighted, "2"));
    expect(body).toBe(plain(highlighted, "2"));
    const parsed = JSON.parse(body).suggestions;
    expect(parsed[1]).toMatchObject({ distanceMeters: 13, highlight: { data: { country: [[0, 2]] } } });
    expect(Object.keys(parsed[1]).slice(-2)).toEqual(["distanceMeters", "highlight"]);
    expect(parsed[5]).not.toHaveProperty("highlight");
    // The record's own remembered JSON is unchanged: the next search without highlights gets it as it was.
    expect(JSON.stringify(frozen)).toBe(before);
    expect(searchBody(page([{ record: frozen }], "2"))).toBe(
      `{"suggestions":[${before}],"indexVersion":"2","totalHits":9,"totalHitsExact":true}`,
    );
  });

  it("adds facets, facet stats and, in a multi-search, the region after the totals", () => {
    const outcome: SearchPageOutcome = {
      ...page([{ record: deepFreeze(structuredClone(paris)) }], "5"),
      totalHits: 12_000,
      totalHitsExact: false,
      facets: { "data.country": [{ value: "FR", count: 3 }], 'data."quo\\"te"': [] },
      facetStats: {},
    };
    const body = searchBody(outcome, "frankfurt");
    expect(body).toBe(
      JSON.stringify({
        suggestions: outcome.hits.map(suggestionOf),
        indexVersion: "5",
        totalHits: 12_000,
        totalHitsExact: false,
        facets: outcome.facets,
        facetStats: {},
        region: "frankfurt",
      }),
    );
  });
});
