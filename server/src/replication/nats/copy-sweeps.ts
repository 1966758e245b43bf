// Each node's sweeps of the regions' copies of the object stores (object-copies.ts, D-326): what
// the origin dropped removed from its region's copies, a copy that skipped a message or stopped
// made again, its own region's and the others' (D-339, D-358, D-359).
import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import {
  type Copy,
  type RegionCopies,
  copyProgress,
  descriptionsStream,
  type Skip,
  sweepCopy,
} from "./object-copies.ts";
import type { ObjectStores } from "./object-stores.ts";
import { MIRROR_STALLED_MS, type NatsLogOptions } from "./options.ts";
import { copiesFor, ensureObjectCopies, ensureStream, stepDown } from "./streams.ts";

/** How often a node removes from its region's copies of the object stores what their origin dropped. */
const SWEEP_EVERY_MS = 10 * 60_000;
/**
 * And soon after it opens the log, and after it made a copy again: a copy that skips a message
 * does so as it is made (seen once), and a sweep finds the skip once the copy took a later one.
 */
const FIRST_SWEEPS_MS = [5_000, 15_000];
/**
 * And this long after a new leader was elected for a copy or what it copies: NATS 2.9's copies
 * lose messages when their leaders change (D-341, D-342); a later message shows the loss.
 */
const LEADER_CHANGE_SWEEP_MS = 20_000;
/** The first look at a copy made again; each further remake in a row doubles it (sweepWait). */
const REMADE_CHECK_MS = 15_000;
/** Remakes in a row from which a skip is logged as an error: NATS keeps skipping. */
const REMADE_TOO_OFTEN = 3;

/**
 * How long a node waits for its next sweep of the region's copies: `sweeps` since the log was
 * opened, `remadeInARow` sweeps in a row that made a copy again, `failedInARow` sweeps in a row
 * that NATS did not answer. A skip that NATS repeats at once is looked at again 15 s, 30 s, 1
 * min... later, up to the usual 10 to 20 minutes, not every 15 s; so is a sweep that failed (a
 * loaded cluster timed out, D-345), instead of waiting the usual 10 to 20 minutes.
 */
export function sweepWait(sweeps: number, remadeInARow: number, random = Math.random(), failedInARow = 0): number {
  const usual = SWEEP_EVERY_MS + random * SWEEP_EVERY_MS;
  const again = Math.max(remadeInARow, failedInARow);
  if (again > 0) return Math.min(REMADE_CHECK_MS * 2 ** (again - 1), usual);
  return FIRST_SWEEPS_MS[sweeps] ?? usual;
}
/** How a stream of the region's copies looked (CopySweeps.copyLooks). */
interface CopyLook {
  taken: number;
  behind: boolean;
  still: number;
  remakes: number;
}
/** What one sweep of copies did: made one again, or could not look (NATS did not answer). */
interface SweepOutcome {
  remade: boolean;
  failed: boolean;
}
/** NATS's advisory of a stream's new leader, followed by the stream's name. */
const LEADER_ELECTED = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED";
/**
 * A region's copy of the object stores (any region's: `<mirror>_files`, `_docs`, `_objects`), or a
 * stream copies take from (`OBJ_<stream>_files`, `OBJ_<stream>_docs`, `<stream>_objects`).
 */
const copiesOrOrigin = (stream: string) => /_(files|docs|objects)$/.test(stream);

