// A region's copies of the object stores (D-326). With SIFT_NATS_MIRROR, the region's cluster
// holds, beside its mirror of the log, a copy of each object store's chunks and a copy of the
// objects' descriptions, so that a node there restores a snapshot, or reads an entry too large
// for one message, while the log's home cluster is out of reach. Files the copy already holds
// (a snapshot's, a major's fetched late) do not cross the gateway again for each node.
//
// Why not a mirror of the object store's stream as it is: the store writes each description
// with a rollup header, and NATS 2.9 mirrors and sources lost such messages when several came
// close together (17 and 20 of 40 descriptions arrived; the chunks all did). So the chunks are
// copied alone, and whoever puts an object publishes its description again, without a rollup,
// to a stream of its own (`<log stream>_objects`, one message per object). The copies source
// those streams rather than mirror them: a mirror made in a cluster reset itself and lost
// messages whenever its origin had gaps ("last sequence mismatch"), and leaving the descriptions
// out leaves a gap for each. The object store's client cannot read either copy (its subjects
// carry the origin bucket's name, and a copy numbers what it takes anew): copies are read here by
// subject, with message gets.
//
// Copies take appends only. A deletion through NatsLog removes the description from the stream
// and from every copy of it, and the chunks from every copy; each node sweeps its region's copies
// now and then for what a copy out of reach missed, and for chunks no description names (an
// overwritten object's, a node position's). The sweep also finds a message a copy skipped: the
// node puts the whole objects whose chunks it skipped into the region's patches, a stream the
// reads look in for them, and makes a descriptions copy that skipped one again; it looks at the
// other regions' copies for that too (D-339, D-348).
import { createHash } from "node:crypto";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
  type StoredMsg,
  type StreamInfo,
} from "@nats-io/jetstream";
import { Base64UrlPaddedCodec, type ObjectInfo } from "@nats-io/obj";
import { checkDigest } from "./small-objects.ts";

/** The stream of objects' descriptions beside the log stream `stream`. */
export const descriptionsStream = (stream: string) => `${stream}_objects`;
const DESCRIPTIONS_ROOT = "sift.objects";
const descriptionSubject = (bucket: string, name: string) =>
  `${DESCRIPTIONS_ROOT}.${bucket}.${Base64UrlPaddedCodec.encode(name)}`;

/**
 * Every stream a region's copy takes from begins with an anchor: a message published before any
 * other, never deleted, which no read and no sweep looks at. A NATS server before 2.12.8, when
 * it sets up a source from a stream whose first message is not its sequence 1, counts that first
 * message as taken; a source restarted before the message lands in the copy (its first messages
 * lost on their way, or 3 s without one) starts one past it, and the copy never holds it: the
 * skips D-329 finds afterwards. An origin that begins with its anchor begins at sequence 1 for
 * ever, where that count is right, and a source that loses the anchor itself loses nothing read.
 */
const ANCHOR = "~anchor";
export const isAnchor = (subject: string) => subject.endsWith(`.${ANCHOR}`);

/** The anchors of the descriptions stream beside log stream `stream` and of its buckets (`files` first). */
export const anchorsOf = (stream: string, buckets: [files: string, docs: string]) => [
  { stream: descriptionsStream(stream), subject: `${DESCRIPTIONS_ROOT}.${buckets[0]}.${ANCHOR}` },
  ...buckets.map((bucket) => ({ stream: bucketStream(bucket), subject: `${chunkPrefix(bucket)}${ANCHOR}` })),
];

/**
 * Publishes the anchor into an empty stream `stream` (a stream made before anchors is left as it
 * is). Expected to be the subject's first, not the stream's: a copy keeps the header it takes,
 * and checks it against itself, where the stream's sequence would be wrong for ever after.
 */
export async function anchor(js: JetStreamClient, jsm: JetStreamManager, stream: string, subject: string) {
  if ((await jsm.streams.info(stream)).state.last_seq > 0) return;
  await js.publish(subject, new Uint8Array(0), { expect: { lastSubjectSequence: 0 } }).catch((error: unknown) => {
    // Another node's anchor is in.
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) return;
    throw error;
  });
}

/** The stream holding object store `bucket` (the object store's own naming). */
export const bucketStream = (bucket: string) => `OBJ_${bucket}`;

/** The descriptions stream beside the log stream `stream`, whose object stores are `buckets`. */
export function descriptionsConfig(stream: string, buckets: string[]): Partial<StreamConfig> & { name: string } {
  return {
    name: descriptionsStream(stream),
    subjects: buckets.map((bucket) => `${DESCRIPTIONS_ROOT}.${bucket}.>`),
    max_msgs_per_subject: 1,
    description: "Sift object descriptions, without rollups, for the regions' copies of the object stores",
  };
}

