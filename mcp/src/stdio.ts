#!/usr/bin/env node
// `sift-mcp --base-url URL --api-key KEY`: an MCP server on stdio for hosts that launch local
// servers. It forwards tools/list and tools/call to Sift's POST /mcp with the MCP SDK's client,
// so local and remote hosts see exactly the same tools and answers.
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { SERVER_INFO } from "./tools.ts";

const { values } = parseArgs({
  options: {
    "base-url": { type: "string", default: process.env.SIFT_BASE_URL },
    "api-key": { type: "string", default: process.env.SIFT_API_KEY },
    help: { type: "boolean", short: "h" },
  },
});
const usage = "usage: sift-mcp --base-url https://… --api-key sk-sift-… (or SIFT_BASE_URL and SIFT_API_KEY)";
if (values.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
if (!values["base-url"] || !values["api-key"]) {
  process.stderr.write(`sift-mcp: ${usage}\n`);
  process.exit(2);
}

const remote = new Client({ name: "sift-mcp-stdio", version: SERVER_INFO.version });
try {
  await remote.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", values["base-url"]), {
      requestInit: { headers: { authorization: `Bearer ${values["api-key"]}` } },
    }),
  );
} catch (error) {
  process.stderr.write(`sift-mcp: cannot reach ${values["base-url"]}/mcp: ${(error as Error).message}\n`);
  process.exit(1);
}

const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, (request) => remote.listTools(request.params));
server.setRequestHandler(CallToolRequestSchema, (request) => remote.callTool(request.params));
await server.connect(new StdioServerTransport());
