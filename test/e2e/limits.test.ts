// Rate limits and connection limits (issue 15: one client, or one holder of a public key, must
// not take the service from everyone). Each server here is started with small limits of its own.
import { connect, type Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { expectContract } from "../support/contract.ts";
import { Http, type Reply } from "../support/http.ts";
import { startSift, type RunningSift } from "../support/server.ts";
import { startWorld, type World } from "../support/world.ts";

const statuses = (replies: Reply[]) => replies.map((r) => r.status);
const count = (replies: Reply[], status: number) => replies.filter((r) => r.status === status).length;

describe("request rates", () => {
  let world: World;
  let direct: Http;
  beforeAll(async () => {
    world = await startWorld({
      SIFT_RATE_LIMIT_ANONYMOUS: "3/2",
      SIFT_RATE_LIMIT_SRH: "3/2",
      SIFT_RATE_LIMIT_SVC: "4/0",
      // The tests play several clients from one machine: each names itself in X-Forwarded-For.
      SIFT_TRUSTED_PROXY_HOPS: "1",
    });
    direct = new Http(world.server.url);
  });
  afterAll(() => world?.stop());

  const search = (client: string, key?: string, via = direct) =>
    via.get(`/v1/search?query=ams&indexName=${world.a.publicIndex}&serviceName=${world.a.service}`, {
      ...(key ? { key } : {}),
      headers: { "x-forwarded-for": client },
    });
  /** Sent together, so that they fall into one second (or at worst two). */
  const burst = (n: number, send: () => Promise<Reply>) => Promise.all(Array.from({ length: n }, send));

  test("an address's anonymous searches past rate and burst are 429 RATE_LIMITED, with RateLimit fields", async () => {
    const replies = await burst(12, () => search("203.0.113.1"));
    // 3 a second and 2 more from the burst allowance; a second boundary inside the batch adds 3.
    expect(count(replies, 200), String(statuses(replies))).toBeGreaterThanOrEqual(5);
    expect(count(replies, 200), String(statuses(replies))).toBeLessThanOrEqual(8);
    const allowed = replies.find((r) => r.status === 200)!;
    expect(allowed.headers.get("ratelimit-policy")).toBe('"anonymous";q=3;w=1, "anonymous-burst";q=2;w=10');
    expect(allowed.headers.get("ratelimit")).toMatch(/^"anonymous(-burst)?";r=\d+;t=\d+$/);
    // Browsers on other sites may read them.
    expect(allowed.headers.get("access-control-expose-headers")).toContain("ratelimit");
    const refused = replies.find((r) => r.status === 429)!;
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    expect(refused.body).toMatchObject({ status: 429, resultCode: "RATE_LIMITED" });
    expect(refused.body.detail).toMatch(/at most 3 a second/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("ratelimit")).toMatch(/^"anonymous-burst";r=0;t=\d+$/);
    // Once the second is over, the address may search again (the burst allowance stays spent).
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await search("203.0.113.1")).status).toBe(200);
  });

  test("a limited address does not limit another, and the 429 keeps the contract", async () => {
    await burst(12, () => search("203.0.113.2"));
    const through = await search("203.0.113.2", undefined, world.http);
    expect(through.status).toBe(429);
    expectContract(through);
    expect((await search("203.0.113.3")).status).toBe(200);
  });

  test("a public srh key is limited per visitor, so one visitor cannot spend a site's searches", async () => {
    await burst(12, () => search("198.51.100.1", world.a.keys.srh));
    expect((await search("198.51.100.1", world.a.keys.srh)).status).toBe(429);
    expect((await search("198.51.100.2", world.a.keys.srh)).status).toBe(200);
  });

  test("a secret key is limited as a whole, whatever the address, and other keys are not", async () => {
    const read = (key: string, client: string) =>
      direct.get(`/v1/indexes/${world.a.privateIndex}/records/r1`, { key, headers: { "x-forwarded-for": client } });
    let n = 0;
    const replies = await burst(10, () => read(world.a.keys.svc, `192.0.2.${++n}`));
    // 4 a second, no burst allowance.
    expect(count(replies, 200), String(statuses(replies))).toBeGreaterThanOrEqual(4);
    expect(count(replies, 200), String(statuses(replies))).toBeLessThanOrEqual(8);
    expect(count(replies, 429)).toBeGreaterThan(0);
    expect(replies.find((r) => r.status === 200)!.headers.get("ratelimit-policy")).toBe('"svc";q=4;w=1');
    // Tenant b's svc key, and tenant a's adm key (not limited on this server), are unaffected.
    expect((await read(world.b.keys.svc, "192.0.2.1")).status).toBe(404);
    expect((await read(world.a.keys.adm, "192.0.2.1")).status).toBe(200);
  });
});

