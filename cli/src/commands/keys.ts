// `sift keys`: the tenant's API keys (never their secrets, which Sift shows only once). Keys cannot
// manage keys (docs/authority.md), so this command signs in as the dashboard does, with e-mail and
// password, and keeps the session cookie for this one run only.
import { createClient } from "@sift/sdk";
import { table, UsageError } from "../output.ts";

export const KEYS_HELP = `usage: sift keys --email ADDRESS [--json]

Lists the API keys of your tenant: id, type, name, display prefix, created, last used, and whether
revoked or expired. API keys cannot list keys, so sift signs in with your dashboard account:

  --email ADDRESS   your account (SIFT_EMAIL)
  password          SIFT_PASSWORD, or typed when asked on a terminal`;

const day = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString().slice(0, 10));

async function password(): Promise<string> {
  if (process.env.SIFT_PASSWORD) return process.env.SIFT_PASSWORD;
  if (!process.stdin.isTTY) throw new UsageError("a password is required: SIFT_PASSWORD, or run on a terminal");
  return hiddenPrompt("password: ");
}

/** Reads a line from the terminal without echoing it (readline's question would show the password). */
function hiddenPrompt(label: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(label);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") {
          finish();
          resolve(typed);
          return;
        }
        if (ch === "\u0003") {
          finish();
          reject(new UsageError("cancelled"));
          return;
        }
        typed = ch === "\u007f" || ch === "\b" ? typed.slice(0, -1) : typed + ch;
      }
    };
    stdin.on("data", onData);
  });
}

/** A client that keeps the session cookie Sift sets at log-in, for this process only. */
function sessionClient(baseUrl: string) {
  let cookie: string | undefined;
  return createClient({
    baseUrl,
    fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      if (cookie) request.headers.set("cookie", cookie);
      const response = await fetch(request);
      const set = response.headers.get("set-cookie");
      if (set) cookie = set.split(";")[0];
      return response;
    },
  });
}

export async function keys(baseUrl: string, email: string | undefined, json: boolean): Promise<string> {
  if (!email) throw new UsageError(`an e-mail address is required: --email or SIFT_EMAIL\n\n${KEYS_HELP}`);
  const sift = sessionClient(baseUrl);
  await sift.auth.login({ email, password: await password() });
  try {
    const apiKeys = await sift.apiKeys.list();
    if (json) return `${JSON.stringify(apiKeys, null, 2)}\n`;
    if (apiKeys.length === 0) return "no API keys\n";
    const now = Date.now();
    const rows = apiKeys.map((k) => [
      k.id,
      k.type,
      k.name,
      k.displayPrefix,
      day(k.createdAt),
      day(k.lastUsedAt),
      k.revokedAt !== null ? "revoked" : k.expiresAt !== null && k.expiresAt <= now ? "expired" : "active",
    ]);
    return `${table(["id", "type", "name", "prefix", "created", "last used", "state"], rows)}\n`;
  } finally {
    // biome-ignore lint/plugin: the keys are printed already; a session left open expires by itself.
    await sift.auth.logout().catch(() => undefined);
  }
}
