// The change log on NATS JetStream (docs/replication.md): one stream, one subject per index, an
// object store beside it for segment files and for entries too large for one message.
// Compare-and-set appends use the expected last sequence of the index's subject; the publish
// acknowledgement comes once the stream's replicas have a quorum, which is the durability a write
// waits for.
//
// The parts, each in a file of its own: options.ts (how it is opened), streams.ts (the streams,
// made when missing), follow.ts and mirror.ts (reading the log, from the region's mirror or the
// stream), large-entries.ts, segment-files.ts (a major's and a snapshot's files), documents.ts,
// object-stores.ts (objects and the regions' copies of them) and copy-sweeps.ts (keeping those
// copies whole). This file opens them and joins them into the ChangeLog port.
import { rm } from "node:fs/promises";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Objm, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import {
  type AppliedEntry,
  type ChangeLog,
  type EntryTail,
  type LogEntry,
  type PutFilesOptions,
  NotAppendedError,
  StaleAppendError,
  newestVersionOf,
} from "../../ports/change-log.ts";
import type { NodeNotice } from "../../ports/node-notices.ts";
import { CopySweeps } from "./copy-sweeps.ts";
import { Documents } from "./documents.ts";
import { followLog } from "./follow.ts";
import { type EntryRef, LargeEntries } from "./large-entries.ts";
import { RegionMirror } from "./mirror.ts";
import {
  anchor,
  anchorsOf,
  bucketStream,
  descriptionsConfig,
  descriptionsStream,
  nextMessage,
} from "./object-copies.ts";
import { ObjectStores } from "./object-stores.ts";
import type { NatsLogOptions } from "./options.ts";
import { CONNECTION, connectionOf, docsBucket, filesBucket } from "./parts.ts";
import { SegmentFiles } from "./segment-files.ts";
import {
  SUBJECT_ROOT,
  copiesFor,
  ensureObjectCopies,
  ensureStream,
  streamExists,
  subjectOf,
  tryEnsureStream,
  untilReady,
} from "./streams.ts";

export type { NatsLogOptions } from "./options.ts";

/** Notices between the nodes (ports/node-notices.ts). */
const NOTICE_SUBJECT = "sift.notice";

