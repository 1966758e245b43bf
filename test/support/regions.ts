// Several Sift regions as separate processes, each with its own data directory, sharing one
// PostgreSQL database and one private NATS JetStream cluster, or a supercluster with a cluster
// per region (docs/replication.md).
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, onTestFailed } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { createKey, signUp } from "./world.ts";
import { Http, type Reply } from "./http.ts";
import { RATE_LIMITS_OFF } from "./limits.ts";
import { type NatsCluster, natsAvailable, startNatsCluster, startNatsSupercluster } from "./nats.ts";
import { freePort } from "./ports.ts";
import { type PostgresProxy, postgresProxy } from "./postgres-proxy.ts";
import { type SiftProcess, siftProcess } from "./process.ts";

/** Replication needs a real PostgreSQL (shared by the regions) and nats-server. */
export const regionsAvailable = natsAvailable && Boolean(process.env.DATABASE_URL);

export interface Regions {
  /** Every NATS server (of every region's cluster, with `supercluster`). */
  nats: NatsCluster;
  /** With `supercluster`: each region's own cluster, by region id. */
  clusters?: Record<string, NatsCluster>;
  nodes: SiftProcess[];
  /** The id each node was started as (its region, or `<region>/<node>`), in the order of `nodes`. */
  regionIds: string[];
  /** An `adm` key of a tenant with service `shop` and the PUBLIC index `products`. */
  key: string;
  /** A dashboard session of that tenant's user, on the first node (what manages keys). */
  session: Http;
  service: string;
  index: string;
  /** A client of one node, with the key. */
  http(node: number): Keyed;
  /** With `storeProxy`: the proxy every node reaches PostgreSQL through, to cut and restore. */
  store?: PostgresProxy;
  /** The PostgreSQL database the nodes share. */
  databaseUrl: string;
  stop(): Promise<void>;
}

/** Requests to one node with the key. */
export interface Keyed {
  get(path: string): Promise<Reply>;
  post(path: string, json?: unknown): Promise<Reply>;
  put(path: string, json?: unknown): Promise<Reply>;
  patch(path: string, json?: unknown): Promise<Reply>;
  delete(path: string): Promise<Reply>;
}

export function keyed(base: string, key: string): Keyed {
  const h = new Http(base);
  return {
    get: (path) => h.get(path, { key }),
    post: (path, json) => h.post(path, json, { key }),
    put: (path, json) => h.put(path, json, { key }),
    patch: (path, json) => h.patch(path, json, { key }),
    delete: (path) => h.delete(path, { key }),
  };
}

/**
 * An upload of `csv` through one node, as a client makes it (start, PUT, complete), awaited until
 * its ingest succeeded there; its version. Throws with the upload's state otherwise.
 */
