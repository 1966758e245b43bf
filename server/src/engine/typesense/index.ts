// The Typesense adapter of the search-engine port. Layout (docs/DECISIONS.md, "Typesense adapter"):
// - `<prefix><index>__v<major>`: one collection per major version, holding the major's records
//   and every record-level change made on top of it (documents.ts, versions.ts);
// - `<prefix><index>__versions`: the version tree, one document per version;
// - `<prefix><index>`: an alias to the collection of the active version.
import type { RecordChange, SearchEngine, SearchRequest, VersionId } from "../../ports/engine.ts";
import { openBulkWriter, writeCheckpoint } from "./bulk.ts";
import { applyChange, dropVersion } from "./changes.ts";
import { dropCollection } from "./collections.ts";
import type { Context, VersionTree } from "./context.ts";
import { createCaller, createClient, DEFAULT_RETRY, tolerating, type RetryPolicy } from "./http.ts";
import { indexNames } from "./names.ts";
import { purgeRecord } from "./purge.ts";
import { countRecords, getRecord, searchVersion } from "./reads.ts";
import { loadTree, resolve, versionsSchema } from "./versions.ts";

export { TypesenseEngineError } from "./http.ts";
export { UnknownVersionError } from "./context.ts";

export interface TypesenseEngineOptions {
  url: string;
  apiKey: string;
  /** Starts every collection and alias name, so deployments can share a cluster. Default `sift_`. */
  collectionPrefix?: string;
  /** Documents per import request. Default 1000. */
  importBatchSize?: number;
  /** `_text_match(buckets: n)` when ranking layout-1 collections by weight or distance. Default 10. */
  textMatchBuckets?: number;
  /** Prefix expansions of the last query token. Default 100. */
  maxCandidates?: number;
  /** Per-request timeout except imports, which take as long as they take. Default 10. */
  timeoutSeconds?: number;
  retry?: Partial<RetryPolicy>;
}

export function createTypesenseEngine(options: TypesenseEngineOptions): SearchEngine {
  const ctx: Context = {
    client: createClient(options.url, options.apiKey, options.timeoutSeconds ?? 10),
    call: createCaller({ ...DEFAULT_RETRY, ...options.retry }),
    settings: {
      prefix: options.collectionPrefix ?? "sift_",
      importBatchSize: options.importBatchSize ?? 1000,
      textMatchBuckets: options.textMatchBuckets ?? 10,
      maxCandidates: options.maxCandidates ?? 100,
    },
    trees: new Map(),
    schemaFields: new Map(),
  };
  const names = (indexKey: string) => indexNames(ctx.settings.prefix, indexKey);
  const forget = (): void => {
    ctx.trees.clear();
    ctx.schemaFields.clear();
  };

  return {
    name: "typesense",

    // Everything lives in Typesense and is read on first use, so there is nothing to load.
    async open() {
      forget();
    },
    async close() {
      forget();
    },
    async ping() {
      try {
        return (await ctx.client.health.retrieve()).ok;
      } catch {
        return false;
      }
    },

    async createIndex(indexKey: string) {
      const collection = names(indexKey).versions;
      await tolerating(
        409,
        ctx.call(`create index ${indexKey}`, () => ctx.client.collections().create(versionsSchema(collection))),
      );
      ctx.trees.delete(indexKey);
    },
    async dropIndex(indexKey: string) {
      const own = names(indexKey);
      await tolerating(
        404,
        ctx.call(`drop alias of ${indexKey}`, () => ctx.client.aliases(own.alias).delete()),
      );
      const collections = await ctx.call(`list collections`, () =>
        ctx.client.collections().retrieve({ exclude_fields: "fields" }),
      );
      for (const { name } of collections) if (own.owns(name)) await dropCollection(ctx, name);
      ctx.trees.delete(indexKey);
    },

    bulkWriter: (indexKey: string, major: number) => openBulkWriter(ctx, indexKey, major),
    applyChange: (indexKey: string, change: RecordChange) => applyChange(ctx, indexKey, change),
    checkpoint: (indexKey: string, from: VersionId, major: number) => writeCheckpoint(ctx, indexKey, from, major),

    async activate(indexKey: string, version: VersionId) {
      const major = (await resolve(ctx, indexKey, version))[0]!.major;
      const own = names(indexKey);
      await ctx.call(`activate version ${version} of ${indexKey}`, () =>
        ctx.client.aliases().upsert(own.alias, { collection_name: own.major(major) }),
      );
    },
    dropVersion: (indexKey: string, version: VersionId) => dropVersion(ctx, indexKey, version),
    purge: (indexKey: string, id: string) => purgeRecord(ctx, indexKey, id),
    async versions(indexKey: string) {
      // An index without a tree collection (never created, or dropped) holds no versions.
      const tree: VersionTree = (await tolerating(404, loadTree(ctx, indexKey))) ?? new Map();
      return [...tree.values()]
        .filter((entry) => entry.state === "ready")
        .map(({ version, parent, records }) => ({ version, parent, records }));
    },

    search: (indexKey: string, version: VersionId, request: SearchRequest) =>
      searchVersion(ctx, indexKey, version, request),
    get: (indexKey: string, version: VersionId, id: string) => getRecord(ctx, indexKey, version, id),
    count: (indexKey: string, version: VersionId) => countRecords(ctx, indexKey, version),
  };
}
