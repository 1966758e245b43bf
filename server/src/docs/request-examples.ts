// A request example for every operation of the reference (/docs), as a reader copies it: the curl
// command and the same call through @sift/sdk. Values come from the contract's own examples where
// it has them, otherwise from the samples below, which follow the README's "Try it" (a service
// `my-shop` with an index `products`); a test checks every sample body against the contract.
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is plain JSON walked by key.
type Json = Record<string, any>;

/** Sample path and query values, by parameter name. */
export const SAMPLE_PARAMS: Record<string, string> = {
  indexName: "products",
  serviceName: "my-shop",
  recordId: "hose-1",
  version: "1.2",
  indexVersion: "2",
  keyId: "key_01JD3X8Q0W5F",
  provider: "github",
  query: "gar",
  uploadId: "upl_01JD3X9B7M2K",
  expires: "1764080000000",
  signature: "…",
};

/** Sample request bodies, by the name of their schema. */
export const SAMPLE_BODIES: Record<string, unknown> = {
  SignupRequest: { email: "me@example.com", password: "a long password" },
  LoginRequest: { email: "me@example.com", password: "a long password" },
  ApiKeyCreateRequest: { type: "adm", name: "laptop" },
  ServiceCreateRequest: { name: "my-shop" },
  IndexCreateRequest: { name: "products", serviceName: "my-shop", visibility: "PUBLIC" },
  IndexUpdateRequest: { visibility: "PRIVATE" },
  RecordInput: { title: "Garden hose", weight: 40, data: { price: 19.9, inStock: true } },
  UploadStartRequest: { indexName: "products" },
  UploadCompleteRequest: { indexName: "products", indexVersion: "2" },
  JsonRpcRequest: { jsonrpc: "2.0", id: 1, method: "tools/list" },
  MultiSearchRequest: {
    searches: [
      { query: "gar", indexName: "products", serviceName: "my-shop", facets: "data.brand" },
      { query: "gar", indexName: "categories", serviceName: "my-shop", limit: 3 },
    ],
  },
};

const js = (value: unknown) => JSON.stringify(value).replace(/"([A-Za-z_$][\w$]*)":/g, "$1: ");
const q = (s: string) => `"${s}"`;

/** The call through @sift/sdk (`sift = createClient(…)`), or why there is none. */
const SDK: Record<string, (p: Record<string, string>, body: unknown) => string> = {
  Health_live: () => "await sift.health.live();",
  Health_ready: () => "await sift.health.ready();",
  Health_regions: () => "const { regions } = await sift.regions();",
  Mcp_call: () => "// MCP hosts call this endpoint; see @sift/mcp for a stdio server that forwards to it.",
  ApiKeys_list: () => "const keys = await sift.apiKeys.list(); // with a dashboard session",
  ApiKeys_create: (_, b) => `const { key } = await sift.apiKeys.create(${js(b)}); // shown once`,
  ApiKeys_revoke: (p) => `await sift.apiKeys.revoke(${q(p.keyId!)});`,
  Auth_signup: (_, b) => `await sift.auth.signup(${js(b)});`,
  Auth_login: (_, b) => `await sift.auth.login(${js(b)});`,
  Auth_logout: () => "await sift.auth.logout();",
  Auth_me: () => "const me = await sift.auth.me();",
  Auth_providers: () => "const { providers } = await sift.auth.providers();",
  Auth_oauthStart: () => "// A browser navigation: link the sign-in button to this URL.",
  Auth_oauthCallback: () => "// The provider redirects the browser here; no one calls it directly.",
  Uploads_putBlob: () =>
    "// sift.uploadFile(index, file) sends the bytes to the signed URL; or: await putToUploadUrl(uploadUrl, file);",
  Uploads_start: (_, b) => `const { uploadUrl, indexVersion } = await sift.uploads.start(${q((b as Json).indexName)});`,
  Uploads_complete: (_, b) => `await sift.uploads.complete(${js(b)});`,
  Uploads_status: (p) => `const status = await sift.uploads.status(${q(p.indexName!)}, ${q(p.indexVersion!)});`,
  Indexes_list: () => "const { indexes } = await sift.indexes.list();",
  Indexes_get: (p) => `const index = await sift.indexes.get(${q(p.indexName!)});`,
  Indexes_create: (_, b) => `await sift.indexes.create(${js(b)});`,
  Indexes_update: (p, b) => `await sift.indexes.update(${q(p.indexName!)}, ${js(b)});`,
  Indexes_delete: (p) => `await sift.indexes.delete(${q(p.indexName!)});`,
  Services_list: () => "const { services } = await sift.services.list();",
  Services_get: (p) => `const service = await sift.services.get(${q(p.serviceName!)});`,
  Services_create: (_, b) => `await sift.services.create(${js(b)});`,
  Services_delete: (p) => `await sift.services.delete(${q(p.serviceName!)});`,
  Records_get: (p) => `const record = await sift.records.get(${q(p.indexName!)}, ${q(p.recordId!)});`,
  Records_upsert: (p, b) =>
    `const { indexVersion } = await sift.records.put(${q(p.indexName!)}, ${q(p.recordId!)}, ${js(b)});`,
  Records_delete: (p) => `await sift.records.delete(${q(p.indexName!)}, ${q(p.recordId!)});`,
  Records_purge: (p) => `await sift.records.purge(${q(p.indexName!)}, ${q(p.recordId!)});`,
  Versions_list: (p) => `const { versions } = await sift.versions.list(${q(p.indexName!)});`,
  Versions_changes: (p) =>
    `const { counts, changes, next } = await sift.versions.changes(${q(p.indexName!)}, ${q(p.version!)});`,
  Versions_activate: (p) => `await sift.versions.activate(${q(p.indexName!)}, ${q(p.version!)});`,
  Versions_coalesce: (p) => `await sift.versions.coalesce(${q(p.indexName!)});`,
  Search_search: (p) => {
    const { regionId: _, ...params } = p;
    return `const { suggestions, totalHits } = await sift.search(${js(coerce(params))});`;
  },
  MultiSearch_multi: (_, b) => `const results = await sift.multiSearch(${js((b as Json).searches)});`,
};

