// search, get and count of one version: every read is a query on the major's collection,
// restricted to the documents the version sees (versions.ts).
import type { DocumentSchema, SearchResponse } from "typesense";
import type {
  FacetResult,
  FilterExpr,
  SearchPage,
  SearchRecord,
  SearchRequest,
  VersionId,
} from "../../ports/engine.ts";
import { schemaFields, search } from "./collections.ts";
import type { Context, VersionEntry } from "./context.ts";
import { compareFacetCounts } from "../../search/facets.ts";
import { decodeFacetValue, recordOf } from "./documents.ts";
import { allOf, referencedFields, translateFilter, VALUE_LAYOUT, type Clause } from "./filter.ts";
import { filterField, idKey, indexNames } from "./names.ts";
import { type PlanExtras, planSearch } from "./query.ts";
import { tokenize } from "../tokenize.ts";
import { resolve, visibilityFilter } from "./versions.ts";

async function majorCollection(
  ctx: Context,
  indexKey: string,
  version: VersionId,
): Promise<{ collection: string; path: VersionEntry[] }> {
  const path = await resolve(ctx, indexKey, version);
  return { collection: indexNames(ctx.settings.prefix, indexKey).major(path[0]!.major), path };
}

async function dataFilter(ctx: Context, collection: string, filter: FilterExpr, layout: number): Promise<Clause> {
  let fields = await schemaFields(ctx, collection, false);
  if (referencedFields(filter, layout).some((field) => !fields.has(field)))
    fields = await schemaFields(ctx, collection, true);
  return translateFilter(filter, (field) => fields.has(field), layout);
}

/**
 * Values asked of Typesense per faceted field: more than a facet shows, so that values tied on
 * the count at its cut are still all there to be ordered by value (docs/engine.md has the limit).
 */
const FACET_FETCH = 250;

/** The fields a request facets and sorts by, as far as the major's schema has them. */
async function extrasFor(
  ctx: Context,
  collection: string,
  request: SearchRequest,
  layout: number,
): Promise<{ extras: PlanExtras; facetFields: { values: string; stats: string }[] }> {
  const facetFields = (request.facets ?? []).map((facet) => ({
    values: filterField("fv", facet.path),
    stats: filterField("n", facet.path),
  }));
  const sortFields = !request.sort
    ? []
    : layout >= VALUE_LAYOUT
      ? [filterField("sn", request.sort.path), filterField("ss", request.sort.path)]
      : [filterField("num", request.sort.path)];
  if (facetFields.length === 0 && sortFields.length === 0) return { extras: {}, facetFields };
  // The schema learns pattern fields as documents arrive: it is read again when a facet or the
  // sort finds none of its fields (as for filters, dataFilter above).
  let fields = await schemaFields(ctx, collection, false);
  const unknown = (names: string[]) => names.length > 0 && !names.some((name) => fields.has(name));
  if (facetFields.some((f) => unknown([f.values])) || unknown(sortFields))
    fields = await schemaFields(ctx, collection, true);
  const extras: PlanExtras = {};
  const facetBy = [...new Set(facetFields.flatMap((f) => [f.values, f.stats]).filter((field) => fields.has(field)))];
  if (facetBy.length > 0) {
    extras.facetBy = facetBy;
    extras.maxFacetValues = FACET_FETCH;
  }
  if (request.sort) {
    // Numbers, then strings, then records with neither, in either direction (layout 2: numbers).
    extras.sortKeys = sortFields
      .filter((field) => fields.has(field))
      .map((field) => `${field}(missing_values: last):${request.sort!.direction}`);
  }
  return { extras, facetFields };
}

/**
 * A float32 stat (Typesense's `float`) as the shortest decimal that is the same float32: the
 * stored value whenever it had at most 7 significant digits.
 */
export function float32Decimal(value: number): number {
  const single = Math.fround(value);
  for (let digits = 1; digits <= 17; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === single) return candidate;
  }
  return value;
}

