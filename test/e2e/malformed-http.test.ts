// Requests refused before the application sees them (by Node's HTTP parser or by the adapter that
// turns them into web Requests) still get a problem document, like every other error (issue 15,
// found by the contract fuzzer): Node's own answers have an empty body and no content type.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startSift, type RunningSift } from "../support/server.ts";

let server: RunningSift;
beforeAll(async () => {
  server = await startSift();
});
afterAll(() => server?.stop());

/** Sends bytes as they are and reads the answer until the server closes the connection. */
function raw(text: string): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let data = "";
    socket.on("data", (chunk) => (data += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", ...rest] = data.split("\r\n\r\n");
      resolve({ status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: rest.join("\r\n\r\n") });
    });
  });
}

function expectProblem(reply: { status: number; headers: string; body: string }, status: number) {
  expect(reply.status, reply.headers).toBe(status);
  expect(reply.headers).toContain("content-type: application/problem+json");
  const problem = JSON.parse(reply.body);
  expect(problem).toMatchObject({ status, type: expect.any(String), title: expect.any(String) });
  return problem as { detail: string; resultCode: string };
}

describe("requests refused before the application", () => {
  test("a Host header that makes no URL is 400 problem+json", async () => {
    const reply = await raw("GET /healthz HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n");
    expect(expectProblem(reply, 400).resultCode).toBe("INVALID_ARGUMENT");
  });

  test("a request line Node cannot parse is 400 problem+json", async () => {
    for (const line of ["FOO /healthz HTTP/1.1", "GET /a b HTTP/1.1", "garbage"]) {
      const reply = await raw(`${line}\r\nHost: localhost\r\n\r\n`);
      expect(expectProblem(reply, 400).detail).toMatch(/not a valid HTTP request/);
    }
  });

  test("headers past Node's size limit are 431 problem+json", async () => {
    const reply = await raw(`GET /v1/indexes/${"y".repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expect(expectProblem(reply, 431).detail).toMatch(/headers are too large/);
  });
});
