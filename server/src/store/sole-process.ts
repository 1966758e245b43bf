// Without replication, one Sift process per PostgreSQL database (D-325). Each process orders an
// index's writes in its own memory, and with the embedded engine keeps its own copy of the
// records: a second process on the same database would lose the first one's writes (Typesense)
// or answer without them (embedded). Several processes need replication (SIFT_NATS_URL).
//
// The lock is a PostgreSQL session advisory lock, on a connection of its own: PostgreSQL releases
// it when that connection ends, so a killed process never leaves it behind. The connection asks
// the server to probe it with TCP keepalives, so a machine that vanished without closing it
// releases the lock within about 25 s instead of the system's two hours.
import type { Logger } from "../log.ts";
import { isStoreUnreachable } from "./errors.ts";

/** The advisory lock's two keys: "Sift", and this lock's number among Sift's (the only one). */
const KEYS = [0x5_1f7, 1] as const;
/** How often the lock is checked, and taken again after its connection was lost. */
const CHECK_EVERY_MS = 5_000;

export class SoleProcessError extends Error {
  constructor(holder: string, waitedSeconds: number) {
    super(
      `another Sift process uses this database (${holder}) and did not stop within ${waitedSeconds} s. ` +
        "Without replication, run one Sift process per DATABASE_URL; several need SIFT_NATS_URL (docs/replication.md)",
    );
    this.name = "SoleProcessError";
  }
}

export interface SoleProcessLock {
  release(): Promise<void>;
}

/**
 * Takes the lock, waiting up to `waitSeconds` for another process to stop (a rolling restart).
 * A database that does not answer now does not stop the start (the node serves what it has
 * cached): the lock is taken once it answers. `onLost`: the lock went to another process while
 * this one's connection was down; this process must stop taking writes.
 */
export async function holdSoleProcess(
  url: string,
  /** `name`: unique to this process (its sessions are told from another process's by it). */
  options: {
    name: string;
    waitSeconds: number;
    log: Logger;
    onLost: (error: SoleProcessError) => void;
    checkEveryMs?: number;
  },
): Promise<SoleProcessLock> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 5,
    // One long session: never recycled, since the lock would go with it.
    max_lifetime: null,
    idle_timeout: 0,
    connection: {
      application_name: options.name,
      tcp_keepalives_idle: 10,
      tcp_keepalives_interval: 5,
      tcp_keepalives_count: 3,
    },
  });
  const take = async () => (await sql`select pg_try_advisory_lock(${KEYS[0]}, ${KEYS[1]}) as taken`)[0]!.taken === true;
  const holds = async () =>
    (
      await sql`select exists (select 1 from pg_locks where locktype = 'advisory' and classid = ${KEYS[0]}
        and objid = ${KEYS[1]} and objsubid = 2 and granted and pid = pg_backend_pid()) as held`
    )[0]!.held === true;
  const holderRow = async () =>
    (
      await sql`select a.application_name as name, a.client_addr::text as address from pg_locks l
        join pg_stat_activity a on a.pid = l.pid where l.locktype = 'advisory' and l.classid = ${KEYS[0]}
        and l.objid = ${KEYS[1]} and l.objsubid = 2 and l.granted
        and l.database = (select oid from pg_database where datname = current_database()) limit 1`
    )[0] as { name: string; address: string | null } | undefined;
  const holder = async () => {
    const row = await holderRow();
    return row ? `"${row.name}"${row.address ? ` from ${row.address}` : ""}` : "a process that has just stopped";
  };

  let held = false;
  const deadline = Date.now() + options.waitSeconds * 1_000;
  try {
    for (let attempt = 0; ; attempt++) {
      held = await take();
      if (held) break;
      if (Date.now() >= deadline) throw new SoleProcessError(await holder(), options.waitSeconds);
      if (attempt === 0) {
        options.log.warn("another Sift process uses this database; waiting for it to stop", {
          holder: await holder(),
          waitSeconds: options.waitSeconds,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } catch (error) {
    if (!isStoreUnreachable(error)) {
      await sql.end({ timeout: 1 });
      throw error;
    }
    options.log.warn("the database does not answer: this process takes its lock once it does", {
      error: (error as Error).message,
    });
  }

  let lost = false;
  const check = setInterval(() => {
    void (async () => {
      if (lost) return;
      if (held && (await holds())) return;
      // Never taken, or gone with a connection that was lost: taken again if nobody else has it.
      held = await take();
      if (held) {
        options.log.info("the database lock of this process is held again");
        return;
      }
      // This process's own lost session, not yet ended by the server: its turn comes.
      if ((await holderRow())?.name === options.name) return;
      lost = true;
      options.onLost(new SoleProcessError(await holder(), 0));
    })().catch((error: Error) => {
      // Out of reach: asked again at the next check; the lock, if held, went with the connection.
      held = false;
      if (!isStoreUnreachable(error)) options.log.warn("could not check the database lock", { error: error.message });
    });
  }, options.checkEveryMs ?? CHECK_EVERY_MS);
  check.unref();

  return {
    async release() {
      clearInterval(check);
      // Ending the session releases the lock.
      await sql.end({ timeout: 1 });
    },
  };
}
