// tokenSpans() (engine/tokenize.ts), on which highlighting stands: the same tokens as
// tokenize(), which decides what matches, and for each the characters of the original text it
// came from. Most cases were the widget's folding-parity test, from when the widget folded text
// itself to highlight; the two cases the widget got wrong are now right.
import { describe, expect, test } from "vitest";
import { loadCities } from "../../src/demo/cities.ts";
import { tokenize, tokenSpans } from "../../src/engine/tokenize.ts";

/** [what it exercises, text, the tokens tokenize() gives]. */
const AGREE: [string, string, string[]][] = [
  ["accents", "Zürich", ["zurich"]],
  ["accents", "São Paulo", ["sao", "paulo"]],
  ["accents", "Crème Brûlée", ["creme", "brulee"]],
  ["accents: đ, ł, æ and ø do not decompose", "Đà Nẵng Łódź Ærøskøbing", ["đa", "nang", "łodz", "ærøskøbing"]],
  ["ligatures", "ﬁre ﬂy ﬀ", ["fire", "fly", "ff"]],
  ["ligatures: ĳ and ǅ decompose, œ does not", "ĲSSELMEER ǅemal Œuvre", ["ijsselmeer", "dzemal", "œuvre"]],
  ["full-width forms and an ideographic space", "ＴＯＫＹＯ\u3000２０２０", ["tokyo", "2020"]],
  ["half-width katakana: the voiced mark is folded away", "ｶﾞｲﾄﾞ", ["カイト"]],
  ["a compatibility square", "㍿", ["株式会社"]],
  ["Turkish dotted capital I", "İSTANBUL DİYARBAKIR", ["istanbul", "diyarbakir"]],
  ["Turkish dotless i stays", "Ilıca", ["ilıca"]],
  ["German sharp s, and the capital one", "Straße STRASSE GROẞ", ["straße", "strasse", "groß"]],
  ["Greek: a final sigma already lower case", "Ὀδυσσεύς", ["οδυσσευς"]],
  ["Greek: a capital sigma that is not final", "ΣΟΦΙΑ", ["σοφια"]],
  ["Greek with tonos", "Άγιος Νικόλαος", ["αγιος", "νικολαος"]],
  ["Cyrillic", "Москва", ["москва"]],
  ["Cyrillic: ё, ї and й lose their marks", "ЁЛКА Київ Йошкар-Ола", ["елка", "киів", "иошкар", "ола"]],
  ["CJK", "東京都 北京、上海", ["東京都", "北京", "上海"]],
  ["Hangul syllables decompose into their letters", "서울특별시", ["서울특별시".normalize("NFD")]],
  ["katakana with the prolonged sound mark", "東京タワー", ["東京タワー"]],
  ["emoji separate words", "🍕 pizza café👍🏽bar", ["pizza", "cafe", "bar"]],
  ["an emoji joined with ZWJ", "👨\u200d👩\u200d👧 family", ["family"]],
  ["a keycap: digit, variation selector, enclosing mark", "1\ufe0f\u20e3 one", ["1", "one"]],
  ["combining marks after the letter", "Zu\u0308rich e\u0301\u0301\u0301", ["zurich", "e"]],
  ["an enclosing mark separates", "a\u20dd b", ["a", "b"]],
  ["Devanagari: vowel signs (Mc) stay, the virama (Mn) goes", "हिन्दी", ["हिनदी"]],
  ["Thai", "ภาษาไทย", ["ภาษาไทย"]],
  ["Hebrew points", "שָׁלוֹם", ["שלום"]],
  ["Arabic harakat", "مَدِينَة", ["مدينة"]],
  ["digits with separators", "1,000,000 3.14 2024-05-01", ["1", "000", "000", "3", "14", "2024", "05", "01"]],
  ["Arabic-Indic digits", "٣٤٥", ["٣٤٥"]],
  ["numeric compatibility forms", "Ⅻ ½ x² ①②", ["xii", "1", "2", "x2", "12"]],
  ["apostrophes separate", "O'Brien L’Aquila rock'n'roll", ["o", "brien", "l", "aquila", "rock", "n", "roll"]],
  ["an apostrophe after an accented word", "Côte d'Ivoire", ["cote", "d", "ivoire"]],
  ["the ʻokina is a letter", "ʻOkina", ["ʻokina"]],
  [
    "mixed scripts without a space",
    "Tokyo東京 北京Beijing2008 ΑθήναAthens",
    ["tokyo東京", "北京beijing2008", "αθηναathens"],
  ],
  ["mixed scripts with separators", "iPhone 15 Pro, Москва-Moscow", ["iphone", "15", "pro", "москва", "moscow"]],
  ["a letterlike symbol", "ℌello", ["hello"]],
  ["nothing to index", " \t\u3000 ", []],
  // A capital sigma ending a word lowercases to ς only when the whole text is lowercased.
  ["a capital sigma ending a word", "ΟΔΟΣ ΟΔΥΣΣΕΥΣ", ["οδος", "οδυσσευς"]],
  // NFKD reorders adjacent combining marks; here two spacing marks (Mc) of classes 224 and 9.
  ["spacing marks in non-canonical order", "x\u302e\u1715", ["x\u1715\u302e"]],
];

