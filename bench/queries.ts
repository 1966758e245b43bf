// The benchmark's query mix: prefixes of 1, 2, 3 and 5 characters and two-word queries (a whole
// word and a 3-letter prefix of the next), each weighted, unweighted, geo-biased and
// weighted+geo. Query words come from titles of sampled records, so they occur as often as users
// would type them; points are near sampled records (80%) or anywhere (20%).
//
// Typo classes add one edit to a 5-9 letter title word: as the last token ("typo, last": the word
// alone, or after the title word before it) or before a 3-letter prefix of the next word ("typo,
// not last"). They are drawn from a random stream of their own, so the exact classes are the same
// queries as in runs before typo queries existed, and their figures stay comparable.
import type { SearchRecord, SearchRequest } from "../server/src/ports/engine.ts";
import { tokenize } from "../server/src/engine/tokenize.ts";
import { editDistance } from "../server/src/engine/typos.ts";
import { prng } from "./datasets.ts";

export const EXACT_CLASSES = ["1 char", "2 chars", "3 chars", "5 chars", "two words"] as const;
export const TYPO_CLASSES = ["typo, last", "typo, not last"] as const;
export const QUERY_CLASSES = [...EXACT_CLASSES, ...TYPO_CLASSES] as const;
export const MODES = ["weighted", "unweighted", "geo", "weighted+geo"] as const;
export type ExactClass = (typeof EXACT_CLASSES)[number];
export type TypoClass = (typeof TYPO_CLASSES)[number];
export type QueryClass = (typeof QUERY_CLASSES)[number];
export type Mode = (typeof MODES)[number];

export interface BenchQuery {
  cls: QueryClass;
  mode: Mode;
  request: SearchRequest;
  /** Typo classes: the query without its typo, what the person meant to type. */
  intended?: string;
}

export const isTypoClass = (cls: QueryClass): cls is TypoClass => (TYPO_CLASSES as readonly string[]).includes(cls);

const TYPO_MIN_LETTERS = 5;
const TYPO_MAX_LETTERS = 9;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz";
const LETTERS_ONLY = /^\p{L}+$/u;

const prefixOf = (token: string, chars: number) => Array.from(token).slice(0, chars).join("");

function queryText(cls: ExactClass, record: SearchRecord, random: () => number): string | null {
  const tokens = tokenize(record.title);
  if (cls === "two words") {
    if (tokens.length < 2) return null;
    const j = Math.floor(random() * (tokens.length - 1));
    return `${tokens[j]} ${prefixOf(tokens[j + 1]!, 3)}`;
  }
  const chars = Number(cls[0]);
  const long = tokens.filter((t) => Array.from(t).length >= chars);
  if (long.length === 0) return null;
  return prefixOf(long[Math.floor(random() * long.length)]!, chars);
}

/**
 * One edit of a (folded) word: a substitution, deletion, insertion or swap of neighbours, never
 * of the first letter. Null when the draw left the word as it was (a swap of equal letters).
 */
export function oneTypo(word: string, random: () => number): string | null {
  const chars = Array.from(word);
  const n = chars.length;
  const letter = () => ALPHABET[Math.floor(random() * ALPHABET.length)]!;
  switch (Math.floor(random() * 4)) {
    case 0: {
      const at = 1 + Math.floor(random() * (n - 1));
      let replacement = letter();
      while (replacement === chars[at]) replacement = letter();
      chars[at] = replacement;
      break;
    }
    case 1:
      chars.splice(1 + Math.floor(random() * (n - 1)), 1);
      break;
    case 2:
      // After the first letter, up to after the last one.
      chars.splice(1 + Math.floor(random() * n), 0, letter());
      break;
    default: {
      const at = 1 + Math.floor(random() * (n - 2));
      [chars[at], chars[at + 1]] = [chars[at + 1]!, chars[at]!];
    }
  }
  const typo = chars.join("");
  // The shared rules (server/src/engine/typos.ts) decide what one edit is: a swap of equal letters is none.
  return editDistance(word, typo, 1) === 1 ? typo : null;
}

