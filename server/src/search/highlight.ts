// The matched parts of a search hit (docs/api.md, Highlighting), computed from the record and the
// query alone, after the engine ranked the hits: both engine adapters get the same highlights.
//
// A word is marked when it matches a query token under the search rules (docs/ranking.md): with
// scope=title every token but the last equals a whole title word and the last is a prefix of one;
// with scope=all every token equals a whole word of the title or of a text in `data`. With typo
// tolerance a token may also match within its allowed typos (engine/typos.ts). For each query
// token only its best matches are marked, those with the fewest typos in the record: "paris" marks
// "Paris" and not also "Parus" beside it, as the record matched on the first.
import { tokenize, tokenSpans, type TokenSpan } from "../engine/tokenize.ts";
import { allowedTypos, editDistance, prefixEditDistance } from "../engine/typos.ts";

/** `[start, end)` in UTF-16 code units of the stored text. */
export type HighlightRange = [number, number];

export interface Highlight {
  title?: HighlightRange[];
  /** Keyed by path below `data`: `description`, `specs.color`, `tags.1` (see dataPath). */
  data?: Record<string, HighlightRange[]>;
}

export interface HighlightOptions {
  scope: "title" | "all";
  /** Absent means on, as in a search request. */
  typoTolerance?: boolean | undefined;
}

export interface HighlightedRecord {
  title: string;
  data?: Record<string, unknown> | undefined;
}

/** How one word matched one query token: with `typos` typos, covering `length` code points (0: the whole word). */
interface WordMatch {
  token: number;
  typos: number;
  length: number;
}

/** One text of a record that has matching words, before the best matches are chosen. */
interface Candidate {
  /** undefined for the title, else the data path. */
  path: string | undefined;
  text: string;
  /** Per token of tokenize(text), in order: its matches (undefined when none). */
  matches: (WordMatch[] | undefined)[];
  /** tokenSpans(text), when already known. */
  spans?: TokenSpan[];
}

/** The embedded engine reads `data` this deep (docs/api.md, Record fields); text deeper never matched. */
const MAX_DATA_DEPTH = 256;
/** Distinct words remembered per query (a record with huge `data` must not grow it without end). */
const MAX_CACHED_WORDS = 50_000;

/** Highlights of `record` for `query`. */
export function highlight(record: HighlightedRecord, query: string, options: HighlightOptions): Highlight {
  return highlighter(query, options)(record);
}

/** Ranges of the words of `text` that match `query`, as if `text` were a title. */
export function highlightText(text: string, query: string, options: HighlightOptions): HighlightRange[] {
  return highlighter(query, options)({ title: text }).title ?? [];
}

/**
 * A function highlighting records for one query: the query is tokenised once, and each distinct
 * word's matches are worked out once, however many records of the answer hold it.
 */
