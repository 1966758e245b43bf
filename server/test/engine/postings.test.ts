import { describe, expect, it } from "vitest";
import {
  AndSource,
  RunSource,
  UnionSource,
  materialize,
  type Source,
} from "../../src/engine/embedded/postings/sources.ts";
import { random } from "../support/random.ts";

/** A sorted, de-duplicated run of up to `size` positions in [from, universe). */
function run(next: () => number, size: number, universe: number, from = 0): RunSource {
  const values = new Set<number>();
  for (let i = 0; i < size; i++) values.add(from + Math.floor(next() * (universe - from)));
  return new RunSource(Uint32Array.from([...values].sort((a, b) => a - b)), 0, values.size);
}

const entries = (source: Source) => {
  const run = materialize(source);
  return Array.from(run.values.subarray(run.start, run.end));
};
const members = (r: RunSource) => new Set(r.values.subarray(r.start, r.end));

describe("materialize", () => {
  it("intersects unions of runs exactly, whether by bitmap or by leapfrogging", () => {
    const next = random(7);
    for (let trial = 0; trial < 100; trial++) {
      const universe = 1 + Math.floor(next() * 200_000);
      // Sizes from similar (bitmap) to very different (leapfrog); inputs of one to three runs.
      const inputs = Array.from({ length: 2 + Math.floor(next() * 2) }, () =>
        Array.from({ length: 1 + Math.floor(next() * 3) }, () =>
          run(
            next,
            Math.floor(next() ** 3 * Math.min(universe, 20_000)),
            universe,
            Math.floor(next() * universe * 0.3),
          ),
        ),
      );
      const sources = inputs.map((runs) => (runs.length === 1 ? runs[0]! : new UnionSource(runs)));
      const sets = inputs.map((runs) => new Set(runs.flatMap((r) => [...members(r)])));
      const expected = [...sets[0]!].filter((v) => sets.every((s) => s.has(v))).sort((a, b) => a - b);
      expect(entries(new AndSource(sources))).toEqual(expected);
    }
  });

  it("handles empty inputs, disjoint ranges and the last position of a 32-bit word", () => {
    const r = (...v: number[]) => new RunSource(Uint32Array.from(v), 0, v.length);
    expect(entries(new AndSource([r(), r(1, 2, 3)]))).toEqual([]);
    expect(entries(new AndSource([r(1, 2, 3), r(10, 11)]))).toEqual([]);
    expect(entries(new AndSource([r(0, 31, 32, 63, 64), new UnionSource([r(31, 64), r(0, 63)])]))).toEqual([
      0, 31, 63, 64,
    ]);
    expect(entries(new AndSource([r(2 ** 32 - 2), r(5, 2 ** 32 - 2)]))).toEqual([2 ** 32 - 2]);
  });
});
