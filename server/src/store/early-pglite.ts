// On the embedded store (no DATABASE_URL) most of a restart is PGlite's own start in its thread
// (about 1 s here), which used to begin only after the server's ~500 modules had loaded. main.ts
// calls startPgliteEarly before loading them, so both go on at once; composeSift takes the lock
// and the thread over (D-331).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { lockDataDir } from "../data-dir-lock.ts";
import { compileModulesNow, type PgliteModules, PgliteThread } from "./pglite-thread.ts";

export interface EarlyPglite {
  lock: { release(): void };
  thread: Promise<PgliteThread>;
}

let early: (EarlyPglite & { dataDir: string }) | undefined;

/** PGlite's database folder in a data directory. */
export const pglitePath = (dataDir: string) => join(dataDir, "pglite");

/**
 * Takes `dataDir`'s lock and starts PGlite's thread on it. Anything that fails here is left to
 * composeSift, which does the same again and reports it (a directory in use names its holder).
 */
export function startPgliteEarly(dataDir: string): void {
  let lock: { release(): void } | undefined;
  try {
    mkdirSync(pglitePath(dataDir), { recursive: true });
    lock = lockDataDir(dataDir);
  } catch {
    return;
  }
  let modules: PgliteModules | undefined;
  // biome-ignore lint/plugin: the thread's start then compiles them again, and reports what fails.
  try {
    modules = compileModulesNow();
  } catch {}
  // Synchronously started: an await here would wait for the server's modules to load.
  const thread = modules
    ? PgliteThread.startWith(pglitePath(dataDir), modules)
    : PgliteThread.start(pglitePath(dataDir));
  // biome-ignore lint/plugin: the store's open awaits the same promise and reports its failure.
  thread.catch(() => {});
  early = { dataDir, lock, thread };
}

/** What startPgliteEarly began for `dataDir`, once; undefined if nothing was. */
export function takeEarlyPglite(dataDir: string): EarlyPglite | undefined {
  if (early?.dataDir !== dataDir) return undefined;
  const taken = early;
  early = undefined;
  return taken;
}
