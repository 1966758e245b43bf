export {
  createSiftMcpServer,
  SERVER_INFO,
  type SiftMcpBackend,
  type SearchToolResult,
  type LookupToolResult,
  type JsonRecord,
} from "./tools.ts";
export { handleMcpHttp } from "./http.ts";
