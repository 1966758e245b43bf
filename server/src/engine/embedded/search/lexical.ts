// The lexical part of the rank order (docs/ranking.md, Rank order) as two small numbers, so that
// matches that tie lexically are ordered by weight, distance and the fine tie-breaks:
//
//   bucket = min(typos, MAX_TYPO_TIER) * LEX_TIERS + tier        (lower ranks first)
//     typos  edits summed over the query tokens, each token at its closest match in the record
//     tier   0  the tokens match the title's first tokens, in order
//            1  they match consecutive title tokens in order, later in the title
//            2  they match the title scattered
//            3  (scope=all) some token matches only in `data`
//   fine   = 0 the whole title equals the query, 1 the last token matched a complete word,
//            2 the last token matched only as a prefix (compared after weight and distance)
//
// A record's tier and fine value are read at each token's closest matches only: a title word one
// typo away from a token does not make the match "start at the first token" when the token also
// matches a later word exactly. The same function ranks segment documents (term ids through the
// forward index) and a version's changed records (strings), so both sides of a version agree.

export const LEX_TIERS = 4;
export const TIER_START = 0;
export const TIER_PHRASE = 1;
export const TIER_SCATTERED = 2;
export const TIER_DATA = 3;
/** Records with more typos than this tie with it: the bucket numbers fit a 32-bit mask. */
export const MAX_TYPO_TIER = 6;
export const BUCKETS = (MAX_TYPO_TIER + 1) * LEX_TIERS;

export const FINE_EXACT_TITLE = 0;
export const FINE_LAST_COMPLETE = 1;
export const FINE_PREFIX = 2;

/** A distance meaning "does not match". */
export const NO_MATCH = 0xff;

/** Query tokens beyond this are ignored (the engine's match masks are 32-bit). */
export const MAX_QUERY_TOKENS = 30;

export function bucketOf(typos: number, tier: number): number {
  return (typos < MAX_TYPO_TIER ? typos : MAX_TYPO_TIER) * LEX_TIERS + tier;
}

export const typosOf = (bucket: number): number => Math.floor(bucket / LEX_TIERS);
export const tierOf = (bucket: number): number => bucket % LEX_TIERS;

/**
 * Per-position match distances of one record against the query, reused from record to record.
 *   dist[j * n + i]  distance of title token j to query token i (the last one as a prefix when
 *                    the last token is a prefix), NO_MATCH when it does not match
 *   whole[j]         distance of title token j to the last query token as a complete word
 *   best[i]          the closest title match of token i (filled by titleMatch)
 */
export class MatchScratch {
  dist = new Uint8Array(256);
  whole = new Uint8Array(64);
  best = new Uint8Array(32);
  /** Exact matching (exactTitleMatch): bit i of masks[j] set when title token j matches token i. */
  masks = new Uint32Array(64);

  ensure(titleTokens: number, queryTokens: number): void {
    if (titleTokens * queryTokens > this.dist.length) this.dist = new Uint8Array(titleTokens * queryTokens * 2);
    if (titleTokens > this.whole.length) {
      this.whole = new Uint8Array(titleTokens * 2);
      this.masks = new Uint32Array(titleTokens * 2);
    }
  }
}

/**
 * titleMatch for a match without typos, from bit masks (the common case, kept cheap): masks[j]
 * has bit i set when title token j matches query token i (the last one by its beginning when the
 * last token is a prefix); `wholeLast` has bit j (j < 32) set when title token j equals the last
 * token, and `anyWholeLast` says whether any token does.
 */
export function exactTitleMatch(
  masks: Uint32Array,
  len: number,
  n: number,
  prefixLast: boolean,
  wholeLastAtEnd: boolean,
  anyWholeLast: boolean,
): number {
  let found = 0;
  for (let j = 0; j < len; j++) found |= masks[j]!;
  const full = n === 32 ? 0xffff_ffff : (1 << n) - 1;
  if ((found & full) >>> 0 !== full >>> 0) return -1;
  let tier = TIER_SCATTERED;
  if (n <= len && phraseOfMasks(masks, 0, n)) tier = TIER_START;
  else {
    for (let j = 1; j + n <= len; j++) {
      if (phraseOfMasks(masks, j, n)) {
        tier = TIER_PHRASE;
        break;
      }
    }
  }
  let fine = FINE_LAST_COMPLETE;
  if (prefixLast && !anyWholeLast) fine = FINE_PREFIX;
  if (len === n && tier === TIER_START && (!prefixLast || wholeLastAtEnd)) fine = FINE_EXACT_TITLE;
  return tier * 4 + fine;
}

function phraseOfMasks(masks: Uint32Array, j: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (((masks[j + i]! >>> i) & 1) === 0) return false;
  return true;
}

/**
 * The title's match of the query from the scratch rows: `bucket * 4 + fine`, or -1 when some token
 * matches no title token (the caller then looks in `data` for scope=all). `prefixLast`: the last
 * token matches as a prefix (scope=title); otherwise every token matches whole and fine is 0 or 1.
 */
export function titleMatch(s: MatchScratch, len: number, n: number, prefixLast: boolean): number {
  const { dist, whole, best } = s;
  let typos = 0;
  for (let i = 0; i < n; i++) {
    let m = NO_MATCH;
    for (let j = 0; j < len; j++) {
      const d = dist[j * n + i]!;
      if (d < m) m = d;
    }
    if (m === NO_MATCH) return -1;
    best[i] = m;
    typos += m;
  }
  let tier = TIER_SCATTERED;
  if (n <= len && phraseAt(s, 0, n)) tier = TIER_START;
  else {
    for (let j = 1; j + n <= len; j++) {
      if (phraseAt(s, j, n)) {
        tier = TIER_PHRASE;
        break;
      }
    }
  }
  let fine = FINE_LAST_COMPLETE;
  if (prefixLast) {
    fine = FINE_PREFIX;
    const closest = best[n - 1]!;
    for (let j = 0; j < len; j++) {
      if (whole[j] === closest) {
        fine = FINE_LAST_COMPLETE;
        break;
      }
    }
  }
  if (typos === 0 && len === n && tier === TIER_START && (!prefixLast || whole[n - 1] === 0)) fine = FINE_EXACT_TITLE;
  return bucketOf(typos, tier) * 4 + fine;
}

/** The query tokens match title tokens j.. in order, each at its closest distance. */
function phraseAt(s: MatchScratch, j: number, n: number): boolean {
  const { dist, best } = s;
  for (let i = 0; i < n; i++) if (dist[(j + i) * n + i] !== best[i]) return false;
  return true;
}
