// Every error the SDK throws is a SiftError, so one `instanceof SiftError` catches them all; the
// subclasses say what went wrong (the layout of meilisearch-js's errors).
import type { components } from "@sift/contract";

export type Problem = components["schemas"]["Problem"];
type IngestStatus = components["schemas"]["IngestStatus"];

/** The base of every error the SDK throws. */
export class SiftError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SiftError";
  }
}

/** A non-2xx answer from Sift, with its problem document when it sent one. */
export class SiftApiError extends SiftError {
  readonly status: number;
  readonly problem: Problem | undefined;
  readonly requestId: string | undefined;

  constructor(status: number, problem: Problem | undefined, requestId?: string) {
    super(problem?.detail ?? problem?.title ?? `Sift answered HTTP ${status}`);
    this.name = "SiftApiError";
    this.status = status;
    this.problem = problem;
    this.requestId = requestId ?? problem?.requestId;
  }

  /** The problem's machine-readable outcome, e.g. `RATE_LIMITED` or `NOT_FOUND`. */
  get resultCode(): string | undefined {
    return this.problem?.resultCode;
  }

  /** The invalid fields Sift named, e.g. `[{ field: "limit", message: "must be <= 100" }]`. */
  get fieldErrors(): NonNullable<Problem["errors"]> {
    return this.problem?.errors ?? [];
  }
}

/**
 * No host answered (network errors, timeouts, 502/503/504 from every region); `causes` holds each
 * attempt's region, host and what it answered, e.g. `HTTP 503: this region has not applied …`.
 */
export class SiftUnreachableError extends SiftError {
  readonly causes: { host: string; region?: string; reason: string }[];

  constructor(causes: { host: string; region?: string; reason: string }[]) {
    super(
      `no Sift host answered: ${causes.map((c) => `${c.region ? `${c.region} ` : ""}${c.host} (${c.reason})`).join(", ")}`,
    );
    this.name = "SiftUnreachableError";
    this.causes = causes;
  }
}

/** The ingest of an upload ended in `failed`; `status` says why, with line numbers. */
export class SiftIngestFailedError extends SiftError {
  readonly status: IngestStatus;

  constructor(status: IngestStatus) {
    super(`ingest of version ${status.indexVersion} failed: ${status.failureReason ?? "see status.errors"}`);
    this.name = "SiftIngestFailedError";
    this.status = status;
  }
}

/** waitForIngest gave up: the ingest was still queued or running when its timeout passed. */
export class SiftTimeoutError extends SiftError {
  constructor(message: string) {
    super(message);
    this.name = "SiftTimeoutError";
  }
}
