// The dashboard's list of MCP hosts connected through OAuth, and their revocation (session only,
// like API keys: docs/authority.md).
import { authorize } from "../auth/authority.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { McpConnections } from "../mcp-auth/connections.ts";

export function mcpConnectionHandlers(connections: McpConnections): Handlers {
  return {
    McpConnections_list: async (c) => {
      const p = c.get("principal");
      authorize(p, "apiKeys");
      if (p.kind !== "session") throw new Error("unreachable: the authority table admits only sessions here");
      return c.json({ connections: await connections.list(p.tenantId) } satisfies ResponseBody<
        "McpConnections_list",
        200
      >);
    },
    McpConnections_revoke: async (c, { path }) => {
      const p = c.get("principal");
      authorize(p, "apiKeys");
      if (p.kind !== "session") throw new Error("unreachable: the authority table admits only sessions here");
      await connections.revoke(p.tenantId, path.connectionId);
      return c.body(null, 204);
    },
  };
}
