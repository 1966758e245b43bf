// The metadata store port: a Drizzle database over embedded PGlite (default) or PostgreSQL
// through postgres.js (DATABASE_URL). Migrations are applied in code because drizzle-kit's
// migrate command exits 1 without a message on some errors (docs/architecture.md, Tool quirks we work around).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type { Logger } from "../log.ts";
import { type Lookup, primaryOnly, replicaFirst } from "./lookup.ts";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** The handle a transaction callback receives; usable wherever a Db is. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Store {
  readonly db: Db;
  /**
   * Lookups on the request path (API keys, indexes by name): the region's read replica first
   * (DATABASE_READ_URL), the primary when it lacks the row or does not answer (store/lookup.ts).
   */
  readonly lookup: Lookup;
  readonly kind: "pglite" | "postgres";
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The schema's migrations, run by every open. */
export const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

export async function openStore(options: {
  databaseUrl?: string;
  databaseReadUrl?: string;
  dataDir: string;
  log?: Logger;
}): Promise<Store> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.databaseReadUrl, options.log)
    : openPglite(join(options.dataDir, "pglite"));
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
    lookup: primaryOnly(db as unknown as Db),
    kind: "pglite",
    ping: () => pingDb(db as unknown as Db),
    close: () => client.close(),
  };
}

async function openPostgres(url: string, readUrl: string | undefined, log: Logger | undefined): Promise<Store> {
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
  // A replica is read-only and migrated by its primary; its connections open on first use, so a
  // replica that does not answer yet does not stop the node from starting.
  const replica = readUrl ? postgres(readUrl, { max: 10, onnotice: () => {}, connect_timeout: 5 }) : undefined;
  return {
    db: db as unknown as Db,
    lookup: replica
      ? replicaFirst(db as unknown as Db, drizzle({ client: replica, schema }) as unknown as Db, log)
      : primaryOnly(db as unknown as Db),
    kind: "postgres",
    ping: () => pingDb(db as unknown as Db),
    close: async () => {
      await Promise.all([client.end({ timeout: 5 }), replica?.end({ timeout: 5 })]);
    },
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
