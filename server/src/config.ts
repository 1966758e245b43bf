// Configuration from the environment. Every problem is collected and reported at once, in
// words that name the variable, so a bad deployment fails at start-up and not at first use.
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import type { Caller } from "./auth/authority.ts";
import { hostIsUnder, hostnameOf, isLoopback } from "./http/host-check.ts";
import { parseRatePolicy, type RatePolicies, type RatePolicy } from "./limits/rate-limits.ts";
import type { LogLevel } from "./log.ts";
import { REGIONS, isRegionId, type RegionId } from "./regions.ts";

export interface OAuthProviderConfig {
  id: string;
  name: string;
  clientId: string;
  clientSecret: string;
  /** An OpenID Connect provider's issuer: its endpoints and keys are discovered from it. */
  issuer?: string;
  /** A plain OAuth 2.0 provider's endpoints (set when there is no issuer). */
  authorizeUrl?: string;
  tokenUrl?: string;
  userinfoUrl?: string;
  scopes: string;
}

export interface Config {
  host: string;
  port: number;
  /** Base URL clients use to reach this server; upload URLs and printed links are built from it. */
  publicUrl: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  /** A read replica of DATABASE_URL in this region: lookups on the request path read it first. */
  databaseReadUrl: string | undefined;
  typesense: { url: string; apiKey: string } | undefined;
  region: RegionId;
  /** Base URL per region; every region defaults to this server. */
  regionUrls: Partial<Record<RegionId, string>>;
  logLevel: LogLevel;
  maxBodyBytes: number;
  maxUploadBytes: number;
  sessionTtlMs: number;
  /**
   * A parent domain of every region's host (`sift.example` for `london.sift.example`): the session
   * cookie is set for it, so a dashboard session reaches every region's dashboard (D-387).
   */
  sessionCookieDomain: string | undefined;
  /** Origins allowed to send cookie-authenticated writes besides the server's own (and to call /mcp). */
  allowedOrigins: string[];
  /**
   * Host names the server answers to besides the loopback names (when it listens on loopback) and
   * the hosts of SIFT_PUBLIC_URL and the region URLs; `*.example.com` covers subdomains, `*` any.
   */
  allowedHosts: string[];
  /**
   * Hosts whose MCP client metadata documents may be fetched though they resolve to a private or
   * loopback address (an intranet's MCP hosts); every other host's must resolve to a public one.
   */
  oauthClientMetadataPrivateHosts: string[];
  /** Load the bundled demo tenant, service and PUBLIC index on first start. */
  demo: boolean;
  /** Checkpoint automatically once a version's chain of changes is this long. */
  coalesceAfter: number;
  /** Records an index has before its checkpoints are layered (D-351). */
  layeredFrom: number;
  /** Newest versions kept by retention besides the active one and its ancestors. */
  retainVersions: number;
  /** How often retention runs. */
  retentionEveryMs: number;
  signingSecret: string | undefined;
  oauthProviders: OAuthProviderConfig[];
  shutdownGraceMs: number;
  /** The longest a whole request may take (an upload of many GB over a slow link included). */
  requestTimeoutMs: number;
  /** A connection with no bytes either way for this long is closed (a stalled upload included). */
  idleTimeoutMs: number;
  /** Indexes one tenant may have. */
  quotaIndexes: number;
  /** Records one index may hold, in any version. */
  quotaRecordsPerIndex: number;
  /** Bytes of a tenant's uploads stored or arriving and not yet ingested. */
  quotaUploadBytes: number;
  /** Uploads of one tenant started and not finished ingesting. */
  quotaConcurrentUploads: number;
  /** Records (and invalid lines) one upload may hold. */
  maxUploadRecords: number;
  /** Request rate per caller kind (docs/api.md, Rate limits). */
  rateLimits: RatePolicies;
  /** Shared counters for rate limits across processes; in memory when unset. */
  redis: { url: string; prefix: string } | undefined;
  /** Proxies in front of the server whose X-Forwarded-For entries are believed (0: none). */
  trustedProxyHops: number;
  /** Record writes one tenant may have in progress at a time. */
  writesPerTenant: number;
  /** Open connections the server accepts in all, and from one client address. */
  maxConnections: number;
  maxConnectionsPerClient: number;
  /**
   * Replication (docs/replication.md): the NATS JetStream change log every node applies; off
   * (one process is the whole deployment) when SIFT_NATS_URL is unset.
   */
  nats:
    | {
        servers: string[];
        stream: string;
        /** A mirror of the stream, in this node's region, that the node reads the log from. */
        mirror?: string;
        /** A NATS credentials file (a user's JWT and NKey seed) for decentralised authentication (D-371). */
        credsFile?: string;
        /** TLS to the servers: a private CA to trust, and a client certificate for mutual TLS (D-371). */
        tls?: NatsTls;
        /** The mirror stopped behind the stream this long is nudged (D-357). */
        mirrorStalledMs: number;
        replicas: number;
        snapshotEvery: number;
        nodeGoneAfterMs: number;
        /** How often a node checks that the log still holds each index's history (D-369). */
        historyCheckMs: number;
        /** An index's oldest entry no snapshot holds gets one when it is this old (D-375). */
        snapshotAfterMs: number;
        /** An entry that fails this long sets its index aside on the node (D-376). */
        setAsideAfterMs: number;
      }
    | undefined;
  /** This node's name in the change log and in logs. */
  nodeId: string;
  /** Without replication, how long a start waits for another process on the database to stop (D-325). */
  soleProcessWaitSeconds: number;
}

