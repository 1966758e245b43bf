// One node's replica (docs/replication.md): follows the change log from where it left off and
// applies every entry to its own engine, in order per index, idempotently. Its own writes go the
// other way through `commit`: appended with compare-and-set, then applied here at once, so the
// node that acknowledged a write serves it immediately; the other nodes apply it as it arrives.
import { and, eq, lt } from "drizzle-orm";
import { join } from "node:path";
import { UnavailableError } from "../domain/errors.ts";
import { formatVersion, majorOf, minorOf, type VersionId } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import { type AppliedEntry, type ChangeLog, type LogEntry, type LogOp, StaleAppendError } from "../ports/change-log.ts";
import type { SearchEngine } from "../ports/engine.ts";
import type { IndexLocks } from "../services/versions/lock.ts";
import type { Db } from "../store/open.ts";
import { indexes, versions } from "../store/schema.ts";
import { ReplicaState } from "./replica-state.ts";

/** Entries being applied at once across indexes (one at a time per index). */
const MAX_IN_FLIGHT = 256;

export interface ReplicaLag {
  index: string;
  /** Entries of the log this node has not applied yet (all indexes). */
  behind: number;
  /** From append to applied here, for the newest entry of the index. */
  lagMs: number;
}

export class Replica {
  readonly node: string;
  private readonly log: ChangeLog;
  /** The node's own engine (not the replicating wrapper). */
  private readonly engine: SearchEngine;
  private readonly db: Db;
  private readonly locks: IndexLocks;
  private readonly logger: Logger;
  readonly state: ReplicaState;
  private follower: { stop(): Promise<void> } | undefined;
  private readonly inFlight = new Set<number>();
  /** Delivered positions, in order, not yet counted into state.position. */
  private readonly delivered: number[] = [];
  private readonly waiters = new Set<() => void>();
  private onActive: (indexId: string, version: VersionId) => void = () => {};
  /** The newest position known in the log, refreshed by readiness checks and catch-up. */
  private logLast = 0;
  private started = false;

  constructor(deps: {
    node: string;
    log: ChangeLog;
    engine: SearchEngine;
    db: Db;
    locks: IndexLocks;
    logger: Logger;
    dataDir: string;
  }) {
    this.node = deps.node;
    this.log = deps.log;
    this.engine = deps.engine;
    this.db = deps.db;
    this.locks = deps.locks;
    this.logger = deps.logger.child({ component: "replica", node: deps.node });
    this.state = new ReplicaState(join(deps.dataDir, "replica.json"));
  }

  /** Called with every change of an index's active version here (the catalog's cache follows). */
  onActivated(fn: (indexId: string, version: VersionId) => void): void {
    this.onActive = fn;
  }

  /** Starts following the log; resolves once everything in it at start-up has been applied. */
  async start(): Promise<void> {
    this.started = true;
    const target = await this.log.lastSeq();
    this.logLast = target;
    const first = await this.log.firstSeq();
    if (first > this.state.position + 1 && target > 0) {
      // Truncated past this node's position: not supported yet (docs/replication.md, Catch-up).
      this.logger.error("the change log no longer holds entries this node has not applied", {
        position: this.state.position,
        first,
      });
    }
    this.follower = this.log.follow(this.state.position + 1, (applied) => this.deliver(applied));
    if (target > this.state.position) {
      this.logger.info("catching up with the change log", { from: this.state.position, to: target });
      await this.appliedThrough(target);
      this.logger.info("caught up", { position: this.state.position });
    }
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
    await Promise.all([...this.inFlight].map(() => this.waitChange()));
    await this.state.save();
  }

  // ---- the node's own writes ----

  /**
   * Appends an entry for an index whose write lock the caller holds, then runs `effect` (the
   * change on this node's engine) and records it as applied. Rejects with StaleAppendError when
   * this node has not applied the index's newest entry: the lock's caller catches up and retries.
   */
  async commit(
    op: LogOp & { index: string },
    effect: () => Promise<void>,
    options: { compareAndSet: boolean } = { compareAndSet: true },
  ): Promise<number> {
    const r = this.state.index(op.index);
    const entry = { ...op, node: this.node, at: Date.now() } as LogEntry;
    const seq = await this.append(entry, options.compareAndSet ? r.last : undefined);
    await effect();
    this.noteApplied(seq, entry);
    return seq;
  }

