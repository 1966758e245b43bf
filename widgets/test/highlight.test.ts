import { describe, expect, test } from "vitest";
import { highlight } from "../src/highlight.ts";

/** The title with the matched characters in [brackets]. */
const marked = (title: string, query: string, prefixLast = true) =>
  highlight(title, query, prefixLast)
    .map((s) => (s.match ? `[${s.text}]` : s.text))
    .join("");

describe("highlight", () => {
  test("marks the typed prefix of the title, keeping the title's own case", () => {
    expect(marked("Paris", "par")).toBe("[Par]is");
    expect(marked("Paris", "PAR")).toBe("[Par]is");
  });

  test("folds diacritics as the server does and marks the original characters", () => {
    expect(marked("Zürich", "zur")).toBe("[Zür]ich");
    expect(marked("Zurich", "zür")).toBe("[Zur]ich");
    expect(marked("São Paulo", "sao p")).toBe("[São] [P]aulo");
    // Decomposed input: "u" + combining diaeresis is one letter to the reader.
    expect(marked("Zu\u0308rich", "zu")).toBe("[Zu\u0308]rich");
    expect(marked("İstanbul", "ist")).toBe("[İst]anbul");
  });

  test("compatibility forms fold to what they look like", () => {
    expect(marked("ﬁre station", "fire")).toBe("[ﬁre] station");
    expect(marked("Ｔｏｋｙｏ", "tok")).toBe("[Ｔｏｋ]ｙｏ");
  });

  test("earlier query words match whole title words; the last one matches a prefix", () => {
    expect(marked("New York New Jersey", "new y")).toBe("[New] [Y]ork [New] Jersey");
    // "new" is a finished word: it does not match the start of "Newark".
    expect(marked("Newark", "new y")).toBe("Newark");
    expect(marked("Newcastle upon Tyne", "new ty")).toBe("Newcastle upon [Ty]ne");
  });

  test("with scope=all every word must match whole", () => {
    expect(marked("Paris Gare de Lyon", "gare ly", false)).toBe("Paris [Gare] de Lyon");
  });

  test("nothing is marked when the match was elsewhere (data fields) and separators are left alone", () => {
    expect(marked("Eiffel Tower", "paris")).toBe("Eiffel Tower");
    expect(marked("Saint-Étienne", "saint-e")).toBe("[Saint]-[É]tienne");
    expect(marked("", "a")).toBe("");
    expect(marked("Paris", "")).toBe("Paris");
  });

  test("works beyond the Basic Multilingual Plane and in right-to-left scripts", () => {
    expect(marked("𝐁oston", "bo")).toBe("[𝐁o]ston");
    expect(marked("القاهرة", "القا")).toBe("[القا]هرة");
  });
});
