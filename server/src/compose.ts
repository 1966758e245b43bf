// The composition root: the one place that reads configuration and picks adapters for the
// ports (store, engine, blobs). Everything else receives what it needs.
import { mkdirSync } from "node:fs";
import { lockDataDir } from "./data-dir-lock.ts";
import { join } from "node:path";
import type { Hono } from "hono";
import { createApp } from "./app.ts";
import { createFsBlobStore } from "./blobs/fs-blobs.ts";
import { DEMO, demoHint, seedDemo } from "./demo/seed.ts";
import { UnavailableError } from "./domain/errors.ts";
import { IngestRunner } from "./ingest/runner.ts";
import type { Config } from "./config.ts";
import { loadContract, type Contract } from "./http/contract.ts";
import { RateLimits, type RateStore } from "./limits/rate-limits.ts";
import { signingSecret } from "./auth/signing-secret.ts";
import type { AppEnv } from "./http/env.ts";
import type { Logger } from "./log.ts";
import type { SearchEngine } from "./ports/engine.ts";
import { apiKeyHandlers } from "./routes/api-keys.ts";
import { authHandlers } from "./routes/auth.ts";
import { catalogHandlers } from "./routes/catalog.ts";
import { healthHandlers } from "./routes/health.ts";
import { RegionLagService } from "./services/region-lag.ts";
import type { Placement } from "./replication/placement.ts";
import { mountDashboard } from "./routes/dashboard.ts";
import { mountDemo } from "./routes/demo.ts";
import { mcpHandlers, mcpMethodNotAllowed } from "./routes/mcp.ts";
import { oauthHandlers } from "./routes/oauth.ts";
import { recordHandlers } from "./routes/records.ts";
import { searchHandlers } from "./routes/search.ts";
import { versionHandlers } from "./routes/versions.ts";
import { uploadHandlers } from "./routes/uploads.ts";
import { AccountService } from "./services/accounts.ts";
import { ApiKeyService } from "./services/api-keys.ts";
import { CatalogService } from "./services/catalog.ts";
import { RecordService } from "./services/records.ts";
import { SearchService } from "./services/search.ts";
import { UploadService } from "./services/uploads.ts";
import { VersionService } from "./services/versions.ts";
import { unlessStoreUnreachable } from "./store/errors.ts";
import { takeEarlyPglite } from "./store/early-pglite.ts";
import { openStore, type Store } from "./store/open.ts";
import { announceReplicated, holdSoleProcess, type SoleProcessLease } from "./store/sole-process.ts";
import type { ChangeLog } from "./ports/change-log.ts";
import type { NodeNotices } from "./ports/node-notices.ts";
import { serversShown } from "./replication/nats/servers.ts";
import { OpeningLog } from "./replication/opening-log.ts";
import { Replica } from "./replication/replica.ts";
import { replicatedEngine } from "./replication/replicated-engine.ts";
import { IndexLocks } from "./services/versions/lock.ts";
import { McpConnections } from "./mcp-auth/connections.ts";
import { DrizzleOAuthEntries } from "./mcp-auth/entries.ts";
import { McpProviders } from "./mcp-auth/provider.ts";
import { mountMcpAuth } from "./mcp-auth/routes.ts";
import { mcpConnectionHandlers } from "./routes/mcp-connections.ts";
import { STORE_WAIT_MS, withStoreDeadline } from "./services/store-deadline.ts";

export interface Sift {
  app: Hono<AppEnv>;
  config: Config;
  contract: Contract;
  store: Store;
  engine: SearchEngine;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  catalog: CatalogService;
  versions: VersionService;
  records: RecordService;
  search: SearchService;
  uploads: UploadService;
  ingest: IngestRunner;
  /** MCP hosts' OAuth connections (mcp-auth/). */
  mcpConnections: McpConnections;
  /** Lines telling a newcomer what to try, given the base URL (set when the demo is loaded). */
  demoHint?: (baseUrl: string) => string[];
  /** Stops background work and closes the engine and the store. */
  close(): Promise<void>;
}

async function openEngine(config: Config, log: Logger): Promise<SearchEngine> {
  if (config.typesense) {
    const { createTypesenseEngine } = await import("./engine/typesense/index.ts");
    return createTypesenseEngine({ url: config.typesense.url, apiKey: config.typesense.apiKey });
  }
  const { createEmbeddedEngine } = await import("./engine/embedded/index.ts");
  const { mmapUnavailable } = await import("@sift/mmap");
  if (mmapUnavailable !== null) {
    log.warn("segment indexes are read into memory: the mmap addon is not built (npm ci builds it)", {
      reason: mmapUnavailable,
    });
  }
  // With replication the change log holds every change durably, and a node replays it from the
  // position it saved: the engine's own commits need not each wait for the disk (D-292).
  return createEmbeddedEngine({
    dataDir: join(config.dataDir, "engine"),
    syncEachChange: !config.nats,
    layering: { minBase: config.layeredFrom },
  });
}

