// The authority table of docs/authority.md, walked cell by cell over HTTP through the contract-validating
// proxy. The expected table is written out here from docs/authority.md, independently of the server's.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { expectContract } from "../support/contract.ts";
import type { Http, Reply } from "../support/http.ts";
import { startWorld, type Tenant, type World } from "../support/world.ts";

type Caller = "anonymous" | "srh" | "svc" | "pat" | "adm" | "session";
type Column = "searchPublic" | "searchPrivate" | "recordsRead" | "write" | "catalog" | "apiKeys" | "mcp";
type Cell = "yes" | "own" | "publicOnly" | "readOnly" | 401;

// | caller | search PUBLIC | search PRIVATE | records read | writes | services/indexes | api-keys | /mcp |
const TABLE: Record<Caller, Record<Column, Cell>> = {
  anonymous: {
    searchPublic: "yes",
    searchPrivate: 401,
    recordsRead: 401,
    write: 401,
    catalog: 401,
    apiKeys: 401,
    mcp: 401,
  },
  srh: {
    searchPublic: "yes",
    searchPrivate: 401,
    recordsRead: "publicOnly",
    write: 401,
    catalog: 401,
    apiKeys: 401,
    mcp: "publicOnly",
  },
  svc: {
    searchPublic: "own",
    searchPrivate: "own",
    recordsRead: "yes",
    write: "yes",
    catalog: "readOnly",
    apiKeys: 401,
    mcp: "yes",
  },
  pat: {
    searchPublic: "own",
    searchPrivate: "own",
    recordsRead: "yes",
    write: "yes",
    catalog: "yes",
    apiKeys: 401,
    mcp: "yes",
  },
  adm: {
    searchPublic: "own",
    searchPrivate: "own",
    recordsRead: "yes",
    write: "yes",
    catalog: "yes",
    apiKeys: 401,
    mcp: "yes",
  },
  session: {
    searchPublic: "own",
    searchPrivate: "own",
    recordsRead: "yes",
    write: "yes",
    catalog: "yes",
    apiKeys: "yes",
    mcp: 401,
  },
};

let world: World;
beforeAll(async () => {
  world = await startWorld();
});
afterAll(() => world?.stop());

/** Sends a request as `caller` of tenant `t`: a key, the session, or nothing. */
function as(caller: Caller, t: Tenant) {
  const http: Http = caller === "session" ? t.session : world.http.fresh();
  const key = caller === "anonymous" || caller === "session" ? undefined : t.keys[caller];
  const send = async (method: string, path: string, json?: unknown): Promise<Reply> => {
    const reply = await http.request(method, path, {
      ...(key ? { key } : {}),
      ...(json !== undefined ? { json } : {}),
    });
    expectContract(reply, `${method} ${path} broke the contract`);
    return reply;
  };
  return send;
}

const search = (t: Tenant, index: string) => `/v1/search?query=ams&serviceName=${t.service}&indexName=${index}`;
const mcpCall = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search", arguments: {} } };
const mcpSearch = (indexName: string) => ({
  ...mcpCall,
  params: { name: "search", arguments: { indexName, phrase: "ams" } },
});

