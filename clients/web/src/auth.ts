/** The signed-out screen: sign up or sign in. */
import type { Schemas } from "../../typescript/src/index.js";
import { vitals } from "./session.js";
import { errorLine, field, h, onSubmit, values } from "./dom.js";

/** The two forms; `signedIn` runs once either succeeds. */
export function authScreen(signedIn: () => void): HTMLElement {
  const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const signUp = h(
    "form",
    { "data-test": "sign-up", class: "card" },
    h("h2", {}, "Create an account"),
    field("Name", "display_name", { required: true, maxlength: 80, autocomplete: "name" }),
    field("Email", "email", { type: "email", required: true, autocomplete: "email" }),
    field("Password", "password", { type: "password", required: true, minlength: 10, autocomplete: "new-password" }),
    field("Timezone", "timezone", { required: true, value: timezone }),
    h("button", { type: "submit" }, "Sign up"),
    errorLine(),
  );
  onSubmit(signUp, async () => {
    const v = values(signUp);
    await vitals.register({
      display_name: v.display_name ?? "",
      email: v.email ?? "",
      password: v.password ?? "",
      // An IANA name: the API checks it (a refusal shows in the form's error line).
      timezone: (v.timezone ?? "UTC") as Schemas["Timezone"],
    });
    signedIn();
  });
  const signIn = h(
    "form",
    { "data-test": "sign-in", class: "card" },
    h("h2", {}, "Sign in"),
    field("Email", "email", { type: "email", required: true, autocomplete: "email" }),
    field("Password", "password", { type: "password", required: true, autocomplete: "current-password" }),
    h("button", { type: "submit" }, "Sign in"),
    errorLine(),
  );
  onSubmit(signIn, async () => {
    const v = values(signIn);
    await vitals.login(v.email ?? "", v.password ?? "");
    signedIn();
  });
  return h(
    "main",
    { class: "auth" },
    h("h1", {}, "Vitals"),
    h("p", { class: "lead" }, "Meals, workouts, sleep and goals, in one place."),
    h("div", { class: "pair" }, signUp, signIn),
  );
}
