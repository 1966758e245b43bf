// Requests for every operation of the contract (generated/openapi.json) and for the routes outside
// it, as fast-check arbitraries: path parameters valid, real and hostile (percent-encoded in every
// way, malformed too), query parameters of the wrong type, repeated or missing, bodies shaped by the
// schema and then mutated, every credential, and a few headers that change code paths.
import fc from "fast-check";
import { anyJson, hostileString, type Json, mutatedBody, resolver, type Schema, valueFor } from "./schema.ts";
import type { KeyRole, Targets } from "./world.ts";

export type Credential = "none" | "garbage" | KeyRole | "session" | "session+adm" | "garbage-cookie";

export interface FuzzRequest {
  /** The contract's operationId, or a name for a route outside the contract. */
  route: string;
  method: string;
  /** Percent-encoded path; may hold ⟦tokens⟧ the world resolves when sending. */
  path: string;
  /** Raw query string without "?"; may be empty. */
  query: string;
  credential: Credential;
  /** The Authorization or Cookie value of a garbage credential. */
  garbage?: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Route {
  name: string;
  /** The contract operation, when the route is one. */
  operation?: { path: string; method: string; spec: Schema };
  arbitrary: fc.Arbitrary<FuzzRequest>;
}

// ---------------------------------------------------------------------------------------------
// Percent-encoding, including what no correct client sends.

const UNRESERVED = /^[A-Za-z0-9\-_.~]$/;
const LOOSE = /^[A-Za-z0-9\-_.~/:@!$&'()*+,;=]$/;

function utf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 63)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
}

/**
 * Percent-encodes `s` as UTF-8, a lone surrogate as the three bytes it would take (WTF-8), which
 * no valid UTF-8 decoder accepts: encodeURIComponent would throw on it instead.
 */
export function percentEncode(s: string, keep: RegExp = UNRESERVED): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80 && keep.test(s[i]!)) {
      out += s[i];
      continue;
    }
    let cp = c;
    const next = s.charCodeAt(i + 1);
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      cp = ((c - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
      i++;
    }
    for (const b of utf8(cp)) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

const MALFORMED = ["%", "%z", "%zz", "%E2%82", "%C0%AF", "%FF", "%ED%A0%80", "%00", "%2F..%2F"];

/** One string as it may appear in a URL: encoded properly, loosely, twice, or broken. */
const encoded = (value: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: value.map((v) => percentEncode(v)), weight: 12 },
    { arbitrary: value.map((v) => percentEncode(v, LOOSE)), weight: 1 },
    { arbitrary: value.map((v) => percentEncode(percentEncode(v))), weight: 1 },
    {
      arbitrary: fc.tuple(value, fc.constantFrom(...MALFORMED)).map(([v, bad]) => percentEncode(v) + bad),
      weight: 1,
    },
  );

/** Known values are mostly sent as they are; ⟦tokens⟧ must stay unencoded for the world to find them. */
const asIs = (values: string[]) => fc.constantFrom(...values).map((v) => (v.startsWith("⟦") ? v : percentEncode(v)));

// ---------------------------------------------------------------------------------------------

const WRONG_SCALARS = [
  "abc",
  "1e309",
  "-1",
  "99999999999999999999",
  "",
  "true",
  "0x10",
  " 5 ",
  "1.5",
  "-0",
  "Infinity",
  "NaN",
  "[]",
  "{}",
  "2147483648",
  "1,2",
];

const printable = (max: number) => fc.stringMatching(new RegExp(`^[!-~]{0,${max}}$`));

