// Sift's three read-only MCP tools. The same definitions serve POST /mcp (in the server) and, via
// the stdio bin, local hosts; descriptions are written for a model deciding what to call.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export type JsonRecord = { id: string; title: string } & Record<string, unknown>;

export interface SearchToolResult {
  indexName: string;
  indexVersion: string;
  phrase: string;
  /** Records matching the phrase and filter in all, of which `results` are the first. */
  totalHits: number;
  /** False when counting stopped early (past 10,000): totalHits is then a lower bound. */
  totalHitsExact: boolean;
  results: JsonRecord[];
}

export interface IndexSummary {
  name: string;
  serviceName: string;
  visibility: "PUBLIC" | "PRIVATE";
  activeVersion: string;
  /** Records in the active version. */
  records: number;
}

/** An index kept only in other regions: searched through one of their MCP endpoints. */
export interface IndexElsewhere {
  name: string;
  serviceName: string;
  /** The regions that hold it, each with its MCP endpoint where it has one of its own. */
  regions: { region: string; mcpEndpoint?: string }[];
}

export interface ListIndexesToolResult {
  indexes: IndexSummary[];
  /** With regions: the indexes this caller may search through another region's endpoint only. */
  elsewhere?: IndexElsewhere[];
}

export interface LookupToolResult {
  indexName: string;
  indexVersion: string;
  record: JsonRecord;
}

/** What the tools need from Sift; the server implements it over its services, scoped to the caller. */
export interface SiftMcpBackend {
  search(input: {
    indexName: string;
    phrase: string;
    latitude?: number;
    longitude?: number;
    /** Absent means on (the REST default). */
    typoTolerance?: boolean;
    /** The REST `filter` syntax, e.g. `data.price < 20 && data.brand = "Acme"`. */
    filter?: string;
    /** 1..100; absent means 10. */
    limit?: number;
    /** Rank records with a higher weight first among equal matches; absent means off (the REST default). */
    weighted?: boolean;
    /** A retained version to search instead of the active one. */
    version?: string;
  }): Promise<SearchToolResult>;
  /** The indexes this caller may search, by name. */
  listIndexes(): Promise<ListIndexesToolResult>;
  /** Undefined when the index has no record with that id. */
  lookupById(input: { indexName: string; id: string }): Promise<LookupToolResult | undefined>;
}

export const SERVER_INFO = { name: "sift", title: "Sift search", version: "1.0.0" } as const;

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** A failure the model can act on (a wrong index name, a bad coordinate): its message is shown as is. */
const actionable = (error: unknown): error is { message: string } =>
  typeof error === "object" &&
  error !== null &&
  typeof (error as { status?: unknown }).status === "number" &&
  (error as { status: number }).status < 500;

const text = (value: unknown, isError = false): CallToolResult => ({
  content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value) }],
  isError,
});

async function run(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (error) {
    if (actionable(error)) return text(error.message, true);
    return text("Sift failed to answer this call; try again shortly.", true);
  }
}

/** Decimal degrees as a string (the form records store) or as a number (what most hosts send). */
const coordinate = (name: "latitude" | "longitude", limit: number) =>
  z
    .union(
      [
        z.number().finite(),
        z
          .string()
          .trim()
          .regex(/^[-+]?\d{1,3}(\.\d+)?$/, `${name} must be a decimal number, e.g. 48.8566 or "48.8566"`),
      ],
      { error: `${name} must be a decimal number, e.g. 48.8566 or "48.8566"` },
    )
    .transform(Number)
    .refine((v) => Math.abs(v) <= limit, `${name} must be between -${limit} and ${limit}`)
    .optional()
    .describe(
      `Optional ${name} of the place to favour, in decimal degrees, as a number or a string (e.g. ${name === "latitude" ? "48.8566" : "2.3522"}). Give both latitude and longitude, or neither.`,
    );

