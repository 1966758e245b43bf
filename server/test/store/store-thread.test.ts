// The store never holds the server's event loop while a query runs, and behaves as a database:
// transactions commit or roll back whole, and constraint errors keep PostgreSQL's code. Run on
// every store target (PGlite in its worker thread; PostgreSQL when DATABASE_URL is set).
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/open.ts";
import { isUniqueViolation } from "../../src/store/errors.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("the store on $name", (target) => {
  let store: Store;
  beforeAll(async () => {
    store = await target.open();
    await store.db.execute(sql`create table probe (id text primary key, n int not null)`);
  });
  afterAll(() => store.close());

  it("answers timers while a slow query runs", async () => {
    // pg_sleep in PGlite spins inside WebAssembly: on the server's thread no timer could fire
    // until it returned (that was the cause of 1.7 s /healthz waits under writes, D-190).
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    await store.db.execute(sql`select pg_sleep(0.5)`);
    clearInterval(timer);
    expect(ticks).toBeGreaterThanOrEqual(10);
  });

  it("commits a transaction whole, and rolls one back whole", async () => {
    await store.db.transaction(async (tx) => {
      await tx.execute(sql`insert into probe values ('a', 1)`);
      await tx.execute(sql`insert into probe values ('b', 2)`);
    });
    await expect(
      store.db.transaction(async (tx) => {
        await tx.execute(sql`insert into probe values ('c', 3)`);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    const rows = await store.db.execute(sql`select id from probe order by id`);
    expect(JSON.stringify(rows)).toContain('"a"');
    expect(JSON.stringify(rows)).toContain('"b"');
    expect(JSON.stringify(rows)).not.toContain('"c"');
  });

  it("keeps a query outside a transaction out of it", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inside = store.db.transaction(async (tx) => {
      await tx.execute(sql`update probe set n = 100 where id = 'a'`);
      await held;
      throw new Error("roll back");
    });
    // Asked while the transaction is open: it must see neither its write nor wait forever.
    const outside = store.db.execute(sql`select n from probe where id = 'a'`);
    setTimeout(release, 50);
    await expect(inside).rejects.toThrow("roll back");
    expect(JSON.stringify(await outside)).toContain("1");
    expect(JSON.stringify(await outside)).not.toContain("100");
  });

  it("reports a unique violation with PostgreSQL's code", async () => {
    const error = await store.db.execute(sql`insert into probe values ('a', 9)`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isUniqueViolation(error)).toBe(true);
  });
});