const credential = (): fc.Arbitrary<Pick<FuzzRequest, "credential" | "garbage">> =>
  fc.oneof(
    { arbitrary: fc.constant({ credential: "none" as const }), weight: 3 },
    {
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            "Bearer",
            "Bearer ",
            "Basic dXNlcjpwYXNz",
            "Bearer a b",
            "bearer   sk-sift-adm-",
            "Bearer sk-sift-adm-0000000000000000000000000000000000000000",
            "Bearer pk-sift-srh-0000000000000000000000000000000000000000",
            "Bearer sk-sift-xyz-0000000000000000000000000000000000000000",
            `Bearer sk-sift-svc-${"9".repeat(4000)}`,
          ),
          printable(60),
          printable(60).map((t) => `Bearer ${t}`),
        )
        .map((garbage) => ({ credential: "garbage" as const, garbage })),
      weight: 2,
    },
    {
      arbitrary: fc
        .oneof(
          fc.constantFrom("sift_session=", "sift_session=a; sift_session=b", "sift_session=%ZZ", 'sift_session=""'),
          printable(60).map((t) => `sift_session=${t.replace(/[;,]/g, "")}`),
        )
        .map((garbage) => ({ credential: "garbage-cookie" as const, garbage })),
      weight: 1,
    },
    ...(["srh", "svc", "pat", "adm", "b-adm"] as const).map((role) => ({
      arbitrary: fc.constant({ credential: role }),
      weight: role === "adm" ? 3 : 2,
    })),
    { arbitrary: fc.constant({ credential: "session" as const }), weight: 4 },
    { arbitrary: fc.constant({ credential: "session+adm" as const }), weight: 1 },
  );

/** Mostly none; now and then one header that takes another code path (or breaks the request line). */
const extraHeaders = (): fc.Arbitrary<Record<string, string>> => {
  const one = (name: string, ...values: string[]) => fc.constantFrom(...values).map((v) => ({ [name]: v }));
  return fc.oneof(
    { arbitrary: fc.constant({}), weight: 30 },
    { arbitrary: one("origin", "https://evil.example", "null", "http://127.0.0.1"), weight: 2 },
    {
      arbitrary: fc
        .oneof(fc.constantFrom("fuzz-1", "a".repeat(200)), printable(40))
        .map((v) => ({ "x-request-id": v })),
      weight: 1,
    },
    {
      arbitrary: one("accept", "application/json", "text/html", "*/*", "application/problem+json", "image/png"),
      weight: 1,
    },
    { arbitrary: one("if-none-match", "*", '"x"', 'W/"abc"'), weight: 1 },
    { arbitrary: one("x-forwarded-for", "1.2.3.4", "::1, 10.0.0.1", "garbage"), weight: 1 },
    { arbitrary: one("x-forwarded-host", "evil.example", "a:b:c"), weight: 1 },
    { arbitrary: one("content-encoding", "gzip", "br", "identity", "x"), weight: 1 },
    { arbitrary: one("host", "", "a b", "evil.example", "[::1", "127.0.0.1:99999", "x".repeat(300), "%"), weight: 1 },
  );
};

const JSON_TYPES = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 24 },
  {
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/merge-patch+json",
      "application/jsonx",
      "application/json; charset=utf-16",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/octet-stream",
      "",
    ),
    weight: 4,
  },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

/** Bodies sent where the contract takes none: they must be ignored or refused, never break anything. */
const strayBody = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 8 },
  {
    arbitrary: fc.tuple(
      fc.oneof(
        anyJson().map((v) => JSON.stringify(v) ?? "null"),
        hostileString(),
      ),
      fc.constantFrom("application/json", "text/plain", undefined),
    ),
    weight: 1,
  },
);

// ---------------------------------------------------------------------------------------------

interface Builder {
  document: Schema;
  targets: Targets;
  maxBodyBytes: number;
}

