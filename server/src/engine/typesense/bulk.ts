// Major versions: a bulk ingest or a checkpoint fills a fresh collection; the version exists
// (is listed and readable) only once its tree entry is written, at commit.
import { createInterface } from "node:readline";
import type { BulkWriter, SearchRecord, VersionId } from "../../ports/engine.ts";
import { createMajorCollection, dropCollection, importDocuments } from "./collections.ts";
import type { Context } from "./context.ts";
import { DOCUMENT_LAYOUT, MAJOR_WRITER, recordOf, toDocument, type TypesenseDocument } from "./documents.ts";
import { indexNames } from "./names.ts";
import { deleteMajorEntries, loadTree, putEntry, resolve, visibilityFilter } from "./versions.ts";

/**
 * Prepares an empty collection for a major. The service allocates version ids and only sends
 * one again after a write whose outcome it could not record, so an existing major is an
 * orphan of such a write and is replaced, unless changes were already made on top of it.
 */
async function claimMajor(ctx: Context, indexKey: string, major: number): Promise<string> {
  const entries = [...(await loadTree(ctx, indexKey)).values()].filter((entry) => entry.major === major);
  if (entries.some((entry) => entry.minor > 0 && entry.state === "ready")) {
    throw new Error(`typesense: version ${major} of ${indexKey} already exists and has changes on top of it`);
  }
  if (entries.length > 0) await deleteMajorEntries(ctx, indexKey, major);
  const collection = indexNames(ctx.settings.prefix, indexKey).major(major);
  await createMajorCollection(ctx, collection);
  return collection;
}

async function commitMajor(ctx: Context, indexKey: string, major: number, records: number): Promise<void> {
  // claimMajor created the collection with this process's schema: the entry says which, so reads
  // know which fields they may rank by (query.ts).
  await putEntry(ctx, indexKey, {
    version: String(major),
    parent: null,
    major,
    minor: 0,
    records,
    state: "ready",
    layout: DOCUMENT_LAYOUT,
  });
}

export async function openBulkWriter(ctx: Context, indexKey: string, major: number): Promise<BulkWriter> {
  const collection = await claimMajor(ctx, indexKey, major);
  let state: "open" | "committed" | "aborted" = "open";
  const ensureOpen = (action: string): void => {
    if (state !== "open")
      throw new Error(`typesense: cannot ${action} version ${major} of ${indexKey}: it was ${state}`);
  };

  return {
    async add(records: SearchRecord[]): Promise<void> {
      ensureOpen("add records to");
      // Document ids derive from record ids, so a later duplicate upserts over the earlier one.
      await importDocuments(
        ctx,
        collection,
        records.map((record) => toDocument(record, MAJOR_WRITER)),
        "upsert",
      );
    },
    async commit(): Promise<{ records: number }> {
      ensureOpen("commit");
      const info = await ctx.call(`count collection ${collection}`, () =>
        ctx.client.collections(collection).retrieve(),
      );
      await commitMajor(ctx, indexKey, major, info.num_documents);
      state = "committed";
      return { records: info.num_documents };
    },
    async abort(): Promise<void> {
      if (state === "aborted") return;
      ensureOpen("abort");
      state = "aborted";
      await dropCollection(ctx, collection);
    },
  };
}

export async function writeCheckpoint(
  ctx: Context,
  indexKey: string,
  from: VersionId,
  major: number,
): Promise<{ records: number }> {
  const path = await resolve(ctx, indexKey, from);
  const source = indexNames(ctx.settings.prefix, indexKey).major(path[0]!.major);
  const target = await claimMajor(ctx, indexKey, major);
  try {
    const stream = await ctx.call(`export version ${from} of ${indexKey}`, () =>
      ctx.client
        .collections(source)
        .documents()
        .exportStream({ filter_by: visibilityFilter(path), include_fields: "rec" }),
    );
    let records = 0;
    let batch: TypesenseDocument[] = [];
    const flush = async (): Promise<void> => {
      await importDocuments(ctx, target, batch, "upsert");
      records += batch.length;
      batch = [];
    };
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      if (line.trim() === "") continue;
      batch.push(toDocument(recordOf(JSON.parse(line) as TypesenseDocument), MAJOR_WRITER));
      if (batch.length >= ctx.settings.importBatchSize) await flush();
    }
    await flush();
    await commitMajor(ctx, indexKey, major, records);
    return { records };
  } catch (error) {
    // The half-written collection is invisible (no tree entry) and the next write of this major
    // replaces it, so failing to drop it now must not hide the error that matters.
    // biome-ignore lint/plugin: the error thrown below is the one that matters.
    await dropCollection(ctx, target).catch(() => undefined);
    throw error;
  }
}
