// The worker side of TransferThread: its own NATS connection and object store handle, and one
// part put or fetched per request (parts.ts), several at once as the server's thread asks.
import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Objm, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import { type FetchPart, MissingObjectError, type PutPart, fetchPart, putPart } from "./parts.ts";

export interface TransferData {
  servers: string[];
  name: string;
  bucket: string;
}

export type TransferRequest =
  | { id: number; op: "put"; part: Omit<PutPart, "maxChunk"> }
  | { id: number; op: "fetch"; part: FetchPart };

export type TransferReply = { id: number; ok: true } | { id: number; ok: false; message: string; missing: boolean };

const { servers, name, bucket } = workerData as TransferData;
setSha256Backend("native");

let opened: Promise<{ files: ObjectStore; maxChunk: number }> | undefined;
/** Connected on the first request, and again after a failure to connect. */
function store(): Promise<{ files: ObjectStore; maxChunk: number }> {
  opened ??= (async () => {
    // As the server's own connection (nats-log.ts): a cluster member going away is routine.
    const nc = await connect({
      servers,
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 5_000,
      noAsyncTraces: true,
    });
    const files = await new Objm(jetstream(nc, { timeout: 10_000, checkAPI: false })).open(bucket, false);
    // Headroom for the headers of the message.
    return { files, maxChunk: Math.max(1024, nc.info?.max_payload ?? 1024 * 1024) - 4096 };
  })();
  opened.catch(() => {
    opened = undefined;
  });
  return opened;
}

parentPort!.on("message", async (request: TransferRequest) => {
  try {
    const { files, maxChunk } = await store();
    if (request.op === "put") await putPart(files, { ...request.part, maxChunk });
    else await fetchPart(files, request.part);
    parentPort!.postMessage({ id: request.id, ok: true } satisfies TransferReply);
  } catch (error) {
    const missing = error instanceof MissingObjectError;
    parentPort!.postMessage({
      id: request.id,
      ok: false,
      message: (error as Error).message,
      missing,
    } satisfies TransferReply);
  }
});
