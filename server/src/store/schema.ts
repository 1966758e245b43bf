// Metadata store schema (Drizzle, Postgres dialect): one schema for PGlite and PostgreSQL.
// Times are epoch milliseconds (bigint, read as numbers) because the API speaks epoch ms.
import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import type { components } from "@sift/contract";

const epochMs = (name: string) => bigint(name, { mode: "number" });

export const tenants = pgTable("tenants", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: epochMs("created_at").notNull(),
});

export const users = pgTable(
  "users",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** Stored lower-cased; unique across Sift. */
    email: text("email").notNull(),
    /** `scrypt$…`; null for users who only sign in through OAuth. */
    passwordHash: text("password_hash"),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [uniqueIndex("users_email_key").on(t.email)],
);

export const oauthIdentities = pgTable(
  "oauth_identities",
  {
    provider: text("provider").notNull(),
    subject: text("subject").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.subject] })],
);

export const sessions = pgTable(
  "sessions",
  {
    /** SHA-256 of the cookie value; the value itself is never stored. */
    tokenHash: text("token_hash").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tenantId: text("tenant_id").notNull(),
    createdAt: epochMs("created_at").notNull(),
    expiresAt: epochMs("expires_at").notNull(),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** Set for `pat` keys, which act as their user and die with them. */
    userId: text("user_id").references(() => users.id, { onDelete: "cascade" }),
    type: text("type").$type<components["schemas"]["ApiKeyType"]>().notNull(),
    name: text("name").notNull(),
    /** SHA-256 (hex) of the whole plaintext key. */
    keyHash: text("key_hash").notNull(),
    displayPrefix: text("display_prefix").notNull(),
    createdAt: epochMs("created_at").notNull(),
    lastUsedAt: epochMs("last_used_at"),
    revokedAt: epochMs("revoked_at"),
    /** Restrictions (docs/api-keys.md, Restrictions); null where the key has none. */
    expiresAt: epochMs("expires_at"),
    /** Index names, `*` matching any run of characters. */
    indexes: jsonb("indexes").$type<string[]>(),
    /** `srh` keys only: allowed web origins, the host may start with `*.`. */
    referrers: jsonb("referrers").$type<string[]>(),
  },
  (t) => [
    uniqueIndex("api_keys_hash_key").on(t.keyHash),
    index("api_keys_tenant_created_idx").on(t.tenantId, t.createdAt),
  ],
);

export const services = pgTable(
  "services",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** Unique across Sift: anonymous searches name a service without naming a tenant. */
    name: text("name").notNull(),
    regions: jsonb("regions").$type<string[]>().notNull(),
    replicas: integer("replicas").notNull(),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [uniqueIndex("services_name_key").on(t.name), index("services_tenant_idx").on(t.tenantId)],
);

export const indexes = pgTable(
  "indexes",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    serviceId: text("service_id")
      .notNull()
      .references(() => services.id, { onDelete: "restrict" }),
    /** Unique per tenant: record paths carry no service. */
    name: text("name").notNull(),
    visibility: text("visibility").$type<"PUBLIC" | "PRIVATE">().notNull(),
    activeVersion: text("active_version").notNull(),
    /** Next major version id; bulk uploads and checkpoints draw from it, so ids are sequential. */
    nextMajor: integer("next_major").notNull().default(1),
    createdAt: epochMs("created_at").notNull(),
    /**
     * With replication (docs/replication.md): the change-log position that last set the active
     * version. Nodes apply the log at their own pace; an update from an older position is ignored,
     * so a node that lags never sets the active version back.
     */
    logSeq: bigint("log_seq", { mode: "number" }).notNull().default(0),
  },
  (t) => [uniqueIndex("indexes_tenant_name_key").on(t.tenantId, t.name), index("indexes_service_idx").on(t.serviceId)],
);

export const versions = pgTable(
  "versions",
  {
    indexId: text("index_id")
      .notNull()
      .references(() => indexes.id, { onDelete: "cascade" }),
    version: text("version").notNull(),
    major: integer("major").notNull(),
    minor: integer("minor").notNull(),
    parent: text("parent"),
    kind: text("kind").$type<"bulk" | "change" | "checkpoint" | "purge">().notNull(),
    /** `dropped` rows are kept so that ids stay unique and monotonic after retention. */
    state: text("state").$type<"pending" | "ready" | "failed" | "dropped">().notNull(),
    records: bigint("records", { mode: "number" }),
    createdAt: epochMs("created_at").notNull(),
    /** For a `purge` version: the id erased from every retained version, never its content. */
    purgedRecordId: text("purged_record_id"),
    /** For a `purge` version: who asked for it, `key:<key id>` or `user:<user id>`. */
    purgedBy: text("purged_by"),
    /**
     * For a `bulk` version: the version that was live when it finished ingesting, which its
     * changes are told against (versions/diff.ts); null for uploads recorded before it was kept.
     */
    base: text("base"),
  },
  (t) => [
    primaryKey({ columns: [t.indexId, t.version] }),
    index("versions_index_major_minor_idx").on(t.indexId, t.major, t.minor),
  ],
);

