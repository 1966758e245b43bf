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
    // Each worker runs file after file in one module graph instead of a fresh one per file: the
    // suite took 122 to 124 s against 160 s, every test passing in shuffled file orders too
    // (D-316). A file must not rely on module state another file left; none mocks modules,
    // stubs globals or sets process.env.
    isolate: false,
  },
});