export async function uploadCsv(client: Keyed, index: string, csv: string, timeoutMs = 30_000): Promise<string> {
  const started = await client.post("/v1/uploads/start", { indexName: index });
  if (started.status !== 200) throw new Error(`upload start: ${started.status} ${started.text}`);
  const put = await fetch(started.body.uploadUrl, { method: "PUT", body: csv });
  if (put.status !== 200) throw new Error(`upload PUT: ${put.status}`);
  const version = started.body.indexVersion as string;
  const completed = await client.post("/v1/uploads/complete", { indexName: index, indexVersion: version });
  if (completed.status !== 200) throw new Error(`upload complete: ${completed.status} ${completed.text}`);
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const status = await client.get(`/v1/uploads/${index}/${version}`);
    if (status.body.state === "succeeded") return version;
    if (status.body.state === "failed" || Date.now() > deadline) throw new Error(`upload ${version}: ${status.text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts a stopped node and waits until /readyz says it has caught up with the log. */
export async function startCaughtUp(node: SiftProcess): Promise<void> {
  await node.start();
  await expect
    .poll(async () => (await fetch(`${node.url}/readyz`).then((reply) => reply.json())).replication?.caughtUp, {
      timeout: 60_000,
    })
    .toBe(true);
}

/** The region of a node started as `<region>` or `<region>/<node>`. */
const regionOf = (id: string) => id.split("/")[0]!;

/**
 * A node per id: an id is a region (its node is named after it), or `<region>/<node>` for one of
 * several nodes of a region (named `<region>-<node>`; the region's URL is its first node's).
 */
export async function startRegions(
  regionIds: string[] = ["frankfurt", "london", "newark"],
  env: Record<string, string> = {},
  /** Settings of one region only, by its id. */
  regionEnv: Record<string, Record<string, string>> = {},
  /**
   * `supercluster`: a NATS cluster of three per region, joined by gateways, each region's node
   * connected to its own cluster's servers only, as in a deployment; else one cluster for all.
   * `tieBreaker`: with it, one more cluster of a single server and no region.
   * `storeProxy`: every node reaches the shared PostgreSQL through a proxy (Regions.store).
   * `gatewayDelayMs`: with `supercluster`, what crosses between regions' clusters is this late
   * each way, as over a distance.
   */
  options: { supercluster?: boolean; tieBreaker?: string; storeProxy?: boolean; gatewayDelayMs?: number } = {},
): Promise<Regions> {
  const regions = [...new Set(regionIds.map(regionOf))];
  const supercluster = options.supercluster
    ? await startNatsSupercluster(regions, 3, options.tieBreaker, options.gatewayDelayMs)
    : undefined;
  const nats = supercluster ?? (await startNatsCluster(3));
  const clusters = supercluster?.clusters;
  const database = await createTempDatabase(process.env.DATABASE_URL!);
  const store = options.storeProxy ? await postgresProxy(new URL(database.url)) : undefined;
  const nodes: SiftProcess[] = [];
  try {
    // Every node's port before any node starts, so that each one's GET /v1/regions names them all
    // (SIFT_REGION_URL_<ID>) and an SDK with regions: "discover" can fail over between them.
    const ports: number[] = [];
    while (ports.length < regionIds.length) ports.push(await freePort());
    const urls = Object.fromEntries(
      regions.map((region) => [
        `SIFT_REGION_URL_${region.toUpperCase()}`,
        `http://127.0.0.1:${ports[regionIds.findIndex((id) => regionOf(id) === region)]}`,
      ]),
    );
    for (const [i, id] of regionIds.entries()) {
      const region = regionOf(id);
      const node = await siftProcess(
        {
          // Rate limits would refuse the tests' own load (32 search loops on one key).
          ...RATE_LIMITS_OFF,
          SIFT_NATS_URL: (clusters?.[region] ?? nats).urls,
          SIFT_NATS_REPLICAS: "3",
          SIFT_REGION: region,
          SIFT_NODE_ID: id.replace("/", "-"),
          ...urls,
          ...env,
          ...regionEnv[region],
        },
        { sharedDatabase: store ? store.via(database.url) : database.url, port: ports[i]! },
      );
      nodes.push(node);
    }
    // The first one migrates the shared database; the others then start together, as a
    // deployment's nodes do.
    await nodes[0]!.start();
    await Promise.all(nodes.slice(1).map((node) => node.start()));
    const first = new Http(nodes[0]!.url);
    const session = await signUp(first, `regions-${process.pid}-${Date.now()}@example.com`);
    const key = await createKey(session, "adm");
    const service = `shop-${process.pid}-${Date.now()}`;
    const admin = keyed(nodes[0]!.url, key);
    const made = await admin.post("/v1/services", { name: service });
    if (made.status !== 201) throw new Error(`service: ${made.status} ${made.text}`);
    const index = await admin.post("/v1/indexes", { name: "products", serviceName: service, visibility: "PUBLIC" });
    if (index.status !== 201) throw new Error(`index: ${index.status} ${index.text}`);
    // Every region has received the index before a test starts (until then it answers 503).
    for (const node of nodes) {
      const deadline = Date.now() + 30_000;
      while ((await keyed(node.url, key).get("/v1/indexes/products")).status !== 200) {
        if (Date.now() > deadline) throw new Error(`${node.url} never received the index`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return {
      nats,
      ...(clusters ? { clusters } : {}),
      nodes,
      regionIds,
      key,
      session,
      service,
      index: "products",
      http: (n) => keyed(nodes[n]!.url, key),
      ...(store ? { store } : {}),
      databaseUrl: database.url,
      async stop() {
        for (const node of nodes) await node.destroy();
        await store?.cut();
        await database.drop();
        await nats.stop();
      },
    };
  } catch (error) {
    for (const node of nodes) await node.destroy();
    await store?.cut();
    await database.drop();
    await nats.stop();
    throw error;
  }
}

/** Regions (three by default) for the tests of one describe block: started before them, stopped after. */
export function useRegions(...args: Parameters<typeof startRegions>): () => Regions {
  let regions: Regions | undefined;
  beforeAll(async () => {
    regions = await startRegions(...args);
  }, 180_000);
  afterAll(async () => {
    await regions?.stop();
  });
  return () => regions!;
}

/**
 * Prints what each region logged last if the running test fails: a failure that is a hang (a
 * timeout) says nothing by itself. `match` keeps only the lines that matter to the test.
 */
export function logRegionsOnFailure(r: () => Regions, lines = 30, match: (line: string) => boolean = () => true): void {
  onTestFailed(() => {
    const regions = r();
    for (const [i, node] of regions.nodes.entries()) {
      const kept = node
        .output()
        .split("\n")
        .filter((l) => !l.includes('"/readyz"') && match(l));
      console.log(`--- region ${regions.regionIds[i]}\n${kept.slice(-lines).join("\n")}`);
    }
  });
}

/**
 * The title of record `id` as region `node` serves it at `version` or later: a read with
 * minVersion, asked again while the region answers 503 (it waits 2 s for the version, then says
 * to try again), as a client does, for up to `timeout` ms. `index`: another than the regions' own.
 */
export async function readBack(
  r: Regions,
  node: number,
  id: string,
  version: string,
  timeout = 10_000,
  index = r.index,
): Promise<string> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const read = await r.http(node).get(`/v1/indexes/${index}/records/${id}?minVersion=${version}`);
    if (read.status === 200) return read.body.title as string;
    expect(read.status, read.text).toBe(503);
    if (Date.now() > deadline) throw new Error(`${id}@${version} never reached region ${node}: ${read.text}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The change log's subjects (`sift.log.<index id>`) and how many entries each holds. */
export async function logSubjects(r: Regions): Promise<Record<string, number>> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    const info = await (await jetstreamManager(nc)).streams.info("SIFT", { subjects_filter: "sift.log.>" });
    return info.state.subjects ?? {};
  } finally {
    await nc.close();
  }
}

/**
 * Makes index `name` (PUBLIC) through the first region and waits until the second has it; returns
 * its log subject and its id, which the API does not show.
 */
export async function makeIndex(r: Regions, name: string): Promise<{ subject: string; id: string }> {
  const before = Object.keys(await logSubjects(r));
  const made = await r.http(0).post("/v1/indexes", { name, serviceName: r.service, visibility: "PUBLIC" });
  expect(made.status, made.text).toBe(201);
  const subject = Object.keys(await logSubjects(r)).find((s) => !before.includes(s))!;
  await expect.poll(async () => (await r.http(1).get(`/v1/indexes/${name}`)).status, { timeout: 10_000 }).toBe(200);
  return { subject, id: subject.split(".").at(-1)! };
}
