// `npm start` as a newcomer meets it: a fresh data dir, the embedded defaults, the demo index,
// the README's example query, the docs; then a graceful stop and a clear refusal of bad settings.
import { execFile } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import postgres from "postgres";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { siftProcess, type SiftProcess } from "../support/process.ts";

let proc: SiftProcess;
let startMs: number;

beforeAll(async () => {
  // PGlite and the embedded engine, as `npm start` runs with nothing configured.
  proc = await siftProcess({ SIFT_DEMO: "true", SIFT_LOG_LEVEL: "info", DATABASE_URL: "" });
  const started = performance.now();
  await proc.start();
  startMs = performance.now() - started;
});
afterAll(() => proc?.destroy());

test("serves /healthz within 30 s of a fresh start and prints where things are", async () => {
  expect(startMs).toBeLessThan(30_000);
  for (const line of ["Sift is running at", "API reference", "/docs", "Demo page", "Try a search"])
    expect(proc.output()).toContain(line);
  const log = proc
    .output()
    .split("\n")
    .find((l) => l.includes('"msg":"demo index loaded"'));
  expect(JSON.parse(log!)).toMatchObject({ level: "info", records: 135_233 });
});

test("the README's example query works right after start", async () => {
  const reply = await fetch(`${proc.url}/v1/search?query=new%20yo&indexName=cities&serviceName=demo&weighted=true`);
  expect(reply.status).toBe(200);
  expect(reply.headers.get("x-sift-region")).toBe("frankfurt");
  const body = await reply.json();
  expect(body.suggestions[0]).toMatchObject({ title: "New York City", data: { country: "US" } });
});

test("the API reference, the OpenAPI document and the demo page are served", async () => {
  const docs = await (await fetch(`${proc.url}/docs`)).text();
  expect(docs).toContain("Search an index");
  expect(docs).toContain("/v1/uploads/start");
  const yaml = await fetch(`${proc.url}/openapi.yaml`);
  expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0/);
  const demo = await (await fetch(`${proc.url}/demo`)).text();
  expect(demo).toContain('<sift-autocomplete id="demo-search"');
});

test("SIGTERM lets an in-flight request finish, then exits cleanly; the next start reuses the data", async () => {
  const http = await import("../support/http.ts");
  const { createKey, signUp } = await import("../support/world.ts");
  const client = new http.Http(proc.url);
  const key = await createKey(await signUp(client, "term@example.com"), "adm");
  await client.post("/v1/services", { name: `term-${process.pid}` }, { key });
  await client.post("/v1/indexes", { name: "term", serviceName: `term-${process.pid}` }, { key });
  const { uploadUrl } = (await client.post("/v1/uploads/start", { indexName: "term" }, { key })).body;

  const halves = ['{"id":"1","title":"First half"}\n', '{"id":"2","title":"Second half"}\n'];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(halves[0]));
      await gate;
      controller.enqueue(new TextEncoder().encode(halves[1]));
      controller.close();
    },
  });
  const upload = fetch(uploadUrl, { method: "PUT", body, duplex: "half" } as RequestInit);
  await new Promise((r) => setTimeout(r, 300));
  const exited = proc.exited();
  process.kill(proc.pid()!, "SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  release();
  expect((await upload).status).toBe(200);
  expect(await exited).toBe(0);

  const restarted = performance.now();
  await proc.start();
  expect(performance.now() - restarted).toBeLessThan(15_000);
  const status = await client.get("/v1/uploads/term/1", { key });
  expect(status.body).toMatchObject({ state: "uploaded", bytesReceived: halves.join("").length });
});

test("a bad setting stops the start with a message naming it", async () => {
  const main = resolve(import.meta.dirname, "../../server/src/main.ts");
  const failed = await promisify(execFile)(process.execPath, [main], {
    env: { ...process.env, PORT: "http", SIFT_REGION: "atlantis" },
  }).catch((e: { code: number; stderr: string }) => e);
  expect(failed).toMatchObject({ code: 2 });
  expect((failed as { stderr: string }).stderr).toMatch(/PORT must be an integer from 0 to 65535 \(got "http"\)/);
  expect((failed as { stderr: string }).stderr).toMatch(/SIFT_REGION must be one of fremont, .*atlantis/);
});

