import { defineConfig } from "vitest/config";

// Files that drive Chromium and time what a person sees, or pack and install every package, run
// one at a time after the rest: on two cores, a second file beside them makes their timings unlike
// a user's (seen as flakes), and the packing took 62 s beside others against 35 s alone. Files
// that start NATS clusters and several Sift nodes run four at a time among themselves, before
// those: they mostly wait on elections and timers, leaving a third to half of the cores idle
// (153 s against 206 s three at a time, D-297, D-313, D-377). The rest run two at a time, about
// twice as fast (docs/DECISIONS.md, D-241).
const CLUSTERS = ["replication/**"];
const ONE_AT_A_TIME = ["browser/**", "packages/**"];
// The fuzzer against two replicating nodes keeps both cores busy, unlike the other cluster files:
// beside them it starved their NATS servers (timeouts, a node taken for gone), so it runs alone.
const BUSY_CLUSTERS = ["replication/fuzz.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    exclude: ["node_modules/**"],
    // What a test process that died of a native failure printed, again at the end of the run.
    globalSetup: ["../server/test/support/fatal-echo.ts"],
    // expect.poll waits for a state the page or server must reach (a search answered and drawn);
    // the default second is too short on a loaded machine (seen failing at load 10 on 2 cores),
    // and a state that never comes still fails, only later.
    expect: { poll: { timeout: 5_000 } },
    projects: [
      {
        extends: true,
        test: {
          name: "side-by-side",
          include: ["**/*.test.ts"],
          exclude: ["node_modules/**", ...CLUSTERS, ...ONE_AT_A_TIME],
          maxWorkers: 2,
          // Files reuse their worker's module graph (the in-process Sift's modules are loaded
          // once per worker, not per file): 154 s against 192 s (D-316). Not without
          // DATABASE_URL: each file's Sift then opens PGlite, and a process that frees many
          // PGlite modules' code met a failed V8 check in the server's suite.
          isolate: !process.env.DATABASE_URL,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "clusters",
          include: CLUSTERS.map((dir) => `${dir}/*.test.ts`),
          exclude: ["node_modules/**", ...BUSY_CLUSTERS],
          maxWorkers: 4,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "one-at-a-time",
          include: [...ONE_AT_A_TIME.map((dir) => `${dir}/*.test.ts`), ...BUSY_CLUSTERS],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
