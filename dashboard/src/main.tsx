// The dashboard's shell: who is signed in, the navigation, and which screen the path names.
import type { components } from "@sift/sdk";
import { type ComponentChildren, render } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { isUnauthenticated, SESSION_ENDED, sift } from "./api.ts";
import { currentPath, linkTo, navigate, usePath } from "./router.ts";
import { SignIn, SignUp } from "./screens/auth.tsx";
import { Connect } from "./screens/connect.tsx";
import { IndexPage } from "./screens/index-page.tsx";
import { Keys } from "./screens/keys.tsx";
import { Overview } from "./screens/overview.tsx";
import "./styles.css";
import { FormError, Loading } from "./ui.tsx";
import { failureOf, type Failure } from "./api.ts";

type Me = components["schemas"]["Me"];

function App() {
  const path = usePath();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [failure, setFailure] = useState<Failure | undefined>();
  const check = () =>
    sift.auth.me().then(
      (m) => {
        setMe(m);
        setFailure(undefined);
      },
      (error) => {
        if (isUnauthenticated(error)) setMe(null);
        else setFailure(failureOf(error));
      },
    );
  useEffect(() => void check(), []);
  const [ended, setEnded] = useState(false);
  const signedInRef = useRef(false);
  signedInRef.current = Boolean(me);
  useEffect(() => {
    const onEnded = () => {
      if (!signedInRef.current) return;
      setMe(null);
      setEnded(true);
      navigate("/signin", true);
    };
    addEventListener(SESSION_ENDED, onEnded);
    return () => removeEventListener(SESSION_ENDED, onEnded);
  }, []);

  // A new screen moves focus to its heading, so keyboard and screen-reader users start there. In a
  // layout effect, so it happens before the browser handles the next key.
  const signedInNow = Boolean(me);
  useLayoutEffect(() => {
    if (me === undefined) return;
    const title = document.querySelector<HTMLElement>("main h1");
    // When the first screen is ready for input, measured from navigation (the 1 s budget).
    if (performance.getEntriesByName("dashboard-interactive").length === 0) performance.mark("dashboard-interactive");
    document.title = `${title?.textContent ?? "Dashboard"} · Sift`;
    title?.focus();
  }, [path, signedInNow, me === undefined]);

  // An MCP host's connection request stays on screen through the sign-in (mcp-auth's consent).
  const signedIn = () => {
    setEnded(false);
    void check().then(() => navigate(currentPath().startsWith("/connect/") ? currentPath() : "/", true));
  };

  let screen: ComponentChildren;
  if (failure) screen = <FormError failure={failure} />;
  else if (me === undefined) screen = <Loading what="your account" />;
  else if (me === null) {
    screen =
      path === "/signup" ? (
        <SignUp onSignedIn={signedIn} />
      ) : (
        <SignIn
          onSignedIn={signedIn}
          notice={ended ? "Your session ended: sign in again." : undefined}
          intro={path.startsWith("/connect/") ? "Sign in to connect your MCP host to Sift." : undefined}
        />
      );
  } else {
    const indexMatch = /^\/indexes\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?$/.exec(path);
    const connectMatch = /^\/connect\/([^/]+)$/.exec(path);
    if (path === "/keys") screen = <Keys />;
    else if (connectMatch) screen = <Connect uid={decodeURIComponent(connectMatch[1]!)} />;
    else if (indexMatch) {
      // `/indexes/<name>/records/<id>` opens a record in the record browser.
      const recordId = indexMatch[2] === "records" && indexMatch[3] ? decodeURIComponent(indexMatch[3]) : undefined;
      screen = <IndexPage name={decodeURIComponent(indexMatch[1]!)} tab={indexMatch[2]} recordId={recordId} />;
    } else screen = <Overview />;
  }

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <a class="brand" {...linkTo("/")}>
          Sift
        </a>
        {me && (
          <nav aria-label="Dashboard">
            <a {...linkTo("/")} aria-current={path === "/" || path.startsWith("/indexes") ? "page" : undefined}>
              Services and indexes
            </a>
            <a {...linkTo("/keys")} aria-current={path === "/keys" ? "page" : undefined}>
              API keys
            </a>
            <a href="/docs">API reference</a>
          </nav>
        )}
        {me && (
          <div class="account">
            <span>
              {me.user.email} · {me.tenant.name}
            </span>
            <button
              type="button"
              onClick={async () => {
                // biome-ignore lint/plugin: signing out of a session that already ended is still signed out.
                await sift.auth.logout().catch(() => undefined);
                setMe(null);
                navigate("/signin", true);
              }}
            >
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main">{screen}</main>
      <div id="announcer" class="visually-hidden" role="status" aria-live="polite" />
    </>
  );
}

const root = document.getElementById("app")!;
// The page's "Loading…" line is for the moment before this script runs; Preact renders beside
// what it finds, so it goes first.
root.replaceChildren();
render(<App />, root);