test("a taken port, or a database that does not exist, stops the start with a message naming it (D-368)", async () => {
  const main = resolve(import.meta.dirname, "../../server/src/main.ts");
  const dataDir = mkdtempSync(join(tmpdir(), "sift-start-"));
  const holder = createServer();
  await new Promise<void>((listening) => holder.listen(0, "127.0.0.1", listening));
  const port = (holder.address() as AddressInfo).port;
  try {
    const start = (env: Record<string, string>) =>
      promisify(execFile)(process.execPath, [main], {
        env: { ...process.env, SIFT_DATA_DIR: dataDir, SIFT_DEMO: "false", DATABASE_URL: "", ...env },
      }).catch((e: { code: number; stderr: string }) => e);
    const taken = await start({ PORT: String(port) });
    expect(taken).toMatchObject({ code: 1 });
    const stderr = (taken as { stderr: string }).stderr;
    expect(stderr).toContain(`sift: cannot start: 127.0.0.1:${port} is in use by another process`);
    expect(stderr).not.toContain("Unhandled 'error' event");
    if (process.env.DATABASE_URL) {
      const missing = new URL(process.env.DATABASE_URL);
      missing.pathname = "/sift_no_such_database";
      const failed = await start({ PORT: "0", DATABASE_URL: missing.toString() });
      expect(failed).toMatchObject({ code: 1 });
      expect((failed as { stderr: string }).stderr).toContain(
        'cannot prepare the PostgreSQL store at DATABASE_URL: database "sift_no_such_database" does not exist',
      );
    }
  } finally {
    holder.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("a second process on the same data directory refuses to start, naming it and the holder", async () => {
  const main = resolve(import.meta.dirname, "../../server/src/main.ts");
  const second = await promisify(execFile)(process.execPath, [main], {
    env: { ...process.env, PORT: "0", SIFT_DATA_DIR: proc.dataDir, SIFT_DEMO: "false", DATABASE_URL: "" },
  }).catch((e: { code: number; stderr: string }) => e);
  expect(second).toMatchObject({ code: 1 });
  const stderr = (second as { stderr: string }).stderr;
  expect(stderr).toContain(`the data directory ${proc.dataDir} is in use by process ${proc.pid()}`);
  // The first one is unharmed.
  expect((await fetch(`${proc.url}/healthz`)).status).toBe(200);

  // A lock left by a process killed with -9 is taken over at the next start.
  await proc.kill("SIGKILL");
  await proc.start();
  expect((await fetch(`${proc.url}/healthz`)).status).toBe(200);
});

test("a node killed right after it started has left its compiled modules for the next start (D-304)", async () => {
  const cache = mkdtempSync(join(tmpdir(), "sift-compile-cache-"));
  const node = await siftProcess({ NODE_COMPILE_CACHE: cache, DATABASE_URL: "" });
  try {
    await node.start();
    // Written once it listens: Node alone would write it at a clean exit, which a kill never reaches.
    await expect.poll(() => readdirSync(cache, { recursive: true }).length, { timeout: 10_000 }).toBeGreaterThan(100);
    await node.kill("SIGKILL");
    expect(readdirSync(cache, { recursive: true }).length).toBeGreaterThan(100);
  } finally {
    await node.destroy();
    rmSync(cache, { recursive: true, force: true });
  }
});

test.skipIf(!process.env.DATABASE_URL)(
  "a first start stopped while the demo loads: the next start loads it (D-365)",
  async () => {
    // On PostgreSQL, to see from outside the moment the demo's index exists and its cities load.
    const database = await createTempDatabase(process.env.DATABASE_URL!);
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const node = await siftProcess({ SIFT_DEMO: "true" }, { sharedDatabase: database.url });
    try {
      const first = node.start().catch((error: Error) => error);
      await expect
        .poll(async () => (await sql`select 1 from indexes where tenant_id = 'ten_demo'`.catch(() => [])).length, {
          timeout: 60_000,
          interval: 50,
        })
        .toBe(1);
      // Ctrl-C during a first start ends it at once: the load is left half done.
      await node.kill("SIGKILL");
      await expect(fetch(`${node.url}/healthz`)).rejects.toThrow();
      await node.start();
      await first;
      const reply = await fetch(`${node.url}/v1/search?query=new%20yo&indexName=cities&serviceName=demo`);
      expect((await reply.json()).suggestions[0]).toMatchObject({ title: "New York City" });
    } finally {
      await node.destroy();
      await sql.end();
      await database.drop();
    }
  },
);