/** The region's patches beside its mirror of the log `mirror` (D-348; see Copy). */
const patchesOf = (mirror: string) => ({ patches: `${mirror}_patches`, patchRoot: `sift.patches.${mirror}.` });

/** One region's copies, beside its mirror of the log `mirror` (e.g. `SIFT_london_files`, `SIFT_london_objects`). */
/** A region's copies of the two buckets. */
export type RegionCopies = { files: Copy; docs: Copy };

export function regionCopies(mirror: string, stream: string, buckets: { files: string; docs: string }): RegionCopies {
  const copy = (bucket: string, kind: string): Copy => ({
    bucket,
    descriptions: `${mirror}_objects`,
    chunks: `${mirror}_${kind}`,
    origin: descriptionsStream(stream),
    ...patchesOf(mirror),
  });
  return { files: copy(buckets.files, "files"), docs: copy(buckets.docs, "docs") };
}

/**
 * The streams of a region's copies, descriptions last. Sourced, not mirrored: a mirror made in a
 * cluster (NATS 2.9) reset itself and lost messages whenever its origin had gaps ("last sequence
 * mismatch"), and a filter leaves a gap for every description. A source numbers what it takes
 * anew; copies are read by subject.
 */
export function copyConfigs(copies: RegionCopies): (Partial<StreamConfig> & { name: string })[] {
  const chunks = [copies.files, copies.docs].map((copy) => ({
    name: copy.chunks,
    sources: [{ name: bucketStream(copy.bucket), filter_subject: `${chunkPrefix(copy.bucket)}>` }],
  }));
  const { descriptions, origin, patches, patchRoot } = copies.files;
  const copied = [...chunks, { name: descriptions, sources: [{ name: origin }], max_msgs_per_subject: 1 }].map(
    (config) => ({
      ...config,
      subjects: [] as string[],
      description: `Sift, a copy of ${config.sources[0]!.name} for the nodes of one region`,
    }),
  );
  return [
    ...copied,
    { name: patches, subjects: [`${patchRoot}>`], description: "Sift, whole objects the region's copies skipped" },
  ];
}

const chunkPrefix = (bucket: string) => `$O.${bucket}.C.`;

/** What a copy needs of an object's description to read it. */
interface Description {
  name: string;
  nuid: string;
  size: number;
  chunks: number;
  digest: string;
}

/** Publishes what `info` says of an object just put, for the regions' copies. */
export async function describeObject(js: JetStreamClient, info: ObjectInfo): Promise<void> {
  const { name, nuid, size, chunks, digest } = info;
  await js.publish(
    descriptionSubject(info.bucket, name),
    JSON.stringify({ name, nuid, size, chunks, digest } satisfies Description),
  );
}

/** Removes the description of `name` from `streams` (the descriptions stream and its copies). */
export async function forgetObject(jsm: JetStreamManager, streams: string[], bucket: string, name: string) {
  for (const stream of streams) await jsm.streams.purge(stream, { filter: descriptionSubject(bucket, name) });
}

/** Removes the chunks of the object that had `nuid` from `copies` (streams of copied chunks). */
export async function purgeChunks(jsm: JetStreamManager, copies: string[], bucket: string, nuid: string) {
  for (const stream of copies) await jsm.streams.purge(stream, { filter: `${chunkPrefix(bucket)}${nuid}` });
}

/**
 * Removes the object that had `nuid` from the patches of the regions whose chunk copies are
 * `copies` (a deletion or an erasure, like purgeChunks); a region without patches has none.
 */
export async function purgePatches(jsm: JetStreamManager, copies: string[], bucket: string, nuid: string) {
  // A copy's name is its mirror's and its kind (regionCopies).
  const mirrors = new Set(copies.map((stream) => stream.replace(/_(files|docs)$/, "")));
  for (const { patches, patchRoot } of [...mirrors].map(patchesOf)) {
    await jsm.streams.purge(patches, { filter: `${patchRoot}${bucket}.${nuid}` }).catch((error: unknown) => {
      if (!isStreamNotFound(error)) throw error;
    });
  }
}

/** A message get that found no message (none at or after that sequence, or on that subject). */
export const noMessage = (error: unknown) =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.NoMessageFound;

/**
 * The first message of `stream` at or after `seq` on `subject` (the server's `next_by_subj`, NATS
 * 2.9), or null when there is none yet.
 */
