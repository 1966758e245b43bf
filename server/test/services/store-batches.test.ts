// With replication, a writer's store rows (D-284): the rows of log entries made while the index's
// previous statement runs go into the store together in the next, in version order, and each
// write's rows resolve once they are in (readers wait for that: settled, D-295). One statement per
// entry before: at 500 writes/s an index's statements queued behind each other.
import { afterEach, describe, expect, test } from "vitest";
import { and, eq, gt } from "drizzle-orm";
import type { ChangeRow } from "../../src/services/versions/change-rows.ts";
import { StoreBatches } from "../../src/services/versions/store-batches.ts";
import type { Db } from "../../src/store/open.ts";
import { tombstones, versions } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("a writer's store rows with replication, on $name", (target) => {
  let services: TestServices | undefined;
  afterEach(async () => {
    await services?.close();
    services = undefined;
  });

  /** The store behind a gate: the first statement waits for `release`; every statement is counted. */
  async function open() {
    services = await openServices(target, { tenantId: "ten_s" });
    await services.catalog.createIndex("ten_s", { name: "shop", serviceName: "ten_s-shop" });
    const ref = (await services.catalog.byName("ten_s", "shop"))!;
    const real = services.store.db;
    const statements: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    /** The statement (counted from 1) that the store refuses. */
    let failAt = 0;
    /** The second statement waits for this too (not held unless a test holds it). */
    let second: Promise<void> = Promise.resolve();
    let releaseSecond = () => {};
    const db = Object.assign(Object.create(real) as Db, {
      execute: async (query: Parameters<Db["execute"]>[0]) => {
        statements.push("statement");
        if (statements.length === 1) await gate;
        if (statements.length === 2) await second;
        if (statements.length === failAt) {
          throw new Error("the store refused the statement");
        }
        return real.execute(query);
      },
    });
    const row = (minor: number, deleted: string[] = []): ChangeRow => ({
      indexId: ref.id,
      version: `0.${minor}`,
      parent: `0.${minor - 1}`,
      kind: "change",
      records: minor,
      createdAt: 1_000 + minor,
      purgedRecordId: null,
      purgedBy: null,
      rewritten: deleted.length ? [] : [`r${minor}`],
      deleted,
    });
    const listed = async () =>
      (
        await real
          .select({ version: versions.version })
          .from(versions)
          .where(and(eq(versions.indexId, ref.id), gt(versions.minor, 0)))
          .orderBy(versions.minor)
      ).map((r) => r.version);
    const tombstonesNow = async () =>
      (
        await real
          .select({ id: tombstones.recordId })
          .from(tombstones)
          .where(eq(tombstones.indexId, ref.id))
          .orderBy(tombstones.recordId)
      ).map((r) => r.id);
    return {
      batches: new StoreBatches(db),
      ref,
      row,
      statements,
      release,
      failStatement: (n: number) => (failAt = n),
      holdSecond: () => (second = new Promise<void>((r) => (releaseSecond = r))),
      releaseSecond: () => releaseSecond(),
      listed,
      tombstonesNow,
    };
  }

  test("rows given while a statement runs are recorded together in the next, each write answered once its rows are in", async () => {
    const { batches, ref, row, statements, release, listed, tombstonesNow } = await open();
    const answered: string[] = [];
    const first = batches.record(ref.id, async () => [row(1)], undefined).then(() => answered.push("0.1"));
    // The first statement is held: these wait, and go together.
    const queued = [2, 3, 4].map((minor) =>
      batches
        .record(ref.id, async () => [row(minor, minor === 3 ? ["r1"] : [])], undefined)
        .then(() => answered.push(`0.${minor}`)),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(answered).toEqual([]);
    release();
    await Promise.all([first, ...queued]);
    expect(statements).toHaveLength(2);
    expect(answered).toEqual(["0.1", "0.2", "0.3", "0.4"]);
    expect(await listed()).toEqual(["0.1", "0.2", "0.3", "0.4"]);
    // Applied in version order: the delete of r1 in 0.3 leaves its tombstone.
    expect(await tombstonesNow()).toEqual(["r1"]);
  });

  test("settled waits for the statements of the rows given so far, written or refused, and not for later ones", async () => {
    const { batches, ref, row, release, failStatement, holdSecond, releaseSecond, listed } = await open();
    const refused = batches.record(ref.id, async () => [row(1)], undefined);
    let settled = false;
    const settling = batches.settled(ref.id).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    // Given after settled was asked, into a second statement that is held: not waited for.
    holdSecond();
    const later = batches.record(ref.id, async () => [row(2)], undefined);
    failStatement(1);
    release();
    await settling;
    await expect(refused).rejects.toThrow("the store refused the statement");
    expect(await listed()).toEqual([]);
    releaseSecond();
    await later;
    expect(await listed()).toEqual(["0.2"]);
    // Nothing given: nothing to wait for.
    await batches.settled("another-index");
  });

  test("a statement the store refuses fails only the writes in it; the next ones are recorded", async () => {
    const { batches, ref, row, release, failStatement, listed } = await open();
    const first = batches.record(ref.id, async () => [row(1)], undefined);
    const refused = [2, 3].map((minor) => batches.record(ref.id, async () => [row(minor)], undefined));
    failStatement(2);
    release();
    await first;
    for (const write of refused) await expect(write).rejects.toThrow("the store refused the statement");
    await batches.record(ref.id, async () => [row(2), row(3)], undefined);
    expect(await listed()).toEqual(["0.1", "0.2", "0.3"]);
  });
});
