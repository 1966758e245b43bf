import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    include: ["test/**/*.test.ts"],
    // What a test process that died of a native failure printed, again at the end of the run.
    globalSetup: ["test/support/fatal-echo.ts"],
    // Two files at a time on the CI's two cores (vitest's default there is one): the suite took
    // 78 to 84 s against 177 s, with the same tests passing (docs/DECISIONS.md, D-241).
    maxWorkers: 2,
    // A fresh process per file (vitest's default), although sharing the workers' modules took
    // 122 s against 160 s: one of six such runs died of a V8 check on freeing WebAssembly code
    // (PGlite's), which a process that lives through every file's databases meets (D-316).
    // That check failed again in a process of its own (auto-coalesce.test.ts, 2026-12-03): V8's
    // collection of WebAssembly code no longer used (tiered-up functions, threads' ends) is off in
    // test processes, so PGlite's code is never freed there (D-361).
    execArgv: ["--no-wasm-code-gc"],
  },
});
