// The change log on NATS JetStream (docs/replication.md): one stream, one subject per index, an
// object store beside it for segment files and for entries too large for one message.
// Compare-and-set appends use the expected last sequence of the index's subject; the publish
// acknowledgement comes once the stream's replicas have a quorum, which is the durability a write
// waits for.
import { mkdir, open, rename, rm, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { type ObjectInfo, Objm, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import type { NatsTls } from "../../config.ts";
import type { Logger } from "../../log.ts";
import { syncDirectory, syncFile } from "../../durable.ts";
import { within } from "../../within.ts";
import { CONNECTION, connectionOf, docsBucket, encodingOf, type FileEncoding, filesBucket } from "./parts.ts";
import { deleteObject, listObjects } from "./listing.ts";
import {
  anchor,
  anchorsOf,
  bucketStream,
  type Copy,
  copyConfigs,
  copyProgress,
  describeObject,
  descriptionsConfig,
  descriptionsStream,
  forgetObject,
  noMessage,
  purgeChunks,
  purgePatches,
  readCopy,
  regionCopies,
  type Skip,
  isStreamNotFound,
  sweepCopy,
} from "./object-copies.ts";
import { readObject } from "./small-objects.ts";
import { TransferThread } from "./transfer-thread.ts";
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

export interface NatsLogOptions {
  /** Server URLs, comma-separated or a list (any member of the cluster will do). */
  servers: string[];
  /** A NATS credentials file to connect with (SIFT_NATS_CREDS, D-371). */
  credsFile?: string;
  /** TLS files (SIFT_NATS_TLS_*, D-371). */
  tls?: NatsTls;
  /** Stream name; the object store is `<stream>_files`. */
  stream: string;
  /**
   * A mirror of the stream in this node's region (made if missing): the node reads the log from
   * it, with the stream's own sequence numbers, and appends to the stream itself.
   */
  mirror?: string;
  /** Replicas of the stream and the object store (3 in a cluster: a quorum of 2 acknowledges). */
  replicas: number;
  /**
   * The region's mirror not moving for this long while it lacks entries the stream holds is
   * nudged: its leader asked to step down, then (twice as long later) the mirror made again, each
   * next time twice as long later (D-357). The region's copies of the object stores are looked at
   * this often, and nudged alike when they did not move between two looks (D-359). 60 s by default.
   */
  mirrorStalledMs?: number;
  /**
   * False: none of the sweeps soon after the opening (FIRST_SWEEPS_MS), only the usual ones and
   * those a leader's change brings; for a test that times the latter. True by default.
   */
  sweepsAfterOpening?: boolean;
  log: Logger;
  /** Names the connection in the server's monitoring. */
  name: string;
  /**
   * Where segment files announced by another node are fetched while it is still publishing
   * them (see prefetch); without it they are fetched when the log entry arrives.
   */
  stagingDir?: string;
}

/** Another node is publishing these files: fetch each part as soon as it is complete. */
interface Announcement {
  name: string;
  files: ManifestFile[];
  from: string;
}

/** A wait that ends after `ms`, or sooner when `end` is called. */
function timedWait(ms: number): { done: Promise<void>; end(): void } {
  let end = () => {};
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    end = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, end };
}

async function syncFiles(dir: string, files: { name: string }[]): Promise<void> {
  for (const f of files) await syncFile(join(dir, f.name));
}

/** A fetching node's word on one announced segment: "fetching" again every FETCHING_EVERY_MS. */
interface FetchState {
  name: string;
  from: string;
  state: "fetching" | "done";
}

const PREFETCH_SUBJECT = "sift.prefetch";
/** The publisher names each part here once it is complete. */
const PART_SUBJECT = "sift.prefetch.part";
/** Each fetching node says here that it is fetching (again and again), then that it holds the files (or failed). */
const FETCHING_SUBJECT = "sift.prefetch.state";
/** Notices between the nodes (ports/node-notices.ts). */
const NOTICE_SUBJECT = "sift.notice";
/**
 * The publisher of a segment waits at most this long, after its last part, for the nodes that
 * fetch it ahead to hold it (see putFiles).
 */
const FETCHED_WAIT_MS = 30_000;
/**
 * As long when a client waits for what follows the publishing (a coalesce asked over HTTP): its
 * answer has the index lock's and the adoption's waits still ahead, and a node that lacks the
 * files when it applies the entry fetches them then (D-352).
 */
const CLIENT_FETCHED_WAIT_MS = 2_000;
/** A fetching node says so this often; one silent for FETCHER_GONE_MS is not waited for. */
const FETCHING_EVERY_MS = 500;
const FETCHER_GONE_MS = 5_000;
/** A consumer silent this long while the log holds more is started again (see follow). */
const STALL_MS = 3_000;
/**
 * A stalled consumer's entries are read around it by message gets for at most this long, until it
 * delivers again: after a NATS server was killed, new consumers could not be made until JetStream's
 * metadata leader was elected again (9 s seen), nor for 10 s more where the request for one timed
 * out meanwhile, and every write waited that long for its own entry (D-370).
 */
const READ_AROUND_MS = 30_000;
/** While the stream is read instead of the region's mirror, the mirror is looked at this often. */
const MIRROR_RETRY_MS = 5_000;
/** While the region's mirror is read, its entries are compared with the stream's this often (D-355). */
const MIRROR_CHECK_MS = 10_000;
/** The default of `mirrorStalledMs` (D-357). */
const MIRROR_STALLED_MS = 60_000;
/** A prefetch waits this long for a part to appear, and its files are kept this long unclaimed. */
const PREFETCH_WAIT_MS = 5 * 60_000;
const PREFETCH_KEEP_MS = 15 * 60_000;

/** How often a node removes from its region's copies of the object stores what their origin dropped. */
const SWEEP_EVERY_MS = 10 * 60_000;
/**
 * And soon after it opens the log, and after it made a copy again: a copy that skips a message
 * does so as it is made (seen once), and a sweep finds the skip once the copy took a later one.
 */
const FIRST_SWEEPS_MS = [5_000, 15_000];
/**
 * And this long after a new leader was elected for a copy or what it copies: NATS 2.9's copies
 * lose messages when their leaders change (D-341, D-342); a later message shows the loss.
 */
const LEADER_CHANGE_SWEEP_MS = 20_000;
/** The first look at a copy made again; each further remake in a row doubles it (sweepWait). */
const REMADE_CHECK_MS = 15_000;
/** Remakes in a row from which a skip is logged as an error: NATS keeps skipping. */
const REMADE_TOO_OFTEN = 3;

/**
 * How long a node waits for its next sweep of the region's copies: `sweeps` since the log was
 * opened, `remadeInARow` sweeps in a row that made a copy again, `failedInARow` sweeps in a row
 * that NATS did not answer. A skip that NATS repeats at once is looked at again 15 s, 30 s, 1
 * min... later, up to the usual 10 to 20 minutes, not every 15 s; so is a sweep that failed (a
 * loaded cluster timed out, D-345), instead of waiting the usual 10 to 20 minutes.
 */
export function sweepWait(sweeps: number, remadeInARow: number, random = Math.random(), failedInARow = 0): number {
  const usual = SWEEP_EVERY_MS + random * SWEEP_EVERY_MS;
  const again = Math.max(remadeInARow, failedInARow);
  if (again > 0) return Math.min(REMADE_CHECK_MS * 2 ** (again - 1), usual);
  return FIRST_SWEEPS_MS[sweeps] ?? usual;
}
/** How a stream of the region's copies looked (NatsLog.copyLooks). */
interface CopyLook {
  taken: number;
  behind: boolean;
  still: number;
  remakes: number;
}
/** What one sweep of copies did: made one again, or could not look (NATS did not answer). */
interface SweepOutcome {
  remade: boolean;
  failed: boolean;
}
/** After the documents' bucket failed to answer, reads that allow it go to the region's copy first for this long. */
const DOCS_QUIET_MS = 30_000;
/** Which streams copy which bucket is looked up again after this long. */
const COPIES_KEPT_MS = 60_000;

/** An entry too large for one message travels through the object store; the log holds this. */
interface EntryRef {
  ref: string;
}

const SUBJECT_ROOT = "sift.log";
/** NATS's advisory of a stream's new leader, followed by the stream's name. */
const LEADER_ELECTED = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED";
/**
 * A region's copy of the object stores (any region's: `<mirror>_files`, `_docs`, `_objects`), or a
 * stream copies take from (`OBJ_<stream>_files`, `OBJ_<stream>_docs`, `<stream>_objects`).
 */
const copiesOrOrigin = (stream: string) => /_(files|docs|objects)$/.test(stream);

interface ManifestFile {
  name: string;
  encoding: FileEncoding;
  /** Bytes of the file as written (absent in manifests from before files had parts). */
  size?: number;
  /** Published in this many parts of PART_BYTES (absent: one object named like the file). */
  parts?: number;
}
interface Manifest {
  files: ManifestFile[];
}

/** A file is published in parts of this many bytes, PARTS_AT_ONCE of them at a time. */
const PART_BYTES = 16 * 1024 * 1024;
const PARTS_AT_ONCE = 4;
const partName = (name: string, file: string, part: number) => `${name}/${file}.part-${part}`;
const MANIFEST_SUFFIX = "/manifest";

/** Runs the jobs, at most `limit` at once; the first failure fails the whole. */
async function runLimited(jobs: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
}

/** A subject token per index key: keys are ids, but anything else is encoded to stay one token. */
const subjectOf = (indexKey: string) =>
  `${SUBJECT_ROOT}.${/^[A-Za-z0-9_-]+$/.test(indexKey) ? indexKey : `b64-${Buffer.from(indexKey).toString("base64url")}`}`;

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

/**
 * A cluster that has just started, or has just lost a server, elects its JetStream leaders first:
 * each step of opening the log is tried again until it answers, for up to a minute from the first.
 * Creating the object stores timed out once while a test had killed a server, and the node exited.
 */
function untilReady(options: NatsLogOptions): <T>(step: () => Promise<T>) => Promise<T> {
  const deadline = Date.now() + 60_000;
  // Said once every 10 s, not by every step twice a second (480 lines a minute before).
  let saidAt = 0;
  return async (step) => {
    for (;;) {
      try {
        return await step();
      } catch (error) {
        if (Date.now() > deadline) throw error;
        if (Date.now() - saidAt >= 10_000) {
          saidAt = Date.now();
          options.log.info("waiting for the NATS JetStream cluster", { error: (error as Error).message });
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
}

/** `cluster`: the NATS cluster of the server this node is connected to (none for a lone server). */
async function tryEnsureStream(jsm: JetStreamManager, options: NatsLogOptions, cluster?: string): Promise<void> {
  await ensureStream(jsm, {
    name: options.stream,
    subjects: [`${SUBJECT_ROOT}.>`],
    num_replicas: options.replicas,
    description: "Sift change log: one subject per index",
  });
  // Placed in the cluster of this node's server, so in its region (D-257). Unplaced, NATS puts a
  // new stream there too, unless that cluster cannot hold it at the moment (a server down): then
  // in another cluster of the supercluster, and the region would read its mirror from afar. Here
  // that is a failure, tried again until the region's cluster can hold it.
  if (options.mirror !== undefined) {
    await ensureStream(jsm, {
      name: options.mirror,
      mirror: { name: options.stream },
      num_replicas: options.replicas,
      ...(cluster ? { placement: { cluster, tags: [] } } : {}),
      description: `Sift change log, mirrored from ${options.stream} for the nodes of one region`,
    }).catch((error: Error) => {
      // NATS says only "no suitable peers for placement": say which stream, where, and why.
      throw new Error(
        `cannot make the mirror ${options.mirror} (SIFT_NATS_MIRROR) with ${options.replicas} replicas in NATS cluster ${cluster ?? "(none)"}, this node's: ${error.message}`,
        { cause: error },
      );
    });
  }
}

/** The region's copies of the object stores (object-copies.ts), with a mirror. */
const copiesFor = (options: NatsLogOptions) =>
  options.mirror === undefined
    ? undefined
    : regionCopies(options.mirror, options.stream, {
        files: filesBucket(options.stream),
        docs: docsBucket(options.stream),
      });

/** The region's copies, in the region's cluster like its mirror of the log (descriptions last). */
async function ensureObjectCopies(jsm: JetStreamManager, options: NatsLogOptions, cluster?: string): Promise<void> {
  for (const config of copyConfigs(copiesFor(options)!)) {
    await ensureStream(jsm, {
      ...config,
      num_replicas: options.replicas,
      ...(cluster ? { placement: { cluster, tags: [] } } : {}),
    }).catch((error: Error) => {
      throw new Error(
        `cannot make ${config.name}, a copy for this region (SIFT_NATS_MIRROR), with ${options.replicas} replicas in NATS cluster ${cluster ?? "(none)"}, this node's: ${error.message}`,
        { cause: error },
      );
    });
  }
}

/** Whether a stream exists; throws when its cluster cannot say. */
async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (isStreamNotFound(error)) return false;
    throw error;
  }
}

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  if (await streamExists(jsm, config.name)) return;
  await jsm.streams.add(config).catch(async (addError: Error) => {
    // Another node made it meanwhile: that one will do.
    await jsm.streams.info(config.name).catch(() => {
      throw addError;
    });
  });
}

class NatsLog implements ChangeLog {
  private readonly maxPayload: number;
  private readonly nc: NatsConnection;
  private readonly jsm: JetStreamManager;
  private readonly js: JetStreamClient;
  private readonly files: ObjectStore;
  private readonly docs: ObjectStore;
  /** Puts and fetches the parts of segment files (its own thread and connection). */
  private readonly transfers: TransferThread;
  private readonly options: NatsLogOptions;
  /** The region's copies of the object stores, with a mirror (object-copies.ts). */
  private readonly copies: { files: Copy; docs: Copy } | undefined;
  /** Every region's copies, by what they copy, as last listed: deletions reach them too. */
  private allCopies: { at: number; byOrigin: Map<string, string[]> } | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  /** Looks whether the region's copies stopped (watchCopies). */
  private copyWatch: NodeJS.Timeout | undefined;
  /** Copies found stopped for good between sweeps: the next sweep makes them again (D-359). */
  private readonly stoppedCopies = new Set<string>();
  /** Looks at the copies in a row that NATS did not answer (watchCopies). */
  private copyLooksFailed = 0;
  /** When the next sweep starts; infinite while one runs. */
  private sweepAt = Number.POSITIVE_INFINITY;
  /** A leader changed while a sweep ran: the next one comes soon (sweepSoon). */
  private sweepSoonAfter = false;
  /** Sweeps since the log was opened, and sweeps in a row that made a copy again (sweepWait). */
  private sweeps: number;
  private remadeInARow = 0;
  /** Sweeps in a row that NATS did not answer (sweepWait). */
  private failedInARow = 0;
  private closed = false;
  /** Set while the log's home has not answered since it was out of reach at the open (lastSeq). */
  private away: JetStreamManager | undefined;
  /** Asks the log's home with a short timeout, about a gap in the mirror (streamHoldsFrom). */
  private brief: JetStreamManager | undefined;
  /** The home did not answer about a gap: not asked again before this (streamHoldsFrom). */
  private gapsUnaskedUntil = 0;
  /**
   * Per stream of the region's copies (D-358, D-359): how far it had taken its origin at the last
   * look, whether that was behind its origin, how many looks in a row it has not moved while
   * behind, and how often it was made again since it was last caught up.
   */
  private readonly copyLooks = new Map<string, CopyLook>();
  /** The region's mirror being made again (remakeMirror), once at a time. */
  private remaking: Promise<void> | undefined;
  /** When the documents' bucket last failed to answer a read (getDoc). */
  private docsUnansweredAt = Number.NEGATIVE_INFINITY;
  /** Tells this node's own announcements from others'. */
  private readonly instance = randomUUID();
  /**
   * Segments being fetched ahead of their log entry: resolves with the staging folder and the
   * files the announcement listed, or null.
   */
  private readonly prefetches = new Map<string, Promise<{ dir: string; files: ManifestFile[] } | null>>();
  /** Prefetches waiting for a part to be complete, by the part's object name. */
  private readonly partWaiters = new Map<string, () => void>();
  /** The stream the log is read from: the region's mirror, or the stream itself. */
  private get followed(): string {
    return this.options.mirror ?? this.options.stream;
  }

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
    this.files = files;
    this.docs = docs;
    this.options = options;
    this.copies = copiesFor(options);
    this.transfers = new TransferThread(
      {
        servers: options.servers,
        ...(options.credsFile ? { credsFile: options.credsFile } : {}),
        ...(options.tls ? { tls: options.tls } : {}),
        name: `${options.name} files`,
        bucket: filesBucket(options.stream),
        ...(this.copies ? { copy: this.copies.files } : {}),
      },
      (part, reason) =>
        options.log.warn("a part in the region's copy could not be read; fetched it from the object store", {
          part,
          error: reason,
        }),
    );
    // Every node sweeps: its region's copies, if it has them, and every other region's for skips;
    // soon after a leader change of a copy or of what it copies, as well.
    // Counted as done when they are not wanted (sweepWait).
    this.sweeps = options.sweepsAfterOpening === false ? FIRST_SWEEPS_MS.length : 0;
    this.nextSweep();
    if (this.copies !== undefined) this.watchCopies();
    nc.subscribe(`${LEADER_ELECTED}.*`, {
      callback: (error, message) => {
        if (error === null && copiesOrOrigin(message.subject.slice(LEADER_ELECTED.length + 1))) this.sweepSoon();
      },
    });
    // Headroom for the headers of the message.
    this.maxPayload = Math.max(1024, nc.info?.max_payload ?? 1024 * 1024) - 4096;
    if (options.stagingDir !== undefined) {
      nc.subscribe(PREFETCH_SUBJECT, {
        callback: (error, message) => {
          if (error === null) this.prefetch(JSON.parse(message.string()) as Announcement);
        },
      });
      nc.subscribe(PART_SUBJECT, {
        callback: (error, message) => {
          if (error === null) this.partWaiters.get(message.string())?.();
        },
      });
    }
  }

  /**
   * Starts fetching the parts of a segment another node has begun to publish, each as soon as it
   * is complete, so that the download overlaps the upload instead of following it. Best effort:
   * getFiles falls back to fetching whatever a failed prefetch did not deliver.
   */
  private prefetch(announced: Announcement): void {
    const staging = this.options.stagingDir;
    if (staging === undefined || announced.from === this.instance || this.prefetches.has(announced.name)) return;
    const dir = join(staging, encodeURIComponent(announced.name));
    const say = (state: FetchState["state"]) => {
      if (this.nc.isClosed()) return;
      // biome-ignore lint/plugin: best effort; a publisher that does not hear from this node stops waiting for it.
      try {
        this.nc.publish(
          FETCHING_SUBJECT,
          JSON.stringify({ name: announced.name, from: this.instance, state } satisfies FetchState),
        );
      } catch {}
    };
    say("fetching");
    const saying = setInterval(() => say("fetching"), FETCHING_EVERY_MS);
    const job = (async () => {
      await mkdir(dir, { recursive: true });
      const deadline = Date.now() + PREFETCH_WAIT_MS;
      await runLimited(
        await this.partJobs(announced.name, announced.files, dir, async (part) => {
          for (;;) {
            // Listened for before looking: a part finished in between is not missed.
            const published = this.published(part, 1_000);
            if (await this.holdsFile(part)) return published.cancel();
            if (Date.now() > deadline) {
              published.cancel();
              throw new Error(`part ${part} was never published`);
            }
            await published.done;
          }
        }),
        PARTS_AT_ONCE,
      );
      // Flushed here, ahead: flushing them when the entry arrives held the index's entries on
      // this node for 200 ms per 300k-record checkpoint.
      await syncFiles(dir, announced.files);
      return { dir, files: announced.files };
    })().catch((error: Error) => {
      this.options.log.warn("fetching a segment ahead of its log entry failed; it is fetched with the entry", {
        segment: announced.name,
        error: error.message,
      });
      return null;
    });
    // Failed or not: the publisher stops waiting for this node, which fetches with the entry.
    void job.then(() => {
      clearInterval(saying);
      say("done");
    });
    this.prefetches.set(announced.name, job);
    setTimeout(() => {
      if (this.prefetches.get(announced.name) !== job) return;
      this.prefetches.delete(announced.name);
      // biome-ignore lint/plugin: an unclaimed prefetch folder left behind is removed at the next start.
      void rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }, PREFETCH_KEEP_MS).unref();
  }

  /** Resolves when the publisher says `part` is complete, or after `timeoutMs`. */
  private published(part: string, timeoutMs: number): { done: Promise<void>; cancel(): void } {
    const wait = timedWait(timeoutMs);
    this.partWaiters.set(part, wait.end);
    const done = wait.done.then(() => {
      if (this.partWaiters.get(part) === wait.end) this.partWaiters.delete(part);
    });
    return { done, cancel: wait.end };
  }

  /** One job per part of each file: fetched (once `ready` says so) into the file at its offset. */
  private async partJobs(
    name: string,
    files: ManifestFile[],
    dir: string,
    ready: (part: string) => Promise<void> = async () => {},
  ): Promise<(() => Promise<void>)[]> {
    const jobs: (() => Promise<void>)[] = [];
    for (const f of files) {
      const path = join(dir, f.name);
      // Sized first: the parts are written into it at their offsets, side by side.
      await (await open(path, "w")).close();
      if (f.size !== undefined) await truncate(path, f.size);
      for (let part = 0; part < (f.parts ?? 1); part++) {
        const object = f.parts === undefined ? `${name}/${f.name}` : partName(name, f.name, part);
        jobs.push(async () => {
          await ready(object);
          const of = `file ${f.name} of segment ${name}`;
          await this.transfers.fetch({ object, path, start: part * PART_BYTES, encoding: f.encoding, of });
        });
      }
    }
    return jobs;
  }

  async append(entry: LogEntry, expectedLast: number | undefined): Promise<number> {
    let body = Buffer.from(JSON.stringify(entry));
    if (body.length > this.maxPayload) {
      const ref = `entries/${entry.index}/${randomUUID()}`;
      await this.describe(await this.files.putBlob({ name: ref }, body));
      body = Buffer.from(JSON.stringify({ ref } satisfies EntryRef));
    }
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

  async lastSeq(): Promise<number> {
    // The home out of reach as the log opened: asked briefly until it answers, so that a node
    // started during the outage turns to its region's mirror in 2 s, not 10 (D-337).
    const info = await (this.away ?? this.jsm).streams.info(this.options.stream);
    this.away = undefined;
    return info.state.last_seq;
  }

  async homeAway(): Promise<boolean> {
    return this.away !== undefined;
  }

  /** The log's stream did not answer when the log was opened; `brief` asks with a short timeout. */
  homeOutOfReach(brief: JetStreamManager): void {
    this.away = brief;
  }

  async lastSeqNearby(): Promise<number> {
    const info = await this.jsm.streams.info(this.followed);
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
    // The subject's next message at or after `fromSeq` (the server's `next_by_subj`, NATS 2.9).
    const request = { seq: Math.max(1, fromSeq), next_by_subj: subjectOf(indexKey) } as unknown as { seq: number };
    const message = await this.jsm.streams.getMessage(this.options.stream, request).catch((error: Error) => {
      if (noMessage(error)) return null;
      throw error;
    });
    if (message === null) return null;
    const raw = JSON.parse(message.string()) as LogEntry | EntryRef;
    return { seq: message.seq, entry: "ref" in raw ? await this.readRef(raw.ref) : raw };
  }

  private lastMessageOf(indexKey: string) {
    return this.jsm.streams.getMessage(this.options.stream, { last_by_subj: subjectOf(indexKey) });
  }

  async entryTimeFrom(seq: number): Promise<number | undefined> {
    // The first at or after `seq` of any index (`next_by_subj`, NATS 2.9): `seq` itself may have
    // been removed with its index's truncation.
    const request = { seq, next_by_subj: `${SUBJECT_ROOT}.>` } as unknown as { seq: number };
    const message = await this.jsm.streams.getMessage(this.options.stream, request).catch((error: Error) => {
      if (noMessage(error)) return null;
      throw error;
    });
    return message?.time.getTime();
  }

  async firstSeq(): Promise<number> {
    const info = await this.jsm.streams.info(this.options.stream);
    return info.state.first_seq;
  }

  follow(fromSeq: number, deliver: (applied: AppliedEntry) => Promise<void>): { stop(): Promise<void> } {
    let stopped = false;
    let close: (() => Promise<void>) | undefined;
    let next = Math.max(1, fromSeq);
    let delivering = false;
    let progressAt = Date.now();
    // The region's mirror, or the stream itself while the mirror does not follow it (below).
    let source = this.followed;
    let sourceSince = Date.now();
    /** The next entry the mirror lacked at the last stall check, while the stream held it. */
    let lackedAt = 0;
    let comparedAt = Date.now();
    /**
     * The mirror's end while the stream is read around it (undefined: not looked at yet, or made
     * again), since when it has not moved, and how often it was nudged (D-357).
     */
    let mirrorEnd: { last: number | undefined; since: number; nudges: number } = {
      last: undefined,
      since: Date.now(),
      nudges: 0,
    };
    /** The read-around below while it runs, and how many messages the consumer has received. */
    let around: Promise<void> | undefined;
    let consumed = 0;
    // While the consumer is made again, the stream's entries are read by message gets, which only
    // the stream's leader answers (D-370); it stops as soon as the consumer receives a message.
    const readAround = () => {
      if (around !== undefined || stopped) return;
      const seen = consumed;
      const until = Date.now() + READ_AROUND_MS;
      around = (async () => {
        let waitMs = 50;
        while (!stopped && consumed === seen && Date.now() < until) {
          const message = await this.entryAt(next);
          if (stopped || consumed !== seen) return;
          if (message === null) {
            await new Promise((resolve) => setTimeout(resolve, waitMs));
            waitMs = Math.min(500, waitMs * 2);
            continue;
          }
          waitMs = 50;
          delivering = true;
          try {
            const raw = JSON.parse(message.string()) as LogEntry | EntryRef;
            await deliver({ seq: message.seq, entry: "ref" in raw ? await this.readRef(raw.ref) : raw });
            next = message.seq + 1;
          } finally {
            delivering = false;
            progressAt = Date.now();
          }
        }
      })()
        .catch((error: Error) =>
          this.options.log.warn("could not read the change log around its stalled consumer", {
            from: next,
            error: error.message,
          }),
        )
        .finally(() => {
          around = undefined;
        });
    };
    const readFrom = (stream: string, why: string) => {
      this.options.log.warn(why, { from: next, stream });
      if (stream === this.options.stream && source !== stream)
        mirrorEnd = { last: undefined, since: Date.now(), nudges: mirrorEnd.nudges };
      source = stream;
      sourceSince = Date.now();
      progressAt = Date.now();
      return close?.();
    };
    // A mirror under other sequence numbers than the stream's: applied by them, entries would be
    // skipped or taken for others (D-355). The stream is read from `next` on (entries applied
    // twice are skipped by their versions) and the mirror made again.
    const renumbered = (seq: number) => {
      // Not awaited: a consumer closes once its loop has left it; the remake logs its own failure.
      void readFrom(
        this.options.stream,
        "the region's mirror holds other entries than the stream at its positions; reading the stream",
      );
      void this.remakeRenumberedMirror(seq);
    };
    // A consumer that went quiet while the log holds entries it has not delivered is started
    // again from the next one: after a NATS server was killed one stayed silent for minutes
    // (test/replication/ingest-kill.test.ts), holding up every write waiting for its own entry.
    const watchdog = setInterval(() => {
      if (stopped || delivering) return;
      if (source !== this.options.stream && next > 1 && Date.now() - comparedAt >= MIRROR_CHECK_MS) {
        comparedAt = Date.now();
        const at = next - 1;
        // biome-ignore lint/plugin: a mirror or stream that does not answer is compared at the next check.
        void this.mirrorMatches(at)
          .then((same) => {
            if (same === false && !stopped && source !== this.options.stream) return renumbered(at);
          })
          .catch(() => undefined);
      }
      if (source !== this.followed && Date.now() - sourceSince >= MIRROR_RETRY_MS) {
        // biome-ignore lint/plugin: a mirror still behind or out of reach is asked again later.
        void this.mirrorHas(next - 1)
          .then(({ caughtUp, last }) => {
            sourceSince = Date.now();
            if (caughtUp && !stopped && source !== this.followed) {
              mirrorEnd = { last: undefined, since: Date.now(), nudges: 0 };
              return readFrom(this.followed, "the region's mirror follows the stream again; reading it");
            }
            // Behind, and not moving: stalled (NATS's mirrors have stopped for hours, D-357).
            if (last === undefined || last !== mirrorEnd.last) {
              mirrorEnd = { last, since: Date.now(), nudges: last === undefined ? mirrorEnd.nudges : 0 };
              return;
            }
            const stalledMs = this.options.mirrorStalledMs ?? MIRROR_STALLED_MS;
            if (Date.now() - mirrorEnd.since < stalledMs * 2 ** mirrorEnd.nudges || stopped) return;
            mirrorEnd = { ...mirrorEnd, since: Date.now(), nudges: mirrorEnd.nudges + 1 };
            return this.nudgeMirror(mirrorEnd.nudges, last, next - 1);
          })
          .catch(() => undefined);
        return;
      }
      if (Date.now() - progressAt < STALL_MS) return;
      // biome-ignore lint/plugin: a log that does not answer now is asked again at the next tick.
      void this.stalled(source, next)
        .then((verdict) => {
          if (stopped || delivering || Date.now() - progressAt < STALL_MS) return;
          // An append may land between the two questions: lacking only if it did a tick ago too.
          const lacks = verdict === "mirror lacks it" && lackedAt === next;
          lackedAt = verdict === "mirror lacks it" ? next : 0;
          // The same sequence numbers in both: the stream takes over where the mirror stopped.
          if (verdict === "mirror gone" || lacks)
            return readFrom(
              this.options.stream,
              `the region's mirror ${verdict === "mirror gone" ? "is gone" : "does not follow the stream"}; reading the stream`,
            );
          if (verdict === "stalled") {
            this.options.log.warn("the change log's consumer stalled; starting it again", { from: next });
            progressAt = Date.now();
            readAround();
            return close?.();
          }
        })
        .catch(() => undefined);
    }, 1_000);
    watchdog.unref();
    const done = (async () => {
      while (!stopped) {
        try {
          // An ordered consumer: the client recreates it after a server or leader change, from
          // the last sequence it delivered, so nothing is skipped or repeated.
          const consumer = await this.js.consumers.get(source, {
            filter_subjects: `${SUBJECT_ROOT}.>`,
            deliver_policy: DeliverPolicy.StartSequence,
            opt_start_seq: next,
          });
          // Short pull requests and heartbeats: a server that dies under the consumer is noticed
          // in a second or two (with the defaults a write waited up to 80 s for its own entry).
          const messages = await consumer.consume({ max_messages: 256, expires: 5_000, idle_heartbeat: 1_000 });
          close = async () => {
            await messages.close();
          };
          if (stopped) await messages.close();
          progressAt = Date.now();
          let first = true;
          for await (const m of messages) {
            // The read-around ends at its next step; what it delivered meanwhile is not again.
            consumed++;
            if (around !== undefined) await around;
            if (m.seq < next) continue;
            // The mirror keeps the stream's sequence numbers, and is truncated as the stream is:
            // a gap the stream does not have is an entry the mirror lost (D-341).
            if (m.seq > next && source !== this.options.stream && (await this.streamHoldsFrom(next, m.seq))) {
              // Not awaited: the consumer closes once this loop has left it.
              void readFrom(
                this.options.stream,
                "the region's mirror lacks entries the stream holds; reading the stream",
              );
              break;
            }
            // A consumer of the mirror starts where the stream's numbers say: its first entry must
            // be the stream's there (a node restarted after the mirror was renumbered, D-355).
            if (first && source !== this.options.stream && (await this.mirrorMatches(m.seq, m.data)) === false) {
              renumbered(m.seq);
              break;
            }
            first = false;
            delivering = true;
            try {
              const raw = JSON.parse(m.string()) as LogEntry | EntryRef;
              const entry = "ref" in raw ? await this.readRef(raw.ref) : raw;
              // No entry builds on one at or after its own position: the mirror's numbers are
              // behind, if the stream holds another entry there.
              if (
                source !== this.options.stream &&
                entry.after !== undefined &&
                entry.after >= m.seq &&
                (await this.mirrorMatches(m.seq, m.data)) === false
              ) {
                renumbered(m.seq);
                break;
              }
              await deliver({ seq: m.seq, entry });
              next = m.seq + 1;
            } finally {
              delivering = false;
              progressAt = Date.now();
            }
            if (stopped) break;
          }
        } catch (error) {
          if (stopped) break;
          if (source !== this.options.stream && isStreamNotFound(error)) {
            await readFrom(this.options.stream, "the region's mirror is gone; reading the stream");
            continue;
          }
          this.options.log.warn("following the change log failed; starting again", {
            from: next,
            error: (error as Error).message,
          });
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        clearInterval(watchdog);
        await close?.();
        await done;
      },
    };
  }

  /** The log's first entry at or after `seq`, read from the stream itself (null: none yet). */
  private async entryAt(seq: number) {
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    // The first entry at or after `seq` of any index (`next_by_subj`, NATS 2.9).
    const request = { seq, next_by_subj: `${SUBJECT_ROOT}.>` } as unknown as { seq: number };
    return this.brief.streams.getMessage(this.options.stream, request).catch((error: Error) => {
      if (noMessage(error)) return null;
      throw error;
    });
  }

  /**
   * Why a consumer of `source` delivered nothing for a while: "stalled" when `source` holds the
   * next entry; when `source` is the region's mirror, "mirror lacks it" when only the stream holds
   * it, or "mirror gone".
   */
  private async stalled(source: string, next: number): Promise<"stalled" | "mirror gone" | "mirror lacks it" | "idle"> {
    const mirror = source !== this.options.stream;
    const last = await this.jsm.streams.info(source).then(
      (info) => info.state.last_seq,
      (error: Error) => {
        if (mirror && isStreamNotFound(error)) return -1;
        throw error;
      },
    );
    if (last === -1) return "mirror gone";
    if (last >= next) return "stalled";
    return mirror && (await this.lastSeq()) >= next ? "mirror lacks it" : "idle";
  }

  /**
   * Whether the stream holds an entry from `from` up to (not including) `to`. Asked briefly: with
   * the log's home out of reach, the mirror is all there is, and it is read on (false).
   */
  private async streamHoldsFrom(from: number, to: number): Promise<boolean> {
    // Known out of reach: a node catching up through the mirror would wait 2 s at every gap.
    if (this.away !== undefined || Date.now() < this.gapsUnaskedUntil) return false;
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    // The first entry at or after `from` of any index (`next_by_subj`, NATS 2.9).
    const request = { seq: from, next_by_subj: `${SUBJECT_ROOT}.>` } as unknown as { seq: number };
    const message = await this.brief.streams.getMessage(this.options.stream, request).catch((error: Error) => {
      if (noMessage(error)) return null;
      this.gapsUnaskedUntil = Date.now() + 30_000;
      this.options.log.warn("could not ask the log's home about a gap in the region's mirror; reading on", {
        from,
        to,
        error: error.message,
      });
      return null;
    });
    return message !== null && message.seq < to;
  }

  /**
   * Whether the region's mirror holds every entry through `seq` at the stream's positions, and
   * its end; a mirror that is gone, or holds other entries there (D-355), is made again.
   */
  private async mirrorHas(seq: number): Promise<{ caughtUp: boolean; last: number | undefined }> {
    const mirror = this.options.mirror!;
    try {
      const last = (await this.jsm.streams.info(mirror)).state.last_seq;
      // Compared where both hold an entry: a renumbered mirror stays behind the stream for good.
      const at = Math.min(last, seq);
      if (at > 0 && (await this.mirrorMatches(at)) === false) {
        await this.remakeRenumberedMirror(at);
        return { caughtUp: false, last: undefined };
      }
      return { caughtUp: last >= seq, last };
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
      this.options.log.warn("making the region's mirror again", { mirror });
      await tryEnsureStream(this.jsm, this.options, this.nc.info?.cluster);
      return { caughtUp: false, last: undefined };
    }
  }

  /**
   * A mirror that stopped while behind the stream (D-357): the first time its leader is asked to
   * step down (a new leader starts its copying afresh), after that it is made again.
   */
  private async nudgeMirror(nudge: number, last: number, seq: number): Promise<void> {
    const mirror = this.options.mirror!;
    if (nudge === 1 && this.options.replicas > 1) {
      this.options.log.warn("the region's mirror has stopped behind the stream; asking its leader to step down", {
        mirror,
        last,
        seq,
      });
      await this.stepDown(mirror);
      return;
    }
    await this.remakeMirror("the region's mirror has stopped behind the stream", {
      // Another node of the region may have made it again meanwhile: it moves then.
      unless: async () => (await this.jsm.streams.info(mirror)).state.last_seq !== last,
      seq,
    });
  }

  /** Makes the mirror again once it holds another entry than the stream's at `seq` (D-355). */
  private remakeRenumberedMirror(seq: number): Promise<void> {
    return this.remakeMirror("the region's mirror holds other entries than the stream at its positions", {
      // Asked again just before: another node of the region may have made it again already.
      unless: async () => (await this.mirrorMatches(seq)) !== false,
      seq,
    });
  }

  /** Asks the leader of `stream` to step down: a new leader starts a mirror's or source's copying afresh. */
  private async stepDown(stream: string): Promise<void> {
    const reply = await this.nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, "", { timeout: 5_000 });
    const answer = reply.json<{ success?: boolean; error?: { description?: string } }>();
    if (!answer.success)
      this.options.log.warn("a stream's leader did not step down", { stream, error: answer.error?.description });
  }

  /**
   * Whether the region's mirror holds the stream's entry at `seq` (`held`: the mirror's, already
   * read). Undefined when either lacks it (truncated, or not there yet) or the stream is out of
   * reach: the mirror is what the region has then.
   *
   * NATS 2.9's mirror goes on under other numbers after its store refused entries (a limit, a
   * full disk): lifted, it takes the stream's next entry at its own next position, without the
   * ones it refused (seen on 2.9.10, test/replication/mirror.test.ts).
   */
  private async mirrorMatches(seq: number, held?: Uint8Array): Promise<boolean | undefined> {
    if (this.away !== undefined || Date.now() < this.gapsUnaskedUntil) return undefined;
    this.brief ??= await jetstreamManager(this.nc, { timeout: 2_000, checkAPI: false });
    const brief = this.brief;
    const read = (stream: string) =>
      brief.streams.getMessage(stream, { seq }).then(
        (m) => m?.data,
        (error: Error) => {
          if (noMessage(error)) return undefined;
          throw error;
        },
      );
    try {
      const [mine, home] = await Promise.all([held ?? read(this.options.mirror!), read(this.options.stream)]);
      if (mine === undefined || home === undefined) return undefined;
      return Buffer.compare(mine, home) === 0;
    } catch (error) {
      this.gapsUnaskedUntil = Date.now() + 30_000;
      this.options.log.warn("could not compare the region's mirror with the log's home; reading on", {
        seq,
        error: (error as Error).message,
      });
      return undefined;
    }
  }

  /**
   * Makes the region's mirror again, `why`, unless `unless` finds (just before) that another node
   * of the region did so already.
   */
  private async remakeMirror(why: string, options: { unless: () => Promise<boolean>; seq: number }): Promise<void> {
    if (this.remaking !== undefined) return this.remaking;
    const mirror = this.options.mirror!;
    this.remaking = (async () => {
      if (await options.unless()) return;
      this.options.log.warn(`${why}; making it again`, { mirror, seq: options.seq });
      await this.jsm.streams.delete(mirror).catch((error: Error) => {
        if (!isStreamNotFound(error)) throw error;
      });
      await tryEnsureStream(this.jsm, this.options, this.nc.info?.cluster);
    })()
      .catch((error: Error) =>
        this.options.log.warn("could not make the region's mirror again", { mirror, error: error.message }),
      )
      .finally(() => {
        this.remaking = undefined;
      });
    return this.remaking;
  }

  private async readRef(ref: string): Promise<LogEntry> {
    // An object removed while it is read (a snapshot another node cleared away) leaves the reader
    // waiting for chunks that never come: bounded, it is an error its caller handles.
    const data = await within(
      60_000,
      `reading ${ref}`,
      this.readFileObject(ref, () => this.files.getBlob(ref)),
    );
    if (data === null) throw new Error(`log entry ${ref} is missing from the object store`);
    return JSON.parse(Buffer.from(data).toString("utf8")) as LogEntry;
  }

  async putFiles(name: string, list: { name: string; path: string }[], options: PutFilesOptions = {}): Promise<void> {
    // Each file in parts, compressed, several parts at a time, in chunks as large as a message
    // may be: the object store publishes one chunk at a time and waits for its quorum, so 128 kB
    // chunks of raw segment files took 2,000 round trips in a row for a 1M-record version
    // (bench/RESULTS.md, Replication).
    const started = performance.now();
    const files: ManifestFile[] = [];
    const jobs: (() => Promise<void>)[] = [];
    const announced = name.startsWith("segments/");
    for (const f of list) {
      const size = (await stat(f.path)).size;
      const parts = Math.max(1, Math.ceil(size / PART_BYTES));
      const encoding = encodingOf(f.name);
      files.push({ name: f.name, encoding, size, parts });
      for (let part = 0; part < parts; part++) {
        jobs.push(() =>
          this.again(`publishing ${partName(name, f.name, part)}`, async () => {
            await this.transfers.put({
              object: partName(name, f.name, part),
              path: f.path,
              start: part * PART_BYTES,
              end: Math.min(size, (part + 1) * PART_BYTES) - 1,
              encoding,
              maxChunk: this.maxPayload,
            });
            if (announced) this.nc.publish(PART_SUBJECT, partName(name, f.name, part));
          }),
        );
      }
    }
    // The other nodes start fetching a new major's parts as they appear (prefetch), not after its
    // log entry; a snapshot's files are fetched only by a node that restores it.
    const fetchers = announced ? this.watchFetchers(name) : null;
    if (fetchers !== null)
      this.nc.publish(PREFETCH_SUBJECT, JSON.stringify({ name, files, from: this.instance } satisfies Announcement));
    try {
      // A checkpoint's parts one at a time: nobody waits for it, and four at once slowed the
      // writes of its moment on a busy machine (p99 about 600 ms against 170-270 ms, D-254).
      await runLimited(jobs, options.background ? 1 : PARTS_AT_ONCE);
      // Written last: a reader that finds the manifest finds every part it names.
      await this.again(`publishing ${name}/manifest`, () =>
        this.files
          .putBlob({ name: `${name}/manifest` }, Buffer.from(JSON.stringify({ files } satisfies Manifest)))
          .then((info) => this.describe(info)),
      );
      const storedMs = Math.round(performance.now() - started);
      await fetchers?.fetched(options.clientWaits ? CLIENT_FETCHED_WAIT_MS : FETCHED_WAIT_MS);
      // How long publishing took, by step: for a new major, until every fetching node held it too
      // (bench:replication -- --bulk-only shows a bulk version's).
      this.options.log.info("segment files published", {
        files: name,
        bytes: files.reduce((sum, f) => sum + (f.size ?? 0), 0),
        storedMs,
        ...(fetchers !== null ? { fetchedMs: Math.round(performance.now() - started) } : {}),
      });
    } finally {
      fetchers?.stop();
    }
  }

  /**
   * Which nodes fetch a segment ahead, and when they all hold it. The entry that names the
   * segment is appended after that: a node that applies it opens files it has, instead of holding
   * the index's later entries while it downloads them (D-254).
   */
  private watchFetchers(name: string): { fetched(timeoutMs: number): Promise<void>; stop(): void } {
    /** Each fetching node, with when it last said so. */
    const fetching = new Map<string, number>();
    let changed = () => {};
    const subscription = this.nc.subscribe(FETCHING_SUBJECT, {
      callback: (error, message) => {
        if (error !== null) return;
        const said = JSON.parse(message.string()) as FetchState;
        if (said.name !== name) return;
        if (said.state === "fetching") fetching.set(said.from, Date.now());
        else fetching.delete(said.from);
        changed();
      },
    });
    return {
      fetched: async (timeoutMs) => {
        const until = Date.now() + timeoutMs;
        for (;;) {
          // A node gone silent (stopped, or cut off from NATS) fetches with the entry, if ever.
          for (const [from, at] of fetching) if (Date.now() - at > FETCHER_GONE_MS) fetching.delete(from);
          if (fetching.size === 0 || Date.now() >= until) break;
          const wait = timedWait(Math.min(FETCHER_GONE_MS, until - Date.now()));
          changed = wait.end;
          await wait.done;
        }
        changed = () => {};
      },
      stop: () => subscription.unsubscribe(),
    };
  }

  /**
   * Runs an idempotent step again when it fails: a NATS server going away (its connections move
   * to another, the object store's stream elects a new leader) fails what was in flight for a few
   * seconds. An object put again under its name replaces the first try.
   */
  private async again(what: string, step: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await step();
        return;
      } catch (error) {
        // A file gone from disk (its index deleted while it was published) is not coming back.
        if (attempt >= 6 || (error as NodeJS.ErrnoException).code === "ENOENT") throw error;
        this.options.log.warn("a step against NATS failed; trying again", {
          step: what,
          attempt,
          error: (error as Error).message,
        });
        await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
      }
    }
  }

  async getFiles(name: string, dir: string): Promise<string[]> {
    const staged = await this.prefetches.get(name);
    this.prefetches.delete(name);
    // Fetched ahead: the announcement listed the files its manifest lists (putFiles writes both
    // from one list). Reading the manifest made a consumer on the object store's stream, a
    // clustered operation, while the index's later entries waited on this node: 18 to 198 ms
    // per checkpoint at 500 writes/s over three regions (D-290).
    const files = staged?.files ?? (await this.manifest(name));
    if (files === null) throw new Error(`segment ${name} is missing from the object store`);
    await mkdir(dir, { recursive: true });
    if (staged) {
      for (const f of files) await rename(join(staged.dir, f.name), join(dir, f.name));
      await rm(staged.dir, { recursive: true, force: true });
    } else {
      await runLimited(await this.partJobs(name, files, dir), PARTS_AT_ONCE);
      await syncFiles(dir, files);
    }
    // On disk before the engine's catalog names the segment, as a segment built here is. Files
    // fetched ahead were flushed in staging: moving them changed only this folder's entries.
    await syncDirectory(dir);
    return files.map((f) => f.name);
  }

  /** The files published under `name` (a list of names: written before files were compressed). */
  private async manifest(name: string): Promise<ManifestFile[] | null> {
    const object = `${name}/manifest`;
    const data = await this.readFileObject(object, () =>
      readObject(this.files, this.jsm, filesBucket(this.options.stream), object),
    );
    if (data === null) return null;
    const parsed = JSON.parse(Buffer.from(data).toString("utf8")) as Manifest | string[];
    return Array.isArray(parsed) ? parsed.map((f) => ({ name: f, encoding: "identity" })) : parsed.files;
  }

  async deleteFiles(name: string): Promise<void> {
    const files = await this.manifest(name);
    if (files === null) return;
    for (const f of files) {
      if (f.parts === undefined) await this.deleteFile(`${name}/${f.name}`);
      else for (let part = 0; part < f.parts; part++) await this.deleteFile(partName(name, f.name, part));
    }
    await this.deleteFile(`${name}/manifest`);
  }

  async listPublished(indexKey: string): Promise<{ name: string; at: number }[]> {
    return (await this.filesOf(indexKey))
      .filter((info) => info.name.endsWith(MANIFEST_SUFFIX))
      .map((info) => ({ name: info.name.slice(0, -MANIFEST_SUFFIX.length), at: Date.parse(info.mtime) }));
  }

  async deleteUnfinished(indexKey: string, at: number): Promise<number> {
    const objects = await this.filesOf(indexKey);
    const finished = new Set(
      objects.filter((o) => o.name.endsWith(MANIFEST_SUFFIX)).map((o) => o.name.slice(0, -MANIFEST_SUFFIX.length)),
    );
    // A set's objects are `<set>/<file>.part-<n>` and `<set>/manifest`. One still being published
    // has a part written lately: a set goes only when its newest part is older than `at`.
    const unfinished = new Map<string, { names: string[]; newest: number }>();
    for (const o of objects) {
      const set = o.name.slice(0, o.name.lastIndexOf("/"));
      if (finished.has(set)) continue;
      const entry = unfinished.get(set) ?? { names: [], newest: 0 };
      entry.names.push(o.name);
      entry.newest = Math.max(entry.newest, Date.parse(o.mtime));
      unfinished.set(set, entry);
    }
    let removed = 0;
    for (const { names, newest } of unfinished.values()) {
      if (newest >= at) continue;
      for (const name of names) await this.deleteFile(name);
      removed++;
    }
    return removed;
  }

  /** The index's objects in the files bucket. */
  private filesOf(indexKey: string): Promise<{ name: string; mtime: string }[]> {
    return this.listFiles([`segments/${indexKey}/`, `snapshots/${indexKey}/`]);
  }

  private listFiles(prefixes: string[]) {
    return listObjects(this.jsm, filesBucket(this.options.stream), prefixes);
  }

  /** Deletes a file object; see `deleteObject`. */
  private deleteFile(name: string) {
    return this.deleteObject(this.files, filesBucket(this.options.stream), name);
  }

  /**
   * Deletes an object (see `deleteObject`), and its description and chunks from every region's
   * copies and patches. A copy out of reach now keeps its chunks until its region's next sweep.
   */
  private async deleteObject(store: ObjectStore, bucket: string, name: string): Promise<void> {
    const nuid = await deleteObject(store, this.jsm, bucket, name);
    const described = descriptionsStream(this.options.stream);
    try {
      await forgetObject(this.jsm, [described, ...(await this.streamsCopying(described))], bucket, name);
      if (nuid !== null) {
        const copies = await this.streamsCopying(bucketStream(bucket));
        await purgeChunks(this.jsm, copies, bucket, nuid);
        await purgePatches(this.jsm, copies, bucket, nuid);
      }
    } catch (error) {
      this.options.log.warn("could not remove a deleted object from the regions' copies of the object stores", {
        object: name,
        error: (error as Error).message,
      });
    }
  }

  /** The streams that mirror or source `origin` (every region's copies), listed at most once a minute. */
  private async streamsCopying(origin: string): Promise<string[]> {
    if (this.allCopies === undefined || Date.now() - this.allCopies.at > COPIES_KEPT_MS) {
      const byOrigin = new Map<string, string[]>();
      for await (const stream of this.jsm.streams.list()) {
        const origins = [stream.config.mirror, ...(stream.config.sources ?? [])].flatMap((o) => (o ? [o.name] : []));
        for (const from of origins) byOrigin.set(from, [...(byOrigin.get(from) ?? []), stream.config.name]);
      }
      this.allCopies = { at: Date.now(), byOrigin };
    }
    return this.allCopies.byOrigin.get(origin) ?? [];
  }

  /** Publishes an object's description for the regions' copies; one that is not published is read from its bucket. */
  private async describe(info: ObjectInfo): Promise<void> {
    await describeObject(this.js, info).catch((error: Error) =>
      this.options.log.warn("could not describe an object for the regions' copies", {
        object: info.name,
        error: error.message,
      }),
    );
  }

  /**
   * An object of the files bucket (written once under its name, never changed): from the
   * region's copy when it holds it, else through `fromBucket`.
   */
  private async readFileObject(name: string, fromBucket: () => Promise<Uint8Array | null>): Promise<Uint8Array | null> {
    if (this.copies !== undefined) {
      // biome-ignore lint/plugin: a copy that lacks it, or is damaged or out of reach, leaves it to the bucket.
      const near = await readCopy(this.jsm, this.copies.files, name).catch(() => null);
      if (near !== null) return near;
    }
    return fromBucket();
  }

  /** Each node sweeps at its own moments: a sweep is idempotent. */
  private nextSweep(wait = sweepWait(this.sweeps, this.remadeInARow)): void {
    clearTimeout(this.sweeper);
    this.sweepAt = Date.now() + wait;
    this.sweeper = setTimeout(async () => {
      this.sweepAt = Number.POSITIVE_INFINITY;
      this.sweepSoonAfter = false;
      const here = this.copies !== undefined ? await this.sweepCopies() : { remade: false, failed: false };
      const others = await this.checkOtherCopies();
      this.sweeps++;
      this.remadeInARow = here.remade || others.remade ? this.remadeInARow + 1 : 0;
      this.failedInARow = here.failed || others.failed ? this.failedInARow + 1 : 0;
      if (this.closed) return;
      const usual = sweepWait(this.sweeps, this.remadeInARow, Math.random(), this.failedInARow);
      // A copy found stopped while this sweep ran is made again now (watchCopies).
      if (this.stoppedCopies.size > 0) this.nextSweep(0);
      else this.nextSweep(this.sweepSoonAfter ? Math.min(usual, LEADER_CHANGE_SWEEP_MS) : usual);
    }, wait);
    this.sweeper.unref();
  }

  /** Whether a sweep runs now (its next start is not set until it ends). */
  private get sweeping(): boolean {
    return this.sweepAt === Number.POSITIVE_INFINITY;
  }

  /** A sweep within LEADER_CHANGE_SWEEP_MS (a leader changed), unless one comes sooner. */
  private sweepSoon(): void {
    if (this.closed) return;
    if (this.sweeping) this.sweepSoonAfter = true;
    else if (this.sweepAt > Date.now() + LEADER_CHANGE_SWEEP_MS) this.nextSweep(LEADER_CHANGE_SWEEP_MS);
  }

  /**
   * Removes from this region's copies what the object stores dropped, and makes again a copy
   * that skipped a message (object-copies.ts): whether it made one again, and whether NATS failed it.
   */
  private async sweepCopies(): Promise<SweepOutcome> {
    const cluster = this.nc.info?.cluster;
    try {
      // One that could not be made again last time, or was deleted.
      await ensureObjectCopies(this.jsm, this.options, cluster);
      const stopped = [...this.stoppedCopies];
      this.stoppedCopies.clear();
      const skipped: Skip[] = [];
      for (const copy of Object.values(this.copies ?? {})) {
        const swept = await sweepCopy(this.jsm, copy);
        skipped.push(...swept.skipped);
        this.tellPatched("the region's copy", copy, swept.patched);
        if (swept.descriptions + swept.chunks > 0)
          this.options.log.info("swept what the object stores dropped from the region's copy", {
            copy: copy.chunks,
            descriptions: swept.descriptions,
            chunks: swept.chunks,
          });
      }
      if (skipped.length === 0 && stopped.length === 0) return { remade: false, failed: false };
      for (const stream of new Set([...skipped.map((skip) => skip.stream), ...stopped])) {
        await this.jsm.streams.delete(stream);
        const look = this.copyLooks.get(stream);
        // The new copy's progress is not compared with the old one's.
        if (look !== undefined) this.copyLooks.set(stream, { ...look, taken: -1, behind: false, still: 0 });
      }
      // Their sources take everything again from the origin; until then, reads go to the bucket.
      await ensureObjectCopies(this.jsm, this.options, cluster);
      // Repeated at once, the skip is NATS's doing, not a moment's: an operator should know.
      const inARow = this.remadeInARow + 1;
      const level = inARow >= REMADE_TOO_OFTEN ? "error" : "warn";
      for (const skip of skipped)
        this.options.log[level]("the region's copy of an object store skipped a message; made the copy again", {
          copy: skip.stream,
          lacked: skip.what,
          ...(inARow > 1 ? { remadeInARow: inARow } : {}),
        });
      return { remade: true, failed: false };
    } catch (error) {
      this.options.log.warn("could not sweep the region's copies of the object stores", {
        error: (error as Error).message,
      });
      return { remade: false, failed: true };
    }
  }

  /**
   * Every `mirrorStalledMs` (60 s), whether a stream of the region's copies stopped (D-359): the
   * sweeps, 10 to 20 minutes apart, found one only within 20 to 40 minutes (D-358).
   */
  private watchCopies(): void {
    // At each node's own moments: two nodes of a region would otherwise make a copy again together.
    this.copyWatch = setTimeout(
      async () => {
        // A sweep that runs may be making a copy again: its progress is not looked at meanwhile.
        if (!this.sweeping) {
          const remake = await this.nudgeStoppedCopies().then(
            (streams) => {
              this.copyLooksFailed = 0;
              return streams;
            },
            (error: Error) => {
              // Once per spell: an outage of the log's home fails every look until it is back.
              if (this.copyLooksFailed++ === 0)
                this.options.log.warn("could not look whether the region's copies of the object stores stopped", {
                  error: error.message,
                });
              return [];
            },
          );
          for (const stream of remake) this.stoppedCopies.add(stream);
          // Made again by a sweep now, or at the end of the one that started meanwhile.
          if (remake.length > 0 && !this.closed && !this.sweeping) this.nextSweep(0);
        }
        if (!this.closed) this.watchCopies();
      },
      (this.options.mirrorStalledMs ?? MIRROR_STALLED_MS) * (0.75 + Math.random() / 2),
    );
    this.copyWatch.unref();
  }

  /**
   * A stream of the region's copies that took nothing between two looks while its origin held a
   * message past what it took has stopped (D-358), as the log's mirror can (D-357): its leader is
   * asked to step down; still so at the next look, it is made again (its origin's objects cross
   * the gateway again). A copy made again that stops again before it caught up waits twice as
   * many looks each time. Returns the streams to make again.
   */
  private async nudgeStoppedCopies(): Promise<string[]> {
    const remake: string[] = [];
    const progress = await copyProgress(this.jsm, this.copies!);
    for (const { stream, taken, originLast } of progress) {
      const before = this.copyLooks.get(stream) ?? { taken: -1, behind: false, still: 0, remakes: 0 };
      const behind = originLast > taken;
      const still = behind && before.behind && before.taken === taken ? before.still + 1 : 0;
      const remakes = behind ? before.remakes : 0;
      this.copyLooks.set(stream, { taken, behind, still, remakes });
      const scale = 2 ** remakes;
      const stepDownAt = this.options.replicas > 1 ? scale : Number.NaN;
      const remakeAt = this.options.replicas > 1 ? 2 * scale : scale;
      if (still === stepDownAt) {
        this.options.log.warn(
          "the region's copy of an object store has stopped behind its origin; asking its leader to step down",
          { copy: stream, taken, originLast },
        );
        await this.stepDown(stream);
      } else if (still === remakeAt) {
        this.options.log.warn("the region's copy of an object store has stopped behind its origin; making it again", {
          copy: stream,
          taken,
          originLast,
          ...(remakes > 0 ? { remadeBefore: remakes } : {}),
        });
        this.copyLooks.set(stream, { taken: -1, behind: false, still: 0, remakes: remakes + 1 });
        remake.push(stream);
      }
    }
    return remake;
  }

  /**
   * Makes again another region's copy that skipped a message (D-339): one that skips while every
   * node of its region is down would otherwise stay short until one of them starts, and a
   * restore there during an outage of the home would wait for the home. Nothing else in it is
   * touched: its region's nodes sweep it.
   */
  private async checkOtherCopies(): Promise<SweepOutcome> {
    let remade = false;
    try {
      const own = this.copies?.files.descriptions;
      const suffix = "_objects";
      const others = (await this.streamsCopying(descriptionsStream(this.options.stream))).filter(
        (name) => name !== own && name.endsWith(suffix),
      );
      for (const descriptions of others) {
        const copies = copiesFor({ ...this.options, mirror: descriptions.slice(0, -suffix.length) })!;
        const skipped: Skip[] = [];
        for (const copy of [copies.files, copies.docs]) {
          const swept = await sweepCopy(this.jsm, copy, { skipsOnly: true });
          skipped.push(...swept.skipped);
          this.tellPatched("another region's copy", copy, swept.patched);
        }
        for (const stream of new Set(skipped.map((skip) => skip.stream))) {
          // Made again as its region's node made it: its own configuration (source, replicas, placement).
          const { config } = await this.jsm.streams.info(stream);
          await this.jsm.streams.delete(stream);
          await ensureStream(this.jsm, config);
          remade = true;
        }
        for (const skip of skipped)
          this.options.log.warn("another region's copy of an object store skipped a message; made the copy again", {
            copy: skip.stream,
            lacked: skip.what,
          });
      }
    } catch (error) {
      this.options.log.warn("could not look at the other regions' copies of the object stores", {
        error: (error as Error).message,
      });
      return { remade, failed: true };
    }
    return { remade, failed: false };
  }

  /** A copy's skipped objects now in its region's patches (D-348): found, and read from there. */
  private tellPatched(whose: string, copy: Copy, objects: string[]): void {
    if (objects.length === 0) return;
    this.options.log.warn(`${whose} of an object store skipped chunks; put their objects into the region's patches`, {
      copy: copy.chunks,
      objects: objects.length,
      first: objects[0],
    });
  }

  async deleteLargeEntries(indexKey: string, at: number, options: { exceptFrom?: number } = {}): Promise<number> {
    const named =
      options.exceptFrom === undefined ? new Set<string>() : await this.refsFrom(indexKey, options.exceptFrom);
    const stale = (await this.listFiles([`entries/${indexKey}/`])).filter(
      (info) => Date.parse(info.mtime) < at && !named.has(info.name),
    );
    for (const info of stale) await this.deleteFile(info.name);
    return stale.length;
  }

  /** The large entries that the index's entries from `fromSeq` on name: a node replaying them reads them. */
  private async refsFrom(indexKey: string, fromSeq: number): Promise<Set<string>> {
    const named = new Set<string>();
    const subject = subjectOf(indexKey);
    for (let seq = fromSeq; ; seq++) {
      // The next entry of the subject at or after `seq` (the server's `next_by_subj`, NATS 2.9).
      const request = { seq, next_by_subj: subject } as unknown as { seq: number };
      const message = await this.jsm.streams.getMessage(this.options.stream, request).catch((error: Error) => {
        if (noMessage(error)) return null;
        throw error;
      });
      if (message === null) return named;
      // A reference is a few dozen bytes; an entry itself is not read further.
      if (message.data.length < 256) {
        const body = JSON.parse(message.string()) as Partial<EntryRef>;
        if (typeof body.ref === "string") named.add(body.ref);
      }
      seq = message.seq;
    }
  }

  async hasFiles(name: string): Promise<boolean> {
    return this.holdsFile(`${name}/manifest`);
  }

  /**
   * Whether the files bucket holds object `name`. A deleted object keeps a description marked
   * deleted (`nats object rm`, or Sift's own delete stopped before it purged that): not held, or a
   * snapshot would name files it lacks (D-376).
   */
  private async holdsFile(name: string): Promise<boolean> {
    const info = await this.files.info(name);
    return info !== null && !info.deleted;
  }

  async putDoc(name: string, value: unknown): Promise<void> {
    await this.describe(await this.docs.putBlob({ name }, Buffer.from(JSON.stringify(value))));
  }

  /** The documents' bucket did not answer (when the log was opened): as after a read it failed. */
  docsOutOfReach(): void {
    this.docsUnansweredAt = Date.now();
  }

  async getDoc<T>(name: string, options: { nearby?: boolean } = {}): Promise<T | null> {
    const parse = (data: Uint8Array | null) =>
      data === null ? null : (JSON.parse(Buffer.from(data).toString("utf8")) as T);
    // The bucket did not answer a moment ago: a read that allows it goes to the region's copy
    // first, instead of waiting 3 s for the bucket again (a restore reads two documents).
    if (Date.now() - this.docsUnansweredAt < DOCS_QUIET_MS) {
      const near = await this.docFromCopy(name, options);
      if (near !== null) {
        this.options.log.warn("the object store did not answer just before; read a document from the region's copy", {
          document: name,
        });
        return parse(near);
      }
    }
    // Overwriting an object removes its old chunks: a reader that had its old description waits
    // for chunks that are gone. Documents are small, so a read that takes seconds is that race
    // (a snapshot pointer, a node's position) and is started again, on the new description.
    let data: Uint8Array | null = null;
    for (let attempt = 1; ; attempt++) {
      try {
        data = await within(
          3_000,
          `reading ${name}`,
          readObject(this.docs, this.jsm, docsBucket(this.options.stream), name),
        );
        this.docsUnansweredAt = Number.NEGATIVE_INFINITY;
        break;
      } catch (error) {
        this.docsUnansweredAt = Date.now();
        // The bucket out of reach (the log's home cluster down, say): the region's copy answers a
        // read that allows it. A copy that lacks the document does not: the bucket is asked again.
        const near = await this.docFromCopy(name, options);
        if (near !== null) {
          this.options.log.warn("the object store does not answer; read a document from the region's copy", {
            document: name,
            error: (error as Error).message,
          });
          data = near;
          break;
        }
        if (attempt >= 5) throw error;
      }
    }
    return parse(data);
  }

  /** `name` as the region's copy holds it, for a read that allows an older answer; else null. */
  private async docFromCopy(name: string, options: { nearby?: boolean }): Promise<Uint8Array | null> {
    if (!options.nearby || this.copies === undefined) return null;
    // biome-ignore lint/plugin: a copy that lacks the document or does not answer leaves it to the bucket.
    return readCopy(this.jsm, this.copies.docs, name).catch(() => null);
  }

  async listDocs(prefix: string): Promise<string[]> {
    return (await listObjects(this.jsm, docsBucket(this.options.stream), [prefix])).map((o) => o.name);
  }

  async deleteDoc(name: string): Promise<void> {
    await this.deleteObject(this.docs, docsBucket(this.options.stream), name);
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
    this.closed = true;
    clearTimeout(this.sweeper);
    clearTimeout(this.copyWatch);
    await this.transfers.close();
    // A drain flushes through the server: with none reachable (NATS stopped with this node, or
    // gone before) it rejects, and the connection is closed without it; nothing is left to send.
    await this.nc.drain().catch(() => this.nc.close());
  }
}
