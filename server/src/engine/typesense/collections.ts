// Collection-level requests shared by reads and writes: create/drop, JSONL imports with
// per-document failures turned into errors, searches, and the schema's field list.
import type { DocumentSchema, SearchParams, SearchResponse } from "typesense";
import type { Context } from "./context.ts";
import { collectionSchema, type TypesenseDocument } from "./documents.ts";
import { TypesenseEngineError, tolerating } from "./http.ts";

export async function createMajorCollection(ctx: Context, name: string): Promise<void> {
  // A leftover of a write that never committed (crash, abort that could not reach Typesense)
  // holds nothing any version can see, so it is replaced rather than reused.
  await dropCollection(ctx, name);
  // 409: an earlier attempt of this very request created it before its answer was lost.
  await tolerating(
    409,
    ctx.call(`create collection ${name}`, () => ctx.client.collections().create(collectionSchema(name))),
  );
}

export async function dropCollection(ctx: Context, name: string): Promise<void> {
  await tolerating(
    404,
    ctx.call(`drop collection ${name}`, () => ctx.client.collections(name).delete()),
  );
  ctx.schemaFields.delete(name);
}

interface ImportLine {
  success: boolean;
  error?: string;
  code?: number;
}

/** Imports documents in batches; upsert and update are idempotent, so a retried batch is safe. */
export async function importDocuments(
  ctx: Context,
  collection: string,
  docs: readonly TypesenseDocument[],
  action: "upsert" | "update",
): Promise<void> {
  const operation = `import into ${collection}`;
  for (let start = 0; start < docs.length; start += ctx.settings.importBatchSize) {
    const batch = docs.slice(start, start + ctx.settings.importBatchSize);
    const jsonl = batch.map((doc) => JSON.stringify(doc)).join("\n");
    const answer = await ctx.call(operation, () =>
      ctx.client.collections(collection).documents().import(jsonl, { action }),
    );
    const failures = answer
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as ImportLine)
      .filter((line) => !line.success);
    const first = failures[0];
    if (first) {
      throw new TypesenseEngineError(
        operation,
        `${failures.length} of ${batch.length} documents rejected, first: ${first.error ?? "no reason given"}`,
        first.code,
      );
    }
  }
}

export async function search(
  ctx: Context,
  collection: string,
  params: SearchParams<DocumentSchema>,
  operation: string,
): Promise<SearchResponse<DocumentSchema>> {
  return ctx.call(operation, () => ctx.client.collections(collection).documents().search(params, {}));
}

/**
 * Field names in the collection's schema. Pattern fields materialise per data key as documents
 * arrive; fields are never removed, so a cached set is only incomplete, and `refresh` re-reads it.
 */
export async function schemaFields(ctx: Context, collection: string, refresh: boolean): Promise<Set<string>> {
  const cached = ctx.schemaFields.get(collection);
  if (cached && !refresh) return cached;
  const schema = await ctx.call(`read schema of ${collection}`, () => ctx.client.collections(collection).retrieve());
  const fields = new Set(schema.fields.map((field) => field.name));
  ctx.schemaFields.set(collection, fields);
  return fields;
}