/** PEM files for TLS to the NATS servers (SIFT_NATS_TLS_CA, SIFT_NATS_TLS_CERT, SIFT_NATS_TLS_KEY). */
export interface NatsTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** Record changes of an index between automatic checkpoints, unless SIFT_COALESCE_AFTER says (D-307). */
export const DEFAULT_COALESCE_AFTER = 2000;

/** An index's checkpoints are layered from this many records on, unless SIFT_LAYERED_FROM says (D-351). */
export const DEFAULT_LAYERED_FROM = 50_000;

/** The change log's stream in NATS, unless SIFT_NATS_STREAM names another. */
export const DEFAULT_NATS_STREAM = "SIFT";

/** Default request rates (a second, and the burst over ten seconds) per caller kind. */
export const DEFAULT_RATE_LIMITS: Record<Caller, RatePolicy> = {
  anonymous: { rate: 50, burst: 250 },
  srh: { rate: 50, burst: 250 },
  session: { rate: 50, burst: 250 },
  oauth: { rate: 50, burst: 250 },
  svc: { rate: 500, burst: 2500 },
  pat: { rate: 500, burst: 2500 },
  adm: { rate: 500, burst: 2500 },
};

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.problems = problems;
  }
}

const PRESETS: Record<
  string,
  Pick<OAuthProviderConfig, "name" | "issuer" | "authorizeUrl" | "tokenUrl" | "userinfoUrl" | "scopes">
