// When a node sweeps its region's copies of the object stores (D-326, D-329, D-332): soon after it
// opens the log, then every 10 to 20 minutes; a copy made again is looked at 15 s later, and a
// skip that NATS repeats at once is looked at less and less often, never more than the usual.
import { describe, expect, it } from "vitest";
import { sweepWait } from "../../src/replication/nats/copy-sweeps.ts";

const minutes = (ms: number) => ms / 60_000;

describe("sweepWait", () => {
  it("sweeps 5 s and 15 s after the log is opened, then every 10 to 20 minutes", () => {
    expect(sweepWait(0, 0, 0.5)).toBe(5_000);
    expect(sweepWait(1, 0, 0.5)).toBe(15_000);
    expect(minutes(sweepWait(2, 0, 0))).toBe(10);
    expect(minutes(sweepWait(9, 0, 0.999))).toBeCloseTo(20, 1);
  });

  it("looks at a copy made again 15 s later, doubling for each remake in a row", () => {
    // Remade at the node's very first sweep or much later: the same 15 s.
    expect(sweepWait(1, 1, 0.5)).toBe(15_000);
    expect(sweepWait(40, 1, 0.5)).toBe(15_000);
    expect([2, 3, 4, 5].map((inARow) => sweepWait(40, inARow, 0.5))).toEqual([30_000, 60_000, 120_000, 240_000]);
  });

  it("tries a sweep that NATS did not answer again 15 s later, doubling, not in 10 minutes (D-345)", () => {
    expect(sweepWait(2, 0, 0.5, 1)).toBe(15_000);
    expect([2, 3, 4].map((inARow) => sweepWait(40, 0, 0.5, inARow))).toEqual([30_000, 60_000, 120_000]);
    expect(sweepWait(40, 0, 0.5, 50)).toBe(sweepWait(40, 0, 0.5));
    // Answered again: the usual wait.
    expect(sweepWait(41, 0, 0.5, 0)).toBeGreaterThanOrEqual(10 * 60_000);
  });

  it("never waits longer than the usual sweep, however often the copy was remade", () => {
    for (const random of [0, 0.5, 0.999]) {
      const usual = sweepWait(40, 0, random);
      expect(sweepWait(40, 10, random)).toBe(usual);
      expect(sweepWait(40, 50, random)).toBe(usual);
    }
    // And a sweep that finds the copy whole ends the doubling: the next skip starts at 15 s again.
    expect(sweepWait(41, 0, 0.5)).toBeGreaterThanOrEqual(10 * 60_000);
  });
});
