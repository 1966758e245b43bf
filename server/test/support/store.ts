// Store targets for tests: embedded PGlite always, and the real PostgreSQL when DATABASE_URL is
// set (CI sets it). Each opened store gets a database of its own, dropped afterwards, so runs and
// test files never collide.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { openStore, type Store } from "../../src/store/open.ts";

export interface StoreTarget {
  name: "pglite" | "postgres";
  /** A fresh, migrated store; `close()` also deletes it. */
  open(): Promise<Store>;
}

export function storeTargets(): StoreTarget[] {
  const targets: StoreTarget[] = [{ name: "pglite", open: openTempPglite }];
  if (process.env.DATABASE_URL)
    targets.push({ name: "postgres", open: () => openTempPostgres(process.env.DATABASE_URL!) });
  return targets;
}

async function openTempPglite(): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), "sift-store-"));
  const store = await openStore({ dataDir: dir });
  return {
    ...store,
    db: store.db,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates `sift_test_<random>` on the server of `adminUrl`, and returns its URL. */
export async function createTempDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `sift_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists "${name}" with (force)`);
      await again.end();
    },
  };
}

async function openTempPostgres(adminUrl: string): Promise<Store> {
  const temp = await createTempDatabase(adminUrl);
  const store = await openStore({ databaseUrl: temp.url, dataDir: tmpdir() });
  return {
    ...store,
    db: store.db,
    async close() {
      await store.close();
      await temp.drop();
    },
  };
}
