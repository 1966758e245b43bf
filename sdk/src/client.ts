// The full client: every operation typed from the contract through `api` (openapi-fetch), plus
// helpers that return data or throw SiftError.
import type { components, paths } from "@sift/contract";
import { createApi, searchCalls, unwrap, withMinVersion, type ClientOptions } from "./search-client.ts";
import { uploadFile, waitForIngest, type UploadOptions, type UploadSource } from "./uploads.ts";

type Schemas = components["schemas"];
export type RecordInput = Schemas["RecordInput"];
export type IndexRecord = Schemas["IndexRecord"];
export type WriteResult = Schemas["WriteResult"];
export type IngestStatus = Schemas["IngestStatus"];
export type IndexVersion = Schemas["IndexVersion"];
export type VersionChanges = Schemas["VersionChanges"];
/** One page of a version's changes: continue `after` the `next` of the previous page. */
export interface VersionChangesOptions {
  after?: string | undefined;
  /** Changed records per page, 1..1000 (default 100). */
  limit?: number | undefined;
}
export type Paths = paths;
/** Which version a record read uses: `version` to read a retained one, `minVersion` to wait for one. */
export interface RecordReadOptions {
  version?: string | undefined;
  minVersion?: string | undefined;
}

/** Whether `a` is a later version than `b` (`<major>.<minor>`, compared as numbers). */
function isLater(a: string, b: string): boolean {
  const [am = Number.NaN, an = 0] = a.split(".").map(Number);
  const [bm = Number.NaN, bn = 0] = b.split(".").map(Number);
  // A version id of another shape cannot be compared: the newer answer wins.
  if ([am, an, bm, bn].some(Number.isNaN)) return true;
  return am !== bm ? am > bm : an > bn;
}

