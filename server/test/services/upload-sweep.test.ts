// Files of uploads never completed used to stay on disk forever (issue 15, finding 12): they are
// deleted, and their versions failed, once their URL has expired and nothing can complete them.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { UNCOMPLETED_GRACE_MS, UPLOAD_URL_TTL_MS, UploadService } from "../../src/services/uploads.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_u", tenantId: "ten_u", type: "adm", userId: null };
const REQUEST_TIMEOUT_MS = 12 * 3_600_000;

describe.each(storeTargets())("abandoned uploads on $name", (target) => {
  let services: TestServices;
  let dir: string;
  let uploads: UploadService;
  let clock = 1_000_000;

  beforeAll(async () => {
    const now = () => clock;
    services = await openServices(target, { tenantId: "ten_u", now });
    dir = services.dir;
    uploads = new UploadService({
      db: services.store.db,
      catalog: services.catalog,
      versions: services.versions,
      blobs: createFsBlobStore(path.join(dir, "blobs")),
      secret: Buffer.alloc(32, 7),
      maxUploadBytes: 1 << 20,
      onQueued: () => {},
      now,
    });
    await services.catalog.createIndex("ten_u", { name: "sweep", serviceName: "ten_u-shop" });
  });
  afterAll(() => services?.close());

  const blobCount = () =>
    fs
      .readdirSync(path.join(dir, "blobs"), { recursive: true, encoding: "utf8" })
      .filter((f) => fs.statSync(path.join(dir, "blobs", f)).isFile()).length;
  const put = async (uploadUrl: string, text: string) => {
    const url = new URL(uploadUrl);
    const id = url.pathname.split("/").pop()!;
    await uploads.receive(
      id,
      Number(url.searchParams.get("expires")),
      url.searchParams.get("signature")!,
      undefined,
      (async function* () {
        yield new TextEncoder().encode(text);
      })(),
    );
  };

  test("a file never completed is deleted an hour after its URL expired; its version fails", async () => {
    const uploaded = await uploads.start(admin, "sweep", "http://sift.test");
    await put(uploaded.uploadUrl, '{"id":"1","title":"Never completed"}\n');
    const unused = await uploads.start(admin, "sweep", "http://sift.test");
    expect(blobCount()).toBe(1);

    clock += UPLOAD_URL_TTL_MS + UNCOMPLETED_GRACE_MS - 1;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(0);
    expect((await uploads.status(admin, "sweep", uploaded.indexVersion)).state).toBe("uploaded");

    clock += 2;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(1);
    expect(blobCount()).toBe(0);
    expect(await uploads.status(admin, "sweep", uploaded.indexVersion)).toMatchObject({
      state: "failed",
      failureReason: expect.stringMatching(/never completed/),
    });
    // A URL never used is kept while a PUT begun before its expiry could still be running.
    expect((await uploads.status(admin, "sweep", unused.indexVersion)).state).toBe("awaiting_upload");
    clock += REQUEST_TIMEOUT_MS;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(1);
    expect((await uploads.status(admin, "sweep", unused.indexVersion)).state).toBe("failed");
  });
});
