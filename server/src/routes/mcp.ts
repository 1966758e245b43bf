// POST /mcp: the MCP tools over this server's own services, scoped to the caller's tenant with
// the same authority table as REST (srh keys see PUBLIC indexes only).
import type { JsonRecord, SiftMcpBackend } from "@sift/mcp";
import type { Hono } from "hono";
import { authorize, authorizeIndex } from "../auth/authority.ts";
import type { Principal } from "../auth/principal.ts";
import { indexAllowed } from "../auth/restrictions.ts";
import { InvalidArgumentError, MisdirectedError, type RegionEndpoint } from "../domain/errors.ts";
import { unstorableReason } from "../domain/storable-text.ts";
import { type Handlers, readBodyLimited } from "../http/contract.ts";
import type { AppEnv } from "../http/env.ts";
import { HttpProblem, problemFor } from "../http/problem.ts";
import type { SearchEngine } from "../ports/engine.ts";
import type { CatalogService } from "../services/catalog.ts";
import { filterOf, suggestionOf, type SearchService } from "../services/search.ts";

/**
 * The MCP SDK and zod, which @sift/mcp brings, took about 170 ms of every start (D-327): they are
 * loaded by the first call to /mcp.
 */
let mcpModule: Promise<typeof import("@sift/mcp")> | undefined;
const loadMcp = () => (mcpModule ??= import("@sift/mcp"));

/** A region's MCP endpoint, where it has a URL of its own (D-388, D-391). */
const mcpEndpointOf = (region: RegionEndpoint) => (region.url === undefined ? undefined : `${region.url}/mcp`);

/**
 * The MCP tools show a failure's message to the model when it has a status below 500, so a
 * domain error leaves the backend as the problem it stands for (same status, same text).
 */
const asProblem = async <T>(run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (error) {
    throw problemFor(error) ?? error;
  }
};

function backendFor(
  p: Principal,
  deps: { catalog: CatalogService; search: SearchService; engine: SearchEngine },
): SiftMcpBackend {
  authorize(p, "mcp");
  if (p.kind === "anonymous") throw new Error("unreachable: anonymous callers are denied MCP");
  const index = async (indexName: string) => {
    // Refused here as in REST (http/contract.ts): the store cannot look such a name up.
    const reason = unstorableReason(indexName);
    if (reason !== null) throw InvalidArgumentError.field("indexName", reason);
    const ref = authorizeIndex(p, "mcp", await deps.catalog.byName(p.tenantId, indexName), indexName);
    const there = deps.catalog.heldElsewhere(ref);
    if (there === undefined) return ref;
    // A host reaches another region by another MCP endpoint, not by the REST base URL a 421
    // names: say which to connect to (D-388).
    const endpoints = there.map((r) => mcpEndpointOf(r) ?? `${r.id}'s MCP endpoint`);
    throw new MisdirectedError(
      `index "${ref.name}" is kept in ${there.map((r) => r.id).join(" and ")} only, not in the region of this MCP endpoint: connect to ${endpoints.join(" or ")} to search it`,
      there,
    );
  };
  return {
    // What search and lookupById would let this caller reach, so a host never has to guess a
    // name: an srh key sees its tenant's PUBLIC indexes, a key with an index list those listed.
    listIndexes: () =>
      asProblem(async () => {
        const cell = authorize(p, "mcp");
        const all = (await deps.catalog.listIndexes(p.tenantId)).filter(
          (i) => (cell === "ownPublic" ? i.visibility === "PUBLIC" : true) && indexAllowed(p, i.name),
        );
        // Those this endpoint can search; with replication, those its region does not hold (D-385)
        // apart, with the MCP endpoints that can (D-391).
        const indexes = all
          .filter((i) => i.heldIn === undefined)
          .map(({ name, serviceName, visibility, activeVersion, records }) => ({
            name,
            serviceName,
            visibility,
            activeVersion,
            records,
          }));
        const elsewhere = all.flatMap(({ name, serviceName, heldIn }) =>
          heldIn === undefined
            ? []
            : [
                {
                  name,
                  serviceName,
                  regions: heldIn.map((r) => {
                    const mcpEndpoint = mcpEndpointOf(r);
                    return mcpEndpoint === undefined ? { region: r.id } : { region: r.id, mcpEndpoint };
                  }),
                },
              ],
        );
        return elsewhere.length ? { indexes, elsewhere } : { indexes };
      }),
    search: ({ indexName, phrase, latitude, longitude, typoTolerance, filter, limit, weighted, version }) =>
      asProblem(async () => {
        const parsed = filterOf(filter);
        const ref = await index(indexName);
        const geo = latitude !== undefined && longitude !== undefined ? { latitude, longitude } : undefined;
        // Always highlighted: a model reading the results sees which words matched (and which
        // only with typos) without re-matching them itself.
        const found = await deps.search.searchIndex(ref, {
          query: phrase,
          geo,
          typoTolerance,
          highlight: true,
          filter: parsed,
          limit,
          weighted,
          version,
        });
        return {
          indexName,
          indexVersion: found.indexVersion,
          phrase,
          totalHits: found.totalHits,
          totalHitsExact: found.totalHitsExact,
          results: found.hits.map(suggestionOf) as JsonRecord[],
        };
      }),
    lookupById: ({ indexName, id }) =>
      asProblem(async () => {
        const ref = await index(indexName);
        const record = await deps.engine.get(ref.id, ref.activeVersion, id);
        return record ? { indexName, indexVersion: ref.activeVersion, record: record as JsonRecord } : undefined;
      }),
  };
}

export function mcpHandlers(deps: {
  catalog: CatalogService;
  search: SearchService;
  engine: SearchEngine;
  maxBodyBytes: number;
}): Handlers {
  return {
    Mcp_call: async (c) => {
      const backend = backendFor(c.get("principal"), deps);
      // The MCP transport reads the whole body itself: it gets one already read within the limit
      // of every JSON body (six concurrent 300 MB bodies once took the server to 4.4 GB).
      const raw = c.req.raw;
      const body = await readBodyLimited(raw, deps.maxBodyBytes);
      const { handleMcpHttp } = await loadMcp();
      return handleMcpHttp(new Request(raw.url, { method: raw.method, headers: raw.headers, body }), backend);
    },
  };
}

/** Stateless JSON mode has no stream to GET and no session to DELETE. */
export function mcpMethodNotAllowed(app: Hono<AppEnv>): void {
  app.on(["GET", "DELETE"], "/mcp", () => {
    throw new HttpProblem(
      405,
      "POST JSON-RPC messages to /mcp; this endpoint is stateless and opens no event stream",
      undefined,
      { allow: "POST" },
    );
  });
}