describe.each(Object.keys(TABLE) as Caller[])("as %s", (caller) => {
  const row = TABLE[caller];

  test(`search PUBLIC: ${row.searchPublic}`, async () => {
    const own = await as(caller, world.a)("GET", search(world.a, world.a.publicIndex));
    const other = await as(caller, world.a)("GET", search(world.b, world.b.publicIndex));
    expect(own.status).toBe(200);
    expect(own.body.suggestions.map((s: { id: string }) => s.id)).toEqual(["r1"]);
    expect(other.status).toBe(row.searchPublic === "yes" ? 200 : 404);
  });

  test(`search PRIVATE: ${row.searchPrivate}`, async () => {
    const own = await as(caller, world.a)("GET", search(world.a, world.a.privateIndex));
    const other = await as(caller, world.a)("GET", search(world.b, world.b.privateIndex));
    const missing = await as(caller, world.a)("GET", search(world.a, "no-such-index"));
    if (row.searchPrivate === 401) {
      expect([own.status, other.status, missing.status]).toEqual([401, 401, 401]);
    } else {
      expect(own.status).toBe(200);
      // Another tenant's index answers exactly as a missing one.
      expect(other.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(other.body.detail.replace(world.b.service, "S").replace(world.b.privateIndex, "I")).toBe(
        missing.body.detail.replace(world.a.service, "S").replace("no-such-index", "I"),
      );
    }
  });

  test(`multi-search: each search as GET /v1/search (PUBLIC ${row.searchPublic}, PRIVATE ${row.searchPrivate})`, async () => {
    const one = (t: Tenant, indexName: string) => ({ query: "ams", serviceName: t.service, indexName });
    const reply = await as(caller, world.a)("POST", "/v1/search/multi", {
      searches: [
        one(world.a, world.a.publicIndex),
        one(world.b, world.b.publicIndex),
        one(world.a, world.a.privateIndex),
        one(world.b, world.b.privateIndex),
        one(world.a, "no-such-index"),
      ],
    });
    // The request itself is always allowed: each search answers its own status.
    expect(reply.status).toBe(200);
    const statuses = reply.body.results.map((r: { status?: number; suggestions?: unknown }) =>
      r.suggestions ? 200 : r.status,
    );
    const publicOther = row.searchPublic === "yes" ? 200 : 404;
    const expected = row.searchPrivate === 401 ? [200, publicOther, 401, 401, 401] : [200, publicOther, 200, 404, 404];
    expect(statuses).toEqual(expected);
    expect(reply.body.results[0].suggestions.map((s: { id: string }) => s.id)).toEqual(["r1"]);
  });

  test(`records read: ${row.recordsRead}`, async () => {
    const send = as(caller, world.a);
    const pub = await send("GET", `/v1/indexes/${world.a.publicIndex}/records/r1`);
    const priv = await send("GET", `/v1/indexes/${world.a.privateIndex}/records/r1`);
    const other = await send("GET", `/v1/indexes/${world.b.privateIndex}/records/r1`);
    if (row.recordsRead === 401) {
      expect([pub.status, priv.status]).toEqual([401, 401]);
    } else if (row.recordsRead === "publicOnly") {
      expect([pub.status, priv.status, other.status]).toEqual([200, 401, 404]);
      expect(pub.body.title).toBe("Amsterdam");
    } else {
      expect([pub.status, priv.status, other.status]).toEqual([200, 200, 404]);
    }
  });

  test(`record writes, uploads, coalesce, activate, versions and their changes: ${row.write}`, async () => {
    const send = as(caller, world.a);
    const put = await send("PUT", `/v1/indexes/${world.a.privateIndex}/records/w-${caller}`, {
      title: `written by ${caller}`,
    });
    const upload = await send("POST", "/v1/uploads/start", { indexName: world.a.privateIndex });
    const coalesce = await send("POST", `/v1/indexes/${world.a.privateIndex}/coalesce`);
    // Re-activating the live version exercises the authority without hiding records from later rows.
    const live = (await world.a.session.get(`/v1/indexes/${world.a.privateIndex}`)).body.activeVersion;
    const activate = await send("POST", `/v1/indexes/${world.a.privateIndex}/versions/${live}/activate`);
    const list = await send("GET", `/v1/indexes/${world.a.privateIndex}/versions`);
    const changes = await send("GET", `/v1/indexes/${world.a.privateIndex}/versions/${live}/changes`);
    const otherPut = await send("PUT", `/v1/indexes/${world.b.privateIndex}/records/x`, { title: "nope" });
    const otherChanges = await send("GET", `/v1/indexes/${world.b.privateIndex}/versions/0.1/changes`);
    const statuses = [put, upload, coalesce, activate, list, changes].map((r) => r.status);
    if (row.write === 401) {
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    } else {
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
      expect(put.body).toMatchObject({ resultCode: "SUCCESS", message: "OK" });
      expect(changes.body.version).toBe(live);
      expect(otherPut.status).toBe(404);
      expect(otherChanges.status).toBe(404);
    }
  });

  test(`services and indexes: ${row.catalog}`, async () => {
    const send = as(caller, world.a);
    const list = await send("GET", "/v1/indexes");
    const create = await send("POST", "/v1/services", { name: `made-by-${caller}-${process.pid}` });
    if (row.catalog === 401) {
      expect([list.status, create.status]).toEqual([401, 401]);
      return;
    }
    expect(list.status).toBe(200);
    expect(list.body.indexes.map((i: { name: string }) => i.name).sort()).toEqual(
      [world.a.privateIndex, world.a.publicIndex].sort(),
    );
    expect(create.status).toBe(row.catalog === "readOnly" ? 403 : 201);
  });

  test(`api-keys: ${row.apiKeys}`, async () => {
    const reply = await as(caller, world.a)("GET", "/v1/api-keys");
    expect(reply.status).toBe(row.apiKeys === 401 ? 401 : 200);
  });

  test(`/mcp: ${row.mcp}`, async () => {
    const send = as(caller, world.a);
    const pub = await send("POST", "/mcp", mcpSearch(world.a.publicIndex));
    const priv = await send("POST", "/mcp", mcpSearch(world.a.privateIndex));
    if (row.mcp === 401) {
      expect([pub.status, priv.status]).toEqual([401, 401]);
      return;
    }
    expect(pub.status).toBe(200);
    expect(pub.body.result.isError).toBe(false);
    expect(priv.status).toBe(200);
    expect(priv.body.result.isError).toBe(row.mcp === "publicOnly");
  });
});

test("a revoked key gets 401 on every endpoint, public search included", async () => {
  const key = world.a.keys.adm;
  const list = await world.a.session.get("/v1/api-keys");
  const id = list.body.find((k: { displayPrefix: string }) => key.startsWith(k.displayPrefix)).id;
  expect((await world.a.session.delete(`/v1/api-keys/${id}`)).status).toBe(200);
  const send = as("adm", world.a);
  const replies = await Promise.all([
    send("GET", search(world.a, world.a.publicIndex)),
    send("GET", `/v1/indexes/${world.a.privateIndex}/records/r1`),
    send("GET", "/v1/indexes"),
    send("POST", "/mcp", mcpSearch(world.a.publicIndex)),
    send("POST", "/v1/search/multi", {
      searches: [{ query: "ams", serviceName: world.a.service, indexName: world.a.publicIndex }],
    }),
  ]);
  expect(replies.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
  expect(replies[0]!.body.detail).toBe("the API key has been revoked");
});
