import { Readable } from "node:stream";
import type { ReadableStream as NodeWebStream } from "node:stream/web";
import type { Config } from "../config.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { UploadService } from "../services/uploads.ts";
import { baseUrlOf } from "./health.ts";

export function uploadHandlers(uploads: UploadService, config: Config): Handlers {
  return {
    Uploads_start: async (c, { body }) => {
      const started = await uploads.start(c.get("principal"), body.indexName, baseUrlOf(c, config));
      return c.json(started satisfies ResponseBody<"Uploads_start", 200>);
    },
    Uploads_putBlob: async (c, { path, query }) => {
      const length = c.req.header("content-length");
      const body = c.req.raw.body ? Readable.fromWeb(c.req.raw.body as NodeWebStream<Uint8Array>) : null;
      const receipt = await uploads.receive(
        path.uploadId,
        query.expires,
        query.signature,
        length ? Number(length) : undefined,
        body,
      );
      return c.json(receipt satisfies ResponseBody<"Uploads_putBlob", 200>);
    },
    Uploads_complete: async (c, { body }) => {
      await uploads.complete(c.get("principal"), body);
      return c.json({ resultCode: "SUCCESS", message: "OK" } satisfies ResponseBody<"Uploads_complete", 200>);
    },
    Uploads_status: async (c, { path }) => {
      const status = await uploads.status(c.get("principal"), path.indexName, path.indexVersion);
      return c.json(status satisfies ResponseBody<"Uploads_status", 200>);
    },
  };
}
