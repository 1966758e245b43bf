// Without replication, one Sift process per PostgreSQL database (D-325). Each process orders an
// index's writes in its own memory, and with the embedded engine keeps its own copy of the
// records: a second process on the same database would lose the first one's writes (Typesense)
// or answer without them (embedded). Several processes need replication (SIFT_NATS_URL).
//
// The process holds a lease, one row of `sole_process`, which it renews every few seconds and
// deletes when it stops. Plain statements through the store's own pool: a pooler in transaction
// mode (PgBouncer) would hold a session lock on whichever server connection took it, for good.
// Times are the database's, so the machines' clocks need not agree. Nodes with replication renew
// a row of their own: a process without it is refused while they run, and they are refused while
// it runs (one node started without SIFT_NATS_URL would write apart from the others).
import { and, eq, gt, lt, or, sql } from "drizzle-orm";
import type { Logger } from "../log.ts";
import { isStoreUnreachable } from "./errors.ts";
import type { Db } from "./open.ts";
import { soleProcess } from "./schema.ts";

/** A lease not renewed for this long is free: its process stopped without deleting it. */
export const LEASE_MS = 15_000;
/** How often the lease is renewed. */
const RENEW_EVERY_MS = 5_000;
/** The lease of the one process without replication. */
const SOLE = "writer";
/** Renewed by every node with replication; no node deletes it (the others may run on). */
const REPLICATED = "replicated";
const dbNow = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export class SoleProcessError extends Error {
  override name = "SoleProcessError";
}

const USE_NATS = "several need SIFT_NATS_URL (docs/replication.md)";

export interface SoleProcessLease {
  release(): Promise<void>;
}

interface Timing {
  waitSeconds: number;
  log: Logger;
  renewEveryMs?: number;
  leaseMs?: number;
}

/**
 * Takes the lease, waiting up to `waitSeconds` for another process's to be deleted or to expire
 * (a rolling restart; a process killed with SIGKILL), or for nodes with replication to stop. A
 * process of the same `node` (restarted in its place) takes it over at once. A database that does
 * not answer now does not stop the start (the node serves what it has cached): the lease is taken
 * once it answers. `onLost`: another process took the lease while this one could not renew it;
 * this process must stop.
 */
export async function holdSoleProcess(
  db: Db,
  options: Timing & {
    /** Unique to this process: `sift <node> pid <pid>`. */
    holder: string;
    node: string;
    onLost: (error: SoleProcessError) => void;
  },
): Promise<SoleProcessLease> {
  const { holder, node } = options;
  const expiresAt = sql<number>`${dbNow} + ${options.leaseMs ?? LEASE_MS}`;
  const take = async () => {
    const rows = await db
      .insert(soleProcess)
      .values({ id: SOLE, holder, node, expiresAt })
      .onConflictDoUpdate({
        target: soleProcess.id,
        set: { holder, node, expiresAt },
        // Free, expired, this process's own, or its node's (restarted in its place).
        where: or(lt(soleProcess.expiresAt, dbNow), eq(soleProcess.holder, holder), eq(soleProcess.node, node)),
      })
      .returning({ id: soleProcess.id });
    return rows.length > 0;
  };
  const renew = async () => {
    const rows = await db
      .update(soleProcess)
      .set({ expiresAt })
      .where(and(eq(soleProcess.id, SOLE), eq(soleProcess.holder, holder)))
      .returning({ id: soleProcess.id });
    return rows.length > 0;
  };

  let held = await untilFree(options, async () => {
    const replicated = await liveLease(db, REPLICATED);
    if (replicated) {
      return {
        blocker: `Sift nodes with replication use this database (the last to report: "${replicated.holder}")`,
        advice: ": set SIFT_NATS_URL on this process too, or stop them",
      };
    }
    if (await take()) return undefined;
    return {
      blocker: `another Sift process uses this database (${described(await liveLease(db, SOLE))})`,
      advice: `. Without replication, run one Sift process per DATABASE_URL; ${USE_NATS}`,
    };
  });

  let lost = false;
  let stopped = false;
  const renewOnce = async () => {
    // Renewed even past its expiry, as long as nobody took it meanwhile (the database was away).
    // Not held yet (the database was away at start): this process is the second one if another has it.
    held = held ? await renew() : await take();
    if (held || stopped) return;
    lost = true;
    options.onLost(
      new SoleProcessError(
        `another Sift process uses this database (${described(await liveLease(db, SOLE))}): it took the lease while this one could not reach the database; ${USE_NATS} to run both`,
      ),
    );
  };
  const renewal = renewEvery(options, "the database lease", () => (lost || stopped ? Promise.resolve() : renewOnce()));

  return {
    async release() {
      stopped = true;
      await renewal.release();
      if (lost) return;
      // Deleted, so that the next process starts at once; one that cannot be deleted expires.
      await db
        .delete(soleProcess)
        .where(and(eq(soleProcess.id, SOLE), eq(soleProcess.holder, holder)))
        .catch((error: Error) => options.log.warn("could not hand back the database lease", { error: error.message }));
    },
  };
}

