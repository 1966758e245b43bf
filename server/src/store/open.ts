// The metadata store port: a Drizzle database over embedded PGlite (default) or PostgreSQL
// through postgres.js (DATABASE_URL). Migrations are applied in code because drizzle-kit's
// migrate command exits 1 without a message on some errors (docs/architecture.md, Tool quirks we work around).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** The handle a transaction callback receives; usable wherever a Db is. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Store {
  readonly db: Db;
  readonly kind: "pglite" | "postgres";
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The schema's migrations, run by every open. */
export const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

export async function openStore(options: { databaseUrl?: string; dataDir: string }): Promise<Store> {
  return options.databaseUrl ? openPostgres(options.databaseUrl) : openPglite(join(options.dataDir, "pglite"));
}

async function openPglite(path: string): Promise<Store> {
  const [{ PgliteThread }, { drizzle }, { migrate }] = await Promise.all([
    import("./pglite-thread.ts"),
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
  ]);
  mkdirSync(path, { recursive: true });
  // PGlite runs in a worker thread: its queries execute synchronously in WebAssembly, and on the
  // server's thread they stalled every request while one tenant wrote (D-190).
  const client = await PgliteThread.start(path);
  const db = drizzle({ client: client as never, schema });
  try {
    await migrate(db, { migrationsFolder });
  } catch (error) {
    await client.close();
    throw error;
  }
  return {
    db: db as unknown as Db,
    kind: "pglite",
    ping: () => pingDb(db as unknown as Db),
    close: () => client.close(),
  };
}

async function openPostgres(url: string): Promise<Store> {
  const [{ default: postgres }, { drizzle }, { migrate }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  const client = postgres(url, { max: 10, onnotice: () => {}, connect_timeout: 10 });
  const db = drizzle({ client, schema });
  try {
    await migrate(db, { migrationsFolder });
  } catch (error) {
    await client.end({ timeout: 1 });
    throw new Error(`cannot prepare the PostgreSQL store at DATABASE_URL: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return {
    db: db as unknown as Db,
    kind: "postgres",
    ping: () => pingDb(db as unknown as Db),
    close: () => client.end({ timeout: 5 }),
  };
}

async function pingDb(db: Db): Promise<boolean> {
  try {
    await db.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}