export function nextMessage(
  jsm: JetStreamManager,
  stream: string,
  seq: number,
  subject: string,
): Promise<StoredMsg | null> {
  const request = { seq, next_by_subj: subject } as unknown as { seq: number };
  return jsm.streams.getMessage(stream, request).catch((error: Error) => {
    if (noMessage(error)) return null;
    throw error;
  });
}

/** A region's copy of one bucket: its descriptions stream and its chunks stream. */
export interface Copy {
  descriptions: string;
  chunks: string;
  bucket: string;
  /** The descriptions stream the copy's descriptions come from (at the log's home). */
  origin: string;
  /**
   * The region's patches (D-348): a plain stream, shared by its copies, holding the chunks of
   * each object a copy skipped, all of them, under `<patchRoot><bucket>.<nuid>`.
   */
  patches: string;
  patchRoot: string;
}

const patchSubject = (copy: Copy, nuid: string) => `${copy.patchRoot}${copy.bucket}.${nuid}`;

/**
 * The chunks of a described object, in order, from `stream` (`subject` holds them); the last step
 * checks them against the description. Throws when the stream lacks one (a copy still behind,
 * swept, or that skipped it; no patch).
 */
async function* chunks(jsm: JetStreamManager, stream: string, subject: string, d: Description) {
  const hash = createHash("sha256");
  let size = 0;
  let seq = 0;
  for (let n = 0; n < d.chunks; n++) {
    // The next chunk at or after `seq` (`next_by_subj`, NATS 2.9); one chunk by its subject alone.
    const request =
      d.chunks === 1 ? { last_by_subj: subject } : ({ seq, next_by_subj: subject } as unknown as { seq: number });
    const message = await jsm.streams.getMessage(stream, request).catch((error: Error) => {
      if (noMessage(error)) return null;
      throw error;
    });
    if (message === null) throw new Error(`${stream} lacks chunk ${n + 1} of ${d.chunks} of ${d.name}`);
    hash.update(message.data);
    size += message.data.length;
    seq = message.seq + 1;
    yield message.data;
  }
  checkDigest(`${d.name} in ${stream}`, size, hash.digest(), d);
}

/**
 * `name`'s bytes as the copy holds them, as chunks to read in order (the last read fails if they
 * do not match their description); null when the copy has no description of it. `patched`: from
 * the region's patches instead, for a read that failed on the copy (D-348).
 */
export async function openCopy(
  jsm: JetStreamManager,
  copy: Copy,
  name: string,
  { patched = false }: { patched?: boolean } = {},
): Promise<AsyncGenerator<Uint8Array> | null> {
  const message = await jsm.streams.getMessage(copy.descriptions, {
    last_by_subj: descriptionSubject(copy.bucket, name),
  });
  if (message === null) return null;
  const d = message.json<Description>();
  return patched
    ? chunks(jsm, copy.patches, patchSubject(copy, d.nuid), d)
    : chunks(jsm, copy.chunks, `${chunkPrefix(copy.bucket)}${d.nuid}`, d);
}

/**
 * `name`'s bytes from the copy, whole, or from the region's patches when the copy skipped some of
 * them and the sweep patched it (D-348); null when the copy has no description of it. Throws the
 * copy's failure when the patches do not hold it either.
 */
export async function readCopy(jsm: JetStreamManager, copy: Copy, name: string): Promise<Uint8Array | null> {
  const whole = async (patched: boolean) => {
    const parts = await openCopy(jsm, copy, name, { patched });
    if (parts === null) return null;
    const read: Uint8Array[] = [];
    for await (const part of parts) read.push(part);
    return read.length === 1 ? read[0]! : Buffer.concat(read);
  };
  try {
    return await whole(false);
  } catch (error) {
    return whole(true).catch(() => Promise.reject(error));
  }
}

/** A chunk no description names is kept this long: its object's description may be on its way. */
const ORPHAN_AFTER_MS = 2 * 60_000;

/** Something a copy skipped: `stream` lacks `what`, though it took a later message from its origin. */
export interface Skip {
  stream: string;
  what: string;
}

/** The header a source writes on each message it copies: "<origin stream> <origin sequence> ...". */
const SOURCE_HEADER = "Nats-Stream-Source";

const lastOf = (jsm: JetStreamManager, stream: string, subject: string) =>
  jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((error: Error) => {
    if (noMessage(error)) return null;
    throw error;
  });

/** The origin's sequence of the newest message `stream` took from its source; 0 before the first. */
async function takenUpTo(jsm: JetStreamManager, stream: string): Promise<number> {
  const last = await lastOf(jsm, stream, ">");
  const seq = Number(last?.header?.get(SOURCE_HEADER).split(" ")[1]);
  return Number.isSafeInteger(seq) ? seq : 0;
}