export function highlighter(query: string, options: HighlightOptions): (record: HighlightedRecord) => Highlight {
  const tokens = tokenize(query);
  const last = tokens.length - 1;
  const prefixLast = options.scope === "title";
  const typos = options.typoTolerance === false ? tokens.map(() => 0) : tokens.map(allowedTypos);
  const lengths = tokens.map((t) => Array.from(t).length);
  const cache = new Map<string, WordMatch[] | undefined>();

  const matchesOf = (word: string): WordMatch[] | undefined => {
    if (cache.has(word)) return cache.get(word);
    let found: WordMatch[] | undefined;
    let wordLength = -1;
    tokens.forEach((token, i) => {
      const prefix = prefixLast && i === last;
      const allowed = typos[i]!;
      let match: WordMatch | undefined;
      if (prefix ? word.startsWith(token) : word === token) {
        match = { token: i, typos: 0, length: word === token ? 0 : lengths[i]! };
      } else if (allowed > 0) {
        // Each missing code point is a typo: most words of a long text are too short or too long
        // to be worth an edit distance.
        if (wordLength < 0) wordLength = Array.from(word).length;
        const gap = prefix ? lengths[i]! - wordLength : Math.abs(lengths[i]! - wordLength);
        // A match with typos marks the whole word: which letters were "meant" is a guess.
        const d =
          gap > allowed
            ? allowed + 1
            : prefix
              ? prefixEditDistance(token, word, allowed)
              : editDistance(token, word, allowed);
        if (d <= allowed) match = { token: i, typos: d, length: 0 };
      }
      if (!match) return;
      found ??= [];
      found.push(match);
    });
    if (cache.size < MAX_CACHED_WORDS) cache.set(word, found);
    return found;
  };

  const candidate = (path: string | undefined, text: string): Candidate | undefined => {
    const matches = tokenize(text).map(matchesOf);
    return matches.some((m) => m !== undefined) ? { path, text, matches } : undefined;
  };

  return (record) => {
    if (tokens.length === 0) return {};
    const candidates: Candidate[] = [];
    // A served title almost always matches: its spans are needed anyway, and give its tokens.
    const spans = tokenSpans(record.title);
    const matches = spans.map((span) => matchesOf(span.token));
    if (matches.some((m) => m !== undefined)) candidates.push({ path: undefined, text: record.title, matches, spans });
    if (!prefixLast && record.data) {
      walkText(record.data, (path, text) => {
        const found = candidate(path, text);
        if (found) candidates.push(found);
      });
    }

    // Each query token's fewest typos over the whole record: only matches that good are marked.
    const best = tokens.map(() => Number.POSITIVE_INFINITY);
    for (const c of candidates)
      for (const word of c.matches) for (const m of word ?? []) best[m.token] = Math.min(best[m.token]!, m.typos);

    const result: Highlight = {};
    const data: [string, HighlightRange[]][] = [];
    for (const c of candidates) {
      const ranges = rangesOf(c, best);
      if (ranges.length === 0) continue;
      if (c.path === undefined) result.title = ranges;
      else data.push([c.path, ranges]);
    }
    // fromEntries defines own properties, so a path such as "__proto__" is an ordinary key.
    if (data.length > 0) result.data = Object.fromEntries(data);
    return result;
  };
}

/** The sorted, non-overlapping ranges of the words of `c` that match some token at its best. */
function rangesOf(c: Candidate, best: number[]): HighlightRange[] {
  let spans = c.spans;
  const ranges: HighlightRange[] = [];
  c.matches.forEach((matches, w) => {
    // 0 marks the whole word, else the longest prefix any best match asks for.
    let length = -1;
    for (const m of matches ?? []) {
      if (m.typos !== best[m.token]) continue;
      length = length === 0 || m.length === 0 ? 0 : Math.max(length, m.length);
    }
    if (length < 0) return;
    spans ??= tokenSpans(c.text);
    const span = spans[w];
    if (!span) return;
    const end = length === 0 ? span.end : span.ends[length - 1]!;
    const previous = ranges[ranges.length - 1];
    // Two tokens can come from one character ("½" folds to "1⁄2"): their ranges merge.
    if (previous && span.start < previous[1]) previous[1] = Math.max(previous[1], end);
    else ranges.push([span.start, end]);
  });
  return ranges;
}

/** Calls `onText` with each string in `data` and its path, in document order. */
function walkText(data: Record<string, unknown>, onText: (path: string, text: string) => void): void {
  const path: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (typeof value === "string") onText(path.join("."), value);
    else if (depth < MAX_DATA_DEPTH && typeof value === "object" && value !== null) {
      const array = Array.isArray(value);
      for (const key of Object.keys(value)) {
        path.push(array ? key : dataPathSegment(key));
        visit((value as Record<string, unknown>)[key], depth + 1);
        path.pop();
      }
    }
  };
  visit(data, 0);
}

const PLAIN_KEY = /^[\p{L}\p{N}_$-]+$/u;
const DIGITS = /^[0-9]+$/;

/**
 * One key of a data path: bare when it is letters, digits, `_`, `$` and `-` (the filter
 * language's field names, docs/api.md Filter syntax), else JSON-quoted. A key of digits only is
 * quoted too, so that a bare number always means a position in an array (`tags.1`).
 */
export function dataPathSegment(key: string): string {
  return PLAIN_KEY.test(key) && !DIGITS.test(key) ? key : JSON.stringify(key);
}
