// Listing and deleting the objects of an object store bucket without the object store's `list()`.
// That listing stops after as many descriptions as were pending when it began: when an object
// it has not reached yet is rewritten meanwhile (its description moves to the end) and another
// is created, the count is reached first and a live object is left out (reproduced: a node's
// position missing from 1 to 2 listings in 200 while positions were rewritten and documents
// created). Here the names come from the stream's own list of description subjects, taken
// before anything is read, and each object is read by a message get: every object that exists
// throughout is listed, and no consumer is made (a consumer costs the cluster a proposal, D-300).
import type { JetStreamManager } from "@nats-io/jetstream";
import { Base64UrlPaddedCodec, type ObjectStore } from "@nats-io/obj";

const metaSubjects = (bucket: string) => `$O.${bucket}.M.`;
const GETS_AT_ONCE = 32;

/** The names whose description subject `bucket`'s stream holds, deleted objects' included. */
async function describedNames(jsm: JetStreamManager, bucket: string, prefix: string): Promise<string[]> {
  const info = await jsm.streams.info(`OBJ_${bucket}`, { subjects_filter: `${metaSubjects(bucket)}>` });
  const subjects = Object.keys(info.state.subjects ?? {});
  const start = metaSubjects(bucket).length;
  return subjects
    .map((subject) => Base64UrlPaddedCodec.decode(subject.slice(start)) as string)
    .filter((name) => name.startsWith(prefix));
}

/**
 * The objects of `store` (the bucket `bucket`) whose names start with `prefix`, not deleted.
 * A deleted object's description found on the way is removed (see `deleteObject`).
 */
export async function listObjects(
  store: ObjectStore,
  jsm: JetStreamManager,
  bucket: string,
  prefix: string,
): Promise<{ name: string; mtime: string }[]> {
  const names = await describedNames(jsm, bucket, prefix);
  const found: { name: string; mtime: string }[] = [];
  // Some at a time: a node with thousands of indexes lists all their snapshot pointers at start.
  for (let at = 0; at < names.length; at += GETS_AT_ONCE) {
    const some = names.slice(at, at + GETS_AT_ONCE);
    const infos = await Promise.all(some.map((name) => store.info(name)));
    const dropped: Promise<void>[] = [];
    for (const [i, info] of infos.entries()) {
      if (info === null) continue;
      if (info.deleted) dropped.push(dropDescription(jsm, bucket, some[i]!));
      else found.push({ name: info.name, mtime: info.mtime });
    }
    // A bucket written before deletions removed their descriptions may hold thousands.
    await Promise.all(dropped);
  }
  return found;
}

/**
 * Deletes `name` from `store` and then its description. The object store keeps a deleted
 * object's description for good, so a bucket's subjects, and any listing, would grow with every
 * object ever deleted (a snapshot's documents and files are deleted as newer ones come).
 */
export async function deleteObject(store: ObjectStore, jsm: JetStreamManager, bucket: string, name: string) {
  await store.delete(name);
  await dropDescription(jsm, bucket, name);
}

/** Removes `name`'s description if it says deleted; one written after it (the name put again) stays. */
async function dropDescription(jsm: JetStreamManager, bucket: string, name: string): Promise<void> {
  const subject = `${metaSubjects(bucket)}${Base64UrlPaddedCodec.encode(name)}`;
  const stream = `OBJ_${bucket}`;
  const last = await jsm.streams.getMessage(stream, { last_by_subj: subject });
  if (last === null || (last.json() as { deleted?: boolean }).deleted !== true) return;
  // Up to and including that description only: a put of the same name since has a later position.
  await jsm.streams.purge(stream, { filter: subject, seq: last.seq + 1 });
}
