import type { components } from "../../generated/types.ts";

export type Problem = components["schemas"]["Problem"];

/** A non-2xx answer from Sift, with its problem document when it sent one. */
export class SiftError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  readonly requestId: string | undefined;

  constructor(status: number, problem: Problem | undefined, requestId?: string) {
    super(problem?.detail ?? problem?.title ?? `Sift answered HTTP ${status}`);
    this.name = "SiftError";
    this.status = status;
    this.problem = problem;
    this.requestId = requestId ?? problem?.requestId;
  }

  /** The invalid fields Sift named, e.g. `[{ field: "limit", message: "must be <= 100" }]`. */
  get fieldErrors(): NonNullable<Problem["errors"]> {
    return this.problem?.errors ?? [];
  }
}

/** All hosts failed to answer (network errors, timeouts or 5xx); `causes` holds each attempt's reason. */
export class SiftUnreachableError extends Error {
  readonly causes: { host: string; reason: string }[];

  constructor(causes: { host: string; reason: string }[]) {
    super(`no Sift host answered: ${causes.map((c) => `${c.host} (${c.reason})`).join(", ")}`);
    this.name = "SiftUnreachableError";
    this.causes = causes;
  }
}
