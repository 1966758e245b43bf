// API keys: create one (its secret shown this once), list them, revoke with confirmation.
import type { components } from "@sift/sdk";
import { useEffect, useState } from "preact/hooks";
import { formatDate, listOf, sift } from "../api.ts";
import { announce, ConfirmButton, CopyButton, Empty, Field, FormError, Loading, useAction } from "../ui.tsx";

type ApiKey = components["schemas"]["ApiKey"];
type McpConnection = components["schemas"]["McpConnection"];
type KeyType = components["schemas"]["ApiKeyType"];

/** How long a new key works; the API takes any moment in the future (`expiresAt`). */
const LIFETIMES: { days: number; label: string }[] = [
  { days: 0, label: "Never" },
  { days: 1, label: "In 1 day" },
  { days: 7, label: "In 7 days" },
  { days: 30, label: "In 30 days" },
  { days: 90, label: "In 90 days" },
  { days: 365, label: "In 1 year" },
];
const DAY_MS = 86_400_000;

const TYPES: { type: KeyType; label: string }[] = [
  { type: "srh", label: "srh: public search key, for web pages and the widget" },
  { type: "svc", label: "svc: secret, for your back-end services (read, write records)" },
  { type: "adm", label: "adm: secret, full control of services and indexes" },
  { type: "pat", label: "pat: secret, your own scripts; acts as you" },
];

