// Without replication, one Sift process per PostgreSQL database (D-325): a second process started
// on the database of a running one does not start, and says why; once the first is killed with
// SIGKILL, the second starts, PostgreSQL having released the first one's lock with its connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";

describe.skipIf(!process.env.DATABASE_URL)("two processes on one database without replication", () => {
  let first: SiftProcess;
  let second: SiftProcess;
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    database = await createTempDatabase(process.env.DATABASE_URL!);
    first = await siftProcess({}, { sharedDatabase: database.url });
    await first.start();
    second = await siftProcess({ SIFT_SOLE_PROCESS_WAIT_SECONDS: "1" }, { sharedDatabase: database.url });
  });
  afterAll(async () => {
    await second?.destroy();
    await first?.destroy();
    await database?.drop();
  });

  it("the second does not start while the first runs; it starts once the first is killed", async () => {
    // start() waits for the health check, which this attempt never answers (the one below does).
    // biome-ignore lint/plugin: this start is expected to fail; the exit code and output are what is checked.
    void second.start().catch(() => {});
    expect(await second.exited()).toBe(1);
    expect(second.output()).toMatch(
      /sift: cannot start: another Sift process uses this database \("sift [^"]+ pid \d+"[^)]*\) and did not stop within 1 s/,
    );
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);

    await first.kill("SIGKILL");
    await second.start();
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
  });
});
