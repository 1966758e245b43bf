// What every operation of the adapter needs: the client, the retrying caller, settings, and
// the small caches (version trees, collection schemas) that spare a request per query.
import type { Client } from "typesense";
import type { VersionId } from "../../ports/engine.ts";
import type { Caller } from "./http.ts";

export interface VersionEntry {
  version: VersionId;
  parent: VersionId | null;
  major: number;
  /** 0 for a major version, n for "<major>.n". */
  minor: number;
  records: number;
  /** `pending` while a write is under way (or was cut short); only `ready` versions exist. */
  state: "pending" | "ready";
  /**
   * For a major: the document layout its collection was created with (documents.ts,
   * DOCUMENT_LAYOUT); absent on minors and on majors written before layouts were numbered (1).
   */
  layout?: number;
}

export type VersionTree = Map<VersionId, VersionEntry>;

export interface Settings {
  prefix: string;
  importBatchSize: number;
  /**
   * Buckets for `_text_match(buckets: n)` when weight or distance should reorder near-equal
   * matches; only collections of layout 1 still rank that way (query.ts).
   */
  textMatchBuckets: number;
  /** Prefix expansions Typesense considers for the last query token (its default, 4, misses records). */
  maxCandidates: number;
}

export interface Context {
  client: Client;
  call: Caller;
  settings: Settings;
  trees: Map<string, VersionTree>;
  /** Field names per collection, as last read from Typesense. */
  schemaFields: Map<string, Set<string>>;
}

export class UnknownVersionError extends Error {
  readonly version: VersionId;

  constructor(indexKey: string, version: VersionId) {
    super(`typesense: index ${indexKey} has no version ${version}`);
    this.name = "UnknownVersionError";
    this.version = version;
  }
}
