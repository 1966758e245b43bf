// The search-only client: what a browser needs (the widget uses it), kept small.
import createFetchClient from "openapi-fetch";
import type { components, paths } from "@sift/contract";
import { SiftApiError, type Problem } from "./errors.ts";
import { createRouter, type RegionEndpoint, type Router } from "./routing.ts";

export type { RegionEndpoint } from "./routing.ts";

type Schemas = components["schemas"];
type ContractSearchParams = paths["/v1/search"]["get"]["parameters"]["query"];

/** A field of `data` as a path: `data.brand`, `data.specs.color`, `data."a.b"`. */
export type DataPath = `data.${string}`;

/**
 * The parameters of a search. `facets` may be a list of paths (sent comma-separated) and `sort`
 * is a path with its direction, e.g. `data.price:desc`.
 */
export type SearchParams<F extends DataPath = DataPath> = Omit<ContractSearchParams, "facets" | "sort"> & {
  facets?: readonly F[] | string | undefined;
  sort?: `${DataPath}:${"asc" | "desc"}` | undefined;
};
/** One value of a faceted field and how many matching records hold it. */
export type FacetValue = Schemas["FacetValue"];
export type FacetStats = Schemas["FacetStats"];
/**
 * Search results. With facets asked for as a list, `facets` is keyed by exactly those paths (and
 * `facetStats` holds those with numeric values).
 */
export type SearchResponse<F extends string = never> = [F] extends [never]
  ? Schemas["SearchResponse"]
  : Schemas["SearchResponse"] & {
      facets: Record<F, FacetValue[]>;
      facetStats: Partial<Record<F, FacetStats>>;
    };
export type SearchResult = Schemas["SearchResult"];
/** One search's answer in a multi-search: its results with the region that served it. */
export type MultiSearchResponse = Schemas["MultiSearchResponse"];
/** The parameters of one search in a multi-search, as for search(). */
export type MultiSearchQuery = SearchParams;
/** Each search's results or its own problem, in order; tell them apart with isSearchProblem(). */
export type MultiSearchResult = MultiSearchResponse | Problem;
/** The matched parts of a suggestion, when the search asked for `highlight: true`. */
export type SearchHighlight = components["schemas"]["SearchHighlight"];
/** `[start, end]` in UTF-16 code units of the stored text, end exclusive: `text.slice(start, end)`. */
export type HighlightRange = components["schemas"]["HighlightRange"];

export interface ClientOptions {
  /** Sift's base URL, e.g. `https://api.sift.dev` or `http://127.0.0.1:7700`. */
  baseUrl: string;
  /** A secret key (server side) or a public `pk-sift-srh-…` key (browsers). */
  apiKey?: string | undefined;
  /** Route between region endpoints by measured latency; "discover" asks GET /v1/regions. */
  regions?: RegionEndpoint[] | "discover" | undefined;
  /** Per attempt, before moving to the next host. */
  timeoutMs?: number | undefined;
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
  /**
   * Read your writes (default true, createClient only): after a write through this client, its
   * searches and record reads of that index pass the version it returned as `minVersion`, so a
   * region that has not applied it yet waits for it or hands the request to the next region.
   */
  readYourWrites?: boolean | undefined;
}

/** The version a read of `indexName` must see (the newest a write through the client returned). */
export type VersionOf = (indexName: string) => string | undefined;

/** Params with `minVersion` added from `versionOf`, unless they name a version of their own. */
export function withMinVersion<P extends { version?: string | undefined; minVersion?: string | undefined }>(
  params: P,
  indexName: string,
  versionOf: VersionOf | undefined,
): P {
  if (!versionOf || params.version !== undefined || params.minVersion !== undefined) return params;
  const minVersion = versionOf(indexName);
  return minVersion === undefined ? params : { ...params, minVersion };
}

export function createApi(options: ClientOptions) {
  const router: Router = createRouter(options);
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    fetch: (request: Request) => router.fetch(request),
    headers: { ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}), ...options.headers },
  });
  return { api, router };
}

