// Failed log-ins slow the next attempts (auth/login-throttle.ts), counted in the store so that
// every node of a deployment sees the same failures (D-322).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FREE_FAILURES, LoginThrottle } from "../../src/auth/login-throttle.ts";
import type { Store } from "../../src/store/open.ts";
import { storeTargets } from "../support/store.ts";

for (const target of storeTargets()) {
  describe(`login throttle (${target.name})`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await target.open();
    });
    afterEach(() => store.close());

    it("lets an account fail 5 times, then makes each attempt wait twice as long, up to 15 minutes", async () => {
      let now = 1_000_000;
      const throttle = new LoginThrottle(store.db, () => now);
      for (let i = 0; i < FREE_FAILURES.account; i++) {
        expect(await throttle.waitMs("a@x.example", "10.0.0.1")).toBe(0);
        await throttle.failed("a@x.example", "10.0.0.1");
      }
      expect(await throttle.waitMs("a@x.example", "10.0.0.1")).toBe(0);
      const waits: number[] = [];
      for (let i = 0; i < 14; i++) {
        await throttle.failed("a@x.example", "10.0.0.1");
        waits.push(await throttle.waitMs("a@x.example", "10.0.0.2"));
        now += waits[waits.length - 1]!;
      }
      expect(waits.slice(0, 5)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
      expect(Math.max(...waits)).toBe(15 * 60_000);
      // Another account from another address is not held up; a success clears the account.
      expect(await throttle.waitMs("b@x.example", "10.0.0.3")).toBe(0);
      await throttle.succeeded("a@x.example");
      expect(await throttle.waitMs("a@x.example", "10.0.0.3")).toBe(0);
    });

    it("holds up an address that fails across many accounts", async () => {
      const throttle = new LoginThrottle(store.db, () => 0);
      for (let i = 0; i < FREE_FAILURES.address; i++) await throttle.failed(`user${i}@x.example`, "10.9.9.9");
      expect(await throttle.waitMs("new@x.example", "10.9.9.9")).toBe(0);
      await throttle.failed("another@x.example", "10.9.9.9");
      expect(await throttle.waitMs("new@x.example", "10.9.9.9")).toBe(1_000);
      expect(await throttle.waitMs("new@x.example", "10.1.1.1")).toBe(0);
    });

    it("counts the failures of every node on the store together, at once too", async () => {
      // Two nodes of one deployment: each its own throttle, one store.
      const nodes = [new LoginThrottle(store.db, () => 0), new LoginThrottle(store.db, () => 0)];
      await Promise.all(
        Array.from({ length: FREE_FAILURES.account + 1 }, (_, i) => nodes[i % 2]!.failed("c@x.example", `10.0.1.${i}`)),
      );
      for (const node of nodes) expect(await node.waitMs("c@x.example", "10.0.2.1")).toBe(1_000);
      await nodes[1]!.succeeded("c@x.example");
      expect(await nodes[0]!.waitMs("c@x.example", "10.0.2.1")).toBe(0);
    });

    it("forgets a count a day old", async () => {
      let now = 5_000_000;
      const throttle = new LoginThrottle(store.db, () => now);
      for (let i = 0; i <= FREE_FAILURES.account; i++) await throttle.failed("d@x.example", undefined);
      expect(await throttle.waitMs("d@x.example", undefined)).toBe(1_000);
      now += 24 * 3_600_000 + 1;
      await throttle.failed("d@x.example", undefined);
      expect(await throttle.waitMs("d@x.example", undefined)).toBe(0);
    });
  });
}
