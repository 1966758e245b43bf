// Replica nodes over one in-memory change log and one store, as the replica's tests open them:
// each node with its own engine, catalog, version and record services (docs/replication.md).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { createLogger } from "../../src/log.ts";
import { Placement } from "../../src/replication/placement.ts";
import { primaryOnly } from "../../src/store/lookup.ts";
import { Replica } from "../../src/replication/replica.ts";
import { replicatedEngine } from "../../src/replication/replicated-engine.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { RecordService } from "../../src/services/records.ts";
import { VersionService } from "../../src/services/versions.ts";
import { IndexLocks } from "../../src/services/versions/lock.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants } from "../../src/store/schema.ts";
import { type StoreTarget, storeTargets } from "../support/store.ts";
import { MemoryLog } from "./memory-log.ts";

export const admin: Principal = { kind: "key", keyId: "key_r", tenantId: "ten_r", type: "adm", userId: null };
export const silent = createLogger("silent", {}, () => {});

/** How a node is opened: its snapshots, its quota, its engine wrapped (to hold a build). */
export interface NodeOptions {
  snapshots?: { every: number; goneAfterMs: number; afterMs?: number };
  recordsPerIndex?: number;
  coalesceAfter?: number;
  /** Ready versions retention keeps besides the active one's chain (100). */
  retainVersions?: number;
  /** Wraps the node's own engine (to hold a checkpoint's build). */
  wrap?: (engine: SearchEngine) => SearchEngine;
  /** Wraps the node's client of the log (to put the log's home out of reach). */
  wrapLog?: (log: ReturnType<MemoryLog["client"]>) => ReturnType<MemoryLog["client"]>;
  /** Leaves `replica.start()` to the test. */
  startLater?: boolean;
  /** How often the node records what it applied in the store (100 ms). */
  storeEveryMs?: number;
  /** How long a record write or an activation asked over HTTP waits for the node to apply the log (15 s). */
  clientWaitMs?: number;
  /** Wraps the node's store, where it records the rows of what it applies (to hold those statements). */
  wrapDb?: (db: Store["db"]) => Store["db"];
  /** When the node's checkpoints are layered (engine/embedded/versions/layers.ts). */
  layering?: { minBase: number; maxShare: number };
  /** How often the node checks that the log still holds each index's history (10 minutes, D-369). */
  historyCheckMs?: number;
  /** How long a record write the log turns away unstored is sent again (10 s, D-372). */
  notAppendedRetryMs?: number;
  /** How long an entry may fail before its index is set aside on the node (2 minutes, D-376). */
  setAsideAfterMs?: number;
  /** The node's region and the regions' endpoints: it holds only its services' indexes (D-385). */
  placement?: { region: string; regionUrls: Record<string, string> };
  /** The data directory a node closed with `keepData` left: this node starts over it, as after a restart. */
  dir?: string;
}

