// GET /v1/search (docs/api.md, Search): resolves the index by service and name, checks the
// caller, picks the version, and asks the engine. The MCP tools call the same method, so REST and
// MCP rank identically.
import type { components, operations } from "@sift/contract";
import { authorizeIndex } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { InvalidArgumentError } from "../domain/errors.ts";
import type { FilterExpr, SearchEngine, SearchHit, SortRequest } from "../ports/engine.ts";
import { isRegionId, REGION_IDS } from "../regions.ts";
import { FilterSyntaxError, parseFilter } from "../search/filter.ts";
import { type Highlight, highlighter } from "../search/highlight.ts";
import { type FacetPath, parseFacets, parseSort } from "../search/paths.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";
import type { VersionService } from "./versions.ts";

type SearchResult = components["schemas"]["SearchResult"];
type FacetValue = components["schemas"]["FacetValue"];
type FacetStats = components["schemas"]["FacetStats"];

/** The query parameters of GET /v1/search, as the contract defines them. */
export type SearchParams = operations["Search_search"]["parameters"]["query"];

/** One search of POST /v1/search/multi: the same parameters, as JSON values. */
export type MultiSearchQuery = components["schemas"]["MultiSearchQuery"];

/** An engine hit as served: with its highlight when the query asked for highlights. */
export interface ServedHit extends SearchHit {
  highlight?: Highlight;
}

/** One page of results with what is known of all of them (the contract's SearchResponse, bar suggestions). */
export interface SearchPageOutcome {
  /** The engine's hits, best first: suggestionOf() turns one into a SearchResult. */
  hits: ServedHit[];
  indexVersion: string;
  totalHits: number;
  totalHitsExact: boolean;
  /** Keyed by the paths as the request spelled them; present exactly when facets were asked for. */
  facets?: Record<string, FacetValue[]>;
  facetStats?: Record<string, FacetStats>;
}

export interface SearchOutcome extends SearchPageOutcome {
  region: string;
}

/** A multi-search's answer for one search: its outcome, or the error that stopped it alone. */
export type MultiSearchItem = { ok: true; outcome: SearchOutcome } | { ok: false; error: unknown };

/** What searchIndex takes: the parameters, parsed. */
export type IndexSearch = Pick<
  SearchParams,
  | "query"
  | "weighted"
  | "scope"
  | "limit"
  | "version"
  | "minVersion"
  | "typoTolerance"
  | "highlight"
  | "offset"
  | "maxFacetValues"
> & {
  geo?: { latitude: number; longitude: number } | undefined;
  filter?: FilterExpr | undefined;
  facets?: FacetPath[] | undefined;
  sort?: SortRequest | undefined;
};

/**
 * A hit as the contract's SearchResult: the record as stored, plus its distance when geo-biased,
 * plus its highlight when asked for (routes/search.ts writes the same fields in the same order).
 */
export function suggestionOf(hit: ServedHit): SearchResult {
  if (hit.distanceMeters === undefined && hit.highlight === undefined) return hit.record;
  return {
    ...hit.record,
    ...(hit.distanceMeters === undefined ? {} : { distanceMeters: Math.round(hit.distanceMeters) }),
    ...(hit.highlight === undefined ? {} : { highlight: hit.highlight }),
  };
}

export class SearchService {
  private readonly catalog: CatalogService;
  private readonly versions: VersionService;
  private readonly engine: SearchEngine;
  private readonly region: string;
  /** Each region's endpoint where it has one of its own (SIFT_REGION_URL_<ID>). */
  private readonly regionUrls: Readonly<Partial<Record<string, string>>>;

  constructor(deps: {
    catalog: CatalogService;
    versions: VersionService;
    engine: SearchEngine;
    region: string;
    regionUrls?: Readonly<Partial<Record<string, string>>>;
  }) {
    this.catalog = deps.catalog;
    this.versions = deps.versions;
    this.engine = deps.engine;
    this.region = deps.region;
    this.regionUrls = deps.regionUrls ?? {};
  }

  async search(p: Principal, params: SearchParams): Promise<SearchOutcome> {
    // Everything the request alone decides is checked before the index is looked up.
    const parsed = {
      ...params,
      geo: geoOf(params.latitude, params.longitude),
      filter: filterOf(params.filter),
      facets: params.facets === undefined ? undefined : parseFacets(params.facets),
      sort: params.sort === undefined || params.sort.trim() === "" ? undefined : parseSort(params.sort),
    };
    const ref = authorizeIndex(
      p,
      "search",
      await this.catalog.byServiceAndName(params.serviceName, params.indexName),
      params.indexName,
      `index "${params.indexName}" of service "${params.serviceName}"`,
    );
    const region = this.regionFor(ref, params.regionId);
    this.catalog.servedHere(ref);
    return { ...(await this.searchIndex(ref, parsed)), region };
  }