> = {
  github: {
    name: "GitHub",
    authorizeUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    userinfoUrl: "https://api.github.com/user",
    scopes: "read:user user:email",
  },
  // OpenID Connect: discovery, nonce and ID-token validation (routes/oauth.ts).
  google: {
    name: "Google",
    issuer: "https://accounts.google.com",
    scopes: "openid email profile",
  },
};

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name]?.toLowerCase();
    if (raw === undefined || raw === "") return fallback;
    if (["1", "true", "yes", "on"].includes(raw)) return true;
    if (["0", "false", "no", "off"].includes(raw)) return false;
    problems.push(`${name} must be true or false (got "${env[name]}")`);
    return fallback;
  };
  const url = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === "") return undefined;
    if (!URL.canParse(raw)) {
      problems.push(`${name} must be an absolute URL (got "${raw}")`);
      return undefined;
    }
    return raw.replace(/\/+$/, "");
  };

  const logLevel = (env.SIFT_LOG_LEVEL ?? "info") as LogLevel;
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) {
    problems.push(`SIFT_LOG_LEVEL must be one of debug, info, warn, error, silent (got "${logLevel}")`);
  }

  const region = (env.SIFT_REGION ?? "frankfurt") as RegionId;
  if (!isRegionId(region))
    problems.push(`SIFT_REGION must be one of ${REGIONS.map((r) => r.id).join(", ")} (got "${region}")`);

  const regionUrls: Partial<Record<RegionId, string>> = {};
  for (const r of REGIONS) {
    const value = url(`SIFT_REGION_URL_${r.id.toUpperCase()}`);
    if (value) regionUrls[r.id] = value;
  }

  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push(`DATABASE_URL must be a postgres:// URL (got "${databaseUrl.replace(/:[^:@/]*@/, ":***@")}")`);
  }
  const databaseReadUrl = env.DATABASE_READ_URL || undefined;
  if (databaseReadUrl && !/^postgres(ql)?:\/\//.test(databaseReadUrl)) {
    problems.push(
      `DATABASE_READ_URL must be a postgres:// URL (got "${databaseReadUrl.replace(/:[^:@/]*@/, ":***@")}")`,
    );
  }
  if (databaseReadUrl && !databaseUrl) {
    problems.push("DATABASE_READ_URL names a read replica of DATABASE_URL: set DATABASE_URL too");
  }

  const typesenseUrl = url("TYPESENSE_URL");
  const typesenseKey = env.TYPESENSE_API_KEY;
  if (typesenseUrl && !typesenseKey) problems.push("TYPESENSE_API_KEY is required when TYPESENSE_URL is set");

  const oauthProviders: OAuthProviderConfig[] = [];
  for (const id of (env.SIFT_OAUTH_PROVIDERS ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    const prefix = `SIFT_OAUTH_${id.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_`;
    const preset = PRESETS[id];
    const pick = (key: string, fallback?: string) => env[prefix + key] || fallback;
    const issuer = pick("ISSUER", preset?.issuer);
    const provider = {
      id,
      name: pick("NAME", preset?.name ?? id)!,
      clientId: pick("CLIENT_ID"),
      clientSecret: pick("CLIENT_SECRET"),
      ...(issuer
        ? { issuer: issuer.replace(/\/+$/, "") }
        : {
            authorizeUrl: pick("AUTHORIZE_URL", preset?.authorizeUrl),
            tokenUrl: pick("TOKEN_URL", preset?.tokenUrl),
            userinfoUrl: pick("USERINFO_URL", preset?.userinfoUrl),
          }),
      scopes: pick("SCOPES", preset?.scopes ?? "openid email"),
    };
    // With an issuer everything else is discovered; without one, the three endpoints are needed.
    const required = issuer
      ? (["clientId", "clientSecret"] as const)
      : (["clientId", "clientSecret", "authorizeUrl", "tokenUrl", "userinfoUrl"] as const);
    const missing = required.filter((k) => !provider[k as keyof typeof provider]);
    if (missing.length) {
      problems.push(
        `OAuth provider "${id}" needs ${issuer ? "" : `${prefix}ISSUER (OpenID Connect) or `}${missing.map((k) => prefix + k.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()).join(", ")}`,
      );
      continue;
    }
    oauthProviders.push(provider as OAuthProviderConfig);
  }

  const rateLimits = {} as RatePolicies;
  for (const caller of Object.keys(DEFAULT_RATE_LIMITS) as Caller[]) {
    const name = `SIFT_RATE_LIMIT_${caller.toUpperCase()}`;
    const raw = env[name];
    if (raw === undefined || raw === "") {
      rateLimits[caller] = DEFAULT_RATE_LIMITS[caller];
      continue;
    }
    const parsed = parseRatePolicy(raw);
    if (typeof parsed === "string") problems.push(`${name} ${parsed} (got "${raw}")`);
    rateLimits[caller] = typeof parsed === "string" ? DEFAULT_RATE_LIMITS[caller] : parsed;
  }
  const redisUrl = url("SIFT_REDIS_URL");
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) problems.push(`SIFT_REDIS_URL must be a redis:// URL`);

  const natsServers = (env.SIFT_NATS_URL ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const server of natsServers) {
    if (!/^(nats|tls):\/\/[^/]+$/.test(server))
      problems.push(`SIFT_NATS_URL must list nats://host:port URLs separated by commas (got "${server}")`);
  }
  if (natsServers.length && !databaseUrl) {
    problems.push(
      "SIFT_NATS_URL needs DATABASE_URL: the nodes of every region share one PostgreSQL for accounts, keys and indexes",
    );
  }
  if (natsServers.length && typesenseUrl) {
    problems.push(
      "SIFT_NATS_URL replicates the embedded engine; with TYPESENSE_URL, Typesense replicates itself: set one of them",
    );
  }
  const natsReplicas = int("SIFT_NATS_REPLICAS", natsServers.length > 1 ? 3 : 1, 1, 5);
  const natsMirror = env.SIFT_NATS_MIRROR?.trim() || undefined;
  const natsCreds = env.SIFT_NATS_CREDS?.trim() || undefined;
  const natsTls: NatsTls = {};
  for (const [name, key] of [
    ["SIFT_NATS_TLS_CA", "caFile"],
    ["SIFT_NATS_TLS_CERT", "certFile"],
    ["SIFT_NATS_TLS_KEY", "keyFile"],
  ] as const) {
    const file = env[name]?.trim();
    if (!file) continue;
    if (existsSync(file)) natsTls[key] = resolve(file);
    else problems.push(`${name} must name a PEM file this process can read (got "${file}")`);
  }
  if (Boolean(env.SIFT_NATS_TLS_CERT?.trim()) !== Boolean(env.SIFT_NATS_TLS_KEY?.trim()))
    problems.push("SIFT_NATS_TLS_CERT and SIFT_NATS_TLS_KEY go together: a client certificate and its key");
  if (natsCreds !== undefined && !existsSync(natsCreds))
    problems.push(
      `SIFT_NATS_CREDS must name a NATS credentials file (.creds) this process can read (got "${natsCreds}")`,
    );
  // A stream's name in NATS: no dots, wildcards, spaces or slashes.
  if (natsMirror !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(natsMirror))
    problems.push(`SIFT_NATS_MIRROR must be a stream name of letters, digits, "_" and "-" (got "${natsMirror}")`);

  const config: Config = {
    host: env.HOST || "127.0.0.1",
    port: int("PORT", 7700, 0, 65535),
    publicUrl: url("SIFT_PUBLIC_URL"),
    dataDir: resolve(env.SIFT_DATA_DIR || ".sift"),
    databaseUrl,
    databaseReadUrl,
    typesense: typesenseUrl && typesenseKey ? { url: typesenseUrl, apiKey: typesenseKey } : undefined,
    region,
    regionUrls,
    logLevel,
    maxBodyBytes: int("SIFT_MAX_BODY_BYTES", 1024 * 1024, 1024, 256 * 1024 * 1024),
    maxUploadBytes: int("SIFT_MAX_UPLOAD_BYTES", 20 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
    sessionTtlMs: int("SIFT_SESSION_TTL_HOURS", 14 * 24, 1, 24 * 365) * 3_600_000,
    sessionCookieDomain: env.SIFT_SESSION_COOKIE_DOMAIN?.trim().toLowerCase().replace(/^\./, "") || undefined,
    allowedOrigins: (env.SIFT_ALLOWED_ORIGINS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    allowedHosts: (env.SIFT_ALLOWED_HOSTS ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
    oauthClientMetadataPrivateHosts: (env.SIFT_OAUTH_CLIENT_METADATA_PRIVATE_HOSTS ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
    demo: bool("SIFT_DEMO", true),
    coalesceAfter: int("SIFT_COALESCE_AFTER", DEFAULT_COALESCE_AFTER, 2, 1_000_000),
    layeredFrom: int("SIFT_LAYERED_FROM", DEFAULT_LAYERED_FROM, 1, Number.MAX_SAFE_INTEGER),
    retainVersions: int("SIFT_RETAIN_VERSIONS", 50, 1, 100_000),
    retentionEveryMs: int("SIFT_RETENTION_EVERY_SECONDS", 60, 1, 86_400) * 1000,
    signingSecret: env.SIFT_SIGNING_SECRET || undefined,
    oauthProviders,
    shutdownGraceMs: int("SIFT_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    // Node's default (300 s) cut off uploads slower than that; 12 h carries 20 GiB at 4 Mbit/s.
    requestTimeoutMs: int("SIFT_REQUEST_TIMEOUT_SECONDS", 12 * 3600, 1, 7 * 86_400) * 1000,
    // Longer than any silence of a legitimate request (a checkpoint answers when done).
    idleTimeoutMs: int("SIFT_IDLE_TIMEOUT_SECONDS", 300, 1, 86_400) * 1000,
    quotaIndexes: int("SIFT_QUOTA_INDEXES", 1_000, 1, 1_000_000),
    // As many as one upload may hold: a bulk upload replaces the index.
    quotaRecordsPerIndex: int("SIFT_QUOTA_RECORDS_PER_INDEX", 25_000_000, 1, 1_000_000_000),
    // Two uploads of the largest size at once.
    quotaUploadBytes: int("SIFT_QUOTA_UPLOAD_BYTES", 40 * 1024 ** 3, 1, Number.MAX_SAFE_INTEGER),
    quotaConcurrentUploads: int("SIFT_QUOTA_CONCURRENT_UPLOADS", 10, 1, 10_000),
    // 25M small records build within about 1 GB; a 5 MB gzip once expanded to 119M.
    maxUploadRecords: int("SIFT_MAX_UPLOAD_RECORDS", 25_000_000, 1, 1_000_000_000),
    rateLimits,
    redis: redisUrl ? { url: redisUrl, prefix: env.SIFT_REDIS_PREFIX || "sift" } : undefined,
    trustedProxyHops: int("SIFT_TRUSTED_PROXY_HOPS", 0, 0, 10),
    // More in flight only queues more work ahead of other tenants' searches (D-147).
    writesPerTenant: int("SIFT_WRITES_PER_TENANT", 4, 1, 1_000),
    // Two clients once held 20,000 sockets (the fd limit) and everyone else was reset.
    maxConnections: int("SIFT_MAX_CONNECTIONS", 10_000, 1, 1_000_000),
    maxConnectionsPerClient: int("SIFT_MAX_CONNECTIONS_PER_CLIENT", 256, 1, 1_000_000),
    nats: natsServers.length
      ? {
          servers: natsServers,
          stream: env.SIFT_NATS_STREAM || DEFAULT_NATS_STREAM,
          ...(natsMirror ? { mirror: natsMirror } : {}),
          ...(natsCreds ? { credsFile: resolve(natsCreds) } : {}),
          ...(Object.keys(natsTls).length ? { tls: natsTls } : {}),
          // The mirror stopped behind the stream this long is nudged, then made again (D-357).
          mirrorStalledMs: int("SIFT_NATS_MIRROR_STALLED_MS", 60_000, 1_000, 24 * 3_600_000),
          replicas: natsReplicas,
          // An index's log is snapshotted and truncated after this many entries (docs/replication.md).
          snapshotEvery: int("SIFT_REPLICATION_SNAPSHOT_EVERY", 10_000, 2, 100_000_000),
          // A node that has not reported its position for this long no longer holds truncation back.
          nodeGoneAfterMs: int("SIFT_REPLICATION_NODE_GONE_MS", 15 * 60_000, 500, 7 * 24 * 3_600_000),
          // Each index's history in the log is looked at this often, repaired if lost (D-369).
          historyCheckMs: int("SIFT_REPLICATION_HISTORY_CHECK_MS", 10 * 60_000, 1_000, 7 * 24 * 3_600_000),
          // An index's oldest entry no snapshot holds gets one when it is this old (D-375).
          snapshotAfterMs: int("SIFT_REPLICATION_SNAPSHOT_AFTER_MS", 60 * 60_000, 1_000, 30 * 24 * 3_600_000),
          // An index whose entry fails to apply this long is set aside on the node (D-376).
          setAsideAfterMs: int("SIFT_REPLICATION_SET_ASIDE_AFTER_MS", 2 * 60_000, 1_000, 24 * 3_600_000),
        }
      : undefined,
    nodeId: env.SIFT_NODE_ID || `${region}-${hostname()}-${env.PORT || 7700}`,
    soleProcessWaitSeconds: int("SIFT_SOLE_PROCESS_WAIT_SECONDS", 30, 0, 3_600),
  };
  for (const origin of config.allowedOrigins) {
    if (!URL.canParse(origin))
      problems.push(`SIFT_ALLOWED_ORIGINS entries must be origins like https://app.example (got "${origin}")`);
  }
  for (const host of config.allowedHosts) {
    const name = host.startsWith("*.") ? host.slice(2) : host;
    if (host !== "*" && (hostnameOf(name) === undefined || /:\d*$/.test(name.replace(/^\[.*\]$/, ""))))
      problems.push(
        `SIFT_ALLOWED_HOSTS entries must be host names without a port, like api.example.com or *.example.com (got "${host}")`,
      );
  }
  const cookieDomain = config.sessionCookieDomain;
  if (cookieDomain !== undefined) {
    // A browser refuses a cookie for a top-level domain, and for a domain its host is not under.
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(cookieDomain))
      problems.push(
        `SIFT_SESSION_COOKIE_DOMAIN must be a domain of two labels or more, like sift.example (got "${cookieDomain}")`,
      );
    else
      for (const [name, at] of [
        ["SIFT_PUBLIC_URL", config.publicUrl] as const,
        ...Object.entries(config.regionUrls).map(([id, url]) => [`SIFT_REGION_URL_${id.toUpperCase()}`, url] as const),
      ]) {
        const host = at === undefined ? undefined : new URL(at).hostname;
        if (host !== undefined && !hostIsUnder(host, cookieDomain))
          problems.push(
            `SIFT_SESSION_COOKIE_DOMAIN=${cookieDomain} must be a parent domain of every region's host: ${name} is ${at}`,
          );
      }
  }
  // Off loopback, the Host check needs a name to accept, or every request would be refused (D-260).
  if (!isLoopback(config.host) && !config.publicUrl && config.allowedHosts.length === 0) {
    problems.push(
      `HOST=${config.host} is not a loopback address: set SIFT_PUBLIC_URL (its host is the name clients use) or SIFT_ALLOWED_HOSTS (names, or * for any)`,
    );
  }
  if (problems.length) throw new ConfigError(problems);
  return config;
}