export async function openNode(memory: MemoryLog, store: Store, name: string, options: NodeOptions = {}) {
  const { snapshots, recordsPerIndex, wrap = (engine) => engine } = options;
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), `sift-replica-${name}-`));
  const real = createEmbeddedEngine({
    dataDir: path.join(dir, "engine"),
    ...(options.layering ? { layering: options.layering } : {}),
  });
  await real.open();
  const inner = wrap(real);
  const log = (options.wrapLog ?? ((client) => client))(memory.client());
  const db = options.wrapDb?.(store.db) ?? store.db;
  const placement =
    options.placement && new Placement({ ...options.placement, lookup: primaryOnly(store.db), log: silent });
  const replica = new Replica({
    node: name,
    log,
    engine: inner,
    db,
    logger: silent,
    dataDir: dir,
    ...(snapshots ? { snapshots } : {}),
    ...(options.storeEveryMs ? { storeEveryMs: options.storeEveryMs } : {}),
    ...(options.clientWaitMs ? { clientWaitMs: options.clientWaitMs } : {}),
    ...(options.historyCheckMs ? { historyCheckMs: options.historyCheckMs } : {}),
    ...(options.notAppendedRetryMs ? { notAppendedRetryMs: options.notAppendedRetryMs } : {}),
    ...(options.setAsideAfterMs ? { setAsideAfterMs: options.setAsideAfterMs } : {}),
    ...(placement ? { placement } : {}),
  });
  const engine = replicatedEngine(inner, replica, log);
  const locks = new IndexLocks();
  locks.setCatchUp((clientWaits) => replica.catchUp({ clientWaits }), { clientWaitMs: replica.clientWaitMs });
  const catalog = new CatalogService(store.db, engine, silent);
  if (placement) catalog.usePlacement(placement);
  replica.onActivated((id, version) => catalog.setActive(id, version));
  catalog.useLocalActive((id) => replica.active(id));
  const versions = new VersionService({
    db,
    engine,
    catalog,
    log: silent,
    locks,
    replica,
    policy: {
      coalesceAfter: options.coalesceAfter ?? 1_000,
      retainVersions: options.retainVersions ?? 100,
      ...(recordsPerIndex ? { recordsPerIndex } : {}),
    },
  });
  const records = new RecordService({ catalog, versions, engine });
  if (!options.startLater) await replica.start();
  return {
    log,
    locks,
    replica,
    catalog,
    versions,
    records,
    engine: inner,
    /** What the services write through: the node's engine behind the log. */
    replicated: engine,
    placement,
    dir,
    async close(options: { keepData?: boolean } = {}) {
      await replica.stop();
      await real.close();
      if (!options.keepData) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Two nodes "a" and "b" over one in-memory log and one store, with index "shop" made through a:
 * opened before the describe block's tests, closed after them.
 */
export function useTwoNodes(
  options: NodeOptions = {},
  optionsB: NodeOptions = { ...options, wrap: undefined },
  target: StoreTarget = storeTargets()[0]!,
) {
  const memory = new MemoryLog();
  const nodes = { memory } as {
    memory: MemoryLog;
    store: Store;
    a: Awaited<ReturnType<typeof openNode>>;
    b: Awaited<ReturnType<typeof openNode>>;
  };
  let store: Store | undefined;
  beforeAll(async () => {
    store = await target.open();
    nodes.store = store;
    await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
    nodes.a = await openNode(memory, store, "a", options);
    nodes.b = await openNode(memory, store, "b", optionsB);
    await nodes.a.catalog.createService("ten_r", { name: "ten_r-shop", regions: ["frankfurt"] });
    const shop = await nodes.a.catalog.createIndex("ten_r", { name: "shop", serviceName: "ten_r-shop" });
    // Node b applies the index's creation from the log: a write to it there before then is 503
    // ("not received yet"), as a loaded CI machine once showed.
    const { id } = (await nodes.a.catalog.byName("ten_r", shop.name))!;
    await nodes.b.replica.waitFor(id, "0", 10_000);
  });
  afterAll(async () => {
    await nodes.a?.close();
    await nodes.b?.close();
    await store?.close();
  });
  return nodes;
}

export type TestNode = Awaited<ReturnType<typeof openNode>>;

/** Node "a" alone on `memory`: tenant ten_r, its service and index "shop" made through it. */
export async function openShopNode(memory: MemoryLog, store: Store, options: NodeOptions): Promise<TestNode> {
  await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
  const a = await openNode(memory, store, "a", options);
  await a.catalog.createService("ten_r", { name: "ten_r-shop", regions: ["frankfurt"] });
  await a.catalog.createIndex("ten_r", { name: "shop", serviceName: "ten_r-shop" });
  return a;
}

/** `count` records written through `node` into "shop": their titles by id, the newest version, the index's id. */
export async function writeShop(node: TestNode, count: number) {
  const written = new Map<string, string>();
  let version = "";
  for (let i = 0; i < count; i++) {
    version = await node.records.put(admin, "shop", `r-${i}`, { title: `Record ${i}` });
    written.set(`r-${i}`, `Record ${i}`);
  }
  const { id } = (await node.catalog.byName("ten_r", "shop"))!;
  return { written, version, id };
}

/** `node` holds every record of `written` at `version`, and follows the next write made through `writer`. */
export async function holdsAllAndFollows(
  node: TestNode,
  writer: TestNode,
  shop: { written: Map<string, string>; version: string; id: string },
  waitMs: number,
): Promise<void> {
  await node.replica.waitFor(shop.id, shop.version, waitMs);
  for (const [record, title] of shop.written)
    expect((await node.records.get(admin, "shop", record))?.title).toBe(title);
  const next = await writer.records.put(admin, "shop", "next", { title: "Next" });
  await node.replica.waitFor(shop.id, next, 5_000);
  expect((await node.records.get(admin, "shop", "next"))?.title).toBe("Next");
}

/** The newest snapshot pointer of an index, once a snapshot was taken and its pointer written. */
export async function waitForPointer(memory: MemoryLog, indexId: string): Promise<{ seq: number }> {
  for (let i = 0; i < 100; i++) {
    const pointer = memory.docs.get(`snapshots/${indexId}/latest`) as { seq: number } | undefined;
    if (pointer) return pointer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("no snapshot was taken");
}

/** A node's engine's search for "record" in `version`, up to 20 hits (what the layered checkpoint tests compare). */
export const searchRecords = (node: { engine: SearchEngine }, index: string, version: string) =>
  node.engine.search(index, version, { query: "record", scope: "all", weighted: true, limit: 20 });