function knownFor(targets: Targets) {
  return (schema: Schema, name: string | undefined): string[] | undefined => {
    const pattern = schema.pattern as string | undefined;
    if (name === "indexName" || pattern?.startsWith("^[A-Za-z0-9][A-Za-z0-9_.-]")) return targets.indexNames;
    if (name === "serviceName" || pattern?.startsWith("^[a-z0-9][a-z0-9-]")) return targets.serviceNames;
    if (name === "indexVersion" || name === "version" || pattern?.startsWith("^[0-9]{1,9}"))
      return [...targets.versions, "⟦uploadVersion⟧"];
    if (name === "email") return targets.emails;
    if (name === "password") return targets.passwords;
    if (name === "recordId" || name === "id") return targets.recordIds;
    if (name === "keyId") return ["⟦victimKeyId⟧", "key_unknown000000000"];
    if (name === "provider") return targets.providers;
    if (name === "uploadId") return ["⟦uploadId⟧", "upl_unknown"];
    if (name === "expires") return ["⟦uploadExpires⟧", "0", String(Date.UTC(2100, 0, 1))];
    if (name === "signature") return ["⟦uploadSignature⟧", "⟦uploadSignature⟧x", "AAAA", ""];
    // The search's own languages (paths, sort, filter), valid and a little broken, so the
    // requests reach the engine's facets, sort and string filters and not only the parsers.
    if (name === "facets")
      return ["data.price", "data.country,data.price,data.tags", 'data."in,Stock"', "data.", "price", "data.a,data.a"];
    if (name === "sort") return ["data.price:asc", "data.country:desc", "data.tags:asc", "data.price", "data.x:up"];
    if (name === "filter")
      return [
        'data.country = "NL"',
        'data.tags IN ["a", 1, true]',
        "EXISTS data.price && !(data.price != 10)",
        'data.country < "NL"',
        "data.tags IN []",
        "exists",
      ];
    if (name === "redirectTo") return ["/docs", "//evil.example/", "https://evil.example/", "/\\evil.example"];
    return undefined;
  };
}

/** A path parameter's value, encoded: real names most, valid by the schema, or hostile. */
function segment(b: Builder, name: string, schema: Schema): fc.Arbitrary<string> {
  const known = knownFor(b.targets)(resolver(b.document)(schema), name);
  return fc.oneof(
    ...(known ? [{ arbitrary: asIs(known), weight: 6 }] : []),
    { arbitrary: encoded(valueFor(b.document, schema).map(String)), weight: 2 },
    { arbitrary: encoded(hostileString()), weight: 4 },
    { arbitrary: fc.constantFrom("..", ".", "%2e%2e", "%2E", "a%2Fb", "%2F", "%5C", "x".repeat(3000)), weight: 1 },
  );
}

