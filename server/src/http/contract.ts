// Routes and request validation come from the generated OpenAPI document, so the server cannot
// drift from the contract: every operation is mounted at its contract path, its parameters and
// JSON body are validated with the contract's own schemas, and handlers are typed per operationId.
import type { IncomingMessage } from "node:http";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import formatsModule from "ajv-formats";
import type { Context, Hono } from "hono";
import type { AppEnv } from "./env.ts";
import type { operations } from "@sift/contract";
import { InvalidArgumentError, PayloadTooLargeError, type FieldProblem } from "../domain/errors.ts";
import { findUnstorable, unstorableReason } from "../domain/storable-text.ts";
import { HttpProblem } from "./problem.ts";

export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];
type Params<K extends OperationId, Where extends "path" | "query"> = Op<K>["parameters"] extends {
  [P in Where]?: infer T;
}
  ? T extends undefined | never
    ? Record<string, never>
    : NonNullable<T>
  : Record<string, never>;
type JsonBody<K extends OperationId> =
  Op<K> extends { requestBody: { content: { "application/json": infer B } } }
    ? B
    : Op<K> extends { requestBody?: { content: { "application/json": infer B } } }
      ? B | undefined
      : undefined;

/** JSON body of response `S` of operation `K`, for `satisfies` checks in handlers. */
export type ResponseBody<K extends OperationId, S extends keyof Op<K>["responses"]> = Op<K>["responses"][S] extends {
  content: { "application/json": infer B };
}
  ? B
  : never;

export interface Input<K extends OperationId> {
  path: Params<K, "path">;
  query: Params<K, "query">;
  body: JsonBody<K>;
  /**
   * For an operation whose body items fail one by one (`x-sift-item-errors`): why each item of
   * the array is invalid, undefined for a valid one. The body's other fields are validated as usual.
   */
  itemErrors?: (InvalidArgumentError | undefined)[];
}

export type OperationHandler<K extends OperationId> = (
  c: Context<AppEnv>,
  input: Input<K>,
) => Response | Promise<Response>;
export type Handlers = { [K in OperationId]?: OperationHandler<K> };

type Method = "get" | "put" | "post" | "delete" | "patch";
type JsonSchema = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is plain JSON walked by key; generated-output tests check its shape.
type OpenApiJson = Record<string, any>;

interface ParameterSpec {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema: JsonSchema;
}

/** An Ajv validator: true when `data` is valid; `errors` says why the last call was not. */
export interface Validator {
  (data: unknown): boolean;
  readonly errors: ErrorObject[] | null | undefined;
}

/**
 * Compiled by its first call: compiling the validators of every operation took 100 to 170 ms of
 * each start (D-327), and a process answers only a few operations in most of its lives.
 */
function lazyValidator(ajv: Ajv2020, schema: JsonSchema): Validator {
  let compiled: ReturnType<Ajv2020["compile"]> | undefined;
  const validate = (data: unknown) => {
    compiled ??= ajv.compile(schema);
    return compiled(data);
  };
  return Object.defineProperty(validate, "errors", { get: () => compiled?.errors }) as Validator;
}

export interface ContractOperation {
  id: OperationId;
  method: Method;
  /** OpenAPI form, e.g. `/v1/indexes/{indexName}`. */
  path: string;
  /** Hono form, e.g. `/v1/indexes/:indexName`. */
  routePath: string;
  jsonBody: { required: boolean } | undefined;
  /** Names of the security schemes that may authenticate the call; empty string for anonymous. */
  security: string[];
  validatePath: Validator;
  validateQuery: Validator;
  validateBody: Validator | undefined;
  /** `x-sift-item-errors`: the array property whose items are validated one by one, and its item schema. */
  items: { property: string; name: string; validate: Validator } | undefined;
  coerce: Map<string, "integer" | "number" | "boolean" | "string">;
  queryNames: string[];
}

export interface Contract {
  document: OpenApiJson;
  operations: ContractOperation[];
  byId: Map<OperationId, ContractOperation>;
}

const openapiPath = createRequire(import.meta.url).resolve("@sift/contract/openapi.json");

