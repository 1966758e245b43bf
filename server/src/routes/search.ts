import { frozenJson } from "../http/frozen-json.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import { HttpProblem, problemFor } from "../http/problem.ts";
import type { Logger } from "../log.ts";
import { type MultiSearchItem, type SearchPageOutcome, type SearchService, suggestionOf } from "../services/search.ts";

export function searchHandlers(search: SearchService): Handlers {
  return {
    Search_search: async (c, { query }) => {
      const outcome = await search.search(c.get("principal"), query);
      return c.body(searchBody(outcome), 200, {
        "content-type": "application/json",
        "x-sift-region": outcome.region,
      });
    },
    MultiSearch_multi: async (c, { body, itemErrors }) => {
      const items = await search.multiSearch(c.get("principal"), body.searches, itemErrors);
      const results = items.map((item) => multiItemBody(item, c.get("requestId"), c.get("log")));
      return c.body(`{"results":[${results.join(",")}]}`, 200, { "content-type": "application/json" });
    },
  };
}

/** One search of a multi-search: its response with its region, or its own problem document. */
function multiItemBody(item: MultiSearchItem, requestId: string, log: Logger): string {
  if (item.ok) return searchBody(item.outcome, item.outcome.region);
  let problem = problemFor(item.error);
  if (!problem) {
    // A bug in one search: logged like any 500, answered in its place without failing the others.
    const error = item.error as Error;
    log.error("unhandled error in a multi-search", { requestId, error: error?.message, stack: error?.stack });
    problem = new HttpProblem(500, "the server failed to run this search; quote the request id when reporting it");
  }
  return JSON.stringify(problem.toProblem(requestId));
}

/**
 * The search response's JSON, the same text as JSON.stringify of
 * `{ suggestions: hits.map(suggestionOf), indexVersion, totalHits, totalHitsExact, facets?,
 * facetStats?, region? }`. Autocomplete returns the same popular records over and over, and the
 * engine hands out records that never change (frozen, and shared by every search: never mutated
 * here), so each record's JSON is made once and reused: serialising was a tenth of a search's
 * CPU under load. `region` is given in a multi-search, where no header can carry it.
 */
export function searchBody(outcome: SearchPageOutcome, region?: string): string {
  const parts: string[] = [];
  for (const hit of outcome.hits) {
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
  let tail = `,"totalHits":${outcome.totalHits},"totalHitsExact":${outcome.totalHitsExact}`;
  if (outcome.facets) tail += `,"facets":${JSON.stringify(outcome.facets)}`;
  if (outcome.facetStats) tail += `,"facetStats":${JSON.stringify(outcome.facetStats)}`;
  if (region !== undefined) tail += `,"region":${JSON.stringify(region)}`;
  return `{"suggestions":[${parts.join(",")}],"indexVersion":${JSON.stringify(outcome.indexVersion)}${tail}}`;
}

// The body above spells out the contract's fields by hand: this stops compiling when they change.
void ({
  suggestions: true,
  indexVersion: true,
  totalHits: true,
  totalHitsExact: true,
  facets: true,
  facetStats: true,
} satisfies Record<keyof ResponseBody<"Search_search", 200>, true>);
void ({
  suggestions: true,
  indexVersion: true,
  totalHits: true,
  totalHitsExact: true,
  facets: true,
  facetStats: true,
  region: true,
} satisfies Record<keyof Extract<ResponseBody<"MultiSearch_multi", 200>["results"][number], { region: string }>, true>);