function facetResults(
  request: SearchRequest,
  fields: { values: string; stats: string }[],
  answer: SearchResponse<DocumentSchema>,
): FacetResult[] {
  const byField = new Map((answer.facet_counts ?? []).map((f) => [String(f.field_name), f]));
  return (request.facets ?? []).map((facet, i) => {
    const values = (byField.get(fields[i]!.values)?.counts ?? [])
      .map((c) => ({ value: decodeFacetValue(c.value), count: c.count }))
      .sort(compareFacetCounts)
      .slice(0, facet.maxValues);
    const stats = byField.get(fields[i]!.stats)?.stats;
    const result: FacetResult = { path: facet.path, values };
    if (stats?.min !== undefined && stats.max !== undefined) {
      result.stats = { min: float32Decimal(stats.min), max: float32Decimal(stats.max) };
    }
    return result;
  });
}

/**
 * One page: Typesense's `found` is the total (exact: it counts every match), and its facet
 * counts are over every match too; both come from the request that answered (the exact one, or
 * the one with typos when nothing matched exactly).
 */
export async function searchVersion(
  ctx: Context,
  indexKey: string,
  version: VersionId,
  request: SearchRequest,
): Promise<SearchPage> {
  const { collection, path } = await majorCollection(ctx, indexKey, version);
  const layout = path[0]!.layout ?? 1;
  const empty = (): SearchPage => ({
    hits: [],
    totalHits: 0,
    totalHitsExact: true,
    ...(request.facets ? { facets: request.facets.map((f) => ({ path: f.path, values: [] })) } : {}),
  });
  // A query with no tokens (blank or punctuation only) matches nothing.
  const tokens = tokenize(request.query);
  if (tokens.length === 0) return empty();
  const filterBy = allOf(
    visibilityFilter(path),
    request.filter ? await dataFilter(ctx, collection, request.filter, layout) : true,
  );
  if (typeof filterBy !== "string") return empty();
  const { extras, facetFields } = await extrasFor(ctx, collection, request, layout);
  const plan = planSearch(request, tokens, filterBy, layout, ctx.settings, extras);
  const operation = `search version ${version} of ${indexKey}`;
  const exact = await search(ctx, collection, plan.exact, operation);
  // Exact matches fill the page, or typos are off: one request is the whole answer.
  const typoParams = plan.typos(exact.found);
  const typos = typoParams ? await search(ctx, collection, typoParams, `${operation}, with typos`) : undefined;
  const hits = plan.hits(exact, typos);
  const answer = typos ?? exact;
  // Typo matches Sift's rules refuse are not hits: the total leaves out those seen on this page.
  const dropped = hits.dropped ?? 0;
  const page: SearchPage = {
    hits: [...hits],
    totalHits: Math.max(answer.found - dropped, 0),
    totalHitsExact: dropped === 0,
  };
  if (request.facets) page.facets = facetResults(request, facetFields, answer);
  return page;
}

export async function getRecord(
  ctx: Context,
  indexKey: string,
  version: VersionId,
  id: string,
): Promise<SearchRecord | null> {
  const { collection, path } = await majorCollection(ctx, indexKey, version);
  const response = await search(
    ctx,
    collection,
    {
      q: "*",
      query_by: "title_text",
      filter_by: `rid_key:=${idKey(id)} && ${visibilityFilter(path)}`,
      per_page: 1,
      include_fields: "rec",
    },
    `get a record of version ${version} of ${indexKey}`,
  );
  const doc = response.hits?.[0]?.document;
  return doc ? recordOf(doc) : null;
}

export async function countRecords(ctx: Context, indexKey: string, version: VersionId): Promise<number> {
  const { collection, path } = await majorCollection(ctx, indexKey, version);
  const response = await search(
    ctx,
    collection,
    { q: "*", query_by: "title_text", filter_by: visibilityFilter(path), per_page: 1, include_fields: "id" },
    `count version ${version} of ${indexKey}`,
  );
  return response.found;
}