export function loadContract(path = openapiPath): Contract {
  const document = JSON.parse(readFileSync(path, "utf8")) as OpenApiJson;
  // The document is the TypeSpec compiler's output, and a test compiles every validator: checking
  // its schemas against JSON Schema's meta-schema too took most of what remained of loading it
  // (D-327).
  const ajv = new Ajv2020({ allErrors: true, strict: false, coerceTypes: false, validateSchema: false });
  // ajv-formats is CommonJS: its function is the module itself or its `default`, depending on the loader.
  const formats = formatsModule as unknown as { default?: (a: Ajv2020) => void };
  const addFormats = (formats.default ?? formatsModule) as (a: Ajv2020) => void;
  addFormats(ajv);
  // TypeSpec's safeint under `double-int`: an integer within ±(2^53 - 1). `integer` alone lets
  // 1e308 through (a whole number as a double), which the store then refused with a 500.
  ajv.addFormat("double-int", { type: "number", validate: Number.isSafeInteger });
  ajv.addSchema({ $id: "openapi", components: document.components }, "openapi");

  const rewriteRefs = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(rewriteRefs);
    if (schema && typeof schema === "object") {
      return Object.fromEntries(
        Object.entries(schema).map(([k, v]) => [
          k,
          k === "$ref" && typeof v === "string" ? v.replace(/^#\//, "openapi#/") : rewriteRefs(v),
        ]),
      );
    }
    return schema;
  };
  const resolve = (schema: JsonSchema): JsonSchema => {
    let current = schema;
    while (typeof current.$ref === "string") {
      const name = current.$ref.split("/").pop()!;
      current = document.components.schemas[name];
    }
    return current;
  };
  const scalarType = (schema: JsonSchema): "integer" | "number" | "boolean" | "string" => {
    const s = resolve(schema);
    if (s.type === "integer" || s.type === "number" || s.type === "boolean") return s.type;
    return "string";
  };

  const operations: ContractOperation[] = [];
  for (const [path, item] of Object.entries<OpenApiJson>(document.paths)) {
    for (const method of ["get", "put", "post", "delete", "patch"] as const) {
      const op = item[method];
      if (!op) continue;
      const params: ParameterSpec[] = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const objectSchema = (where: "path" | "query") => {
        const ps = params.filter((p) => p.in === where);
        return {
          type: "object",
          properties: Object.fromEntries(ps.map((p) => [p.name, rewriteRefs(p.schema)])),
          required: ps.filter((p) => p.required || where === "path").map((p) => p.name),
        };
      };
      // `x-sift-raw-body`: the handler reads the body itself (MCP answers JSON-RPC errors, not problems).
      const jsonSchema = op["x-sift-raw-body"] ? undefined : op.requestBody?.content?.["application/json"]?.schema;
      // `x-sift-item-errors` (the multi-search): an invalid item fails alone, so the body's schema
      // checks only that each item is an object, and each item is checked against its own schema.
      const itemSpec = op["x-sift-item-errors"] as { property: string; item: string } | undefined;
      let bodySchema = jsonSchema ? (rewriteRefs(jsonSchema) as JsonSchema) : undefined;
      let items: ContractOperation["items"];
      if (jsonSchema && itemSpec) {
        const resolved = resolve(jsonSchema);
        const properties = resolved.properties as Record<string, JsonSchema>;
        const arraySchema = properties[itemSpec.property]!;
        items = {
          property: itemSpec.property,
          name: itemSpec.item,
          validate: lazyValidator(ajv, rewriteRefs(arraySchema.items) as JsonSchema),
        };
        bodySchema = rewriteRefs({
          ...resolved,
          properties: { ...properties, [itemSpec.property]: { ...arraySchema, items: { type: "object" } } },
        }) as JsonSchema;
      }
      operations.push({
        id: op.operationId,
        method,
        path,
        routePath: path.replace(/\{([^}]+)\}/g, ":$1"),
        jsonBody: jsonSchema ? { required: op.requestBody.required !== false } : undefined,
        security: (op.security ?? document.security ?? [{}]).flatMap((s: Record<string, unknown>) =>
          Object.keys(s).length === 0 ? [""] : Object.keys(s),
        ),
        validatePath: lazyValidator(ajv, objectSchema("path")),
        validateQuery: lazyValidator(ajv, objectSchema("query")),
        validateBody: bodySchema ? lazyValidator(ajv, bodySchema) : undefined,
        items,
        coerce: new Map(params.filter((p) => p.in !== "header").map((p) => [p.name, scalarType(p.schema)])),
        queryNames: params.filter((p) => p.in === "query").map((p) => p.name),
      });
    }
  }
  return { document, operations, byId: new Map(operations.map((o) => [o.id, o])) };
}

/** Query strings carry text; the contract's schema says what type each parameter really is. */
function coerceParams(raw: Record<string, string>, op: ContractOperation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    const type = op.coerce.get(name);
    if (type === "integer" || type === "number") {
      out[name] = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(value) ? Number(value) : value;
    } else if (type === "boolean") {
      out[name] = value === "true" || value === "1" ? true : value === "false" || value === "0" ? false : value;
    } else {
      out[name] = value;
    }
  }
  return out;
}