export function Keys() {
  const [keys, setKeys] = useState<ApiKey[] | undefined>();
  const list = useAction();
  const create = useAction();
  const [name, setName] = useState("");
  const [type, setType] = useState<KeyType>("srh");
  const [origins, setOrigins] = useState("");
  const [indexes, setIndexes] = useState("");
  const [lifetime, setLifetime] = useState(0);
  const [created, setCreated] = useState<{ key: string; name: string } | undefined>();

  const load = () => list.run(async () => setKeys(await sift.apiKeys.list()));
  useEffect(() => void load(), []);
  const [connections, setConnections] = useState<McpConnection[] | undefined>();
  const listConnections = useAction();
  const loadConnections = () =>
    listConnections.run(async () => setConnections((await sift.mcpConnections.list()).connections));
  useEffect(() => void loadConnections(), []);

  return (
    <>
      <h1 tabIndex={-1}>API keys</h1>
      <section aria-labelledby="new-key">
        <h2 id="new-key">Create a key</h2>
        <form
          class="inline-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const body = {
              type,
              name,
              ...(listOf(indexes).length ? { indexes: listOf(indexes) } : {}),
              ...(type === "srh" && listOf(origins).length ? { referrers: listOf(origins) } : {}),
              ...(lifetime ? { expiresAt: Date.now() + lifetime * DAY_MS } : {}),
            };
            const made = await create.run(() => sift.apiKeys.create(body));
            if (!made) return;
            setCreated({ key: made.key, name: made.name });
            setName("");
            setOrigins("");
            setIndexes("");
            setLifetime(0);
            announce(`Key ${made.name} created`);
            await load();
          }}
        >
          <Field
            form="key"
            name="name"
            label="Name"
            hint="A label to tell keys apart, such as “shop search”."
            required
            maxLength={100}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            failure={create.failure}
          />
          <div class="field">
            <label for="key-type">Type</label>
            <select id="key-type" name="type" value={type} onChange={(e) => setType(e.currentTarget.value as KeyType)}>
              {TYPES.map((t) => (
                <option key={t.type} value={t.type}>
                  {t.label}
                </option>
              ))}
            </select>
          </div>
          {type === "srh" && (
            <Field
              form="key"
              name="referrers"
              label="Allowed origins (optional)"
              hint="Web sites whose pages may use this key, such as https://shop.example or https://*.shop.example; empty: any site."
              value={origins}
              onInput={(e) => setOrigins(e.currentTarget.value)}
              failure={create.failure}
            />
          )}
          <Field
            form="key"
            name="indexes"
            label="Indexes (optional)"
            hint="Index names this key may reach, * as a wildcard; empty: every index."
            value={indexes}
            onInput={(e) => setIndexes(e.currentTarget.value)}
            failure={create.failure}
          />
          <div class="field">
            <label for="key-expires">Expires</label>
            <select
              id="key-expires"
              name="expiresAt"
              value={lifetime}
              onChange={(e) => setLifetime(Number(e.currentTarget.value))}
            >
              {LIFETIMES.map((l) => (
                <option key={l.days} value={l.days}>
                  {l.label}
                </option>
              ))}
            </select>
          </div>
          <FormError failure={create.failure} shown={["name", "referrers", "indexes"]} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create key
          </button>
        </form>
      </section>
      {created && (
        <section class="secret" aria-labelledby="secret-title">
          <h2 id="secret-title">Your new key “{created.name}”</h2>
          <p class="warning">
            <strong>Copy it now: Sift will not show it again.</strong> Only a hash of it is stored.
          </p>
          <div class="code">
            <label for="new-secret" class="visually-hidden">
              The new key
            </label>
            <input id="new-secret" readOnly value={created.key} onFocus={(e) => e.currentTarget.select()} />
            <CopyButton text={created.key} label="Copy key" />
          </div>
          <button type="button" onClick={() => setCreated(undefined)}>
            I have stored it, hide it
          </button>
        </section>
      )}
      <section aria-labelledby="key-list">
        <h2 id="key-list">Your keys</h2>
        <FormError failure={list.failure} />
        {!keys ? (
          !list.failure && <Loading what="keys" />
        ) : keys.length === 0 ? (
          <Empty>
            <p>No keys yet. A web page needs an srh key; a server needs an svc key.</p>
          </Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <th scope="row">
                    {k.name}
                    {(k.referrers || k.indexes || k.expiresAt) && <span class="restrictions">{restrictionsOf(k)}</span>}
                  </th>
                  <td>{k.type}</td>
                  <td>
                    <code>{k.displayPrefix}…</code>
                  </td>
                  <td>{formatDate(k.createdAt)}</td>
                  <td>{formatDate(k.lastUsedAt)}</td>
                  <td>
                    {k.revokedAt ? (
                      `revoked ${formatDate(k.revokedAt)}`
                    ) : expired(k) ? (
                      `expired ${formatDate(k.expiresAt)}`
                    ) : (
                      <ConfirmButton
                        label="Revoke"
                        accessibleLabel={`Revoke ${k.name}`}
                        title={`Revoke the key “${k.name}”?`}
                        confirmLabel="Revoke key"
                        onConfirm={async () => {
                          await sift.apiKeys.revoke(k.id);
                          announce(`Key ${k.name} revoked`);
                          await load();
                        }}
                      >
                        <p>
                          Everything using <code>{k.displayPrefix}…</code> stops working at once. This cannot be undone.
                        </p>
                      </ConfirmButton>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="mcp-list">
        <h2 id="mcp-list">Connected MCP hosts</h2>
        <p>
          Hosts that signed in through the browser with their <code>/mcp</code> URL. Each can only read this
          organisation's indexes.
        </p>
        <FormError failure={listConnections.failure} />
        {!connections ? (
          !listConnections.failure && <Loading what="connected MCP hosts" />
        ) : connections.length === 0 ? (
          <Empty>
            <p>No MCP host is connected. Give a host the address of this server's /mcp endpoint to connect one.</p>
          </Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">Connected</th>
                <th scope="col">Last used</th>
                <th scope="col">Ends</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {connections.map((m) => {
                const name = m.clientName ?? `Unnamed host ${m.clientId.slice(0, 8)}`;
                return (
                  <tr key={m.id}>
                    <th scope="row">
                      {name}
                      {m.indexes && <span class="restrictions">indexes: {m.indexes.join(", ")}</span>}
                    </th>
                    <td>{formatDate(m.createdAt)}</td>
                    <td>{formatDate(m.lastUsedAt)}</td>
                    <td>{formatDate(m.expiresAt)}</td>
                    <td>
                      <ConfirmButton
                        label="Disconnect"
                        accessibleLabel={`Disconnect ${name}`}
                        title={`Disconnect “${name}”?`}
                        confirmLabel="Disconnect host"
                        onConfirm={async () => {
                          await sift.mcpConnections.revoke(m.id);
                          announce(`${name} disconnected`);
                          await loadConnections();
                        }}
                      >
                        <p>Its access and refresh tokens stop working at once; it must sign in again to reconnect.</p>
                      </ConfirmButton>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

/** Past its expiry: the server refuses it already, so there is nothing to revoke. */
const expired = (k: ApiKey) => k.expiresAt !== null && k.expiresAt <= Date.now();

/** What a key is limited to, under its name: sites, indexes, and when it stops working. */
function restrictionsOf(k: ApiKey): string {
  return [
    k.referrers && `sites: ${k.referrers.join(", ")}`,
    k.indexes && `indexes: ${k.indexes.join(", ")}`,
    k.expiresAt && `${expired(k) ? "expired" : "expires"} ${formatDate(k.expiresAt)}`,
  ]
    .filter(Boolean)
    .join(" · ");
}
