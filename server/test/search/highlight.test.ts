// What a user sees marked in a suggestion (docs/api.md, Highlighting): ranges in the stored text,
// from the record and the query alone.
import { describe, expect, test } from "vitest";
import { loadCities } from "../../src/demo/cities.ts";
import { tokenize } from "../../src/engine/tokenize.ts";
import {
  dataPathSegment,
  type HighlightOptions,
  type HighlightRange,
  highlight,
  highlightText,
} from "../../src/search/highlight.ts";

const TITLE: HighlightOptions = { scope: "title" };
const ALL: HighlightOptions = { scope: "all" };
const EXACT: HighlightOptions = { scope: "title", typoTolerance: false };

/** The text with each range in [brackets]. */
function marked(text: string, ranges: HighlightRange[]): string {
  let out = "";
  let at = 0;
  for (const [start, end] of ranges) {
    out += `${text.slice(at, start)}[${text.slice(start, end)}]`;
    at = end;
  }
  return out + text.slice(at);
}
const title = (text: string, query: string, options: HighlightOptions = TITLE) =>
  marked(text, highlightText(text, query, options));

describe("scope=title", () => {
  test("the last query word marks the typed prefix, in the title's own case", () => {
    expect(highlightText("Paris", "par", TITLE)).toEqual([[0, 3]]);
    expect(title("Paris", "PAR")).toBe("[Par]is");
    expect(title("New York", "new yo")).toBe("[New] [Yo]rk");
  });

  test("a whole word is marked whole, wherever it is, as many times as it occurs", () => {
    expect(title("Paris", "paris")).toBe("[Paris]");
    expect(title("New York New Jersey", "new y")).toBe("[New] [Y]ork [New] Jersey");
    expect(title("Saint-Étienne", "saint-e")).toBe("[Saint]-[É]tienne");
  });

  test("earlier query words match whole words only; a word that only starts with them is not marked", () => {
    expect(title("Newark", "new y")).toBe("Newark");
    expect(title("Newcastle upon Tyne", "new ty")).toBe("Newcastle upon [Ty]ne");
  });

  test("a word matching two query words is marked once, as far as the longer match goes", () => {
    expect(highlightText("San Salvador", "san sa", TITLE)).toEqual([
      [0, 3],
      [4, 6],
    ]);
    expect(title("Par Paris", "par pa")).toBe("[Par] [Pa]ris");
    // "pa" is not the last word, so it needs a whole word "pa": the last word alone marks "Paris".
    expect(title("Paris", "pa paris")).toBe("[Paris]");
    expect(title("Pa Paris", "pa paris")).toBe("[Pa] [Paris]");
  });

  test("a word matched with typos is marked whole", () => {
    // One typo from 4 code points: "pariss" is "paris" plus one letter.
    expect(title("Paris Texas", "pariss")).toBe("[Paris] Texas");
    // The last word is matched as a prefix with typos: "zurc" is one edit from "zuri".
    expect(title("Zürich", "zurc")).toBe("[Zürich]");
    // An earlier word with a typo, the last one exact.
    expect(title("London Bridge", "londn bri")).toBe("[London] [Bri]dge");
    // A swap of two neighbours is one typo.
    expect(title("Barcelona", "barcleona")).toBe("[Barcelona]");
  });

  test("typos follow the length rules: none under 4 code points, none in digits", () => {
    expect(title("Pars", "pxr")).toBe("Pars");
    expect(title("Route 2025", "route 2024")).toBe("[Route] 2025");
    // Two typos only from 8 code points.
    expect(title("Amsterdam", "amstrdan")).toBe("[Amsterdam]");
    expect(title("Lisbon", "lisbxx")).toBe("Lisbon");
  });

  test("typoTolerance=false marks exact words and prefixes only", () => {
    expect(title("Paris Texas", "pariss", EXACT)).toBe("Paris Texas");
    expect(title("Zürich", "zurc", EXACT)).toBe("Zürich");
    expect(title("London Bridge", "londn bri", EXACT)).toBe("London [Bri]dge");
    expect(title("Zürich", "zur", EXACT)).toBe("[Zür]ich");
  });

  test("a query word with an exact match does not also mark the words it reaches only with typos", () => {
    expect(title("Paris Parus", "paris")).toBe("[Paris] Parus");
    expect(title("Parus", "paris")).toBe("[Parus]");
    // Each query word on its own: "paris" has only a typo match, "lyon" exact ones.
    expect(title("Parus Lyon Lyons", "paris lyon")).toBe("[Parus] [Lyon] [Lyon]s");
    expect(title("New York Yorkton", "new york")).toBe("[New] [York] [York]ton");
  });

  test("nothing to mark: no tokens in the query, or no word of the title matches", () => {
    expect(highlight({ title: "Paris" }, " - ", TITLE)).toEqual({});
    expect(highlight({ title: "Eiffel Tower", data: { city: "Paris" } }, "paris", TITLE)).toEqual({});
    expect(title("", "a")).toBe("");
  });
});

