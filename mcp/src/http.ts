// POST /mcp: Streamable HTTP in stateless JSON mode. A stateless transport cannot be reused, so
// every request gets a fresh server and transport (docs/architecture.md, Tool quirks we work around).
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { createSiftMcpServer, type SiftMcpBackend } from "./tools.ts";

/**
 * docs/api.md (MCP) asks only for `Content-Type: application/json`; the SDK refuses a POST whose Accept
 * lacks text/event-stream (406). Plain JSON is all we ever answer, so both are accepted.
 */
function acceptingJson(request: Request, body: string): Request {
  const headers = new Headers(request.headers);
  const accept = headers.get("accept") ?? "";
  if (!accept.includes("text/event-stream") || !accept.includes("application/json")) {
    headers.set("accept", "application/json, text/event-stream");
  }
  return new Request(request.url, { method: request.method, headers, body });
}

/**
 * A JSON-RPC batch (an array): MCP dropped batching in 2025-06-18 and the contract answers one
 * JsonRpcResponse object, but the SDK still answers a batch with an array. Refused here instead.
 */
function isBatch(body: string): boolean {
  return /^\s*\[/.test(body);
}

export async function handleMcpHttp(request: Request, backend: SiftMcpBackend): Promise<Response> {
  const body = await request.text();
  if (isBatch(body)) {
    const error = {
      code: -32600,
      message: "Invalid Request: batches are not supported; send one JSON-RPC request per POST",
    };
    return Response.json({ jsonrpc: "2.0", id: null, error }, { status: 400 });
  }
  const server = createSiftMcpServer(backend);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(acceptingJson(request, body));
  } finally {
    await server.close();
  }
}
