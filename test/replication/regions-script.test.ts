// `npm run regions` (server/scripts/three-regions.ts), the README's way to run three regions on one
// machine, run as a user runs it: three NATS servers and three Sift nodes that share one change
// log. A write in one region is read in the others; a region killed by hand starts again on Enter
// and catches up; a second run beside it refuses to start; Ctrl-C stops everything. Its ports are
// moved together (SIFT_REGIONS_PORT_OFFSET) to free ones, and it gets a database of its own.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { Http } from "../support/http.ts";
import { NATS_SERVER, natsAvailable } from "../support/nats.ts";
import { freeOffset } from "../support/ports.ts";
import { keyed } from "../support/regions.ts";
import { createKey, signUp } from "../support/world.ts";

const script = resolve(import.meta.dirname, "../../server/scripts/three-regions.ts");
const BASES = [7701, 7702, 7703, 4301, 4302, 4303, 6301, 6302, 6303, 8301, 8302, 8303];

/** The script, started with its ports moved by `offset`; `output()` is everything it printed. */
function startScript(offset: number, dir: string, databaseUrl: string) {
  let output = "";
  const child = spawn(process.execPath, [script], {
    env: {
      ...process.env,
      SIFT_REGIONS_PORT_OFFSET: String(offset),
      SIFT_REGIONS_DIR: dir,
      DATABASE_URL: databaseUrl,
      NATS_SERVER,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string>((done) => child.once("exit", (code, signal) => done(code ?? signal!)));
  return { child, output: () => output, exited };
}

/** The process started with SIFT_DATA_DIR `dataDir` (one Sift node of the script). */
function pidOf(dataDir: string): number | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    // biome-ignore lint/plugin: a process that ended meanwhile, or is not ours to read, is not the one.
    try {
      const environ = readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      if (environ.includes(`SIFT_DATA_DIR=${dataDir}`)) return Number(name);
    } catch {}
  }
  return undefined;
}

const listening = (port: number) =>
  fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
    () => true,
    () => false,
  );

describe.skipIf(!natsAvailable || !process.env.DATABASE_URL)("npm run regions", () => {
  let offset = 0;
  let dir = "";
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let run: ReturnType<typeof startScript> | undefined;
  const url = (base: number) => `http://127.0.0.1:${base + offset}`;

  beforeAll(async () => {
    offset = await freeOffset(BASES);
    dir = mkdtempSync(join(tmpdir(), "sift-regions-script-"));
    database = await createTempDatabase(process.env.DATABASE_URL!);
  });
  afterAll(async () => {
    if (run && run.child.exitCode === null) {
      run.child.kill("SIGINT");
      await run.exited;
    }
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs three regions that share writes; a killed one starts again on Enter; Ctrl-C stops all", async () => {
    run = startScript(offset, dir, database!.url);
    const r = run;
    await expect
      .poll(() => r.output(), { timeout: 120_000, interval: 250 })
      .toMatch(/Three regions share one change log/);
    expect(r.output()).toContain(`frankfurt  ${url(7701)}`);

    // Another run beside it refuses, and leaves this one alone.
    const secondDir = mkdtempSync(join(tmpdir(), "sift-regions-second-"));
    const second = startScript(offset, secondDir, database!.url);
    second.child.stdin!.end();
    expect(await second.exited).toBe(1);
    rmSync(secondDir, { recursive: true, force: true });
    expect(second.output()).toMatch(/are in use: is `npm run regions` running already\?/);

    const session = await signUp(new Http(url(7701)), `regions-script-${process.pid}@example.com`);
    const key = await createKey(session, "adm");
    const frankfurt = keyed(url(7701), key);
    expect((await frankfurt.post("/v1/services", { name: "shop" })).status).toBe(201);
    const made = await frankfurt.post("/v1/indexes", { name: "lamps", serviceName: "shop", visibility: "PUBLIC" });
    expect(made.status, made.text).toBe(201);
    let put = await frankfurt.put("/v1/indexes/lamps/records/one", { title: "Brass lamp" });
    expect(put.status, put.text).toBe(200);
    for (const base of [7702, 7703]) {
      const read = await keyed(url(base), key).get(`/v1/indexes/lamps/records/one?minVersion=${put.body.indexVersion}`);
      expect(read.status, read.text).toBe(200);
    }

    // London killed by hand: the others go on, and Enter starts it again.
    const london = pidOf(join(dir, "london"));
    expect(london).toBeDefined();
    process.kill(london!, "SIGKILL");
    await expect
      .poll(() => r.output(), { timeout: 10_000 })
      .toMatch(/sift london exited \(SIGKILL\): press Enter to start it again/);
    put = await frankfurt.put("/v1/indexes/lamps/records/two", { title: "Copper lamp" });
    expect(put.status, put.text).toBe(200);
    r.child.stdin!.write("\n");
    await expect.poll(() => r.output(), { timeout: 5_000 }).toMatch(/starting sift london again/);
    await expect
      .poll(
        async () =>
          (await keyed(url(7702), key).get(`/v1/indexes/lamps/records/two?minVersion=${put.body.indexVersion}`)).status,
        { timeout: 60_000, interval: 250 },
      )
      .toBe(200);

    // Ctrl-C: every process stops.
    r.child.kill("SIGINT");
    await r.exited;
    for (const base of [7701, 7702, 7703, 8301, 8302, 8303])
      expect(await listening(base + offset), `port ${base + offset}`).toBe(false);
  }, 240_000);
});
