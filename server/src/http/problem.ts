// RFC 9457 problem documents. Every error the API returns goes through here, so no handler
// can leak a stack trace or answer an unshaped body. This is also the one place that knows which
// HTTP status each domain error (domain/errors.ts) stands for (docs/api.md, errors).
import { HTTPException } from "hono/http-exception";
import type { components } from "@sift/contract";
import {
  DomainError,
  InvalidArgumentError,
  MisdirectedError,
  QuotaExceededError,
  QuotaInUseError,
  RateLimitedError,
  UnavailableError,
  type FieldProblem as DomainFieldProblem,
  type DomainErrorKind,
} from "../domain/errors.ts";
import { isStoreUnreachable } from "../store/errors.ts";

export type Problem = components["schemas"]["Problem"];
export type FieldProblem = components["schemas"]["FieldProblem"];

const kinds = {
  400: { code: "INVALID_ARGUMENT", title: "Invalid request", slug: "invalid-argument" },
  401: { code: "UNAUTHORIZED", title: "Unauthorized", slug: "unauthorized" },
  403: { code: "FORBIDDEN", title: "Forbidden", slug: "forbidden" },
  404: { code: "NOT_FOUND", title: "Not found", slug: "not-found" },
  405: { code: "METHOD_NOT_ALLOWED", title: "Method not allowed", slug: "method-not-allowed" },
  // Answered by the HTTP server for a request the app never received (http/listen.ts).
  408: { code: "INVALID_ARGUMENT", title: "Request timeout", slug: "request-timeout" },
  409: { code: "CONFLICT", title: "Conflict", slug: "conflict" },
  413: { code: "PAYLOAD_TOO_LARGE", title: "Payload too large", slug: "payload-too-large" },
  415: { code: "UNSUPPORTED_MEDIA_TYPE", title: "Unsupported media type", slug: "unsupported-media-type" },
  421: { code: "MISDIRECTED", title: "Held in other regions", slug: "misdirected" },
  429: { code: "RATE_LIMITED", title: "Too many requests", slug: "rate-limited" },
  431: { code: "INVALID_ARGUMENT", title: "Request header fields too large", slug: "headers-too-large" },
  500: { code: "INTERNAL", title: "Internal error", slug: "internal" },
  501: { code: "NOT_IMPLEMENTED", title: "Not implemented", slug: "not-implemented" },
  503: { code: "UNAVAILABLE", title: "Service unavailable", slug: "unavailable" },
} as const;

export type ProblemStatus = keyof typeof kinds;

/**
 * A problem ready to send. Domain errors become one through problemFor(); the HTTP layer throws
 * one directly only for what exists in HTTP alone (a method or media type refused, a route or
 * operation missing).
 */
export class HttpProblem extends Error {
  readonly status: ProblemStatus;
  readonly errors: FieldProblem[] | undefined;
  readonly headers: Record<string, string>;
  /** A resultCode more precise than the status's own (QUOTA_EXCEEDED is a 403). */
  readonly code: string | undefined;
  /** A 421's regions that hold the index. */
  readonly regions: Problem["regions"];

  constructor(
    status: ProblemStatus,
    detail: string,
    errors?: FieldProblem[],
    headers: Record<string, string> = {},
    code?: string,
    regions?: Problem["regions"],
  ) {
    super(detail);
    this.status = status;
    this.errors = errors;
    this.headers = headers;
    this.code = code;
    this.regions = regions;
  }

  toProblem(requestId?: string): Problem {
    const kind = kinds[this.status];
    const problem: Problem = {
      type: `https://sift.dev/problems/${kind.slug}`,
      title: kind.title,
      status: this.status,
      detail: this.message,
      resultCode: this.code ?? kind.code,
    };
    if (this.errors?.length) problem.errors = this.errors;
    if (this.regions !== undefined) problem.regions = this.regions;
    if (requestId) problem.requestId = requestId;
    return problem;
  }
}

/** The status of each kind of domain error; a new kind does not compile until it is given one. */
export const STATUS_OF: Record<DomainErrorKind, ProblemStatus> = {
  "invalid-argument": 400,
  unauthenticated: 401,
  forbidden: 403,
  "not-found": 404,
  conflict: 409,
  "payload-too-large": 413,
  "rate-limited": 429,
  "quota-exceeded": 403,
  "quota-in-use": 429,
  unavailable: 503,
  misdirected: 421,
  "not-implemented": 501,
};

/** RFC 9110: a 401 names the scheme the client should answer with. */
const CHALLENGE = { "www-authenticate": 'Bearer realm="sift"' };

// The domain's field problems must fit the contract's, or the mapping below would not compile.
void ((p: DomainFieldProblem): FieldProblem => p);

/**
 * The problem an error stands for: a domain error by its kind, a Hono client error by its status;
 * undefined for anything else, which is a bug and answers 500.
 */
export function problemFor(error: unknown): HttpProblem | undefined {
  if (error instanceof HttpProblem) return error;
  if (error instanceof QuotaExceededError || error instanceof QuotaInUseError) {
    // 403 when only deleting something helps, 429 with Retry-After when the quota frees itself.
    const fields = [{ field: `quota.${error.quota}`, message: `at most ${error.limit}` }];
    const headers: Record<string, string> =
      error instanceof QuotaInUseError ? { "retry-after": String(error.retryAfterSeconds) } : {};
    return new HttpProblem(STATUS_OF[error.kind], error.message, fields, headers, "QUOTA_EXCEEDED");
  }
  if (error instanceof MisdirectedError) {
    return new HttpProblem(421, error.message, undefined, {}, undefined, error.regions);
  }
  if (error instanceof DomainError) {
    const fields = error instanceof InvalidArgumentError && error.fields.length ? error.fields : undefined;
    return new HttpProblem(
      STATUS_OF[error.kind],
      error.message,
      fields,
      error.kind === "unauthenticated"
        ? CHALLENGE
        : error instanceof RateLimitedError ||
            (error instanceof UnavailableError && error.retryAfterSeconds !== undefined)
          ? { "retry-after": String(error.retryAfterSeconds) }
          : {},
    );
  }
  if (isStoreUnreachable(error)) {
    // The database went away (a restart, a network cut): nothing the client did, and not a bug.
    return new HttpProblem(503, "the metadata store is unreachable; try again shortly", undefined, {
      "retry-after": "5",
    });
  }
  if (error instanceof HTTPException && error.status < 500) {
    const status = ([400, 401, 403, 404, 409, 413, 415] as const).find((s) => s === error.status) ?? 400;
    return new HttpProblem(status, error.message || "invalid request");
  }
  return undefined;
}

export function problemResponse(problem: HttpProblem, requestId?: string): Response {
  return new Response(JSON.stringify(problem.toProblem(requestId)), {
    status: problem.status,
    headers: { "content-type": "application/problem+json", ...problem.headers },
  });
}