  /**
   * A log that does not confirm an append (a server down, a leader being elected) is a 503: the
   * write was not acknowledged. It may still have reached the log, in which case every node
   * applies it like any other entry; a client that retries writes the record again, harmlessly.
   */
  private async append(entry: LogEntry, expectedLast: number | undefined): Promise<number> {
    try {
      return await this.log.append(entry, expectedLast);
    } catch (error) {
      if (error instanceof StaleAppendError) throw error;
      this.logger.warn("the change log did not confirm an append", {
        index: entry.index,
        error: (error as Error).message,
      });
      throw new UnavailableError("the change log did not confirm this write in time; try again", {
        retryAfterSeconds: 1,
      });
    }
  }

  /** Appends an entry with no expectation (a bulk major: its id is unique already). */
  async publish(op: LogOp & { index: string }, effect: () => Promise<void>): Promise<number> {
    const entry = { ...op, node: this.node, at: Date.now() } as LogEntry;
    await effect();
    return this.append(entry, undefined);
  }

  /** Waits until this node has applied everything the log held when called. */
  async catchUp(): Promise<void> {
    const target = await this.log.lastSeq();
    this.logLast = Math.max(this.logLast, target);
    await this.appliedThrough(target);
  }

  // ---- reads ----

  active(indexId: string): VersionId | undefined {
    const r = this.state.indexes.get(indexId);
    if (r?.active === undefined || !this.state.has(indexId, r.active)) return undefined;
    return r.active;
  }

  /** The highest minor of `major` applied here (0: none). */
  maxMinor(indexId: string, major: number): number {
    return this.state.indexes.get(indexId)?.maxMinor[major] ?? 0;
  }

  has(indexId: string, version: VersionId): boolean {
    return this.state.has(indexId, version);
  }

  /**
   * Resolves once this node has applied the entry that made `version`; after `timeoutMs` rejects
   * with UnavailableError (503, Retry-After), so the client asks another region.
   */
  async waitFor(indexId: string, version: VersionId, timeoutMs: number): Promise<void> {
    if (this.has(indexId, version)) return;
    const until = Date.now() + timeoutMs;
    while (!this.has(indexId, version)) {
      const left = until - Date.now();
      if (left <= 0) {
        throw new UnavailableError(
          `this region has not applied version ${version} of the index yet; try again or ask another region`,
          { retryAfterSeconds: 1 },
        );
      }
      await this.waitChange(left);
    }
  }

  /** Whether this node has applied what the log held at the last look (readiness). */
  async caughtUp(): Promise<{ ready: boolean; behind: number }> {
    const last = await this.log.lastSeq().catch(() => this.logLast);
    this.logLast = Math.max(this.logLast, last);
    const behind = Math.max(0, this.logLast - this.state.position);
    return { ready: this.started && behind === 0, behind };
  }

  lag(): ReplicaLag[] {
    const behind = Math.max(0, this.logLast - this.state.position);
    return [...this.state.indexes].map(([index, r]) => ({
      index,
      behind,
      lagMs: Math.max(0, r.appliedAt - r.appendedAt),
    }));
  }

  ping(): Promise<boolean> {
    return this.log.ping();
  }

  // ---- applying the log ----

  private async deliver({ seq, entry }: AppliedEntry): Promise<void> {
    while (this.inFlight.size >= MAX_IN_FLIGHT) await this.waitChange();
    this.inFlight.add(seq);
    this.delivered.push(seq);
    this.logLast = Math.max(this.logLast, seq);
    void this.locks
      .run(entry.index, () => this.applyRemote(seq, entry))
      .catch((error: Error) => {
        // Left unapplied, the index would stop here: say so loudly. A restart tries again.
        this.logger.error("could not apply a change-log entry", {
          seq,
          index: entry.index,
          op: entry.op,
          error: error.message,
        });
      })
      .finally(() => {
        this.inFlight.delete(seq);
        this.advance();
      });
  }

  /** Counts finished deliveries into the position, in order. */
  private advance(): void {
    while (this.delivered.length && !this.inFlight.has(this.delivered[0]!)) {
      this.state.position = this.delivered.shift()!;
    }
    void this.state
      .save()
      .catch((error: Error) => this.logger.error("could not save the replica state", { error: error.message }));
    this.notify();
  }

