// The NATS change log adapter against a private server (docs/replication.md).
// Segment files (D-217, D-254): the nodes that fetch a new major ahead of its entry hold it,
// flushed, by the time its publisher's putFiles resolves, so that the entry that names it is
// applied without a download, and opened without reading the object store again; a node that
// fetched nothing ahead still gets the files with the entry; and a fetching node that goes away
// is not waited for long.
// Truncation: removing an index's entries before position 1 removes nothing, and its writes go on.
// Large entries: after a purge, a body no entry left in the log names is removed, the others stay.
// Documents: a listing holds every document that exists while it runs, whatever else is written
// (D-311); a deleted document leaves no description behind.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiscardPolicy, type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/src/log.ts";
import type { AppliedEntry, ChangeLog, LogEntry } from "../../server/src/ports/change-log.ts";
import { openNatsLog } from "../../server/src/replication/nats/nats-log.ts";
import { isAnchor, readCopy, regionCopies } from "../../server/src/replication/nats/object-copies.ts";
import { docsBucket, filesBucket } from "../../server/src/replication/nats/parts.ts";
import { TransferThread } from "../../server/src/replication/nats/transfer-thread.ts";
import { type NatsCluster, natsAvailable, startNatsCluster } from "../support/nats.ts";

const silent = createLogger("silent", {}, () => {});

/** Removes from `copy` its first chunk past the anchor (object-copies.ts), as a source that lost it; its subject. */
/**
 * A cluster of three of its own (its streams change leaders when asked), a client once its
 * JetStream answers, and London's log on it with a mirror, logging into `lines`.
 */
