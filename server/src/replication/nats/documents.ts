// Small documents beside the log (snapshot pointers and manifests, each node's position) in a
// bucket of their own; read from the region's copy while the bucket does not answer (D-330).
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import { within } from "../../within.ts";
import { listObjects } from "./listing.ts";
import { type RegionCopies, readCopy } from "./object-copies.ts";
import type { ObjectStores } from "./object-stores.ts";
import type { NatsLogOptions } from "./options.ts";
import { docsBucket } from "./parts.ts";
import { readObject } from "./small-objects.ts";

/** After the documents' bucket failed to answer, reads that allow it go to the region's copy first for this long. */
const DOCS_QUIET_MS = 30_000;

export class Documents {
  private readonly jsm: JetStreamManager;
  private readonly docs: ObjectStore;
  private readonly options: NatsLogOptions;
  private readonly objects: ObjectStores;
  private readonly copies: RegionCopies | undefined;
  /** When the documents' bucket last failed to answer a read (getDoc). */
  private docsUnansweredAt = Number.NEGATIVE_INFINITY;

  constructor(
    jsm: JetStreamManager,
    docs: ObjectStore,
    options: NatsLogOptions,
    objects: ObjectStores,
    copies: RegionCopies | undefined,
  ) {
    this.jsm = jsm;
    this.docs = docs;
    this.options = options;
    this.objects = objects;
    this.copies = copies;
  }

  async put(name: string, value: unknown): Promise<void> {
    await this.objects.describe(await this.docs.putBlob({ name }, Buffer.from(JSON.stringify(value))));
  }

  /** The documents' bucket did not answer (when the log was opened): as after a read it failed. */
  outOfReach(): void {
    this.docsUnansweredAt = Date.now();
  }

  async get<T>(name: string, options: { nearby?: boolean } = {}): Promise<T | null> {
    const parse = (data: Uint8Array | null) =>
      data === null ? null : (JSON.parse(Buffer.from(data).toString("utf8")) as T);
    // The bucket did not answer a moment ago: a read that allows it goes to the region's copy
    // first, instead of waiting 3 s for the bucket again (a restore reads two documents).
    if (Date.now() - this.docsUnansweredAt < DOCS_QUIET_MS) {
      const near = await this.fromCopy(name, options);
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
        const near = await this.fromCopy(name, options);
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
  private async fromCopy(name: string, options: { nearby?: boolean }): Promise<Uint8Array | null> {
    if (!options.nearby || this.copies === undefined) return null;
    // biome-ignore lint/plugin: a copy that lacks the document or does not answer leaves it to the bucket.
    return readCopy(this.jsm, this.copies.docs, name).catch(() => null);
  }

  async list(prefix: string): Promise<string[]> {
    return (await listObjects(this.jsm, docsBucket(this.options.stream), [prefix])).map((o) => o.name);
  }

  async delete(name: string): Promise<void> {
    await this.objects.deleteObject(this.docs, docsBucket(this.options.stream), name);
  }
}
