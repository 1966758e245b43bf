// Without replication, one Sift process per PostgreSQL database (D-325): a second process started
// on the database of a running one does not start, and says why. The first, killed with SIGKILL
// and started again in its place (the same node), takes its lease back at once.
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

  it("the second does not start while the first runs; the first, killed and restarted, serves at once", async () => {
    // start() waits for the health check, which this attempt never answers (the one below does).
    // biome-ignore lint/plugin: this start is expected to fail; the exit code and output are what is checked.
    void second.start().catch(() => {});
    expect(await second.exited()).toBe(1);
    expect(second.output()).toMatch(
      /sift: cannot start: another Sift process uses this database \("sift [^"]+ pid \d+"[^)]*\) and did not stop within 1 s/,
    );
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);

    await first.kill("SIGKILL");
    const restarted = Date.now();
    await first.start();
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    // Its lease was good for 15 s more; the same node does not wait for it.
    expect(Date.now() - restarted).toBeLessThan(10_000);
  });
});