describe("rate limits shared through Redis", () => {
  const servers: RunningSift[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.stop())));

  async function pair(env: Record<string, string>): Promise<[Http, Http]> {
    const a = await startSift({ SIFT_RATE_LIMIT_ANONYMOUS: "4/0", ...env });
    const b = await startSift({ SIFT_RATE_LIMIT_ANONYMOUS: "4/0", ...env });
    servers.push(a, b);
    return [new Http(a.url), new Http(b.url)];
  }
  // Anonymous requests of one address to two processes: ten, alternating.
  const alternate = ([a, b]: [Http, Http]) =>
    Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).get("/v1/regions")));

  test("two processes on one Redis share an address's bucket; two without it each keep their own", async () => {
    const shared = await alternate(
      await pair({ SIFT_REDIS_URL: "redis://127.0.0.1:6379", SIFT_REDIS_PREFIX: randomUUID() }),
    );
    // 4 a second between both (8 if a second ends inside the batch).
    expect(count(shared, 200), String(statuses(shared))).toBeLessThanOrEqual(8);
    expect(count(shared, 429)).toBeGreaterThanOrEqual(2);
    const separate = await alternate(await pair({}));
    // 4 a second in each process: at least 8 of the 10 pass.
    expect(count(separate, 200), String(statuses(separate))).toBeGreaterThanOrEqual(8);
  });
});

describe("open connections", () => {
  let server: RunningSift;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    server = await startSift({ SIFT_MAX_CONNECTIONS_PER_CLIENT: "3", SIFT_MAX_CONNECTIONS: "5" });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await server?.stop();
  });

  const port = () => Number(new URL(server.url).port);
  /** An open socket, connected from `localAddress` (any 127.x address reaches the server). */
  const open = (localAddress: string) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port: port(), localAddress }, () => resolve(socket));
      socket.on("error", reject);
      sockets.push(socket);
    });
  /** What the server answers a request sent on a new socket from `localAddress`. */
  const ask = (localAddress: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port: port(), localAddress }, () =>
        socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
      );
      let text = "";
      socket.on("data", (d) => (text += d));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });

  test("an address past its limit is answered 429 problem+json; others are served", async () => {
    const held = [await open("127.0.0.2"), await open("127.0.0.2"), await open("127.0.0.2")];
    const refused = await ask("127.0.0.2");
    expect(refused).toMatch(/^HTTP\/1.1 429 /);
    expect(refused).toContain("content-type: application/problem+json");
    expect(JSON.parse(refused.slice(refused.indexOf("\r\n\r\n") + 4))).toMatchObject({
      status: 429,
      resultCode: "RATE_LIMITED",
      detail: expect.stringMatching(/limit of 3 open connections/),
    });
    expect(await ask("127.0.0.3")).toMatch(/^HTTP\/1.1 200 /);
    // Closing one makes room again.
    held[0]!.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect(await ask("127.0.0.2")).toMatch(/^HTTP\/1.1 200 /);
  });

  test("past the server-wide limit every new connection is 503", async () => {
    // 2 still held from 127.0.0.2; 3 more from other addresses reach the limit of 5.
    await Promise.all([open("127.0.0.4"), open("127.0.0.5"), open("127.0.0.6")]);
    const refused = await ask("127.0.0.7");
    expect(refused).toMatch(/^HTTP\/1.1 503 /);
    expect(refused).toMatch(/limit of 5 connections/);
  });
});
