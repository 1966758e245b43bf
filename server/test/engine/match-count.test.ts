import { describe, expect, it } from "vitest";
import { RunSource } from "../../src/engine/embedded/postings/sources.ts";
import { countByBitmap } from "../../src/engine/embedded/search/match-set.ts";
import { random } from "../support/random.ts";

// The count reads a block of documents at a time (and probes from a rare input, or tests dense
// runs as bitmaps): sets spanning many blocks, inputs of many overlapping runs, dense runs beside
// sparse ones, and caps reached mid-block check it against sets.
describe("counting an intersection of unions of runs", () => {
  const rand = random(11);
  const documents = 300_000;
  const input = (size: number, runs: number): { runs: RunSource[]; docs: Set<number> } => {
    const docs = new Set<number>();
    const parts: number[][] = Array.from({ length: runs }, () => []);
    for (let i = 0; i < size; i++) {
      const doc = Math.floor(rand() * documents);
      docs.add(doc);
      parts[Math.floor(rand() * runs)]!.push(doc);
    }
    return {
      docs,
      runs: parts.map((p) => {
        const values = Uint32Array.from(new Set(p)).sort();
        return new RunSource(values, 0, values.length);
      }),
    };
  };
  const shapes: [number, number][][] = [
    [[50_000, 1]],
    [[40_000, 30]],
    [
      [100_000, 2],
      [120_000, 2],
    ],
    [
      [3_000, 200],
      [60_000, 2],
    ],
    [
      [500, 2],
      [90_000, 3],
    ],
    [
      [20_000, 2],
      [80_000, 4],
      [150_000, 6],
    ],
    // Dense runs (a 32nd of the documents) are tested as bitmaps, beside sparse runs of the same input.
    [
      [2_000, 1],
      [60_000, 1],
      [5_000, 40],
    ],
    [
      [70_000, 3],
      [9_000, 50],
    ],
    [
      [200, 12],
      [150_000, 3],
    ],
    // A rare input probed in many sparse runs.
    [
      [200, 1],
      [60_000, 20],
    ],
  ];
  for (const shape of shapes) {
    it(`counts ${JSON.stringify(shape)} exactly below the cap and stops at it`, () => {
      const inputs = shape.map(([size, runs]) => input(size, runs));
      let expected = 0;
      for (const doc of inputs[0]!.docs) if (inputs.every((x) => x.docs.has(doc))) expected++;
      const runs = inputs.map((x) => x.runs);
      expect(countByBitmap(runs, documents, expected + 1)).toEqual({ count: expected, exact: true });
      expect(countByBitmap(runs, documents, expected)).toEqual({ count: expected, exact: false });
      const cap = Math.max(1, Math.floor(expected / 3));
      expect(countByBitmap(runs, documents, cap)).toEqual({ count: cap, exact: expected < cap });
      // Twice: the reused bitmaps were left cleared.
      expect(countByBitmap(runs, documents, expected + 1)).toEqual({ count: expected, exact: true });
    });

    it(`counts ${JSON.stringify(shape)} less the documents a version hides`, () => {
      const inputs = shape.map(([size, runs]) => input(size, runs));
      const members = [...inputs[0]!.docs].filter((doc) => inputs.every((x) => x.docs.has(doc)));
      // Hidden: some members, some documents outside the set.
      const hidden = new Set<number>();
      for (let i = 0; i < members.length / 2 && i < 1_500; i++)
        hidden.add(members[Math.floor(rand() * members.length)]!);
      for (let i = 0; i < 1_500; i++) hidden.add(Math.floor(rand() * documents));
      const expected = members.filter((doc) => !hidden.has(doc)).length;
      const runs = inputs.map((x) => x.runs);
      expect(countByBitmap(runs, documents, expected + 1, hidden)).toEqual({ count: expected, exact: true });
      // From the cap on, a lower bound no smaller than the cap.
      for (const cap of [expected, Math.max(1, Math.floor(expected / 3))]) {
        const counted = countByBitmap(runs, documents, cap, hidden);
        expect(counted.exact).toBe(false);
        expect(counted.count).toBeGreaterThanOrEqual(cap);
        expect(counted.count).toBeLessThanOrEqual(expected);
      }
      // Without them, every member (the bitmaps were left cleared).
      expect(countByBitmap(runs, documents, members.length + 1)).toEqual({ count: members.length, exact: true });
    });
  }
});
