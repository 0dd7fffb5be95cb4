/**
 * The reference web app `vitals serve` serves at `/`: what a phone shows, in a browser,
 * built on the generated client. Signed out, it shows sign up and sign in; signed in,
 * today's dashboard. Bundled by esbuild into `app/web/app.js`.
 */
import { authScreen } from "./auth.js";
import { describe, h, replace } from "./dom.js";
import { homeScreen } from "./home.js";
import { vitals } from "./session.js";

const root = document.getElementById("app");

function show(): void {
  if (!root) {
    return;
  }
  if (!vitals.session) {
    replace(root, authScreen(show));
    return;
  }
  homeScreen(root, show).catch((error: unknown) => {
    // A session the API no longer takes (expired, signed out elsewhere) starts over.
    vitals.resume(null);
    replace(root, h("p", { class: "error", role: "alert" }, describe(error)), authScreen(show));
  });
}

show();