export async function composeSift(config: Config, log: Logger): Promise<Sift> {
  mkdirSync(config.dataDir, { recursive: true });
  // PGlite's thread may be starting already, under this directory's lock (main.ts, D-331).
  const early = takeEarlyPglite(config.dataDir);
  const lock = early?.lock ?? lockDataDir(config.dataDir);
  const contract = loadContract();
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  let engine: SearchEngine;
  let changeLog: ChangeLog | undefined;
  // With replication, which indexes this node holds (D-385).
  let placement: Placement | undefined;
  let sole: SoleProcessLease | undefined;
  try {
    store = await openStore({
      databaseUrl: config.databaseUrl,
      databaseReadUrl: config.databaseReadUrl,
      dataDir: config.dataDir,
      log,
      ...(early ? { pglite: early.thread } : {}),
    });
    // Without replication, one process per database (D-325); PGlite's data dir is locked above.
    // Nodes with replication say so, and are refused beside a process without it.
    const holder = `sift ${config.nodeId} pid ${process.pid}`;
    if (store.kind === "postgres" && config.nats) {
      sole = await announceReplicated(store.db, { holder, waitSeconds: config.soleProcessWaitSeconds, log });
    } else if (store.kind === "postgres") {
      sole = await holdSoleProcess(store.db, {
        holder,
        node: config.nodeId,
        waitSeconds: config.soleProcessWaitSeconds,
        log,
        onLost: (error) => {
          // Another process took the database while this one's connection was down: it stops
          // rather than have two processes write.
          log.error("this process no longer holds its database; stopping", { error: error.message });
          process.kill(process.pid, "SIGTERM");
        },
      });
    }
    engine = await openEngine(config, log);
    await engine.open();
    if (config.nats) {
      const { Placement } = await import("./replication/placement.ts");
      placement = new Placement({ region: config.region, regionUrls: config.regionUrls, lookup: store.lookup, log });
      const held = placement;
      const { openNatsLog } = await import("./replication/nats/nats-log.ts");
      // Opened in the background: a node whose NATS servers are out of reach starts on what it
      // holds, not ready, instead of exiting (D-271).
      const nats = config.nats;
      changeLog = new OpeningLog(
        () =>
          openNatsLog({
            ...nats,
            log,
            name: `sift ${config.nodeId}`,
            stagingDir: join(config.dataDir, "prefetch"),
            holdsIndex: (index) => held.holds(index),
          }),
        log.child({ nats: serversShown(nats.servers) }),
      );
    }
  } catch (error) {
    await sole?.release();
    await store?.close();
    lock.release();
    throw error;
  }
  // Replication (docs/replication.md): the services write through the change log, and the
  // replica applies every node's entries to this node's engine; a write overtaken by another
  // node's catches up and runs again under the index's lock.
  const locks = new IndexLocks();
  const replica = changeLog
    ? new Replica({
        node: config.nodeId,
        log: changeLog,
        engine,
        db: store.db,
        logger: log,
        dataDir: config.dataDir,
        snapshots: config.nats && {
          every: config.nats.snapshotEvery,
          goneAfterMs: config.nats.nodeGoneAfterMs,
          afterMs: config.nats.snapshotAfterMs,
        },
        ...(config.nats
          ? { historyCheckMs: config.nats.historyCheckMs, setAsideAfterMs: config.nats.setAsideAfterMs }
          : {}),
        ...(placement ? { placement } : {}),
      })
    : undefined;
  if (replica && changeLog) {
    engine = replicatedEngine(engine, replica, changeLog);
    locks.setCatchUp((clientWaits) => replica.catchUp({ clientWaits }), { clientWaitMs: replica.clientWaitMs });
  }
  const secret = await signingSecret(config, store, log);
  const rateStore = await openRateStore(config, log);
  const rateLimits = new RateLimits(config.rateLimits, rateStore);

  // On PostgreSQL that hangs, a client waits this long (D-356, D-360; unbounded on PGlite).
  const bound = store.kind === "postgres" ? STORE_WAIT_MS : undefined;
  const accounts = new AccountService(store.db, config.sessionTtlMs);
  const apiKeys = new ApiKeyService(store.db, log, Date.now, store.lookup);
  // An index's creation and deletion bound each of their store steps themselves: with replication
  // they wait on the change log too, which "the store did not answer" would misname.
  const catalog = new CatalogService(
    store.db,
    engine,
    log,
    Date.now,
    { indexes: config.quotaIndexes },
    store.lookup,
    bound,
  );
  if (changeLog) {
    // A revocation or an index change made on one node reaches every other node's caches (D-343).
    const between = changeLog;
    const notices: NodeNotices = {
      send: (notice) => between.sendNotice?.(notice),
      listen: (listener) => between.onNotice?.(listener),
      watchHearing: (listener) => between.watchHearing?.(listener),
    };
    apiKeys.useNotices(notices);
    catalog.useNotices(notices);
  }
  if (config.databaseReadUrl) {
    // Not awaited: a primary out of reach at the start is the replica's moment (D-276).
    void unlessStoreUnreachable(log, "read the keys revoked lately", () => apiKeys.rememberRecentRevocations()).catch(
      (error: Error) => log.warn("could not read the keys revoked lately", { error: error.message }),
    );
  }
  if (placement) catalog.usePlacement(placement);
  if (replica) {
    replica.onActivated((indexId, version) => catalog.setActive(indexId, version));
    catalog.useLocalActive(
      (indexId) => replica.active(indexId),
      (indexId) => replica.isDropped(indexId),
    );
  }
  const versions = new VersionService({
    db: store.db,
    engine,
    catalog,
    log,
    locks,
    ...(replica ? { replica } : {}),
    // With replication a record write needs the store only for its lookups (D-295).
    ...(bound !== undefined && !replica ? { writeWaitMs: bound } : {}),
    policy: {
      coalesceAfter: config.coalesceAfter,
      retainVersions: config.retainVersions,
      recordsPerIndex: config.quotaRecordsPerIndex,
      writesPerTenant: config.writesPerTenant,
    },
  });
  const records = new RecordService({ catalog, versions, engine });
  const search = new SearchService({ catalog, versions, engine, region: config.region, regionUrls: config.regionUrls });
  const blobs = createFsBlobStore(join(config.dataDir, "blobs"));
  const ingest = new IngestRunner({
    db: store.db,
    engine,
    blobs,
    catalog,
    versions,
    log,
    // A compressed file may expand to what an uncompressed one may hold.
    limits: {
      expandedBytes: config.maxUploadBytes,
      records: config.maxUploadRecords,
      recordsPerIndex: config.quotaRecordsPerIndex,
    },
    ...(replica ? { node: config.nodeId } : {}),
  });
  const uploads = new UploadService({
    db: store.db,
    catalog,
    versions,
    blobs,
    secret,
    maxUploadBytes: config.maxUploadBytes,
    quotas: { uploadBytes: config.quotaUploadBytes, concurrentUploads: config.quotaConcurrentUploads },
    onQueued: () => ingest.notify(),
    ...(replica ? { node: config.nodeId, liveNodes: () => replica.liveNodes() } : {}),
    ...(bound === undefined ? {} : { storeWaitMs: bound }),
  });
  // What the HTTP layer calls for sign-ins, the control plane, uploads' steps and version listings
  // answers 503 once the store has not answered for `bound` (D-360). The services themselves stay
  // unwrapped: searches and writes, and the key checks of every request, do not pass through it.
  const bounded = {
    accounts: withStoreDeadline(accounts, bound, {
      reads: ["session", "me", "userExists"],
      changes: ["signup", "login", "oauthSignIn", "logout"],
    }),
    apiKeys: withStoreDeadline(apiKeys, bound, { reads: ["list"], changes: ["create", "revoke"] }),
    catalog: withStoreDeadline(catalog, bound, {
      reads: ["listServices", "getService", "listIndexes", "getIndex"],
      changes: ["createService", "deleteService", "updateIndex"],
    }),
    versions: withStoreDeadline(versions, bound, { reads: ["list", "changes"], changes: [] }),
    uploads: withStoreDeadline(uploads, bound, { reads: ["status"], changes: ["start", "complete"] }),
  };
  if (replica) {
    // Not awaited: the node answers (and /readyz says it is catching up) while it replays.
    void replica.start().catch((error: Error) => log.error("replication could not start", { error: error.message }));
    void unlessStoreUnreachable(log, "remove the files of uploads failed while this node was gone", () =>
      uploads.removeOrphanedFiles(),
    ).catch((error: Error) =>
      log.warn("could not remove the files of uploads failed while this node was gone", { error: error.message }),
    );
  } else {
    await unlessStoreUnreachable(log, "reconcile versions with the engine (the next start does)", () =>
      versions.reconcile(),
    );
  }
  // The OAuth authorization server for MCP hosts (docs/mcp-auth.md), its state in the store.
  const oauthEntries = new DrizzleOAuthEntries(store.db);
  const mcpProviders = new McpProviders({
    entries: oauthEntries,
    secret,
    userExists: (id) => bounded.accounts.userExists(id),
    clientMetadataPrivateHosts: config.oauthClientMetadataPrivateHosts,
    log,
  });
  const mcpConnections = new McpConnections(oauthEntries, mcpProviders);
  // The demo is not worth a node that does not start: a change log out of reach (its index's
  // creation is refused after 20 s) leaves it to the next start (D-365).
  const demo = config.demo
    ? await unlessStoreUnreachable(log, "seed the demo (the next start does)", () =>
        seedDemo({ db: store.db, engine, catalog, versions, log }),
      ).then(
        (seeded) => seeded ?? DEMO,
        (error: Error) => {
          if (!(error instanceof UnavailableError)) throw error;
          log.error("could not load the demo; the next start tries again", { error: error.message });
          return undefined;
        },
      )
    : undefined;
  await ingest.start();
  const timers = [
    setInterval(
      () =>
        void accounts
          .purgeExpiredSessions()
          .catch((error: Error) =>
            log.warn("could not purge expired sessions; the next run tries again", { error: error.message }),
          ),
      3_600_000,
    ).unref(),
    setInterval(
      () =>
        void mcpConnections
          .purgeExpired()
          .catch((error: Error) =>
            log.warn("could not purge expired OAuth tokens; the next run tries again", { error: error.message }),
          ),
      3_600_000,
    ).unref(),
    setInterval(
      () =>
        void uploads
          .sweepAbandoned(config.requestTimeoutMs)
          .then(() => uploads.sweepOrphaned())
          .catch((error: Error) =>
            log.warn("could not sweep abandoned uploads; the next run tries again", { error: error.message }),
          ),
      config.retentionEveryMs,
    ).unref(),
    setInterval(
      () =>
        void versions
          .applyRetentionEverywhere()
          .catch((error: Error) => log.error("retention could not list the indexes", { error: error.message })),
      config.retentionEveryMs,
    ).unref(),
  ];

  const app = createApp({
    config,
    log,
    contract,
    apiKeys,
    sessions: bounded.accounts,
    mcpTokens: mcpConnections,
    rateLimits,
    handlers: {
      ...healthHandlers({
        config,
        store,
        engine,
        replication: replica,
        lag: new RegionLagService(store.db, replica, Date.now, placement),
      }),
      ...authHandlers(bounded.accounts, config),
      ...oauthHandlers({ config, accounts: bounded.accounts, secret }),
      ...apiKeyHandlers(bounded.apiKeys),
      ...mcpConnectionHandlers(mcpConnections),
      ...catalogHandlers(bounded.catalog),
      ...searchHandlers(search),
      ...recordHandlers(records),
      ...versionHandlers(records, bounded.versions),
      ...uploadHandlers(bounded.uploads, config),
      ...mcpHandlers({ catalog: bounded.catalog, search, engine, maxBodyBytes: config.maxBodyBytes }),
    },
    extraRoutes: (app) => {
      mcpMethodNotAllowed(app);
      mountMcpAuth(app, { providers: mcpProviders, connections: mcpConnections, config, accounts: bounded.accounts });
      mountDemo(app, {
        demo: demo ? { serviceName: demo.serviceName, indexName: demo.indexName } : undefined,
        // Other regions hold this node's indexes only with replication.
        regions: config.nats !== undefined && Object.keys(config.regionUrls).length > 0,
      });
      mountDashboard(app);
    },
  });

  return {
    app,
    config,
    contract,
    store,
    engine,
    accounts,
    apiKeys,
    catalog,
    versions,
    records,
    search,
    uploads,
    ingest,
    mcpConnections,
    ...(demo ? { demoHint } : {}),
    async close() {
      for (const t of timers) clearInterval(t);
      await ingest.stop();
      await replica?.stop();
      await changeLog?.close();
      await sole?.release();
      await engine.close();
      await store.close();
      if (rateStore.kind === "redis") rateStore.client.disconnect();
      lock.release();
    },
  };
}

/** Rate-limit counters: in this process, or in Redis when processes share limits (SIFT_REDIS_URL). */
async function openRateStore(config: Config, log: Logger): Promise<RateStore> {
  if (!config.redis) return { kind: "memory" };
  const { Redis } = await import("ioredis");
  // Commands fail fast while Redis is away (the limiter then counts in memory) instead of queuing.
  const client = new Redis(config.redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  client.on("error", (error: Error) => log.warn("redis for rate limits", { error: error.message }));
  return { kind: "redis", client, prefix: config.redis.prefix };
}
