// The worker side of TransferThread: its own NATS connection and object store handle, and one
// part put or fetched per request (parts.ts), several at once as the server's thread asks.
import module from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import type { NatsTls } from "../../config.ts";
import { type Copy, describeObject } from "./object-copies.ts";
import { CONNECTION, connectionOf, type FetchPart, type PutPart, fetchPart, putPart } from "./parts.ts";

// This thread's modules, to the compile cache main.ts turned on (none when it is off).
module.flushCompileCache?.();

export interface TransferData {
  servers: string[];
  credsFile?: string;
  tls?: NatsTls;
  name: string;
  bucket: string;
  /** The region's copy of the bucket, read first when fetching (object-copies.ts). */
  copy?: Copy;
}

export type TransferRequest =
  | { id: number; op: "put"; part: PutPart }
  | { id: number; op: "fetch"; part: FetchPart }
  /** Ends the thread from inside: see TransferThread.close for why not from outside. */
  | { id: number; op: "close" };

/**
 * `copyFailed`: a fetch read the bucket because the region's copy failed, and why (for the log).
 * `code`: a failure's system error code ("ENOENT": a file to put is gone).
 */
export type TransferReply =
  | { id: number; ok: true; copyFailed?: string }
  | { id: number; ok: false; message: string; code?: string };

const { servers, credsFile, tls, name, bucket, copy } = workerData as TransferData;
setSha256Backend("native");

interface Store {
  nc: NatsConnection;
  js: JetStreamClient;
  files: ObjectStore;
  jsm: JetStreamManager;
}

let opened: Promise<Store> | undefined;
/** Connected on the first request, and again after a failure to connect. */
function store(): Promise<Store> {
  opened ??= (async () => {
    const nc = await connect({ ...connectionOf({ servers, credsFile, tls }), name, ...CONNECTION });
    const js = jetstream(nc, { timeout: 10_000, checkAPI: false });
    const files = await new Objm(js).open(bucket, false);
    return { nc, js, files, jsm: await jetstreamManager(nc, { timeout: 10_000, checkAPI: false }) };
  })();
  opened.catch(() => {
    opened = undefined;
  });
  return opened;
}

/** One per transfer under way, to end its streams when the thread closes. */
const running = new Set<AbortController>();

parentPort!.on("message", async (request: TransferRequest) => {
  if (request.op === "close") return close();
  const transfer = new AbortController();
  running.add(transfer);
  try {
    const { files, jsm, js } = await store();
    const { signal } = transfer;
    let copyFailed: string | undefined;
    if (request.op === "put") {
      const info = await putPart(files, request.part, signal);
      // For the regions' copies; a part not described there is fetched from the bucket.
      // biome-ignore lint/plugin: best effort, as NatsLog's own descriptions.
      await describeObject(js, info).catch(() => undefined);
    } else copyFailed = await fetchPart(files, jsm, bucket, request.part, signal, copy);
    parentPort!.postMessage({
      id: request.id,
      ok: true,
      ...(copyFailed === undefined ? {} : { copyFailed }),
    } satisfies TransferReply);
  } catch (error) {
    const { message, code } = error as NodeJS.ErrnoException;
    parentPort!.postMessage({ id: request.id, ok: false, message, ...(code ? { code } : {}) } satisfies TransferReply);
  } finally {
    running.delete(transfer);
  }
});

/** Ends every transfer's streams and the connection; the thread then exits as its loop empties. */
async function close(): Promise<void> {
  for (const transfer of running) transfer.abort(new Error("the change log is closed"));
  const connected = opened;
  opened = undefined;
  // A connection that never opened has nothing to close.
  await (await connected?.catch(() => undefined))?.nc.close();
  parentPort!.close();
}