export async function openNatsLog(options: NatsLogOptions): Promise<ChangeLog> {
  // The object store checks every object's SHA-256 on put and get, by default in JavaScript: that
  // was 43% of a node's CPU while it fetched a 1M-record major (bench/RESULTS.md, Replication).
  setSha256Backend("native");
  const nc = await connect({ ...connectionOf(options), name: options.name, ...CONNECTION });
  const ready = untilReady(options);
  // No account-info probe: in a supercluster that asks the meta leader, which has no quorum while
  // a region's cluster is down, and the steps below say what is wrong anyway.
  const jsm = await ready(() => jetstreamManager(nc, { timeout: 10_000, checkAPI: false }));
  const js = jetstream(nc, { timeout: 10_000, checkAPI: false });
  // A region whose mirror exists reads everything from it: the stream, the object stores and the
  // meta leader may all be in another region's cluster, out of reach at this moment. The node
  // then starts on what it holds (searches answer, /readyz says not ready) instead of exiting.
  const mirrored = options.mirror !== undefined && (await ready(() => streamExists(jsm, options.mirror!)));
  // With a mirror, each stream is first asked for briefly: a stream that answers is there (it is
  // opened unchecked), one out of reach is warned of, and only one that is missing is made.
  const briefly = mirrored ? await jetstreamManager(nc, { timeout: 2_000, checkAPI: false }) : undefined;
  const outOfReach = new Set<string>();
  const openOrMake = async <T>(what: string, stream: string, make: () => Promise<T>, open: () => T | Promise<T>) => {
    if (briefly === undefined) return ready(make);
    try {
      if (!(await streamExists(briefly, stream))) return ready(make);
    } catch (error) {
      const message = `${what} is out of reach; starting on the region's mirror, writes are refused until it answers`;
      options.log.warn(message, { error: (error as Error).message });
      outOfReach.add(stream);
    }
    return open();
  };
  // Whatever an earlier run fetched ahead and never used.
  if (options.stagingDir !== undefined) await rm(options.stagingDir, { recursive: true, force: true });
  const objm = new Objm(js);
  // Each stream a region's copy takes from is anchored as it is made, before anything is put in
  // it (object-copies.ts); one only opened was made, and anchored, by another node.
  const anchors = new Map(
    anchorsOf(options.stream, [filesBucket(options.stream), docsBucket(options.stream)]).map((a) => [
      a.stream,
      a.subject,
    ]),
  );
  const anchored = async <T>(stream: string, made: T) => {
    await anchor(js, jsm, stream, anchors.get(stream)!);
    return made;
  };
  const bucket = (name: string, description: string) =>
    openOrMake(
      `the object store ${name}`,
      bucketStream(name),
      async () => anchored(bucketStream(name), await objm.create(name, { replicas: options.replicas, description })),
      () => objm.open(name, false),
    );
  const [, , files, docs] = await Promise.all([
    openOrMake(
      `the log stream ${options.stream}`,
      options.stream,
      () => tryEnsureStream(jsm, options, nc.info?.cluster),
      () => undefined,
    ),
    openOrMake(
      "the stream of object descriptions",
      descriptionsStream(options.stream),
      async () =>
        anchored(
          descriptionsStream(options.stream),
          await ensureStream(jsm, {
            ...descriptionsConfig(options.stream, [filesBucket(options.stream), docsBucket(options.stream)]),
            num_replicas: options.replicas,
          }),
        ),
      () => undefined,
    ),
    bucket(filesBucket(options.stream), "Sift segment files and large log entries"),
    // Documents in a bucket of their own: listing them (at every start, at every truncation) then
    // walks a handful of pointers and positions, not every part of every published segment.
    bucket(docsBucket(options.stream), "Sift snapshot pointers and manifests, node positions"),
  ]);
  if (options.mirror !== undefined) {
    const cluster = nc.info?.cluster;
    await openOrMake(
      "the region's copies of the object stores",
      copiesFor(options)!.files.descriptions,
      // The descriptions' copy is made last: when it exists, so do the others.
      () => ensureObjectCopies(jsm, options, cluster),
      () => undefined,
    );
  }
  const log = new NatsLog(nc, jsm, js, files, docs, options);
  // A node started during an outage reads its documents from the region's copy at once (D-330).
  if (outOfReach.has(bucketStream(docsBucket(options.stream)))) log.docsOutOfReach();
  if (outOfReach.has(options.stream) && briefly !== undefined) log.homeOutOfReach(briefly);
  return log;
}