/** Turns Ajv's errors into fields a person can find: `limit`, `images[2]`, `data`. */
export function fieldProblems(errors: ErrorObject[] | null | undefined, prefix = ""): FieldProblem[] {
  const seen = new Set<string>();
  const problems: FieldProblem[] = [];
  for (const e of errors ?? []) {
    // anyOf/oneOf repeat every branch's failure; the branch errors say more.
    if (e.keyword === "anyOf" || e.keyword === "oneOf" || e.keyword === "if") continue;
    const segments = e.instancePath
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
    if (e.keyword === "required") segments.push(String(e.params.missingProperty));
    let field = prefix;
    for (const s of segments) field += /^\d+$/.test(s) ? `[${s}]` : field ? `.${s}` : s;
    let message: string;
    switch (e.keyword) {
      case "required":
        message = "is required";
        break;
      case "enum":
        message = `must be one of: ${(e.params.allowedValues as unknown[]).join(", ")}`;
        break;
      case "const":
        message = `must be ${JSON.stringify(e.params.allowedValue)}`;
        break;
      case "type":
        message = `must be ${e.params.type === "integer" ? "an integer" : `of type ${e.params.type}`}`;
        break;
      case "format":
        message =
          e.params.format === "double-int"
            ? `must be an integer from ${Number.MIN_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`
            : (e.message ?? "is invalid");
        break;
      default:
        message = e.message ?? "is invalid";
    }
    const key = `${field}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ field: field || "body", message });
  }
  return problems;
}

const describe = (problems: FieldProblem[]) =>
  problems.map((p) => `${p.field ? `${p.field} ` : ""}${p.message}`).join("; ");

/**
 * A request's JSON body, read within `maxBytes` (413 past it), or undefined when it is empty and
 * not `required`; 415 for another content type, 400 naming the line and column of bad JSON. For
 * routes outside the contract too (the MCP consent's optional body).
 */
export async function readJson(c: Context, maxBytes: number, required = false): Promise<unknown> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // Read from Node's request stream where there is one: making the web Request that
  // c.req.raw.body needs cost about a tenth of a write's CPU on a replicating node.
  const raw =
    incoming && !incoming.readableDidRead
      ? await readIncomingLimited(incoming, maxBytes)
      : await readBodyLimited(c.req.raw, maxBytes);
  if (raw.trim() === "") {
    if (required)
      throw new InvalidArgumentError("a JSON request body is required", [{ field: "body", message: "is required" }]);
    return undefined;
  }
  const contentType = c.req.header("content-type") ?? "";
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType)) {
    throw new HttpProblem(415, `send the body as application/json (got "${contentType || "no content type"}")`);
  }
  try {
    return JSON.parse(raw);
  } catch (error) {
    const message = (error as Error).message;
    const at = /position (\d+)/.exec(message);
    let where = "";
    if (at) {
      const before = raw.slice(0, Number(at[1]));
      const line = before.split("\n").length;
      const column = before.length - before.lastIndexOf("\n");
      where = ` at line ${line}, column ${column}`;
    }
    throw new InvalidArgumentError(`the request body is not valid JSON${where}`, [
      { field: "body", message: `is not valid JSON${where}: ${message}` },
    ]);
  }
}

/**
 * A request body as text, refused with 413 once it passes `maxBytes` (by its Content-Length, or
 * while reading): nothing larger is ever held in memory.
 */
export async function readBodyLimited(request: Request, maxBytes: number): Promise<string> {
  refuseDeclared(request.headers.get("content-length"), maxBytes);
  return request.body ? await readLimited(request.body, maxBytes) : "";
}

const tooLarge = (maxBytes: number) => new PayloadTooLargeError(`the request body is larger than ${maxBytes} bytes`);

/** A body whose Content-Length is over the limit is refused before a byte of it is read. */
function refuseDeclared(contentLength: string | null | undefined, maxBytes: number): void {
  if (Number(contentLength ?? "NaN") > maxBytes) throw tooLarge(maxBytes);
}

/** The same as readBodyLimited, from Node's request stream. */
function readIncomingLimited(incoming: IncomingMessage, maxBytes: number): Promise<string> {
  refuseDeclared(incoming.headers["content-length"], maxBytes);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= maxBytes) return void chunks.push(chunk);
      // The rest is drained and dropped, so that the 413 still reaches the client.
      incoming.off("data", onData);
      incoming.resume();
      reject(tooLarge(maxBytes));
    };
    incoming.on("data", onData);
    incoming.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    incoming.once("error", reject);
  });
}

async function readLimited(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Text no store can hold is refused before any handler runs (domain/storable-text.ts): a NUL in
 * a record id once committed in the engine and then failed in PostgreSQL.
 */
function refuseUnstorable(params: Record<string, string>, kind: string): void {
  for (const [name, value] of Object.entries(params)) {
    const reason = unstorableReason(value);
    if (reason !== null)
      throw new InvalidArgumentError(`invalid ${kind}: ${name} ${reason}`, [{ field: name, message: reason }]);
  }
}

/** Validates path, query and JSON body of `op`; returns the typed, coerced input. */
export async function validateRequest(
  c: Context<AppEnv>,
  op: ContractOperation,
  maxBodyBytes: number,
): Promise<Input<OperationId>> {
  const path = c.req.param() as Record<string, string>;
  refuseUnstorable(path, "path parameter");
  if (!op.validatePath(path)) {
    const problems = fieldProblems(op.validatePath.errors);
    throw new InvalidArgumentError(`invalid path parameter: ${describe(problems)}`, problems);
  }
  // One parse of the query string: Hono's query(name) parses it again per name when it is encoded.
  const all = c.req.query();
  const rawQuery: Record<string, string> = {};
  for (const name of op.queryNames) {
    const value = all[name];
    if (value !== undefined) rawQuery[name] = value;
  }
  refuseUnstorable(rawQuery, "query parameter");
  const query = coerceParams(rawQuery, op);
  if (!op.validateQuery(query)) {
    const problems = fieldProblems(op.validateQuery.errors);
    throw new InvalidArgumentError(`invalid query parameter: ${describe(problems)}`, problems);
  }
  let body: unknown;
  let itemErrors: (InvalidArgumentError | undefined)[] | undefined;
  if (op.validateBody) {
    body = await readJson(c, maxBodyBytes, op.jsonBody?.required ?? false);
    const itemList = op.items && itemsOf(body, op.items.property);
    const unstorable = findUnstorable(itemList ? { ...(body as object), [op.items!.property]: [] } : body);
    if (unstorable !== null) {
      const field = unstorable.path || "body";
      throw new InvalidArgumentError(`invalid request body: ${field} ${unstorable.message}`, [
        { field, message: unstorable.message },
      ]);
    }
    if (body !== undefined && !op.validateBody(body)) {
      const problems = fieldProblems(op.validateBody.errors);
      throw new InvalidArgumentError(`invalid request body: ${describe(problems)}`, problems);
    }
    if (itemList) itemErrors = itemList.map((item) => itemError(item, op.items!));
  }
  return (itemErrors ? { path, query, body, itemErrors } : { path, query, body }) as Input<OperationId>;
}

function itemsOf(body: unknown, property: string): unknown[] | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const value = (body as Record<string, unknown>)[property];
  return Array.isArray(value) ? value : undefined;
}

/** Why one item of an `x-sift-item-errors` array is invalid; fields are named as within the item. */
function itemError(item: unknown, spec: NonNullable<ContractOperation["items"]>): InvalidArgumentError | undefined {
  const unstorable = findUnstorable(item);
  if (unstorable !== null) {
    const field = unstorable.path || spec.name;
    return new InvalidArgumentError(`invalid ${spec.name}: ${field} ${unstorable.message}`, [
      { field, message: unstorable.message },
    ]);
  }
  if (spec.validate(item)) return undefined;
  const problems = fieldProblems(spec.validate.errors);
  return new InvalidArgumentError(`invalid ${spec.name}: ${describe(problems)}`, problems);
}

/**
 * Mounts every contract operation on `app`. An operation without a handler answers 501 with a
 * problem document, so the contract is always fully routed and nothing is faked.
 */
export function mountContract(
  app: Hono<AppEnv>,
  contract: Contract,
  handlers: Handlers,
  options: { maxBodyBytes: number },
): void {
  for (const op of contract.operations) {
    const handler = handlers[op.id] as OperationHandler<OperationId> | undefined;
    app.on(op.method.toUpperCase(), op.routePath, async (c) => {
      if (!handler)
        throw new HttpProblem(501, `${op.method.toUpperCase()} ${op.path} is not available on this deployment yet`);
      // Operations without a JSON schema (the upload PUT, MCP) read their own bodies.
      const input = await validateRequest(c, op, options.maxBodyBytes);
      return handler(c, input);
    });
  }
}
