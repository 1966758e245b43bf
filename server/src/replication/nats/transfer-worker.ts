// The worker side of TransferThread: its own NATS connection and object store handle, and one
// part put or fetched per request (parts.ts), several at once as the server's thread asks.
import module from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import { CONNECTION, type FetchPart, type PutPart, fetchPart, putPart } from "./parts.ts";

// This thread's modules, to the compile cache main.ts turned on (none when it is off).
module.flushCompileCache?.();

export interface TransferData {
  servers: string[];
  name: string;
  bucket: string;
}

export type TransferRequest = { id: number; op: "put"; part: PutPart } | { id: number; op: "fetch"; part: FetchPart };

export type TransferReply = { id: number; ok: true } | { id: number; ok: false; message: string };

const { servers, name, bucket } = workerData as TransferData;
setSha256Backend("native");

let opened: Promise<{ files: ObjectStore; jsm: JetStreamManager }> | undefined;
/** Connected on the first request, and again after a failure to connect. */
function store(): Promise<{ files: ObjectStore; jsm: JetStreamManager }> {
  opened ??= (async () => {
    const nc = await connect({ servers, name, ...CONNECTION });
    const files = await new Objm(jetstream(nc, { timeout: 10_000, checkAPI: false })).open(bucket, false);
    return { files, jsm: await jetstreamManager(nc, { timeout: 10_000, checkAPI: false }) };
  })();
  opened.catch(() => {
    opened = undefined;
  });
  return opened;
}

parentPort!.on("message", async (request: TransferRequest) => {
  try {
    const { files, jsm } = await store();
    await (request.op === "put" ? putPart(files, request.part) : fetchPart(files, jsm, bucket, request.part));
    parentPort!.postMessage({ id: request.id, ok: true } satisfies TransferReply);
  } catch (error) {
    parentPort!.postMessage({ id: request.id, ok: false, message: (error as Error).message } satisfies TransferReply);
  }
});
