export {
  createClient,
  type SiftClient,
  type RecordInput,
  type IndexRecord,
  type WriteResult,
  type IngestStatus,
  type IndexVersion,
} from "./client.ts";
export {
  createSearchClient,
  type SearchClient,
  type SearchParams,
  type SearchResponse,
  type SearchResult,
  type SearchHighlight,
  type HighlightRange,
  type ClientOptions,
} from "./search-client.ts";
export {
  SiftError,
  SiftApiError,
  SiftUnreachableError,
  SiftIngestFailedError,
  SiftTimeoutError,
  type Problem,
} from "./errors.ts";
export { putToUploadUrl, type UploadOptions, type UploadSource } from "./uploads.ts";
export { createRouter, type RegionEndpoint, type HostState, type Router } from "./routing.ts";
export type { components, operations, paths } from "@sift/contract";
