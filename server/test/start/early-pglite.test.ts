// PGlite started before the server's modules load (early-pglite.ts, D-331): the data directory's
// lock is taken and the thread opens the database; the store's open takes both over, once, and
// only for that directory. A directory another process holds starts nothing: the start then
// reports the holder as before.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { DataDirLockedError, lockDataDir } from "../../src/data-dir-lock.ts";
import { startPgliteEarly, takeEarlyPglite } from "../../src/store/early-pglite.ts";
import { openStore } from "../../src/store/open.ts";
import { migratedPgliteDataDir } from "../support/store.ts";

describe("PGlite started early", () => {
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "sift-early-"));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  test("holds the directory's lock, and the store opens on the thread it started", async () => {
    // A restart's directory: PGlite's database is there, migrated (a new one takes seconds to make).
    const dir = await migratedPgliteDataDir();
    dirs.push(dir);
    startPgliteEarly(dir);
    expect(JSON.parse(readFileSync(join(dir, "sift.lock"), "utf8")).pid).toBe(process.pid);
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
    expect(takeEarlyPglite(join(dir, "elsewhere"))).toBeUndefined();
    const early = takeEarlyPglite(dir)!;
    expect(early).toBeDefined();
    // Taken once: a second open of the directory in this process starts its own.
    expect(takeEarlyPglite(dir)).toBeUndefined();
    const store = await openStore({ dataDir: dir, pglite: early.thread });
    try {
      expect(store.kind).toBe("pglite");
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
      early.lock.release();
    }
    expect(() => lockDataDir(dir).release()).not.toThrow();
  });

  test("starts nothing on a directory whose lock is held", () => {
    const dir = dataDir();
    const held = lockDataDir(dir);
    try {
      startPgliteEarly(dir);
      expect(takeEarlyPglite(dir)).toBeUndefined();
    } finally {
      held.release();
    }
  });
});
