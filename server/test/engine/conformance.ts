// The search-engine conformance suite: behaviour a user of Sift would notice, written only
// against the port (src/ports/engine.ts) so that every adapter runs the same tests. Ranking is
// checked where docs/ranking.md "Rank order" decides it; where two reasonable engines could differ
// (how two different partial matches compare), only the set of matches is checked. One file over
// 400 lines on purpose: every adapter runs exactly this list, and splitting it would let an
// adapter's test file miss a part.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RecordChange, SearchEngine, SearchHit, SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
import { parseFilter } from "../../src/search/filter.ts";
import { tokenize } from "../../src/engine/tokenize.ts";
import { random } from "../support/random.ts";
import { referenceTitleRank } from "./reference.ts";

export type OpenEngine = () => Promise<{
  engine: SearchEngine;
  cleanup: () => Promise<void>;
  /** Whether any file the engine keeps holds `text` (engines whose storage the test can read). */
  storageHolds?: (text: string) => boolean;
}>;

const ids = (hits: SearchHit[]) => hits.map((h) => h.record.id);

function request(query: string, extra: Partial<SearchRequest> = {}): SearchRequest {
  return { query, scope: "title", weighted: false, limit: 10, ...extra };
}

function haversine(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const r = Math.PI / 180;
  const a =
    Math.sin(((lat2 - lat1) * r) / 2) ** 2 +
    Math.cos(lat1 * r) * Math.cos(lat2 * r) * Math.sin(((lon2 - lon1) * r) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.sqrt(a));
}