describe("ranges are in the stored text, not the folded one", () => {
  test("diacritics, precomposed or combining, are part of their letter", () => {
    expect(highlightText("Zürich", "zur", TITLE)).toEqual([[0, 3]]);
    expect(highlightText("São Paulo", "sao p", TITLE)).toEqual([
      [0, 3],
      [4, 5],
    ]);
    expect(title("Zurich", "zür")).toBe("[Zur]ich");
    expect(title("Zu\u0308rich", "zu")).toBe("[Zu\u0308]rich");
    expect(title("Zu\u0308rich", "zurich")).toBe("[Zu\u0308rich]");
    expect(title("İstanbul", "ist")).toBe("[İst]anbul");
    expect(title("ΟΔΥΣΣΕΥΣ", "οδυσσευς")).toBe("[ΟΔΥΣΣΕΥΣ]");
  });

  test("ligatures and compatibility forms: a character folded into several is marked whole", () => {
    expect(title("ﬁre station", "f")).toBe("[ﬁ]re station");
    expect(title("ﬁre station", "fire")).toBe("[ﬁre] station");
    expect(title("Ｔｏｋｙｏ Tower", "tok")).toBe("[Ｔｏｋ]ｙｏ Tower");
    expect(title("ℌello", "he")).toBe("[ℌe]llo");
    // "½" folds to "1⁄2", two tokens from one character: one range.
    expect(highlightText("½ price", "1 2", TITLE)).toEqual([[0, 1]]);
  });

  test("characters beyond the Basic Multilingual Plane count as two UTF-16 units", () => {
    expect(highlightText("𝐁oston", "bo", TITLE)).toEqual([[0, 3]]);
    expect(highlightText("🍕 pizza place", "pizza pl", TITLE)).toEqual([
      [3, 8],
      [9, 11],
    ]);
    expect(title("𠮷野家 𠮷", "𠮷")).toBe("[𠮷]野家 [𠮷]");
  });

  test("right-to-left and unspaced scripts", () => {
    expect(title("תל אביב", "תל")).toBe("[תל] אביב");
    expect(title("القاهرة", "القا")).toBe("[القا]هرة");
    expect(title("東京タワー", "東京")).toBe("[東京]タワー");
  });
});

