// Whether record changes fit on top of the active version (docs/versions.md): a deleted id must
// exist, the index must stay within its quota of records, and the first change carries the
// tombstones a branch must keep. One place for a single write (changes.ts, purge.ts) and for the
// writes of a group commit (group-commit.ts), each admitted on top of the ones before it.
import { NotFoundError, QuotaExceededError } from "../../domain/errors.ts";
import { formatVersion, majorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import type { IndexRef } from "../catalog.ts";
import { parentFacts, tombstonesToCarry, writeBase } from "./change-rows.ts";
import { storeSettled, type VersionContext } from "./context.ts";
import { liveVersion } from "./rows.ts";

export interface RecordWrite {
  upserts?: SearchRecord[];
  deletes?: string[];
  /** An erasure (versions/purge.ts): removes this id like a delete. */
  purge?: { recordId: string; by: string };
}

export interface Admitted {
  version: VersionId;
  parent: VersionId;
  /** The deletes to apply: the write's own and the tombstones it carries. */
  deletes: string[];
}

/** For a caller holding the index's write lock: each admitted change builds on the one before. */
export class Admission {
  private readonly ctx: VersionContext;
  private readonly ref: IndexRef;
  /** The active version the first change builds on. */
  private readonly base: VersionId;
  private readonly facts: { records: number | undefined; newer: string[] };
  private parent: VersionId;
  private minor: number;
  /** What the changes admitted so far did to an id (true: it is there). */
  private readonly holds = new Map<string, boolean>();
  /** Whether `base` holds an id, as looked up. */
  private readonly inBase = new Map<string, boolean>();
  private upserted = 0;

  private constructor(
    ctx: VersionContext,
    ref: IndexRef,
    base: VersionId,
    minor: number,
    facts: { records: number | undefined; newer: string[] },
  ) {
    this.ctx = ctx;
    this.ref = ref;
    this.base = base;
    this.parent = base;
    this.minor = minor;
    this.facts = facts;
  }

  static async open(ctx: VersionContext, ref: IndexRef): Promise<Admission> {
    if (!ctx.replica) {
      const found = await writeBase(ctx.db, ref.id);
      if (found === undefined) throw new NotFoundError("the index no longer exists");
      return new Admission(ctx, ref, found.base, found.minor, found.facts);
    }
    // With replication the base and its minors are what this node applied. A parent that no
    // version was created after has no newer tombstones (they belong to versions), and its count
    // is the engine's: no store round trip under the lock.
    const base = await liveVersion(ctx, ref.id);
    const linear = ctx.replica.newest(ref.id) === base;
    const minor = ctx.replica.maxMinor(ref.id, majorOf(base));
    if (!linear) await storeSettled(ctx, ref.id);
    const facts = linear ? { records: undefined, newer: [] } : await parentFacts(ctx.db, ref.id, base);
    return new Admission(ctx, ref, base, minor, facts);
  }

  /**
   * The next change's version, parent and deletes; throws NotFoundError or QuotaExceededError
   * when it does not fit, and then admits nothing of it (the changes after it go on).
   */
  async admit(write: RecordWrite): Promise<Admitted> {
    const upserts = write.upserts ?? [];
    const deletes = write.deletes ?? [];
    // Under the lock: two concurrent deletes of one record must not both succeed.
    for (const id of deletes) {
      if (!(await this.held(id))) {
        throw new NotFoundError(`record "${id}" does not exist in the active version of index "${this.ref.name}"`);
      }
    }
    await this.checkQuota(upserts);
    // Only the first can carry tombstones: every later one builds on a version made just now.
    const carried =
      this.parent === this.base
        ? await tombstonesToCarry(this.ctx, this.ref.id, this.base, this.facts.newer, upserts)
        : [];
    const admitted = {
      version: formatVersion(majorOf(this.base), ++this.minor),
      parent: this.parent,
      deletes: [...deletes, ...carried],
    };
    for (const r of upserts) this.holds.set(r.id, true);
    for (const id of admitted.deletes) this.holds.set(id, false);
    if (write.purge) this.holds.set(write.purge.recordId, false);
    this.upserted += upserts.length;
    this.parent = admitted.version;
    return admitted;
  }

  private async held(id: string): Promise<boolean> {
    return this.holds.get(id) ?? (await this.inBaseVersion(id));
  }

  private async inBaseVersion(id: string): Promise<boolean> {
    let found = this.inBase.get(id);
    if (found === undefined) {
      found = Boolean(await this.ctx.engine.get(this.ref.id, this.base, id));
      this.inBase.set(id, found);
    }
    return found;
  }

  /**
   * Refuses upserts that would take the index past its quota of records. Only ids new to the
   * index count, so replacing a record is always allowed; they are looked up only near the quota
   * (the count plus every upsert so far is a bound: deletes only lower it).
   */
  private async checkQuota(upserts: SearchRecord[]): Promise<void> {
    const quota = this.ctx.policy.recordsPerIndex;
    if (quota === undefined || !upserts.length) return;
    const inBase = this.facts.records ?? (await this.ctx.engine.count(this.ref.id, this.base));
    if (inBase + this.upserted + upserts.length <= quota) return;
    let held = inBase;
    for (const [id, there] of this.holds) held += Number(there) - Number(await this.inBaseVersion(id));
    let added = 0;
    for (const r of upserts) if (!(await this.held(r.id))) added++;
    if (held + added > quota) {
      throw new QuotaExceededError(
        "recordsPerIndex",
        quota,
        `index "${this.ref.name}" holds ${held} records, its quota: delete records to add others, or replace existing ones`,
      );
    }
  }
}
