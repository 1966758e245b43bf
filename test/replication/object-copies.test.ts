// A region's copy of an object store (D-326): a mirror of the bucket's stream, read with message
// gets since the object store's client cannot read a mirror. Against a private server: what the
// bucket holds reads the same from the copy, one chunk or several; overwritten, deleted or missing
// objects read as the bucket would; a part is fetched from the copy when it holds it, and from the
// bucket itself when the copy lacks a chunk. What the bucket drops leaves the copy too: a deletion at once, an
// overwritten object's old chunks at the region's sweep.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Base64UrlPaddedCodec, type ObjectStore, Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteObject } from "../../server/src/replication/nats/listing.ts";
import {
  anchor,
  anchorsOf,
  type Copy,
  copyConfigs,
  describeObject,
  descriptionsConfig,
  forgetObject,
  purgeChunks,
  readCopy,
  regionCopies,
  sweepCopy,
} from "../../server/src/replication/nats/object-copies.ts";
import { fetchPart, putPart } from "../../server/src/replication/nats/parts.ts";
import { TransferThread } from "../../server/src/replication/nats/transfer-thread.ts";
import { type NatsCluster, natsAvailable, startNatsCluster } from "../support/nats.ts";

describe.skipIf(!natsAvailable)("a region's copy of an object store", () => {
  let nats: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let store: ObjectStore;
  let dir: string;
  const bucket = "SIFT_files";
  const copies = regionCopies("COPY", "SIFT", { files: bucket, docs: "SIFT_docs" });
  const copy: Copy = copies.files;
  const js = () => jetstream(nc);
  /** Puts an object and describes it, as NatsLog does. */
  const put = async (name: string, bytes: Uint8Array, maxChunk?: number) =>
    describeObject(
      js(),
      await store.putBlob({ name, ...(maxChunk ? { options: { max_chunk_size: maxChunk } } : {}) }, bytes),
    );

  /** Puts `bytes` as the part `object` through a file, and describes it, as the transfer thread does. */
  const putDescribedPart = async (object: string, bytes: Buffer, encoding: "zstd" | "lanes-zstd") => {
    const source = join(dir, `${encoding}-source.bin`);
    await writeFile(source, bytes);
    const part = { object, path: source, start: 0, end: bytes.length - 1, encoding, maxChunk: 4096 };
    await describeObject(js(), await putPart(store, part, new AbortController().signal));
  };

  /** Until the copy holds every chunk and description its origins hold (it keeps what they dropped). */
  const copied = async () => {
    for (const [from, to, filter] of [
      [`OBJ_${bucket}`, copy.chunks, `$O.${bucket}.C.>`],
      ["SIFT_objects", copy.descriptions, ">"],
    ] as const) {
      const subjects = async (stream: string) =>
        Object.keys((await jsm.streams.info(stream, { subjects_filter: filter })).state.subjects ?? {});
      const wanted = await subjects(from);
      await expect
        .poll(
          async () => {
            const held = new Set(await subjects(to));
            // And nothing newer on its way (an overwritten object's description, say).
            const lag = (await jsm.streams.info(to)).sources?.[0]?.lag;
            return [...wanted.filter((subject) => !held.has(subject)), ...(lag === 0 ? [] : [`lag ${lag}`])];
          },
          { timeout: 30_000 },
        )
        .toEqual([]);
    }
  };
  /** The chunk subjects the copy holds. */
  const chunkSubjects = async () =>
    Object.keys((await jsm.streams.info(copy.chunks, { subjects_filter: `$O.${bucket}.C.>` })).state.subjects ?? {});

  beforeAll(async () => {
    nats = await startNatsCluster(1);
    nc = await connect({ servers: nats.urls.split(",") });
    jsm = await jetstreamManager(nc);
    store = await new Objm(jetstream(nc)).create(bucket);
    await new Objm(jetstream(nc)).create("SIFT_docs");
    // As NatsLog makes them: the streams the copies take from begin with their anchors.
    await jsm.streams.add(descriptionsConfig("SIFT", [bucket, "SIFT_docs"]));
    for (const { stream, subject } of anchorsOf("SIFT", [bucket, "SIFT_docs"]))
      await anchor(jetstream(nc), jsm, stream, subject);
    for (const config of copyConfigs(copies)) await jsm.streams.add(config);
    dir = await mkdtemp(join(tmpdir(), "sift-copies-"));
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reads what the bucket holds, one chunk or several; overwritten, deleted or missing as the bucket does", async () => {
    const one = randomBytes(50_000);
    const several = randomBytes(700_000);
    await put("segments/x/index.bin.part-0", one);
    await put("several", several, 64 * 1024);
    await put("empty", new Uint8Array(0));
    await put("doc", Buffer.from('{"position":1}'));
    await put("doc", Buffer.from('{"position":2}'));
    await put("gone", Buffer.from("soon gone"));
    await store.delete("gone");
    await forgetObject(jsm, ["SIFT_objects"], bucket, "gone");
    await copied();

    expect(Buffer.from((await readCopy(jsm, copy, "segments/x/index.bin.part-0"))!).equals(one)).toBe(true);
    expect(Buffer.from((await readCopy(jsm, copy, "several"))!).equals(several)).toBe(true);
    expect((await readCopy(jsm, copy, "empty"))?.length).toBe(0);
    expect(Buffer.from((await readCopy(jsm, copy, "doc"))!).toString()).toBe('{"position":2}');
    // Purges do not travel: the copy's description goes the same way (NatsLog purges every copy).
    await forgetObject(jsm, [copy.descriptions], bucket, "gone");
    expect(await readCopy(jsm, copy, "gone")).toBeNull();
    expect(await readCopy(jsm, copy, "never written")).toBeNull();
  });

  it("holds every object when many are put at once", async () => {
    // A mirror of the bucket's own stream lost descriptions here (NATS 2.9 and rollup headers).
    const written = new Map<string, Buffer>();
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 4 }, (_, i) => {
          const bytes = randomBytes(2_000 + i);
          written.set(`burst/${round}/${i}`, bytes);
          return put(`burst/${round}/${i}`, bytes, 512);
        }),
      );
    }
    await copied();
    for (const [name, bytes] of written)
      expect(Buffer.from((await readCopy(jsm, copy, name))!).equals(bytes), name).toBe(true);
  });

  it("a part is fetched from the copy when it has it: the bucket is not read", async () => {
    const bytes = randomBytes(200_000);
    const object = "segments/z/index.bin.part-0";
    const signal = new AbortController().signal;
    await putDescribedPart(object, bytes, "lanes-zstd");
    await copied();
    // The bucket's last chunk of it removed (not the copy's): read from the bucket, it fails.
    const info = (await store.info(object))!;
    const last = (await jsm.streams.getMessage(`OBJ_${bucket}`, { last_by_subj: `$O.${bucket}.C.${info.nuid}` }))!;
    await jsm.streams.deleteMessage(`OBJ_${bucket}`, last.seq);
    const target = join(dir, "near-target.bin");
    const part = { object, path: target, start: 0, encoding: "lanes-zstd" as const, of: "a test part" };
    await writeFile(target, Buffer.alloc(bytes.length));
    await expect(fetchPart(store, jsm, bucket, part, signal)).rejects.toThrow();
    await writeFile(target, Buffer.alloc(bytes.length));
    expect(await fetchPart(store, jsm, bucket, part, signal, copy)).toBeUndefined();
    expect((await readFile(target)).equals(bytes)).toBe(true);
  });

  it("a copy that lacks a chunk fails the read; a part is then fetched from the bucket", async () => {
    const bytes = randomBytes(300_000);
    const object = "segments/y/records.json.part-0";
    const signal = new AbortController().signal;
    await putDescribedPart(object, bytes, "zstd");
    await copied();
    const info = (await store.info(object))!;
    expect(info.chunks).toBeGreaterThan(1);
    // One chunk of the copy removed, as a sweep racing the copy could leave it.
    const first = (await jsm.streams.getMessage(copy.chunks, { last_by_subj: `$O.${bucket}.C.${info.nuid}` }))!;
    await jsm.streams.deleteMessage(copy.chunks, first.seq);
    await expect(readCopy(jsm, copy, object)).rejects.toThrow(/lacks chunk|does not match/);

    const target = join(dir, "target.bin");
    const part = { object, path: target, start: 0, encoding: "zstd", of: "a test part" } as const;
    /** The part fetched into an emptied target, the copy tried first: why the copy failed, if it did. */
    const fetchThroughCopy = async () => {
      await writeFile(target, Buffer.alloc(bytes.length));
      return fetchPart(store, jsm, bucket, part, signal, copy);
    };
    // Why the copy failed comes back, for the node's log.
    expect(await fetchThroughCopy()).toMatch(/lacks chunk|does not match/);
    expect((await readFile(target)).equals(bytes)).toBe(true);

    // Through the node's transfer thread, the same fetch tells the node, which logs it.
    const told: string[] = [];
    const thread = new TransferThread(
      { servers: nats.urls.split(","), name: "test transfers", bucket, copy },
      (p, why) => told.push(`${p}: ${why}`),
    );
    try {
      await writeFile(target, Buffer.alloc(bytes.length));
      await thread.fetch({ object, path: target, start: 0, encoding: "zstd", of: "a test part" });
    } finally {
      await thread.close();
    }
    expect((await readFile(target)).equals(bytes)).toBe(true);
    expect(told).toEqual([
      expect.stringMatching(/^segments\/y\/records\.json\.part-0: .*(lacks chunk|does not match)/),
    ]);

    // A copy skips nothing it goes on to take later messages after, as NATS 2.9 did: the sweep
    // finds the chunk missing and puts the whole object into the region's patches (D-348); a
    // description skipped the same way is returned, and the node makes that copy again.
    await put("after the skip", randomBytes(1_000));
    await copied();
    const skippedDescription = (await jsm.streams.getMessage(copy.descriptions, {
      last_by_subj: `sift.objects.${bucket}.${Base64UrlPaddedCodec.encode("doc")}`,
    }))!;
    await jsm.streams.deleteMessage(copy.descriptions, skippedDescription.seq);
    const chunksBefore = (await jsm.streams.info(copy.chunks)).created;
    expect(await sweepCopy(jsm, copy, { orphanAfterMs: 0 })).toEqual({
      descriptions: 0,
      chunks: 0,
      skipped: [{ stream: copy.descriptions, what: "the description of doc" }],
      patched: [object],
    });
    // (As the bucket holds it: a part is stored compressed.)
    const stored = Buffer.from((await store.getBlob(object))!);
    // The copy still lacks the chunk, and the object reads whole, from the patches.
    const subject = `$O.${bucket}.C.${info.nuid}`;
    const inCopy = (await jsm.streams.info(copy.chunks, { subjects_filter: subject })).state.subjects?.[subject];
    expect(inCopy).toBe(info.chunks - 1);
    expect(Buffer.from((await readCopy(jsm, copy, object))!).equals(stored)).toBe(true);
    expect(await fetchThroughCopy()).toBeUndefined();
    expect((await readFile(target)).equals(bytes)).toBe(true);
    // What the node does (NatsLog) with the description's copy: delete it, make it again.
    for (const config of copyConfigs(copies).filter((c) => c.name === copy.descriptions)) {
      await jsm.streams.delete(config.name);
      await jsm.streams.add(config);
    }
    await copied();
    expect(Buffer.from((await readCopy(jsm, copy, "doc"))!).toString()).toBe('{"position":2}');
    expect(await sweepCopy(jsm, copy)).toMatchObject({ skipped: [], patched: [] });
    // The chunks' copy was not made again: only the skipped object crossed.
    expect((await jsm.streams.info(copy.chunks)).created).toBe(chunksBefore);
    const patchOf = `${copy.patchRoot}${bucket}.${info.nuid}`;
    const patchesHeld = async () =>
      Object.keys(
        (await jsm.streams.info(copy.patches, { subjects_filter: `${copy.patchRoot}>` })).state.subjects ?? {},
      );
    expect(await patchesHeld()).toContain(patchOf);
    // Once its object is deleted, its patch goes at the sweep.
    const nuid = await deleteObject(store, jsm, bucket, object);
    await forgetObject(jsm, ["SIFT_objects", copy.descriptions], bucket, object);
    await purgeChunks(jsm, [copy.chunks], bucket, nuid!);
    await copied();
    await sweepCopy(jsm, copy, { orphanAfterMs: 0 });
    expect(await patchesHeld()).not.toContain(patchOf);
  });

  it("a deletion leaves the copy at once; an overwritten object's old chunks leave it at the sweep", async () => {
    await put("snapshots/i/7/index.bin.part-0", randomBytes(10_000));
    await put("nodes/a", Buffer.from('{"position":1}'));
    await copied();
    const deletedNuid = (await store.info("snapshots/i/7/index.bin.part-0"))!.nuid;
    const firstNuid = (await store.info("nodes/a"))!.nuid;
    expect(await chunkSubjects()).toContain(`$O.${bucket}.C.${deletedNuid}`);

    // As NatsLog deletes: the object, then its description everywhere, then its chunks in the copies.
    const nuid = await deleteObject(store, jsm, bucket, "snapshots/i/7/index.bin.part-0");
    expect(nuid).toBe(deletedNuid);
    await copied();
    await forgetObject(jsm, ["SIFT_objects", copy.descriptions], bucket, "snapshots/i/7/index.bin.part-0");
    await purgeChunks(jsm, [copy.chunks], bucket, nuid!);
    expect(await chunkSubjects()).not.toContain(`$O.${bucket}.C.${deletedNuid}`);
    expect(await readCopy(jsm, copy, "snapshots/i/7/index.bin.part-0")).toBeNull();

    // A position rewritten: the bucket purges the old chunk, the copy keeps it until swept.
    await put("nodes/a", Buffer.from('{"position":2}'));
    // An object never described (its node died before): its chunks are swept too.
    await store.putBlob({ name: "undescribed" }, Buffer.from("no description"));
    await copied();
    expect(await chunkSubjects()).toContain(`$O.${bucket}.C.${firstNuid}`);
    // Too recent for the sweep's default wait: its description might still be on its way.
    expect(await sweepCopy(jsm, copy)).toEqual({ descriptions: 0, chunks: 0, skipped: [], patched: [] });
    expect(await chunkSubjects()).toContain(`$O.${bucket}.C.${firstNuid}`);
    expect((await sweepCopy(jsm, copy, { orphanAfterMs: 0 })).chunks).toBeGreaterThanOrEqual(2);
    expect(await chunkSubjects()).not.toContain(`$O.${bucket}.C.${firstNuid}`);
    expect(await chunkSubjects()).not.toContain(`$O.${bucket}.C.${(await store.info("undescribed"))!.nuid}`);
    // What is described is untouched and reads the same.
    expect(Buffer.from((await readCopy(jsm, copy, "nodes/a"))!).toString()).toBe('{"position":2}');
    expect((await readCopy(jsm, copy, "several"))?.length).toBe(700_000);
    expect((await readCopy(jsm, copy, "burst/9/3"))?.length).toBe(2_003);
  });

  it("a deletion a copy missed (its region out of reach) leaves it at the sweep", async () => {
    const name = "snapshots/j/9/records.bin.part-0";
    await put(name, randomBytes(5_000));
    // (Not copied(): the sweep above removed from the copy the chunks of an object the bucket still holds undescribed.)
    await expect.poll(() => readCopy(jsm, copy, name).then((bytes) => bytes?.length), { timeout: 30_000 }).toBe(5_000);
    const nuid = (await store.info(name))!.nuid;
    // Deleted at home while this copy did not answer: its description and chunks stayed here.
    await deleteObject(store, jsm, bucket, name);
    await forgetObject(jsm, ["SIFT_objects"], bucket, name);
    expect(await readCopy(jsm, copy, name)).not.toBeNull();

    expect(await sweepCopy(jsm, copy, { orphanAfterMs: 0 })).toMatchObject({ descriptions: 1 });
    expect(await readCopy(jsm, copy, name)).toBeNull();
    expect(await chunkSubjects()).not.toContain(`$O.${bucket}.C.${nuid}`);
    // Everything the home still holds reads as before.
    expect(Buffer.from((await readCopy(jsm, copy, "nodes/a"))!).toString()).toBe('{"position":2}');
  });

  it("each stream the copies take from begins with its anchor, kept through deletions, sweeps and copies made late", async () => {
    // Deleted and overwritten objects above: without the anchor, the bucket would begin past its
    // sequence 1, where a NATS 2.9 source can count the first message as taken before it is.
    for (const { stream, subject } of anchorsOf("SIFT", [bucket, "SIFT_docs"])) {
      expect((await jsm.streams.info(stream)).state.first_seq).toBe(1);
      expect((await jsm.streams.getMessage(stream, { seq: 1 }))?.subject).toBe(subject);
      // Anchoring again adds nothing.
      const last = (await jsm.streams.info(stream)).state.last_seq;
      await anchor(js(), jsm, stream, subject);
      expect((await jsm.streams.info(stream)).state.last_seq).toBe(last);
    }
    // The sweeps above (orphans removed at once) left the anchors in the copy.
    expect(await chunkSubjects()).toContain(`$O.${bucket}.C.~anchor`);
    expect(await sweepCopy(jsm, copy, { orphanAfterMs: 0 })).toMatchObject({ descriptions: 0, skipped: [] });
    expect(await chunkSubjects()).toContain(`$O.${bucket}.C.~anchor`);

    // A region whose copies are made now takes the anchor first, and then everything described.
    const late = regionCopies("LATE", "SIFT", { files: bucket, docs: "SIFT_docs" });
    for (const config of copyConfigs(late)) await jsm.streams.add(config);
    const chunksHeld = async (stream: string) =>
      Object.values(
        (await jsm.streams.info(stream, { subjects_filter: `$O.${bucket}.C.>` })).state.subjects ?? {},
      ).reduce((sum, n) => sum + n, 0);
    const all = await chunksHeld(`OBJ_${bucket}`);
    await expect.poll(() => chunksHeld(late.files.chunks), { timeout: 30_000 }).toBe(all);
    const first = (await jsm.streams.getMessage(late.files.chunks, { seq: 1 }))!;
    expect(first.subject).toBe(`$O.${bucket}.C.~anchor`);
    expect(first.header?.get("Nats-Stream-Source").split(" ")[1]).toBe("1");
    // The copy checks what the anchor expects against itself: the subject's first, never the stream's.
    expect(first.header?.get("Nats-Expected-Last-Sequence")).toBe("");
    await expect
      .poll(() => readCopy(jsm, late.files, "nodes/a").then((b) => b && Buffer.from(b).toString()), { timeout: 30_000 })
      .toBe('{"position":2}');
    expect((await readCopy(jsm, late.files, "several"))?.length).toBe(700_000);
    expect((await sweepCopy(jsm, late.files)).skipped).toEqual([]);
  });
});