export class CopySweeps {
  private readonly nc: NatsConnection;
  private readonly jsm: JetStreamManager;
  private readonly options: NatsLogOptions;
  private readonly objects: ObjectStores;
  private readonly copies: RegionCopies | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  /** Looks whether the region's copies stopped (watchCopies). */
  private copyWatch: NodeJS.Timeout | undefined;
  /** Copies found stopped for good between sweeps: the next sweep makes them again (D-359). */
  private readonly stoppedCopies = new Set<string>();
  /** Looks at the copies in a row that NATS did not answer (watchCopies). */
  private copyLooksFailed = 0;
  /** When the next sweep starts; infinite while one runs. */
  private sweepAt = Number.POSITIVE_INFINITY;
  /** A leader changed while a sweep ran: the next one comes soon (sweepSoon). */
  private sweepSoonAfter = false;
  /** Sweeps since the log was opened, and sweeps in a row that made a copy again (sweepWait). */
  private sweeps: number;
  private remadeInARow = 0;
  /** Sweeps in a row that NATS did not answer (sweepWait). */
  private failedInARow = 0;
  private closed = false;
  /**
   * Per stream of the region's copies (D-358, D-359): how far it had taken its origin at the last
   * look, whether that was behind its origin, how many looks in a row it has not moved while
   * behind, and how often it was made again since it was last caught up.
   */
  private readonly copyLooks = new Map<string, CopyLook>();

  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    options: NatsLogOptions,
    objects: ObjectStores,
    copies: RegionCopies | undefined,
  ) {
    this.nc = nc;
    this.jsm = jsm;
    this.options = options;
    this.objects = objects;
    this.copies = copies;
    // Every node sweeps: its region's copies, if it has them, and every other region's for skips;
    // soon after a leader change of a copy or of what it copies, as well.
    // Counted as done when they are not wanted (sweepWait).
    this.sweeps = options.sweepsAfterOpening === false ? FIRST_SWEEPS_MS.length : 0;
    this.nextSweep();
    if (this.copies !== undefined) this.watchCopies();
    nc.subscribe(`${LEADER_ELECTED}.*`, {
      callback: (error, message) => {
        if (error === null && copiesOrOrigin(message.subject.slice(LEADER_ELECTED.length + 1))) this.sweepSoon();
      },
    });
  }

  /** Each node sweeps at its own moments: a sweep is idempotent. */
  private nextSweep(wait = sweepWait(this.sweeps, this.remadeInARow)): void {
    clearTimeout(this.sweeper);
    this.sweepAt = Date.now() + wait;
    this.sweeper = setTimeout(async () => {
      this.sweepAt = Number.POSITIVE_INFINITY;
      this.sweepSoonAfter = false;
      const here = this.copies !== undefined ? await this.sweepCopies() : { remade: false, failed: false };
      const others = await this.checkOtherCopies();
      this.sweeps++;
      this.remadeInARow = here.remade || others.remade ? this.remadeInARow + 1 : 0;
      this.failedInARow = here.failed || others.failed ? this.failedInARow + 1 : 0;
      if (this.closed) return;
      const usual = sweepWait(this.sweeps, this.remadeInARow, Math.random(), this.failedInARow);
      // A copy found stopped while this sweep ran is made again now (watchCopies).
      if (this.stoppedCopies.size > 0) this.nextSweep(0);
      else this.nextSweep(this.sweepSoonAfter ? Math.min(usual, LEADER_CHANGE_SWEEP_MS) : usual);
    }, wait);
    this.sweeper.unref();
  }

  /** Whether a sweep runs now (its next start is not set until it ends). */
  private get sweeping(): boolean {
    return this.sweepAt === Number.POSITIVE_INFINITY;
  }

  /** A sweep within LEADER_CHANGE_SWEEP_MS (a leader changed), unless one comes sooner. */
  private sweepSoon(): void {
    if (this.closed) return;
    if (this.sweeping) this.sweepSoonAfter = true;
    else if (this.sweepAt > Date.now() + LEADER_CHANGE_SWEEP_MS) this.nextSweep(LEADER_CHANGE_SWEEP_MS);
  }

  /**
   * Removes from this region's copies what the object stores dropped, and makes again a copy
   * that skipped a message (object-copies.ts): whether it made one again, and whether NATS failed it.
   */
  private async sweepCopies(): Promise<SweepOutcome> {
    const cluster = this.nc.info?.cluster;
    try {
      // One that could not be made again last time, or was deleted.
      await ensureObjectCopies(this.jsm, this.options, cluster);
      const stopped = [...this.stoppedCopies];
      this.stoppedCopies.clear();
      const skipped: Skip[] = [];
      for (const copy of Object.values(this.copies ?? {})) {
        const swept = await sweepCopy(this.jsm, copy);
        skipped.push(...swept.skipped);
        this.tellPatched("the region's copy", copy, swept.patched);
        if (swept.descriptions + swept.chunks > 0)
          this.options.log.info("swept what the object stores dropped from the region's copy", {
            copy: copy.chunks,
            descriptions: swept.descriptions,
            chunks: swept.chunks,
          });
      }
      if (skipped.length === 0 && stopped.length === 0) return { remade: false, failed: false };
      for (const stream of new Set([...skipped.map((skip) => skip.stream), ...stopped])) {
        await this.jsm.streams.delete(stream);
        const look = this.copyLooks.get(stream);
        // The new copy's progress is not compared with the old one's.
        if (look !== undefined) this.copyLooks.set(stream, { ...look, taken: -1, behind: false, still: 0 });
      }
      // Their sources take everything again from the origin; until then, reads go to the bucket.
      await ensureObjectCopies(this.jsm, this.options, cluster);
      // Repeated at once, the skip is NATS's doing, not a moment's: an operator should know.
      const inARow = this.remadeInARow + 1;
      const level = inARow >= REMADE_TOO_OFTEN ? "error" : "warn";
      for (const skip of skipped)
        this.options.log[level]("the region's copy of an object store skipped a message; made the copy again", {
          copy: skip.stream,
          lacked: skip.what,
          ...(inARow > 1 ? { remadeInARow: inARow } : {}),
        });
      return { remade: true, failed: false };
    } catch (error) {
      this.options.log.warn("could not sweep the region's copies of the object stores", {
        error: (error as Error).message,
      });
      return { remade: false, failed: true };
    }
  }

  /**
   * Every `mirrorStalledMs` (60 s), whether a stream of the region's copies stopped (D-359): the
   * sweeps, 10 to 20 minutes apart, found one only within 20 to 40 minutes (D-358).
   */
  private watchCopies(): void {
    // At each node's own moments: two nodes of a region would otherwise make a copy again together.
    this.copyWatch = setTimeout(
      async () => {
        // A sweep that runs may be making a copy again: its progress is not looked at meanwhile.
        if (!this.sweeping) {
          const remake = await this.nudgeStoppedCopies().then(
            (streams) => {
              this.copyLooksFailed = 0;
              return streams;
            },
            (error: Error) => {
              // Once per spell: an outage of the log's home fails every look until it is back.
              if (this.copyLooksFailed++ === 0)
                this.options.log.warn("could not look whether the region's copies of the object stores stopped", {
                  error: error.message,
                });
              return [];
            },
          );
          for (const stream of remake) this.stoppedCopies.add(stream);
          // Made again by a sweep now, or at the end of the one that started meanwhile.
          if (remake.length > 0 && !this.closed && !this.sweeping) this.nextSweep(0);
        }
        if (!this.closed) this.watchCopies();
      },
      (this.options.mirrorStalledMs ?? MIRROR_STALLED_MS) * (0.75 + Math.random() / 2),
    );
    this.copyWatch.unref();
  }

  /**
   * A stream of the region's copies that took nothing between two looks while its origin held a
   * message past what it took has stopped (D-358), as the log's mirror can (D-357): its leader is
   * asked to step down; still so at the next look, it is made again (its origin's objects cross
   * the gateway again). A copy made again that stops again before it caught up waits twice as
   * many looks each time. Returns the streams to make again.
   */
  private async nudgeStoppedCopies(): Promise<string[]> {
    const remake: string[] = [];
    const progress = await copyProgress(this.jsm, this.copies!);
    for (const { stream, taken, originLast } of progress) {
      const before = this.copyLooks.get(stream) ?? { taken: -1, behind: false, still: 0, remakes: 0 };
      const behind = originLast > taken;
      const still = behind && before.behind && before.taken === taken ? before.still + 1 : 0;
      const remakes = behind ? before.remakes : 0;
      this.copyLooks.set(stream, { taken, behind, still, remakes });
      const scale = 2 ** remakes;
      const stepDownAt = this.options.replicas > 1 ? scale : Number.NaN;
      const remakeAt = this.options.replicas > 1 ? 2 * scale : scale;
      if (still === stepDownAt) {
        this.options.log.warn(
          "the region's copy of an object store has stopped behind its origin; asking its leader to step down",
          { copy: stream, taken, originLast },
        );
        await stepDown(this.nc, this.options.log, stream);
      } else if (still === remakeAt) {
        this.options.log.warn("the region's copy of an object store has stopped behind its origin; making it again", {
          copy: stream,
          taken,
          originLast,
          ...(remakes > 0 ? { remadeBefore: remakes } : {}),
        });
        this.copyLooks.set(stream, { taken: -1, behind: false, still: 0, remakes: remakes + 1 });
        remake.push(stream);
      }
    }
    return remake;
  }

  /**
   * Makes again another region's copy that skipped a message (D-339): one that skips while every
   * node of its region is down would otherwise stay short until one of them starts, and a
   * restore there during an outage of the home would wait for the home. Nothing else in it is
   * touched: its region's nodes sweep it.
   */
  private async checkOtherCopies(): Promise<SweepOutcome> {
    let remade = false;
    try {
      const own = this.copies?.files.descriptions;
      const suffix = "_objects";
      const others = (await this.objects.streamsCopying(descriptionsStream(this.options.stream))).filter(
        (name) => name !== own && name.endsWith(suffix),
      );
      for (const descriptions of others) {
        const copies = copiesFor({ ...this.options, mirror: descriptions.slice(0, -suffix.length) })!;
        const skipped: Skip[] = [];
        for (const copy of [copies.files, copies.docs]) {
          const swept = await sweepCopy(this.jsm, copy, { skipsOnly: true });
          skipped.push(...swept.skipped);
          this.tellPatched("another region's copy", copy, swept.patched);
        }
        for (const stream of new Set(skipped.map((skip) => skip.stream))) {
          // Made again as its region's node made it: its own configuration (source, replicas, placement).
          const { config } = await this.jsm.streams.info(stream);
          await this.jsm.streams.delete(stream);
          await ensureStream(this.jsm, config);
          remade = true;
        }
        for (const skip of skipped)
          this.options.log.warn("another region's copy of an object store skipped a message; made the copy again", {
            copy: skip.stream,
            lacked: skip.what,
          });
      }
    } catch (error) {
      this.options.log.warn("could not look at the other regions' copies of the object stores", {
        error: (error as Error).message,
      });
      return { remade, failed: true };
    }
    return { remade, failed: false };
  }

  /** A copy's skipped objects now in its region's patches (D-348): found, and read from there. */
  private tellPatched(whose: string, copy: Copy, objects: string[]): void {
    if (objects.length === 0) return;
    this.options.log.warn(`${whose} of an object store skipped chunks; put their objects into the region's patches`, {
      copy: copy.chunks,
      objects: objects.length,
      first: objects[0],
    });
  }

  /** No more sweeps or looks. */
  close(): void {
    this.closed = true;
    clearTimeout(this.sweeper);
    clearTimeout(this.copyWatch);
  }
}
