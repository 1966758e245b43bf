// The coarse lexical keys of the rank order (docs/ranking.md, Rank order) for matches without
// typos: (2) the match starts at the title's first token, (3) several tokens consecutive and in
// order, and the fine "last token matched as a complete word". Typesense's text match cannot
// express them above weight and distance (docs/DECISIONS.md, D-127), so each document carries
// `title_tags`, tokens that say which title token stands where, and the search sorts by
// `_eval([(condition):score, ...])` over them. The same conditions are evaluated here on the
// returned records, so the adapter can order a page by exactly the keys it asked Typesense for.
//
// Tags, for the title's first TAGGED_POSITIONS tokens (position i is one digit):
//   w<i><token>     the token at position i
//   p<i><prefix>    a prefix of it, of 1 to TAG_PREFIX_LENGTH code points
// Typesense matches them as whole tokens (`title_tags:w0creme`), so no prefix expansion is
// involved: `title_text:bru*` in a filter expands to only 4 candidates (`max_filter_by_candidates`,
// Typesense 28.0; fixed at 4 in 27.x) and would miss most titles for a short prefix.

/** Title positions that carry tags: a phrase that starts later ranks as scattered. */
export const TAGGED_POSITIONS = 8;
/** A longer last query token is matched by its first code points, which may be a superset. */
export const TAG_PREFIX_LENGTH = 4;

const head = (token: string, length: number): string => Array.from(token).slice(0, length).join("");
const wholeTag = (position: number, token: string): string => `w${position}${token}`;
const prefixTag = (position: number, token: string): string => `p${position}${head(token, TAG_PREFIX_LENGTH)}`;

/** The tags of a title's tokens (tokenize.ts), each once. */
export function titleTags(tokens: readonly string[]): string[] {
  const tags = new Set<string>();
  for (let position = 0; position < Math.min(tokens.length, TAGGED_POSITIONS); position++) {
    const token = tokens[position]!;
    tags.add(wholeTag(position, token));
    const points = Array.from(token).length;
    for (let length = 1; length <= Math.min(points, TAG_PREFIX_LENGTH); length++) {
      tags.add(`p${position}${head(token, length)}`);
    }
  }
  return [...tags];
}

/** A condition on one document: a tag in `title_tags`, a token in `title_text`, or a combination. */
export type Condition =
  | { kind: "tag"; value: string }
  | { kind: "word"; value: string }
  | { kind: "and" | "or"; args: Condition[] };

export interface Entry {
  condition: Condition;
  score: number;
}

const tag = (value: string): Condition => ({ kind: "tag", value });
const word = (value: string): Condition => ({ kind: "word", value });
const all = (args: Condition[]): Condition => (args.length === 1 ? args[0]! : { kind: "and", args });
const any = (args: Condition[]): Condition | null =>
  args.length === 0 ? null : args.length === 1 ? args[0]! : { kind: "or", args };

/** What a document offers the conditions: its title tags and title tokens. */
export interface Signals {
  tags: ReadonlySet<string>;
  words: ReadonlySet<string>;
}

export function signals(titleTokens: readonly string[]): Signals {
  return { tags: new Set(titleTags(titleTokens)), words: new Set(titleTokens) };
}

function holds(condition: Condition, doc: Signals): boolean {
  switch (condition.kind) {
    case "tag":
      return doc.tags.has(condition.value);
    case "word":
      return doc.words.has(condition.value);
    case "and":
      return condition.args.every((arg) => holds(arg, doc));
    case "or":
      return condition.args.some((arg) => holds(arg, doc));
  }
}

/** What Typesense gives a document for `_eval([...])`: the score of the first entry that holds. */
export function evalScore(entries: readonly Entry[], doc: Signals): number {
  return entries.find((entry) => holds(entry.condition, doc))?.score ?? 0;
}

function render(condition: Condition): string {
  switch (condition.kind) {
    case "tag":
      return `title_tags:${condition.value}`;
    case "word":
      return `title_text:${condition.value}`;
    default:
      return `(${condition.args.map(render).join(condition.kind === "and" ? " && " : " || ")})`;
  }
}

/** The `sort_by` clause (Typesense 26.0 or later: a list of conditions, first match scores). */
export function evalClause(entries: readonly Entry[]): string {
  // Each condition is parenthesised once: a combination renders with its own parentheses.
  const wrap = (condition: Condition): string =>
    condition.kind === "and" || condition.kind === "or" ? render(condition) : `(${render(condition)})`;
  return `_eval([${entries.map((entry) => `${wrap(entry.condition)}:${entry.score}`).join(", ")}]):desc`;
}

export interface LexicalEntries {
  /** Start, then consecutive-in-order, then (scope=all) title before data: higher first. */
  tiers: Entry[];
  /** The tiers, each split by whether the last token matched as a whole word (scope=title). */
  fine: Entry[];
  /** The tiers without consecutive-in-order, the longest condition, for a query string near its limit. */
  startOnly: Entry[];
}

/** Drops entries without a condition (a tier these query tokens cannot have). */
function entries(list: [Condition | null, number][]): Entry[] {
  return list.flatMap(([condition, score]) => (condition ? [{ condition, score }] : []));
}

/**
 * The conditions for query tokens `q` (at least one). scope=title: every token but the last is
 * a whole title token, the last a prefix of one; scope=all: all whole, and a record whose title
 * holds every token ranks before one that needs `data`.
 */
export function lexicalEntries(q: readonly string[], scope: "title" | "all"): LexicalEntries {
  const k = q.length;
  const lastIsPrefix = scope === "title";
  /** The query as a phrase starting at title position `start`, if the tags reach that far. */
  const phraseAt = (start: number, lastWhole: boolean): Condition | null =>
    start + k > TAGGED_POSITIONS
      ? null
      : all(
          q.map((token, i) =>
            i < k - 1 || lastWhole || !lastIsPrefix
              ? tag(wholeTag(start + i, token))
              : tag(prefixTag(start + i, token)),
          ),
        );
  // A query longer than the tagged positions starts the title if its first tokens do.
  const startLong = all(q.slice(0, TAGGED_POSITIONS).map((token, i) => tag(wholeTag(i, token))));
  const start = (lastWhole: boolean): Condition | null =>
    k <= TAGGED_POSITIONS ? phraseAt(0, lastWhole) : lastWhole ? null : startLong;
  // One token is always "consecutive"; several, a phrase at a later tagged position.
  const later = (lastWhole: boolean): Condition | null =>
    k < 2
      ? null
      : any(
          Array.from({ length: TAGGED_POSITIONS - k }, (_, j) => phraseAt(j + 1, lastWhole)).filter(
            (c): c is Condition => c !== null,
          ),
        );

  if (scope === "all") {
    const inTitle = all(q.map(word));
    const starts = k <= TAGGED_POSITIONS ? start(false) : all([inTitle, startLong]);
    const tiers = entries([
      [starts, 3],
      [later(false), 2],
      [inTitle, 1],
    ]);
    return {
      tiers,
      fine: tiers,
      startOnly: entries([
        [starts, 3],
        [inTitle, 1],
      ]),
    };
  }
  return {
    startOnly: entries([[start(false), 2]]),
    tiers: entries([
      [start(false), 2],
      [later(false), 1],
    ]),
    fine: entries([
      [start(true), 5],
      [start(false), 4],
      [later(true), 3],
      [later(false), 2],
      [word(q[k - 1]!), 1],
    ]),
  };
}
