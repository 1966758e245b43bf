import { describe, expect, it } from "vitest";
import { fuzzyPrefixesAndTerms, fuzzyTerms } from "../../src/engine/embedded/termdict/fuzzy.ts";
import { SortedStrings, compareCodePoints } from "../../src/engine/embedded/termdict/sorted-strings.ts";
import { editDistance, prefixEditDistance } from "../../src/engine/typos.ts";
import { random } from "../support/random.ts";

function dictionary(words: string[]): { dict: SortedStrings; terms: string[] } {
  const terms = [...new Set(words)].sort(compareCodePoints);
  const bytes = Buffer.from(terms.join(""), "utf8");
  const offsets = new Uint32Array(terms.length + 1);
  let at = 0;
  terms.forEach((t, i) => {
    offsets[i] = at;
    at += Buffer.byteLength(t);
  });
  offsets[terms.length] = at;
  return { dict: new SortedStrings(bytes, offsets), terms };
}

/** term index -> distance, from the walk's ranges. */
function expand(ranges: ReturnType<typeof fuzzyTerms>): Map<number, number> {
  const out = new Map<number, number>();
  let last = -1;
  for (const r of ranges) {
    expect(r.lo).toBeGreaterThanOrEqual(last); // disjoint, in term order
    last = r.hi;
    for (let t = r.lo; t < r.hi; t++) out.set(t, r.distance);
  }
  return out;
}

function bruteForce(terms: string[], query: string, max: number, prefix: boolean): Map<number, number> {
  const out = new Map<number, number>();
  terms.forEach((t, i) => {
    const d = prefix ? prefixEditDistance(query, t, max) : editDistance(query, t, max);
    if (d <= max) out.set(i, d);
  });
  return out;
}

describe("fuzzy walk over a sorted dictionary", () => {
  const cities = [
    "london",
    "londonderry",
    "londrina",
    "lodz",
    "lyon",
    "berlin",
    "bern",
    "berlingen",
    "paris",
    "parisot",
  ];

  it("finds whole terms within the bound, at their distance", () => {
    const { dict, terms } = dictionary(cities);
    const found = expand(fuzzyTerms(dict, "londn", 1, false));
    expect([...found].map(([t, d]) => [terms[t], d])).toEqual([["london", 1]]);
    expect([...expand(fuzzyTerms(dict, "berln", 1, false)).keys()].map((t) => terms[t])).toEqual(["berlin", "bern"]);
  });

  it("finds terms by their closest prefix, whole subtrees at once", () => {
    const { dict, terms } = dictionary(cities);
    const ranges = fuzzyTerms(dict, "lond", 1, true);
    const found = expand(ranges);
    expect(terms.filter((_, i) => found.get(i) === 0)).toEqual(["london", "londonderry", "londrina"]);
    // "lodz" starts with "lod", one edit from "lond".
    expect(found.get(terms.indexOf("lodz"))).toBe(1);
    // The exact prefix's terms come as one range, not one entry per term.
    expect(ranges.some((r) => r.hi - r.lo === 3 && r.distance === 0)).toBe(true);
  });

  it("agrees with a brute force over every term, for random dictionaries and queries", () => {
    const next = random(21);
    const alphabet = ["a", "b", "c", "é", "ß", "日", "𠀀"];
    const word = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]!).join("");
    for (let round = 0; round < 12; round++) {
      const { dict, terms } = dictionary(Array.from({ length: 300 }, () => word(1 + Math.floor(next() * 7))));
      for (let k = 0; k < 25; k++) {
        const query = word(1 + Math.floor(next() * 6));
        for (const max of [0, 1, 2]) {
          for (const prefix of [false, true]) {
            const got = expand(fuzzyTerms(dict, query, max, prefix));
            expect(got, `${query} max ${max} prefix ${prefix}`).toEqual(bruteForce(terms, query, max, prefix));
          }
          // One walk for both answers gives each of them exactly.
          const both = fuzzyPrefixesAndTerms(dict, query, max);
          expect(expand(both.prefixes)).toEqual(bruteForce(terms, query, max, true));
          expect(expand(both.whole)).toEqual(bruteForce(terms, query, max, false));
        }
      }
    }
  });
});
