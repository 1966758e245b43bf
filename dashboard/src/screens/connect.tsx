// The consent step of an MCP host's OAuth sign-in (docs/mcp-auth.md). The authorization server
// sends the browser here once the person is signed in to the dashboard; allowing makes a
// read-only connection to their tenant, and either answer sends the browser back to the host.
import { useEffect, useState } from "preact/hooks";
import { listOf } from "../api.ts";
import { linkTo } from "../router.ts";
import { FormError, Loading, useAction } from "../ui.tsx";

interface Details {
  uid: string;
  client: { id: string; name: string | null; uri: string | null; publishedBy: string | null; redirectUri: string };
  resource: string;
  scopes: string[];
  account: { email: string; tenant: string };
}

/** The interaction endpoints are the authorization server's, not the API's: plain fetch. */
async function call<T>(uid: string, what: "details" | "confirm" | "abort", body?: unknown): Promise<T> {
  const response = await fetch(`/oauth2/interaction/${encodeURIComponent(uid)}/${what}`, {
    method: what === "details" ? "GET" : "POST",
    headers: { accept: "application/json", ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  // A body that is not JSON leaves the status to report, below.
  const answer = (await response.json().catch(() => ({}))) as { detail?: string } & T;
  if (!response.ok) throw new Error(answer.detail ?? `the server answered ${response.status}`);
  return answer;
}

const hostOf = (url: string) => (URL.canParse(url) ? new URL(url).host || url : url);

export function Connect({ uid }: { uid: string }) {
  const [details, setDetails] = useState<Details | undefined>();
  const load = useAction();
  const decide = useAction();
  const [limit, setLimit] = useState("");
  useEffect(() => void load.run(async () => setDetails(await call<Details>(uid, "details"))), [uid]);

  const answer = async (what: "confirm" | "abort") => {
    const indexes = listOf(limit);
    const body = what === "confirm" && indexes.length ? { indexes } : undefined;
    const done = await decide.run(() => call<{ redirectTo: string }>(uid, what, body));
    if (done) location.assign(done.redirectTo);
  };

  const name = details?.client.name ?? "An MCP host that gave no name";
  return (
    <div class="auth">
      <h1 tabIndex={-1}>Connect an MCP host</h1>
      <FormError failure={load.failure} />
      {load.failure && (
        <p>
          Start the connection again from your MCP host, or go to <a {...linkTo("/")}>your indexes</a>.
        </p>
      )}
      {!details && !load.failure && <Loading what="the connection request" />}
      {details && (
        <section aria-labelledby="connect-what">
          <h2 id="connect-what">{name}</h2>
          <p>
            wants to search the indexes of <strong>{details.account.tenant}</strong>, as {details.account.email}.
          </p>
          <ul>
            <li>Read-only: it can list your indexes, search them and read records by id. It cannot change anything.</li>
            <li>
              After you answer, your browser goes back to <code>{hostOf(details.client.redirectUri)}</code>.{" "}
              {details.client.publishedBy ? (
                <>
                  The name above is published by <code>{details.client.publishedBy}</code>: allow only a connection you
                  started.
                </>
              ) : (
                "The name above is the one the host gave itself: allow only a connection you started."
              )}
            </li>
            <li>You can disconnect it at any time under API keys.</li>
          </ul>
          <div class="field">
            <label for="connect-indexes">Only these indexes (optional)</label>
            <p class="hint" id="connect-indexes-hint">
              Index names the host may read, * as a wildcard, separated by commas; empty: every index.
            </p>
            <input
              id="connect-indexes"
              aria-describedby="connect-indexes-hint"
              value={limit}
              onInput={(e) => setLimit(e.currentTarget.value)}
            />
          </div>
          <FormError failure={decide.failure} />
          <div class="actions">
            <button type="button" class="primary" disabled={decide.busy} onClick={() => answer("confirm")}>
              Allow
            </button>
            <button type="button" disabled={decide.busy} onClick={() => answer("abort")}>
              Deny
            </button>
          </div>
        </section>
      )}
    </div>
  );
}