/**
 * For a node with replication: refused while a process without it holds the database (waiting up
 * to `waitSeconds` for it to stop), then the replicated nodes' row, renewed until release.
 */
export async function announceReplicated(db: Db, options: Timing & { holder: string }): Promise<SoleProcessLease> {
  const { holder } = options;
  const expiresAt = sql<number>`${dbNow} + ${options.leaseMs ?? LEASE_MS}`;
  const renew = async () => {
    await db
      .insert(soleProcess)
      .values({ id: REPLICATED, holder, node: holder, expiresAt })
      .onConflictDoUpdate({ target: soleProcess.id, set: { holder, expiresAt } });
  };
  await untilFree(options, async () => {
    const sole = await liveLease(db, SOLE);
    if (sole) {
      return {
        blocker: `a Sift process without replication uses this database ("${sole.holder}")`,
        advice: ": stop it, or set SIFT_NATS_URL on it too; nodes with and without replication would write apart",
      };
    }
    await renew();
    return undefined;
  });
  return renewEvery(options, "the replicated nodes' row", renew);
}

/** What keeps a process from starting: "<blocker> and did not stop within N s<advice>". */
interface Blocked {
  blocker: string;
  advice: string;
}

/**
 * Runs `attempt` every half second until nothing is in the way (it returns undefined then), for
 * up to `waitSeconds`, then throws what was. Whether it got through: a database that does not
 * answer is logged and left to the renewals.
 */
async function untilFree(timing: Timing, attempt: () => Promise<Blocked | undefined>): Promise<boolean> {
  const deadline = Date.now() + timing.waitSeconds * 1_000;
  try {
    for (let turn = 0; ; turn++) {
      const blocked = await attempt();
      if (blocked === undefined) return true;
      if (Date.now() >= deadline) {
        throw new SoleProcessError(
          `${blocked.blocker} and did not stop within ${timing.waitSeconds} s (SIFT_SOLE_PROCESS_WAIT_SECONDS)${blocked.advice}`,
        );
      }
      if (turn === 0) {
        timing.log.warn("waiting for the database", { why: blocked.blocker, waitSeconds: timing.waitSeconds });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } catch (error) {
    if (!isStoreUnreachable(error)) throw error;
    timing.log.warn("the database does not answer: its lease is taken once it does", {
      error: (error as Error).message,
    });
    return false;
  }
}

/** Runs `renew` every interval, one at a time; a database out of reach is tried again at the next. */
function renewEvery(timing: Timing, what: string, renew: () => Promise<void>): SoleProcessLease {
  /** The renewal under way: stopping waits for it, so that it cannot take the lease back after. */
  let turn: Promise<void> | undefined;
  const timer = setInterval(() => {
    turn ??= renew()
      .catch((error: Error) => {
        if (!isStoreUnreachable(error)) timing.log.warn(`could not renew ${what}`, { error: error.message });
      })
      .finally(() => {
        turn = undefined;
      });
  }, timing.renewEveryMs ?? RENEW_EVERY_MS);
  timer.unref();
  return {
    async release() {
      clearInterval(timer);
      await turn;
    },
  };
}

/** The holder of `id`'s lease and the seconds it is good for, while it is live. */
async function liveLease(db: Db, id: string): Promise<{ holder: string; seconds: number } | undefined> {
  const [row] = await db
    .select({ holder: soleProcess.holder, ms: sql<number>`${soleProcess.expiresAt} - ${dbNow}` })
    .from(soleProcess)
    .where(and(eq(soleProcess.id, id), gt(soleProcess.expiresAt, dbNow)));
  return row ? { holder: row.holder, seconds: Math.ceil(Number(row.ms) / 1000) } : undefined;
}

const described = (lease: { holder: string; seconds: number } | undefined) =>
  lease ? `"${lease.holder}", its lease good for ${lease.seconds} s more` : "one that has just stopped";
