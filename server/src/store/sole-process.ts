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
import { sql } from "drizzle-orm";
import type { Logger } from "../log.ts";
import { isStoreUnreachable } from "./errors.ts";
import type { Db } from "./open.ts";

/** A lease not renewed for this long is free: its process stopped without deleting it. */
export const LEASE_MS = 15_000;
/** How often the lease is renewed. */
const RENEW_EVERY_MS = 5_000;
const ROW = "writer";
/** Renewed by every node with replication; no node deletes it (the others may run on). */
const REPLICATED_ROW = "replicated";
const dbNow = sql`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export class SoleProcessError extends Error {
  constructor(holder: string, waitedSeconds: number, replicated = false) {
    super(
      replicated
        ? `Sift nodes with replication use this database (${holder}) and did not stop within ${waitedSeconds} s: ` +
            "set SIFT_NATS_URL on this process too (docs/replication.md), or stop them"
        : `another Sift process uses this database (${holder}) and did not stop within ${waitedSeconds} s. ` +
            "Without replication, run one Sift process per DATABASE_URL; several need SIFT_NATS_URL (docs/replication.md)",
    );
    this.name = "SoleProcessError";
  }
}

/** A node with replication refused: a process without it uses the database. */
export class ReplicatedBesideSoleError extends Error {
  constructor(holder: string, waitedSeconds: number) {
    super(
      `a Sift process without replication uses this database (${holder}) and did not stop within ${waitedSeconds} s: ` +
        "stop it, or set SIFT_NATS_URL on it too; nodes with and without replication would write apart",
    );
    this.name = "ReplicatedBesideSoleError";
  }
}

export interface SoleProcessLease {
  release(): Promise<void>;
}

/**
 * Takes the lease, waiting up to `waitSeconds` for another process's to be deleted or to expire
 * (a rolling restart; a process killed with SIGKILL). A process of the same `node` (restarted in
 * its place) takes it over at once. A database that does not answer now does not stop the start
 * (the node serves what it has cached): the lease is taken once it answers. `onLost`: another
 * process took the lease while this one could not renew it; this process must stop.
 */
export async function holdSoleProcess(
  db: Db,
  options: {
    /** Unique to this process: `sift <node> pid <pid>`. */
    holder: string;
    node: string;
    waitSeconds: number;
    log: Logger;
    onLost: (error: SoleProcessError) => void;
    renewEveryMs?: number;
    leaseMs?: number;
  },
): Promise<SoleProcessLease> {
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const take = async () => {
    const rows = await db.execute<{ holder: string }>(sql`
      insert into sole_process (id, holder, node, expires_at)
      values (${ROW}, ${options.holder}, ${options.node}, ${dbNow} + ${leaseMs})
      on conflict (id) do update set holder = excluded.holder, node = excluded.node, expires_at = excluded.expires_at
      where sole_process.expires_at < ${dbNow} or sole_process.holder = excluded.holder
        or sole_process.node = excluded.node
      returning holder`);
    return rowsOf(rows).length > 0;
  };
  const renew = async () => {
    const rows = await db.execute<{ holder: string }>(sql`
      update sole_process set expires_at = ${dbNow} + ${leaseMs}
      where id = ${ROW} and holder = ${options.holder} returning holder`);
    return rowsOf(rows).length > 0;
  };
  const holder = async () => {
    const [row] = rowsOf<{ holder: string; seconds: number }>(
      await db.execute(sql`
        select holder, greatest(0, expires_at - ${dbNow}) / 1000 as seconds from sole_process where id = ${ROW}`),
    );
    return row
      ? `"${row.holder}", its lease good for ${Math.ceil(Number(row.seconds))} s more`
      : "one that has just stopped";
  };

  let held = false;
  const deadline = Date.now() + options.waitSeconds * 1_000;
  try {
    for (let attempt = 0; ; attempt++) {
      const replicated = await liveRow(db, REPLICATED_ROW);
      held = replicated === undefined && (await take());
      if (held) break;
      if (Date.now() >= deadline) {
        throw replicated === undefined
          ? new SoleProcessError(await holder(), options.waitSeconds)
          : new SoleProcessError(`the last to report: "${replicated}"`, options.waitSeconds, true);
      }
      if (attempt === 0) {
        options.log.warn("another Sift process uses this database; waiting for it to stop", {
          holder: replicated === undefined ? await holder() : `nodes with replication, "${replicated}" among them`,
          waitSeconds: options.waitSeconds,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } catch (error) {
    if (!isStoreUnreachable(error)) throw error;
    options.log.warn("the database does not answer: this process takes its lease once it does", {
      error: (error as Error).message,
    });
  }

  let lost = false;
  let stopped = false;
  /** The renewal under way: a release waits for it, so that it cannot take the lease back after. */
  let turn: Promise<void> | undefined;
  const renewOnce = async () => {
    if (lost || stopped) return;
    if (!held) {
      // Started while the database was away: this process is the second one if another holds it.
      held = await take();
    } else if (await renew()) {
      // Renewed even past its expiry, as long as nobody took it meanwhile (the database was away).
      return;
    } else {
      held = false;
    }
    if (held || stopped) return;
    lost = true;
    options.onLost(new SoleProcessError(await holder(), 0));
  };
  const renewal = setInterval(() => {
    turn ??= renewOnce()
      .catch((error: Error) => {
        // Out of reach: renewed at the next turn, if nobody took the lease meanwhile.
        if (!isStoreUnreachable(error))
          options.log.warn("could not renew the database lease", { error: error.message });
      })
      .finally(() => {
        turn = undefined;
      });
  }, options.renewEveryMs ?? RENEW_EVERY_MS);
  renewal.unref();

  return {
    async release() {
      clearInterval(renewal);
      stopped = true;
      await turn;
      if (lost) return;
      // Deleted, so that the next process starts at once; one that cannot be deleted expires.
      await db
        .execute(sql`delete from sole_process where id = ${ROW} and holder = ${options.holder}`)
        .catch((error: Error) => options.log.warn("could not hand back the database lease", { error: error.message }));
    },
  };
}

/**
 * For a node with replication: refused while a process without it holds the database (waiting up
 * to `waitSeconds` for it to stop), then the replicated nodes' row, renewed until release.
 */
export async function announceReplicated(
  db: Db,
  options: { holder: string; waitSeconds: number; log: Logger; renewEveryMs?: number; leaseMs?: number },
): Promise<SoleProcessLease> {
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const renew = () =>
    db.execute(sql`
      insert into sole_process (id, holder, node, expires_at)
      values (${REPLICATED_ROW}, ${options.holder}, ${options.holder}, ${dbNow} + ${leaseMs})
      on conflict (id) do update set holder = excluded.holder, expires_at = excluded.expires_at`);
  const deadline = Date.now() + options.waitSeconds * 1_000;
  try {
    for (let attempt = 0; ; attempt++) {
      const sole = await liveRow(db, ROW);
      if (sole === undefined) break;
      if (Date.now() >= deadline) throw new ReplicatedBesideSoleError(`"${sole}"`, options.waitSeconds);
      if (attempt === 0) {
        options.log.warn("a Sift process without replication uses this database; waiting for it to stop", {
          holder: sole,
          waitSeconds: options.waitSeconds,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await renew();
  } catch (error) {
    if (!isStoreUnreachable(error)) throw error;
    options.log.warn("the database does not answer: this node says it replicates once it does", {
      error: (error as Error).message,
    });
  }
  const renewal = setInterval(() => {
    renew().catch((error: Error) => {
      // Out of reach: renewed at the next turn.
      if (!isStoreUnreachable(error))
        options.log.warn("could not renew the replicated nodes' row", { error: error.message });
    });
  }, options.renewEveryMs ?? RENEW_EVERY_MS);
  renewal.unref();
  return {
    async release() {
      clearInterval(renewal);
    },
  };
}

/** The holder of `row` while its lease is good; undefined when there is none or it expired. */
async function liveRow(db: Db, row: string): Promise<string | undefined> {
  const [found] = rowsOf<{ holder: string }>(
    await db.execute(sql`select holder from sole_process where id = ${row} and expires_at > ${dbNow}`),
  );
  return found?.holder;
}

/** postgres.js returns the rows; PGlite an object holding them. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows?: T[] }).rows ?? []);
}
