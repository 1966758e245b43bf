// A checkpoint is built outside the index's write lock (D-231): writes made while it is built are
// answered at once, and what they changed is carried onto it as its first minor when it goes live.
// The test holds the build at its start, writes, then lets it finish.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { NotFoundError } from "../../src/domain/errors.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_w", tenantId: "ten_w", type: "adm", userId: null };

/** The engine, with each checkpoint build held until the test lets it go. */
function holdingBuilds(real: SearchEngine) {
  const held = { entered: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };
  const engine = new Proxy(real, {
    get(target, property) {
      if (property === "buildCheckpoint") {
        return async (...args: Parameters<NonNullable<SearchEngine["buildCheckpoint"]>>) => {
          held.entered.resolve();
          await held.release.promise;
          return target.buildCheckpoint!(...args);
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    engine,
    /** Arms the hold for the next build. */
    next() {
      held.entered = Promise.withResolvers<void>();
      held.release = Promise.withResolvers<void>();
      return { entered: held.entered.promise, release: () => held.release.resolve() };
    },
  };
}

describe.each(storeTargets())("a checkpoint built while writes go on, on $name", (target) => {
  let services: TestServices;
  let hold: ReturnType<typeof holdingBuilds>;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_w",
      policy: { coalesceAfter: 1_000_000, retainVersions: 1_000 },
      engine: (real) => {
        hold = holdingBuilds(real);
        return hold.engine;
      },
    });
  });
  afterAll(() => services?.close());

  const ref = async (name: string) => (await services.catalog.byName("ten_w", name))!;
  const put = (index: string, id: string) => services.records.put(admin, index, id, { title: `Record ${id}` });
  const holds = async (index: string, id: string, version?: string) =>
    services.records.get(admin, index, id, version).then(
      () => true,
      (error: unknown) => (error instanceof NotFoundError ? false : Promise.reject(error)),
    );

  test("writes made meanwhile are answered at once and carried onto it", async () => {
    await services.catalog.createIndex("ten_w", { name: "busy", serviceName: "ten_w-shop" });
    for (const id of ["a1", "a2", "a3"]) await put("busy", id);
    const from = await services.records.delete(admin, "busy", "a1");

    const build = hold.next();
    let done = false;
    const coalescing = services.versions.coalesce(await ref("busy")).finally(() => (done = true));
    await build.entered;
    // Answered while the checkpoint is still being built: the write lock is free.
    await put("busy", "b1");
    await services.records.delete(admin, "busy", "a2");
    await put("busy", "a3");
    expect(done).toBe(false);
    build.release();
    const checkpoint = await coalescing;

    expect(checkpoint).toBe("1");
    const live = (await ref("busy")).activeVersion;
    expect(live).toBe("1.1");
    expect(await Promise.all(["a1", "a2", "a3", "b1"].map((id) => holds("busy", id)))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    // The checkpoint itself is the version it copied: a rollback point.
    expect(await Promise.all(["a1", "a2", "a3", "b1"].map((id) => holds("busy", id, "1")))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    const listed = await services.versions.list(await ref("busy"));
    const row = (v: string) => listed.find((l) => l.version === v);
    expect(row("1")).toMatchObject({ kind: "checkpoint", parent: from, state: "ready", records: 2 });
    expect(row("1.1")).toMatchObject({ kind: "change", parent: "1", state: "ready", records: 2, active: true });
    // The next write builds on the carried version.
    expect(await put("busy", "c1")).toBe("1.2");
    // Back to the checkpoint, which still holds a2, and a write on it: a2 was deleted after the
    // checkpoint's content was taken, and stays deleted in the branch.
    await services.versions.activate(await ref("busy"), "1");
    const branch = await put("busy", "d1");
    expect(await holds("busy", "a2", branch)).toBe(false);
    expect(await holds("busy", "a3", branch)).toBe(true);
    // Listed newest first, the checkpoint after the writes it carries.
    const order = (await services.versions.list(await ref("busy"))).map((v) => v.version);
    expect(order.indexOf("1")).toBeLessThan(order.indexOf("0.7"));
  });

  test("with nothing written meanwhile the checkpoint itself goes live", async () => {
    await services.catalog.createIndex("ten_w", { name: "quiet", serviceName: "ten_w-shop" });
    await put("quiet", "q1");
    const build = hold.next();
    const coalescing = services.versions.coalesce(await ref("quiet"));
    await build.entered;
    build.release();
    expect(await coalescing).toBe("1");
    expect((await ref("quiet")).activeVersion).toBe("1");
    expect(await holds("quiet", "q1")).toBe(true);
  });

  test("a version made live meanwhile stays live; the checkpoint is kept as a rollback point", async () => {
    await services.catalog.createIndex("ten_w", { name: "rolled", serviceName: "ten_w-shop" });
    const first = await put("rolled", "r1");
    await put("rolled", "r2");
    const build = hold.next();
    const coalescing = services.versions.coalesce(await ref("rolled"));
    await build.entered;
    await services.versions.activate(await ref("rolled"), first);
    build.release();
    expect(await coalescing).toBe("1");
    expect((await ref("rolled")).activeVersion).toBe(first);
    expect(await holds("rolled", "r2", "1")).toBe(true);
    expect((await services.versions.list(await ref("rolled"))).find((v) => v.version === "1")).toMatchObject({
      kind: "checkpoint",
      state: "ready",
      active: false,
    });
  });
});