/** Each token with the original characters it came from, and the original of each of its prefixes. */
const pieces = (text: string) =>
  tokenSpans(text).map((s) => [s.token, text.slice(s.start, s.end), s.ends.map((e) => text.slice(s.start, e))]);

describe("the tokens are tokenize()'s", () => {
  test.each(AGREE)("%s: %j", (_what, text, expected) => {
    expect(tokenize(text)).toEqual(expected);
    expect(tokenSpans(text).map((s) => s.token)).toEqual(expected);
  });
});

describe("where each token and each of its prefixes is in the original text", () => {
  test("ASCII: offsets are the text's own", () => {
    expect(pieces("New York-ish, 2024")).toEqual([
      ["new", "New", ["N", "Ne", "New"]],
      ["york", "York", ["Y", "Yo", "Yor", "York"]],
      ["ish", "ish", ["i", "is", "ish"]],
      ["2024", "2024", ["2", "20", "202", "2024"]],
    ]);
  });

  test("a diacritic folded away belongs to its letter, precomposed or combining", () => {
    expect(pieces("Zürich")[0]![2]).toEqual(["Z", "Zü", "Zür", "Züri", "Züric", "Zürich"]);
    expect(pieces("Zu\u0308r")[0]![2]).toEqual(["Z", "Zu\u0308", "Zu\u0308r"]);
    expect(pieces("e\u0301\u0301 a")).toEqual([
      ["e", "e\u0301\u0301", ["e\u0301\u0301"]],
      ["a", "a", ["a"]],
    ]);
  });

  test("a character folded into several is covered whole by each of them", () => {
    expect(pieces("ﬁre")).toEqual([["fire", "ﬁre", ["ﬁ", "ﬁ", "ﬁr", "ﬁre"]]]);
    expect(pieces("İz")).toEqual([["iz", "İz", ["İ", "İz"]]]);
    expect(pieces("½")).toEqual([
      ["1", "½", ["½"]],
      ["2", "½", ["½"]],
    ]);
  });

  test("UTF-16 offsets: characters beyond the Basic Multilingual Plane take two units", () => {
    expect(tokenSpans("🍕 𝐁o")).toEqual([{ token: "bo", start: 3, end: 6, ends: [5, 6] }]);
  });
});

describe("over the cities' titles", () => {
  // Every title with a non-ASCII character (about 27k, where folding does work) and every 20th
  // of the rest, as given, decomposed, composed, in capitals and joined in pairs by separators,
  // marks or nothing.
  let ascii = 0;
  const sample = loadCities()
    .map((c) => c.name)
    .filter((t) => /[^\p{ASCII}]/u.test(t) || ascii++ % 20 === 0);
  const SEPARATORS = ["", " ", "-", "’", "·", "、", "\u3000", "🙂", "\u0301", "ß"];
  const variants = [
    ...sample.flatMap((t) => [t, t.normalize("NFD"), t.normalize("NFC"), t.toLowerCase(), t.toUpperCase()]),
    ...sample.map((t, i) => t + SEPARATORS[i % SEPARATORS.length] + sample[(i + 1) % sample.length]),
  ];

  test("the sample covers the scripts and marks that folding works on", () => {
    expect(sample.length).toBeGreaterThan(25_000);
    for (const script of ["Latin", "Cyrillic", "Greek", "Arabic"])
      expect(
        sample.some((t) => new RegExp(`\\p{Script=${script}}`, "u").test(t)),
        script,
      ).toBe(true);
    expect(
      sample.some((t) => /\p{Mn}/u.test(t)),
      "a decomposed title",
    ).toBe(true);
  });

  test("the same tokens as tokenize(), and each span folds back to its token", () => {
    const wrong: string[] = [];
    for (const text of variants) {
      const spans = tokenSpans(text);
      if (JSON.stringify(spans.map((s) => s.token)) !== JSON.stringify(tokenize(text))) wrong.push(text);
      for (const s of spans) {
        // Alone, a final capital sigma folds to ς; in the middle of its word, to σ.
        const folded = tokenize(text.slice(s.start, s.end)).map((t) => t.replaceAll("ς", "σ"));
        if (!folded.includes(s.token.replaceAll("ς", "σ")) || s.ends.length !== [...s.token].length)
          wrong.push(`${text}: ${s.token}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
