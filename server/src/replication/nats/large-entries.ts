// Log entries too large for one message travel through the object store: the log holds a
// reference to them, which every reader follows.
import { randomUUID } from "node:crypto";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import type { LogEntry } from "../../ports/change-log.ts";
import { within } from "../../within.ts";
import type { ObjectStores } from "./object-stores.ts";
import { nextMessage } from "./object-copies.ts";
import { subjectOf } from "./streams.ts";

/** An entry too large for one message travels through the object store; the log holds this. */
export interface EntryRef {
  ref: string;
}

export class LargeEntries {
  private readonly jsm: JetStreamManager;
  private readonly files: ObjectStore;
  private readonly objects: ObjectStores;
  private readonly stream: string;
  private readonly maxPayload: number;

  /** `maxPayload`: the largest message body an entry may be (the server's limit less headers). */
  constructor(jsm: JetStreamManager, files: ObjectStore, objects: ObjectStores, stream: string, maxPayload: number) {
    this.jsm = jsm;
    this.files = files;
    this.objects = objects;
    this.stream = stream;
    this.maxPayload = maxPayload;
  }

  /** The message that carries `entry`: the entry, or a reference to it when it is too large. */
  async body(entry: LogEntry): Promise<Buffer> {
    let body = Buffer.from(JSON.stringify(entry));
    if (body.length > this.maxPayload) {
      const ref = `entries/${entry.index}/${randomUUID()}`;
      await this.objects.describe(await this.files.putBlob({ name: ref }, body));
      body = Buffer.from(JSON.stringify({ ref } satisfies EntryRef));
    }
    return body;
  }

  /** The entry a message of the log carries, read from the object store when it is a reference. */
  async entryOf(message: { string(): string }): Promise<LogEntry> {
    const raw = JSON.parse(message.string()) as LogEntry | EntryRef;
    return "ref" in raw ? await this.readRef(raw.ref) : raw;
  }

  private async readRef(ref: string): Promise<LogEntry> {
    // An object removed while it is read (a snapshot another node cleared away) leaves the reader
    // waiting for chunks that never come: bounded, it is an error its caller handles.
    const data = await within(
      60_000,
      `reading ${ref}`,
      this.objects.readFileObject(ref, () => this.files.getBlob(ref)),
    );
    if (data === null) throw new Error(`log entry ${ref} is missing from the object store`);
    return JSON.parse(Buffer.from(data).toString("utf8")) as LogEntry;
  }

  async deleteLargeEntries(indexKey: string, at: number, options: { exceptFrom?: number } = {}): Promise<number> {
    const named =
      options.exceptFrom === undefined ? new Set<string>() : await this.refsFrom(indexKey, options.exceptFrom);
    const stale = (await this.objects.listFiles([`entries/${indexKey}/`])).filter(
      (info) => Date.parse(info.mtime) < at && !named.has(info.name),
    );
    for (const info of stale) await this.objects.deleteFile(info.name);
    return stale.length;
  }

  /** The large entries that the index's entries from `fromSeq` on name: a node replaying them reads them. */
  private async refsFrom(indexKey: string, fromSeq: number): Promise<Set<string>> {
    const named = new Set<string>();
    const subject = subjectOf(indexKey);
    for (let seq = fromSeq; ; seq++) {
      // The next entry of the subject at or after `seq`.
      const message = await nextMessage(this.jsm, this.stream, seq, subject);
      if (message === null) return named;
      // A reference is a few dozen bytes; an entry itself is not read further.
      if (message.data.length < 256) {
        const body = JSON.parse(message.string()) as Partial<EntryRef>;
        if (typeof body.ref === "string") named.add(body.ref);
      }
      seq = message.seq;
    }
  }
}
