// Store targets for tests: embedded PGlite always, and the real PostgreSQL when DATABASE_URL is
// set (CI sets it). Each opened store gets a database of its own, dropped afterwards, so runs and
// test files never collide.
import { createHash, randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import postgres from "postgres";
import { migrationsFolder, openStore, type Store } from "../../src/store/open.ts";

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

/**
 * A migrated PGlite data directory that each test's store starts as a copy of. Creating one runs
 * PGlite's initdb, 3 to 4 s on a 2-core machine, and the server suite opens dozens; opening a
 * copy takes under 1 s. Made once per set of migrations and PGlite version, and shared by every
 * test file (and every run) through the temp directory: it is renamed into place whole, so a
 * reader never sees a half-made one.
 */
async function makePgliteTemplate(): Promise<string> {
  const hash = createHash("sha256");
  // PGlite's own package.json (not exported): its version decides the data directory's format.
  hash.update(
    readFileSync(join(dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite")), "../package.json")),
  );
  for (const entry of readdirSync(migrationsFolder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    hash.update(relative(migrationsFolder, path)).update(readFileSync(path));
  }
  const template = join(tmpdir(), `sift-pglite-template-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(template)) return template;
  const building = mkdtempSync(join(tmpdir(), "sift-pglite-building-"));
  const store = await openStore({ dataDir: building });
  await store.close();
  // Another test file may have made it meanwhile: theirs is the same, and ours goes.
  try {
    renameSync(building, template);
  } catch {
    rmSync(building, { recursive: true, force: true });
  }
  return template;
}

/** Found or made once per test file, however many stores it opens. */
let pgliteTemplate: Promise<string> | undefined;

/** A new data directory holding a migrated PGlite database (a copy of the template); the caller removes it. */
export async function migratedPgliteDataDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "sift-store-"));
  pgliteTemplate ??= makePgliteTemplate();
  cpSync(await pgliteTemplate, dir, { recursive: true });
  return dir;
}

async function openTempPglite(): Promise<Store> {
  const dir = await migratedPgliteDataDir();
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
