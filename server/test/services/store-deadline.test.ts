// A service's calls bounded for a store that hangs (D-360): the bounded ones answer 503 in time
// and say whether a change may still be applied; the rest wait as before, and the call goes on.
import { describe, expect, test } from "vitest";
import { UnavailableError } from "../../src/domain/errors.ts";
import { withStoreDeadline } from "../../src/services/store-deadline.ts";

/** A service whose every call waits for `release`, counting the calls that finished. */
class Held {
  finished: string[] = [];
  private releases: (() => void)[] = [];
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  private wait(name: string): Promise<string> {
    return new Promise((resolve) =>
      this.releases.push(() => {
        this.finished.push(name);
        resolve(name);
      }),
    );
  }
  async create(): Promise<string> {
    return this.wait("create");
  }
  async list(): Promise<string> {
    return this.wait("list");
  }
  async purge(): Promise<string> {
    return this.wait("purge");
  }
  /** A call through the service itself: not bounded twice, nor at all. */
  async createTwice(): Promise<string> {
    await this.create();
    return this.create();
  }
}

describe("withStoreDeadline", () => {
  test("a bounded call answers 503 when the bound runs out, and goes on to its end", async () => {
    const held = new Held();
    const bounded = withStoreDeadline(held, 50, { reads: ["list"], changes: ["create"] });
    const create = bounded.create().catch((error: unknown) => error);
    const list = bounded.list().catch((error: unknown) => error);
    const purge = bounded.purge();
    const [created, listed] = await Promise.all([create, list]);
    expect(created).toBeInstanceOf(UnavailableError);
    expect((created as UnavailableError).message).toBe(
      "the metadata store did not answer within 0.05 s; this change is applied if the store records it when it answers: look before sending it again",
    );
    expect((created as UnavailableError).retryAfterSeconds).toBe(5);
    expect((listed as UnavailableError).message).toBe(
      "the metadata store did not answer within 0.05 s; try again shortly",
    );
    // The unbounded call still waits; once the store answers, every call finishes.
    held.release();
    expect(await purge).toBe("purge");
    expect(held.finished.sort()).toEqual(["create", "list", "purge"]);
  });

  test("a call that answers in time answers as before, its failure too", async () => {
    const held = new Held();
    const bounded = withStoreDeadline(held, 1_000, { reads: ["list"], changes: ["create", "createTwice"] });
    const twice = bounded.createTwice();
    await new Promise((resolve) => setTimeout(resolve, 10));
    held.release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    held.release();
    expect(await twice).toBe("create");
    const failing = withStoreDeadline({ fail: async () => Promise.reject(new Error("unique violation")) }, 1_000, {
      reads: [],
      changes: ["fail"],
    });
    await expect(failing.fail()).rejects.toThrow("unique violation");
  });

  test("without a bound the service is itself", () => {
    const held = new Held();
    expect(withStoreDeadline(held, undefined, { reads: ["list"], changes: [] })).toBe(held);
  });
});
