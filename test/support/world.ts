// A populated Sift reached through the Prism proxy: two tenants, each with a session, one key of
// every type, a service, a PUBLIC and a PRIVATE index holding a record. Shared by e2e suites.
import { Http } from "./http.ts";
import { startPrismProxy, type Prism } from "./prism.ts";
import { startSift, type RunningSift } from "./server.ts";
import type { components } from "@sift/contract";

export type KeyType = components["schemas"]["ApiKeyType"];

export interface Tenant {
  /** The signed-up user's e-mail; the password is PASSWORD. */
  email: string;
  session: Http;
  keys: Record<KeyType, string>;
  service: string;
  publicIndex: string;
  privateIndex: string;
}

export interface World {
  server: RunningSift;
  prism: Prism;
  /** Through the contract-validating proxy. */
  http: Http;
  a: Tenant;
  b: Tenant;
  stop(): Promise<void>;
}

let counter = 0;
export const PASSWORD = "correct horse battery staple";

export async function signUp(http: Http, email: string): Promise<Http> {
  const session = http.fresh();
  const reply = await session.post("/v1/auth/signup", { email, password: PASSWORD });
  if (reply.status !== 201) throw new Error(`signup failed: ${reply.status} ${reply.text}`);
  return session;
}

export async function createKey(session: Http, type: KeyType, name: string = type): Promise<string> {
  const reply = await session.post("/v1/api-keys", { type, name });
  if (reply.status !== 200) throw new Error(`key creation failed: ${reply.status} ${reply.text}`);
  return reply.body.key;
}

async function tenant(http: Http, label: string): Promise<Tenant> {
  const n = ++counter;
  const email = `${label}${n}@${label}.example`;
  const session = await signUp(http, email);
  const keys = {} as Record<KeyType, string>;
  for (const type of ["pat", "svc", "adm", "srh"] as const) keys[type] = await createKey(session, type);
  const service = `${label}-svc-${n}-${process.pid}`;
  const must = async (p: Promise<{ status: number; text: string }>, ok: number) => {
    const r = await p;
    if (r.status !== ok) throw new Error(`setup failed: ${r.status} ${r.text}`);
  };
  await must(session.post("/v1/services", { name: service }), 201);
  const publicIndex = `${label}-public`;
  const privateIndex = `${label}-private`;
  await must(session.post("/v1/indexes", { name: publicIndex, serviceName: service, visibility: "PUBLIC" }), 201);
  await must(session.post("/v1/indexes", { name: privateIndex, serviceName: service, visibility: "PRIVATE" }), 201);
  for (const index of [publicIndex, privateIndex]) {
    await must(session.put(`/v1/indexes/${index}/records/r1`, { title: "Amsterdam", weight: 5 }), 200);
  }
  return { email, session, keys, service, publicIndex, privateIndex };
}

export async function startWorld(env: Record<string, string> = {}): Promise<World> {
  const server = await startSift(env);
  const prism = await startPrismProxy(server.url);
  const http = new Http(prism.url, server.url);
  const a = await tenant(http, "alpha");
  const b = await tenant(http, "beta");
  return {
    server,
    prism,
    http,
    a,
    b,
    async stop() {
      await prism.stop();
      await server.stop();
    },
  };
}
