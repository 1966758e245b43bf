// A store that goes away while a new connection of the pool is being set up does not end the
// process (postgres.js drops the promise of its own first query; store/errors.ts): the fixture
// cuts the connection at that query, in a process of its own, with and without Sift's guard.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, test } from "vitest";

const url = process.env.DATABASE_URL;
const fixture = path.join(import.meta.dirname, "fixtures", "store-cut-while-connecting.ts");
const run = (mode: "guarded" | "guarded-bug" | "bare") =>
  spawnSync(process.execPath, [fixture, url!, mode], { encoding: "utf8", timeout: 30_000 });

describe.skipIf(!url)("a store cut while a connection asks for its types", () => {
  test("ends a bare process with a rejection nobody could catch", () => {
    const bare = run("bare");
    expect(bare.stdout).toContain("query failed: ECONNREFUSED");
    expect(bare.stdout).not.toContain("survived");
    expect(bare.status).not.toBe(0);
    expect(bare.stderr).toContain("ECONNREFUSED");
  });

  test("leaves a process with Sift's guard running, with a warning", () => {
    const guarded = run("guarded");
    expect(guarded.stdout).toContain("query failed: ECONNREFUSED");
    expect(guarded.stdout).toContain("survived");
    expect(guarded.status).toBe(0);
    expect(guarded.stdout + guarded.stderr).toContain("a store query nobody waited for failed");
  });

  test("still ends a process with the guard on any other rejection nobody waited for", () => {
    const bug = run("guarded-bug");
    expect(bug.stdout).not.toContain("survived");
    expect(bug.status).not.toBe(0);
    expect(bug.stderr).toContain("a rejection of the fixture's own");
  });
});