async function londonOnOwnCluster(stream: string) {
  const cluster = await startNatsCluster(3);
  const client = await connect({ servers: cluster.urls.split(",") });
  const stop = async () => {
    await client.close();
    await cluster.stop();
  };
  try {
    // Once its JetStream answers: a first request before then waits out 10 s.
    const quick = await jetstreamManager(client, { checkAPI: false, timeout: 1_000 });
    await expect
      .poll(
        () =>
          quick.getAccountInfo().then(
            () => true,
            () => false,
          ),
        { timeout: 30_000 },
      )
      .toBe(true);
    const jsm = await jetstreamManager(client, { checkAPI: false });
    const lines: string[] = [];
    const copy = `${stream}_london_docs`;
    const open = (options: { mirrorStalledMs?: number; sweepsAfterOpening?: boolean } = {}) =>
      openNatsLog({
        servers: cluster.urls.split(","),
        stream,
        replicas: 3,
        log: createLogger("info", {}, (line) => lines.push(line)),
        name: "london",
        mirror: `${stream}_london`,
        ...options,
      });
    /** The chunks the documents' copy holds, by subject. */
    const chunksIn = async () =>
      Object.keys((await jsm.streams.info(copy, { subjects_filter: `$O.${stream}_docs.C.>` })).state.subjects ?? {});
    return { client, jsm, lines, copy, open, chunksIn, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function loseFirstChunk(jsm: JetStreamManager, copy: string, chunks: string): Promise<string> {
  const next = async (seq: number) =>
    (await jsm.streams.getMessage(copy, { seq, next_by_subj: chunks } as unknown as { seq: number }))!;
  let first = await next(0);
  if (isAnchor(first.subject)) first = await next(first.seq + 1);
  await jsm.streams.deleteMessage(copy, first.seq);
  return first.subject;
}
/** A node's log on a cluster of a test's own, logging nothing. */
const openOn = (cluster: NatsCluster, options: { stream: string; replicas: number; name: string }) =>
  openNatsLog({ servers: cluster.urls.split(","), log: silent, ...options });

const digest = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe.skipIf(!natsAvailable)("the NATS change log", () => {
  let nats: NatsCluster;
  let dir: string;
  const logs: ChangeLog[] = [];
  const open = async (name: string, staging: boolean, logger = silent) => {
    const log = await openNatsLog({
      servers: nats.urls.split(","),
      stream: "FILES_TEST",
      replicas: 1,
      log: logger,
      name,
      ...(staging ? { stagingDir: join(dir, `${name}-staging`) } : {}),
    });
    logs.push(log);
    return log;
  };

  /** Bytes the connection named `who` has sent to the server so far. */
  const sentBy = async (who: string) => {
    const connz = (await (await fetch(`${nats.servers[0]!.monitor}/connz`)).json()) as {
      connections: { name?: string; in_bytes: number }[];
    };
    return connz.connections.find((c) => c.name === who)?.in_bytes ?? 0;
  };

  /** How many objects `bucket` has descriptions of, deleted ones' included (the stream's subjects). */
  const describedIn = async (bucket: string) => {
    const client = await connect({ servers: nats.urls.split(",") });
    try {
      const info = await (await jetstreamManager(client)).streams.info(`OBJ_${bucket}`, {
        subjects_filter: `$O.${bucket}.M.>`,
      });
      return Object.keys(info.state.subjects ?? {}).length;
    } finally {
      await client.close();
    }
  };

  beforeAll(async () => {
    nats = await startNatsCluster(1);
    dir = mkdtempSync(join(tmpdir(), "sift-nats-log-"));
  });
  afterAll(async () => {
    for (const log of logs) await log.close();
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("leaves a NATS server that hangs for another of its cluster within seconds (D-349)", async () => {
    // A cluster of its own: the server this node is connected to is frozen (SIGSTOP), its TCP
    // connection open and silent, as a hung machine or a partition leaves it.
    const cluster = await startNatsCluster(3);
    const log = await openOn(cluster, { stream: "HANG_TEST", replicas: 3, name: "hang" });
    const entry = (n: number) => ({ op: "create", index: `idx_hang_${n}`, node: "hang", at: n }) as const;
    let paused: (typeof cluster.servers)[number] | undefined;
    try {
      await log.append(entry(0), undefined);
      const connectedTo = async () => {
        for (const server of cluster.servers) {
          const connz = (await (await fetch(`${server.monitor}/connz`)).json()) as {
            connections?: { name?: string }[];
          };
          if (connz.connections?.some((c) => c.name === "hang")) return server;
        }
        return undefined;
      };
      paused = await connectedTo();
      expect(paused).toBeDefined();
      paused!.pause();
      const frozenAt = Date.now();
      // Appends fail while the node waits on the frozen server; the cluster's other two elect new
      // leaders meanwhile. Once the client has given the server up, an append goes through.
      for (let n = 1; ; n++) {
        const appended = await log.append(entry(n), undefined).then(
          () => true,
          () => false,
        );
        if (appended) break;
        expect(Date.now() - frozenAt, "still on the frozen server").toBeLessThan(35_000);
      }
      expect(Date.now() - frozenAt).toBeLessThan(35_000);
    } finally {
      paused?.resume();
      await log.close();
      await cluster.stop();
    }
  }, 90_000);

  it("says when the node stops hearing the other nodes' notices and when it hears them again (D-347)", async () => {
    // A server of its own, killed and started again.
    const server = await startNatsCluster(1);
    const log = await openOn(server, { stream: "HEARING_TEST", replicas: 1, name: "n" });
    const heard: boolean[] = [];
    try {
      log.watchHearing!((hearing) => heard.push(hearing));
      await server.servers[0]!.kill();
      await expect.poll(() => heard, { timeout: 10_000 }).toEqual([false]);
      await server.servers[0]!.start();
      await expect.poll(() => heard, { timeout: 15_000 }).toEqual([false, true]);
      // Heard again: a notice sent now arrives.
      const notices: string[] = [];
      log.onNotice!((notice) => notices.push(notice.kind));
      await log.ping();
      log.sendNotice!({ kind: "key-revoked", keyHash: "h" });
      await expect.poll(() => notices, { timeout: 5_000 }).toEqual(["key-revoked"]);
    } finally {
      await log.close();
      await server.stop();
    }
  }, 40_000);

  it("another region's copy that skipped a message while its nodes were down is patched by the home's node (D-339, D-348)", async () => {
    // A server of its own: every log stream takes the same subjects, and this one's copies would
    // be looked at by the other tests' nodes.
    const server = await startNatsCluster(1);
    const options = { servers: server.urls.split(","), stream: "COPIES_TEST", replicas: 1 };
    const copy = "COPIES_TEST_london_docs";
    const client = await connect({ servers: server.urls.split(",") });
    try {
      const jsm = await jetstreamManager(client, { checkAPI: false });
      const chunksIn = async () =>
        (await jsm.streams.info(copy, { subjects_filter: "$O.COPIES_TEST_docs.C.>" })).state.subjects ?? {};
      // London's node makes its region's copies, writes two documents, and stops.
      const london = await openNatsLog({ ...options, log: silent, name: "london", mirror: "COPIES_TEST_london" });
      await london.putDoc("snapshots/shop/latest", { seq: 10 });
      await london.putDoc("snapshots/desk/latest", { seq: 20 });
      // Two documents and the bucket's anchor (object-copies.ts).
      await expect.poll(async () => Object.keys(await chunksIn()).length).toBe(3);
      await london.close();
      // London's copy loses the first document's chunk, as a source that skipped it.
      const first = await loseFirstChunk(jsm, copy, "$O.COPIES_TEST_docs.C.>");
      expect(Object.keys(await chunksIn())).not.toContain(first);

      const docs = regionCopies("COPIES_TEST_london", "COPIES_TEST", {
        files: filesBucket("COPIES_TEST"),
        docs: docsBucket("COPIES_TEST"),
      }).docs;
      const readNear = async (name: string) => {
        const bytes = await readCopy(jsm, docs, name);
        return bytes && JSON.parse(Buffer.from(bytes).toString());
      };
      await expect(readNear("snapshots/shop/latest")).rejects.toThrow(/lacks chunk/);

      // A node of the home region (no copies of its own) finds it at its first sweep, and puts the
      // document into London's patches (D-348), where London's reads find it.
      const lines: string[] = [];
      const created = (await jsm.streams.info(copy)).created;
      const home = await openNatsLog({
        ...options,
        log: createLogger("info", {}, (line) => lines.push(line)),
        name: "home",
      });
      try {
        await expect
          .poll(() => lines.find((line) => line.includes("another region's copy")), { timeout: 15_000 })
          .toContain(`"copy":"${copy}"`);
        expect(lines.find((line) => line.includes("another region's copy"))).toContain("patches");
        expect(await readNear("snapshots/shop/latest")).toEqual({ seq: 10 });
        expect(await readNear("snapshots/desk/latest")).toEqual({ seq: 20 });
        // The copy itself was not made again: only the document crossed.
        expect(Object.keys(await chunksIn())).not.toContain(first);
        expect((await jsm.streams.info(copy)).created).toBe(created);
        // Deleted, it leaves the patches at once, as it leaves the copies.
        const patched = async () =>
          Object.keys((await jsm.streams.info(docs.patches, { subjects_filter: ">" })).state.subjects ?? {});
        expect(await patched()).toHaveLength(1);
        await home.deleteDoc("snapshots/shop/latest");
        expect(await patched()).toEqual([]);
        expect(await readNear("snapshots/shop/latest")).toBeNull();
      } finally {
        await home.close();
      }
    } finally {
      await client.close();
      await server.stop();
    }
  }, 40_000);

  it("a copy that lost a message when its leader changed is patched within 20 s of the change (D-342, D-348)", async () => {
    // A cluster of its own: a stream of three replicas changes leader when asked.
    const { client, jsm, lines, copy, open, chunksIn, stop } = await londonOnOwnCluster("LEADERS_TEST");
    try {
      // None of the sweeps soon after the opening: the next is 10 to 20 minutes away.
      const london = await open({ sweepsAfterOpening: false });
      try {
        await london.putDoc("snapshots/shop/latest", { seq: 10 });
        await london.putDoc("snapshots/desk/latest", { seq: 20 });
        // Two documents and the bucket's anchor (object-copies.ts).
        await expect.poll(chunksIn, { timeout: 10_000 }).toHaveLength(3);
        expect(lines.filter((line) => line.includes("skipped"))).toEqual([]);

        // The copy loses the first document's chunk as its leader changes.
        const first = await loseFirstChunk(jsm, copy, "$O.LEADERS_TEST_docs.C.>");
        const stepdown = await client.request(`$JS.API.STREAM.LEADER.STEPDOWN.${copy}`, undefined, { timeout: 10_000 });
        expect(stepdown.json()).toMatchObject({ success: true });
        await expect
          .poll(
            () => lines.find((line) => line.includes("skipped chunks; put their objects into the region's patches")),
            {
              timeout: 30_000,
            },
          )
          .toContain(`"copy":"${copy}"`);
        const patches = "LEADERS_TEST_london_patches";
        const patched = (await jsm.streams.info(patches, { subjects_filter: ">" })).state.subjects ?? {};
        expect(Object.keys(patched)).toEqual([
          first.replace("$O.", "sift.patches.LEADERS_TEST_london.").replace(".C.", "."),
        ]);
      } finally {
        await london.close();
      }
    } finally {
      await stop();
    }
  }, 120_000);

  it("a copy that stopped behind its origin is stepped down, then made again (D-358, D-359)", async () => {
    const { jsm, lines, copy, open, chunksIn, stop } = await londonOnOwnCluster("STOPPED_TEST");
    try {
      // Its copies looked at every 2 s: not moved between two looks while behind, a copy stopped.
      const london = await open({ mirrorStalledMs: 2_000 });
      try {
        await london.putDoc("snapshots/shop/latest", { seq: 10 });
        // The document and the bucket's anchor.
        await expect.poll(chunksIn, { timeout: 10_000 }).toHaveLength(2);
        // The copy refuses what it is sent from now on (a limit; a full disk alike).
        const info = await jsm.streams.info(copy);
        await jsm.streams.update(copy, { ...info.config, max_msgs: info.state.messages, discard: DiscardPolicy.New });
        await london.putDoc("snapshots/desk/latest", { seq: 20 });
        await expect
          .poll(
            () =>
              lines.some((line) =>
                line.includes(
                  "the region's copy of an object store has stopped behind its origin; asking its leader to step down",
                ),
              ),
            { timeout: 15_000 },
          )
          .toBe(true);
        expect(await chunksIn()).toHaveLength(2);
        // Still stopped at the next look, it is made again, without the limit, and takes both
        // documents: long before the sweeps, 10 to 20 minutes apart, would have looked.
        await expect
          .poll(
            () =>
              lines.some((line) =>
                line.includes("the region's copy of an object store has stopped behind its origin; making it again"),
              ),
            { timeout: 15_000 },
          )
          .toBe(true);
        await expect.poll(chunksIn, { timeout: 10_000 }).toHaveLength(3);
        expect((await jsm.streams.info(copy)).config.max_msgs).toBe(-1);
        const names = lines.map((line) => JSON.parse(line).msg as string);
        expect(names.filter((msg) => msg.includes("stopped behind its origin"))).toHaveLength(2);
      } finally {
        await london.close();
      }
    } finally {
      await stop();
    }
  }, 120_000);

  it("a new major is held by the nodes that fetch ahead once its publisher is done", async () => {
    const logged: Record<string, unknown>[] = [];
    const writer = await open(
      "writer",
      false,
      createLogger("info", {}, (line) => logged.push(JSON.parse(line))),
    );
    const fetchers = [await open("fetcher-1", true), await open("fetcher-2", true)];
    const late = await open("no-staging", false);
    // Three 16 MB parts and a small file: the parts take a while to publish and to fetch.
    const files = [
      { name: "index.bin", bytes: randomBytes(40 * 1024 * 1024) },
      { name: "records.bin", bytes: Buffer.from("x".repeat(3000)) },
    ];
    for (const f of files) writeFileSync(join(dir, f.name), f.bytes);
    const name = "segments/idx_files/3";

    await writer.putFiles(
      name,
      files.map((f) => ({ name: f.name, path: join(dir, f.name) })),
    );

    // Without a word more from the writer: each fetcher's staging holds every file, whole.
    for (const n of [1, 2]) {
      const staged = join(dir, `fetcher-${n}-staging`, encodeURIComponent(name));
      expect(readdirSync(staged).sort()).toEqual(["index.bin", "records.bin"]);
      for (const f of files) expect(digest(readFileSync(join(staged, f.name)))).toBe(digest(f.bytes));
    }
    // Taking them is a move; a node that fetched nothing ahead downloads them.
    for (const [log, target] of [
      [fetchers[0]!, "fetcher-1-segment"],
      [late, "late-segment"],
    ] as const) {
      expect((await log.getFiles(name, join(dir, target))).sort()).toEqual(["index.bin", "records.bin"]);
      for (const f of files) expect(digest(readFileSync(join(dir, target, f.name)))).toBe(digest(f.bytes));
    }
    expect(readdirSync(join(dir, "fetcher-1-staging"))).toEqual([]);
    // The publisher says how long storing the files took, and until both fetchers held them.
    const published = logged.filter((l) => l.msg === "segment files published");
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ files: name, bytes: 40 * 1024 * 1024 + 3000 });
    const { storedMs, fetchedMs } = published[0] as { storedMs: number; fetchedMs: number };
    expect(storedMs).toBeGreaterThan(0);
    expect(fetchedMs).toBeGreaterThanOrEqual(storedMs);
  }, 120_000);

  it("a segment fetched ahead is opened from what the node holds, without the object store", async () => {
    const writer = await open("ahead-writer", false);
    const fetcher = await open("ahead-fetcher", true);
    const late = await open("ahead-late", false);
    const bytes = randomBytes(3 * 1024 * 1024);
    writeFileSync(join(dir, "ahead.bin"), bytes);
    const name = "segments/idx_files/7";
    await writer.putFiles(name, [{ name: "index.bin", path: join(dir, "ahead.bin") }]);
    // The manifest gone from the store: the node that fetched ahead needs nothing more of it
    // (D-290: reading it held the index's later entries for tens of milliseconds)...
    const client = await connect({ servers: nats.urls.split(",") });
    try {
      await (await new Objm(client).open("FILES_TEST_files", false)).delete(`${name}/manifest`);
    } finally {
      await client.close();
    }
    expect(await fetcher.getFiles(name, join(dir, "ahead-segment"))).toEqual(["index.bin"]);
    expect(digest(readFileSync(join(dir, "ahead-segment", "index.bin")))).toBe(digest(bytes));
    // ... while a node that fetched nothing ahead has nothing to go on.
    await expect(late.getFiles(name, join(dir, "ahead-late-segment"))).rejects.toThrow(
      `segment ${name} is missing from the object store`,
    );
  }, 60_000);

  it("moves file bytes on a connection of its own, and names a part gone from the store", async () => {
    const writer = await open("mover", false);
    const path = join(dir, "moved.bin");
    writeFileSync(path, randomBytes(20 * 1024 * 1024));
    const name = "segments/idx_files/5";
    await writer.putFiles(name, [{ name: "index.bin", path }]);
    // The server's own connection stays free for the log while a segment moves (D-288): the
    // bytes went through the transfer thread's connection.
    expect(await sentBy("mover files")).toBeGreaterThan(5 * 1024 * 1024);
    expect(await sentBy("mover")).toBeLessThan(1024 * 1024);
    // A part removed behind the manifest's back: the reader says which file of which segment.
    const client = await connect({ servers: nats.urls.split(",") });
    try {
      await (await new Objm(client).open("FILES_TEST_files", false)).delete(`${name}/index.bin.part-1`);
    } finally {
      await client.close();
    }
    await expect(writer.getFiles(name, join(dir, "moved-back"))).rejects.toThrow(
      `file index.bin of segment ${name} is missing from the object store`,
    );
  }, 60_000);

  it("a transfer thread that died is started again for the next part", async () => {
    await open("thread-owner", false); // makes the object store, if no test before did
    const thread = new TransferThread({
      servers: nats.urls.split(","),
      name: "thread-test",
      bucket: "FILES_TEST_files",
    });
    const path = join(dir, "thread.bin");
    const bytes = randomBytes(3 * 1024 * 1024);
    writeFileSync(path, bytes);
    const bigPath = join(dir, "thread-big.bin");
    writeFileSync(bigPath, randomBytes(64 * 1024 * 1024));
    const put = (object: string, from = path, size = bytes.length) =>
      thread.put({ object, path: from, start: 0, end: size - 1, encoding: "zstd", maxChunk: 512 * 1024 });
    try {
      await put("thread/one");
      // Its thread ends under it (a crash, say) while a part's bytes flow: what was asked for
      // fails, the next part starts a new thread. (Ended once the bytes flow: a termination that
      // lands while Node builds the zstd stream aborts the whole process, which is why close()
      // does not terminate.)
      const worker = (thread as unknown as { worker: { terminate(): Promise<number> } }).worker;
      const before = await sentBy("thread-test");
      const lost = put("thread/lost", bigPath, 64 * 1024 * 1024);
      await expect.poll(() => sentBy("thread-test"), { timeout: 20_000, interval: 5 }).toBeGreaterThan(before + 1e6);
      await worker.terminate();
      await expect(lost).rejects.toThrow(/transfer thread exited/);
      await put("thread/two");
      const back = join(dir, "thread-back.bin");
      writeFileSync(back, Buffer.alloc(bytes.length));
      await thread.fetch({ object: "thread/two", path: back, start: 0, encoding: "zstd", of: "thread/two" });
      expect(digest(readFileSync(back))).toBe(digest(bytes));
    } finally {
      await thread.close();
    }
  }, 60_000);

  it("a transfer thread closed during a put ends it, removes its chunks and exits by itself", async () => {
    await open("thread-owner-2", false);
    const thread = new TransferThread({
      servers: nats.urls.split(","),
      name: "closing-test",
      bucket: "FILES_TEST_files",
    });
    const path = join(dir, "closing.bin");
    writeFileSync(path, randomBytes(64 * 1024 * 1024));
    const put = thread.put({
      object: "closing/part",
      path,
      start: 0,
      end: 64 * 1024 * 1024 - 1,
      encoding: "zstd",
      maxChunk: 512 * 1024,
    });
    const worker = (thread as unknown as { worker: { once(event: "exit", f: (code: number) => void): void } }).worker;
    const exitCode = new Promise<number>((resolve) => worker.once("exit", resolve));
    await expect.poll(() => sentBy("closing-test"), { timeout: 20_000, interval: 5 }).toBeGreaterThan(1e6);
    const started = Date.now();
    await thread.close();
    // It left by itself (a terminated thread exits with 1), well before close() would terminate it.
    expect(await exitCode).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
    await expect(put).rejects.toThrow(/the change log is closed|transfer thread exited/);
    await expect(
      thread.put({ object: "closing/after", path, start: 0, end: 0, encoding: "zstd", maxChunk: 1024 }),
    ).rejects.toThrow("the change log is closed");
    // The part it was putting is not in the store, neither whole nor in pieces.
    const client = await connect({ servers: nats.urls.split(",") });
    try {
      const files = await new Objm(client).open("FILES_TEST_files", false);
      expect(await files.info("closing/part")).toBeNull();
    } finally {
      await client.close();
    }
  }, 60_000);

  it("a fetching node that goes away holds its publisher a few seconds, not the whole wait", async () => {
    const writer = await open("writer-2", false);
    const doomed = await open("doomed", true);
    const path = join(dir, "big.bin");
    writeFileSync(path, randomBytes(40 * 1024 * 1024));
    const name = "segments/idx_files/4";
    const started = Date.now();
    const put = writer.putFiles(name, [{ name: "index.bin", path }]);
    // Closed as soon as it starts fetching: it never says it holds the files.
    await expect
      .poll(() => existsSync(join(dir, "doomed-staging", encodeURIComponent(name))), { timeout: 10_000, interval: 5 })
      .toBe(true);
    logs.splice(logs.indexOf(doomed), 1);
    await doomed.close();
    await put;
    // The publisher waits up to 30 s for a node that is still fetching; this one went silent.
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 60_000);

  it("a publisher a client waits on waits 2 s for a node still fetching, not 30 (D-352)", async () => {
    const writer = await open("writer-3", false);
    const path = join(dir, "small.bin");
    writeFileSync(path, randomBytes(64 * 1024));
    // A node that keeps saying it is fetching each segment announced, and never holds it.
    const client = await connect({ servers: nats.urls.split(",") });
    const fetching = new Set<string>();
    const say = (name: string) =>
      client.publish("sift.prefetch.state", JSON.stringify({ name, from: "slow", state: "fetching" }));
    client.subscribe("sift.prefetch", {
      callback: (_error, message) => {
        const { name } = message.json() as { name: string };
        fetching.add(name);
        say(name);
      },
    });
    const saying = setInterval(() => {
      for (const name of fetching) say(name);
    }, 200);
    try {
      await client.flush();
      let started = Date.now();
      await writer.putFiles("segments/idx_wait/5", [{ name: "index.bin", path }], {
        background: true,
        clientWaits: true,
      });
      const waited = Date.now() - started;
      expect(fetching.has("segments/idx_wait/5")).toBe(true);
      expect(waited).toBeGreaterThanOrEqual(1_500);
      expect(waited).toBeLessThan(6_000);
      // Nobody waiting: the publisher waits for that node (here until it goes silent).
      started = Date.now();
      let done = false;
      const put = writer
        .putFiles("segments/idx_wait/6", [{ name: "index.bin", path }], { background: true })
        .then(() => {
          done = true;
        });
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(done).toBe(false);
      clearInterval(saying);
      await put;
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      clearInterval(saying);
      await client.close();
    }
  }, 60_000);

  it("after a purge, a large entry's body goes once no entry left in the log names it (D-277)", async () => {
    const log = await open("large", false);
    // Over the server's 1 MB message limit: the body goes to the object store, the log names it.
    const entry = (n: number, size: number) =>
      ({
        op: "changes",
        index: "idx_large",
        node: "large",
        at: n,
        changes: [
          { version: `1.${n}`, parent: `1.${n - 1}`, upserts: [{ id: `r${n}`, title: "x".repeat(size) }], deletes: [] },
        ],
      }) as unknown as LogEntry;
    const first = await log.append(entry(1, 2_000_000), 0);
    const last = await log.append(entry(2, 10), first);
    const kept = await log.append(entry(3, 2_000_000), last);
    await log.truncate("idx_large", kept);
    // The first body: its entry is gone. The second: named by an entry still in the log, found
    // past the positions truncation emptied.
    expect(await log.deleteLargeEntries("idx_large", Date.now() + 1_000, { exceptFrom: first })).toBe(1);
    expect(await log.deleteLargeEntries("idx_large", Date.now() + 1_000, { exceptFrom: kept })).toBe(0);
    // A node that replays from there reads it whole.
    const delivered: AppliedEntry[] = [];
    const following = log.follow(kept, async (applied) => {
      delivered.push(applied);
    });
    await expect.poll(() => delivered.length, { timeout: 10_000 }).toBe(1);
    await following.stop();
    expect(delivered[0]!.seq).toBe(kept);
    const change = (delivered[0]!.entry as { changes: { upserts: { title: string }[] }[] }).changes[0]!;
    expect(change.upserts[0]!.title).toHaveLength(2_000_000);
  }, 60_000);

  it("truncating an index before position 1 removes nothing, and its writes go on", async () => {
    const log = await open("truncating", false);
    const entry = (n: number) => ({ op: "create", index: "idx_trunc", node: "truncating", at: n }) as const;
    let last = 0;
    const before = Date.now();
    for (let i = 0; i < 3; i++) last = await log.append(entry(i), last);
    // What a truncation computes while a node that has just started reports position 0.
    await log.truncate("idx_trunc", 1);
    expect(await log.lastSeqOf("idx_trunc")).toBe(last);
    // With when the log took it (GET /v1/regions' lag, D-301); an index without entries has none.
    const newest = await log.lastEntryOf("idx_trunc");
    expect(newest?.seq).toBe(last);
    expect(newest!.at).toBeGreaterThanOrEqual(before - 1_000);
    expect(newest!.at).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await log.lastEntryOf("idx_none")).toBeNull();
    // The next write names the index's last position, as every node knows it.
    last = await log.append(entry(3), last);
    expect(last).toBeGreaterThan(newest!.seq);
    // An entry of record changes says its newest version (D-309): a region counts how far it trails.
    const change = (version: string, parent: string) => ({ version, parent, upserts: [], deletes: ["x"] });
    const changes = [change("0.1", "0"), change("0.2", "0.1")];
    await log.append({ op: "changes", index: "idx_trunc", node: "truncating", at: Date.now(), changes }, last);
    expect(await log.lastEntryOf("idx_trunc")).toMatchObject({ version: "0.2" });
  });

  it("lists every document that exists throughout while others are rewritten and created (D-311)", async () => {
    const writer = await open("docs-writer", false);
    const reader = await open("docs-reader", false);
    const nodes = Array.from({ length: 10 }, (_, i) => `nodes/n${i}`);
    for (const name of nodes) await writer.putDoc(name, { at: 0 });
    // Positions are rewritten as nodes report and snapshot documents come and go, as in a cluster.
    let stop = false;
    let made = 0;
    const rewriting = [0, 1, 2, 3].map(async (w) => {
      for (let k = w; !stop; k++) await writer.putDoc(nodes[k % nodes.length]!, { at: k });
    });
    const creating = [0, 1].map(async (c) => {
      while (!stop) {
        const name = `snapshots/idx_list/${c}-${made++}`;
        await writer.putDoc(name, { made });
        if (made % 3 === 0) await writer.deleteDoc(name);
      }
    });
    const short: string[][] = [];
    try {
      for (let round = 0; round < 300; round++) {
        const listed = new Set(await reader.listDocs("nodes/"));
        const missing = nodes.filter((name) => !listed.has(name));
        if (missing.length > 0) short.push(missing);
      }
    } finally {
      stop = true;
      await Promise.all([...rewriting, ...creating]);
    }
    expect(short).toEqual([]);
    expect(made).toBeGreaterThan(50);

    // A deleted document leaves nothing behind that listings would have to read again and again.
    const described = () => describedIn(docsBucket("FILES_TEST"));
    const listed = await reader.listDocs("snapshots/idx_list/");
    expect(await described()).toBe(nodes.length + listed.length);
    await writer.deleteDoc(listed[0]!);
    expect(await described()).toBe(nodes.length + listed.length - 1);
    expect(await reader.listDocs("snapshots/idx_list/")).not.toContain(listed[0]);
    // The name written again is a document again.
    await writer.putDoc(listed[0]!, { again: true });
    expect(await reader.listDocs("snapshots/idx_list/")).toContain(listed[0]);
    expect(await reader.getDoc(listed[0]!)).toEqual({ again: true });
    // A description the object store's own delete left behind (a bucket written before D-311)
    // goes at the next listing.
    const client = await connect({ servers: nats.urls.split(",") });
    try {
      await (await new Objm(client).open(docsBucket("FILES_TEST"))).delete(listed[1]!);
    } finally {
      await client.close();
    }
    const withOld = await described();
    expect(await reader.listDocs("snapshots/idx_list/")).not.toContain(listed[1]);
    expect(await described()).toBe(withOld - 1);
  }, 120_000);

  it("a deleted set of files leaves no descriptions behind, and its index lists none (D-311)", async () => {
    const log = await open("files-gone", false);
    const described = () => describedIn(filesBucket("FILES_TEST"));
    const before = await described();
    writeFileSync(join(dir, "gone-a.bin"), "a".repeat(100));
    writeFileSync(join(dir, "gone-b.bin"), "b".repeat(100));
    const files = ["gone-a.bin", "gone-b.bin"].map((name) => ({ name, path: join(dir, name) }));
    await log.putFiles("segments/idx_gone/1", files);
    await log.putFiles("segments/idx_gone/2", files);
    expect((await log.listPublished("idx_gone")).map((p) => p.name).sort()).toEqual([
      "segments/idx_gone/1",
      "segments/idx_gone/2",
    ]);
    expect(await described()).toBe(before + 6);
    await log.deleteFiles("segments/idx_gone/1");
    expect((await log.listPublished("idx_gone")).map((p) => p.name)).toEqual(["segments/idx_gone/2"]);
    expect(await described()).toBe(before + 3);
    expect(await log.deleteUnfinished("idx_gone", Date.now() + 60_000)).toBe(0);
    expect(await log.hasFiles("segments/idx_gone/2")).toBe(true);
  });
});
