// Listing and deleting the objects of an object store bucket without the object store's `list()`.
// That listing stops after as many descriptions as were pending when it began: when an object
// it has not reached yet is rewritten meanwhile (its description moves to the end) and another
// is created, the count is reached first and a live object is left out (reproduced: a node's
// position missing from 1 to 2 listings in 200 while positions were rewritten and documents
// created). Here the names come from the stream's own list of description subjects, taken
// before anything is read, and each description is read by a message get: every object that
// exists throughout is listed, and no consumer is made (a consumer costs the cluster a proposal,
// D-300).
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { Base64UrlPaddedCodec, type ObjectStore } from "@nats-io/obj";

const GETS_AT_ONCE = 32;

const streamOf = (bucket: string) => `OBJ_${bucket}`;
const metaPrefix = (bucket: string) => `$O.${bucket}.M.`;
const metaSubject = (bucket: string, name: string) => `${metaPrefix(bucket)}${Base64UrlPaddedCodec.encode(name)}`;

/** What a listing needs of an object's description. */
interface Description {
  name: string;
  nuid: string;
  mtime: string;
  deleted?: boolean;
}

/** The names whose description subject `bucket`'s stream holds under one of `prefixes`, deleted objects' included. */
async function describedNames(jsm: JetStreamManager, bucket: string, prefixes: string[]): Promise<string[]> {
  const info = await jsm.streams.info(streamOf(bucket), { subjects_filter: `${metaPrefix(bucket)}>` });
  const start = metaPrefix(bucket).length;
  return Object.keys(info.state.subjects ?? {})
    .map((subject) => Base64UrlPaddedCodec.decode(subject.slice(start)) as string)
    .filter((name) => prefixes.some((prefix) => name.startsWith(prefix)));
}

/** `name`'s newest description and where it is in the stream; null when it has none. */
async function readDescription(jsm: JetStreamManager, bucket: string, name: string) {
  const message: StoredMsg | null = await jsm.streams.getMessage(streamOf(bucket), {
    last_by_subj: metaSubject(bucket, name),
  });
  return message === null ? null : { seq: message.seq, description: message.json<Description>() };
}

/**
 * The objects of the bucket `bucket` whose names start with one of `prefixes`, not deleted. A
 * deleted object's description found on the way is removed (see `deleteObject`).
 */
export async function listObjects(
  jsm: JetStreamManager,
  bucket: string,
  prefixes: string[],
): Promise<{ name: string; mtime: string }[]> {
  const names = await describedNames(jsm, bucket, prefixes);
  const found: { name: string; mtime: string }[] = [];
  // Some at a time: a node with thousands of indexes lists all their snapshot pointers at start.
  for (let at = 0; at < names.length; at += GETS_AT_ONCE) {
    const read = await Promise.all(
      names.slice(at, at + GETS_AT_ONCE).map((name) => readDescription(jsm, bucket, name)),
    );
    const dropped: Promise<void>[] = [];
    for (const one of read) {
      if (one === null) continue;
      const { name, mtime, deleted } = one.description;
      // A bucket written before deletions removed their descriptions may hold thousands.
      if (deleted === true) dropped.push(purgeThrough(jsm, bucket, name, one.seq));
      else found.push({ name, mtime });
    }
    await Promise.all(dropped);
  }
  return found;
}

/**
 * Deletes `name` from `store` (the bucket `bucket`) and then its description. The object store
 * keeps a deleted object's description for good, so a bucket's subjects, and any listing, would
 * grow with every object ever deleted (a snapshot's documents and files are deleted as newer ones
 * come). Resolves with the id its chunks had (to remove them from copies), null when there was none.
 */
export async function deleteObject(
  store: ObjectStore,
  jsm: JetStreamManager,
  bucket: string,
  name: string,
): Promise<string | null> {
  await store.delete(name);
  const now = await readDescription(jsm, bucket, name);
  if (now?.description.deleted !== true) return null;
  await purgeThrough(jsm, bucket, name, now.seq);
  return now.description.nuid;
}

/** Removes `name`'s descriptions up to position `seq`: one written after it (the name put again) stays. */
async function purgeThrough(jsm: JetStreamManager, bucket: string, name: string, seq: number): Promise<void> {
  await jsm.streams.purge(streamOf(bucket), { filter: metaSubject(bucket, name), seq: seq + 1 });
}