export function createClient(options: ClientOptions) {
  const { api, router } = createApi(options);
  // Read your writes: per index name, the latest version a write through this client returned.
  // The latest, not the last to answer: of two concurrent writes, a read must see both.
  const written = new Map<string, string>();
  const readYourWrites = options.readYourWrites ?? true;
  const versionOf = (indexName: string) => (readYourWrites ? written.get(indexName) : undefined);
  const wrote = async <T extends { indexVersion: string }>(indexName: string, call: Promise<T>): Promise<T> => {
    const result = await call;
    const known = written.get(indexName);
    if (known === undefined || isLater(result.indexVersion, known)) written.set(indexName, result.indexVersion);
    return result;
  };
  // A new index of the same name starts its versions again: what the old one reached means nothing.
  const forget = async <T>(indexName: string, call: Promise<T>): Promise<T> => {
    const result = await call;
    written.delete(indexName);
    return result;
  };
  const index = (indexName: string) => ({ path: { indexName } });
  const record = (indexName: string, recordId: string) => ({ path: { indexName, recordId } });
  const customFetch = options.fetch;
  const uploads = {
    start: (indexName: string) => unwrap(api.POST("/v1/uploads/start", { body: { indexName } })),
    complete: (body: Schemas["UploadCompleteRequest"]) => unwrap(api.POST("/v1/uploads/complete", { body })),
    status: (indexName: string, indexVersion: string): Promise<IngestStatus> =>
      unwrap(api.GET("/v1/uploads/{indexName}/{indexVersion}", { params: { path: { indexName, indexVersion } } })),
  };

  return {
    /** Every operation of the contract, typed: `api.GET("/v1/indexes/{indexName}", …)`. */
    api,
    router,
    ...searchCalls(api, router, versionOf),
    /**
     * The version reads of `indexName` through this client wait for (`minVersion`): the latest a
     * write through it returned. Hand it to another client (a browser's) to read the same writes.
     */
    writtenVersion: (indexName: string): string | undefined => written.get(indexName),
    records: {
      /**
       * A record of the active version, or of `version` (a string, or `{ version }`); after a
       * write through this client it waits for that write (`minVersion`) unless told otherwise.
       */
      get: (indexName: string, recordId: string, version?: string | RecordReadOptions): Promise<IndexRecord> =>
        unwrap(
          api.GET("/v1/indexes/{indexName}/records/{recordId}", {
            params: {
              ...record(indexName, recordId),
              query: withMinVersion(typeof version === "string" ? { version } : { ...version }, indexName, versionOf),
            },
          }),
        ),
      put: (indexName: string, recordId: string, body: RecordInput): Promise<WriteResult> =>
        wrote(
          indexName,
          unwrap(api.PUT("/v1/indexes/{indexName}/records/{recordId}", { params: record(indexName, recordId), body })),
        ),
      delete: (indexName: string, recordId: string): Promise<WriteResult> =>
        wrote(
          indexName,
          unwrap(api.DELETE("/v1/indexes/{indexName}/records/{recordId}", { params: record(indexName, recordId) })),
        ),
      /** Erases the record from every retained version (docs/versions.md, Erasure). */
      purge: (indexName: string, recordId: string): Promise<WriteResult> =>
        wrote(
          indexName,
          unwrap(api.POST("/v1/indexes/{indexName}/records/{recordId}/purge", { params: record(indexName, recordId) })),
        ),
    },
    indexes: {
      list: () => unwrap(api.GET("/v1/indexes")),
      get: (indexName: string) => unwrap(api.GET("/v1/indexes/{indexName}", { params: index(indexName) })),
      create: (body: Schemas["IndexCreateRequest"]) => forget(body.name, unwrap(api.POST("/v1/indexes", { body }))),
      update: (indexName: string, body: Schemas["IndexUpdateRequest"]) =>
        unwrap(api.PATCH("/v1/indexes/{indexName}", { params: index(indexName), body })),
      delete: (indexName: string) =>
        forget(indexName, unwrap(api.DELETE("/v1/indexes/{indexName}", { params: index(indexName) }))),
    },
    services: {
      list: () => unwrap(api.GET("/v1/services")),
      get: (serviceName: string) =>
        unwrap(api.GET("/v1/services/{serviceName}", { params: { path: { serviceName } } })),
      create: (body: Schemas["ServiceCreateRequest"]) => unwrap(api.POST("/v1/services", { body })),
      delete: (serviceName: string) =>
        unwrap(api.DELETE("/v1/services/{serviceName}", { params: { path: { serviceName } } })),
    },
    apiKeys: {
      list: () => unwrap(api.GET("/v1/api-keys")),
      /** The answer's `key` is the secret, shown this once. */
      create: (body: Schemas["ApiKeyCreateRequest"]) => unwrap(api.POST("/v1/api-keys", { body })),
      revoke: (keyId: string) => unwrap(api.DELETE("/v1/api-keys/{keyId}", { params: { path: { keyId } } })),
    },
    /** MCP hosts connected through OAuth (dashboard session only); revoking ends their tokens at once. */
    mcpConnections: {
      list: () => unwrap(api.GET("/v1/mcp-connections")),
      revoke: (connectionId: string) =>
        unwrap(api.DELETE("/v1/mcp-connections/{connectionId}", { params: { path: { connectionId } } })),
    },
    /**
     * The dashboard's sign-in. It sets the session cookie, which browsers keep (pass
     * `fetch: (r) => fetch(r, { credentials: "include" })` across origins); Node keeps no cookies.
     * OAuth sign-in (`/v1/auth/oauth/{provider}`) is a browser redirect, not a call.
     */
    auth: {
      signup: (body: Schemas["SignupRequest"]) => unwrap(api.POST("/v1/auth/signup", { body })),
      login: (body: Schemas["LoginRequest"]) => unwrap(api.POST("/v1/auth/login", { body })),
      logout: () => unwrap(api.POST("/v1/auth/logout")),
      me: () => unwrap(api.GET("/v1/auth/me")),
      providers: () => unwrap(api.GET("/v1/auth/providers")),
    },
    /** The regions and their endpoints (what `regions: "discover"` reads). */
    regions: () => unwrap(api.GET("/v1/regions")),
    health: {
      live: () => unwrap(api.GET("/healthz")),
      ready: () => unwrap(api.GET("/readyz")),
    },
    versions: {
      list: (indexName: string) => unwrap(api.GET("/v1/indexes/{indexName}/versions", { params: index(indexName) })),
      /**
       * What a version changed (counts, and a page of changed record ids): a record change against
       * its parent, an upload against the version live before it, a purge's erased id, a
       * checkpoint's nothing. Pass the answer's `next` as `after` for the next page.
       */
      changes: (indexName: string, version: string, options: VersionChangesOptions = {}): Promise<VersionChanges> =>
        unwrap(
          api.GET("/v1/indexes/{indexName}/versions/{version}/changes", {
            params: {
              path: { indexName, version },
              query: {
                ...(options.after === undefined ? {} : { after: options.after }),
                ...(options.limit === undefined ? {} : { limit: options.limit }),
              },
            },
          }),
        ),
      activate: (indexName: string, version: string): Promise<WriteResult> =>
        wrote(
          indexName,
          unwrap(
            api.POST("/v1/indexes/{indexName}/versions/{version}/activate", {
              params: { path: { indexName, version } },
            }),
          ),
        ),
      coalesce: (indexName: string) =>
        unwrap(api.POST("/v1/indexes/{indexName}/coalesce", { params: index(indexName) })),
    },
    uploads,
    /** Uploads a file (start, PUT, complete); the ingest then runs on the server. */
    uploadFile: (indexName: string, source: UploadSource, options: UploadOptions = {}) =>
      uploadFile(uploads, indexName, source, { ...options, ...(customFetch ? { fetch: customFetch } : {}) }),
    /** Resolves when the ingest succeeds; throws SiftIngestFailedError (with line numbers) when it fails. */
    waitForIngest: (indexName: string, indexVersion: string, options?: Parameters<typeof waitForIngest>[3]) =>
      wrote(indexName, waitForIngest(uploads, indexName, indexVersion, options)),
  };
}

export type SiftClient = ReturnType<typeof createClient>;
