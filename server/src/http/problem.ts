// RFC 9457 problem documents. Every error the API returns goes through here, so no handler
// can leak a stack trace or answer an unshaped body.
import type { components } from "../../../generated/types.ts";

export type Problem = components["schemas"]["Problem"];
export type FieldProblem = components["schemas"]["FieldProblem"];

const kinds = {
  400: { code: "INVALID_ARGUMENT", title: "Invalid request", slug: "invalid-argument" },
  401: { code: "UNAUTHORIZED", title: "Unauthorized", slug: "unauthorized" },
  403: { code: "FORBIDDEN", title: "Forbidden", slug: "forbidden" },
  404: { code: "NOT_FOUND", title: "Not found", slug: "not-found" },
  405: { code: "METHOD_NOT_ALLOWED", title: "Method not allowed", slug: "method-not-allowed" },
  409: { code: "CONFLICT", title: "Conflict", slug: "conflict" },
  413: { code: "PAYLOAD_TOO_LARGE", title: "Payload too large", slug: "payload-too-large" },
  415: { code: "UNSUPPORTED_MEDIA_TYPE", title: "Unsupported media type", slug: "unsupported-media-type" },
  500: { code: "INTERNAL", title: "Internal error", slug: "internal" },
  501: { code: "NOT_IMPLEMENTED", title: "Not implemented", slug: "not-implemented" },
  503: { code: "UNAVAILABLE", title: "Service unavailable", slug: "unavailable" },
} as const;

export type ProblemStatus = keyof typeof kinds;

export class HttpProblem extends Error {
  readonly status: ProblemStatus;
  readonly errors: FieldProblem[] | undefined;
  readonly headers: Record<string, string>;

  constructor(status: ProblemStatus, detail: string, errors?: FieldProblem[], headers: Record<string, string> = {}) {
    super(detail);
    this.status = status;
    this.errors = errors;
    this.headers = headers;
  }

  toProblem(requestId?: string): Problem {
    const kind = kinds[this.status];
    const problem: Problem = {
      type: `https://sift.dev/problems/${kind.slug}`,
      title: kind.title,
      status: this.status,
      detail: this.message,
      resultCode: kind.code,
    };
    if (this.errors?.length) problem.errors = this.errors;
    if (requestId) problem.requestId = requestId;
    return problem;
  }
}

export const badRequest = (detail: string, errors?: FieldProblem[]) => new HttpProblem(400, detail, errors);
export const invalidField = (field: string, message: string) =>
  new HttpProblem(400, `${field}: ${message}`, [{ field, message }]);
export const unauthorized = (detail: string) =>
  new HttpProblem(401, detail, undefined, { "www-authenticate": 'Bearer realm="sift"' });
export const forbidden = (detail: string) => new HttpProblem(403, detail);
export const notFound = (detail: string) => new HttpProblem(404, detail);
export const conflict = (detail: string) => new HttpProblem(409, detail);
export const payloadTooLarge = (detail: string) => new HttpProblem(413, detail);
export const unavailable = (detail: string) => new HttpProblem(503, detail);

export function problemResponse(problem: HttpProblem, requestId?: string): Response {
  return new Response(JSON.stringify(problem.toProblem(requestId)), {
    status: problem.status,
    headers: { "content-type": "application/problem+json", ...problem.headers },
  });
}
