// search, get and count of one version: every read is a query on the major's collection,
// restricted to the documents the version sees (versions.ts).
import type { FilterExpr, SearchHit, SearchPage, SearchRecord, SearchRequest, VersionId } from "../../ports/engine.ts";
import { schemaFields, search } from "./collections.ts";
import type { Context, VersionEntry } from "./context.ts";
import { recordOf } from "./documents.ts";
import { allOf, referencedFields, translateFilter, type Clause } from "./filter.ts";
import { idKey, indexNames } from "./names.ts";
import { planSearch } from "./query.ts";
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

async function dataFilter(ctx: Context, collection: string, filter: FilterExpr): Promise<Clause> {
  let fields = await schemaFields(ctx, collection, false);
  if (referencedFields(filter).some((field) => !fields.has(field))) fields = await schemaFields(ctx, collection, true);
  return translateFilter(filter, (field) => fields.has(field));
}

export async function searchVersion(
  ctx: Context,
  indexKey: string,
  version: VersionId,
  request: SearchRequest,
): Promise<SearchPage> {
  const hits = await searchHits(ctx, indexKey, version, request);
  // TODO(issue 16): found, facet_by, page/per_page and sort_by.
  return { hits, totalHits: hits.length, totalHitsExact: false };
}

async function searchHits(
  ctx: Context,
  indexKey: string,
  version: VersionId,
  request: SearchRequest,
): Promise<SearchHit[]> {
  const { collection, path } = await majorCollection(ctx, indexKey, version);
  // A query with no tokens (blank or punctuation only) matches nothing.
  const tokens = tokenize(request.query);
  if (tokens.length === 0) return [];
  const filterBy = allOf(
    visibilityFilter(path),
    request.filter ? await dataFilter(ctx, collection, request.filter) : true,
  );
  if (typeof filterBy !== "string") return [];
  const plan = planSearch(request, tokens, filterBy, path[0]!.layout ?? 1, ctx.settings);
  const operation = `search version ${version} of ${indexKey}`;
  const exact = await search(ctx, collection, plan.exact, operation);
  // Exact matches fill the page, or typos are off: one request is the whole answer.
  const typos = plan.typos(exact.found);
  if (!typos) return plan.hits(exact);
  return plan.hits(exact, await search(ctx, collection, typos, `${operation}, with typos`));
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
