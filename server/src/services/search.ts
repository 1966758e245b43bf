// GET /v1/search (docs/api.md, Search): resolves the index by service and name, checks the
// caller, picks the version, and asks the engine. The MCP tools call the same method, so REST and
// MCP rank identically.
import type { components, operations } from "@sift/contract";
import { authorizeIndex } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { InvalidArgumentError } from "../domain/errors.ts";
import type { FilterExpr, SearchEngine, SearchHit } from "../ports/engine.ts";
import { isRegionId, REGION_IDS } from "../regions.ts";
import { FilterSyntaxError, parseFilter } from "../search/filter.ts";
import { type Highlight, highlighter } from "../search/highlight.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";
import type { VersionService } from "./versions.ts";

type SearchResult = components["schemas"]["SearchResult"];

/** The query parameters of GET /v1/search, as the contract defines them. */
export type SearchParams = operations["Search_search"]["parameters"]["query"];

/** An engine hit as served: with its highlight when the query asked for highlights. */
export interface ServedHit extends SearchHit {
  highlight?: Highlight;
}

export interface SearchOutcome {
  /** The engine's hits, best first: suggestionOf() turns one into a SearchResult. */
  hits: ServedHit[];
  indexVersion: string;
  region: string;
}

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

  constructor(deps: { catalog: CatalogService; versions: VersionService; engine: SearchEngine; region: string }) {
    this.catalog = deps.catalog;
    this.versions = deps.versions;
    this.engine = deps.engine;
    this.region = deps.region;
  }

  async search(p: Principal, params: SearchParams): Promise<SearchOutcome> {
    const geo = geoOf(params.latitude, params.longitude);
    const filter = filterOf(params.filter);
    const ref = authorizeIndex(
      p,
      "search",
      await this.catalog.byServiceAndName(params.serviceName, params.indexName),
      params.indexName,
      `index "${params.indexName}" of service "${params.serviceName}"`,
    );
    const region = this.regionFor(ref, params.regionId);
    return { ...(await this.searchIndex(ref, { ...params, geo, filter })), region };
  }

  /** Search on an already authorised index (the MCP tools resolve indexes by tenant and name). */
  async searchIndex(
    ref: IndexRef,
    params: Pick<SearchParams, "query" | "weighted" | "scope" | "limit" | "version" | "typoTolerance" | "highlight"> & {
      geo?: { latitude: number; longitude: number } | undefined;
      filter?: FilterExpr | undefined;
    },
  ): Promise<{ hits: ServedHit[]; indexVersion: string }> {
    const version = await this.versions.resolve(ref, params.version);
    const scope = params.scope ?? "title";
    const typoTolerance = params.typoTolerance ?? true;
    const { hits } = await this.engine.search(ref.id, version, {
      query: params.query,
      scope,
      weighted: params.weighted ?? false,
      limit: params.limit ?? 10,
      typoTolerance,
      ...(params.geo ? { geo: params.geo } : {}),
      ...(params.filter ? { filter: params.filter } : {}),
    });
    if (!params.highlight) return { indexVersion: version, hits };
    // After ranking, on the records served only (at most `limit`), and from the record and the
    // query alone: every engine adapter gets the same highlights (docs/api.md, Highlighting).
    const highlight = highlighter(params.query, { scope, typoTolerance });
    return { indexVersion: version, hits: hits.map((hit) => ({ ...hit, highlight: highlight(hit.record) })) };
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
    return requested;
  }
}

export function geoOf(latitude: number | undefined, longitude: number | undefined) {
  if (latitude === undefined && longitude === undefined) return undefined;
  if (latitude === undefined) throw InvalidArgumentError.field("latitude", "is required when longitude is given");
  if (longitude === undefined) throw InvalidArgumentError.field("longitude", "is required when latitude is given");
  return { latitude, longitude };
}

function filterOf(text: string | undefined): FilterExpr | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return parseFilter(text);
  } catch (error) {
    if (error instanceof FilterSyntaxError)
      throw new InvalidArgumentError(`filter: ${error.message}`, [{ field: "filter", message: error.message }]);
    throw error;
  }
}
