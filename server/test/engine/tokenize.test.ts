import { describe, expect, it } from "vitest";
import { normalize, tokenize } from "../../src/engine/tokenize.ts";

describe("tokenize", () => {
  it("lowercases and splits on anything but letters and digits", () => {
    expect(tokenize("New York-City, NY 10001")).toEqual(["new", "york", "city", "ny", "10001"]);
    expect(tokenize("a_b.c/d")).toEqual(["a", "b", "c", "d"]);
    expect(tokenize("  ")).toEqual([]);
    expect(tokenize("?!…—")).toEqual([]);
  });

  it("folds diacritics and compatibility forms", () => {
    expect(tokenize("Zürich São Paulo Crème brûlée")).toEqual(["zurich", "sao", "paulo", "creme", "brulee"]);
    expect(tokenize("İstanbul")).toEqual(["istanbul"]);
    expect(tokenize("ﬁne ℌello Ｆｕｌｌ")).toEqual(["fine", "hello", "full"]);
    expect(tokenize("Norabats’")).toEqual(["norabats"]);
  });

  it("keeps non-Latin scripts as words", () => {
    expect(tokenize("東京 タワー")).toEqual(["東京", "タワー"]);
    expect(tokenize("Москва-Сити")).toEqual(["москва", "сити"]);
  });

  it("normalises the same way whatever the input form", () => {
    expect(normalize("Cafe\u0301")).toBe(normalize("Café"));
    expect(normalize("Café")).toBe("cafe");
  });
});