/** A query string for `params`: each present, missing, wrong, repeated; unknown and malformed parts too. */
function queryString(b: Builder, params: Schema[]): fc.Arbitrary<string> {
  const known = knownFor(b.targets);
  const one = (p: Schema): fc.Arbitrary<string[]> => {
    const listed = known(resolver(b.document)(p.schema), p.name);
    const value = fc.oneof(
      ...(listed ? [{ arbitrary: asIs(listed), weight: 5 }] : []),
      { arbitrary: valueFor(b.document, p.schema).map((v) => percentEncode(String(v))), weight: 4 },
      { arbitrary: encoded(hostileString()), weight: 2 },
      { arbitrary: fc.constantFrom(...WRONG_SCALARS).map((v) => percentEncode(v)), weight: 2 },
    );
    const name = percentEncode(p.name);
    const present = fc.oneof(
      { arbitrary: value.map((v) => [`${name}=${v}`]), weight: 8 },
      {
        arbitrary: fc.array(value, { minLength: 2, maxLength: 3 }).map((vs) => vs.map((v) => `${name}=${v}`)),
        weight: 1,
      },
      { arbitrary: fc.constantFrom<string[]>([name], [`${name}=`]), weight: 1 },
    );
    return fc.oneof(
      { arbitrary: present, weight: p.required ? 12 : 2 },
      { arbitrary: fc.constant<string[]>([]), weight: p.required ? 1 : 2 },
    );
  };
  const junk = fc.array(
    fc.oneof(
      fc.constantFrom("&", "=", "a=%", "limit=%ZZ", "%=%", "a[b]=1", "__proto__=1", "constructor=x", "query=%00", "?"),
      fc.tuple(fc.string({ maxLength: 8 }), hostileString()).map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`),
    ),
    { maxLength: 2 },
  );
  return fc
    .tuple(
      fc.tuple(...params.map(one)),
      fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: junk, weight: 1 }),
    )
    .chain(([parts, extra]) => {
      const all = [...parts.flat(), ...(extra ?? [])];
      return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length });
    })
    .map((parts) => parts.join("&"));
}

function jsonBody(b: Builder, schema: Schema): fc.Arbitrary<{ body?: string; contentType?: string }> {
  const valid = valueFor(b.document, schema, { known: knownFor(b.targets) });
  const oversize = `{"title":"${"a".repeat(b.maxBodyBytes + 10)}"}`;
  return fc.oneof(
    {
      arbitrary: fc.tuple(mutatedBody(valid, b.maxBodyBytes), JSON_TYPES).map(([body, contentType]) => ({
        body,
        contentType,
      })),
      weight: 40,
    },
    { arbitrary: fc.constant({}), weight: 1 },
    { arbitrary: fc.constant({ body: "", contentType: "application/json" }), weight: 1 },
    { arbitrary: fc.constant({ body: oversize, contentType: "application/json" }), weight: 1 },
  );
}

/** An upload's bytes: JSON Lines good and bad, a broken gzip, nothing at all. */
const blobBody = fc.oneof(
  fc
    .array(fc.record({ id: fc.string({ maxLength: 8 }), title: fc.string({ maxLength: 20 }) }), { maxLength: 5 })
    .map((rs) => rs.map((r) => JSON.stringify(r)).join("\n")),
  hostileString(),
  fc.constantFrom("", "\u001f\u008b\u0008\u0000garbage", '[{"id":"a","title":"b"}]', "{\n"),
);

function operationRoute(b: Builder, path: string, method: string, spec: Schema, pathItem: Schema): Route {
  const params: Schema[] = [...(pathItem.parameters ?? []), ...(spec.parameters ?? [])];
  const pathParams = params.filter((p) => p.in === "path");
  const queryParams = params.filter((p) => p.in === "query");
  const template = fc.tuple(...pathParams.map((p) => segment(b, p.name, p.schema))).map((values) => {
    let filled = path;
    pathParams.forEach((p, i) => {
      filled = filled.replace(`{${p.name}}`, values[i]!);
    });
    return filled;
  });
  const jsonSchema = spec.requestBody?.content?.["application/json"]?.schema as Schema | undefined;
  const octets = spec.requestBody?.content?.["application/octet-stream"] !== undefined;
  const body: fc.Arbitrary<{ body?: string; contentType?: string }> = jsonSchema
    ? spec.operationId === "Mcp_call"
      ? mcpBody(b)
      : jsonBody(b, jsonSchema)
    : octets
      ? fc
          .tuple(blobBody, fc.constantFrom("application/octet-stream", "application/x-ndjson", undefined))
          .map(([body, contentType]) => ({ body, contentType }))
      : strayBody.map((s) => (s ? { body: s[0], contentType: s[1] } : {}));
  // An upload PUT to the URL the server signed, with its real signature, now and then.
  const signedBlob = fc.constant({
    path: "/v1/blobs/⟦uploadId⟧",
    query: "expires=⟦uploadExpires⟧&signature=⟦uploadSignature⟧",
  });
  const target =
    spec.operationId === "Uploads_putBlob"
      ? fc.oneof(fc.record({ path: template, query: queryString(b, queryParams) }), signedBlob)
      : fc.record({ path: template, query: queryString(b, queryParams) });
  const mcpAccept =
    spec.operationId === "Mcp_call"
      ? fc.oneof(
          { arbitrary: fc.constant("application/json, text/event-stream"), weight: 6 },
          { arbitrary: fc.constantFrom(undefined, "application/json", "text/html"), weight: 1 },
        )
      : fc.constant(undefined);
  return {
    name: spec.operationId,
    operation: { path, method, spec },
    arbitrary: fc
      .record({
        target,
        credential: credential(),
        headers: extraHeaders(),
        body,
        accept: mcpAccept,
      })
      .map(({ target, credential, headers, body, accept }) => {
        const h: Record<string, string> = { ...headers };
        if (body.contentType !== undefined) h["content-type"] = body.contentType;
        if (accept !== undefined) h.accept = accept;
        return {
          route: spec.operationId,
          method: method.toUpperCase(),
          path: target.path,
          query: target.query,
          ...credential,
          headers: h,
          ...(body.body !== undefined ? { body: body.body } : {}),
        };
      }),
  };
}

/** JSON-RPC for /mcp: the tools with real and hostile arguments, batches, notifications, junk. */
function mcpBody(b: Builder): fc.Arbitrary<{ body?: string; contentType?: string }> {
  const id = fc.oneof(fc.integer(), fc.string({ maxLength: 6 }), fc.constantFrom<Json>(null, 1.5, {}, []));
  const args = fc.record(
    {
      indexName: fc.oneof(fc.constantFrom(...b.targets.indexNames), hostileString()),
      phrase: fc.oneof(fc.constantFrom("am", "zür", "amsterdam"), hostileString()),
      id: fc.oneof(fc.constantFrom(...b.targets.recordIds), hostileString()),
      latitude: fc.oneof(fc.double({ min: -90, max: 90, noNaN: true }), anyJson()),
      longitude: fc.oneof(fc.double({ min: -180, max: 180, noNaN: true }), anyJson()),
      typoTolerance: fc.oneof(fc.boolean(), anyJson()),
    },
    { requiredKeys: [] },
  );
  const request: fc.Arbitrary<Json> = fc.oneof(
    fc.record({
      jsonrpc: fc.constant("2.0"),
      id,
      method: fc.constant("initialize"),
      params: fc.record({
        protocolVersion: fc.constantFrom("2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01"),
        capabilities: fc.constant({}),
        clientInfo: fc.constant({ name: "fuzz", version: "1" }),
      }),
    }),
    fc.record({
      jsonrpc: fc.constant("2.0"),
      id,
      method: fc.constantFrom("tools/list", "ping", "resources/list", "nope"),
    }),
    fc.record({ jsonrpc: fc.constant("2.0"), method: fc.constantFrom("notifications/initialized", "notifications/x") }),
    fc.record({
      jsonrpc: fc.constant("2.0"),
      id,
      method: fc.constant("tools/call"),
      params: fc.record({
        name: fc.oneof(fc.constantFrom("search", "lookupById"), hostileString()),
        arguments: args,
      }),
    }) as fc.Arbitrary<Json>,
  ) as fc.Arbitrary<Json>;
  const batch = fc.array(request, { minLength: 0, maxLength: 3 }) as fc.Arbitrary<Json>;
  return fc
    .tuple(
      mutatedBody(fc.oneof({ arbitrary: request, weight: 8 }, { arbitrary: batch, weight: 1 }), b.maxBodyBytes),
      JSON_TYPES,
    )
    .map(([body, contentType]) => ({ body, contentType }));
}

// ---------------------------------------------------------------------------------------------
// Routes outside the contract.

const simple = (
  name: string,
  method: fc.Arbitrary<string>,
  path: fc.Arbitrary<string>,
  more: Partial<Pick<FuzzRequest, "headers" | "body">> = {},
): Route => ({
  name,
  arbitrary: fc
    .record({
      method,
      path,
      query: fc.oneof(
        { arbitrary: fc.constant(""), weight: 4 },
        { arbitrary: fc.constantFrom("a=1", "%", "x=%ZZ&x=2", "query=a&query=b&query=c"), weight: 1 },
      ),
      credential: credential(),
      headers: extraHeaders(),
    })
    .map((r) => ({
      route: name,
      method: r.method,
      path: r.path,
      query: r.query,
      credential: r.credential.credential,
      ...(r.credential.garbage !== undefined ? { garbage: r.credential.garbage } : {}),
      headers: { ...r.headers, ...(more.headers ?? {}) },
      ...(more.body !== undefined ? { body: more.body } : {}),
    })),
});

function extraRoutes(): Route[] {
  const pages = ["/openapi.json", "/openapi.yaml", "/docs", "/", "/demo"];
  const junkSegments = fc.oneof(
    encoded(hostileString()),
    fc.constantFrom(
      "..",
      "%2e%2e",
      "..%2F..%2Fpackage.json",
      "%2e%2e%2f%2e%2e%2fpackage.json",
      "__proto__",
      "toString",
    ),
  );
  return [
    simple("GET pages", fc.constantFrom("GET", "HEAD"), fc.constantFrom(...pages)),
    simple(
      "GET /widget/{file}",
      fc.constantFrom("GET", "HEAD"),
      fc.oneof(
        fc.constantFrom("/widget/sift-autocomplete.js", "/widget/sift-autocomplete.iife.js"),
        junkSegments.map((s) => `/widget/${s}`),
      ),
    ),
    simple("GET|DELETE /mcp", fc.constantFrom("GET", "DELETE", "PUT", "PATCH"), fc.constant("/mcp")),
    simple(
      "OPTIONS (CORS)",
      fc.constant("OPTIONS"),
      fc.constantFrom("/v1/search", "/v1/regions", "/healthz", "/v1/indexes", "/mcp"),
      { headers: { origin: "https://shop.example", "access-control-request-method": "GET" } },
    ),
    simple(
      "unknown routes",
      fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "SEARCH", "FOO"),
      fc.oneof(
        fc.constantFrom(
          "/v1",
          "/v1/",
          "/v1/indexes/pub/records",
          "/v1/indexes/pub/records/r1/extra",
          "/v1/search/",
          "//v1//indexes",
          "/v1/../v1/indexes",
          "/v1/./indexes",
          "/%2e%2e/etc/passwd",
          "/V1/INDEXES",
          "/v1/indexes/pub/versions/1",
          "/v1/blobs",
          "/mcp/x",
          "/widget",
          "/widget/",
          "*",
          `/v1/indexes/${"y".repeat(20_000)}`,
        ),
        fc.array(junkSegments, { minLength: 1, maxLength: 4 }).map((s) => `/v1/${s.join("/")}`),
      ),
    ),
  ];
}

/** Every route the fuzzer attacks: each contract operation, then the routes outside the contract. */
export function routes(document: Schema, targets: Targets, maxBodyBytes: number): Route[] {
  const b: Builder = { document, targets, maxBodyBytes };
  const out: Route[] = [];
  for (const [path, item] of Object.entries<Schema>(document.paths)) {
    for (const method of ["get", "put", "post", "patch", "delete"] as const) {
      if (item[method]) out.push(operationRoute(b, path, method, item[method], item));
    }
  }
  return [...out, ...extraRoutes()];
}

/** How the request looks on the wire, for a failure report (long bodies cut in the middle). */
export function describeRequest(r: FuzzRequest, resolve: (s: string) => string = (s) => s): string {
  const cut = (s: string) => (s.length > 600 ? `${s.slice(0, 300)}…[${s.length} chars]…${s.slice(-200)}` : s);
  const lines = [
    `${r.method} ${cut(resolve(r.path))}${r.query ? `?${cut(resolve(r.query))}` : ""}   (route ${r.route})`,
  ];
  lines.push(`credential: ${r.credential}${r.garbage !== undefined ? ` ${JSON.stringify(r.garbage)}` : ""}`);
  for (const [k, v] of Object.entries(r.headers)) lines.push(`${k}: ${v}`);
  if (r.body !== undefined) lines.push(`body: ${cut(JSON.stringify(resolve(r.body)))}`);
  return lines.join("\n");
}