describe("scope=all", () => {
  const apple = {
    title: "Red apple",
    data: {
      description: "Crisp fruit from the orchard",
      price: 0.5,
      tags: ["fresh", "orchard picked"],
      specs: { color: "red", origin: { farm: "Orchard Hill" } },
      "list price": "orchard",
      "2024": "orchard harvest",
      batches: [{ note: "orchard" }, [null, "ORCHARD"]],
    },
  };

  test("every text field of data that matches, keyed by its path: dots between keys, array positions as numbers", () => {
    expect(highlight(apple, "orchard red", ALL)).toEqual({
      title: [[0, 3]],
      data: {
        description: [[21, 28]],
        "tags.1": [[0, 7]],
        "specs.color": [[0, 3]],
        "specs.origin.farm": [[0, 7]],
        '"list price"': [[0, 7]],
        '"2024"': [[0, 7]],
        "batches.0.note": [[0, 7]],
        "batches.1.1": [[0, 7]],
      },
    });
  });

  test("paths keep document order, and a data match leaves no title ranges", () => {
    const found = highlight(apple, "crisp fresh", ALL);
    expect(found).toEqual({ data: { description: [[0, 5]], "tags.0": [[0, 5]] } });
    // The order of the keys as the record's data holds them (and returns them): JavaScript puts
    // integer-like keys such as "2024" first.
    expect(Object.keys(highlight(apple, "orchard", ALL).data!)).toEqual([
      '"2024"',
      "description",
      "tags.1",
      "specs.origin.farm",
      '"list price"',
      "batches.0.note",
      "batches.1.1",
    ]);
  });

  test("every word matches whole: no prefixes, even for the last word", () => {
    expect(highlight(apple, "orch", ALL)).toEqual({});
    expect(highlight(apple, "app", ALL)).toEqual({});
    expect(highlight(apple, "apple", ALL)).toEqual({ title: [[4, 9]] });
  });

  test("typos count over the whole record: an exact word in data wins over a typo in the title", () => {
    const record = { title: "Orchid", data: { note: "Orchard", other: "Orchird" } };
    expect(highlight(record, "orchard", ALL)).toEqual({ data: { note: [[0, 7]] } });
    expect(highlight(record, "orchard", { scope: "all", typoTolerance: false })).toEqual({ data: { note: [[0, 7]] } });
    expect(highlight({ title: "Orchid" }, "orchd", ALL)).toEqual({ title: [[0, 6]] });
    expect(highlight({ title: "Orchid" }, "orchd", { scope: "all", typoTolerance: false })).toEqual({});
  });

  test("a key no plain path can spell is quoted as JSON, and a key that looks like a prototype is plain data", () => {
    expect(["plain", "with space", "a.b", "12", "", "_$-ok", "ünï", 'q"'].map(dataPathSegment)).toEqual([
      "plain",
      '"with space"',
      '"a.b"',
      '"12"',
      '""',
      "_$-ok",
      "ünï",
      '"q\\""',
    ]);
    const data = JSON.parse('{"__proto__": "orchard"}');
    const found = highlight({ title: "x", data }, "orchard", ALL);
    expect(JSON.stringify(found)).toBe('{"data":{"__proto__":[[0,7]]}}');
  });

  test("text deeper than 256 levels is not searched, so not highlighted", () => {
    const nest = (depth: number): unknown => (depth === 0 ? "orchard" : { a: nest(depth - 1) });
    const path = (n: number) => Array(n).fill("a").join(".");
    expect(
      Object.keys(highlight({ title: "x", data: nest(256) as Record<string, unknown> }, "orchard", ALL).data!),
    ).toEqual([path(256)]);
    expect(highlight({ title: "x", data: nest(257) as Record<string, unknown> }, "orchard", ALL)).toEqual({});
  });
});

describe("over the cities' titles", () => {
  // Every title with a non-ASCII character and every 50th of the rest.
  let ascii = 0;
  const sample = loadCities()
    .map((c) => c.name)
    .filter((t) => /[^\p{ASCII}]/u.test(t) || ascii++ % 50 === 0);

  test("each title token, typed as the query, marks exactly the words it is a prefix of", () => {
    for (const text of sample) {
      const indexed = tokenize(text);
      for (const query of new Set(indexed)) {
        const ranges = highlightText(text, query, EXACT);
        expect(ranges.length, `${text} / ${query}`).toBe(indexed.filter((t) => t.startsWith(query)).length);
        // What is marked folds back to the query (a final sigma aside: "ΟΔΥΣ" alone folds to "οδυς").
        const sigma = (t: string) => t.replaceAll("ς", "σ");
        for (const [start, end] of ranges) {
          const slice = tokenize(text.slice(start, end)).map(sigma);
          expect(
            slice.some((t) => t.startsWith(sigma(query))),
            `${text} / ${query}: ${start}-${end}`,
          ).toBe(true);
        }
      }
    }
  });
});