// What the tools answer, as MCP output schemas: hosts read `structuredContent` against these, and
// the same JSON is in the text content for hosts that only read text.
const record = z
  .looseObject({
    id: z.string(),
    title: z.string(),
    weight: z.number().optional(),
    images: z.array(z.string()).optional(),
    latitude: z.string().optional(),
    longitude: z.string().optional(),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .describe("A record as stored: id, title and its optional fields.");
const searchOutput = {
  indexName: z.string(),
  indexVersion: z.string().describe("The version of the index that answered."),
  phrase: z.string(),
  totalHits: z.number().int().describe("Records matching the phrase and filter in all."),
  totalHitsExact: z.boolean().describe("False when counting stopped early; totalHits is then a lower bound."),
  results: z
    .array(
      record.extend({
        distanceMeters: z.number().optional(),
        highlight: z
          .object({
            title: z.array(z.array(z.number().int())).optional(),
            data: z.record(z.string(), z.array(z.array(z.number().int()))).optional(),
          })
          .optional(),
      }),
    )
    .describe("The best matches, best first."),
};
const lookupOutput = { indexName: z.string(), indexVersion: z.string(), record };
const listIndexesOutput = {
  indexes: z
    .array(
      z.object({
        name: z.string().describe("Pass it as indexName to search and lookupById."),
        serviceName: z.string(),
        visibility: z.enum(["PUBLIC", "PRIVATE"]),
        activeVersion: z.string().describe("The version searches read unless given another."),
        records: z.number().int().describe("Records in the active version."),
      }),
    )
    .describe("Every index this caller may search here, by name."),
  elsewhere: z
    .array(
      z.object({
        name: z.string(),
        serviceName: z.string(),
        regions: z.array(
          z.object({
            region: z.string(),
            mcpEndpoint: z.string().optional().describe("Connect to this MCP endpoint to search the index."),
          }),
        ),
      }),
    )
    .optional()
    .describe("Indexes kept only in other regions: this endpoint cannot search them; the regions listed can."),
};

/** A successful answer: the JSON as text, and the same object as structured content. */
const structured = (value: SearchToolResult | LookupToolResult | ListIndexesToolResult): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value as unknown as Record<string, unknown>,
  isError: false,
});

/** A boolean, or its spelling as a string for hosts that pass every argument as text. */
const flag = (name: string) =>
  z
    .union([z.boolean(), z.enum(["true", "false"])], {
      error: `${name} must be true or false (or "true" or "false")`,
    })
    .transform((v) => v === true || v === "true")
    .optional();

const typoTolerance = flag("typoTolerance").describe(
  "Optional; true (the default) lets words match with small typos (one from 4 letters, two from 8), ranked after exact matches. false matches only the exact words.",
);

const weighted = flag("weighted").describe(
  "Optional; true ranks records with a higher weight first among equally good matches (e.g. best sellers or larger places). Default false.",
);

/** The version ids of docs/versions.md: "7" (a major version) or "7.3" (a change on top of it). */
const VERSION_ERROR = 'version must be a version id such as "7" or "7.3", as indexVersion or listIndexes give it';
const version = z
  .union(
    [
      z.string().regex(/^(0|[1-9]\d*)(\.[1-9]\d*)?$/, VERSION_ERROR),
      z.number().int({ error: VERSION_ERROR }).nonnegative({ error: VERSION_ERROR }),
    ],
    {
      error: VERSION_ERROR,
    },
  )
  .transform(String)
  .optional()
  .describe(
    "Optional retained version to search instead of the active one, e.g. the indexVersion of an earlier answer, so that several searches read the same records.",
  );

const filter = z
  .string()
  .max(1024)
  .optional()
  .describe(
    'Optional filter over fields of each record\'s data, e.g. `data.price < 20 && data.brand = "Acme"`. ' +
      "Operators: = != < <= > >= (strings only = and !=, compared exactly, case-sensitive), " +
      '`data.color IN ["red", "blue"]`, `EXISTS data.field`, && (binds tighter), ||, ! and parentheses.',
  );

/** A whole number, or its spelling as a string for hosts that pass every argument as text. */
const LIMIT_ERROR = "limit must be a whole number from 1 to 100";
const limit = z
  .union([z.number().int({ error: LIMIT_ERROR }), z.string().regex(/^\d{1,3}$/, { error: LIMIT_ERROR })], {
    error: LIMIT_ERROR,
  })
  .transform(Number)
  .refine((n) => n >= 1 && n <= 100, LIMIT_ERROR)
  .optional()
  .describe("Optional number of results to return, 1 to 100 (default 10).");

