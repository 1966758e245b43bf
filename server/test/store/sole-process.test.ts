// Without replication, one Sift process per PostgreSQL database (D-325): a lease in the store. A
// second process waits for the first one's lease to be handed back or to expire, then refuses to
// start naming it; a process restarted in the first one's place takes it over at once; a process
// whose lease another took is told to stop; one started while the store was away takes it later.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Db, Store } from "../../src/store/open.ts";
import {
  announceReplicated,
  holdSoleProcess,
  type SoleProcessError,
  type SoleProcessLease,
} from "../../src/store/sole-process.ts";
import { storeTargets } from "../support/store.ts";

const silent = createLogger("silent", {}, () => {});
const postgres = storeTargets().find((target) => target.name === "postgres");

describe.skipIf(!postgres)("one process per database, on PostgreSQL", () => {
  let store: Store;
  const held: SoleProcessLease[] = [];
  const lost: string[] = [];
  const hold = async (
    holder: string,
    options: { waitSeconds?: number; leaseMs?: number; renewEveryMs?: number; db?: Db } = {},
  ) => {
    const lease = await holdSoleProcess(options.db ?? store.db, {
      holder,
      node: holder.split(" ")[1]!,
      waitSeconds: options.waitSeconds ?? 0,
      log: silent,
      renewEveryMs: options.renewEveryMs ?? 100,
      leaseMs: options.leaseMs ?? 1_000,
      onLost: (error: SoleProcessError) => lost.push(`${holder}: ${error.message}`),
    });
    held.push(lease);
    return lease;
  };

  const holderNow = async () => {
    const result = (await store.db.execute("select holder from sole_process")) as unknown as { holder: string }[];
    return result[0]?.holder;
  };

  beforeAll(async () => {
    store = await postgres!.open();
  });
  // Each test starts with no process holding the database.
  beforeEach(async () => {
    for (const lease of held.splice(0)) await lease.release();
    await store.db.execute("delete from sole_process");
    lost.length = 0;
  });
  afterAll(async () => {
    for (const lease of held) await lease.release();
    await store?.close();
  });

  test("a second process is refused, naming the first; one that waits starts once the first has stopped", async () => {
    const first = await hold("sift a pid 1");
    await expect(hold("sift b pid 2", { waitSeconds: 1 })).rejects.toThrow(
      /another Sift process uses this database \("sift a pid 1", its lease good for \d s more\) and did not stop within 1 s/,
    );
    const second = hold("sift b pid 2", { waitSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 700));
    await first.release();
    await (await second).release();
  });

  test("a lease not renewed (its process killed) is free once it expires; the same node takes it at once", async () => {
    // Never renewed in this test's time: a process killed with SIGKILL.
    await hold("sift c pid 3", { renewEveryMs: 60_000, leaseMs: 1_500 });
    const started = Date.now();
    const next = await hold("sift d pid 4", { waitSeconds: 10, renewEveryMs: 60_000 });
    expect(Date.now() - started).toBeGreaterThan(1_000);
    // Restarted in its place (the same SIFT_NODE_ID): no wait, whatever the lease says.
    const again = Date.now();
    await hold("sift d pid 5", { renewEveryMs: 60_000, leaseMs: 60_000 });
    expect(Date.now() - again).toBeLessThan(1_000);
    await expect(hold("sift e pid 6")).rejects.toThrow(/"sift d pid 5"/);
    await next.release(); // not its lease any more: the new holder's stays
    await expect(hold("sift e pid 6")).rejects.toThrow(/"sift d pid 5"/);
    expect(lost).toEqual([]);
  });

  test("a process whose lease another took is told to stop", async () => {
    await hold("sift f pid 7");
    await hold("sift f pid 8"); // its node restarted elsewhere with the same SIFT_NODE_ID
    await expect.poll(() => lost.length, { timeout: 3_000 }).toBe(1);
    expect(lost[0]).toMatch(/^sift f pid 7: another Sift process uses this database \("sift f pid 8"/);
  });

  test("a process started while the store was away takes the lease once it answers, or stops if another has it", async () => {
    let away = true;
    const unreachable = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    // While away, every query the store is asked fails as a refused connection does, however built.
    const refused: object = new Proxy(() => {}, {
      get: (_target, key) =>
        key === "then" ? (_resolve: unknown, reject: (error: Error) => void) => reject(unreachable) : () => refused,
    });
    const queries = new Set<PropertyKey>(["select", "insert", "update", "delete", "execute"]);
    const flaky = new Proxy(store.db, {
      get: (target, key, receiver) => (away && queries.has(key) ? () => refused : Reflect.get(target, key, receiver)),
    });
    await hold("sift g pid 9", { db: flaky });
    expect(await holderNow()).toBeUndefined();
    away = false;
    await expect.poll(holderNow).toBe("sift g pid 9");
    await expect(hold("sift h pid 10")).rejects.toThrow(/"sift g pid 9"/);

    for (const lease of held.splice(0)) await lease.release();
    await store.db.execute("delete from sole_process");
    away = true;
    await hold("sift i pid 11", { db: flaky });
    await hold("sift j pid 12"); // the store answers it first
    away = false;
    await expect.poll(() => lost.length, { timeout: 3_000 }).toBe(1);
    expect(lost[0]).toMatch(/^sift i pid 11: .*\("sift j pid 12"/);
  });

  test("nodes with replication and a process without it are refused beside each other", async () => {
    const sole = await hold("sift k pid 13");
    const replicated = (holder: string, waitSeconds: number) =>
      announceReplicated(store.db, { holder, waitSeconds, log: silent, renewEveryMs: 100, leaseMs: 1_000 });
    await expect(replicated("sift r1 pid 14", 1)).rejects.toThrow(
      /a Sift process without replication uses this database \("sift k pid 13"\) and did not stop within 1 s/,
    );
    // Once it stops, they start; then a process without replication is refused while they run.
    const starting = replicated("sift r1 pid 14", 10);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await sole.release();
    const node = await starting;
    held.push(node);
    await expect(hold("sift l pid 15", { waitSeconds: 1 })).rejects.toThrow(
      /Sift nodes with replication use this database \(the last to report: "sift r1 pid 14"\).*set SIFT_NATS_URL on this process too/,
    );
    // Stopped (their row is left to expire): it starts once the row has expired.
    await node.release();
    const started = Date.now();
    await hold("sift l pid 15", { waitSeconds: 10 });
    expect(Date.now() - started).toBeGreaterThan(300);
  });
});
