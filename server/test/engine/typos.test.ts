import { describe, expect, it } from "vitest";
import { allowedTypos, editDistance, prefixEditDistance } from "../../src/engine/typos.ts";
import { random } from "../support/random.ts";

/** Optimal string alignment distance, the textbook full matrix: the reference for the bounded one. */
function osa(a: string[], b: string[]): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
      }
    }
  }
  return d[a.length]![b.length]!;
}

describe("allowed typos", () => {
  it("follows the token's length in code points: none below 4, one from 4, two from 8", () => {
    expect([..."abcdefghij"].map((_, i) => allowedTypos("abcdefghij".slice(0, i + 1)))).toEqual([
      0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
    ]);
    // Code points, not UTF-16 units: four CJK characters of the supplementary planes are four.
    expect(allowedTypos("𠀀𠀁𠀂")).toBe(0);
    expect(allowedTypos("𠀀𠀁𠀂𠀃")).toBe(1);
    expect(allowedTypos("münchen")).toBe(1);
  });

  it("never allows typos in digits-only tokens", () => {
    expect(allowedTypos("2024")).toBe(0);
    expect(allowedTypos("12345678")).toBe(0);
    expect(allowedTypos("٢٠٢٤")).toBe(0);
    expect(allowedTypos("route66")).toBe(1);
  });
});

describe("edit distance", () => {
  it("counts insertions, deletions, substitutions and neighbour swaps as one edit each", () => {
    expect(editDistance("london", "london", 2)).toBe(0);
    expect(editDistance("londn", "london", 2)).toBe(1);
    expect(editDistance("lodnon", "london", 2)).toBe(1);
    expect(editDistance("lomdon", "london", 2)).toBe(1);
    expect(editDistance("londoon", "london", 2)).toBe(1);
    expect(editDistance("amsterdma", "amsterdam", 2)).toBe(1);
    expect(editDistance("ca", "abc", 3)).toBe(3); // OSA: no edit of a swapped pair
  });

  it("stops at max + 1", () => {
    expect(editDistance("berlin", "paris", 1)).toBe(2);
    expect(editDistance("a", "abcdefgh", 2)).toBe(3);
  });

  it("agrees with the full matrix on random strings, within and beyond the bound", () => {
    const next = random(14);
    const word = () => Array.from({ length: Math.floor(next() * 9) }, () => "abcd"[Math.floor(next() * 4)]!).join("");
    for (let k = 0; k < 3000; k++) {
      const a = word();
      const b = word();
      const exact = osa([...a], [...b]);
      for (const max of [0, 1, 2]) expect(editDistance(a, b, max), `${a} ${b} ${max}`).toBe(Math.min(exact, max + 1));
    }
  });
});

describe("prefix edit distance", () => {
  it("is the distance to the closest start of the term", () => {
    expect(prefixEditDistance("lond", "london", 1)).toBe(0);
    expect(prefixEditDistance("lnod", "london", 1)).toBe(1);
    expect(prefixEditDistance("amstr", "amsterdam", 1)).toBe(1);
    expect(prefixEditDistance("sao paolo".split(" ")[1]!, "paulo", 1)).toBe(1);
    expect(prefixEditDistance("berln", "berlin", 1)).toBe(1);
    expect(prefixEditDistance("xondon", "london", 1)).toBe(1);
    expect(prefixEditDistance("paris", "berlin", 1)).toBe(2);
  });

  it("agrees with the minimum over every prefix by the full matrix", () => {
    const next = random(15);
    const word = (n: number) => Array.from({ length: n }, () => "abc"[Math.floor(next() * 3)]!).join("");
    for (let k = 0; k < 2000; k++) {
      const q = word(1 + Math.floor(next() * 6));
      const t = word(Math.floor(next() * 9));
      let exact = Number.POSITIVE_INFINITY;
      for (let i = 0; i <= t.length; i++) exact = Math.min(exact, osa([...q], [...t.slice(0, i)]));
      for (const max of [0, 1, 2]) {
        expect(prefixEditDistance(q, t, max), `${q} ${t} ${max}`).toBe(Math.min(exact, max + 1));
      }
    }
  });
});
