// The one place that talks to Typesense through the official client. The client's own retry
// loop waits a fixed interval; we switch it off and retry here with capped exponential backoff
// and full jitter (as Algolia's client does), and turn every failure into a TypesenseEngineError
// that names the operation, so a log line says what was being done and what Typesense answered.
import { Client, Errors } from "typesense";

export interface RetryPolicy {
  /** Further attempts after the first one. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 4, baseDelayMs: 100, maxDelayMs: 2_000 };

export class TypesenseEngineError extends Error {
  /** HTTP status Typesense answered with; undefined when it could not be reached at all. */
  readonly status: number | undefined;
  readonly operation: string;

  constructor(operation: string, message: string, status: number | undefined, options?: ErrorOptions) {
    super(`typesense: ${operation}: ${message}`, options);
    this.name = "TypesenseEngineError";
    this.operation = operation;
    this.status = status;
  }
}

export function createClient(url: string, apiKey: string, timeoutSeconds: number): Client {
  return new Client({
    nodes: [{ url: url.replace(/\/+$/, "") }],
    apiKey,
    connectionTimeoutSeconds: timeoutSeconds,
    numRetries: 0,
    logLevel: "silent",
  });
}

// 408 is what Typesense answers when a search was cut off under load; 429 is rate limiting.
const RETRYABLE_STATUS = new Set([408, 429]);

function httpStatus(error: unknown): number | undefined {
  return error instanceof Errors.TypesenseError ? error.httpStatus : undefined;
}

function isRetryable(error: unknown): boolean {
  const status = httpStatus(error);
  if (status !== undefined) return status >= 500 || RETRYABLE_STATUS.has(status);
  // Anything the client throws that is not a Typesense answer is a transport failure
  // (refused, reset, timed out); those are worth another try.
  return !(error instanceof Errors.TypesenseError);
}

/** The message Typesense sent, without the client's "Request failed with HTTP code" preamble. */
function serverMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const said = text.split("| Server said: ")[1];
  return said ?? text;
}

function explain(error: unknown, status: number | undefined, attempts: number): string {
  if (status === undefined) {
    const code = (error as { code?: unknown }).code;
    return `Typesense unreachable after ${attempts} attempt(s) (${typeof code === "string" ? code : serverMessage(error)})`;
  }
  if (status === 401) return "Typesense rejected the API key (HTTP 401)";
  if (status >= 500) return `Typesense failed after ${attempts} attempt(s) (HTTP ${status}: ${serverMessage(error)})`;
  return `HTTP ${status}: ${serverMessage(error)}`;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export type Caller = <T>(operation: string, request: () => Promise<T>) => Promise<T>;

/** Returns a function that runs one Typesense request with retries and error mapping. */
export function createCaller(policy: RetryPolicy): Caller {
  return async function call<T>(operation: string, request: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await request();
      } catch (error) {
        if (attempt < policy.retries && isRetryable(error)) {
          const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
          await sleep(Math.random() * ceiling);
          continue;
        }
        const status = httpStatus(error);
        throw new TypesenseEngineError(operation, explain(error, status, attempt + 1), status, { cause: error });
      }
    }
  };
}

/** Runs a request whose "not there" (or "already there") answer is an acceptable outcome. */
export async function tolerating<T>(status: number, run: Promise<T>): Promise<T | undefined> {
  try {
    return await run;
  } catch (error) {
    if (error instanceof TypesenseEngineError && error.status === status) return undefined;
    throw error;
  }
}
