// The tenant the fuzzer attacks, set up over HTTP like a customer would: so that generated names
// hit real indexes, records, versions, keys and uploads, and requests reach deep code paths.
// Requests the fuzzer sends may delete or revoke parts of it; `repair` puts them back.
import { RATE_LIMITS_OFF } from "../support/limits.ts";
import { sendJson, sender } from "./send.ts";

export type KeyRole = "srh" | "svc" | "pat" | "adm" | "b-adm";

/** Environment for the server under fuzzing: an OAuth provider (that cannot be reached) and room for indexes. */
export const FUZZ_SERVER_ENV: Record<string, string> = {
  SIFT_OAUTH_PROVIDERS: "github",
  SIFT_OAUTH_GITHUB_CLIENT_ID: "fuzz-client",
  SIFT_OAUTH_GITHUB_CLIENT_SECRET: "fuzz-secret",
  SIFT_OAUTH_GITHUB_TOKEN_URL: "http://127.0.0.1:9/token",
  SIFT_OAUTH_GITHUB_USERINFO_URL: "http://127.0.0.1:9/user",
  // Valid index creations succeed now and then; 100,000 requests must not run into the quota.
  SIFT_QUOTA_INDEXES: "1000000",
  // Every repair starts an upload; uploads left unfinished would soon meet the quota.
  SIFT_QUOTA_CONCURRENT_UPLOADS: "10000",
  // Hundreds of requests a second from one address would mostly be 429s and reach nothing deeper
  // (the limits have tests of their own, test/e2e/limits.test.ts).
  ...RATE_LIMITS_OFF,
};

const PASSWORD = "correct horse battery staple";

/** Names the generators may use: they exist on the server (or are meant not to). */
export interface Targets {
  indexNames: string[];
  serviceNames: string[];
  recordIds: string[];
  versions: string[];
  emails: string[];
  passwords: string[];
  providers: string[];
}

// Fixed names: each run starts a fresh server, and a seed then reproduces the same requests.
const NAMES = {
  emailA: "owner@alpha.example",
  emailB: "owner@beta.example",
  // An account whose password the fuzzer guesses (and gets throttled on); never used to sign in.
  emailC: "target@gamma.example",
  serviceA: "fuzz-alpha",
  serviceB: "fuzz-beta",
  indexA: { pub: "pub", priv: "priv" },
  indexB: "b-index",
} as const;

export const TARGETS: Targets = {
  indexNames: [NAMES.indexA.pub, NAMES.indexA.priv, NAMES.indexB, "missing-index"],
  serviceNames: [NAMES.serviceA, NAMES.serviceB, "missing-service"],
  recordIds: ["r1", "r2", "r3", "missing"],
  versions: ["1", "1.1", "1.2", "1.3", "2", "0", "999999999.999999999"],
  emails: [NAMES.emailC, NAMES.emailB.toUpperCase(), "nobody@nowhere.example"],
  passwords: [PASSWORD, "wrong password!"],
  providers: ["github", "google", "GitHub"],
};

const RECORDS = [
  { title: "Amsterdam", weight: 5, latitude: "52.37", longitude: "4.89", data: { price: 10, inStock: true } },
  { title: "Amstelveen", weight: 2, data: { price: 30, inStock: false, country: "NL" } },
  { title: "Zürich ünïcode", images: ["https://img.example/z.png"], data: { tags: ["a", "b"] } },
];

export interface FuzzWorld {
  /** Replaces ⟦…⟧ tokens (keys, the session, upload URL parts) with their current values. */
  resolve(text: string): string;
  authorization(role: KeyRole): string;
  cookie(): string;
  /**
   * Puts back what a successful request of `route` may have deleted or revoked; resolves with the
   * failure when the server answered one of its requests with a 5xx.
   */
  repair(route: string, credential: string): Promise<string | undefined>;
  close(): void;
}

