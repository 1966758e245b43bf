// One node's replica (docs/replication.md): follows the change log from where it left off and
// applies every entry to its own engine, in order per index, idempotently. Its own writes go
// through `commit`: appended, then awaited until this node has applied them from the log like
// any other entry, so the node that acknowledges a write serves it at once and every node decides
// in the same place, in log order, whether the entry still fits.
import { join } from "node:path";
import { indexDeletedMidway, UnavailableError } from "../domain/errors.ts";
import { formatVersion, minorOf, type VersionId } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import {
  type AppliedEntry,
  type ChangeLog,
  type LogEntry,
  type LogOp,
  NotAppendedError,
  StaleAppendError,
} from "../ports/change-log.ts";
import type { SearchEngine } from "../ports/engine.ts";
import { IndexLocks } from "../services/versions/lock.ts";
import type { Db } from "../store/open.ts";
import { ReplicaState } from "./replica-state.ts";
import { type SnapshotManifest, type SnapshotPointer, Snapshots } from "./snapshots.ts";
import { PurgeErasure } from "./erasure.ts";
import type { Placement } from "./placement.ts";
import { LogHistory } from "./history.ts";
import { StoreBackfill } from "./store-backfill.ts";
import { EntryEffects } from "./entry-effects.ts";
import { SetAside } from "./set-aside.ts";
import { HeldElsewhere } from "./elsewhere.ts";
import type { ReplicaHost, Verdict } from "./replica-host.ts";

/** Entries being applied at once across indexes (one at a time per index). */
const MAX_IN_FLIGHT = 256;

/** How long a writer waits for this node to apply its own entry (a checkpoint build included). */
const VERDICT_WAIT_MS = 120_000;

/**
 * The same for an entry a client waits for (a record write, an activation asked over HTTP): past
 * this its entry is still in the log and will be applied, but the request answers 503 (not
 * acknowledged), as one the log did not confirm does. With 120 s, writes to a node whose consumer
 * could not be made again while a NATS server restarted waited until the client gave up (seen in
 * the kill -9 test, D-318); an activation did the same (D-320).
 */
const CLIENT_WAIT_MS = 15_000;

/**
 * A read with minVersion that this node has not applied by then asks the log how far the index
 * goes (most are answered sooner, without asking).
 */
const ASK_LOG_AFTER_MS = 250;

/**
 * A node that has not applied an entry older than this is catching up, not ready. Under writes it
 * is always an entry or two behind the log for a moment: that is following it, and ready.
 */
const READY_LAG_MS = 1_000;

/**
 * How long a record write or a purge is sent again while the log turns it away unstored (its
 * stream's leader being elected: about 6 s seen after a server was killed, D-372).
 */
const NOT_APPENDED_RETRY_MS = 10_000;

/** A record change or a group of them: appending it twice makes two versions. */
const isRecordWrite = (op: { op: string }) => op.op === "change" || op.op === "changes";

export class Replica {
  readonly node: string;
  private readonly log: ChangeLog;
  /** The node's own engine (not the replicating wrapper). */
  private readonly engine: SearchEngine;
  private readonly backfill: StoreBackfill;
  private readonly snapshots: Snapshots;
  /** Keeps each index's history in the log rebuildable (history.ts). */
  private readonly history: LogHistory;
  /** Removes purged records' copies from the log and the object store (erasure.ts). */
  private readonly erasure: PurgeErasure;
  /** Whether an entry fits, and what it does to the engine and the store (entry-effects.ts). */
  private readonly effects: EntryEffects;
  private reporter: ReturnType<typeof setInterval> | undefined;
  private readonly logger: Logger;
  readonly state: ReplicaState;
  private follower: { stop(): Promise<void> } | undefined;
  private readonly inFlight = new Set<number>();
  /** Delivered positions, in order, not yet counted into state.position. */
  private readonly delivered: number[] = [];
  private readonly waiters = new Set<() => void>();
  private onActive: (indexId: string, version: VersionId) => void = () => {};
  /** Entries of one index are applied one after the other, indexes side by side. */
  private readonly chains = new IndexLocks();
  /** Outcomes of this node's own entries, until their writers collect them (see keepVerdict). */
  private readonly verdicts = new Map<number, Verdict>();
  private stopping = false;
  /** The newest position known in the log, refreshed by readiness checks and catch-up. */
  private logLast = 0;
  /** Set once the node follows the log: before that it serves what it holds, and is not ready. */
  private following = false;
  /** How long an entry a client waits for waits for this node (and for the index's lock, D-346). */
  readonly clientWaitMs: number;
  /** Indexes set aside on this node (set-aside.ts, D-376). */
  private readonly aside: SetAside;
  private readonly notAppendedRetryMs: number;
  /** Set once the node has applied what the log held when it started (start()). */
  private startedUp = false;
  private readonly placement: Placement | undefined;
  /** With placement: indexes held in other regions, passed over here and taken up again (elsewhere.ts). */
  private readonly elsewhere: HeldElsewhere | undefined;