export function createSiftMcpServer(backend: SiftMcpBackend): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      "Sift holds search indexes of records (id, title, optional weight, images, coordinates and free-form data). " +
      "Use `listIndexes` to learn which indexes you may search, `search` to find records in one by what they are called, " +
      "then `lookupById` with an id from the results to read one record in full.",
  });

  server.registerTool(
    "search",
    {
      title: "Search an index",
      description:
        "Finds records in a Sift index whose title matches a phrase, best matches first (every word must match; the last word may be the start of a word, as in autocomplete). " +
        "Small typos are tolerated unless typoTolerance is false; exact matches rank first. " +
        "Give latitude and longitude to rank nearby records first among equally good matches. " +
        "Give filter to keep only records whose data match it, limit to get more or fewer results, weighted to favour records of higher weight, and version to read a retained version instead of the active one. " +
        "Returns JSON: { indexName, indexVersion, phrase, totalHits, totalHitsExact, results: [{ id, title, ...fields, highlight: { title: [[start, end], ...] } }] }, " +
        "where totalHits counts every matching record (results holds the first `limit` of them), and " +
        "highlight gives the matched parts of each title as UTF-16 offsets, end exclusive (a typed prefix, a whole word, or a whole word matched with typos). " +
        "Use an id with lookupById for the full record.",
      inputSchema: {
        indexName: z.string().min(1).describe("Name of the index to search, as listIndexes gives it."),
        phrase: z.string().min(1).max(512).describe('What to look for, e.g. "new yo" or "spring".'),
        latitude: coordinate("latitude", 90),
        longitude: coordinate("longitude", 180),
        typoTolerance,
        filter,
        limit,
        weighted,
        version,
      },
      outputSchema: searchOutput,
      annotations: { title: "Search an index", ...READ_ONLY },
    },
    (args) =>
      run(async () => {
        if ((args.latitude === undefined) !== (args.longitude === undefined)) {
          return text("Give both latitude and longitude, or neither.", true);
        }
        const result = await backend.search({
          indexName: args.indexName,
          phrase: args.phrase,
          ...(args.latitude !== undefined && args.longitude !== undefined
            ? { latitude: args.latitude, longitude: args.longitude }
            : {}),
          ...(args.typoTolerance !== undefined ? { typoTolerance: args.typoTolerance } : {}),
          ...(args.filter !== undefined && args.filter.trim() !== "" ? { filter: args.filter } : {}),
          ...(args.limit !== undefined ? { limit: args.limit } : {}),
          ...(args.weighted !== undefined ? { weighted: args.weighted } : {}),
          ...(args.version !== undefined ? { version: args.version } : {}),
        });
        return structured(result);
      }),
  );

  server.registerTool(
    "listIndexes",
    {
      title: "List the indexes you may search",
      description:
        "Lists the Sift indexes this connection may search, by name, with each index's service, visibility (PUBLIC or PRIVATE), active version and number of records. " +
        "Call it first to learn which indexName to pass to search and lookupById. " +
        "Indexes kept only in other regions are listed apart, under elsewhere, with the MCP endpoint of each region that holds them. " +
        "Returns JSON: { indexes: [{ name, serviceName, visibility, activeVersion, records }], elsewhere?: [{ name, serviceName, regions: [{ region, mcpEndpoint? }] }] }.",
      inputSchema: {},
      outputSchema: listIndexesOutput,
      annotations: { title: "List the indexes you may search", ...READ_ONLY },
    },
    () => run(async () => structured(await backend.listIndexes())),
  );

  server.registerTool(
    "lookupById",
    {
      title: "Read a record by id",
      description:
        "Reads one record of a Sift index by its id (take ids from search results), from the active version. " +
        "Returns JSON: { indexName, indexVersion, record: { id, title, weight?, images?, latitude?, longitude?, data? } }.",
      inputSchema: {
        indexName: z.string().min(1).describe("Name of the index holding the record."),
        id: z.string().min(1).max(512).describe("The record's id, as returned in search results."),
      },
      outputSchema: lookupOutput,
      annotations: { title: "Read a record by id", ...READ_ONLY },
    },
    (args) =>
      run(async () => {
        const found = await backend.lookupById({ indexName: args.indexName, id: args.id });
        if (!found)
          return text(
            `No record with id "${args.id}" in index "${args.indexName}". Search first and use an id from the results.`,
            true,
          );
        return structured(found);
      }),
  );

  return server;
}
