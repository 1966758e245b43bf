// The metadata store port: a Drizzle database over embedded PGlite (default) or PostgreSQL
// through postgres.js (DATABASE_URL). Migrations are applied in code because drizzle-kit's
// migrate command exits 1 without a message on some errors (docs/architecture.md, Tool quirks we work around).
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type { Logger } from "../log.ts";
import { within } from "../within.ts";
import { isStoreUnreachable } from "./errors.ts";
import { pglitePath } from "./early-pglite.ts";
import { type Lookup, primaryOnly, replicaFirst } from "./lookup.ts";
import type { PgliteThread } from "./pglite-thread.ts";
import { preparingStatements } from "./prepared.ts";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** The handle a transaction callback receives; usable wherever a Db is. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** The rows `db.execute` answered. Drivers differ: postgres.js answers the rows, PGlite an object holding them. */
export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as T[];
}

export interface Store {
  readonly db: Db;
  /**
   * Lookups on the request path (API keys, indexes by name): the region's read replica first
   * (DATABASE_READ_URL), the primary when it lacks the row or does not answer (store/lookup.ts).
   */
  readonly lookup: Lookup;
  readonly kind: "pglite" | "postgres";
  ping(): Promise<boolean>;
  /** Whether the read replica answers; absent without one. */
  pingReplica?(): Promise<boolean>;
  close(): Promise<void>;
}

/** The schema's migrations, run by every open. */
export const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

export async function openStore(options: {
  databaseUrl?: string;
  databaseReadUrl?: string;
  dataDir: string;
  log?: Logger;
  /** PGlite's thread, already starting on this data directory (early-pglite.ts). */
  pglite?: Promise<PgliteThread>;
}): Promise<Store> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.databaseReadUrl, options.log)
    : openPglite(pglitePath(options.dataDir), options.pglite);
}

async function openPglite(path: string, started?: Promise<PgliteThread>): Promise<Store> {
  const [{ PgliteThread }, { drizzle }, { migrate }] = await Promise.all([
    import("./pglite-thread.ts"),
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
  ]);
  mkdirSync(path, { recursive: true });
  // PGlite runs in a worker thread: its queries execute synchronously in WebAssembly, and on the
  // server's thread they stalled every request while one tenant wrote (D-190).
  const client = await (started ?? PgliteThread.start(path));
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
  const client = postgres(url, { max: 10, onnotice: () => {}, connect_timeout: 10, backoff: reconnectDelay });
  const db = drizzle({ client: preparingStatements(client), schema });
  // A replica is read-only and migrated by its primary; its connections open on first use, so a
  // replica that does not answer yet does not stop the node from starting.
  const replica = readUrl
    ? postgres(readUrl, { max: 10, onnotice: () => {}, connect_timeout: 5, backoff: reconnectDelay })
    : undefined;
  let migrating: ReturnType<typeof setTimeout> | undefined;
  try {
    await migrate(db, { migrationsFolder });
  } catch (error) {
    // The primary out of reach, and the region's replica shows the schema this code expects: the
    // node starts on the replica's lookups (D-276), and migrates (a no-op) once the primary answers.
    if (replica && isStoreUnreachable(error) && (await schemaCurrent(replica))) {
      log?.warn("the primary PostgreSQL (DATABASE_URL) does not answer; starting on the read replica", {
        error: (error as Error).message,
      });
      const retry = () => {
        migrating = setTimeout(() => {
          migrate(db, { migrationsFolder }).then(
            () => log?.info("the primary PostgreSQL answers again; its schema is current"),
            (failure: Error) => {
              // Still out of reach is what is expected meanwhile; anything else is worth reading.
              if (!isStoreUnreachable(failure))
                log?.error("the primary's migrations failed; trying again", { error: failure.message });
              retry();
            },
          );
        }, MIGRATE_RETRY_MS);
        migrating.unref();
      };
      retry();
    } else {
      await Promise.all([client.end({ timeout: 1 }), replica?.end({ timeout: 1 })]);
      throw new Error(`cannot prepare the PostgreSQL store at DATABASE_URL: ${rootMessage(error)}`, {
        cause: error,
      });
    }
  }
  const primaryDb = db as unknown as Db;
  const replicaDb = replica ? (drizzle({ client: preparingStatements(replica), schema }) as unknown as Db) : undefined;
  return {
    db: primaryDb,
    lookup: replicaDb ? replicaFirst(primaryDb, replicaDb, log) : primaryOnly(primaryDb, { bounded: true }),
    kind: "postgres",
    // Bounded too: a primary that hangs would hold /readyz for good (D-350).
    ping: () => within(2_000, "pinging the store", pingDb(primaryDb)).catch(() => false),
    // Bounded: a replica whose host does not answer would hold /readyz for its connect timeout.
    ...(replicaDb
      ? {
          pingReplica: () =>
            // Not answered within the bound: reported as not answering.
            within(1_000, "pinging the read replica", pingDb(replicaDb)).catch(() => false),
        }
      : {}),
    close: async () => {
      clearTimeout(migrating);
      await Promise.all([client.end({ timeout: 5 }), replica?.end({ timeout: 5 })]);
    },
  };
}

/**
 * Seconds before a connection of the pool tries again after failing: at most one. postgres.js
 * waits (0.5 to 1) x 3^failures / 100 s, up to 20 s, and a query waits that long for its
 * connection before it even fails. While the store was unreachable a replicated node's background
 * retries made those failures add up, and a lookup that would have been answered from its cache
 * waited 11 s to learn that the store was down (D-296).
 */
const reconnectDelay = (failures: number): number => (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** failures, 1);

/** How often a node that started on its replica tries the primary's migrations again. */
const MIGRATE_RETRY_MS = 5_000;

/**
 * Whether the replica's schema has every migration this code ships: drizzle records each applied
 * migration with its journal time, and applies those newer than the last one recorded.
 */
async function schemaCurrent(replica: import("postgres").Sql): Promise<boolean> {
  const journal = JSON.parse(readFileSync(join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: { when: number }[];
  };
  const newest = Math.max(...journal.entries.map((e) => e.when));
  try {
    const [row] = await replica`select max(created_at)::text as last from drizzle.__drizzle_migrations`;
    return Number(row?.last ?? 0) >= newest;
  } catch {
    // A replica that does not answer either cannot vouch for the schema.
    return false;
  }
}

async function pingDb(db: Db): Promise<boolean> {
  try {
    await db.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}

/**
 * What went wrong at the bottom: Drizzle wraps the driver's error in "Failed query: <sql>", which
 * hid the reason a start failed (database "x" does not exist, connection refused) (D-368).
 */
function rootMessage(error: unknown): string {
  let root = error as Error;
  while (root.cause instanceof Error) root = root.cause;
  return root.message || String(root);
}