export const uploads = pgTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    indexId: text("index_id")
      .notNull()
      .references(() => indexes.id, { onDelete: "cascade" }),
    version: text("version").notNull(),
    state: text("state")
      .$type<"awaiting_upload" | "uploaded" | "queued" | "running" | "succeeded" | "failed">()
      .notNull(),
    expiresAt: epochMs("expires_at").notNull(),
    bytesReceived: bigint("bytes_received", { mode: "number" }).notNull().default(0),
    bytesRead: bigint("bytes_read", { mode: "number" }).notNull().default(0),
    format: text("format").$type<"csv" | "jsonl" | "json">(),
    gzip: integer("gzip"),
    recordsIngested: bigint("records_ingested", { mode: "number" }).notNull().default(0),
    recordsSuppressed: bigint("records_suppressed", { mode: "number" }).notNull().default(0),
    recordsInvalid: bigint("records_invalid", { mode: "number" }).notNull().default(0),
    errors: jsonb("errors")
      .$type<{ line: number; field?: string; message: string }[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    errorCount: bigint("error_count", { mode: "number" }).notNull().default(0),
    failureReason: text("failure_reason"),
    activate: integer("activate").notNull().default(1),
    skipInvalid: integer("skip_invalid").notNull().default(0),
    attempts: integer("attempts").notNull().default(0),
    createdAt: epochMs("created_at").notNull(),
    queuedAt: epochMs("queued_at"),
    startedAt: epochMs("started_at"),
    finishedAt: epochMs("finished_at"),
    /**
     * With replication: the node that holds the uploaded bytes (they are on its disk), which is
     * the one that ingests them; null on a single node.
     */
    node: text("node"),
  },
  (t) => [uniqueIndex("uploads_index_version_key").on(t.indexId, t.version), index("uploads_state_idx").on(t.state)],
);

export const tombstones = pgTable(
  "tombstones",
  {
    indexId: text("index_id")
      .notNull()
      .references(() => indexes.id, { onDelete: "cascade" }),
    recordId: text("record_id").notNull(),
    /** The version whose delete created the tombstone. */
    version: text("version").notNull(),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.indexId, t.recordId] })],
);

/**
 * What the OAuth authorization server for MCP hosts keeps (mcp-auth/, on oidc-provider): one row
 * per stored model instance (registered clients, grants, codes, access and refresh tokens,
 * interactions, sessions), its payload as oidc-provider gives it. Stored rather than held in
 * memory so that tokens outlive a restart and a revoked one is gone on every node.
 */
export const oauthEntries = pgTable(
  "oauth_entries",
  {
    /** oidc-provider's model name: `Client`, `Grant`, `AccessToken`, `RefreshToken`, … */
    model: text("model").notNull(),
    id: text("id").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    /** The grant a code or token belongs to: revoking a connection deletes them all at once. */
    grantId: text("grant_id"),
    /** The signed-in user (Grant, Session): a tenant's connections are its users' grants. */
    accountId: text("account_id"),
    /** Interaction sessions are found by this. */
    uid: text("uid"),
    userCode: text("user_code"),
    expiresAt: epochMs("expires_at"),
    consumedAt: epochMs("consumed_at"),
    /** On a Grant: the last time one of its access tokens was accepted by /mcp. */
    lastUsedAt: epochMs("last_used_at"),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.id] }),
    index("oauth_entries_grant_idx").on(t.grantId),
    index("oauth_entries_account_idx").on(t.model, t.accountId),
    index("oauth_entries_uid_idx").on(t.uid),
    index("oauth_entries_expires_idx").on(t.expiresAt),
  ],
);

/**
 * Secrets every node of a deployment must share, by name: `signing`, the HMAC key of upload URLs
 * and OAuth state, for the nodes of a deployment without `SIFT_SIGNING_SECRET` (D-321). Written
 * once, by the first node that needs it; never changed.
 */
export const deploymentSecrets = pgTable("deployment_secrets", {
  name: text("name").primaryKey(),
  /** Base64. */
  value: text("value").notNull(),
});

/**
 * Failed log-ins (auth/login-throttle.ts), per account (`a:<email>`) and per client address
 * (`i:<address>`): in the store, so that every node of a deployment counts the same failures.
 */
export const loginFailures = pgTable("login_failures", {
  key: text("key").primaryKey(),
  count: integer("count").notNull(),
  /** No attempt is let through before this time. */
  waitUntil: epochMs("wait_until").notNull(),
  lastAt: epochMs("last_at").notNull(),
});

/**
 * Without replication, the one process that serves this database (store/sole-process.ts, D-325):
 * a lease it renews, in one row.
 */
export const soleProcess = pgTable("sole_process", {
  id: text("id").primaryKey(),
  /** `sift <node> pid <pid>`: this process and no other. */
  holder: text("holder").notNull(),
  /** SIFT_NODE_ID: a process restarted in the same place takes over its lease at once. */
  node: text("node").notNull(),
  /** By the database's clock. */
  expiresAt: epochMs("expires_at").notNull(),
});
