import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    include: ["**/*.test.ts"],
    exclude: ["node_modules/**"],
    // expect.poll waits for a state the page or server must reach (a search answered and drawn);
    // the default second is too short on a loaded machine (seen failing at load 10 on 2 cores),
    // and a state that never comes still fails, only later.
    expect: { poll: { timeout: 5_000 } },
  },
});
