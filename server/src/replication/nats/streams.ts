// The log's streams and the region's copies: made when missing, found when another node made them.
import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import type { Logger } from "../../log.ts";
import { copyConfigs, isStreamNotFound, regionCopies } from "./object-copies.ts";
import type { NatsLogOptions } from "./options.ts";
import { docsBucket, filesBucket } from "./parts.ts";

export const SUBJECT_ROOT = "sift.log";

/** A subject token per index key: keys are ids, but anything else is encoded to stay one token. */
export const subjectOf = (indexKey: string) =>
  `${SUBJECT_ROOT}.${/^[A-Za-z0-9_-]+$/.test(indexKey) ? indexKey : `b64-${Buffer.from(indexKey).toString("base64url")}`}`;

/**
 * A cluster that has just started, or has just lost a server, elects its JetStream leaders first:
 * each step of opening the log is tried again until it answers, for up to a minute from the first.
 * Creating the object stores timed out once while a test had killed a server, and the node exited.
 */
export function untilReady(options: NatsLogOptions): <T>(step: () => Promise<T>) => Promise<T> {
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
export async function tryEnsureStream(jsm: JetStreamManager, options: NatsLogOptions, cluster?: string): Promise<void> {
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
export const copiesFor = (options: NatsLogOptions) =>
  options.mirror === undefined
    ? undefined
    : regionCopies(options.mirror, options.stream, {
        files: filesBucket(options.stream),
        docs: docsBucket(options.stream),
      });

/** The region's copies, in the region's cluster like its mirror of the log (descriptions last). */
export async function ensureObjectCopies(
  jsm: JetStreamManager,
  options: NatsLogOptions,
  cluster?: string,
): Promise<void> {
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
export async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (isStreamNotFound(error)) return false;
    throw error;
  }
}

export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  if (await streamExists(jsm, config.name)) return;
  await jsm.streams.add(config).catch(async (addError: Error) => {
    // Another node made it meanwhile: that one will do.
    await jsm.streams.info(config.name).catch(() => {
      throw addError;
    });
  });
}

/** Asks the leader of `stream` to step down: a new leader starts a mirror's or source's copying afresh. */
export async function stepDown(nc: NatsConnection, log: Logger, stream: string): Promise<void> {
  const reply = await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, "", { timeout: 5_000 });
  const answer = reply.json<{ success?: boolean; error?: { description?: string } }>();
  if (!answer.success) log.warn("a stream's leader did not step down", { stream, error: answer.error?.description });
}
