// Queries through Drizzle on PostgreSQL run as named prepared statements (D-286): one round trip
// each once a connection has the statement, instead of a describe and then the query. The set of
// texts that may be prepared is bounded, because PostgreSQL keeps each one per connection.
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterEach, describe, expect, test } from "vitest";
import { rowsOf, type Store } from "../../src/store/open.ts";
import { preparingStatements } from "../../src/store/prepared.ts";
import { storeTargets } from "../support/store.ts";

const url = process.env.DATABASE_URL;

describe.skipIf(!url)("prepared statements on PostgreSQL", () => {
  let client: postgres.Sql | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await client?.end({ timeout: 1 });
    await store?.close();
    client = undefined;
    store = undefined;
  });

  /** One connection, so that the statements it holds are the ones this test made. */
  function open(max?: number) {
    client = postgres(url!, { max: 1, onnotice: () => {} });
    return drizzle({ client: preparingStatements(client, max) });
  }
  const held = async (db: ReturnType<typeof open>) =>
    (await db.execute<{ statement: string }>(sql`select statement from pg_prepared_statements`)).map(
      (row) => row.statement,
    );

  test("a query with parameters is prepared once and answers the same every time", async () => {
    const db = open();
    for (const n of [1, 2, 3]) {
      const [row] = await db.execute<{ n: number }>(sql`select ${n}::int + 1 as n`);
      expect(row!.n).toBe(n + 1);
    }
    expect((await held(db)).filter((text) => text.includes("::int + 1 as n"))).toHaveLength(1);
  });

  test("queries in a transaction are prepared too, and its rollback still holds", async () => {
    const db = open();
    await db.execute(sql`create temporary table scratch (n int)`);
    await expect(
      db.transaction(async (tx) => {
        await tx.execute(sql`insert into scratch values (${7})`);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await db.execute(sql`select n from scratch`)).toHaveLength(0);
    expect((await held(db)).some((text) => text.includes("insert into scratch values"))).toBe(true);
  });

  test("a statement the server no longer holds is prepared again, and the query answers", async () => {
    const db = open();
    await db.execute(sql`select ${1}::int as again`);
    // What a pooler that hands the session another server connection, or DISCARD ALL, leaves.
    await db.execute(sql`deallocate all`);
    const [row] = await db.execute<{ again: number }>(sql`select ${2}::int as again`);
    expect(row!.again).toBe(2);
    expect((await held(db)).filter((text) => text.includes("as again"))).toHaveLength(1);
  });

  test("texts beyond the bound run unprepared and still answer", async () => {
    const db = open(2);
    for (const k of [1, 2, 3, 4]) {
      // Four texts: the alias differs.
      const [row] = await db.execute<{ n: number }>(sql`select ${k}::int as n, 1 as ${sql.raw(`k${k}`)}`);
      expect(row!.n).toBe(k);
    }
    expect((await held(db)).filter((text) => / as k\d/.test(text))).toHaveLength(2);
  });

  test("the store Sift opens on DATABASE_URL prepares its queries", async () => {
    store = await storeTargets()
      .find((target) => target.name === "postgres")!
      .open();
    // A transaction holds one connection, whose prepared statements the view lists.
    const statements = await store.db.transaction(async (tx) => {
      await tx.execute(sql`select ${1}::int as wired`);
      return rowsOf<{ statement: string }>(await tx.execute(sql`select statement from pg_prepared_statements`));
    });
    expect(statements.some((row) => row.statement.includes("as wired"))).toBe(true);
  });
});
