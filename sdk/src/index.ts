export {
  createClient,
  type SiftClient,
  type RecordInput,
  type IndexRecord,
  type WriteResult,
  type IngestStatus,
  type IndexVersion,
  type VersionChanges,
  type VersionChangesOptions,
  type RecordReadOptions,
} from "./client.ts";
export {
  createSearchClient,
  isSearchProblem,
  type SearchClient,
  type SearchParams,
  type SearchResponse,
  type DataPath,
  type FacetValue,
  type FacetStats,
  type MultiSearchQuery,
  type MultiSearchResponse,
  type MultiSearchResult,
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
