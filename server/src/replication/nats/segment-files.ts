// Segment files in the object store: a new major's or a checkpoint's files published in parts,
// compressed, and fetched by the other nodes while they are still being published (prefetch), so
// that the log entry naming them finds them on disk (D-254, D-290); a snapshot's files alike,
// fetched by a node that restores it.
import { randomUUID } from "node:crypto";
import { mkdir, open, rename, rm, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { syncDirectory, syncFile } from "../../durable.ts";
import type { PutFilesOptions } from "../../ports/change-log.ts";
import type { RegionCopies } from "./object-copies.ts";
import type { ObjectStores } from "./object-stores.ts";
import type { NatsLogOptions } from "./options.ts";
import { type FileEncoding, encodingOf, filesBucket } from "./parts.ts";
import { readObject } from "./small-objects.ts";
import { TransferThread } from "./transfer-thread.ts";

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
/** A prefetch waits this long for a part to appear, and its files are kept this long unclaimed. */
const PREFETCH_WAIT_MS = 5 * 60_000;
const PREFETCH_KEEP_MS = 15 * 60_000;

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

export class SegmentFiles {
  private readonly nc: NatsConnection;
  private readonly jsm: JetStreamManager;
  private readonly files: ObjectStore;
  private readonly options: NatsLogOptions;
  private readonly objects: ObjectStores;
  private readonly maxPayload: number;
  /** Puts and fetches the parts of segment files (its own thread and connection). */
  private readonly transfers: TransferThread;
  /** Tells this node's own announcements from others'. */
  private readonly instance = randomUUID();
  /**
   * Segments being fetched ahead of their log entry: resolves with the staging folder and the
   * files the announcement listed, or null.
   */
  private readonly prefetches = new Map<string, Promise<{ dir: string; files: ManifestFile[] } | null>>();
  /** Prefetches waiting for a part to be complete, by the part's object name. */
  private readonly partWaiters = new Map<string, () => void>();

  /** `maxPayload`: the largest chunk a part may be put in (the server's limit less headers). */
  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    files: ObjectStore,
    options: NatsLogOptions,
    objects: ObjectStores,
    copies: RegionCopies | undefined,
    maxPayload: number,
  ) {
    this.nc = nc;
    this.jsm = jsm;
    this.files = files;
    this.options = options;
    this.objects = objects;
    this.maxPayload = maxPayload;
    this.transfers = new TransferThread(
      {
        servers: options.servers,
        ...(options.credsFile ? { credsFile: options.credsFile } : {}),
        ...(options.tls ? { tls: options.tls } : {}),
        name: `${options.name} files`,
        bucket: filesBucket(options.stream),
        ...(copies ? { copy: copies.files } : {}),
      },
      (part, reason) =>
        options.log.warn("a part in the region's copy could not be read; fetched it from the object store", {
          part,
          error: reason,
        }),
    );
    if (options.stagingDir !== undefined) {
      nc.subscribe(PREFETCH_SUBJECT, {
        callback: (error, message) => {
          if (error === null) void this.prefetchHeld(JSON.parse(message.string()) as Announcement);
        },
      });
      nc.subscribe(PART_SUBJECT, {
        callback: (error, message) => {
          if (error === null) this.partWaiters.get(message.string())?.();
        },
      });
    }
  }

  /** Prefetches the files of an index this node holds; the others' are none of its business (D-385). */
  private async prefetchHeld(announced: Announcement): Promise<void> {
    const index = announced.name.split("/")[1];
    if (index !== undefined && this.options.holdsIndex !== undefined && !(await this.options.holdsIndex(index))) return;
    this.prefetch(announced);
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
            if (await this.objects.holdsFile(part)) return published.cancel();
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
          .then((info) => this.objects.describe(info)),
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
    const data = await this.objects.readFileObject(object, () =>
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
      if (f.parts === undefined) await this.objects.deleteFile(`${name}/${f.name}`);
      else for (let part = 0; part < f.parts; part++) await this.objects.deleteFile(partName(name, f.name, part));
    }
    await this.objects.deleteFile(`${name}/manifest`);
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
      for (const name of names) await this.objects.deleteFile(name);
      removed++;
    }
    return removed;
  }

  /** The index's objects in the files bucket. */
  private filesOf(indexKey: string): Promise<{ name: string; mtime: string }[]> {
    return this.objects.listFiles([`segments/${indexKey}/`, `snapshots/${indexKey}/`]);
  }

  async hasFiles(name: string): Promise<boolean> {
    return this.objects.holdsFile(`${name}/manifest`);
  }

  /** Stops the transfer thread. */
  close(): Promise<void> {
    return this.transfers.close();
  }
}
