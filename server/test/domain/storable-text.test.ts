import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, findUnstorable, unstorableReason } from "../../src/domain/storable-text.ts";

describe("storable text", () => {
  it("refuses NUL, unpaired surrogates and noncharacters, and says where", () => {
    expect(unstorableReason("a\u0000b")).toBe("contains U+0000 (NUL) at offset 1");
    expect(unstorableReason("x\uD800")).toBe("contains an unpaired surrogate U+D800 at offset 1");
    expect(unstorableReason("\uDC00x")).toBe("contains an unpaired surrogate U+DC00 at offset 0");
    expect(unstorableReason("\uFDD0")).toBe("contains the noncharacter U+FDD0 at offset 0");
    expect(unstorableReason("ab\uFFFF")).toBe("contains the noncharacter U+FFFF at offset 2");
    expect(unstorableReason("\u{1FFFE}")).toBe("contains the noncharacter U+1FFFE at offset 0");
    expect(unstorableReason("\u{10FFFF}")).toBe("contains the noncharacter U+10FFFF at offset 0");
  });

  it("keeps every other character, astral ones included", () => {
    for (const text of ["", "Zürich", "東京 😀", "\u{1FFFD}", "\uFDCF\uFDF0", "tab\tand\nnewline", "\u{10FFFD}"]) {
      expect(unstorableReason(text)).toBeNull();
    }
  });

  it("names the JSON path of a bad string or key, and a nesting too deep, without recursion", () => {
    expect(findUnstorable({ title: "ok", data: { tags: ["fine", "b\u0000"] } })).toEqual({
      path: "data.tags[1]",
      message: "contains U+0000 (NUL) at offset 1",
    });
    expect(findUnstorable({ data: { "k\uFFFE": 1 } })?.path).toBe("data");
    let deep: unknown = "x";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnstorable(deep)?.message).toBe(`is nested more than ${MAX_JSON_DEPTH} levels deep`);
    let fine: unknown = "x";
    for (let i = 0; i < MAX_JSON_DEPTH; i++) fine = { d: fine };
    expect(findUnstorable(fine)).toBeNull();
    expect(findUnstorable({ d: fine })).not.toBeNull();
  });
});