export async function setUpWorld(baseUrl: string): Promise<FuzzWorld> {
  // The fuzzer's own sign-ins come from another loopback address than its attacks, so that the
  // login throttle's per-address count of wrong passwords never locks the fuzzer out.
  const http = sender(baseUrl, { localAddress: "127.0.0.2" });
  const must = async (what: string, p: Promise<{ status: number; body: unknown }>, ...ok: number[]) => {
    const r = await p;
    if (!ok.includes(r.status)) throw new Error(`fuzz setup: ${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as any;
  };

  const signUp = async (email: string) => {
    const r = await sendJson(http, "POST", "/v1/auth/signup", { email, password: PASSWORD });
    if (r.status !== 201) throw new Error(`fuzz setup: sign-up ${email}: ${r.status} ${JSON.stringify(r.body)}`);
    return sessionCookie(r.headers["set-cookie"]);
  };
  const logIn = async (email: string) => {
    const r = await sendJson(http, "POST", "/v1/auth/login", { email, password: PASSWORD });
    if (r.status !== 200) throw new Error(`fuzz setup: log-in ${email}: ${r.status} ${JSON.stringify(r.body)}`);
    return sessionCookie(r.headers["set-cookie"]);
  };

  const { emailA, emailB, emailC, serviceA, serviceB, indexA, indexB } = NAMES;
  let cookieA = await signUp(emailA);
  const cookieB = await signUp(emailB);
  await signUp(emailC);

  const createKey = async (cookie: string, type: string) =>
    must(`key ${type}`, sendJson(http, "POST", "/v1/api-keys", { type, name: `fuzz ${type}` }, { cookie }), 200);
  const keys: Record<KeyRole, string> = {} as Record<KeyRole, string>;
  for (const type of ["srh", "svc", "pat", "adm"] as const) keys[type] = (await createKey(cookieA, type)).key;
  keys["b-adm"] = (await createKey(cookieB, "adm")).key;
  let victim = await createKey(cookieA, "svc");

  const adm = { authorization: `Bearer ${keys.adm}` };

  const ensureService = async () =>
    must("service", sendJson(http, "POST", "/v1/services", { name: serviceA }, adm), 201, 409);
  const ensureIndex = async (name: string, visibility: "PUBLIC" | "PRIVATE") => {
    // Other requests in flight may delete it again meanwhile: try a few times.
    for (let attempt = 0; attempt < 5; attempt++) {
      await ensureService();
      const created = await sendJson(http, "POST", "/v1/indexes", { name, serviceName: serviceA, visibility }, adm);
      if (created.status === 409) {
        // It exists: put back the visibility a PATCH may have changed.
        const patched = await sendJson(http, "PATCH", `/v1/indexes/${name}`, { visibility }, adm);
        if (patched.status === 200) return;
        continue;
      }
      if (created.status !== 201) throw new Error(`fuzz setup: index ${name}: ${created.status}`);
      for (const [i, record] of RECORDS.entries())
        await must("record", sendJson(http, "PUT", `/v1/indexes/${name}/records/r${i + 1}`, record, adm), 200, 404);
      return;
    }
  };
  await ensureIndex(indexA.pub, "PUBLIC");
  await ensureIndex(indexA.priv, "PRIVATE");
  await must("service B", sendJson(http, "POST", "/v1/services", { name: serviceB }, { cookie: cookieB }), 201);
  await must(
    "index B",
    sendJson(
      http,
      "POST",
      "/v1/indexes",
      { name: indexB, serviceName: serviceB, visibility: "PUBLIC" },
      { cookie: cookieB },
    ),
    201,
  );

  // A started upload: its signed URL is what forged signatures are made from.
  let upload = { id: "", expires: "", signature: "", version: "", startedAt: 0 };
  const startUpload = async () => {
    const started = await must(
      "upload",
      sendJson(http, "POST", "/v1/uploads/start", { indexName: indexA.priv }, adm),
      200,
    );
    const url = new URL(started.uploadUrl);
    upload = {
      id: url.pathname.split("/").pop()!,
      expires: url.searchParams.get("expires")!,
      signature: url.searchParams.get("signature")!,
      version: started.indexVersion,
      startedAt: Date.now(),
    };
  };
  await startUpload();

  const tokens = (): Record<string, string> => ({
    victimKeyId: victim.id,
    uploadId: upload.id,
    uploadExpires: upload.expires,
    uploadSignature: upload.signature,
    uploadVersion: upload.version,
  });

  let repairs: Promise<void> = Promise.resolve();
  return {
    resolve(text) {
      if (!text.includes("⟦")) return text;
      const values = tokens();
      return text.replace(/⟦(\w+)⟧/g, (whole, name: string) => values[name] ?? whole);
    },
    authorization: (role) => `Bearer ${keys[role]}`,
    cookie: () => cookieA,
    repair(route, credential) {
      // One repair at a time; a failed one is reported and the next request tries again. A 5xx
      // answered to a repair's request is the server's fault like any other (such 500s, found
      // only in this warning, hid races of a deletion with other requests until 2026-12-02).
      let fault: string | undefined;
      repairs = repairs
        .then(() => repairNow(route, credential))
        .catch((error: Error) => {
          console.warn(`fuzz: putting the tenant back after ${route} failed: ${error.message}`);
          if (/: 5\d\d /.test(error.message)) fault = error.message;
        });
      return repairs.then(() => fault);
    },
    close: () => http.close(),
  };

  async function repairNow(route: string, credential: string): Promise<void> {
    switch (route) {
      case "Auth_logout":
        if (credential.startsWith("session")) cookieA = await logIn(emailA);
        break;
      case "ApiKeys_revoke":
        // A logout in flight may have ended the session this uses before its own repair ran.
        victim = await createKey(cookieA, "svc").catch(async (error: Error) => {
          if (!/: 401 /.test(error.message)) throw error;
          cookieA = await logIn(emailA);
          return createKey(cookieA, "svc");
        });
        break;
      case "Indexes_delete":
      case "Services_delete":
      case "Indexes_update":
        await ensureIndex(indexA.pub, "PUBLIC");
        await ensureIndex(indexA.priv, "PRIVATE");
        break;
      case "Uploads_putBlob":
      case "Uploads_complete":
        // An index deletion in flight may have taken the upload's index before its own repair ran.
        await startUpload().catch(async (error: Error) => {
          if (!/: (400 .*does not exist|404 )/.test(error.message)) throw error;
          await ensureIndex(indexA.priv, "PRIVATE");
          await startUpload();
        });
        break;
    }
    // Upload URLs expire after 15 minutes; a long run keeps one that is valid.
    if (Date.now() - upload.startedAt > 10 * 60_000) await startUpload();
  }
}

function sessionCookie(header: string | string[] | undefined): string {
  for (const line of [header ?? []].flat()) {
    const m = /^sift_session=([^;]+)/.exec(line);
    if (m) return `sift_session=${m[1]!}`;
  }
  throw new Error("fuzz setup: no session cookie was set");
}