class NatsLog implements ChangeLog {
  private readonly nc: NatsConnection;
  private readonly jsm: JetStreamManager;
  private readonly js: JetStreamClient;
  private readonly options: NatsLogOptions;
  private readonly mirror: RegionMirror;
  private readonly objects: ObjectStores;
  private readonly entries: LargeEntries;
  private readonly segments: SegmentFiles;
  private readonly documents: Documents;
  private readonly sweeps: CopySweeps;

  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    js: JetStreamClient,
    files: ObjectStore,
    docs: ObjectStore,
    options: NatsLogOptions,
  ) {
    this.nc = nc;
    this.jsm = jsm;
    this.js = js;
    this.options = options;
    const copies = copiesFor(options);
    // Headroom for the headers of the message.
    const maxPayload = Math.max(1024, nc.info?.max_payload ?? 1024 * 1024) - 4096;
    this.mirror = new RegionMirror(nc, jsm, options);
    this.objects = new ObjectStores(jsm, js, files, options, copies);
    this.entries = new LargeEntries(jsm, files, this.objects, options.stream, maxPayload);
    this.segments = new SegmentFiles(nc, jsm, files, options, this.objects, copies, maxPayload);
    this.documents = new Documents(jsm, docs, options, this.objects, copies);
    this.sweeps = new CopySweeps(nc, jsm, options, this.objects, copies);
  }

  async append(entry: LogEntry, expectedLast: number | undefined): Promise<number> {
    const body = await this.entries.body(entry);
    try {
      const ack = await this.js.publish(subjectOf(entry.index), body, {
        ...(expectedLast === undefined ? {} : { expect: { lastSubjectSequence: expectedLast } }),
        timeout: 10_000,
      });
      return ack.seq;
    } catch (error) {
      if (
        error instanceof JetStreamApiError &&
        (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
          error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
      ) {
        // NATS's message says which position the index's newest entry has there (diagnosis).
        throw new StaleAppendError(
          `another entry for index ${entry.index} was appended first (expected ${expectedLast}: ${error.message})`,
        );
      }
      // The client's name for "no responders": no server took the message (the stream's leader
      // being elected), so it was not stored. A timeout says nothing of the kind.
      if ((error as Error).name === "JetStreamNotEnabled") throw new NotAppendedError((error as Error).message);
      throw error;
    }
  }

  lastSeq(): Promise<number> {
    return this.mirror.homeLastSeq();
  }

  async homeAway(): Promise<boolean> {
    return this.mirror.homeAway();
  }

  /** The log's stream did not answer when the log was opened; `brief` asks with a short timeout. */
  homeOutOfReach(brief: JetStreamManager): void {
    this.mirror.homeOutOfReach(brief);
  }

  async lastSeqNearby(): Promise<number> {
    const info = await this.jsm.streams.info(this.mirror.followed);
    return info.state.last_seq;
  }

  async lastSeqOf(indexKey: string): Promise<number> {
    // Its position only: an entry of a group of writes can be large, and is not parsed here.
    return (await this.lastMessageOf(indexKey))?.seq ?? 0;
  }

  async lastEntryOf(indexKey: string): Promise<EntryTail | null> {
    const message = await this.lastMessageOf(indexKey);
    if (!message) return null;
    const raw = message.json<LogEntry | EntryRef>();
    return { seq: message.seq, at: message.time.getTime(), version: "ref" in raw ? undefined : newestVersionOf(raw) };
  }

  async firstEntryOf(indexKey: string, fromSeq: number): Promise<AppliedEntry | null> {
    // The subject's next message at or after `fromSeq`.
    const message = await nextMessage(this.jsm, this.options.stream, Math.max(1, fromSeq), subjectOf(indexKey));
    return message === null ? null : { seq: message.seq, entry: await this.entries.entryOf(message) };
  }

  private lastMessageOf(indexKey: string) {
    return this.jsm.streams.getMessage(this.options.stream, { last_by_subj: subjectOf(indexKey) });
  }

  async entryTimeFrom(seq: number): Promise<number | undefined> {
    // The first at or after `seq` of any index: `seq` itself may have been removed with its
    // index's truncation.
    const message = await nextMessage(this.jsm, this.options.stream, seq, `${SUBJECT_ROOT}.>`);
    return message?.time.getTime();
  }

  async firstSeq(): Promise<number> {
    const info = await this.jsm.streams.info(this.options.stream);
    return info.state.first_seq;
  }

  follow(fromSeq: number, deliver: (applied: AppliedEntry) => Promise<void>): { stop(): Promise<void> } {
    const log = { js: this.js, options: this.options, mirror: this.mirror, entries: this.entries };
    return followLog(log, fromSeq, deliver);
  }

  putFiles(name: string, list: { name: string; path: string }[], options: PutFilesOptions = {}): Promise<void> {
    return this.segments.putFiles(name, list, options);
  }

  getFiles(name: string, dir: string): Promise<string[]> {
    return this.segments.getFiles(name, dir);
  }

  deleteFiles(name: string): Promise<void> {
    return this.segments.deleteFiles(name);
  }

  listPublished(indexKey: string): Promise<{ name: string; at: number }[]> {
    return this.segments.listPublished(indexKey);
  }

  deleteUnfinished(indexKey: string, at: number): Promise<number> {
    return this.segments.deleteUnfinished(indexKey, at);
  }

  hasFiles(name: string): Promise<boolean> {
    return this.segments.hasFiles(name);
  }

  deleteLargeEntries(indexKey: string, at: number, options: { exceptFrom?: number } = {}): Promise<number> {
    return this.entries.deleteLargeEntries(indexKey, at, options);
  }

  putDoc(name: string, value: unknown): Promise<void> {
    return this.documents.put(name, value);
  }

  /** The documents' bucket did not answer (when the log was opened): as after a read it failed. */
  docsOutOfReach(): void {
    this.documents.outOfReach();
  }

  getDoc<T>(name: string, options: { nearby?: boolean } = {}): Promise<T | null> {
    return this.documents.get<T>(name, options);
  }

  listDocs(prefix: string): Promise<string[]> {
    return this.documents.list(prefix);
  }

  deleteDoc(name: string): Promise<void> {
    return this.documents.delete(name);
  }

  async truncate(indexKey: string, beforeSeq: number): Promise<void> {
    // Nothing is before position 1, and NATS (2.9) takes a purge "before 1" as a purge of the
    // whole subject: an index's entries were all removed when a node that had just started
    // reported position 0, and every append after that failed its compare-and-set for good.
    if (beforeSeq <= 1) return;
    const purge = { filter: subjectOf(indexKey), seq: beforeSeq };
    await this.jsm.streams.purge(this.options.stream, purge);
    // A mirror copies appends, not purges: each region's is purged the same way, with the same
    // sequence numbers. One that does not answer (its region cut off) is purged the next time.
    for await (const stream of this.jsm.streams.list()) {
      if (stream.config.mirror?.name !== this.options.stream) continue;
      await this.jsm.streams.purge(stream.config.name, purge).catch((error: Error) =>
        this.options.log.warn("could not truncate a mirror of the change log", {
          mirror: stream.config.name,
          error: error.message,
        }),
      );
    }
  }

  async ping(): Promise<boolean> {
    if (this.nc.isClosed()) return false;
    try {
      await this.nc.flush();
      return true;
    } catch {
      // A failed flush is exactly the "not answering" this reports.
      return false;
    }
  }

  sendNotice(notice: NodeNotice): void {
    try {
      this.nc.publish(NOTICE_SUBJECT, JSON.stringify(notice));
    } catch (error) {
      // The connection closed (the node stopping): the others' caches expire as without it.
      this.options.log.warn("could not tell the other nodes", { notice: notice.kind, error: (error as Error).message });
    }
  }

  onNotice(listener: (notice: NodeNotice) => void): void {
    this.nc.subscribe(NOTICE_SUBJECT, {
      callback: (error, message) => {
        if (error !== null) return;
        try {
          listener(message.json<NodeNotice>());
        } catch (failure) {
          this.options.log.warn("could not take a notice from another node", { error: (failure as Error).message });
        }
      },
    });
  }

  watchHearing(listener: (hearing: boolean) => void): void {
    void (async () => {
      // Core messages are not kept: those sent while the connection is down never arrive.
      for await (const status of this.nc.status()) {
        if (status.type === "disconnect" || status.type === "staleConnection") listener(false);
        else if (status.type === "reconnect") listener(true);
      }
    })().catch((error: Error) => this.options.log.warn("stopped watching the connection", { error: error.message }));
  }

  async close(): Promise<void> {
    this.sweeps.close();
    await this.segments.close();
    // A drain flushes through the server: with none reachable (NATS stopped with this node, or
    // gone before) it rejects, and the connection is closed without it; nothing is left to send.
    await this.nc.drain().catch(() => this.nc.close());
  }
}