  constructor(deps: {
    node: string;
    log: ChangeLog;
    engine: SearchEngine;
    db: Db;
    logger: Logger;
    dataDir: string;
    /**
     * Snapshot an index's log after this many entries, or once its oldest entry no snapshot holds
     * is `afterMs` old (history.ts, SNAPSHOT_AFTER_MS); a node silent for `goneAfterMs` counts as gone.
     */
    snapshots?: { every: number; goneAfterMs: number; afterMs?: number };
    /** How often applied versions are recorded in the store (100 ms; tests lengthen it). */
    storeEveryMs?: number;
    /** How long an entry a client waits for waits for this node to apply it (CLIENT_WAIT_MS). */
    clientWaitMs?: number;
    /** How often the log is checked for lost entries of the indexes held here (history.ts, HISTORY_CHECK_MS). */
    historyCheckMs?: number;
    /** How long a record write the log turns away unstored is sent again (NOT_APPENDED_RETRY_MS). */
    notAppendedRetryMs?: number;
    /** How long an entry may fail before its index is set aside here (set-aside.ts). */
    setAsideAfterMs?: number;
    /** Which indexes this node holds (D-385); without it, every one. */
    placement?: Placement;
  }) {
    this.placement = deps.placement;
    this.notAppendedRetryMs = deps.notAppendedRetryMs ?? NOT_APPENDED_RETRY_MS;
    this.clientWaitMs = deps.clientWaitMs ?? CLIENT_WAIT_MS;
    this.node = deps.node;
    this.log = deps.log;
    this.engine = deps.engine;
    this.logger = deps.logger.child({ component: "replica", node: deps.node });
    this.backfill = new StoreBackfill(deps.db, this.logger, deps.storeEveryMs);
    this.state = new ReplicaState(join(deps.dataDir, "replica.json"), async () => {
      await deps.engine.sync?.();
    });
    this.snapshots = new Snapshots({
      log: deps.log,
      engine: deps.engine,
      logger: this.logger,
      node: deps.node,
      every: deps.snapshots?.every ?? 10_000,
      goneAfterMs: deps.snapshots?.goneAfterMs ?? 15 * 60_000,
    });
    // What every part of the replica below is given of it (replica-host.ts).
    const host: ReplicaHost = {
      node: deps.node,
      state: this.state,
      snapshots: this.snapshots,
      logger: this.logger,
      stopping: () => this.stopping,
    };
    this.history = new LogHistory(
      {
        ...host,
        log: deps.log,
        chains: this.chains,
        following: () => this.following,
        startedUp: () => this.startedUp,
        isAside: (index) => this.aside.has(index),
        snapshotNow: (index) => this.snapshotNow(index),
        restoreIndex: (index, pointer) => this.restoreIndex(index, pointer),
      },
      { checkEveryMs: deps.historyCheckMs, snapshotAfterMs: deps.snapshots?.afterMs },
    );
    this.effects = new EntryEffects({
      engine: deps.engine,
      state: this.state,
      log: deps.log,
      backfill: this.backfill,
      logger: this.logger,
      anchor: (entry) => this.takeAnchor(entry),
    });
    this.aside = new SetAside(
      {
        ...host,
        log: deps.log,
        history: this.history,
        chains: this.chains,
        saveSoon: () => this.saveSoon(),
        keepVerdict: (seq, verdict) => this.keepVerdict(seq, verdict),
        restoreIndex: (index, pointer) => this.restoreIndex(index, pointer),
        apply: (seq, entry) => this.apply(seq, entry),
      },
      deps.setAsideAfterMs,
    );
    this.elsewhere =
      deps.placement === undefined
        ? undefined
        : new HeldElsewhere(
            {
              ...host,
              engine: deps.engine,
              backfill: this.backfill,
              history: this.history,
              chains: this.chains,
              startedUp: () => this.startedUp,
              isAside: (index) => this.aside.has(index),
              keepVerdict: (seq, verdict) => this.keepVerdict(seq, verdict),
              fillIn: (index, before, needs) => this.fillIn(index, before, needs),
            },
            deps.placement,
          );
    this.erasure = new PurgeErasure({
      ...host,
      snapshotNow: (index) => this.snapshotNow(index),
      saveSoon: () => this.saveSoon(),
    });
  }

  /** Called with every change of an index's active version here (the catalog's cache follows). */
  onActivated(fn: (indexId: string, version: VersionId) => void): void {
    this.onActive = fn;
  }

