// The object stores beside the log (segment files, documents) as every part of the log uses them:
// an object's description published for the regions' copies, a read from the region's copy
// first, a deletion that reaches every region's copies (object-copies.ts).
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { ObjectInfo, ObjectStore } from "@nats-io/obj";
import { deleteObject, listObjects } from "./listing.ts";
import {
  bucketStream,
  type RegionCopies,
  describeObject,
  descriptionsStream,
  forgetObject,
  purgeChunks,
  purgePatches,
  readCopy,
} from "./object-copies.ts";
import type { NatsLogOptions } from "./options.ts";
import { filesBucket } from "./parts.ts";

/** Which streams copy which bucket is looked up again after this long. */
const COPIES_KEPT_MS = 60_000;

export class ObjectStores {
  private readonly jsm: JetStreamManager;
  private readonly js: JetStreamClient;
  private readonly files: ObjectStore;
  private readonly options: NatsLogOptions;
  /** The region's copies of the object stores, with a mirror (object-copies.ts). */
  private readonly copies: RegionCopies | undefined;
  /** Every region's copies, by what they copy, as last listed: deletions reach them too. */
  private allCopies: { at: number; byOrigin: Map<string, string[]> } | undefined;

  constructor(
    jsm: JetStreamManager,
    js: JetStreamClient,
    files: ObjectStore,
    options: NatsLogOptions,
    copies: RegionCopies | undefined,
  ) {
    this.jsm = jsm;
    this.js = js;
    this.files = files;
    this.options = options;
    this.copies = copies;
  }

  /** The files bucket's objects under `prefixes`. */
  listFiles(prefixes: string[]) {
    return listObjects(this.jsm, filesBucket(this.options.stream), prefixes);
  }

  /** Deletes a file object; see `deleteObject`. */
  deleteFile(name: string) {
    return this.deleteObject(this.files, filesBucket(this.options.stream), name);
  }

  /**
   * Deletes an object (see `deleteObject`), and its description and chunks from every region's
   * copies and patches. A copy out of reach now keeps its chunks until its region's next sweep.
   */
  async deleteObject(store: ObjectStore, bucket: string, name: string): Promise<void> {
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
  async streamsCopying(origin: string): Promise<string[]> {
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
  async describe(info: ObjectInfo): Promise<void> {
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
  async readFileObject(name: string, fromBucket: () => Promise<Uint8Array | null>): Promise<Uint8Array | null> {
    if (this.copies !== undefined) {
      // biome-ignore lint/plugin: a copy that lacks it, or is damaged or out of reach, leaves it to the bucket.
      const near = await readCopy(this.jsm, this.copies.files, name).catch(() => null);
      if (near !== null) return near;
    }
    return fromBucket();
  }

  /**
   * Whether the files bucket holds object `name`. A deleted object keeps a description marked
   * deleted (`nats object rm`, or Sift's own delete stopped before it purged that): not held, or a
   * snapshot would name files it lacks (D-376).
   */
  async holdsFile(name: string): Promise<boolean> {
    const info = await this.files.info(name);
    return info !== null && !info.deleted;
  }
}
