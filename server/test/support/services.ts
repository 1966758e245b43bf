// The services over a fresh store and embedded engine, composed as compose.ts composes them, with
// one tenant and one service: the setup of the service-level tests (per store target).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { createLogger, type Logger } from "../../src/log.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { RecordService } from "../../src/services/records.ts";
import { VersionService, type VersionPolicy } from "../../src/services/versions.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants } from "../../src/store/schema.ts";
import type { StoreTarget } from "./store.ts";

export interface TestServices {
  store: Store;
  engine: SearchEngine;
  /** A directory of the test's own (the engine's data is in `engine/` below it). */
  dir: string;
  log: Logger;
  catalog: CatalogService;
  versions: VersionService;
  records: RecordService;
  close(): Promise<void>;
}

export async function openServices(
  target: StoreTarget,
  options: {
    /** The tenant's id; its service is named `<tenantId>-shop`. */
    tenantId: string;
    now?: () => number;
    policy?: Partial<VersionPolicy>;
    /** Wraps the engine every service sees (to count or fail its calls). */
    engine?: (engine: SearchEngine) => SearchEngine;
    /** Receives every log line the services write, from debug up (none by default). */
    logTo?: (line: string) => void;
    /** A record write's client waits this long for the store (D-356; unbounded by default). */
    writeWaitMs?: number;
  },
): Promise<TestServices> {
  const store = await target.open();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-services-"));
  const real = createEmbeddedEngine({ dataDir: path.join(dir, "engine") });
  await real.open();
  const engine = options.engine ? options.engine(real) : real;
  const log = options.logTo ? createLogger("debug", {}, options.logTo) : createLogger("silent", {}, () => {});
  const now = options.now ?? Date.now;
  const catalog = new CatalogService(store.db, engine, log, now);
  const versions = new VersionService({
    db: store.db,
    engine,
    catalog,
    log,
    now,
    policy: { coalesceAfter: 1_000, retainVersions: 10, ...options.policy },
    ...(options.writeWaitMs === undefined ? {} : { writeWaitMs: options.writeWaitMs }),
  });
  const records = new RecordService({ catalog, versions, engine });
  await store.db.insert(tenants).values({ id: options.tenantId, name: options.tenantId, createdAt: 0 });
  await catalog.createService(options.tenantId, { name: `${options.tenantId}-shop`, regions: ["frankfurt"] });
  return {
    store,
    engine,
    dir,
    log,
    catalog,
    versions,
    records,
    async close() {
      await real.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
