import { describe, expect, it } from "vitest";
import { random } from "../support/random.ts";
import { radixSortByKey, sortByKey } from "../../src/engine/embedded/util/arrays.ts";

describe("sorting by a 32-bit key", () => {
  const rand = random(3);
  // Keys that differ only in their low or only in their high 16 bits, both extremes, many ties.
  const keys = Uint32Array.from({ length: 5000 }, (_, i) =>
    i % 7 === 0 ? 0xffff_ffff : i % 5 === 0 ? 0 : i % 3 === 0 ? ((rand() * 4) << 16) >>> 0 : (rand() * 2 ** 32) >>> 0,
  );
  const expected = [...keys.keys()].sort((a, b) => keys[a]! - keys[b]! || a - b);

  it("orders indices by key and keeps equal keys in index order", () => {
    expect([...sortByKey(keys.length, (i) => keys[i]!)]).toEqual(expected);
  });

  it("carries values along", () => {
    const values = Uint32Array.from(keys, (_, i) => i * 3);
    expect([...radixSortByKey(keys, values)]).toEqual(expected.map((i) => i * 3));
  });
});