/** Query values as the SDK takes them: numbers and booleans typed. */
function coerce(params: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    out[k] = v === "true" ? true : v === "false" ? false : /^-?\d+(\.\d+)?$/.test(v) && k !== "query" ? Number(v) : v;
  }
  return out;
}

/** The operation's sample body: the contract's example, or the sample of its schema. */
export function sampleBody(op: Json, doc: Json): { type: string; value: unknown } | undefined {
  const [type, media] = Object.entries<Json>(op.requestBody?.content ?? {})[0] ?? [];
  if (!type || !media) return undefined;
  if (type !== "application/json") return { type, value: undefined };
  const named = media.examples ? Object.values<Json>(media.examples)[0]?.value : media.example;
  if (named !== undefined) return { type, value: named };
  const name = media.schema?.$ref?.split("/").pop();
  const schema = name ? doc.components?.schemas?.[name] : undefined;
  return { type, value: (name && SAMPLE_BODIES[name]) ?? schema?.example };
}

/** Path and query values: the contract's first example where it has one, else the samples. */
function sampleParams(op: Json): Record<string, string> {
  const params = (op.parameters ?? []) as Json[];
  const first = (p: Json) => Object.values<Json>(p.examples ?? {})[0]?.value;
  const values: Record<string, string> = {};
  const fromExamples = params.some((p) => first(p) !== undefined);
  for (const p of params) {
    const example = first(p);
    if (example !== undefined) values[p.name] = String(example);
    else if ((p.required || (!fromExamples && p.in === "path")) && SAMPLE_PARAMS[p.name] !== undefined)
      values[p.name] = SAMPLE_PARAMS[p.name]!;
  }
  return values;
}

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

export interface RequestExample {
  curl: string;
  sdk: string;
}

export function requestExample(method: string, path: string, op: Json, doc: Json): RequestExample {
  const params = (op.parameters ?? []) as Json[];
  const values = sampleParams(op);
  let url = path;
  const query = new URLSearchParams();
  for (const p of params) {
    const value = values[p.name];
    if (value === undefined) continue;
    if (p.in === "path") url = url.replace(`{${p.name}}`, encodeURIComponent(value));
    else if (p.in === "query") query.set(p.name, value);
  }
  const search = query.toString();
  const security = ((op.security ?? []) as Json[]).map((s) => Object.keys(s));
  const anonymous = security.length === 0 || security.some((s) => s.length === 0);
  const session = security.length > 0 && security.every((s) => s.includes("SessionCookie") && s.length === 1);
  const body = sampleBody(op, doc);
  const lines = [
    `curl${method === "get" ? "" : ` -X ${method.toUpperCase()}`} "$SIFT${url}${search ? `?${search}` : ""}"`,
  ];
  if (session) lines.push("-b jar");
  else if (!anonymous) lines.push('-H "authorization: Bearer $SIFT_KEY"');
  if (op.operationId === "Auth_login" || op.operationId === "Auth_signup") lines.push("-c jar");
  if (body?.type === "application/json" && body.value !== undefined) {
    lines.push("-H 'content-type: application/json'", `-d ${shellQuote(JSON.stringify(body.value))}`);
  } else if (body) {
    lines.push(`-H 'content-type: ${body.type}'`, "--data-binary @products.csv");
  }
  const sdk = SDK[op.operationId]?.(values, body?.value) ?? `await sift.api.${method.toUpperCase()}("${path}", { … });`;
  return { curl: lines.join(" \\\n  "), sdk };
}
