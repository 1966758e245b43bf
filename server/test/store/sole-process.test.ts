// Without replication, one Sift process per PostgreSQL database (D-325): a second one waits for
// the first to stop, then refuses to start naming it; a process whose connection was lost takes
// its lock again, unless another process took it meanwhile, and then it is told to stop.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import { holdSoleProcess, type SoleProcessError, type SoleProcessLock } from "../../src/store/sole-process.ts";
import { createTempDatabase } from "../support/store.ts";

const adminUrl = process.env.DATABASE_URL;
const silent = createLogger("silent", {}, () => {});

describe.skipIf(!adminUrl)("one process per database, on PostgreSQL", () => {
  let database: { url: string; drop(): Promise<void> };
  const held: SoleProcessLock[] = [];
  const lost: string[] = [];
  const hold = async (name: string, waitSeconds = 0) => {
    const lock = await holdSoleProcess(database.url, {
      name,
      waitSeconds,
      log: silent,
      checkEveryMs: 100,
      onLost: (error: SoleProcessError) => lost.push(`${name}: ${error.message}`),
    });
    held.push(lock);
    return lock;
  };
  /** Ends the lock's session on the server, as a dropped connection would. */
  const dropSession = async (name: string) => {
    const admin = postgres(database.url, { max: 1, onnotice: () => {} });
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name}`;
    await admin.end();
  };

  /** The application name of the session holding the lock, as the server sees it. */
  const holder = async () => {
    const admin = postgres(database.url, { max: 1, onnotice: () => {} });
    const [row] =
      await admin`select a.application_name as name, a.pid from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.database = (select oid from pg_database where datname = current_database())`;
    await admin.end();
    return row ? `${row.name} (session ${row.pid})` : undefined;
  };

  beforeAll(async () => {
    database = await createTempDatabase(adminUrl!);
  });
  afterAll(async () => {
    for (const lock of held) await lock.release();
    await database?.drop();
  });

  test("a second process is refused, naming the first; it starts once the first has stopped", async () => {
    const first = await hold("sift a pid 1");
    await expect(hold("sift b pid 2", 1)).rejects.toThrow(/another Sift process uses this database \("sift a pid 1"/);
    // One that waits long enough starts once the first stops (a rolling restart).
    const second = hold("sift b pid 2", 10);
    await new Promise((resolve) => setTimeout(resolve, 700));
    await first.release();
    await second;
    await expect(hold("sift c pid 3", 0)).rejects.toThrow(/"sift b pid 2"/);
    await (await second).release();
  });

  test("a lost connection takes the lock again; if another process took it, this one is told to stop", async () => {
    await hold("sift d pid 4");
    const before = await holder();
    expect(before).toMatch(/^sift d pid 4 /);
    await dropSession("sift d pid 4");
    // Nobody else wanted it: taken again, in a new session, nothing lost.
    await expect
      .poll(async () => {
        const now = await holder();
        return now !== before && now?.startsWith("sift d pid 4 ");
      })
      .toBe(true);
    await expect(hold("sift e pid 5", 0)).rejects.toThrow(/"sift d pid 4"/);
    expect(lost).toEqual([]);

    await dropSession("sift d pid 4");
    // Another process is quicker this time.
    await expect
      .poll(
        () =>
          hold("sift f pid 6", 0).then(
            () => true,
            () => false,
          ),
        { interval: 20 },
      )
      .toBe(true);
    await expect.poll(() => lost.length, { timeout: 3_000 }).toBe(1);
    expect(lost[0]).toMatch(/^sift d pid 4: another Sift process uses this database \("sift f pid 6"/);
  });
});
