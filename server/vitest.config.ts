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
    // Files reuse their worker's process and modules: 145 s against 238 s, every test passing, in
    // a slow hour when the suite is CPU-bound (D-383). D-316 had gone back to a process per file
    // after one of six such runs died of a V8 check on freeing WebAssembly code (PGlite's); that
    // check failed in a process of its own too (2026-12-03), and V8's collection of WebAssembly
    // code no longer used is now off in test processes, so PGlite's code is never freed there
    // and the check's path is never taken (D-361).
    isolate: false,
    execArgv: ["--no-wasm-code-gc"],
  },
});
