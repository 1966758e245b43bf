// What went wrong, in the service's own terms. Services, the authority checks, ingest and record
// validation throw these; they know nothing of HTTP. http/problem.ts is the one place that turns
// them into problem+json responses (docs/architecture.md, errors).

/** One field (or line of an uploaded file) at fault, named so a person can find it. */
export interface FieldProblem {
  /** A parameter name or a JSON path such as `images[2]`. */
  field: string;
  message: string;
  /** 1-based line of an uploaded file. */
  line?: number;
}

/** Every kind of failure a caller can act on; the HTTP layer maps each to exactly one status. */
export type DomainErrorKind =
  | "invalid-argument"
  | "unauthenticated"
  | "forbidden"
  | "not-found"
  | "conflict"
  | "payload-too-large"
  | "rate-limited"
  | "quota-exceeded"
  | "quota-in-use"
  | "unavailable"
  | "misdirected"
  | "not-implemented";

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
  override name = "DomainError";
}

/** The request names something malformed or impossible; `fields` says which parts. */
export class InvalidArgumentError extends DomainError {
  readonly kind = "invalid-argument";
  override name = "InvalidArgumentError";
  readonly fields: FieldProblem[];

  constructor(message: string, fields: FieldProblem[] = []) {
    super(message);
    this.fields = fields;
  }

  /** One field at fault: the message is `<field>: <what is wrong>`. */
  static field(field: string, message: string): InvalidArgumentError {
    return new InvalidArgumentError(`${field}: ${message}`, [{ field, message }]);
  }
}

/** No credential, or one that proves nothing (unknown, revoked, expired, or of the wrong kind). */
export class UnauthenticatedError extends DomainError {
  readonly kind = "unauthenticated";
  override name = "UnauthenticatedError";
}

/** The caller is known but may not do this. */
export class ForbiddenError extends DomainError {
  readonly kind = "forbidden";
  override name = "ForbiddenError";
}

/** What the request names does not exist, or is not the caller's to see. */
export class NotFoundError extends DomainError {
  readonly kind = "not-found";
  override name = "NotFoundError";
}

/** The request clashes with the current state (a name taken, a version not ready, a URL used). */
export class ConflictError extends DomainError {
  readonly kind = "conflict";
  override name = "ConflictError";
}

/** A body or an upload larger than the configured limit. */
export class PayloadTooLargeError extends DomainError {
  readonly kind = "payload-too-large";
  override name = "PayloadTooLargeError";
}

/** Something Sift depends on (a sign-in provider) failed; trying again later may work. */
export class UnavailableError extends DomainError {
  readonly kind = "unavailable";
  override name = "UnavailableError";
  /** When trying again (here or in another region) may work: sent as Retry-After. */
  readonly retryAfterSeconds: number | undefined;

  constructor(message: string, options: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** A region, with its endpoint where it has one of its own. */
export interface RegionEndpoint {
  id: string;
  url?: string;
}

/**
 * With replication: the index is held only in its service's regions (D-385), and this server is
 * in none of them; `regions` are where to ask instead.
 */
export class MisdirectedError extends DomainError {
  readonly kind = "misdirected";
  override name = "MisdirectedError";
  readonly regions: RegionEndpoint[];

  constructor(message: string, regions: RegionEndpoint[]) {
    super(message);
    this.regions = regions;
  }
}

/** The operation exists in the contract but this deployment cannot do it (its engine, say). */
export class NotImplementedError extends DomainError {
  readonly kind = "not-implemented";
  override name = "NotImplementedError";
}

/** The index was deleted (perhaps through another region) after the request looked it up. */
export const indexDeletedMidway = (): NotFoundError =>
  new NotFoundError("the index was deleted while this request ran");

/**
 * With replication: this node has not applied the index's first entries yet, or has set the index
 * aside (D-376, an entry of it could not be applied here); another region may serve it.
 */
export const notInThisRegionYet = (): UnavailableError =>
  new UnavailableError(
    "this region cannot serve the index at the moment (it has not received it yet, or could not apply a change to it); try again shortly or in another region",
    { retryAfterSeconds: 1 },
  );

/** Too many attempts: the caller may try again after `retryAfterSeconds`. */
export class RateLimitedError extends DomainError {
  readonly kind = "rate-limited";
  override name = "RateLimitedError";
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A tenant quota (docs/api.md, Limits) would be exceeded: `quota` names it, `limit` is its value. */
export class QuotaExceededError extends DomainError {
  readonly kind = "quota-exceeded";
  override name = "QuotaExceededError";
  readonly quota: string;
  readonly limit: number;

  constructor(quota: string, limit: number, message: string) {
    super(message);
    this.quota = quota;
    this.limit = limit;
  }
}

/**
 * A quota on what a tenant has in progress (concurrent uploads) is used up: unlike
 * QuotaExceededError it frees itself as the work ends, so the caller may retry after
 * `retryAfterSeconds`.
 */
export class QuotaInUseError extends DomainError {
  readonly kind = "quota-in-use";
  override name = "QuotaInUseError";
  readonly quota: string;
  readonly limit: number;
  readonly retryAfterSeconds: number;

  constructor(quota: string, limit: number, message: string, retryAfterSeconds: number) {
    super(message);
    this.quota = quota;
    this.limit = limit;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