  /**
   * POST /v1/search/multi: each search as GET /v1/search would run it, with the same authority
   * checks, answered in order. One that fails (`invalid[i]`: its parameters did not validate)
   * fails alone.
   */
  async multiSearch(
    p: Principal,
    searches: MultiSearchQuery[],
    invalid: readonly (Error | undefined)[] = [],
  ): Promise<MultiSearchItem[]> {
    return Promise.all(
      searches.map(async (params, i): Promise<MultiSearchItem> => {
        const error = invalid[i];
        if (error) return { ok: false, error };
        try {
          return { ok: true, outcome: await this.search(p, params) };
        } catch (failure) {
          return { ok: false, error: failure };
        }
      }),
    );
  }

  /** Search on an already authorised index (the MCP tools resolve indexes by tenant and name). */
  async searchIndex(ref: IndexRef, params: IndexSearch): Promise<SearchPageOutcome> {
    const version = await this.versions.resolve(ref, params.version, params.minVersion);
    const scope = params.scope ?? "title";
    const typoTolerance = params.typoTolerance ?? true;
    const maxValues = params.maxFacetValues ?? 10;
    const facets = params.facets?.length ? params.facets : undefined;
    const page = await this.engine.search(ref.id, version, {
      query: params.query,
      scope,
      weighted: params.weighted ?? false,
      limit: params.limit ?? 10,
      typoTolerance,
      ...(params.offset ? { offset: params.offset } : {}),
      ...(params.geo ? { geo: params.geo } : {}),
      ...(params.filter ? { filter: params.filter } : {}),
      ...(facets ? { facets: facets.map((f) => ({ path: f.path, maxValues })) } : {}),
      ...(params.sort ? { sort: params.sort } : {}),
    });
    const outcome: SearchPageOutcome = {
      hits: page.hits,
      indexVersion: version,
      totalHits: page.totalHits,
      totalHitsExact: page.totalHitsExact,
    };
    if (facets) {
      // The engine answers one result per requested facet, in request order.
      outcome.facets = {};
      outcome.facetStats = {};
      facets.forEach((f, i) => {
        const result = page.facets?.[i];
        outcome.facets![f.key] = result?.values ?? [];
        if (result?.stats) outcome.facetStats![f.key] = result.stats;
      });
    }
    if (!params.highlight) return outcome;
    // After ranking, on the records served only (at most `limit`), and from the record and the
    // query alone: every engine adapter gets the same highlights (docs/api.md, Highlighting).
    const highlight = highlighter(params.query, { scope, typoTolerance });
    return { ...outcome, hits: page.hits.map((hit) => ({ ...hit, highlight: highlight(hit.record) })) };
  }

  private regionFor(ref: IndexRef, requested: string | undefined): string {
    if (requested === undefined) return this.region;
    if (!isRegionId(requested)) throw InvalidArgumentError.field("regionId", `must be one of ${REGION_IDS.join(", ")}`);
    if (!ref.regions.includes(requested)) {
      throw InvalidArgumentError.field(
        "regionId",
        `service "${ref.serviceName}" is not deployed in ${requested}; its regions: ${ref.regions.join(", ")}`,
      );
    }
    // A region with an endpoint of its own is another server: answered here, the search would
    // only carry its name (D-384). One without an endpoint is served by this one.
    const there = this.regionUrls[requested];
    if (requested !== this.region && there !== undefined && there !== this.regionUrls[this.region]) {
      throw InvalidArgumentError.field(
        "regionId",
        `this is ${this.region}'s endpoint; ${requested} answers at ${there}`,
      );
    }
    return requested;
  }
}

export function geoOf(latitude: number | undefined, longitude: number | undefined) {
  if (latitude === undefined && longitude === undefined) return undefined;
  if (latitude === undefined) throw InvalidArgumentError.field("latitude", "is required when longitude is given");
  if (longitude === undefined) throw InvalidArgumentError.field("longitude", "is required when latitude is given");
  return { latitude, longitude };
}

/** The `filter` parameter parsed; a syntax error is 400 naming `filter` with its character position. */
export function filterOf(text: string | undefined): FilterExpr | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return parseFilter(text);
  } catch (error) {
    // The message keeps the character position; the field name is added once, here.
    if (error instanceof FilterSyntaxError) throw InvalidArgumentError.field("filter", error.message);
    throw error;
  }
}
