// The one mapping from domain errors to HTTP (http/problem.ts): each kind of error gives its
// status, result code, title, type and headers, and the body is the problem+json the API sends.
import { HTTPException } from "hono/http-exception";
import { describe, expect, test } from "vitest";
import {
  ConflictError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  PayloadTooLargeError,
  type DomainError,
  UnauthenticatedError,
  UnavailableError,
} from "../../src/domain/errors.ts";
import { HttpProblem, problemFor, problemResponse } from "../../src/http/problem.ts";

const answer = async (error: unknown, requestId?: string) => {
  const problem = problemFor(error);
  if (!problem) throw new Error("not mapped");
  const response = problemResponse(problem, requestId);
  return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
};

describe("domain errors as problems", () => {
  const cases: [DomainError, number, string, string, string][] = [
    [new InvalidArgumentError("bad"), 400, "INVALID_ARGUMENT", "Invalid request", "invalid-argument"],
    [new UnauthenticatedError("who"), 401, "UNAUTHORIZED", "Unauthorized", "unauthorized"],
    [new ForbiddenError("no"), 403, "FORBIDDEN", "Forbidden", "forbidden"],
    [new NotFoundError("gone"), 404, "NOT_FOUND", "Not found", "not-found"],
    [new ConflictError("taken"), 409, "CONFLICT", "Conflict", "conflict"],
    [new PayloadTooLargeError("big"), 413, "PAYLOAD_TOO_LARGE", "Payload too large", "payload-too-large"],
    [new UnavailableError("later"), 503, "UNAVAILABLE", "Service unavailable", "unavailable"],
  ];

  test.each(cases)("%s is %i %s", async (error, status, resultCode, title, slug) => {
    const reply = await answer(error, "req-9");
    expect(reply.status).toBe(status);
    expect(reply.headers["content-type"]).toBe("application/problem+json");
    // Byte for byte, in this key order: clients and the contract tests see exactly this.
    expect(reply.text).toBe(
      JSON.stringify({
        type: `https://sift.dev/problems/${slug}`,
        title,
        status,
        detail: error.message,
        resultCode,
        requestId: "req-9",
      }),
    );
    // Only a 401 challenges the client to authenticate.
    expect(reply.headers["www-authenticate"]).toBe(status === 401 ? 'Bearer realm="sift"' : undefined);
  });

  test("an invalid argument lists its fields, in order, between resultCode and requestId", async () => {
    const error = new InvalidArgumentError(
      "invalid record: title is required; images[2] each image must be an absolute URL",
      [
        { field: "title", message: "title is required" },
        { field: "images[2]", message: "each image must be an absolute URL" },
      ],
    );
    expect((await answer(error, "r")).text).toBe(
      '{"type":"https://sift.dev/problems/invalid-argument","title":"Invalid request","status":400,' +
        '"detail":"invalid record: title is required; images[2] each image must be an absolute URL","resultCode":"INVALID_ARGUMENT",' +
        '"errors":[{"field":"title","message":"title is required"},{"field":"images[2]","message":"each image must be an absolute URL"}],"requestId":"r"}',
    );
  });

  test("one field at fault names it in the detail; no fields means no errors member", async () => {
    const one = JSON.parse((await answer(InvalidArgumentError.field("regionId", "must be one of eu, us"))).text);
    expect(one).toMatchObject({
      detail: "regionId: must be one of eu, us",
      errors: [{ field: "regionId", message: "must be one of eu, us" }],
    });
    expect(one).not.toHaveProperty("requestId");
    expect(JSON.parse((await answer(new InvalidArgumentError("bad", []))).text)).not.toHaveProperty("errors");
  });

  test("the problem keeps the error's message, so MCP tool results keep their text", () => {
    const problem = problemFor(new NotFoundError('index "x" does not exist'))!;
    expect(problem).toMatchObject({ status: 404, message: 'index "x" does not exist' });
  });
});

describe("other errors", () => {
  test("an HttpProblem is sent as it is, with its own headers", async () => {
    const reply = await answer(new HttpProblem(405, "POST only", undefined, { allow: "POST" }));
    expect(reply).toMatchObject({
      status: 405,
      headers: { allow: "POST", "content-type": "application/problem+json" },
    });
    expect(JSON.parse(reply.text)).toMatchObject({ resultCode: "METHOD_NOT_ALLOWED", detail: "POST only" });
  });

  test("Hono's client errors keep their status where the API has one, else 400", async () => {
    expect((await answer(new HTTPException(413, { message: "too big" }))).status).toBe(413);
    const teapot = await answer(new HTTPException(418, { message: "" }));
    expect(teapot.status).toBe(400);
    expect(JSON.parse(teapot.text).detail).toBe("invalid request");
  });

  test("anything else is not mapped: the app answers 500 and logs it", () => {
    expect(problemFor(new Error("bug"))).toBeUndefined();
    expect(problemFor(new HTTPException(502))).toBeUndefined();
    expect(problemFor("thrown string")).toBeUndefined();
  });
});