/** A typo query and the query it was meant to be, or null when this record offers no fitting word. */
function typoText(
  cls: TypoClass,
  twoWords: boolean,
  record: SearchRecord,
  random: () => number,
): { query: string; intended: string } | null {
  const tokens = tokenize(record.title);
  const fits = (t: string) => {
    const length = Array.from(t).length;
    return length >= TYPO_MIN_LETTERS && length <= TYPO_MAX_LETTERS && LETTERS_ONLY.test(t);
  };
  // Positions of the word that gets the typo.
  const at = tokens
    .map((_, i) => i)
    .filter((i) =>
      cls === "typo, not last" ? i < tokens.length - 1 && fits(tokens[i]!) : (!twoWords || i > 0) && fits(tokens[i]!),
    );
  if (at.length === 0) return null;
  const i = at[Math.floor(random() * at.length)]!;
  const typo = oneTypo(tokens[i]!, random);
  if (typo === null) return null;
  if (cls === "typo, not last") {
    const next = prefixOf(tokens[i + 1]!, 3);
    return { query: `${typo} ${next}`, intended: `${tokens[i]} ${next}` };
  }
  return twoWords
    ? { query: `${tokens[i - 1]} ${typo}`, intended: `${tokens[i - 1]} ${tokens[i]}` }
    : { query: typo, intended: tokens[i]! };
}

/**
 * Whether a title matches the query a person meant to type (scope=title, no typos: every token but
 * the last is a whole title token, the last begins one; docs/ranking.md): a typo query's answer is
 * useful when its top 10 holds such a title.
 */
export function matchesIntended(intended: string, title: string): boolean {
  const query = tokenize(intended);
  const words = tokenize(title);
  const last = query[query.length - 1];
  return (
    last !== undefined && query.slice(0, -1).every((q) => words.includes(q)) && words.some((w) => w.startsWith(last))
  );
}

/** Queries interleaved by class and mode, so any prefix of the list is a balanced mix. */
export function makeQueries(samples: SearchRecord[], perCell: number, seed = 1): BenchQuery[] {
  const random = prng(seed);
  const typoRandom = prng(seed + 1000);
  const located = samples.filter((r) => r.latitude !== undefined);
  const pick = <T>(xs: T[], from = random) => xs[Math.floor(from() * xs.length)]!;
  const point = (from: () => number) => {
    if (located.length > 0 && from() < 0.8) {
      const r = pick(located, from);
      return { latitude: Number(r.latitude), longitude: Number(r.longitude) };
    }
    return { latitude: -60 + from() * 130, longitude: -180 + from() * 360 };
  };
  const request = (query: string, mode: Mode, from: () => number): SearchRequest => {
    // Typo tolerance is the default; the benchmark says so on every query (docs/api.md).
    const r: SearchRequest = {
      query,
      scope: "title",
      weighted: mode === "weighted" || mode === "weighted+geo",
      limit: 10,
      typoTolerance: true,
    };
    if (mode === "geo" || mode === "weighted+geo") r.geo = point(from);
    return r;
  };
  const queries: BenchQuery[] = [];
  for (let i = 0; i < perCell; i++) {
    for (const cls of EXACT_CLASSES) {
      for (const mode of MODES) {
        let query: string | null = null;
        while (query === null) query = queryText(cls, pick(samples), random);
        queries.push({ cls, mode, request: request(query, mode, random) });
      }
    }
    for (const cls of TYPO_CLASSES) {
      for (const mode of MODES) {
        // "typo, last" alternates the word alone and two words with the typo in the second.
        let typo: { query: string; intended: string } | null = null;
        while (typo === null) typo = typoText(cls, i % 2 === 1, pick(samples, typoRandom), typoRandom);
        queries.push({ cls, mode, request: request(typo.query, mode, typoRandom), intended: typo.intended });
      }
    }
  }
  return queries;
}
