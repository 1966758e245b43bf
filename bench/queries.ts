// The benchmark's query mix: prefixes of 1, 2, 3 and 5 characters and two-word queries (a whole
// word and a 3-letter prefix of the next), each weighted, unweighted, geo-biased and
// weighted+geo. Query words come from titles of sampled records, so they occur as often as users
// would type them; points are near sampled records (80%) or anywhere (20%).
import type { SearchRecord, SearchRequest } from "../server/src/ports/engine.ts";
import { tokenize } from "../server/src/engine/tokenize.ts";
import { prng } from "./datasets.ts";

export const LENGTH_CLASSES = ["1 char", "2 chars", "3 chars", "5 chars", "two words"] as const;
export const MODES = ["weighted", "unweighted", "geo", "weighted+geo"] as const;
export type LengthClass = (typeof LENGTH_CLASSES)[number];
export type Mode = (typeof MODES)[number];

export interface BenchQuery {
  cls: LengthClass;
  mode: Mode;
  request: SearchRequest;
}

const prefixOf = (token: string, chars: number) => Array.from(token).slice(0, chars).join("");

function queryText(cls: LengthClass, record: SearchRecord, random: () => number): string | null {
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

/** Queries interleaved by class and mode, so any prefix of the list is a balanced mix. */
export function makeQueries(samples: SearchRecord[], perCell: number, seed = 1): BenchQuery[] {
  const random = prng(seed);
  const located = samples.filter((r) => r.latitude !== undefined);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const point = () => {
    if (located.length > 0 && random() < 0.8) {
      const r = pick(located);
      return { latitude: Number(r.latitude), longitude: Number(r.longitude) };
    }
    return { latitude: -60 + random() * 130, longitude: -180 + random() * 360 };
  };
  const queries: BenchQuery[] = [];
  for (let i = 0; i < perCell; i++) {
    for (const cls of LENGTH_CLASSES) {
      for (const mode of MODES) {
        let query: string | null = null;
        while (query === null) query = queryText(cls, pick(samples), random);
        const request: SearchRequest = {
          query,
          scope: "title",
          weighted: mode === "weighted" || mode === "weighted+geo",
          limit: 10,
        };
        if (mode === "geo" || mode === "weighted+geo") request.geo = point();
        queries.push({ cls, mode, request });
      }
    }
  }
  return queries;
}
