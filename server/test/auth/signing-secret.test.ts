// The key that signs upload URLs and OAuth state (D-321): the nodes of a deployment sharing a
// PostgreSQL sign alike without being told a secret; a lone embedded store keeps its own.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signingSecret } from "../../src/auth/signing-secret.ts";
import { createLogger } from "../../src/log.ts";
import type { Store } from "../../src/store/open.ts";
import { storeTargets } from "../support/store.ts";

const log = createLogger("silent");
const dirs: string[] = [];
const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "sift-secret-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const keyFile = (dir: string) => Buffer.from(readFileSync(join(dir, "signing.key"), "utf8"), "base64");

for (const target of storeTargets()) {
  describe(`the signing key (${target.name})`, () => {
    it("SIFT_SIGNING_SECRET wins, and nothing is written for it", async () => {
      const store = await target.open();
      try {
        const dir = dataDir();
        const key = await signingSecret({ signingSecret: "configured", dataDir: dir }, store, log);
        expect(key.toString("utf8")).toBe("configured");
        const next = await signingSecret({ signingSecret: undefined, dataDir: dir }, store, log);
        expect(next.toString("utf8")).not.toBe("configured");
      } finally {
        await store.close();
      }
    });

    it(
      target.name === "postgres"
        ? "is one for every node of the database, the first node's own, kept across restarts"
        : "is the data dir's own, kept across restarts",
      async () => {
        const store = await target.open();
        try {
          const [first, second] = [dataDir(), dataDir()];
          const a = await signingSecret({ signingSecret: undefined, dataDir: first }, store, log);
          const b = await signingSecret({ signingSecret: undefined, dataDir: second }, store, log);
          expect(a.length).toBe(32);
          // The first node's key, as its data dir holds it: URLs it signed before stay valid.
          expect(a.equals(keyFile(first))).toBe(true);
          expect(b.equals(a)).toBe(target.name === "postgres");
          expect(b.equals(keyFile(second))).toBe(target.name === "pglite");
          expect((await signingSecret({ signingSecret: undefined, dataDir: second }, store, log)).equals(b)).toBe(true);
        } finally {
          await store.close();
        }
      },
    );
  });
}

describe("the signing key, with the store out of reach", () => {
  it("is the node's own, rather than no start", async () => {
    const dir = dataDir();
    const failing = new Error("connect ECONNREFUSED");
    const store = {
      kind: "postgres",
      db: {} as Store["db"],
      lookup: async () => {
        throw failing;
      },
    } satisfies Pick<Store, "db" | "lookup" | "kind">;
    const key = await signingSecret({ signingSecret: undefined, dataDir: dir }, store, log);
    expect(key.equals(keyFile(dir))).toBe(true);
  });
});
