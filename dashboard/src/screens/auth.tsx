// Sign up, sign in, and a button per OAuth/OIDC provider the server is configured with. A
// provider's sign-in is a plain link: the server redirects to the provider and back.
import { useEffect, useState } from "preact/hooks";
import { sift } from "../api.ts";
import { linkTo } from "../router.ts";
import { Field, FormError, useAction } from "../ui.tsx";

type Provider = { id: string; name: string; authorizeUrl: string };

function Providers() {
  const [providers, setProviders] = useState<Provider[]>([]);
  useEffect(() => {
    // Without the list the e-mail form still works: no providers is the fallback.
    sift.auth.providers().then(
      (r) => setProviders(r.providers),
      () => setProviders([]),
    );
  }, []);
  if (providers.length === 0) return null;
  // Back to this screen (an MCP host's connection request waits here), else the dashboard.
  const back = encodeURIComponent(
    location.pathname.startsWith("/dashboard/connect/") ? location.pathname : "/dashboard",
  );
  return (
    <section class="providers" aria-labelledby="providers-title">
      <h2 id="providers-title">Or continue with</h2>
      <ul>
        {providers.map((p) => (
          <li key={p.id}>
            <a class="button" href={`${p.authorizeUrl}?redirectTo=${back}`}>
              Sign in with {p.name}
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The message the server's OAuth callback may leave in the URL when it sends the browser back. */
function providerError(): string | undefined {
  return new URLSearchParams(location.search).get("error") ?? undefined;
}

export function SignIn({
  onSignedIn,
  notice,
  intro,
}: {
  onSignedIn: () => void;
  notice?: string | undefined;
  /** Why sign-in is asked for, when it is for something in particular. */
  intro?: string | undefined;
}) {
  const action = useAction();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const error = providerError() ?? notice;
  return (
    <div class="auth">
      <h1 tabIndex={-1}>Sign in to Sift</h1>
      {intro && <p>{intro}</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form
        aria-label="Sign in"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await action.run(() => sift.auth.login({ email, password }))) onSignedIn();
        }}
      >
        <Field
          form="signin"
          name="email"
          label="E-mail"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
          failure={action.failure}
        />
        <Field
          form="signin"
          name="password"
          label="Password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          failure={action.failure}
        />
        <FormError failure={action.failure} shown={["email", "password"]} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <Providers />
      <p>
        New to Sift? <a {...linkTo("/signup")}>Create an account</a>
      </p>
    </div>
  );
}

export function SignUp({ onSignedIn }: { onSignedIn: () => void }) {
  const action = useAction();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [tenantName, setTenantName] = useState("");
  return (
    <div class="auth">
      <h1 tabIndex={-1}>Create your Sift account</h1>
      <form
        aria-label="Sign up"
        onSubmit={async (e) => {
          e.preventDefault();
          const body = { email, password, ...(tenantName ? { tenantName } : {}) };
          if (await action.run(() => sift.auth.signup(body))) onSignedIn();
        }}
      >
        <Field
          form="signup"
          name="email"
          label="E-mail"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
          failure={action.failure}
        />
        <Field
          form="signup"
          name="password"
          label="Password"
          hint="10 to 256 characters."
          type="password"
          autocomplete="new-password"
          required
          minLength={10}
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          failure={action.failure}
        />
        <Field
          form="signup"
          name="tenantName"
          label="Organisation (optional)"
          hint="Defaults to your e-mail's domain."
          value={tenantName}
          onInput={(e) => setTenantName(e.currentTarget.value)}
          failure={action.failure}
        />
        <FormError failure={action.failure} shown={["email", "password", "tenantName"]} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? "Creating…" : "Create account"}
        </button>
      </form>
      <Providers />
      <p>
        Have an account? <a {...linkTo("/signin")}>Sign in</a>
      </p>
    </div>
  );
}