export function describeEngineConformance(name: string, open: OpenEngine): void {
  describe(`search engine conformance: ${name}`, () => {
    let engine: SearchEngine;
    let cleanup: () => Promise<void>;
    let storageHolds: ((text: string) => boolean) | undefined;

    beforeAll(async () => {
      ({ engine, cleanup, storageHolds } = await open());
    });
    afterAll(async () => {
      await cleanup();
    });

    /** A fresh index with major version 1 holding `records`. */
    async function indexWith(records: SearchRecord[]): Promise<string> {
      const key = `conf-${randomUUID()}`;
      await engine.createIndex(key);
      const writer = await engine.bulkWriter(key, 1);
      await writer.add(records);
      await writer.commit();
      return key;
    }

    /** The whole page of a search. */
    const page = (key: string, query: string, extra: Partial<SearchRequest> = {}, version = "1") =>
      engine.search(key, version, request(query, extra));
    /** The hits of a search. */
    const search = (key: string, query: string, extra: Partial<SearchRequest> = {}, version = "1") =>
      page(key, query, extra, version).then((p) => p.hits);

    it("answers ping once open", async () => {
      expect(await engine.ping()).toBe(true);
    });

    describe("bulk ingest and records", () => {
      const full: SearchRecord = {
        id: "full",
        title: "Café Zürich",
        weight: 42,
        images: ["https://img.example/1.jpg", "https://img.example/2.jpg"],
        latitude: "47.37690",
        longitude: "8.54170",
        data: {
          price: 4.5,
          inStock: true,
          tags: ["coffee", "cake"],
          address: { city: "Zürich", zip: "8001" },
          empty: {},
        },
      };

      it("stores records exactly and counts them", async () => {
        const key = await indexWith([full, { id: "plain", title: "Plain", data: {} }]);
        expect(await engine.count(key, "1")).toBe(2);
        expect(await engine.get(key, "1", "full")).toEqual(full);
        expect(await engine.get(key, "1", "plain")).toEqual({ id: "plain", title: "Plain", data: {} });
        expect(await engine.get(key, "1", "missing")).toBeNull();
        const [hit] = await search(key, "cafe");
        expect(hit!.record).toEqual(full);
      });

      it("keeps the last of duplicate ids in a bulk stream", async () => {
        const key = `conf-${randomUUID()}`;
        await engine.createIndex(key);
        const writer = await engine.bulkWriter(key, 1);
        await writer.add([{ id: "a", title: "First title" }]);
        await writer.add([
          { id: "a", title: "Second title" },
          { id: "b", title: "Other" },
        ]);
        expect(await writer.commit()).toEqual({ records: 2 });
        expect((await engine.get(key, "1", "a"))?.title).toBe("Second title");
        expect(ids(await search(key, "first"))).toEqual([]);
        expect(ids(await search(key, "second"))).toEqual(["a"]);
      });

      it("leaves nothing behind when a bulk write is aborted", async () => {
        const key = await indexWith([{ id: "a", title: "Kept" }]);
        const writer = await engine.bulkWriter(key, 2);
        await writer.add([{ id: "b", title: "Discarded" }]);
        await writer.abort();
        expect((await engine.versions(key)).map((v) => v.version)).toEqual(["1"]);
        expect(ids(await search(key, "discarded"))).toEqual([]);
      });

      it("makes a committed major searchable next to the older one", async () => {
        const key = await indexWith([{ id: "a", title: "Old name" }]);
        const writer = await engine.bulkWriter(key, 2);
        await writer.add([{ id: "a", title: "New name" }]);
        await writer.commit();
        expect(ids(await search(key, "old", {}, "1"))).toEqual(["a"]);
        expect(ids(await search(key, "old", {}, "2"))).toEqual([]);
        expect(ids(await search(key, "new", {}, "2"))).toEqual(["a"]);
      });
    });

    describe("matching", () => {
      let key: string;
      beforeAll(async () => {
        key = await indexWith([
          { id: "1", title: "San Jose" },
          { id: "2", title: "Santa Cruz" },
          { id: "3", title: "Sandy Jones" },
          { id: "4", title: "Los Angeles" },
          { id: "5", title: "Zürich" },
          { id: "6", title: "São Paulo" },
          { id: "7", title: "NEW YORK" },
          { id: "8", title: "Crème Brûlée Café" },
        ]);
      });

      it("matches the last token as a prefix and earlier tokens whole", async () => {
        expect(new Set(ids(await search(key, "san")))).toEqual(new Set(["1", "2", "3"]));
        expect(ids(await search(key, "san j"))).toEqual(["1"]);
        expect(ids(await search(key, "sa jose"))).toEqual([]);
        expect(ids(await search(key, "angeles"))).toEqual(["4"]);
      });

      it("folds case and diacritics in both records and queries", async () => {
        expect(ids(await search(key, "zurich"))).toEqual(["5"]);
        expect(ids(await search(key, "ZÜRICH"))).toEqual(["5"]);
        expect(ids(await search(key, "sao paulo"))).toEqual(["6"]);
        expect(ids(await search(key, "new york"))).toEqual(["7"]);
        expect(ids(await search(key, "creme brulee cafe"))).toEqual(["8"]);
      });

      it("treats punctuation as separators and finds nothing for punctuation alone", async () => {
        expect(ids(await search(key, "los-angeles!"))).toEqual(["4"]);
        expect(await search(key, "?!…")).toEqual([]);
      });

      it("returns at most limit hits", async () => {
        expect(await search(key, "s", { limit: 2 })).toHaveLength(2);
        expect(await search(key, "s", { limit: 1 })).toHaveLength(1);
      });
    });

    describe("ranking", () => {
      it("ranks a match at the start of the title above a later one, whatever the weights", async () => {
        const key = await indexWith([
          { id: "a", title: "Puerto Rico Grande", weight: 1000 },
          { id: "b", title: "Rico Grande", weight: 1 },
        ]);
        expect(ids(await search(key, "rico"))).toEqual(["b", "a"]);
        expect(ids(await search(key, "rico", { weighted: true }))).toEqual(["b", "a"]);
      });

      it("treats the last token as a prefix whether or not it is a word: weight decides between them", async () => {
        const key = await indexWith([
          { id: "par", title: "Par", weight: 1000 },
          { id: "paris", title: "Paris", weight: 2_000_000 },
          { id: "later", title: "Bollullos par del Condado", weight: 5_000_000 },
        ]);
        expect(ids(await search(key, "par", { weighted: true }))).toEqual(["paris", "par", "later"]);
        // Unweighted, the fine tie-breaks decide: the title equal to the query first.
        expect(ids(await search(key, "par"))).toEqual(["par", "paris", "later"]);
      });

      it("ranks the query words together and in order above scattered ones", async () => {
        const key = await indexWith([
          { id: "a", title: "York Road New Town", weight: 50 },
          { id: "b", title: "Old New York Deli", weight: 5 },
          { id: "c", title: "New York", weight: 1 },
        ]);
        expect(ids(await search(key, "new york"))).toEqual(["c", "b", "a"]);
        expect(ids(await search(key, "new yo", { weighted: true }))).toEqual(["c", "b", "a"]);
      });

      it("finds a title starting with the query when its first word repeats or begins the next", async () => {
        const key = await indexWith([
          { id: "island", title: "Bora Island", weight: 9 },
          { id: "boat", title: "Bora Boat Club", weight: 1 },
          { id: "bora", title: "Bora Bora", weight: 5 },
        ]);
        // "bo" at the second word: Bora Bora and Bora Boat Club start with the query; Bora Island
        // has "bo" only in its first word, so its words are scattered.
        expect(ids(await search(key, "bora bo"))).toEqual(["bora", "boat", "island"]);
        expect(ids(await search(key, "bora bo", { weighted: true }))).toEqual(["bora", "boat", "island"]);
        expect(ids(await search(key, "bora bora"))).toEqual(["bora", "island", "boat"]);
      });

      it("breaks remaining lexical ties: title equals the query, last word complete, shorter title", async () => {
        const key = await indexWith([
          { id: "long", title: "Springfield Park Avenue" },
          { id: "two", title: "Springfield Gardens" },
          { id: "exact", title: "Springfield" },
          { id: "prefix", title: "Springfields" },
        ]);
        expect(ids(await search(key, "springfield"))).toEqual(["exact", "two", "long", "prefix"]);
        // All prefix matches: fewer title tokens, then fewer characters.
        expect(ids(await search(key, "spring"))).toEqual(["exact", "prefix", "two", "long"]);
      });

      it("breaks lexical ties by weight when weighted, treating a missing weight as 0", async () => {
        const key = await indexWith([
          { id: "a", title: "Springfield", weight: 5 },
          { id: "b", title: "Springfield", weight: 50 },
          { id: "c", title: "Springfield" },
          { id: "d", title: "Springfield", weight: 20 },
        ]);
        expect(ids(await search(key, "spring", { weighted: true }))).toEqual(["b", "d", "a", "c"]);
      });

      it("orders lexical ties by id when unweighted, stably", async () => {
        const records = ["k", "b", "x", "a", "m"].map((id, i) => ({ id, title: "Lakeside", weight: 10 - i }));
        const key = await indexWith(records);
        const first = ids(await search(key, "lake"));
        expect(first).toEqual(["a", "b", "k", "m", "x"]);
        expect(ids(await search(key, "lake"))).toEqual(first);
      });

      it("breaks the remaining ties by distance and reports it, records without coordinates last", async () => {
        const paris = { latitude: 48.8566, longitude: 2.3522 };
        const key = await indexWith([
          { id: "far", title: "Bakery", latitude: "40.4168", longitude: "-3.7038" },
          { id: "none", title: "Bakery" },
          { id: "near", title: "Bakery", latitude: "48.8600", longitude: "2.3400" },
          { id: "mid", title: "Bakery", latitude: "51.5074", longitude: "-0.1278" },
        ]);
        const hits = await search(key, "bak", { geo: paris });
        expect(ids(hits)).toEqual(["near", "mid", "far", "none"]);
        expect(hits[3]!.distanceMeters).toBeUndefined();
        const expected = haversine(paris.latitude, paris.longitude, 51.5074, -0.1278);
        expect(Math.abs(hits[1]!.distanceMeters! - expected)).toBeLessThan(expected * 0.005);
        expect(hits[0]!.distanceMeters!).toBeLessThan(1500);
      });

      it("applies weight before distance when both are asked for", async () => {
        const key = await indexWith([
          { id: "near", title: "Museum", weight: 1, latitude: "48.86", longitude: "2.34" },
          { id: "far", title: "Museum", weight: 9, latitude: "-33.86", longitude: "151.21" },
          { id: "near2", title: "Museum", weight: 1, latitude: "48.90", longitude: "2.30" },
        ]);
        const hits = await search(key, "museum", { weighted: true, geo: { latitude: 48.8566, longitude: 2.3522 } });
        expect(ids(hits)).toEqual(["far", "near", "near2"]);
      });

      it("omits distances when no point is given", async () => {
        const key = await indexWith([{ id: "a", title: "Harbour", latitude: "1.0", longitude: "2.0" }]);
        expect((await search(key, "harbour"))[0]!.distanceMeters).toBeUndefined();
      });
    });

    describe("typos", () => {
      let key: string;
      beforeAll(async () => {
        key = await indexWith([
          { id: "london", title: "London", weight: 9_000_000 },
          { id: "bridge", title: "London Bridge", weight: 10 },
          { id: "berlin", title: "Berlin", weight: 3_600_000 },
          { id: "berln", title: "Berln Cafe", weight: 1 },
          { id: "amsterdam", title: "Amsterdam", weight: 900_000 },
          { id: "hamburg", title: "Hamburg", weight: 1_800_000 },
          { id: "2025", title: "2025 Festival", weight: 5 },
        ]);
      });

      it("tolerates one typo from four letters, in the last token as a prefix and in earlier ones", async () => {
        // Among matches with the same typos, engines may order differently (Typesense's own text
        // match decides there): the set is what every adapter must agree on.
        expect(new Set(ids(await search(key, "londn", { weighted: true })))).toEqual(new Set(["london", "bridge"]));
        expect(new Set(ids(await search(key, "lnod", { weighted: true })))).toEqual(new Set(["london", "bridge"]));
        expect(ids(await search(key, "amsterdma"))).toEqual(["amsterdam"]);
        expect(ids(await search(key, "hmaburg"))).toEqual(["hamburg"]);
        expect(ids(await search(key, "londn bri"))).toEqual(["bridge"]);
      });

      it("tolerates no typo below four letters, and two only from eight", async () => {
        expect(ids(await search(key, "lnd"))).toEqual([]);
        expect(ids(await search(key, "amstrdamm"))).toEqual(["amsterdam"]);
        expect(ids(await search(key, "hmabrug"))).toEqual([]);
      });

      it("never matches digits-only tokens with typos", async () => {
        expect(ids(await search(key, "2024"))).toEqual([]);
        expect(ids(await search(key, "2025"))).toEqual(["2025"]);
      });

      it("looks for matches with typos only when nothing matches exactly", async () => {
        // "Berln Cafe" matches exactly: Berlin, one typo away, is not shown, however heavy.
        expect(ids(await search(key, "berln", { weighted: true }))).toEqual(["berln"]);
        expect(ids(await search(key, "berli", { weighted: true }))).toEqual(["berlin"]);
        // No exact match: both are one typo away.
        expect(new Set(ids(await search(key, "berlni", { weighted: true })))).toEqual(new Set(["berlin", "berln"]));
      });

      it("finds nothing with typos when typo tolerance is off", async () => {
        expect(ids(await search(key, "londn", { typoTolerance: false }))).toEqual([]);
        expect(ids(await search(key, "lond", { typoTolerance: false, weighted: true }))).toEqual(["london", "bridge"]);
      });
    });

    describe("scope=all and filters", () => {
      let key: string;
      beforeAll(async () => {
        key = await indexWith([
          { id: "t", title: "Blue Lagoon", data: { price: 30, inStock: true } },
          { id: "d", title: "Harbor Hotel", data: { details: { color: "blue" }, price: 10, inStock: false } },
          { id: "arr", title: "Garden Cafe", data: { tags: ["quiet", "blue"], price: "12", stock: { count: 3 } } },
          { id: "none", title: "Grey House", data: { price: 5 } },
        ]);
      });

      it("matches whole tokens of the title and of text anywhere in data, title first", async () => {
        const hits = ids(await search(key, "blue", { scope: "all" }));
        expect(hits[0]).toBe("t");
        expect(new Set(hits)).toEqual(new Set(["t", "d", "arr"]));
        expect(ids(await search(key, "blu", { scope: "all" }))).toEqual([]);
        expect(ids(await search(key, "quiet garden", { scope: "all" }))).toEqual(["arr"]);
        expect(ids(await search(key, "blue", { scope: "title" }))).toEqual(["t"]);
      });

      it("filters on numbers and booleans, nested paths, with && || ! and parentheses", async () => {
        const f = (text: string) =>
          search(key, "blue", { scope: "all", filter: parseFilter(text), limit: 10 }).then((h) => new Set(ids(h)));
        expect(await f("data.price<20")).toEqual(new Set(["d"]));
        expect(await f("data.price>=10 && data.inStock=true")).toEqual(new Set(["t"]));
        expect(await f("data.inStock=false || data.stock.count>2")).toEqual(new Set(["d", "arr"]));
        expect(await f("!(data.inStock=true)")).toEqual(new Set(["d", "arr"]));
      });

      it("never matches a comparison on a missing field or a field of another type", async () => {
        const all = (text: string) =>
          engine.search(key, "1", request("house", { filter: parseFilter(text) })).then((p) => ids(p.hits));
        expect(await all("data.inStock=false")).toEqual([]);
        expect(await all("data.inStock!=true")).toEqual([]);
        expect(await all("data.price!=1")).toEqual(["none"]);
        const cafe = (text: string) =>
          engine.search(key, "1", request("garden", { filter: parseFilter(text) })).then((p) => ids(p.hits));
        expect(await cafe("data.price<100")).toEqual([]); // "12" is a string
        expect(await cafe("data.stock.count=3")).toEqual(["arr"]);
      });
    });

    describe("string filters, arrays, EXISTS, facets, totals, pages and sort", () => {
      // Every title is "Shoe": the query matches all of them equally, so ties fall to the id.
      const shoes: SearchRecord[] = [
        {
          id: "a",
          title: "Shoe",
          weight: 100,
          data: { brand: "Acme", colors: ["red", "blue"], sizes: [40, 42], price: 50, inStock: true },
        },
        { id: "b", title: "Shoe", data: { brand: "ACME", colors: ["blue"], sizes: [38], price: 20, inStock: false } },
        { id: "c", title: "Shoe", data: { brand: "Bolt", colors: [], price: 35, inStock: true } },
        {
          id: "d",
          title: "Shoe",
          data: {
            brand: "Acme",
            colors: ["green", "red", "red"],
            price: "cheap",
            inStock: true,
            meta: { origin: "IT" },
          },
        },
        { id: "e", title: "Shoe", data: { colors: "red", price: 5 } },
        { id: "f", title: "Shoe", data: { brand: null, price: 80, meta: {} } },
        {
          id: "g",
          title: "Shoe",
          data: { brand: "Zeta", sizes: [42, 44], price: 20, inStock: false, meta: { origin: "FR" } },
        },
        { id: "x", title: "Boot", data: { brand: "Acme", colors: ["red"], price: 1 } },
      ];
      let key: string;
      beforeAll(async () => {
        key = await indexWith(shoes);
      });
      const filtered = async (text: string) => {
        const result = await page(key, "shoe", { filter: parseFilter(text), limit: 20 });
        expect(result.totalHits, text).toBe(result.hits.length);
        return ids(result.hits).sort().join("");
      };
      const facet = (path: string, maxValues = 10) => ({ path: path.split("."), maxValues });

      it("compares strings exactly, case included, with = and !=", async () => {
        expect(await filtered('data.brand="Acme"')).toBe("ad");
        expect(await filtered('data.brand="acme"')).toBe("");
        expect(await filtered('data.brand="ACME"')).toBe("b");
        // != needs a value of the literal's type: e lacks brand, f's is null.
        expect(await filtered('data.brand!="Acme"')).toBe("bcg");
        expect(await filtered('!(data.brand="Acme")')).toBe("bcefg");
        expect(await filtered('data.price="cheap"')).toBe("d");
        expect(await filtered("data.price<100")).toBe("abcefg");
        expect(await filtered('data.meta.origin="IT" || data.meta.origin="FR"')).toBe("dg");
      });

      it("matches arrays when any element does, and != only when none does", async () => {
        expect(await filtered('data.colors="red"')).toBe("ade");
        expect(await filtered('data.colors="blue" && data.colors="red"')).toBe("a");
        expect(await filtered('data.colors!="red"')).toBe("b");
        expect(await filtered("data.sizes>=42")).toBe("ag");
        expect(await filtered("data.sizes<40")).toBe("b");
        expect(await filtered("data.sizes=42 && data.price=20")).toBe("g");
        expect(await filtered("data.sizes!=42")).toBe("b");
      });

      it("matches IN lists of strings, numbers and booleans, mixed, against scalars and arrays", async () => {
        expect(await filtered('data.brand IN ["ACME", "Zeta", "none"]')).toBe("bg");
        expect(await filtered('data.colors in ["green", "blue"]')).toBe("abd");
        expect(await filtered('data.sizes IN [38, "42"]')).toBe("b");
        expect(await filtered("data.inStock IN [false]")).toBe("bg");
        expect(await filtered('data.price IN [5, "cheap", 1]')).toBe("de");
        expect(await filtered('!(data.brand IN ["Acme"])')).toBe("bcefg");
      });

      it("holds EXISTS for any value but null, empty arrays and objects included", async () => {
        expect(await filtered("EXISTS data.brand")).toBe("abcdg");
        expect(await filtered("exists data.meta")).toBe("dfg");
        expect(await filtered("EXISTS data.colors")).toBe("abcde");
        expect(await filtered("EXISTS data.meta.origin")).toBe("dg");
        expect(await filtered("!EXISTS data.brand")).toBe("ef");
        expect(await filtered("EXISTS data.nothing")).toBe("");
      });

      it("counts every match in totalHits and pages through them with offset", async () => {
        const first = await page(key, "shoe", { limit: 3 });
        expect(first.totalHits).toBe(7);
        expect(first.totalHitsExact).toBe(true);
        const pages = [first];
        for (const offset of [3, 6]) pages.push(await page(key, "shoe", { limit: 3, offset }));
        expect(pages.map((p) => ids(p.hits))).toEqual([["a", "b", "c"], ["d", "e", "f"], ["g"]]);
        expect(pages.map((p) => p.totalHits)).toEqual([7, 7, 7]);
        const past = await page(key, "shoe", { limit: 3, offset: 10 });
        expect(past.hits).toEqual([]);
        expect(past.totalHits).toBe(7);
        expect((await page(key, "nothingmatches")).totalHits).toBe(0);
        expect((await page(key, "shoe", { filter: parseFilter('data.brand="Acme"') })).totalHits).toBe(2);
        // Facets leave out nothing either: the same total.
        expect((await page(key, "shoe", { limit: 1, facets: [facet("brand")] })).totalHits).toBe(7);
      });

      it("counts facet values over every match, most frequent first, then numbers, booleans, strings", async () => {
        const result = await page(key, "shoe", {
          limit: 1,
          facets: [
            facet("brand"),
            facet("colors"),
            facet("sizes"),
            facet("price", 3),
            facet("inStock"),
            facet("nothing"),
          ],
        });
        expect(result.hits).toHaveLength(1);
        expect(result.facets).toEqual([
          {
            path: ["brand"],
            values: [
              { value: "Acme", count: 2 },
              { value: "ACME", count: 1 },
              { value: "Bolt", count: 1 },
              { value: "Zeta", count: 1 },
            ],
          },
          {
            path: ["colors"],
            values: [
              { value: "red", count: 3 },
              { value: "blue", count: 2 },
              { value: "green", count: 1 },
            ],
          },
          {
            path: ["sizes"],
            values: [
              { value: 42, count: 2 },
              { value: 38, count: 1 },
              { value: 40, count: 1 },
              { value: 44, count: 1 },
            ],
            stats: { min: 38, max: 44 },
          },
          {
            path: ["price"],
            values: [
              { value: 20, count: 2 },
              { value: 5, count: 1 },
              { value: 35, count: 1 },
            ],
            stats: { min: 5, max: 80 },
          },
          {
            path: ["inStock"],
            values: [
              { value: true, count: 3 },
              { value: false, count: 2 },
            ],
          },
          { path: ["nothing"], values: [] },
        ]);
      });

      it("counts facets within the filter, and a counted value filters exactly the records it counted", async () => {
        const within = await page(key, "shoe", {
          filter: parseFilter('data.colors="red"'),
          facets: [facet("brand"), facet("price")],
        });
        expect(within.totalHits).toBe(3);
        expect(within.facets).toEqual([
          { path: ["brand"], values: [{ value: "Acme", count: 2 }] },
          {
            path: ["price"],
            values: [
              { value: 5, count: 1 },
              { value: 50, count: 1 },
              { value: "cheap", count: 1 },
            ],
            stats: { min: 5, max: 50 },
          },
        ]);
        const all = await page(key, "shoe", { facets: [facet("brand")] });
        for (const { value, count } of all.facets![0]!.values) {
          const back = await page(key, "shoe", { filter: parseFilter(`data.brand=${JSON.stringify(value)}`) });
          expect(back.totalHits, String(value)).toBe(count);
        }
      });

      it("counts the version's changed records and leaves out deleted ones", async () => {
        const versioned = await indexWith(shoes);
        await engine.applyChange(versioned, {
          version: "1.1",
          parent: "1",
          upserts: [
            { id: "h", title: "Shoe", data: { brand: "Bolt", price: 20 } },
            { id: "b", title: "Shoe", data: { brand: "Bolt", colors: "blue" } },
          ],
          deletes: ["a"],
        });
        const result = await page(versioned, "shoe", { facets: [facet("brand"), facet("price", 2)] }, "1.1");
        expect(result.totalHits).toBe(7);
        expect(result.facets).toEqual([
          {
            path: ["brand"],
            values: [
              { value: "Bolt", count: 3 },
              { value: "Acme", count: 1 },
              { value: "Zeta", count: 1 },
            ],
          },
          {
            path: ["price"],
            values: [
              { value: 20, count: 2 },
              { value: 5, count: 1 },
            ],
            stats: { min: 5, max: 80 },
          },
        ]);
        const filtered = await page(versioned, "shoe", { filter: parseFilter('data.brand="Bolt"') }, "1.1");
        expect(filtered.totalHits).toBe(3);
        expect(new Set(ids(filtered.hits))).toEqual(new Set(["b", "c", "h"]));
      });

      it("sorts by a number or string field, numbers before strings, records without it last", async () => {
        const sorted = async (path: string, direction: "asc" | "desc", extra: Partial<SearchRequest> = {}) =>
          ids((await page(key, "shoe", { sort: { path: path.split("."), direction }, ...extra })).hits);
        expect(await sorted("price", "asc")).toEqual(["e", "b", "g", "c", "a", "f", "d"]);
        expect(await sorted("price", "desc")).toEqual(["f", "a", "c", "b", "g", "e", "d"]);
        // In place of weight: weighted is ignored.
        expect(await sorted("price", "asc", { weighted: true })).toEqual(["e", "b", "g", "c", "a", "f", "d"]);
        expect(await sorted("brand", "asc")).toEqual(["b", "a", "d", "c", "g", "e", "f"]);
        expect(await sorted("brand", "desc")).toEqual(["g", "c", "a", "d", "b", "e", "f"]);
        // Arrays are not sorted by: only e's scalar counts.
        expect(await sorted("colors", "asc")).toEqual(["e", "a", "b", "c", "d", "f", "g"]);
        expect(await sorted("meta.origin", "desc", { limit: 2, offset: 1 })).toEqual(["g", "a"]);
      });

      it("sorts after the lexical tiers: a better tier wins over a better sort value", async () => {
        const tiers = await indexWith([
          { id: "start-dear", title: "Lamp Deluxe", data: { price: 90 } },
          { id: "start-cheap", title: "Lamp", data: { price: 10 } },
          { id: "later-cheapest", title: "Desk Lamp", data: { price: 1 } },
          { id: "start-none", title: "Lamp Basic" },
        ]);
        const result = await page(tiers, "lamp", { sort: { path: ["price"], direction: "asc" } });
        expect(ids(result.hits)).toEqual(["start-cheap", "start-dear", "start-none", "later-cheapest"]);
      });
    });

    describe("versions", () => {
      it("creates minor versions that see their own changes and leave older versions untouched", async () => {
        const key = await indexWith([
          { id: "a", title: "Alpha" },
          { id: "b", title: "Beta" },
        ]);
        await engine.applyChange(key, {
          version: "1.1",
          parent: "1",
          upserts: [{ id: "c", title: "Gamma" }],
          deletes: [],
        });
        await engine.applyChange(key, {
          version: "1.2",
          parent: "1.1",
          upserts: [{ id: "a", title: "Alpha Prime" }],
          deletes: ["b"],
        });
        expect(await engine.count(key, "1")).toBe(2);
        expect(await engine.count(key, "1.1")).toBe(3);
        expect(await engine.count(key, "1.2")).toBe(2);
        expect(await engine.get(key, "1.2", "b")).toBeNull();
        expect(await engine.get(key, "1.1", "b")).toEqual({ id: "b", title: "Beta" });
        expect((await engine.get(key, "1.2", "a"))?.title).toBe("Alpha Prime");
        expect(ids(await search(key, "prime", {}, "1.2"))).toEqual(["a"]);
        expect(ids(await search(key, "prime", {}, "1.1"))).toEqual([]);
        expect(ids(await search(key, "beta", {}, "1.2"))).toEqual([]);
        expect(ids(await search(key, "gam", {}, "1"))).toEqual([]);
        expect(ids(await search(key, "gam", {}, "1.1"))).toEqual(["c"]);
      });

      it("branches from an older version: a delete hides the id in its version and descendants only", async () => {
        const key = await indexWith([{ id: "a", title: "Anchor" }]);
        await engine.applyChange(key, { version: "1.1", parent: "1", upserts: [], deletes: ["a"] });
        await engine.applyChange(key, {
          version: "1.2",
          parent: "1.1",
          upserts: [{ id: "z", title: "Zebra" }],
          deletes: [],
        });
        // Activating "1" again and writing branches from it.
        await engine.applyChange(key, {
          version: "1.3",
          parent: "1",
          upserts: [{ id: "y", title: "Yak" }],
          deletes: [],
        });
        expect(await engine.get(key, "1.2", "a")).toBeNull();
        expect(await engine.get(key, "1.3", "a")).toEqual({ id: "a", title: "Anchor" });
        expect(ids(await search(key, "anc", {}, "1.3"))).toEqual(["a"]);
        expect(await engine.get(key, "1.3", "z")).toBeNull();
        expect(await engine.count(key, "1.3")).toBe(2);
        // A PUT of a deleted id writes it again.
        await engine.applyChange(key, {
          version: "1.4",
          parent: "1.2",
          upserts: [{ id: "a", title: "Anchor Again" }],
          deletes: [],
        });
        expect(ids(await search(key, "again", {}, "1.4"))).toEqual(["a"]);
        const listed = await engine.versions(key);
        expect(listed.map((v) => [v.version, v.parent, v.records])).toEqual([
          ["1", null, 1],
          ["1.1", "1", 0],
          ["1.2", "1.1", 1],
          ["1.3", "1", 2],
          ["1.4", "1.2", 2],
        ]);
      });

      it("reads every version of a random tree of changes as its own chain made it", async () => {
        // Mostly each change builds on the newest version, as writes do; sometimes on an older one,
        // as after a roll back. Where the engine takes batches, runs of a chain go in one.
        const rand = random(20261127);
        const title = (id: string, n: number) => `Common ${id} take${n}`;
        const base = Array.from({ length: 15 }, (_, i) => ({ id: `s${i}`, title: title(`s${i}`, 0) }));
        const key = await indexWith(base);
        const states = new Map<string, Map<string, string | null>>([["1", new Map(base.map((r) => [r.id, r.title]))]]);
        const order = ["1"];
        let pending: RecordChange[] = [];
        const flush = async () => {
          if (pending.length === 0) return;
          if (engine.applyChanges) await engine.applyChanges(key, pending);
          else for (const c of pending) await engine.applyChange(key, c);
          pending = [];
        };
        for (let minor = 1; minor <= 40; minor++) {
          const newest = rand() < 0.75;
          const parent = newest ? order.at(-1)! : order[Math.floor(rand() * order.length)]!;
          if (!newest || pending.length >= 4) await flush();
          const state = new Map(states.get(parent)!);
          const change: RecordChange = { version: `1.${minor}`, parent, upserts: [], deletes: [] };
          for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
            const id = rand() < 0.5 ? `s${Math.floor(rand() * 15)}` : `n${Math.floor(rand() * 15)}`;
            if (change.upserts.some((r) => r.id === id) || change.deletes.includes(id)) continue;
            if (rand() < 0.3) {
              change.deletes.push(id);
              state.set(id, null);
            } else {
              change.upserts.push({ id, title: title(id, minor) });
              state.set(id, title(id, minor));
            }
          }
          pending.push(change);
          states.set(change.version, state);
          order.push(change.version);
        }
        await flush();
        for (const [version, state] of states) {
          const alive = [...state].filter(([, t]) => t !== null);
          expect(await engine.count(key, version)).toBe(alive.length);
          for (const [id, t] of state) expect((await engine.get(key, version, id))?.title ?? null).toBe(t);
          const found = await search(key, "common", { limit: 100 }, version);
          expect(new Set(ids(found))).toEqual(new Set(alive.map(([id]) => id)));
        }
      });

      it("ranks changed records with the rest of the version", async () => {
        const key = await indexWith([
          { id: "m", title: "Market", weight: 5 },
          { id: "n", title: "Market", weight: 50 },
        ]);
        await engine.applyChange(key, {
          version: "1.1",
          parent: "1",
          upserts: [{ id: "o", title: "Market", weight: 20 }],
          deletes: [],
        });
        expect(ids(await search(key, "mark", { weighted: true }, "1.1"))).toEqual(["n", "o", "m"]);
        expect(ids(await search(key, "mark", {}, "1.1"))).toEqual(["m", "n", "o"]);
      });

      it("checkpoints a version into a self-contained major", async () => {
        const key = await indexWith([
          { id: "a", title: "Apple", weight: 3 },
          { id: "b", title: "Banana" },
        ]);
        await engine.applyChange(key, {
          version: "1.1",
          parent: "1",
          upserts: [{ id: "c", title: "Apricot", weight: 7 }],
          deletes: ["b"],
        });
        expect(await engine.checkpoint(key, "1.1", 2)).toEqual({ records: 2 });
        expect(ids(await search(key, "ap", { weighted: true }, "2"))).toEqual(["c", "a"]);
        expect(await engine.get(key, "2", "b")).toBeNull();
        await engine.dropVersion(key, "1");
        expect((await engine.versions(key)).map((v) => v.version)).toEqual(["2"]);
        expect(await engine.count(key, "2")).toBe(2);
        await engine.applyChange(key, {
          version: "2.1",
          parent: "2",
          upserts: [{ id: "b", title: "Blueberry" }],
          deletes: [],
        });
        expect(await engine.count(key, "2.1")).toBe(3);
      });

      it("drops a minor version, and a major with its minors", async () => {
        const key = await indexWith([{ id: "a", title: "One" }]);
        await engine.applyChange(key, {
          version: "1.1",
          parent: "1",
          upserts: [{ id: "b", title: "Two" }],
          deletes: [],
        });
        await engine.applyChange(key, {
          version: "1.2",
          parent: "1",
          upserts: [{ id: "c", title: "Three" }],
          deletes: [],
        });
        const writer = await engine.bulkWriter(key, 2);
        await writer.add([{ id: "x", title: "Fresh" }]);
        await writer.commit();
        await engine.dropVersion(key, "1.1");
        expect((await engine.versions(key)).map((v) => v.version)).toEqual(["1", "1.2", "2"]);
        expect(ids(await search(key, "three", {}, "1.2"))).toEqual(["c"]);
        await engine.dropVersion(key, "1");
        expect((await engine.versions(key)).map((v) => v.version)).toEqual(["2"]);
        expect(ids(await search(key, "fresh", {}, "2"))).toEqual(["x"]);
      });

      it("answers searches on a version consistently while writes go on", async () => {
        const records = Array.from({ length: 300 }, (_, i) => ({
          id: `r${String(i).padStart(3, "0")}`,
          title: `Station ${i % 7}`,
          weight: i + 1,
        }));
        const key = await indexWith(records);
        const baseline = ids(await search(key, "station", { weighted: true }));
        let parent = "1";
        const writes = (async () => {
          for (let i = 1; i <= 15; i++) {
            await engine.applyChange(key, {
              version: `1.${i}`,
              parent,
              upserts: [{ id: `new${i}`, title: "Station", weight: 10_000 + i }],
              deletes: ["r299"],
            });
            parent = `1.${i}`;
          }
          const writer = await engine.bulkWriter(key, 2);
          await writer.add(records.slice(0, 10));
          await writer.commit();
        })();
        const reads = Array.from({ length: 20 }, () => search(key, "station", { weighted: true }).then(ids));
        const [, ...results] = await Promise.all([writes, ...reads]);
        for (const r of results) expect(r).toEqual(baseline);
        expect(ids(await search(key, "station", { weighted: true }, "1.15"))[0]).toBe("new15");
      });
    });

    describe("erasure", () => {
      it("purges a record from every version that held it: majors, changes, branches, counts", async () => {
        const secret = (title: string): SearchRecord => ({ id: "s", title, data: { note: "Purgemarkerqx" } });
        const key = await indexWith([
          { id: "a", title: "Alpha" },
          secret("Secret Original"),
          { id: "b", title: "Beta" },
        ]);
        await engine.applyChange(key, { version: "1.1", parent: "1", upserts: [secret("Secret Edited")], deletes: [] });
        await engine.applyChange(key, { version: "1.2", parent: "1.1", upserts: [], deletes: ["b"] });
        // A branch from the major that never touched the record, and a checkpoint of the chain.
        await engine.applyChange(key, {
          version: "1.3",
          parent: "1",
          upserts: [{ id: "c", title: "Gamma" }],
          deletes: [],
        });
        expect(await engine.checkpoint(key, "1.2", 2)).toEqual({ records: 2 });
        await engine.applyChange(key, { version: "2.1", parent: "2", upserts: [secret("Secret Again")], deletes: [] });
        await engine.applyChange(key, { version: "2.2", parent: "2", upserts: [], deletes: ["s"] });
        const all = ["1", "1.1", "1.2", "1.3", "2", "2.1", "2.2"];
        if (storageHolds) expect(storageHolds("Purgemarkerqx")).toBe(true);

        const result = await engine.purge(key, "s");

        expect(result.found).toBe(true);
        expect(result.changed).toEqual([
          { version: "1", records: 2 },
          { version: "1.1", records: 2 },
          { version: "1.2", records: 1 },
          { version: "1.3", records: 3 },
          { version: "2", records: 1 },
          { version: "2.1", records: 1 },
        ]);
        for (const version of all) {
          expect(await engine.get(key, version, "s")).toBeNull();
          expect(ids(await search(key, "secret", {}, version))).toEqual([]);
          expect(ids(await search(key, "purgemarkerqx", { scope: "all" }, version))).toEqual([]);
        }
        expect((await engine.versions(key)).map((v) => [v.version, v.records])).toEqual([
          ["1", 2],
          ["1.1", 2],
          ["1.2", 1],
          ["1.3", 3],
          ["2", 1],
          ["2.1", 1],
          ["2.2", 1],
        ]);
        for (const version of all) {
          expect(await engine.count(key, version)).toBe(
            (await engine.versions(key)).find((v) => v.version === version)!.records,
          );
        }
        // The rest of every version is untouched and still searchable.
        expect(ids(await search(key, "alp", {}, "2.1"))).toEqual(["a"]);
        expect(ids(await search(key, "gam", {}, "1.3"))).toEqual(["c"]);
        expect(await engine.get(key, "1.1", "b")).toEqual({ id: "b", title: "Beta" });
        if (storageHolds) expect(storageHolds("Purgemarkerqx")).toBe(false);

        // Writing on top of a purged version still works, and the id can be written anew.
        await engine.applyChange(key, { version: "2.3", parent: "2.1", upserts: [secret("Secret New")], deletes: [] });
        expect(ids(await search(key, "secret", {}, "2.3"))).toEqual(["s"]);
        expect(await engine.count(key, "2.3")).toBe(2);
      });

      it("reports a record no version holds, and changes nothing", async () => {
        const key = await indexWith([{ id: "a", title: "Alpha" }]);
        await engine.applyChange(key, { version: "1.1", parent: "1", upserts: [], deletes: ["a"] });
        expect(await engine.purge(key, "nobody")).toEqual({ found: false, changed: [] });
        expect((await engine.purge(key, "a")).found).toBe(true);
        // Idempotent: a second purge finds nothing left.
        expect(await engine.purge(key, "a")).toEqual({ found: false, changed: [] });
        expect((await engine.versions(key)).map((v) => [v.version, v.records])).toEqual([
          ["1", 0],
          ["1.1", 0],
        ]);
      });
    });

    describe("against a brute-force reference", () => {
      // Many records share a title, so any engine must rank them the same way: lexical scores
      // tie, then weight (when weighted), then distance (with a point), then id.
      const rand = random(20261122);
      const words = [
        "north",
        "nord",
        "norte",
        "station",
        "stadium",
        "state",
        "park",
        "parking",
        "río",
        "rio",
        "ocean",
        "oak",
      ];
      const titles = Array.from({ length: 25 }, () => {
        const n = 1 + Math.floor(rand() * 3);
        return Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]!).join(" ");
      });
      const records: SearchRecord[] = Array.from({ length: 400 }, (_, i) => {
        const r: SearchRecord = {
          id: `id${String(i).padStart(4, "0")}`,
          title: titles[Math.floor(rand() * titles.length)]!,
          data: {},
        };
        if (rand() < 0.7) r.weight = 1 + Math.floor(rand() * 20);
        if (rand() < 0.8) {
          r.latitude = (40 + rand() * 10).toFixed(4);
          r.longitude = (-5 + rand() * 15).toFixed(4);
        }
        return r;
      });
      const queries = [
        "n",
        "no",
        "nor",
        "north",
        "st",
        "sta",
        "park",
        "rio",
        "río",
        "oa",
        "north st",
        "park n",
        "state park",
        "o",
      ];

      let key: string;
      beforeAll(async () => {
        key = await indexWith(records);
      });

      // Matches with typos count only when no record matches exactly.
      const matching = (query: string): SearchRecord[] => {
        const ranks = records.map((r) => referenceTitleRank(tokenize(r.title), tokenize(query), true, true));
        const exact = ranks.some((rank) => rank !== null && rank[0] < 4);
        return records.filter((_, i) => ranks[i] !== null && (!exact || ranks[i]![0] < 4));
      };

      it.each(queries)("finds exactly the matching records for %j and orders equal titles correctly", async (query) => {
        for (const mode of [
          {},
          { weighted: true },
          { geo: { latitude: 45, longitude: 2 } },
          { weighted: true, geo: { latitude: 47, longitude: 8 } },
        ]) {
          const hits = await search(key, query, { limit: 100, ...mode });
          const expected = matching(query);
          if (expected.length <= 100) expect(new Set(ids(hits))).toEqual(new Set(expected.map((r) => r.id)));
          else expect(hits).toHaveLength(100);
          const byTitle = new Map<string, SearchHit[]>();
          for (const h of hits) byTitle.set(h.record.title, [...(byTitle.get(h.record.title) ?? []), h]);
          for (const group of byTitle.values()) {
            const sorted = [...group].sort((a, b) => {
              const w = "weighted" in mode ? (b.record.weight ?? 0) - (a.record.weight ?? 0) : 0;
              const d = (a.distanceMeters ?? Infinity) - (b.distanceMeters ?? Infinity);
              return w || (Number.isNaN(d) ? 0 : d) || (a.record.id < b.record.id ? -1 : 1);
            });
            expect(ids(group)).toEqual(ids(sorted));
          }
        }
      });
    });
  });
}
