// What every answer must be, whatever was asked: never a 5xx; an error as a problem document
// (RFC 9457, server/src/http/problem.ts) unless the contract names another body for that status
// (MCP's JSON-RPC errors); no stack trace or server path in an error; JSON where the contract
// promises JSON, matching its schema.
import { resolve as resolvePath } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import formatsModule from "ajv-formats";
import type { Schema } from "./schema.ts";
import type { RawResponse } from "./send.ts";

export type Violation = "5xx" | "non-problem error" | "stack trace" | "2xx not as the contract says" | "no answer";

export interface Finding {
  kind: Violation;
  message: string;
}

const REPO_ROOT = resolvePath(import.meta.dirname, "../..");
const STACK_LINE = /\n\s+at \S.*(\(|:\d+:\d+)/;
const SERVER_PATHS = /node:internal|file:\/\/|\/server\/src\/|node_modules\//;

export interface Checker {
  check(operation: { spec: Schema } | undefined, method: string, response: RawResponse): Finding[];
}

export function checker(document: Schema): Checker {
  const ajv = new Ajv2020({ allErrors: false, strict: false });
  const formats = formatsModule as unknown as { default?: (a: Ajv2020) => void };
  ((formats.default ?? formatsModule) as (a: Ajv2020) => void)(ajv);
  ajv.addFormat("double-int", true);
  ajv.addSchema({ $id: "openapi", components: document.components }, "openapi");
  const rewrite = (s: unknown): unknown =>
    Array.isArray(s)
      ? s.map(rewrite)
      : s && typeof s === "object"
        ? Object.fromEntries(
            Object.entries(s).map(([k, v]) => [
              k,
              k === "$ref" && typeof v === "string" ? v.replace(/^#\//, "openapi#/") : rewrite(v),
            ]),
          )
        : s;
  const validators = new Map<Schema, ValidateFunction>();
  const validator = (schema: Schema) => {
    let v = validators.get(schema);
    if (!v) {
      v = ajv.compile(rewrite(schema) as Schema);
      validators.set(schema, v);
    }
    return v;
  };

  return {
    check(operation, method, response) {
      const out: Finding[] = [];
      const status = response.status;
      const type = String(response.headers["content-type"] ?? "");
      const text = response.body.toString("utf8");
      const declared = operation?.spec.responses?.[String(status)]?.content as
        | Record<string, { schema: Schema }>
        | undefined;
      if (status >= 500) out.push({ kind: "5xx", message: `${status} ${text.slice(0, 500)}` });
      if (status >= 400) {
        if (STACK_LINE.test(text) || text.includes(REPO_ROOT) || SERVER_PATHS.test(text))
          out.push({ kind: "stack trace", message: text.slice(0, 800) });
        // The contract may name another body for this status (MCP answers JSON-RPC errors); a
        // problem document is right there too when the app never ran (a Host that makes no URL).
        const other = declared && !declared["application/problem+json"] ? Object.keys(declared)[0] : undefined;
        const problem = parseJson(text) as Record<string, unknown> | undefined;
        const shaped =
          /^application\/problem\+json/.test(type) &&
          typeof problem === "object" &&
          problem !== null &&
          problem.status === status &&
          typeof problem.title === "string" &&
          problem.title !== "" &&
          typeof problem.type === "string" &&
          typeof problem.resultCode === "string";
        const asDeclared = other !== undefined && type.startsWith(other) && parseJson(text) !== undefined;
        if (method === "HEAD") {
          // No body to read: the content type says what it would have been.
          if (!/^application\/problem\+json/.test(type) && !(other && type.startsWith(other)))
            out.push({ kind: "non-problem error", message: `HEAD ${status} with content-type "${type}"` });
        } else if (!shaped && !asDeclared) {
          out.push({
            kind: "non-problem error",
            message: `${status} "${type}" ${text.slice(0, 300) || "(empty body)"}${other ? ` (the contract allows ${other} too)` : ""}`,
          });
        }
      }
      if (status >= 200 && status < 300 && method !== "HEAD" && operation) {
        const json = declared?.["application/json"];
        if (json) {
          const parsed = parseJson(text);
          if (!/^application\/json/.test(type) || parsed === undefined) {
            out.push({ kind: "2xx not as the contract says", message: `${status} "${type}" ${text.slice(0, 300)}` });
          } else if (json.schema && !validator(json.schema)(parsed)) {
            const errors = validator(json.schema).errors ?? [];
            out.push({
              kind: "2xx not as the contract says",
              message: `${status} body breaks the schema: ${ajv.errorsText(errors)}: ${text.slice(0, 300)}`,
            });
          }
        }
      }
      return out;
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
