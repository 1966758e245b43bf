import { frozenJson } from "../http/frozen-json.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import { type SearchService, type ServedHit, suggestionOf } from "../services/search.ts";

export function searchHandlers(search: SearchService): Handlers {
  return {
    Search_search: async (c, { query }) => {
      const outcome = await search.search(c.get("principal"), query);
      return c.body(searchBody(outcome.hits, outcome.indexVersion), 200, {
        "content-type": "application/json",
        "x-sift-region": outcome.region,
      });
    },
  };
}

/**
 * The search response's JSON, the same text as JSON.stringify of
 * `{ suggestions: hits.map(suggestionOf), indexVersion }`. Autocomplete returns the same popular
 * records over and over, and the engine hands out records that never change (frozen, and shared
 * by every search: never mutated here), so each record's JSON is made once and reused:
 * serialising was a tenth of a search's CPU under load.
 */
export function searchBody(hits: ServedHit[], indexVersion: string): string {
  const parts: string[] = [];
  for (const hit of hits) {
    if ((hit.distanceMeters === undefined && hit.highlight === undefined) || !Object.isFrozen(hit.record)) {
      parts.push(frozenJson(suggestionOf(hit)));
      continue;
    }
    // suggestionOf appends distanceMeters, then highlight, after the record's own fields.
    const extra: string[] = [];
    if (hit.distanceMeters !== undefined) extra.push(`"distanceMeters":${Math.round(hit.distanceMeters)}`);
    if (hit.highlight !== undefined) extra.push(`"highlight":${JSON.stringify(hit.highlight)}`);
    const record = frozenJson(hit.record);
    parts.push(record === "{}" ? `{${extra.join(",")}}` : `${record.slice(0, -1)},${extra.join(",")}}`);
  }
  return `{"suggestions":[${parts.join(",")}],"indexVersion":${JSON.stringify(indexVersion)}}`;
}

// The body above spells out the contract's fields by hand: this stops compiling when they change.
void ({ suggestions: true, indexVersion: true } satisfies Record<keyof ResponseBody<"Search_search", 200>, true>);
