import { frozenJson } from "../http/frozen-json.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { SearchHit } from "../ports/engine.ts";
import { suggestionOf, type SearchService } from "../services/search.ts";

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
 * records over and over, and the engine hands out records that never change (frozen), so each
 * record's JSON is made once and reused: serialising was a tenth of a search's CPU under load.
 */
export function searchBody(hits: SearchHit[], indexVersion: string): string {
  const parts: string[] = [];
  for (const hit of hits) {
    if (hit.distanceMeters === undefined || !Object.isFrozen(hit.record)) {
      parts.push(frozenJson(suggestionOf(hit)));
      continue;
    }
    // suggestionOf appends distanceMeters after the record's own fields.
    const record = frozenJson(hit.record);
    const distance = `"distanceMeters":${Math.round(hit.distanceMeters)}}`;
    parts.push(record === "{}" ? `{${distance}` : `${record.slice(0, -1)},${distance}`);
  }
  return `{"suggestions":[${parts.join(",")}],"indexVersion":${JSON.stringify(indexVersion)}}`;
}

// The body above spells out the contract's fields by hand: this stops compiling when they change.
void ({ suggestions: true, indexVersion: true } satisfies Record<keyof ResponseBody<"Search_search", 200>, true>);
