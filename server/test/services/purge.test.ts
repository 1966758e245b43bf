// Erasure and bulk ingests (docs/versions.md, Erasure): an ingest that was already writing its
// major when a record was purged may have written the record from its file; the new major must
// not keep it, in the engine's answers or in its files.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { formatVersion } from "../../src/domain/version-id.ts";
import { versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_p", tenantId: "ten_p", type: "adm", userId: null };

function engineFilesHold(dir: string, text: string): boolean {
  return fs
    .readdirSync(path.join(dir, "engine"), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .some((e) => fs.readFileSync(path.join(e.parentPath, e.name)).includes(text));
}

describe.each(storeTargets())("purge during a bulk ingest on $name", (target) => {
  let services: TestServices;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_p" });
    await services.catalog.createIndex("ten_p", { name: "shop", serviceName: "ten_p-shop" });
  });
  afterAll(() => services?.close());

  test("a record purged while a bulk major was being written is erased from that major too", async () => {
    const { catalog, versions, records, engine, store } = services;
    await records.put(admin, "shop", "s", { title: "Secret", data: { note: "Qzmarkerbulk" } });
    let ref = (await catalog.byName("ten_p", "shop"))!;

    // The ingest starts (as the runner does: a pending version, then the writer fills it)...
    const startedAt = Date.now();
    const major = await versions.takeMajor(ref.id);
    await store.db.insert(versionRows).values({
      indexId: ref.id,
      version: formatVersion(major),
      major,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: startedAt,
    });
    const writer = await engine.bulkWriter(ref.id, major);
    await writer.add([
      { id: "s", title: "Secret", data: { note: "Qzmarkerbulk" } },
      { id: "t", title: "Other" },
    ]);
    // ...the record is purged meanwhile...
    await new Promise((r) => setTimeout(r, 2));
    ref = (await catalog.byName("ten_p", "shop"))!;
    await records.purge(admin, "shop", "s");
    // ...and the ingest commits what it had read.
    const { records: written } = await writer.commit();
    expect(written).toBe(2);
    ref = (await catalog.byName("ten_p", "shop"))!;
    const live = await versions.finishBulk(ref, major, { records: written, activate: true, startedAt });

    expect(await engine.get(ref.id, formatVersion(major), "s")).toBeNull();
    expect(await engine.get(ref.id, live, "s")).toBeNull();
    expect(await engine.get(ref.id, live, "t")).toEqual({ id: "t", title: "Other" });
    const listed = await versions.list((await catalog.byName("ten_p", "shop"))!);
    expect(listed.find((v) => v.version === formatVersion(major))?.records).toBe(1);
    expect(engineFilesHold(services.dir, "Qzmarkerbulk")).toBe(false);
  }, 60_000);
});
