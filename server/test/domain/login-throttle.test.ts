import { describe, expect, it } from "vitest";
import { FREE_FAILURES, LoginThrottle } from "../../src/auth/login-throttle.ts";

describe("login throttle", () => {
  it("lets an account fail 5 times, then makes each attempt wait twice as long, up to 15 minutes", () => {
    let now = 0;
    const throttle = new LoginThrottle(() => now);
    for (let i = 0; i < FREE_FAILURES.account; i++) {
      expect(throttle.waitMs("a@x.example", "10.0.0.1")).toBe(0);
      throttle.failed("a@x.example", "10.0.0.1");
    }
    expect(throttle.waitMs("a@x.example", "10.0.0.1")).toBe(0);
    const waits: number[] = [];
    for (let i = 0; i < 14; i++) {
      throttle.failed("a@x.example", "10.0.0.1");
      waits.push(throttle.waitMs("a@x.example", "10.0.0.2"));
      now += waits[waits.length - 1]!;
    }
    expect(waits.slice(0, 5)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
    expect(Math.max(...waits)).toBe(15 * 60_000);
    // Another account from another address is not held up; a success clears the account.
    expect(throttle.waitMs("b@x.example", "10.0.0.3")).toBe(0);
    throttle.succeeded("a@x.example");
    expect(throttle.waitMs("a@x.example", "10.0.0.3")).toBe(0);
  });

  it("holds up an address that fails across many accounts", () => {
    const throttle = new LoginThrottle(() => 0);
    for (let i = 0; i < FREE_FAILURES.address; i++) throttle.failed(`user${i}@x.example`, "10.9.9.9");
    expect(throttle.waitMs("new@x.example", "10.9.9.9")).toBe(0);
    throttle.failed("another@x.example", "10.9.9.9");
    expect(throttle.waitMs("new@x.example", "10.9.9.9")).toBe(1_000);
    expect(throttle.waitMs("new@x.example", "10.1.1.1")).toBe(0);
  });
});