  /** Applies an entry another node (or this one, before a restart) appended. */
  private async applyRemote(seq: number, entry: LogEntry): Promise<void> {
    const r = this.state.indexes.get(entry.index);
    if (r !== undefined && r.last >= seq) return; // applied already: this node's own write
    const engine = this.engine;
    switch (entry.op) {
      case "create":
        await engine.createIndex(entry.index);
        break;
      case "drop-index":
        await engine.dropIndex(entry.index);
        this.state.indexes.delete(entry.index);
        this.notify();
        return;
      case "change": {
        const { change } = entry;
        if (!(await this.engineHas(entry.index, change.version))) await engine.applyChange(entry.index, change);
        await this.recordChangeRow(entry, change.version);
        break;
      }
      case "bulk":
        if (!(await this.engineHas(entry.index, formatVersion(entry.major)))) {
          await engine.importMajor!(entry.index, { major: entry.major, parent: null, records: entry.records }, (dir) =>
            this.log.getFiles(entry.files, dir).then(() => undefined),
          );
        }
        break;
      case "checkpoint":
        if (!(await this.engineHas(entry.index, formatVersion(entry.major)))) {
          await engine.checkpoint(entry.index, entry.from, entry.major);
        }
        break;
      case "activate":
        await engine.activate(entry.index, entry.version);
        break;
      case "drop-version":
        await engine.dropVersion(entry.index, entry.version);
        break;
      case "purge":
        await engine.purge(entry.index, entry.id);
        break;
    }
    this.noteApplied(seq, entry);
  }

  private async engineHas(indexId: string, version: VersionId): Promise<boolean> {
    return (await this.engine.versions(indexId)).some((v) => v.version === version);
  }

  /** A change's row in the shared store, in case its writer died before it recorded it. */
  private async recordChangeRow(entry: LogEntry & { op: "change" }, version: VersionId): Promise<void> {
    const { change } = entry;
    await this.db
      .insert(versions)
      .values({
        indexId: entry.index,
        version,
        major: majorOf(version),
        minor: minorOf(version),
        parent: change.parent,
        kind: change.purge ? "purge" : "change",
        state: "ready",
        records: await this.engine.count(entry.index, version),
        createdAt: entry.at,
        purgedRecordId: change.purge?.recordId ?? null,
        purgedBy: change.purge?.by ?? null,
      })
      .onConflictDoNothing();
  }

  /** Updates what this node knows after applying `entry` at `seq`, here and in the shared store. */
  private noteApplied(seq: number, entry: LogEntry): void {
    if (entry.op === "drop-index") return;
    const r = this.state.index(entry.index);
    r.last = Math.max(r.last, seq);
    r.appendedAt = entry.at;
    r.appliedAt = Date.now();
    let activated: VersionId | undefined;
    switch (entry.op) {
      case "create":
        r.active ??= "0";
        break;
      case "change":
        this.state.noteVersion(entry.index, entry.change.version);
        if (entry.change.activate) activated = entry.change.version;
        break;
      case "bulk":
        this.state.noteVersion(entry.index, formatVersion(entry.major));
        break;
      case "checkpoint":
        this.state.noteVersion(entry.index, formatVersion(entry.major));
        break;
      case "activate":
        activated = entry.version;
        break;
    }
    if (activated !== undefined) {
      r.active = activated;
      this.onActive(entry.index, activated);
      // Guarded by position: a node that lags never sets the shared active version back.
      void this.db
        .update(indexes)
        .set({ activeVersion: activated, logSeq: seq })
        .where(and(eq(indexes.id, entry.index), lt(indexes.logSeq, seq)))
        .catch((error: Error) =>
          this.logger.warn("could not record the active version in the store", {
            index: entry.index,
            error: error.message,
          }),
        );
    }
    void this.state
      .save()
      .catch((error: Error) => this.logger.error("could not save the replica state", { error: error.message }));
    this.notify();
  }

  private notify(): void {
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves at the next applied entry (or after `timeoutMs`). */
  private waitChange(timeoutMs = 1_000): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.add(done);
    });
  }

  private async appliedThrough(target: number): Promise<void> {
    while (this.state.position < target) await this.waitChange();
  }
}