/**
 * How far each stream of a region's copies has taken its origin, and the origin's newest message
 * it should take (D-358): a stream whose `taken` stays below `originLast` from one sweep to the
 * next has stopped.
 */
export async function copyProgress(
  jsm: JetStreamManager,
  copies: RegionCopies,
): Promise<{ stream: string; taken: number; originLast: number }[]> {
  const { descriptions, origin } = copies.files;
  const streams = [
    ...[copies.files, copies.docs].map((copy) => ({
      stream: copy.chunks,
      origin: bucketStream(copy.bucket),
      subject: `${chunkPrefix(copy.bucket)}>`,
    })),
    { stream: descriptions, origin, subject: ">" },
  ];
  return Promise.all(
    streams.map(async ({ stream, origin, subject }) => {
      const [taken, last] = await Promise.all([takenUpTo(jsm, stream), lastOf(jsm, origin, subject)]);
      return { stream, taken, originLast: last?.seq ?? 0 };
    }),
  );
}

/**
 * A source takes its origin's messages in order, so a message the origin still holds, older than
 * the newest the copy took, should be in the copy. Seen missing (NATS 2.9: the oldest chunk of a
 * bucket whose early messages were being purged as the copy was made; messages in flight when a
 * leader changes, D-341; docs/replication.md), and nothing brings it back into the copy. A skipped
 * description: the copy is made again (one small message per object). Skipped chunks: their
 * objects, unless the patches hold them already (`unpatched`).
 */
async function skipsOf(
  jsm: JetStreamManager,
  copy: Copy,
  seen: { descriptionsUpTo: number; chunksUpTo: number; held: Set<string>; kept: string[] },
  named: Map<string, Description>,
  counts: { copy: Record<string, number>; patches: Record<string, number> },
): Promise<{ skipped: Skip[]; unpatched: Description[] }> {
  const skipped: Skip[] = [];
  for (const subject of seen.kept) {
    if (seen.held.has(subject)) continue;
    const message = await lastOf(jsm, copy.origin, subject);
    if (message === null || message.seq > seen.descriptionsUpTo) continue;
    skipped.push({ stream: copy.descriptions, what: `the description of ${message.json<Description>().name}` });
    break;
  }
  const unpatched: Description[] = [];
  for (const [nuid, d] of named) {
    const subject = `${chunkPrefix(copy.bucket)}${nuid}`;
    if ((counts.copy[subject] ?? 0) >= d.chunks || (counts.patches[patchSubject(copy, nuid)] ?? 0) >= d.chunks)
      continue;
    const message = await lastOf(jsm, bucketStream(copy.bucket), subject);
    if (message === null || message.seq > seen.chunksUpTo) continue;
    unpatched.push(d);
  }
  return { skipped, unpatched };
}

/**
 * Puts every chunk of the object `d` describes, from its bucket, into the copy's patches, in
 * order (a partial patch of it goes first). False when the bucket no longer holds them all as
 * described (the object overwritten or deleted meanwhile): nothing is left in the patches then.
 */
async function patchObject(jsm: JetStreamManager, copy: Copy, d: Description): Promise<boolean> {
  const from = bucketStream(copy.bucket);
  const subject = `${chunkPrefix(copy.bucket)}${d.nuid}`;
  const patched = patchSubject(copy, d.nuid);
  const js = jsm.jetstream();
  await jsm.streams.purge(copy.patches, { filter: patched });
  const hash = createHash("sha256");
  let size = 0;
  let seq = 0;
  for (let n = 0; n < d.chunks; n++) {
    const message = await nextMessage(jsm, from, seq, subject);
    if (message === null) break;
    hash.update(message.data);
    size += message.data.length;
    seq = message.seq + 1;
    await js.publish(patched, message.data);
  }
  try {
    checkDigest(`${d.name} in ${from}`, size, hash.digest(), d);
    return true;
  } catch {
    // Overwritten or deleted while it was read: its next description says what to read instead.
    await jsm.streams.purge(copy.patches, { filter: patched });
    return false;
  }
}

/**
 * Checks the copy and brings it in line with what its origins dropped. First, what the copy
 * skipped (see `skipsOf`): the objects whose chunks it skipped are put into the patches
 * (`patched`), and a skipped description is returned (`skipped`: the caller makes that stream
 * again, and nothing is swept). Without the region's patches stream (not made yet), skipped chunks
 * are returned too. Then, unless either copy is behind its origin: descriptions the stream at home
 * (`copy.origin`) no longer has, and chunks and patches no description left names, older than
 * `orphanAfterMs` (an overwritten object's, a deleted one's, an object's never described), and
 * patches the copy no longer needs. A copy out of reach when an object was deleted or purged keeps
 * it until this runs. `skipsOnly`: looks for skips, patches, and removes nothing (another
 * region's copy, D-339).
 */
