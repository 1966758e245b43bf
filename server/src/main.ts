#!/usr/bin/env node
// Starts Sift (start.ts) with Node's module compile cache on: later starts load the server's
// modules already stripped of their types and compiled, and serve about 0.4 s sooner (D-304),
// which is also how much sooner a node restarted after a crash serves again. The cache is keyed
// by each file's content, so a changed file is compiled again; NODE_COMPILE_CACHE picks its
// folder (os.tmpdir()/node-compile-cache by default) and NODE_DISABLE_COMPILE_CACHE turns it off.
import module from "node:module";

const cache = module.enableCompileCache?.();
// Worker threads (segment builds, file transfers) find it through the environment.
if (cache?.directory && process.env.NODE_COMPILE_CACHE === undefined) process.env.NODE_COMPILE_CACHE = cache.directory;

// Imports within drizzle-orm resolved without re-reading its package.json each time (D-327).
const { registerModuleHooks } = await import("./module-hooks.ts");
registerModuleHooks();

// On the embedded store, PGlite's own start (the longest part of a restart) goes on while the
// server's modules load (D-331). A bad setting is left to start.ts, which reports it.
if (!process.env.DATABASE_URL) {
  const [{ loadConfig }, { startPgliteEarly }] = await Promise.all([
    import("./config.ts"),
    import("./store/early-pglite.ts"),
  ]);
  let config: ReturnType<typeof loadConfig> | undefined;
  // biome-ignore lint/plugin: start.ts reads the configuration again and reports what is wrong with it.
  try {
    config = loadConfig();
  } catch {}
  if (config !== undefined) startPgliteEarly(config.dataDir);
}

await import("./start.ts");
