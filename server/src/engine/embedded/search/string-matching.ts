// The lexical match of a record given as strings (a version's changed records, outside any
// segment): the same bucket and fine value (lexical.ts) a segment document gets through term ids,
// with distances from engine/typos.ts instead of the dictionary walk.
import { allowedTypos, editDistance, prefixEditDistance } from "../../typos.ts";
import { FINE_LAST_COMPLETE, MatchScratch, NO_MATCH, TIER_DATA, bucketOf, titleMatch } from "./lexical.ts";

/** What matching needs of a record: its title tokens and the tokens of its data text. */
export interface TokenizedRecord {
  titleTokens: readonly string[];
  dataTokens: ReadonlySet<string>;
}

export class StringMatcher {
  private readonly tokens: readonly string[];
  private readonly prefixLast: boolean;
  /** Per token, the typos it may match with (0 with typo tolerance off). */
  readonly allowed: readonly number[];
  private readonly scratch = new MatchScratch();

  constructor(tokens: readonly string[], prefixLast: boolean, typoTolerance: boolean) {
    this.tokens = tokens;
    this.prefixLast = prefixLast;
    this.allowed = tokens.map((t) => (typoTolerance ? allowedTypos(t) : 0));
  }

  /** `bucket * 4 + fine`, or -1 when the record does not match. */
  match(record: TokenizedRecord): number {
    const { tokens, prefixLast, allowed } = this;
    const n = tokens.length;
    const title = record.titleTokens;
    const len = title.length;
    this.scratch.ensure(len, n);
    const { dist, whole } = this.scratch;
    const wholeTokens = prefixLast ? n - 1 : n;
    for (let j = 0; j < len; j++) {
      const word = title[j]!;
      for (let i = 0; i < wholeTokens; i++) dist[j * n + i] = wordDistance(tokens[i]!, word, allowed[i]!);
      if (prefixLast) {
        const last = tokens[n - 1]!;
        const max = allowed[n - 1]!;
        dist[j * n + n - 1] = within(prefixEditDistance(last, word, max), max);
        whole[j] = wordDistance(last, word, max);
      }
    }
    const titleResult = titleMatch(this.scratch, len, n, prefixLast);
    if (prefixLast) return titleResult;
    let typos = 0;
    for (let i = 0; i < n; i++) {
      let closest = NO_MATCH;
      for (let j = 0; j < len; j++) if (dist[j * n + i]! < closest) closest = dist[j * n + i]!;
      for (const word of record.dataTokens) {
        if (closest === 0) break;
        const d = wordDistance(tokens[i]!, word, allowed[i]!);
        if (d < closest) closest = d;
      }
      if (closest === NO_MATCH) return titleResult;
      typos += closest;
    }
    const viaData = bucketOf(typos, TIER_DATA) * 4 + FINE_LAST_COMPLETE;
    return titleResult >= 0 && titleResult < viaData ? titleResult : viaData;
  }
}

// editDistance and prefixEditDistance answer equal words, beginnings and max 0 without the matrix.
function wordDistance(token: string, word: string, max: number): number {
  return within(editDistance(token, word, max), max);
}

const within = (d: number, max: number): number => (d <= max ? d : NO_MATCH);