export async function sweepCopy(
  jsm: JetStreamManager,
  copy: Copy,
  { orphanAfterMs = ORPHAN_AFTER_MS, skipsOnly = false }: { orphanAfterMs?: number; skipsOnly?: boolean } = {},
): Promise<{ descriptions: number; chunks: number; skipped: Skip[]; patched: string[] }> {
  const prefix = `${DESCRIPTIONS_ROOT}.${copy.bucket}.`;
  const counted = async (stream: string, filter: string) =>
    Object.fromEntries(
      Object.entries((await jsm.streams.info(stream, { subjects_filter: `${filter}>` })).state.subjects ?? {}).filter(
        ([subject]) => !isAnchor(subject),
      ),
    );
  // Behind before the listing below: what it lists may lack descriptions still on their way.
  const [described, copied] = await Promise.all([jsm.streams.info(copy.descriptions), jsm.streams.info(copy.chunks)]);
  const behind = (info: StreamInfo) => [info.mirror, ...(info.sources ?? [])].some((source) => (source?.lag ?? 0) > 0);
  const wasBehind = behind(described) || behind(copied);
  // How far each copy had come, before listing what it holds: what the origin held up to there is in what is listed.
  const [descriptionsUpTo, chunksUpTo] = await Promise.all([
    takenUpTo(jsm, copy.descriptions),
    takenUpTo(jsm, copy.chunks),
  ]);
  // The copy before its origin: whatever it holds, the origin held before; gone from the origin after, it was deleted.
  const held = Object.keys(await counted(copy.descriptions, prefix));
  const counts = await counted(copy.chunks, chunkPrefix(copy.bucket));
  const patchPrefix = `${copy.patchRoot}${copy.bucket}.`;
  const patches = await counted(copy.patches, patchPrefix).catch((error: unknown) => {
    if (isStreamNotFound(error)) return null;
    throw error;
  });
  const kept = Object.keys(await counted(copy.origin, prefix));
  const keptSet = new Set(kept);
  const named = new Map<string, Description>();
  for (const subject of held) {
    if (!keptSet.has(subject)) continue;
    const message = await lastOf(jsm, copy.descriptions, subject);
    const d = message?.json<Description>();
    if (d !== undefined) named.set(d.nuid, d);
  }
  const seen = { descriptionsUpTo, chunksUpTo, held: new Set(held), kept };
  const { skipped, unpatched } = await skipsOf(jsm, copy, seen, named, { copy: counts, patches: patches ?? {} });
  const patched: string[] = [];
  if (patches === null && unpatched.length > 0) {
    skipped.push({ stream: copy.chunks, what: `a chunk of ${unpatched[0]!.name}` });
  } else {
    for (const d of unpatched) if (await patchObject(jsm, copy, d)) patched.push(d.name);
  }
  if (skipped.length > 0 || wasBehind || skipsOnly) return { descriptions: 0, chunks: 0, skipped, patched };
  let descriptions = 0;
  for (const subject of held) {
    if (keptSet.has(subject)) continue;
    await jsm.streams.purge(copy.descriptions, { filter: subject });
    descriptions++;
  }
  let chunks = 0;
  const before = Date.now() - orphanAfterMs;
  const orphaned = async (stream: string, subject: string) => {
    const last = await lastOf(jsm, stream, subject);
    return last !== null && last.time.getTime() < before;
  };
  for (const subject of Object.keys(counts)) {
    if (named.has(subject.slice(chunkPrefix(copy.bucket).length))) continue;
    if (!(await orphaned(copy.chunks, subject))) continue;
    await jsm.streams.purge(copy.chunks, { filter: subject });
    chunks++;
  }
  for (const subject of Object.keys(patches ?? {})) {
    const d = named.get(subject.slice(patchPrefix.length));
    // Still needed: the copy lacks some of its object's chunks.
    if (d !== undefined && (counts[`${chunkPrefix(copy.bucket)}${d.nuid}`] ?? 0) < d.chunks) continue;
    if (d === undefined && !(await orphaned(copy.patches, subject))) continue;
    await jsm.streams.purge(copy.patches, { filter: subject });
    chunks++;
  }
  return { descriptions, chunks, skipped, patched };
}

/** A stream that does not exist (a region's patches before its first sweep made them). */
export const isStreamNotFound = (error: unknown) =>
  (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) ||
  (error as Error).message === "stream not found";