  /** Starts following the log; resolves once everything in it at start-up has been applied. */
  async start(): Promise<void> {
    // Said before anything is read: from now on no entry this node has not applied is removed.
    // Unless the log's home was out of reach as the log opened: nothing is removed there
    // meanwhile, and the report would hold the start up for its whole timeout (D-337).
    const reported = this.report();
    if (!(await this.log.homeAway?.().catch(() => false))) await reported;
    this.reporter = setInterval(() => void this.report(), this.snapshots.reportEveryMs);
    let target = 0;
    for (let attempt = 1; ; attempt++) {
      let restoring = false;
      try {
        target = await this.endOfLog();
        this.logLast = target;
        const pointers = await this.snapshots.pointers();
        restoring = true;
        await this.restoreTruncated(pointers);
        break;
      } catch (error) {
        // The log's home out of reach: the region's mirror still holds what this node missed,
        // unless a truncation passed it. That shows per index, where the first entry left builds
        // on one this node never applied: that index waits for its snapshot (restoreMissed), in
        // the home's object store, and the others go on (D-279). (A restore that failed midway
        // is tried again instead: it may have left an index half done.)
        const nearby = restoring ? undefined : await this.nearbyEnd();
        if (nearby !== undefined) {
          target = nearby;
          this.logLast = Math.max(this.logLast, nearby);
          this.logger.warn("the change log's home is out of reach; following what this region holds", {
            from: this.state.position,
            to: nearby,
            error: (error as Error).message,
          });
          break;
        }
        // Not ready until it succeeds: following the log without the snapshot would skip entries.
        // Meanwhile the node serves what it holds (the log's cluster may be out of reach).
        this.logger.error("could not read the log's end or restore from a snapshot; trying again", {
          attempt,
          error: (error as Error).message,
        });
        if (this.stopping) return;
        await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** attempt)));
      }
    }
    if (this.stopping) return;
    this.following = true;
    // Purges whose copies this node had not removed yet when it stopped.
    this.erasure.resume();
    this.follower = this.log.follow(this.state.position + 1, (applied) => this.deliver(applied));
    this.history.start();
    this.log.onNotice?.((notice) => {
      if (notice.kind === "index-lacking" && notice.node !== this.node)
        this.history.lookAtLacking(notice.indexId, notice.gap);
    });
    if (target > this.state.position) {
      this.logger.info("catching up with the change log", { from: this.state.position, to: target });
      await this.appliedThrough(target);
      this.logger.info("caught up", { position: this.state.position });
    }
    this.startedUp = true;
    void this.elsewhere?.started();
  }

  /** Tells the others how far this node has applied, as far as its data directory says (see savedPosition). */
  private async report(): Promise<void> {
    try {
      await this.snapshots.report(this.state.savedPosition);
    } catch (error) {
      this.logger.warn("could not report this node's position", { error: (error as Error).message });
    }
  }

  /** The end of what this node's region holds of the log (its mirror); undefined without one, or when it does not answer. */
  private async nearbyEnd(): Promise<number | undefined> {
    if (!this.log.lastSeqNearby) return undefined;
    // biome-ignore lint/plugin: the caller logs the log's own failure and tries again.
    return this.log.lastSeqNearby().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reporter);
    this.history.stop();
    this.erasure.stop();
    await this.follower?.stop();
    // Entries still being applied end soon (a failing one stops retrying once `stopping` is set).
    const until = Date.now() + 5_000;
    while (this.inFlight.size && Date.now() < until) await this.waitChange(until - Date.now());
    await this.state.save();
    await this.backfill.flush();
  }

  // ---- the node's own writes ----

  /**
   * Appends an entry and waits until this node has applied it in log order, which is where it is
   * decided whether it counts (accepts()). The log server's compare-and-set (`compareAndSet`,
   * the default) turns most stale writes away early, but is not relied on: NATS 2.9 clustered
   * streams let concurrent appends through it (nats-server issue 4320, seen here). Rejects with
   * StaleAppendError when the entry no longer fits: the caller catches up and tries again
   * (services/versions/lock.ts). Resolves with what applying it returned (a purge's result).
   * `clientWaits`: a client waits for the answer (a record write, an activation asked over HTTP),
   * so this node's wait for its entry is bounded (CLIENT_WAIT_MS).
   */
  async commit(
    op: LogOp & { index: string },
    options: { compareAndSet?: boolean; clientWaits?: boolean } = {},
  ): Promise<unknown> {
    // Its drop applied here (a deletion that raced this request): nothing can build on it any
    // more, and appending "after 0" would be stale for ever (seen: 20 retries, then a 503).
    if (this.isDropped(op.index) && op.op !== "drop-index") throw indexDeletedMidway();
    const known = this.state.indexes.get(op.index)?.last ?? 0;
    const expect = (options.compareAndSet ?? true) ? known : undefined;
    // Named with or without a compare-and-set: a bulk entry builds on nothing, but a node that
    // missed entries before it would otherwise lose them without noticing.
    const entry = { ...op, node: this.node, at: Date.now(), ...(known ? { after: known } : {}) } as LogEntry;
    const seq = await this.append(entry, expect);
    const verdict = await this.verdictOf(seq, options.clientWaits ? this.clientWaitMs : VERDICT_WAIT_MS);
    if (verdict.error) throw verdict.error;
    if (!verdict.accepted) throw new StaleAppendError(`another entry for index ${op.index} was accepted first`);
    return verdict.result;
  }

  /**
   * A log that does not confirm an append (a server down, a leader being elected) is a 503: the
   * write was not acknowledged. It may still have reached the log, in which case every node
   * applies it like any other entry; a client that retries writes the record again, harmlessly.
   */
  private async append(entry: LogEntry, expectedLast: number | undefined): Promise<number> {
    // Entries that applying twice leaves as applying once (a bulk major, an activation, a
    // checkpoint, a drop) are appended again for up to 20 s while the cluster elects new leaders
    // (NATS answers "jetstream is not enabled" meanwhile, seen for several seconds after a server
    // was killed); a record change appended twice would be two versions, so its writer is told,
    // unless the log said it did not store it: then it is sent again for up to 10 s (D-372).
    const once = isRecordWrite(entry) || entry.op === "purge";
    const started = Date.now();
    const until = started + 20_000;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.log.append(entry, expectedLast);
      } catch (error) {
        if (once && error instanceof NotAppendedError && Date.now() - started < this.notAppendedRetryMs) {
          if (attempt === 1) {
            this.logger.warn("the change log has no leader at this moment; sending the write again", {
              index: entry.index,
              op: entry.op,
            });
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(500, 50 * 2 ** attempt)));
          continue;
        }
        if (once && error instanceof NotAppendedError) {
          throw new UnavailableError(
            "the change log has had no leader for a while; this write was not made, try again",
            {
              retryAfterSeconds: 1,
            },
          );
        }
        if (error instanceof StaleAppendError && expectedLast) await this.history.lostNewest(entry.index, expectedLast);
        if (error instanceof StaleAppendError) throw error;
        this.logger.warn("the change log did not confirm an append", {
          index: entry.index,
          op: entry.op,
          attempt,
          error: (error as Error).message,
        });
        if (once || Date.now() > until) {
          throw new UnavailableError("the change log did not confirm this write in time; try again", {
            retryAfterSeconds: 1,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 250 * 2 ** attempt)));
      }
    }
  }

  /**
   * An append whose confirmation was lost (a 503 to its writer) may still be applied: its
   * verdict is never collected, so only the newest ones are kept.
   */
  private keepVerdict(seq: number, verdict: Verdict): void {
    this.verdicts.set(seq, verdict);
    if (this.verdicts.size > 10_000) this.verdicts.delete(this.verdicts.keys().next().value!);
  }

  /** Waits for the outcome of applying this node's own entry at `seq`. */
  private async verdictOf(seq: number, waitMs: number): Promise<Verdict> {
    const until = Date.now() + waitMs;
    for (;;) {
      const verdict = this.verdicts.get(seq);
      if (verdict !== undefined) {
        this.verdicts.delete(seq);
        return verdict;
      }
      if (Date.now() > until) {
        throw new UnavailableError(
          "this node has not applied the change yet; it is in the change log and will be applied everywhere, so read it back in a moment before repeating it",
          { retryAfterSeconds: 1 },
        );
      }
      await this.waitChange(until - Date.now());
    }
  }

  /**
   * Waits until this node has applied everything the log held when called: a stale write's
   * catch-up before it runs again. A log that does not say how far it goes (a server gone, a
   * leader being elected) is a 503 for the write, as an append the log did not confirm is; it was
   * a 500 (a NATS timeout, seen in the kill -9 test). `clientWaits`: a client waits (a record
   * write, an activation asked over HTTP), so it waits no longer than for its own entry, then a
   * 503 (D-318, D-320); others (an upload's activation, a checkpoint) wait until this node has
   * applied that far.
   */
  async catchUp(options: { clientWaits?: boolean } = {}): Promise<void> {
    const until = options.clientWaits ? Date.now() + this.clientWaitMs : Number.POSITIVE_INFINITY;
    const target = await this.endOfLog().catch((error: Error) => {
      this.logger.warn("the change log did not say how far it goes", { error: error.message });
      throw new UnavailableError("the change log did not answer in time; try again", { retryAfterSeconds: 1 });
    });
    this.logLast = Math.max(this.logLast, target);
    await this.appliedThrough(target, until);
  }

  // ---- reads ----

  active(indexId: string): VersionId | undefined {
    const r = this.state.indexes.get(indexId);
    if (r === undefined) {
      if (this.elsewhere === undefined) this.history.lacking(indexId);
      else this.elsewhere.lacks(indexId);
    }
    if (r?.asideThrough !== undefined) {
      // What it holds is behind the log: not served, and brought back as soon as it can be.
      this.aside.asked(indexId);
      return undefined;
    }
    if (r?.active === undefined || !this.state.has(indexId, r.active)) return undefined;
    return r.active;
  }

  /** The highest minor of `major` applied here (0: none). */
  maxMinor(indexId: string, major: number): number {
    return this.state.indexes.get(indexId)?.maxMinor[major] ?? 0;
  }

  /** The active version here and the position of the index's newest entry processed here. */
  liveAt(indexId: string): { version: VersionId; seq: number } | undefined {
    const version = this.active(indexId);
    return version === undefined ? undefined : { version, seq: this.appliedSeq(indexId) };
  }

  /** Log position of the newest entry of the index processed here (0: none). */
  appliedSeq(indexId: string): number {
    return this.state.indexes.get(indexId)?.last ?? 0;
  }

  /** Whether the index is set aside on this node: it answers 503 for it until it is brought back. */
  isAside(indexId: string): boolean {
    return this.aside.has(indexId);
  }

  /** The newest entry the log holds for the index, processed here or not (null: none). */
  logTail(indexId: string): Promise<{ seq: number; at: number } | null> {
    return this.log.lastEntryOf(indexId);
  }

  /** The nodes that reported their position within the node-gone time; the others are gone. */
  liveNodes(): Promise<string[]> {
    return this.snapshots.liveNodes();
  }

  /** Whether this node has applied the index's drop. */
  isDropped(indexId: string): boolean {
    return this.state.dropped.has(indexId);
  }

  newest(indexId: string): VersionId | undefined {
    return this.state.indexes.get(indexId)?.newest;
  }

  has(indexId: string, version: VersionId): boolean {
    return this.state.has(indexId, version);
  }

  /** Resolves once the rows of what this node applied of the index are in the shared store. */
  storeSettled(indexId: string): Promise<void> {
    return this.backfill.settled(indexId);
  }

  /**
   * Resolves once this node has applied the entry that made `version`; after `timeoutMs` rejects
   * with UnavailableError (503, Retry-After), so the client asks another region.
   */
  async waitFor(indexId: string, version: VersionId, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    // A read with minVersion of a set-aside index waits for its bringing back, not for the log.
    this.aside.asked(indexId);
    const held = () => this.has(indexId, version);
    const applied = (target: number) => (this.state.indexes.get(indexId)?.last ?? 0) >= target;
    // Deleted (perhaps through another region) after the caller looked it up, or while it waits.
    const gone = () => this.isDropped(indexId);
    if (!(await this.reached(() => held() || gone(), Math.min(until, Date.now() + ASK_LOG_AFTER_MS)))) {
      // Everything the log holds for the index now includes every write acknowledged so far. A
      // node that has applied all of it and still lacks `version` holds every acknowledged write:
      // the version was never acknowledged (a mistyped id, another index's), and the read is
      // answered as one process answers it, not with 503 after 2 s in every region. A log out of
      // reach says nothing: the version is waited for.
      const target = await this.log.lastSeqOf(indexId).catch(() => Number.POSITIVE_INFINITY);
      if (!(await this.reached(() => held() || applied(target) || gone(), until))) throw notApplied(version);
      if (!held() && !gone()) return;
    }
    if (gone()) throw indexDeletedMidway();
    // A record change was live from the moment it was applied (its entry activates it): held is
    // enough, and the log need not be asked, a request per read to every NATS server at load.
    if (this.active(indexId) === version || minorOf(version) > 0) return;
    // A major held but not live here: either a newer version superseded it, or the entry that
    // makes it live (an upload's activation follows its major) is still on its way. Whatever the
    // log holds for the index now is what the writer saw when it was answered.
    const target = await this.log.lastSeqOf(indexId).catch(() => 0);
    if (!(await this.reached(() => applied(target), until))) throw notApplied(version);
  }

  /** Whether `done` came true by `until`, looked at again as this node applies entries. */
  private async reached(done: () => boolean, until: number): Promise<boolean> {
    while (!done()) {
      const left = until - Date.now();
      if (left <= 0) return false;
      await this.waitChange(left);
    }
    return true;
  }

  /**
   * Whether this node has applied what the log held at the last look (`ready`), and whether it
   * follows the log closely enough to serve (`keepingUp`: nothing it has not applied is older
   * than READY_LAG_MS).
   */
  async caughtUp(): Promise<{ ready: boolean; keepingUp: boolean; behind: number }> {
    // Not following yet (the log out of reach, or a snapshot being restored): not ready, and not
    // worth a question to a log that may take its timeout to answer.
    if (!this.following)
      return { ready: false, keepingUp: false, behind: Math.max(0, this.logLast - this.state.position) };
    const last = await this.log.lastSeq().catch(() => this.logLast);
    this.logLast = Math.max(this.logLast, last);
    const behind = Math.max(0, this.logLast - this.state.position);
    if (behind === 0) return { ready: true, keepingUp: true, behind };
    // An entry whose time cannot be read (undefined) leaves the node not keeping up.
    const oldest = await this.log.entryTimeFrom(this.state.position + 1).then(
      (at) => at ?? null,
      () => undefined,
    );
    // No entry after this node's position: the log's newest were removed (D-369), nothing to apply.
    if (oldest === null) return { ready: true, keepingUp: true, behind: 0 };
    return { ready: false, keepingUp: oldest !== undefined && Date.now() - oldest < READY_LAG_MS, behind };
  }

  /**
   * How far this node trails the log, for /readyz and /v1/regions; `keepingUp` decides readiness
   * (a load balancer would otherwise drop the node whenever a write is on its way to it).
   */
  async status(): Promise<{ caughtUp: boolean; keepingUp: boolean; behind: number; lagMs: number }> {
    // A log that does not answer: what this node holds may be behind by any amount.
    const [{ ready: applied, keepingUp, behind }, answers] = await Promise.all([this.caughtUp(), this.log.ping()]);
    const ready = applied && answers;
    let newest = 0;
    for (const r of this.state.indexes.values()) newest = Math.max(newest, r.appendedAt);
    return {
      caughtUp: ready,
      keepingUp: keepingUp && answers,
      behind,
      lagMs: ready || newest === 0 ? 0 : Math.max(0, Date.now() - newest),
    };
  }

  // ---- applying the log ----

  private async deliver({ seq, entry }: AppliedEntry): Promise<void> {
    while (this.inFlight.size >= MAX_IN_FLIGHT) await this.waitChange();
    this.inFlight.add(seq);
    this.delivered.push(seq);
    this.logLast = Math.max(this.logLast, seq);
    void this.chains
      .run(entry.index, () => this.applyUntilDone(seq, entry))
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
    this.saveSoon();
    this.notify();
  }

  /** Saves replica.json in the background: a failure is logged, and the next save tries again. */
  private saveSoon(): void {
    void this.state
      .save()
      .catch((error: Error) => this.logger.error("could not save the replica state", { error: error.message }));
  }

  /**
   * An entry that cannot be applied (the disk full, say) holds up its index on this node: the
   * entries after it build on it. It is tried again until it applies, loudly; its writer, if it
   * is this node's, is told at the first failure.
   */
  private async applyUntilDone(seq: number, entry: LogEntry): Promise<void> {
    if (entry.op !== "drop-index" && this.elsewhere !== undefined && !(await this.elsewhere.holds(entry.index))) {
      return this.elsewhere.pass(seq, entry);
    }
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      if (this.aside.has(entry.index) && entry.op !== "drop-index") {
        if (!(await this.aside.bringBack(entry.index))) return this.aside.pass(seq, entry);
      }
      try {
        await this.apply(seq, entry);
        return;
      } catch (error) {
        this.logger.error("could not apply a change-log entry; trying again", {
          seq,
          index: entry.index,
          op: entry.op,
          attempt,
          error: (error as Error).message,
        });
        if (entry.node === this.node && attempt === 1) this.keepVerdict(seq, { accepted: true, error: error as Error });
        this.notify();
        if (this.stopping) return;
        if (entry.op !== "drop-index" && Date.now() - started >= this.aside.afterMs) {
          this.aside.begin(seq, entry, error as Error);
          return;
        }
        const untilAside = started + this.aside.afterMs - Date.now();
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(50, Math.min(30_000, 250 * 2 ** attempt, untilAside))),
        );
      }
    }
  }

  /**
   * Brings this node's copy of the index to its entries before `before`, at least to `needs` (the
   * entry the next one builds on): from the log while it holds the entries after what this node
   * applied (passed over while other regions held the index, D-390), and where it no longer holds
   * them, from the newest snapshot and then the log from there (`snapshot`: its position). Not
   * `held` when neither holds `needs`. `snapshotFirst`: a snapshot that holds `needs` is restored
   * without asking the log (which, while the log's home is out of reach, may not answer: the
   * region's mirror serves the entries and its copies the snapshot, D-279). Holds the index's chain.
   */
  private async fillIn(
    index: string,
    before: number,
    needs: number,
    options: { snapshotFirst?: boolean } = {},
  ): Promise<{ held: boolean; snapshot?: number }> {
    const last = () => this.state.indexes.get(index)?.last ?? 0;
    if (options.snapshotFirst && needs > last()) {
      const pointer = await this.snapshots.pointer(index, { nearby: true });
      if (pointer !== null && pointer.seq >= needs) {
        return { held: true, snapshot: (await this.restoreIndex(index, pointer)).seq };
      }
    }
    const nextEntry = async (from: number) => {
      const found = await this.log.firstEntryOf(index, from);
      return found !== null && found.seq < before ? found : null;
    };
    let next = await nextEntry(last() + 1);
    let snapshot: number | undefined;
    // What the log does not hold after the last entry applied here: a snapshot must.
    const lacking = next === null ? needs : (next.entry.after ?? 0);
    if (lacking > last()) {
      // While the log's home is out of reach this node follows its region's mirror, and the
      // region's copy of the pointer will do.
      const pointer = await this.snapshots.pointer(index, { nearby: true });
      if (pointer === null || pointer.seq < lacking) return { held: false };
      snapshot = (await this.restoreIndex(index, pointer)).seq;
      next = await nextEntry(pointer.seq + 1);
    }
    for (; next !== null; next = await nextEntry(next.seq + 1)) await this.apply(next.seq, next.entry);
    return { held: last() >= needs, ...(snapshot === undefined ? {} : { snapshot }) };
  }

  /** Applies one entry of the log, in order within its index, the same way on every node. */
  private async apply(seq: number, entry: LogEntry): Promise<void> {
    const missed = entry.after !== undefined && entry.after > (this.state.indexes.get(entry.index)?.last ?? 0);
    // A drop needs nothing that came before it.
    if (missed && entry.op !== "drop-index" && !this.state.dropped.has(entry.index)) {
      await this.restoreMissed(seq, entry);
    }
    const r = this.state.indexes.get(entry.index);
    if (r !== undefined && r.last >= seq) return; // applied before a restart, or in the snapshot
    // The same decision on every node: each has applied the same entries of the index before it.
    const accepted = await this.effects.accepts(entry);
    if (!accepted) {
      // Seen all the same: the log server's compare-and-set counts every entry of the subject.
      if (r !== undefined) r.last = seq;
      this.logger.info("skipped an entry another one overtook", { seq, index: entry.index, op: entry.op });
      if (entry.node === this.node) this.keepVerdict(seq, { accepted: false });
      this.countTowardsSnapshot(entry);
      return;
    }
    const result = await this.effects.apply(entry);
    this.noteApplied(seq, entry);
    if (entry.op === "checkpoint") {
      const records = entry.records ?? (result as { records?: number } | undefined)?.records;
      if (records !== undefined) this.backfill.checkpointApplied(entry.index, formatVersion(entry.major), records);
    }
    // Before its writer is answered: on a quiet index the rows are in the store within milliseconds.
    this.backfill.applied();
    if (entry.node === this.node) this.keepVerdict(seq, { accepted: true, result });
    this.countTowardsSnapshot(entry);
    if (entry.op === "purge" && entry.node === this.node) {
      this.erasure.erase(entry.index);
    } else if (entry.op === "purge") {
      const watched = this.state.watching.get(entry.index);
      if (watched === undefined || watched.seq < seq) this.state.watching.set(entry.index, { seq, writer: entry.node });
      this.erasure.watch(entry.index);
    }
    if (entry.op === "drop-index" && entry.node === this.node) {
      void this.snapshots
        .clearDropped(entry.index, seq, () => this.stopping)
        .catch((error: Error) =>
          this.logger.warn("could not clear a dropped index from the log and object store", {
            index: entry.index,
            error: error.message,
          }),
        );
    }
  }

  /**
   * The entry builds on entries of its index this node never applied: they were removed from the
   * log before it got to them (it could not report its position for SIFT_REPLICATION_NODE_GONE_MS
   * while it went on applying, say). Applying on would lose them silently; the index is restored
   * from its newest snapshot instead, as at start-up, and the log goes on from there. The caller
   * holds the index's chain.
   */
  private async restoreMissed(seq: number, entry: LogEntry): Promise<void> {
    const applied = this.state.indexes.get(entry.index)?.last ?? 0;
    const filled = await this.fillIn(entry.index, seq, entry.after ?? 0, { snapshotFirst: true });
    if (!filled.held) {
      // The nodes that hold the index repair it, if the log lost those entries (D-369, D-374).
      this.history.lacking(entry.index, { applied, needs: entry.after ?? 0 });
      // Retried by applyUntilDone, loudly: a snapshot that covers them may still be on its way.
      throw new Error(
        `entry ${seq} of index ${entry.index} builds on entry ${entry.after}, which this node never applied and no snapshot holds`,
      );
    }
    this.logger.warn(
      filled.snapshot === undefined
        ? "applied entries of an index from the log that this node had passed over"
        : "restored an index from its snapshot: entries of it were removed from the log before this node applied them",
      {
        index: entry.index,
        applied,
        ...(filled.snapshot === undefined ? {} : { snapshot: filled.snapshot }),
        entry: seq,
      },
    );
  }

  /** Replaces this node's copy of an index with a snapshot, and its record of it. Holds its chain. */
  private async restoreIndex(index: string, pointer: SnapshotPointer): Promise<SnapshotManifest> {
    const manifest = await this.snapshots.restore(index, pointer);
    this.state.indexes.set(index, structuredClone(manifest.replica));
    if (manifest.replica.active !== undefined) this.onActive(index, manifest.replica.active);
    return manifest;
  }

  /**
   * Every node counts an index's entries the same way; the node whose own entry reaches the mark
   * writes the snapshot (once, not once per node) and truncates the log behind it.
   */
  private countTowardsSnapshot(entry: LogEntry): void {
    const r = this.state.indexes.get(entry.index);
    if (r === undefined) return;
    r.sinceSnapshot = (r.sinceSnapshot ?? 0) + 1;
    if (r.sinceSnapshot < this.snapshots.every) return;
    r.sinceSnapshot = 0;
    if (entry.node !== this.node) return;
    void this.snapshotNow(entry.index).catch((error: Error) =>
      this.logger.warn("could not snapshot an index; its log stays as it is", {
        index: entry.index,
        error: error.message,
      }),
    );
  }

  /**
   * Snapshots the index and truncates its log behind it. Queued behind the entries of the index
   * already delivered: the snapshot sees them all, and none after. Undefined when the index is
   * gone or the node is stopping.
   */
  private async snapshotNow(index: string): Promise<SnapshotManifest | undefined> {
    // Only the reading holds the index's later entries: publishing a checkpoint's files took over
    // 2 s on a busy machine, and a read with minVersion here waited for it (and answered 503).
    const captured = await this.chains.run(index, async () => {
      const current = this.state.indexes.get(index);
      // A set-aside copy is behind the log: never published as the index.
      if (current === undefined || current.asideThrough !== undefined || this.stopping) return undefined;
      return this.snapshots.capture(index, current);
    });
    if (captured === undefined) return undefined;
    const snapshot = await this.snapshots.publish(captured);
    // Dropped meanwhile: pointing to it now would bring back what the drop's clean-up removed.
    if (this.state.dropped.has(index)) {
      await this.snapshots.discard(snapshot, "of an index dropped while it was written");
      return undefined;
    }
    await this.snapshots.truncate(index, snapshot);
    return snapshot;
  }

  /**
   * At start-up: an index whose entries were removed from the log past this node's position (it
   * was down longer than SIFT_REPLICATION_NODE_GONE_MS, or is new) is restored from its newest
   * snapshot; the log then replays what came after it.
   */
  private async restoreTruncated(pointers: Map<string, SnapshotPointer>): Promise<void> {
    for (const [index, pointer] of pointers) {
      if (this.state.dropped.has(index)) continue;
      if (this.placement !== undefined && !(await this.placement.holds(index))) continue;
      const last = this.state.indexes.get(index)?.last ?? 0;
      if (last + 1 >= pointer.truncatedBefore) continue;
      await this.chains.run(index, () => this.restoreIndex(index, pointer));
      // A warning: this node was away long enough for the others to stop waiting for it.
      this.logger.warn(
        "restored an index from its snapshot: the log no longer held entries this node had not applied",
        {
          index,
          applied: last,
          snapshot: pointer.seq,
        },
      );
    }
    await this.state.save();
  }

  // ---- a log that lost entries (D-369) ----

  /**
   * The log's end as far as this node can apply it: the stream's last position, unless no entry
   * exists after this node's own, as when the log's newest entries were removed (NATS goes on
   * counting them): then nothing is left to wait for.
   */
  private async endOfLog(): Promise<number> {
    const last = await this.log.lastSeq();
    if (last <= this.state.position) return last;
    return (await this.log.entryTimeFrom(this.state.position + 1)) === undefined ? this.state.position : last;
  }

  /**
   * An anchor entry: this node applied entries of the index after the snapshot the anchor builds
   * on, which the log lost. The other nodes never get them, so it takes the snapshot too (D-369).
   * The caller holds the index's chain.
   */
  private async takeAnchor(entry: Extract<LogEntry, { op: "anchor" }>): Promise<void> {
    const held = this.state.indexes.get(entry.index)?.last ?? 0;
    if (entry.after === undefined || held <= entry.after) return;
    const pointer = await this.snapshots.pointer(entry.index, { nearby: true });
    if (pointer === null || pointer.seq < entry.after) return;
    await this.restoreIndex(entry.index, pointer);
    this.logger.warn("restored an index from its snapshot: the change log lost entries this node had applied", {
      index: entry.index,
      applied: held,
      snapshot: pointer.seq,
    });
  }

  /** Updates what this node knows after applying `entry` at `seq`, here and in the shared store. */
  private noteApplied(seq: number, entry: LogEntry): void {
    if (entry.op === "drop-index") {
      this.state.indexes.delete(entry.index);
      this.state.dropped.add(entry.index);
      this.state.watching.delete(entry.index);
      this.state.elsewhere.delete(entry.index);
      this.backfill.forget(entry.index);
      return;
    }
    const r = this.state.index(entry.index);
    r.last = Math.max(r.last, seq);
    r.appendedAt = entry.at;
    let activated: VersionId | undefined;
    switch (entry.op) {
      case "create":
        r.active ??= "0";
        break;
      case "change":
        this.state.noteVersion(entry.index, entry.change.version);
        r.newest = entry.change.version;
        if (entry.change.activate) activated = entry.change.version;
        break;
      case "changes":
        for (const change of entry.changes) {
          this.state.noteVersion(entry.index, change.version);
          r.newest = change.version;
          if (change.activate) activated = change.version;
        }
        break;
      case "bulk":
        this.state.noteVersion(entry.index, formatVersion(entry.major));
        r.newest = formatVersion(entry.major);
        break;
      case "checkpoint":
        this.state.noteVersion(entry.index, formatVersion(entry.major));
        r.newest = formatVersion(entry.major);
        if (entry.carry !== undefined) {
          this.state.noteVersion(entry.index, entry.carry.version);
          r.newest = entry.carry.version;
        }
        // A checkpoint built while writes went on goes live with its entry (D-231).
        if (entry.files !== undefined && entry.live !== false) {
          activated = entry.carry?.version ?? formatVersion(entry.major);
        }
        break;
      case "activate":
        activated = entry.version;
        break;
      case "purge":
        r.purgedAt = seq;
        break;
    }
    if (activated !== undefined) {
      r.active = activated;
      this.onActive(entry.index, activated);
      // Guarded by position: a node that lags never sets the shared active version back.
      this.backfill.setActive(entry.index, activated, seq);
    }
    // Saved and announced by advance(), once the entry counts into the position.
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

  /** Waits until this node has applied the log through `target`; past `until`, a 503. */
  private async appliedThrough(target: number, until = Number.POSITIVE_INFINITY): Promise<void> {
    let seen = this.state.position;
    let since = Date.now();
    while (this.state.position < target) {
      if (Date.now() > until) {
        throw new UnavailableError("this node is still applying what other nodes wrote; try again", {
          retryAfterSeconds: 1,
        });
      }
      await this.waitChange(Number.isFinite(until) ? Math.min(1_000, until - Date.now()) : undefined);
      if (this.state.position !== seen) {
        seen = this.state.position;
        since = Date.now();
      } else if (Date.now() - since >= 1_000) {
        // Nothing applied for a second: the entries up to `target` may be gone from the log (its
        // newest removed, D-369), which NATS's last position does not show. A log that does not
        // answer says nothing (0).
        since = Date.now();
        const next = await this.log.entryTimeFrom(this.state.position + 1).then(
          (at) => at,
          () => 0,
        );
        if (next === undefined) return;
      }
    }
  }
}

function notApplied(version: VersionId): UnavailableError {
  return new UnavailableError(
    `this region has not applied version ${version} of the index yet; try again or ask another region`,
    { retryAfterSeconds: 1 },
  );
}