/** Returns the data of a 2xx answer, or throws SiftApiError with the problem document. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw new SiftApiError(
      response.status,
      error as Problem | undefined,
      response.headers.get("x-request-id") ?? undefined,
    );
  }
  return data as T;
}

/** The contract's parameters: a list of facet paths joined with commas. */
function contractParams(params: SearchParams): ContractSearchParams {
  const { facets, ...rest } = params;
  if (facets === undefined) return rest;
  return { ...rest, facets: typeof facets === "string" ? facets : facets.join(",") };
}

/** True when a multi-search result is the problem that stopped that search (it has no suggestions). */
export function isSearchProblem(result: MultiSearchResult): result is Problem {
  return !("suggestions" in result);
}

/** search() and multiSearch() over a typed client; the full client shares them. */
export function searchCalls(api: ReturnType<typeof createApi>["api"], router: Router, versionOf?: VersionOf) {
  return {
    /**
     * Ranked suggestions for `params.query`, with `totalHits` and, when asked, facet counts; pass
     * `signal` to abort a stale request. The next page: `offset` + `limit`, with `version` set to
     * this page's `indexVersion`.
     */
    search: <F extends DataPath = never>(
      params: SearchParams<F> & { facets?: readonly F[] | string | undefined },
      init: { signal?: AbortSignal } = {},
    ): Promise<SearchResponse<F>> =>
      unwrap(
        api.GET("/v1/search", {
          params: { query: contractParams(withMinVersion(params, params.indexName, versionOf)) },
          ...(init.signal ? { signal: init.signal } : {}),
        }),
      ) as Promise<SearchResponse<F>>,
    /**
     * Up to 10 searches in one request, answered in order; a search that fails answers its own
     * problem (isSearchProblem) without failing the others. A search a region answers 503 (it has
     * not applied that search's `minVersion` yet) is asked again of the next region; one it
     * answers 421 (its index is held in other regions) is asked alone, as search() asks it.
     */
    multiSearch: async (
      searches: readonly MultiSearchQuery[],
      init: { signal?: AbortSignal } = {},
    ): Promise<MultiSearchResult[]> => {
      const queries = searches.map((s) => contractParams(withMinVersion(s, s.indexName, versionOf)));
      const results: MultiSearchResult[] = [];
      let pending = queries.map((_, i) => i);
      // Each other host once at most: a search every region answers 503 keeps its problem.
      for (let left = new Set((await router.hosts()).map((h) => h.url)).size; ; left--) {
        const call = api.POST("/v1/search/multi", {
          body: { searches: pending.map((i) => queries[i]!) },
          ...(init.signal ? { signal: init.signal } : {}),
        });
        const { response } = await call;
        const answers = (await unwrap(call)).results as MultiSearchResult[];
        const behind: number[] = [];
        answers.forEach((answer, k) => {
          results[pending[k]!] = answer;
          if (isSearchProblem(answer) && answer.status === 503) behind.push(pending[k]!);
        });
        if (!behind.length || left <= 1 || !router.setAside(response, 1_000)) break;
        pending = behind;
      }
      await Promise.all(
        results.map(async (answer, i) => {
          if (!isSearchProblem(answer) || answer.status !== 421) return;
          const { data, response } = await api.GET("/v1/search", {
            params: { query: queries[i]! },
            ...(init.signal ? { signal: init.signal } : {}),
          });
          // Still refused (no region the client knows holds it): the problem stays.
          const region = response.headers.get("x-sift-region");
          if (response.ok && data !== undefined && region !== null) results[i] = { ...data, region };
        }),
      );
      return results;
    },
  };
}

export function createSearchClient(options: ClientOptions) {
  const { api, router } = createApi(options);
  return { router, ...searchCalls(api, router) };
}

export type SearchClient = ReturnType<typeof createSearchClient>;
