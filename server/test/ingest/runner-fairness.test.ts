// The ingest queue is fair across tenants (issue 15, finding 5): a tenant that queued several
// uploads does not keep another tenant's one-record upload waiting until all of them are done, and
// a large ingest in progress does not hold a small file back. Each test queues its uploads before
// the runner starts, or holds a large ingest mid-file, so only the order the runner picks is tested.
import path from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { IngestRunner, type SmallLane } from "../../src/ingest/runner.ts";
import { uploadBlobKey, type BlobStore } from "../../src/ports/blobs.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants, uploads, versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const jsonLines = (records: number) =>
  Buffer.from(Array.from({ length: records }, (_, i) => `{"id":"${i}","title":"Record ${i}"}\n`).join(""));

describe.each(storeTargets())("ingest queue on $name", (target) => {
  let services: TestServices;
  let store: Store;
  let blobs: BlobStore;
  let runner: IngestRunner | undefined;
  let tick = 0;
  const serviceB = `ten-b-shop-${target.name}-${process.pid}`;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_a" });
    store = services.store;
    await store.db.insert(tenants).values({ id: "ten_b", name: "ten_b", createdAt: 0 });
    await services.catalog.createService("ten_b", { name: serviceB, regions: ["frankfurt"] });
    blobs = createFsBlobStore(path.join(services.dir, "blobs"));
  });
  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
  });
  afterAll(() => services?.close());

  const startRunner = async (smallLane: Partial<SmallLane>, reads: BlobStore = blobs) => {
    runner = new IngestRunner({
      db: store.db,
      engine: services.engine,
      blobs: reads,
      catalog: services.catalog,
      versions: services.versions,
      log: services.log,
      // A clock that moves on every reading: start times say the order, with no ties.
      now: () => ++tick,
      smallLane,
    });
    await runner.start();
  };
  const index = async (tenantId: "ten_a" | "ten_b", name: string) => {
    await services.catalog.createIndex(tenantId, { name, serviceName: tenantId === "ten_a" ? "ten_a-shop" : serviceB });
    return (await services.catalog.byName(tenantId, name))!;
  };

  let queuedAt = 0;
  const queue = async (indexId: string, bytes: Buffer) => {
    const major = await services.versions.takeMajor(indexId);
    const version = String(major);
    await store.db.insert(versionRows).values({
      indexId,
      version,
      major,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: 0,
    });
    await blobs.write(uploadBlobKey({ indexId, version }), Readable.from([bytes]), { maxBytes: 1 << 30 });
    const id = `upl_${target.name}_${indexId}_${version}`;
    await store.db.insert(uploads).values({
      id,
      indexId,
      version,
      state: "queued",
      bytesReceived: bytes.byteLength,
      expiresAt: Date.now() + 60_000,
      createdAt: 0,
      queuedAt: ++queuedAt,
    });
    runner?.notify();
    return id;
  };
  const rowOf = async (id: string) => (await store.db.select().from(uploads).where(eq(uploads.id, id)))[0]!;
  const until = async (id: string, state: string) => {
    for (let i = 0; i < 300 && (await rowOf(id)).state !== state; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return rowOf(id);
  };

  test("tenants take turns: B's upload runs after A's first, not after all of A's", async () => {
    const a = await index("ten_a", "turns-a");
    const b = await index("ten_b", "turns-b");
    const big = [];
    for (let i = 0; i < 3; i++) big.push(await queue(a.id, jsonLines(20_000)));
    const small = await queue(b.id, jsonLines(1));
    // Every file too large for the small lane: the order of the one main lane is what is tested.
    await startRunner({ storedBytes: 0 });
    for (const id of [...big, small]) expect((await until(id, "succeeded")).state).toBe("succeeded");

    const rows = await Promise.all([...big, small].map(rowOf));
    const order = [...rows].sort((x, y) => x.startedAt! - y.startedAt!).map((r) => r.id);
    // A's first upload was the oldest; B's comes next, before A's others.
    expect(order).toEqual([big[0], small, big[1], big[2]]);
    expect(rows[3]!.finishedAt!).toBeLessThan(rows[1]!.startedAt!);
  });

  /** Blobs whose read of `key` stops halfway through `file` until `release()` is called. */
  const holdHalfway = (key: string, file: Buffer) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated: BlobStore = {
      ...blobs,
      async read(k) {
        const stream = await blobs.read(k);
        if (k !== key) return stream;
        const half = file.byteLength / 2;
        return Readable.from(
          (async function* () {
            let sent = 0;
            for await (const chunk of stream as AsyncIterable<Buffer>) {
              if (sent < half && sent + chunk.byteLength >= half) {
                yield chunk.subarray(0, half - sent);
                await held;
                yield chunk.subarray(half - sent);
              } else yield chunk;
              sent += chunk.byteLength;
            }
          })(),
        );
      },
    };
    return { gated, release };
  };

  test("a small upload is ingested while a large ingest is still running", async () => {
    const a = await index("ten_a", "lane-a");
    const b = await index("ten_b", "lane-b");
    const file = jsonLines(20_000);
    const { gated, release } = holdHalfway(uploadBlobKey({ indexId: a.id, version: "1" }), file);
    await startRunner({ storedBytes: 64 * 1024 }, gated);
    const big = await queue(a.id, file);
    expect(file.byteLength).toBeGreaterThan(64 * 1024);
    expect((await until(big, "running")).state).toBe("running");

    try {
      const small = await queue(b.id, jsonLines(1));
      expect((await until(small, "succeeded")).state).toBe("succeeded");
      expect((await rowOf(big)).state).toBe("running");
    } finally {
      release();
    }
    expect((await until(big, "succeeded")).recordsIngested).toBe(20_000);
  });

  test("one index's uploads still run in the order they were completed, the last one ending active", async () => {
    const x = await index("ten_a", "ordered-x");
    const y = await index("ten_a", "ordered-y");
    const file = jsonLines(20_000);
    const { gated, release } = holdHalfway(uploadBlobKey({ indexId: x.id, version: "1" }), file);
    await startRunner({ storedBytes: 64 * 1024 }, gated);
    const big = await queue(x.id, file);
    expect((await until(big, "running")).state).toBe("running");
    let later: string;
    try {
      later = await queue(x.id, jsonLines(1));
      const elsewhere = await queue(y.id, jsonLines(1));
      // The small lane passed over the older small upload, to an index with nothing running.
      expect((await until(elsewhere, "succeeded")).state).toBe("succeeded");
      expect((await rowOf(later)).state).toBe("queued");
    } finally {
      release();
    }
    expect((await until(later, "succeeded")).state).toBe("succeeded");
    expect((await services.catalog.byId(x.id))!.activeVersion).toBe("2");
  });

  test("a small file that expands past the small lane's bounds is ingested by the main lane", async () => {
    const a = await index("ten_a", "busy");
    const b = await index("ten_b", "expands");
    const file = jsonLines(20_000);
    const gzip = gzipSync(file);
    expect(gzip.byteLength).toBeLessThan(128 * 1024);
    expect(file.byteLength).toBeGreaterThan(256 * 1024);
    // The main lane is kept busy, so the small lane is the one that takes the gzip first.
    const { gated, release } = holdHalfway(uploadBlobKey({ indexId: a.id, version: "1" }), file);
    await startRunner({ storedBytes: 128 * 1024, expandedBytes: 256 * 1024 }, gated);
    const big = await queue(a.id, file);
    expect((await until(big, "running")).state).toBe("running");
    const id = await queue(b.id, gzip);
    try {
      for (let i = 0; i < 300 && !(await rowOf(id)).startedAt; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await rowOf(id)).startedAt, "the small lane took it").not.toBeNull();
      // Handed back, not failed: queued again, its attempt not counted.
      expect(await until(id, "queued")).toMatchObject({ state: "queued", attempts: 0, recordsIngested: 0 });
      expect((await rowOf(big)).state).toBe("running");
    } finally {
      release();
    }
    expect(await until(id, "succeeded")).toMatchObject({ state: "succeeded", recordsIngested: 20_000, attempts: 1 });
    expect(await services.engine.count(b.id, "1")).toBe(20_000);
  });
});
