// Records by id (docs/api.md, Records): reads from the active (or a named) version, writes through the
// version service so each one is a new, durable, active version.
import type { Principal } from "../auth/principal.ts";
import { authorizeIndex, tenantOf } from "../auth/authority.ts";
import { InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import type { SearchEngine, SearchRecord } from "../ports/engine.ts";
import { checkRecord } from "../records/validate.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";
import type { VersionService } from "./versions.ts";

/** The user behind a session (the only other principal index.write admits besides keys). */
const userOf = (p: Principal): string => (p.kind === "session" ? p.userId : "anonymous");

export class RecordService {
  private readonly catalog: CatalogService;
  private readonly versions: VersionService;
  private readonly engine: SearchEngine;

  constructor(deps: { catalog: CatalogService; versions: VersionService; engine: SearchEngine }) {
    this.catalog = deps.catalog;
    this.versions = deps.versions;
    this.engine = deps.engine;
  }

  /** The caller's index by name; names are unique per tenant. */
  async index(p: Principal, action: "records.read" | "index.write", indexName: string): Promise<IndexRef> {
    const tenantId = tenantOf(p);
    const ref = tenantId ? await this.catalog.byName(tenantId, indexName) : undefined;
    return this.catalog.servedHere(authorizeIndex(p, action, ref, indexName));
  }

  async get(
    p: Principal,
    indexName: string,
    recordId: string,
    version?: string,
    minVersion?: string,
  ): Promise<SearchRecord> {
    const ref = await this.index(p, "records.read", indexName);
    const resolved = await this.versions.resolve(ref, version, minVersion);
    const record = await this.engine.get(ref.id, resolved, recordId);
    if (!record)
      throw new NotFoundError(`record "${recordId}" does not exist in version ${resolved} of index "${indexName}"`);
    return record;
  }

  async put(p: Principal, indexName: string, recordId: string, body: unknown): Promise<string> {
    const ref = await this.index(p, "index.write", indexName);
    const checked = checkRecord(body, { idOverride: recordId });
    if (!checked.ok) {
      throw new InvalidArgumentError(
        `invalid record: ${checked.errors.map((e) => `${e.field} ${e.message}`).join("; ")}`,
        checked.errors,
      );
    }
    return this.versions.applyRecordChange(ref, { upserts: [checked.record] });
  }

  /** Erases the record from every retained version (docs/versions.md, Erasure). */
  async purge(p: Principal, indexName: string, recordId: string): Promise<string> {
    const ref = await this.index(p, "index.write", indexName);
    return this.versions.purge(ref, recordId, p.kind === "key" ? `key:${p.keyId}` : `user:${userOf(p)}`);
  }

  async delete(p: Principal, indexName: string, recordId: string): Promise<string> {
    const ref = await this.index(p, "index.write", indexName);
    return this.versions.applyRecordChange(ref, { deletes: [recordId] });
  }
}
