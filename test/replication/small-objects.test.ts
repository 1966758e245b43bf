// Objects of one chunk read with message gets instead of a consumer per read (D-300), against a
// private server: what the object store wrote is what comes back, byte for byte, whatever the
// name; a larger object is read the object store's way; an object overwritten, deleted or
// missing reads as the object store's own reader would; a chunk that does not match its
// description is refused.
import { randomBytes } from "node:crypto";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type ObjectStore, Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readObject, readOneChunk } from "../../server/src/replication/nats/small-objects.ts";
import { type NatsCluster, natsAvailable, startNatsCluster } from "../support/nats.ts";

describe.skipIf(!natsAvailable)("objects of one chunk, read without a consumer", () => {
  let nats: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let store: ObjectStore;
  const bucket = "SMALL";

  beforeAll(async () => {
    nats = await startNatsCluster(1);
    nc = await connect({ servers: nats.urls.split(",") });
    jsm = await jetstreamManager(nc);
    store = await new Objm(jetstream(nc)).create(bucket);
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("reads what the object store wrote, one chunk or several, any name", async () => {
    const one = randomBytes(100_000);
    const several = randomBytes(3_000_000);
    // Base64 of this name holds "+" and "/", which subjects carry as "-" and "_".
    const odd = "segments/a?>?~\u00e9/index.bin.part-0";
    await store.putBlob({ name: odd }, one);
    await store.putBlob({ name: "empty" }, new Uint8Array(0));
    await store.putBlob({ name: "several", options: { max_chunk_size: 128 * 1024 } }, several);

    const consumers = async () => (await jsm.consumers.list(`OBJ_${bucket}`).next()).length;
    expect(Buffer.from((await readOneChunk(store, jsm, bucket, odd)) as Uint8Array).equals(one)).toBe(true);
    expect(Buffer.from((await readObject(store, jsm, bucket, odd))!).equals(one)).toBe(true);
    expect(await readOneChunk(store, jsm, bucket, "empty")).toEqual(new Uint8Array(0));
    // No consumer was made on the bucket's stream for those reads...
    expect(await consumers()).toBe(0);
    expect(await readOneChunk(store, jsm, bucket, "several")).toBe("chunked");
    expect(Buffer.from((await readObject(store, jsm, bucket, "several"))!).equals(several)).toBe(true);
    // ...where the object store's own reader makes one (it goes once idle).
    expect(await consumers()).toBe(1);
  });

  it("an overwritten object reads as its newest bytes; deleted or missing, as nothing", async () => {
    await store.putBlob({ name: "doc" }, Buffer.from('{"position":1}'));
    await store.putBlob({ name: "doc" }, Buffer.from('{"position":2}'));
    expect(Buffer.from((await readObject(store, jsm, bucket, "doc"))!).toString()).toBe('{"position":2}');
    await store.putBlob({ name: "gone" }, Buffer.from("soon gone"));
    await store.delete("gone");
    expect(await readObject(store, jsm, bucket, "gone")).toBeNull();
    expect(await readObject(store, jsm, bucket, "never written")).toBeNull();
  });

  it("a chunk that does not match its description's digest is refused", async () => {
    await store.putBlob({ name: "checked" }, Buffer.from("the bytes as written"));
    const subject = `$O.${bucket}.M.${Buffer.from("checked").toString("base64").replace(/\+/g, "-").replace(/\//g, "_")}`;
    const meta = (await jsm.streams.getMessage(`OBJ_${bucket}`, { last_by_subj: subject }))!.json<{ digest: string }>();
    // The same description with another digest, as a corrupted store would hold it.
    const forged = { ...meta, digest: `SHA-256=${Buffer.alloc(32, 7).toString("base64url")}=` };
    await jetstream(nc).publish(subject, JSON.stringify(forged));
    await expect(readObject(store, jsm, bucket, "checked")).rejects.toThrow(/does not match its description/);
  });
});
