// search, get and count of one version: every read is a query on the major's collection,
// restricted to the documents the version sees (versions.ts).
import type { FilterExpr, SearchHit, SearchRecord, SearchRequest, VersionId } from "../../ports/engine.ts";
import { schemaFields, search } from "./collections.ts";
import type { Context, VersionEntry } from "./context.ts";
import { recordOf } from "./documents.ts";
import { allOf, referencedFields, translateFilter, type Clause } from "./filter.ts";
import { idKey, indexNames } from "./names.ts";
import { searchParams, toHits } from "./query.ts";
import { searchText } from "./text.ts";
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
): Promise<SearchHit[]> {
  const { collection, path } = await majorCollection(ctx, indexKey, version);
  // A query with no tokens (blank or punctuation only) matches nothing.
  const queryText = searchText(request.query);
  if (queryText === "") return [];
  const filterBy = allOf(
    visibilityFilter(path),
    request.filter ? await dataFilter(ctx, collection, request.filter) : true,
  );
  if (typeof filterBy !== "string") return [];
  const response = await search(
    ctx,
    collection,
    searchParams(request, queryText, filterBy, ctx.settings),
    `search version ${version} of ${indexKey}`,
  );
  return toHits(response, request, ctx.settings);
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
